#include "bench/store_bench.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "bench/cases.h"
#include "cache/disk_store.h"
#include "cache/kernel_key.h"
#include "cache/redis_store.h"
#include "codegen/compiled_kernel.h"
#include "jit/engine.h"
#include "jit/executor.h"

namespace fusor::bench {
namespace {

// The remote store of the benchmarks, from the environment; "" with *why when there is none.
std::string bench_redis_url(std::string* why) {
  const char* url = std::getenv("FUSOR_BENCH_REDIS");
  if (!url || !*url) {
    *why = "set FUSOR_BENCH_REDIS=redis://... and FUSOR_STORE_KEY_FILE (scripts/bench-store.sh does)";
    return "";
  }
  return url;
}

// A namespace of this process's own, so runs never read each other's entries.
std::string bench_namespace() { return "fusor-bench-" + std::to_string(::getpid()) + ":"; }

// A fresh folder for a disk store, removed with the object.
struct TempStoreDir {
  std::filesystem::path path;
  TempStoreDir() {
    std::string t = (std::filesystem::temp_directory_path() / "fusor-bench-store-XXXXXX").string();
    path = ::mkdtemp(t.data()) ? t : "";
  }
  ~TempStoreDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

std::unique_ptr<RedisStore> open_remote(const std::string& url) {
  RedisStore::Options o;
  o.url = url;
  o.remote.key_namespace = bench_namespace();
  o.remote.timeout_ms = o.remote.connect_timeout_ms = 1000;  // a benchmark waits; a server down fails it
  return RedisStore::open(o);
}

// Removes what this process wrote under its namespace.
void clean_remote(RedisStore& s) {
  std::vector<std::string> names;
  for (const RedisStore::Listed& l : s.list()) names.push_back(l.name);
  s.remove(names);
}

// One kernel, from `source`: "compile" (llvm compiles the spec), "disk" or "redis" (the
// payload read from that store, then linked).
void store_kernel(benchmark::State& state, const char* case_name, GroupKind kind, const char* source) {
  const std::string src = source;
  std::unique_ptr<JitBackend> be = make_jit_backend(BackendKind::Llvm);
  const KernelSpec spec = spec_of_case(case_name, kind);
  if (src == "compile") {
    for (auto _ : state) benchmark::DoNotOptimize(be->compile(spec));
    return;
  }
  const KernelKey key{spec, std::string(be->name()), be->target_description(), be->compiler_version()};
  const std::string key_bytes = key.serialize();
  const std::shared_ptr<const CompiledKernel> compiled = be->compile(spec);
  const auto payload = std::span(reinterpret_cast<const uint8_t*>(compiled->object.data()), compiled->object.size());
  TempStoreDir dir;
  std::unique_ptr<KernelStore> store;
  if (src == "disk") {
    DiskStore::Options o;
    o.dir = dir.path.string();
    store = std::make_unique<DiskStore>(DiskStore::open(o));
  } else {
    std::string why;
    const std::string url = bench_redis_url(&why);
    if (url.empty()) return state.SkipWithError(why.c_str());
    store = open_remote(url);
  }
  if (!store->put(key_bytes, payload)) return state.SkipWithError("the store did not take the kernel");
  for (auto _ : state) {
    std::optional<std::vector<uint8_t>> bytes = store->get(key_bytes);
    if (!bytes) return state.SkipWithError("the store lost the kernel");
    benchmark::DoNotOptimize(be->load(spec, std::string(bytes->begin(), bytes->end())));
  }
  state.counters["bytes"] = double(payload.size());
  if (auto* remote = dynamic_cast<RedisStore*>(store.get())) clean_remote(*remote);
}

// A fresh llvm engine's first run of bench case `case_name` (its engine made untimed), with
// every kernel compiled, or read from a filled disk or remote store.
void store_first_run(benchmark::State& state, const BenchCase& c, const char* source) {
  const std::string src = source;
  Graph g;
  TensorMap inputs;
  c.make(&g, &inputs);
  TempStoreDir dir;
  EngineOptions o{.backend = BackendKind::Llvm, .num_threads = 1, .disk_cache = src == "disk"};
  o.cache_dir = dir.path.string();
  if (src == "redis") {
    std::string why;
    o.remote_store = bench_redis_url(&why);
    if (o.remote_store.empty()) return state.SkipWithError(why.c_str());
    o.remote.key_namespace = bench_namespace();
    o.remote.timeout_ms = o.remote.connect_timeout_ms = 1000;
  }
  if (src != "compile") Engine(o).run(g, inputs);  // fills the store
  uint64_t compiled = 0, loaded = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<Engine>(o);
    state.ResumeTiming();
    benchmark::DoNotOptimize(engine->run(g, inputs));
    state.PauseTiming();
    const EngineStats s = engine->stats();
    compiled = s.kernels_compiled;
    loaded = s.disk_hits;
    engine.reset();
    state.ResumeTiming();
  }
  state.counters["kernels_compiled"] = double(compiled);
  state.counters["kernels_loaded"] = double(loaded);
  if (src == "redis") clean_remote(*open_remote(o.remote_store));
}

}  // namespace

void register_store_benchmarks() {
  const struct {
    const char* kind;
    const char* bench_case;
    GroupKind group;
  } kernels[] = {{"gemm", "matmul_bias_gelu_128x768x3072", GroupKind::Contraction},
                 {"reduction", "residual_layernorm_128x768", GroupKind::Reduction}};
  for (const char* source : {"compile", "disk", "redis"}) {
    for (const auto& k : kernels)
      benchmark::RegisterBenchmark(("store/kernel/" + std::string(k.kind) + "/" + source).c_str(), store_kernel,
                                   k.bench_case, k.group, source)
          ->Unit(benchmark::kMillisecond);
    for (const BenchCase& c : bench_cases())
      if (c.name == "bert_layer_seq16" || c.name == "bert_layer_seq128")
        benchmark::RegisterBenchmark(("store/" + c.name + "/" + source).c_str(), store_first_run, c, source)
            ->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
  }
}

}  // namespace fusor::bench
