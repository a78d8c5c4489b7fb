#include <doctest/doctest.h>

#include "ir/passes/recognize_patterns.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"

using namespace fusor;

namespace {

std::string recognize(const std::string& body, FusionLog* log, std::string* before) {
  std::string text = "graph g\ninput x: f32[2, 8]\n" + body;
  Graph g = test::trace_text(text, {});
  *before = test::structure(g);
  return test::structure(recognize_patterns(g, FusionOptions{}, log));
}

const char* kConsts = R"(
const half: f32[] = [0.5]
const one: f32[] = [1.0]
const sqrt2: f32[] = [1.4142135]
const inv_sqrt2: f32[] = [0.70710678]
const c: f32[] = [0.7978845608]
const k: f32[] = [0.044715]
const three: f32[] = [3.0]
const two: f32[] = [2.0]
const eps: f32[] = [1e-05]
const gamma: f32[8] = uniform(seed=1, low=0.5, high=1.5)
const beta: f32[8] = randn(seed=2, std=0.1)
)";

}  // namespace

TEST_SUITE("ir/passes/recognize_patterns") {
  TEST_CASE("GELU erf form in each association collapses to Gelu") {
    const char* bodies[] = {
        // PyTorch's export: ((x * (1 + erf(x / sqrt2))) * 0.5
        "d = Div(x, sqrt2)\ne = Erf(d)\na = Add(e, one)\nm = Mul(x, a)\ny = Mul(m, half)\noutput y\n",
        // (x * 0.5) * (1 + erf(x * 1/sqrt2))
        "d = Mul(x, inv_sqrt2)\ne = Erf(d)\na = Add(one, e)\nh = Mul(x, half)\ny = Mul(h, a)\noutput y\n",
        // ((1 + erf) * 0.5) * x
        "d = Div(x, sqrt2)\ne = Erf(d)\na = Add(e, one)\nm = Mul(a, half)\ny = Mul(m, x)\noutput y\n",
    };
    for (const char* body : bodies) {
      FusionLog log;
      std::string before;
      std::string after = recognize(std::string(kConsts) + body, &log, &before);
      FUSOR_CHECK_GOLDEN(before, after, std::string("y = Gelu(x)\noutput y"));
      REQUIRE(log.applied.size() == 1);
      CHECK(log.applied[0].message.find("gelu_erf") != std::string::npos);
    }
  }

  TEST_CASE("GELU tanh form with Pow and with x*x*x collapses to Gelu tanh") {
    const char* bodies[] = {
        "p = Pow(x, three)\nq = Mul(k, p)\ni = Add(x, q)\ns = Mul(i, c)\nt = Tanh(s)\na = Add(t, one)\n"
        "h = Mul(half, x)\ny = Mul(h, a)\noutput y\n",
        "sq = Mul(x, x)\np = Mul(sq, x)\nq = Mul(p, k)\ni = Add(q, x)\ns = Mul(c, i)\nt = Tanh(s)\n"
        "a = Add(one, t)\nm = Mul(x, a)\ny = Mul(m, half)\noutput y\n",
    };
    for (const char* body : bodies) {
      FusionLog log;
      std::string before;
      std::string after = recognize(std::string(kConsts) + body, &log, &before);
      FUSOR_CHECK_GOLDEN(before, after, std::string("y = Gelu(x)\noutput y"));
      Graph g = recognize_patterns(test::trace_text(std::string("graph g\ninput x: f32[2, 8]\n") + kConsts + body, {}),
                                   FusionOptions{}, &log);
      CHECK(g.node(0).attrs.at("approximate").s() == "tanh");
    }
  }

  TEST_CASE("an intermediate used outside the pattern blocks the match") {
    FusionLog log;
    std::string before;
    std::string after = recognize(std::string(kConsts) +
                                      "d = Div(x, sqrt2)\ne = Erf(d)\na = Add(e, one)\nm = Mul(x, a)\n"
                                      "y = Mul(m, half)\noutput y\noutput e\n",
                                  &log, &before);
    CHECK(after == before);
  }

  TEST_CASE("decomposed LayerNorm collapses with axis and epsilon") {
    const char* body = R"(mu = ReduceMean(x) {axes=[-1]}
d = Sub(x, mu)
p = Pow(d, two)
v = ReduceMean(p) {axes=[-1]}
ve = Add(v, eps)
s = Sqrt(ve)
n = Div(d, s)
g1 = Mul(n, gamma)
y = Add(g1, beta)
output y
)";
    FusionLog log;
    std::string before;
    std::string after = recognize(std::string(kConsts) + body, &log, &before);
    FUSOR_CHECK_GOLDEN(before, after, std::string("y = LayerNormalization(x, gamma, beta)\noutput y"));
    Graph g = recognize_patterns(test::trace_text(std::string("graph g\ninput x: f32[2, 8]\n") + kConsts + body, {}),
                                 FusionOptions{}, &log);
    CHECK(g.node(0).attrs.at("axis").i() == 1);
    CHECK(g.node(0).attrs.at("epsilon").f() == doctest::Approx(1e-5));
  }

  TEST_CASE("the exporters' decomposed LayerNorm: opset-18 axes inputs and the tanh GELU with Pow") {
    // torch.onnx at opset < 17 (TorchScript) writes LayerNorm this way; at opset 18 the
    // ReduceMeans take their axes as an input. GPT-2's gelu_new spells x^3 as Pow(x, 3).
    const char* body = R"(const ax: i64[1] = [-1]
mu = ReduceMean(x, ax)
d = Sub(x, mu)
p = Pow(d, two)
v = ReduceMean(p, ax)
ve = Add(v, eps)
s = Sqrt(ve)
n = Div(d, s)
g1 = Mul(n, gamma)
y = Add(g1, beta)
h = Mul(y, half)
cube = Pow(y, three)
kc = Mul(cube, k)
in = Add(y, kc)
sc = Mul(in, c)
t = Tanh(sc)
a = Add(t, one)
z = Mul(h, a)
output z
)";
    FusionLog log;
    std::string before;
    std::string after = recognize(std::string(kConsts) + body, &log, &before);
    FUSOR_CHECK_GOLDEN(before, after, std::string("y = LayerNormalization(x, gamma, beta)\nz = Gelu(y)\noutput z"));
  }

  TEST_CASE("decomposed Softmax collapses with and without the shift") {
    FusionLog log;
    std::string before;
    std::string after = recognize(
        std::string(kConsts) + "e = Exp(x)\ns = ReduceSum(e) {axes=[1]}\ny = Div(e, s)\noutput y\n", &log, &before);
    FUSOR_CHECK_GOLDEN(before, after, std::string("y = Softmax(x)\noutput y"));
    after = recognize(std::string(kConsts) +
                          "m = ReduceMean(x) {axes=[-1]}\nd = Sub(x, m)\ne = Exp(d)\ns = ReduceSum(e) {axes=[-1]}\n"
                          "y = Div(e, s)\noutput y\n",
                      &log, &before);
    // The shift's producer stays until dead-code elimination removes it.
    FUSOR_CHECK_GOLDEN(before, after, std::string("m = ReduceMean(x)\ny = Softmax(x)\noutput y"));
    after = recognize(std::string(kConsts) +
                          "m = ReduceMax(x) {axes=[1]}\nd = Sub(x, m)\ne = Exp(d)\ns = ReduceSum(e) {axes=[1]}\n"
                          "y = Div(e, s)\noutput y\n",
                      &log, &before);
    FUSOR_CHECK_GOLDEN(before, after, std::string("m = ReduceMax(x)\ny = Softmax(x)\noutput y"));
  }

  TEST_CASE("a softmax sum over a different axis than the division is not matched") {
    FusionLog log;
    std::string before;
    std::string after = recognize(
        std::string(kConsts) + "e = Exp(x)\ns = ReduceSum(e) {axes=[0, 1]}\ny = Div(e, s)\noutput y\n", &log, &before);
    CHECK(after == before);
  }
}
