// The ONNX operators (and operator forms) that the loader writes as a few of fusor's own:
// LogSoftmax, the ELU family, Softplus, PRelu, the L1/L2/log-sum reductions, Sum and Mean,
// InstanceNormalization, GlobalMaxPool, Resize, ConvTranspose, and 1-D Conv and pooling
// (Note [Compositions] in compositions.cpp); elementwise functions (compositions_math.cpp),
// index and layout operators (compositions_layout.cpp), Einsum (compositions_einsum.cpp),
// normalizations and losses (compositions_norm.cpp).
// Each is a function of ONNX nodes, as ONNX's own function bodies are; the loader converts
// those nodes as it converts a model's. One table registers them. Layer: onnx (internal).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/tensor.h"
#include "onnx/onnx_model.h"

namespace fusor::onnx_import {

/// What a composition asks of the loader while it writes a node's body.
class CompositionContext {
 public:
  virtual ~CompositionContext() = default;
  /// A value name the model does not use, for an intermediate of the body (`what` says which).
  virtual std::string fresh(std::string_view what) = 0;
  /// A scalar constant of the floating dtype of ONNX value `like` when the loader knows it,
  /// else f32.
  virtual std::string scalar(double value, const std::string& like) = 0;
  /// A 1-D i64 constant.
  virtual std::string ints(const std::vector<int64_t>& values) = 0;
  /// A scalar i64 constant.
  virtual std::string int_scalar(int64_t value) = 0;
  /// The number of elements of ONNX value `name` when it is a constant, else -1.
  virtual int64_t known_numel(const std::string& name) = 0;
  /// The length of 1-D value `name` when the loader can tell it without running the model:
  /// a constant's, or a shape vector's made from Shape (of an input of known rank), Slice
  /// with constant bounds, Concat and Cast (as exporters compute Resize's sizes), else -1.
  virtual int64_t known_length(const std::string& name) = 0;
  /// The dtype of ONNX value `name` when the loader knows it.
  virtual bool known_dtype(const std::string& name, DType* out) = 0;
  /// A copy of constant `name`'s data (an undefined Tensor when it is not a constant), read
  /// without adding the constant to the graph: an initializer a body only transforms (1-D
  /// weights reshaped) never joins the graph itself.
  virtual Tensor constant_copy(const std::string& name) = 0;
  /// A new constant holding `t`.
  virtual std::string constant(Tensor t, std::string_view what) = 0;
  /// The rank of ONNX value `name` when the loader knows it (a graph input or a constant), else -1.
  virtual int known_rank(const std::string& name) = 0;
  /// The dims of ONNX value `name` when all are known (a constant, a graph input declared
  /// with fixed dims), else empty.
  virtual std::vector<int64_t> known_dims(const std::string& name) = 0;
  /// Whether a live node or a graph output reads `name`.
  virtual bool used(const std::string& name) const = 0;
  /// Error(code) naming the node.
  [[noreturn]] virtual void fail(ErrorCode code, const std::string& message) const = 0;
};

/// One composition: ONNX operator `op_type` as ONNX nodes of operators fusor has.
struct Composition {
  std::string_view op_type;
  /// The lowest opset whose semantics the body implements.
  int64_t since_opset;
  /// Null for an operator fusor does not have (the body always applies); for a form of one
  /// it has (a 1-D Conv), whether node n is in that form.
  bool (*applies)(const OnnxNode& n, CompositionContext& cx);
  /// The nodes that compute n's outputs (the last ones write n's output names).
  std::vector<OnnxNode> (*body)(const OnnxNode& n, CompositionContext& cx);
  /// What the loader writes, for `fusor ops`.
  std::string_view note;
};

/// Every composition (the one table).
std::span<const Composition> compositions();

/// The composition of an operator fusor does not have, or null.
const Composition* composed_operator(std::string_view op_type);

/// The composition that applies to node n of an operator fusor has (a form its kernels
/// lack), or null.
const Composition* composed_form(const OnnxNode& n, CompositionContext& cx);

}  // namespace fusor::onnx_import
