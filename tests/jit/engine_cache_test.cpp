// The engine's caches end to end: the persistent kernel store across engines (a restart),
// bad store entries and unusable folders, byte budgets and eviction, and many threads
// asking for one new shape at once (single flight) or for many shapes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// A graph of three JIT kernels (a matmul with its epilogue, a layernorm, a pointwise chain)
// with a dynamic row count T.
const char* kGraph = R"(graph cached
input x: f32[T, 24]
const w: f32[24, 40] = randn(seed=1, std=0.2)
const b: f32[40] = randn(seed=2, std=0.1)
const g: f32[40] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[40] = randn(seed=4, std=0.1)
m = MatMul(x, w)
h = Add(m, b)
r = Relu(h)
n = LayerNormalization(r, g, beta) {axis=-1, epsilon=1e-5}
t = Tanh(n)
y = Mul(t, n)
output y
)";

struct Recorder {
  std::mutex mu;
  std::vector<std::string> warnings;
  std::function<void(const std::string&)> fn() {
    return [this](const std::string& w) {
      std::lock_guard<std::mutex> lk(mu);
      warnings.push_back(w);
    };
  }
};

std::unique_ptr<Engine> engine_in(const std::string& dir, Recorder* rec = nullptr, EngineOptions o = {}) {
  o.backend = BackendKind::Llvm;
  o.num_threads = 2;
  o.cache_dir = dir;
  if (rec) o.warn = rec->fn();
  try {
    return std::make_unique<Engine>(o);
  } catch (const Error& e) {
    MESSAGE("skipped: " << e.what());
    return nullptr;
  }
}

// An engine with background_compile and no persistent store (null where llvm is missing).
std::unique_ptr<Engine> background_engine() {
  EngineOptions o;
  o.disk_cache = false;
  o.background_compile = true;
  return engine_in("", nullptr, o);
}

TensorMap input(int64_t t) { return {{"x", test::randn({t, 24}, uint64_t(t))}}; }

TensorMap reference(const Graph& g, int64_t t) {
  Engine e(EngineOptions{.num_threads = 2, .fuse = false});
  return e.run(g, input(t));
}

void check_close(const TensorMap& got, const TensorMap& want) {
  for (const auto& [name, tensor] : want) FUSOR_CHECK_CLOSE(got.at(name), tensor, 1e-4, 1e-4);
}

}  // namespace

TEST_SUITE("jit/cache") {
  TEST_CASE("a restarted engine runs a known shape from the persistent store without compiling") {
    test::TempDir dir("engine-store");
    Graph g = parse_graph(kGraph);
    TensorMap first;
    {
      auto e = engine_in(dir.file("store"));
      if (!e) return;
      first = e->run(g, input(17));
      EngineStats s = e->stats();
      CHECK(s.disk_enabled);
      CHECK(s.kernels_compiled == 3);
      CHECK(s.disk_writes == 3);
      CHECK(s.disk_hits == 0);
    }
    auto e = engine_in(dir.file("store"));  // "after a restart"
    TensorMap again = e->run(g, input(17));
    EngineStats s = e->stats();
    CHECK(s.kernels_compiled == 0);
    CHECK(s.disk_hits == 3);
    for (const auto& [name, t] : first) FUSOR_CHECK_CLOSE(again.at(name), t, 0, 0);
    // A new shape still compiles (and joins the store).
    check_close(e->run(g, input(5)), reference(g, 5));
    CHECK(e->stats().kernels_compiled == 3);
  }

  TEST_CASE("tuned kernels are timed once: a restart loads them with their tilings, apart from the rules' kernels") {
    test::TempDir dir("engine-tuned");
    Graph g = parse_graph(kGraph);
    EngineOptions tuned;
    tuned.tune = true;
    TensorMap first;
    {
      auto e = engine_in(dir.file("store"), nullptr, tuned);
      if (!e) return;
      first = e->run(g, input(70));
      check_close(first, reference(g, 70));
      CHECK(e->stats().kernels_compiled == 3);
      CHECK(e->stats().disk_writes == 3);
    }
    {
      auto e = engine_in(dir.file("store"), nullptr, tuned);  // "after a restart"
      TensorMap again = e->run(g, input(70));
      CHECK(e->stats().kernels_compiled == 0);
      CHECK(e->stats().disk_hits == 3);
      // The same tiling, so the same floats (and any tiling computes the rules' floats).
      for (const auto& [name, t] : first) FUSOR_CHECK_CLOSE(again.at(name), t, 0, 0);
    }
    // An engine that does not tune has its own keys: it compiles (the rules' tilings), and
    // computes the same floats.
    auto e = engine_in(dir.file("store"));
    TensorMap plain = e->run(g, input(70));
    CHECK(e->stats().kernels_compiled == 3);
    CHECK(e->stats().disk_hits == 0);
    for (const auto& [name, t] : first) FUSOR_CHECK_CLOSE(plain.at(name), t, 0, 0);
  }

  TEST_CASE("corrupt store entries are warned about and rebuilt") {
    test::TempDir dir("engine-corrupt");
    Graph g = parse_graph(kGraph);
    {
      auto e = engine_in(dir.file("store"));
      if (!e) return;
      e->run(g, input(9));
    }
    int corrupted = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir.path() / "store" / "entries")) {
      std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(-5, std::ios::end);
      io.put('\x5a');
      ++corrupted;
    }
    CHECK(corrupted == 3);
    Recorder rec;
    auto e = engine_in(dir.file("store"), &rec);
    check_close(e->run(g, input(9)), reference(g, 9));
    CHECK(e->stats().kernels_compiled == 3);
    CHECK(e->stats().disk_hits == 0);
    CHECK(rec.warnings.size() == 3);
    // Rebuilt: the next engine loads them.
    auto f = engine_in(dir.file("store"));
    f->run(g, input(9));
    CHECK(f->stats().disk_hits == 3);
    CHECK(f->stats().kernels_compiled == 0);
  }

  TEST_CASE("an unusable store folder leaves the engine memory-only with a warning") {
    test::TempDir dir("engine-bad-dir");
    Graph g = parse_graph(kGraph);
    std::ofstream(dir.file("a-file")) << "not a folder";
    std::filesystem::create_directories(dir.path() / "open");
    std::filesystem::permissions(dir.path() / "open", std::filesystem::perms::all);  // 0777: others could plant code
    for (const std::string& bad : {dir.file("a-file"), dir.file("open")}) {
      CAPTURE(bad);
      Recorder rec;
      auto e = engine_in(bad, &rec);
      if (!e) return;
      CHECK_FALSE(e->stats().disk_enabled);
      REQUIRE(rec.warnings.size() == 1);
      CHECK(rec.warnings[0].find(bad) != std::string::npos);
      check_close(e->run(g, input(3)), reference(g, 3));
      CHECK(e->stats().kernels_compiled == 3);
    }
  }

  TEST_CASE("byte budgets evict plans and kernels and runs stay correct") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    o.plan_cache_bytes = 1;  // smaller than any plan: none is kept
    o.kernel_cache_bytes = 1;
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    for (int64_t t : {4, 4, 7}) check_close(e->run(g, input(t)), reference(g, t));
    EngineStats s = e->stats();
    CHECK(s.plans == 0);
    CHECK(s.plan_misses == 3);  // the repeated shape was built again
    CHECK(s.kernel_bytes == 0);
    CHECK(s.kernels_compiled == 9);
    // An ample budget keeps everything; the least recently used plan goes first when tight.
    EngineOptions roomy;
    roomy.disk_cache = false;
    auto r = engine_in("", nullptr, roomy);
    r->run(g, input(4));
    const uint64_t packed = r->stats().packed_bytes;
    CHECK(packed > 0);
    for (int64_t t : {5, 4}) r->run(g, input(t));
    CHECK(r->stats().packed_bytes == packed);  // the weights are packed once for every shape
    CHECK(r->stats().plans == 2);
    CHECK(r->stats().plan_hits == 1);
    CHECK(r->stats().evictions() == 0);
    CHECK(r->stats().bytes() > 0);
  }

  TEST_CASE("eight threads asking for one new shape build it once") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    TensorMap want = reference(g, 33);
    std::vector<TensorMap> got(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { got[size_t(i)] = e->run(g, input(33)); });
    for (std::thread& t : threads) t.join();
    for (const TensorMap& m : got) check_close(m, want);
    EngineStats s = e->stats();
    CHECK(s.plan_misses == 1);
    CHECK(s.plan_hits == 7);
    CHECK(s.kernels_compiled == 3);
  }

  TEST_CASE("threads running different shapes at once get their own results") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    std::vector<std::thread> threads;
    std::vector<int> ok(6, 0);
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&, i] {
        const int64_t t = 1 + i % 3 * 8;  // 1, 9, 17
        for (int rep = 0; rep < 3; ++rep) {
          TensorMap out = e->run(g, input(t));
          ok[size_t(i)] += out.at("y").shape() == Shape{t, 40};
        }
      });
    for (std::thread& t : threads) t.join();
    for (int v : ok) CHECK(v == 3);
    for (int64_t t : {1, 9, 17}) check_close(e->run(g, input(t)), reference(g, t));
    CHECK(e->stats().plan_misses == 3);
  }

  TEST_CASE("prepare compiles a shape ahead of its first run") {
    test::TempDir dir("engine-prepare");
    Graph g = parse_graph(kGraph);
    auto e = engine_in(dir.file("store"));
    if (!e) return;
    e->prepare(g, {{"T", 12}});
    CHECK(e->stats().kernels_compiled == 3);
    check_close(e->run(g, input(12)), reference(g, 12));
    CHECK(e->stats().plan_hits == 1);
    CHECK(e->stats().kernels_compiled == 3);
  }
}

TEST_SUITE("jit/background") {
  TEST_CASE("a new shape runs at once on the static kernels and its JIT plan swaps in later") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    o.background_compile = true;
    o.profile = true;
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    TensorMap want = reference(g, 21);
    check_close(e->run(g, input(21)), want);  // served by the static plan
    e->drain();
    EngineStats s = e->stats();
    CHECK(s.background_swaps == 1);
    CHECK(s.kernels_compiled == 3);
    CHECK(s.plan_misses == 1);
    check_close(e->run(g, input(21)), want);  // now the JIT plan
    bool jit_ran = false, static_ran = false;
    for (const StepProfile& p : e->profile()) {
      jit_ran |= p.step.rfind("llvm ", 0) == 0;
      static_ran |= p.step.rfind("static MatMul", 0) == 0;
    }
    CHECK(jit_ran);
    CHECK(static_ran);
  }

  TEST_CASE("runs racing the swap from many threads all get correct results") {
    Graph g = parse_graph(kGraph);
    auto e = background_engine();
    if (!e) return;
    TensorMap want = reference(g, 13);
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&, i] {
        for (int rep = 0; rep < 20; ++rep) {
          TensorMap out = e->run(g, input(13));
          const Tensor& y = out.at("y");
          bool same = true;
          for (int64_t j = 0; j < y.numel(); ++j)
            same &= std::abs(y.at(j) - want.at("y").at(j)) <= 1e-4 + 1e-4 * std::abs(want.at("y").at(j));
          ok[size_t(i)] += same;
        }
      });
    for (std::thread& t : threads) t.join();
    for (int v : ok) CHECK(v == 20);
    e->drain();
    CHECK(e->stats().background_swaps == 1);
  }

  TEST_CASE("the background compile runs below the priority of the runs it serves") {
    // Note [Background priority]: the thread that builds final plans runs 10 nice levels
    // below its creator (at most 19); the caller's threads keep theirs. Read from /proc: each
    // thread's nice value (the 19th field of /proc/self/task/<tid>/stat, counted after the
    // command name).
    auto nice_values = [] {
      std::vector<int> v;
      for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream in(task.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::istringstream fields(stat.substr(stat.rfind(')') + 2));
        std::string f;
        for (int i = 3; i <= 19 && fields >> f; ++i) {
        }
        if (!f.empty()) v.push_back(std::stoi(f));
      }
      return v;
    };
    if (!std::filesystem::exists("/proc/self/task")) {
      MESSAGE("skipped: no /proc/self/task to read thread priorities from");
      return;
    }
    const std::vector<int> before = nice_values();
    Graph g = parse_graph(kGraph);
    auto e = background_engine();
    if (!e) return;
    check_close(e->run(g, input(17)), reference(g, 17));
    e->drain();  // the thread stays, waiting for the next job
    const std::vector<int> after = nice_values();
    const int own = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
    const int lowered = std::min(19, own + 10);
    CHECK(std::count(after.begin(), after.end(), lowered) == std::count(before.begin(), before.end(), lowered) + 1);
    CHECK(getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))) == own);  // this thread, unchanged
  }

  TEST_CASE("an engine destroyed with background work pending does not hang or crash") {
    Graph g = parse_graph(kGraph);
    auto e = background_engine();
    if (!e) return;
    for (int64_t t : {2, 3, 4, 5}) e->run(g, input(t));
    e.reset();  // pending jobs are dropped, the running one finishes
    CHECK(true);
  }
}

TEST_SUITE("jit/tiering") {
  TEST_CASE("with tiering a new shape runs at once on asmjit kernels and LLVM's plan replaces it") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    o.tiering = true;
    o.profile = true;
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    TensorMap want = reference(g, 19);
    check_close(e->run(g, input(19)), want);  // the asmjit tier
    e->drain();
    check_close(e->run(g, input(19)), want);  // the llvm tier
    EngineStats s = e->stats();
    CHECK(s.background_swaps == 1);
    CHECK(s.compile_ms_by_backend.count("llvm") == 1);
    bool asmjit_ran = false, llvm_ran = false;
    for (const StepProfile& p : e->profile()) {
      asmjit_ran |= p.step.rfind("asmjit ", 0) == 0;
      llvm_ran |= p.step.rfind("llvm ", 0) == 0;
    }
    if (s.compile_ms_by_backend.count("asmjit")) CHECK(asmjit_ran);  // asmjit built in
    // Each kernel of the final plan is LLVM's unless asmjit's ran faster on this shape.
    CHECK((llvm_ran || s.first_tier_kept == 3));
    CHECK(s.first_tier_kept <= 3);
  }

  TEST_CASE("the asmjit backend runs the BERT layer and the bottleneck like the static kernels") {
    std::unique_ptr<Engine> e;
    try {
      e = std::make_unique<Engine>(EngineOptions{.backend = BackendKind::Asmjit, .num_threads = 2, .disk_cache = false});
    } catch (const Error& err) {
      MESSAGE("skipped: " << err.what());
      return;
    }
    auto load = [](const char* name) { return load_graph(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name); };
    Engine reference_engine(EngineOptions{.num_threads = 2, .fuse = false});
    Graph bert = load("bert_layer");
    TensorMap in{{"x", test::randn({2, 9, 768}, 1)}, {"mask", test::uniform({2, 1, 1, 9}, 2, -1, 0)}};
    check_close(e->run(bert, in), reference_engine.run(bert, in));
    Graph res = load("resnet_bottleneck");
    TensorMap rin{{"x", test::randn({1, 256, 10, 9}, 3)}};
    check_close(e->run(res, rin), reference_engine.run(res, rin));
    CHECK(e->stats().kernels_compiled > 0);
  }
}

TEST_SUITE("jit/symbolic") {
  TEST_CASE("with symbolic_dim every new size runs at once on kernels compiled once") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    o.symbolic_dim = "T";
    o.profile = true;
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    check_close(e->run(g, input(19)), reference(g, 19));  // compiles the symbolic kernels
    const uint64_t first_compiles = e->stats().kernels_compiled;
    CHECK(first_compiles == 3);  // GEMM + bias + ReLU, LayerNorm, tanh * n: all symbolic
    e->drain();                  // the exact kernels of 19 (3 more compiles)
    const uint64_t after_19 = e->stats().kernels_compiled;
    for (int64_t t : {1, 2, 7, 64, 65, 100}) {
      CAPTURE(t);
      check_close(e->run(g, input(t)), reference(g, t));  // before its exact plan: symbolic
    }
    e->drain();
    for (int64_t t : {1, 2, 7, 64, 65, 100}) check_close(e->run(g, input(t)), reference(g, t));  // exact
    EngineStats s = e->stats();
    CHECK(s.symbolic_steps == 7 * 3);
    CHECK(s.background_swaps == 7);
    CHECK(s.kernels_compiled - after_19 == 6 * 3);  // only exact kernels: no symbolic one again
    CHECK(s.kernels_compiled_background == s.kernels_compiled - 3);  // no run waited but the first
    bool symbolic_ran = false, exact_ran = false;
    for (const StepProfile& p : e->profile()) {
      symbolic_ran |= p.step.rfind("llvm symbolic ", 0) == 0;
      exact_ran |= p.step.rfind("llvm contraction", 0) == 0;
    }
    CHECK(symbolic_ran);
    CHECK(exact_ran);
  }

  TEST_CASE("with tiering the first size ever seen compiles no llvm kernel on its path: the symbolic ones follow behind") {
    // Note [Symbolic kernels compiled behind the first size].
    Graph g = parse_graph(kGraph);
    for (bool specialize : {true, false}) {
      CAPTURE(specialize);
      EngineOptions o;
      o.disk_cache = false;
      o.symbolic_dim = "T";
      o.tiering = true;
      o.specialize = specialize;
      auto e = engine_in("", nullptr, o);
      if (!e) return;
      check_close(e->run(g, input(19)), reference(g, 19));  // the first tier's kernels
      e->drain();
      EngineStats s = e->stats();
      if (!s.compile_ms_by_backend.count("asmjit")) {
        MESSAGE("skipped: no asmjit first tier in this build or on this CPU");
        return;
      }
      CHECK(s.symbolic_steps == 0);
      // On the path: the three asmjit kernels only; behind it the three symbolic kernels and,
      // specializing, the three exact ones of 19.
      CHECK(s.kernels_compiled - s.kernels_compiled_background == 3);
      CHECK(s.kernels_compiled_background == (specialize ? 6 : 3));
      CHECK(s.background_swaps == 1);
      for (int64_t t : {7, 64}) {
        CAPTURE(t);
        check_close(e->run(g, input(t)), reference(g, t));  // symbolic at once: nothing compiled for it
      }
      EngineStats after = e->stats();
      CHECK(after.symbolic_steps == 2 * 3);
      CHECK(after.kernels_compiled - after.kernels_compiled_background == 3);
      e->drain();
      CHECK(e->stats().kernels_compiled_background == s.kernels_compiled_background + (specialize ? 2 * 3 : 0));
    }
  }

  TEST_CASE("symbolic kernels come back from the store after a restart") {
    test::TempDir dir("symbolic-store");
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.symbolic_dim = "T";
    {
      auto e = engine_in(dir.file("store"), nullptr, o);
      if (!e) return;
      e->run(g, input(11));
      e->drain();
    }
    auto e = engine_in(dir.file("store"), nullptr, o);
    check_close(e->run(g, input(29)), reference(g, 29));  // a size never seen: symbolic, loaded
    e->drain();
    EngineStats s = e->stats();
    CHECK(s.kernels_compiled == 3);  // the exact kernels of 29, in the background; no symbolic one
    CHECK(s.disk_hits == 3);
    CHECK(s.symbolic_steps == 3);
  }

  TEST_CASE("prepare waits for the exact plan, and specialize off keeps the symbolic one") {
    Graph g = parse_graph(kGraph);
    EngineOptions o;
    o.disk_cache = false;
    o.symbolic_dim = "T";
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    e->prepare(g, {{"T", 23}});
    CHECK(e->stats().background_swaps == 1);  // no wait left for the run
    CHECK(e->stats().kernels_compiled == 6);  // 3 symbolic, 3 exact
    check_close(e->run(g, input(23)), reference(g, 23));
    o.specialize = false;
    auto kept = engine_in("", nullptr, o);
    for (int64_t t : {4, 23, 40}) check_close(kept->run(g, input(t)), reference(g, t));
    kept->drain();
    CHECK(kept->stats().kernels_compiled == 3);  // the symbolic kernels serve every size
    CHECK(kept->stats().background_swaps == 0);
    CHECK(kept->stats().symbolic_steps == 9);
  }

  TEST_CASE("symbolic self-attention serves lengths up to its scratch bound, exact or static beyond") {
    // One head of 32: queries and keys both T (codegen/llvm/symbolic_test.cpp). Its
    // symbolic kernel's stack scratch bounds the keys (~3200 here); a longer run must not
    // use it.
    Graph g = parse_graph(R"(graph attn
input q: f32[1, T, 32]
input k: f32[1, T, 32]
input v: f32[1, T, 32]
const scale: f32[] = [0.176776695]
kt = Transpose(k) {perm=[0, 2, 1]}
s = MatMul(q, kt)
ss = Mul(s, scale)
p = Softmax(ss) {axis=-1}
c = MatMul(p, v)
output c
)");
    auto in = [](int64_t t) {
      return TensorMap{{"q", test::randn({1, t, 32}, uint64_t(t))},
                       {"k", test::randn({1, t, 32}, uint64_t(t) + 1)},
                       {"v", test::randn({1, t, 32}, uint64_t(t) + 2)}};
    };
    EngineOptions o;
    o.disk_cache = false;
    o.symbolic_dim = "T";
    o.specialize = false;  // symbolic wherever a kernel has the form
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    Engine ref(EngineOptions{.num_threads = 2, .fuse = false});
    for (int64_t t : {5, 40, 3500}) {
      CAPTURE(t);
      check_close(e->run(g, in(t)), ref.run(g, in(t)));
    }
    CHECK(e->stats().symbolic_steps == 2);  // 5 and 40; 3500 keys exceed the scratch
    CHECK(e->stats().kernels_compiled == 1);  // the symbolic kernel (3500 has no kernel within the scratch)
  }

  TEST_CASE("a graph without the symbolic dim runs exactly as without the option") {
    Graph g = parse_graph("graph g\ninput x: f32[N, 8]\ny = Tanh(x)\noutput y\n");
    EngineOptions o;
    o.disk_cache = false;
    o.symbolic_dim = "T";
    auto e = engine_in("", nullptr, o);
    if (!e) return;
    TensorMap in{{"x", test::randn({5, 8}, 1)}};
    Engine ref(EngineOptions{.num_threads = 2, .fuse = false});
    check_close(e->run(g, in), ref.run(g, in));
    CHECK(e->stats().symbolic_steps == 0);
    CHECK(e->stats().background_swaps == 0);
    CHECK(e->stats().kernels_compiled == 1);
  }

  TEST_CASE("the BERT layer with a symbolic sequence length matches the static kernels") {
    auto e = engine_in("", nullptr, EngineOptions{.disk_cache = false, .symbolic_dim = "T"});
    if (!e) return;
    Graph bert = load_graph(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/bert_layer");
    Engine reference_engine(EngineOptions{.num_threads = 2, .fuse = false});
    for (int64_t t : {5, 12}) {
      TensorMap in{{"x", test::randn({2, t, 768}, uint64_t(t))}, {"mask", test::uniform({2, 1, 1, t}, 2, -1, 0)}};
      check_close(e->run(bert, in), reference_engine.run(bert, in));
    }
    // Four GEMMs and the LayerNorm (both share one kernel) per size: symbolic.
    CHECK(e->stats().symbolic_steps == 2 * 6);
  }
}
