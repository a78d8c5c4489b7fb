// Fuser: the first stage of a plan-cache miss, the same for every executor: verifies the
// graph, traces it for one input signature (constant subgraphs evaluated on the static
// kernels) and runs the fusion pipeline (ir/passes/pipeline.h) with the engine's options,
// the constants the passes derive shared across shapes (Note [Derived constants]).
// Layer: jit.
#pragma once

#include <vector>

#include "codegen/parallel.h"
#include "ir/passes/pipeline.h"
#include "ir/shape_inference.h"
#include "jit/engine_types.h"
#include "jit/shared_constants.h"

namespace fusor {

/// The fusion options an engine runs with: EngineOptions::fusion, or every pass off when
/// EngineOptions::fuse is.
FusionOptions effective_fusion(const EngineOptions& options);

/// The trace-time constant evaluator every runtime stage uses: one node on the static
/// kernels, on `parallel`.
ConstantEvaluator static_constant_evaluator(Parallel& parallel);

/// The types of g's outputs (g.outputs() order) when its inputs are bound to `dims`: g
/// verified and traced as a run traces it (shape computations folded on one thread), so
/// exported graphs whose Reshape targets are computed from Shape get their real shapes.
/// Throws InvalidArgument naming an unbound dim, and g's own errors.
std::vector<TensorType> output_types(const Graph& g, const DimBindings& dims);

/// Traces and fuses graphs for one engine. Thread-safe.
class Fuser {
 public:
  /// Constant subgraphs run on `parallel`; derived constants come from `constants`.
  Fuser(const EngineOptions& options, Parallel& parallel, SharedConstants& constants);

  /// g traced at `input_types` (g.inputs() order) and fused; the storage of the derived
  /// constants it holds is added to *shared when given. Throws g's errors (InvalidGraph,
  /// ShapeMismatch, ...).
  FusedGraph fuse(const Graph& g, const std::vector<TensorType>& input_types, SharedStorage* shared = nullptr) const;

 private:
  FusionOptions fusion_;
  Parallel& parallel_;
  SharedConstants& constants_;
};

}  // namespace fusor
