// Runs every case of bench/cases.h on every host backend of codegen/backends.def this build
// and machine have, at 1 and 2 threads, named
// <case>/<backend>/t<threads> with GFLOPS or GBps counters (../shared/BENCH.md) and the
// same as percentages of this machine's ceilings, measured at start (bench/ceilings.h):
// pct_fma (of the fp32 FMA peak at that thread count) and pct_copy (of the copy bandwidth);
// plus the static backend's raw GEMM and elementwise throughput.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench/bench_main.h"
#include "bench/cases.h"
#include "bench/ceilings.h"
#include "bench/store_bench.h"
#include "codegen/backends.h"
#include "codegen/lower.h"
#include "codegen/precision.h"
#include "ir/builder.h"
#include "ir/passes/pipeline.h"
#include "jit/engine.h"
#include "jit/executor.h"

namespace fusor::bench {
namespace {

// This machine's ceilings, measured once in main() before any benchmark runs.
Ceilings g_ceilings;

// Runs one prepared graph on an engine made with `options`; counters from the case's work,
// also as percentages of the ceilings at the engine's thread count.
void run_with(benchmark::State& state, const BenchCase& c, const EngineOptions& options) {
  Graph g;
  TensorMap inputs;
  c.make(&g, &inputs);
  Engine engine(options);
  TensorMap outputs = engine.run(g, inputs);  // warm-up (builds the plan); outputs reused below
  for (auto _ : state) {
    engine.run(g, inputs, outputs);
    benchmark::ClobberMemory();
  }
  if (c.flops > 0) state.counters["GFLOPS"] = benchmark::Counter(c.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GBps"] = benchmark::Counter(c.bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const int threads = options.num_threads > 1 ? 2 : 1;
  if (c.flops > 0 && g_ceilings.fma_peak(threads) > 0)
    state.counters["pct_fma"] = benchmark::Counter(100 * c.flops * 1e-9 / g_ceilings.fma_peak(threads),
                                                   benchmark::Counter::kIsIterationInvariantRate);
  if (g_ceilings.bandwidth(threads) > 0)
    state.counters["pct_copy"] = benchmark::Counter(100 * c.bytes * 1e-9 / g_ceilings.bandwidth(threads),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

// One case on one backend. The precompiled backend is measured unfused: it is the baseline
// of per-op kernels that the JIT backends are compared with.
void run_case(benchmark::State& state, const BenchCase& c, BackendKind backend, int threads) {
  const bool fuse = backend_info(backend).role != BackendRole::Precompiled;
  run_with(state, c, EngineOptions{.backend = backend, .num_threads = threads, .fuse = fuse, .disk_cache = false});
}

// A case with contractions on llvm with precision bf16 (Note [bf16 contractions]), named
// <case>/llvm_bf16/t<threads>; its pct_fma is of the f32 FMA peak (vdpbf16ps's is twice that on Zen 4).
void bf16_case(benchmark::State& state, const BenchCase& c, int threads) {
  EngineOptions o{.backend = BackendKind::Llvm, .num_threads = threads, .disk_cache = false};
  o.precision = Precision::Bf16;
  run_with(state, c, o);
}

// The cases with GEMMs (1x1 convolutions included) or convolutions: those bf16 and tuning change.
bool has_contractions(const BenchCase& c) {
  for (const char* prefix : {"matmul_bias", "bert_layer_seq", "conv1x1", "conv3x3", "resnet_bottleneck"})
    if (c.name.rfind(prefix, 0) == 0) return true;
  return false;
}

// A case with contractions on llvm with tuned tilings (Note [Tuned tilings]), named
// <case>/llvm_tuned/t<threads>: the tiling of each contraction timed on this machine at the
// case's thread count, before the timed runs.
void tuned_case(benchmark::State& state, const BenchCase& c, int threads) {
  EngineOptions o{.backend = BackendKind::Llvm, .num_threads = threads, .disk_cache = false};
  o.tune = true;
  run_with(state, c, o);
}

// Symbolic vs exact kernels (Note [Symbolic kernels]) on a BERT-layer case: the llvm engine
// with its exact kernels, or kept on the symbolic ones (symbolic_dim T, specialize off:
// GEMMs and LayerNorms symbolic, attention on the static kernels).
void symbolic_case(benchmark::State& state, const BenchCase& c, bool symbolic) {
  EngineOptions o{.backend = BackendKind::Llvm, .num_threads = 1, .disk_cache = false};
  if (symbolic) {
    o.symbolic_dim = "T";
    o.specialize = false;
  }
  run_with(state, c, o);
}

// Raw static-kernel throughput: one op per graph.
void single_op(benchmark::State& state, const char* what, int threads) {
  GraphBuilder b(what);
  TensorMap inputs;
  double flops = 0, bytes = 0;
  if (std::string(what) == "sgemm") {
    const int64_t m = 128, k = 768, n = 3072;
    ValueId x = b.input("x", DType::F32, {m, k});
    b.output(b.matmul(x, b.randn("w", {k, n}, 1, 0.02)));
    inputs["x"] = make_random(DType::F32, {m, k}, RandomRecipe::normal(2, 1));
    flops = 2.0 * m * k * n;
    bytes = 4.0 * (m * k + k * n + m * n);
  } else {  // add of two 16M-float vectors: 3 x 64 MiB moved
    const int64_t n = 1 << 24;
    b.output(b.add(b.input("x", DType::F32, {n}), b.input("y", DType::F32, {n})));
    inputs["x"] = make_random(DType::F32, {n}, RandomRecipe::normal(2, 1));
    inputs["y"] = make_random(DType::F32, {n}, RandomRecipe::normal(3, 1));
    bytes = 4.0 * 3 * n;
  }
  Graph g = b.build();
  Engine engine(EngineOptions{.backend = BackendKind::Static, .num_threads = threads, .fuse = false});
  TensorMap outputs = engine.run(g, inputs);
  for (auto _ : state) {
    engine.run(g, inputs, outputs);
    benchmark::ClobberMemory();
  }
  if (flops > 0) state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Time to compile one kernel of each kind with a JIT backend, from the benchmark cases: pointwise
// (the 5-op chain), reduction (residual + LayerNorm), gemm (MatMul + bias + GELU, 128 x 768
// x 3072), conv (Conv3x3 + folded BN + ReLU). Lowering is outside the timed region;
// emission, optimization, codegen and linking inside.
void compile_kind(benchmark::State& state, const char* case_name, GroupKind kind, BackendKind backend) {
  KernelSpec spec = spec_of_case(case_name, kind);
  std::unique_ptr<JitBackend> be = make_jit_backend(backend);
  for (auto _ : state) benchmark::DoNotOptimize(be->compile(spec));
}

// The engine's overhead on a plan-cache hit: a one-op graph on 16 floats, so the time is
// binding, the key, the lookup and one tiny kernel: a static one, or an asmjit one with
// verify off and on (Note [Verify mode]: the check is the first run's, never the hit path's).
void dispatch_cache_hit(benchmark::State& state, BackendKind backend, VerifyMode verify) {
  GraphBuilder b("tiny");
  b.output(b.relu(b.input("x", DType::F32, {16})));
  Graph g = b.build();
  TensorMap inputs{{"x", make_random(DType::F32, {16}, RandomRecipe::normal(1, 1))}};
  EngineOptions o{.backend = backend, .num_threads = 1, .disk_cache = false};
  o.verify = verify;
  std::unique_ptr<Engine> e;
  try {
    e = std::make_unique<Engine>(o);
  } catch (const Error& err) {
    state.SkipWithError(err.what());
    return;
  }
  Engine& engine = *e;
  TensorMap outputs = engine.run(g, inputs);
  for (auto _ : state) {
    engine.run(g, inputs, outputs);
    benchmark::ClobberMemory();
  }
}

// First-request latency of a never-seen BERT-layer shape: a fresh engine (no persistent
// store) and one run, by how the engine serves it: the static kernels, the llvm backend
// (compiling every kernel before the run), llvm with background_compile (the run on the
// static kernels while LLVM compiles behind it), or llvm with tiering (the run on asmjit
// kernels compiled in microseconds, LLVM behind it; llvm_tiering_new_t on an engine that
// has served seq 16, untimed, so its weights are packed: the peers' `new T`), or llvm with
// symbolic_dim T on an engine that has served another length (seq 16, untimed): the run on
// the symbolic kernels compiled then, exact kernels behind it. (Not seq 64: sizes are symbolized against a
// reference lowering at 64, so serving 64 itself builds the one at 65 instead, and 128 would
// pay for the reference at 64 that every later size shares.) A mode ending in _t2 runs on
// two threads (the peers' two-thread `new T`). llvm_session is both, tiering and symbolic_dim
// T, as fusor.InferenceSession's CPU provider sets them for a model with a sequence dim (Note
// [Symbolic kernels compiled behind the first size]), after serving seq 16.
void first_request(benchmark::State& state, const char* mode_name) {
  Graph g;
  TensorMap inputs;
  for (const BenchCase& c : bench_cases())
    if (c.name == "bert_layer_seq128") c.make(&g, &inputs);
  std::string m = mode_name;
  int threads = 1;
  if (m.size() > 3 && m.compare(m.size() - 3, 3, "_t2") == 0) {
    m.resize(m.size() - 3);
    threads = 2;
  }
  for (auto _ : state) {
    EngineOptions o{.backend = m == "static" ? BackendKind::Static : BackendKind::Llvm, .num_threads = threads,
                    .disk_cache = false};
    o.background_compile = m == "llvm_background";
    o.tiering = m == "llvm_tiering" || m == "llvm_tiering_new_t" || m == "llvm_session";
    if (m == "llvm_symbolic" || m == "llvm_session") o.symbolic_dim = "T";
    // The engine's creation is not the request (the peers' session creation is shown apart).
    state.PauseTiming();
    auto engine = std::make_unique<Engine>(o);
    if (m == "llvm_symbolic" || m == "llvm_tiering_new_t" || m == "llvm_session") {
      // The same model has served another length (the peers' `new T`: one session): its
      // packed weights (and symbolic kernels) exist, 128 is new.
      Graph g16;
      TensorMap in16;
      for (const BenchCase& c : bench_cases())
        if (c.name == "bert_layer_seq16") c.make(&g16, &in16);
      engine->run(g, in16);
      engine->drain();
    }
    state.ResumeTiming();
    benchmark::DoNotOptimize(engine->run(g, inputs));
    state.PauseTiming();  // the engine's teardown (joining the background compile) is not the request
    engine.reset();
    state.ResumeTiming();
  }
}

void register_all() {
  benchmark::RegisterBenchmark("dispatch/cache_hit", dispatch_cache_hit, BackendKind::Static, VerifyMode::Off)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("dispatch/cache_hit/asmjit", dispatch_cache_hit, BackendKind::Asmjit, VerifyMode::Off)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("dispatch/cache_hit/asmjit_verify", dispatch_cache_hit, BackendKind::Asmjit,
                               VerifyMode::Warn)
      ->Unit(benchmark::kMicrosecond);
  for (int t : {1, 2}) {
    benchmark::RegisterBenchmark(("static_sgemm_128x768x3072/static/t" + std::to_string(t)).c_str(), single_op,
                                 "sgemm", t)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("static_add_16M/static/t" + std::to_string(t)).c_str(), single_op, "add", t)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  // The host JIT backends join when this build and machine have them (a device backend has
  // its own binary, fusor_gpu_bench).
  std::vector<BackendKind> backends;
  const struct {
    const char* kind;
    const char* bench_case;
    GroupKind group;
  } compiles[] = {{"pointwise", "eltwise_chain5_16M", GroupKind::Pointwise},
                  {"reduction", "residual_layernorm_128x768", GroupKind::Reduction},
                  {"gemm", "matmul_bias_gelu_128x768x3072", GroupKind::Contraction},
                  {"conv", "conv3x3_bn_relu_64x56x56", GroupKind::Contraction}};
  bool llvm = false;
  for (const BackendInfo& b : kBackends) {
    if (b.role == BackendRole::DeviceJit) continue;
    const std::string name(b.name);
    try {
      Engine probe(EngineOptions{.backend = b.kind, .num_threads = 1, .disk_cache = false});
      backends.push_back(b.kind);
    } catch (const Error& e) {
      benchmark::AddCustomContext(name, e.what());
      continue;
    }
    llvm |= b.kind == BackendKind::Llvm;
    if (b.role != BackendRole::HostJit) continue;
    for (const auto& c : compiles)
      benchmark::RegisterBenchmark(("compile/" + std::string(c.kind) + "/" + name).c_str(), compile_kind, c.bench_case,
                                   c.group, b.kind)
          ->Unit(benchmark::kMillisecond);
  }
  // Where a new replica's kernels come from: compiled, the disk store, the remote store.
  if (llvm) register_store_benchmarks();
  // The dynamic-shape cases serve new shapes on llvm (background, tiering, symbolic).
  if (llvm)
    for (const char* mode : {"static", "llvm", "llvm_background", "llvm_tiering", "llvm_tiering_new_t", "llvm_symbolic",
                             "llvm_session", "llvm_tiering_new_t_t2", "llvm_symbolic_t2", "llvm_session_t2"})
      benchmark::RegisterBenchmark((std::string("first_request/bert_layer_seq128/") + mode).c_str(), first_request, mode)
          ->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
  if (llvm)
    for (const BenchCase& c : bench_cases())
      if (c.name.rfind("bert_layer_seq", 0) == 0)
        for (bool symbolic : {false, true})
          benchmark::RegisterBenchmark(("symbolic/" + c.name + (symbolic ? "/symbolic" : "/exact") + "/t1").c_str(),
                                       symbolic_case, c, symbolic)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
  // bf16 variants of the cases with GEMMs (1x1 convolutions included) or Winograd's 3x3
  // convolutions, where llvm computes bf16 on this CPU.
  if (llvm && !host_bf16().avx512_bf16)
    benchmark::AddCustomContext("llvm_bf16", "not run: this CPU has no AVX512-BF16 (" + host_bf16().str() + ")");
  if (llvm && host_bf16().avx512_bf16)
    for (const BenchCase& c : bench_cases())
      if (has_contractions(c))
        for (int t : {1, 2})
          benchmark::RegisterBenchmark((c.name + "/llvm_bf16/t" + std::to_string(t)).c_str(), bf16_case, c, t)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
  // Tuned variants of the cases with contractions.
  if (llvm)
    for (const BenchCase& c : bench_cases())
      if (has_contractions(c))
        for (int t : {1, 2})
          benchmark::RegisterBenchmark((c.name + "/llvm_tuned/t" + std::to_string(t)).c_str(), tuned_case, c, t)
              ->Unit(benchmark::kMillisecond)->UseRealTime();
  for (const BenchCase& c : bench_cases())
    for (BackendKind backend : backends)
      for (int t : {1, 2})
        benchmark::RegisterBenchmark((c.name + "/" + std::string(backend_name(backend)) + "/t" + std::to_string(t)).c_str(),
                                     run_case, c, backend, t)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace
}  // namespace fusor::bench

int main(int argc, char** argv) {
  // This machine's ceilings, so that every figure reads against them (not when only
  // listing the cases).
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing |= std::string(argv[i]).rfind("--benchmark_list_tests", 0) == 0;
  std::vector<std::pair<std::string, std::string>> context;
  if (!listing) {
    fusor::bench::g_ceilings = fusor::bench::measure_ceilings();
    context = fusor::bench::g_ceilings.context();
  }
  return fusor::bench::bench_main(argc, argv, context, fusor::bench::register_all);
}
