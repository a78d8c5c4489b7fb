#include <doctest/doctest.h>

#include "ir/passes/merge_parallel_matmuls.h"
#include "ir/passes/trace.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"

using namespace fusor;

TEST_SUITE("ir/passes/merge_parallel_matmuls") {
  TEST_CASE("Q K V projections with biases merge into one MatMul and Add split by Slices") {
    const char* text = R"(
graph qkv
input x: f32[1, T, 16]
const wq: f32[16, 16] = randn(seed=1, std=0.1)
const wk: f32[16, 16] = randn(seed=2, std=0.1)
const wv: f32[16, 8] = randn(seed=3, std=0.1)
const bq: f32[16] = randn(seed=4, std=0.1)
const bk: f32[16] = randn(seed=5, std=0.1)
const bv: f32[8] = randn(seed=6, std=0.1)
q0 = MatMul(x, wq)
q = Add(q0, bq)
k0 = MatMul(x, wk)
k = Add(k0, bk)
v0 = MatMul(x, wv)
v = Add(bv, v0)
output q, k, v
)";
    Graph before = test::trace_text(text, {{"T", 5}});
    FusionLog log;
    Graph after = merge_parallel_matmuls(before, FusionOptions{}, &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("q0.merged = MatMul(x, q0.w_merged)\n"
                                   "q0.merged.bias = Add(q0.merged, q0.b_merged)\n"
                                   "q = Slice(q0.merged.bias, q.start, q.end, q0.merged.axis)\n"
                                   "k = Slice(q0.merged.bias, k.start, k.end, q0.merged.axis)\n"
                                   "v = Slice(q0.merged.bias, v.start, v.end, q0.merged.axis)\n"
                                   "output q, k, v"));
    CHECK(after.constant_data(after.find_value("q0.w_merged"))->shape() == Shape{16, 40});
    CHECK(log.applied.size() == 1);
  }

  TEST_CASE("without a bias on every member only the MatMuls merge") {
    const char* text = R"(
graph qk
input x: f32[3, 4]
const wq: f32[4, 2] = randn(seed=1, std=0.1)
const wk: f32[4, 3] = randn(seed=2, std=0.1)
const bq: f32[2] = randn(seed=4, std=0.1)
q0 = MatMul(x, wq)
q = Add(q0, bq)
k = MatMul(x, wk)
output q, k
)";
    Graph before = test::trace_text(text, {});
    FusionLog log;
    Graph after = merge_parallel_matmuls(before, FusionOptions{}, &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("q0.merged = MatMul(x, q0.w_merged)\n"
                                   "q0 = Slice(q0.merged, q0.start, q0.end, q0.merged.axis)\n"
                                   "k = Slice(q0.merged, k.start, k.end, q0.merged.axis)\n"
                                   "q = Add(q0, bq)\noutput q, k"));
  }

  TEST_CASE("MatMuls with different activations or non-constant weights stay apart") {
    const char* text = R"(
graph apart
input x: f32[3, 4]
input y: f32[3, 4]
input w: f32[4, 4]
const wk: f32[4, 3] = randn(seed=2, std=0.1)
a = MatMul(x, w)
b = MatMul(x, wk)
c = MatMul(y, wk)
output a, b, c
)";
    Graph before = test::trace_text(text, {});
    FusionLog log;
    Graph after = merge_parallel_matmuls(before, FusionOptions{}, &log);
    CHECK(test::structure(after) == test::structure(before));
  }

  TEST_CASE("merged weights are derived constants: a memo returns the same storage for every shape") {
    const char* text = R"(
graph qk
input x: f32[T, 4]
const wq: f32[4, 2] = randn(seed=1, std=0.1)
const wk: f32[4, 3] = randn(seed=2, std=0.1)
q = MatMul(x, wq)
k = MatMul(x, wk)
output q, k
)";
    // A memo like the engine's: by recipe and source storage.
    std::vector<std::pair<ConstantDerivation, std::vector<Tensor>>> memo;
    int made = 0;
    DeriveConstants derive = [&](const ConstantDerivation& d, const std::function<std::vector<Tensor>()>& make) {
      for (const auto& [key, value] : memo) {
        bool same = key.recipe == d.recipe && key.sources.size() == d.sources.size();
        for (size_t i = 0; same && i < d.sources.size(); ++i) same = key.sources[i].raw() == d.sources[i].raw();
        if (same) return value;
      }
      ++made;
      memo.emplace_back(d, make());
      return memo.back().second;
    };
    const Graph g = parse_graph(text);
    std::vector<const void*> merged;
    for (int64_t t : {3, 7, 12}) {
      Graph before = trace(g, {TensorType{DType::F32, Shape{t, 4}}}, test::static_evaluator()).graph;
      FusionLog log;
      Graph after = merge_parallel_matmuls(before, FusionOptions{}, &log, derive);
      const Tensor* w = after.constant_data(after.find_value("q.w_merged"));
      REQUIRE(w);
      CHECK(w->shape() == Shape{4, 5});
      CHECK(w->at(4 * 5 - 1) == doctest::Approx(g.constant_data(g.find_value("wk"))->at(4 * 3 - 1)));
      merged.push_back(w->raw());
    }
    CHECK(made == 1);  // derived once: the sources are the graph's own constants
    REQUIRE(memo.size() == 1);
    CHECK(memo[0].first.recipe == "merge_parallel_matmuls.concat_columns");
    CHECK(memo[0].first.sources.size() == 2);
    CHECK(merged[0] == merged[1]);
    CHECK(merged[1] == merged[2]);
  }
}
