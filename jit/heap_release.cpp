#include "jit/heap_release.h"

#include <algorithm>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fusor {

uint64_t HeapRelease::threshold_for(uint64_t plan_budget_bytes) {
  if (plan_budget_bytes == 0) return 0;
  constexpr uint64_t kMiB = uint64_t(1) << 20;
  return std::clamp<uint64_t>(plan_budget_bytes / 4, kMiB, 64 * kMiB);
}

void HeapRelease::maybe_release() {
  if (threshold_ == 0 || evicted_.load(std::memory_order_relaxed) < threshold_) return;
  evicted_.store(0, std::memory_order_relaxed);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  releases_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace fusor
