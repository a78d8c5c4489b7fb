// Contraction kernels in tests, for every suite that runs them (the conformance suite, a
// backend's own): the MatMul + bias graph of the size sweeps, and the one tolerance of a
// contraction's f32 outputs. Tests only.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

#include "tests/support/kernel_util.h"
#include "tests/support/test_util.h"

namespace fusor::test {

/// "1, 2, 3": dims for a graph's text.
inline std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

/// The graph of the matmul size sweeps: input a [b, m, k] times constant w [k, n]
/// (randn seed 1, std 1), plus constant bias [n] (seed 2), output y.
inline std::string matmul_bias_graph(int64_t b, int64_t m, int64_t k, int64_t n) {
  return with(R"(graph g
input a: f32[@B@, @M@, @K@]
const w: f32[@K@, @N@] = randn(seed=1, std=1)
const bias: f32[@N@] = randn(seed=2, std=1)
m = MatMul(a, w)
y = Add(m, bias)
output y
)",
              {{"@B@", std::to_string(b)}, {"@M@", std::to_string(m)}, {"@K@", std::to_string(k)}, {"@N@", std::to_string(n)}});
}

/// Scaled (1/sqrt(d)) and masked self-attention with heads as batch dims: inputs q [b, h,
/// tq, d], k [b, h, tk, d] (read through a transposed view), v [b, h, tk, dv] and mask
/// [b, 1, 1, tk]; output c = softmax(q·kᵀ·scale + mask)·v.
inline std::string masked_attention_graph(int64_t b, int64_t h, int64_t tq, int64_t tk, int64_t d, int64_t dv) {
  return with(R"(graph g
input q: f32[@B@, @H@, @TQ@, @D@]
input k: f32[@B@, @H@, @TK@, @D@]
input v: f32[@B@, @H@, @TK@, @DV@]
input mask: f32[@B@, 1, 1, @TK@]
const scale: f32[] = [@S@]
kt = Transpose(k) {perm=[0, 1, 3, 2]}
s = MatMul(q, kt)
m = Mul(s, scale)
a = Add(m, mask)
p = Softmax(a) {axis=-1}
c = MatMul(p, v)
output c
)",
              {{"@B@", std::to_string(b)}, {"@H@", std::to_string(h)}, {"@TQ@", std::to_string(tq)},
               {"@TK@", std::to_string(tk)}, {"@D@", std::to_string(d)}, {"@DV@", std::to_string(dv)},
               {"@S@", std::to_string(1.0 / std::sqrt(double(d)))}});
}

/// The {m, k, n} of the matmul size sweeps: 1, odd sizes, the vector widths (8, 16) +-1,
/// panel and tile widths (16, 32, 48, 64) +-1, tile rows (4, 6) +-1, the task rows (64) +-1,
/// and k x 32 floats beyond asmjit's packing limit (128 KiB), where it reads B in place.
inline constexpr int64_t kMatmulSweep[][3] = {
    {1, 1, 1},     {1, 7, 5},      {3, 15, 17},    {5, 16, 31},    {7, 33, 32},   {6, 9, 33},   {13, 9, 47},
    {16, 64, 48},  {17, 65, 63},   {29, 3, 100},   {63, 5, 15},    {64, 128, 65}, {65, 11, 9},  {100, 7, 1},
    {9, 300, 129}, {128, 768, 96}, {130, 768, 96}, {7, 1100, 45},  {13, 2100, 17}};

/// Q·Kᵀ of batch [2, 3]: input q [.., m, k] times input kt [.., n, k] transposed (B's
/// columns strided, not constant), scaled by 0.125; output y.
inline std::string batched_qkt_graph(int64_t m, int64_t k, int64_t n) {
  return with(R"(graph g
input q: f32[2, 3, @M@, @K@]
input kt: f32[2, 3, @N@, @K@]
const scale: f32[] = [0.125]
k = Transpose(kt) {perm=[0, 1, 3, 2]}
s = MatMul(q, k)
y = Mul(s, scale)
output y
)",
              {{"@M@", std::to_string(m)}, {"@K@", std::to_string(k)}, {"@N@", std::to_string(n)}});
}

/// A convolution of the sweep over strides, padding, dilation and groups.
struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group, stride, dil, pad;
};

/// 1x1 and single pixels, odd sizes and channel counts, groups (depthwise included),
/// strides, dilation, a 7x7 stem, rectangular filters, and stride 1 with output rows as
/// wide as the image's (llvm: panels of consecutive pixels run across rows, conv-direct-flat,
/// lanes masked per row and column): narrow images (a vector spans many rows), a single
/// column, two rows under a 5x5 filter, dilation, a 1xk filter whose vertical padding makes
/// rows of padding only.
inline constexpr ConvCase kConvSweep[] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},     {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1},    {2, 8, 11, 13, 17, 3, 3, 1, 1, 1, 1},
    {1, 16, 14, 14, 33, 1, 1, 1, 1, 1, 0}, {1, 6, 15, 17, 12, 3, 3, 2, 2, 1, 1}, {1, 8, 12, 12, 8, 3, 3, 8, 1, 1, 1},
    {1, 4, 13, 11, 6, 3, 5, 1, 1, 2, 2},   {1, 5, 9, 10, 7, 1, 1, 1, 2, 1, 0},   {1, 3, 20, 20, 16, 7, 7, 1, 2, 1, 3},
    {1, 16, 9, 9, 16, 3, 3, 16, 2, 1, 1},  {2, 12, 6, 5, 24, 2, 2, 3, 1, 1, 0},  {1, 64, 17, 23, 64, 3, 3, 1, 1, 1, 1},
    {1, 5, 9, 3, 7, 3, 3, 1, 1, 1, 1},     {2, 7, 5, 1, 3, 3, 3, 1, 1, 1, 1},    {1, 4, 2, 6, 9, 5, 5, 1, 1, 1, 2},
    {1, 6, 10, 10, 6, 3, 3, 1, 1, 2, 2},   {1, 4, 3, 5, 6, 1, 3, 1, 1, 1, 1},    {1, 32, 56, 56, 19, 3, 3, 1, 1, 1, 1},
};

/// The graph of a ConvCase: input x [n, c, h, w], constant w (randn seed 7, std
/// 1/sqrt(fan-in)) and bias (seed 8, std 0.1), Conv with the case's attributes, Relu; output y.
inline std::string conv_case_graph(const ConvCase& v) {
  const double std_w = 1.0 / std::sqrt(double(v.c / v.group * v.kh * v.kw));
  std::string g = "graph g\ninput x: f32[" + dims({v.n, v.c, v.h, v.w}) + "]\nconst w: f32[" +
                  dims({v.m, v.c / v.group, v.kh, v.kw}) + "] = randn(seed=7, std=" + std::to_string(std_w) + ")\n";
  g += "const b: f32[" + std::to_string(v.m) + "] = randn(seed=8, std=0.1)\n";
  g += "c = Conv(x, w, b) {group=" + std::to_string(v.group) + ", strides=[" + dims({v.stride, v.stride}) +
       "], dilations=[" + dims({v.dil, v.dil}) + "], pads=[" + dims({v.pad, v.pad, v.pad, v.pad}) + "]}\n";
  return g + "y = Relu(c)\noutput y\n";
}

/// "n1 c3 7x9 m5 k3x3 g1 s1 d1 p1": a ConvCase for CAPTURE.
inline std::string conv_case_str(const ConvCase& v) {
  return "n" + std::to_string(v.n) + " c" + std::to_string(v.c) + " " + std::to_string(v.h) + "x" + std::to_string(v.w) +
         " m" + std::to_string(v.m) + " k" + std::to_string(v.kh) + "x" + std::to_string(v.kw) + " g" +
         std::to_string(v.group) + " s" + std::to_string(v.stride) + " d" + std::to_string(v.dil) + " p" +
         std::to_string(v.pad);
}

/// A 3x3 stride-1 convolution of the Winograd sweeps (Note [Winograd convolutions]).
struct WinogradConv {
  int64_t n, c, h, w, m, pt, pl, pb, pr;
  bool residual;  ///< + input r, then Relu (else Relu alone)
  int64_t oh() const { return h + pt + pb - 2; }
  int64_t ow() const { return w + pl + pr - 2; }
};

/// Odd output sizes (partial tiles), no padding and asymmetric padding, batches, channel
/// counts off the tile (odd: half a bf16 pair), large channel counts over small images, a
/// residual and ReLU epilogue, and the ResNet-50 block's 64 x 56 x 56.
inline constexpr WinogradConv kWinogradSweep[] = {
    {1, 16, 9, 11, 16, 1, 1, 1, 1, false}, {2, 24, 7, 13, 37, 0, 0, 0, 0, true}, {1, 16, 20, 17, 20, 2, 1, 0, 1, false},
    {1, 256, 7, 7, 19, 1, 1, 1, 1, true},  {1, 64, 56, 56, 64, 1, 1, 1, 1, true}, {3, 17, 7, 8, 16, 1, 1, 1, 1, false}};

/// The graph of a Winograd sweep row: input x [n, c, h, w], constant w [m, c, 3, 3] (randn
/// seed 7, std 1/sqrt(9c)) and bias [m] (seed 8, std 0.1), Conv with the row's pads, then
/// (+ input r) Relu; output y.
inline std::string winograd_conv_graph(const WinogradConv& v) {
  std::string g = "graph g\ninput x: f32[" + dims({v.n, v.c, v.h, v.w}) + "]\n";
  if (v.residual) g += "input r: f32[" + dims({v.n, v.m, v.oh(), v.ow()}) + "]\n";
  g += "const w: f32[" + dims({v.m, v.c, 3, 3}) + "] = randn(seed=7, std=" + std::to_string(1.0 / std::sqrt(double(v.c * 9))) +
       ")\nconst b: f32[" + std::to_string(v.m) + "] = randn(seed=8, std=0.1)\n";
  g += "c = Conv(x, w, b) {pads=[" + dims({v.pt, v.pl, v.pb, v.pr}) + "]}\n";
  g += v.residual ? "s = Add(c, r)\ny = Relu(s)\n" : "y = Relu(c)\n";
  return g + "output y\n";
}

/// The inputs of a Winograd sweep row: x (randn seed 9) and r (seed 10).
inline std::map<std::string, Tensor> winograd_conv_inputs(const WinogradConv& v) {
  std::map<std::string, Tensor> in{{"x", randn({v.n, v.c, v.h, v.w}, 9)}};
  if (v.residual) in["r"] = randn({v.n, v.m, v.oh(), v.ow()}, 10);
  return in;
}

/// "n1 c16 9x11 m16 pads 1111 residual": a sweep row for CAPTURE.
inline std::string winograd_conv_str(const WinogradConv& v) {
  return "n" + std::to_string(v.n) + " c" + std::to_string(v.c) + " " + std::to_string(v.h) + "x" + std::to_string(v.w) +
         " m" + std::to_string(v.m) + " pads " + dims({v.pt, v.pl, v.pb, v.pr}) + (v.residual ? " residual" : "");
}

/// The tolerance of a contraction's f32 outputs, per element |got - want| <= 1e-5 * |want|
/// + 2e-6 * sqrt(k) * scale against the static kernels and the interpreter: each output is
/// a float sum of k products (FMA, in k order), the references sum in other orders
/// (OpenBLAS's blocks; double); with inputs of scale ~1 (weights ~1/sqrt(fan-in) for convs)
/// the rounding of such a sum grows like sqrt(k) ulp of the terms' magnitude `scale`. k is
/// a convolution's c/group * kh * kw. `interpret` false: too big for the interpreter.
inline Tol contraction_tol(const KernelSpec& spec, double scale = 1.0, bool interpret = true) {
  const ContractionSpec& cs = spec.contraction;
  const int64_t kk = cs.kind == ContractionSpec::Kind::Gemm ? cs.k : cs.conv.c / cs.conv.group * cs.conv.kh * cs.conv.kw;
  const double abs_tol = 2e-6 * std::sqrt(double(kk)) * scale;
  return Tol{1e-5, abs_tol, 1e-5, abs_tol, interpret, true};
}

/// Every Contraction group of f through `be`, checked by check_groups with contraction_tol.
inline Checked check_contractions(JitBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs,
                                  double scale = 1.0, bool interpret = true) {
  return check_groups(be, f, inputs, GroupKind::Contraction,
                      [&](const KernelSpec& spec) { return contraction_tol(spec, scale, interpret); });
}

}  // namespace fusor::test
