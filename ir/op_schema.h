// OpSchema: what each operator accepts (arity, attributes with defaults) and how its output
// types follow from its input types (shape inference). One schema per line of ir/ops.def,
// defined in ir/ops/<family>.cpp. Layer: ir (std only).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/shape.h"

namespace fusor {

/// The dtype and concrete shape of a value.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  /// "f32[1, 128, 768]".
  std::string str() const;
  bool operator==(const TensorType&) const = default;
};

/// One attribute an operator accepts. A missing non-required attribute takes `fallback`.
struct AttrSpec {
  std::string_view name;
  AttrType type;
  bool required = false;
  Attribute fallback = {};
};

/// Marks OpSchema::max_inputs of a variadic operator.
inline constexpr int kVariadic = 1 << 20;

class InferContext;

/// What an operator accepts and how to infer its outputs.
struct OpSchema {
  std::string_view name;                  ///< ONNX op_type
  int min_inputs = 1;
  int max_inputs = 1;                     ///< kVariadic for no limit
  int num_outputs = 1;                    ///< the fewest outputs (all of them unless max_outputs says more)
  std::vector<AttrSpec> attrs;
  /// Structural checks of attribute values that need no shapes (ranges, enum strings);
  /// throws via node_fail. May be null.
  void (*check)(const Node&) = nullptr;
  /// Shape and dtype inference; throws via InferContext::fail.
  void (*infer)(InferContext&) = nullptr;
  /// The most outputs (Split: kVariadic); 0 means exactly num_outputs.
  int max_outputs = 0;
  /// Whether a node may have n outputs.
  bool takes_outputs(size_t n) const {
    return n >= size_t(num_outputs) && n <= size_t(max_outputs ? max_outputs : num_outputs);
  }
};

/// The schema of an operator kind.
const OpSchema& op_schema(OpKind op);

// One schema object per op, defined in ir/ops/<family>.cpp (declared here so that their
// definitions have external linkage and the table in op_schema.cpp can refer to them).
#define FUSOR_OP(kind, family) extern const OpSchema k##kind##Schema;
#include "ir/ops.def"
#undef FUSOR_OP

/// "node 'conv1' (Conv)": how every message about a node names it.
std::string node_label(const Node& n);

/// Throws Error(code, "<node label>: <parts>").
template <class... Parts>
[[noreturn]] void node_fail(const Node& n, ErrorCode code, const Parts&... parts) {
  fail(code, node_label(n), ": ", parts...);
}

/// The attribute `name` of n, or its schema fallback when absent. The name must be in the
/// schema (an Internal error otherwise: a typo in fusor, not in the user's graph).
const Attribute& node_attr(const Node& n, std::string_view name);
inline int64_t attr_int(const Node& n, std::string_view name) { return node_attr(n, name).i(); }
inline double attr_float(const Node& n, std::string_view name) { return node_attr(n, name).f(); }
inline const std::vector<int64_t>& attr_ints(const Node& n, std::string_view name) {
  return node_attr(n, name).ints();
}
inline const std::string& attr_string(const Node& n, std::string_view name) {
  return node_attr(n, name).s();
}
/// True when n sets `name` explicitly.
inline bool has_attr(const Node& n, std::string_view name) { return n.attrs.count(name) != 0; }

/// What shape inference sees of one node: its inputs' types, constant inputs' data, and
/// where its output types go.
class InferContext {
 public:
  InferContext(const Graph& graph, const Node& node, std::vector<const TensorType*> inputs,
               std::vector<const Tensor*> constants, std::vector<TensorType>* outputs)
      : graph_(graph), node_(node), inputs_(std::move(inputs)), constants_(std::move(constants)),
        outputs_(outputs) {}

  const Node& node() const { return node_; }
  /// "input 1 'w' f32[64, 3, 3, 3]": how messages name an input.
  std::string describe_input(int i) const;
  /// Number of input slots (including omitted optional ones).
  int num_inputs() const { return int(inputs_.size()); }
  /// True when input slot i is present.
  bool has_input(int i) const { return i < num_inputs() && inputs_[size_t(i)] != nullptr; }
  /// The type of input i (which must be present).
  const TensorType& input(int i) const;
  /// The data of input i when it is a constant, else nullptr.
  const Tensor* constant(int i) const { return i < num_inputs() ? constants_[size_t(i)] : nullptr; }
  /// The data of input i, which must be a constant; fails naming `what` otherwise.
  const Tensor& require_constant(int i, std::string_view what) const;
  /// Number of outputs the node has.
  int num_outputs() const { return int(outputs_->size()); }
  /// Sets output i.
  void set_output(int i, DType dtype, Shape shape);

  /// Throws Error(code) naming this node.
  template <class... Parts>
  [[noreturn]] void fail(ErrorCode code, const Parts&... parts) const {
    node_fail(node_, code, parts...);
  }

  /// Input i must have dtype t (InvalidGraph names the input otherwise).
  void expect_dtype(int i, DType t) const;
  /// Input i must be floating point.
  void expect_floating(int i) const;
  /// Inputs i and j must share a dtype.
  void expect_same_dtype(int i, int j) const;
  /// Input i must have rank r.
  void expect_rank(int i, int r) const;

 private:
  const Graph& graph_;
  const Node& node_;
  std::vector<const TensorType*> inputs_;
  std::vector<const Tensor*> constants_;
  std::vector<TensorType>* outputs_;
};

}  // namespace fusor
