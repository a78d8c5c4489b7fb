// The llvm backend's own pointwise checks: streaming stores of large outputs, the
// vectorized hot loop, the specs it declines, one symbol per spec, and bandwidth. Its
// kernels are compared with BOTH the spec interpreter (the meaning of the spec, in double)
// and the static kernels run node by node (the same approximations in C++). The numerical
// cases every host JIT backend shares (size sweeps, broadcasting, views, every scalar op,
// special values) are in tests/codegen/conformance/pointwise_test.cpp.
//
// Tolerances:
//   vs static      kStaticRel: both backends evaluate codegen/math_approx.h in the same
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

#include <chrono>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include "codegen/cpu_rules.h"
#include "codegen/llvm/emit_pointwise.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "codegen/static/static_backend.h"
#include "jit/thread_pool.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/temp_dir.h"
#include "tests/support/llvm_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

constexpr double kUlp = 1.0 / (1 << 23);       // relative size of one ulp, at most
constexpr double kDenormUlp = 1.4012984643e-45;  // 2^-149
constexpr double kStaticRel = 2 * kUlp;



// How a kernel's outputs are checked against the interpreter. Per element,
// |got - want| <= rel*|want| + abs_x*|x| + floor, x the first input of the graph (GELU's
// bound is relative to its argument). `interpret` false: the static comparison only (for
// sizes where the double interpreter is too slow, or special values where it differs by
// definition, e.g. Relu(NaN)).
struct Bound {
  double rel = 4 * kUlp;
  double abs_x = 0;
  double floor = 4 * kDenormUlp;
  bool interpret = true;
};

// got within `b` of want; reports the first few offenders.
void check_bound(const Tensor& got, const Tensor& want, const Tensor* x, const Bound& b, const char* what) {
  REQUIRE(got.numel() == want.numel());
  const float* pg = got.data<float>();
  const float* pw = want.data<float>();
  int64_t bad = 0;
  std::ostringstream os;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = pg[i], w = pw[i];
    if (std::isnan(g) && std::isnan(w)) continue;
    if (g == w) continue;  // infinities, exact results
    double xv = x && x->numel() == got.numel() ? std::fabs(double(x->data<float>()[i])) : 0;
    double err = std::fabs(g - w);
    if (err <= b.rel * std::fabs(w) + b.abs_x * xv + b.floor) continue;
    if (bad++ < 5) os << " [" << i << "] got " << g << " want " << w << " (x " << xv << ")";
    if (std::isnan(err) && bad <= 5) os << " (nan)";
  }
  INFO(what, ": ", bad, " of ", got.numel(), " elements out of bounds:", os.str());
  CHECK(bad == 0);
}

struct Checked {
  int kernels = 0;
  int64_t compile_us = 0;
  double max_abs_out = 0;  ///< the largest finite |output| (static run)
};

// Lowers every Pointwise group of f, compiles it, runs it serially and on the pool and
// compares with the static run and (per `bound`) the interpreter.
Checked check_pointwise(LlvmBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs,
                        const Bound& bound) {
  std::vector<Tensor> values = test::run_all_static(f, inputs, test::pool());
  const Tensor* x0 = nullptr;
  if (!f.graph.inputs().empty()) x0 = &values[size_t(f.graph.inputs()[0])];
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
    std::vector<Tensor>& serial = runs.serial;
    std::vector<Tensor>& pooled = runs.pooled;
    std::vector<Tensor>& interp = runs.interp;
    std::vector<ValueId>& outs = runs.outs;
    size_t o = 0;
    for (size_t i = 0; i < spec->buffers.size(); ++i) {
      if (!spec->buffers[i].output) continue;
      const Tensor& want = values[size_t(outs[o++])];
      for (int64_t e = 0; e < want.numel(); ++e) {
        double w = std::fabs(double(want.data<float>()[e]));
        if (std::isfinite(w)) c.max_abs_out = std::max(c.max_abs_out, w);
      }
      Tensor got = serial[i].reshaped(want.shape());
      FUSOR_CHECK_CLOSE(pooled[i].reshaped(want.shape()), got, 0, 0);  // the split changes nothing
      FUSOR_CHECK_CLOSE(got, want, kStaticRel, 4 * kDenormUlp);
      if (bound.interpret) check_bound(serial[i], interp[i], x0, bound, "vs interpreter");
    }
  }
  return c;
}

std::string with(std::string text, const std::string& key, const std::string& value) {
  for (size_t p; (p = text.find(key)) != std::string::npos;) text.replace(p, key.size(), value);
  return text;
}

// A graph "y = <op>(x)" over f32[n] (op text such as `Gelu(x) {approximate="tanh"}`).
std::string unary_graph(const std::string& op, int64_t n) {
  return with("graph g\ninput x: f32[@N@]\ny = " + op + "\noutput y\n", "@N@", std::to_string(n));
}

}  // namespace

TEST_SUITE("llvm/pointwise") {
  TEST_CASE("outputs of 32 MiB and more are streamed and compute what the plain path does") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    // Rows of 2049 floats: a row segment's outputs are 32-byte aligned only in every eighth
    // row, so the streaming path and the plain one both run, and the task chunks (multiples
    // of 64 elements) cut rows into segments shorter than a block (Note [Streaming stores]).
    // A group with two outputs, each at the threshold on its own.
    const char* text = R"(graph g
input x: f32[@R@, 2049]
input y: f32[2049]
a = Add(x, y)
s = Mul(a, x)
t = Sub(x, y)
u = Relu(t)
output s
output u
)";
    for (int64_t rows : {int64_t(4099), int64_t(17)}) {
      CAPTURE(rows);
      FusedGraph f = test::fuse_text(with(text, "@R@", std::to_string(rows)), {});
      const bool big = rows * 2049 * 4 >= kStreamingStoreBytes;
      int streamed = 0;
      for (const FusionGroup& grp : f.groups) {
        std::string why;
        std::optional<KernelSpec> spec = lower_group(f, grp, &why);
        REQUIRE(spec);
        const bool streams = pointwise_streams_stores(*spec);
        streamed += streams;
        CHECK((emit_pointwise_ir(*spec, "k").find("!nontemporal") != std::string::npos) == streams);
      }
      CHECK(streamed == (big ? int(f.groups.size()) : 0));
      Checked c = check_pointwise(*be, f, {{"x", test::randn({rows, 2049}, 1)}, {"y", test::randn({2049}, 2)}},
                                  Bound{4 * kUlp, 0, 4 * kDenormUlp, rows < 100});
      CHECK(c.kernels >= 1);
    }
    // Not streamed: a bool output (only f32 runs are), a body bound by its tanh.
    FusedGraph t = test::fuse_text(R"(graph g
input x: f32[4099, 2049]
input y: f32[2049]
z = Greater(x, y)
a = Add(x, y)
h = Tanh(a)
output z
output h
)",
                                   {});
    for (const FusionGroup& grp : t.groups) {
      std::string why;
      std::optional<KernelSpec> spec = lower_group(t, grp, &why);
      if (spec && spec->kind == KernelKind::Pointwise) CHECK_FALSE(pointwise_streams_stores(*spec));
    }
  }

  TEST_CASE("the hot loop is vectorized") {
    LlvmBackend* be0 = test::llvm_backend_or_skip();
    if (!be0) return;
    test::TempDir dir("llvm-pointwise");
    LlvmBackend::Options options;
    options.dump_dir = dir.path().string();
    std::unique_ptr<LlvmBackend> be = make_llvm_backend(options);
    for (const char* op : {"Exp(x)", "Gelu(x)", "Gelu(x) {approximate=\"tanh\"}", "Erf(x)", "Relu(x)"}) {
      const std::string op_text = op;
      CAPTURE(op_text);
      FusedGraph f = test::fuse_text(unary_graph(op, 4096), {});
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
      REQUIRE(spec);
      std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
      const std::string base = dir.file(k->symbol);
      std::ifstream s(base + ".s"), sp(base + ".spec"), ll(base + ".ll");
      REQUIRE(s.good());
      CHECK(sp.good());
      CHECK(ll.good());
      std::stringstream ss;
      ss << s.rdbuf();
      const std::string assembly = ss.str();
      INFO(be->target_description());
      // A packed single-precision instruction on a 256- or 512-bit register (vaddps,
      // vfmadd213ps, vmovups, ...): the loop vectorizer took the inner loop.
      bool packed = false;
      std::istringstream lines(assembly);
      for (std::string l; !packed && std::getline(lines, l);)
        packed = (l.find("zmm") != std::string::npos || l.find("ymm") != std::string::npos) &&
                 l.find("ps\t") != std::string::npos;
      CHECK(packed);
      // No libm call for the approximations (pow is the only documented one).
      CHECK(assembly.find("call") == std::string::npos);
    }
  }

  TEST_CASE("declined specs say why and compile throws Unsupported") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(R"(graph g
input x: f16[4, 8]
input w: f16[8, 3]
input i: i32[4, 8]
y = MatMul(x, w)
j = Add(i, i)
output y
output j
)",
                                   {});
    int declined = 0;
    for (const FusionGroup& grp : f.groups) {
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, grp, &why);
      if (!spec) continue;
      std::string reason;
      CHECK_FALSE(be->supports(*spec, &reason));
      CHECK_FALSE(reason.empty());
      std::string msg;
      CHECK(test::error_of([&] { be->compile(*spec); }, &msg) == ErrorCode::Unsupported);
      CHECK(msg.find(reason) != std::string::npos);
      ++declined;
    }
    CHECK(declined == 2);
  }

  TEST_CASE("equal specs compile to distinct live kernels") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(unary_graph("Tanh(x)", 100), {});
    std::string why;
    KernelSpec spec = *lower_group(f, f.groups.back(), &why);
    auto a = be->compile(spec), b = be->compile(spec);
    CHECK(a->symbol == b->symbol);  // one name per spec: the disk store reloads it by name
    CHECK(a->code.get() != b->code.get());
    Tensor x = test::randn({100}, 1), ya = Tensor::zeros(DType::F32, Shape{100}), yb = Tensor::zeros(DType::F32, Shape{100});
    void* pa[] = {x.raw(), ya.raw()};
    void* pb[] = {x.raw(), yb.raw()};
    a->run(pa, 0, spec.tasks);
    a.reset();  // b's code stays
    b->run(pb, 0, spec.tasks);
    FUSOR_CHECK_CLOSE(ya, yb, 0, 0);
  }

  TEST_CASE("bandwidth of large kernels") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const int64_t n = int64_t(1) << 24;
    ThreadPool threads(0);
    const char* graphs[][2] = {
        {"add", "graph g\ninput x: f32[@N@]\ninput y: f32[@N@]\no = Add(x, y)\noutput o\n"},
        {"mul/add/tanh/mul/add", R"(graph g
input x: f32[@N@]
input y: f32[@N@]
const a: f32[] = [0.5]
const b: f32[] = [1.5]
m = Mul(x, a)
s = Add(m, y)
t = Tanh(s)
u = Mul(t, b)
o = Add(u, x)
output o
)"}};
    Tensor x = test::randn({n}, 1), y = test::randn({n}, 2);
    for (auto& [name, text] : graphs) {
      const std::string name_text = name;
      CAPTURE(name_text);
      FusedGraph f = test::fuse_text(with(text, "@N@", std::to_string(n)), {});
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
      REQUIRE(spec);
      REQUIRE(spec->kind == KernelKind::Pointwise);
      std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
      std::vector<Tensor> bufs;
      std::vector<void*> ptrs;
      for (const BufferSpec& b : spec->buffers) {
        bufs.push_back(b.output ? Tensor::zeros(DType::F32, Shape{n}) : (b.name == "x" ? x : y));
        ptrs.push_back(bufs.back().raw());
      }
      const double bytes = double(spec->buffers.size()) * double(n) * 4;
      auto best_of = [&](auto&& run) {
        double best = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
          auto t0 = std::chrono::steady_clock::now();
          run();
          best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
      };
      double serial = best_of([&] { k->run(ptrs.data(), 0, spec->tasks); });
      double pooled = best_of([&] {
        threads.parallel_for(spec->tasks, 1, [&](int64_t b, int64_t e) { k->run(ptrs.data(), b, e); });
      });
      // The same graph on the static kernels (one pass per op), for comparison.
      std::map<std::string, Tensor> in{{"x", x}, {"y", y}};
      double unfused = best_of([&] { test::run_all_static(f, in, test::pool()); });
      MESSAGE(name_text << " over " << n << " floats (" << spec->tasks << " tasks, compile " << k->compile_us
                   << " us): serial " << bytes / serial / 1e9 << " GB/s, " << threads.num_threads() << " threads "
                   << bytes / pooled / 1e9 << " GB/s (" << pooled * 1e3 << " ms); static kernels unfused (3 threads, "
                   << "allocating their outputs) " << unfused * 1e3 << " ms");
      // Correctness at this size against the static run (the interpreter is too slow here).
      std::vector<Tensor> values = test::run_all_static(f, in, test::pool());
      for (size_t i = 0; i < spec->buffers.size(); ++i)
        if (spec->buffers[i].output)
          FUSOR_CHECK_CLOSE(bufs[i], values[size_t(f.graph.find_value(spec->buffers[i].name))], kStaticRel, 0);
    }
  }
}
