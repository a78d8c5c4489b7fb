#include "ir/passes/recognize_patterns.h"

#include <algorithm>

#include "ir/op_schema.h"
#include "ir/passes/graph_rewriter.h"

namespace fusor {

namespace {

constexpr const char* kPass = "recognize_patterns";

// Every value a match produces, except its output, must be consumed only inside it.
bool self_contained(const PatternContext& ctx, const PatternMatch& m) {
  const Graph& g = ctx.graph();
  for (NodeId n : m.nodes)
    for (ValueId o : g.node(n).outputs) {
      if (o == m.output) continue;
      if (ctx.is_output(o)) return false;
      for (NodeId u : ctx.consumers(o))
        if (std::find(m.nodes.begin(), m.nodes.end(), u) == m.nodes.end()) return false;
    }
  return true;
}

}  // namespace

Graph recognize_patterns(const Graph& g, const FusionOptions& options, FusionLog* log) {
  if (!options.recognize_patterns) return g;
  PatternContext ctx(g);
  std::vector<int> claimed(g.nodes().size(), -1);  // node -> match index
  std::vector<PatternMatch> matches;
  for (const Node& n : g.nodes()) {
    std::optional<PatternMatch> m;
    switch (n.op) {
      case OpKind::Erf:
      case OpKind::Tanh: m = match_gelu(ctx, n); break;
      case OpKind::ReduceMean: m = match_layernorm(ctx, n); break;
      case OpKind::Exp: m = match_softmax(ctx, n); break;
      default: break;
    }
    if (!m || !self_contained(ctx, *m)) continue;
    bool overlaps = false;
    for (NodeId id : m->nodes) overlaps |= claimed[size_t(id)] >= 0;
    if (overlaps) continue;
    for (NodeId id : m->nodes) claimed[size_t(id)] = int(matches.size());
    matches.push_back(std::move(*m));
  }
  if (matches.empty()) return g;

  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    int mi = claimed[i];
    if (mi < 0) {
      rw.copy_node(g.nodes()[i]);
      continue;
    }
    const PatternMatch& m = matches[size_t(mi)];
    if (NodeId(i) != *std::max_element(m.nodes.begin(), m.nodes.end())) continue;  // emit at the last node
    std::vector<ValueId> ins;
    for (ValueId v : m.inputs) ins.push_back(rw.mapped(v));
    const Node& last = g.node(NodeId(i));
    ValueId out = rw.emit(m.op, std::move(ins), m.attrs, g.value(m.output).name, last.name);
    rw.map(m.output, out);
    log->note(kPass, last.name,
              "collapsed " + std::to_string(m.nodes.size()) + " ops (" + m.pattern + ") into " +
                  std::string(op_name(m.op)) + " " + last.name);
  }
  return rw.finish();
}

}  // namespace fusor
