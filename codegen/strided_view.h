// StridedView: a tensor seen through strides and an offset, and the view ops (reshape,
// transpose, slice, broadcast) composed without copying. Lowering reads every group input
// through one of these, so Reshape/Transpose/Slice chains cost no kernel. Layer: codegen.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ops/params.h"
#include "ir/shape.h"

namespace fusor {

/// Element (offset + Σ i_d * strides[d]) of the underlying buffer for index i.
struct StridedView {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// The view of a whole contiguous tensor.
StridedView contiguous_view(const Shape& s);

/// The same elements seen with another shape (row-major order kept); false when the
/// strides cannot express it without a copy.
bool reshape_view(const StridedView& v, const std::vector<int64_t>& shape, StridedView* out);

/// Dims permuted: out.shape[i] = v.shape[perm[i]].
StridedView transpose_view(const StridedView& v, const std::vector<int>& perm);

/// A resolved Slice (ir/ops/params.h) applied to the view.
StridedView slice_view(const StridedView& v, const SliceParams& p);

/// Strides that read `v` at every index of the space `space` under numpy broadcasting
/// (right-aligned; size-1 and missing dims get stride 0).
std::vector<int64_t> broadcast_strides_to(const StridedView& v, const std::vector<int64_t>& space);

}  // namespace fusor
