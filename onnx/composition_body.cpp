#include "onnx/composition_body.h"

#include <utility>

#include "ir/error.h"
#include "onnx/onnx_dtype.h"

namespace fusor::onnx_import::composition {

const OnnxAttribute* find_attr(const OnnxNode& n, std::string_view name) {
  for (const OnnxAttribute& a : n.attrs)
    if (a.name == name) return &a;
  return nullptr;
}

double float_attr(const OnnxNode& n, std::string_view name, double fallback) {
  const OnnxAttribute* a = find_attr(n, name);
  return a && a->type == OnnxAttrType::Float ? a->f : fallback;
}

int64_t int_attr(const OnnxNode& n, std::string_view name, int64_t fallback) {
  const OnnxAttribute* a = find_attr(n, name);
  return a && a->type == OnnxAttrType::Int ? a->i : fallback;
}

std::string string_attr(const OnnxNode& n, std::string_view name, const std::string& fallback) {
  const OnnxAttribute* a = find_attr(n, name);
  return a && a->type == OnnxAttrType::String ? a->s : fallback;
}

std::vector<int64_t> ints_attr(const OnnxNode& n, std::string_view name, std::vector<int64_t> fallback) {
  const OnnxAttribute* a = find_attr(n, name);
  return a && a->type == OnnxAttrType::Ints ? a->ints : fallback;
}

OnnxAttribute int_attribute(std::string name, int64_t v) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.type = OnnxAttrType::Int;
  a.i = v;
  return a;
}

OnnxAttribute ints_attribute(std::string name, std::vector<int64_t> v) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.type = OnnxAttrType::Ints;
  a.ints = std::move(v);
  return a;
}

OnnxAttribute string_attribute(std::string name, std::string v) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.type = OnnxAttrType::String;
  a.s = std::move(v);
  return a;
}

// Cast's `to` for fusor dtype t.
OnnxAttribute cast_to(DType t) { return int_attribute("to", onnx_dtype_of(t)); }

// n's attributes with `keepdims` set to `keep`.
std::vector<OnnxAttribute> with_keepdims(const OnnxNode& n, int64_t keep) {
  std::vector<OnnxAttribute> attrs;
  for (const OnnxAttribute& a : n.attrs)
    if (a.name != "keepdims") attrs.push_back(a);
  attrs.push_back(int_attribute("keepdims", keep));
  return attrs;
}

Body::Body(const OnnxNode& n, CompositionContext& cx, size_t outputs) : n_(n), cx_(cx) {
  if (n.inputs.empty() || n.inputs[0].empty()) cx.fail(ErrorCode::InvalidGraph, "required input 0 is missing");
  if (n.outputs.empty() || n.outputs[0].empty()) cx.fail(ErrorCode::InvalidGraph, "must have an output");
  for (size_t k = outputs; k < n.outputs.size(); ++k)
    if (cx.used(n.outputs[k]))
      cx.fail(ErrorCode::Unsupported, "output " + std::to_string(k) + " '" + n.outputs[k] + "' is used, but fusor computes only " +
                                          (outputs == 1 ? std::string("output 0") : "the first " + std::to_string(outputs)));
}

std::string Body::used_output(size_t k) const {
  return k < n_.outputs.size() && !n_.outputs[k].empty() && cx_.used(n_.outputs[k]) ? n_.outputs[k] : "";
}

const std::string& Body::input(size_t k, std::string_view what) const {
  if (n_.inputs.size() <= k || n_.inputs[k].empty())
    cx_.fail(ErrorCode::InvalidGraph, "input " + std::to_string(k) + " (" + std::string(what) + ") is missing");
  return n_.inputs[k];
}

bool Body::x_is_integer(DType* t) {
  DType known;
  if (!cx_.known_dtype(x(), &known) || (known != DType::I32 && known != DType::I64)) return false;
  if (t) *t = known;
  return true;
}

std::string Body::typed_scalar(double v) {
  DType t;
  return x_is_integer(&t) ? cx_.constant(Tensor::from_doubles(t, Shape{}, {v}), "const") : scalar(v);
}

std::string Body::op(std::string_view type, std::vector<std::string> in, std::vector<OnnxAttribute> attrs,
                     const std::string& out) {
  OnnxNode m;
  m.op_type = std::string(type);
  m.name = (n_.name.empty() ? n_.outputs[0] : n_.name) + "/" + m.op_type;
  m.inputs = std::move(in);
  m.outputs = {out.empty() ? cx_.fresh(type) : out};
  m.attrs = std::move(attrs);
  nodes_.push_back(std::move(m));
  return nodes_.back().outputs[0];
}

void Body::finish(const std::string& value) {
  if (!nodes_.empty() && nodes_.back().outputs[0] == value) {
    nodes_.back().outputs[0] = y();
    return;
  }
  op("Max", {value}, {}, y());
}

std::string Body::dims(const std::string& shape, int64_t from, int64_t to) {
  return op("Slice", {shape, cx_.ints({from}), cx_.ints({to})});
}

std::string Body::concat(std::vector<std::string> parts, const std::string& out) {
  return op("Concat", std::move(parts), {int_attribute("axis", 0)}, out);
}

}  // namespace fusor::onnx_import::composition
