// The llvm backend's attention kernels: the Attention group of small graphs (scores
// matmul, scale, mask, softmax, context matmul; heads as batch dims; keys through a
// transposed view; an epilogue after the context) is lowered, compiled, run serially and
// split over a thread pool, and compared with the static kernels node by node and with
// the spec interpreter (double precision).
//
// Tolerance, per element |got - want| <= 2e-5 * |want| + 2e-6 * sqrt(d + tk): the dot
// products are float sums of d products (FMA, d order), exp is codegen/math_approx.h's
// (1.1 ulp), the row sum is a float sum in vector lanes, and the context a float sum of tk
// products; the references sum in other orders (OpenBLAS, double). Serial and pooled runs
// agree exactly (a row block is one task).
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "codegen/llvm/emit_attention.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "tests/support/contraction_util.h"
#include "tests/support/llvm_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

using test::with;

// Checks every Attention group of f (tolerance: this file's header); returns how many.
int check_attention(LlvmBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs, int64_t d,
                    int64_t tk, bool interpret = true) {
  const double abs_tol = 2e-6 * std::sqrt(double(d + tk));
  return test::check_groups(be, f, inputs, GroupKind::Attention, [&](const KernelSpec&) {
           return test::Tol{2e-5, abs_tol, 2e-5, abs_tol, interpret, true};
         }).kernels;
}


}  // namespace

TEST_SUITE("llvm/attention") {
  TEST_CASE("scaled and masked attention across sizes around the tiles") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    struct Size {
      int64_t b, h, tq, tk, d, dv;
    };
    const Size sizes[] = {{1, 1, 1, 1, 1, 1},    {1, 2, 3, 5, 4, 4},      {2, 3, 7, 9, 8, 8},
                          {1, 2, 17, 15, 16, 17}, {1, 12, 33, 33, 64, 64}, {1, 1, 130, 129, 31, 33},
                          {2, 2, 64, 200, 48, 16}};
    for (const Size& z : sizes) {
      CAPTURE(z.b);
      CAPTURE(z.h);
      CAPTURE(z.tq);
      CAPTURE(z.tk);
      CAPTURE(z.d);
      CAPTURE(z.dv);
      FusedGraph f = test::fuse_text(test::masked_attention_graph(z.b, z.h, z.tq, z.tk, z.d, z.dv), {});
      std::map<std::string, Tensor> in{{"q", test::randn({z.b, z.h, z.tq, z.d}, 1)},
                                       {"k", test::randn({z.b, z.h, z.tk, z.d}, 2)},
                                       {"v", test::randn({z.b, z.h, z.tk, z.dv}, 3)},
                                       {"mask", test::uniform({z.b, 1, 1, z.tk}, 4, -3.0, 0.0)}};
      CHECK(check_attention(*be, f, in, z.d, z.tk, z.tq * z.tk * z.d < 200000) == 1);
    }
  }

  TEST_CASE("a task takes several row blocks and packs K and V once for them") {
    // Note [Attention kernels]: as many of a head's blocks of 128 rows per task as leave 8
    // tasks. 12 heads of 300 rows (blocks of 128, 128, 44): 12 tasks of 3 blocks; 4 heads:
    // 8 tasks of 2 blocks and of 1 (the last block short). Every block's rows checked.
    struct Case {
      int64_t h, blocks_per_task, tasks;
    };
    for (const Case& c : {Case{12, 3, 12}, Case{4, 2, 8}}) {
      CAPTURE(c.h);
      FusedGraph f = test::fuse_text(test::masked_attention_graph(1, c.h, 300, 77, 24, 20), {});
      std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Attention);
      REQUIRE(specs.size() == 1);
      const AttentionTiling t = attention_tiling(specs[0], 16);
      CAPTURE(t.str());
      CHECK(t.rows_per_task == 128);
      CHECK(t.row_blocks == 3);
      CHECK(t.blocks_per_task == c.blocks_per_task);
      CHECK(t.tasks() == c.tasks);
      LlvmBackend* be = test::llvm_backend_or_skip();
      if (!be) continue;
      std::map<std::string, Tensor> in{{"q", test::randn({1, c.h, 300, 24}, 1)},
                                       {"k", test::randn({1, c.h, 77, 24}, 2)},
                                       {"v", test::randn({1, c.h, 77, 20}, 3)},
                                       {"mask", test::uniform({1, 1, 1, 77}, 4, -3.0, 0.0)}};
      CHECK(check_attention(*be, f, in, 24, 77, c.h < 8) == 1);
    }
  }

  TEST_CASE("with AVX-512 the Q·Kᵀ tile is at least three vectors wide once the keys fill them") {
    // Note [Attention kernels]: on a Zen 5, panels of 32 keys (10 x 2 tiles) ran 1.6-2.5x
    // slower than of 48 or 64 at 128, 256 and 512 keys; fewer keys than three vectors keep the
    // model's tile. With AVX2 the model's tile stands (Zen 1: 4 x 3, 5 x 2 and 6 x 2 alike).
    // Both products' tiles leave registers for a step's B vectors and a broadcast: AVX2's
    // 3 x 4, which spilled, is never taken (tile_fits).
    for (int64_t vl : {8, 16})
      for (int64_t tk : {20, 47, 48, 77, 128, 256, 384, 512}) {
        CAPTURE(vl);
        CAPTURE(tk);
        FusedGraph f = test::fuse_text(test::masked_attention_graph(1, 12, 128, tk, 64, 64), {});
        std::vector<KernelSpec> specs = test::lower_groups(f, GroupKind::Attention);
        REQUIRE(specs.size() == 1);
        const AttentionTiling t = attention_tiling(specs[0], vl);
        CAPTURE(t.str());
        if (vl == 16 && tk >= 3 * vl) CHECK(t.qk.nv >= 3);
        for (const llvm_ir::TileShape& s : {t.qk, t.pv}) {
          CHECK(s.mr * s.nv <= (vl == 16 ? 24 : 12));
          CHECK(s.mr * s.nv + s.nv + 1 <= (vl == 16 ? 32 : 16));
        }
        if (vl == 8) CHECK(t.pv.nv == 2);  // 64 values: 6 x 2, not the 3 x 4 that spilled
      }
  }

  TEST_CASE("unscaled attention with an epilogue and fully masked keys") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text(R"(graph g
input q: f32[3, 10, 8]
input kt: f32[3, 8, 12]
input v: f32[3, 12, 8]
input mask: f32[1, 1, 12]
const bias: f32[8] = randn(seed=5, std=1)
s = MatMul(q, kt)
a = Add(s, mask)
p = Softmax(a) {axis=-1}
c = MatMul(p, v)
o = Add(c, bias)
y = Relu(o)
output y
)",
                                   {});
    // Half the keys masked by -1e9 (BERT's padding): they get probability 0.
    Tensor mask = Tensor::zeros(DType::F32, Shape{1, 1, 12});
    for (int64_t j = 6; j < 12; ++j) mask.set(j, -1e9);
    std::map<std::string, Tensor> in{{"q", test::randn({3, 10, 8}, 1)},
                                     {"kt", test::randn({3, 8, 12}, 2)},
                                     {"v", test::randn({3, 12, 8}, 3)},
                                     {"mask", mask}};
    CHECK(check_attention(*be, f, in, 8, 12) == 1);
  }

  TEST_CASE("the heads' merge after an epilogue is the kernel's store, across batch, heads and lengths") {
    // [b, h, t, d] -> [b, t, h, d] (BERT's and GPT-2's context): each row stored h x d apart.
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    struct Size {
      int64_t b, h, t, d;
    };
    for (const Size& z : {Size{1, 1, 1, 1}, Size{1, 3, 1, 8}, Size{2, 3, 7, 5}, Size{1, 12, 33, 64}, Size{2, 2, 70, 17}}) {
      CAPTURE(z.b);
      CAPTURE(z.h);
      CAPTURE(z.t);
      CAPTURE(z.d);
      FusedGraph f = test::fuse_text(with(R"(graph g
input q: f32[@B@, @H@, @T@, @D@]
input kt: f32[@B@, @H@, @D@, @T@]
input v: f32[@B@, @H@, @T@, @D@]
input mask: f32[@B@, 1, 1, @T@]
const bias: f32[@D@] = randn(seed=5, std=1)
s = MatMul(q, kt)
a = Add(s, mask)
p = Softmax(a) {axis=-1}
c = MatMul(p, v)
o = Add(c, bias)
y = Transpose(o) {perm=[0, 2, 1, 3]}
output y
)",
                                          {{"@B@", std::to_string(z.b)}, {"@H@", std::to_string(z.h)},
                                           {"@T@", std::to_string(z.t)}, {"@D@", std::to_string(z.d)}}),
                                     {});
      REQUIRE(f.groups.size() == 1);
      CHECK(f.groups[0].pattern == "matmul+add+softmax+matmul+add+transpose");
      std::map<std::string, Tensor> in{{"q", test::randn({z.b, z.h, z.t, z.d}, 1)},
                                       {"kt", test::randn({z.b, z.h, z.d, z.t}, 2)},
                                       {"v", test::randn({z.b, z.h, z.t, z.d}, 3)},
                                       {"mask", test::uniform({z.b, 1, 1, z.t}, 4, -3.0, 0.0)}};
      CHECK(check_attention(*be, f, in, z.d, z.t) == 1);
    }
  }

  TEST_CASE("declined attention says why") {
    std::string why;
    KernelSpec s;
    s.kind = KernelKind::Pointwise;
    CHECK_FALSE(attention_supports(s, &why));
    CHECK(why.find("not an attention") != std::string::npos);
    FusedGraph f = test::fuse_text(test::masked_attention_graph(1, 1, 4, 100000, 64, 64), {});
    for (const FusionGroup& grp : f.groups) {
      if (grp.kind != GroupKind::Attention) continue;
      std::optional<KernelSpec> spec = lower_group(f, grp, &why);
      REQUIRE(spec);
      CHECK_FALSE(llvm_supports(*spec, &why));
      CHECK(why.find("too large") != std::string::npos);
    }
  }
}

TEST_SUITE("llvm/attention") {
  // Exported masks: a bool [B, 1, T, T] (causal and padding) selected into the scores, in the
  // chain or by a Where of its own that joins the group; bool accesses step by bytes in every
  // tile (a regression: they were stepped as floats past the first tile).
  TEST_CASE("bool masks in the score expression across tiles") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    const char* in_chain = R"(graph g
input q: f32[1, 2, T, 16]
input k: f32[1, 2, 16, T]
input v: f32[1, 2, T, 16]
input m: bool[1, 1, T, T]
const big: f32[] = [-3.4e38]
s = MatMul(q, k)
a = Where(m, s, big)
p = Softmax(a) {axis=-1}
o = MatMul(p, v)
output o
)";
    const char* side = R"(graph g
input q: f32[1, 2, T, 16]
input k: f32[1, 2, 16, T]
input v: f32[1, 2, T, 16]
input m: bool[1, 1, T, T]
const big: f32[] = [-3.4e38]
const zero: f32[] = [0.0]
const scale: f32[] = [0.25]
s = MatMul(q, k)
c = Mul(s, scale)
w = Where(m, zero, big)
a = Add(c, w)
p = Softmax(a) {axis=-1}
o = MatMul(p, v)
output o
)";
    for (const char* text : {in_chain, side})
      for (int64_t t : {1, 7, 33, 64, 100}) {
        CAPTURE(t);
        FusedGraph f = test::fuse_text(text, {{"T", t}});
        Tensor m = Tensor::empty(DType::Bool, {1, 1, t, t});
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < t; ++j) m.set(i * t + j, j <= i && j < t - 2 ? 1 : i == 0);  // causal, 2 padded keys
        CHECK(check_attention(*be, f,
                              {{"q", test::randn({1, 2, t, 16}, 1)}, {"k", test::randn({1, 2, 16, t}, 2)},
                               {"v", test::randn({1, 2, t, 16}, 3)}, {"m", m}},
                              16, t) == 1);
      }
  }
}
