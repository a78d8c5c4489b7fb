#include "codegen/strided_view.h"

#include "ir/error.h"

namespace fusor {

StridedView contiguous_view(const Shape& s) {
  StridedView v;
  v.shape = s.dims();
  v.strides = s.strides();
  return v;
}

bool reshape_view(const StridedView& v, const std::vector<int64_t>& shape, StridedView* out) {
  out->shape = shape;
  out->offset = v.offset;
  out->strides.assign(shape.size(), 0);
  int64_t numel = 1;
  for (int64_t d : v.shape) numel *= d;
  if (numel == 0 || v.shape.empty()) {  // nothing to address, or a scalar: any strides do
    int64_t acc = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      out->strides[i] = acc;
      acc *= std::max<int64_t>(shape[i], 1);
    }
    return true;
  }
  // Walk the old dims from the innermost out, in chunks of dims that are contiguous with
  // each other; each chunk must be covered exactly by a run of new dims, which then get
  // strides inside the chunk.
  int new_d = int(shape.size()) - 1;
  int64_t chunk_base = v.strides.back(), chunk_numel = 1, covered = 1;
  for (int d = int(v.shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= v.shape[size_t(d)];
    bool chunk_ends = d == 0 || (v.shape[size_t(d - 1)] != 1 && v.strides[size_t(d - 1)] != chunk_numel * chunk_base);
    if (!chunk_ends) continue;
    while (new_d >= 0 && (covered < chunk_numel || shape[size_t(new_d)] == 1)) {
      out->strides[size_t(new_d)] = covered * chunk_base;
      covered *= shape[size_t(new_d)];
      --new_d;
    }
    if (covered != chunk_numel) return false;
    if (d > 0) {
      chunk_base = v.strides[size_t(d - 1)];
      chunk_numel = covered = 1;
    }
  }
  for (; new_d >= 0; --new_d) {  // leading size-1 dims
    if (shape[size_t(new_d)] != 1) return false;
    out->strides[size_t(new_d)] = 0;
  }
  return true;
}

StridedView transpose_view(const StridedView& v, const std::vector<int>& perm) {
  StridedView out;
  out.offset = v.offset;
  for (int p : perm) {
    out.shape.push_back(v.shape[size_t(p)]);
    out.strides.push_back(v.strides[size_t(p)]);
  }
  return out;
}

StridedView slice_view(const StridedView& v, const SliceParams& p) {
  StridedView out = v;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    out.offset += p.start[d] * v.strides[d];
    out.strides[d] = v.strides[d] * p.step[d];
    out.shape[d] = p.count[d];
  }
  return out;
}

std::vector<int64_t> broadcast_strides_to(const StridedView& v, const std::vector<int64_t>& space) {
  FUSOR_ASSERT(v.shape.size() <= space.size(), "broadcast of rank ", v.shape.size(), " into rank ", space.size());
  std::vector<int64_t> s(space.size(), 0);
  size_t off = space.size() - v.shape.size();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    FUSOR_ASSERT(v.shape[i] == 1 || v.shape[i] == space[i + off], "broadcast dim ", v.shape[i], " into ", space[i + off]);
    s[i + off] = v.shape[i] == 1 ? 0 : v.strides[i];
  }
  return s;
}

}  // namespace fusor
