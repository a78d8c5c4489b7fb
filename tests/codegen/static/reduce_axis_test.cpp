// Static ArgMax, CumSum and TopK (codegen/static/reduce_axis.cpp) against the reference
// (tests/support/reference_indexing.h): every axis, both flags, every dtype, serial and
// pooled; exact (CumSum of floats: the f32 running sum vs the double one, a few ulp of the
// magnitudes summed).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "tests/support/reference_indexing.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("static/reduce_axis") {
  TEST_CASE("TopK largest and smallest along every axis, every k, ties in index order, NaN largest") {
    uint64_t seed = 900;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
      for (const Shape& s : {Shape{7}, Shape{3, 17}, Shape{2, 5, 9}, Shape{2, 1000}}) {
        Tensor x = test::uniform(s, seed++, -3, 3, DType::F32);
        for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::floor(x.at(i)));  // ties
        if (is_floating(t) && x.numel() > 20) x.set(11, NAN), x.set(13, NAN), x.set(5, INFINITY);
        Tensor xt = Tensor::empty(t, s);
        for (int64_t i = 0; i < x.numel(); ++i) xt.set(i, x.at(i));
        for (int axis = -s.rank(); axis < s.rank(); ++axis) {
          const int a = axis < 0 ? axis + s.rank() : axis;
          const int64_t dim = s[a];
          for (int64_t k : {int64_t(0), int64_t(1), dim / 2, dim})
            for (int largest = 0; largest < 2; ++largest) {
              const std::vector<Tensor> want = test::ref::topk(xt, a, k, largest);
              for (Parallel* par : test::parallels()) {
                INFO(dtype_name(t) << " " << s.str() << " axis " << axis << " k " << k << " largest " << largest);
                const std::vector<Tensor> got = test::run_static_op(
                    OpKind::TopK, {xt, test::OpInput::constant_of(test::ints({k}))},
                    {{"axis", int64_t(axis)}, {"largest", int64_t(largest)}}, *par);
                FUSOR_CHECK_CLOSE(got[0], want[0], 0, 0);
                FUSOR_CHECK_CLOSE(got[1], want[1], 0, 0);
              }
            }
        }
      }
    }
    std::string msg;
    CHECK(test::error_of([] { test::run_static_op(OpKind::TopK, {test::randn({3}, 1), test::OpInput::constant_of(test::ints({4}))}); },
                         &msg) == ErrorCode::ShapeMismatch);
    CHECK(msg.find("k = 4 is outside [0, 3]") != std::string::npos);
    CHECK(test::error_of([] { test::run_static_op(OpKind::TopK, {test::randn({3}, 1), test::ints({1})}); }, &msg) ==
          ErrorCode::Unsupported);
  }

  TEST_CASE("ArgMax along every axis with ties NaN and select_last_index") {
    uint64_t seed = 1;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
      for (const Shape& s : {Shape{7}, Shape{3, 17}, Shape{2, 5, 9}, Shape{4, 3000}}) {
        Tensor x = test::uniform(s, seed++, -3, 3, DType::F32);
        for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::floor(x.at(i)));  // ties
        if (is_floating(t) && x.numel() > 20) x.set(11, NAN), x.set(13, NAN);
        Tensor xt = Tensor::empty(t, s);
        for (int64_t i = 0; i < x.numel(); ++i) xt.set(i, x.at(i));
        for (int axis = -s.rank(); axis < s.rank(); ++axis)
          for (int keep = 0; keep < 2; ++keep)
            for (int last = 0; last < 2; ++last) {
              Attributes attrs{{"axis", int64_t(axis)}, {"keepdims", int64_t(keep)}, {"select_last_index", int64_t(last)}};
              const Tensor want = test::ref::argmax(xt, axis < 0 ? axis + s.rank() : axis, keep, last);
              for (Parallel* par : test::parallels()) {
                INFO(dtype_name(t) << " " << s.str() << " axis " << axis << " keep " << keep << " last " << last);
                FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::ArgMax, {xt}, attrs, *par)[0], want, 0, 0);
              }
            }
      }
    }
    std::string msg;
    CHECK(test::error_of([] { test::run_static_op(OpKind::ArgMax, {Tensor::empty(DType::F32, {3, 0})}, {{"axis", int64_t(1)}}); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(test::error_of([] { test::run_static_op(OpKind::ArgMax, {test::randn({3}, 1)}, {{"axis", int64_t(1)}}); }, &msg) ==
          ErrorCode::InvalidGraph);
    CHECK(msg.find("axis 1") != std::string::npos);
    CHECK(test::error_of([] { test::run_static_op(OpKind::ArgMax, {test::randn({3}, 1)}, {{"keepdims", int64_t(7)}}); }) ==
          ErrorCode::InvalidGraph);
  }

  TEST_CASE("CumSum along every axis exclusive and reverse") {
    uint64_t seed = 100;
    for (DType t : {DType::F32, DType::I32, DType::I64, DType::F16, DType::BF16}) {
      for (const Shape& s : {Shape{9}, Shape{3, 17}, Shape{2, 5, 9}, Shape{3, 1500}}) {
        const Tensor x = is_integer(t) ? test::uniform(s, seed++, -1000, 1000, t) : test::randn(s, seed++, 1.0, t);
        for (int axis = -s.rank(); axis < s.rank(); ++axis)
          for (int ex = 0; ex < 2; ++ex)
            for (int rev = 0; rev < 2; ++rev) {
              const Tensor want = test::ref::cumsum(x, axis < 0 ? axis + s.rank() : axis, ex, rev);
              Attributes attrs{{"exclusive", int64_t(ex)}, {"reverse", int64_t(rev)}};
              for (DType at : {DType::I64, DType::I32}) {
                const Tensor axis_t = test::make(at, {}, {double(axis)});
                INFO(dtype_name(t) << " " << s.str() << " axis " << axis << " exclusive " << ex << " reverse " << rev);
                // f32: the running sum rounds once per step (|partial sums| < 100 here).
                const double tol = t == DType::F32 ? 1e-3 : t == DType::F16 ? 3e-2 : t == DType::BF16 ? 0.3 : 0;
                FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::CumSum, {x, test::OpInput::constant_of(axis_t)}, attrs, test::pool())[0],
                                  want, tol, tol);
              }
            }
      }
    }
    // Integer sums wrap.
    const Tensor w = test::make(DType::I32, {2}, {2147483647.0, 1.0});
    CHECK(test::run_static_op(OpKind::CumSum, {w, test::OpInput::constant_of(test::ints({0}))})[0].data<int32_t>()[1] ==
          std::numeric_limits<int32_t>::min());
    CHECK(test::error_of([] { test::run_static_op(OpKind::CumSum, {test::randn({3}, 1), test::OpInput::constant_of(test::ints({1}))}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(test::error_of([] { test::run_static_op(OpKind::CumSum, {test::randn({3}, 1), test::OpInput::constant_of(test::ints({0, 0}))}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(test::error_of([] { test::run_static_op(OpKind::CumSum, {test::randn({3}, 1), test::ints({0})}); }) == ErrorCode::Unsupported);
  }
}
