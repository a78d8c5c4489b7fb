// The structure sink_squeezes gives; tests/jit/fusion_test.cpp runs the same graphs fused
// and unfused.
#include <doctest/doctest.h>

#include "ir/passes/sink_squeezes.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"

using namespace fusor;

namespace {

// A 1-D convolution as the ONNX loader writes it: the 2-D one over [N, C, 1, L], a Squeeze,
// then what the model puts after it.
std::string conv1d_graph(const std::string& after) {
  return R"(
graph conv1d
input x: f32[2, 8, L]
const w: f32[16, 8, 1, 3] = randn(seed=1, std=0.3)
const b: f32[16] = randn(seed=2, std=0.1)
const h: i64[1] = [2]
xu = Unsqueeze(x, h)
c = Conv(xu, w, b) {pads=[0, 1, 0, 1]}
y = Squeeze(c, h)
)" + after;
}

}  // namespace

TEST_SUITE("ir/passes/sink_squeezes") {
  TEST_CASE("a 1-D convolution's BN folds and its activation fuses once the Squeeze is sunk") {
    const std::string text = conv1d_graph(R"(const s: f32[16] = randn(seed=3, std=0.5)
const bb: f32[16] = randn(seed=4, std=0.5)
const m: f32[16] = randn(seed=5, std=0.5)
const v: f32[16] = uniform(seed=6, low=0.5, high=2.0)
n = BatchNormalization(y, s, bb, m, v)
r = Relu(n)
output r
)");
    Graph before = test::trace_text(text, {{"L", 11}});
    FusionLog log;
    Graph after = sink_squeezes(before, FusionOptions{}, &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("xu = Unsqueeze(x, h)\n"
                                   "c = Conv(xu, w, b)\n"
                                   "n_full = BatchNormalization(c, s, bb, m, v)\n"
                                   "r_full = Relu(n_full)\n"
                                   "r = Squeeze(r_full, r_axes)\n"
                                   "output r"));
    CHECK(log.applied.size() == 2);
    FusedGraph f = test::fuse_text(text, {{"L", 11}});
    CHECK(test::group_summary(f).find("contraction conv+relu") != std::string::npos);
  }

  TEST_CASE("operands are lifted to the convolution's rank: a per-channel [16, 1], a row [L], a scalar, a computed one") {
    const std::string text = conv1d_graph(R"(const pc: f32[16, 1] = randn(seed=7, std=1.0)
const row: f32[11] = randn(seed=8, std=1.0)
const half: f32[] = [0.5]
a = Add(y, pc)
p = Mul(a, row)
q = Mul(p, half)
t = ReduceMean(x) {axes=[1], keepdims=1}
z = Sub(q, t)
g = Gelu(z)
output g
)");
    Graph before = test::trace_text(text, {{"L", 11}});
    FusionLog log;
    Graph after = sink_squeezes(before, FusionOptions{}, &log);
    const std::string s = test::structure(after);
    INFO(s);
    CHECK(s.find("a_full = Add(c, pc_lifted)") != std::string::npos);  // [16, 1] -> [16, 1, 1]
    CHECK(s.find("p_full = Mul(a_full, row)") != std::string::npos);   // [11] spans no squeezed axis
    CHECK(s.find("q_full = Mul(p_full, half)") != std::string::npos);
    CHECK(s.find("t_lifted = Reshape(t, t_lifted_shape)") != std::string::npos);  // [2, 1, 11] -> [2, 1, 1, 11]
    CHECK(s.find("g = Squeeze(g_full, g_axes)") != std::string::npos);
    FusedGraph f = test::fuse_text(text, {{"L", 11}});
    CHECK(test::group_summary(f).find("contraction conv+add+mul+mul+sub+gelu") != std::string::npos);
  }

  TEST_CASE("what is not sunk: a squeeze of a non-contraction, BN over a squeezed channel axis, a graph output") {
    // The squeeze of an input: untouched.
    Graph plain = test::trace_text(R"(
graph g
input x: f32[4, 1, 5]
const h: i64[1] = [1]
y = Squeeze(x, h)
r = Relu(y)
output r
)", {});
    FusionLog log;
    CHECK(test::structure(sink_squeezes(plain, FusionOptions{}, &log)) == test::structure(plain));
    CHECK(log.applied.empty());
    // Squeezing axis 1 makes the old dim 2 BN's channel axis: BN stays where it is.
    Graph channel = test::trace_text(R"(
graph g
input x: f32[2, 8, 5]
const w: f32[1, 8, 1, 1] = randn(seed=1, std=0.3)
const h: i64[1] = [2]
const one: i64[1] = [1]
const s: f32[1] = [2.0]
const bb: f32[1] = [0.0]
const m: f32[1] = [0.0]
const v: f32[1] = [1.0]
xu = Unsqueeze(x, h)
c = Conv(xu, w)
y = Squeeze(c, one)
n = BatchNormalization(y, s, bb, m, v)
output n
)", {});
    FusionLog log2;
    CHECK(test::structure(sink_squeezes(channel, FusionOptions{}, &log2)) == test::structure(channel));
    // The squeezed value is also a graph output: it stays, and the chain still sinks.
    const std::string both = conv1d_graph("r = Relu(y)\noutput y\noutput r\n");
    FusionLog log3;
    Graph after = sink_squeezes(test::trace_text(both, {{"L", 6}}), FusionOptions{}, &log3);
    CHECK(test::structure(after).find("y = Squeeze(c, h)") != std::string::npos);
  }
}
