// The pointwise kernels of every host JIT backend (tests/support/host_jit.h): every
// Pointwise group of small graphs is lowered, compiled, run over all its tasks (serially,
// then split over a thread pool), and compared with BOTH the spec interpreter (the meaning
// of the spec, in double) and the static kernels run node by node (the same approximations
// in C++). Hand-built specs cover what lowering rarely makes: strided and transposed
// stores, bool conditions read with strides and broadcast. What only one backend has (its
// assembly, its declines, streaming stores) is in tests/codegen/<backend>/pointwise_test.cpp.
//
// Tolerances:
//   vs static      kStaticRel: every backend evaluates codegen/math_approx.h in the same
//                  order with fused multiply-adds on an FMA host, so results agree to the
//                  last bit in practice; 2 ulp leaves room for a contraction LLVM chooses
//                  differently from GCC (e.g. in the 2^n scaling products).
//   vs interpreter per op, from codegen/static/math.h's documented bounds: exp 1.1 ulp,
//                  tanh 1.5, sigmoid 2.5, erf 2.1 (ulp <= 2^-23 |want|, denormal results
//                  2^-149 per ulp), plus half an ulp for rounding the reference; GELU
//                  2e-7|x| + 1.6e-5|gelu| (1.1e-5 for the tanh form; x < -5.7 included);
//                  +, -, *, /, sqrt, max, min, where exact; chains get an ulp per op and
//                  carry an operand's error absolutely.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "codegen/lower.h"
#include "tests/support/host_jit.h"
#include "tests/support/kernel_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

constexpr double kUlp = 1.0 / (1 << 23);
constexpr double kDenormUlp = 1.4012984643e-45;  // 2^-149
constexpr double kStaticRel = 2 * kUlp;

// |got - want| <= rel*|want| + abs_x*|x| + floor per element (x the graph's first input);
// `interpret` false: the static comparison only.
struct Bound {
  double rel = 4 * kUlp;
  double abs_x = 0;
  double floor = 4 * kDenormUlp;
  bool interpret = true;
};

Bound ulps(double u) { return Bound{(u + 0.5) * kUlp, 0, (u + 0.5) * kDenormUlp, true}; }

void check_bound(const Tensor& got, const Tensor& want, const Tensor* x, const Bound& b, const char* what) {
  REQUIRE(got.numel() == want.numel());
  const float* pg = got.data<float>();
  const float* pw = want.data<float>();
  int64_t bad = 0;
  std::ostringstream os;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = pg[i], w = pw[i];
    if (std::isnan(g) && std::isnan(w)) continue;
    if (g == w) continue;
    double xv = x && x->numel() == got.numel() ? std::fabs(double(x->data<float>()[i])) : 0;
    if (std::fabs(g - w) <= b.rel * std::fabs(w) + b.abs_x * xv + b.floor) continue;
    if (bad++ < 5) os << " [" << i << "] got " << g << " want " << w << " (x " << xv << ")";
  }
  INFO(what, ": ", bad, " of ", got.numel(), " elements out of bounds:", os.str());
  CHECK(bad == 0);
}

struct Checked {
  int kernels = 0;
  int64_t compile_us = 0;
  double max_abs_out = 0;  ///< the largest finite |output| (static run)
};

// Lowers every Pointwise group of f, compiles it on `be`, runs it serially and on the pool
// and compares with the static run and (per `bound`) the interpreter.
Checked check_pointwise(JitBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs,
                        const Bound& bound) {
  std::vector<Tensor> values = test::run_all_static(f, inputs, test::pool());
  const Tensor* x0 = f.graph.inputs().empty() ? nullptr : &values[size_t(f.graph.inputs()[0])];
  Checked c;
  for (const FusionGroup& grp : f.groups) {
    if (grp.kind != GroupKind::Pointwise) continue;
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, grp, &why);
    REQUIRE_MESSAGE(spec, "not lowered: ", why);
    INFO(spec->str());
    REQUIRE_MESSAGE(be.supports(*spec, &why), why);
    std::shared_ptr<const CompiledKernel> k = be.compile(*spec);
    ++c.kernels;
    c.compile_us += k->compile_us;
    test::KernelRuns runs = test::run_kernel(*k, *spec, f, values, bound.interpret);
    size_t o = 0;
    for (size_t i = 0; i < spec->buffers.size(); ++i) {
      if (!spec->buffers[i].output) continue;
      const Tensor& want = values[size_t(runs.outs[o++])];
      for (int64_t e = 0; e < want.numel(); ++e) {
        double w = std::fabs(double(want.data<float>()[e]));
        if (std::isfinite(w)) c.max_abs_out = std::max(c.max_abs_out, w);
      }
      Tensor got = runs.serial[i].reshaped(want.shape());
      FUSOR_CHECK_CLOSE(runs.pooled[i].reshaped(want.shape()), got, 0, 0);  // the split changes nothing
      FUSOR_CHECK_CLOSE(got, want, kStaticRel, 4 * kDenormUlp);
      if (bound.interpret) check_bound(runs.serial[i], runs.interp[i], x0, bound, "vs interpreter");
    }
  }
  return c;
}

using test::unary_graph;
using test::with;

// Runs a hand-built spec on `be` (serially and split into single tasks) and compares every
// output buffer with the interpreter exactly. `inputs` holds one tensor per input buffer.
void check_hand_spec(JitBackend& be, const KernelSpec& spec, const std::vector<Tensor>& inputs) {
  INFO(spec.str());
  std::string why;
  REQUIRE_MESSAGE(be.supports(spec, &why), why);
  std::shared_ptr<const CompiledKernel> k = be.compile(spec);
  std::vector<Tensor> serial, split, interp;
  size_t in = 0;
  for (const BufferSpec& b : spec.buffers) {
    if (b.output) {
      Tensor nan = Tensor::empty(b.dtype, Shape{b.elements});
      std::fill(nan.data<float>(), nan.data<float>() + b.elements, std::numeric_limits<float>::quiet_NaN());
      serial.push_back(nan);
      split.push_back(nan.clone());
      interp.push_back(nan.clone());
    } else {
      serial.push_back(inputs[in]);
      split.push_back(inputs[in]);
      interp.push_back(inputs[in++]);
    }
  }
  std::vector<void*> ps, pt;
  for (size_t i = 0; i < serial.size(); ++i) {
    ps.push_back(serial[i].raw());
    pt.push_back(split[i].raw());
  }
  k->run(ps.data(), 0, spec.tasks);
  for (int64_t t = spec.tasks; t-- > 0;) k->run(pt.data(), t, t + 1);  // backwards, one task at a time
  test::interpret(spec, interp);
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    if (!spec.buffers[i].output) continue;
    FUSOR_CHECK_CLOSE(serial[i], interp[i], 0, 0);
    FUSOR_CHECK_CLOSE(split[i], interp[i], 0, 0);
  }
}

ScalarExpr node(ScalarOp op, int32_t a = -1, int32_t b = -1, int32_t c = -1) {
  ScalarExpr e;
  e.op = op;
  e.args[0] = a;
  e.args[1] = b;
  e.args[2] = c;
  return e;
}

ScalarExpr load(int32_t access, DType t = DType::F32) {
  ScalarExpr e;
  e.op = ScalarOp::Load;
  e.dtype = t;
  e.load = access;
  return e;
}

}  // namespace

TEST_SUITE("conformance/pointwise") {
  FUSOR_HOST_JIT_TEST_CASE("add mul exp and relu chains agree across sizes around the vector widths") {
    JitBackend& be = *jit.backend;
    const char* text = R"(graph g
input x: f32[@N@]
input y: f32[@N@]
a = Add(x, y)
m = Mul(a, x)
e = Exp(m)
r = Relu(a)
s = Add(e, r)
output s
output r
)";
    Checked total;
    for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 35, 1000, 16383, 16384, 16385, 100003}) {
      CAPTURE(n);
      FusedGraph f = test::fuse_text(with(text, {{"@N@", std::to_string(n)}}), {});
      // Against the interpreter (double throughout): the f32 product a*x carries half an
      // ulp into exp, whose condition number is |a*x| (< 16 here): 8 ulp, plus exp's own.
      Checked c = check_pointwise(be, f, {{"x", test::randn({n}, 1)}, {"y", test::randn({n}, 2)}},
                                  Bound{12 * kUlp, 0, 1e-30, true});
      CHECK(c.kernels >= 1);  // the fuser may cut at a (multi-consumer)
      total.kernels += c.kernels;
      total.compile_us += c.compile_us;
    }
    MESSAGE(jit.label << " (" << be.target_description() << "): compile time " << total.compile_us / total.kernels
                      << " us per kernel (add, mul, exp, relu, add groups: " << total.kernels << " kernels)");
  }

  FUSOR_HOST_JIT_TEST_CASE("broadcasting of scalars rows columns and middle axes") {
    JitBackend& be = *jit.backend;
    for (const char* bshape : {"[]", "[19]", "[37, 19]", "[4, 37, 1]", "[4, 1, 1]", "[1, 37, 1]", "[4, 1, 19]", "[37, 1]"}) {
      const std::string bshape_text = bshape;
      CAPTURE(bshape_text);
      std::string text = with(R"(graph g
input x: f32[4, 37, 19]
input b: f32BSHAPE
a = Add(x, b)
d = Div(b, a)
s = Add(b, d)
y = Mul(s, x)
output y
)", {{"BSHAPE", bshape}});
      FusedGraph f = test::fuse_text(text, {});
      std::vector<int64_t> dims;
      std::istringstream is(bshape_text.substr(1, bshape_text.size() - 2));
      for (std::string tok; std::getline(is, tok, ',');) dims.push_back(std::stoll(tok));
      Checked c = check_pointwise(be, f, {{"x", test::uniform({4, 37, 19}, 1, 0.5, 2)}, {"b", test::uniform(Shape(dims), 2, 0.5, 2)}},
                                  Bound{16 * kUlp, 0, 1e-30, true});
      CHECK(c.kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("views are read through strides") {
    JitBackend& be = *jit.backend;
    // Slice + reshape + transpose (inner stride 4), a stepped and reversed slice read with
    // inner stride 180, and a 3-d transpose whose inner dim has stride 1 again.
    const char* text = R"(graph g
input x: f32[2, 3, 4]
input b: f32[6]
input z: f32[8, 9, 10]
const st: i64[1] = [0]
const en: i64[1] = [2]
const ax: i64[1] = [2]
const s: i64[2] = [6, 2]
const two: f32[] = [2.0]
const st2: i64[2] = [1, 9]
const en2: i64[2] = [8, -100]
const ax2: i64[2] = [0, 2]
const sp2: i64[2] = [2, -3]
sl = Slice(x, st, en, ax)
r = Reshape(sl, s)
t = Transpose(r) {perm=[1, 0]}
a = Add(t, b)
m = Mul(a, two)
y = Gelu(m) {approximate="tanh"}
zs = Slice(z, st2, en2, ax2, sp2)
zt = Transpose(zs) {perm=[2, 1, 0]}
zr = Relu(zt)
zq = Transpose(z) {perm=[1, 0, 2]}
zn = Neg(zq)
output y
output zr
output zn
)";
    FusedGraph f = test::fuse_text(text, {});
    Checked c = check_pointwise(
        be, f, {{"x", test::randn({2, 3, 4}, 1)}, {"b", test::randn({6}, 2)}, {"z", test::randn({8, 9, 10}, 3)}},
        Bound{1.1e-5, 2e-7, 1e-30, true});
    CHECK(c.kernels >= 3);
    // The views cost nothing: z is read in place, reversed and gathered (inner stride 180).
    std::string specs;
    for (const FusionGroup& grp : f.groups) {
      std::string why;
      if (std::optional<KernelSpec> spec = lower_group(f, grp, &why)) specs += spec->str();
    }
    INFO(specs);
    CHECK(specs.find("buf0 f32 strides [-3, 10, 180] +99") != std::string::npos);
    CHECK(specs.find("f32 strides [1, 4]") != std::string::npos);  // x through slice, reshape, transpose
  }

  FUSOR_HOST_JIT_TEST_CASE("transposes of odd sizes around the vector widths") {
    JitBackend& be = *jit.backend;
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33}) {
      CAPTURE(n);
      const std::string text = with(R"(graph g
input x: f32[5, @N@]
input y: f32[@N@, 5]
t = Transpose(y) {perm=[1, 0]}
a = Add(x, t)
s = Sigmoid(a)
output s
)", {{"@N@", std::to_string(n)}});
      FusedGraph f = test::fuse_text(text, {});
      CHECK(check_pointwise(be, f, {{"x", test::randn({5, n}, 1)}, {"y", test::randn({n, 5}, 2)}}, Bound{8 * kUlp, 0, 1e-30, true})
                .kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("every scalar op") {
    JitBackend& be = *jit.backend;
    const int64_t n = 1037;
    Tensor x = test::uniform({n}, 1, -6, 6), y = test::uniform({n}, 2, -6, 6), pos = test::uniform({n}, 3, 0.01, 4);
    std::vector<double> cond(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) cond[size_t(i)] = (i * 7) % 3 == 0;
    struct Case {
      const char* op;
      Bound bound;
      bool positive = false;  // x in (0.01, 4)
    };
    const Bound exact{0, 0, 0, true};
    const std::vector<Case> cases = {
        {"Add(x, y)", exact},
        {"Sub(x, y)", exact},
        {"Mul(x, y)", exact},
        {"Div(x, y)", exact},
        {"Pow(x, y)", {4 * kUlp, 0, 1e-37, true}, true},
        {"Pow(x, two)", exact},
        {"Max(x, y, two)", exact},
        {"Min(x, y, two)", exact},
        {"Neg(x)", exact},
        {"Relu(x)", exact},
        {"Exp(x)", ulps(1.1)},
        {"Tanh(x)", ulps(1.5)},
        {"Erf(x)", ulps(2.1)},
        {"Sigmoid(x)", ulps(2.5)},
        {"Sqrt(x)", exact, true},
        {"Sin(x)", ulps(1)},  // libm's sinf, cosf (within an ulp): the same call on every backend
        {"Cos(x)", ulps(1)},
        {"Floor(x)", exact},
        {"Ceil(x)", exact},
        {"Round(x)", exact},
        {"Gelu(x)", {1.6e-5, 2e-7, 1e-44, true}},
        {"Gelu(x) {approximate=\"tanh\"}", {1.1e-5, 2e-7, 1e-44, true}},
        {"Where(c, x, y)", exact},
        {"Cast(x) {to=\"f32\"}", exact},
    };
    for (const Case& k : cases) {
      const std::string op_text = k.op;
      CAPTURE(op_text);
      std::map<std::string, Tensor> in{{"x", k.positive ? pos : x}, {"y", y}, {"c", test::make(DType::Bool, Shape{n}, cond)}};
      const std::string head = "graph g\ninput x: f32[@N@]\ninput y: f32[@N@]\ninput c: bool[@N@]\nconst two: f32[] = [2.0]\n";
      FusedGraph single = test::fuse_text(with(head + "r = " + k.op + "\noutput r\n", {{"@N@", std::to_string(n)}}), {});
      Checked c = check_pointwise(be, single, in, k.bound);
      CHECK(c.kernels == 1);
      // Inside a chain with two outputs: r's error carries into z absolutely.
      FusedGraph chain = test::fuse_text(
          with(head + "r = " + k.op + "\nz = Add(r, y)\noutput z\noutput r\n", {{"@N@", std::to_string(n)}}), {});
      Bound b = k.bound;
      b.floor += (k.bound.rel + kUlp) * c.max_abs_out + k.bound.abs_x * 6;
      b.rel += kUlp;
      CHECK(check_pointwise(be, chain, in, b).kernels >= 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("special values through the approximations") {
    JitBackend& be = *jit.backend;
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<double> v = {nan, inf, -inf, 0.0, -0.0, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-40, -1e-40, FLT_MIN, -FLT_MIN,
                             1e-20, -1e-20, 3e38, -3e38, FLT_MAX, -FLT_MAX, 1e10, -1e10, 88.72f, 88.73f, 89, 89.5,
                             -87.3f, -103.9f, -104, -150, 0.625f, -0.625f, 0.6249999f, 1, -1, 0.9999999f, 4, -4,
                             3.9999998f, 10, -10, 9.999999f, 14, -14, -5.7f, 20, -20, 2.5f, 5.5f};
    // Every value in the middle of a vector and in a tail.
    for (int rep = 0; rep < 2; ++rep) v.insert(v.end(), v.begin(), v.end());
    const int64_t n = int64_t(v.size());
    Tensor x = test::make(DType::F32, Shape{n}, v);
    struct Case {
      const char* op;
      Bound bound;
    };
    const std::vector<Case> cases = {
        {"Exp(x)", ulps(1.1)},
        {"Tanh(x)", ulps(1.5)},
        {"Erf(x)", ulps(2.1)},
        {"Sigmoid(x)", ulps(2.5)},
        {"Gelu(x)", {1.6e-5, 2e-7, 1e-44, true}},
        {"Gelu(x) {approximate=\"tanh\"}", {1.1e-5, 2e-7, 1e-44, true}},
        // The interpreter's Relu(NaN) is 0; the backends pass NaN through (static Relu).
        {"Relu(x)", {0, 0, 0, false}},
        {"Neg(x)", {0, 0, 0, true}},
        {"Sqrt(x)", {0, 0, 0, true}},
        {"Floor(x)", {0, 0, 0, true}},
        {"Ceil(x)", {0, 0, 0, true}},
        {"Round(x)", {0, 0, 0, true}},
        {"Sin(x)", ulps(1)},
        {"Cos(x)", ulps(1)},
        {"Max(x, one)", {0, 0, 0, true}},
        {"Min(x, one)", {0, 0, 0, true}},
        // NaN second: the interpreter's std::max / std::min return the first operand; the
        // backends propagate NaN from either side (numpy's maximum, the static kernels).
        {"Max(one, x)", {0, 0, 0, false}},
        {"Min(one, x)", {0, 0, 0, false}},
    };
    for (const Case& k : cases) {
      const std::string op_text = k.op;
      CAPTURE(op_text);
      FusedGraph f = test::fuse_text(
          with("graph g\ninput x: f32[@N@]\nconst one: f32[] = [1.0]\ny = " + std::string(k.op) + "\noutput y\n", {{"@N@", std::to_string(n)}}),
          {});
      CHECK(check_pointwise(be, f, {{"x", x}}, k.bound).kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("tanh and erf keep the static kernels' floats bit for bit (exponentials in range)") {
    // Note [Exponentials in range] (codegen/llvm/emit_expr.cpp): the exponential inside tanh
    // and erf skips exp's clamps and applies 2^n as one factor; both are exact where it is
    // used, so every float stays what codegen/static/math.h computes (on an FMA host, where
    // all evaluate the same fused multiply-adds). A dense sweep over every branch and clamp.
    JitBackend& be = *jit.backend;
    if (!__builtin_cpu_supports("fma")) {
      MESSAGE("skipped: this CPU has no FMA, so the static kernels round differently");
      return;
    }
    std::vector<double> v;
    for (int64_t i = -300000; i <= 300000; ++i) v.push_back(double(i) * 4e-5);  // [-12, 12], every branch
    for (double s : {0.625, 1.0, 4.0, 10.0}) {  // each breakpoint and its float neighbours
      float f = std::nextafter(float(s), 0.0f);
      for (int k = 0; k < 3; ++k, f = std::nextafter(f, 100.0f)) {
        v.push_back(f);
        v.push_back(-f);
      }
    }
    for (double s : {0.0, -0.0, 1e-30, 1e-45, 20.0, 1e10, double(FLT_MAX), double(INFINITY), double(NAN)}) {
      v.push_back(s);
      v.push_back(-s);
    }
    const int64_t n = int64_t(v.size());
    Tensor x = test::make(DType::F32, Shape{n}, v);
    for (const char* op : {"Tanh", "Erf"}) {
      const std::string op_text = op;
      CAPTURE(op_text);
      FusedGraph f = test::fuse_text(unary_graph(op_text + "(x)", n), {});
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
      REQUIRE(spec);
      std::shared_ptr<const CompiledKernel> k = be.compile(*spec);
      Tensor out = Tensor::zeros(DType::F32, Shape{n});
      std::vector<void*> ptrs;
      std::string out_name;
      for (const BufferSpec& b : spec->buffers) {
        ptrs.push_back(b.output ? out.raw() : x.raw());
        if (b.output) out_name = b.name;
      }
      k->run(ptrs.data(), 0, spec->tasks);
      std::map<std::string, Tensor> in{{"x", x}};
      const Tensor want = test::run_all_static(f, in, test::pool())[size_t(f.graph.find_value(out_name))];
      int64_t differ = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float a = out.data<float>()[i], b = want.data<float>()[i];
        if (std::memcmp(&a, &b, sizeof a) != 0 && !(std::isnan(a) && std::isnan(b))) {
          if (differ++ < 5) MESSAGE("x = " << std::hexfloat << v[size_t(i)] << ": " << jit.label << " " << a << ", static " << b);
        }
      }
      CHECK(differ == 0);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("wide random ranges stay within the documented bounds") {
    JitBackend& be = *jit.backend;
    const int64_t n = 20011;
    Tensor x = test::randn({n}, 7, 12.0);
    for (auto [op, bound] : std::vector<std::pair<const char*, Bound>>{
             {"Exp(x)", ulps(1.1)},
             {"Tanh(x)", ulps(1.5)},
             {"Erf(x)", ulps(2.1)},
             {"Sigmoid(x)", ulps(2.5)},
             {"Gelu(x)", {1.6e-5, 2e-7, 1e-44, true}},
             {"Gelu(x) {approximate=\"tanh\"}", {1.1e-5, 2e-7, 1e-44, true}}}) {
      const std::string op_text = op;
      CAPTURE(op_text);
      FusedGraph f = test::fuse_text(unary_graph(op, n), {});
      CHECK(check_pointwise(be, f, {{"x", x}}, bound).kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("outputs of 32 MiB and more compute what small ones do") {
    JitBackend& be = *jit.backend;
    // Rows of 2049 floats: a row segment's outputs are 32-byte aligned only in every eighth
    // row, and the task chunks (multiples of 64 elements) cut rows into segments shorter
    // than a block; at 4099 rows each output is at the streaming threshold on its own (llvm
    // streams them, Note [Streaming stores]: both its paths run), at 17 rows none is.
    for (int64_t rows : {int64_t(4099), int64_t(17)}) {
      CAPTURE(rows);
      FusedGraph f = test::fuse_text(test::two_output_rows_graph(rows), {});
      Checked c = check_pointwise(be, f, {{"x", test::randn({rows, 2049}, 1)}, {"y", test::randn({2049}, 2)}},
                                  Bound{4 * kUlp, 0, 4 * kDenormUlp, rows < 100});
      CHECK(c.kernels >= 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("strided and transposed stores and bool conditions of every stride") {
    JitBackend& be = *jit.backend;
    for (int64_t n : {1, 7, 8, 9, 16, 17, 40}) {
      CAPTURE(n);
      // Index space [3, n]: y[i, j] stored transposed (strides [1, 3]) = c[i, j] ? x[i, j] : k[i]
      // with c read contiguously, transposed (strides [1, 3]) and broadcast along the row
      // (strides [1, 0]); x read with inner stride 2 from a wider buffer; k a per-row
      // column (strides [1, 0]).
      for (int variant = 0; variant < 3; ++variant) {
        CAPTURE(variant);
        KernelSpec spec;
        spec.kind = KernelKind::Pointwise;
        spec.name = "hand";
        spec.tasks = 2;
        const int64_t rows = 3;
        spec.buffers = {{"x", DType::F32, rows * n * 2, false, false},
                        {"c", DType::Bool, rows * n, false, false},
                        {"k", DType::F32, rows, false, false},
                        {"y", DType::F32, rows * n, true, false}};
        spec.pointwise.shape = {rows, n};
        ExprGraph& g = spec.pointwise.body;
        std::vector<int64_t> cstrides = variant == 0 ? std::vector<int64_t>{n, 1}
                                        : variant == 1 ? std::vector<int64_t>{1, rows}
                                                       : std::vector<int64_t>{1, 0};
        g.accesses = {{0, DType::F32, {2 * n, 2}, 1},
                      {1, DType::Bool, cstrides, 0},
                      {2, DType::F32, {1, 0}, 0},
                      {3, DType::F32, {1, rows}, 0}};
        g.nodes = {load(0), load(1, DType::Bool), load(2), node(ScalarOp::Where, 1, 0, 2)};
        g.stores = {{3, 3}};
        std::vector<double> cv(size_t(rows * n));
        for (size_t i = 0; i < cv.size(); ++i) cv[i] = (i * 5) % 3 != 0;
        check_hand_spec(be, spec,
                        {test::randn({rows * n * 2}, 1), test::make(DType::Bool, Shape{rows * n}, cv), test::randn({rows}, 2)});
      }
    }
  }

}
