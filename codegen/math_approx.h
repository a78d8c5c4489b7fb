// The numbers of fusor's float approximations of exp, tanh, sigmoid, erf and the two GELU
// forms: one definition shared by every backend that evaluates them (codegen/static/math.h
// in C++, codegen/llvm/emit_expr.cpp as LLVM IR, codegen/asmjit/emit_math.cpp as x86). The schemes, their special values and
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

// ---- GELU, approximate="none" --------------------------------------------------------------

/// GELU(x) = x * Phi(x), Phi the normal CDF; with w = |x|, Phi(-w) = t * 2^(Q(t) - w^2*log2(e)/2)
/// for t = 1 / (1 + kGeluErfcP * w) (Numerical Recipes' erfc form, in the normal's units and
/// base 2), and Phi(x) = 1 - Phi(-w) for x >= 0. Q, highest degree first, is a minimax fit of
/// log2(Phi(-w)/t) + w^2*log2(e)/2 over all of t in (0, 1] (w from 0 to infinity): relative
/// error 1.44e-6 in Phi(-w) everywhere; kGeluErfcP was chosen for the smallest such error at
/// degree 7.
inline constexpr float kGeluErfcP = 0.369f;
inline constexpr std::array<float, 8> kGeluErfcQ = {-0.265497863f, 0.989230275f, -1.16053712f, 0.217608571f,
                                                    0.0077711707f, 0.533097029f, 1.44237936f,  -2.76405334f};
/// -log2(e)/2, rounded to float (the exponent is -w^2*log2(e)/2 + Q(t), as x*x * this + Q).
inline constexpr float kGeluNegHalfLog2e = -0.7213475f;
/// The exponent a is raised to this before the power (Phi(-w) < 2^-150 rounds to 0 below it),
/// so that n = round(a) stays in [-150, -1].
inline constexpr float kGeluExp2Min = -150.0f;
/// 2^a = 2^n * 2^f, f = a - n in [-1/2, 1/2]; 2^n is built from the bits of a + kGeluExp2Shift
/// (1.5*2^23, whose low mantissa bits then hold n + 127 + kGeluExp2Scale) shifted up by
/// kFloatMantissaBits, i.e. the float 2^(n + kGeluExp2Scale), normal for every n in range.
inline constexpr int kGeluExp2Scale = 24;
inline constexpr float kGeluExp2Shift = 12582912.0f + float(kFloatExponentBias + kGeluExp2Scale);

/// Each coefficient times 2^-scale (exact: only the exponents change).
template <size_t N>
constexpr std::array<float, N> scaled_down(std::array<float, N> c, int scale) {
  float f = 1.0f;
  for (int i = 0; i < scale; ++i) f *= 0.5f;
  for (float& v : c) v *= f;
  return c;
}
/// 2^f on [-1/2, 1/2], degree 5, highest degree first (minimax in relative error, 1.4e-7),
/// stored times 2^-kGeluExp2Scale: the power's factor 2^(n + kGeluExp2Scale) is then normal,
/// and the one product that applies it rounds Phi(-w) gradually into the denormals.
inline constexpr std::array<float, 6> kGeluExp2P = scaled_down<6>(
    {0.00132770999f, 0.00967560243f, 0.0555070192f, 0.240221232f, 0.693147063f, 1.00000012f}, kGeluExp2Scale);

// ---- GELU, approximate="tanh" --------------------------------------------------------------

/// sqrt(2/pi), rounded to float (GELU "tanh": u = kGeluTanhScale * (x + kGeluTanhCubic x^3)).
inline constexpr float kGeluTanhScale = 0.797884583f;
inline constexpr float kGeluTanhCubic = 0.044715f;

}  // namespace fusor::approx
