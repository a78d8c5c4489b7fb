// The Engine on backend cuda. Where there is no device (this suite's CI machines) the
// engine refuses to start with DeviceUnavailable naming what is missing, and every test
// that needs a device says "skipped (no CUDA device): <reason>". On the GPU machine: the BERT
// layer and the ResNet bottleneck against the static engine, device-resident inputs and
// outputs, outputs written in place, a restart that loads every cubin from the store, and
// f16 / bf16 graphs.
#include <doctest/doctest.h>

#include <fstream>
#include <tuple>
#include <iterator>

#include "codegen/cuda/cuda_backend.h"
#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// The reason no CUDA engine can start here ("" when one can).
std::string why_no_cuda() {
  try {
    make_cuda_backend();
    return "";
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    return e.what();
  }
}

// An engine on the device, or nullptr after a message saying why the test is skipped.
std::unique_ptr<Engine> cuda_engine_or_skip(const std::string& cache_dir = "") {
  EngineOptions o{.backend = BackendKind::Cuda, .disk_cache = !cache_dir.empty(), .cache_dir = cache_dir};
  try {
    return std::make_unique<Engine>(o);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    MESSAGE("skipped (no CUDA device): " << std::string(e.what()));
    return nullptr;
  }
}

std::string example(const char* name) {
  std::ifstream f(test::source_path(std::string("examples/graphs/") + name));
  REQUIRE_MESSAGE(f.good(), "no example graph ", name, " (set FUSOR_SOURCE_DIR to the source tree)");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TensorMap run_static(const Graph& g, const TensorMap& in) {
  Engine reference(EngineOptions{.num_threads = 2, .fuse = false, .disk_cache = false});
  return reference.run(g, in);
}

void check_against_static(Engine& engine, const Graph& g, const TensorMap& in, double rtol, double atol) {
  TensorMap want = run_static(g, in);
  TensorMap got = engine.run(g, in);
  REQUIRE(got.size() == want.size());
  for (const auto& row : want) {
    const auto& name = std::get<0>(row);
    const auto& t = std::get<1>(row);
    INFO("output " << name);
    CHECK(got.at(name).device() == Device::Host);
    FUSOR_CHECK_CLOSE(got.at(name), t, rtol, atol);
  }
}

TensorMap bert_inputs(int64_t b, int64_t t, uint64_t seed) {
  Tensor mask = Tensor::zeros(DType::F32, Shape{b, 1, 1, t});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = t - i; j < t; ++j) mask.set(i * t + j, -10000.0);  // row i masks its last i positions
  return {{"x", test::randn(Shape{b, t, 768}, seed)}, {"mask", mask}};
}

}  // namespace

TEST_SUITE("cuda/engine") {
  TEST_CASE("an engine on cuda starts where there is a device and says what is missing where there is none") {
    const std::string why = why_no_cuda();
    try {
      Engine e(EngineOptions{.backend = BackendKind::Cuda, .disk_cache = false});
      CHECK_MESSAGE(why.empty(), "the engine started although the backend cannot: ", why);
      MESSAGE("a CUDA device is present");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::DeviceUnavailable);
      CHECK_FALSE(why.empty());
      CHECK(std::string(e.what()) == why);  // the backend's own reason, naming what is missing
      MESSAGE("no CUDA device here: " << std::string(e.what()));
    }
  }

  TEST_CASE("cuda is a backend name and to_device needs a cuda engine") {
    CHECK(parse_backend("cuda") == BackendKind::Cuda);
    CHECK(backend_name(BackendKind::Cuda) == "cuda");
    Engine e(EngineOptions{.disk_cache = false});
    std::string msg;
    CHECK(test::error_of([&] { e.to_device(test::randn(Shape{4}, 1)); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("backend cuda") != std::string::npos);
    CHECK(test::error_of([&] { e.to_host(test::randn(Shape{4}, 1)); }) == ErrorCode::InvalidArgument);
    // A CPU engine refuses device tensors with the reason.
    Graph g = parse_graph("graph g\ninput x: f32[4]\ny = Relu(x)\noutput y\n");
    Tensor dev = Tensor::wrap_device(0x10000, DType::F32, Shape{4}, nullptr);
    CHECK(test::error_of([&] { e.run(g, {{"x", dev}}); }) == ErrorCode::DeviceUnavailable);
  }

  TEST_CASE("the BERT layer on cuda matches the static engine") {
    auto engine = cuda_engine_or_skip();
    if (!engine) return;
    Graph bert = parse_graph(example("bert_layer"));
    for (const auto& row : {std::pair<int64_t, int64_t>{1, 1}, {2, 7}, {8, 37}, {8, 128}}) {
      const auto& b = std::get<0>(row);
      const auto& t = std::get<1>(row);
      INFO("B " << b << " T " << t);
      check_against_static(*engine, bert, bert_inputs(b, t, uint64_t(b * 1000 + t)), 2e-3, 2e-3);
    }
    EngineStats s = engine->stats();
    CHECK(s.plan_misses == 4);
    CHECK(s.kernels_compiled > 0);
    MESSAGE("BERT layer: " << s.kernels_compiled << " kernels compiled in " << s.compile_ms << " ms");
  }

  TEST_CASE("the ResNet bottleneck on cuda matches the static engine") {
    auto engine = cuda_engine_or_skip();
    if (!engine) return;
    Graph g = parse_graph(example("resnet_bottleneck"));
    for (const auto& row : {std::pair<int64_t, int64_t>{1, 7}, {2, 56}}) {
      const auto& n = std::get<0>(row);
      const auto& hw = std::get<1>(row);
      INFO("N " << n << " HW " << hw);
      check_against_static(*engine, g, {{"x", test::randn(Shape{n, 256, hw, hw}, uint64_t(n + hw))}}, 2e-3, 2e-3);
    }
  }

  TEST_CASE("device inputs give device outputs equal to the host run") {
    auto engine = cuda_engine_or_skip();
    if (!engine) return;
    Graph bert = parse_graph(example("bert_layer"));
    TensorMap host_in = bert_inputs(2, 19, 5);
    TensorMap host_out = engine->run(bert, host_in);
    TensorMap dev_in;
    for (const auto& [name, t] : host_in) dev_in[name] = engine->to_device(t);
    CHECK(dev_in.at("x").device() == Device::Cuda);
    CHECK(test::error_of([&] { (void)dev_in.at("x").at(0); }) == ErrorCode::InvalidArgument);
    TensorMap dev_out = engine->run(bert, dev_in);
    REQUIRE(dev_out.size() == host_out.size());
    for (const auto& row : dev_out) {
      const auto& name = std::get<0>(row);
      const auto& t = std::get<1>(row);
      INFO("output " << name);
      CHECK(t.device() == Device::Cuda);
      FUSOR_CHECK_CLOSE(engine->to_host(t), host_out.at(name), 0, 0);  // the same kernels
    }
    // One plan serves both (the plan key has no per-input device), with the same launches.
    CHECK(engine->stats().plan_misses == 1);
    engine->synchronize();
    const uint64_t launches = engine->stats().device_launches;
    CHECK(launches % 2 == 0);
    CHECK(launches >= 2 * 7);  // two runs of >= 7 kernels (QKV, attention, 2 LayerNorms, 3 GEMMs)
    // to_device / to_host round trip exactly, every dtype.
    std::vector<double> values;
    for (int i = 0; i < 15; ++i) values.push_back(i % 3 == 0 ? 0.0 : double(i) * 0.25);
    for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::Bool}) {
      Tensor t = Tensor::from_doubles(d, Shape{3, 5}, values);
      FUSOR_CHECK_CLOSE(engine->to_host(engine->to_device(t)), t, 0, 0);
    }
  }

  TEST_CASE("supplied outputs are written in place on either device") {
    auto engine = cuda_engine_or_skip();
    if (!engine) return;
    Graph g = parse_graph("graph g\ninput x: f32[1000]\ninput y: f32[1000]\na = Add(x, y)\nm = Mul(a, x)\noutput a, m\n");
    TensorMap in{{"x", test::randn(Shape{1000}, 1)}, {"y", test::randn(Shape{1000}, 2)}};
    TensorMap want = run_static(g, in);
    Tensor host_a = Tensor::zeros(DType::F32, Shape{1000});
    Tensor dev_m = engine->to_device(Tensor::zeros(DType::F32, Shape{1000}));
    TensorMap out{{"a", host_a}, {"m", dev_m}};
    engine->run(g, in, out);
    CHECK(out.at("a").raw() == host_a.raw());
    CHECK(out.at("m").device_address() == dev_m.device_address());
    FUSOR_CHECK_CLOSE(host_a, want.at("a"), 0, 0);
    FUSOR_CHECK_CLOSE(engine->to_host(dev_m), want.at("m"), 1e-6, 1e-7);
    TensorMap wrong{{"a", Tensor::zeros(DType::F32, Shape{999})}};
    CHECK(test::error_of([&] { engine->run(g, in, wrong); }) == ErrorCode::ShapeMismatch);
  }

  TEST_CASE("a restarted engine loads every cubin from the store and compiles nothing") {
    if (!cuda_engine_or_skip()) return;
    test::TempDir dir("cuda-engine-store");
    Graph bert = parse_graph(example("bert_layer"));
    TensorMap in = bert_inputs(1, 23, 9);
    TensorMap first;
    {
      auto engine = cuda_engine_or_skip(dir.path().string());
      first = engine->run(bert, in);
      EngineStats s = engine->stats();
      CHECK(s.kernels_compiled > 0);
      CHECK(s.disk_writes == s.kernels_compiled);
      CHECK(s.disk_enabled);
    }
    auto engine = cuda_engine_or_skip(dir.path().string());
    TensorMap second = engine->run(bert, in);
    EngineStats s = engine->stats();
    CHECK(s.kernels_compiled == 0);
    CHECK(s.disk_hits > 0);
    MESSAGE("restart: " << s.disk_hits << " cubins loaded in " << s.load_ms << " ms");
    for (const auto& [name, t] : first) FUSOR_CHECK_CLOSE(second.at(name), t, 0, 0);
  }

  TEST_CASE("f16 and bf16 graphs on cuda match the f32 static engine within their precision") {
    auto engine = cuda_engine_or_skip();
    if (!engine) return;
    for (const char* dt : {"f16", "bf16"}) {
      INFO(std::string(dt));
      const std::string linear =
          "graph g\ninput x: $T[M, 256]\nconst w: $T[256, 384] = randn(seed=1, std=0.05)\n"
          "const b: $T[384] = randn(seed=2, std=0.05)\nmm = MatMul(x, w)\nh = Add(mm, b)\ny = Gelu(h)\noutput y\n";
      Graph g = parse_graph(test::with(linear, {{"$T", dt}}));
      Graph g32 = parse_graph(test::with(linear, {{"$T", "f32"}}));
      Tensor x = test::randn(Shape{100, 256}, 3, 1.0, std::string(dt) == "f16" ? DType::F16 : DType::BF16);
      Tensor x32 = Tensor::empty(DType::F32, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) x32.set(i, x.at(i));
      TensorMap got = engine->run(g, {{"x", x}});
      TensorMap want = run_static(g32, {{"x", x32}});
      Tensor y = got.at("y");
      Tensor y32 = Tensor::empty(DType::F32, y.shape());
      for (int64_t i = 0; i < y.numel(); ++i) y32.set(i, y.at(i));
      const double tol = std::string(dt) == "f16" ? 1e-2 : 4e-2;  // weights rounded to the dtype, and the output
      FUSOR_CHECK_CLOSE(y32, want.at("y"), tol, tol);
    }
  }

  TEST_CASE("the BERT layer in f16 and bf16 on cuda stays close to the f32 static engine") {
    auto engine = cuda_engine_or_skip();
    if (!engine) return;
    const std::string text = example("bert_layer");
    Graph g32 = parse_graph(text);
    TensorMap in32 = bert_inputs(2, 37, 11);
    TensorMap want = run_static(g32, in32);
    // Weights and activations rounded to 11 (f16) or 8 (bf16) significant bits, f32
    // accumulation: a few units of the last place per op, through ~10 ops of O(1) values.
    for (const auto& row : {std::tuple<const char*, DType, double>{"f16", DType::F16, 3e-2},
                                  {"bf16", DType::BF16, 1.5e-1}}) {
      const auto& dt = std::get<0>(row);
      const auto& dtype = std::get<1>(row);
      const auto& tol = std::get<2>(row);
      INFO(std::string(dt));
      Graph g = parse_graph(test::with(text, {{": f32[", std::string(": ") + dt + "["}}));
      TensorMap in;
      for (const auto& row : in32) {
        const auto& name = std::get<0>(row);
        const auto& t = std::get<1>(row);
        Tensor c = Tensor::empty(dtype, t.shape());
        for (int64_t i = 0; i < t.numel(); ++i) c.set(i, t.at(i));
        in[name] = c;
      }
      Tensor y = engine->run(g, in).begin()->second;
      Tensor y32 = Tensor::empty(DType::F32, y.shape());
      for (int64_t i = 0; i < y.numel(); ++i) y32.set(i, y.at(i));
      FUSOR_CHECK_CLOSE(y32, want.begin()->second, tol, tol);
    }
  }
}
