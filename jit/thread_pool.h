// ThreadPool: the runtime's worker threads, implementing codegen's Parallel. The calling
// thread takes part in every parallel_for, so a pool of N threads starts N-1 workers.
// Layer: jit.
//
// Note [Spinning workers]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A plan runs kernels back to back, many of them tens of microseconds long (LayerNorm,
// softmax, small GEMMs at short sequences). Waking a sleeping thread through the kernel
// costs 5-50 us on the virtual machines fusor runs on, which is as long as the kernel, so a
// pool that sleeps between regions makes two threads slower than one on such steps. Here a
// region is published through one atomic word (Region::claim: epoch, chunk count, next
// chunk), workers claim chunks with a compare-and-swap and keep spinning (with `pause`) for
// kSpinMicros after their last chunk before they block on the condition variable; the
// caller spins (then yields) until every chunk is done. Nothing is allocated and no mutex
// is taken on the way, unless a worker had fallen asleep or a chunk threw.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "codegen/parallel.h"

namespace fusor {

/// A fixed set of worker threads that run parallel_for chunks (Note [Spinning workers]).
class ThreadPool final : public Parallel {
 public:
  /// `threads` <= 0 means one per CPU this process may run on; more than that is capped
  /// there (spinning threads beyond the CPUs would only take turns). Throws
  /// Error(OutOfMemory) naming the limit when the system refuses to start a thread, after
  /// stopping the ones already started.
  explicit ThreadPool(int threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const override { return int(workers_.size()) + 1; }
  /// Splits [0, n) into at most num_threads() * 8 chunks of >= grain, taken by whichever
  /// thread is free first; concurrent callers are serialized (one region at a time).
  void parallel_for(int64_t n, int64_t grain, RangeFn fn) override;

  /// The CPUs this process may run on (its affinity mask), at least 1.
  static int available_cpus();

 private:
  void worker_loop();
  // Claims and runs chunks of the region of `epoch` until none are left.
  void run_chunks(uint64_t epoch);
  void stop_workers();

  std::vector<std::thread> workers_;
  std::mutex region_mu_;  // one parallel region at a time

  // The current region: fn_, n_ and chunk_ are written before claim_ publishes the region
  // and stay valid until remaining_ reaches 0. claim_ = epoch << 40 | chunks << 20 | next.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> remaining_{0};
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;

  // Sleeping workers (after spinning): woken through mu_/wake_.
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};

  std::mutex error_mu_;
  std::exception_ptr error_;
};

}  // namespace fusor
