#include <doctest/doctest.h>

#include <cmath>

#include "ir/passes/fold_batchnorm.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

FusionOptions only_bn() {
  FusionOptions o;
  o.recognize_patterns = o.merge_parallel_matmuls = false;
  return o;
}

std::string conv_bn(const char* conv_inputs, const char* extra = "") {
  return std::string(R"(
graph g
input x: f32[1, 3, 8, 8]
const w: f32[4, 3, 3, 3] = randn(seed=1, std=0.3)
const b: f32[4] = randn(seed=2, std=0.1)
const gamma: f32[4] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[4] = randn(seed=4, std=0.1)
const mean: f32[4] = randn(seed=5, std=0.1)
const var: f32[4] = uniform(seed=6, low=0.5, high=1.5)
c = Conv()") + conv_inputs + R"() {pads=[1, 1, 1, 1]} as conv1
y = BatchNormalization(c, gamma, beta, mean, var) {epsilon=1e-05} as bn1
)" + extra + "output y\n";
}

}  // namespace

TEST_SUITE("ir/passes/fold_batchnorm") {
  TEST_CASE("Conv with bias then BN folds into one Conv") {
    std::string text = conv_bn("x, w, b");
    FusionLog log;
    Graph before = test::trace_text(text, {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("y = Conv(x, conv1.w_folded, conv1.b_folded)\noutput y"));
    REQUIRE(log.applied.size() == 1);
    CHECK(log.applied[0].message.find("folded bn1 into Conv conv1") != std::string::npos);
    CHECK(after.node(0).name == "conv1");
  }

  TEST_CASE("Conv without bias gains the folded bias") {
    FusionLog log;
    Graph before = test::trace_text(conv_bn("x, w"), {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("y = Conv(x, conv1.w_folded, conv1.b_folded)\noutput y"));
  }

  TEST_CASE("folded constants are computed in double: W' = W * s and b' = (b - mean) * s + beta") {
    FusionLog log;
    Graph before = test::trace_text(conv_bn("x, w, b"), {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    const Tensor& w = *before.constant_data(before.find_value("w"));
    const Tensor& b = *before.constant_data(before.find_value("b"));
    auto c = [&](const char* n) { return before.constant_data(before.find_value(n)); };
    const Tensor& wf = *after.constant_data(after.find_value("conv1.w_folded"));
    const Tensor& bf = *after.constant_data(after.find_value("conv1.b_folded"));
    for (int64_t m = 0; m < 4; ++m) {
      double s = c("gamma")->at(m) / std::sqrt(c("var")->at(m) + 1e-5);
      CHECK(bf.at(m) == doctest::Approx((b.at(m) - c("mean")->at(m)) * s + c("beta")->at(m)).epsilon(1e-7));
      for (int64_t k = 0; k < 27; ++k) CHECK(wf.at(m * 27 + k) == doctest::Approx(w.at(m * 27 + k) * s).epsilon(1e-7));
    }
  }

  TEST_CASE("multi-consumer conv output is not folded") {
    std::string text = conv_bn("x, w, b", "z = Relu(c)\noutput z\n");
    FusionLog log;
    Graph before = test::trace_text(text, {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    CHECK(test::structure(after) == test::structure(before));
    REQUIRE(log.declined.size() == 1);
    CHECK(log.declined[0].reason.find("multi-consumer") == 0);
  }

  TEST_CASE("conv output that is a graph output is not folded") {
    std::string text = conv_bn("x, w, b", "output c\n");
    FusionLog log;
    Graph before = test::trace_text(text, {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    CHECK(test::structure(after) == test::structure(before));
    REQUIRE(log.declined.size() == 1);
    CHECK(log.declined[0].reason.find("graph output") != std::string::npos);
  }

  TEST_CASE("a weight that is not a constant is not folded") {
    const char* text = R"(
graph g
input x: f32[1, 3, 8, 8]
input w: f32[4, 3, 3, 3]
const p: f32[4] = fill(1.0)
c = Conv(x, w)
y = BatchNormalization(c, p, p, p, p)
output y
)";
    FusionLog log;
    Graph before = test::trace_text(text, {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    CHECK(test::structure(after) == test::structure(before));
    REQUIRE(log.declined.size() == 1);
    CHECK(log.declined[0].reason.find("not a constant") != std::string::npos);
  }

  TEST_CASE("MatMul then BN folds into MatMul + bias Add") {
    const char* text = R"(
graph g
input x: f32[N, 6]
const w: f32[6, 5] = randn(seed=1, std=0.3)
const gamma: f32[5] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[5] = randn(seed=4, std=0.1)
const mean: f32[5] = randn(seed=5, std=0.1)
const var: f32[5] = uniform(seed=6, low=0.5, high=1.5)
m = MatMul(x, w) as mm
y = BatchNormalization(m, gamma, beta, mean, var)
output y
)";
    FusionLog log;
    Graph before = test::trace_text(text, {{"N", 3}});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("mm.mm = MatMul(x, mm.w_folded)\ny = Add(mm.mm, mm.b_folded)\noutput y"));
  }

  TEST_CASE("Gemm with transB then BN folds into one Gemm") {
    const char* text = R"(
graph g
input x: f32[3, 6]
const w: f32[5, 6] = randn(seed=1, std=0.3)
const c: f32[5] = randn(seed=2, std=0.3)
const gamma: f32[5] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[5] = randn(seed=4, std=0.1)
const mean: f32[5] = randn(seed=5, std=0.1)
const var: f32[5] = uniform(seed=6, low=0.5, high=1.5)
m = Gemm(x, w, c) {transB=1, beta=0.5} as gemm
y = BatchNormalization(m, gamma, beta, mean, var)
output y
)";
    FusionLog log;
    Graph before = test::trace_text(text, {});
    Graph after = fold_batchnorm(before, only_bn(), &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("y = Gemm(x, gemm.w_folded, gemm.c_folded)\noutput y"));
  }

  TEST_CASE("near-zero and negative variances hit the floor and are logged") {
    const char* text = R"(
graph g
input x: f32[1, 2, 4, 4]
const w: f32[2, 2, 1, 1] = randn(seed=1, std=0.3)
const gamma: f32[2] = [1.0, 1.0]
const beta: f32[2] = [0.0, 0.0]
const mean: f32[2] = [0.0, 0.0]
const var: f32[2] = [-1.0, 0.25]
c = Conv(x, w)
y = BatchNormalization(c, gamma, beta, mean, var) {epsilon=0.0}
output y
)";
    FusionOptions o = only_bn();
    o.bn_variance_floor = 1e-6;
    FusionLog log;
    Graph after = fold_batchnorm(test::trace_text(text, {}), o, &log);
    REQUIRE(log.applied.size() == 1);
    CHECK(log.applied[0].message.find("applied to 1 channels") != std::string::npos);
    const Tensor& wf = *after.constant_data(after.find_value("c.w_folded"));
    Graph original = parse_graph(text);
    const Tensor& w = *original.constant_data(original.find_value("w"));
    CHECK(wf.at(0) == doctest::Approx(w.at(0) * 1000.0).epsilon(1e-6));  // 1/sqrt(1e-6)
    CHECK(wf.at(2) == doctest::Approx(w.at(2) * 2.0).epsilon(1e-6));     // 1/sqrt(0.25)
  }

  TEST_CASE("folded weights are derived constants named by every parameter of the fold") {
    std::vector<ConstantDerivation> seen;
    std::vector<Tensor> given;
    DeriveConstants derive = [&](const ConstantDerivation& d, const std::function<std::vector<Tensor>()>& make) {
      seen.push_back(d);
      given = make();
      return given;
    };
    FusionLog log;
    Graph before = test::trace_text(conv_bn("x, w, b"), {});
    Graph after = fold_batchnorm(before, only_bn(), &log, derive);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].recipe.find("fold_batchnorm Conv") == 0);
    CHECK(seen[0].recipe.find("eps=") != std::string::npos);
    CHECK(seen[0].sources.size() == 6);  // w, b; gamma, beta, mean, var
    CHECK(seen[0].sources[0].raw() == before.constant_data(before.find_value("w"))->raw());
    // The pass uses exactly what derive returned.
    CHECK(after.constant_data(after.find_value("conv1.w_folded"))->raw() == given[0].raw());
    CHECK(after.constant_data(after.find_value("conv1.b_folded"))->raw() == given[1].raw());
    // Another variance floor is another recipe.
    FusionOptions floored = only_bn();
    floored.bn_variance_floor = 0.5;
    fold_batchnorm(before, floored, &log, derive);
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].recipe != seen[0].recipe);
  }
}
