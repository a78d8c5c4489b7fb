// The llvm backend's bf16 contractions (Note [bf16 contractions], codegen/precision.h): every
// GEMM shape of the f32 sweeps, marked bf16, compiled, run serially and over a pool, and
// compared with
//   - the spec interpreter, which rounds the operands to bf16 as the kernel does and sums in
//     double: the only differences left are the f32 sums, within the f32 suites' bound
//     1e-5 * |want| + 2e-6 * sqrt(k) * s. A wrong pair, panel or row fails by the size of
//     the terms;
//   - the static kernels in f32, within the bf16 rounding of the operands (each product off
//     by up to 2 * 2^-8 of itself): |got - want| <= 2^-7 * |want| + 8 * 2^-8 * sqrt(k) * s,
//     the first term for sums whose products share a sign, the second for sums that cancel
//     (a sanity bound: the interpreter's is the exact one).
// On a CPU without AVX512-BF16 every case says it is skipped, and why.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "codegen/llvm/emit_attention.h"
#include "codegen/llvm/emit_contraction.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "codegen/packing.h"
#include "codegen/precision.h"
#include "tests/support/contraction_util.h"
#include "tests/support/llvm_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

using test::Checked;
using test::with;

// The shared llvm backend when it computes bf16 here, else nullptr after saying why.
LlvmBackend* bf16_backend_or_skip() {
  LlvmBackend* be = test::llvm_backend_or_skip();
  if (be && !be->computes_bf16()) {
    MESSAGE("skipped: this CPU has no AVX512-BF16 (bf16 instruction sets: " << host_bf16().str() << ")");
    return nullptr;
  }
  return be;
}

// The shared llvm backend when it computes bf16 on AMX tiles here, else nullptr after saying why.
LlvmBackend* amx_backend_or_skip() {
  LlvmBackend* be = bf16_backend_or_skip();
  if (be && !be->computes_amx()) {
    MESSAGE("skipped: no AMX this process may use (bf16 instruction sets: " << host_bf16().str() << ")");
    return nullptr;
  }
  return be;
}

// The assembly of the one contraction of `graph` marked bf16, compiled by a backend that
// dumps it, with AMX where the host has it or without.
std::string bf16_assembly(const std::string& graph, bool amx) {
  test::TempDir dir("llvm-bf16");
  LlvmBackend::Options o;
  o.dump_dir = dir.path().string();
  o.amx = amx;
  std::unique_ptr<LlvmBackend> dumping = make_llvm_backend(o);
  FusedGraph f = test::fuse_text(graph, {});
  std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
  REQUIRE(specs.size() == 1);
  REQUIRE(mark_bf16(specs[0]));
  std::shared_ptr<const CompiledKernel> k = dumping->compile(specs[0]);
  std::ifstream in(dir.file(k->symbol) + ".s");
  REQUIRE(in.good());
  std::stringstream assembly;
  assembly << in.rdbuf();
  return assembly.str();
}

// Whether the backend computes `spec` (marked bf16) on AMX tiles.
bool on_amx(const KernelSpec& spec) { return contraction_tiling(spec, 16, {}, host_l2_bytes(), true).amx; }

// Every Contraction group of f marked bf16, checked as the header says; `scale` is the
// magnitude of the products, k a convolution's c/group * kh * kw. A Winograd convolution
// rounds U and V in the transformed domain (Note [Winograd convolutions]), which neither
// reference does: both get the static bound (`interpret` false: too big for the interpreter).
Checked check_bf16(LlvmBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs, double scale = 1.0,
                   bool interpret = true) {
  return test::check_groups(
      be, f, inputs, GroupKind::Contraction,
      [&](const KernelSpec& spec) {
        const double rk = std::sqrt(double(reduction_length(spec.contraction)));
        const double loose = 8.0 / 256.0 * rk * scale;
        if (contraction_tiling(spec, 16).winograd) return test::Tol{1.0 / 128.0, loose, 1.0 / 128.0, loose, interpret, true};
        return test::Tol{1e-5, 2e-6 * rk * scale, 1.0 / 128.0, loose, interpret, true};
      },
      [](KernelSpec& spec) { REQUIRE(mark_bf16(spec)); });
}

}  // namespace

TEST_SUITE("llvm/bf16") {
  TEST_CASE("bf16 attention across sizes around the tiles with odd head sizes and key counts") {
    // Both products on bf16 pairs (Note [Attention kernels]): odd d and odd tk leave half a
    // pair in Q·Kᵀ and in P·V. Against the interpreter, which rounds Q, K, V and P to bf16
    // as the kernel does: the f32 sums and exp differ, and rarely a probability rounds to
    // the other bf16 neighbour (2^-8 of its term). Against the static kernels in f32:
    // within the bf16 rounding of the scores (about 2^-8 of sum |q k| * scale, through exp)
    // and of P and V.
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    const int64_t sizes[][5] = {{1, 1, 1, 1, 1},  {2, 3, 5, 3, 4},    {3, 7, 9, 8, 7},
                                {2, 17, 15, 17, 16}, {12, 33, 33, 64, 64}, {1, 130, 129, 31, 33},
                                {4, 300, 77, 24, 20}};  // (tasks of 2 row blocks and of 1)
    for (const auto& z : sizes) {
      const int64_t h = z[0], tq = z[1], tk = z[2], d = z[3], dv = z[4];
      CAPTURE(h);
      CAPTURE(tq);
      CAPTURE(tk);
      CAPTURE(d);
      CAPTURE(dv);
      FusedGraph f = test::fuse_text(test::masked_attention_graph(1, h, tq, tk, d, dv), {});
      std::map<std::string, Tensor> in{{"q", test::randn({1, h, tq, d}, 11)},
                                       {"k", test::randn({1, h, tk, d}, 12)},
                                       {"v", test::randn({1, h, tk, dv}, 13)},
                                       {"mask", test::uniform({1, 1, 1, tk}, 14, -3.0, 0.0)}};
      Checked c = test::check_groups(
          *be, f, in, GroupKind::Attention,
          [&](const KernelSpec&) { return test::Tol{1e-4, 4e-3, 5e-2, 5e-2, tq * tk * d < 200000, true}; },
          [](KernelSpec& spec) {
            REQUIRE(mark_bf16(spec));
            CHECK(spec.attention.bf16);
          });
      CHECK(c.kernels == 1);
    }
  }

  TEST_CASE("bf16 convolutions by output rows across strides, padding, dilation and groups") {
    // Every panel packed in f32, then as pairs of its reduction rows (kh, kw, c flattened),
    // against weights packed the same way (Note [Packed layouts]), checked as the GEMMs are
    // with k = c/group * kh * kw and the products' scale 1/sqrt(k). A pair that joins two
    // taps (odd c), a wrong half or a misplaced row fails by the size of the terms. The f32
    // sweep's cases plus strided ones with 16 or more output channels per group; the rest
    // (stride 1 read in place, few channels per group) stay f32 with their reason.
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    std::vector<test::ConvCase> cases(std::begin(test::kConvSweep), std::end(test::kConvSweep));
    for (const test::ConvCase& v : {test::ConvCase{1, 21, 15, 13, 33, 3, 3, 1, 2, 1, 1}, {2, 16, 11, 12, 40, 3, 3, 2, 2, 1, 1},
                                    {1, 9, 14, 14, 17, 5, 5, 1, 2, 2, 2}, {1, 64, 28, 28, 64, 1, 1, 1, 2, 1, 0},
                                    {1, 128, 15, 15, 24, 3, 3, 1, 2, 1, 1}})
      cases.push_back(v);
    int rows = 0, declined = 0;
    for (const test::ConvCase& v : cases) {
      CAPTURE(test::conv_case_str(v));
      FusedGraph f = test::fuse_text(test::conv_case_graph(v), {});
      std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
      REQUIRE(specs.size() == 1);
      REQUIRE(mark_bf16(specs[0]));
      std::string why;
      if (!be->supports(specs[0], &why)) {
        CAPTURE(why);
        CHECK((why.find("reads its image in place") != std::string::npos ||
               why.find("fewer than 16 output channels per group") != std::string::npos));
        ++declined;
        continue;
      }
      const int64_t k = v.c / v.group * v.kh * v.kw;
      Checked c = check_bf16(*be, f, {{"x", test::randn({v.n, v.c, v.h, v.w}, 9)}}, 1.0 / std::sqrt(double(k)));
      REQUIRE(c.kernels == 1);
      const ContractionTiling t = contraction_tiling(c.specs[0], 16);
      CAPTURE(t.str());
      CHECK(t.bf16);
      if (!t.conv_rows) continue;  // a 1x1 convolution is a GEMM reading its weights in place
      REQUIRE(c.compiled[0]->prepacks.size() == 1);
      const CompiledKernel::Prepack& p = c.compiled[0]->prepacks[0];
      CHECK(p.kind == (t.winograd ? PackKind::Bf16WinogradWeights : PackKind::Bf16Panels));
      if (!t.winograd) ++rows;
    }
    CHECK(rows >= 5);
    CHECK(declined >= 5);
  }

  TEST_CASE("bf16 Winograd convolutions across the Winograd sweep, odd channel counts included") {
    // U and V are rounded in the transformed domain (Note [Winograd convolutions], bf16), so
    // neither reference rounds as the kernel does: both get check_bf16's bound against the
    // static kernels, 2^-7 * |want| + 8 * 2^-8 * sqrt(k) * s with the products' scale s =
    // 1/sqrt(k) here (k = 9c; weights of std 1/sqrt(9c) over unit inputs): 0.031 for outputs
    // of unit spread. The worst error seen on this sweep is 0.018 (Zen 5); a pair of channels
    // dropped or misplaced costs about sqrt(18) terms of 1/sqrt(9c), 0.09 at c = 256.
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    for (const test::WinogradConv& v : test::kWinogradSweep) {
      CAPTURE(test::winograd_conv_str(v));
      FusedGraph f = test::fuse_text(test::winograd_conv_graph(v), {});
      Checked c = check_bf16(*be, f, test::winograd_conv_inputs(v), 1.0 / std::sqrt(9.0 * double(v.c)),
                             v.c * v.h * v.w < 20000);
      REQUIRE(c.kernels == 1);
      CHECK(contraction_tiling(c.specs[0], 16).winograd);
      REQUIRE(c.compiled[0]->prepacks.size() == 1);
      const CompiledKernel::Prepack& p = c.compiled[0]->prepacks[0];
      CHECK(p.kind == PackKind::Bf16WinogradWeights);
      CHECK(p.floats == 16 * ((v.m + p.width - 1) / p.width) * p.width * ((v.c + 1) / 2));  // half the f32 layout's
    }
  }

  TEST_CASE("bf16 matmul with a bias across sizes around the tiles and odd k") {
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    // The f32 sweep's sizes (odd k leaves half a pair; k = 1 a pair of one).
    const int64_t sizes[][3] = {{1, 1, 1},   {1, 7, 5},    {3, 15, 17},  {5, 16, 31},   {7, 33, 32},
                                {13, 9, 47}, {16, 64, 48}, {17, 65, 63}, {29, 3, 100},  {64, 128, 65},
                                {100, 7, 1}, {9, 300, 129}, {128, 768, 96}};
    for (const auto& s : sizes) {
      const int64_t m = s[0], k = s[1], n = s[2];
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, k, n),
                                     {});
      Checked c = check_bf16(*be, f, {{"a", test::randn({1, m, k}, uint64_t(m * 1000 + n))}});
      CHECK(c.kernels == 1);
      REQUIRE(c.compiled[0]->prepacks.size() == 1);
      const CompiledKernel::Prepack& p = c.compiled[0]->prepacks[0];
      CHECK(p.kind == PackKind::Bf16Panels);
      CHECK(p.floats == (k + 1) / 2 * ((n + p.width - 1) / p.width) * p.width);  // half the f32 panels
    }
  }

  TEST_CASE("a long bf16 product is split by rows so that each task converts its rows once") {
    // Note [Contraction kernels]: with panels outer (n >= m) a task's rows must fit
    // kBf16TaskABytes as pairs; these 100 rows of 1500 do not (13 tiles of 8 rows, 24 KB each).
    FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, 100, 1500, 130), {});
    int specs = 0;
    for (const FusionGroup& grp : f.groups) {
      if (grp.kind != GroupKind::Contraction) continue;
      std::optional<KernelSpec> spec = lower_group(f, grp, nullptr);
      REQUIRE(spec);
      REQUIRE(mark_bf16(*spec));
      const ContractionTiling t = contraction_tiling(*spec, 16);
      CAPTURE(t.str());
      CHECK(t.panel_outer);
      CHECK(t.tiles_per_chunk * t.mr * 750 * 4 <= kBf16TaskABytes);
      CHECK(t.m_chunks >= 2);
      ++specs;
    }
    CHECK(specs == 1);
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    // Every row chunk and panel chunk against the references (a task that converted the wrong
    // rows, or too few, fails by the size of the terms).
    Checked c = check_bf16(*be, f, {{"a", test::randn({1, 100, 1500}, 7)}});
    CHECK(c.kernels == 1);
  }

  TEST_CASE("bf16 matmul with gelu and residual epilogues, batches and a transposed A") {
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(R"(graph g
input a: f32[2, 19, 41]
input r: f32[2, 19, 70]
const w: f32[41, 70] = randn(seed=1, std=0.3)
const bias: f32[70] = randn(seed=2, std=0.1)
m = MatMul(a, w)
h = Add(m, bias)
g = Gelu(h)
y = Add(g, r)
output y
)",
                                   {});
    check_bf16(*be, f, {{"a", test::randn({2, 19, 41}, 1)}, {"r", test::randn({2, 19, 70}, 2)}}, 0.3);
    // A read through a transpose: its k stride is not 1 (the rows are converted one by one).
    FusedGraph t = test::fuse_text(R"(graph g
input at: f32[3, 37, 22]
const w: f32[37, 50] = randn(seed=3, std=1)
a = Transpose(at) {perm=[0, 2, 1]}
y = MatMul(a, w)
output y
)",
                                   {});
    Checked c = check_bf16(*be, t, {{"at", test::randn({3, 37, 22}, 4)}});
    REQUIRE(c.kernels == 1);
    CHECK(c.specs[0].contraction.a.strides.back() != 1);
    // Weights that differ per batch: one block of pairs per batch.
    FusedGraph b = test::fuse_text(R"(graph g
input a: f32[3, 9, 20]
const w: f32[3, 20, 33] = randn(seed=5, std=1)
y = MatMul(a, w)
output y
)",
                                   {});
    check_bf16(*be, b, {{"a", test::randn({3, 9, 20}, 6)}});
  }

  TEST_CASE("bf16 products of two activations and 1x1 convolutions pack their panels in the kernel") {
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    for (const auto& row : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 9, 33}, {16, 64, 17}, {33, 31, 65}}) {
      const int64_t m = std::get<0>(row), k = std::get<1>(row), n = std::get<2>(row);
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(with(R"(graph g
input q: f32[2, 3, @M@, @K@]
input kt: f32[2, 3, @N@, @K@]
k = Transpose(kt) {perm=[0, 1, 3, 2]}
y = MatMul(q, k)
output y
)",
                                          {{"@M@", std::to_string(m)}, {"@K@", std::to_string(k)}, {"@N@", std::to_string(n)}}),
                                     {});
      Checked c = check_bf16(*be, f, {{"q", test::randn({2, 3, m, k}, 1)}, {"kt", test::randn({2, 3, n, k}, 2)}});
      CHECK(c.kernels == 1);
      CHECK(c.compiled[0]->prepacks.empty());  // B is packed panel by panel by the kernel
    }
    // A ResNet 1x1 convolution (odd channels, BN folded, residual and ReLU) in its GEMM form.
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[2, 37, 9, 11]
input r: f32[2, 24, 9, 11]
const w: f32[24, 37, 1, 1] = randn(seed=1, std=0.2)
const bn_s: f32[24] = uniform(seed=2, low=0.5, high=1.5)
const bn_b: f32[24] = randn(seed=3, std=0.1)
const bn_m: f32[24] = randn(seed=4, std=0.1)
const bn_v: f32[24] = uniform(seed=5, low=0.5, high=1.5)
c = Conv(x, w) {kernel_shape=[1, 1]}
b = BatchNormalization(c, bn_s, bn_b, bn_m, bn_v) {epsilon=1e-5}
a = Add(b, r)
y = Relu(a)
output y
)",
                                   {});
    Checked conv = test::check_groups(
        *be, f, {{"x", test::randn({2, 37, 9, 11}, 5)}, {"r", test::randn({2, 24, 9, 11}, 6)}}, GroupKind::Contraction,
        [](const KernelSpec&) {
          const double rk = std::sqrt(37.0) * 1.5 * 0.2 * 3;
          return test::Tol{1e-5, 2e-6 * rk, 1.0 / 128.0, 8.0 / 256.0 * rk, true, true};
        },
        [](KernelSpec& spec) { REQUIRE(mark_bf16(spec)); });
    CHECK(conv.kernels == 1);
  }

  TEST_CASE("a bf16 convolution whose panel and its pairs overflow the stack is declined with its reason") {
    // k = 160 * 9 = 1440: the f32 panel (1440 x 64 floats, 369 KB) fits the 512 KB scratch,
    // the f32 panel and its pairs (553 KB) do not, so the kernel stays f32.
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[1, 160, 9, 9]
const w: f32[32, 160, 3, 3] = randn(seed=1, std=0.03)
y = Conv(x, w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]}
output y
)",
                                   {});
    std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
    REQUIRE(specs.size() == 1);
    std::string why;
    CHECK(be->supports(specs[0], &why));
    REQUIRE(mark_bf16(specs[0]));
    CHECK_FALSE(be->supports(specs[0], &why));
    CHECK(why.find("k too long for a bf16 convolution panel") != std::string::npos);
  }

  TEST_CASE("bf16 kernels are vdpbf16ps on registers, their activations converted on the stack") {
    LlvmBackend* be = bf16_backend_or_skip();
    if (!be) return;
    const std::string s = bf16_assembly(test::matmul_bias_graph(1, 64, 64, 96), false);  // (AMX: its own test below)
    CHECK(s.find("vdpbf16ps") != std::string::npos);
    CHECK(s.find("vfmadd231ps") == std::string::npos);  // no f32 products left
    CHECK_FALSE(s.find("64-byte Spill") != std::string::npos);
  }

  TEST_CASE("on AMX, bf16 GEMMs are tile products that configure and release the tiles") {
    LlvmBackend* be = amx_backend_or_skip();
    if (!be) return;
    const std::string s = bf16_assembly(test::matmul_bias_graph(1, 40, 64, 96), true);
    CHECK(s.find("ldtilecfg") != std::string::npos);
    CHECK(s.find("tdpbf16ps") != std::string::npos);
    CHECK(s.find("tilestored") != std::string::npos);
    CHECK(s.find("tilerelease") != std::string::npos);
    CHECK(s.find("vdpbf16ps") == std::string::npos);
    CHECK(s.find("vfmadd231ps") == std::string::npos);
    // An odd k (not whole AMX steps) stays on vdpbf16ps.
    FusedGraph odd = test::fuse_text(test::matmul_bias_graph(1, 40, 65, 96), {});
    std::vector<KernelSpec> odd_specs = test::lower_groups(odd, GroupKind::Contraction);
    REQUIRE(mark_bf16(odd_specs[0]));
    CHECK_FALSE(amx_applies(odd_specs[0]));
    FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, 40, 64, 96), {});
    std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Contraction);
    REQUIRE(mark_bf16(specs[0]));
    CHECK(amx_applies(specs[0]));
  }

  TEST_CASE("bf16 GEMMs on AMX tiles across odd rows and columns, batches, strides and 1x1 convolutions") {
    // Note [AMX contractions]: k = 31, 32, 63, 64, 96 and 768 fill whole steps of 16 pairs
    // (an odd k's last pair is half zeros); rows 16 and 32 at a time with edges past m, 32
    // columns a panel with edges past n.
    LlvmBackend* be = amx_backend_or_skip();
    if (!be) return;
    const int64_t sizes[][3] = {{1, 32, 1},   {15, 31, 17},  {16, 64, 32}, {17, 63, 33}, {31, 96, 31},
                                {33, 32, 65}, {100, 64, 100}, {3, 768, 50}, {70, 768, 40}};
    int amx = 0;
    for (const auto& s : sizes) {
      const int64_t m = s[0], k = s[1], n = s[2];
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, k, n), {});
      Checked c = check_bf16(*be, f, {{"a", test::randn({1, m, k}, uint64_t(m * 1000 + n))}});
      REQUIRE(c.kernels == 1);
      amx += on_amx(c.specs[0]);
      REQUIRE(c.compiled[0]->prepacks.size() == 1);
      CHECK(c.compiled[0]->prepacks[0].width == 32);  // AMX's panels of two column tiles
    }
    CHECK(amx == int(std::size(sizes)));
    // Batches, a transposed A (k strided: the scalar conversion) and a residual epilogue.
    FusedGraph t = test::fuse_text(R"(graph g
input at: f32[3, 64, 37]
input r: f32[3, 37, 45]
const w: f32[64, 45] = randn(seed=1, std=0.2)
a = Transpose(at) {perm=[0, 2, 1]}
y = MatMul(a, w)
z = Add(y, r)
o = Gelu(z)
output o
)",
                                   {});
    Checked tc = check_bf16(*be, t, {{"at", test::randn({3, 64, 37}, 4)}, {"r", test::randn({3, 37, 45}, 5)}}, 0.3);
    REQUIRE(tc.kernels == 1);
    CHECK(on_amx(tc.specs[0]));
    // A product of two activations (the kernel packs B's panels) with the head size of BERT.
    FusedGraph qk = test::fuse_text(R"(graph g
input q: f32[2, 3, 37, 64]
input kt: f32[2, 3, 41, 64]
k = Transpose(kt) {perm=[0, 1, 3, 2]}
y = MatMul(q, k)
output y
)",
                                    {});
    Checked qc = check_bf16(*be, qk, {{"q", test::randn({2, 3, 37, 64}, 1)}, {"kt", test::randn({2, 3, 41, 64}, 2)}});
    REQUIRE(qc.kernels == 1);
    CHECK(qc.compiled[0]->prepacks.empty());
    CHECK(on_amx(qc.specs[0]));
    // A 1x1 convolution in its GEMM form (64 input channels: k = 64).
    FusedGraph cv = test::fuse_text(R"(graph g
input x: f32[2, 64, 7, 9]
const w: f32[40, 64, 1, 1] = randn(seed=1, std=0.2)
c = Conv(x, w) {kernel_shape=[1, 1]}
y = Relu(c)
output y
)",
                                    {});
    Checked cc = check_bf16(*be, cv, {{"x", test::randn({2, 64, 7, 9}, 3)}}, 0.2 * 8);
    REQUIRE(cc.kernels == 1);
    CHECK(on_amx(cc.specs[0]));
  }

  TEST_CASE("a bf16 spec and its f32 twin are different kernels") {
    FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, 8, 16, 32), {});
    for (const FusionGroup& grp : f.groups) {
      if (grp.kind != GroupKind::Contraction) continue;
      std::optional<KernelSpec> spec = lower_group(f, grp, nullptr);
      REQUIRE(spec);
      KernelSpec bf = *spec;
      REQUIRE(mark_bf16(bf));
      CHECK(bf.hash() != spec->hash());
      CHECK(bf.key_bytes() != spec->key_bytes());
      CHECK_FALSE(bf.same_code(*spec));
      CHECK(bf.str().find("operands bf16") != std::string::npos);
    }
  }
}
