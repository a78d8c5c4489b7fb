// The float approximations of codegen/static/math.h over the whole float range, against
// double libm. Checked twice: through the static kernels (Exp, Tanh, Sigmoid, Erf, Gelu),
// i.e. as compiled into the library (-march=x86-64-v3: FMA), and by calling math.h from this
// file, compiled with the tests' flags (no FMA unless the default target has it), so both
// code paths meet the documented bounds.
//
// Samples: every 4099th float bit pattern (about a million values, both signs, all
// exponents), dense runs around each function's breakpoints, denormals, and +-0, +-inf,
// NaN, the overflow and underflow thresholds.
#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/static/math.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// Bounds in ulp of the exact value (see math.h); erf is 2.02 ulp with FMA, 3.01 without.
constexpr double kExpUlp = 1.1, kTanhUlp = 1.5, kSigmoidUlp = 2.5, kErfUlpFma = 2.1, kErfUlpNoFma = 3.1;
// GELU: |got - want| <= kGeluAbs*|x| + kGeluRel*|want| + 1e-44.
constexpr double kGeluAbs = 2e-7, kGeluRel = 4e-6;
// GELU (erf form) below x = -5.7, where kGeluAbs*|x| dwarfs the result: relative error, for
// every normal result (math.h: 8.5e-6 with FMA, 1.0e-5 without).
constexpr double kGeluTailRel = 2e-5;

std::vector<float> samples() {
  std::vector<float> v;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099) v.push_back(std::bit_cast<float>(uint32_t(b)));
  for (float start : {0.0f, 0.6f, 0.95f, 3.9f, 9.9f, 88.7f, -88.7f, -103.9f, -5.7f, 1.4f}) {
    float x = start;
    for (int i = 0; i < 4000; ++i) {
      v.push_back(x);
      v.push_back(-x);
      x = std::nextafter(x, INFINITY);
    }
  }
  for (uint32_t b = 1; b < 0x800000u; b += 997) v.push_back(std::bit_cast<float>(b));  // denormals
  for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 88.72283f, 88.72284f,
                  -87.33655f, -103.97208f, -103.97209f, 1.0f, -1.0f, 0.625f, 4.0f, 10.0f})
    v.push_back(s);
  return v;
}

// Spacing of floats at the exact value w (2^-149 in the denormal range).
double ulp_of(double w) {
  const double a = std::fabs(w);
  if (a < FLT_MIN) return std::ldexp(1.0, -149);
  int e;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 24);
}

double ref_exp(double x) { return std::exp(x); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_erf(double x) { return std::erf(x); }
double ref_sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
double ref_gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double ref_gelu_tanh(double x) {  // x/2 (1 + tanh(u)) = x / (1 + e^-2u), without cancellation
  return x / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Max ulp error of got against ref over xs; NaN must match NaN, and a result whose exact
// value rounds to +-inf in float must be that infinity. Reports the worst input.
double max_ulp(const std::vector<float>& xs, const std::vector<float>& got, double (*ref)(double), std::string* where) {
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double w = ref(xs[i]), g = got[i];
    double err;
    if (std::isnan(w) || std::isnan(g)) err = std::isnan(w) == std::isnan(g) ? 0 : INFINITY;
    else if (std::isinf(float(w)) || std::isinf(g)) err = float(w) == float(g) ? 0 : INFINITY;
    else err = std::fabs(g - w) / ulp_of(w);
    if (err > worst) {
      worst = err;
      *where = "x=" + std::to_string(xs[i]) + " (bits " + std::to_string(std::bit_cast<uint32_t>(xs[i])) +
               ") got " + std::to_string(g) + " want " + std::to_string(w);
    }
  }
  return worst;
}

// Max of (|got - want| - kGeluAbs*|x| - kGeluRel*|want|); <= 1e-44 passes.
double gelu_excess(const std::vector<float>& xs, const std::vector<float>& got, double (*ref)(double),
                   std::string* where) {
  double worst = -INFINITY;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i], w = ref(x), g = got[i];
    double excess;
    if (std::isnan(w) || std::isnan(g)) excess = std::isnan(w) == std::isnan(g) ? -1 : INFINITY;
    else if (std::isinf(float(w)) || std::isinf(g)) excess = float(w) == float(g) ? -1 : INFINITY;
    else excess = std::fabs(g - w) - kGeluAbs * std::fabs(x) - kGeluRel * std::fabs(w);
    if (excess > worst) {
      worst = excess;
      *where = "x=" + std::to_string(xs[i]) + " got " + std::to_string(g) + " want " + std::to_string(w);
    }
  }
  return worst;
}

std::vector<float> via_op(OpKind op, const std::vector<float>& xs, const char* approximate = nullptr) {
  Tensor x = Tensor::empty(DType::F32, {int64_t(xs.size())});
  std::copy(xs.begin(), xs.end(), x.data<float>());
  Attributes attrs;
  if (approximate) attrs["approximate"] = approximate;
  const Tensor y = test::run_static_op(op, {x}, attrs)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

template <class F>
std::vector<float> direct(const std::vector<float>& xs, F f) {
  std::vector<float> y(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) y[i] = f(xs[i]);
  return y;
}

}  // namespace

TEST_SUITE("static/math") {
  TEST_CASE("approximations in the kernels meet their bounds over the float range") {
    const std::vector<float> xs = samples();
    std::string at;
    double e = max_ulp(xs, via_op(OpKind::Exp, xs), ref_exp, &at);
    INFO("exp: " << e << " ulp at " << at);
    CHECK(e <= kExpUlp);
    e = max_ulp(xs, via_op(OpKind::Tanh, xs), ref_tanh, &at);
    INFO("tanh: " << e << " ulp at " << at);
    CHECK(e <= kTanhUlp);
    e = max_ulp(xs, via_op(OpKind::Sigmoid, xs), ref_sigmoid, &at);
    INFO("sigmoid: " << e << " ulp at " << at);
    CHECK(e <= kSigmoidUlp);
    e = max_ulp(xs, via_op(OpKind::Erf, xs), ref_erf, &at);
    INFO("erf: " << e << " ulp at " << at);
    CHECK(e <= kErfUlpFma);
    e = gelu_excess(xs, via_op(OpKind::Gelu, xs, "none"), ref_gelu_erf, &at);
    INFO("gelu none: excess " << e << " at " << at);
    CHECK(e <= 1e-44);
    e = gelu_excess(xs, via_op(OpKind::Gelu, xs, "tanh"), ref_gelu_tanh, &at);
    INFO("gelu tanh: excess " << e << " at " << at);
    CHECK(e <= 1e-44);
  }

  TEST_CASE("math.h compiled with the test flags meets the same bounds") {
    using namespace static_kernels;
    const std::vector<float> xs = samples();
    std::string at;
#if defined(__FMA__)
    const double erf_bound = kErfUlpFma;
#else
    const double erf_bound = kErfUlpNoFma;
#endif
    double e = max_ulp(xs, direct(xs, [](float v) { return exp_f32(v); }), ref_exp, &at);
    INFO("exp: " << e << " ulp at " << at);
    CHECK(e <= kExpUlp);
    e = max_ulp(xs, direct(xs, [](float v) { return tanh_f32(v); }), ref_tanh, &at);
    INFO("tanh: " << e << " ulp at " << at);
    CHECK(e <= kTanhUlp);
    e = max_ulp(xs, direct(xs, [](float v) { return sigmoid_f32(v); }), ref_sigmoid, &at);
    INFO("sigmoid: " << e << " ulp at " << at);
    CHECK(e <= kSigmoidUlp);
    e = max_ulp(xs, direct(xs, [](float v) { return erf_f32(v); }), ref_erf, &at);
    INFO("erf: " << e << " ulp at " << at);
    CHECK(e <= erf_bound);
    e = gelu_excess(xs, direct(xs, [](float v) { return gelu_erf_f32(v); }), ref_gelu_erf, &at);
    INFO("gelu none: excess " << e << " at " << at);
    CHECK(e <= 1e-44);
    e = gelu_excess(xs, direct(xs, [](float v) { return gelu_tanh_f32(v); }), ref_gelu_tanh, &at);
    INFO("gelu tanh: excess " << e << " at " << at);
    CHECK(e <= 1e-44);
  }

  TEST_CASE("gelu's negative tail keeps its relative accuracy down to the underflow") {
    std::vector<float> xs;
    for (uint32_t b = std::bit_cast<uint32_t>(-5.7f); std::bit_cast<float>(b) >= -13.5f; b += 101)
      xs.push_back(std::bit_cast<float>(b));
    const auto worst_rel = [&](const std::vector<float>& got, std::string* where) {
      double worst = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double w = ref_gelu_erf(xs[i]);
        if (std::fabs(w) < FLT_MIN) continue;  // denormal results: the absolute bound only
        const double e = std::fabs(got[i] - w) / std::fabs(w);
        if (e > worst) {
          worst = e;
          *where = "x=" + std::to_string(xs[i]) + " got " + std::to_string(got[i]) + " want " + std::to_string(w);
        }
      }
      return worst;
    };
    std::string at;
    double e = worst_rel(via_op(OpKind::Gelu, xs, "none"), &at);
    INFO("kernel: relative " << e << " at " << at);
    CHECK(e <= kGeluTailRel);
    e = worst_rel(direct(xs, [](float v) { return static_kernels::gelu_erf_f32(v); }), &at);
    INFO("math.h: relative " << e << " at " << at);
    CHECK(e <= kGeluTailRel);
  }

  TEST_CASE("special values") {
    using namespace static_kernels;
    CHECK(exp_f32(INFINITY) == INFINITY);
    CHECK(exp_f32(-INFINITY) == 0.0f);
    CHECK(std::isnan(exp_f32(NAN)));
    CHECK(exp_f32(0.0f) == 1.0f);
    CHECK(exp_f32(-0.0f) == 1.0f);
    CHECK(std::isfinite(exp_f32(88.72283f)));
    CHECK(exp_f32(88.7229f) == INFINITY);
    CHECK(exp_f32(-103.0f) > 0.0f);    // a denormal, not flushed
    CHECK(exp_f32(-104.0f) == 0.0f);
    CHECK(tanh_f32(INFINITY) == 1.0f);
    CHECK(tanh_f32(-INFINITY) == -1.0f);
    CHECK(std::signbit(tanh_f32(-0.0f)));
    CHECK(std::isnan(tanh_f32(NAN)));
    CHECK(tanh_f32(1e-30f) == 1e-30f);
    CHECK(erf_f32(INFINITY) == 1.0f);
    CHECK(erf_f32(-INFINITY) == -1.0f);
    CHECK(std::signbit(erf_f32(-0.0f)));
    CHECK(std::isnan(erf_f32(NAN)));
    CHECK(sigmoid_f32(INFINITY) == 1.0f);
    CHECK(sigmoid_f32(-INFINITY) == 0.0f);
    CHECK(sigmoid_f32(0.0f) == 0.5f);
    CHECK(sigmoid_f32(-100.0f) > 0.0f);  // e^-100, a denormal
    CHECK(std::isnan(sigmoid_f32(NAN)));
    CHECK(gelu_erf_f32(INFINITY) == INFINITY);
    CHECK(std::isnan(gelu_erf_f32(-INFINITY)));  // the formula's -inf * 0, like the reference
    CHECK(gelu_tanh_f32(INFINITY) == INFINITY);
    CHECK(std::isnan(gelu_erf_f32(NAN)));
    CHECK(std::isnan(gelu_tanh_f32(NAN)));
    CHECK(gelu_erf_f32(-10.0f) <= 0.0f);
    CHECK(gelu_erf_f32(-14.0f) < 0.0f);    // a denormal (-1.1e-43), not flushed
    CHECK(gelu_erf_f32(-20.0f) == 0.0f);   // Phi(-20) < 2^-150
    CHECK(gelu_erf_f32(FLT_MAX) == FLT_MAX);
    CHECK(std::signbit(gelu_erf_f32(-0.0f)));
  }

  TEST_CASE("sum_f32 is accurate on long runs") {
    std::vector<float> v(1000003);
    double exact = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = 1.0f + float(i % 7) * 0.125f;  // exactly representable; exact sum in double
      exact += double(v[i]);
    }
    CHECK(static_kernels::sum_f32(v.data(), int64_t(v.size())) == exact);
    CHECK(static_kernels::sum_f32(v.data(), 0) == 0.0);
  }
}
