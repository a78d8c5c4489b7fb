// ThreadPool: the runtime's worker threads, implementing codegen's Parallel. The calling
// thread takes part in every parallel_for, so a pool of N threads starts N-1 workers.
// Layer: jit.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "codegen/parallel.h"

namespace fusor {

/// A fixed set of worker threads that run parallel_for chunks.
class ThreadPool final : public Parallel {
 public:
  /// threads <= 0 means one per hardware thread.
  explicit ThreadPool(int threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const override { return int(workers_.size()) + 1; }
  /// Splits [0, n) into at most num_threads() * 4 chunks of >= grain; concurrent callers
  /// are serialized (one parallel region at a time).
  void parallel_for(int64_t n, int64_t grain, RangeFn fn) override;

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex region_mu_;  // one parallel region at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  // The current region (guarded by mu_ except the atomics inside run_chunks).
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 0, next_ = 0, num_chunks_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace fusor
