// Engine: fusor's public entry point. Engine::run(graph, inputs) binds the inputs' shapes,
// infers every value's type, and executes the graph. Layer: jit.
//
//   fusor::Engine engine;                                   // static backend, all cores
//   fusor::TensorMap out = engine.run(graph, {{"x", x}});   // outputs by name
//
// Each new (graph, input shapes) builds a plan once (trace, fuse, allocate the schedule);
// later runs with the same shapes reuse it. An Engine may be shared by threads.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "ir/passes/fusion_options.h"
#include "ir/shape_inference.h"
#include "ir/tensor.h"

namespace fusor {

/// Which code runs the graph's groups. Static: the precompiled per-op kernels. Llvm: each
/// fused group the LLVM backend takes (pointwise so far) becomes one JIT-compiled kernel;
/// the other groups run on the static kernels.
enum class BackendKind : uint8_t { Static, Llvm };

/// "static", "llvm".
std::string_view backend_name(BackendKind b);
/// Parses a backend name; InvalidArgument names the choices otherwise.
BackendKind parse_backend(std::string_view name);

/// Everything that configures an Engine, in one place.
struct EngineOptions {
  BackendKind backend = BackendKind::Static;
  /// Threads for kernels (the caller's thread included); <= 0 means one per core.
  int num_threads = 0;
  /// Trace, rewrite and group the graph per shape signature (ir/passes/pipeline.h). Off
  /// runs every op of the traced graph as its own kernel: the unfused baseline.
  bool fuse = true;
  /// The fusion passes' options (used when fuse is on).
  FusionOptions fusion;
  /// When not empty: an existing folder where JIT backends write each kernel's spec, IR
  /// and assembly (does not change the code, so it is not part of the plan key).
  std::string dump_dir;
  /// Hash of every field that changes the plans built.
  uint64_t hash() const;
};

/// Counters of an engine's plan cache.
struct EngineStats {
  uint64_t plan_hits = 0;
  uint64_t plan_misses = 0;
  uint64_t plans = 0;
  uint64_t kernel_hits = 0;     ///< plans that found their kernel already compiled
  uint64_t kernels_compiled = 0;
  double compile_ms = 0;        ///< total JIT compile time
};

/// Named tensors: the inputs and outputs of a run.
using TensorMap = std::map<std::string, Tensor, std::less<>>;

/// Runs graphs.
class Engine {
 public:
  /// Throws DeviceUnavailable (with the reason) when the chosen backend is not in this
  /// build or cannot target this machine.
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs `graph` on `inputs` (one per graph input, by name) and returns every graph output
  /// by name, in memory the engine allocated. Throws InvalidArgument for an unknown or
  /// missing input, DTypeMismatch / ShapeMismatch for inputs that do not fit their
  /// declaration, and the graph's own errors (InvalidGraph, ShapeMismatch, ...).
  TensorMap run(const Graph& graph, const TensorMap& inputs);

  /// Same, writing outputs into `outputs`: a tensor already there under an output's name
  /// must have exactly the inferred dtype and shape and is written in place (caller
  /// memory, e.g. from Tensor::borrow); outputs not there are allocated and added. Names
  /// in `outputs` that are not graph outputs are refused (InvalidArgument).
  void run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs);

  /// The explain report of `graph` at the given dims (every named input dim bound): the
  /// groups, the patterns, the fusions declined and why, kernel counts and bytes. Text, or
  /// one JSON object when json is set.
  std::string explain(const Graph& graph, const DimBindings& dims, bool json = false);

  const EngineOptions& options() const;
  EngineStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fusor
