// GPU benchmarks: every case of gpu_bench_cases() (bench/cases.h) on the Engine with backend
// cuda, named <case>/cuda, inputs and outputs resident on the device (to_device, outputs
// written in place), so a figure is the device's time for one forward. Timing: after a
// warm-up run (which builds the plan and compiles its kernels), each benchmark iteration
// enqueues kRunsPerIteration runs and waits for the stream (Engine::synchronize); the
// iteration's manual time is that wall time over the runs, so launch latency overlaps
// execution as in serving. Median of 5 repetitions. Counters: kernels per forward, GFLOPS
// and GBps (the case's work over the measured time; ceilings of the H200 in the context).
// compile/<case>/cuda: a never-seen shape on a fresh engine (no persistent store): trace,
// fusion and NVRTC for every kernel, with NVRTC's own milliseconds as a counter.
// Without a device every benchmark is skipped with "no CUDA device: <reason>" and the
// binary exits 0.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "bench/bench_main.h"
#include "bench/cases.h"
#include "jit/engine.h"

namespace fusor::bench {
namespace {

constexpr int kRunsPerIteration = 10;

EngineOptions cuda_options() { return EngineOptions{.backend = BackendKind::Cuda, .disk_cache = false}; }

void run_case(benchmark::State& state, const BenchCase& c, const std::string& no_device) {
  if (!no_device.empty()) {
    state.SkipWithError(("no CUDA device: " + no_device).c_str());
    return;
  }
  Graph g;
  TensorMap host_inputs;
  c.make(&g, &host_inputs);
  Engine engine(cuda_options());
  TensorMap inputs;
  for (const auto& [name, t] : host_inputs) inputs[name] = engine.to_device(t);
  TensorMap outputs = engine.run(g, inputs);  // warm-up: builds the plan; device outputs reused below
  engine.synchronize();
  const uint64_t launches_before = engine.stats().device_launches;
  double seconds = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRunsPerIteration; ++i) engine.run(g, inputs, outputs);
    engine.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s / kRunsPerIteration);
    seconds += s;
    runs += kRunsPerIteration;
  }
  if (runs == 0) return;
  state.counters["kernels_per_forward"] = double(engine.stats().device_launches - launches_before) / double(runs);
  if (c.flops > 0) state.counters["GFLOPS"] = c.flops * double(runs) / seconds * 1e-9;
  state.counters["GBps"] = c.bytes * double(runs) / seconds * 1e-9;
}

void compile_case(benchmark::State& state, const BenchCase& c, const std::string& no_device) {
  if (!no_device.empty()) {
    state.SkipWithError(("no CUDA device: " + no_device).c_str());
    return;
  }
  Graph g;
  TensorMap inputs;
  c.make(&g, &inputs);
  DimBindings dims;
  for (ValueId v : g.inputs()) bind_input(g, v, {inputs.at(g.value(v).name).dtype(), inputs.at(g.value(v).name).shape()}, &dims);
  double nvrtc_ms = 0, kernels = 0;
  for (auto _ : state) {
    Engine engine(cuda_options());  // fresh: nothing in memory, no store
    const auto t0 = std::chrono::steady_clock::now();
    engine.prepare(g, dims);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    nvrtc_ms += engine.stats().compile_ms;
    kernels += double(engine.stats().kernels_compiled);
  }
  const double n = double(state.iterations());
  state.counters["nvrtc_ms"] = nvrtc_ms / n;
  state.counters["kernels_compiled"] = kernels / n;
}

// Why no CUDA engine can start on this machine ("" when one can).
std::string cuda_unavailable() {
  try {
    Engine probe(cuda_options());
    benchmark::AddCustomContext("cuda_device", "available");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

void register_all() {
  const std::string no_device = cuda_unavailable();
  if (!no_device.empty()) benchmark::AddCustomContext("cuda_unavailable", no_device);
  for (const BenchCase& c : gpu_bench_cases()) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark((c.name + "/cuda").c_str(), run_case, c, no_device)
                                            ->Unit(benchmark::kMillisecond)
                                            ->UseManualTime();
    if (no_device.empty()) b->Repetitions(5)->ReportAggregatesOnly(true);  // else one skip line each
  }
  // A new shape's compile, for one case of each kind of graph.
  for (const char* name : {"bert_layer_b8_seq128_f32", "bert_layer_b8_seq128_f16", "resnet_bottleneck_b32_56x56_f32",
                           "linear_bias_gelu_4096x768x3072_f16"})
    for (const BenchCase& c : gpu_bench_cases())
      if (c.name == name)
        benchmark::RegisterBenchmark(("compile/" + c.name + "/cuda").c_str(), compile_case, c, no_device)
            ->Unit(benchmark::kMillisecond)
            ->UseManualTime()
            ->Iterations(3);
}

}  // namespace
}  // namespace fusor::bench

int main(int argc, char** argv) {
  // The H200's ceilings (../shared/GPU.md, BENCH.md), so that every figure reads against them.
  return fusor::bench::bench_main(argc, argv,
                                  {{"ceiling_hbm_GBps", "4800"},
                                   {"measured_d2d_copy_GBps", "3900"},
                                   {"measured_bf16_matmul_tflops", "790"}},
                                  fusor::bench::register_all);
}
