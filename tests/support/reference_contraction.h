// Naive double-precision references for the contraction, pool and layout operators:
// plain loops over full N-d indices, written from the ONNX definitions and sharing nothing
// with the kernels they check (not even the attribute resolution of ir/ops/params.h: the
// geometry is passed in explicitly). Slow by design; for tests only. Every result has the
// dtype of the first input, rounded once from the double result.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace fusor::test {

/// Explicit 2-D convolution geometry (pads already resolved: no auto_pad).
struct RefConv {
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int64_t group = 1;
};
/// Conv of x [N, C, H, W] with w [M, C/group, kH, kW] and optional bias [M].
Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const RefConv& g);

/// numpy matmul: 1-D operands promoted (and the unit dim dropped), batch dims broadcast.
Tensor ref_matmul(const Tensor& a, const Tensor& b);

/// alpha * op(a) * op(b) + beta * c, with c (optional) broadcast to [M, N] numpy-style.
Tensor ref_gemm(const Tensor& a, const Tensor& b, const Tensor* c, double alpha, double beta, bool trans_a,
                bool trans_b);

/// Explicit 2-D pooling geometry.
struct RefPool {
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;  ///< AveragePool only
};
/// MaxPool over x [N, C, H, W]: padding never wins; NaN propagates.
Tensor ref_maxpool(const Tensor& x, const RefPool& g);
/// AveragePool over x [N, C, H, W]. The divisor counts window points inside the input, or
/// (count_include_pad) inside the explicitly padded input, never beyond it.
Tensor ref_avgpool(const Tensor& x, const RefPool& g);
/// GlobalAveragePool over all dims after the first two.
Tensor ref_global_avgpool(const Tensor& x);

/// y[i_0, ..] = x[i at perm]: y's dim d is x's dim perm[d].
Tensor ref_transpose(const Tensor& x, const std::vector<int64_t>& perm);
/// Concatenation along axis (negative counts from the back).
Tensor ref_concat(const std::vector<Tensor>& xs, int64_t axis);
/// ONNX Slice; axes and steps may be empty (all leading axes, unit steps).
Tensor ref_slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
/// ONNX Gather of indices (i32 or i64, negative counting from the back) along axis.
Tensor ref_gather(const Tensor& x, const Tensor& indices, int64_t axis);

}  // namespace fusor::test
