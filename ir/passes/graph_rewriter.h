// GraphRewriter: builds a new graph from an old one node by node, remapping values. Every
// pass that changes structure is written as "walk the old graph, emit into the rewriter",
// which keeps the SSA order valid by construction. Layer: ir/passes (std only).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

/// Copies a graph with changes. Inputs and constants are copied up front (unless the
/// caller declares inputs itself); nodes are copied or replaced one by one in order.
class GraphRewriter {
 public:
  /// Starts a copy of `old`. When `copy_inputs` is false the caller declares the inputs
  /// (e.g. with concrete dims) through add_input before copying nodes.
  explicit GraphRewriter(const Graph& old, bool copy_inputs = true);

  /// Declares input `old_input` of the old graph with new dims.
  void add_input(ValueId old_input, std::vector<Dim> dims);
  /// Copies node n (inputs remapped, same name and attributes).
  NodeId copy_node(const Node& n);
  /// Emits a new node whose inputs are values of the NEW graph; returns its first output.
  ValueId emit(OpKind op, std::vector<ValueId> new_inputs, Attributes attrs, const std::string& out_name,
               const std::string& node_name = "");
  /// Adds a constant to the new graph; the name is made unique from `name`.
  ValueId add_constant(const std::string& name, Tensor data, std::string recipe = "");
  /// Makes old value `old_v` refer to new value `new_v` (e.g. a folded node's output).
  void map(ValueId old_v, ValueId new_v);
  /// The new value of an old one (kNoValue stays kNoValue); Internal error if unmapped.
  ValueId mapped(ValueId old_v) const;
  bool is_mapped(ValueId old_v) const;
  /// The graph under construction.
  Graph& graph() { return g_; }
  const Graph& old() const { return old_; }

  /// Marks the old graph's outputs on the new graph and returns it. Outputs are named by
  /// their values, so a pass that replaces the producer of a graph output must give the
  /// replacement's output the same name (an Internal error otherwise).
  Graph finish();

 private:
  const Graph& old_;
  Graph g_;
  std::vector<ValueId> map_;
};

/// Removes nodes whose outputs reach no graph output; returns the pruned copy.
Graph eliminate_dead_nodes(const Graph& g);

/// For each value, the nodes that consume it (a node appears once per input slot).
std::vector<std::vector<NodeId>> value_consumers(const Graph& g);

}  // namespace fusor
