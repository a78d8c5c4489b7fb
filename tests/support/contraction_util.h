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
