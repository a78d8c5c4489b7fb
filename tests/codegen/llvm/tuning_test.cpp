// Tuned tilings (Note [Tuned tilings], codegen/llvm/emit_contraction.cpp): the choices a
// tuned compile may make, that every candidate computes the same floats as the rules'
// tiling, that a choice survives the kernel's object (the persistent store), and that a
// stored choice that does not read is refused. Which candidate wins is the machine's and
// is not asserted.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/llvm/emit_attention.h"
#include "codegen/llvm/emit_contraction.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "codegen/precision.h"
#include "tests/support/contraction_util.h"
#include "tests/support/llvm_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// The floats per vector of the shared backend's target.
int64_t vector_floats(const LlvmBackend& be) {
  return (be.target_description() + ",").find("+avx512f,") != std::string::npos ? 16 : 8;
}

// A graph, its inputs, and its one contraction's spec.
struct Case {
  std::string name;
  FusedGraph f;
  std::map<std::string, Tensor> inputs;
  KernelSpec spec;
};

Case make_case(const std::string& name, const std::string& text, std::map<std::string, Tensor> inputs) {
  Case c{name, test::fuse_text(text, {}), std::move(inputs), {}};
  std::vector<KernelSpec> specs = test::lower_groups(c.f, GroupKind::Contraction);
  REQUIRE(specs.size() == 1);
  c.spec = specs[0];
  return c;
}

// GEMMs with a prepacked B around the tiles and the task split (both loop orders), a
// product of two activations (panels packed by the kernel), and convolutions by rows
// (direct, flat, strided, grouped).
std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& s : {std::array<int64_t, 3>{64, 128, 65}, {130, 96, 200}, {9, 300, 129}, {200, 64, 40}}) {
    out.push_back(make_case("matmul " + test::dims({s[0], s[1], s[2]}), test::matmul_bias_graph(1, s[0], s[1], s[2]),
                            {{"a", test::randn({1, s[0], s[1]}, 3)}}));
  }
  out.push_back(make_case("q kt 37x24x50", test::batched_qkt_graph(37, 24, 50),
                          {{"q", test::randn({2, 3, 37, 24}, 4)}, {"kt", test::randn({2, 3, 50, 24}, 5)}}));
  for (const test::ConvCase& v : {test::ConvCase{2, 8, 11, 13, 17, 3, 3, 1, 1, 1, 1},
                                  test::ConvCase{1, 6, 15, 17, 12, 3, 3, 2, 2, 1, 1},
                                  test::ConvCase{1, 32, 28, 28, 40, 3, 3, 1, 2, 1, 1},
                                  test::ConvCase{1, 8, 30, 30, 24, 5, 5, 1, 1, 1, 2}})
    out.push_back(make_case("conv " + test::conv_case_str(v), test::conv_case_graph(v),
                            {{"x", test::randn({v.n, v.c, v.h, v.w}, 6)}}));
  return out;
}

// Every output of a kernel run serially on the case's values.
std::vector<Tensor> outputs(const CompiledKernel& k, const Case& c, const std::vector<Tensor>& values) {
  test::KernelRuns runs = test::run_kernel(k, c.spec, c.f, values, false);
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.spec.buffers.size(); ++i)
    if (c.spec.buffers[i].output) out.push_back(runs.serial[i]);
  return out;
}

// Bit-for-bit equality of two runs' outputs (the tiling never changes the order over k).
void check_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) FUSOR_CHECK_CLOSE(a[i], b[i], 0, 0);
}

}  // namespace

TEST_SUITE("llvm/tuning") {
  TEST_CASE("a tiling choice reads back what it wrote, and nothing malformed") {
    for (const TilingChoice& c : {TilingChoice{}, TilingChoice{.mr = 6, .nv = 4}, TilingChoice{.panel_outer = 0},
                                  TilingChoice{.tiles_per_chunk = 3}, TilingChoice{.panels_per_chunk = 12},
                                  TilingChoice{.prefetch = 0}, TilingChoice{.prefetch = 2048, .prefetch_l2 = 1},
                                  TilingChoice{.mr = 5, .nv = 4, .pv_mr = 8, .pv_nv = 2}, TilingChoice{.pv_mr = 3, .pv_nv = 1},
                                  TilingChoice{.mr = 14, .nv = 1, .panel_outer = 1, .tiles_per_chunk = 2, .panels_per_chunk = 9,
                                               .prefetch = 512, .prefetch_l2 = 0}}) {
      CAPTURE(c.str());
      std::optional<TilingChoice> back = TilingChoice::parse(c.str());
      REQUIRE(back);
      CHECK(*back == c);
    }
    CHECK(TilingChoice{}.str() == "rules");
    for (const char* bad : {"", " ", "mr=6", "nv=2", "mr=6 nv=", "mr=x nv=2", "outer=2", "tiles=0", "panels=-1",
                            "mr=6 nv=2 mr=7", "speed=3", "l2=2", "prefetch=", "prefetch=1 prefetch=2", "pv_mr=3", "pv_nv=2 mr=1 nv=1", "mr=6  nv=2", "mr=6 nv=2 ", "tiles=9999999999",
                            "rules tiles=2"}) {
      CAPTURE(bad);
      CHECK_FALSE(TilingChoice::parse(bad));
    }
  }

  TEST_CASE("the candidates start with the rules' and differ from each other") {
    int amx_cases = 0;
    for (int64_t vl : {8, 16}) {
      for (const Case& c : cases()) {
        CAPTURE(vl);
        CAPTURE(c.name);
        const std::vector<TilingChoice> cands = tiling_candidates(c.spec, vl);
        REQUIRE(!cands.empty());
        CHECK(cands[0].empty());
        const ContractionTiling rules = contraction_tiling(c.spec, vl);
        std::set<std::string> seen;
        for (const TilingChoice& choice : cands) {
          const ContractionTiling t = contraction_tiling(c.spec, vl, choice);
          CAPTURE(t.str());
          CHECK(seen.insert(t.str()).second);  // no two candidates are one kernel
          CHECK(t.mr * t.nv <= (vl == 16 ? 24 : 12));
          CHECK(t.tasks() >= 1);
          // A B packed for every shape keeps its width, so the packed copy is still shared.
          if (rules.prepack && !rules.conv_rows) CHECK(t.nr == rules.nr);
        }
        if (c.name.rfind("matmul 130", 0) == 0) CHECK(cands.size() >= 3);
      }
    }
    // On AMX (Note [AMX contractions]) a bf16 GEMM whose k fills whole steps keeps its 32 x 32
    // tile (16 rows for m <= 16) in every candidate; only the blocking and prefetch vary.
    for (const Case& c : cases()) {
      KernelSpec spec = c.spec;
      if (!mark_bf16(spec) || !amx_applies(spec)) continue;
      CAPTURE(c.name);
      const std::vector<TilingChoice> cands = tiling_candidates(spec, 16, kDefaultL2Bytes, true);
      CHECK(cands.size() >= 2);
      for (const TilingChoice& choice : cands) {
        const ContractionTiling t = contraction_tiling(spec, 16, choice, kDefaultL2Bytes, true);
        CAPTURE(t.str());
        CHECK(t.amx);
        CHECK(t.nr == 32);
        CHECK((t.mr == 16 || t.mr == 32));
        CHECK_FALSE(contraction_tiling(spec, 16, choice, kDefaultL2Bytes, false).amx);
      }
      ++amx_cases;
    }
    CHECK(amx_cases >= 1);
  }

  TEST_CASE("an f32 task with panels outer takes no more rows of A than fill half the core's L2, beside two panels") {
    // 384 x 3072 by a constant 3072 x 768: panels outer (n >= m); a tile row of A is 12 KiB,
    // a panel 3072 x 48 floats (576 KiB). Where two panels fit the L2 (2 MiB, 8 MiB), the
    // task's rows leave room for them; where they do not (1 MiB), half the L2 bounds the rows.
    FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, 384, 3072, 768), {});
    const KernelSpec spec = test::lower_groups(f, GroupKind::Contraction).at(0);
    for (int64_t l2 : {int64_t(256) << 10, int64_t(1) << 20, int64_t(2) << 20, int64_t(8) << 20}) {
      CAPTURE(l2);
      const ContractionTiling t = contraction_tiling(spec, 16, {}, l2);
      CAPTURE(t.str());
      REQUIRE(t.panel_outer);
      const int64_t a_bytes = t.tiles_per_chunk * t.mr * 3072 * 4, panel_bytes = t.nr * 3072 * 4;
      CHECK((a_bytes <= l2 / 2 || t.tiles_per_chunk == 1));
      if (2 * panel_bytes < l2) CHECK(a_bytes + 2 * panel_bytes <= l2);
      if (l2 == (int64_t(2) << 20)) CHECK(t.tiles_per_chunk * t.mr == 64);  // 80 rows before: 2.16 MB with the panels
      if (l2 == (int64_t(1) << 20)) CHECK(t.tiles_per_chunk * t.mr == 40);  // (half of 1 MiB: 5 tiles of 8)
      if (l2 == (int64_t(8) << 20)) CHECK(t.tiles_per_chunk * t.mr >= 192);  // bound only by the split into 16 tasks
    }
    CHECK(host_l2_bytes() >= (int64_t(256) << 10));
    CHECK(host_l2_bytes() <= (int64_t(8) << 20));
  }

  TEST_CASE("symbolic kernels and Winograd's convolutions keep the rules' tiling") {
    FusedGraph f = test::fuse_text(test::winograd_conv_graph(test::kWinogradSweep[0]), {});
    std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
    REQUIRE(specs.size() == 1);
    REQUIRE(contraction_tiling(specs[0], 16).winograd);
    CHECK(tiling_candidates(specs[0], 16).size() == 1);
    KernelSpec gemm = cases()[1].spec;
    gemm.symbolic = true;
    CHECK(tiling_candidates(gemm, 16).size() == 1);
  }

  TEST_CASE("every candidate tiling computes the rules' floats, bit for bit, in f32 and bf16") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const int64_t vl = vector_floats(*be);
    int compared = 0;
    for (bool bf16 : {false, true}) {
      if (bf16 && !be->computes_bf16()) {
        MESSAGE("bf16 part skipped: this CPU has no AVX512-BF16 (" << host_bf16().str() << ")");
        continue;
      }
      for (Case& c : cases()) {
        CAPTURE(c.name);
        CAPTURE(bf16);
        if (bf16) {
          std::string why;
          if (!mark_bf16(c.spec) || !be->supports(c.spec, &why)) continue;  // stays f32 (codegen/precision.h)
        }
        const std::vector<Tensor> values = test::run_all_static(c.f, c.inputs, test::pool());
        const std::vector<Tensor> want = outputs(*be->compile_tiling(c.spec, {}), c, values);
        for (const TilingChoice& choice : tiling_candidates(c.spec, vl, host_l2_bytes(), be->computes_amx())) {
          CAPTURE(choice.str());
          std::shared_ptr<const CompiledKernel> k = be->compile_tiling(c.spec, choice);
          CHECK(k->tasks == contraction_tiling(c.spec, vl, choice, host_l2_bytes(), be->computes_amx()).tasks());
          check_same(outputs(*k, c, values), want);
          ++compared;
        }
      }
    }
    CHECK(compared >= 30);
  }

  TEST_CASE("every candidate tiling of attention computes the rules' floats, and survives its object") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const int64_t vl = vector_floats(*be);
    int compared = 0;
    // Keys around the tile widths, a head dim off the vectors, and BERT's 128 x 64.
    for (const auto& s : {std::array<int64_t, 4>{2, 37, 77, 24}, {12, 128, 128, 64}, {3, 130, 50, 20}}) {
      const int64_t h = s[0], tq = s[1], tk = s[2], d = s[3];
      FusedGraph f = test::fuse_text(test::masked_attention_graph(1, h, tq, tk, d, d), {});
      std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Attention);
      REQUIRE(specs.size() == 1);
      const KernelSpec& spec = specs[0];
      Case c{"attention", f, {}, spec};
      std::map<std::string, Tensor> in{{"q", test::randn({1, h, tq, d}, 1)},
                                       {"k", test::randn({1, h, tk, d}, 2)},
                                       {"v", test::randn({1, h, tk, d}, 3)},
                                       {"mask", test::uniform({1, 1, 1, tk}, 4, -3.0, 0.0)}};
      const std::vector<Tensor> values = test::run_all_static(f, in, test::pool());
      const std::vector<TilingChoice> cands = attention_candidates(spec, vl);
      CHECK(cands.size() >= 2);
      CHECK(cands[0].empty());
      const std::vector<Tensor> want = outputs(*be->compile_tiling(spec, {}), c, values);
      for (const TilingChoice& choice : cands) {
        CAPTURE(tq);
        CAPTURE(tk);
        CAPTURE(choice.str());
        std::shared_ptr<const CompiledKernel> k = be->compile_tiling(spec, choice);
        check_same(outputs(*k, c, values), want);
        std::shared_ptr<const CompiledKernel> loaded = be->load(spec, k->object);
        CHECK(tuned_choice(*loaded) == choice.str());
        CHECK(loaded->tasks == k->tasks);
        check_same(outputs(*loaded, c, values), want);
        ++compared;
      }
    }
    CHECK(compared >= 6);
    FusedGraph f = test::fuse_text(test::masked_attention_graph(1, 2, 37, 77, 24, 24), {});
    KernelSpec sym = test::lower_groups(f, GroupKind::Attention).at(0);
    sym.symbolic = true;
    CHECK(attention_candidates(sym, vl).size() == 1);
  }

  TEST_CASE("a kernel's tiling choice survives its object; one that does not read is refused") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const int64_t vl = vector_floats(*be);
    const Case c = cases()[1];  // 130 x 96 x 200: several candidates
    const std::vector<TilingChoice> cands = tiling_candidates(c.spec, vl, host_l2_bytes(), be->computes_amx());
    REQUIRE(cands.size() >= 2);
    const std::vector<Tensor> values = test::run_all_static(c.f, c.inputs, test::pool());
    for (const TilingChoice& choice : cands) {
      CAPTURE(choice.str());
      std::shared_ptr<const CompiledKernel> k = be->compile_tiling(c.spec, choice);
      CHECK(tuned_choice(*k) == choice.str());
      std::shared_ptr<const CompiledKernel> loaded = be->load(c.spec, k->object);
      CHECK(loaded->tasks == k->tasks);
      REQUIRE(loaded->prepacks.size() == k->prepacks.size());
      CHECK(loaded->prepacks[0].width == k->prepacks[0].width);
      CHECK(tuned_choice(*loaded) == choice.str());
      CHECK(loaded->tuning == (choice.empty() ? "" : "tuned: " + choice.str() + " (stored)"));
      check_same(outputs(*loaded, c, values), outputs(*k, c, values));
    }
    std::shared_ptr<const CompiledKernel> k = be->compile_tiling(c.spec, cands[1]);
    const std::string object = k->object.substr(k->object.find('\n') + 1);
    for (const std::string& bad : {"fusor-tiling mr=99x\n" + object, "fusor-tiling mr=6 nv=2" + object.substr(0, 0),
                                   "fusor-tiling \n" + object}) {
      std::string msg;
      CHECK(test::error_of([&] { be->load(c.spec, bad); }, &msg) == ErrorCode::CompileFailed);
      CHECK(msg.find("a stored tiling that does not read") != std::string::npos);
    }
    // A choice on a kernel that is not a contraction.
    FusedGraph g = test::fuse_text("graph g\ninput x: f32[40]\ny = Relu(x)\noutput y\n", {});
    const KernelSpec relu = test::lower_groups(g, GroupKind::Pointwise).at(0);
    std::string msg;
    CHECK(test::error_of([&] { be->load(relu, "fusor-tiling mr=6 nv=2\n" + object); }, &msg) == ErrorCode::CompileFailed);
    CHECK(test::error_of([&] { be->compile_tiling(relu, TilingChoice{.mr = 6, .nv = 2}); }, &msg) ==
          ErrorCode::InvalidArgument);
  }

  TEST_CASE("a tuned backend keeps the fastest candidate, says so, and keys its kernels apart") {
    LlvmBackend* rules = test::llvm_backend_or_skip();
    if (!rules) return;
    LlvmBackend::Options o;
    o.tune = true;
    o.tune_threads = 2;
    std::unique_ptr<LlvmBackend> be = make_llvm_backend(o);
    CHECK(be->compiler_version() == rules->compiler_version() + " tuned");
    const Case c = cases()[1];
    std::shared_ptr<const CompiledKernel> k = be->compile(c.spec);
    CAPTURE(k->tuning);
    CHECK(k->tuning.rfind("tuned: ", 0) == 0);
    CHECK(k->tuning.find(std::to_string(tiling_candidates(c.spec, vector_floats(*be), host_l2_bytes(), be->computes_amx()).size()) + " tilings timed") !=
          std::string::npos);
    const std::optional<TilingChoice> kept = TilingChoice::parse(tuned_choice(*k));
    REQUIRE(kept);
    const std::vector<TilingChoice> cands = tiling_candidates(c.spec, vector_floats(*be), host_l2_bytes(), be->computes_amx());
    CHECK(std::find(cands.begin(), cands.end(), *kept) != cands.end());
    const std::vector<Tensor> values = test::run_all_static(c.f, c.inputs, test::pool());
    check_same(outputs(*k, c, values), outputs(*rules->compile(c.spec), c, values));
    // A kernel that is not a contraction compiles once, untimed.
    FusedGraph g = test::fuse_text("graph g\ninput x: f32[40]\ny = Relu(x)\noutput y\n", {});
    CHECK(be->compile(test::lower_groups(g, GroupKind::Pointwise).at(0))->tuning.empty());
  }
}
