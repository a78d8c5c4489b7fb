// Naive references of the data-movement and indexing operators added for ONNX models:
// Expand, Tile, Pad, Split, GatherElements, GatherND, ScatterElements, ScatterND, Trilu,
// CumSum, ArgMax, TopK. Plain loops
// over full N-d indices, written independently of the static kernels; elements are moved as
// bytes (exact for every dtype), CumSum sums in double (ints exactly, wrapping). Slow on
// purpose; for tests only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace fusor::test::ref {

/// x broadcast to the broadcast of its shape with `shape`.
Tensor expand(const Tensor& x, const std::vector<int64_t>& shape);
/// x repeated repeats[d] times along each dim d.
Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats);
/// x padded by begin[d] / end[d] elements per dim (negative: cropped), mode constant (the
/// element `value`), reflect, edge or wrap.
Tensor pad(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end, const std::string& mode,
           double value);
/// x cut along axis into parts of the given sizes.
std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<int64_t>& sizes);
/// out[i] = x[i with i[axis] = index[i]] (negative indices count from the end).
Tensor gather_elements(const Tensor& x, const Tensor& index, int axis);
/// ONNX GatherND with batch_dims.
Tensor gather_nd(const Tensor& x, const Tensor& index, int batch_dims);
/// x with updates written (reduction "none") or combined ("add", "mul", "max", "min", in
/// double) at x[i with i[axis] = index[i]], in index order.
Tensor scatter_elements(const Tensor& x, const Tensor& index, const Tensor& updates, int axis, const std::string& reduction);
/// ONNX ScatterND: x with updates[t, ...] written or combined at x[index[t, :], ...], in order.
Tensor scatter_nd(const Tensor& x, const Tensor& index, const Tensor& updates, const std::string& reduction);
/// The upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
Tensor trilu(const Tensor& x, int64_t k, bool upper);
/// Running sums along axis (exclusive, reverse as ONNX's CumSum).
Tensor cumsum(const Tensor& x, int axis, bool exclusive, bool reverse);
/// The index of the maximum along axis (NaN largest; ties first, or last), i64.
Tensor argmax(const Tensor& x, int axis, bool keepdims, bool select_last);
/// The k largest (or smallest) along axis, by a stable sort (NaN largest), and their i64
/// indices.
std::vector<Tensor> topk(const Tensor& x, int axis, int64_t k, bool largest);

}  // namespace fusor::test::ref
