// Static normalization kernels (BatchNormalization, LayerNormalization, Softmax) against the
// double-precision reference, serial and on a 4-thread pool, f32 / f16 / bf16.
//
// Tolerances (allclose: |got - want| <= atol + rtol*|want|):
//   BatchNormalization f32  rtol 2e-6, atol 2e-6 (folded scale/shift: a few ulp of the
//                           larger of x*s and the shift, which may cancel)
//   LayerNormalization f32  rtol 1e-5, atol 1e-5 (float row sums; x - mean cancels)
//   Softmax f32             rtol 3e-6, atol 1e-12 (x - max rounds to 0.5 ulp of up to ~30,
//                           which exp turns into ~2e-6 relative)
//   f16 / bf16              rtol 1e-3 / 8e-3 (one ulp of the output format), atol 1e-6
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "jit/thread_pool.h"
#include "tests/support/reference_pointwise.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::OpInput;

namespace {

using test::parallels;

std::vector<int64_t> sweep_sizes() {
  std::vector<int64_t> s = test::sizes_around(8);
  for (int64_t v : test::sizes_around(16)) s.push_back(v);
  return s;
}

struct Tol {
  double rtol, atol;
};
Tol tol_for(DType t, Tol f32) {
  if (t == DType::F16) return {1e-3, 1e-6};
  if (t == DType::BF16) return {8e-3, 1e-6};
  return f32;
}

const std::vector<DType> kFloats = {DType::F32, DType::F16, DType::BF16};

std::string where(const char* op, DType t, const Shape& s, const std::string& extra) {
  std::ostringstream os;
  os << op << " " << dtype_name(t) << " " << s.str() << " " << extra;
  return os.str();
}

void check_batchnorm(DType t, const Shape& x_shape, double eps, uint64_t seed) {
  const int64_t c = x_shape[1];
  const Tensor x = test::randn(x_shape, seed, 2.0, t);
  const Tensor scale = test::randn({c}, seed + 1, 1.0, t), bias = test::randn({c}, seed + 2, 1.0, t);
  const Tensor mean = test::randn({c}, seed + 3, 1.0, t), var = test::uniform({c}, seed + 4, 0.2, 3.0, t);
  const Tensor want = test::ref::batchnorm(x, scale, bias, mean, var, eps);
  const Tol tol = tol_for(t, {2e-6, 2e-6});
  for (Parallel* par : parallels()) {
    INFO(where("BatchNormalization", t, x_shape, "") << "eps=" << eps);
    FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::BatchNormalization, {x, scale, bias, mean, var},
                                          {{"epsilon", eps}}, *par)[0],
                      want, tol.rtol, tol.atol);
  }
}

void check_layernorm(DType t, const Shape& x_shape, int64_t axis, const Shape& scale_shape, bool with_bias,
                     uint64_t seed) {
  const Tensor x = test::randn(x_shape, seed, 2.0, t);
  const Tensor scale = test::randn(scale_shape, seed + 1, 1.0, t);
  const Tensor bias = with_bias ? test::randn(scale_shape, seed + 2, 1.0, t) : Tensor();
  const Tensor want = test::ref::layernorm(x, scale, bias, axis, 1e-5);
  const Tol tol = tol_for(t, {1e-5, 1e-5});
  std::vector<OpInput> ins = {x, scale};
  if (with_bias) ins.emplace_back(bias);
  for (Parallel* par : parallels()) {
    INFO(where("LayerNormalization", t, x_shape, "") << "axis=" << axis << " scale " << scale_shape.str()
                                                    << (with_bias ? " bias" : ""));
    FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::LayerNormalization, ins, {{"axis", axis}}, *par)[0], want,
                      tol.rtol, tol.atol);
  }
}

void check_softmax(DType t, const Tensor& x, int64_t axis) {
  const Tensor want = test::ref::softmax(x, axis);
  const Tol tol = tol_for(t, {3e-6, 1e-12});
  for (Parallel* par : parallels()) {
    INFO(where("Softmax", t, x.shape(), "") << "axis=" << axis);
    FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::Softmax, {x}, {{"axis", axis}}, *par)[0], want, tol.rtol, tol.atol);
  }
}

}  // namespace

TEST_SUITE("static/normalization") {
  TEST_CASE("BatchNormalization matches the reference") {
    uint64_t seed = 1;
    for (DType t : kFloats) {
      for (int64_t c : {1, 3, 16, 17}) {
        check_batchnorm(t, {1, c}, 1e-5, seed++);
        check_batchnorm(t, {3, c}, 1e-3, seed++);
        for (int64_t n : sweep_sizes()) {
          check_batchnorm(t, {2, c, n}, 1e-5, seed++);
          check_batchnorm(t, {2, c, 3, n}, 1e-5, seed++);
        }
      }
      check_batchnorm(t, {2, 8, 64, 65}, 1e-5, seed++);   // several chunks per thread
      check_batchnorm(t, {1, 3, 1, 40001}, 0.0, seed++);  // chunks cut planes
    }
  }

  TEST_CASE("LayerNormalization matches the reference for every axis") {
    uint64_t seed = 100;
    for (DType t : kFloats) {
      for (int64_t n : sweep_sizes()) {
        check_layernorm(t, {n}, -1, {n}, true, seed++);
        check_layernorm(t, {n}, 0, {1}, false, seed++);
        check_layernorm(t, {3, n}, -1, {n}, false, seed++);
        check_layernorm(t, {3, n}, 1, {1}, true, seed++);
        check_layernorm(t, {3, n}, 0, {3, n}, true, seed++);
        check_layernorm(t, {3, n}, -2, {n}, true, seed++);        // scale broadcast over the first norm axis
        check_layernorm(t, {2, 3, n}, -1, {n}, true, seed++);
        check_layernorm(t, {2, 3, n}, 1, {3, 1}, true, seed++);   // scale broadcast over the last norm axis
        check_layernorm(t, {2, 1, 3, n}, -3, {1, 3, n}, false, seed++);
        check_layernorm(t, {2, 1, 3, n}, 2, {3, n}, true, seed++);
      }
      check_layernorm(t, {300, 768}, -1, {768}, true, seed++);   // many rows: split over threads
      check_layernorm(t, {2, 70001}, -1, {70001}, true, seed++);  // long rows: several sum blocks
    }
  }

  TEST_CASE("LayerNormalization of a constant row gives the bias") {
    for (DType t : kFloats) {
      const Tensor x = test::make(t, {2, 37}, std::vector<double>(74, 3.25));
      const Tensor scale = test::randn({37}, 1, 1.0, t), bias = test::randn({37}, 2, 1.0, t);
      const Tensor y = test::run_static_op(OpKind::LayerNormalization, {x, scale, bias})[0];
      for (int64_t i = 0; i < y.numel(); ++i) {
        REQUIRE(std::isfinite(y.at(i)));
        CHECK(std::fabs(y.at(i) - bias.at(i % 37)) <= 1e-6);
      }
    }
  }

  TEST_CASE("Softmax matches the reference for every axis") {
    uint64_t seed = 200;
    for (DType t : kFloats) {
      check_softmax(t, test::randn({}, seed++, 3.0, t), 0);
      check_softmax(t, test::randn({}, seed++, 3.0, t), -1);
      for (int64_t n : sweep_sizes()) {
        const std::vector<Shape> shapes = {{n}, {3, n}, {n, 5}, {2, n, 3}, {2, 3, 1, n}};
        for (const Shape& s : shapes) {
          const Tensor x = test::randn(s, seed++, 3.0, t);
          for (int64_t axis = -s.rank(); axis < s.rank(); ++axis) check_softmax(t, x, axis);
        }
      }
      check_softmax(t, test::randn({64, 1000}, seed++, 3.0, t), -1);     // rows over threads
      check_softmax(t, test::randn({2, 1000, 40}, seed++, 3.0, t), 1);   // middle axis, tiles over threads
      check_softmax(t, test::randn({3, 300, 700}, seed++, 3.0, t), 1);   // several column tiles
      check_softmax(t, test::randn({1, 70001}, seed++, 3.0, t), 1);      // one long row
    }
  }

  TEST_CASE("Softmax of huge and infinite inputs stays finite") {
    const Tensor x = test::make(DType::F32, {2, 4}, {1e30, -1e30, 1e30, 0.0, -INFINITY, 1.0, 2.0, -INFINITY});
    for (int64_t axis : {-1, 0}) {
      const Tensor y = test::run_static_op(OpKind::Softmax, {x}, {{"axis", axis}})[0];
      for (int64_t i = 0; i < y.numel(); ++i) CHECK(std::isfinite(y.at(i)));
      if (axis == -1) {
        CHECK(y.at(0) == doctest::Approx(0.5));
        CHECK(y.at(2) == doctest::Approx(0.5));
        CHECK(y.at(4) == 0.0);
      }
      FUSOR_CHECK_CLOSE(y, test::ref::softmax(x, axis), 3e-6, 1e-12);
    }
    const Tensor big = test::make(DType::F32, {3}, {1e30, 1e30, 1e30});
    FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::Softmax, {big})[0], test::make(DType::F32, {3}, {1 / 3.0, 1 / 3.0, 1 / 3.0}),
                      1e-6, 0);
  }

  TEST_CASE("normalizations of empty tensors are no-ops") {
    const Tensor e = Tensor::empty(DType::F32, {0, 4});
    CHECK(test::run_static_op(OpKind::Softmax, {e})[0].numel() == 0);
    CHECK(test::run_static_op(OpKind::LayerNormalization, {e, test::randn({4}, 1)})[0].numel() == 0);
  }
}
