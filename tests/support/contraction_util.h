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
