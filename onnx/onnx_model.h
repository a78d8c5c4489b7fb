// OnnxModel: an ONNX model as read from its protobuf, in plain C++ types, before it becomes
// a fusor Graph. The protobuf parsing (onnx/read_model.cpp) fills it; the conversion to a
// Graph (onnx/build_graph.cpp) reads it and never sees protobuf. Tensor data is decoded on
// demand through TensorSource, so a model refused for its operators never reads its weights.
// Layer: onnx (internal; std and ir only).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace fusor::onnx_import {

/// A tensor held by the model (an initializer or a TENSOR attribute), not yet decoded.
struct TensorRef {
  std::string name;              ///< its name field (may be empty for attributes)
  int32_t data_type = 0;         ///< ONNX TensorProto.DataType
  std::vector<int64_t> dims;
  int32_t index = -1;            ///< which tensor, for TensorSource::decode
  bool external = false;         ///< data_location EXTERNAL
};

/// Decodes the tensors of one model (it owns the parsed protobuf).
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  /// The data of `ref` as a fusor tensor; `what` names it in messages ("initializer 'w'",
  /// "node 'c' (Constant): attribute 'value'"). Throws Unsupported for dtypes fusor lacks,
  /// ParseError / DTypeMismatch for data that does not fit the shape and dtype, Io for
  /// external data that cannot be read.
  virtual Tensor decode(const TensorRef& ref, const std::string& what) const = 0;
};

/// ONNX AttributeProto.AttributeType values.
enum class OnnxAttrType : int32_t {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, Floats = 6, Ints = 7,
  Strings = 8, Tensors = 9, Graphs = 10, SparseTensor = 11, SparseTensors = 12, TypeProto = 13, TypeProtos = 14,
};

/// "FLOAT", "INTS", ... ("type 42" when unknown).
std::string onnx_attr_type_name(OnnxAttrType t);

/// One node attribute.
struct OnnxAttribute {
  std::string name;
  OnnxAttrType type = OnnxAttrType::Undefined;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;  ///< type Strings (the recurrent operators' activations)
  TensorRef tensor;              ///< type Tensor
  std::string ref_attr_name;     ///< set inside function bodies: not supported
};

/// One node.
struct OnnxNode {
  std::string op_type;
  std::string domain;            ///< "" or "ai.onnx" for the default domain
  std::string name;
  std::vector<std::string> inputs;   ///< "" for an omitted optional input
  std::vector<std::string> outputs;  ///< "" for an omitted optional output
  std::vector<OnnxAttribute> attrs;
};

/// One dimension of a declared tensor shape.
struct OnnxDim {
  int64_t value = -1;            ///< dim_value when set
  std::string param;             ///< dim_param when set
  bool has_value = false;
};

/// A graph input or output declaration (ValueInfoProto).
struct OnnxValueInfo {
  std::string name;
  bool is_tensor = false;        ///< the type is a tensor type (not a sequence, map, ...)
  bool has_type = false;
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<OnnxDim> dims;
};

/// The whole model.
struct OnnxModel {
  int64_t ir_version = 0;
  std::string producer;          ///< producer_name and producer_version
  /// opset_import: domain ("" for the default domain) -> version.
  std::map<std::string, int64_t> opsets;
  std::string graph_name;
  std::vector<OnnxNode> nodes;
  std::vector<OnnxValueInfo> inputs;
  std::vector<OnnxValueInfo> outputs;
  std::vector<TensorRef> initializers;
  bool has_sparse_initializers = false;
  /// The model-local functions (FunctionProto) the model defines: (domain, name).
  std::vector<std::pair<std::string, std::string>> functions;
};

}  // namespace fusor::onnx_import
