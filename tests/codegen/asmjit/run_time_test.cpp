// Run time of asmjit kernels of BERT-layer sizes beside the static kernels run node by node
// (unfused, allocating their outputs), on every instruction set the host runs: best of
// several runs, serially and over all cores, printed with GB/s or GFLOP/s. No timing
// asserts (machines differ); each kernel's result is checked against the static run.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/lower.h"
#include "jit/thread_pool.h"
#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("asmjit/run_time") {
  TEST_CASE("kernels of a BERT layer beside the static kernels") {
    struct Case {
      const char* name;
      const char* text;
      std::map<std::string, Tensor> inputs;
      double flops;  ///< 0: report bandwidth instead
    };
    const std::vector<Case> cases = {
        {"pointwise mul/add/tanh/mul/add 16M", R"(graph g
input x: f32[16777216]
input y: f32[16777216]
const a: f32[] = [0.5]
const b: f32[] = [1.5]
m = Mul(x, a)
s = Add(m, y)
t = Tanh(s)
u = Mul(t, b)
o = Add(u, x)
output o
)",
         {{"x", test::randn({16777216}, 1)}, {"y", test::randn({16777216}, 2)}}, 0},
        {"softmax scale+mask 12x128x128", R"(graph g
input s: f32[1, 12, 128, 128]
input m: f32[1, 1, 1, 128]
const scale: f32[] = [0.125]
a = Mul(s, scale)
b = Add(a, m)
o = Softmax(b) {axis=-1}
output o
)",
         {{"s", test::randn({1, 12, 128, 128}, 1, 8.0)}, {"m", test::uniform({1, 1, 1, 128}, 2, -3, 0)}}, 0},
        {"residual+layernorm 128x768", R"(graph g
input x: f32[128, 768]
input r: f32[128, 768]
input g: f32[768]
input b: f32[768]
s = Add(x, r)
o = LayerNormalization(s, g, b) {axis=-1, epsilon=1e-12}
output o
)",
         {{"x", test::randn({128, 768}, 1)}, {"r", test::randn({128, 768}, 2)}, {"g", test::randn({768}, 3)},
          {"b", test::randn({768}, 4)}},
         0},
        {"gemm+bias+gelu 128x768x3072", R"(graph g
input x: f32[128, 768]
input w: f32[768, 3072]
input b: f32[3072]
m = MatMul(x, w)
a = Add(m, b)
o = Gelu(a)
output o
)",
         {{"x", test::randn({128, 768}, 1)}, {"w", test::randn({768, 3072}, 2, 0.03)}, {"b", test::randn({3072}, 3, 0.1)}},
         2.0 * 128 * 768 * 3072},
        {"batched q.kT*scale 12x128x64x128", R"(graph g
input q: f32[12, 128, 64]
input kt: f32[12, 128, 64]
const scale: f32[] = [0.125]
k = Transpose(kt) {perm=[0, 2, 1]}
s = MatMul(q, k)
o = Mul(s, scale)
output o
)",
         {{"q", test::randn({12, 128, 64}, 1)}, {"kt", test::randn({12, 128, 64}, 2)}}, 2.0 * 12 * 128 * 64 * 128},
        {"conv3x3+bias+relu 64->64 56x56", R"(graph g
input x: f32[1, 64, 56, 56]
const w: f32[64, 64, 3, 3] = randn(seed=1, std=0.04)
const b: f32[64] = randn(seed=2, std=0.1)
c = Conv(x, w, b) {pads=[1, 1, 1, 1]}
o = Relu(c)
output o
)",
         {{"x", test::randn({1, 64, 56, 56}, 1)}}, 2.0 * 64 * 56 * 56 * 64 * 9},
    };
    ThreadPool threads(0);
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      std::ostringstream table;
      table << be->target_description() << ": best of 5 (serial / " << threads.num_threads()
            << " threads; static kernels unfused)\n";
      for (const Case& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        FusedGraph f = test::fuse_text(c.text, {});
        std::optional<KernelSpec> spec;
        for (const FusionGroup& grp : f.groups) {
          std::string why;
          if (grp.kind == GroupKind::Pointwise || grp.kind == GroupKind::Reduction || grp.kind == GroupKind::Contraction)
            spec = lower_group(f, grp, &why);
        }
        REQUIRE(spec);
        std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
        std::vector<Tensor> values = test::run_all_static(f, c.inputs, test::pool());
        test::KernelRuns runs = test::run_kernel(*k, *spec, f, values, false);
        std::vector<Tensor> packed;
        std::vector<void*> ptrs = test::kernel_pointers(*k, runs.serial, packed);
        double bytes = 0;
        for (Tensor& t : runs.serial) bytes += double(t.numel()) * 4;
        auto best_of = [&](auto&& run) {
          double best = 1e30;
          for (int rep = 0; rep < 5; ++rep) {
            auto t0 = std::chrono::steady_clock::now();
            run();
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          }
          return best;
        };
        const double serial = best_of([&] { k->run(ptrs.data(), 0, k->tasks); });
        const double pooled = best_of([&] {
          threads.parallel_for(k->tasks, 1, [&](int64_t b, int64_t e) { k->run(ptrs.data(), b, e); });
        });
        const double unfused = best_of([&] { test::run_all_static(f, c.inputs, threads); });
        auto rate = [&](double s) {
          std::ostringstream os;
          if (c.flops > 0)
            os << c.flops / s / 1e9 << " GFLOP/s";
          else
            os << bytes / s / 1e9 << " GB/s";
          return os.str();
        };
        table << "  " << name << " (compile " << k->compile_us << " us): " << serial * 1e6 << " us (" << rate(serial)
              << ") / " << pooled * 1e6 << " us (" << rate(pooled) << "); static " << unfused * 1e6 << " us\n";
        size_t o = 0;
        for (size_t i = 0; i < spec->buffers.size(); ++i) {
          if (!spec->buffers[i].output) continue;
          const Tensor& want = values[size_t(runs.outs[o++])];
          FUSOR_CHECK_CLOSE(runs.serial[i].reshaped(want.shape()), want, 1e-5, 1e-4);
        }
      }
      MESSAGE(table.str());
    }
  }
}
