#include "codegen/static/kernel_util.h"

namespace fusor::static_kernels {

int64_t StridedLoop::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) r *= dims[i];
  return r;
}

void StridedLoop::row_offsets(int64_t row, int64_t* offsets) const {
  for (size_t k = 0; k < strides.size(); ++k) offsets[k] = 0;
  for (size_t i = dims.size() - 1; i-- > 0;) {
    int64_t idx = row % dims[i];
    row /= dims[i];
    for (size_t k = 0; k < strides.size(); ++k) offsets[k] += idx * strides[k][i];
  }
}

StridedLoop make_strided_loop(const Shape& out, const std::vector<Shape>& operands) {
  std::vector<std::vector<int64_t>> st;
  for (const Shape& s : operands) st.push_back(broadcast_strides(s, out));
  StridedLoop loop;
  loop.strides.resize(operands.size());
  // Walk dims from the outside in, dropping size-1 dims and merging dim i into the previous
  // kept dim when every operand has stride[prev] == stride[i] * dims[i].
  for (int i = 0; i < out.rank(); ++i) {
    int64_t d = out.dims()[size_t(i)];
    if (d == 1) continue;
    bool merge = !loop.dims.empty();
    for (size_t k = 0; merge && k < st.size(); ++k)
      merge = loop.strides[k].back() == st[k][size_t(i)] * d;
    if (merge) {
      loop.dims.back() *= d;
      for (size_t k = 0; k < st.size(); ++k) loop.strides[k].back() = st[k][size_t(i)];
    } else {
      loop.dims.push_back(d);
      for (size_t k = 0; k < st.size(); ++k) loop.strides[k].push_back(st[k][size_t(i)]);
    }
  }
  if (loop.dims.empty()) {  // scalar (or all-ones) output: one element
    loop.dims.push_back(1);
    for (auto& s : loop.strides) s.push_back(0);
  }
  return loop;
}

}  // namespace fusor::static_kernels
