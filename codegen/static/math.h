// Vectorizable float math of the static kernels: approximations of exp, tanh, erf, sigmoid and
// the two GELU forms, and an accurate contiguous sum (sum_f32). Internal to codegen/static.
//
// Every function is branch-free straight-line code on one float (selects, not branches;
// bit manipulation through std::bit_cast), always inlined, so GCC vectorizes a loop
// `y[i] = exp_f32(x[i])` at -O3 -march=x86-64-v3 (8 lanes of AVX2). Nothing here calls libm
// (std::fabs/std::copysign/std::fma compile to single instructions).
//
// Scheme (coefficients fitted by us against mpmath, with its Chebyshev fit or, for GELU, a
// linear-programming minimax fit, then rounded to float; the numbers live in
// codegen/math_approx.h, shared with the llvm and asmjit backends' emitters):
//   exp      Cody-Waite: n = round(x/ln2), r = x - n*ln2 (ln2 split hi+lo, hi with 9
//            significant bits so n*hi is exact), e^r = 1 + r + r^2*q(r) (degree 6), and
//            2^n applied as two factors 2^(n/2) * 2^(n-n/2) so the result overflows to inf
//            and underflows gradually through the denormals with a single rounding.
//   tanh     |x| < 0.625: x + x^3*p(x^2) (degree 13); else 1 - 2/(e^(2|x|) + 1); sign restored.
//   sigmoid  e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0 (one division; no
//            overflow, no cancellation; very negative inputs give correct denormals).
//   erf      |x| < 1: x*(c0 + x^2*p(x^2)) (degree 13); else 1 - erfc(|x|) with
//            erfc(a) = exp(g(a) - a^2), g a degree-8 fit of log(erfc(a)) + a^2 on [1, 4]
//            (erf rounds to 1 beyond 4).
//   gelu     "none": x/2 * (1 + erf(x/sqrt2)) = x * Phi(x) in one branch-free path:
//            Phi(-|x|) = t * 2^(Q(t) - x^2*log2(e)/2), t = 1/(1 + 0.369|x|) (Numerical
//            Recipes' erfc form; Q a degree-7 minimax fit on all of t in (0, 1], relative
//            error 1.44e-6 from x = 0 to the underflow), 2^a = 2^n * 2^f with 2^f a degree-5
//            polynomial and 2^n built from bits, applied in one final rounding so the negative
//            tail keeps its relative accuracy into the denormals; Phi(x) = 1 - Phi(-|x|) for
//            x >= 0. ~28 vector operations, one division.
//            "tanh": computed as x * sigmoid(2u), u = sqrt(2/pi)*(x + 0.044715x^3), the same
//            function without the 1 + tanh cancellation.
//
// Special values: NaN in gives NaN out; exp(+inf) = +inf, exp(-inf) = 0, exp overflows to
// +inf above 88.7228 and underflows through the denormals to 0 below -103.97; tanh/erf(+-inf)
// = +-1, sigmoid(+inf) = 1, sigmoid(-inf) = 0; tanh/erf keep the sign of zero;
// gelu(+inf) = +inf and gelu(-inf) = NaN (the formula's -inf * 0, as ONNX's reference).
//
// Measured error (every 61st float bit pattern, i.e. 70 million inputs over the whole range,
// against double libm; ulp = spacing of floats at the exact value, 2^-149 for denormal
// results; first figure with FMA as the library is built, second without FMA):
//   exp_f32      1.04 / 1.02 ulp   (overflow, denormal results and 0 included)
//   tanh_f32     1.30 / 1.30 ulp
//   sigmoid_f32  2.30 / 2.30 ulp   (denormal results included)
//   erf_f32      2.02 / 3.01 ulp
//   gelu_erf     |err| <= 9.0e-7*|x| for every normal x; relative 1.7e-6 / 1.7e-6 for x >= 0,
//                2.7e-6 / 3.0e-6 for x >= -5.7, 8.5e-6 / 1.0e-5 for every normal result below
//                (down to x = -13.2; the rounding of x^2*log2(e)/2, ~126 at most, dominates);
//                0.42 of the test's bound at most (at x = -0.09)
//   gelu_tanh    |err| <= 1.43e-7*|x| everywhere; relative 2.7e-6 / 3.8e-6 for x >= -5.7,
//                1.1e-5 / 1.4e-5 below (rounding of the exponent argument, ~80 at most)
// tests/codegen/static/math_test.cpp checks bounds of 1.1, 1.5, 2.5, 2.1 (3.1 without FMA)
// ulp and, for GELU, 2e-7*|x| + 4e-6*|gelu| on a million samples plus breakpoints and specials
// (and, for the erf form, 2e-5 relative on every normal result below x = -5.7).
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "codegen/math_approx.h"

namespace fusor::static_kernels {

#define FUSOR_MATH_INLINE [[gnu::always_inline]] inline

/// a*b + c, fused when the target has FMA (one rounding), else a multiply and an add.
FUSOR_MATH_INLINE float fmadd(float a, float b, float c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// c ? t : f, written with bit masks so that GCC keeps both arms computed and vectorizes the
/// loop. With ternaries GCC turns clamps into branches, threads them across the inlined
/// calls (tanh's clamp makes exp's dead) and sinks possibly-trapping divisions into them;
/// if-conversion then gives up and the loop stays scalar.
FUSOR_MATH_INLINE float select(bool c, float t, float f) {
  uint32_t m = 0u - uint32_t(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(t) & m) | (std::bit_cast<uint32_t>(f) & ~m));
}

/// Horner's scheme over c (highest degree first): c[0]*x^(N-1) + ... + c[N-1], one fmadd a
/// step, unrolled at compile time so the functions below stay straight-line code.
template <size_t N, size_t... I>
FUSOR_MATH_INLINE float horner_impl(float x, const std::array<float, N>& c, std::index_sequence<I...>) {
  float p = c[0];
  ((p = fmadd(p, x, c[I + 1])), ...);
  return p;
}
template <size_t N>
FUSOR_MATH_INLINE float horner(float x, const std::array<float, N>& c) {
  return horner_impl(x, c, std::make_index_sequence<N - 1>{});
}

/// e^x (error bound in the header comment).
FUSOR_MATH_INLINE float exp_f32(float x) {
  using namespace approx;
  // Clamp so that n stays in [-150, 129]; comparisons are false for NaN, which passes.
  float xc = select(x > kExpMax, kExpMax, x);
  xc = select(xc < kExpMin, kExpMin, xc);
  // Round x/ln2 to an integer with the 1.5*2^23 trick: the sum's low mantissa bits hold n.
  float t = fmadd(xc, kLog2e, kExpShift);
  float n = t - kExpShift;
  int32_t ni = int32_t(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kExpShift));
  float r = fmadd(n, kExpNegLn2Hi, xc);
  r = fmadd(n, kExpNegLn2Lo, r);
  float q = horner(r, kExpQ);
  float p = fmadd(q, r * r, r) + 1.0f;
  // 2^n as 2^n1 * 2^n2 with both halves normal (n1, n2 in [-75, 65]).
  int32_t n1 = ni >> 1;
  int32_t n2 = int32_t(uint32_t(ni) - uint32_t(n1));
  float s1 = std::bit_cast<float>((uint32_t(n1) + uint32_t(kFloatExponentBias)) << kFloatMantissaBits);
  float s2 = std::bit_cast<float>((uint32_t(n2) + uint32_t(kFloatExponentBias)) << kFloatMantissaBits);
  return p * s1 * s2;
}

/// tanh(x).
FUSOR_MATH_INLINE float tanh_f32(float x) {
  using namespace approx;
  float a = std::fabs(x);
  float a2 = a * a;
  float p = horner(a2, kTanhP);
  float small = fmadd(a * a2, p, a);
  float ac = select(a > kTanhClamp, kTanhClamp, a);  // tanh(10) rounds to 1; keeps e finite
  float e = exp_f32(2.0f * ac);
  float large = 1.0f - 2.0f / (e + 1.0f);
  float r = select(a < kTanhSmall, small, large);
  return std::copysign(r, x);
}

/// 1 / (1 + e^-x).
FUSOR_MATH_INLINE float sigmoid_f32(float x) {
  float e = exp_f32(-std::fabs(x));
  return select(x >= 0.0f, 1.0f, e) / (1.0f + e);
}

namespace detail {
// erf(a) for 0 <= a < 1: a*(c0 + a^2*p(a^2)); the leading term is added last (one fused
// rounding) so the rounding errors of the polynomial are scaled down by a^2*p/c0 <= 1/3.
FUSOR_MATH_INLINE float erf_small(float a) {
  float a2 = a * a;
  float p = horner(a2, approx::kErfSmallP);
  return fmadd(a, approx::kErfSmallLead, a * a2 * p);
}
// erfc(a) = exp(g(t) - a^2) with the fit f (approx::ErfcFit); beyond f.clamp g is held at
// its value there while -a^2 keeps falling, so the result keeps decaying to 0.
template <size_t N>
FUSOR_MATH_INLINE float erfc_fit(float a, const approx::ErfcFit<N>& f) {
  float ac = select(a > f.clamp, f.clamp, a);
  float t = (ac - f.center) * f.scale;
  float g = horner(t, f.g);
  return exp_f32(fmadd(-a, a, g));
}
// erfc(a) for a >= 1 (any a >= 0 gives a finite value; meaningful from 1 on), g fitted on
// [1, 4] in t = (a - 2.5)/1.5 (only its tiny relative accuracy degrades beyond 4).
FUSOR_MATH_INLINE float erfc_large(float a) { return erfc_fit(a, approx::kErfcLarge); }
}  // namespace detail

/// erf(x).
FUSOR_MATH_INLINE float erf_f32(float x) {
  float a = std::fabs(x);
  float small = detail::erf_small(a);
  float large = 1.0f - detail::erfc_large(select(a > approx::kErfcLarge.clamp, approx::kErfcLarge.clamp, a));
  float r = select(a < approx::kErfSmall, small, large);
  return std::copysign(r, x);
}

/// GELU, approximate="none": x/2 * (1 + erf(x/sqrt2)) = x * Phi(x), Phi the normal CDF.
/// One branch-free path (approx::kGeluErfcQ): Phi(-|x|) = t * 2^(Q(t) - x^2*log2(e)/2),
/// t = 1/(1 + p|x|), the power 2^a split as 2^n * 2^f with both factors and t multiplied in
/// one rounding at the end; Phi(x) = 1 - Phi(-|x|) for x >= 0.
FUSOR_MATH_INLINE float gelu_erf_f32(float x) {
  using namespace approx;
  float w = std::fabs(x);
  float t = 1.0f / fmadd(w, kGeluErfcP, 1.0f);  // 0 at w = inf, so gelu(-inf) = -inf * 0
  float q = horner(t, kGeluErfcQ);
  float a = fmadd(x * x, kGeluNegHalfLog2e, q);  // log2(Phi(-w) / t)
  a = select(a < kGeluExp2Min, kGeluExp2Min, a);  // NaN passes
  float y = a + kGeluExp2Shift;                   // n + 127 + scale in the low mantissa bits
  float n = y - kGeluExp2Shift;                   // round(a), exact
  float f = a - n;                                // exact, in [-1/2, 1/2]
  float p = horner(f, kGeluExp2P);                // 2^f * 2^-scale
  float s = std::bit_cast<float>(std::bit_cast<uint32_t>(y) << kFloatMantissaBits);  // 2^(n + scale)
  float phi_neg = t * p * s;                      // Phi(-w), rounded once (into the denormals)
  return x * select(x >= 0.0f, 1.0f - phi_neg, phi_neg);
}

/// GELU, approximate="tanh": x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
FUSOR_MATH_INLINE float gelu_tanh_f32(float x) {
  float u = approx::kGeluTanhScale * fmadd(approx::kGeluTanhCubic * x, x * x, x);
  return x * sigmoid_f32(2.0f * u);
}

/// The sum of f(x[i]) over a contiguous run, accurate and vectorizable: 32 float partial
/// sums (four AVX registers) per block of 1024 elements, block totals added in double, so
/// each float partial sum has 32 terms at most (worst case ~32 * 2^-24 relative to the sum
/// of magnitudes).
template <class F>
double sum_f32(const float* x, int64_t n, F f) {
  constexpr int kLanes = 32;
  constexpr int64_t kBlock = 1024;
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = n - b < kBlock ? n - b : kBlock;
    const float* p = x + b;
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= m; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += f(p[i + j]);
    float tail = 0;
    for (; i < m; ++i) tail += f(p[i]);
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
    total += double(acc[0]) + double(tail);
  }
  return total;
}

/// The sum of a contiguous run (see sum_f32 above).
inline double sum_f32(const float* x, int64_t n) {
  return sum_f32(x, n, [](float v) { return v; });
}

/// The largest element of a contiguous run (-inf when empty; NaNs are skipped). Written with
/// `a > b ? a : b` in 32 lanes, the form GCC vectorizes into vmaxps (std::max is not).
inline float max_f32(const float* x, int64_t n) {
  constexpr int kLanes = 32;
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  float m[kLanes];
  for (int j = 0; j < kLanes; ++j) m[j] = kLowest;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
  float r = kLowest;
  for (; i < n; ++i) r = x[i] > r ? x[i] : r;
  for (int j = 0; j < kLanes; ++j) r = m[j] > r ? m[j] : r;
  return r;
}

#undef FUSOR_MATH_INLINE

}  // namespace fusor::static_kernels
