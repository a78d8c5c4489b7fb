#include "ir/graph.h"

#include <cstring>

#include "ir/fingerprint.h"
#include "ir/op_schema.h"

namespace fusor {

namespace {
void check_name(const std::string& name, const char* what) {
  FUSOR_CHECK(!name.empty(), InvalidGraph, what, " with an empty name");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '.' || c == '/' || c == ':' || c == '-';
    FUSOR_CHECK(ok, InvalidGraph, what, " name '", name,
                "' has a character outside [A-Za-z0-9_./:-]");
  }
}
}  // namespace

ValueId Graph::add_value(Value v) {
  fingerprint_.value = 0;
  check_name(v.name, "value");
  FUSOR_CHECK(!by_name_.count(v.name), InvalidGraph, "value name '", v.name, "' is defined twice");
  ValueId id = ValueId(values_.size());
  by_name_.emplace(v.name, id);
  values_.push_back(std::move(v));
  return id;
}

ValueId Graph::add_input(const std::string& name, DType dtype, std::vector<Dim> dims) {
  for (const Dim& d : dims) {
    FUSOR_CHECK(d.is_symbolic() || d.size >= 0, InvalidGraph, "input '", name,
                "' declares a negative dimension ", d.size);
  }
  Value v;
  v.name = name;
  v.kind = ValueKind::Input;
  v.dtype = dtype;
  v.dims = std::move(dims);
  ValueId id = add_value(std::move(v));
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(const std::string& name, Tensor data, std::string recipe) {
  FUSOR_CHECK(data.defined(), InvalidGraph, "constant '", name, "' has no data");
  Value v;
  v.name = name;
  v.kind = ValueKind::Constant;
  v.dtype = data.dtype();
  for (int64_t d : data.shape().dims()) v.dims.emplace_back(d);
  v.constant = int32_t(constants_.size());
  ValueId id = add_value(std::move(v));
  constants_.push_back(Constant{std::move(data), std::move(recipe)});
  return id;
}

NodeId Graph::add_node(OpKind op, std::vector<ValueId> inputs, std::vector<std::string> output_names,
                       Attributes attrs, std::string node_name) {
  fingerprint_.value = 0;
  const OpSchema& schema = op_schema(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    FUSOR_CHECK(inputs[i] == kNoValue || (inputs[i] >= 0 && size_t(inputs[i]) < values_.size()),
                InvalidGraph, op_name(op), " node '", node_name, "': input ", i,
                " refers to value id ", inputs[i], " which does not exist");
  }
  if (output_names.empty()) output_names.resize(size_t(schema.num_outputs));
  FUSOR_CHECK(schema.takes_outputs(output_names.size()), InvalidGraph, op_name(op), " node '",
              node_name, "' has ", output_names.size(), " outputs but ", op_name(op), " has ",
              schema.num_outputs);
  std::string base = node_name.empty() ? std::string(schema.name) : node_name;
  for (auto& out : output_names) {
    if (out.empty()) out = unique_name(node_name.empty() ? std::string(schema.name) : node_name);
  }
  if (node_name.empty()) node_name = output_names.empty() ? unique_name(base) : output_names[0];
  check_name(node_name, "node");
  FUSOR_CHECK(!node_names_.count(node_name), InvalidGraph, "node name '", node_name,
              "' is used twice");
  NodeId id = NodeId(nodes_.size());
  Node n;
  n.op = op;
  n.name = node_name;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (size_t k = 0; k < output_names.size(); ++k) {
    Value v;
    v.name = output_names[k];
    v.kind = ValueKind::NodeOutput;
    v.producer = id;
    v.producer_output = int(k);
    n.outputs.push_back(add_value(std::move(v)));
  }
  node_names_.emplace(n.name, id);
  nodes_.push_back(std::move(n));
  return id;
}

void Graph::add_output(ValueId v) {
  fingerprint_.value = 0;
  FUSOR_CHECK(v >= 0 && size_t(v) < values_.size(), InvalidGraph, "output refers to value id ", v,
              " which does not exist");
  for (ValueId o : outputs_)
    FUSOR_CHECK(o != v, InvalidGraph, "value '", values_[size_t(v)].name, "' is marked as output twice");
  outputs_.push_back(v);
}

const Value& Graph::value(ValueId v) const {
  FUSOR_ASSERT(v >= 0 && size_t(v) < values_.size(), "value id ", v);
  return values_[size_t(v)];
}

const Node& Graph::node(NodeId n) const {
  FUSOR_ASSERT(n >= 0 && size_t(n) < nodes_.size(), "node id ", n);
  return nodes_[size_t(n)];
}

Node& Graph::mutable_node(NodeId n) {
  fingerprint_.value = 0;
  FUSOR_ASSERT(n >= 0 && size_t(n) < nodes_.size(), "node id ", n);
  return nodes_[size_t(n)];
}

const Tensor* Graph::constant_data(ValueId v) const {
  const Value& val = value(v);
  return val.kind == ValueKind::Constant ? &constants_[size_t(val.constant)].data : nullptr;
}

void Graph::share_constant_data(ValueId v, Tensor data) {
  const Value& val = value(v);
  FUSOR_CHECK(val.kind == ValueKind::Constant, InvalidArgument, "value '", val.name, "' is not a constant");
  Tensor& old = constants_[size_t(val.constant)].data;
  FUSOR_CHECK(data.dtype() == old.dtype() && data.shape() == old.shape() && data.nbytes() == old.nbytes() &&
                  (data.raw() == old.raw() || std::memcmp(data.raw(), old.raw(), old.nbytes()) == 0),
              InvalidArgument, "constant '", val.name, "' can only share data equal to its own");
  old = std::move(data);  // the same values: the fingerprint stays valid
}

ValueId Graph::find_value(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNoValue : it->second;
}

uint64_t Graph::fingerprint() const {
  uint64_t f = fingerprint_.value.load(std::memory_order_relaxed);
  if (f == 0) {
    f = fusor::fingerprint(*this) | 1;  // never 0, which means "not computed"
    fingerprint_.value.store(f, std::memory_order_relaxed);
  }
  return f;
}

std::string Graph::unique_name(const std::string& prefix) const {
  if (!by_name_.count(prefix) && !node_names_.count(prefix)) return prefix;
  for (size_t i = values_.size() + nodes_.size();; ++i) {
    std::string s = prefix + "_" + std::to_string(i);
    if (!by_name_.count(s) && !node_names_.count(s)) return s;
  }
}

}  // namespace fusor
