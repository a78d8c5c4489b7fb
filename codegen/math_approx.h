// The numbers of fusor's float approximations of exp, tanh, sigmoid, erf and the two GELU
// forms: one definition shared by every backend that evaluates them (codegen/static/math.h
// in C++, codegen/llvm/emit_pointwise.cpp as LLVM IR). The schemes, their special values and
// their measured accuracy are documented in codegen/static/math.h; a backend that uses these
// tables must evaluate them in the same order (Horner from the first coefficient, each step
// one fused multiply-add where the target has FMA) to keep those bounds. Layer: codegen
// (std only).
#pragma once

#include <array>

namespace fusor::approx {

// ---- exp: Cody-Waite reduction, e^x = 2^n * (1 + r + r^2 * q(r)) -------------------------

/// Inputs are clamped to [kExpMin, kExpMax] so that n stays in [-150, 129] (NaN passes).
inline constexpr float kExpMax = 89.0f;
inline constexpr float kExpMin = -104.0f;
/// 1.5 * 2^23: adding it rounds to an integer held in the sum's low mantissa bits.
inline constexpr float kExpShift = 12582912.0f;
/// log2(e), rounded to float.
inline constexpr float kLog2e = 1.44269502f;
/// -ln2 split in two: the high part has 9 significant bits, so n * kExpNegLn2Hi is exact.
inline constexpr float kExpNegLn2Hi = -0.693359375f;
inline constexpr float kExpNegLn2Lo = 2.12194442e-4f;
/// q(r), highest degree first (q = Horner over these; then p = q*r^2 + r, then p + 1).
inline constexpr std::array<float, 5> kExpQ = {0.00139269268f, 0.00836377405f, 0.0416665487f, 0.166665733f, 0.5f};
/// The float exponent bias (2^n is built as the bits (n + bias) << kFloatMantissaBits).
inline constexpr int kFloatExponentBias = 127;
inline constexpr int kFloatMantissaBits = 23;

// ---- tanh ----------------------------------------------------------------------------------

/// Below this |x|, tanh(x) = x + x^3 * p(x^2) with p = kTanhP; from it on 1 - 2/(e^(2|x|) + 1).
inline constexpr float kTanhSmall = 0.625f;
/// |x| is clamped to this before the exponential (tanh(10) rounds to 1; e stays finite).
inline constexpr float kTanhClamp = 10.0f;
/// p(x^2), highest degree first.
inline constexpr std::array<float, 6> kTanhP = {0.00229274482f, -0.00834394526f, 0.0217689183f,
                                                -0.0539592579f, 0.133333042f,   -0.333333343f};

// ---- erf -----------------------------------------------------------------------------------

/// Below this |x|, erf(x) = x * (kErfSmallLead + x^2 * p(x^2)) with p = kErfSmallP (the
/// leading term added last, in one fused rounding: fma(x, lead, x^3 * p)).
inline constexpr float kErfSmall = 1.0f;
inline constexpr float kErfSmallLead = 1.12837911f;
inline constexpr std::array<float, 6> kErfSmallP = {7.87587487e-05f, -0.00080168643f, 0.00518908724f,
                                                    -0.0268542115f,  0.112835944f,    -0.37612626f};

/// erfc(a) = exp(g(t) - a^2) for a >= 1, t = (min(a, clamp) - center) * scale, g a
/// polynomial in t (highest degree first).
template <size_t N>
struct ErfcFit {
  float clamp;            ///< a is clamped to this before g (g is held beyond it)
  float center;           ///< t = (a - center) * scale maps the fit interval to [-1, 1]
  float scale;
  std::array<float, N> g; ///< g(t), highest degree first
};

/// erfc on [1, 4] (erf's large branch; erf rounds to 1 beyond 4), degree 8.
inline constexpr ErfcFit<9> kErfcLarge = {
    4.0f, 2.5f, 0.666666687f,
    {4.19583994e-05f, -0.000227499506f, 0.0008803971f, -0.00319030532f, 0.0109618492f, -0.0366475768f,
     0.126239166f, -0.529021025f, -1.55681527f}};

/// erfc on [1, 10] (GELU's negative tail, relative accuracy down to erfc(10)), degree 12.
inline constexpr ErfcFit<13> kErfcWide = {
    10.0f, 5.5f, 0.222222224f,
    {0.00085237145f, -0.00238227192f, 0.00276515214f, -0.00394865451f, 0.00873270817f, -0.0160962734f,
     0.0271851011f, -0.047096137f, 0.0832912475f, -0.152486265f, 0.305435151f, -0.793132186f, -2.2930088f}};

// ---- GELU ----------------------------------------------------------------------------------

/// 1/sqrt(2), rounded to float (GELU "none": z = x * kGeluInvSqrt2).
inline constexpr float kGeluInvSqrt2 = 0.707106769f;
/// sqrt(2/pi), rounded to float (GELU "tanh": u = kGeluTanhScale * (x + kGeluTanhCubic x^3)).
inline constexpr float kGeluTanhScale = 0.797884583f;
inline constexpr float kGeluTanhCubic = 0.044715f;

}  // namespace fusor::approx
