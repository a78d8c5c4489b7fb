#include "ir/passes/trace.h"

#include "ir/ops/params.h"
#include "ir/passes/graph_rewriter.h"
#include "ir/shape_inference.h"

namespace fusor {

TracedGraph trace(const Graph& g, const std::vector<TensorType>& input_types, const ConstantEvaluator& evaluate) {
  FUSOR_ASSERT(input_types.size() == g.inputs().size(), "trace: ", input_types.size(), " input types for ",
               g.inputs().size(), " inputs");
  // Types are inferred node by node as folding proceeds, so an op whose output shape
  // depends on a value (Reshape's target) sees it once its producers have folded.
  std::vector<TensorType> types(g.values().size());
  for (size_t i = 0; i < g.inputs().size(); ++i) types[size_t(g.inputs()[i])] = input_types[i];
  GraphRewriter rw(g, /*copy_inputs=*/false);
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    std::vector<Dim> dims;
    for (int64_t d : input_types[i].shape.dims()) dims.emplace_back(d);
    rw.add_input(g.inputs()[i], std::move(dims));
  }
  // Constant data of each old value known so far: graph constants, then folded outputs.
  std::vector<Tensor> known(g.values().size());
  for (size_t v = 0; v < g.values().size(); ++v)
    if (const Tensor* c = g.constant_data(ValueId(v))) {
      known[v] = *c;
      types[v] = TensorType{c->dtype(), c->shape()};
    }
  auto constant = [&known](ValueId v) { return known[size_t(v)].defined() ? &known[size_t(v)] : nullptr; };

  TracedGraph out;
  for (const Node& n : g.nodes()) {
    infer_node_types(g, n, types, constant);
    // Shape needs only the input's type, which tracing knows; everything else needs all
    // of its inputs constant.
    bool foldable = n.op == OpKind::Shape;
    if (!foldable) {
      foldable = true;
      for (ValueId v : n.inputs) foldable &= v == kNoValue || known[size_t(v)].defined();
    }
    if (!foldable) {
      rw.copy_node(n);
      continue;
    }
    std::vector<Tensor> results;
    if (n.op == OpKind::Shape) {
      // Shape reads only its input's type, which is known here even when the data is not.
      std::vector<int64_t> dims = shape_op_dims(n, types[size_t(n.inputs[0])].shape);
      Tensor t = Tensor::empty(DType::I64, Shape{int64_t(dims.size())});
      for (size_t i = 0; i < dims.size(); ++i) t.data<int64_t>()[i] = dims[i];
      results.push_back(std::move(t));
    } else {
      std::vector<const Tensor*> ins;
      for (ValueId v : n.inputs) ins.push_back(v == kNoValue ? nullptr : &known[size_t(v)]);
      std::vector<TensorType> out_types;
      for (ValueId o : n.outputs) out_types.push_back(types[size_t(o)]);
      results = evaluate(n, ins, out_types);
    }
    FUSOR_ASSERT(results.size() == n.outputs.size(), node_label(n), " evaluation returned ", results.size(), " outputs");
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      ValueId o = n.outputs[k];
      known[size_t(o)] = results[k];
      rw.map(o, rw.graph().add_constant(g.value(o).name, results[k]));
    }
    ++out.folded_nodes;
  }
  out.graph = rw.finish();
  out.types = infer_types(out.graph, input_types);
  return out;
}

}  // namespace fusor
