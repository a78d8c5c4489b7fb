// Fusion is checked numerically: every pattern and both reference graphs run fused and
// unfused on the static backend, on random inputs, and must agree.
//
// Tolerances: fused and unfused graphs evaluate the same math in a different order
// (BN folded into weights, GELU/LayerNorm/Softmax as single kernels, merged GEMMs), so
// results differ by float rounding. rtol 1e-4 / atol 1e-4 covers the float32 reassociation
// over K <= 3072 with O(1) activations; BN folding with tiny variances and large gamma
// gets rtol 2e-3 against outputs of magnitude ~1e3 (see that test).
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

std::string load(const char* name) {
  std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Runs g fused and unfused on the same inputs and compares every output.
void check_fused_matches_unfused(const Graph& g, const TensorMap& inputs, double rtol, double atol) {
  Engine fused(EngineOptions{.num_threads = 2});
  Engine unfused(EngineOptions{.num_threads = 2, .fuse = false});
  TensorMap a = fused.run(g, inputs);
  TensorMap b = unfused.run(g, inputs);
  REQUIRE(a.size() == b.size());
  for (const auto& row : b) {
    const auto& name = std::get<0>(row);
    const auto& t = std::get<1>(row);
    INFO("output " << name);
    FUSOR_CHECK_CLOSE(a.at(name), t, rtol, atol);
  }
}

}  // namespace

TEST_SUITE("jit/fusion") {
  TEST_CASE("BERT layer fused equals unfused at several batch sizes and lengths") {
    Graph g = parse_graph(load("bert_layer"));
    for (const auto& row : {std::pair<int64_t, int64_t>{1, 7}, {2, 16}, {1, 33}, {1, 128}}) {
      const auto& b = std::get<0>(row);
      const auto& t = std::get<1>(row);
      INFO("B=" << b << " T=" << t);
      TensorMap in{{"x", test::randn({b, t, 768}, 1)}, {"mask", test::uniform({b, 1, 1, t}, 2, -1.0, 0.0)}};
      check_fused_matches_unfused(g, in, 1e-4, 1e-4);
    }
  }

  TEST_CASE("ResNet bottleneck fused equals unfused at several resolutions") {
    Graph g = parse_graph(load("resnet_bottleneck"));
    for (const auto& row : {std::tuple<int64_t, int64_t, int64_t>{1, 9, 9}, {2, 14, 11}, {1, 56, 56}}) {
      const auto& n = std::get<0>(row);
      const auto& h = std::get<1>(row);
      const auto& w = std::get<2>(row);
      INFO("N=" << n << " H=" << h << " W=" << w);
      check_fused_matches_unfused(g, {{"x", test::randn({n, 256, h, w}, 3)}}, 1e-4, 1e-4);
    }
  }

  TEST_CASE("every pattern graph fused equals unfused") {
    const char* graphs[] = {
        // decomposed GELU (erf) after a matmul + bias
        R"(graph g
input x: f32[5, 8]
const w: f32[8, 8] = randn(seed=1, std=0.3)
const b: f32[8] = randn(seed=2, std=0.1)
const half: f32[] = [0.5]
const one: f32[] = [1.0]
const sqrt2: f32[] = [1.4142135]
m = MatMul(x, w)
a = Add(m, b)
d = Div(a, sqrt2)
e = Erf(d)
f = Add(e, one)
g1 = Mul(a, f)
y = Mul(g1, half)
output y
)",
        // decomposed GELU (tanh)
        R"(graph g
input x: f32[3, 17]
const half: f32[] = [0.5]
const one: f32[] = [1.0]
const c: f32[] = [0.7978845608]
const k: f32[] = [0.044715]
const three: f32[] = [3.0]
p = Pow(x, three)
q = Mul(k, p)
i = Add(x, q)
s = Mul(i, c)
t = Tanh(s)
a = Add(t, one)
h = Mul(half, x)
y = Mul(h, a)
output y
)",
        // decomposed LayerNorm after a residual add
        R"(graph g
input x: f32[4, 33]
input r: f32[4, 33]
const two: f32[] = [2.0]
const eps: f32[] = [1e-05]
const gamma: f32[33] = uniform(seed=1, low=0.5, high=1.5)
const beta: f32[33] = randn(seed=2, std=0.1)
x2 = Add(x, r)
mu = ReduceMean(x2) {axes=[-1]}
d = Sub(x2, mu)
p = Pow(d, two)
v = ReduceMean(p) {axes=[-1]}
ve = Add(v, eps)
s = Sqrt(ve)
n = Div(d, s)
g1 = Mul(n, gamma)
y = Add(g1, beta)
output y
)",
        // decomposed, shifted softmax with scale and mask
        R"(graph g
input x: f32[2, 3, 9]
input mask: f32[1, 1, 9]
const scale: f32[] = [0.3]
xs = Mul(x, scale)
xm = Add(xs, mask)
m = ReduceMax(xm) {axes=[-1]}
d = Sub(xm, m)
e = Exp(d)
s = ReduceSum(e) {axes=[-1]}
y = Div(e, s)
output y
)",
        // conv + bn + add + relu (residual), and a second conv branch
        R"(graph g
input x: f32[2, 6, 7, 9]
const w1: f32[6, 6, 3, 3] = randn(seed=1, std=0.2)
const w2: f32[6, 3, 1, 1] = randn(seed=2, std=0.2)
const g1: f32[6] = uniform(seed=3, low=0.5, high=1.5)
const b1: f32[6] = randn(seed=4, std=0.1)
const m1: f32[6] = randn(seed=5, std=0.1)
const v1: f32[6] = uniform(seed=6, low=0.5, high=1.5)
c1 = Conv(x, w1) {pads=[1, 1, 1, 1]}
n1 = BatchNormalization(c1, g1, b1, m1, v1)
c2 = Conv(x, w2) {group=2}
a = Add(n1, c2)
y = Relu(a)
output y
)",
        // gemm + bn, matmul + bn
        R"(graph g
input x: f32[7, 10]
const w: f32[12, 10] = randn(seed=1, std=0.3)
const c: f32[1, 12] = randn(seed=2, std=0.3)
const w2: f32[12, 5] = randn(seed=7, std=0.3)
const g1: f32[12] = uniform(seed=3, low=0.5, high=1.5)
const b1: f32[12] = randn(seed=4, std=0.1)
const m1: f32[12] = randn(seed=5, std=0.1)
const v1: f32[12] = uniform(seed=6, low=0.5, high=1.5)
const g2: f32[5] = uniform(seed=13, low=0.5, high=1.5)
const b2: f32[5] = randn(seed=14, std=0.1)
const m2: f32[5] = randn(seed=15, std=0.1)
const v2: f32[5] = uniform(seed=16, low=0.5, high=1.5)
h = Gemm(x, w, c) {transB=1, alpha=0.5, beta=2.0}
n = BatchNormalization(h, g1, b1, m1, v1)
r = Relu(n)
m = MatMul(r, w2)
y = BatchNormalization(m, g2, b2, m2, v2)
output y
)",
        // a 1-D convolution as ONNX loads it (Unsqueeze, 2-D Conv, Squeeze): BN, ReLU and
        // operands of every rank after the Squeeze, which sink_squeezes moves below them
        R"(graph g
input x: f32[2, 8, 11]
const w: f32[16, 8, 1, 3] = randn(seed=1, std=0.3)
const b: f32[16] = randn(seed=2, std=0.1)
const h: i64[1] = [2]
const s: f32[16] = randn(seed=3, std=0.5)
const bb: f32[16] = randn(seed=4, std=0.5)
const mu: f32[16] = randn(seed=5, std=0.5)
const v: f32[16] = uniform(seed=6, low=0.5, high=2.0)
const pc: f32[16, 1] = randn(seed=7, std=1.0)
const row: f32[11] = randn(seed=8, std=1.0)
xu = Unsqueeze(x, h)
c = Conv(xu, w, b) {pads=[0, 1, 0, 1], strides=[1, 1]}
y = Squeeze(c, h)
n = BatchNormalization(y, s, bb, mu, v)
r = Relu(n)
a = Add(r, pc)
p = Mul(a, row)
t = ReduceMean(x) {axes=[1], keepdims=1}
z = Sub(p, t)
g2 = Gelu(z)
output g2
output y
)",
    };
    for (const char* text : graphs) {
      Graph g = parse_graph(text);
      TensorMap in;
      for (ValueId v : g.inputs()) {
        std::vector<int64_t> dims;
        for (const Dim& d : g.value(v).dims) dims.push_back(d.size);
        in[g.value(v).name] = test::randn(Shape(dims), uint64_t(v) + 11);
      }
      INFO(text);
      check_fused_matches_unfused(g, in, 1e-4, 1e-4);
    }
  }

  TEST_CASE("BN folding with tiny variances and large gamma matches unfused") {
    // var = 1e-8 and gamma = 100 give scales of 1e6; the outputs reach ~1e3 after the
    // mean shift, and folding reorders (x*w)*s into x*(w*s). Measured max relative error is
    // ~1e-4; the tolerance documents 2e-3.
    const char* text = R"(graph g
input x: f32[1, 4, 6, 6]
const w: f32[4, 4, 3, 3] = randn(seed=1, std=0.2)
const gamma: f32[4] = [100.0, 50.0, 1.0, 100.0]
const beta: f32[4] = [0.0, 1.0, -1.0, 0.5]
const mean: f32[4] = randn(seed=5, std=0.001)
const var: f32[4] = [1e-08, 1e-06, 1e-10, 1.0]
c = Conv(x, w) {pads=[1, 1, 1, 1]}
y = BatchNormalization(c, gamma, beta, mean, var) {epsilon=0.0}
output y
)";
    Graph g = parse_graph(text);
    check_fused_matches_unfused(g, {{"x", test::randn({1, 4, 6, 6}, 9)}}, 2e-3, 1e-2);
  }

  TEST_CASE("a plan is built once per shape and reused") {
    Graph g = parse_graph(load("resnet_bottleneck"));
    Engine engine;
    engine.run(g, {{"x", test::randn({1, 256, 5, 5}, 1)}});
    engine.run(g, {{"x", test::randn({1, 256, 5, 5}, 2)}});
    engine.run(g, {{"x", test::randn({1, 256, 6, 5}, 3)}});
    EngineStats s = engine.stats();
    CHECK(s.plan_misses == 2);
    CHECK(s.plan_hits == 1);
    CHECK(s.plans == 2);
  }

  TEST_CASE("explain through the engine names groups and counts kernels") {
    Graph g = parse_graph(load("bert_layer"));
    Engine engine;
    std::string json = engine.explain(g, {{"B", 1}, {"T", 128}}, true);
    CHECK(json.find("\"kernels_before\": 30") != std::string::npos);
    CHECK(json.find("\"kernels_after\": 7") != std::string::npos);
    std::string text = engine.explain(g, {{"B", 1}, {"T", 16}});
    CHECK(text.find("merged 3 MatMuls") != std::string::npos);
    CHECK_THROWS_AS(engine.explain(g, {{"B", 1}}), Error);
  }
}
