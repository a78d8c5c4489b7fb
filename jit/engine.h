// Engine: fusor's public entry point. Engine::run(graph, inputs) binds the inputs to the
// graph (jit/bind_run.h), makes the plan key of their shapes (Note [Plan key]), finds that
// plan or has the executor of the engine's backend build it (jit/executor.h: trace and
// fuse, kernels from the kernel source, Note [Kernel source]), and executes it. Layer: jit.
//
//   fusor::Engine engine;                                   // static backend, all cores
//   fusor::TensorMap out = engine.run(graph, {{"x", x}});   // outputs by name
//
// Each new (graph, input shapes) builds a plan once (trace, fuse, allocate the schedule);
// later runs with the same shapes reuse it. An Engine may be shared by threads. The types
// it takes and returns are in jit/engine_types.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/backends.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "jit/engine_types.h"

namespace fusor {

/// Runs graphs.
class Engine {
 public:
  /// Throws DeviceUnavailable (with the reason) when the chosen backend is not in this
  /// build or cannot target this machine (backend cuda: no libcuda, no device, no NVRTC).
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs `graph` on `inputs` (one per graph input, by name) and returns every graph output
  /// by name, in memory the engine allocated. Throws InvalidArgument for an unknown or
  /// missing input, DTypeMismatch / ShapeMismatch for inputs that do not fit their
  /// declaration, and the graph's own errors (InvalidGraph, ShapeMismatch, ...).
  /// Backend cuda: host inputs are copied to the device and the outputs back to the host;
  /// when any input is a device tensor (to_device) the outputs stay on the device and the
  /// run returns once its work is enqueued on the engine's stream.
  TensorMap run(const Graph& graph, const TensorMap& inputs);

  /// Same, writing outputs into `outputs`: a tensor already there under an output's name
  /// must have exactly the inferred dtype and shape and is written in place (caller
  /// memory, e.g. from Tensor::borrow); outputs not there are allocated and added. Names
  /// in `outputs` that are not graph outputs are refused (InvalidArgument).
  void run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs);

  /// Builds (or finds) the plan of `graph` at the given dims without running it: traces,
  /// fuses and compiles every kernel (into the persistent store too), so a later run of
  /// that shape only executes; with background_compile, tiering or symbolic_dim it waits
  /// for the final plan. With EngineOptions::verify, the plan then runs once on seeded
  /// random inputs (floats N(0, 1), integers 0 or 1), which checks its kernels. What
  /// `fusor warmup` calls for each shape. Thread-safe.
  void prepare(const Graph& graph, const DimBindings& dims);

  /// Backend cuda: a copy of host tensor `t` in device memory, enqueued on the engine's
  /// stream (a device tensor is returned as is). InvalidArgument on another backend.
  Tensor to_device(const Tensor& t);
  /// Backend cuda: a host copy of device tensor `t`, once the work enqueued before it is
  /// done (a host tensor is returned as is). InvalidArgument on another backend.
  Tensor to_host(const Tensor& t);

  /// Backend cuda: waits until every run, copy and launch enqueued on the engine's stream
  /// is done (throws Internal with the driver's reason when a kernel faulted). Elsewhere
  /// a no-op: runs return when their work is done.
  void synchronize();

  /// Waits until the background JIT plans queued so far (background_compile) are built and
  /// swapped in.
  void drain();

  /// The explain report of `graph` at the given dims (every named input dim bound): the
  /// groups, the patterns, the fusions declined and why, kernel counts and bytes. Text, or
  /// one JSON object when json is set. With EngineOptions::verify, the plan is prepared and
  /// checked too, and the report ends with each fused kernel's verdict (JSON: "verify").
  std::string explain(const Graph& graph, const DimBindings& dims, bool json = false);

  const EngineOptions& options() const;
  EngineStats stats() const;
  /// The most recent checks of EngineOptions::verify, oldest first (at most 1024; Note
  /// [Verify mode] in jit/verify.h). Empty with verify off and on backend cuda.
  std::vector<GroupVerdict> verdicts() const;
  /// The steps' times so far, longest first (empty unless EngineOptions::profile).
  std::vector<StepProfile> profile() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fusor
