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
