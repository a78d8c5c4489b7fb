// The asmjit backend's own pointwise checks, on every instruction set the host runs
// (AVX-512 and AVX2): the vector registers and masked tails of the emitted code, the specs
// it declines, and kernels that outlive their backend. The numerical cases every host JIT
// backend shares (size sweeps, broadcasting, views, every scalar op, special values, hand
// specs) are in tests/codegen/conformance/pointwise_test.cpp.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/lower.h"
#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;

using test::unary_graph;

TEST_SUITE("asmjit/pointwise") {
  TEST_CASE("the kernels use the vector registers of their instruction set") {
    for (AsmjitBackend* be0 : test::asmjit_backends_or_skip()) {
      test::TempDir dir("asmjit-pointwise");
      AsmjitBackend::Options options = be0->options();
      options.dump_dir = dir.path().string();
      std::unique_ptr<AsmjitBackend> be = make_asmjit_backend(options);
      const std::string reg = be->vector_lanes() == 16 ? "zmm" : "ymm";
      for (const char* op : {"Exp(x)", "Gelu(x)", "Gelu(x) {approximate=\"tanh\"}", "Erf(x)", "Relu(x)"}) {
        const std::string op_text = op;
        CAPTURE(op_text);
        FusedGraph f = test::fuse_text(unary_graph(op, 4096), {});
        std::string why;
        std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
        REQUIRE(spec);
        std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
        std::ifstream s(dir.file(k->symbol) + ".s"), sp(dir.file(k->symbol) + ".spec");
        REQUIRE(s.good());
        CHECK(sp.good());
        std::stringstream ss;
        ss << s.rdbuf();
        const std::string assembly = ss.str();
        INFO(be->target_description());
        INFO(assembly.substr(0, 4000));
        CHECK(assembly.find(reg) != std::string::npos);
        CHECK(assembly.find("vmovups") != std::string::npos);
        if (op_text != "Relu(x)") CHECK(assembly.find("vfmadd") != std::string::npos);
        CHECK(assembly.find("call") == std::string::npos);  // no libm: only Pow(x, y) calls powf
        if (be->vector_lanes() == 16) CHECK(assembly.find("{k") != std::string::npos);  // a k-masked tail
        if (be->vector_lanes() == 8) CHECK(assembly.find("vmaskmovps") != std::string::npos);
      }
    }
  }

  TEST_CASE("declined specs say why and compile throws Unsupported") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      FusedGraph f = test::fuse_text(R"(graph g
input x: f32[1, 256, 4, 4]
const w: f32[4, 256, 3, 3] = randn(seed=1, std=1)
input i: i32[4, 8]
y = Conv(x, w) {pads=[1, 1, 1, 1]}
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
        CHECK_FALSE(asmjit_supports(*spec, nullptr));
        std::string msg;
        CHECK(test::error_of([&] { be->compile(*spec); }, &msg) == ErrorCode::Unsupported);
        CHECK(msg.find(reason) != std::string::npos);
        ++declined;
      }
      CHECK(declined == 2);
    }
  }

  TEST_CASE("equal specs compile to distinct live kernels and code outlives its backend") {
    std::vector<AsmjitBackend*> backends = test::asmjit_backends_or_skip();
    if (backends.empty()) return;
    FusedGraph f = test::fuse_text(unary_graph("Tanh(x)", 100), {});
    std::string why;
    KernelSpec spec = *lower_group(f, f.groups.back(), &why);
    std::shared_ptr<const CompiledKernel> a = backends[0]->compile(spec), b = backends[0]->compile(spec), c;
    CHECK(a->symbol != b->symbol);
    const bool distinct_code = a->fn != b->fn;
    CHECK(distinct_code);
    CHECK(a->code_bytes > 0);
    {
      std::unique_ptr<AsmjitBackend> scoped = make_asmjit_backend(backends[0]->options());
      c = scoped->compile(spec);
    }  // the backend is gone; c's code is not
    Tensor x = test::randn({100}, 1), ya = Tensor::zeros(DType::F32, Shape{100}), yb = Tensor::zeros(DType::F32, Shape{100}),
           yc = Tensor::zeros(DType::F32, Shape{100});
    void* pa[] = {x.raw(), ya.raw()};
    void* pb[] = {x.raw(), yb.raw()};
    void* pc[] = {x.raw(), yc.raw()};
    a->run(pa, 0, spec.tasks);
    a.reset();  // releases a's code; b's stays
    b->run(pb, 0, spec.tasks);
    c->run(pc, 0, spec.tasks);
    FUSOR_CHECK_CLOSE(ya, yb, 0, 0);
    FUSOR_CHECK_CLOSE(ya, yc, 0, 0);
  }
}
