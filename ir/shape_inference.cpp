#include "ir/shape_inference.h"

namespace fusor {

void bind_input(const Graph& g, ValueId input, const TensorType& actual, DimBindings* dims) {
  const Value& v = g.value(input);
  FUSOR_ASSERT(v.kind == ValueKind::Input, "bind_input on non-input '", v.name, "'");
  auto decl = [&] {
    std::string s = std::string(dtype_name(v.dtype)) + "[";
    for (size_t i = 0; i < v.dims.size(); ++i) s += (i ? ", " : "") + v.dims[i].str();
    return s + "]";
  };
  FUSOR_CHECK(actual.dtype == v.dtype, DTypeMismatch, "input '", v.name, "' is declared ", decl(),
              " but was given ", actual.str());
  FUSOR_CHECK(actual.shape.rank() == int(v.dims.size()), ShapeMismatch, "input '", v.name,
              "' is declared ", decl(), " (rank ", v.dims.size(), ") but was given ", actual.str(),
              " (rank ", actual.shape.rank(), ")");
  for (size_t i = 0; i < v.dims.size(); ++i) {
    const Dim& d = v.dims[i];
    int64_t got = actual.shape.dims()[i];
    if (!d.is_symbolic()) {
      FUSOR_CHECK(got == d.size, ShapeMismatch, "input '", v.name, "' dimension ", i, " must be ",
                  d.size, " (declared ", decl(), ") but was given ", actual.str());
      continue;
    }
    auto it = dims->find(d.symbol);
    if (it == dims->end()) {
      dims->emplace(d.symbol, got);
    } else {
      FUSOR_CHECK(it->second == got, ShapeMismatch, "input '", v.name, "' dimension ", i, " ('",
                  d.symbol, "') is ", got, " in ", actual.str(), " but '", d.symbol,
                  "' is already bound to ", it->second, " by an earlier input");
    }
  }
}

std::vector<TensorType> input_types_from_dims(const Graph& g, const DimBindings& dims) {
  std::vector<TensorType> out;
  for (ValueId in : g.inputs()) {
    const Value& v = g.value(in);
    std::vector<int64_t> shape;
    for (const Dim& d : v.dims) {
      if (!d.is_symbolic()) {
        shape.push_back(d.size);
        continue;
      }
      auto it = dims.find(d.symbol);
      FUSOR_CHECK(it != dims.end(), InvalidArgument, "dimension '", d.symbol, "' of input '", v.name,
                  "' is not bound (give it a value, e.g. --dim ", d.symbol, "=128)");
      FUSOR_CHECK(it->second >= 0, InvalidArgument, "dimension '", d.symbol, "' is bound to ", it->second,
                  ", which is negative");
      shape.push_back(it->second);
    }
    checked_numel(shape, "input '" + v.name + "'");
    out.push_back(TensorType{v.dtype, Shape(std::move(shape))});
  }
  return out;
}

void infer_node_types(const Graph& g, const Node& n, std::vector<TensorType>& types,
                      const std::function<const Tensor*(ValueId)>& constant) {
  std::vector<const TensorType*> ins;
  std::vector<const Tensor*> consts;
  for (ValueId v : n.inputs) {
    ins.push_back(v == kNoValue ? nullptr : &types[size_t(v)]);
    consts.push_back(v == kNoValue ? nullptr : constant(v));
  }
  std::vector<TensorType> outs(n.outputs.size());
  InferContext ctx(g, n, std::move(ins), std::move(consts), &outs);
  op_schema(n.op).infer(ctx);
  for (size_t k = 0; k < outs.size(); ++k) types[size_t(n.outputs[k])] = std::move(outs[k]);
}

std::vector<TensorType> infer_types(const Graph& g, const std::vector<TensorType>& input_types) {
  FUSOR_ASSERT(input_types.size() == g.inputs().size(), "infer_types: ", input_types.size(),
               " input types for ", g.inputs().size(), " inputs");
  std::vector<TensorType> types(g.values().size());
  for (size_t i = 0; i < g.inputs().size(); ++i) types[size_t(g.inputs()[i])] = input_types[i];
  for (size_t v = 0; v < g.values().size(); ++v) {
    if (const Tensor* c = g.constant_data(ValueId(v))) types[v] = TensorType{c->dtype(), c->shape()};
  }
  auto constant = [&g](ValueId v) { return g.constant_data(v); };
  for (const Node& n : g.nodes()) infer_node_types(g, n, types, constant);
  return types;
}

}  // namespace fusor
