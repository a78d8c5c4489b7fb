// The static MaxPool, AveragePool and GlobalAveragePool kernels against the double-precision
// reference, on one thread and on a thread pool.
//
// Tolerances: a max is exact (0). An average of at most 25 values, summed in float, is
// within a few 2^-24 relative of the double result: rtol 1e-6 plus atol 1e-6 for sums near
// zero. A global average over up to ~4000 values (16 float partial sums): rtol 1e-5,
// atol 1e-6. f16/bf16 averages are rounded once from f32: one unit in the last place,
// rtol 2^-10 (f16) and 2^-7 (bf16).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "jit/thread_pool.h"
#include "tests/support/reference_contraction.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

using test::pool;

void check_op(OpKind op, const std::vector<OpInput>& inputs, const Attributes& attrs, const Tensor& want, double rtol,
              double atol) {
  for (Parallel* par : {&serial_parallel(), &pool()}) {
    INFO("threads: ", par->num_threads());
    std::vector<Tensor> got = run_static_op(op, inputs, attrs, *par);
    FUSOR_CHECK_CLOSE(got[0], want, rtol, atol);
  }
}

Attributes pool_attrs(const RefPool& g, bool average) {
  Attributes a{{"kernel_shape", std::vector<int64_t>{g.kh, g.kw}},
               {"strides", std::vector<int64_t>{g.stride_h, g.stride_w}},
               {"pads", std::vector<int64_t>{g.pad_t, g.pad_l, g.pad_b, g.pad_r}},
               {"dilations", std::vector<int64_t>{g.dil_h, g.dil_w}},
               {"ceil_mode", int64_t(g.ceil_mode)}};
  if (average) a["count_include_pad"] = int64_t(g.count_include_pad);
  return a;
}

std::string describe(const Shape& x, const RefPool& g) {
  return x.str() + " kernel " + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " strides " +
         std::to_string(g.stride_h) + "," + std::to_string(g.stride_w) + " pads " +
         Shape{g.pad_t, g.pad_l, g.pad_b, g.pad_r}.str() + " dilations " + std::to_string(g.dil_h) + "," +
         std::to_string(g.dil_w) + " ceil_mode " + std::to_string(g.ceil_mode) + " count_include_pad " +
         std::to_string(g.count_include_pad);
}

void check_max(const Shape& xs, const RefPool& g, uint64_t seed) {
  INFO("MaxPool ", describe(xs, g));
  Tensor x = randn(xs, seed);
  check_op(OpKind::MaxPool, {x}, pool_attrs(g, false), ref_maxpool(x, g), 0, 0);
}

void check_avg(const Shape& xs, const RefPool& g, uint64_t seed) {
  INFO("AveragePool ", describe(xs, g));
  Tensor x = randn(xs, seed);
  check_op(OpKind::AveragePool, {x}, pool_attrs(g, true), ref_avgpool(x, g), 1e-6, 1e-6);
}

// The window geometries every pool test sweeps; pads stay below the window so no window
// sees only padding (which shape inference rejects).
std::vector<RefPool> geometries() {
  std::vector<RefPool> out;
  for (auto [kh, kw] : {std::pair<int64_t, int64_t>{2, 2}, {3, 3}, {3, 2}, {1, 1}})
    for (int64_t stride : {1, 2, 3})
      for (auto pads : {std::vector<int64_t>{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 1, 1, 0}, {1, 0, 0, 1}})
        for (int64_t dil : {1, 2})
          for (bool ceil_mode : {false, true}) {
            if (pads[0] >= kh || pads[1] >= kw || pads[2] >= kh || pads[3] >= kw) continue;
            RefPool g;
            g.kh = kh, g.kw = kw;
            g.stride_h = g.stride_w = stride;
            g.pad_t = pads[0], g.pad_l = pads[1], g.pad_b = pads[2], g.pad_r = pads[3];
            g.dil_h = g.dil_w = dil;
            g.ceil_mode = ceil_mode;
            out.push_back(g);
          }
  return out;
}

}  // namespace

TEST_SUITE("static/pool") {
  TEST_CASE("MaxPool sweeps windows strides pads dilations and ceil_mode") {
    uint64_t seed = 1;
    for (const RefPool& g : geometries()) {
      check_max(Shape{2, 3, 9, 11}, g, seed++);
      check_max(Shape{1, 2, 8, 7}, g, seed++);
    }
  }

  TEST_CASE("AveragePool sweeps count_include_pad and ceil_mode") {
    uint64_t seed = 1000;
    for (RefPool g : geometries())
      for (bool include : {false, true}) {
        g.count_include_pad = include;
        check_avg(Shape{2, 3, 9, 11}, g, seed++);
        check_avg(Shape{1, 2, 8, 7}, g, seed++);
      }
  }

  TEST_CASE("AveragePool ceil_mode does not count past the end padding") {
    // Width 6 holding 1..6, kernel 3, stride 2, pads 1 left and right, ceil_mode: windows
    // start at -1, 1, 3, 5. With count_include_pad the left pad (-1) and the right pad (6)
    // count, but the last window's position 7, past the explicit padding, does not.
    Tensor x = make(DType::F32, Shape{1, 1, 1, 6}, {1, 2, 3, 4, 5, 6});
    Attributes a{{"kernel_shape", std::vector<int64_t>{1, 3}},
                 {"strides", std::vector<int64_t>{1, 2}},
                 {"pads", std::vector<int64_t>{0, 1, 0, 1}},
                 {"ceil_mode", int64_t(1)},
                 {"count_include_pad", int64_t(1)}};
    std::vector<Tensor> got = run_static_op(OpKind::AveragePool, {x}, a);
    FUSOR_CHECK_CLOSE(got[0], make(DType::F32, Shape{1, 1, 1, 4}, {3.0 / 3, 9.0 / 3, 15.0 / 3, 6.0 / 2}), 1e-6, 0);
    a["count_include_pad"] = int64_t(0);
    got = run_static_op(OpKind::AveragePool, {x}, a);
    FUSOR_CHECK_CLOSE(got[0], make(DType::F32, Shape{1, 1, 1, 4}, {3.0 / 2, 9.0 / 3, 15.0 / 3, 6.0 / 1}), 1e-6, 0);
  }

  TEST_CASE("MaxPool auto_pad SAME_UPPER and SAME_LOWER") {
    Tensor x = randn(Shape{1, 2, 7, 8}, 77);
    for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
      INFO(mode);
      // kernel 4, stride 2: out 4 x 4; total pad h = 3*2+4-7 = 3, w = 3*2+4-8 = 2.
      RefPool g;
      g.kh = g.kw = 4;
      g.stride_h = g.stride_w = 2;
      bool upper = std::string(mode) == "SAME_UPPER";
      g.pad_t = upper ? 1 : 2, g.pad_b = upper ? 2 : 1, g.pad_l = 1, g.pad_r = 1;
      Attributes a{{"kernel_shape", std::vector<int64_t>{4, 4}}, {"strides", std::vector<int64_t>{2, 2}},
                   {"auto_pad", mode}};
      check_op(OpKind::MaxPool, {x}, a, ref_maxpool(x, g), 0, 0);
    }
  }

  TEST_CASE("MaxPool propagates NaN and ignores padding") {
    float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor x = make(DType::F32, Shape{1, 1, 2, 3}, {-5, nan, -3, -4, -2, -6});
    Attributes a{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    std::vector<Tensor> got = run_static_op(OpKind::MaxPool, {x}, a);
    Tensor want = make(DType::F32, Shape{1, 1, 3, 4}, {-5, nan, nan, -3, -4, nan, nan, -3, -4, -2, -2, -6});
    FUSOR_CHECK_CLOSE(got[0], want, 0, 0);
    // The strided loop too: windows {-5, nan}, {-3, 7}, {-4, -2}, {-6, nan}.
    x = make(DType::F32, Shape{1, 1, 1, 8}, {-5, nan, -3, 7, -4, -2, -6, nan});
    got = run_static_op(OpKind::MaxPool, {x}, {{"kernel_shape", std::vector<int64_t>{1, 2}},
                                                {"strides", std::vector<int64_t>{1, 2}}});
    FUSOR_CHECK_CLOSE(got[0], make(DType::F32, Shape{1, 1, 1, 4}, {nan, 7, -2, nan}), 0, 0);
  }

  TEST_CASE("GlobalAveragePool of rank 3 4 and 5") {
    uint64_t seed = 2000;
    for (const Shape& s : {Shape{2, 3, 1}, Shape{2, 3, 17}, Shape{1, 4, 7, 9}, Shape{2, 64, 56, 56},
                           Shape{1, 3, 2, 3, 5}, Shape{3, 1, 1, 1, 1}}) {
      INFO("GlobalAveragePool ", s.str());
      Tensor x = randn(s, seed++, 1.0);
      check_op(OpKind::GlobalAveragePool, {x}, {}, ref_global_avgpool(x), 1e-5, 1e-6);
    }
  }

  TEST_CASE("pools in f16 and bf16 compute through f32") {
    RefPool g;
    g.kh = g.kw = 3;
    g.stride_h = g.stride_w = 2;
    g.pad_t = g.pad_l = g.pad_b = g.pad_r = 1;
    g.ceil_mode = true;
    for (DType t : {DType::F16, DType::BF16}) {
      INFO(dtype_name(t));
      // A max of exactly representable values is exact; an average is rounded once.
      double rtol = t == DType::F16 ? 1.0 / 1024 : 1.0 / 128;
      Tensor x = randn(Shape{2, 3, 9, 8}, 3000, 1.0, t);
      check_op(OpKind::MaxPool, {x}, pool_attrs(g, false), ref_maxpool(x, g), 0, 0);
      check_op(OpKind::AveragePool, {x}, pool_attrs(g, true), ref_avgpool(x, g), rtol, rtol * 0.01);
      check_op(OpKind::GlobalAveragePool, {x}, {}, ref_global_avgpool(x), rtol, rtol * 0.01);
    }
  }
}
