// The llvm backend's symbolic kernels (Note [Symbolic kernels], codegen/symbolic.h): the
// groups of a small transformer block (GEMM + bias + GELU, GEMM + residual, residual +
// LayerNorm with a tanh epilogue, a pointwise chain) are lowered at a reference sequence
// length, symbolized against each other length, compiled ONCE, and run at sequence lengths
// 1 to 100 (below, at and past the tile and task sizes) and batches 1 and 3 — serially and
// split over a thread pool, which must agree exactly — against the static kernels run node
// by node at that length.
//
// Tolerances, per element |got - want| <= rel * |want| + abs: the symbolic kernel computes
// the same sums as the exact one in the same order except that its register tile may differ
// (chosen for m = 128), so the bounds are the exact suites' (contraction_test.cpp: rel 1e-5,
// abs 2e-6 * sqrt(k) per unit of the products' scale; reduction_test.cpp: layernorm rel and
// abs 1e-5; pointwise_test.cpp: 2 ulp of tanh/sigmoid, taken as rel 1e-6 abs 1e-7).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "codegen/llvm/emit_attention.h"
#include "codegen/llvm/emit_contraction.h"
#include "codegen/lower.h"
#include "codegen/symbolic.h"
#include "jit/thread_pool.h"
#include "tests/support/kernel_util.h"
#include "tests/support/llvm_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

const char* kBlock = R"(graph block
input x: f32[B, T, 40]
input r: f32[B, T, 24]
input x2: f32[B, T, 24]
const w1: f32[40, 56] = randn(seed=1, std=0.3)
const b1: f32[56] = randn(seed=2, std=0.1)
const w2: f32[56, 24] = randn(seed=3, std=0.3)
const g: f32[24] = randn(seed=4, std=1)
const beta: f32[24] = randn(seed=5, std=0.1)
h = MatMul(x, w1)
hb = Add(h, b1)
a = Gelu(hb) {approximate="none"}
o = MatMul(a, w2)
s = Add(o, r)
n = LayerNormalization(s, g, beta) {axis=-1, epsilon=1e-5}
y = Tanh(n)
p = Sigmoid(r)
q = Mul(p, x2)
output y, q
)";

std::map<std::string, Tensor> block_inputs(int64_t b, int64_t t) {
  const uint64_t seed = uint64_t(b * 1000 + t);
  return {{"x", test::randn({b, t, 40}, seed)}, {"r", test::randn({b, t, 24}, seed + 1)},
          {"x2", test::randn({b, t, 24}, seed + 2)}};
}

test::Tol tolerance(const KernelSpec& spec) {
  switch (spec.kind) {
    case KernelKind::Contraction: {
      const double abs_tol = 2e-6 * std::sqrt(double(spec.contraction.k)) * 3.0;
      return test::Tol{1e-5, abs_tol, 1e-5, abs_tol, false, true};
    }
    case KernelKind::RowReduction: return test::Tol{1e-5, 1e-5, 1e-5, 1e-5, false, true};
    default: return test::Tol{1e-6, 1e-7, 1e-6, 1e-7, false, true};
  }
}

}  // namespace

TEST_SUITE("llvm/symbolic") {
  TEST_CASE("one compile per group serves every sequence length and batch") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const std::string text = kBlock;
    std::map<uint64_t, std::shared_ptr<const CompiledKernel>> compiled;  // by symbolic spec hash
    std::set<std::string> kinds;
    for (int64_t b : {1, 3}) {
      const FusedGraph ref = test::fuse_text(text, {{"B", b}, {"T", 5}});
      for (int64_t t : {1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 100}) {
        CAPTURE(b);
        CAPTURE(t);
        const FusedGraph f = test::fuse_text(text, {{"B", b}, {"T", t}});
        REQUIRE(f.groups.size() == ref.groups.size());
        const std::map<std::string, Tensor> inputs = block_inputs(b, t);
        const std::vector<Tensor> values = test::run_all_static(f, inputs, test::pool());
        int symbolic = 0;
        for (size_t i = 0; i < f.groups.size(); ++i) {
          std::string why;
          std::optional<KernelSpec> exact = lower_group(f, f.groups[i], &why);
          std::optional<KernelSpec> other = lower_group(ref, ref.groups[i], &why);
          if (!exact || !other) continue;  // views
          INFO(exact->str());
          std::optional<SymbolicSpec> sym = symbolize(*exact, *other, &why);
          if (t == 5) {
            CHECK_FALSE(sym);  // the reference itself: nothing varies
            continue;
          }
          REQUIRE_MESSAGE(sym, why);
          REQUIRE(be->supports(sym->spec, &why));
          std::shared_ptr<const CompiledKernel>& k = compiled[sym->spec.hash()];
          if (!k) k = be->compile(sym->spec);
          REQUIRE(k->spec.same_code(sym->spec));
          ++symbolic;
          kinds.insert(kernel_kind_name(exact->kind));
          const test::Tol tol = tolerance(*exact);
          test::KernelRuns runs = test::run_kernel(*k, *exact, f, values, false, sym->extent);
          size_t o = 0;
          for (size_t j = 0; j < exact->buffers.size(); ++j) {
            if (!exact->buffers[j].output) continue;
            const Tensor& want = values[size_t(runs.outs[o++])];
            const Tensor got = runs.serial[j].reshaped(want.shape());
            FUSOR_CHECK_CLOSE(runs.pooled[j].reshaped(want.shape()), got, 0, 0);
            FUSOR_CHECK_CLOSE(got, want, tol.static_rel, tol.static_abs);
          }
        }
        if (t != 5) CHECK(symbolic == 4);  // the two GEMMs, the LayerNorm, the pointwise chain
      }
    }
    // Batch 1 and 3 fold into the same rows: four kernels for 21 shapes.
    CHECK(compiled.size() == 4);
    CHECK(kinds == std::set<std::string>{"contraction", "row_reduction", "pointwise"});
  }

  TEST_CASE("symbolic self-attention: one compile serves every length up to its scratch bound") {
    // One head of 32 (BERT's 12 heads, their merge the kernel's store: codegen/symbolic_test.cpp),
    // an additive [1, 1, T] mask: queries and keys are both T.
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const char* text = R"(graph attn
input q: f32[1, T, 32]
input k: f32[1, T, 32]
input v: f32[1, T, 32]
input mask: f32[1, 1, T]
const scale: f32[] = [0.176776695]
kt = Transpose(k) {perm=[0, 2, 1]}
s = MatMul(q, kt)
ss = Mul(s, scale)
sm = Add(ss, mask)
p = Softmax(sm) {axis=-1}
c = MatMul(p, v)
y = Tanh(c)
output y
)";
    const FusedGraph ref = test::fuse_text(text, {{"T", 5}});
    std::shared_ptr<const CompiledKernel> k;
    int runs = 0;
    for (int64_t t : {1, 2, 3, 7, 8, 9, 16, 17, 33, 100, 129, 200}) {
      CAPTURE(t);
      const FusedGraph f = test::fuse_text(text, {{"T", t}});
      REQUIRE(f.groups.size() == ref.groups.size());
      const uint64_t seed = uint64_t(t);
      const std::map<std::string, Tensor> inputs = {{"q", test::randn({1, t, 32}, seed)},
                                                    {"k", test::randn({1, t, 32}, seed + 1)},
                                                    {"v", test::randn({1, t, 32}, seed + 2)},
                                                    {"mask", test::randn({1, 1, t}, seed + 3)}};
      const std::vector<Tensor> values = test::run_all_static(f, inputs, test::pool());
      for (size_t i = 0; i < f.groups.size(); ++i) {
        std::string why;
        std::optional<KernelSpec> exact = lower_group(f, f.groups[i], &why), other = lower_group(ref, ref.groups[i], &why);
        if (!exact || !other || exact->kind != KernelKind::Attention) continue;
        INFO(exact->str());
        std::optional<SymbolicSpec> sym = symbolize(*exact, *other, &why);
        REQUIRE_MESSAGE(sym, why);
        CHECK(sym->extent == t);
        REQUIRE_MESSAGE(be->supports(sym->spec, &why), why);
        if (!k) k = be->compile(sym->spec);
        REQUIRE(k->spec.same_code(sym->spec));  // the one kernel, compiled once
        // Bounded by 1 MiB of scratch: K, V and a 16-row score block, 80 floats a key.
        CHECK(k->max_extent == attention_max_extent(sym->spec));
        CHECK(k->max_extent > 3000);
        CHECK(k->max_extent < 3300);
        CHECK(k->tasks_for(t) == (t + k->tasks_per - 1) / k->tasks_per);
        test::KernelRuns r = test::run_kernel(*k, *exact, f, values, false, sym->extent);
        size_t o = 0;
        for (size_t j = 0; j < exact->buffers.size(); ++j) {
          if (!exact->buffers[j].output) continue;
          const Tensor& want = values[size_t(r.outs[o++])];
          const Tensor got = r.serial[j].reshaped(want.shape());
          FUSOR_CHECK_CLOSE(r.pooled[j].reshaped(want.shape()), got, 0, 0);
          // attention_test.cpp's bound: 2e-5 relative, 2e-6 * sqrt(d + tk) absolute
          FUSOR_CHECK_CLOSE(got, want, 2e-5, 2e-6 * std::sqrt(double(32 + t)));
        }
        ++runs;
      }
    }
    CHECK(runs == 12);
  }

  TEST_CASE("a symbolic GEMM's task split follows the run-time rows") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const std::string text = kBlock;
    const FusedGraph a = test::fuse_text(text, {{"B", 1}, {"T", 9}});
    const FusedGraph b = test::fuse_text(text, {{"B", 1}, {"T", 300}});
    for (size_t i = 0; i < a.groups.size(); ++i) {
      std::optional<KernelSpec> sa = lower_group(a, a.groups[i], nullptr), sb = lower_group(b, b.groups[i], nullptr);
      if (!sa || sa->kind != KernelKind::Contraction) continue;
      std::string why;
      std::optional<SymbolicSpec> s9 = symbolize(*sa, *sb, &why), s300 = symbolize(*sb, *sa, &why);
      REQUIRE(s9);
      REQUIRE(s300);
      CHECK(s9->spec.same_code(s300->spec));
      CHECK(s9->extent == 9);
      CHECK(s300->extent == 300);
      std::shared_ptr<const CompiledKernel> k = be->compile(s9->spec);
      CHECK(k->tasks_for(300) > k->tasks_for(9));
      CHECK(k->tasks_for(0) == 0);
    }
  }

  TEST_CASE("a symbolic GEMM's full tiles read their rows at constant offsets, the last one through clamped rows") {
    // Note [Symbolic full tiles]: two calls of the micro-kernel, chosen by whether the tile
    // is full; an exact kernel has one. (Their results at every length: the test above.)
    const std::string text = kBlock;
    const FusedGraph a = test::fuse_text(text, {{"B", 1}, {"T", 9}});
    const FusedGraph b = test::fuse_text(text, {{"B", 1}, {"T", 300}});
    int gemms = 0;
    for (size_t i = 0; i < a.groups.size(); ++i) {
      std::optional<KernelSpec> sa = lower_group(a, a.groups[i], nullptr), sb = lower_group(b, b.groups[i], nullptr);
      if (!sa || sa->kind != KernelKind::Contraction) continue;
      ++gemms;
      std::optional<SymbolicSpec> sym = symbolize(*sa, *sb, nullptr);
      REQUIRE(sym);
      auto count = [](const std::string& ir, const std::string& what) {
        size_t n = 0;
        for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1)) ++n;
        return n;
      };
      const std::string symbolic_ir = emit_contraction_ir(sym->spec, "k", contraction_tiling(sym->spec, 16));
      const std::string exact_ir = emit_contraction_ir(*sb, "k", contraction_tiling(*sb, 16));
      CHECK(count(symbolic_ir, "label %mk.full, label %mk.edge") == 1);
      CHECK(count(symbolic_ir, "call void @k.mk(") == 2);
      CHECK(count(exact_ir, "%mk.full") == 0);
      CHECK(count(exact_ir, "call void @k.mk(") == 1);
    }
    CHECK(gemms == 2);
  }
}
