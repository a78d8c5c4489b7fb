// Binding a run's tensors to a graph: the checks every executor (the CPU engine, the CUDA
// executor) makes before it looks for a plan. Layer: jit.
#pragma once

#include <vector>

#include "jit/engine.h"

namespace fusor {

/// Checks a run of g: every name in `inputs` is a graph input and defined, every graph
/// input is given, every name in `outputs` is a graph output (InvalidArgument naming the
/// tensor and listing the graph's inputs otherwise), and the inputs bind g's named dims
/// consistently (ShapeMismatch / DTypeMismatch from bind_input). Returns the inputs' types
/// in g.inputs() order; *feeds gets their tensors in the same order.
std::vector<TensorType> bind_run(const Graph& g, const TensorMap& inputs, const TensorMap& outputs,
                                 std::vector<const Tensor*>* feeds);

}  // namespace fusor
