// The static Conv, MatMul and Gemm kernels against the double-precision reference, on one
// thread and on a thread pool.
//
// Tolerances. f32 products accumulate K terms in float: with N(0, 1) operands a partial sum
// is ~sqrt(K) and each of the K roundings adds up to 2^-24 of it, so the error grows about
// like K * 2^-24 (up to K^1.5 * 2^-24 when the errors line up). kF32Rtol plus
// f32_atol(K) = 1e-5 + 1e-6 * K (~16x the typical error) catches any indexing slip, which
// is O(1). f16/bf16 results are rounded once from f32, so they may differ from the rounded
// double by one unit in the last place: rtol 2^-10 (f16) and 2^-7 (bf16).
#include <doctest/doctest.h>

#include <string>

#include "jit/thread_pool.h"
#include "tests/support/reference_contraction.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

using test::pool;

constexpr double kF32Rtol = 1e-5;
double f32_atol(int64_t k) { return 1e-5 + 1e-6 * double(k); }

// Runs op serially and on the pool; both must match want.
void check_op(OpKind op, const std::vector<OpInput>& inputs, const Attributes& attrs, const Tensor& want, double rtol,
              double atol) {
  for (Parallel* par : {&serial_parallel(), &pool()}) {
    INFO("threads: ", par->num_threads());
    std::vector<Tensor> got = run_static_op(op, inputs, attrs, *par);
    FUSOR_CHECK_CLOSE(got[0], want, rtol, atol);
  }
}

std::string dims_str(std::initializer_list<int64_t> v) { return Shape(v).str(); }

// ---- Gemm / MatMul ----------------------------------------------------------------------

void check_gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, double alpha, double beta, const Shape* c_shape,
                uint64_t seed) {
  INFO("M N K = ", m, " ", n, " ", k, " transA ", ta, " transB ", tb, " alpha ", alpha, " beta ", beta,
       " C ", c_shape ? c_shape->str() : "none");
  Tensor a = randn(ta ? Shape{k, m} : Shape{m, k}, seed);
  Tensor b = randn(tb ? Shape{n, k} : Shape{k, n}, seed + 1);
  Tensor c = c_shape ? randn(*c_shape, seed + 2) : Tensor();
  Attributes attrs{{"transA", int64_t(ta)}, {"transB", int64_t(tb)}, {"alpha", alpha}, {"beta", beta}};
  std::vector<OpInput> in{a, b};
  if (c_shape) in.push_back(c);
  check_op(OpKind::Gemm, in, attrs, ref_gemm(a, b, c_shape ? &c : nullptr, alpha, beta, ta, tb), kF32Rtol,
           f32_atol(k) * std::max(1.0, std::abs(alpha)));
}

void check_matmul(const Shape& as, const Shape& bs, uint64_t seed, DType dtype = DType::F32) {
  INFO("MatMul ", as.str(), " x ", bs.str(), " ", dtype_name(dtype));
  Tensor a = randn(as, seed, 1.0, dtype), b = randn(bs, seed + 1, 1.0, dtype);
  int64_t k = as[-1];
  double rtol = dtype == DType::F16 ? 1.0 / 1024 : dtype == DType::BF16 ? 1.0 / 128 : kF32Rtol;
  double atol = dtype == DType::F32 ? f32_atol(k) : rtol * 0.1;
  check_op(OpKind::MatMul, {a, b}, {}, ref_matmul(a, b), rtol, atol);
}

}  // namespace

TEST_SUITE("static/contraction") {
  TEST_CASE("Gemm matches the reference over sizes and transposes") {
    const std::vector<int64_t> sizes{1, 7, 8, 9, 15, 16, 17, 33, 100};
    uint64_t seed = 1;
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes) check_gemm(m, n, k, false, false, 1.0, 0.0, nullptr, seed++);
    // Every transpose on a size grid around the vector width (8) and a tile (16).
    for (int64_t m : {1, 9, 17, 33})
      for (int64_t n : {1, 8, 15, 100})
        for (int64_t k : {1, 7, 16, 33})
          for (int t = 1; t < 4; ++t) check_gemm(m, n, k, t & 1, t & 2, 1.0, 0.0, nullptr, seed++);
  }

  TEST_CASE("Gemm applies alpha and beta to every C broadcast shape") {
    uint64_t seed = 1000;
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{7, 9, 17}, {16, 16, 8}, {1, 33, 15}, {33, 1, 9}}) {
      std::vector<Shape> c_shapes{Shape{n}, Shape{1, n}, Shape{m, 1}, Shape{}, Shape{1, 1}, Shape{m, n}};
      for (const Shape& cs : c_shapes)
        for (double alpha : {1.0, 0.5, -2.0})
          for (double beta : {1.0, 0.25, 0.0})
            for (int t = 0; t < 4; ++t) check_gemm(m, n, k, t & 1, t & 2, alpha, beta, &cs, seed++);
    }
  }

  TEST_CASE("Gemm without C scales by alpha") {
    check_gemm(17, 9, 33, false, true, -1.5, 1.0, nullptr, 7);
    check_gemm(1, 1, 100, true, false, 3.0, 1.0, nullptr, 8);
  }

  TEST_CASE("Gemm of the transformer MLP size") {
    check_gemm(128, 3072, 768, false, false, 1.0, 1.0, nullptr, 11);
    Shape bias{768};
    check_gemm(64, 768, 512, false, true, 1.0, 1.0, &bias, 12);
  }

  TEST_CASE("MatMul promotes 1-D operands") {
    uint64_t seed = 2000;
    for (int64_t k : {1, 8, 17, 100})
      for (int64_t n : {1, 7, 16, 33}) {
        check_matmul(Shape{k}, Shape{k, n}, seed++);  // [K] x [K, N] -> [N]
        check_matmul(Shape{n, k}, Shape{k}, seed++);  // [M, K] x [K] -> [M]
      }
    check_matmul(Shape{33}, Shape{33}, seed++);        // dot product -> scalar
    check_matmul(Shape{9}, Shape{2, 9, 5}, seed++);    // [K] x batched
    check_matmul(Shape{2, 3, 9}, Shape{9}, seed++);    // batched x [K]
  }

  TEST_CASE("MatMul 2-D sizes") {
    uint64_t seed = 3000;
    for (int64_t m : {1, 7, 8, 9, 16, 33})
      for (int64_t n : {1, 8, 15, 17, 100})
        for (int64_t k : {1, 9, 16, 33}) check_matmul(Shape{m, k}, Shape{k, n}, seed++);
  }

  TEST_CASE("MatMul broadcasts batch dimensions") {
    uint64_t seed = 4000;
    check_matmul(Shape{2, 1, 5, 7}, Shape{3, 7, 4}, seed++);
    check_matmul(Shape{3, 1, 1, 4}, Shape{1, 2, 4, 5}, seed++);
    check_matmul(Shape{5, 6}, Shape{2, 3, 6, 4}, seed++);      // a shared by every batch entry
    check_matmul(Shape{2, 3, 4, 5}, Shape{5, 6}, seed++);      // b shared: batch folds into M
    check_matmul(Shape{2, 3, 4, 5}, Shape{1, 1, 5, 6}, seed++);
    check_matmul(Shape{4, 1, 3, 8}, Shape{1, 5, 8, 2}, seed++);
    check_matmul(Shape{1, 9, 1}, Shape{6, 1, 1}, seed++);      // k = 1, m = n = 1
  }

  TEST_CASE("MatMul of attention heads") {
    // Many equal small products: the kernel spreads them over threads, one BLAS thread each.
    check_matmul(Shape{12, 32, 16}, Shape{12, 16, 32}, 5000);
    check_matmul(Shape{2, 4, 33, 8}, Shape{2, 4, 8, 33}, 5001);
    check_matmul(Shape{3, 64, 64}, Shape{3, 64, 64}, 5002);
  }

  TEST_CASE("MatMul and Gemm in f16 and bf16 compute through f32") {
    for (DType t : {DType::F16, DType::BF16}) {
      check_matmul(Shape{7, 17}, Shape{17, 9}, 6000, t);
      check_matmul(Shape{2, 1, 5, 7}, Shape{3, 7, 4}, 6001, t);
      check_matmul(Shape{16}, Shape{16, 3}, 6002, t);
      INFO("Gemm ", dtype_name(t));
      Tensor a = randn(Shape{9, 8}, 6003, 1.0, t), b = randn(Shape{9, 5}, 6004, 1.0, t), c = randn(Shape{5}, 6005, 1.0, t);
      double rtol = t == DType::F16 ? 1.0 / 1024 : 1.0 / 128;
      check_op(OpKind::Gemm, {a, b, c}, {{"transA", int64_t(1)}, {"alpha", 0.5}, {"beta", 2.0}},
               ref_gemm(a, b, &c, 0.5, 2.0, true, false), rtol, rtol * 0.1);
    }
  }

  TEST_CASE("MatMul with an empty inner dimension gives zeros") {
    Tensor a = Tensor::empty(DType::F32, Shape{3, 0}), b = Tensor::empty(DType::F32, Shape{0, 4});
    check_op(OpKind::MatMul, {a, b}, {}, Tensor::zeros(DType::F32, Shape{3, 4}), 0, 0);
  }
}

// ---- Conv -------------------------------------------------------------------------------

namespace {

struct ConvCase {
  Shape x, w;
  RefConv geo;
  bool bias = true;
  Attributes attrs;  ///< when empty, built from geo (strides, pads, dilations, group)
};

void check_conv(const ConvCase& cc, uint64_t seed, DType dtype = DType::F32) {
  INFO("Conv x ", cc.x.str(), " w ", cc.w.str(), " strides ", cc.geo.stride_h, ",", cc.geo.stride_w, " pads ",
       dims_str({cc.geo.pad_t, cc.geo.pad_l, cc.geo.pad_b, cc.geo.pad_r}), " dilations ", cc.geo.dil_h, ",",
       cc.geo.dil_w, " group ", cc.geo.group, " bias ", cc.bias, " ", dtype_name(dtype));
  Tensor x = randn(cc.x, seed, 1.0, dtype), w = randn(cc.w, seed + 1, 1.0, dtype);
  Tensor b = randn(Shape{cc.w[0]}, seed + 2, 1.0, dtype);
  Attributes attrs = cc.attrs;
  if (attrs.empty()) {
    const RefConv& g = cc.geo;
    attrs = {{"strides", std::vector<int64_t>{g.stride_h, g.stride_w}},
             {"pads", std::vector<int64_t>{g.pad_t, g.pad_l, g.pad_b, g.pad_r}},
             {"dilations", std::vector<int64_t>{g.dil_h, g.dil_w}},
             {"group", g.group}};
  }
  std::vector<OpInput> in{x, w};
  if (cc.bias) in.push_back(b);
  int64_t k = cc.w[1] * cc.w[2] * cc.w[3];
  double rtol = dtype == DType::F16 ? 1.0 / 1024 : dtype == DType::BF16 ? 1.0 / 128 : kF32Rtol;
  double atol = dtype == DType::F32 ? f32_atol(k) : rtol * 0.1;
  check_op(OpKind::Conv, in, attrs, ref_conv2d(x, w, cc.bias ? &b : nullptr, cc.geo), rtol, atol);
}

RefConv geo(int64_t stride, std::vector<int64_t> pads, int64_t dil, int64_t group) {
  RefConv g;
  g.stride_h = g.stride_w = stride;
  g.dil_h = g.dil_w = dil;
  g.pad_t = pads[0], g.pad_l = pads[1], g.pad_b = pads[2], g.pad_r = pads[3];
  g.group = group;
  return g;
}

// SAME padding computed here from its definition (output = ceil(in / stride)), apart from
// the resolution shape inference does.
void same_pads(int64_t in, int64_t k, int64_t stride, int64_t dil, bool upper, int64_t* begin, int64_t* end) {
  int64_t out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>(0, (out - 1) * stride + (k - 1) * dil + 1 - in);
  *begin = upper ? total / 2 : total - total / 2;
  *end = total - *begin;
}

}  // namespace

TEST_SUITE("static/contraction") {
  TEST_CASE("Conv sweeps strides pads dilations and bias") {
    uint64_t seed = 7000;
    for (int64_t stride : {1, 2})
      for (auto pads : {std::vector<int64_t>{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 1, 2, 1}, {2, 0, 1, 3}})
        for (int64_t dil : {1, 2})
          for (bool bias : {true, false}) {
            check_conv({Shape{2, 3, 9, 11}, Shape{4, 3, 3, 3}, geo(stride, pads, dil, 1), bias}, seed++);
            check_conv({Shape{1, 5, 7, 8}, Shape{6, 5, 2, 3}, geo(stride, pads, dil, 1), bias}, seed++);
          }
  }

  TEST_CASE("Conv with groups") {
    uint64_t seed = 7100;
    for (int64_t stride : {1, 2})
      for (auto pads : {std::vector<int64_t>{0, 0, 0, 0}, {1, 2, 1, 0}}) {
        check_conv({Shape{2, 4, 9, 7}, Shape{6, 2, 3, 3}, geo(stride, pads, 1, 2)}, seed++);
        check_conv({Shape{1, 6, 8, 8}, Shape{9, 2, 3, 3}, geo(stride, pads, 2, 3), false}, seed++);
        // group == C with a channel multiplier of 2 (not the depthwise fast path)
        check_conv({Shape{1, 4, 7, 9}, Shape{8, 1, 3, 3}, geo(stride, pads, 1, 4)}, seed++);
      }
  }

  TEST_CASE("Conv depthwise") {
    uint64_t seed = 7200;
    for (int64_t stride : {1, 2})
      for (auto pads : {std::vector<int64_t>{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 0, 1, 2}})
        for (int64_t dil : {1, 2})
          for (bool bias : {true, false}) {
            check_conv({Shape{2, 5, 9, 13}, Shape{5, 1, 3, 3}, geo(stride, pads, dil, 5), bias}, seed++);
            check_conv({Shape{1, 3, 17, 6}, Shape{3, 1, 5, 2}, geo(stride, pads, dil, 3), bias}, seed++);
          }
    check_conv({Shape{1, 32, 20, 20}, Shape{32, 1, 3, 3}, geo(1, {1, 1, 1, 1}, 1, 32)}, seed++);
  }

  TEST_CASE("Conv 1x1") {
    uint64_t seed = 7300;
    for (bool bias : {true, false}) {
      check_conv({Shape{2, 8, 7, 9}, Shape{16, 8, 1, 1}, geo(1, {0, 0, 0, 0}, 1, 1), bias}, seed++);  // direct GEMM
      check_conv({Shape{1, 1, 5, 5}, Shape{3, 1, 1, 1}, geo(1, {0, 0, 0, 0}, 1, 1), bias}, seed++);
      check_conv({Shape{2, 6, 8, 4}, Shape{4, 3, 1, 1}, geo(1, {0, 0, 0, 0}, 1, 2), bias}, seed++);   // grouped
      check_conv({Shape{1, 8, 9, 9}, Shape{16, 8, 1, 1}, geo(2, {0, 0, 0, 0}, 1, 1), bias}, seed++);  // strided
      check_conv({Shape{1, 8, 5, 6}, Shape{4, 8, 1, 1}, geo(1, {1, 0, 0, 1}, 1, 1), bias}, seed++);   // padded
    }
  }

  TEST_CASE("Conv of a ResNet-sized layer") {
    check_conv({Shape{1, 64, 28, 28}, Shape{64, 64, 3, 3}, geo(1, {1, 1, 1, 1}, 1, 1)}, 7400);
    check_conv({Shape{1, 16, 56, 56}, Shape{32, 16, 1, 1}, geo(1, {0, 0, 0, 0}, 1, 1)}, 7401);
  }

  TEST_CASE("Conv auto_pad") {
    uint64_t seed = 7500;
    for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"})
      for (int64_t stride : {1, 2})
        for (int64_t dil : {1, 2})
          for (int64_t group : {1, 3}) {
            ConvCase cc{Shape{1, 3, 9, 10}, Shape{6, 3 / group, 3, 4}, geo(stride, {0, 0, 0, 0}, dil, group)};
            if (std::string(mode) != "VALID") {
              bool upper = std::string(mode) == "SAME_UPPER";
              same_pads(9, 3, stride, dil, upper, &cc.geo.pad_t, &cc.geo.pad_b);
              same_pads(10, 4, stride, dil, upper, &cc.geo.pad_l, &cc.geo.pad_r);
            }
            cc.attrs = {{"auto_pad", mode},
                        {"strides", std::vector<int64_t>{stride, stride}},
                        {"dilations", std::vector<int64_t>{dil, dil}},
                        {"group", group}};
            INFO("auto_pad ", mode);
            check_conv(cc, seed++);
          }
  }

  TEST_CASE("Conv in f16 and bf16 computes through f32") {
    for (DType t : {DType::F16, DType::BF16}) {
      check_conv({Shape{1, 4, 6, 7}, Shape{6, 2, 3, 3}, geo(2, {1, 0, 1, 1}, 1, 2)}, 7600, t);
      check_conv({Shape{1, 3, 6, 7}, Shape{3, 1, 3, 3}, geo(1, {1, 1, 1, 1}, 1, 3)}, 7601, t);
    }
  }
}
