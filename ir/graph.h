// Graph, Node and Value: fusor's SSA dataflow IR. Values are produced once (by a node, or
// as a graph input or constant) and consumed by any number of nodes. Nodes are kept in an
// order where every input is defined before use (the builder and the parser guarantee it;
// the verifier checks it). Layer: ir (std only).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/dtype.h"
#include "ir/op_kind.h"
#include "ir/tensor.h"

namespace fusor {

/// Index of a value in its graph; kNoValue marks an omitted optional input.
using ValueId = int32_t;
/// Index of a node in its graph.
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;

/// A declared dimension of a graph input: a fixed size or a named symbol bound at run time.
struct Dim {
  Dim(int64_t size) : size(size) {}  // NOLINT: implicit, so {"B", "T", 768} reads naturally
  Dim(int size) : size(size) {}      // NOLINT
  Dim(const char* sym) : symbol(sym) {}          // NOLINT
  Dim(std::string sym) : symbol(std::move(sym)) {}  // NOLINT
  bool is_symbolic() const { return !symbol.empty(); }
  std::string str() const { return is_symbolic() ? symbol : std::to_string(size); }
  bool operator==(const Dim&) const = default;

  int64_t size = -1;   ///< the size when fixed
  std::string symbol;  ///< the name when symbolic ("T")
};

/// How a value comes to exist.
enum class ValueKind : uint8_t { Input, Constant, NodeOutput };

/// One SSA value.
struct Value {
  std::string name;
  ValueKind kind = ValueKind::NodeOutput;
  DType dtype = DType::F32;   ///< declared for inputs and constants; inferred for node outputs
  std::vector<Dim> dims;      ///< declared shape of an input (or a constant's shape)
  NodeId producer = -1;       ///< for NodeOutput
  int producer_output = 0;    ///< which output of the producer
  int32_t constant = -1;      ///< index into Graph::constants() for Constant values
};

/// A constant's data and, when it was generated, the recipe the text format prints instead
/// of the data (e.g. "randn(seed=3, std=0.02)").
struct Constant {
  Tensor data;
  std::string recipe;
};

/// One operation.
struct Node {
  OpKind op;
  std::string name;
  std::vector<ValueId> inputs;   ///< kNoValue for an omitted optional input
  std::vector<ValueId> outputs;
  Attributes attrs;
};

/// A dataflow graph with named inputs, constants and outputs.
class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// Declares a graph input. Throws InvalidGraph when the name is taken or empty.
  ValueId add_input(const std::string& name, DType dtype, std::vector<Dim> dims);
  /// Adds a constant (weights, shape vectors). The recipe, if any, is what the text format
  /// prints; it must regenerate exactly this data (see text_format.h).
  ValueId add_constant(const std::string& name, Tensor data, std::string recipe = "");
  /// Appends a node whose outputs get the given names (fresh unique names when empty).
  /// Inputs must already exist (or be kNoValue for an omitted optional input).
  NodeId add_node(OpKind op, std::vector<ValueId> inputs, std::vector<std::string> output_names,
                  Attributes attrs = {}, std::string node_name = "");
  /// Marks a value as a graph output (outputs are named by their value's name).
  void add_output(ValueId v);

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId v) const;
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId n) const;
  Node& mutable_node(NodeId n);
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<Constant>& constants() const { return constants_; }
  /// The constant data of v, or nullptr when v is not a constant.
  const Tensor* constant_data(ValueId v) const;
  /// Replaces constant v's data with `data` of the same dtype and shape holding the same
  /// values (e.g. an interned copy shared with other graphs): InvalidArgument otherwise.
  void share_constant_data(ValueId v, Tensor data);

  /// Looks a value up by name; kNoValue when absent.
  ValueId find_value(std::string_view name) const;
  /// A name not used by any value or node, starting with prefix.
  std::string unique_name(const std::string& prefix) const;

  /// The structural fingerprint (ir/fingerprint.h), computed once and remembered until the
  /// graph changes. mutable_node() forgets it: do not ask for it while holding that
  /// reference and mutating.
  uint64_t fingerprint() const;

 private:
  ValueId add_value(Value v);

  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<Constant> constants_;
  std::unordered_map<std::string, ValueId> by_name_;
  std::unordered_map<std::string, NodeId> node_names_;

  // The remembered fingerprint (0: not computed). Copies start without it.
  struct Memo {
    std::atomic<uint64_t> value{0};
    Memo() = default;
    Memo(const Memo&) {}
    Memo& operator=(const Memo&) {
      value = 0;
      return *this;
    }
  };
  mutable Memo fingerprint_;
};

}  // namespace fusor
