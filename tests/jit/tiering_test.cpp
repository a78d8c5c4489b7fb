// keep_faster (jit/tiering.h) on real plans: an LLVM plan that keeps the first tier's asmjit
// kernels computes what the graph means, although the two backends split the same group
// into different task counts.
#include <doctest/doctest.h>

#include "ir/text_format.h"
#include "jit/execute.h"
#include "jit/executor.h"
#include "jit/kernel_source.h"
#include "jit/plan.h"
#include "jit/thread_pool.h"
#include "jit/tiering.h"
#include "tests/support/planner.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// Convolutions, products, a pointwise chain and a softmax: asmjit and LLVM split some of
// them into other numbers of tasks.
const char* const kText = R"(graph g
input x: f32[1, 8, 29, 31]
input a: f32[1, 32, 1, 39]
input s: f32[3, 64]
const w: f32[16, 8, 3, 3] = randn(seed=1, std=0.2)
const b: f32[16] = randn(seed=2, std=0.1)
const flat: i64[2] = [16, 899]
const m: f32[899, 40] = randn(seed=3, std=0.05)
const w1: f32[32, 8, 1, 16] = randn(seed=4, std=0.2)
const m2: f32[64, 700] = randn(seed=5, std=0.1)
c = Conv(x, w, b) {pads=[1, 1, 1, 1]}
r = Relu(c)
f = Reshape(r, flat)
y = MatMul(f, m)
c1 = Conv(a, w1) {group=4, pads=[0, 8, 0, 7]}
y2 = MatMul(s, m2)
e = Exp(a)
t = Tanh(e)
sm = Softmax(a) {axis=-1}
output y
output c1
output y2
output t
output sm
)";

std::unique_ptr<JitBackend> backend_or_null(BackendKind kind) {
  try {
    return make_jit_backend(kind);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable && e.code() != ErrorCode::Unsupported) throw;
    MESSAGE("skipped: " << e.what());
    return nullptr;
  }
}

}  // namespace

TEST_SUITE("jit/tiering") {
  TEST_CASE("a kept first-tier kernel runs with its own task count") {
    std::unique_ptr<JitBackend> asmjit = backend_or_null(BackendKind::Asmjit), llvm = backend_or_null(BackendKind::Llvm);
    if (!asmjit || !llvm) return;
    test::Planner m;
    const Graph g = parse_graph(kText);
    const std::vector<TensorType> types{TensorType{DType::F32, Shape{1, 8, 29, 31}},
                                        TensorType{DType::F32, Shape{1, 32, 1, 39}}, TensorType{DType::F32, Shape{3, 64}}};
    auto on = [&](JitBackend& be) {
      return build_plan(g, types, m.fuser, m.constants, [&](const FusedGraph& f, size_t i) {
        return exact_kernel(be, m.kernels, f, i, Precision::Fp32);
      });
    };
    std::shared_ptr<Plan> first = on(*asmjit), final = on(*llvm);
    std::shared_ptr<Plan> reference = build_plan(g, types, m.fuser, m.constants, nullptr);  // static kernels
    int kernels_steps = 0, other_tasks = 0;
    for (const Step& st : final->steps) {
      if (!st.kernel) continue;
      ++kernels_steps;
      for (const Step& old : first->steps)
        if (old.kernel && old.buffers == st.buffers) other_tasks += old.tasks != st.tasks;
    }
    REQUIRE(kernels_steps == 6);
    // What the test is about: asmjit splits some group into another number of tasks than
    // LLVM does (more, the grouped convolution as wav2vec 2.0's position embedding, with
    // AVX-512; fewer, every contraction, on an AVX2-only Zen 1), and a kept kernel that ran
    // with the other's count would skip tasks or run past its last.
    REQUIRE(other_tasks > 0);
    // The first tier "wins" every comparison.
    const uint64_t kept = keep_faster(*first, *final, [](const Plan&, const Step& st) {
      return st.label.rfind("asmjit", 0) == 0 ? 0.0 : 1.0;
    });
    CHECK(kept == 6);
    for (const Step& st : final->steps)
      if (st.kernel) CHECK(st.label.rfind("asmjit", 0) == 0);

    const Tensor x = test::randn(Shape{1, 8, 29, 31}, 7), a = test::randn(Shape{1, 32, 1, 39}, 8),
                 sv = test::randn(Shape{3, 64}, 9);
    ArenaPool arenas;
    TensorMap got, want;
    execute_plan(*final, {&x, &a, &sv}, got, m.pool, arenas, nullptr);
    execute_plan(*reference, {&x, &a, &sv}, want, m.pool, arenas, nullptr);
    for (const char* out : {"y", "c1", "y2", "t", "sm"}) {
      INFO(out);
      FUSOR_CHECK_CLOSE(got.at(out), want.at(out), 1e-4, 1e-5);
    }
  }
}
