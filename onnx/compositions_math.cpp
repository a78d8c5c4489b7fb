// Elementwise ONNX operators fusor writes as its own (Note [Compositions]): Sign, Xor, Mod,
// Swish, Tan, the hyperbolic functions and their inverses, and Atan, Asin, Acos. Each body is a
// chain of pointwise ops, which fusion makes one kernel.
#include <cmath>

#include "ir/error.h"
#include "onnx/composition_body.h"

namespace fusor::onnx_import::composition {

// Note [Elementwise compositions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The formulas are chosen for f32, not copied from a textbook:
//   - where the closed form cancels (sinh, asinh and atanh near 0), a Taylor polynomial
//     takes over below a bound at which its first omitted term is below 3e-8 relative:
//     sinh below 1 (x^11 / 11!), asinh and atanh below 0.125;
//   - asinh and acosh take log(|x|) + ln 2 beyond 1e18, where x^2 would overflow;
//   - sinh and cosh halve each exponential (e^x / 2, not (e^x - e^-x) / 2 after both);
//   - atan reduces |x| to at most tan(pi / 8) (atan x = pi/4 + atan((x - 1) / (x + 1)),
//     pi/2 - atan(1 / x)) and evaluates an odd polynomial of degree 9 there, the classic
//     single-precision minimax fit (Cephes' atanf), within 2 ulp; asin is
//     atan(x / sqrt((1 - x)(1 + x))) and acos 2 atan(sqrt((1 - x) / (1 + x))), which keep
//     their precision near |x| = 1 and give NaN beyond it;
//   - Mod of integers is exact: a - trunc(a / b) b, then b added where the remainder's sign
//     is not the divisor's (fmod = 0). Of floats, the truncated quotient of the rounded a / b
//     can be one too large in magnitude when the true quotient is just below an integer;
//     the remainder then has the wrong sign and |b| is added back. The product trunc(a / b)
//     b is rounded once, so a float remainder is within an ulp of a of C's fmod (exact
//     whenever that product is: quotients below 2^24 with b of few significant bits, the
//     common case); an infinite divisor leaves a, as fmod does.
// NaN propagates through every body (each Where's untaken branch may hold NaN or inf; it
// is never selected).

namespace {

constexpr double kLn2 = 0.693147180559945309417;
constexpr double kPi = 3.14159265358979323846;

std::string xor_of(Body& b, const std::string& p, const std::string& q, const std::string& out = "") {
  return b.op("Or", {b.op("And", {p, b.op("Not", {q})}), b.op("And", {b.op("Not", {p}), q})}, {}, out);
}

// x * (1 + x^2 c[0] (1 + x^2 c[1] (...))): an odd series by its ratios of successive terms.
std::string odd_series(Body& b, const std::string& x, const std::vector<double>& ratios) {
  const std::string x2 = b.op("Mul", {x, x});
  std::string acc = b.scalar(1.0);
  for (size_t i = ratios.size(); i-- > 0;)
    acc = b.op("Add", {b.scalar(1.0), b.op("Mul", {b.op("Mul", {x2, b.scalar(ratios[i])}), acc})});
  return b.op("Mul", {x, acc});
}

// atan(v) (Note [Elementwise compositions]).
std::string atan_of(Body& b, const std::string& v, const std::string& out = "") {
  const std::string a = b.op("Abs", {v});
  const std::string big = b.op("Greater", {a, b.scalar(2.414213562373095)});   // tan(3 pi / 8)
  const std::string mid = b.op("Greater", {a, b.scalar(0.4142135623730950)});  // tan(pi / 8)
  const std::string reduced =
      b.op("Where", {big, b.op("Neg", {b.op("Reciprocal", {a})}),
                     b.op("Where", {mid, b.op("Div", {b.op("Sub", {a, b.scalar(1.0)}), b.op("Add", {a, b.scalar(1.0)})}), a})});
  const std::string base = b.op("Where", {big, b.scalar(kPi / 2), b.op("Where", {mid, b.scalar(kPi / 4), b.scalar(0.0)})});
  const std::string z = b.op("Mul", {reduced, reduced});
  std::string p = b.scalar(8.05374449538e-2);
  for (double c : {-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1}) p = b.op("Add", {b.op("Mul", {p, z}), b.scalar(c)});
  const std::string poly = b.op("Add", {b.op("Mul", {b.op("Mul", {p, z}), reduced}), reduced});
  const std::string mag = b.op("Add", {base, poly});
  return b.op("Where", {b.op("Less", {v, b.scalar(0.0)}), b.op("Neg", {mag}), mag}, {}, out);
}

}  // namespace

// 1 where x > 0, -1 where x < 0, else x itself (0, -0 or NaN), in x's dtype.
std::vector<OnnxNode> sign(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string zero = b.typed_scalar(0);
  const std::string inner = b.op("Where", {b.op("Less", {b.x(), zero}), b.typed_scalar(-1), b.x()});
  b.op("Where", {b.op("Greater", {b.x(), zero}), b.typed_scalar(1), inner}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> logical_xor(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  xor_of(b, b.x(), b.input(1, "B"), b.y());
  return b.done();
}

std::vector<OnnxNode> mod(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string& a = b.x();
  const std::string& d = b.input(1, "B");
  const int64_t fmod = int_attr(n, "fmod", 0);
  if (fmod != 0 && fmod != 1) cx.fail(ErrorCode::InvalidGraph, "fmod must be 0 or 1, got " + std::to_string(fmod));
  const std::string zero = b.typed_scalar(0);
  auto negative = [&](const std::string& v) { return b.op("Less", {v, zero}); };
  // The remainder with a's sign (C's % and fmod).
  std::string r;
  if (b.x_is_integer()) {
    r = b.op("Sub", {a, b.op("Mul", {b.op("Div", {a, d}), d})}, {}, fmod ? b.y() : "");
  } else {
    const std::string q = b.op("Div", {a, d});
    const std::string t = b.op("Where", {negative(q), b.op("Ceil", {q}), b.op("Floor", {q})});
    const std::string r0 = b.op("Sub", {a, b.op("Mul", {t, d})});
    const std::string abs_d = b.op("Abs", {d});
    const std::string wrong = b.op("And", {b.op("Not", {b.op("Equal", {r0, zero})}), xor_of(b, negative(r0), negative(a))});
    const std::string back = b.op("Where", {negative(a), b.op("Neg", {abs_d}), abs_d});
    const std::string r1 = b.op("Where", {wrong, b.op("Add", {r0, back}), r0});
    r = b.op("Where", {b.op("IsInf", {d}), a, r1}, {}, fmod ? b.y() : "");
  }
  if (!fmod) {  // the divisor's sign (Python's %)
    const std::string off = b.op("And", {b.op("Not", {b.op("Equal", {r, zero})}), xor_of(b, negative(r), negative(d))});
    b.op("Where", {off, b.op("Add", {r, d}), r}, {}, b.y());
  }
  return b.done();
}

// x * sigmoid(alpha x) (opset 24).
std::vector<OnnxNode> swish(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const double alpha = float_attr(n, "alpha", 1.0);
  const std::string scaled = alpha == 1.0 ? b.x() : b.op("Mul", {b.x(), b.scalar(alpha)});
  b.op("Mul", {b.x(), b.op("Sigmoid", {scaled})}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> tan(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  b.op("Div", {b.op("Sin", {b.x()}), b.op("Cos", {b.x()})}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> sinh(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string half_exp = b.op("Mul", {b.op("Exp", {b.x()}), b.scalar(0.5)});
  const std::string half_exp_neg = b.op("Mul", {b.op("Exp", {b.op("Neg", {b.x()})}), b.scalar(0.5)});
  const std::string series = odd_series(b, b.x(), {1.0 / 6, 1.0 / 20, 1.0 / 42, 1.0 / 72});
  const std::string small = b.op("Less", {b.op("Abs", {b.x()}), b.scalar(1.0)});
  b.op("Where", {small, series, b.op("Sub", {half_exp, half_exp_neg})}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> cosh(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string half_exp = b.op("Mul", {b.op("Exp", {b.x()}), b.scalar(0.5)});
  const std::string half_exp_neg = b.op("Mul", {b.op("Exp", {b.op("Neg", {b.x()})}), b.scalar(0.5)});
  b.op("Add", {half_exp, half_exp_neg}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> asinh(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string a = b.op("Abs", {b.x()});
  const std::string root = b.op("Sqrt", {b.op("Add", {b.op("Mul", {b.x(), b.x()}), b.scalar(1.0)})});
  const std::string mid = b.op("Log", {b.op("Add", {a, root})});
  const std::string huge = b.op("Add", {b.op("Log", {a}), b.scalar(kLn2)});
  const std::string mag = b.op("Where", {b.op("Greater", {a, b.scalar(1e18)}), huge, mid});
  const std::string signed_mag = b.op("Where", {b.op("Less", {b.x(), b.scalar(0.0)}), b.op("Neg", {mag}), mag});
  // x - x^3/6 + 3x^5/40 - 15x^7/336: ratios -1/6, -9/20, -25/42.
  const std::string series = odd_series(b, b.x(), {-1.0 / 6, -9.0 / 20, -25.0 / 42});
  b.op("Where", {b.op("Less", {a, b.scalar(0.125)}), series, signed_mag}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> acosh(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string root = b.op("Sqrt", {b.op("Mul", {b.op("Sub", {b.x(), b.scalar(1.0)}), b.op("Add", {b.x(), b.scalar(1.0)})})});
  const std::string mid = b.op("Log", {b.op("Add", {b.x(), root})});
  const std::string huge = b.op("Add", {b.op("Log", {b.x()}), b.scalar(kLn2)});
  b.op("Where", {b.op("Greater", {b.x(), b.scalar(1e18)}), huge, mid}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> atanh(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string ratio = b.op("Div", {b.op("Add", {b.scalar(1.0), b.x()}), b.op("Sub", {b.scalar(1.0), b.x()})});
  const std::string closed = b.op("Mul", {b.scalar(0.5), b.op("Log", {ratio})});
  // x + x^3/3 + x^5/5 + x^7/7 + x^9/9: ratios 1/3, 3/5, 5/7, 7/9.
  const std::string series = odd_series(b, b.x(), {1.0 / 3, 3.0 / 5, 5.0 / 7, 7.0 / 9});
  b.op("Where", {b.op("Less", {b.op("Abs", {b.x()}), b.scalar(0.125)}), series, closed}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> atan(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  atan_of(b, b.x(), b.y());
  return b.done();
}

std::vector<OnnxNode> asin(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string cos = b.op("Sqrt", {b.op("Mul", {b.op("Sub", {b.scalar(1.0), b.x()}), b.op("Add", {b.scalar(1.0), b.x()})})});
  atan_of(b, b.op("Div", {b.x(), cos}), b.y());
  return b.done();
}

std::vector<OnnxNode> acos(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string half_tan = b.op("Sqrt", {b.op("Div", {b.op("Sub", {b.scalar(1.0), b.x()}), b.op("Add", {b.scalar(1.0), b.x()})})});
  b.op("Mul", {b.scalar(2.0), atan_of(b, half_tan)}, {}, b.y());
  return b.done();
}

}  // namespace fusor::onnx_import::composition
