// HeapRelease: gives the memory of evicted cache entries back to the operating system, so
// that the process's resident memory follows the engine's byte budgets instead of the
// allocator's high-water mark. Layer: jit.
//
// Note [Releasing evicted memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The budgets (EngineOptions::plan_cache_bytes and the others) bound what the engine holds.
// What the process keeps resident is more: glibc's malloc returns freed memory to the
// system only from the top of its heap, so an engine that meets thousands of shapes, whose
// plans and compile temporaries are freed in another order than they were made, leaves the
// heap full of free holes, and RSS grew by ~20 MiB over 10,000 shapes with 8 MiB of budgets
// (tests/jit/memory_budget_test.cpp). So the caches count the bytes they evict, and once
// that reaches a quarter of the plan budget (between 1 and 64 MiB), the next plan miss,
// which is about to compile anyway, has malloc_trim(0) hand the free pages back
// (madvise(MADV_DONTNEED) under the holes). Elsewhere than glibc this is a no-op.
#pragma once

#include <atomic>
#include <cstdint>

namespace fusor {

class HeapRelease {
 public:
  /// Releases after `threshold_bytes` evicted (0: never).
  explicit HeapRelease(uint64_t threshold_bytes) : threshold_(threshold_bytes) {}
  /// The threshold for a plan budget (0: unbounded budget, never).
  static uint64_t threshold_for(uint64_t plan_budget_bytes);
  /// Counts bytes an eviction dropped. Thread-safe, lock-free.
  void evicted(uint64_t bytes) { evicted_.fetch_add(bytes, std::memory_order_relaxed); }
  /// On a miss: trims the heap when enough was evicted since the last trim. Thread-safe.
  void maybe_release();
  /// Heap trims so far.
  uint64_t releases() const { return releases_.load(std::memory_order_relaxed); }

 private:
  const uint64_t threshold_;
  std::atomic<uint64_t> evicted_{0}, releases_{0};
};

}  // namespace fusor
