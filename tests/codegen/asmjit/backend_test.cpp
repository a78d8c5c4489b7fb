// AsmjitBackend itself: what it says about its target, compiles from several threads at
// once (one JitRuntime, code added and released concurrently), and the support answers that
// need no asmjit.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/lower.h"
#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("asmjit/backend") {
  TEST_CASE("the target names its instruction set and vector width") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      const std::string t = be->target_description();
      CAPTURE(t);
      CHECK(t.find("x86-64") != std::string::npos);
      CHECK(t.find(be->vector_lanes() == 16 ? "avx512f" : "avx2") != std::string::npos);
      CHECK(t.find(std::to_string(be->vector_lanes()) + " lanes") != std::string::npos);
    }
  }

  TEST_CASE("concurrent compiles and releases from several threads") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      INFO(be->target_description());
      std::atomic<int> bad{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
          for (int rep = 0; rep < 10; ++rep) {
            const int64_t n = 1 + 37 * t + rep;
            FusedGraph f = test::fuse_text("graph g\ninput x: f32[" + std::to_string(n) +
                                               "]\nconst two: f32[] = [2.0]\ny = Mul(x, two)\nz = Tanh(y)\noutput z\n",
                                           {});
            std::string why;
            KernelSpec spec = *lower_group(f, f.groups.back(), &why);
            std::shared_ptr<const CompiledKernel> k = be->compile(spec);
            Tensor x = test::randn({n}, uint64_t(n)), out = Tensor::zeros(DType::F32, Shape{n});
            void* ptrs[] = {x.raw(), out.raw()};
            k->run(ptrs, 0, spec.tasks);
            std::vector<Tensor> ref = {x, Tensor::zeros(DType::F32, Shape{n})};
            test::interpret(spec, ref);
            std::string report;
            if (!test::allclose(out, ref[1], 3e-7, 1e-30, &report)) ++bad;
          }  // each kernel's code is released here, while other threads compile
        });
      for (std::thread& th : threads) th.join();
      CHECK(bad.load() == 0);
    }
  }

  TEST_CASE("support answers need no backend object") {
    FusedGraph f = test::fuse_text("graph g\ninput x: f32[4, 8]\ny = Softmax(x) {axis=-1}\noutput y\n", {});
    std::string why;
    KernelSpec spec = *lower_group(f, f.groups.back(), &why);
    CHECK(asmjit_supports(spec, &why));
    KernelSpec attention = spec;
    attention.kind = KernelKind::Attention;
    CHECK_FALSE(asmjit_supports(attention, &why));
    CHECK(why.find("attention") != std::string::npos);
  }

  TEST_CASE("a buffer past 2 GiB is declined with the reason (32-bit displacements)") {
    // (issue 20: a huge Conv ended in CompileFailed: InvalidImmediate; declined, it runs on
    // the static kernels, which report what they cannot allocate)
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[1, 3, 20000, 20000]
const w: f32[8, 3, 3, 3] = randn(seed=1, std=0.1)
y = Conv(x, w) {pads=[1, 1, 1, 1]}
r = Relu(y)
output r
)",
                                   {});
    int declined = 0;
    for (const FusionGroup& g : f.groups) {
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, g, &why);
      if (!spec || spec->kind != KernelKind::Contraction) continue;
      CHECK_FALSE(asmjit_supports(*spec, &why));
      CHECK(why.find("2 GiB") != std::string::npos);
      ++declined;
    }
    CHECK(declined == 1);
  }
}
