// The asmjit backend's own GEMM checks, on every instruction set the host runs: the
// micro-kernel is FMA on full vector registers, and convolutions whose im2col panel exceeds
// the stack budget are declined. The numerical cases every host JIT backend shares (MatMul
// and Gemm with transposes, batches, epilogues; Conv2d swept over strides, padding,
// dilation and groups) are in tests/codegen/conformance/contraction_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/lower.h"
#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/contraction_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("asmjit/gemm") {
  TEST_CASE("batched matmuls of two activations whose k is beyond the packing limit are taken") {
    // The conformance suite runs and checks this kernel ("... whose k is beyond a stack
    // panel"), where a backend that declines it is skipped: asmjit gathers B's panels in
    // place and must take it.
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      FusedGraph f = test::fuse_text(test::batched_qkt_graph(9, 2100, 19), {});
      std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
      CHECK(specs.size() == 1);
      INFO(be->target_description());
      for (const KernelSpec& spec : specs) {
        std::string why;
        CHECK_MESSAGE(be->supports(spec, &why), why);
      }
    }
  }

  TEST_CASE("constant weights are packed once, by the runtime, and a short product is split over its panels") {
    // A constant B that varies over the batch (one packed block per batch index) and one
    // shared by the batch; m = 5 rows, so the tasks come from the columns.
    const char* text = R"(graph g
input a: f32[2, 3, 5, 40]
const w: f32[2, 3, 40, 150] = randn(seed=1, std=1)
const v: f32[40, 70] = randn(seed=2, std=1)
y = MatMul(a, w)
output y
z = MatMul(a, v)
output z
)";
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      INFO(be->target_description());
      FusedGraph f = test::fuse_text(text, {});
      std::map<std::string, Tensor> inputs{{"a", test::randn({2, 3, 5, 40}, 3)}};
      test::Checked c = test::check_contractions(*be, f, inputs);
      REQUIRE(c.compiled.size() == 2);
      for (const auto& k : c.compiled) {
        REQUIRE(k->prepacks.size() == 1);
        CHECK(k->prepacks[0].width == (be->vector_lanes() == 16 ? 3 : 2) * be->vector_lanes());  // AVX-512's 8 x 3 tile
        CHECK(k->tasks >= 6);  // the 6 batches, and their panels split
      }
      // A single product of 16 rows: one block of rows, its panels split in about 16 tasks.
      FusedGraph g = test::fuse_text(test::matmul_bias_graph(1, 16, 64, 768), {});
      std::map<std::string, Tensor> in{{"a", test::randn({1, 16, 64}, 4)}};
      test::Checked d = test::check_contractions(*be, g, in);
      REQUIRE(d.compiled.size() == 1);
      CHECK(d.compiled[0]->tasks >= 12);  // 16 chunks asked, as even as 24 or 48 panels allow
    }
  }

  TEST_CASE("a full tile's costly epilogue computes its vectors side by side, and edge tiles and libm calls keep order") {
    // 13 rows (full tiles of 4 or 8 rows and an edge tile), 4 vectors and 5 columns (full
    // panels and an edge one). GELU's erf has one division per vector: the full tiles'
    // epilogue merges its copies (AVX2: two rows of two vectors; AVX-512: one row of three),
    // so four or three divisions come within a few lines; the edge epilogue's loop computes
    // one vector at a time. Sin calls libm lane
    // by lane (labels and calls), so its copies are never merged; both agree with the
    // static kernels and the interpreter.
    for (AsmjitBackend* be0 : test::asmjit_backends_or_skip()) {
      INFO(be0->target_description());
      test::TempDir dir("asmjit-epilogue");
      AsmjitBackend::Options options = be0->options();
      options.dump_dir = dir.path().string();
      std::unique_ptr<AsmjitBackend> be = make_asmjit_backend(options);
      const int64_t n = 4 * be->vector_lanes() + 5;
      for (const char* act : {"Gelu", "Sin"}) {
        INFO(act);
        std::string text = test::matmul_bias_graph(1, 13, 37, n);
        const size_t out = text.find("output y");
        REQUIRE(out != std::string::npos);
        text.replace(out, 8, std::string("z = ") + act + "(y)\noutput z");
        FusedGraph f = test::fuse_text(text, {});
        std::map<std::string, Tensor> inputs{{"a", test::randn({1, 13, 37}, 5)}};
        test::Checked c = test::check_contractions(*be, f, inputs);
        REQUIRE(c.compiled.size() == 1);
        if (std::string(act) != "Gelu") continue;
        std::ifstream s(dir.file(c.compiled[0]->symbol) + ".s");
        REQUIRE(s.good());
        std::vector<size_t> divisions;  // line numbers
        size_t line_no = 0;
        for (std::string l; std::getline(s, l); ++line_no)
          if (l.find("vdivps") != std::string::npos) divisions.push_back(line_no);
        const size_t copies = be->vector_lanes() == 16 ? 3 : 4;
        REQUIRE(divisions.size() >= copies + 1);  // the merged copies and the edge loop's
        size_t closest = std::numeric_limits<size_t>::max();  // lines spanned by the copies' divisions
        for (size_t i = 0; i + copies - 1 < divisions.size(); ++i)
          closest = std::min(closest, divisions[i + copies - 1] - divisions[i]);
        CHECK(closest <= 24);
        CHECK(divisions.back() - divisions[divisions.size() - 2] > 24);  // the edge loop's one copy
      }
    }
  }

  TEST_CASE("the micro-kernel is FMA on full vector registers and large-k convolutions are declined") {
    for (AsmjitBackend* be0 : test::asmjit_backends_or_skip()) {
      test::TempDir dir("asmjit-gemm");
      AsmjitBackend::Options options = be0->options();
      options.dump_dir = dir.path().string();
      std::unique_ptr<AsmjitBackend> be = make_asmjit_backend(options);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, 64, 64, 64), {});
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
      REQUIRE(spec);
      REQUIRE(spec->kind == KernelKind::Contraction);
      std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
      std::ifstream s(dir.file(k->symbol) + ".s");
      REQUIRE(s.good());
      std::stringstream ss;
      ss << s.rdbuf();
      const std::string reg = be->vector_lanes() == 16 ? "zmm" : "ymm";
      bool fma = false;
      std::istringstream lines(ss.str());
      for (std::string l; !fma && std::getline(lines, l);) fma = l.find("vfmadd231ps") != std::string::npos && l.find(reg) != std::string::npos;
      INFO(be->target_description());
      CHECK(fma);

      // 256 channels x 3 x 3 = 2304 im2col rows: beyond the stack budget of its panel.
      FusedGraph conv = test::fuse_text(R"(graph g
input x: f32[1, 256, 4, 4]
const w: f32[4, 256, 3, 3] = randn(seed=1, std=1)
y = Conv(x, w) {pads=[1, 1, 1, 1]}
output y
)",
                                        {});
      std::optional<KernelSpec> cs = lower_group(conv, conv.groups.back(), &why);
      REQUIRE(cs);
      std::string reason;
      CHECK_FALSE(be->supports(*cs, &reason));
      CHECK(reason.find("im2col") != std::string::npos);
      CHECK(test::error_of([&] { be->compile(*cs); }) == ErrorCode::Unsupported);
    }
  }
}
