#include "jit/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <system_error>

#include "ir/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FUSOR_CPU_RELAX() _mm_pause()
#else
#define FUSOR_CPU_RELAX() std::this_thread::yield()
#endif

namespace fusor {

namespace {

// True on a thread that is running a chunk: a nested parallel_for then runs serially
// instead of deadlocking on the region lock.
thread_local bool t_in_region = false;

// How long a worker keeps spinning for the next region before it sleeps, and how long the
// caller spins for the last chunks before it starts yielding its CPU (Note [Spinning
// workers]): long enough to bridge the gaps between the steps of a plan and between
// back-to-back runs, short enough that an idle engine stops using the CPU at once.
constexpr int64_t kSpinMicros = 300;
constexpr int64_t kCallerSpinMicros = 50;

// The claim word: epoch << 40 | chunks << 20 | next chunk.
constexpr int kChunkBits = 20;
constexpr uint64_t kChunkMask = (uint64_t(1) << kChunkBits) - 1;
constexpr int64_t kMaxChunks = int64_t(kChunkMask);
// Chunks a region may always have, whatever the thread count (parallel_for).
constexpr int64_t kMinChunks = 64;
uint64_t epoch_of(uint64_t c) { return c >> (2 * kChunkBits); }
int64_t chunks_of(uint64_t c) { return int64_t((c >> kChunkBits) & kChunkMask); }
int64_t next_of(uint64_t c) { return int64_t(c & kChunkMask); }

using Clock = std::chrono::steady_clock;

}  // namespace

int ThreadPool::available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int threads) {
  const int cpus = available_cpus();
  if (threads <= 0 || threads > cpus) threads = cpus;
  workers_.reserve(size_t(threads - 1));
  for (int i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error& e) {
      stop_workers();
      fail(ErrorCode::OutOfMemory, "cannot start kernel thread ", i + 1, " of ", threads,
           " (the system's thread or memory limit): ", e.what());
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run_chunks(uint64_t epoch) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (epoch_of(c) != epoch || next_of(c) >= chunks_of(c)) return;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // Chunk next_of(c) of this epoch is ours: the region stays alive until we report it.
    const int64_t b = next_of(c) * chunk_, e = std::min(n_, b + chunk_);
    try {
      t_in_region = true;
      (*fn_)(b, e);
      t_in_region = false;
    } catch (...) {
      t_in_region = false;
      std::lock_guard<std::mutex> lk(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
    c = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;  // the last epoch this worker took part in
  for (;;) {
    // Spin for a new region, then sleep until one is published.
    uint64_t c = claim_.load(std::memory_order_acquire);
    const auto spin_until = Clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 0; epoch_of(c) == seen && !stop_.load(std::memory_order_relaxed); ++i) {
      FUSOR_CPU_RELAX();
      if ((i & 63) == 63 && Clock::now() > spin_until) {
        std::unique_lock<std::mutex> lk(mu_);
        sleepers_.fetch_add(1);
        wake_.wait(lk, [&] { return stop_.load() || epoch_of(claim_.load()) != seen; });
        sleepers_.fetch_sub(1);
      }
      c = claim_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = epoch_of(c);
    run_chunks(seen);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // Up to 8 chunks per thread keeps the claims few on kernels of thousands of small tasks;
  // a kernel of a few dozen (a GEMM split 22 ways) is claimed task by task (kMinChunks), as
  // chunks of 2 or 3 tasks left an odd count for two threads and one of them idle for a
  // chunk's time at the end. BERT layer, two threads on a Zen 5, fusor_bench medians of 5 in
  // two interleaved rounds: seq 128 5.02-5.10 -> 4.44-4.63 ms, seq 384 14.4-16.2 -> 13.3-13.7;
  // seq 16 and 64, the Linear layers and bf16 within noise.
  const int64_t max_chunks =
      std::min<int64_t>({(n + grain - 1) / grain, std::max<int64_t>(int64_t(num_threads()) * 8, kMinChunks), kMaxChunks});
  if (workers_.empty() || max_chunks <= 1 || t_in_region) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> region(region_mu_);
  fn_ = &fn;
  n_ = n;
  chunk_ = (n + max_chunks - 1) / max_chunks;
  const int64_t chunks = (n + chunk_ - 1) / chunk_;
  error_ = nullptr;
  remaining_.store(chunks, std::memory_order_relaxed);
  const uint64_t epoch = epoch_of(claim_.load(std::memory_order_relaxed)) + 1;
  claim_.store(epoch << (2 * kChunkBits) | uint64_t(chunks) << kChunkBits, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    wake_.notify_all();
  }
  run_chunks(epoch);
  // Wait for the chunks other threads took: spin briefly, then yield the CPU.
  const auto spin_until = Clock::now() + std::chrono::microseconds(kCallerSpinMicros);
  for (int i = 0; remaining_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < 64 || Clock::now() < spin_until) {
      FUSOR_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  fn_ = nullptr;
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> lk(error_mu_);
    std::swap(err, error_);
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace fusor
