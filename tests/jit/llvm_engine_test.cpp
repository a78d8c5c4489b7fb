// The engine on the llvm backend: groups the backend takes run as JIT kernels, the rest on
// the static kernels; results must match the unfused static run.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

std::unique_ptr<Engine> llvm_engine(bool profile = false) {
  try {
    EngineOptions o{.backend = BackendKind::Llvm, .num_threads = 2, .disk_cache = false};
    o.profile = profile;
    return std::make_unique<Engine>(o);
  } catch (const Error& e) {
    MESSAGE("skipped: " << e.what());
    return nullptr;
  }
}

void check_against_static(Engine& engine, const Graph& g, const TensorMap& in, double tol) {
  Engine reference(EngineOptions{.num_threads = 2, .fuse = false});
  TensorMap want = reference.run(g, in);
  TensorMap got = engine.run(g, in);
  for (const auto& row : want) {
    const auto& name = std::get<0>(row);
    const auto& t = std::get<1>(row);
    INFO("output " << name);
    FUSOR_CHECK_CLOSE(got.at(name), t, tol, tol);
  }
}

std::string load(const char* name) {
  std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_SUITE("jit/llvm") {
  TEST_CASE("two groups with the same code share one kernel and each writes its own values") {
    auto engine = llvm_engine();
    if (!engine) return;
    // Both Relu groups lower to identical specs (same shapes): one compile, two uses.
    Graph g = parse_graph(R"(graph twin
input x: f32[3, 5]
input z: f32[3, 5]
a = Relu(x)
b = Relu(z)
output a, b
)");
    check_against_static(*engine, g, {{"x", test::randn({3, 5}, 1)}, {"z", test::randn({3, 5}, 2)}}, 0);
    CHECK(engine->stats().kernels_compiled == 1);
    CHECK(engine->stats().kernel_hits == 1);
  }

  TEST_CASE("a pointwise chain runs as one JIT kernel and matches the static kernels") {
    auto engine = llvm_engine();
    if (!engine) return;
    Graph g = parse_graph(R"(graph chain
input x: f32[N]
const a: f32[] = [0.5]
const b: f32[] = [0.25]
const c: f32[] = [2.0]
const d: f32[] = [-1.0]
m = Mul(x, a)
p = Add(m, b)
t = Tanh(p)
q = Mul(t, c)
y = Add(q, d)
output y
)");
    for (int64_t n : {1, 17, 100003}) check_against_static(*engine, g, {{"x", test::randn({n}, uint64_t(n))}}, 1e-6);
    EngineStats s = engine->stats();
    CHECK(s.kernels_compiled == 3);  // one kernel per shape
    CHECK(s.compile_ms > 0);
    engine->run(g, {{"x", test::randn({17}, 5)}});
    CHECK(engine->stats().kernels_compiled == 3);  // the plan (and its kernel) is reused
  }

  TEST_CASE("the BERT layer and the ResNet bottleneck match the static run with every group a JIT kernel") {
    auto engine = llvm_engine(/*profile=*/true);
    if (!engine) return;
    Graph bert = parse_graph(load("bert_layer"));
    for (const auto& row : {std::pair<int64_t, int64_t>{1, 1}, {2, 7}, {1, 33}, {1, 128}}) {
      const auto& b = std::get<0>(row);
      const auto& t = std::get<1>(row);
      CAPTURE(b);
      CAPTURE(t);
      check_against_static(*engine, bert,
                           {{"x", test::randn({b, t, 768}, 1)}, {"mask", test::uniform({b, 1, 1, t}, 2, -1, 0)}}, 1e-4);
    }
    Graph res = parse_graph(load("resnet_bottleneck"));
    for (const auto& row : {std::tuple<int64_t, int64_t, int64_t>{1, 9, 7}, {2, 14, 11}, {1, 56, 56}}) {
      const auto& n = std::get<0>(row);
      const auto& h = std::get<1>(row);
      const auto& w = std::get<2>(row);
      CAPTURE(n);
      CAPTURE(h);
      check_against_static(*engine, res, {{"x", test::randn({n, 256, h, w}, 3)}}, 1e-4);
    }
    // Every compute step ran as a JIT kernel: what stayed static is views and copies.
    for (const StepProfile& p : engine->profile()) {
      CAPTURE(p.step);
      const bool data_movement = p.step.find(" Transpose ") != std::string::npos ||
                                 p.step.find(" Reshape ") != std::string::npos || p.step.rfind("view ", 0) == 0;
      CHECK((p.step.rfind("llvm ", 0) == 0 || data_movement));
    }
  }

  TEST_CASE("a view read through strides by a JIT kernel gives the same result") {
    auto engine = llvm_engine();
    if (!engine) return;
    Graph g = parse_graph(R"(graph v
input x: f32[4, 6]
t = Transpose(x) {perm=[1, 0]}
y = Relu(t)
output y
)");
    check_against_static(*engine, g, {{"x", test::randn({4, 6}, 1)}}, 0);
    CHECK(engine->stats().kernels_compiled == 1);
  }
}

TEST_SUITE("jit/llvm") {
  TEST_CASE("reductions of one row and of scalars run on every tier and match the static run") {
    // Regression: a row space of one dim (Softmax of f32[N], LayerNorm over axis 0, a
    // Reduce to a scalar) ended in an internal error when the llvm kernel was emitted, and
    // under tiering the shape stayed on the first tier; a rank-0 Softmax did so on asmjit too.
    const struct {
      const char* text;
      std::vector<int64_t> shape;
    } cases[] = {
        {"graph g\ninput x: f32[37]\ny = Softmax(x) {axis=-1}\noutput y\n", {37}},
        {"graph g\ninput x: f32[5, 7]\nconst s: f32[5, 7] = fill(1.0)\nconst b: f32[5, 7] = fill(0.0)\n"
         "y = LayerNormalization(x, s, b) {axis=0}\noutput y\n",
         {5, 7}},
        {"graph g\ninput x: f32[6, 9]\nconst ax: i64[2] = [0, 1]\ny = ReduceSum(x, ax) {keepdims=0}\noutput y\n", {6, 9}},
        {"graph g\ninput x: f32[]\ny = Softmax(x) {axis=-1}\noutput y\n", {}},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      Graph g = parse_graph(c.text);
      TensorMap in{{"x", test::randn(Shape(c.shape), 1)}};
      for (bool tiering : {false, true}) {
        CAPTURE(tiering);
        std::unique_ptr<Engine> engine;
        try {
          EngineOptions o{.backend = BackendKind::Llvm, .num_threads = 2, .disk_cache = false};
          o.tiering = tiering;
          engine = std::make_unique<Engine>(o);
        } catch (const Error& e) {
          MESSAGE("skipped: " << e.what());
          return;
        }
        check_against_static(*engine, g, in, 1e-5);
        engine->drain();
        check_against_static(*engine, g, in, 1e-5);
        if (tiering) CHECK(engine->stats().background_swaps == 1);
      }
    }
  }
}
