// Naive double-precision references of the pointwise, normalization and reduction
// operators, written independently of the static kernels: plain loops over full N-d
// indices, std::exp / std::erf / std::tanh in double, integers in exact 64-bit arithmetic.
// Results come back in the operator's output dtype (the double result rounded once).
// Slow on purpose; for tests only.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/op_kind.h"
#include "ir/tensor.h"

namespace fusor::test::ref {

/// Add, Sub, Mul, Div, Pow, Max, Min of a and b under numpy broadcasting. Integers wrap
/// modulo 2^bits; integer Div truncates toward zero (b must be non-zero; INT_MIN / -1 wraps).
/// Max/Min return NaN when either side is NaN.
Tensor binary(OpKind op, const Tensor& a, const Tensor& b);

/// Max or Min over one or more inputs, broadcast together.
Tensor variadic(OpKind op, const std::vector<Tensor>& inputs);

/// Relu, Neg, Exp, Sqrt, Erf, Tanh, Sigmoid, Gelu (approximate "none" or "tanh"), Abs,
/// Reciprocal, Log, HardSwish (x * clamp(x/6 + 1/2, 0, 1)).
Tensor unary(OpKind op, const Tensor& x, const char* approximate = "none");

/// Cast to `to`: float -> int truncates, NaN -> 0, out of range saturates; int64 -> int32
/// wraps; -> bool is x != 0; -> f16/bf16 rounds to nearest even (overflow to inf). Exact
/// for integers up to 2^53 in magnitude.
Tensor cast(const Tensor& x, DType to);

/// Where(cond, x, y) under 3-way broadcasting, copying element bytes.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

/// Inference batch normalization of x [N, C, ...] with per-channel vectors.
Tensor batchnorm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                 double eps);

/// Layer normalization over x.shape[axis:]; scale (and bias, when defined) broadcast to that
/// shape.
Tensor layernorm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double eps);

/// Softmax along axis (max-subtracted, in double).
Tensor softmax(const Tensor& x, int64_t axis);

/// x < 0 ? alpha * x : x.
Tensor leaky_relu(const Tensor& x, double alpha);
/// clamp(alpha * x + beta, 0, 1), NaN kept.
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta);
/// min(max(x, lo), hi), NaN kept; integers clamp exactly.
Tensor clip(const Tensor& x, double lo, double hi);
/// Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or of a and b broadcast: bool.
Tensor compare(OpKind op, const Tensor& a, const Tensor& b);
/// Not (of a bool tensor), IsNaN, IsInf (with its two flags): bool.
Tensor test(OpKind op, const Tensor& x, bool detect_negative = true, bool detect_positive = true);

/// ReduceSum / ReduceMean / ReduceMax / ReduceMin / ReduceProd over `axes` (possibly negative; empty means all axes unless
/// noop_with_empty_axes). Integer means truncate toward zero; integer products wrap.
Tensor reduce(OpKind op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
              bool noop_with_empty_axes = false);

/// The double nearest to rounding v to a binary float format with `mant_bits` stored
/// mantissa bits and minimum normal exponent `emin` (round to nearest even, gradual
/// underflow, overflow to inf above `max_finite`). f16: (10, -14, 65504).
double round_to_format(double v, int mant_bits, int emin, double max_finite);

}  // namespace fusor::test::ref
