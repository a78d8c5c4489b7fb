// The engine's memory stays within its byte budgets however many shapes it meets: a run of
// many distinct shapes through one Engine with small budgets (plans, kernels, shared
// constants), on every CPU backend and with tiering and a symbolic dim. The engine's own
// stats must stay within each budget, and the process's resident memory (VmRSS in
// /proc/self/status) must level off once the caches are full: what the budgets bound has
// to be what the memory is. $FUSOR_BUDGET_SHAPES sets the number of shapes (default 200
// on llvm, whose compiles take tens of milliseconds, and 10,000 elsewhere; the closing
// notes' 10,000-shape llvm runs set it).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <fstream>
#include <string>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_util.h"

using namespace fusor;
using fusor::test::randn;

namespace {

// Three JIT groups (a matmul with its epilogue, a layernorm, a pointwise chain) over two
// dims A and B: each run has a new (A, B), every A from 1 to 100 for each B, so the
// shapes are all distinct while their sizes stay bounded (what a sequence length does).
const char* kGraph = R"(graph budget
input x: f32[A, B, 16]
const w: f32[16, 24] = randn(seed=1, std=0.2)
const b: f32[24] = randn(seed=2, std=0.1)
const g: f32[24] = uniform(seed=3, low=0.5, high=1.5)
const beta: f32[24] = randn(seed=4, std=0.1)
m = MatMul(x, w)
h = Add(m, b)
r = Relu(h)
n = LayerNormalization(r, g, beta) {axis=-1, epsilon=1e-5}
t = Tanh(n)
y = Mul(t, n)
output y
)";

// VmRSS of this process in bytes (0 when /proc is not there).
uint64_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return uint64_t(std::stoull(line.substr(6))) * 1024;
  return 0;
}

using test::kAsan;

int64_t shape_count(BackendKind backend) {
  if (const char* s = std::getenv("FUSOR_BUDGET_SHAPES")) return std::max<int64_t>(100, std::atoll(s));
  // Under a sanitizer every step is slower and RSS is not asserted: fewer shapes, smaller
  // budgets on llvm (check_budgets). (The budgets fill within the first fifth of each run,
  // whose RSS is the "full caches" mark below: llvm's 1 MiB plan budget after ~33 plans, its
  // 512 KiB kernel budget after ~25 shapes; the others' 2 MiB plan budget after ~135
  // static plans.)
  if (kAsan) return backend == BackendKind::Llvm ? 60 : 400;
  return backend == BackendKind::Llvm ? 200 : 10000;
}

constexpr uint64_t kMiB = uint64_t(1) << 20;

void check_budgets(EngineOptions o) {
  o.num_threads = 1;
  o.disk_cache = false;
  // llvm: half the budgets (its runs are 200 shapes), and a quarter of that under ASan (60).
  const bool llvm = o.backend == BackendKind::Llvm;
  const uint64_t unit = !llvm ? kMiB : kAsan ? 128 * 1024 : 512 * 1024;
  o.plan_cache_bytes = 2 * unit;
  o.kernel_cache_bytes = unit;
  o.packed_cache_bytes = unit;
  std::unique_ptr<Engine> e;
  try {
    e = std::make_unique<Engine>(o);
  } catch (const Error& err) {
    MESSAGE("skipped: " << err.what());
    return;
  }
  const Graph graph = parse_graph(kGraph);
  const int64_t shapes = shape_count(o.backend);
  // RSS is sampled after each tenth of the run; the first fifth fills the caches.
  uint64_t rss_first = 0, rss_filled = 0, rss_peak = 0;
  uint64_t peak_plan = 0, peak_kernel = 0, peak_packed = 0;
  for (int64_t i = 0; i < shapes; ++i) {
    const int64_t a = 1 + i % 100, b = 1 + i / 100;
    TensorMap out = e->run(graph, {{"x", randn(Shape{a, b, 16}, uint64_t(i))}});
    REQUIRE(out.at("y").shape() == Shape{a, b, 24});
    // The baseline: after the first shape, whose first compile faulted in most of the
    // compiler's own code and tables (tens of MiB for LLVM), which no budget is about.
    if (i == 0) {
      if (o.tiering || !o.symbolic_dim.empty()) e->drain();
      rss_first = rss_bytes();
    }
    if ((i + 1) % (shapes / 10) == 0) {
      if (o.tiering || !o.symbolic_dim.empty()) e->drain();
      const EngineStats s = e->stats();
      peak_plan = std::max(peak_plan, s.plan_bytes);
      peak_kernel = std::max(peak_kernel, s.kernel_bytes);
      peak_packed = std::max(peak_packed, s.packed_bytes);
      const uint64_t rss = rss_bytes();
      if (i + 1 == 2 * (shapes / 10)) rss_filled = rss;
      rss_peak = std::max(rss_peak, rss);
      const struct mallinfo2 mi = mallinfo2();
      MESSAGE("shapes " << i + 1 << ": RSS " << rss / kMiB << " MiB (malloc in use " << mi.uordblks / kMiB << " of heap " << mi.arena / kMiB << " + mmap " << mi.hblkhd / kMiB << " MiB), plans " << s.plans << " (" << s.plan_bytes / 1024
                        << " KiB), kernel bytes " << s.kernel_bytes / 1024 << " KiB, compiled " << s.kernels_compiled
                        << ", evictions " << s.plan_evictions << " plans " << s.kernel_evictions << " kernels");
    }
  }
  CHECK(peak_plan <= o.plan_cache_bytes);
  CHECK(peak_kernel <= o.kernel_cache_bytes);
  CHECK(peak_packed <= o.packed_cache_bytes);
  const EngineStats s = e->stats();
  CHECK(s.plan_evictions > 0);  // the budgets were reached: the run measured eviction
  if (kAsan || rss_first == 0) {
    MESSAGE("RSS not asserted (" << std::string(kAsan ? "AddressSanitizer keeps freed memory" : "no /proc") << ")");
    return;
  }
  // What the engine holds is bounded by its budgets, so the resident memory grows by at
  // most the budgets (and the allocator's and the compiler's slack) over the first shape's,
  // and levels off once the caches are full: the last 80% of the shapes add only slack.
  const uint64_t budgets = o.plan_cache_bytes + o.kernel_cache_bytes + o.packed_cache_bytes;
  MESSAGE("RSS after the first shape " << rss_first / kMiB << " MiB, with full caches " << rss_filled / kMiB << " MiB, peak "
                          << rss_peak / kMiB << " MiB over " << shapes << " shapes");
  CHECK(rss_peak <= rss_filled + 8 * kMiB);
  // LLVM's own code and tables keep faulting in over the first shapes' compiles (its code
  // paths differ by kernel kind and tiling), ~15 MiB beyond the first shape's: no budget
  // is about them.
  const uint64_t compiler = o.backend == BackendKind::Llvm ? 24 * kMiB : 0;
  CHECK(rss_peak <= rss_first + budgets + compiler + 16 * kMiB);
}

}  // namespace

TEST_CASE("memory budgets bound RSS over many shapes: static") {
  EngineOptions o;
  o.backend = BackendKind::Static;
  check_budgets(o);
}

TEST_CASE("memory budgets bound RSS over many shapes: asmjit") {
  EngineOptions o;
  o.backend = BackendKind::Asmjit;
  check_budgets(o);
}

TEST_CASE("memory budgets bound RSS over many shapes: llvm") {
  EngineOptions o;
  o.backend = BackendKind::Llvm;
  check_budgets(o);
}

TEST_CASE("memory budgets bound RSS over many shapes: llvm with tiering") {
  EngineOptions o;
  o.backend = BackendKind::Llvm;
  o.tiering = true;
  check_budgets(o);
}

TEST_CASE("memory budgets bound RSS over many shapes: llvm with a symbolic dim") {
  EngineOptions o;
  o.backend = BackendKind::Llvm;
  o.symbolic_dim = std::string("A");  // not from the literal: GCC 12 -Wrestrict misfires (ASan, -O3)
  check_budgets(o);
}
