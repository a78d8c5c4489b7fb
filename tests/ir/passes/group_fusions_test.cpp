#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "ir/passes/explain.h"
#include "ir/passes/group_fusions.h"
#include "tests/support/pass_util.h"

using namespace fusor;

namespace {

// Groups a graph after the full pipeline and returns the summary.
std::string groups_of(const std::string& text, const DimBindings& dims, FusedGraph* out = nullptr,
                      FusionOptions options = {}) {
  FusedGraph f = test::fuse_text(text, dims, options);
  std::string s = test::group_summary(f);
  if (out) *out = std::move(f);
  return s;
}

bool declined(const FusedGraph& f, const std::string& reason) {
  for (const DeclinedFusion& d : f.log.declined)
    if (d.reason == reason) return true;
  return false;
}

const char* kConvPrelude = R"(
graph g
input x: f32[1, 4, 6, 6]
const w1: f32[4, 4, 3, 3] = randn(seed=1, std=0.2)
const w2: f32[4, 4, 3, 3] = randn(seed=2, std=0.2)
const b: f32[4] = randn(seed=3, std=0.1)
)";

}  // namespace

TEST_SUITE("ir/passes/group_fusions") {
  TEST_CASE("conv + relu is one contraction group") {
    std::string text = std::string(kConvPrelude) + "c = Conv(x, w1, b) {pads=[1, 1, 1, 1]}\ny = Relu(c)\noutput y\n";
    std::string got = groups_of(text, {});
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction conv+relu: c y\n"));
  }

  TEST_CASE("conv + residual add + relu is one group") {
    std::string text = std::string(kConvPrelude) + "c = Conv(x, w1, b) {pads=[1, 1, 1, 1]}\na = Add(c, x)\ny = Relu(a)\noutput y\n";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {}), std::string("contraction conv+add+relu: c a y\n"));
  }

  TEST_CASE("multi-branch Input -> Conv1 -> Add <- Conv2 <- Input") {
    std::string text = std::string(kConvPrelude) +
                       "c1 = Conv(x, w1) {pads=[1, 1, 1, 1]}\nc2 = Conv(x, w2) {pads=[1, 1, 1, 1]}\n"
                       "a = Add(c1, c2)\ny = Relu(a)\noutput y\n";
    // Conv1 takes the add and relu as its epilogue; Conv2's result is materialized and
    // read by that epilogue, so Conv2's group runs first.
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {}),
                       std::string("contraction conv: c2\ncontraction conv+add+relu: c1 a y\n"));
  }

  TEST_CASE("BN folds and conv + bn + relu becomes one group") {
    std::string text = std::string(kConvPrelude) + R"(
const g1: f32[4] = uniform(seed=4, low=0.5, high=1.5)
const be: f32[4] = randn(seed=5, std=0.1)
const mu: f32[4] = randn(seed=6, std=0.1)
const va: f32[4] = uniform(seed=7, low=0.5, high=1.5)
c = Conv(x, w1) {pads=[1, 1, 1, 1]}
n = BatchNormalization(c, g1, be, mu, va)
y = Relu(n)
output y
)";
    // The folded Conv takes the BN's output name (n) and keeps the Conv's node name (c).
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {}), std::string("contraction conv+relu: c y\n"));
  }

  TEST_CASE("matmul + bias + gelu is one group") {
    const char* text = R"(
graph g
input x: f32[T, 8]
const w: f32[8, 16] = randn(seed=1, std=0.2)
const b: f32[16] = randn(seed=2, std=0.1)
m = MatMul(x, w)
a = Add(m, b)
y = Gelu(a)
output y
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {{"T", 3}}), std::string("contraction matmul+add+gelu: m a y\n"));
  }

  TEST_CASE("residual add + layernorm is one group and scale + mask + softmax is one group") {
    const char* text = R"(
graph g
input x: f32[T, 8]
input r: f32[T, 8]
input s: f32[2, T, T]
input mask: f32[1, 1, T]
const g1: f32[8] = fill(1.0)
const b1: f32[8] = fill(0.0)
const scale: f32[] = [0.125]
a = Add(x, r)
y = LayerNormalization(a, g1, b1)
m = Mul(s, scale)
k = Add(m, mask)
p = Softmax(k)
output y, p
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {{"T", 4}}),
                       std::string("reduction add+layernormalization: a y\nreduction mul+add+softmax: m k p\n"));
  }

  TEST_CASE("a multi-consumer value is not swallowed") {
    std::string text = std::string(kConvPrelude) + "c = Conv(x, w1, b) {pads=[1, 1, 1, 1]}\ny = Relu(c)\nz = Neg(c)\noutput y, z\n";
    FusedGraph f;
    std::string got = groups_of(text, {}, &f);
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction conv: c\npointwise relu: y\npointwise neg: z\n"));
    CHECK(declined(f, "multi-consumer"));
  }

  TEST_CASE("a graph output stays materialized") {
    std::string text = std::string(kConvPrelude) + "c = Conv(x, w1, b) {pads=[1, 1, 1, 1]}\ny = Relu(c)\noutput c, y\n";
    FusedGraph f;
    std::string got = groups_of(text, {}, &f);
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction conv: c\npointwise relu: y\n"));
    CHECK(declined(f, "multi-consumer"));
  }

  TEST_CASE("an epilogue whose other input depends on the group is declined as a cycle") {
    // c -> n (outside, a pool) -> a; absorbing a into c's group would need n before and after.
    std::string text = std::string(kConvPrelude) +
                       "c = Conv(x, w1, b) {pads=[1, 1, 1, 1]}\nr = Relu(c)\n"
                       "p = MaxPool(r) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\na = Add(r, p)\noutput a\n";
    FusedGraph f;
    std::string got = groups_of(text, {}, &f);
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction conv+relu: c r\nopaque maxpool: p\npointwise add: a\n"));
    CHECK(declined(f, "multi-consumer"));
  }

  TEST_CASE("cycle check on a direct epilogue candidate") {
    // a = Add(c, n) where n = Neg(MaxPool(c)): c has two consumers (a and the pool), so a
    // is not absorbed; and if it were, n depends on c through the pool.
    std::string text = std::string(kConvPrelude) +
                       "c = Conv(x, w1, b) {pads=[1, 1, 1, 1]}\n"
                       "p = MaxPool(c) {kernel_shape=[1, 1]}\nn = Neg(p)\na = Add(c, n)\noutput a\n";
    FusedGraph f;
    std::string got = groups_of(text, {}, &f);
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction conv: c\nopaque maxpool: p\npointwise neg+add: n a\n"));
  }

  TEST_CASE("a broadcast into a larger shape ends the epilogue") {
    const char* text = R"(
graph g
input x: f32[4, 8]
input big: f32[3, 4, 8]
const w: f32[8, 8] = randn(seed=1, std=0.2)
m = MatMul(x, w)
a = Add(m, big)
output a
)";
    FusedGraph f;
    std::string got = groups_of(text, {}, &f);
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction matmul: m\npointwise add: a\n"));
    CHECK(declined(f, "shape mismatch"));
  }

  TEST_CASE("pointwise DAGs with broadcasting form one group") {
    const char* text = R"(
graph g
input x: f32[N, 8]
input y: f32[8]
const two: f32[] = [2.0]
a = Mul(x, two)
b = Add(a, y)
c = Tanh(b)
d = Sub(c, x)
e = Relu(d)
output e
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {{"N", 5}}), std::string("pointwise mul+add+tanh+sub+relu: a b c d e\n"));
  }

  TEST_CASE("views are their own groups and unfused mode has one group per op") {
    const char* text = R"(
graph g
input x: f32[2, 6]
const s: i64[3] = [2, 3, 2]
r = Reshape(x, s)
t = Transpose(r) {perm=[0, 2, 1]}
y = Relu(t)
output y
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {}), std::string("view reshape: r\nview transpose: t\npointwise relu: y\n"));
    FusionOptions off;
    off.group = false;
    FusedGraph f;
    groups_of(text, {}, &f, off);
    CHECK(f.groups.size() == 3);
    CHECK(f.kernels_after() == 1);
  }
}

TEST_SUITE("ir/passes/group_fusions") {
  TEST_CASE("scores matmul + scale + mask + softmax + context matmul is one attention group") {
    const char* text = R"(
graph g
input q: f32[1, 2, T, 4]
input k: f32[1, 2, 4, T]
input v: f32[1, 2, T, 4]
input mask: f32[1, 1, 1, T]
const scale: f32[] = [0.5]
s = MatMul(q, k)
m = Mul(s, scale)
a = Add(m, mask)
p = Softmax(a) {axis=-1}
c = MatMul(p, v)
output c
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {{"T", 5}}),
                       std::string("attention matmul+mul+add+softmax+matmul: s m a p c\n"));
  }

  TEST_CASE("attention takes the heads' merge after it, not other transposes or a result that is an output") {
    auto graph = [](const std::string& perm, const std::string& outputs) {
      return R"(
graph g
input q: f32[1, 2, T, 4]
input k: f32[1, 2, 4, T]
input v: f32[1, 2, T, 4]
const merge: i64[3] = [0, 0, -1]
s = MatMul(q, k)
p = Softmax(s) {axis=-1}
c = MatMul(p, v)
t = Transpose(c) {perm=)" + perm + R"(}
r = Reshape(t, merge)
output )" + outputs + "\n";
    };
    // [1, 2, T, 4] -> [1, T, 2, 4]: the kernel stores rows where the merge puts them.
    std::string merged = graph("[0, 2, 1, 3]", "r");
    FUSOR_CHECK_GOLDEN(merged, groups_of(merged, {{"T", 5}}),
                       std::string("attention matmul+softmax+matmul+transpose: s p c t\nview reshape: r\n"));
    // The last axis moves: the store would scatter, so the transpose stays a view.
    std::string cols = graph("[0, 1, 3, 2]", "r");
    FUSOR_CHECK_GOLDEN(cols, groups_of(cols, {{"T", 5}}),
                       std::string("attention matmul+softmax+matmul: s p c\nview transpose: t\nview reshape: r\n"));
    // The context itself is an output: it is written as it is.
    std::string both = graph("[0, 2, 1, 3]", "r, c");
    FUSOR_CHECK_GOLDEN(both, groups_of(both, {{"T", 5}}),
                       std::string("attention matmul+softmax+matmul: s p c\nview transpose: t\nview reshape: r\n"));
  }

  TEST_CASE("an attention group splits into its products and its softmax, each with its inputs and outputs") {
    // A mask made for the scores alone (Where) joins the first product's epilogue; the heads'
    // merge joins the second's.
    const char* text = R"(
graph g
input q: f32[1, 2, T, 4]
input k: f32[1, 2, 4, T]
input v: f32[1, 2, T, 4]
input keep: bool[1, 1, 1, T]
const scale: f32[] = [0.5]
const zero: f32[] = [0]
const ninf: f32[] = [-1e9]
madd = Where(keep, zero, ninf)
s = MatMul(q, k)
m = Mul(s, scale)
a = Add(m, madd)
p = Softmax(a) {axis=-1}
c = MatMul(p, v)
t = Transpose(c) {perm=[0, 2, 1, 3]}
output t
)";
    FusedGraph f;
    const std::string whole = groups_of(text, {{"T", 5}}, &f);
    FUSOR_CHECK_GOLDEN(text, whole, std::string("attention where+matmul+mul+add+softmax+matmul+transpose: madd s m a p c t\n"));
    REQUIRE(f.groups.size() == 1);
    const std::vector<FusionGroup> parts = split_attention(f.graph, f.groups[0]);
    std::string got;
    auto names = [&](const std::vector<ValueId>& vs) {
      std::string out;
      for (ValueId v : vs) out += (out.empty() ? "" : ",") + f.graph.value(v).name;
      return out;
    };
    for (const FusionGroup& g : parts) {
      got += std::string(group_kind_name(g.kind)) + " " + g.pattern + " anchor " +
             f.graph.value(f.graph.node(g.anchor).outputs[0]).name + " in " + names(g.inputs) + " out " +
             names(g.outputs) + "\n";
    }
    FUSOR_CHECK_GOLDEN(text, got,
                       std::string("contraction matmul+where+mul+add anchor s in q,k,keep,zero,ninf,scale out a\n"
                                   "reduction softmax anchor p in a out p\n"
                                   "contraction matmul+transpose anchor c in p,v out t\n"));
  }

  TEST_CASE("attention is not formed when the probabilities are also an output") {
    const char* text = R"(
graph g
input q: f32[2, T, 4]
input k: f32[2, 4, T]
input v: f32[2, T, 4]
s = MatMul(q, k)
p = Softmax(s)
c = MatMul(p, v)
output c, p
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {{"T", 3}}),
                       std::string("contraction matmul: s\nreduction softmax: p\ncontraction matmul: c\n"));
  }
}

TEST_SUITE("ir/passes/explain") {
  TEST_CASE("the BERT layer fuses into 7 compute groups and the bottleneck into 3") {
    auto load = [](const char* name) {
      std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name);
      return std::string(std::istreambuf_iterator<char>(f), {});
    };
    FusedGraph bert = test::fuse_text(load("bert_layer"), {{"B", 1}, {"T", 128}});
    CHECK(bert.kernels_before == 30);
    CHECK(bert.kernels_after() == 7);
    CHECK(bert.intermediate_bytes_after() < bert.intermediate_bytes_before);
    std::string json = explain_json(bert, {{"B", 1}, {"T", 128}});
    CHECK(json.find("\"kernels_after\": 7") != std::string::npos);
    // The heads' merge ([B, 12, T, 64] -> [B, T, 12, 64]) is the attention kernel's store: no
    // Transpose is left to copy the context.
    CHECK(json.find("\"kind\": \"attention\", \"pattern\": \"matmul+mul+add+softmax+matmul+transpose\"") !=
          std::string::npos);
    for (const FusionGroup& grp : bert.groups)
      for (NodeId n : grp.nodes)
        if (bert.graph.node(n).op == OpKind::Transpose && bert.graph.node(n).name == "context_t")
          CHECK(grp.kind == GroupKind::Attention);
    FusedGraph res = test::fuse_text(load("resnet_bottleneck"), {{"N", 1}, {"H", 56}, {"W", 56}});
    CHECK(res.kernels_after() == 3);
    FUSOR_CHECK_GOLDEN(std::string("resnet_bottleneck"), test::group_summary(res),
                       std::string("contraction conv+relu: conv1 relu1\ncontraction conv+relu: conv2 relu2\n"
                                   "contraction conv+add+relu: conv3 shortcut y\n"));
    std::string text = explain_text(res, {{"N", 1}});
    CHECK(text.find("folded bn1 into Conv conv1") != std::string::npos);
    CHECK(text.find("10 unfused -> 3 fused") != std::string::npos);
  }
}

TEST_SUITE("ir/passes/group_fusions") {
  TEST_CASE("a BatchNorm that cannot fold joins the epilogue as a scale and shift") {
    // The weight is a graph input, so the BN stays; it is pointwise per channel and the
    // conv's epilogue applies it before the ReLU.
    const char* text = R"(
graph g
input x: f32[1, 4, 6, 6]
input w: f32[4, 4, 3, 3]
const g1: f32[4] = uniform(seed=4, low=0.5, high=1.5)
const be: f32[4] = randn(seed=5, std=0.1)
const mu: f32[4] = randn(seed=6, std=0.1)
const va: f32[4] = uniform(seed=7, low=0.5, high=1.5)
c = Conv(x, w) {pads=[1, 1, 1, 1]}
n = BatchNormalization(c, g1, be, mu, va)
y = Relu(n)
output y
)";
    FusedGraph f;
    std::string got = groups_of(text, {}, &f);
    FUSOR_CHECK_GOLDEN(text, got, std::string("contraction conv+batchnormalization+relu: c n y\n"));
    bool logged = false;
    for (const DeclinedFusion& d : f.log.declined) logged |= d.reason.find("not a constant") != std::string::npos;
    CHECK(logged);
  }

  TEST_CASE("gemm + bias + relu is one contraction group") {
    const char* text = R"(
graph g
input x: f32[5, 8]
const w: f32[6, 8] = randn(seed=1, std=0.2)
const b: f32[6] = randn(seed=2, std=0.1)
m = Gemm(x, w) {transB=1}
a = Add(m, b)
y = Relu(a)
output y
)";
    FUSOR_CHECK_GOLDEN(text, groups_of(text, {}), std::string("contraction gemm+add+relu: m a y\n"));
  }
}

TEST_SUITE("ir/passes/group_fusions") {
  TEST_CASE("the ONNX pointwise ops join pointwise groups and conv epilogues") {
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[1, 4, 6, 6]
const w: f32[4, 4, 1, 1] = randn(seed=1, std=0.5)
const zero: f32[] = [0.0]
const six: f32[] = [6.0]
c = Conv(x, w)
r = Clip(c, zero, six)
s = HardSwish(r)
t = Abs(s)
u = Log(t)
e = Equal(u, zero)
y = Where(e, zero, u)
output y
)",
                                   {});
    CHECK(test::group_summary(f).find("contraction conv+clip+hardswish+abs+log+equal+where") != std::string::npos);
  }

  TEST_CASE("an epilogue diamond joins whole: Where(IsNaN(o), 0, o) after a MatMul") {
    FusedGraph f = test::fuse_text(R"(graph g
input a: f32[4, 8]
input b: f32[8, 3]
const zero: f32[] = [0.0]
o = MatMul(a, b)
n = IsNaN(o)
y = Where(n, zero, o)
z = Relu(y)
output z
)",
                                   {});
    CHECK(test::group_summary(f).find("contraction matmul+isnan+where+relu") != std::string::npos);
  }
}

// Issue 20: compile time grows faster than a kernel's ops (asmjit's register allocation,
// LLVM's passes), so a group takes at most FusionOptions::max_group_ops.
TEST_SUITE("ir/passes/group_fusions") {
  TEST_CASE("a long pointwise chain and a long reduction prologue are cut at max_group_ops") {
    auto chain = [](int n, const char* tail) {
      std::ostringstream text;  // (not string +: GCC 12's -Wrestrict misfires on it)
      text << "graph g\ninput x: f32[4, 16]\nv0 = Neg(x)\n";
      for (int i = 1; i < n; ++i) text << "v" << i << " = " << (i % 2 ? "Relu" : "Abs") << "(v" << i - 1 << ")\n";
      return text.str() + tail;
    };
    for (int64_t cap : {256, 7}) {
      CAPTURE(cap);
      FusionOptions o;
      o.max_group_ops = cap;
      FusedGraph f = test::fuse_text(chain(1000, "output v999\n"), {}, o);
      size_t ops = 0;
      for (const FusionGroup& g : f.groups) {
        CHECK(int64_t(g.nodes.size()) <= cap);
        ops += g.nodes.size();
      }
      CHECK(ops == 1000);
      CHECK(int64_t(f.groups.size()) == (1000 + cap - 1) / cap);
      CHECK(declined(f, "group size"));
      // The same before a Softmax: its prologue stops at the cap too.
      FusedGraph r = test::fuse_text(chain(1000, "s = Softmax(v999) {axis=-1}\noutput s\n"), {}, o);
      for (const FusionGroup& g : r.groups) CHECK(int64_t(g.nodes.size()) <= cap);
    }
    FusionOptions a, b;
    b.max_group_ops = 7;
    CHECK(a.hash() != b.hash());  // a plan-cache key
  }
}
