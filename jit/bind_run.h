// Binding a run's tensors to a graph: the checks the Engine makes of every run before it
// looks for the plan, and the one every executor makes of a supplied output. Layer: jit.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "jit/engine_types.h"

namespace fusor {

/// Checks a run of g: every name in `inputs` is a graph input and defined, every graph
/// input is given, every name in `outputs` is a graph output (InvalidArgument naming the
/// tensor and listing the graph's inputs otherwise), and the inputs bind g's named dims
/// consistently (ShapeMismatch / DTypeMismatch from bind_input). Returns the inputs' types
/// in g.inputs() order; *feeds gets their tensors in the same order.
std::vector<TensorType> bind_run(const Graph& g, const TensorMap& inputs, const TensorMap& outputs,
                                 std::vector<const Tensor*>* feeds);

/// Checks an output the caller supplied under `name`: defined, with exactly the type `want`
/// (ShapeMismatch naming both otherwise).
void check_supplied_output(const std::string& name, const Tensor& t, const TensorType& want);

}  // namespace fusor
