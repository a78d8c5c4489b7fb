// Static pointwise kernels against the double-precision reference (tests/support/
// reference_pointwise.h): every broadcasting pattern, ranks 0..4, sizes around the 8- and
// 16-lane vector widths, serial and a 4-thread pool, f32 / f16 / bf16 / i32 / i64.
//
// Tolerances (allclose: |got - want| <= atol + rtol*|want|, want = reference rounded once to
// the output dtype, so 0.5 ulp of it is rounding of the reference itself):
//   f32 Add/Sub/Mul/Div/Max/Min/Relu/Neg/Sqrt  rtol 1.2e-7 (1 ulp: correctly rounded ops)
//   f32 Pow                                    rtol 2.4e-7 (libm powf, <= 1 ulp)
//   f32 Exp 2.5e-7, Tanh 3e-7, Erf/Sigmoid 4e-7 (math.h bounds + 0.5 ulp), atol 3e-45
//   f32 Gelu                                   rtol 4e-6, atol 1e-12 (math.h bound: relative
//                                              4e-6, 2e-5 in the tail below -5.7 where
//                                              |gelu| < 4.4e-8)
//   f16 rtol 1e-3 (1 ulp of 11 bits), bf16 rtol 8e-3 (1 ulp of 8 bits), atol 1e-7 / 1e-38
//   integers and Cast / Where: exact.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include "ir/dtype.h"
#include "ir/error.h"
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

// Pairs of operand shapes covering every broadcasting pattern around an inner size n.
std::vector<std::pair<Shape, Shape>> broadcast_pairs(int64_t n) {
  return {
      {{n}, {n}},                      // same shape
      {{}, {}},                        // rank 0
      {{}, {n}},                       // scalar left
      {{n}, {}},                       // scalar right
      {{1}, {3, n}},                   // size-1 vector
      {{3, n}, {n}},                   // trailing broadcast (row)
      {{n}, {3, n}},                   // trailing broadcast, left
      {{3, n}, {3, 1}},                // column broadcast (inner stride 0)
      {{3, 1}, {3, n}},                // column broadcast, left
      {{1, n}, {3, 1}},                // outer product
      {{2, 3, n}, {2, 1, n}},          // middle axis
      {{2, n, 3}, {n, 1}},             // middle axis, inner stride 0
      {{2, 1, 3, n}, {1, 2, 1, n}},    // rank 4, alternating
      {{2, 3, 1, n}, {3, 2, 1}},       // rank 4 vs rank 3
  };
}

// Shapes large enough for the thread pool to split (several kElementGrain chunks).
std::vector<std::pair<Shape, Shape>> large_pairs() {
  return {{{5, 40000}, {40000}}, {{40000, 3}, {40000, 1}}, {{70001}, {}}, {{2, 30001, 2}, {1, 30001, 1}}};
}

std::string describe(OpKind op, DType t, const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << op_name(op) << " " << dtype_name(t);
  for (const Shape& sh : shapes) os << " " << sh.str();
  return os.str();
}

struct Tol {
  double rtol, atol;
};

Tol float_tol(DType t, double f32_rtol, double f32_atol = 0) {
  if (t == DType::F16) return {1e-3, 1e-7};
  if (t == DType::BF16) return {8e-3, 1e-38};
  return {f32_rtol, f32_atol};
}

// Operands for op: divisors avoid zero (ints: +-1..49), Pow bases are positive.
Tensor operand(OpKind op, DType t, const Shape& s, uint64_t seed, int which) {
  if (op == OpKind::Div && which == 1) {
    Tensor m = test::uniform(s, seed, 1, 50, t);
    Tensor sign = test::uniform(s, seed + 7, -1, 1);
    for (int64_t i = 0; i < m.numel(); ++i)
      if (sign.at(i) < 0) m.set(i, -m.at(i));
    return m;
  }
  if (op == OpKind::Pow) return which == 0 ? test::uniform(s, seed, 0.1, 4, t) : test::uniform(s, seed, -3, 3, t);
  if (t == DType::I32 || t == DType::I64) return test::uniform(s, seed, -1000, 1000, t);
  return test::randn(s, seed, 3.0, t);
}

void check_binary(OpKind op, DType t, const Shape& sa, const Shape& sb, uint64_t seed, Tol tol) {
  const Tensor a = operand(op, t, sa, seed, 0), b = operand(op, t, sb, seed + 1, 1);
  const Tensor want = test::ref::binary(op, a, b);
  for (Parallel* par : parallels()) {
    const Tensor got = test::run_static_op(op, {a, b}, {}, *par)[0];
    INFO(describe(op, t, {sa, sb}) << (par == &serial_parallel() ? " serial" : " pool"));
    FUSOR_CHECK_CLOSE(got, want, tol.rtol, tol.atol);
  }
}

void check_binary_sweep(OpKind op, const std::vector<DType>& dtypes, double f32_rtol) {
  uint64_t seed = 1;
  for (DType t : dtypes) {
    const bool is_int = t == DType::I32 || t == DType::I64;
    const Tol tol = is_int ? Tol{0, 0} : float_tol(t, f32_rtol);
    for (int64_t n : sweep_sizes())
      for (const auto& [sa, sb] : broadcast_pairs(n)) check_binary(op, t, sa, sb, seed++, tol);
    for (const auto& [sa, sb] : large_pairs()) check_binary(op, t, sa, sb, seed++, tol);
  }
}

const std::vector<DType> kAllNumeric = {DType::F32, DType::I32, DType::I64, DType::F16, DType::BF16};
const std::vector<DType> kFloats = {DType::F32, DType::F16, DType::BF16};

// Exact comparison of element bytes (integers, bool) or values (floats, NaN == NaN).
void check_exact(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  if (is_floating(got.dtype())) {
    FUSOR_CHECK_CLOSE(got, want, 0, 0);
    return;
  }
  const size_t size = dtype_size(got.dtype());
  int64_t bad = -1;
  for (int64_t i = 0; i < got.numel() && bad < 0; ++i)
    if (std::memcmp(static_cast<const char*>(got.raw()) + i * int64_t(size),
                    static_cast<const char*>(want.raw()) + i * int64_t(size), size) != 0)
      bad = i;
  INFO("first differing element: " << bad);
  CHECK(bad < 0);
}

// A bool tensor with about half the elements true (uniform() to bool would be all true).
Tensor random_bool(const Shape& s, uint64_t seed) {
  const Tensor u = test::uniform(s, seed, -1, 1);
  Tensor b = Tensor::empty(DType::Bool, s);
  for (int64_t i = 0; i < b.numel(); ++i) b.data<uint8_t>()[i] = u.at(i) < 0;
  return b;
}

template <class T>
Tensor int_tensor(DType t, const std::vector<T>& v) {
  Tensor x = Tensor::empty(t, Shape{int64_t(v.size())});
  std::memcpy(x.raw(), v.data(), v.size() * sizeof(T));
  return x;
}

}  // namespace

TEST_SUITE("static/elementwise") {
  TEST_CASE("Add matches the reference for every broadcast pattern") {
    check_binary_sweep(OpKind::Add, kAllNumeric, 1.2e-7);
  }
  TEST_CASE("Sub matches the reference for every broadcast pattern") {
    check_binary_sweep(OpKind::Sub, kAllNumeric, 1.2e-7);
  }
  TEST_CASE("Mul matches the reference for every broadcast pattern") {
    check_binary_sweep(OpKind::Mul, kAllNumeric, 1.2e-7);
  }
  TEST_CASE("Div matches the reference for every broadcast pattern") {
    check_binary_sweep(OpKind::Div, kAllNumeric, 1.2e-7);
  }
  TEST_CASE("Pow matches the reference for every broadcast pattern") {
    check_binary_sweep(OpKind::Pow, kFloats, 2.4e-7);
  }
  TEST_CASE("Pow with a scalar exponent of 2 squares (negative bases included)") {
    const Tensor x = test::randn({3, 37}, 5, 10.0);
    for (DType t : kFloats) {
      const Tensor xt = test::ref::cast(x, t), two = test::make(t, {}, {2.0});
      FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::Pow, {xt, two})[0], test::ref::binary(OpKind::Pow, xt, two),
                        float_tol(t, 1.2e-7).rtol, 0);
    }
  }
  TEST_CASE("Max and Min match the reference for every broadcast pattern") {
    check_binary_sweep(OpKind::Max, kAllNumeric, 0);
    check_binary_sweep(OpKind::Min, kAllNumeric, 0);
  }

  TEST_CASE("variadic Max and Min take one to four broadcast inputs") {
    const std::vector<std::vector<Shape>> cases = {
        {{}}, {{7}}, {{3, 9}, {9}}, {{3, 1}, {1, 17}, {}}, {{2, 1, 19}, {3, 1}, {19}, {2, 3, 19}}, {{4, 30001}, {30001}, {4, 1}}};
    uint64_t seed = 100;
    for (OpKind op : {OpKind::Max, OpKind::Min}) {
      for (DType t : kAllNumeric) {
        for (const auto& shapes : cases) {
          std::vector<Tensor> ins;
          std::vector<OpInput> feed;
          for (const Shape& s : shapes) {
            ins.push_back(operand(op, t, s, seed++, 0));
            feed.emplace_back(ins.back());
          }
          const Tensor want = test::ref::variadic(op, ins);
          for (Parallel* par : parallels()) {
            INFO(describe(op, t, shapes));
            FUSOR_CHECK_CLOSE(test::run_static_op(op, feed, {}, *par)[0], want, 0, 0);
          }
        }
      }
    }
  }

  TEST_CASE("Max and Min propagate NaN from either side") {
    const Tensor a = test::make(DType::F32, {4}, {NAN, 1.0, NAN, -0.0});
    const Tensor b = test::make(DType::F32, {4}, {2.0, NAN, NAN, 0.0});
    for (OpKind op : {OpKind::Max, OpKind::Min}) {
      const Tensor got = test::run_static_op(op, {a, b})[0];
      CHECK(std::isnan(got.at(0)));
      CHECK(std::isnan(got.at(1)));
      CHECK(std::isnan(got.at(2)));
      CHECK(got.at(3) == 0.0);
    }
  }

  TEST_CASE("integer arithmetic wraps instead of overflowing") {
    const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    const Tensor a = int_tensor<int32_t>(DType::I32, {hi, lo, lo, hi, lo, 7, -7});
    const Tensor b = int_tensor<int32_t>(DType::I32, {1, 1, -1, 2, -1, 2, 2});
    for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
      check_exact(test::run_static_op(op, {a, b})[0], test::ref::binary(op, a, b));
    CHECK(test::run_static_op(OpKind::Div, {a, b})[0].data<int32_t>()[2] == lo);  // INT_MIN / -1
    CHECK(test::run_static_op(OpKind::Div, {a, b})[0].data<int32_t>()[6] == -3);  // truncates toward zero
    CHECK(test::run_static_op(OpKind::Neg, {a})[0].data<int32_t>()[1] == lo);
    const int64_t lo64 = std::numeric_limits<int64_t>::min(), hi64 = std::numeric_limits<int64_t>::max();
    const Tensor c = int_tensor<int64_t>(DType::I64, {hi64, lo64, lo64, hi64, -9});
    const Tensor d = int_tensor<int64_t>(DType::I64, {1, 1, -1, 3, 4});
    for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
      check_exact(test::run_static_op(op, {c, d})[0], test::ref::binary(op, c, d));
    CHECK(test::run_static_op(OpKind::Div, {c, d})[0].data<int64_t>()[2] == lo64);
    CHECK(test::run_static_op(OpKind::Div, {c, d})[0].data<int64_t>()[4] == -2);
    check_exact(test::run_static_op(OpKind::Neg, {c})[0], test::ref::unary(OpKind::Neg, c));
  }

  TEST_CASE("integer division by zero throws InvalidArgument") {
    for (DType t : {DType::I32, DType::I64}) {
      const Tensor a = test::uniform({4, 50000}, 3, -100, 100, t);
      Tensor b = test::uniform({50000}, 4, 1, 9, t);
      b.set(41234, 0);
      for (Parallel* par : parallels()) {
        try {
          test::run_static_op(OpKind::Div, {a, b}, {}, *par);
          FAIL("no error for an integer division by zero");
        } catch (const Error& e) {
          CHECK(e.code() == ErrorCode::InvalidArgument);
          CHECK(std::string(e.what()).find("Div") != std::string::npos);
          CHECK(std::string(e.what()).find("division by zero") != std::string::npos);
        }
      }
      const Tensor zero = test::make(t, {}, {0});
      CHECK_THROWS_AS(test::run_static_op(OpKind::Div, {a, zero}), Error);
    }
  }

  TEST_CASE("float division by zero gives infinities and NaN") {
    const Tensor a = test::make(DType::F32, {3}, {1.0, -1.0, 0.0});
    const Tensor got = test::run_static_op(OpKind::Div, {a, test::make(DType::F32, {}, {0.0})})[0];
    CHECK(got.at(0) == INFINITY);
    CHECK(got.at(1) == -INFINITY);
    CHECK(std::isnan(got.at(2)));
  }
}

namespace {

struct UnaryCase {
  OpKind op;
  const char* approximate;
  double rtol, atol;
  bool ints;
};

const std::vector<UnaryCase> kUnaryCases = {
    {OpKind::Relu, "none", 0, 0, true},          {OpKind::Neg, "none", 0, 0, true},
    {OpKind::Sqrt, "none", 1.2e-7, 0, false},    {OpKind::Exp, "none", 2.5e-7, 3e-45, false},
    {OpKind::Tanh, "none", 3e-7, 3e-45, false},  {OpKind::Erf, "none", 4e-7, 3e-45, false},
    {OpKind::Sigmoid, "none", 4e-7, 3e-45, false}, {OpKind::Gelu, "none", 4e-6, 1e-12, false},
    {OpKind::Gelu, "tanh", 4e-6, 1e-12, false},
};

std::vector<Shape> unary_shapes(int64_t n) { return {{}, {n}, {3, n}, {2, 3, n}, {2, 1, 3, n}}; }

Tensor unary_input(OpKind op, DType t, const Shape& s, uint64_t seed) {
  if (t == DType::I32 || t == DType::I64) return test::uniform(s, seed, -1000, 1000, t);
  if (op == OpKind::Sqrt) return test::uniform(s, seed, -1, 100, t);
  if (op == OpKind::Exp) return test::uniform(s, seed, -110, 95, t);  // spans underflow and overflow
  return test::randn(s, seed, 4.0, t);
}

void check_unary(const UnaryCase& c, DType t, const Shape& s, uint64_t seed) {
  const Tensor x = unary_input(c.op, t, s, seed);
  const Tensor want = test::ref::unary(c.op, x, c.approximate);
  const bool is_int = t == DType::I32 || t == DType::I64;
  const Tol tol = is_int ? Tol{0, 0} : float_tol(t, c.rtol, c.atol);
  Attributes attrs;
  if (c.op == OpKind::Gelu) attrs["approximate"] = c.approximate;
  for (Parallel* par : parallels()) {
    INFO(describe(c.op, t, {s}) << " approximate=" << std::string(c.approximate));
    FUSOR_CHECK_CLOSE(test::run_static_op(c.op, {x}, attrs, *par)[0], want, tol.rtol, tol.atol);
  }
}

}  // namespace

TEST_SUITE("static/elementwise") {
  TEST_CASE("unary ops match the reference at every rank and size") {
    uint64_t seed = 1000;
    for (const UnaryCase& c : kUnaryCases) {
      std::vector<DType> dtypes = kFloats;
      if (c.ints) dtypes.insert(dtypes.end(), {DType::I32, DType::I64});
      for (DType t : dtypes) {
        for (int64_t n : sweep_sizes())
          for (const Shape& s : unary_shapes(n)) check_unary(c, t, s, seed++);
        check_unary(c, t, {3, 70001}, seed++);
      }
    }
  }

  TEST_CASE("unary ops on special values") {
    const std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -1e-40, 1e30, -1e30, 88.7, -88.7, 100, -100};
    const Tensor x = test::make(DType::F32, {int64_t(v.size())}, v);
    for (const UnaryCase& c : kUnaryCases) {
      Attributes attrs;
      if (c.op == OpKind::Gelu) attrs["approximate"] = c.approximate;
      INFO(op_name(c.op) << " " << std::string(c.approximate));
      FUSOR_CHECK_CLOSE(test::run_static_op(c.op, {x}, attrs)[0], test::ref::unary(c.op, x, c.approximate), c.rtol,
                        c.atol);
    }
    const Tensor r = test::run_static_op(OpKind::Relu, {x})[0];
    CHECK(std::isnan(r.at(4)));  // Relu keeps NaN
  }

  TEST_CASE("Cast between every pair of dtypes matches the reference") {
    const std::vector<DType> all = {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool};
    const std::vector<double> floats = {0.0, -0.0, 0.4, -0.4, 0.5, -0.5, 1.5, -1.5, 2.5, -2.7, 7.9, -7.9, 127.5,
                                        255.9, 65504, 65519.9, 65520, -65536, 1e6 + 0.5, 16777217, 3e9, -3e9,
                                        2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 1e19, -1e19,
                                        9.2233715e18, 1e30, -1e30, 1e-8, 6e-8, 1e-40, INFINITY, -INFINITY, NAN};
    const std::vector<int64_t> ints = {0, 1, -1, 2, 7, -7, 127, 128, 255, 256, -256, 2049, 65504, 65519, 65520,
                                       100000, 16777217, 16842753, -16842753, 2147483647, -2147483647 - 1,
                                       int64_t(1) << 40, (int64_t(1) << 40) + 3, int64_t(1) << 53,
                                       -(int64_t(1) << 53), (int64_t(1) << 53) - 1};
    for (DType from : all) {
      Tensor x;
      if (from == DType::I64) {
        x = int_tensor<int64_t>(DType::I64, ints);
      } else if (from == DType::I32) {
        std::vector<int32_t> narrow;
        for (int64_t v : ints) narrow.push_back(int32_t(v));  // wraps the big ones: still valid i32 inputs
        x = int_tensor<int32_t>(DType::I32, narrow);
      } else if (from == DType::Bool) {
        x = test::make(DType::Bool, {5}, {0, 1, 1, 0, 1});
      } else {
        x = test::make(from, {int64_t(floats.size())}, floats);
      }
      const Tensor random = from == DType::Bool ? random_bool({3, 40000}, 9)
                                                : test::randn({3, 40000}, 9, from == DType::F16 ? 300.0 : 1e4, from);
      for (DType to : all) {
        Attributes attrs{{"to", std::string(dtype_name(to))}};
        INFO(dtype_name(from) << " -> " << dtype_name(to));
        check_exact(test::run_static_op(OpKind::Cast, {x}, attrs)[0], test::ref::cast(x, to));
        for (Parallel* par : parallels())
          check_exact(test::run_static_op(OpKind::Cast, {random}, attrs, *par)[0], test::ref::cast(random, to));
      }
    }
  }

  TEST_CASE("Cast special values") {
    auto cast = [](const Tensor& x, DType to) {
      return test::run_static_op(OpKind::Cast, {x}, {{"to", std::string(dtype_name(to))}})[0];
    };
    const Tensor f = test::make(DType::F32, {8}, {NAN, INFINITY, -INFINITY, 3e9, -3e9, -2.9, 2.9, -0.0});
    const Tensor i32 = cast(f, DType::I32);
    CHECK(i32.data<int32_t>()[0] == 0);
    CHECK(i32.data<int32_t>()[1] == std::numeric_limits<int32_t>::max());
    CHECK(i32.data<int32_t>()[2] == std::numeric_limits<int32_t>::min());
    CHECK(i32.data<int32_t>()[3] == std::numeric_limits<int32_t>::max());
    CHECK(i32.data<int32_t>()[4] == std::numeric_limits<int32_t>::min());
    CHECK(i32.data<int32_t>()[5] == -2);
    CHECK(i32.data<int32_t>()[6] == 2);
    const Tensor i64 = cast(f, DType::I64);
    CHECK(i64.data<int64_t>()[0] == 0);
    CHECK(i64.data<int64_t>()[1] == std::numeric_limits<int64_t>::max());
    CHECK(i64.data<int64_t>()[2] == std::numeric_limits<int64_t>::min());
    CHECK(i64.data<int64_t>()[3] == 3000000000);
    const Tensor b = cast(f, DType::Bool);
    CHECK(b.data<uint8_t>()[0] == 1);  // NaN != 0
    CHECK(b.data<uint8_t>()[7] == 0);  // -0 == 0
    // i32 -> bf16 rounds once: 2^24 + 2^16 + 1 is just above a bf16 midpoint, which a naive
    // int -> f32 -> bf16 would land on and round down to even.
    const Tensor big = int_tensor<int32_t>(DType::I32, {16842753, -16842753});
    CHECK(cast(big, DType::BF16).at(0) == 16908288.0);
    CHECK(cast(big, DType::BF16).at(1) == -16908288.0);
    CHECK(cast(cast(f, DType::F16), DType::F32).at(1) == INFINITY);
    CHECK(std::isnan(cast(cast(f, DType::BF16), DType::F32).at(0)));
    // i64 -> i32 wraps modulo 2^32.
    CHECK(cast(int_tensor<int64_t>(DType::I64, {(int64_t(1) << 32) + 5}), DType::I32).data<int32_t>()[0] == 5);
  }

  TEST_CASE("Cast round trips are exact") {
    // Every f16 and bf16 bit pattern through f32 and back (NaNs stay NaN).
    for (DType half : {DType::F16, DType::BF16}) {
      Tensor h = Tensor::empty(half, {65536});
      for (int i = 0; i < 65536; ++i) h.data<uint16_t>()[i] = uint16_t(i);
      const Tensor f = test::run_static_op(OpKind::Cast, {h}, {{"to", "f32"}})[0];
      const Tensor back = test::run_static_op(OpKind::Cast, {f}, {{"to", std::string(dtype_name(half))}})[0];
      FUSOR_CHECK_CLOSE(back, h, 0, 0);
      int64_t bad = 0;
      for (int i = 0; i < 65536; ++i)
        if (!std::isnan(h.at(i)) && back.data<uint16_t>()[i] != h.data<uint16_t>()[i]) ++bad;
      CHECK(bad == 0);
    }
    const Tensor i = test::uniform({1000}, 5, -2e9, 2e9, DType::I32);
    const Tensor wide = test::run_static_op(OpKind::Cast, {i}, {{"to", "i64"}})[0];
    check_exact(test::run_static_op(OpKind::Cast, {wide}, {{"to", "i32"}})[0], i);
    const Tensor x = test::uniform({1000}, 6, -16777216, 16777216, DType::I32);  // exact in f32
    const Tensor xf = test::run_static_op(OpKind::Cast, {x}, {{"to", "f32"}})[0];
    check_exact(test::run_static_op(OpKind::Cast, {xf}, {{"to", "i32"}})[0], x);
  }

  TEST_CASE("Where matches the reference for every dtype and broadcast pattern") {
    const std::vector<DType> all = {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool};
    uint64_t seed = 5000;
    for (DType t : all) {
      for (int64_t n : sweep_sizes()) {
        const std::vector<std::vector<Shape>> cases = {
            {{n}, {n}, {n}},       {{}, {n}, {n}},          {{n}, {}, {}},          {{}, {}, {}},
            {{3, 1}, {1, n}, {3, n}}, {{3, n}, {n}, {}},    {{2, 1, n}, {3, 1}, {n}}, {{1}, {2, 3, n}, {3, 1}},
            {{2, 1, 3, 1}, {1, 4, 1, n}, {n}}, {{n}, {2, n}, {2, 1}}};
        for (const auto& s : cases) {
          const Tensor c = random_bool(s[0], seed++);
          const Tensor x = test::uniform(s[1], seed++, -100, 100, t), y = test::uniform(s[2], seed++, -100, 100, t);
          const Tensor want = test::ref::where(c, x, y);
          for (Parallel* par : parallels()) {
            INFO(describe(OpKind::Where, t, s));
            check_exact(test::run_static_op(OpKind::Where, {c, x, y}, {}, *par)[0], want);
          }
        }
      }
      const Tensor c = random_bool({3, 40000}, seed++);
      const Tensor x = test::uniform({40000}, seed++, -100, 100, t), y = test::uniform({3, 1}, seed++, -100, 100, t);
      for (Parallel* par : parallels())
        check_exact(test::run_static_op(OpKind::Where, {c, x, y}, {}, *par)[0], test::ref::where(c, x, y));
    }
  }

  TEST_CASE("empty tensors are no-ops") {
    const Tensor e = Tensor::empty(DType::F32, {0, 5});
    CHECK(test::run_static_op(OpKind::Add, {e, test::randn({5}, 1)})[0].numel() == 0);
    CHECK(test::run_static_op(OpKind::Exp, {e})[0].numel() == 0);
    CHECK(test::run_static_op(OpKind::Cast, {e}, {{"to", "i64"}})[0].numel() == 0);
  }
}

TEST_SUITE("static/elementwise") {
  TEST_CASE("Abs Reciprocal Log LeakyRelu HardSigmoid HardSwish match the reference") {
    uint64_t seed = 9000;
    for (DType t : kFloats) {
      for (int64_t n : sweep_sizes()) {
        for (const Shape& s : unary_shapes(n)) {
          const Tensor x = test::randn(s, seed++, 4.0, t);
          const Tensor pos = test::uniform(s, seed++, 1e-3, 50, t);
          INFO(dtype_name(t) << " " << s.str());
          const Tol exact = float_tol(t, 0), one = float_tol(t, 1.2e-7), two = float_tol(t, 2.4e-7);
          FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::Abs, {x})[0], test::ref::unary(OpKind::Abs, x), exact.rtol, exact.atol);
          FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::Reciprocal, {x})[0], test::ref::unary(OpKind::Reciprocal, x), one.rtol,
                            one.atol);
          FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::Log, {pos})[0], test::ref::unary(OpKind::Log, pos), two.rtol, 1e-7);
          FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::LeakyRelu, {x}, {{"alpha", 0.1}})[0], test::ref::leaky_relu(x, double(0.1f)),
                            two.rtol, two.atol);
          // HardSigmoid / HardSwish: a multiply and an add (maybe fused) before the clamp: 2 ulp,
          // absolute near the clamp's 0.
          FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::HardSigmoid, {x}, {{"alpha", 0.25}, {"beta", 0.4}})[0],
                            test::ref::hard_sigmoid(x, 0.25, double(0.4f)), two.rtol, 1e-7);
          FUSOR_CHECK_CLOSE(test::run_static_op(OpKind::HardSwish, {x})[0], test::ref::unary(OpKind::HardSwish, x),
                            float_tol(t, 4e-7).rtol, 1e-6);
        }
      }
    }
    // Abs of integers wraps at the minimum; of -0 and NaN it is +0 and NaN.
    const Tensor i = int_tensor<int32_t>(DType::I32, {-5, 7, std::numeric_limits<int32_t>::min()});
    check_exact(test::run_static_op(OpKind::Abs, {i})[0], test::ref::unary(OpKind::Abs, i));
    const Tensor sp = test::make(DType::F32, {4}, {-0.0, NAN, -INFINITY, 0.0});
    const Tensor a = test::run_static_op(OpKind::Abs, {sp})[0];
    CHECK(!std::signbit(a.at(0)));
    CHECK(std::isnan(a.at(1)));
    CHECK(a.at(2) == INFINITY);
    CHECK(test::run_static_op(OpKind::Reciprocal, {sp})[0].at(0) == -INFINITY);
    CHECK(std::isnan(test::run_static_op(OpKind::Log, {test::make(DType::F32, {1}, {-1.0})})[0].at(0)));
    CHECK(std::isnan(test::run_static_op(OpKind::HardSwish, {sp})[0].at(1)));
    CHECK(std::isnan(test::run_static_op(OpKind::LeakyRelu, {sp})[0].at(1)));
  }

  TEST_CASE("Sin Cos (libm, at RoPE's large angles too) and Floor Ceil Round (exact, halves to even)") {
    uint64_t seed = 9300;
    for (DType t : kFloats) {
      for (int64_t n : sweep_sizes()) {
        for (const Shape& s : unary_shapes(n)) {
          INFO(dtype_name(t) << " " << s.str());
          const Tensor x = test::randn(s, seed++, 4.0, t), far = test::uniform(s, seed++, -5000, 5000, t);
          const Tol trig = float_tol(t, 1.2e-7), exact = float_tol(t, 0);
          for (OpKind op : {OpKind::Sin, OpKind::Cos})
            for (const Tensor* in : {&x, &far})  // sinf's error is 1 ulp of the result: absolute near 0
              FUSOR_CHECK_CLOSE(test::run_static_op(op, {*in})[0], test::ref::unary(op, *in), trig.rtol, 1.2e-7);
          for (OpKind op : {OpKind::Floor, OpKind::Ceil, OpKind::Round})
            FUSOR_CHECK_CLOSE(test::run_static_op(op, {far})[0], test::ref::unary(op, far), exact.rtol, exact.atol);
        }
      }
    }
    const Tensor halves = test::make(DType::F32, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e30, -0.0});
    check_exact(test::run_static_op(OpKind::Round, {halves})[0],
                test::make(DType::F32, {8}, {0, 2, 2, -0.0, -2, -2, 1e30, -0.0}));
    check_exact(test::run_static_op(OpKind::Floor, {halves})[0],
                test::make(DType::F32, {8}, {0, 1, 2, -1, -2, -3, 1e30, -0.0}));
    check_exact(test::run_static_op(OpKind::Ceil, {halves})[0],
                test::make(DType::F32, {8}, {1, 2, 3, -0.0, -1, -2, 1e30, -0.0}));
    const Tensor sp = test::make(DType::F32, {3}, {NAN, INFINITY, -INFINITY});
    for (OpKind op : {OpKind::Sin, OpKind::Cos, OpKind::Floor, OpKind::Ceil, OpKind::Round}) {
      const Tensor r = test::run_static_op(op, {sp})[0];
      CHECK(std::isnan(r.at(0)));
      if (op == OpKind::Sin || op == OpKind::Cos) {
        CHECK(std::isnan(r.at(1)));  // of an infinity: NaN
      } else {
        CHECK(r.at(1) == INFINITY);
        CHECK(r.at(2) == -INFINITY);
      }
    }
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Sin, {test::make(DType::I32, {1}, {1})}); }) ==
          ErrorCode::DTypeMismatch);
  }

  TEST_CASE("Clip with input bounds attribute bounds one bound or none") {
    uint64_t seed = 9500;
    const double inf = INFINITY;
    struct Bounds {
      bool lo, hi;
      double l, h;
    };
    for (DType t : kAllNumeric) {
      const bool ints = t == DType::I32 || t == DType::I64;
      for (const Bounds& b : std::vector<Bounds>{{true, true, 0, 6}, {true, false, -1, 0}, {false, true, 0, 2}, {false, false, 0, 0},
                                                 {true, true, 3, -3}}) {
        for (int64_t n : {1, 15, 17, 70001}) {
          const Tensor x = ints ? test::uniform({n}, seed++, -100, 100, t) : test::randn({n}, seed++, 5.0, t);
          std::vector<OpInput> ins{x, b.lo ? OpInput(test::make(t, {}, {b.l})) : OpInput::none(),
                                   b.hi ? OpInput(test::make(t, {}, {b.h})) : OpInput::none()};
          const Tensor want = test::ref::clip(x, b.lo ? b.l : -inf, b.hi ? b.h : inf);
          for (Parallel* par : parallels()) check_exact(test::run_static_op(OpKind::Clip, ins, {}, *par)[0], want);
          if (!ints) {  // the opset-6 form
            Attributes attrs;
            if (b.lo) attrs["min"] = b.l;
            if (b.hi) attrs["max"] = b.h;
            check_exact(test::run_static_op(OpKind::Clip, {x}, attrs)[0], want);
          }
        }
      }
    }
    // NaN passes; bounds outside the i32 range clip nothing.
    CHECK(std::isnan(test::run_static_op(OpKind::Clip, {test::make(DType::F32, {1}, {NAN})}, {{"min", 0.0}, {"max", 6.0}})[0].at(0)));
    const Tensor i = int_tensor<int32_t>(DType::I32, {std::numeric_limits<int32_t>::min(), 5});
    check_exact(test::run_static_op(OpKind::Clip, {i, test::make(DType::I32, {}, {-2147483648.0})})[0], i);
  }

  TEST_CASE("activation errors name the node and the attribute") {
    const Tensor x = test::randn({4}, 1);
    std::string msg;
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Clip, {x, test::make(DType::F32, {}, {0.0})}, {{"min", 0.0}}); }, &msg) ==
          ErrorCode::InvalidGraph);
    CHECK(msg.find("min given both") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Clip, {x, test::make(DType::F32, {2}, {0.0, 1.0})}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Clip, {x, test::make(DType::I64, {}, {0.0})}); }) ==
          ErrorCode::DTypeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::LeakyRelu, {x}, {{"alpha", double(INFINITY)}}); }, &msg) ==
          ErrorCode::InvalidGraph);
    CHECK(msg.find("alpha must be finite") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::HardSigmoid, {x}, {{"beta", double(NAN)}}); }) == ErrorCode::InvalidGraph);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::Log, {test::make(DType::I32, {1}, {1})}); }) == ErrorCode::DTypeMismatch);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::HardSwish, {x}, {{"alpha", 1.0}}); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("unknown attribute 'alpha'") != std::string::npos);
  }
}
