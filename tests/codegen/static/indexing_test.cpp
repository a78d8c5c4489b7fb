// Static GatherElements, GatherND, ScatterElements, ScatterND and Trilu (codegen/static/indexing.cpp) and
// ConstantOfShape (codegen/static/shape_ops.cpp) against the reference
// (tests/support/reference_indexing.h): every dtype, negative indices, serial and pooled,
// exact; out-of-range indices and bad shapes are errors naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tests/support/reference_indexing.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::OpInput;

namespace {

const DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool};

Tensor sample(const Shape& s, uint64_t seed, DType t, double range = 100) {
  Tensor u = test::uniform(s, seed, -range, range);
  Tensor x = Tensor::empty(t, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, t == DType::Bool ? u.at(i) < 0 : std::floor(u.at(i)));
  return x;
}

// Indices in [-dim, dim) of dtype t.
Tensor indices(const Shape& s, int64_t dim, uint64_t seed, DType t) {
  Tensor u = test::uniform(s, seed, double(-dim), double(dim));
  Tensor x = Tensor::empty(t, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::floor(u.at(i)));
  return x;
}

void check(OpKind op, const std::vector<OpInput>& ins, const Attributes& attrs, const Tensor& want) {
  for (Parallel* par : test::parallels()) FUSOR_CHECK_CLOSE(test::run_static_op(op, ins, attrs, *par)[0], want, 0, 0);
}

}  // namespace

TEST_SUITE("static/indexing") {
  TEST_CASE("GatherElements along every axis") {
    uint64_t seed = 1;
    for (DType t : kAll)
      for (DType it : {DType::I64, DType::I32}) {
        const Tensor x = sample({4, 5, 6}, seed++, t);
        for (int axis = 0; axis < 3; ++axis) {
          Shape is{3, 5, 2};
          is[axis] = 7;
          const Tensor idx = indices(is, x.shape()[axis], seed++, it);
          check(OpKind::GatherElements, {x, idx}, {{"axis", int64_t(axis - 3 * (axis % 2))}}, test::ref::gather_elements(x, idx, axis));
        }
      }
    const Tensor x = test::randn({3, 40000}, 2);
    const Tensor idx = indices({3, 40000}, 3, 3, DType::I64);
    check(OpKind::GatherElements, {x, idx}, {}, test::ref::gather_elements(x, idx, 0));
    std::string msg;
    Tensor bad = test::ints({0, 3});
    CHECK(test::error_of([&] { test::run_static_op(OpKind::GatherElements, {test::randn({3}, 1), bad}); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("index 3") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::GatherElements, {test::randn({3, 2}, 1), bad}); }) == ErrorCode::ShapeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::GatherElements, {test::randn({3}, 1), test::randn({2}, 1)}); }) ==
          ErrorCode::DTypeMismatch);
  }

  TEST_CASE("ScatterElements along every axis with every reduction, duplicates applied in order") {
    uint64_t seed = 300;
    for (DType t : kAll)
      for (const char* red : {"none", "add", "mul", "max", "min"}) {
        if (t == DType::Bool && std::string(red) != "none") continue;
        const double range = std::string(red) == "mul" ? 3 : 100;  // products exact in every dtype
        const Tensor x = sample({4, 5, 6}, seed++, t, range);
        for (int axis = 0; axis < 3; ++axis) {
          Shape is{3, 5, 2};
          is[axis] = 7;  // more updates than the axis has places: duplicates
          const Tensor idx = indices(is, x.shape()[axis], seed++, DType::I64);
          const Tensor upd = sample(is, seed++, t, range);
          INFO(dtype_name(t) << " " << std::string(red) << " axis " << axis);
          check(OpKind::ScatterElements, {x, idx, upd}, {{"axis", int64_t(axis)}, {"reduction", std::string(red)}},
                test::ref::scatter_elements(x, idx, upd, axis, red));
        }
      }
    std::string msg;
    CHECK(test::error_of([&] { test::run_static_op(OpKind::ScatterElements, {test::randn({3}, 1), test::ints({0, 3}), test::randn({2}, 2)}); },
                         &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("index 3") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::ScatterElements, {test::randn({3}, 1), test::ints({0, 1}), test::randn({3}, 2)}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(test::error_of([&] {
            test::run_static_op(OpKind::ScatterElements, {test::randn({3}, 1), test::ints({0}), test::randn({1}, 2)},
                                {{"reduction", std::string("sum")}});
          }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("ScatterND of elements, rows and blocks with every reduction") {
    uint64_t seed = 400;
    for (DType t : kAll)
      for (const char* red : {"none", "add", "mul", "max", "min"}) {
        if (t == DType::Bool && std::string(red) != "none") continue;
        const double range = std::string(red) == "mul" ? 3 : 100;
        const Tensor x = sample({4, 3, 5}, seed++, t, range);
        for (int64_t k = 1; k <= 3; ++k) {
          Tensor idx = Tensor::empty(DType::I64, {6, k});
          for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = int64_t(seed * 7 + uint64_t(i) * 5) % x.shape()[int(i % k)] - (i % 3 == 0 ? x.shape()[int(i % k)] : 0);
          std::vector<int64_t> ud = {6};
          for (int d = int(k); d < 3; ++d) ud.push_back(x.shape()[d]);
          const Tensor upd = sample(Shape(ud), seed++, t, range);
          INFO(dtype_name(t) << " " << std::string(red) << " k " << k);
          check(OpKind::ScatterND, {x, idx, upd}, {{"reduction", std::string(red)}}, test::ref::scatter_nd(x, idx, upd, red));
        }
      }
    std::string msg;
    CHECK(test::error_of([&] { test::run_static_op(OpKind::ScatterND, {test::randn({3, 2}, 1), test::ints({1}), test::randn({3}, 2)}); },
                         &msg) == ErrorCode::ShapeMismatch);
    CHECK(test::error_of([&] {
            Tensor at = Tensor::empty(DType::I64, {1, 1});
            at.data<int64_t>()[0] = -4;
            test::run_static_op(OpKind::ScatterND, {test::randn({3, 2}, 1), at, test::randn({1, 2}, 2)});
          }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("index -4") != std::string::npos);
  }

  TEST_CASE("GatherND with and without batch dims") {
    uint64_t seed = 100;
    for (DType t : kAll) {
      const Tensor x = sample({2, 3, 4, 5}, seed++, t);
      struct Case {
        Shape idx;
        int b;
      };
      for (const Case& c : std::vector<Case>{{{6, 1}, 0}, {{3, 2, 2}, 0}, {{4}, 0}, {{2, 7, 3}, 1}, {{2, 3, 2}, 2}, {{2, 3, 4, 1}, 3}}) {
        Tensor idx = Tensor::empty(DType::I64, c.idx);
        const int64_t k = c.idx[-1];
        for (int64_t i = 0; i < idx.numel(); ++i) {
          const int64_t dim = x.shape()[c.b + int(i % k)];
          idx.data<int64_t>()[i] = (int64_t(i * 7 + seed) % (2 * dim)) - dim;
        }
        INFO(dtype_name(t) << " indices " << c.idx.str() << " batch_dims " << c.b);
        check(OpKind::GatherND, {x, idx}, {{"batch_dims", int64_t(c.b)}}, test::ref::gather_nd(x, idx, c.b));
      }
    }
    const Tensor x = test::randn({3, 4}, 1);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::GatherND, {x, test::ints({0, 4})}); }) == ErrorCode::InvalidArgument);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::GatherND, {x, test::ints({0, 1, 2})}); }) == ErrorCode::ShapeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::GatherND, {x, test::ints({0})}, {{"batch_dims", int64_t(1)}}); }) ==
          ErrorCode::InvalidGraph);
  }

  TEST_CASE("Trilu upper and lower for every k") {
    uint64_t seed = 200;
    const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
    for (DType t : kAll)
      for (const Shape& s : {Shape{5, 5}, Shape{2, 3, 7}, Shape{4, 9, 2}, Shape{1, 1}, Shape{0, 3}}) {
        const Tensor x = sample(s, seed++, t);
        for (int upper = 0; upper < 2; ++upper) {
          check(OpKind::Trilu, {x}, {{"upper", int64_t(upper)}}, test::ref::trilu(x, 0, upper));
          for (int64_t k : {int64_t(-10), int64_t(-2), int64_t(-1), int64_t(1), int64_t(3), int64_t(20), big, small})
            check(OpKind::Trilu, {x, test::ints({k}).reshaped(Shape{})}, {{"upper", int64_t(upper)}},
                  test::ref::trilu(x, k, upper));
        }
      }
    CHECK(test::error_of([] { test::run_static_op(OpKind::Trilu, {test::randn({3}, 1)}); }) == ErrorCode::ShapeMismatch);
    CHECK(test::error_of([] { test::run_static_op(OpKind::Trilu, {test::randn({3, 3}, 1)}, {{"upper", int64_t(2)}}); }) ==
          ErrorCode::InvalidGraph);
  }

  TEST_CASE("ConstantOfShape in every dtype") {
    for (DType t : kAll) {
      const Tensor y = test::run_static_op(OpKind::ConstantOfShape, {OpInput::constant_of(test::ints({2, 3}))},
                                           {{"dtype", std::string(dtype_name(t))}, {"value", 1.0}})[0];
      CHECK(y.dtype() == t);
      CHECK(y.shape() == Shape{2, 3});
      for (int64_t i = 0; i < y.numel(); ++i) CHECK(y.at(i) == 1.0);
    }
    const Tensor z = test::run_static_op(OpKind::ConstantOfShape, {OpInput::constant_of(test::ints({}))})[0];
    CHECK(z.shape() == Shape{});
    CHECK(z.dtype() == DType::F32);
    CHECK(z.at(0) == 0.0);
    const Tensor big = test::run_static_op(OpKind::ConstantOfShape, {OpInput::constant_of(test::ints({3}))},
                                           {{"dtype", "i64"}, {"value", 9007199254740993.0}})[0];
    CHECK(big.data<int64_t>()[2] == 9007199254740992);  // the double attribute's value
    std::string msg;
    CHECK(test::error_of([] { test::run_static_op(OpKind::ConstantOfShape, {OpInput::constant_of(test::ints({-1}))}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(test::error_of([] { test::run_static_op(OpKind::ConstantOfShape, {OpInput::constant_of(test::ints({1 << 30, 1 << 30}))}); }) ==
          ErrorCode::OutOfMemory);
    CHECK(test::error_of([] { test::run_static_op(OpKind::ConstantOfShape, {OpInput::constant_of(test::ints({2}))}, {{"dtype", "f64"}}); },
                         &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("f64") != std::string::npos);
    CHECK(test::error_of([] { test::run_static_op(OpKind::ConstantOfShape, {test::ints({2})}); }) == ErrorCode::Unsupported);
  }
}

TEST_SUITE("static/indexing") {
  TEST_CASE("integer Range is exact near the int64 limits") {
    const int64_t hi = std::numeric_limits<int64_t>::max(), lo = std::numeric_limits<int64_t>::min();
    auto scalar = [](int64_t v) { return OpInput::constant_of(test::ints({v}).reshaped(Shape{})); };
    const Tensor r = test::run_static_op(OpKind::Range, {scalar(hi), scalar(hi - 5000), scalar(-1000)})[0];
    REQUIRE(r.shape() == Shape{5});
    CHECK(r.data<int64_t>()[0] == hi);
    CHECK(r.data<int64_t>()[4] == hi - 4000);
    const Tensor s = test::run_static_op(OpKind::Range, {scalar(lo), scalar(lo + 7), scalar(3)})[0];
    REQUIRE(s.shape() == Shape{3});
    CHECK(s.data<int64_t>()[2] == lo + 6);
    CHECK(test::run_static_op(OpKind::Range, {scalar(5), scalar(5), scalar(1)})[0].numel() == 0);
    CHECK(test::run_static_op(OpKind::Range, {scalar(0), scalar(10), scalar(-1)})[0].numel() == 0);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Range, {scalar(lo), scalar(hi), scalar(1)}); }) == ErrorCode::OutOfMemory);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Range, {scalar(0), scalar(1), scalar(0)}); }) == ErrorCode::InvalidArgument);
  }
}
