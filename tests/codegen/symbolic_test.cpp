// symbolize() and normalize_dims() (codegen/symbolic.h): which groups get a symbolic form
// (only those whose specs differ in nothing but the outer extent once normalized), which are
// declined and why, and that a symbolic spec is its own code (hash, printing).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "codegen/lower.h"
#include "codegen/symbolic.h"
#include "tests/support/pass_util.h"

using namespace fusor;

namespace {

std::string bert_layer() {
  std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/bert_layer");
  std::stringstream ss;
  ss << f.rdbuf();
  REQUIRE(!ss.str().empty());
  return ss.str();
}

// Every group's (exact at `dims`, symbolized against `ref_dims`) outcome: the spec's name
// and either the extent or the reason.
struct Outcome {
  std::string name;
  KernelKind kind;
  std::optional<SymbolicSpec> sym;
  std::string why;
};

std::vector<Outcome> symbolize_groups(const std::string& text, const DimBindings& dims, const DimBindings& ref_dims) {
  const FusedGraph f = test::fuse_text(text, dims), ref = test::fuse_text(text, ref_dims);
  REQUIRE(f.groups.size() == ref.groups.size());
  std::vector<Outcome> out;
  for (size_t i = 0; i < f.groups.size(); ++i) {
    std::optional<KernelSpec> a = lower_group(f, f.groups[i], nullptr), b = lower_group(ref, ref.groups[i], nullptr);
    if (!a || !b) continue;
    Outcome o{a->name, a->kind, std::nullopt, ""};
    o.sym = symbolize(*a, *b, &o.why);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

TEST_SUITE("codegen/symbolic") {
  TEST_CASE("the BERT layer: GEMMs, LayerNorms and, at batch 1, its 12-head attention become symbolic") {
    const std::string bert = bert_layer();
    for (int64_t b : {1, 2}) {
      CAPTURE(b);
      std::vector<Outcome> outs = symbolize_groups(bert, {{"B", b}, {"T", 37}}, {{"B", b}, {"T", 64}});
      int gemms = 0, norms = 0, attention = 0;
      for (const Outcome& o : outs) {
        CAPTURE(o.name);
        CAPTURE(o.why);
        if (o.kind == KernelKind::Attention) {
          // The context is stored through the heads' merge, [T, 12, 64]: every stride is
          // fixed at batch 1. At batch 2 the batch strides (T x 2304, T x 768) grow with T.
          ++attention;
          if (b == 2) {
            CHECK_FALSE(o.sym);
            CHECK(o.why.find("change with the varying dimension") != std::string::npos);
            continue;
          }
          REQUIRE(o.sym);
          CHECK(o.sym->extent == 37);
          CHECK(o.sym->spec.attention.tq == 0);
          CHECK(o.sym->spec.attention.tk == 0);
          CHECK(o.sym->spec.attention.epilogue.accesses.back().strides == std::vector<int64_t>{64, 768, 1});
          continue;
        }
        REQUIRE(o.sym);
        CHECK(o.sym->spec.symbolic);
        CHECK(o.sym->spec.tasks == 0);
        if (o.kind == KernelKind::Contraction) {
          CHECK(o.sym->extent == b * 37);  // [B, T, 768] x [768, N]: B*T rows
          CHECK(o.sym->spec.contraction.m == 0);
          CHECK(o.sym->spec.contraction.batch.empty());
          ++gemms;
        } else {
          CHECK(o.kind == KernelKind::RowReduction);
          CHECK(o.sym->extent == b * 37);
          CHECK(o.sym->spec.reduction.shape == std::vector<int64_t>{0, 768});
          ++norms;
        }
      }
      CHECK(gemms == 4);  // the merged QKV projection, the output projection, both FFN GEMMs
      CHECK(norms == 2);
      CHECK(attention == 1);
    }
  }

  TEST_CASE("symbolic specs of two lengths are the same code; the exact ones are not") {
    const std::string bert = bert_layer();
    const FusedGraph f7 = test::fuse_text(bert, {{"B", 1}, {"T", 7}}), f99 = test::fuse_text(bert, {{"B", 1}, {"T", 99}});
    const FusedGraph ref = test::fuse_text(bert, {{"B", 1}, {"T", 16}});
    int compared = 0;
    for (size_t i = 0; i < f7.groups.size(); ++i) {
      std::optional<KernelSpec> a = lower_group(f7, f7.groups[i], nullptr), b = lower_group(f99, f99.groups[i], nullptr),
                                r = lower_group(ref, ref.groups[i], nullptr);
      if (!a || a->kind == KernelKind::Attention) continue;
      std::optional<SymbolicSpec> sa = symbolize(*a, *r, nullptr), sb = symbolize(*b, *r, nullptr);
      REQUIRE(sa);
      REQUIRE(sb);
      CHECK_FALSE(a->same_code(*b));
      CHECK(sa->spec.same_code(sb->spec));
      CHECK(sa->spec.hash() == sb->spec.hash());
      CHECK(sa->spec.key_bytes() == sb->spec.key_bytes());
      CHECK(sa->spec.hash() != a->hash());
      CHECK(sa->spec.str().find("symbolic outer extent") != std::string::npos);
      CHECK(sa->extent == 7);
      CHECK(sb->extent == 99);
      ++compared;
    }
    CHECK(compared == 6);
  }

  TEST_CASE("groups whose other fields follow the dim are declined with the reason") {
    // A head-split space [B, 12, T, 64] (its head stride is T*64), a mean over T (1/T is a
    // constant of the spec), and a group that does not depend on T at all.
    const char* text = R"(graph g
input x: f32[1, T, 24]
input w: f32[5, 7]
const split: i64[4] = [0, 0, 4, 6]
h = Reshape(x, split)
ht = Transpose(h) {perm=[0, 2, 1, 3]}
e = Exp(ht)
xt = Transpose(x) {perm=[0, 2, 1]}
m = ReduceMean(xt) {axes=[-1], keepdims=1}
v = Sigmoid(w)
output e, m, v
)";
    std::vector<Outcome> outs = symbolize_groups(text, {{"T", 9}}, {{"T", 13}});
    REQUIRE(outs.size() >= 3);
    for (const Outcome& o : outs) {
      CAPTURE(o.name);
      CHECK_FALSE(o.sym);
      CHECK_FALSE(o.why.empty());
    }
    bool independent = false, strides = false;
    for (const Outcome& o : outs) {
      independent |= o.why.find("does not depend") != std::string::npos;
      strides |= o.why.find("change with the varying dimension") != std::string::npos;
    }
    CHECK(independent);
    CHECK(strides);
  }

  TEST_CASE("normalize_dims drops unit dims and folds a shared-weight batch into rows") {
    const FusedGraph f = test::fuse_text(R"(graph g
input a: f32[3, 1, 5, 8]
const w: f32[8, 6] = randn(seed=1, std=1)
y = MatMul(a, w)
output y
)",
                                         {});
    std::optional<KernelSpec> s = lower_group(f, f.groups[0], nullptr);
    REQUIRE(s);
    REQUIRE(s->kind == KernelKind::Contraction);
    const KernelSpec n = normalize_dims(*s);
    CHECK(n.contraction.batch.empty());
    CHECK(n.contraction.m == 15);
    CHECK(n.contraction.a.strides == std::vector<int64_t>{8, 1});
    CHECK(n.contraction.epilogue.accesses[0].strides == std::vector<int64_t>{6, 1});
    // A batched product with per-batch weights keeps its batch.
    const FusedGraph g = test::fuse_text(R"(graph g
input a: f32[3, 5, 8]
input b: f32[3, 8, 6]
y = MatMul(a, b)
output y
)",
                                         {});
    std::optional<KernelSpec> t = lower_group(g, g.groups[0], nullptr);
    REQUIRE(t);
    CHECK(normalize_dims(*t).contraction.batch == std::vector<int64_t>{3});
  }

  TEST_CASE("a symbolic spec is not symbolized again, and kinds must match") {
    const FusedGraph f = test::fuse_text("graph g\ninput x: f32[T, 16]\ny = Tanh(x)\noutput y\n", {{"T", 4}});
    const FusedGraph r = test::fuse_text("graph g\ninput x: f32[T, 16]\ny = Tanh(x)\noutput y\n", {{"T", 6}});
    std::optional<KernelSpec> a = lower_group(f, f.groups[0], nullptr), b = lower_group(r, r.groups[0], nullptr);
    REQUIRE(a);
    REQUIRE(b);
    std::string why;
    std::optional<SymbolicSpec> s = symbolize(*a, *b, &why);
    REQUIRE(s);
    CHECK(s->extent == 64);  // the space collapses to one run of T*16 elements
    CHECK_FALSE(symbolize(s->spec, *b, &why));
    CHECK(why.find("already symbolic") != std::string::npos);
  }

  TEST_CASE("malformed specs (strides of the wrong rank) are left as they are, never read past") {
    const FusedGraph f = test::fuse_text("graph g\ninput x: f32[1, T, 16]\nconst b: f32[16] = randn(seed=1, std=1)\n"
                                         "y = Add(x, b)\noutput y\n",
                                         {{"T", 4}});
    std::optional<KernelSpec> a = lower_group(f, f.groups[0], nullptr);
    REQUIRE(a);
    KernelSpec bad = *a;
    bad.pointwise.body.accesses[0].strides.pop_back();
    const KernelSpec n = normalize_dims(bad);
    CHECK(n.pointwise.body.accesses[0].strides == bad.pointwise.body.accesses[0].strides);
    std::string why;
    CHECK_FALSE(symbolize(bad, *a, &why));  // the two no longer agree
    CHECK_FALSE(why.empty());
  }
}
