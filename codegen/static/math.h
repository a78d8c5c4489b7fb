// Vectorizable float approximations of exp, tanh, erf, sigmoid and the two GELU forms, used
// by the static kernels' hot loops. Internal to codegen/static.
//
// Every function is branch-free straight-line code on one float (selects, not branches;
// bit manipulation through std::bit_cast), always inlined, so GCC vectorizes a loop
// `y[i] = exp_f32(x[i])` at -O3 -march=x86-64-v3 (8 lanes of AVX2). Nothing here calls libm
// (std::fabs/std::copysign/std::fma compile to single instructions).
//
// Scheme (coefficients fitted by us with mpmath's Chebyshev fit, then rounded to float):
//   exp      Cody-Waite: n = round(x/ln2), r = x - n*ln2 (ln2 split hi+lo, hi with 9
//            significant bits so n*hi is exact), e^r = 1 + r + r^2*q(r) (degree 6), and
//            2^n applied as two factors 2^(n/2) * 2^(n-n/2) so the result overflows to inf
//            and underflows gradually through the denormals with a single rounding.
//   tanh     |x| < 0.625: x + x^3*p(x^2) (degree 13); else 1 - 2/(e^(2|x|) + 1); sign restored.
//   sigmoid  e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0 (no overflow, no
//            cancellation; tiny negative inputs give correct denormals).
//   erf      |x| < 1: x*p(x^2) (degree 13); else 1 - erfc(|x|) with
//            erfc(a) = exp(g(a) - a^2), g a degree-8 fit of log(erfc(a)) + a^2 on [1, 4]
//            (erf rounds to 1 beyond 4).
//   gelu     "none": x/2 * (1 + erf(x/sqrt2)), where 1 + erf is formed as erfc(|z|) for
//            negative z beyond 1 (no cancellation in the negative tail); "tanh": written as
//            x * sigmoid(2u), u = sqrt(2/pi)*(x + 0.044715x^3), which is the same function
//            without the 1 + tanh cancellation.
//
// Special values: NaN in gives NaN out; exp(+inf) = +inf, exp(-inf) = 0, exp overflows to
// +inf above 88.72 and underflows through the denormals to 0 below -103.97; tanh/erf(+-inf)
// = +-1, sigmoid(+inf) = 1, sigmoid(-inf) = 0; tanh/erf keep the sign of zero;
// gelu(+inf) = +inf and gelu(-inf) = NaN (the formula's inf * 0, as ONNX's reference).
//
// Measured error (tests/codegen/static/math_test.cpp; every 61st float bit pattern plus
// dense sweeps near 0, the denormals and each function's breakpoints, against double libm;
// ulp = spacing of floats at the exact value, 2^-149 for denormal results):
//   exp_f32      <= 1 ulp                (whole range, denormal results included)
//   tanh_f32     <= 2 ulp
//   sigmoid_f32  <= 2 ulp                (denormal results included)
//   erf_f32      <= 2 ulp
//   gelu_erf     <= 8e-7 * |x| + 4e-45   (relative error of the Phi factor <= 8e-7 down to
//                                         x = -5.7; below, the result is < 4e-8 in magnitude)
//   gelu_tanh    <= 2e-6 * |x| + 1e-44   (measured against the double "1 + tanh" formula)
// These bounds hold with and without FMA (FUSOR_STATIC_ARCH="" builds use plain mul-add).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

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

/// e^x (error bound in the header comment).
FUSOR_MATH_INLINE float exp_f32(float x) {
  // Clamp so that n stays in [-150, 129]; comparisons are false for NaN, which passes.
  float xc = x > 89.0f ? 89.0f : x;
  xc = xc < -104.0f ? -104.0f : xc;
  // Round x/ln2 to an integer with the 1.5*2^23 trick: the sum's low mantissa bits hold n.
  constexpr float kShift = 12582912.0f;
  float t = fmadd(xc, 1.44269502f, kShift);
  float n = t - kShift;
  int32_t ni = int32_t(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShift));
  float r = fmadd(n, -0.693359375f, xc);
  r = fmadd(n, 2.12194442e-4f, r);
  float q = fmadd(r, 0.00139269268f, 0.00836377405f);
  q = fmadd(q, r, 0.0416665487f);
  q = fmadd(q, r, 0.166665733f);
  q = fmadd(q, r, 0.5f);
  float p = fmadd(q, r * r, r) + 1.0f;
  // 2^n as 2^n1 * 2^n2 with both halves normal (n1, n2 in [-75, 65]).
  int32_t n1 = ni >> 1;
  int32_t n2 = int32_t(uint32_t(ni) - uint32_t(n1));
  float s1 = std::bit_cast<float>((uint32_t(n1) + 127u) << 23);
  float s2 = std::bit_cast<float>((uint32_t(n2) + 127u) << 23);
  return p * s1 * s2;
}

/// tanh(x).
FUSOR_MATH_INLINE float tanh_f32(float x) {
  float a = std::fabs(x);
  float a2 = a * a;
  float p = fmadd(a2, 0.00229274482f, -0.00834394526f);
  p = fmadd(p, a2, 0.0217689183f);
  p = fmadd(p, a2, -0.0539592579f);
  p = fmadd(p, a2, 0.133333042f);
  p = fmadd(p, a2, -0.333333343f);
  float small = fmadd(a * a2, p, a);
  float ac = a > 10.0f ? 10.0f : a;  // tanh(10) rounds to 1; keeps e finite
  float e = exp_f32(2.0f * ac);
  float large = 1.0f - 2.0f / (e + 1.0f);
  float r = a < 0.625f ? small : large;
  return std::copysign(r, x);
}

/// 1 / (1 + e^-x).
FUSOR_MATH_INLINE float sigmoid_f32(float x) {
  float e = exp_f32(-std::fabs(x));
  float s = 1.0f / (1.0f + e);
  return x >= 0.0f ? s : e * s;
}

namespace detail {
// erf(a)/a as a polynomial in a^2, for 0 <= a < 1.
FUSOR_MATH_INLINE float erf_small_ratio(float a2) {
  float p = fmadd(a2, 7.87587487e-05f, -0.00080168643f);
  p = fmadd(p, a2, 0.00518908724f);
  p = fmadd(p, a2, -0.0268542115f);
  p = fmadd(p, a2, 0.112835944f);
  p = fmadd(p, a2, -0.37612626f);
  return fmadd(p, a2, 1.12837911f);
}
// erfc(a) for a >= 1 (any a >= 0 gives a finite value; meaningful from 1 on). g is fitted
// on [1, 4] in t = (a - 2.5)/1.5; beyond 4 it is held at g(4) while -a^2 keeps falling, so
// the result keeps decaying to 0 (only its tiny relative accuracy degrades there).
FUSOR_MATH_INLINE float erfc_large(float a) {
  float ac = a > 4.0f ? 4.0f : a;
  float t = (ac - 2.5f) * 0.666666687f;
  float g = fmadd(t, 4.19583994e-05f, -0.000227499506f);
  g = fmadd(g, t, 0.0008803971f);
  g = fmadd(g, t, -0.00319030532f);
  g = fmadd(g, t, 0.0109618492f);
  g = fmadd(g, t, -0.0366475768f);
  g = fmadd(g, t, 0.126239166f);
  g = fmadd(g, t, -0.529021025f);
  g = fmadd(g, t, -1.55681527f);
  return exp_f32(fmadd(-a, a, g));
}
}  // namespace detail

/// erf(x).
FUSOR_MATH_INLINE float erf_f32(float x) {
  float a = std::fabs(x);
  float small = a * detail::erf_small_ratio(a * a);
  float large = 1.0f - detail::erfc_large(a > 4.0f ? 4.0f : a);
  float r = a < 1.0f ? small : large;
  return std::copysign(r, x);
}

/// GELU, approximate="none": x/2 * (1 + erf(x/sqrt2)).
FUSOR_MATH_INLINE float gelu_erf_f32(float x) {
  float z = x * 0.707106769f;
  float a = std::fabs(z);
  float erf_small = std::copysign(a * detail::erf_small_ratio(a * a), z);
  float ec = detail::erfc_large(a);             // erfc(|z|), for |z| >= 1
  float tail = x >= 0.0f ? 2.0f - ec : ec;      // 1 + erf(z) for |z| >= 1
  float one_plus_erf = a < 1.0f ? 1.0f + erf_small : tail;
  return 0.5f * x * one_plus_erf;
}

/// GELU, approximate="tanh": x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
FUSOR_MATH_INLINE float gelu_tanh_f32(float x) {
  float u = 0.797884583f * fmadd(0.044715f * x, x * x, x);
  return x * sigmoid_f32(2.0f * u);
}

#undef FUSOR_MATH_INLINE

}  // namespace fusor::static_kernels
