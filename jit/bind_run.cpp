#include "jit/bind_run.h"

#include <string>

#include "ir/error.h"
#include "ir/shape_inference.h"

namespace fusor {

namespace {

std::string list_inputs(const Graph& g) {
  std::string s;
  for (ValueId v : g.inputs()) s += (s.empty() ? "" : ", ") + g.value(v).name;
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<TensorType> bind_run(const Graph& g, const TensorMap& inputs, const TensorMap& outputs,
                                 std::vector<const Tensor*>* feeds) {
  for (const auto& [name, t] : outputs) {
    bool found = false;
    for (ValueId o : g.outputs()) found |= g.value(o).name == name;
    FUSOR_CHECK(found, InvalidArgument, "'", name, "' was supplied as an output but graph '", g.name(),
                "' has no output of that name");
  }
  for (const auto& [name, t] : inputs) {
    ValueId v = g.find_value(name);
    FUSOR_CHECK(v != kNoValue && g.value(v).kind == ValueKind::Input, InvalidArgument, "graph '", g.name(),
                "' has no input named '", name, "' (its inputs: ", list_inputs(g), ")");
    FUSOR_CHECK(t.defined(), InvalidArgument, "input '", name, "' is an undefined tensor");
  }
  DimBindings dims;
  std::vector<TensorType> types;
  for (ValueId v : g.inputs()) {
    const std::string& name = g.value(v).name;
    auto it = inputs.find(name);
    FUSOR_CHECK(it != inputs.end(), InvalidArgument, "input '", name, "' of graph '", g.name(),
                "' was not given (its inputs: ", list_inputs(g), ")");
    TensorType t{it->second.dtype(), it->second.shape()};
    bind_input(g, v, t, &dims);
    types.push_back(std::move(t));
    feeds->push_back(&it->second);
  }
  return types;
}

void check_supplied_output(const std::string& name, const Tensor& t, const TensorType& want) {
  FUSOR_CHECK(t.defined() && t.dtype() == want.dtype && t.shape() == want.shape, ShapeMismatch, "output '", name,
              "' was supplied as ", t.defined() ? t.type_str() : "an undefined tensor", " but is ", want.str());
}

}  // namespace fusor
