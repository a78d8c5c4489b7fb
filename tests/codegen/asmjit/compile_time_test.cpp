// Compile time of the asmjit backend per kernel kind, on every instruction set the host
// runs: BERT-layer kernels are lowered and compiled repeatedly, and the median and minimum
// microseconds per compile are printed (no timing asserts: machines differ). The kernels
// are also run once and checked against the static kernels, so a fast compile of wrong code
// does not pass. The issue's target: well under a millisecond for every kind.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/lower.h"
#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("asmjit/compile_time") {
  TEST_CASE("microseconds per compile of each kernel kind") {
    struct Case {
      const char* kind;
      const char* text;
      std::map<std::string, Tensor> inputs;
    };
    const std::vector<Case> cases = {
        {"pointwise add", "graph g\ninput x: f32[128, 768]\ninput y: f32[128, 768]\no = Add(x, y)\noutput o\n",
         {{"x", test::randn({128, 768}, 1)}, {"y", test::randn({128, 768}, 2)}}},
        {"pointwise bias+gelu(erf)", R"(graph g
input x: f32[128, 3072]
input b: f32[3072]
a = Add(x, b)
o = Gelu(a)
output o
)",
         {{"x", test::randn({128, 3072}, 1)}, {"b", test::randn({3072}, 2)}}},
        {"pointwise mul/add/tanh/mul/add", R"(graph g
input x: f32[4096]
input y: f32[4096]
const a: f32[] = [0.5]
const b: f32[] = [1.5]
m = Mul(x, a)
s = Add(m, y)
t = Tanh(s)
u = Mul(t, b)
o = Add(u, x)
output o
)",
         {{"x", test::randn({4096}, 1)}, {"y", test::randn({4096}, 2)}}},
        {"softmax scale+mask 12x128x128", R"(graph g
input s: f32[1, 12, 128, 128]
input m: f32[1, 1, 1, 128]
const scale: f32[] = [0.125]
a = Mul(s, scale)
b = Add(a, m)
o = Softmax(b) {axis=-1}
output o
)",
         {{"s", test::randn({1, 12, 128, 128}, 1, 8.0)}, {"m", test::uniform({1, 1, 1, 128}, 2, -3, 0)}}},
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
          {"b", test::randn({768}, 4)}}},
        {"reduce mean 128x768", "graph g\ninput x: f32[128, 768]\no = ReduceMean(x) {axes=[-1], keepdims=1}\noutput o\n",
         {{"x", test::randn({128, 768}, 1)}}},
        {"gemm+bias 128x768x768", R"(graph g
input x: f32[128, 768]
const w: f32[768, 768] = randn(seed=1, std=0.03)
const b: f32[768] = randn(seed=2, std=0.1)
m = MatMul(x, w)
o = Add(m, b)
output o
)",
         {{"x", test::randn({128, 768}, 1)}}},
        {"gemm+bias+gelu 128x768x3072", R"(graph g
input x: f32[128, 768]
const w: f32[768, 3072] = randn(seed=1, std=0.03)
const b: f32[3072] = randn(seed=2, std=0.1)
m = MatMul(x, w)
a = Add(m, b)
o = Gelu(a)
output o
)",
         {{"x", test::randn({128, 768}, 1)}}},
        {"batched q.kT*scale 12x128x64x128", R"(graph g
input q: f32[12, 128, 64]
input kt: f32[12, 128, 64]
const scale: f32[] = [0.125]
k = Transpose(kt) {perm=[0, 2, 1]}
s = MatMul(q, k)
o = Mul(s, scale)
output o
)",
         {{"q", test::randn({12, 128, 64}, 1)}, {"kt", test::randn({12, 128, 64}, 2)}}},
        {"conv3x3+bias+relu 64->64 56x56", R"(graph g
input x: f32[1, 64, 56, 56]
const w: f32[64, 64, 3, 3] = randn(seed=1, std=0.04)
const b: f32[64] = randn(seed=2, std=0.1)
c = Conv(x, w, b) {pads=[1, 1, 1, 1]}
o = Relu(c)
output o
)",
         {{"x", test::randn({1, 64, 56, 56}, 1)}}},
    };
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      std::ostringstream table;
      table << be->target_description() << ": compile time per kernel (median / min of 50, us; code bytes)\n";
      for (const Case& c : cases) {
        const std::string kind = c.kind;
        CAPTURE(kind);
        FusedGraph f = test::fuse_text(c.text, {});
        std::optional<KernelSpec> spec;
        for (const FusionGroup& grp : f.groups) {
          std::string why;
          if (grp.kind == GroupKind::Pointwise || grp.kind == GroupKind::Reduction || grp.kind == GroupKind::Contraction)
            spec = lower_group(f, grp, &why);
        }
        REQUIRE(spec);
        std::vector<int64_t> us;
        std::shared_ptr<const CompiledKernel> k;
        for (int rep = 0; rep < 50; ++rep) {
          k = be->compile(*spec);
          us.push_back(k->compile_us);
        }
        std::sort(us.begin(), us.end());
        table << "  " << kind << ": " << us[us.size() / 2] << " / " << us[0] << " us, " << k->code_bytes << " bytes\n";
        // The kernel is right (against the static kernels; the suites check the numerics).
        std::vector<Tensor> values = test::run_all_static(f, c.inputs, test::pool());
        test::KernelRuns runs = test::run_kernel(*k, *spec, f, values, false);
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
