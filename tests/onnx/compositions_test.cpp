// Tests of the operators the loader writes as fusor's own (onnx/compositions.h): each one's
// values against its formula computed here in double, on every CPU backend this machine has,
// at the inputs where a literal body would fail (overflow, -inf rows); the opset forms of the
// reductions' axes; 1-D Conv and pooling against a direct computation; and the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jit/engine.h"
#include "onnx/load_onnx.h"
#include "tests/onnx/composition_checks.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

const std::vector<double> kX = {-100, -20, -3, -1, -1e-3, 0, 1e-3, 0.5, 1, 3, 20, 100};

// y = op(x) over kX as [3, 4] (x's attributes set by `attrs`), against f(x).
void check_unary(const char* op, const std::function<double(double)>& f,
                 const std::function<void(onnx::NodeProto&)>& attrs = nullptr, int opset = 18) {
  CAPTURE(op);
  OnnxBuilder b(opset);
  b.input("x", kFloat, {3, 4});
  onnx::NodeProto& n = b.node(op, {"x"}, {"y"}, "act");
  if (attrs) attrs(n);
  b.output("y");
  std::vector<double> want;
  for (double v : kX) want.push_back(f(v));
  check_on_backends(load(b), {{"x", make(DType::F32, {3, 4}, kX)}}, make(DType::F32, {3, 4}, want));
}

}  // namespace

TEST_SUITE("onnx/compositions") {
  TEST_CASE("the composed activations match their formulas, with no overflow at +-100") {
    check_unary("Softplus", [](double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); });
    check_unary("Mish", [](double x) { return x * std::tanh(std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0)); });
    check_unary("Softsign", [](double x) { return x / (1 + std::fabs(x)); });
    check_unary("Elu", [](double x) { return x < 0 ? 0.5 * std::expm1(x) : x; },
                [](onnx::NodeProto& n) { attr(n, "alpha", 0.5f); });
    check_unary("Selu", [](double x) {
      const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
      return gamma * (x <= 0 ? alpha * std::expm1(x) : x);
    });
    check_unary("Celu", [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * std::expm1(x / 2.0)); },
                [](onnx::NodeProto& n) { attr(n, "alpha", 2.0f); });
    check_unary("ThresholdedRelu", [](double x) { return x > 0.5 ? x : 0.0; },
                [](onnx::NodeProto& n) { attr(n, "alpha", 0.5f); });
    check_unary("Shrink", [](double x) { return x < -1 ? x + 0.25 : x > 1 ? x - 0.25 : 0.0; }, [](onnx::NodeProto& n) {
      attr(n, "lambd", 1.0f);
      attr(n, "bias", 0.25f);
    });
  }

  TEST_CASE("LogSoftmax along each axis stays finite where exp overflows") {
    for (int axis : {0, 1, -1}) {
      CAPTURE(axis);
      OnnxBuilder b(13);
      b.input("x", kFloat, {3, 4});
      attr(b.node("LogSoftmax", {"x"}, {"y"}, "lsm"), "axis", axis);
      b.output("y");
      std::vector<double> want(12);
      const int a = axis < 0 ? 1 : axis;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          double m = -INFINITY, s = 0;
          for (int k = 0; k < (a == 0 ? 3 : 4); ++k) m = std::max(m, kX[size_t(a == 0 ? k * 4 + j : i * 4 + k)]);
          for (int k = 0; k < (a == 0 ? 3 : 4); ++k) s += std::exp(kX[size_t(a == 0 ? k * 4 + j : i * 4 + k)] - m);
          want[size_t(i * 4 + j)] = kX[size_t(i * 4 + j)] - m - std::log(s);
        }
      check_on_backends(load(b), {{"x", make(DType::F32, {3, 4}, kX)}}, make(DType::F32, {3, 4}, want));
    }
  }

  TEST_CASE("PRelu with a per-channel slope broadcast over NCHW") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {1, 2, 2, 3});
    b.initializer("slope", {2, 1, 1}, {0.1f, -2.f});
    b.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
    b.output("y");
    std::vector<double> want;
    for (size_t i = 0; i < kX.size(); ++i) want.push_back(kX[i] < 0 ? kX[i] * (i < 6 ? 0.1 : -2.0) : kX[i]);
    check_on_backends(load(b), {{"x", make(DType::F32, {1, 2, 2, 3}, kX)}}, make(DType::F32, {1, 2, 2, 3}, want));
  }

  TEST_CASE("Sum and Mean of one and of three broadcast inputs") {
    for (const char* op : {"Sum", "Mean"}) {
      CAPTURE(op);
      const bool is_mean = std::string(op) == "Mean";
      OnnxBuilder one(13);
      one.input("x", kFloat, {2});
      one.node(op, {"x"}, {"y"}, "only");
      one.output("y");
      check_on_backends(load(one), {{"x", make(DType::F32, {2}, {1.5, -2})}}, make(DType::F32, {2}, {1.5, -2}));

      OnnxBuilder three(13);
      three.input("a", kFloat, {2, 3});
      three.input("b", kFloat, {3});
      three.input("c", kFloat, {2, 1});
      three.node(op, {"a", "b", "c"}, {"y"}, "three");
      three.output("y");
      std::vector<double> want;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) {
          double s = (i * 3 + j) + 10.0 * j + 100.0 * i;
          want.push_back(is_mean ? s / 3 : s);
        }
      check_on_backends(load(three),
                        {{"a", make(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5})},
                         {"b", make(DType::F32, {3}, {0, 10, 20})},
                         {"c", make(DType::F32, {2, 1}, {0, 100})}},
                        make(DType::F32, {2, 3}, want));
    }
  }

  TEST_CASE("the L1, L2, sum-of-squares, log-sum and log-sum-exp reductions, axes as attribute or input") {
    // Row 2 is all -inf: its log-sum-exp is -inf, as the literal formula gives.
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> x = {1, -2, 3, 0.5, 1000, 999, -inf, -inf, -inf};
    struct Case {
      const char* op;
      std::function<double(const double*)> f;  // of a row of 3
    } cases[] = {
        {"ReduceL1", [](const double* r) { return std::fabs(r[0]) + std::fabs(r[1]) + std::fabs(r[2]); }},
        {"ReduceL2", [](const double* r) { return std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]); }},
        {"ReduceSumSquare", [](const double* r) { return r[0] * r[0] + r[1] * r[1] + r[2] * r[2]; }},
        {"ReduceLogSum", [](const double* r) { return std::log(r[0] + r[1] + r[2]); }},
        {"ReduceLogSumExp",
         [](const double* r) {
           double m = std::max({r[0], r[1], r[2]});
           if (std::isinf(m)) return m;
           return m + std::log(std::exp(r[0] - m) + std::exp(r[1] - m) + std::exp(r[2] - m));
         }},
    };
    for (const Case& c : cases)
      for (int opset : {17, 18})
        for (int keep : {0, 1}) {
          CAPTURE(c.op);
          CAPTURE(opset);
          CAPTURE(keep);
          const bool finite_only = std::string(c.op) != "ReduceLogSumExp";
          const int rows = finite_only ? 2 : 3;
          OnnxBuilder b(opset);
          b.input("x", kFloat, {rows, 3});
          std::vector<std::string> in = {"x"};
          if (opset >= 18) {
            b.initializer_i64("axes", {1}, {-1});
            in.push_back("axes");
          }
          onnx::NodeProto& n = b.node(c.op, in, {"y"}, "reduce");
          if (opset < 18) attr(n, "axes", std::vector<int64_t>{-1});
          attr(n, "keepdims", keep);
          b.output("y");
          std::vector<double> xs(x.begin(), x.begin() + rows * 3), want;
          if (std::string(c.op) == "ReduceLogSum") xs = {1, 2, 3, 0.5, 0.25, 4};
          for (int r = 0; r < rows; ++r) want.push_back(c.f(&xs[size_t(r * 3)]));
          Shape out = keep ? Shape{rows, 1} : Shape{rows};
          check_on_backends(load(b), {{"x", make(DType::F32, {rows, 3}, xs)}}, make(DType::F32, out, want));
        }
  }

  TEST_CASE("InstanceNormalization over rank 3 and rank 4 inputs") {
    for (int rank : {3, 4}) {
      CAPTURE(rank);
      OnnxBuilder b(17);
      std::vector<OnnxDimSpec> dims = rank == 3 ? std::vector<OnnxDimSpec>{2, 2, 6} : std::vector<OnnxDimSpec>{2, 2, 2, 3};
      Shape shape = rank == 3 ? Shape{2, 2, 6} : Shape{2, 2, 2, 3};
      b.input("x", kFloat, dims);
      b.initializer("scale", {2}, {2.f, -0.5f});
      b.initializer("bias", {2}, {0.25f, 1.f});
      attr(b.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "in"), "epsilon", 0.01f);
      b.output("y");
      std::vector<double> x(24), want(24);
      for (int i = 0; i < 24; ++i) x[size_t(i)] = std::sin(i * 1.7) * (i % 5 + 1);
      for (int nc = 0; nc < 4; ++nc) {
        double m = 0, v = 0;
        for (int k = 0; k < 6; ++k) m += x[size_t(nc * 6 + k)] / 6;
        for (int k = 0; k < 6; ++k) v += (x[size_t(nc * 6 + k)] - m) * (x[size_t(nc * 6 + k)] - m) / 6;
        const double s = nc % 2 ? -0.5 : 2.0, bias = nc % 2 ? 1.0 : 0.25;
        for (int k = 0; k < 6; ++k) want[size_t(nc * 6 + k)] = (x[size_t(nc * 6 + k)] - m) / std::sqrt(v + 0.01) * s + bias;
      }
      check_on_backends(load(b), {{"x", make(DType::F32, shape, x)}}, make(DType::F32, shape, want), 1e-4, 1e-5);
    }
  }

  TEST_CASE("a 1-D Conv is the 2-D one over [N, C, 1, L]: pads, stride, dilation, group, bias") {
    // x [1, 4, 9], w [4, 2, 3] (group 2), pads [2, 1], stride 2, dilation 2.
    const int64_t C = 4, L = 9, M = 4, K = 3, G = 2, S = 2, D = 2, PB = 2, PE = 1;
    const int64_t OL = (L + PB + PE - D * (K - 1) - 1) / S + 1;
    std::vector<double> x(size_t(C * L)), w(size_t(M * (C / G) * K)), bias = {0.5, -1, 2, 0};
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(double(i) * 0.7) * 2;
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(double(i) * 1.3);
    std::vector<double> want(size_t(M * OL));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < OL; ++o) {
        double acc = bias[size_t(m)];
        const int64_t g = m / (M / G);
        for (int64_t c = 0; c < C / G; ++c)
          for (int64_t k = 0; k < K; ++k) {
            const int64_t at = o * S - PB + k * D;
            if (at >= 0 && at < L) acc += w[size_t((m * (C / G) + c) * K + k)] * x[size_t((g * (C / G) + c) * L + at)];
          }
        want[size_t(m * OL + o)] = acc;
      }
    for (bool constant_w : {true, false}) {
      CAPTURE(constant_w);
      OnnxBuilder b(17);
      b.input("x", kFloat, {1, C, "L"});
      std::vector<float> wf(w.begin(), w.end()), bf(bias.begin(), bias.end());
      if (constant_w) b.initializer("w", {M, C / G, K}, wf);
      else b.input("w", kFloat, {M, C / G, K});
      b.initializer("b", {M}, bf);
      onnx::NodeProto& n = b.node("Conv", {"x", "w", "b"}, {"y"}, "conv1d");
      attr(n, "group", G);
      attr(n, "strides", std::vector<int64_t>{S});
      attr(n, "dilations", std::vector<int64_t>{D});
      attr(n, "pads", std::vector<int64_t>{PB, PE});
      if (!constant_w) attr(n, "kernel_shape", std::vector<int64_t>{K});
      b.output("y");
      Graph g = load(b);
      TensorMap in{{"x", make(DType::F32, {1, C, L}, x)}};
      if (!constant_w) in["w"] = make(DType::F32, {M, C / G, K}, w);
      check_on_backends(g, in, make(DType::F32, {1, M, OL}, want), 1e-5, 1e-5);
      if (constant_w) {  // the weights are one rank-4 constant: the 1-D original is not kept beside it
        int rank3 = 0, rank4 = 0;
        for (const Constant& c : g.constants()) {
          rank3 += c.data.rank() == 3;
          rank4 += c.data.rank() == 4;
        }
        CHECK(rank3 == 0);
        CHECK(rank4 == 1);
      }
    }
  }

  TEST_CASE("1-D MaxPool and AveragePool with pads and stride") {
    const std::vector<double> x = {3, -1, 4, 1, -5, 9, 2, -6, 5, 3};
    for (const char* op : {"MaxPool", "AveragePool"}) {
      CAPTURE(op);
      const bool is_max = std::string(op) == "MaxPool";
      OnnxBuilder b(17);
      b.input("x", kFloat, {1, 1, 10});
      onnx::NodeProto& n = b.node(op, {"x"}, {"y"}, "pool1d");
      attr(n, "kernel_shape", std::vector<int64_t>{3});
      attr(n, "strides", std::vector<int64_t>{2});
      attr(n, "pads", std::vector<int64_t>{1, 1});
      b.output("y");
      std::vector<double> want;
      for (int o = 0; o < 5; ++o) {
        double m = -INFINITY, s = 0;
        int count = 0;
        for (int k = 0; k < 3; ++k) {
          const int at = o * 2 - 1 + k;
          if (at < 0 || at >= 10) continue;
          m = std::max(m, x[size_t(at)]);
          s += x[size_t(at)];
          ++count;
        }
        want.push_back(is_max ? m : s / count);  // count_include_pad 0
      }
      check_on_backends(load(b), {{"x", make(DType::F32, {1, 1, 10}, x)}}, make(DType::F32, {1, 1, 5}, want));
    }
  }

  TEST_CASE("Resize nearest and linear along H and W, by constant scales and by sizes computed in the graph") {
    // The source coordinate of output index o along an axis of in -> out (scale s), as ONNX's
    // reference computes it, and the value of a resized row.
    auto source = [](const std::string& coords, double o, int64_t in, double out_exact, double s) {
      if (coords == "asymmetric") return o / s;
      if (coords == "align_corners") return out_exact == 1 ? 0.0 : o * double(in - 1) / (out_exact - 1);
      if (coords == "pytorch_half_pixel" && out_exact == 1) return -0.5;
      return (o + 0.5) / s - 0.5;
    };
    auto clamp = [](double i, int64_t in) { return std::min(std::max(i, 0.0), double(in - 1)); };
    auto nearest = [](const std::string& rounding, double x) {
      if (rounding == "floor") return std::floor(x);
      if (rounding == "ceil") return std::ceil(x);
      if (rounding == "round_prefer_ceil") return std::floor(x + 0.5);
      return std::ceil(x - 0.5);
    };
    struct Case {
      const char* mode;
      const char* coords;
      const char* rounding;
      bool by_sizes;
      int64_t oh, ow;  // sizes, or from the scales below
      double sh, sw;
    } cases[] = {
        {"nearest", "asymmetric", "floor", false, 0, 0, 2.0, 2.0},  // PyTorch's nearest x2 (YOLO's upsampling)
        {"nearest", "half_pixel", "round_prefer_floor", false, 0, 0, 1.5, 0.6},
        {"nearest", "align_corners", "round_prefer_ceil", true, 7, 2, 0, 0},
        {"nearest", "pytorch_half_pixel", "ceil", true, 1, 9, 0, 0},
        {"linear", "half_pixel", "", false, 0, 0, 2.0, 2.0},
        {"linear", "pytorch_half_pixel", "", true, 5, 7, 0, 0},
        {"linear", "align_corners", "", false, 0, 0, 0.6, 1.7},
        {"linear", "asymmetric", "", true, 1, 3, 0, 0},
    };
    const int64_t H = 3, W = 4;
    std::vector<double> x(size_t(2 * H * W));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(double(i) * 1.3) * 4;
    for (const Case& c : cases) {
      CAPTURE(c.mode);
      CAPTURE(c.coords);
      CAPTURE(c.rounding);
      CAPTURE(c.by_sizes);
      OnnxBuilder b(13);
      b.input("x", kFloat, {1, 2, H, W});
      std::vector<std::string> in = {"x", ""};
      if (c.by_sizes) {
        // sizes = Concat(Shape(v)[0:2], [oh, ow]), as F.interpolate(size=...) exports, of a v
        // whose rank the loader does not know (a node's output): the length of sizes says it.
        b.node("Identity", {"x"}, {"v"}, "v");
        in[0] = "v";
        b.initializer_i64("hw", {2}, {c.oh, c.ow});
        b.initializer_i64("zero", {1}, {0});
        b.initializer_i64("two", {1}, {2});
        b.node("Shape", {"v"}, {"shape"}, "shape");
        b.node("Slice", {"shape", "zero", "two"}, {"nc"}, "nc");
        attr(b.node("Concat", {"nc", "hw"}, {"sizes"}, "sizes"), "axis", int64_t(0));
        b.initializer("no_scales", {0}, {});
        in.push_back("no_scales");
        in.push_back("sizes");
      } else {
        b.initializer("scales", {4}, {1.f, 1.f, float(c.sh), float(c.sw)});
        in.push_back("scales");
      }
      onnx::NodeProto& n = b.node("Resize", in, {"y"}, "resize");
      attr(n, "mode", c.mode);
      attr(n, "coordinate_transformation_mode", c.coords);
      if (*c.rounding) attr(n, "nearest_mode", c.rounding);
      b.output("y");
      const double eh = c.by_sizes ? double(c.oh) : double(H) * float(c.sh), ew = c.by_sizes ? double(c.ow) : double(W) * float(c.sw);
      const int64_t OH = int64_t(std::floor(eh)), OW = int64_t(std::floor(ew));
      const double sh = c.by_sizes ? double(OH) / H : double(float(c.sh)), sw = c.by_sizes ? double(OW) / W : double(float(c.sw));
      // Separable: along H, then along W (as the reference interpolates axis by axis).
      auto at = [&](int64_t ch, double yy, double xx) {
        auto row = [&](int64_t r, double xc) {
          if (std::string(c.mode) == "nearest") return x[size_t((ch * H + r) * W + int64_t(clamp(nearest(c.rounding, xc), W)))];
          const double lo = std::floor(xc), w = xc - lo;
          return (1 - w) * x[size_t((ch * H + r) * W + int64_t(clamp(lo, W)))] +
                 w * x[size_t((ch * H + r) * W + int64_t(clamp(lo + 1, W)))];
        };
        if (std::string(c.mode) == "nearest") return row(int64_t(clamp(nearest(c.rounding, yy), H)), xx);
        const double lo = std::floor(yy), w = yy - lo;
        return (1 - w) * row(int64_t(clamp(lo, H)), xx) + w * row(int64_t(clamp(lo + 1, H)), xx);
      };
      std::vector<double> want;
      for (int64_t ch = 0; ch < 2; ++ch)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j)
            want.push_back(at(ch, source(c.coords, double(i), H, eh, sh), source(c.coords, double(j), W, ew, sw)));
      check_on_backends(load(b), {{"x", make(DType::F32, {1, 2, H, W}, x)}}, make(DType::F32, {1, 2, OH, OW}, want),
                        1e-5, 1e-5);
    }
  }

  TEST_CASE("ConvTranspose 2-D and 1-D with constant weights: groups, strides, dilations, pads, output_padding") {
    struct Case {
      int64_t c_in, c_out_g, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw;
    } cases[] = {
        {4, 3, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1},  // a decoder's upsampling, groups of 2
        {3, 2, 1, 2, 4, 3, 1, 1, 2, 0, 2, 1, 0, 2, 0},  // odd strides and dilations, uneven pads
        {2, 2, 1, 1, 5, 1, 2, 1, 1, 0, 1, 0, 1, 0, 1},  // 1-D (kh 1 over H 1)
    };
    for (const Case& c : cases) {
      const bool one_d = c.kh == 1 && c.sh == 1 && c.pt == 0 && c.pb == 0;
      CAPTURE(one_d);
      const int64_t H = one_d ? 1 : 5, W = 6, c_out = c.c_out_g * c.group;
      const int64_t OH = c.sh * (H - 1) + c.oph + (c.kh - 1) * c.dh + 1 - c.pt - c.pb;
      const int64_t OW = c.sw * (W - 1) + c.opw + (c.kw - 1) * c.dw + 1 - c.pl - c.pr;
      std::vector<double> x(size_t(c.c_in * H * W)), w(size_t(c.c_in * c.c_out_g * c.kh * c.kw)), bias;
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(double(i) * 0.9);
      for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(double(i) * 1.7) * 0.5;
      for (int64_t o = 0; o < c_out; ++o) bias.push_back(0.1 * double(o) - 0.2);
      // The scatter: each input pixel adds its kernel, strided and dilated, into the output.
      std::vector<double> want(size_t(c_out * OH * OW));
      for (int64_t o = 0; o < c_out; ++o)
        for (int64_t i = 0; i < OH * OW; ++i) want[size_t(o * OH * OW + i)] = bias[size_t(o)];
      const int64_t c_in_g = c.c_in / c.group;
      for (int64_t ci = 0; ci < c.c_in; ++ci)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t xx = 0; xx < W; ++xx)
            for (int64_t oo = 0; oo < c.c_out_g; ++oo)
              for (int64_t i = 0; i < c.kh; ++i)
                for (int64_t j = 0; j < c.kw; ++j) {
                  const int64_t oy = y * c.sh + i * c.dh - c.pt, ox = xx * c.sw + j * c.dw - c.pl;
                  if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                  const int64_t o = (ci / c_in_g) * c.c_out_g + oo;
                  want[size_t((o * OH + oy) * OW + ox)] +=
                      x[size_t((ci * H + y) * W + xx)] * w[size_t(((ci * c.c_out_g + oo) * c.kh + i) * c.kw + j)];
                }
      OnnxBuilder b(17);
      std::vector<float> wf(w.begin(), w.end()), bf(bias.begin(), bias.end());
      if (one_d) {
        b.input("x", kFloat, {1, c.c_in, W});
        b.initializer("w", {c.c_in, c.c_out_g, c.kw}, wf);
      } else {
        b.input("x", kFloat, {1, c.c_in, H, W});
        b.initializer("w", {c.c_in, c.c_out_g, c.kh, c.kw}, wf);
      }
      b.initializer("b", {c_out}, bf);
      onnx::NodeProto& n = b.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up");
      attr(n, "group", c.group);
      if (one_d) {
        attr(n, "strides", std::vector<int64_t>{c.sw});
        attr(n, "dilations", std::vector<int64_t>{c.dw});
        attr(n, "pads", std::vector<int64_t>{c.pl, c.pr});
        attr(n, "output_padding", std::vector<int64_t>{c.opw});
      } else {
        attr(n, "strides", std::vector<int64_t>{c.sh, c.sw});
        attr(n, "dilations", std::vector<int64_t>{c.dh, c.dw});
        attr(n, "pads", std::vector<int64_t>{c.pt, c.pl, c.pb, c.pr});
        attr(n, "output_padding", std::vector<int64_t>{c.oph, c.opw});
      }
      b.output("y");
      const Shape xs = one_d ? Shape{1, c.c_in, W} : Shape{1, c.c_in, H, W};
      const Shape ys = one_d ? Shape{1, c_out, OW} : Shape{1, c_out, OH, OW};
      check_on_backends(load(b), {{"x", make(DType::F32, xs, x)}}, make(DType::F32, ys, want), 1e-5, 1e-5);
    }
  }

  TEST_CASE("GlobalMaxPool over rank 3 and rank 4 inputs") {
    for (int rank : {3, 4}) {
      CAPTURE(rank);
      OnnxBuilder b(13);
      const Shape s = rank == 3 ? Shape{2, 3, 5} : Shape{2, 3, 2, 3};
      b.input("x", kFloat, rank == 3 ? std::vector<OnnxDimSpec>{2, 3, 5} : std::vector<OnnxDimSpec>{2, 3, 2, 3});
      b.node("Identity", {"x"}, {"v"}, "v");  // its rank unknown to the loader
      b.node("GlobalMaxPool", {"v"}, {"y"}, "gmp");
      b.output("y");
      const int spatial = rank == 3 ? 5 : 6;
      std::vector<double> x(size_t(6 * spatial)), want;
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(double(i) * 2.1);
      for (int nc = 0; nc < 6; ++nc)
        want.push_back(*std::max_element(x.begin() + nc * spatial, x.begin() + (nc + 1) * spatial));
      const Shape ys = rank == 3 ? Shape{2, 3, 1} : Shape{2, 3, 1, 1};
      check_on_backends(load(b), {{"x", make(DType::F32, s, x)}}, make(DType::F32, ys, want));
    }
  }

  TEST_CASE("Resize refuses what it does not have, naming the node") {
    auto resize_error = [](const std::function<void(OnnxBuilder&, onnx::NodeProto&)>& edit) -> std::string {
      OnnxBuilder b(18);
      b.input("x", kFloat, {1, 1, 2, 2});
      b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
      onnx::NodeProto& n = b.node("Resize", {"x", "", "scales"}, {"y"}, "up");
      edit(b, n);
      b.output("y");
      auto [code, what] = load_error(b);
      return std::string(error_code_name(code)) + ": " + what;
    };
    CHECK(resize_error([](OnnxBuilder&, onnx::NodeProto& n) { attr(n, "mode", "cubic"); }).find("Unsupported") !=
          std::string::npos);
    CHECK(resize_error([](OnnxBuilder&, onnx::NodeProto& n) { attr(n, "mode", "cubic"); }).find("node 'up' (Resize)") !=
          std::string::npos);
    CHECK(resize_error([](OnnxBuilder&, onnx::NodeProto& n) { attr(n, "coordinate_transformation_mode", "tf_crop_and_resize"); })
              .find("tf_crop_and_resize") != std::string::npos);
    CHECK(resize_error([](OnnxBuilder&, onnx::NodeProto& n) { attr(n, "antialias", int64_t(1)); }).find("antialias") !=
          std::string::npos);
    {  // 10^6 scales for an input of unknown rank: refused, not 10^6 axes built
      OnnxBuilder b(18);
      b.input("x", kFloat, {1, 1, 2, 2});
      b.node("Identity", {"x"}, {"v"}, "v");
      b.initializer("many", {1000000}, std::vector<float>(1000000, 1.f));
      b.node("Resize", {"v", "", "many"}, {"y"}, "up");
      b.output("y");
      auto [code, what] = load_error(b);
      CHECK(code == ErrorCode::Unsupported);
      CHECK(what.find("rank 1000000") != std::string::npos);
    }
    CHECK(resize_error([](OnnxBuilder& b, onnx::NodeProto& n) {
            b.initializer_i64("sizes", {4}, {1, 1, 4, 4});
            n.add_input("sizes");
          }).find("InvalidGraph: test.onnx: node 'up' (Resize): needs exactly one of scales and sizes") != std::string::npos);
  }

  TEST_CASE("errors name the node: a missing input, a 1-D attribute of the wrong length, an old opset, a used Indices") {
    {
      OnnxBuilder b(17);
      b.input("x", kFloat, {2});
      b.node("PRelu", {"x"}, {"y"}, "p");
      b.output("y");
      auto [code, what] = load_error(b);
      CHECK(code == ErrorCode::InvalidGraph);
      CHECK(what.find("node 'p' (PRelu)") != std::string::npos);
    }
    {
      OnnxBuilder b(17);
      b.input("x", kFloat, {1, 1, 8});
      b.initializer("w", {1, 1, 3}, {1, 1, 1});
      attr(b.node("Conv", {"x", "w"}, {"y"}, "c"), "pads", std::vector<int64_t>{1, 1, 1, 1});
      b.output("y");
      auto [code, what] = load_error(b);
      CHECK(code == ErrorCode::InvalidGraph);
      CHECK(what.find("node 'c' (Conv)") != std::string::npos);
      CHECK(what.find("pads") != std::string::npos);
    }
    {  // a stride that would overflow the paddings
      OnnxBuilder b(17);
      b.input("x", kFloat, {1, 1, 4, 4});
      b.initializer("w", {1, 1, 2, 2}, {1, 1, 1, 1});
      attr(b.node("ConvTranspose", {"x", "w"}, {"y"}, "ct"), "strides", std::vector<int64_t>{int64_t(1) << 62, 1});
      b.output("y");
      auto [code, what] = load_error(b);
      CHECK(code == ErrorCode::InvalidGraph);
      CHECK(what.find("node 'ct' (ConvTranspose)") != std::string::npos);
    }
    {
      OnnxBuilder b(11);
      b.input("x", kFloat, {2, 3});
      b.node("LogSoftmax", {"x"}, {"y"}, "l");
      b.output("y");
      auto [code, what] = load_error(b);
      CHECK(code == ErrorCode::Unsupported);
      CHECK(what.find("LogSoftmax (opset 11: fusor implements it as defined from opset 13)") != std::string::npos);
    }
    {
      OnnxBuilder b(17);
      b.input("x", kFloat, {1, 1, 8});
      attr(b.node("MaxPool", {"x"}, {"y", "idx"}, "mp"), "kernel_shape", std::vector<int64_t>{2});
      b.output("y");
      b.output("idx", kInt64);
      auto [code, what] = load_error(b);
      CHECK(code == ErrorCode::Unsupported);
      CHECK(what.find("node 'mp' (MaxPool)") != std::string::npos);
      CHECK(what.find("'idx' is used") != std::string::npos);
    }
  }
}
