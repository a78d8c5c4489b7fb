// Static ReduceSum / ReduceMean / ReduceMax / ReduceMin / ReduceProd kernels against the double-precision reference: every axis
// subset of ranks 0..4 (row, column, middle and interleaved reductions), negative axes,
// keepdims 0/1, empty axes with and without noop_with_empty_axes, axes as attribute or
// constant input; serial and on a 4-thread pool; f32 / f16 / bf16 / i32 / i64.
//
// Tolerances (allclose: |got - want| <= atol + rtol*|want|), inputs uniform in [-1, 1):
//   f32   rtol 1e-6, atol 1e-6 * sqrt(count): float partial sums of 32 terms each,
//         combined in double; the sum of n such values has magnitude ~sqrt(n)
//   f16 / bf16  rtol 1e-3 / 8e-3 (one ulp of the output format), atol 1e-3 / 8e-3 times the
//         same scale
//   integers: exact (64-bit accumulation, wrap to the output width)
//   ReduceProd: the same rtol (products in double, one rounding to the output format), an
//         atol of the format's smallest subnormal (products of values in [-1, 1) shrink to
//         it), integers exact (64-bit products wrap, as the reference's)
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "ir/error.h"
#include "jit/thread_pool.h"
#include "tests/support/reference_pointwise.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::OpInput;

namespace {

using test::parallels;

Tensor input(DType t, const Shape& s, uint64_t seed) {
  if (t == DType::I32 || t == DType::I64) return test::uniform(s, seed, -1000, 1000, t);
  return test::uniform(s, seed, -1, 1, t);
}

void check_reduce(OpKind op, DType t, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                  bool axes_as_input, bool noop = false) {
  const Tensor want = test::ref::reduce(op, x, axes, keepdims, noop);
  const double count = want.numel() == 0 ? 1.0 : double(std::max<int64_t>(1, x.numel() / want.numel()));
  const double scale = std::sqrt(count);
  double rtol = 1e-6, atol = 1e-6 * scale;
  if (t == DType::F16) rtol = 1e-3, atol = 1e-3 * scale;
  if (t == DType::BF16) rtol = 8e-3, atol = 8e-3 * scale;
  if (op == OpKind::ReduceProd) atol = t == DType::F16 ? 6e-8 : 1.5e-45;
  if (t == DType::I32 || t == DType::I64) rtol = 0, atol = 0;
  Attributes attrs{{"keepdims", int64_t(keepdims)}, {"noop_with_empty_axes", int64_t(noop)}};
  std::vector<OpInput> ins = {x};
  if (axes_as_input) ins.push_back(OpInput::constant_of(test::ints(axes)));
  else if (!axes.empty()) attrs["axes"] = axes;
  for (Parallel* par : parallels()) {
    INFO(op_name(op) << " " << dtype_name(t) << " " << x.shape().str() << " axes " << Shape(axes).str()
                     << " keepdims=" << keepdims << (axes_as_input ? " (input)" : " (attr)"));
    FUSOR_CHECK_CLOSE(test::run_static_op(op, ins, attrs, *par)[0], want, rtol, atol);
  }
}

// Every subset of the axes of rank r, as positive or (alternately) negative axes.
std::vector<std::vector<int64_t>> axis_subsets(int r, bool negative) {
  std::vector<std::vector<int64_t>> out;
  for (int mask = 1; mask < (1 << r); ++mask) {
    std::vector<int64_t> axes;
    for (int i = 0; i < r; ++i)
      if (mask & (1 << i)) axes.push_back(negative ? i - r : i);
    out.push_back(axes);
  }
  return out;
}

}  // namespace

TEST_SUITE("static/reduce") {
  TEST_CASE("reductions over every axis subset match the reference") {
    uint64_t seed = 1;
    const std::vector<DType> dtypes = {DType::F32, DType::I32, DType::I64, DType::F16, DType::BF16};
    std::vector<int64_t> sizes = test::sizes_around(8);
    for (int64_t v : test::sizes_around(16)) sizes.push_back(v);
    for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd}) {
      for (DType t : dtypes) {
        for (int64_t n : sizes) {
          const std::vector<Shape> shapes = {{n}, {3, n}, {n, 5}, {2, n, 3}, {2, 3, 1, n}};
          for (const Shape& s : shapes) {
            const Tensor x = input(t, s, seed++);
            for (bool neg : {false, true})
              for (const auto& axes : axis_subsets(s.rank(), neg))
                for (bool keep : {false, true}) check_reduce(op, t, x, axes, keep, (seed++ % 2) == 0);
          }
        }
      }
    }
  }

  TEST_CASE("rank 0 and empty axes") {
    for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd}) {
      const Tensor s = test::randn({}, 1);
      check_reduce(op, DType::F32, s, {}, true, false);
      check_reduce(op, DType::F32, s, {}, false, false);
      const Tensor x = test::randn({3, 17}, 2);
      check_reduce(op, DType::F32, x, {}, true, false);          // empty axes: reduce everything
      check_reduce(op, DType::F32, x, {}, false, true);
      check_reduce(op, DType::F32, x, {}, true, false, true);    // noop_with_empty_axes: a copy
      check_reduce(op, DType::F32, x, {}, false, true, true);
    }
  }

  TEST_CASE("large reductions split over threads") {
    uint64_t seed = 500;
    const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
        {{1000, 1000}, {}},             // full reduction: one output, segmented
        {{1000, 1000}, {1}},            // rows
        {{1000, 1000}, {0}},            // columns
        {{4, 200000}, {1}},             // few long rows: segmented
        {{200000, 4}, {0}},             // few long columns: segmented
        {{64, 300, 70}, {1}},           // middle axis
        {{8, 3000, 9, 7}, {1, 3}},      // interleaved, innermost reduced
        {{16, 500, 9, 40}, {0, 2}},     // interleaved, innermost kept
        {{3, 1, 700, 1, 90}, {0, 2}},   // size-1 dims between groups
    };
    for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd})
      for (DType t : {DType::F32, DType::I64})
        for (const auto& [shape, axes] : cases) check_reduce(op, t, input(t, shape, seed++), axes, true, false);
  }

  TEST_CASE("reductions are bit-identical for any thread count") {
    const Tensor x = test::randn({7, 100003}, 3);
    ThreadPool two(2), eight(8);
    for (std::vector<int64_t> axes : {std::vector<int64_t>{}, {1}, {0}}) {
      Attributes attrs{{"keepdims", int64_t(0)}};
      if (!axes.empty()) attrs["axes"] = axes;
      const Tensor a = test::run_static_op(OpKind::ReduceSum, {x}, attrs)[0];
      const Tensor b = test::run_static_op(OpKind::ReduceSum, {x}, attrs, two)[0];
      const Tensor c = test::run_static_op(OpKind::ReduceSum, {x}, attrs, eight)[0];
      FUSOR_CHECK_CLOSE(b, a, 0, 0);
      FUSOR_CHECK_CLOSE(c, a, 0, 0);
    }
  }

  TEST_CASE("sums over an empty axis are zero") {
    const Tensor x = Tensor::empty(DType::F32, {0, 3});
    const Tensor y = test::run_static_op(OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{0}}})[0];
    REQUIRE(y.numel() == 3);
    for (int64_t i = 0; i < 3; ++i) CHECK(y.at(i) == 0.0);
    const Tensor z = test::run_static_op(OpKind::ReduceSum, {Tensor::empty(DType::F32, {3, 0})},
                                         {{"axes", std::vector<int64_t>{0}}})[0];
    CHECK(z.numel() == 0);
  }

  TEST_CASE("products: hand values, an empty axis gives one, integers wrap") {
    const Tensor x = test::make(DType::F32, {2, 3}, {2, -3, 0.5, 4, INFINITY, 0});
    const Tensor y = test::run_static_op(OpKind::ReduceProd, {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}})[0];
    REQUIRE(y.numel() == 2);
    CHECK(y.at(0) == -3.0);
    CHECK(std::isnan(y.at(1)));  // inf * 0
    const Tensor e = test::run_static_op(OpKind::ReduceProd, {Tensor::empty(DType::F32, {0, 3})},
                                         {{"axes", std::vector<int64_t>{0}}})[0];
    REQUIRE(e.numel() == 3);
    for (int64_t i = 0; i < 3; ++i) CHECK(e.at(i) == 1.0);
    Tensor big = Tensor::empty(DType::I32, {2});
    big.data<int32_t>()[0] = 65536;
    big.data<int32_t>()[1] = 65537;
    const Tensor w = test::run_static_op(OpKind::ReduceProd, {big}, {{"keepdims", 0}})[0];
    CHECK(w.data<int32_t>()[0] == 65536);  // 2^32 + 2^16 wraps to 2^16
  }

  TEST_CASE("integer sums wrap and integer means truncate") {
    Tensor x = Tensor::empty(DType::I32, {2, 3});
    const int32_t v[] = {2147483647, 1, 0, -7, 0, 0};
    for (int i = 0; i < 6; ++i) x.data<int32_t>()[i] = v[i];
    const Tensor s = test::run_static_op(OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{1}}})[0];
    CHECK(s.data<int32_t>()[0] == -2147483647 - 1);
    const Tensor m = test::run_static_op(OpKind::ReduceMean, {x}, {{"axes", std::vector<int64_t>{1}}})[0];
    CHECK(m.data<int32_t>()[1] == -2);  // -7 / 3 truncates toward zero
  }
}

TEST_SUITE("static/reduce") {
  TEST_CASE("ReduceMax propagates NaN and handles infinities") {
    const Tensor x = test::make(DType::F32, {3, 4}, {1, NAN, 3, 2, -INFINITY, -5, -7, -INFINITY, INFINITY, 0, 1, 2});
    const Tensor y = test::run_static_op(OpKind::ReduceMax, {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}})[0];
    CHECK(std::isnan(y.at(0)));
    CHECK(y.at(1) == -5);
    CHECK(y.at(2) == INFINITY);
  }
}
