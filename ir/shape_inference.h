// Shape inference over a whole graph: binds the named dimensions of the inputs and gives
// every value its concrete dtype and shape. Layer: ir (std only).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"

namespace fusor {

/// Values of the named dimensions ("B" -> 1, "T" -> 128).
using DimBindings = std::map<std::string, int64_t, std::less<>>;

/// Checks that `actual` fits the declaration of graph input `input` (dtype, rank, fixed
/// sizes, and symbols consistent with those already bound) and binds its new symbols.
/// Throws DTypeMismatch or ShapeMismatch naming the input, the dim and both values.
void bind_input(const Graph& g, ValueId input, const TensorType& actual, DimBindings* dims);

/// The concrete types of the graph inputs (in g.inputs() order) under `dims`; throws
/// InvalidArgument naming any unbound symbol.
std::vector<TensorType> input_types_from_dims(const Graph& g, const DimBindings& dims);

/// Infers the output types of one node into `types` (indexed by ValueId), given its input
/// types there and `constant(v)`: the data of value v when known (nullptr otherwise).
void infer_node_types(const Graph& g, const Node& n, std::vector<TensorType>& types,
                      const std::function<const Tensor*(ValueId)>& constant);

/// The type of every value (indexed by ValueId) given the input types in g.inputs() order.
/// The graph must have passed verify(). Throws the node's inference errors.
std::vector<TensorType> infer_types(const Graph& g, const std::vector<TensorType>& input_types);

}  // namespace fusor
