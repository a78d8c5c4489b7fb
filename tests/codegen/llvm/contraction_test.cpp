// The llvm backend's own contraction checks: constant weights prepacked once, kernels
// reloaded from their objects, the specs it declines, the micro-kernel's code, its tiling
// (flat panels across output rows, Winograd F(2x2, 3x3), L2 prefetch, one panel width per
// constant B). The numerical cases every host JIT backend shares (MatMul and Gemm with
// transposes, batches, epilogues; Conv2d swept over strides, padding, dilation and groups;
// the resnet bottleneck) are in tests/codegen/conformance/contraction_test.cpp.
//
// The kernels run here are checked with test::contraction_tol (tests/support/
// contraction_util.h, which reasons it); the serial and pooled runs must agree exactly.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "codegen/llvm/emit_contraction.h"
#include "codegen/llvm/emit_tile.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "ir/text_format.h"
#include "tests/support/contraction_util.h"
#include "tests/support/llvm_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using llvm_ir::ranked_tiles;
using llvm_ir::tile_fits;
using llvm_ir::TileShape;

using test::Checked;
using test::check_contractions;
using test::dims;
using test::with;

TEST_SUITE("llvm/contraction") {
  TEST_CASE("the constant weights of a matmul are packed once across sizes around the tiles") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    // The conformance suite's matmul sweep (tests/codegen/conformance/contraction_test.cpp
    // runs and checks these kernels).
    for (const auto& s : test::kMatmulSweep) {
      const int64_t m = s[0], k = s[1], n = s[2];
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, k, n), {});
      std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
      CHECK(specs.size() == 1);
      for (const KernelSpec& spec : specs) CHECK(be->compile(spec)->prepacks.size() == 1);  // the constant weights are packed once
    }
  }

  TEST_CASE("a kernel loaded from its object computes what the compiled one does") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(test::matmul_bias_graph(2, 13, 40, 70), {});
    std::map<std::string, Tensor> inputs{{"a", test::randn({2, 13, 40}, 4)}};
    std::vector<Tensor> values = test::run_all_static(f, inputs, test::pool());
    for (const FusionGroup& grp : f.groups) {
      if (grp.kind != GroupKind::Contraction) continue;
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, grp, &why);
      REQUIRE(spec);
      std::shared_ptr<const CompiledKernel> compiled = be->compile(*spec);
      std::shared_ptr<const CompiledKernel> loaded = be->load(*spec, compiled->object);
      CHECK(loaded->tasks == compiled->tasks);
      CHECK(loaded->prepacks.size() == compiled->prepacks.size());
      test::KernelRuns a = test::run_kernel(*compiled, *spec, f, values, false);
      compiled.reset();  // the loaded code is its own
      test::KernelRuns b = test::run_kernel(*loaded, *spec, f, values, false);
      for (size_t i = 0; i < spec->buffers.size(); ++i)
        if (spec->buffers[i].output) FUSOR_CHECK_CLOSE(a.serial[i], b.serial[i], 0, 0);
    }
  }

  TEST_CASE("declined contractions say why") {
    std::string why;
    KernelSpec s;
    s.kind = KernelKind::Pointwise;
    CHECK_FALSE(contraction_supports(s, &why));
    CHECK(why.find("not a contraction") != std::string::npos);
    // Non-constant convolution weights.
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[1, 3, 5, 5]
input w: f32[4, 3, 3, 3]
y = Conv(x, w)
output y
)",
                                   {});
    for (const FusionGroup& grp : f.groups) {
      if (grp.kind != GroupKind::Contraction) continue;
      std::optional<KernelSpec> spec = lower_group(f, grp, &why);
      REQUIRE(spec);
      CHECK_FALSE(llvm_supports(*spec, &why));
      CHECK(why.find("weights that are not constant") != std::string::npos);
    }
  }

  TEST_CASE("the micro-kernel is FMA on full vector registers") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    test::TempDir dir("llvm-contraction");
    LlvmBackend::Options o;
    o.dump_dir = dir.path().string();
    std::unique_ptr<LlvmBackend> dumping = make_llvm_backend(o);
    FusedGraph f = test::fuse_text(
        test::matmul_bias_graph(1, 64, 64, 96), {});
    for (const FusionGroup& grp : f.groups) {
      if (grp.kind != GroupKind::Contraction) continue;
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, grp, &why);
      REQUIRE(spec);
      std::shared_ptr<const CompiledKernel> k = dumping->compile(*spec);
      std::ifstream in(dir.file(k->symbol) + ".s");
      REQUIRE(in.good());
      std::stringstream assembly;
      assembly << in.rdbuf();
      const bool avx512 = (be->target_description() + ",").find("+avx512f,") != std::string::npos;
      INFO(be->target_description());
      // The accumulators stay in registers: FMAs into full-width registers, no spills of
      // vector registers to the stack inside the kernel.
      CHECK(assembly.str().find(avx512 ? "%zmm" : "%ymm") != std::string::npos);
      CHECK(assembly.str().find("vfmadd231ps") != std::string::npos);
      const bool spills = assembly.str().find(avx512 ? "64-byte Spill" : "32-byte Spill") != std::string::npos;
      CHECK_FALSE(spills);
    }
  }

  TEST_CASE("a stride-1 same-size convolution runs its panels across output rows") {
    // 56 pixels a row do not fill 64-float panels; flat panels over the 3136 pixels do.
    // (8 channels: too few for Winograd, which takes the 3x3 convolutions with more.)
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[1, 8, 56, 56]
const w: f32[64, 8, 3, 3] = randn(seed=1, std=0.05)
c = Conv(x, w) {pads=[1, 1, 1, 1]}
output c
)",
                                   {});
    const FusionGroup* grp = nullptr;
    for (const FusionGroup& g : f.groups)
      if (g.kind == GroupKind::Contraction) grp = &g;
    REQUIRE(grp);
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, *grp, &why);
    REQUIRE(spec);
    for (int64_t vl : {8, 16}) {
      const ContractionTiling t = contraction_tiling(*spec, vl);
      CAPTURE(t.str());
      CHECK(t.flat);
      CHECK(t.panels == 3136 / t.nr + (3136 % t.nr != 0));
    }
    // A vertical stride keeps rows apart (pixel p's taps are no longer p plus a constant),
    // and computes what the static kernels do.
    FusedGraph sh = test::fuse_text(R"(graph g
input x: f32[1, 5, 11, 9]
const w: f32[6, 5, 3, 3] = randn(seed=1, std=0.15)
c = Conv(x, w) {pads=[1, 1, 1, 1], strides=[2, 1]}
output c
)",
                                    {});
    for (const FusionGroup& g : sh.groups) {
      if (g.kind != GroupKind::Contraction) continue;
      std::optional<KernelSpec> ss = lower_group(sh, g, &why);
      REQUIRE(ss);
      CHECK_FALSE(contraction_tiling(*ss, 16).flat);
    }
    if (LlvmBackend* be = test::llvm_backend_or_skip()) {
      Checked c = check_contractions(*be, sh, {{"x", test::randn({1, 5, 11, 9}, 3)}});
      CHECK(c.kernels == 1);
    }
    // Valid (unpadded) convolutions have narrower output rows: panels stay within a row.
    FusedGraph v = test::fuse_text(R"(graph g
input x: f32[1, 8, 20, 20]
const w: f32[8, 8, 3, 3] = randn(seed=1, std=0.05)
c = Conv(x, w)
output c
)",
                                   {});
    for (const FusionGroup& g : v.groups) {
      if (g.kind != GroupKind::Contraction) continue;
      std::optional<KernelSpec> vs = lower_group(v, g, &why);
      REQUIRE(vs);
      CHECK_FALSE(contraction_tiling(*vs, 16).flat);
    }
  }

  TEST_CASE("3x3 stride-1 convolutions with enough channels run as Winograd F(2x2, 3x3)") {
    // Each output is a different sum of the same products as the direct convolution's,
    // through the transforms' additions (Note [Winograd convolutions]); the file's
    // tolerance holds. Odd output sizes (partial tiles), no padding and asymmetric padding,
    // batches, channel counts off the tile, large channel counts over small images, a
    // residual and ReLU epilogue.
    LlvmBackend* be = test::llvm_backend_or_skip();
    for (const test::WinogradConv& v : test::kWinogradSweep) {
      CAPTURE(test::winograd_conv_str(v));
      FusedGraph f = test::fuse_text(test::winograd_conv_graph(v), {});
      for (const FusionGroup& grp : f.groups) {
        if (grp.kind != GroupKind::Contraction) continue;
        std::string why;
        std::optional<KernelSpec> spec = lower_group(f, grp, &why);
        REQUIRE(spec);
        for (int64_t vl : {8, 16}) CHECK(contraction_tiling(*spec, vl).winograd);
      }
      if (!be) continue;
      Checked c = check_contractions(*be, f, test::winograd_conv_inputs(v), 1.0, v.c * v.h * v.w < 20000);
      CHECK(c.kernels == 1);
    }
  }

  TEST_CASE("GEMMs with panels outer prefetch the next panel into L2 while they compute this one") {
    // (Note [Contraction kernels]: the task's tiles share the next panel's lines; up to 64
    // rows the prefetch within the panel goes twice as far, into L1 either way.)
    int64_t near = 0;
    for (int64_t m : {128, 65, 64, 16}) {
      CAPTURE(m);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, 768, 3072),
                                     {});
      std::optional<KernelSpec> spec = lower_group(f, f.groups[0], nullptr);
      REQUIRE(spec);
      const ContractionTiling t = contraction_tiling(*spec, 16);
      REQUIRE(t.prepack);
      REQUIRE(t.panel_outer);
      CHECK(t.next_panel);
      CHECK_FALSE(t.prefetch_to_l2);
      if (m > 64) near = t.prefetch_floats;
      CHECK(t.prefetch_floats == (m > 64 ? near : 2 * near));
      const std::string ir = emit_contraction_ir(*spec, "k", t);
      CHECK(ir.find(", ptr %pf)") != std::string::npos);
      CHECK(ir.find("getelementptr i8, ptr %pf") != std::string::npos);
    }
  }

  TEST_CASE("the next panel's prefetch takes several steps per iteration and runs the rest apart") {
    // emit_microkernel: `unroll` steps per iteration and the steps past the last whole one
    // in a second loop, or several lines per step where a tile's share outnumbers its steps.
    // Shapes whose step count leaves a rest (101 steps by 5, 37 by 4) and two lines a step
    // (16 rows: two tiles share a panel of 150 lines over 50 steps); each kernel against the
    // static one.
    LlvmBackend* be = test::llvm_backend_or_skip();
    for (const auto& s : std::vector<std::array<int64_t, 3>>{{128, 101, 200}, {200, 37, 250}, {16, 50, 100}, {70, 9, 90}}) {
      const int64_t m = s[0], k = s[1], n = s[2];
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, k, n), {});
      std::optional<KernelSpec> spec = lower_group(f, f.groups[0], nullptr);
      REQUIRE(spec);
      const ContractionTiling t = contraction_tiling(*spec, 16);
      CHECK(t.next_panel);
      const std::string ir = emit_contraction_ir(*spec, "k", t);
      if (k == 101 || k == 37) CHECK(ir.find("\nkt:") != std::string::npos);  // a rest of steps
      if (!be) continue;
      Checked c = check_contractions(*be, f, {{"a", test::randn({1, m, k}, 5)}});
      CHECK(c.kernels == 1);
    }
  }

  TEST_CASE("a residual the epilogue reads is prefetched for each tile before its k steps") {
    // Note [Epilogue prefetch]: a 1x1 conv + BN + residual + ReLU; each tile fetches its rows
    // of the residual (every 16 floats of its columns and the last). The same conv adding its
    // own result instead reads nothing per element: no such prefetch.
    auto graph = [](const char* other) {
      return std::string(R"(graph g
input x: f32[1, 16, 9, 11]
input r: f32[1, 40, 9, 11]
const w: f32[40, 16, 1, 1] = randn(seed=1, std=0.25)
const bias: f32[40] = randn(seed=2, std=0.1)
c = Conv(x, w, bias)
a = Add(c, )") + other + ")\ny = Relu(a)\noutput y\n";
    };
    auto prefetches = [](const std::string& ir) {
      size_t n = 0;
      for (size_t at = ir.find("call void @llvm.prefetch.p0("); at != std::string::npos;
           at = ir.find("call void @llvm.prefetch.p0(", at + 1))
        ++n;
      return n;
    };
    for (int64_t vl : {8, 16}) {
      CAPTURE(vl);
      FusedGraph with = test::fuse_text(graph("r"), {}), without = test::fuse_text(graph("c"), {});
      std::optional<KernelSpec> s1 = lower_group(with, with.groups[0], nullptr);
      std::optional<KernelSpec> s2 = lower_group(without, without.groups[0], nullptr);
      REQUIRE(s1);
      REQUIRE(s2);
      const ContractionTiling t1 = contraction_tiling(*s1, vl), t2 = contraction_tiling(*s2, vl);
      REQUIRE(t1.mr == t2.mr);
      REQUIRE(t1.nv == t2.nv);
      const int64_t nr = t1.nv * vl;
      CHECK(prefetches(emit_contraction_ir(*s1, "k", t1)) - prefetches(emit_contraction_ir(*s2, "k", t2)) ==
            size_t(t1.mr * ((nr + 30) / 16)));
    }
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(graph("r"), {});
    Checked c = check_contractions(*be, f, {{"x", test::randn({1, 16, 9, 11}, 3)}, {"r", test::randn({1, 40, 9, 11}, 4)}});
    CHECK(c.kernels == 1);
  }

  TEST_CASE("a tile leaves registers for a step's B vectors and a broadcast") {
    // tile_fits: AVX2's 3 x 4 (12 accumulators + 4 + 1 = 17 of 16 registers) spilled an
    // accumulator on every k step; 4 x 3 (16) and 6 x 2 (15) fit. AVX-512's 24 accumulators
    // leave room for any width.
    CHECK_FALSE(tile_fits(8, 3, 4));
    CHECK(tile_fits(8, 2, 4));
    CHECK(tile_fits(8, 4, 3));
    CHECK(tile_fits(8, 6, 2));
    CHECK(tile_fits(8, 8, 1));
    CHECK(tile_fits(16, 6, 4));
    CHECK(tile_fits(16, 8, 3));
    CHECK(tile_fits(16, 12, 2));
    for (int64_t vl : {8, 16})
      for (int64_t m : {1, 7, 16, 61, 128, 384})
        for (const TileShape& t : ranked_tiles(vl, m, [](int64_t nr) { return (100 + nr - 1) / nr; })) {
          CAPTURE(vl);
          CAPTURE(m);
          CHECK(t.mr * t.nv + t.nv + 1 <= (vl == 16 ? 32 : 16));
        }
  }

  TEST_CASE("a full tile's epilogue computes its vectors side by side") {
    // Note [Epilogue interleaving]: one copy of the body per vector of a tile row, the
    // vectorizer asked for one vector's width; edge tiles keep the plain loop. 61 x 50 has
    // full and edge tiles both ways.
    const std::string text = R"(graph g
input a: f32[61, 40]
const w: f32[40, 50] = randn(seed=1, std=0.2)
const b: f32[50] = randn(seed=2, std=0.1)
p = MatMul(a, w)
q = Add(p, b)
y = Gelu(q)
output y
)";
    FusedGraph f = test::fuse_text(text, {});
    std::optional<KernelSpec> spec = lower_group(f, f.groups[0], nullptr);
    REQUIRE(spec);
    for (int64_t vl : {8, 16}) {
      CAPTURE(vl);
      const ContractionTiling t = contraction_tiling(*spec, vl);
      const std::string ir = emit_contraction_ir(*spec, "k", t);
      const bool interleaved = ir.find("define internal void @k.epi.full(") != std::string::npos;
      CHECK(interleaved == (t.nv > 1));
      if (!interleaved) continue;
      CHECK(ir.find("!\"llvm.loop.vectorize.width\", i32 " + std::to_string(vl) + "}") != std::string::npos);
      // The copies' first instructions come one after another (v0_, v1_, ...), not each
      // copy's whole body in turn.
      const size_t first = ir.find("%v0_0 = "), second = ir.find("%v1_0 = "), next = ir.find("%v0_1 = ");
      REQUIRE(first != std::string::npos);
      REQUIRE(second != std::string::npos);
      CHECK(second < next);
      CHECK(ir.find("call void @k.epi.full(") != std::string::npos);
      CHECK(ir.find("call void @k.epi(") != std::string::npos);
    }
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    Checked c = check_contractions(*be, f, {{"a", test::randn({61, 40}, 3)}});
    CHECK(c.kernels == 1);
  }

  TEST_CASE("a constant B keeps one panel width for every m, so its packed copy is shared") {
    // The BERT FFN-up GEMM (k 768, n 3072) at lengths whose best free tile widths differ.
    std::set<int64_t> widths, rows;
    for (int64_t m : {1, 16, 37, 61, 128, 174, 384, 500}) {
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, 768, 3072),
                                     {});
      std::optional<KernelSpec> spec = lower_group(f, f.groups[0], nullptr);
      REQUIRE(spec);
      for (int64_t vl : {8, 16}) {
        const ContractionTiling t = contraction_tiling(*spec, vl);
        CHECK(t.prepack);
        widths.insert(t.nr * 100 + vl);
        rows.insert(t.mr);
      }
    }
    CHECK(widths.size() == 2);  // one width per vector length
    CHECK(rows.size() > 2);     // while the tile's rows still follow m
  }
}
