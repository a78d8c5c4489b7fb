#include "ir/passes/graph_rewriter.h"

#include "ir/op_schema.h"

namespace fusor {

GraphRewriter::GraphRewriter(const Graph& old, bool copy_inputs)
    : old_(old), g_(old.name()), map_(old.values().size(), kNoValue) {
  if (copy_inputs)
    for (ValueId in : old.inputs()) map_[size_t(in)] = g_.add_input(old.value(in).name, old.value(in).dtype, old.value(in).dims);
  for (size_t v = 0; v < old.values().size(); ++v) {
    const Value& val = old.values()[v];
    if (val.kind != ValueKind::Constant) continue;
    const Constant& c = old.constants()[size_t(val.constant)];
    map_[v] = g_.add_constant(val.name, c.data, c.recipe);
  }
}

void GraphRewriter::add_input(ValueId old_input, std::vector<Dim> dims) {
  const Value& v = old_.value(old_input);
  map_[size_t(old_input)] = g_.add_input(v.name, v.dtype, std::move(dims));
}

NodeId GraphRewriter::copy_node(const Node& n) {
  std::vector<ValueId> ins;
  for (ValueId v : n.inputs) ins.push_back(mapped(v));
  std::vector<std::string> outs;
  for (ValueId o : n.outputs) outs.push_back(old_.value(o).name);
  NodeId id = g_.add_node(n.op, std::move(ins), std::move(outs), n.attrs, n.name);
  for (size_t k = 0; k < n.outputs.size(); ++k) map_[size_t(n.outputs[k])] = g_.node(id).outputs[k];
  return id;
}

ValueId GraphRewriter::emit(OpKind op, std::vector<ValueId> new_inputs, Attributes attrs, const std::string& out_name,
                            const std::string& node_name) {
  std::string out = out_name.empty() ? g_.unique_name(std::string(op_name(op))) : out_name;
  NodeId id = g_.add_node(op, std::move(new_inputs), {out}, std::move(attrs),
                          node_name.empty() ? g_.unique_name(out) : node_name);
  return g_.node(id).outputs[0];
}

ValueId GraphRewriter::add_constant(const std::string& name, Tensor data, std::string recipe) {
  return g_.add_constant(g_.unique_name(name), std::move(data), std::move(recipe));
}

void GraphRewriter::map(ValueId old_v, ValueId new_v) { map_[size_t(old_v)] = new_v; }

bool GraphRewriter::is_mapped(ValueId old_v) const { return old_v == kNoValue || map_[size_t(old_v)] != kNoValue; }

ValueId GraphRewriter::mapped(ValueId old_v) const {
  if (old_v == kNoValue) return kNoValue;
  FUSOR_ASSERT(map_[size_t(old_v)] != kNoValue, "value '", old_.value(old_v).name, "' was used before it was rewritten");
  return map_[size_t(old_v)];
}

Graph GraphRewriter::finish() {
  for (ValueId o : old_.outputs()) {
    ValueId n = mapped(o);
    FUSOR_ASSERT(g_.value(n).name == old_.value(o).name, "a pass renamed graph output '", old_.value(o).name, "' to '",
                 g_.value(n).name, "'");
    g_.add_output(n);
  }
  return std::move(g_);
}

std::vector<std::vector<NodeId>> value_consumers(const Graph& g) {
  std::vector<std::vector<NodeId>> users(g.values().size());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (ValueId v : g.nodes()[i].inputs)
      if (v != kNoValue) users[size_t(v)].push_back(NodeId(i));
  return users;
}

Graph eliminate_dead_nodes(const Graph& g) {
  std::vector<char> live_value(g.values().size(), 0), live_node(g.nodes().size(), 0);
  for (ValueId o : g.outputs()) live_value[size_t(o)] = 1;
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    for (ValueId o : n.outputs) live_node[i] |= live_value[size_t(o)];
    if (!live_node[i]) continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue) live_value[size_t(v)] = 1;
  }
  // Constants nobody reads are dropped too (they would otherwise be hashed and kept alive).
  Graph out(g.name());
  std::vector<ValueId> map(g.values().size(), kNoValue);
  for (ValueId in : g.inputs()) map[size_t(in)] = out.add_input(g.value(in).name, g.value(in).dtype, g.value(in).dims);
  for (size_t v = 0; v < g.values().size(); ++v) {
    const Value& val = g.values()[v];
    if (val.kind != ValueKind::Constant || !live_value[v]) continue;
    const Constant& c = g.constants()[size_t(val.constant)];
    map[v] = out.add_constant(val.name, c.data, c.recipe);
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (!live_node[i]) continue;
    const Node& n = g.nodes()[i];
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(v == kNoValue ? kNoValue : map[size_t(v)]);
    std::vector<std::string> outs;
    for (ValueId o : n.outputs) outs.push_back(g.value(o).name);
    NodeId id = out.add_node(n.op, std::move(ins), std::move(outs), n.attrs, n.name);
    for (size_t k = 0; k < n.outputs.size(); ++k) map[size_t(n.outputs[k])] = out.node(id).outputs[k];
  }
  for (ValueId o : g.outputs()) out.add_output(map[size_t(o)]);
  return out;
}

}  // namespace fusor
