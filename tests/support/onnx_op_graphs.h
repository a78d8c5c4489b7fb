// The graphs that put the pointwise ops added for ONNX exports (Abs, Log, Reciprocal, Clip,
// LeakyRelu, HardSigmoid, HardSwish, the comparisons, And / Or / Not, IsNaN, IsInf, Cast
// to and from bool) into fused kernels, shared by the llvm, asmjit and cuda suites so that
// every backend runs the same specs. Each graph forms one group of its kind; dims A, B (and
// the conv / attention dims) are bound by the caller.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "codegen/kernel_spec.h"
#include "tests/support/kernel_util.h"
#include "tests/support/test_util.h"

namespace fusor::test {

/// One pointwise group of every new op with an f32 output; inputs x, y f32[A, B], m bool[A, B].
inline std::string onnx_pointwise_graph() {
  return R"(graph onnx_pointwise
input x: f32[A, B]
input y: f32[A, B]
input m: bool[A, B]
const zero: f32[] = [0.0]
const six: f32[] = [6.0]
lgx = Log(x)
isn = IsNaN(lgx)
ay = Abs(y)
lgy = Log(ay)
w = Where(isn, zero, lgy)
cl = Clip(x, zero, six)
s2 = Add(cl, w)
lr = LeakyRelu(y) {alpha=0.1}
hs = HardSigmoid(x) {alpha=0.2, beta=0.5}
s1 = Add(lr, hs)
ry = Reciprocal(y)
inf = IsInf(ry)
lt = Less(x, y)
an = And(lt, m)
ge = GreaterOrEqual(x, zero)
o1 = Or(ge, inf)
o2 = Or(an, o1)
nt = Not(o2)
r1 = Where(nt, s1, s2)
hw = HardSwish(y)
rx = Reciprocal(x)
arx = Abs(rx)
c1 = Clip(arx, _, six)
r2 = Mul(c1, hw)
gt = Greater(y, zero)
cf = Cast(gt) {to="f32"}
r3 = Mul(cf, r2)
out = Add(r1, r3)
output out
)";
}

/// One pointwise group with a bool output (comparisons, logic, a Cast to bool).
inline std::string onnx_compare_graph() {
  return R"(graph onnx_compare
input x: f32[A, B]
input y: f32[A, B]
input m: bool[A, B]
const six: f32[] = [6.0]
cb = Cast(x) {to="bool"}
le = LessOrEqual(x, six)
a2 = And(cb, le)
eq = Equal(x, y)
o3 = Or(a2, eq)
gr = Greater(y, x)
an = And(gr, m)
o4 = Or(o3, an)
z = Not(o4)
output z
)";
}

/// MobileNet's Conv + Clip(0, 6) (ReLU6, opset 11+ inputs) and HardSwish: contraction groups
/// whose epilogues hold the new ops; x f32[N, 8, H, W].
inline std::string onnx_conv_epilogue_graph() {
  return R"(graph onnx_conv
input x: f32[N, 8, H, W]
const w: f32[8, 8, 3, 3] = randn(seed=3, std=0.3)
const bias: f32[8] = randn(seed=4, std=0.3)
const zero: f32[] = [0.0]
const six: f32[] = [6.0]
c = Conv(x, w, bias) {pads=[1, 1, 1, 1]}
y = Clip(c, zero, six)
output y
)";
}

/// The inputs of onnx_pointwise_graph / onnx_compare_graph at [a, b]: x and y ~ N(0, 3),
/// a bool mask m, with NaN, infinities, signed zeros and huge values in x and y when
/// `specials` (y has no denormals: 1/y overflows f32 but not the interpreter's double), and
/// y == x at some elements (Equal is sometimes true).
inline std::map<std::string, Tensor> onnx_op_inputs(int64_t a, int64_t b, uint64_t seed, bool specials) {
  Tensor x = randn({a, b}, seed, 3.0), y = randn({a, b}, seed + 1, 3.0);
  Tensor m = Tensor::empty(DType::Bool, {a, b});
  const double sv[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 6.0, 1e-40, -1e30};
  const double sy[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 6.0, 1e-30, -1e30};
  for (int64_t i = 0; i < x.numel(); ++i) {
    m.set(i, (i * 7 + int64_t(seed)) % 3 == 0);
    if (specials && i % 5 == 1) x.set(i, sv[i % 8]);
    if (specials && i % 7 == 2) y.set(i, sy[(i + 3) % 8]);
    if (i % 9 == 4) y.set(i, x.at(i));
  }
  return {{"x", x}, {"y", y}, {"m", m}};
}

/// The JIT suites' tolerance on those graphs: vs static 2 ulp relative and 1e-6 absolute,
/// vs the interpreter 1e-5 relative and absolute (the suites' headers say why).
inline Tol onnx_op_tolerance(const KernelSpec&) { return Tol{1e-5, 1e-5, 2.0 / (1 << 23), 1e-6}; }

}  // namespace fusor::test
