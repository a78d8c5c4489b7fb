// Many threads on one Engine: 8 threads send requests at random shapes of the BERT-base
// layer to one engine (llvm; with tiering; with a symbolic sequence dim; with background
// compiles; static; asmjit), while a
// ninth reads stats() and profile() and a tenth warms other shapes with prepare(). Every
// output is compared with a single-threaded unfused static run of the same inputs. This is
// the suite the ThreadSanitizer build runs (FUSOR_SANITIZE=thread, ctest -L stress in
// .ci/run), where a clean report is part of passing; the release build runs it too.
// $FUSOR_STRESS_REQUESTS sets the requests per thread (default: 40; 8 under a sanitizer,
// where every static reference is many times slower).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

using test::kSanitized;

std::string load(const char* name) {
  std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int requests_per_thread() {
  if (const char* s = std::getenv("FUSOR_STRESS_REQUESTS")) return std::max(1, std::atoi(s));
  return kSanitized ? 8 : 40;
}

// One request's inputs and the single-threaded static run's outputs, by (batch, seq).
struct Case {
  TensorMap inputs;
  TensorMap want;
};

class Cases {
 public:
  explicit Cases(const Graph& g) : g_(g), reference_(EngineOptions{.num_threads = 1, .fuse = false}) {}
  // Computed once per shape, under the lock: the reference is the slow part.
  const Case& get(int64_t b, int64_t t) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cases_.find({b, t});
    if (it != cases_.end()) return it->second;
    Case c;
    c.inputs = {{"x", test::randn({b, t, 768}, uint64_t(b * 1000 + t))},
                {"mask", test::uniform({b, 1, 1, t}, uint64_t(t), -1, 0)}};
    c.want = reference_.run(g_, c.inputs);
    return cases_.emplace(std::pair{b, t}, std::move(c)).first->second;
  }

 private:
  const Graph& g_;
  Engine reference_;
  std::mutex mu_;
  std::map<std::pair<int64_t, int64_t>, Case> cases_;  // node-based: references stay valid
};

void stress(EngineOptions o) {
  o.num_threads = 2;
  o.disk_cache = false;
  std::unique_ptr<Engine> e;
  try {
    e = std::make_unique<Engine>(o);
  } catch (const Error& err) {
    MESSAGE("skipped: " << err.what());
    return;
  }
  const Graph g = parse_graph(load("bert_layer"));
  Cases cases(g);
  // The shapes requests draw from: few enough that most requests hit a plan (and race
  // with its first plan being replaced), several batch sizes and odd sequence lengths.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 5}, {1, 16}, {2, 7}, {1, 23}, {2, 3}, {1, 1}};
  for (auto [b, t] : shapes) cases.get(b, t);  // the references first, on one thread

  constexpr int kThreads = 8;
  const int requests = requests_per_thread();
  std::atomic<int> failures{0}, done{0};
  std::mutex report_mu;
  std::string first_failure;
  auto report = [&](const std::string& what) {
    failures.fetch_add(1);
    std::lock_guard<std::mutex> lk(report_mu);
    if (first_failure.empty()) first_failure = what;
  };

  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937 rng(uint32_t(th) * 7919u + 1u);
      for (int r = 0; r < requests; ++r) {
        auto [b, t] = shapes[rng() % shapes.size()];
        const Case& c = cases.get(b, t);
        try {
          TensorMap got = e->run(g, c.inputs);
          std::string why;
          if (!test::allclose(got.at("y"), c.want.at("y"), 1e-4, 1e-4, &why))
            report("thread " + std::to_string(th) + " shape (" + std::to_string(b) + ", " + std::to_string(t) +
                   "): " + why);
        } catch (const std::exception& ex) {
          report(std::string("thread ") + std::to_string(th) + ": " + ex.what());
        }
      }
      done.fetch_add(1);
    });
  }
  // A reader of the engine's counters and profile while the requests run.
  std::thread reader([&] {
    uint64_t last_runs = 0;
    while (done.load() < kThreads) {
      const EngineStats s = e->stats();
      const uint64_t runs = s.plan_hits + s.plan_misses;
      if (runs < last_runs) report("stats went backwards");
      last_runs = runs;
      (void)e->profile();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  // A warmer preparing shapes no request asks for.
  std::thread warmer([&] {
    for (int64_t t : {2, 11}) {
      try {
        e->prepare(g, {{"B", 1}, {"T", t}});
      } catch (const std::exception& ex) {
        report(std::string("prepare: ") + ex.what());
      }
    }
  });
  for (std::thread& t : threads) t.join();
  reader.join();
  warmer.join();
  e->drain();
  // After the background plans are in, every shape once more on one thread.
  for (auto [b, t] : shapes) {
    const Case& c = cases.get(b, t);
    std::string why;
    if (!test::allclose(e->run(g, c.inputs).at("y"), c.want.at("y"), 1e-4, 1e-4, &why)) report("after drain: " + why);
  }
  INFO(first_failure);
  CHECK(failures.load() == 0);
  const EngineStats s = e->stats();
  MESSAGE(kThreads << " threads x " << requests << " requests: " << s.plan_misses << " plans built, " << s.plan_hits
                   << " hits, " << s.kernels_compiled << " kernels compiled, " << s.background_swaps << " swaps");
  CHECK(s.plan_hits + s.plan_misses >= uint64_t(kThreads * requests));
}

}  // namespace

TEST_SUITE("stress") {
  TEST_CASE("8 threads on one engine: llvm") {
    EngineOptions o;
    o.backend = BackendKind::Llvm;
    stress(o);
  }

  TEST_CASE("8 threads on one engine: llvm with tiering") {
    EngineOptions o;
    o.backend = BackendKind::Llvm;
    o.tiering = true;
    stress(o);
  }

  TEST_CASE("8 threads on one engine: llvm with a symbolic sequence dim") {
    EngineOptions o;
    o.backend = BackendKind::Llvm;
    o.symbolic_dim = std::string("T");  // not from the literal: GCC 12 -Wrestrict misfires (ASan, -O3)
    stress(o);
  }

  TEST_CASE("8 threads on one engine: llvm with background compiles") {
    EngineOptions o;
    o.backend = BackendKind::Llvm;
    o.background_compile = true;
    stress(o);
  }

  TEST_CASE("8 threads on one engine: static") {
    EngineOptions o;
    o.backend = BackendKind::Static;
    stress(o);
  }

  TEST_CASE("8 threads on one engine: asmjit") {
    EngineOptions o;
    o.backend = BackendKind::Asmjit;
    stress(o);
  }
}
