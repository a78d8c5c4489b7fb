#include "jit/thread_pool.h"

#include <algorithm>

namespace fusor {

namespace {
// True on a thread that is running a chunk: a nested parallel_for then runs serially
// instead of deadlocking on the region lock.
thread_local bool t_in_region = false;
}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// Takes chunks until none are left. Called with mu_ held; releases it while running a chunk.
void ThreadPool::run_chunks() {
  while (next_ < num_chunks_) {
    int64_t c = next_++;
    const RangeFn* fn = fn_;
    int64_t b = c * chunk_, e = std::min(n_, b + chunk_);
    mu_.unlock();
    std::exception_ptr err;
    try {
      t_in_region = true;
      (*fn)(b, e);
      t_in_region = false;
    } catch (...) {
      t_in_region = false;
      err = std::current_exception();
    }
    mu_.lock();
    if (err && !error_) error_ = err;
    if (++finished_ == num_chunks_) done_.notify_all();
  }
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  uint64_t seen = generation_;
  for (;;) {
    wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    run_chunks();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t max_chunks = std::min<int64_t>((n + grain - 1) / grain, int64_t(num_threads()) * 4);
  if (workers_.empty() || max_chunks <= 1 || t_in_region) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> region(region_mu_);
  std::unique_lock<std::mutex> lk(mu_);
  fn_ = &fn;
  n_ = n;
  chunk_ = (n + max_chunks - 1) / max_chunks;
  num_chunks_ = (n + chunk_ - 1) / chunk_;
  next_ = 0;
  finished_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  run_chunks();
  done_.wait(lk, [&] { return finished_ == num_chunks_; });
  fn_ = nullptr;
  std::exception_ptr err = error_;
  error_ = nullptr;
  lk.unlock();
  if (err) std::rethrow_exception(err);
}

}  // namespace fusor
