// EngineOptions::verify (jit/verify.h, Note [Verify mode]): each fused kernel checked once
// against its group's ops on the static kernels; what warn, fallback and strict do with a
// mismatch; the comparison's rules (Note [Verify tolerances]); the hazards on purpose
// (NaN and Inf inputs, constant rows, degenerate BatchNorm statistics).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "cache/disk_store.h"
#include "cache/kernel_key.h"
#include "codegen/lower.h"
#include "jit/executor.h"
#include "jit/verify.h"
#include "tests/support/pass_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::error_of;
using test::randn;

namespace {

// A GEMM with an odd reduction length and its epilogue, a LayerNorm and a softmax: three
// kernel kinds whose evaluation order differs from the static kernels'.
const char* kGraph = R"(graph verify
input x: f32[T, 777]
const w: f32[777, 96] = randn(seed=1, std=0.05)
const b: f32[96] = randn(seed=2, std=0.1)
const g: f32[96] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[96] = randn(seed=4, std=0.1)
m = MatMul(x, w)
h = Add(m, b)
a = Gelu(h)
n = LayerNormalization(a, g, beta) {axis=-1, epsilon=1e-5}
s = Softmax(n) {axis=-1}
output s
)";

std::vector<BackendKind> jit_backends() { return {BackendKind::Llvm, BackendKind::Asmjit}; }

// An engine, or null with a "skipped" message where this machine lacks the backend.
std::unique_ptr<Engine> engine_or_skip(EngineOptions o) {
  o.disk_cache = false;
  o.num_threads = 2;
  try {
    return std::make_unique<Engine>(o);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    MESSAGE("skipped: " << e.what());
    return nullptr;
  }
}

// An engine on `backend` with verify = warn, or null with a "skipped" message.
std::unique_ptr<Engine> verify_engine(BackendKind backend) {
  EngineOptions o{.backend = backend};
  o.verify = VerifyMode::Warn;
  return engine_or_skip(o);
}

TensorMap static_run(const Graph& g, const TensorMap& inputs) {
  Engine e(EngineOptions{.num_threads = 2, .disk_cache = false});
  return e.run(g, inputs);
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.type_str() == b.type_str() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

Tensor f32(std::vector<double> values) { return test::make(DType::F32, {int64_t(values.size())}, values); }

}  // namespace

TEST_CASE("verify passes every kernel of the BERT layer and the ResNet bottleneck within its tolerance") {
  struct Model {
    const char* file;
    DimBindings dims;
  };
  for (const Model& model : {Model{"bert_layer", {{"B", 1}, {"T", 37}}}, Model{"resnet_bottleneck", {{"N", 1}, {"H", 14}, {"W", 14}}}}) {
    const Graph graph = load_graph(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + model.file);
    for (BackendKind backend : jit_backends()) {
      const std::string file = model.file;
      CAPTURE(file);
      CAPTURE(backend_name(backend));
      std::vector<std::string> warnings;
      EngineOptions o{.backend = backend};
      o.verify = VerifyMode::Warn;
      o.warn = [&](const std::string& w) { warnings.push_back(w); };
      std::unique_ptr<Engine> e = engine_or_skip(o);
      if (!e) continue;
      const TensorMap inputs = verify_inputs(graph, input_types_from_dims(graph, model.dims));
      e->run(graph, inputs);
      const std::vector<GroupVerdict> verdicts = e->verdicts();
      REQUIRE(!verdicts.empty());
      double worst = 0;
      for (const GroupVerdict& v : verdicts) {
        INFO(v.str());
        CHECK(v.passed);
        CHECK(v.tolerance > 0);
        CHECK(v.error <= v.tolerance);
        CHECK(v.new_nonfinite == 0);
        CHECK(!v.ops.empty());
        worst = std::max(worst, v.error / v.tolerance);
      }
      CHECK(warnings.empty());
      const EngineStats s = e->stats();
      CHECK(s.groups_verified == verdicts.size());
      CHECK(s.groups_failed == 0);
      CHECK(s.groups_unfused == 0);
      CHECK(s.verify_worst_ratio == doctest::Approx(worst));
      MESSAGE(file << " on " << backend_name(backend) << ": " << verdicts.size()
                         << " groups verified, worst error " << s.verify_worst_error << " of scale, "
                         << worst << " of its tolerance");
      // A plan is checked once: later runs of the shape add no verdict.
      e->run(graph, inputs);
      CHECK(e->verdicts().size() == verdicts.size());
    }
  }
}

TEST_CASE("verify warn reports a kernel beyond its tolerance and keeps serving it") {
  const Graph graph = parse_graph(kGraph);
  const TensorMap inputs{{"x", randn({19, 777}, 7)}};
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::vector<std::string> warnings;
    EngineOptions o{.backend = backend};
    o.verify = VerifyMode::Warn;
    o.verify_tolerance_scale = 0;  // any difference from the unfused ops fails
    o.warn = [&](const std::string& w) { warnings.push_back(w); };
    std::unique_ptr<Engine> e = engine_or_skip(o);
    if (!e) continue;
    const TensorMap first = e->run(graph, inputs);
    const EngineStats s = e->stats();
    REQUIRE(s.groups_failed > 0);  // a 777-term GEMM in another order differs somewhere
    CHECK(s.groups_unfused == 0);
    CHECK(warnings.size() == s.groups_failed);
    CHECK(warnings[0].find("verify: ") == 0);
    CHECK(warnings[0].find("FAILED") != std::string::npos);
    CHECK(warnings[0].find("tolerance 0") != std::string::npos);
    // Still the kernel's results: not the static engine's, and the same on the next run.
    CHECK(!bitwise_equal(first.at("s"), static_run(graph, inputs).at("s")));
    CHECK(bitwise_equal(e->run(graph, inputs).at("s"), first.at("s")));
    CHECK(e->stats().groups_verified == s.groups_verified);
  }
}

TEST_CASE("verify fallback serves a failed group unfused from its first run on") {
  const Graph graph = parse_graph(kGraph);
  const TensorMap inputs{{"x", randn({23, 777}, 8)}};
  const TensorMap unfused = static_run(graph, inputs);
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::vector<std::string> warnings;
    EngineOptions o{.backend = backend, .profile = true};
    o.verify = VerifyMode::Fallback;
    o.verify_tolerance_scale = 0;
    o.warn = [&](const std::string& w) { warnings.push_back(w); };
    std::unique_ptr<Engine> e = engine_or_skip(o);
    if (!e) continue;
    // Every group that failed now runs its ops on the static kernels, the first run's
    // results included; with all of them failed the outputs are the static engine's.
    const TensorMap first = e->run(graph, inputs);
    const EngineStats s = e->stats();
    REQUIRE(s.groups_failed > 0);
    CHECK(s.groups_unfused == s.groups_failed);
    CHECK(warnings.size() == s.groups_failed);
    CHECK(warnings[0].find("runs unfused from now on") != std::string::npos);
    for (const GroupVerdict& v : e->verdicts()) CHECK(v.unfused == !v.passed);
    const TensorMap again = e->run(graph, inputs);
    CHECK(bitwise_equal(again.at("s"), first.at("s")));
    if (s.groups_failed == s.groups_verified) CHECK(bitwise_equal(first.at("s"), unfused.at("s")));
    std::string why;
    CHECK_MESSAGE(test::allclose(first.at("s"), unfused.at("s"), 1e-5, 1e-6, &why), why);
  }
}

TEST_CASE("verify strict throws NumericsMismatch naming the group and serves the unfused group after") {
  const Graph graph = parse_graph(kGraph);
  const TensorMap inputs{{"x", randn({29, 777}, 9)}};
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    EngineOptions o{.backend = backend};
    o.verify = VerifyMode::Strict;
    o.verify_tolerance_scale = 0;
    o.warn = [](const std::string& w) { FAIL("strict mode warned: " << w); };
    std::unique_ptr<Engine> e = engine_or_skip(o);
    if (!e) continue;
    std::string msg;
    CHECK(error_of([&] { e->run(graph, inputs); }, &msg) == ErrorCode::NumericsMismatch);
    CHECK(msg.find("NumericsMismatch: verify: " + std::string(backend_name(backend))) == 0);
    CHECK(msg.find("tolerance 0") != std::string::npos);
    CHECK(msg.find("MatMul") != std::string::npos);  // the GEMM group's ops are named
    CHECK(msg.find("f32[29, 96]") != std::string::npos);
    // The retry gets the unfused group, and checks nothing again.
    const TensorMap out = e->run(graph, inputs);
    std::string why;
    CHECK_MESSAGE(test::allclose(out.at("s"), static_run(graph, inputs).at("s"), 1e-5, 1e-6, &why), why);
    CHECK(e->stats().groups_unfused > 0);
  }
}

TEST_CASE("verify checks a plan prepare builds, on seeded inputs, and each new shape's plan on its own") {
  const Graph graph = parse_graph(kGraph);
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::unique_ptr<Engine> e = verify_engine(backend);
    if (!e) continue;
    e->prepare(graph, {{"T", 5}});
    const size_t after_prepare = e->verdicts().size();
    CHECK(after_prepare > 0);
    e->run(graph, {{"x", randn({5, 777}, 1)}});  // the prepared plan: already checked
    CHECK(e->verdicts().size() == after_prepare);
    e->run(graph, {{"x", randn({6, 777}, 1)}});  // a new shape: its own check
    CHECK(e->verdicts().size() == 2 * after_prepare);
    for (const GroupVerdict& v : e->verdicts()) CHECK_MESSAGE(v.passed, v.str());
  }
}

TEST_CASE("verify is off by default and on a plan without JIT kernels") {
  const Graph graph = parse_graph(kGraph);
  const TensorMap inputs{{"x", randn({3, 777}, 2)}};
  {
    std::unique_ptr<Engine> e = engine_or_skip(EngineOptions{.backend = BackendKind::Llvm});
    if (e) {
      e->run(graph, inputs);
      CHECK(e->verdicts().empty());
      CHECK(e->stats().groups_verified == 0);
    }
  }
  EngineOptions o;
  o.verify = VerifyMode::Strict;
  o.verify_tolerance_scale = 0;
  Engine e(o);  // static: nothing fused to check
  e.run(graph, inputs);
  CHECK(e.verdicts().empty());
}

TEST_CASE("verify hazards: NaN and Inf inputs and constant rows pass without false alarms") {
  // NaN where the reference is NaN is not compared; Inf must match; constant rows make
  // LayerNorm divide a zero (or a rounding residue) by sqrt(epsilon) and softmax uniform.
  const Graph graph = parse_graph(R"(graph hazards
input x: f32[4, 64]
const g: f32[64] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[64] = randn(seed=4, std=0.1)
t = Tanh(x)
e = Exp(x)
y = Add(t, e)
n = LayerNormalization(x, g, beta) {axis=-1, epsilon=1e-5}
s = Softmax(x) {axis=-1}
output y
output n
output s
)");
  Tensor x = randn({4, 64}, 3);
  float* p = static_cast<float*>(x.raw());
  p[1] = std::numeric_limits<float>::quiet_NaN();
  p[2] = std::numeric_limits<float>::infinity();
  p[3] = -std::numeric_limits<float>::infinity();
  p[4] = 100.0f;  // exp overflows to Inf in both
  for (int i = 64; i < 128; ++i) p[i] = 3.25f;   // row 1: constant
  for (int i = 128; i < 192; ++i) p[i] = 0.0f;   // row 2: zeros
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::unique_ptr<Engine> e = verify_engine(backend);
    if (!e) continue;
    e->run(graph, {{"x", x}});
    REQUIRE(!e->verdicts().empty());
    for (const GroupVerdict& v : e->verdicts()) CHECK_MESSAGE(v.passed, v.str());
  }
}

TEST_CASE("verify hazards: degenerate BatchNorm statistics are folded and checked") {
  // Variance 0, 1e-12 and denormal with a small epsilon, and gamma 1e4: the folded
  // convolution's weights grow by gamma / sqrt(var + eps), and its kernel is checked
  // against the folded convolution on the static kernels.
  for (double var : {0.0, 1e-12, 1e-40}) {
    for (double gamma : {1.0, 1e4}) {
      CAPTURE(var);
      CAPTURE(gamma);
      const std::string text = test::with(R"(graph bn
input x: f32[1, 8, 9, 9]
const w: f32[16, 8, 3, 3] = randn(seed=1, std=0.2)
const gamma: f32[16] = fill(GAMMA)
const beta: f32[16] = randn(seed=3, std=0.1)
const mean: f32[16] = randn(seed=4, std=0.1)
const var: f32[16] = fill(VAR)
c = Conv(x, w) {pads=[1, 1, 1, 1]}
b = BatchNormalization(c, gamma, beta, mean, var) {epsilon=1e-9}
r = Relu(b)
output r
)", {{"GAMMA", num(gamma)}, {"VAR", num(var)}});
      const Graph graph = parse_graph(text);
      for (BackendKind backend : jit_backends()) {
        CAPTURE(backend_name(backend));
        std::unique_ptr<Engine> e = verify_engine(backend);
        if (!e) continue;
        const TensorMap out = e->run(graph, {{"x", randn({1, 8, 9, 9}, 6)}});
        for (const GroupVerdict& v : e->verdicts()) CHECK_MESSAGE(v.passed, v.str());
        CHECK(e->stats().groups_verified > 0);
      }
    }
  }
}

TEST_CASE("verify checks a folded BatchNorm against the ops as written and reports the variance floor") {
  // The reference undoes the fold: Conv then BatchNormalization as written, in f64. With
  // var + eps = 1e-13, below FusionOptions' floor of 1e-12, the fold divides by the floor's
  // root instead: outputs 3.16x too small, which verify catches (and names the guard that
  // fired); so does a denormal variance with gamma 1e4 and eps 0 (1e14x). With eps 1e-9
  // the floor does not fire and the folded kernel passes.
  struct Hazard {
    const char* eps;
    const char* var;
    const char* gamma;
    bool fires;
  };
  for (const Hazard& h : {Hazard{"1e-13", "fill(0.0)", "fill(1.0)", true}, Hazard{"0", "fill(1e-40)", "fill(1e4)", true},
                          Hazard{"1e-9", "fill(0.0)", "fill(1.0)", false}}) {
    CAPTURE(h.eps);
    CAPTURE(h.var);
    const Graph graph = parse_graph(test::with(R"(graph bn
input x: f32[1, 8, 9, 9]
const w: f32[16, 8, 3, 3] = randn(seed=1, std=0.2)
const gamma: f32[16] = GAMMA
const beta: f32[16] = randn(seed=3, std=0.1)
const mean: f32[16] = randn(seed=4, std=0.1)
const var: f32[16] = VAR
c = Conv(x, w) {pads=[1, 1, 1, 1]}
b = BatchNormalization(c, gamma, beta, mean, var) {epsilon=EPS}
r = Relu(b)
output r
)", {{"EPS", h.eps}, {"VAR", h.var}, {"GAMMA", h.gamma}}));
    for (BackendKind backend : jit_backends()) {
      CAPTURE(backend_name(backend));
      std::unique_ptr<Engine> e = engine_or_skip(EngineOptions{.backend = backend, .disk_cache = false,
                                                               .verify = VerifyMode::Warn});
      if (!e) continue;
      e->run(graph, {{"x", randn({1, 8, 9, 9}, 6)}});
      const std::vector<GroupVerdict> verdicts = e->verdicts();
      REQUIRE(verdicts.size() == 1);
      const GroupVerdict& v = verdicts[0];
      INFO(v.str());
      REQUIRE(v.as_written.size() == 1);
      CHECK(v.as_written[0] == "BatchNormalization b as written after Conv c, in f64 (before fold_batchnorm)");
      CHECK(v.str().find("; against BatchNormalization b as written") != std::string::npos);
      CHECK(v.json().find("\"as_written\": [\"BatchNormalization b") != std::string::npos);
      CHECK(v.passed == !h.fires);
      if (h.fires) {
        CHECK(v.error > 0.5);  // 1 - 1/3.16 of scale, or all of it
        REQUIRE(v.guards.size() == 1);
        CHECK(v.guards[0] == "BatchNorm variance floor 1e-12 applied to 16 channels of b");
        CHECK(v.str().find("; guarded: BatchNorm variance floor 1e-12") != std::string::npos);
        CHECK(v.json().find("\"guards\": [\"BatchNorm variance floor 1e-12 applied to 16 channels of b\"]") !=
              std::string::npos);
        CHECK(e->explain(graph, {}).find("guarded: BatchNorm variance floor") != std::string::npos);
      } else {
        CHECK(v.guards.empty());
        CHECK(v.json().find("\"guards\": []") != std::string::npos);
      }
    }
  }
}

TEST_CASE("verify serves a failed fold as written in fallback mode and throws in strict mode") {
  const Graph graph = parse_graph(R"(graph bn
input x: f32[1, 4, 6, 6]
const w: f32[8, 4, 3, 3] = randn(seed=1, std=0.2)
const gamma: f32[8] = fill(1.0)
const beta: f32[8] = randn(seed=3, std=0.1)
const mean: f32[8] = randn(seed=4, std=0.1)
const var: f32[8] = fill(0.0)
c = Conv(x, w) {pads=[1, 1, 1, 1]}
b = BatchNormalization(c, gamma, beta, mean, var) {epsilon=1e-13}
output b
)");
  const TensorMap in{{"x", randn({1, 4, 6, 6}, 9)}};
  // The model as written, unfused on the static kernels (f32): what fallback must serve.
  const TensorMap want = Engine(EngineOptions{.fuse = false, .disk_cache = false}).run(graph, in);
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::unique_ptr<Engine> e =
        engine_or_skip(EngineOptions{.backend = backend, .disk_cache = false, .verify = VerifyMode::Fallback});
    if (!e) continue;
    // (atol 1: the f32 static ops lose ~0.5 to cancellation on outputs of ~1e4; f64 does not.)
    for (int run = 0; run < 2; ++run) FUSOR_CHECK_CLOSE(e->run(graph, in).at("b"), want.at("b"), 1e-4, 1.0);
    CHECK(e->stats().groups_unfused == 1);
    std::unique_ptr<Engine> strict =
        engine_or_skip(EngineOptions{.backend = backend, .disk_cache = false, .verify = VerifyMode::Strict});
    CHECK_THROWS_AS(strict->run(graph, in), Error);
    FUSOR_CHECK_CLOSE(strict->run(graph, in).at("b"), want.at("b"), 1e-4, 1.0);  // the retry: as written
  }
}

TEST_CASE("verify's f64 reference passes a fold that is more exact than the f32 ops as written") {
  // Conv outputs near 1000 minus a mean of 1000, scaled by 1000: in f32 as written the
  // subtraction loses ulp(1000)/2 * 1000 = 0.03 of outputs of size ~1e3, beyond the f32
  // tolerance; the fold computes (b - mean) * s in f64 and is exact to f32 rounding. Only a
  // f64 reference tells the two apart, and passes the fold.
  const Graph graph = parse_graph(R"(graph bn
input x: f32[1, 8, 7, 7]
const w: f32[16, 8, 3, 3] = randn(seed=1, std=0.2)
const bias: f32[16] = fill(1000.0)
const gamma: f32[16] = fill(1.0)
const beta: f32[16] = fill(0.5)
const mean: f32[16] = fill(1000.0)
const var: f32[16] = fill(0.0)
c = Conv(x, w, bias) {pads=[1, 1, 1, 1]}
b = BatchNormalization(c, gamma, beta, mean, var) {epsilon=1e-6}
output b
)");
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::unique_ptr<Engine> e =
        engine_or_skip(EngineOptions{.backend = backend, .disk_cache = false, .verify = VerifyMode::Warn});
    if (!e) continue;
    e->run(graph, {{"x", randn({1, 8, 7, 7}, 3)}});
    const GroupVerdict v = e->verdicts().at(0);
    INFO(v.str());
    CHECK(v.as_written.size() == 1);
    CHECK(v.passed);
    CHECK(v.error < v.tolerance);
  }
}

TEST_CASE("verify compares by the output's scale, matches infinities and flags new NaN or Inf") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto verdict = [](const Tensor& got, const Tensor& ref, double tol) {
    GroupVerdict v;
    compare_output(got, ref, tol, v);
    return v;
  };
  // Scale 100: an error of 1e-3 is 1e-5 of it.
  GroupVerdict v = verdict(f32({100, 1, -2}), f32({100, 1.001, -2}), 2e-5);
  CHECK(v.passed);
  CHECK(v.scale == doctest::Approx(100));
  CHECK(v.error == doctest::Approx(1e-5).epsilon(1e-3));
  CHECK(v.max_rel == doctest::Approx(1e-3).epsilon(1e-2));
  CHECK(!verdict(f32({100, 1, -2}), f32({100, 1.001, -2}), 5e-6).passed);
  // NaN in the reference is not compared; NaN or Inf the reference lacks fails.
  CHECK(verdict(f32({1, 0}), f32({1, nan}), 0).passed);
  GroupVerdict bad = verdict(f32({1, nan, inf}), f32({1, 2, 3}), 1);
  CHECK(!bad.passed);
  CHECK(bad.new_nonfinite == 2);
  // An infinity must be matched, sign included.
  CHECK(verdict(f32({inf, 1}), f32({inf, 1}), 0).passed);
  CHECK(!verdict(f32({-inf, 1}), f32({inf, 1}), 1).passed);
  CHECK(!verdict(f32({3e38, 1}), f32({inf, 1}), 1).passed);
  // An all-zero reference measures absolute errors.
  GroupVerdict zero = verdict(f32({1e-7, 0}), f32({0, 0}), 1e-6);
  CHECK(zero.passed);
  CHECK(zero.scale == 1);
  // Integers and bools must be equal.
  CHECK(verdict(test::ints({1, 2, 3}), test::ints({1, 2, 3}), 0).passed);
  GroupVerdict ints = verdict(test::ints({1, 2, 4}), test::ints({1, 2, 3}), 1);
  CHECK(!ints.passed);
  CHECK(ints.mismatched == 1);
}

TEST_CASE("verify tolerances grow with the ops and the reduction length of a group") {
  const Graph graph = parse_graph(kGraph);
  // Through the engine's own plans: the GEMM group (777 terms) is looser than the
  // LayerNorm and softmax (96 terms each): u * 8 * (ops + sqrt(terms)).
  std::unique_ptr<Engine> llvm = engine_or_skip([] {
    EngineOptions o{.backend = BackendKind::Llvm};
    o.verify = VerifyMode::Warn;
    return o;
  }());
  if (!llvm) return;
  llvm->run(graph, {{"x", randn({4, 777}, 5)}});
  const double u = std::ldexp(1.0, -24);
  bool saw_gemm = false;
  for (const GroupVerdict& v : llvm->verdicts()) {
    INFO(v.str());
    const bool gemm = std::find(v.ops.begin(), v.ops.end(), "MatMul") != v.ops.end();
    saw_gemm |= gemm;
    CHECK(v.tolerance >= u * 8 * (double(v.ops.size()) + std::sqrt(gemm ? 777.0 : 96.0)) * 0.999);
  }
  CHECK(saw_gemm);
}

TEST_CASE("verify options: modes by name, a bad tolerance scale and backend cuda are refused") {
  CHECK(parse_verify_mode("warn") == VerifyMode::Warn);
  CHECK(parse_verify_mode("strict") == VerifyMode::Strict);
  CHECK(parse_verify_mode("fallback") == VerifyMode::Fallback);
  CHECK(parse_verify_mode("off") == VerifyMode::Off);
  std::string msg;
  CHECK(error_of([] { parse_verify_mode("loud"); }, &msg) == ErrorCode::InvalidArgument);
  CHECK(msg.find("'loud'") != std::string::npos);
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    EngineOptions o{.backend = BackendKind::Asmjit};
    o.verify = VerifyMode::Warn;
    o.verify_tolerance_scale = bad;
    const ErrorCode code = error_of([&] { Engine e(o); }, &msg);
    CHECK((code == ErrorCode::InvalidArgument || code == ErrorCode::DeviceUnavailable));
    if (code == ErrorCode::InvalidArgument) CHECK(msg.find("verify_tolerance_scale") != std::string::npos);
  }
  EngineOptions cuda{.backend = BackendKind::Cuda};
  cuda.verify = VerifyMode::Warn;
  CHECK(error_of([&] { Engine e(cuda); }, &msg) == ErrorCode::Unsupported);
  CHECK(msg.find("backend cuda has no verify mode") != std::string::npos);
}

TEST_CASE("verify remembers a kernel that passed: identical groups share one check") {
  // Two layers of one shape share their kernel (Note [Kernel key]): the second group's
  // verdict is the first's, not a second run of the static kernels.
  const Graph graph = parse_graph(R"(graph two_layers
input x: f32[T, 64]
const w1: f32[64, 64] = randn(seed=1, std=0.1)
const b1: f32[64] = randn(seed=2, std=0.1)
const w2: f32[64, 64] = randn(seed=3, std=0.1)
const b2: f32[64] = randn(seed=4, std=0.1)
m1 = MatMul(x, w1)
a1 = Add(m1, b1)
h1 = Relu(a1)
m2 = MatMul(h1, w2)
a2 = Add(m2, b2)
h2 = Relu(a2)
output h2
)");
  for (BackendKind backend : jit_backends()) {
    CAPTURE(backend_name(backend));
    std::unique_ptr<Engine> e = verify_engine(backend);
    if (!e) continue;
    e->run(graph, {{"x", randn({11, 64}, 1)}});
    const std::vector<GroupVerdict> v = e->verdicts();
    REQUIRE(v.size() == 2);
    CHECK(!v[0].remembered);
    CHECK(v[1].remembered);
    CHECK(v[1].passed);
    CHECK(v[1].error == v[0].error);
    CHECK(v[1].str().find("(remembered: this kernel passed before)") != std::string::npos);
    CHECK(e->stats().verify_remembered == 1);
    CHECK(e->stats().groups_verified == 2);
  }
}

TEST_CASE("verify keeps passes in the persistent store: a restarted engine checks nothing again") {
  test::TempDir dir("verify");
  const Graph graph = parse_graph(kGraph);
  const TensorMap inputs{{"x", randn({13, 777}, 4)}};
  EngineOptions o{.backend = BackendKind::Llvm, .num_threads = 2, .cache_dir = dir.path().string()};
  o.verify = VerifyMode::Warn;
  size_t checked = 0;
  {
    std::unique_ptr<Engine> first;
    try {
      first = std::make_unique<Engine>(o);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      MESSAGE("skipped: " << e.what());
      return;
    }
    first->run(graph, inputs);
    checked = first->verdicts().size();
    REQUIRE(checked > 0);
    CHECK(first->stats().verify_remembered == 0);
  }
  Engine second(o);
  second.run(graph, inputs);
  const std::vector<GroupVerdict> v = second.verdicts();
  REQUIRE(v.size() == checked);
  for (const GroupVerdict& g : v) {
    INFO(g.str());
    CHECK(g.remembered);
    CHECK(g.passed);
    CHECK(g.error <= g.tolerance);
  }
  CHECK(second.stats().verify_remembered == checked);
  // Another tolerance scale is another verdict: checked again.
  o.verify_tolerance_scale = 0.5;
  Engine third(o);
  third.run(graph, inputs);
  CHECK(third.stats().verify_remembered == 0);
}

TEST_CASE("verify's stored verdicts decode only from what encode wrote") {
  GroupVerdict v;
  v.error = 1e-6;
  v.tolerance = 2e-5;
  v.scale = 3;
  v.max_abs = 3e-6;
  v.max_rel = 1e-4;
  v.new_nonfinite = 0;
  v.mismatched = 0;
  std::vector<uint8_t> bytes = encode_verdict(v);
  std::optional<GroupVerdict> back = decode_verdict(bytes);
  REQUIRE(back);
  CHECK(back->passed);
  CHECK(back->error == v.error);
  CHECK(back->tolerance == v.tolerance);
  CHECK(back->scale == v.scale);
  CHECK(back->max_rel == v.max_rel);
  // Truncated, extended, another magic, a passed byte that is not 0 or 1, a NaN error.
  CHECK(!decode_verdict(std::span<const uint8_t>(bytes.data(), bytes.size() - 1)));
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  CHECK(!decode_verdict(longer));
  std::vector<uint8_t> magic = bytes;
  magic[0] = 'X';
  CHECK(!decode_verdict(magic));
  std::vector<uint8_t> flag = bytes;
  flag.back() = 7;
  CHECK(!decode_verdict(flag));
  GroupVerdict nan = v;
  nan.error = std::numeric_limits<double>::quiet_NaN();
  CHECK(!decode_verdict(encode_verdict(nan)));
  CHECK(!decode_verdict(std::vector<uint8_t>{}));
}

TEST_CASE("explain with verify reports each fused kernel's verdict, as text and JSON") {
  const Graph graph = parse_graph(kGraph);
  EngineOptions o{.backend = BackendKind::Asmjit};
  o.verify = VerifyMode::Warn;
  std::unique_ptr<Engine> e = engine_or_skip(o);
  if (!e) return;
  const std::string text = e->explain(graph, {{"T", 8}});
  INFO(text);
  CHECK(text.find("verify (warn): ") != std::string::npos);
  CHECK(text.find("fused kernels checked against their ops unfused") != std::string::npos);
  CHECK(text.find("asmjit contraction") != std::string::npos);
  CHECK(text.find(": passed, error ") != std::string::npos);
  const std::string json = e->explain(graph, {{"T", 8}}, true);
  INFO(json);
  const size_t at = json.find(", \"verify\": [{\"kernel\": \"asmjit ");
  REQUIRE(at != std::string::npos);
  CHECK(json.back() == '}');
  CHECK(json.find("\"passed\": true", at) != std::string::npos);
  // Explain alone, verify off, compiles and checks nothing.
  Engine plain(EngineOptions{.backend = BackendKind::Asmjit, .disk_cache = false});
  const std::string report = plain.explain(graph, {{"T", 8}});
  CHECK(report.find("verify (") == std::string::npos);
  CHECK(report.find("fused kernels checked") == std::string::npos);
  CHECK(plain.stats().kernels_compiled == 0);
}

TEST_CASE("verify catches a broken kernel in every mode: a stored object built from a perturbed epilogue constant") {
  // What verify is for: a kernel that links and runs but computes the wrong thing. Here it
  // comes from the persistent store, where an object compiled from the spec with its
  // LeakyRelu slope changed (0.1 -> 0.7) is planted under the true spec's key, its entry
  // symbol renamed to the true one's: the engine loads it without compiling.
  const char* text = R"(graph leaky
input x: f32[T, 96]
const w: f32[96, 64] = randn(seed=1, std=0.1)
const b: f32[64] = randn(seed=2, std=0.1)
m = MatMul(x, w)
h = Add(m, b)
y = LeakyRelu(h) {alpha=0.1}
output y
)";
  std::unique_ptr<JitBackend> llvm;
  try {
    llvm = make_jit_backend(BackendKind::Llvm);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    MESSAGE("skipped: " << e.what());
    return;
  }
  const FusedGraph f = test::fuse_text(text, {{"T", 9}});
  REQUIRE(f.groups.size() == 1);
  std::string why;
  std::optional<KernelSpec> spec = lower_group(f, f.groups[0], &why);
  REQUIRE_MESSAGE(spec, why);
  KernelSpec bad = *spec;
  int changed = 0;
  for (ScalarExpr& e : bad.contraction.epilogue.nodes)
    if (e.op == ScalarOp::Const && std::fabs(e.value - 0.1) < 1e-6) {
      e.value = 0.7;
      ++changed;
    }
  REQUIRE(changed == 1);
  std::string object = llvm->compile(bad)->object;
  auto symbol = [](const KernelSpec& k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "fusor_k%016llx", static_cast<unsigned long long>(k.hash()));
    return std::string(buf);
  };
  const std::string from = symbol(bad), to = symbol(*spec);
  int renamed = 0;
  for (size_t at = object.find(from); at != std::string::npos; at = object.find(from, at + 1), ++renamed)
    object.replace(at, from.size(), to);
  REQUIRE(renamed > 0);
  const std::string key = KernelKey{*spec, "llvm", llvm->target_description(), llvm->compiler_version()}.serialize();

  const Graph graph = parse_graph(text);
  const TensorMap inputs{{"x", randn({9, 96}, 5)}};
  const Tensor want = static_run(graph, inputs).at("y");
  for (VerifyMode mode : {VerifyMode::Warn, VerifyMode::Fallback, VerifyMode::Strict}) {
    CAPTURE(verify_mode_name(mode));
    test::TempDir dir("verify_forged");
    {
      // First the genuine kernel, checked and passed: its verdict is in the store too, and
      // must not vouch for the object planted after it (Note [Verdicts kept with the kernel]).
      EngineOptions genuine{.backend = BackendKind::Llvm, .num_threads = 2, .cache_dir = dir.path().string()};
      genuine.verify = VerifyMode::Warn;
      Engine g(genuine);
      g.run(graph, inputs);
      REQUIRE(g.stats().groups_verified == 1);
      REQUIRE(g.stats().groups_failed == 0);
    }
    {
      DiskStore store = DiskStore::open(DiskStore::Options{.dir = dir.path().string()});
      REQUIRE(store.put(key, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(object.data()), object.size())));
    }
    std::vector<std::string> warnings;
    EngineOptions o{.backend = BackendKind::Llvm, .num_threads = 2, .cache_dir = dir.path().string()};
    o.verify = mode;
    o.warn = [&](const std::string& w) { warnings.push_back(w); };
    Engine e(o);
    TensorMap out;
    std::string msg;
    if (mode == VerifyMode::Strict)
      CHECK(error_of([&] { e.run(graph, inputs); }, &msg) == ErrorCode::NumericsMismatch);
    else
      out = e.run(graph, inputs);
    const EngineStats s = e.stats();
    CHECK(s.disk_hits == 1);  // the planted object served the group
    CHECK(s.verify_remembered == 0);
    CHECK(s.kernels_compiled == 0);
    CHECK(s.groups_failed == 1);
    REQUIRE(e.verdicts().size() == 1);
    const GroupVerdict v = e.verdicts()[0];
    CHECK(!v.passed);
    CHECK(v.error > 100 * v.tolerance);  // a wrong slope is an error of the output's own size
    if (mode == VerifyMode::Strict) {
      CHECK(msg.find("[matmul+add+leakyrelu: MatMul, Add, LeakyRelu -> y: f32[9, 64]]") != std::string::npos);
      CHECK(warnings.empty());
      out = e.run(graph, inputs);  // the retry is served unfused
      CHECK(bitwise_equal(out.at("y"), want));
      continue;
    }
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("verify: llvm contraction") == 0);
    if (mode == VerifyMode::Warn) {
      CHECK(!bitwise_equal(out.at("y"), want));  // still the broken kernel's
      CHECK(s.groups_unfused == 0);
    } else {
      CHECK(bitwise_equal(out.at("y"), want));  // the unfused group's, from this run on
      CHECK(bitwise_equal(e.run(graph, inputs).at("y"), want));
      CHECK(s.groups_unfused == 1);
    }
  }
}
