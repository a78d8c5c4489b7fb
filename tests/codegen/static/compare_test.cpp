// Static kernels of the comparisons and logic (codegen/static/compare.cpp) against the
// reference (tests/support/reference_pointwise.h): every broadcasting pattern, sizes around
// the vector widths, serial and pooled, every dtype each op takes, NaN and infinities.
// Results are bool: compared exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "tests/support/reference_pointwise.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

void check_same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  int64_t bad = -1;
  for (int64_t i = 0; i < got.numel() && bad < 0; ++i)
    if (got.at(i) != want.at(i)) bad = i;
  INFO("first differing element: " << bad << " of " << got.type_str());
  CHECK(bad < 0);
}

// Small integers (so that equal pairs occur), NaN and infinities sprinkled in for floats.
Tensor operand(DType t, const Shape& s, uint64_t seed) {
  Tensor x = test::uniform(s, seed, -4, 4, DType::F32);
  Tensor out = Tensor::empty(t, s);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = std::floor(x.at(i));
    if (is_floating(t) && i % 11 == 3) v = NAN;
    if (is_floating(t) && i % 13 == 5) v = i % 2 ? INFINITY : -INFINITY;
    if (t == DType::Bool) v = v < 0;
    out.set(i, v);
  }
  return out;
}

std::vector<std::pair<Shape, Shape>> pairs(int64_t n) {
  return {{{n}, {n}}, {{}, {n}}, {{n}, {}}, {{3, n}, {n}}, {{3, 1}, {1, n}}, {{2, 3, n}, {2, 1, n}}, {{40000}, {40000}}};
}

}  // namespace

TEST_SUITE("static/compare") {
  TEST_CASE("comparisons match the reference for every dtype and broadcast pattern") {
    uint64_t seed = 1;
    for (OpKind op : {OpKind::Equal, OpKind::Less, OpKind::LessOrEqual, OpKind::Greater, OpKind::GreaterOrEqual}) {
      std::vector<DType> dtypes = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64};
      if (op == OpKind::Equal) dtypes.push_back(DType::Bool);
      for (DType t : dtypes)
        for (int64_t n : {1, 7, 8, 9, 17, 33})
          for (const auto& row : pairs(n)) {
            const auto& sa = std::get<0>(row);
            const auto& sb = std::get<1>(row);
            const Tensor a = operand(t, sa, seed++), b = operand(t, sb, seed++);
            for (Parallel* par : test::parallels()) {
              INFO(op_name(op) << " " << dtype_name(t) << " " << sa.str() << " " << sb.str());
              check_same(test::run_static_op(op, {a, b}, {}, *par)[0], test::ref::compare(op, a, b));
            }
          }
    }
  }

  TEST_CASE("And Or and Not") {
    uint64_t seed = 500;
    for (int64_t n : {1, 15, 16, 17, 40001})
      for (const auto& row : pairs(n)) {
        const auto& sa = std::get<0>(row);
        const auto& sb = std::get<1>(row);
        const Tensor a = operand(DType::Bool, sa, seed++), b = operand(DType::Bool, sb, seed++);
        for (OpKind op : {OpKind::And, OpKind::Or}) check_same(test::run_static_op(op, {a, b})[0], test::ref::compare(op, a, b));
        check_same(test::run_static_op(OpKind::Not, {a})[0], test::ref::test(OpKind::Not, a));
      }
  }

  TEST_CASE("IsNaN and IsInf with each detect flag") {
    const std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e30, -1e-40, 65504, 3.4e38};
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      const Tensor x = test::make(t, {int64_t(v.size())}, v);
      check_same(test::run_static_op(OpKind::IsNaN, {x})[0], test::ref::test(OpKind::IsNaN, x));
      for (int neg = 0; neg < 2; ++neg)
        for (int pos = 0; pos < 2; ++pos) {
          Attributes attrs{{"detect_negative", int64_t(neg)}, {"detect_positive", int64_t(pos)}};
          check_same(test::run_static_op(OpKind::IsInf, {x}, attrs)[0], test::ref::test(OpKind::IsInf, x, neg, pos));
        }
    }
    const Tensor big = test::randn({3, 30001}, 4, 1e38);  // overflows to inf in places? no: finite
    for (Parallel* par : test::parallels()) check_same(test::run_static_op(OpKind::IsInf, {big}, {}, *par)[0], test::ref::test(OpKind::IsInf, big));
  }

  TEST_CASE("wrong dtypes are DTypeMismatch naming the input") {
    const Tensor f = test::randn({3}, 1), b = test::make(DType::Bool, {3}, {1, 0, 1}), i = test::make(DType::I64, {3}, {1, 2, 3});
    std::string msg;
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Less, {b, b}); }, &msg) == ErrorCode::DTypeMismatch);
    CHECK(msg.find("does not take bool") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Equal, {f, i}); }, &msg) == ErrorCode::DTypeMismatch);
    CHECK(msg.find("'in1'") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::And, {f, f}); }) == ErrorCode::DTypeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Not, {i}); }) == ErrorCode::DTypeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::IsNaN, {i}); }) == ErrorCode::DTypeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::IsInf, {f}, {{"detect_negative", int64_t(2)}}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Less, {test::randn({2, 3}, 1), test::randn({4}, 2)}); }) ==
          ErrorCode::ShapeMismatch);
  }
}
