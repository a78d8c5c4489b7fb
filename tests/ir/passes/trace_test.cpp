#include <doctest/doctest.h>

#include "ir/passes/trace.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"

using namespace fusor;

namespace {
// A reshape whose target is computed from the input's shape, as exporters write it.
const char* kDynamicReshape = R"(
graph dyn
input x: f32[B, T, 768]
const zero: i64[] = [0]
const one: i64[] = [1]
const heads: i64[1] = [12]
const dh: i64[1] = [64]
s = Shape(x)
b = Gather(s, zero)
t = Gather(s, one)
bu = Unsqueeze(b) {axes=[0]}
tu = Unsqueeze(t) {axes=[0]}
shape = Concat(bu, tu, heads, dh) {axis=0}
y = Reshape(x, shape)
output y
)";
}  // namespace

TEST_SUITE("ir/passes/trace") {
  TEST_CASE("shape computations fold to constants for each bound size") {
    for (int64_t t : {1, 7, 128}) {
      Graph before = parse_graph(kDynamicReshape);
      Graph g = test::trace_text(kDynamicReshape, {{"B", 2}, {"T", t}});
      std::string expected = "y = Reshape(x, shape)\noutput y";
      FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(g), expected);
      const Tensor* shape = g.constant_data(g.find_value("shape"));
      REQUIRE(shape != nullptr);
      CHECK(shape->at(0) == 2);
      CHECK(shape->at(1) == double(t));
      CHECK(shape->at(2) == 12);
      CHECK(shape->at(3) == 64);
      // The traced input has concrete dims.
      CHECK(g.value(g.inputs()[0]).dims[1].size == t);
    }
  }

  TEST_CASE("constant subgraphs fold and Range is evaluated") {
    const char* text = R"(
graph c
input x: f32[N, 4]
const w: f32[4, 4] = randn(seed=1, std=1.0)
const start: i64[] = [0]
const limit: i64[] = [4]
const step: i64[] = [1]
wt = Transpose(w) {perm=[1, 0]}
r = Range(start, limit, step)
rf = Cast(r) {to="f32"}
y = MatMul(x, wt)
z = Add(y, rf)
output z
)";
    Graph g = test::trace_text(text, {{"N", 3}});
    FUSOR_CHECK_GOLDEN(test::structure(parse_graph(text)), test::structure(g),
                       std::string("y = MatMul(x, wt)\nz = Add(y, rf)\noutput z"));
    CHECK(g.constant_data(g.find_value("rf"))->at(3) == 3.0);
  }

  TEST_CASE("a value that depends on an input is not folded") {
    const char* text = "graph g\ninput x: f32[N]\ny = Neg(x)\noutput y\n";
    Graph g = test::trace_text(text, {{"N", 5}});
    CHECK(test::structure(g) == "y = Neg(x)\noutput y");
  }
}

TEST_SUITE("ir/passes/trace") {
  TEST_CASE("causal and position masks built from shapes fold to constants") {
    // GPT-2 style: ones of [T, T] from the input's shape, Trilu, compared, a Where to the
    // additive mask; BERT style: position ids by CumSum of ones and an Expand; Range with
    // LessOrEqual as the torch.export masks write it.
    const char* text = R"(graph masks
input x: f32[B, T, 8]
const ax0: i64[1] = [0]
const two: i64[1] = [1]
const idx1: i64[] = [1]
const zero: f32[] = [0.0]
const neg: f32[] = [-10000.0]
const r0: i64[] = [0]
const r1: i64[] = [1]
s = Shape(x)
t = Gather(s, idx1)
tt = Unsqueeze(t, ax0)
sq = Concat(tt, tt) {axis=0}
ones = ConstantOfShape(sq) {dtype="bool", value=1.0}
tri = Trilu(ones) {upper=0}
add = Where(tri, zero, neg)
o1 = ConstantOfShape(tt) {dtype="i64", value=1.0}
pos = CumSum(o1, r0)
bs = Shape(x) {end=2}
pe = Expand(pos, bs)
ar = Range(r0, t, r1)
q = Unsqueeze(ar, two)
le = LessOrEqual(ar, q)
y = Add(x, zero)
output y, add, pe, le
)";
    Graph g = test::trace_text(text, {{"B", 2}, {"T", 5}});
    CHECK(g.nodes().size() == 1);  // only y = x + 0 depends on the data
    const Tensor& mask = *g.constant_data(g.find_value("add"));
    CHECK(mask.shape() == Shape{5, 5});
    CHECK(mask.at(1) == -10000.0);  // above the diagonal
    CHECK(mask.at(5) == 0.0);       // row 1, column 0
    const Tensor& pe = *g.constant_data(g.find_value("pe"));
    CHECK(pe.shape() == Shape{2, 5});
    CHECK(pe.at(9) == 5.0);
    const Tensor& le = *g.constant_data(g.find_value("le"));
    CHECK(le.shape() == Shape{5, 5});
    CHECK(le.at(1) == 0.0);  // [i, j] = j <= i: the causal pattern
    CHECK(le.at(5) == 1.0);
  }
}
