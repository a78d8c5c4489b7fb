// Small matching helpers for the pattern passes: producers, consumers, scalar constants,
// commutative operands. Layer: ir/passes (std only).
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"

namespace fusor {

/// Read-only facts about a graph that pattern matchers ask repeatedly.
class PatternContext {
 public:
  /// g must be traced (every input with fixed dims): the context infers every type.
  explicit PatternContext(const Graph& g);
  /// The concrete type of v.
  const TensorType& type(ValueId v) const { return types_[size_t(v)]; }

  const Graph& graph() const { return g_; }
  /// The node producing v, or nullptr for inputs and constants.
  const Node* producer(ValueId v) const;
  /// The producer of v if it is of kind op, else nullptr.
  const Node* producer_of(ValueId v, OpKind op) const;
  /// Consumers of v (one entry per input slot).
  const std::vector<NodeId>& consumers(ValueId v) const { return users_[size_t(v)]; }
  /// The single consumer of v when v has exactly one and is not a graph output.
  const Node* sole_consumer(ValueId v) const;
  /// True when v is a graph output.
  bool is_output(ValueId v) const { return is_output_[size_t(v)] != 0; }
  /// True when v is a constant holding one element (any rank) within rel. tolerance of x.
  bool is_scalar(ValueId v, double x, double rtol = 1e-4) const;
  /// The value of a one-element constant, or NaN when v is not one.
  double scalar_value(ValueId v) const;
  /// For a binary node, the operand that is not `known` (kNoValue if neither is).
  static ValueId other_operand(const Node& n, ValueId known);

 private:
  const Graph& g_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<char> is_output_;
  std::vector<TensorType> types_;
};

/// The concrete type of every value of a traced graph (inputs with fixed dims).
std::vector<TensorType> concrete_types(const Graph& g);

}  // namespace fusor
