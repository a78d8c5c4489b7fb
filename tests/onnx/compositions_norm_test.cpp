// Tests of the normalizations and losses written as fusor's operators
// (onnx/compositions_norm.cpp) against values computed here in double, on every CPU backend
// this machine has: GroupNormalization with opset 18's per-group and opset 21's per-channel
// scale and bias, RMSNormalization over the last one and two dims, LpNormalization with p 1 and 2 and a zero vector. (The losses and
// ReverseSequence are checked by ONNX's node tests, tests/onnx/conformance.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tests/onnx/composition_checks.h"

using namespace fusor;
using namespace fusor::test;

TEST_SUITE("onnx/compositions/norm") {
  TEST_CASE("GroupNormalization: scale and bias per group (opset 18) and per channel (opset 21)") {
    const int64_t n = 2, c = 6, h = 2, w = 3, groups = 3, numel = n * c * h * w;
    std::vector<double> x;
    for (int64_t i = 0; i < numel; ++i) x.push_back(double(float(std::sin(double(i) * 1.3) * 2 + 0.05 * double(i % 5))));
    for (int64_t per : {groups, c}) {
      CAPTURE(per);
      OnnxBuilder b(per == groups ? 18 : 21);
      b.input("x", kFloat, {n, c, h, w});
      std::vector<float> scale, bias;
      for (int64_t i = 0; i < per; ++i) scale.push_back(0.5f + 0.25f * float(i)), bias.push_back(float(i) - 1.f);
      b.initializer("scale", {per}, scale);
      b.initializer("bias", {per}, bias);
      onnx::NodeProto& node = b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
      attr(node, "num_groups", groups);
      attr(node, "epsilon", 1e-3f);
      b.output("y");
      std::vector<double> want(static_cast<size_t>(numel), 0.0);
      const int64_t per_group = c / groups * h * w;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t g = 0; g < groups; ++g) {
          const int64_t base = (i * c + g * (c / groups)) * h * w;
          double mean = 0, var = 0;
          for (int64_t e = 0; e < per_group; ++e) mean += x[size_t(base + e)];
          mean /= double(per_group);
          for (int64_t e = 0; e < per_group; ++e) var += std::pow(x[size_t(base + e)] - mean, 2);
          var /= double(per_group);
          for (int64_t e = 0; e < per_group; ++e) {
            const int64_t ch = g * (c / groups) + e / (h * w);
            const int64_t at = per == groups ? g : ch;
            want[size_t(base + e)] =
                (x[size_t(base + e)] - mean) / std::sqrt(var + double(1e-3f)) * double(scale[size_t(at)]) + double(bias[size_t(at)]);
          }
        }
      check_on_backends(load(b), {{"x", make(DType::F32, {n, c, h, w}, x)}}, make(DType::F32, {n, c, h, w}, want), 1e-5, 1e-5);
    }
  }

  TEST_CASE("RMSNormalization over the last dim and over the last two (axis -2 and 1)") {
    const int64_t r = 2, c = 3, k = 4;
    std::vector<double> x;
    for (int64_t i = 0; i < r * c * k; ++i) x.push_back(double(float(std::cos(double(i) * 0.9) * 3)));
    std::vector<float> scale3 = {0.5f, 1.f, 2.f, -1.f, 0.25f, 1.5f, 1.f, 1.f, 3.f, 2.f, 0.5f, 1.f};
    for (int64_t axis : {-1, -2, 1}) {
      CAPTURE(axis);
      const bool two = axis != -1;
      OnnxBuilder b(23);
      b.input("x", kFloat, {r, c, k});
      std::vector<float> scale(scale3.begin(), scale3.begin() + (two ? c * k : k));
      b.initializer("scale", two ? std::vector<int64_t>{c, k} : std::vector<int64_t>{k}, scale);
      onnx::NodeProto& node = b.node("RMSNormalization", {"x", "scale"}, {"y"});
      attr(node, "axis", axis);
      attr(node, "epsilon", 1e-2f);
      b.output("y");
      const int64_t span = two ? c * k : k;
      std::vector<double> want(x.size(), 0.0);
      for (int64_t row = 0; row < r * c * k / span; ++row) {
        double ms = 0;
        for (int64_t e = 0; e < span; ++e) ms += x[size_t(row * span + e)] * x[size_t(row * span + e)];
        const double rms = std::sqrt(ms / double(span) + double(1e-2f));
        for (int64_t e = 0; e < span; ++e) want[size_t(row * span + e)] = x[size_t(row * span + e)] / rms * double(scale[size_t(e)]);
      }
      check_on_backends(load(b), {{"x", make(DType::F32, {r, c, k}, x)}}, make(DType::F32, {r, c, k}, want), 1e-5, 1e-6);
    }
  }

  TEST_CASE("LpNormalization with p 1 and 2 along each axis; a zero vector stays zero") {
    const std::vector<double> x = {3, -4, 0, 0, 1, 2, 0, 0, -2};
    for (int64_t p : {1, 2})
      for (int64_t axis : {0, -1}) {
        CAPTURE(p);
        CAPTURE(axis);
        OnnxBuilder b(13);
        b.input("x", kFloat, {3, 3});
        onnx::NodeProto& node = b.node("LpNormalization", {"x"}, {"y"});
        attr(node, "p", p);
        attr(node, "axis", axis);
        b.output("y");
        std::vector<double> want(9, 0.0);
        for (int64_t line = 0; line < 3; ++line) {
          auto at = [&](int64_t k) { return size_t(axis == 0 ? k * 3 + line : line * 3 + k); };
          double norm = 0;
          for (int64_t k = 0; k < 3; ++k) norm += p == 1 ? std::fabs(x[at(k)]) : x[at(k)] * x[at(k)];
          if (p == 2) norm = std::sqrt(norm);
          for (int64_t k = 0; k < 3; ++k) want[at(k)] = norm == 0 ? 0 : x[at(k)] / norm;
        }
        check_on_backends(load(b), {{"x", make(DType::F32, {3, 3}, x)}}, make(DType::F32, {3, 3}, want), 1e-6, 1e-7);
      }
  }

  TEST_CASE("GroupNormalization without num_groups and LpNormalization with p 3 are refused, naming the node") {
    OnnxBuilder g(18);
    g.input("x", kFloat, {1, 4, 2});
    g.initializer("s", {2}, {1, 1});
    g.node("GroupNormalization", {"x", "s", "s"}, {"y"}, "gn");
    g.output("y");
    auto [code, msg] = load_error(g);
    CHECK(code == ErrorCode::InvalidGraph);
    CHECK(msg.find("'gn'") != std::string::npos);
    CHECK(msg.find("num_groups must be given") != std::string::npos);
    OnnxBuilder l(13);
    l.input("x", kFloat, {2, 2});
    attr(l.node("LpNormalization", {"x"}, {"y"}, "lp"), "p", int64_t(3));
    l.output("y");
    std::tie(code, msg) = load_error(l);
    CHECK(code == ErrorCode::InvalidGraph);
    CHECK(msg.find("'lp'") != std::string::npos);
    CHECK(msg.find("p must be 1 or 2, got 3") != std::string::npos);
  }
}
