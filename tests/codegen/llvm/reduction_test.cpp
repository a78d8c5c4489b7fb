// The llvm backend's own row reduction checks: the vectorized row loops, and the compile
// time and bandwidth of BERT-sized kernels. The cases every host JIT backend shares (softmax
// with scale and mask prologues, layernorm with residual prologues, ReduceSum/Mean/Max,
// malformed specs declined) are in tests/codegen/conformance/reduction_test.cpp, with the
// tolerances' reasoning.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "codegen/cpu_rules.h"
#include "codegen/llvm/emit_reduction.h"
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

using test::with;

// Whether the assembly has a packed single-precision `inst` on a 256- or 512-bit register.
bool has_packed(const std::string& assembly, const std::string& inst) {
  std::istringstream lines(assembly);
  for (std::string l; std::getline(lines, l);)
    if (l.find(inst) != std::string::npos && (l.find("zmm") != std::string::npos || l.find("ymm") != std::string::npos))
      return true;
  return false;
}

}  // namespace

TEST_SUITE("llvm/reduction") {
  TEST_CASE("the row loops are vectorized") {
    LlvmBackend* be0 = test::llvm_backend_or_skip();
    if (!be0) return;
    test::TempDir dir("llvm-reduction");
    LlvmBackend::Options options;
    options.dump_dir = dir.path().string();
    std::unique_ptr<LlvmBackend> be = make_llvm_backend(options);
    struct Case {
      const char* graph;
      std::vector<const char*> packed;  // instructions that must appear on ymm/zmm
    };
    const std::vector<Case> cases = {
        {"s = Mul(x, k)\ny = Softmax(s) {axis=-1}\n", {"vmaxps", "vaddps", "vfmadd", "vmulps"}},
        {"y = Softmax(x) {axis=-1}\n", {"vmaxps", "vaddps", "vmulps"}},
        {"s = Add(x, k)\ny = LayerNormalization(s, g, b) {axis=-1, epsilon=1e-5}\n", {"vaddps", "vsubps", "vmulps"}},
        {"y = LayerNormalization(x, g, b) {axis=-1, epsilon=1e-5}\n", {"vaddps", "vsubps", "vmulps"}},
        {"y = ReduceSum(x) {axes=[-1], keepdims=0}\n", {"vaddps"}},
        {"y = ReduceMax(x) {axes=[-1], keepdims=0}\n", {"vmaxps"}},
    };
    for (const Case& k : cases) {
      const std::string graph = k.graph;
      CAPTURE(graph);
      for (int64_t cols : {768, 20000}) {
        CAPTURE(cols);
        FusedGraph f = test::fuse_text(with("graph g\ninput x: f32[8, @C@]\ninput k: f32[@C@]\ninput g: f32[@C@]\n"
                                            "input b: f32[@C@]\n" + graph + "output y\n",
                                            {{"@C@", std::to_string(cols)}}),
                                       {});
        std::optional<KernelSpec> spec;
        for (const FusionGroup& grp : f.groups) {
          std::string why;
          if (grp.kind == GroupKind::Reduction) spec = lower_group(f, grp, &why);
        }
        REQUIRE(spec);
        std::shared_ptr<const CompiledKernel> kernel = be->compile(*spec);
        std::ifstream s(dir.file(kernel->symbol) + ".s");
        REQUIRE(s.good());
        std::stringstream ss;
        ss << s.rdbuf();
        INFO(be->target_description());
        for (const char* inst : k.packed) {
          const std::string inst_text = inst;
          CAPTURE(inst_text);
          CHECK(has_packed(ss.str(), inst));
        }
        // No libm call, every pass inlined.
        std::string call_line;
        std::istringstream lines(ss.str());
        for (std::string l; call_line.empty() && std::getline(lines, l);)
          if (l.find("call") != std::string::npos) call_line = l;
        INFO(call_line);
        CHECK(call_line.empty());
      }
    }
  }

  TEST_CASE("compile time and bandwidth of BERT-sized kernels") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    ThreadPool threads(0);
    struct Bench {
      const char* name;
      const char* text;
      std::map<std::string, Tensor> inputs;
    };
    const std::vector<Bench> benches = {
        {"residual+layernorm 128x768", R"(graph g
input x: f32[128, 768]
input r: f32[128, 768]
input g: f32[768]
input b: f32[768]
s = Add(x, r)
y = LayerNormalization(s, g, b) {axis=-1, epsilon=1e-12}
output y
)",
         {{"x", test::randn({128, 768}, 1)}, {"r", test::randn({128, 768}, 2)}, {"g", test::randn({768}, 3)},
          {"b", test::randn({768}, 4)}}},
        {"scale+mask+softmax 12x128x128", R"(graph g
input s: f32[1, 12, 128, 128]
input m: f32[1, 1, 1, 128]
const scale: f32[] = [0.125]
a = Mul(s, scale)
b = Add(a, m)
y = Softmax(b) {axis=-1}
output y
)",
         {{"s", test::randn({1, 12, 128, 128}, 1, 8.0)}, {"m", test::uniform({1, 1, 1, 128}, 2, -3, 0)}}},
    };
    for (const Bench& bench : benches) {
      const std::string name = bench.name;
      CAPTURE(name);
      FusedGraph f = test::fuse_text(bench.text, {});
      std::optional<KernelSpec> spec;
      for (const FusionGroup& grp : f.groups) {
        std::string why;
        if (grp.kind == GroupKind::Reduction) spec = lower_group(f, grp, &why);
      }
      REQUIRE(spec);
      std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
      std::vector<Tensor> bufs;
      std::vector<void*> ptrs;
      double bytes = 0;
      for (const BufferSpec& b : spec->buffers) {
        bufs.push_back(b.output ? Tensor::zeros(DType::F32, Shape{b.elements}) : bench.inputs.at(b.name).reshaped(Shape{b.elements}));
        ptrs.push_back(bufs.back().raw());
        bytes += double(b.elements) * 4;
      }
      auto best_of = [&](auto&& run) {
        double best = 1e30;
        for (int rep = 0; rep < 20; ++rep) {
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
      double unfused = best_of([&] { test::run_all_static(f, bench.inputs, test::pool()); });
      MESSAGE(name << " (" << spec->tasks << " rows, scratch " << reduction_uses_scratch(*spec) << "): compile "
                   << k->compile_us / 1000.0 << " ms; serial " << bytes / serial / 1e9 << " GB/s (" << serial * 1e6
                   << " us), " << threads.num_threads() << " threads " << bytes / pooled / 1e9 << " GB/s (" << pooled * 1e6
                   << " us); static kernels unfused " << unfused * 1e6 << " us");
      std::vector<Tensor> values = test::run_all_static(f, bench.inputs, test::pool());
      for (size_t i = 0; i < spec->buffers.size(); ++i)
        if (spec->buffers[i].output)
          FUSOR_CHECK_CLOSE(bufs[i], values[size_t(f.graph.find_value(spec->buffers[i].name))].reshaped(Shape{spec->buffers[i].elements}),
                            1e-5, 1e-5);
    }
  }
}
