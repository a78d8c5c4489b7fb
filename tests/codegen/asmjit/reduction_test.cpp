// The asmjit backend's own row reduction checks, on every instruction set the host runs:
// the vector registers of the emitted row loops. The cases every host JIT backend shares
// (softmax with scale and mask prologues, layernorm with residual prologues,
// ReduceSum/Mean/Max, transposed views, malformed specs declined) are in
// tests/codegen/conformance/reduction_test.cpp.
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

TEST_SUITE("asmjit/reduction") {
  TEST_CASE("the row loops use the vector registers of their instruction set") {
    for (AsmjitBackend* be0 : test::asmjit_backends_or_skip()) {
      test::TempDir dir("asmjit-reduction");
      AsmjitBackend::Options options = be0->options();
      options.dump_dir = dir.path().string();
      std::unique_ptr<AsmjitBackend> be = make_asmjit_backend(options);
      const std::string reg = be->vector_lanes() == 16 ? "zmm" : "ymm";
      struct Case {
        const char* graph;
        std::vector<const char*> insts;
      };
      const std::vector<Case> cases = {
          {"s = Mul(x, k)\ny = Softmax(s) {axis=-1}\n", {"vmaxps", "vaddps", "vfmadd", "vmulps"}},
          {"s = Add(x, k)\ny = LayerNormalization(s, g, b) {axis=-1, epsilon=1e-5}\n", {"vaddps", "vsubps", "vmulps", "vsqrtsd"}},
          {"y = ReduceSum(x) {axes=[-1], keepdims=0}\n", {"vaddps", "vaddsd"}},
          {"y = ReduceMax(x) {axes=[-1], keepdims=0}\n", {"vmaxps"}},
      };
      for (const Case& k : cases) {
        const std::string graph = k.graph;
        CAPTURE(graph);
        FusedGraph f = test::fuse_text("graph g\ninput x: f32[8, 768]\ninput k: f32[768]\ninput g: f32[768]\n"
                                       "input b: f32[768]\n" + graph + "output y\n",
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
        CHECK(ss.str().find(reg) != std::string::npos);
        for (const char* inst : k.insts) {
          const std::string inst_text = inst;
          CAPTURE(inst_text);
          CHECK(ss.str().find(inst_text) != std::string::npos);
        }
        CHECK(ss.str().find("call") == std::string::npos);
      }
    }
  }
}
