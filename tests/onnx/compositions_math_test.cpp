// Tests of the elementwise compositions (onnx/compositions_math.cpp): each function against
// the C library's in double at the inputs where a literal formula loses its precision (near
// 0, near the ends of the domain, past the overflow of x^2, at the boundaries between the
// series and the closed forms and between atan's reductions), NaN outside the domain, on
// every CPU backend this machine has; Sign, Xor and Mod of integers exactly; Mod of floats
// within an ulp of the dividend.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/onnx/composition_checks.h"

using namespace fusor;
using namespace fusor::test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// y = op(x) over `xs` (rounded to f32 first) against f in double, relative tolerance rtol.
void check_function(const char* op, const std::function<double(double)>& f, std::vector<double> xs, double rtol,
                    int opset = 18) {
  CAPTURE(op);
  OnnxBuilder b(opset);
  const int64_t n = int64_t(xs.size());
  b.input("x", kFloat, {n});
  b.node(op, {"x"}, {"y"}, "f");
  b.output("y");
  std::vector<double> want;
  for (double& v : xs) {
    v = double(float(v));
    want.push_back(f(v));
  }
  check_on_backends(load(b), {{"x", make(DType::F32, {n}, xs)}}, make(DType::F32, {n}, want), rtol, 1e-37);
}

// y = op(a, b) of two i64 vectors (attributes by `attrs`), exactly.
void check_binary_i64(const char* op, const std::vector<double>& a, const std::vector<double>& b_values,
                      const std::vector<double>& want, int64_t fmod = -1) {
  CAPTURE(op);
  OnnxBuilder b(18);
  const int64_t n = int64_t(a.size());
  b.input("a", kInt64, {n});
  b.input("b", kInt64, {n});
  onnx::NodeProto& node = b.node(op, {"a", "b"}, {"y"}, "f");
  if (fmod >= 0) attr(node, "fmod", fmod);
  b.output("y", kInt64);
  check_on_backends(load(b), {{"a", make(DType::I64, {n}, a)}, {"b", make(DType::I64, {n}, b_values)}},
                    make(DType::I64, {n}, want), 0, 0);
}

}  // namespace

TEST_SUITE("onnx/compositions/math") {
  TEST_CASE("the hyperbolic functions and their inverses keep f32 precision near 0 and at the ends") {
    const std::vector<double> wide = {-80, -20, -3, -1.0001, -0.9999, -0.5, -1e-3, -1e-7, 0, 1e-7, 1e-3,
                                      0.124, 0.126, 0.5, 0.9999, 1.0001, 3, 20, 80};
    check_function("Sinh", [](double x) { return std::sinh(x); }, wide, 3e-6);
    check_function("Cosh", [](double x) { return std::cosh(x); }, wide, 3e-6);
    std::vector<double> asinh_x = wide;
    for (double v : {1e17, 9.9e17, 1.1e18, 1e30, -1e30}) asinh_x.push_back(v);
    check_function("Asinh", [](double x) { return std::asinh(x); }, asinh_x, 3e-6);
    check_function("Acosh", [](double x) { return std::acosh(x); },
                   {1, 1.0001, 1.01, 1.5, 3, 100, 1e17, 1.1e18, 1e30, 0.5, -2, kInf}, 3e-6);
    check_function("Atanh", [](double x) { return std::atanh(x); },
                   {-1, -0.999, -0.5, -0.126, -0.124, -1e-6, 0, 1e-6, 0.124, 0.126, 0.5, 0.999, 1, 1.5}, 3e-6);
  }

  TEST_CASE("atan across its reductions, and asin and acos up to the ends of [-1, 1]") {
    check_function("Atan", [](double x) { return std::atan(x); },
                   {-1e30, -100, -2.42, -2.41, -1, -0.42, -0.41, -1e-4, -1e-30, 0, 1e-30, 1e-4, 0.41, 0.42, 1,
                    2.41, 2.42, 100, 1e30, kInf, -kInf, kNaN},
                   3e-7);
    const std::vector<double> unit = {-1, -0.9999, -0.7, -0.5, -1e-4, 0, 1e-4, 0.5, 0.7, 0.9999, 1, 1.5, -1.5, kNaN};
    check_function("Asin", [](double x) { return std::asin(x); }, unit, 1e-6);
    check_function("Acos", [](double x) { return std::acos(x); }, unit, 1e-6);
    check_function("Tan", [](double x) { return std::tan(x); }, {-1.5, -1, -0.3, 0, 1e-5, 0.3, 1, 1.5}, 2e-6);
  }

  TEST_CASE("Swish with the default alpha and with alpha 1.702") {
    check_function("Swish", [](double x) { return x / (1 + std::exp(-x)); }, {-20, -3, -0.5, 0, 0.5, 3, 20}, 2e-6, 24);
    OnnxBuilder b(24);
    b.input("x", kFloat, {3});
    attr(b.node("Swish", {"x"}, {"y"}), "alpha", 1.702f);
    b.output("y");
    std::vector<double> want;
    for (double x : {-2.0, 0.25, 4.0}) want.push_back(x / (1 + std::exp(-double(1.702f) * x)));
    check_on_backends(load(b), {{"x", make(DType::F32, {3}, {-2, 0.25, 4})}}, make(DType::F32, {3}, want), 2e-6, 1e-7);
  }

  TEST_CASE("NaN propagates through every elementwise composition") {
    for (const char* op : {"Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Tan", "Sign"})
      check_function(op, [](double) { return kNaN; }, {kNaN}, 0);
  }

  TEST_CASE("Sign of floats and of integers down to the type's minimum") {
    check_function("Sign", [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, {-kInf, -3, -1e-30, 0, 1e-30, 2, kInf},
                   0);
    OnnxBuilder b(18);
    b.input("x", kInt64, {4});
    b.node("Sign", {"x"}, {"y"});
    b.output("y", kInt64);
    check_on_backends(load(b), {{"x", make(DType::I64, {4}, {-9223372036854775808.0, -5, 0, 7})}},
                      make(DType::I64, {4}, {-1, -1, 0, 1}), 0, 0);
  }

  TEST_CASE("Xor of broadcast bools") {
    OnnxBuilder b(18);
    b.input("p", kBool, {2, 2});
    b.input("q", kBool, {2});
    b.node("Xor", {"p", "q"}, {"y"});
    b.output("y", kBool);
    check_on_backends(load(b), {{"p", make(DType::Bool, {2, 2}, {0, 0, 1, 1})}, {"q", make(DType::Bool, {2}, {0, 1})}},
                      make(DType::Bool, {2, 2}, {0, 1, 1, 0}), 0, 0);
  }

  TEST_CASE("Mod of integers: the divisor's sign (fmod=0) and the dividend's (fmod=1), exactly") {
    const std::vector<double> a = {7, -7, 7, -7, 0, 6, -6, 9007199254740993.0, -4611686018427387904.0};
    const std::vector<double> d = {3, 3, -3, -3, 5, 3, -4, 10, 7};
    std::vector<double> python, c;
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t x = int64_t(a[i]), m = int64_t(d[i]);
      int64_t r = x % m;
      c.push_back(double(r));
      if (r != 0 && (r < 0) != (m < 0)) r += m;
      python.push_back(double(r));
    }
    check_binary_i64("Mod", a, d, python, 0);
    check_binary_i64("Mod", a, d, c, 1);
  }

  TEST_CASE("Mod of floats: C's fmod (fmod=1) and Python's % (fmod=0), within an ulp of the dividend") {
    const std::vector<double> a = {7.5, -7.5, 7.5, -7.5, 5.25, -0.75, 0, 1e6 + 0.25, 3, -3, 1e-30, 12345678};
    const std::vector<double> d = {2, 2, -2, -2, 0.5, 0.5, 3, 3, kInf, kInf, 0.25, -7};
    for (int64_t fmod : {0, 1}) {
      CAPTURE(fmod);
      OnnxBuilder b(18);
      const int64_t n = int64_t(a.size());
      b.input("a", kFloat, {n});
      b.input("b", kFloat, {n});
      attr(b.node("Mod", {"a", "b"}, {"y"}), "fmod", fmod);
      b.output("y");
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i) {
        double r = std::fmod(a[i], d[i]);
        if (!fmod && r != 0 && (r < 0) != (d[i] < 0)) r += d[i];
        want.push_back(r);
      }
      check_on_backends(load(b), {{"a", make(DType::F32, {n}, a)}, {"b", make(DType::F32, {n}, d)}},
                        make(DType::F32, {n}, want), 0, 1e-7);
    }
  }

  TEST_CASE("Mod refuses an fmod other than 0 and 1, naming the node") {
    OnnxBuilder b(18);
    b.input("a", kFloat, {2});
    b.input("b", kFloat, {2});
    attr(b.node("Mod", {"a", "b"}, {"y"}, "m"), "fmod", int64_t(2));
    b.output("y");
    const auto [code, msg] = load_error(b);
    CHECK(code == ErrorCode::InvalidGraph);
    CHECK(msg.find("'m'") != std::string::npos);
    CHECK(msg.find("fmod must be 0 or 1") != std::string::npos);
  }
}
