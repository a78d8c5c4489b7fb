// OnnxBuilder: small ONNX models written with the protobuf types themselves, for the loader's
// tests (tests only: the library keeps protobuf out of its headers).
//
//   OnnxBuilder b(17);
//   b.input("x", kFloat, {"batch", 4});
//   b.initializer("w", {4, 2}, std::vector<float>(8, 0.5f));
//   b.node("MatMul", {"x", "w"}, {"y"});
//   b.output("y");
//   fusor::Graph g = fusor::load_onnx_bytes(b.bytes());
#pragma once

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#define ONNX_ML 1
#include <onnx/onnx_pb.h>

namespace fusor::test {

/// TensorProto.DataType values used by the tests.
inline constexpr int32_t kFloat = 1, kUint8 = 2, kInt32 = 6, kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10,
                         kDouble = 11, kBfloat16 = 16;

/// A declared dimension: a size, a dim_param name, or (the empty string) a dynamic dim
/// without a name.
using OnnxDimSpec = std::variant<int64_t, std::string>;

inline void set_dims(onnx::TypeProto_Tensor* t, const std::vector<OnnxDimSpec>& dims) {
  auto* shape = t->mutable_shape();
  for (const OnnxDimSpec& d : dims) {
    auto* dim = shape->add_dim();
    if (const int64_t* v = std::get_if<int64_t>(&d)) dim->set_dim_value(*v);
    else if (!std::get<std::string>(d).empty()) dim->set_dim_param(std::get<std::string>(d));
  }
}

/// A TensorProto of f32 values in float_data (raw_data when `raw`).
inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values, bool raw = false) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(kFloat);
  for (int64_t d : dims) t.add_dims(d);
  if (raw) t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  else
    for (float v : values) t.add_float_data(v);
  return t;
}

/// A TensorProto of i64 values in int64_data.
inline onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(kInt64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

// Attribute setters.
inline onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, onnx::AttributeProto_AttributeType type) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void attr(onnx::NodeProto& n, const std::string& name, int64_t v) { add_attr(n, name, onnx::AttributeProto::INT)->set_i(v); }
inline void attr(onnx::NodeProto& n, const std::string& name, int v) { attr(n, name, int64_t(v)); }
inline void attr(onnx::NodeProto& n, const std::string& name, float v) { add_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v); }
inline void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  add_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
inline void attr(onnx::NodeProto& n, const std::string& name, const char* v) { attr(n, name, std::string(v)); }
inline void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void attr(onnx::NodeProto& n, const std::string& name, const onnx::TensorProto& t) {
  *add_attr(n, name, onnx::AttributeProto::TENSOR)->mutable_t() = t;
}

/// Builds one model.
class OnnxBuilder {
 public:
  /// A model importing the default domain at `opset` (none when opset < 0).
  explicit OnnxBuilder(int64_t opset = 17) {
    m_.set_ir_version(8);
    m_.set_producer_name("fusor-tests");
    if (opset >= 0) m_.add_opset_import()->set_version(opset);
    m_.mutable_graph()->set_name("test_graph");
  }

  onnx::ModelProto& model() { return m_; }
  onnx::GraphProto& graph() { return *m_.mutable_graph(); }

  /// Declares a graph input of `elem_type` and dims.
  onnx::ValueInfoProto& input(const std::string& name, int32_t elem_type, const std::vector<OnnxDimSpec>& dims) {
    auto* v = graph().add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    set_dims(t, dims);
    return *v;
  }
  /// Declares a graph output (of elem_type, without a shape).
  onnx::ValueInfoProto& output(const std::string& name, int32_t elem_type = kFloat) {
    auto* v = graph().add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    return *v;
  }
  /// Adds a node.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "",
                        const std::string& domain = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    if (!domain.empty()) n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  /// Adds an initializer.
  onnx::TensorProto& initializer(const onnx::TensorProto& t) {
    auto* i = graph().add_initializer();
    *i = t;
    return *i;
  }
  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
    return initializer(float_tensor(name, dims, values));
  }
  onnx::TensorProto& initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& values) {
    return initializer(int64_tensor(name, dims, values));
  }

  /// The serialized model.
  std::string bytes() const { return m_.SerializeAsString(); }
  /// Writes the model to `path`.
  void save(const std::string& path) const { std::ofstream(path, std::ios::binary) << bytes(); }

 private:
  onnx::ModelProto m_;
};

}  // namespace fusor::test
