// Integer helpers of the kernel emitters and the packing code: element counts of index
// spaces and rounding up. Sizes here come from verified shapes (ir/shape.h checks their
// products for overflow), so these do not check again. Layer: codegen.
#pragma once

#include <cstdint>
#include <vector>

namespace fusor {

/// The product of `dims` (1 for none).
inline int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// ceil(a / b) for a >= 0, b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace fusor
