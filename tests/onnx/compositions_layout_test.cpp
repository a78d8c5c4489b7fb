// Tests of the index, layout and normalization compositions (onnx/compositions_layout.cpp)
// against values computed here, on every CPU backend this machine has: DepthToSpace in both
// modes and SpaceToDepth (each other's inverse), OneHot along every axis with negative and
// out-of-range indices, EyeLike with k off the diagonal, Hardmax's first of tied maxima,
// ArgMin of integers at the type's minimum, Size of a scalar, CastLike, MVN, LRN, Upsample
// in both opset forms; and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/onnx/composition_checks.h"

using namespace fusor;
using namespace fusor::test;

namespace {

std::vector<double> iota(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(i));
  return v;
}

}  // namespace

TEST_SUITE("onnx/compositions/layout") {
  TEST_CASE("DepthToSpace (DCR and CRD) and SpaceToDepth move each element where ONNX defines") {
    const int64_t n = 2, c = 8, h = 3, w = 2, k = 2;
    const Tensor x = make(DType::F32, {n, c, h, w}, iota(n * c * h * w));
    for (const char* mode : {"DCR", "CRD"}) {
      CAPTURE(mode);
      OnnxBuilder b(13);
      b.input("x", kFloat, {n, c, h, w});
      onnx::NodeProto& node = b.node("DepthToSpace", {"x"}, {"y"});
      attr(node, "blocksize", k);
      attr(node, "mode", mode);
      b.output("y");
      const int64_t co = c / (k * k);
      std::vector<double> want(static_cast<size_t>(x.numel()), 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t o = 0; o < co; ++o)
          for (int64_t y = 0; y < h * k; ++y)
            for (int64_t z = 0; z < w * k; ++z) {
              const int64_t bi = y % k, bj = z % k;
              const int64_t src_c = std::string(mode) == "DCR" ? (bi * k + bj) * co + o : o * k * k + bi * k + bj;
              want[size_t(((i * co + o) * h * k + y) * w * k + z)] = double(((i * c + src_c) * h + y / k) * w + z / k);
            }
      check_on_backends(load(b), {{"x", x}}, make(DType::F32, {n, co, h * k, w * k}, want), 0, 0);
    }
    // SpaceToDepth undoes DepthToSpace's DCR.
    OnnxBuilder round(13);
    round.input("x", kFloat, {n, c, h, w});
    attr(round.node("DepthToSpace", {"x"}, {"s"}), "blocksize", k);
    attr(round.node("SpaceToDepth", {"s"}, {"y"}), "blocksize", k);
    round.output("y");
    check_on_backends(load(round), {{"x", x}}, x, 0, 0);
  }

  TEST_CASE("OneHot along the last, first and middle axis, negative and out-of-range indices all off") {
    const std::vector<double> idx = {0, 2, -1, 3, -4, 1};  // depth 3: -1 is 2, 3 and -4 are off
    for (int64_t axis : {-1, 0, 1, -2}) {
      CAPTURE(axis);
      OnnxBuilder b(11);
      b.input("i", kInt64, {2, 3});
      b.initializer("depth", {}, {3.f});
      b.initializer("values", {2}, {-1.f, 5.f});
      attr(b.node("OneHot", {"i", "depth", "values"}, {"y"}), "axis", axis);
      b.output("y");
      const int64_t at = axis < 0 ? axis + 3 : axis;
      std::vector<int64_t> dims = {2, 3};
      dims.insert(dims.begin() + at, 3);
      std::vector<double> want(18);
      for (int64_t p = 0; p < 2; ++p)
        for (int64_t q = 0; q < 3; ++q)
          for (int64_t cls = 0; cls < 3; ++cls) {
            int64_t v = int64_t(idx[size_t(p * 3 + q)]);
            if (v < 0) v += 3;
            std::vector<int64_t> pos = {p, q};
            pos.insert(pos.begin() + at, cls);
            want[size_t((pos[0] * dims[1] + pos[1]) * dims[2] + pos[2])] = v == cls ? 5 : -1;
          }
      check_on_backends(load(b), {{"i", make(DType::I64, {2, 3}, idx)}}, make(DType::F32, Shape(dims), want), 0, 0);
    }
  }

  TEST_CASE("EyeLike on and off the diagonal, in the input's dtype or the one asked for") {
    for (int64_t k : {0, 1, -2}) {
      CAPTURE(k);
      OnnxBuilder b(13);
      b.input("x", kFloat, {3, 4});
      attr(b.node("EyeLike", {"x"}, {"y"}), "k", k);
      b.output("y");
      std::vector<double> want;
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 4; ++c) want.push_back(c - r == k ? 1 : 0);
      check_on_backends(load(b), {{"x", make(DType::F32, {3, 4}, iota(12))}}, make(DType::F32, {3, 4}, want), 0, 0);
    }
    OnnxBuilder typed(13);
    typed.input("x", kFloat, {2, 2});
    attr(typed.node("EyeLike", {"x"}, {"y"}), "dtype", int64_t(kInt64));
    typed.output("y", kInt64);
    check_on_backends(load(typed), {{"x", make(DType::F32, {2, 2}, iota(4))}}, make(DType::I64, {2, 2}, {1, 0, 0, 1}), 0, 0);
  }

  TEST_CASE("Hardmax marks the first of tied maxima along the axis") {
    const std::vector<double> x = {1, 3, 3, 0, 2, 2, 2, 2, -1, 5, 5, -7};
    for (int64_t axis : {-1, 0}) {
      CAPTURE(axis);
      OnnxBuilder b(13);
      b.input("x", kFloat, {3, 4});
      attr(b.node("Hardmax", {"x"}, {"y"}), "axis", axis);
      b.output("y");
      const std::vector<double> want = axis == -1 ? std::vector<double>{0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}
                                                  : std::vector<double>{0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 1, 0};
      check_on_backends(load(b), {{"x", make(DType::F32, {3, 4}, x)}}, make(DType::F32, {3, 4}, want), 0, 0);
    }
  }

  TEST_CASE("ArgMin of floats and of integers at the type's minimum, first or last of ties") {
    for (int64_t last : {0, 1}) {
      CAPTURE(last);
      OnnxBuilder b(13);
      b.input("x", kInt64, {2, 3});
      onnx::NodeProto& n = b.node("ArgMin", {"x"}, {"y"});
      attr(n, "axis", int64_t(1));
      attr(n, "select_last_index", last);
      b.output("y", kInt64);
      const double lo = -9223372036854775808.0;
      check_on_backends(load(b), {{"x", make(DType::I64, {2, 3}, {5, lo, 7, 2, -1, -1})}},
                        make(DType::I64, {2, 1}, {1, last ? 2.0 : 1.0}), 0, 0);
    }
    OnnxBuilder f(13);
    f.input("x", kFloat, {4});
    attr(f.node("ArgMin", {"x"}, {"y"}), "keepdims", int64_t(0));
    f.output("y", kInt64);
    check_on_backends(load(f), {{"x", make(DType::F32, {4}, {2, -0.5, 7, -0.25})}}, make(DType::I64, {}, {1}), 0, 0);
  }

  TEST_CASE("Size of a tensor and of a scalar; CastLike to an input's dtype") {
    OnnxBuilder b(15);
    b.input("x", kFloat, {2, 3, 5});
    b.input("s", kFloat, {});
    b.input("like", kInt64, {1});
    b.node("Size", {"x"}, {"y"});
    b.node("Size", {"s"}, {"one"});
    b.node("CastLike", {"x", "like"}, {"ints"});
    b.output("y", kInt64);
    b.output("one", kInt64);
    b.output("ints", kInt64);
    Engine e(EngineOptions{.backend = BackendKind::Static, .disk_cache = false});
    std::vector<double> xs;
    for (int i = 0; i < 30; ++i) xs.push_back(i * 0.5 - 3.2);
    const TensorMap out = e.run(load(b), {{"x", make(DType::F32, {2, 3, 5}, xs)},
                                          {"s", make(DType::F32, {}, {1})},
                                          {"like", make(DType::I64, {1}, {0})}});
    FUSOR_CHECK_CLOSE(out.at("y"), make(DType::I64, {}, {30}), 0, 0);
    FUSOR_CHECK_CLOSE(out.at("one"), make(DType::I64, {}, {1}), 0, 0);
    std::vector<double> truncated;
    for (double v : xs) truncated.push_back(std::trunc(double(float(v))));
    FUSOR_CHECK_CLOSE(out.at("ints"), make(DType::I64, {2, 3, 5}, truncated), 0, 0);
  }

  TEST_CASE("MeanVarianceNormalization over N, H, W and LRN over channel windows") {
    const int64_t n = 2, c = 5, h = 2, w = 3, numel = n * c * h * w;
    std::vector<double> x;
    for (int64_t i = 0; i < numel; ++i) x.push_back(std::sin(double(i) * 0.7) * 3 + 0.1 * double(i % 7));
    OnnxBuilder mvn(13);
    mvn.input("x", kFloat, {n, c, h, w});
    mvn.node("MeanVarianceNormalization", {"x"}, {"y"});
    mvn.output("y");
    std::vector<double> want(static_cast<size_t>(numel), 0.0);
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0, s2 = 0;
      auto at = [&](int64_t i, int64_t p) { return size_t((i * c + ch) * h * w + p); };
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < h * w; ++p) s += double(float(x[at(i, p)]));
      const double mean = s / double(n * h * w);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < h * w; ++p) s2 += std::pow(double(float(x[at(i, p)])) - mean, 2);
      const double sd = std::sqrt(s2 / double(n * h * w));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < h * w; ++p) want[at(i, p)] = (double(float(x[at(i, p)])) - mean) / (sd + 1e-9);
    }
    check_on_backends(load(mvn), {{"x", make(DType::F32, {n, c, h, w}, x)}}, make(DType::F32, {n, c, h, w}, want), 1e-5, 1e-5);

    for (int64_t size : {3, 4}) {
      CAPTURE(size);
      OnnxBuilder lrn(13);
      lrn.input("x", kFloat, {n, c, h, w});
      onnx::NodeProto& node = lrn.node("LRN", {"x"}, {"y"});
      attr(node, "size", size);
      attr(node, "alpha", 0.02f);
      attr(node, "beta", 0.6f);
      attr(node, "bias", 2.f);
      lrn.output("y");
      std::vector<double> want_lrn(static_cast<size_t>(numel), 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t p = 0; p < h * w; ++p) {
            double sq = 0;
            for (int64_t j = ch - (size - 1) / 2; j <= ch + size / 2; ++j)
              if (j >= 0 && j < c) sq += std::pow(double(float(x[size_t((i * c + j) * h * w + p)])), 2);
            const size_t at = size_t((i * c + ch) * h * w + p);
            want_lrn[at] = double(float(x[at])) / std::pow(2.0 + double(0.02f) / double(size) * sq, double(0.6f));
          }
      check_on_backends(load(lrn), {{"x", make(DType::F32, {n, c, h, w}, x)}}, make(DType::F32, {n, c, h, w}, want_lrn),
                        1e-5, 1e-6);
    }
  }

  TEST_CASE("Upsample, scales as an attribute (opset 7) and as an input (opset 9), nearest and linear") {
    const Tensor x = make(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4});
    // Nearest, x2 in H and x1.5 in W: asymmetric coordinates rounded down.
    const std::vector<double> nearest = {1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4};
    OnnxBuilder seven(7);
    seven.input("x", kFloat, {1, 1, 2, 2});
    attr(seven.node("Upsample", {"x"}, {"y"}), "scales", std::vector<float>{1, 1, 2, 1.5});
    seven.output("y");
    check_on_backends(load(seven), {{"x", x}}, make(DType::F32, {1, 1, 4, 3}, nearest), 0, 0);
    OnnxBuilder nine(9);
    nine.input("x", kFloat, {1, 1, 2, 2});
    nine.initializer("scales", {4}, {1, 1, 2, 2});
    attr(nine.node("Upsample", {"x", "scales"}, {"y"}), "mode", "linear");
    nine.output("y");
    // Linear, x2: source coordinate i / 2, the last row and column clamped.
    const std::vector<double> linear = {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4};
    check_on_backends(load(nine), {{"x", x}}, make(DType::F32, {1, 1, 4, 4}, linear), 1e-6, 1e-6);
  }

  TEST_CASE("errors name the node: a 3-D DepthToSpace, a bad blocksize, OneHot's axis, LRN without a size") {
    struct Case {
      const char* what;
      std::function<void(OnnxBuilder&)> build;
      ErrorCode code;
      const char* says;
    } cases[] = {
        {"DepthToSpace of rank 3",
         [](OnnxBuilder& b) {
           b.input("x", kFloat, {2, 4, 3});
           attr(b.node("DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", int64_t(2));
         },
         ErrorCode::InvalidGraph, "takes a 4-D input, got rank 3"},
        {"blocksize 0",
         [](OnnxBuilder& b) {
           b.input("x", kFloat, {1, 4, 2, 2});
           attr(b.node("SpaceToDepth", {"x"}, {"y"}, "d2s"), "blocksize", int64_t(0));
         },
         ErrorCode::InvalidGraph, "blocksize must be in [1, 2^30], got 0"},
        {"OneHot axis out of range",
         [](OnnxBuilder& b) {
           b.input("x", kInt64, {2, 3});
           b.initializer("depth", {}, {3.f});
           b.initializer("values", {2}, {0.f, 1.f});
           attr(b.node("OneHot", {"x", "depth", "values"}, {"y"}, "d2s"), "axis", int64_t(3));
         },
         ErrorCode::InvalidGraph, "axis 3 is out of range for indices of rank 2"},
        {"LRN without size",
         [](OnnxBuilder& b) {
           b.input("x", kFloat, {1, 4, 2, 2});
           b.node("LRN", {"x"}, {"y"}, "d2s");
         },
         ErrorCode::InvalidGraph, "size must be in [1, 2^20], got 0"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      OnnxBuilder b(13);
      c.build(b);
      b.output("y");
      const auto [code, msg] = load_error(b);
      CHECK(code == c.code);
      CHECK(msg.find("'d2s'") != std::string::npos);
      CHECK(msg.find(c.says) != std::string::npos);
    }
  }
}
