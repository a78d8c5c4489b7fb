#include "tests/support/pass_util.h"

#include <sstream>

#include "codegen/static/static_backend.h"
#include "ir/op_schema.h"
#include "ir/text_format.h"
#include "ir/verifier.h"
#include "jit/fuse.h"

namespace fusor::test {

ConstantEvaluator static_evaluator() { return static_constant_evaluator(serial_parallel()); }

FusedGraph fuse_text(const std::string& text, const DimBindings& dims, const FusionOptions& options) {
  Graph g = parse_graph(text);
  return fuse_graph(g, input_types_from_dims(g, dims), options, static_evaluator());
}

Graph trace_text(const std::string& text, const DimBindings& dims) {
  Graph g = parse_graph(text);
  return trace(g, input_types_from_dims(g, dims), static_evaluator()).graph;
}

std::vector<Tensor> run_all_static(const FusedGraph& f, const std::map<std::string, Tensor>& inputs,
                                   Parallel& parallel) {
  const Graph& g = f.graph;
  std::vector<Tensor> values(g.values().size());
  for (ValueId in : g.inputs()) values[size_t(in)] = inputs.at(g.value(in).name);
  for (size_t v = 0; v < g.values().size(); ++v)
    if (const Tensor* c = g.constant_data(ValueId(v))) values[v] = *c;
  for (const Node& n : g.nodes()) {
    StaticKernelArgs args{n, {}, {}, parallel};
    for (ValueId v : n.inputs) args.inputs.push_back(v == kNoValue ? nullptr : &values[size_t(v)]);
    for (ValueId o : n.outputs) {
      values[size_t(o)] = Tensor::empty(f.types[size_t(o)].dtype, f.types[size_t(o)].shape);
      args.outputs.push_back(&values[size_t(o)]);
    }
    run_static_kernel(args);
  }
  return values;
}

std::string structure(const Graph& g) {
  std::ostringstream os;
  for (const Node& n : g.nodes()) {
    for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << g.value(n.outputs[k]).name;
    os << " = " << op_name(n.op) << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k)
      os << (k ? ", " : "") << (n.inputs[k] == kNoValue ? "_" : g.value(n.inputs[k]).name);
    os << ")\n";
  }
  os << "output";
  for (size_t k = 0; k < g.outputs().size(); ++k) os << (k ? ", " : " ") << g.value(g.outputs()[k]).name;
  return os.str();
}

std::string group_summary(const FusedGraph& f) {
  std::ostringstream os;
  for (const FusionGroup& grp : f.groups) {
    os << group_kind_name(grp.kind) << " " << grp.pattern << ":";
    for (NodeId n : grp.nodes) os << " " << f.graph.node(n).name;
    os << "\n";
  }
  return os.str();
}

}  // namespace fusor::test
