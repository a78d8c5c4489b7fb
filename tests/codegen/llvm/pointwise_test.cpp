// The llvm backend's own pointwise checks: streaming stores of large outputs, the
// vectorized hot loop, the specs it declines, one symbol per spec, and bandwidth (its
// results against the static kernels: kStaticRel, the conformance suite's bound). The
// numerical cases every host JIT backend shares (size sweeps, broadcasting, views, every
// scalar op, special values, outputs of 32 MiB and more) are in
// tests/codegen/conformance/pointwise_test.cpp, with the tolerances' reasoning.
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
constexpr double kStaticRel = 2 * kUlp;

using test::unary_graph;
using test::with;

}  // namespace

TEST_SUITE("llvm/pointwise") {
  TEST_CASE("outputs of 32 MiB and more are streamed") {
    // The conformance suite runs and checks these kernels ("outputs of 32 MiB and more
    // compute what small ones do"). A group with two outputs, each at the threshold on its own.
    for (int64_t rows : {int64_t(4099), int64_t(17)}) {
      CAPTURE(rows);
      FusedGraph f = test::fuse_text(test::two_output_rows_graph(rows), {});
      const bool big = rows * 2049 * 4 >= kStreamingStoreBytes;
      int streamed = 0;
      for (const FusionGroup& grp : f.groups) {
        std::string why;
        std::optional<KernelSpec> spec = lower_group(f, grp, &why);
        REQUIRE(spec);
        const bool streams = pointwise_streams_stores(*spec);
        streamed += streams;
        CHECK((emit_pointwise_ir(*spec, "k", 8).find("!nontemporal") != std::string::npos) == streams);
      }
      CHECK(streamed == (big ? int(f.groups.size()) : 0));
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

  TEST_CASE("the inner loop interleaves vectors by the length of its rows") {
    // Note [Pointwise interleaving]: 4 from 16 vectors a row, 2 from 4, else 1; a rank-1
    // space is one row. Rows of a broadcast Add do not merge with their neighbours.
    auto count = [](const std::string& text, int64_t vector_floats) {
      FusedGraph f = test::fuse_text(text, {});
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
      REQUIRE(spec);
      const std::string ir = emit_pointwise_ir(*spec, "k", vector_floats);
      const std::string key = "!\"llvm.loop.interleave.count\", i32 ";
      const size_t at = ir.find(key);
      REQUIRE(at != std::string::npos);
      return std::stoi(ir.substr(at + key.size()));
    };
    auto rows = [](int64_t n) {
      return with("graph g\ninput x: f32[9, N]\ninput b: f32[N]\ny = Add(x, b)\nz = Tanh(y)\noutput z\n",
                  {{"N", std::to_string(n)}});
    };
    CHECK(count(unary_graph("Tanh(x)", 4096), 8) == 4);
    CHECK(count(unary_graph("Tanh(x)", 4096), 16) == 4);
    CHECK(count(unary_graph("Tanh(x)", 100), 8) == 2);
    CHECK(count(rows(20), 8) == 1);
    CHECK(count(rows(50), 8) == 2);
    CHECK(count(rows(50), 16) == 1);
    CHECK(count(rows(128), 8) == 4);
    CHECK(count(rows(128), 16) == 2);
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
      FusedGraph f = test::fuse_text(with(text, {{"@N@", std::to_string(n)}}), {});
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
