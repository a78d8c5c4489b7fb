// trace: specializes a graph to one set of concrete input types. Every value gets its
// concrete shape, and everything that depends only on shapes and constants (Shape, Range,
// shape arithmetic, Reshape targets, Concat/Slice/Gather of shape vectors, any constant
// subgraph) is evaluated once and becomes a constant. What is left is a static graph for
// that shape signature. Layer: ir/passes (std only).
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"

namespace fusor {

/// Evaluates one node on constant inputs: given the node, its input tensors (nullptr for
/// an omitted optional input) and its inferred output types, returns its outputs. The
/// runtime supplies one (the static backend's kernels); ir/ itself executes nothing.
using ConstantEvaluator = std::function<std::vector<Tensor>(const Node&, const std::vector<const Tensor*>&,
                                                            const std::vector<TensorType>&)>;

/// A traced graph and the concrete type of each of its values.
struct TracedGraph {
  Graph graph;                     ///< inputs declared with concrete dims; folded nodes gone
  std::vector<TensorType> types;   ///< by ValueId of `graph`
  int folded_nodes = 0;            ///< nodes replaced by constants
};

/// Traces `g` (which must verify) for the input types, in g.inputs() order. Folded
/// constants are named after the value they replace. Nodes whose outputs are graph
/// outputs are folded too (the output then is a constant of the traced graph).
TracedGraph trace(const Graph& g, const std::vector<TensorType>& input_types, const ConstantEvaluator& evaluate);

}  // namespace fusor
