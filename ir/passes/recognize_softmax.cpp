// The Softmax matcher (see recognize_patterns.h).
#include "ir/ops/params.h"
#include "ir/passes/recognize_patterns.h"

namespace fusor {

std::optional<PatternMatch> match_softmax(const PatternContext& ctx, const Node& exp) {
  const Graph& g = ctx.graph();
  auto id = [&](const Node* n) { return NodeId(n - g.nodes().data()); };
  if (exp.op != OpKind::Exp) return std::nullopt;
  ValueId e = exp.outputs[0];
  if (ctx.is_output(e) || ctx.consumers(e).size() != 2) return std::nullopt;
  const Node *sum = nullptr, *div = nullptr;
  for (NodeId u : ctx.consumers(e)) {
    const Node& n = g.node(u);
    if (n.op == OpKind::ReduceSum && n.inputs[0] == e) sum = &n;
    else if (n.op == OpKind::Div && n.inputs[0] == e) div = &n;
  }
  if (!sum || !div || attr_int(*sum, "keepdims") == 0 || div->inputs[1] != sum->outputs[0] ||
      ctx.sole_consumer(sum->outputs[0]) != div)
    return std::nullopt;
  const Shape& xs = ctx.type(e).shape;
  const Tensor* axes_in = sum->inputs.size() > 1 && sum->inputs[1] != kNoValue ? g.constant_data(sum->inputs[1]) : nullptr;
  if (sum->inputs.size() > 1 && sum->inputs[1] != kNoValue && !axes_in) return std::nullopt;
  std::vector<int> axes = reduce_axes(*sum, xs, axes_in);
  if (axes.size() != 1) return std::nullopt;
  PatternMatch m;
  m.op = OpKind::Softmax;
  m.attrs["axis"] = int64_t(axes[0]);
  m.pattern = "softmax";
  m.inputs = {exp.inputs[0]};
  // Softmax is shift-invariant, so exp(x - c) with c constant along the axis (a max, or
  // any value broadcast along it) is still softmax(x); a Sub whose subtrahend has size 1
  // on the axis is absorbed.
  if (const Node* sub = ctx.producer_of(exp.inputs[0], OpKind::Sub); sub && ctx.sole_consumer(sub->outputs[0]) == &exp) {
    const Shape& cs = ctx.type(sub->inputs[1]).shape;
    int off = xs.rank() - cs.rank();
    bool along = axes[0] < off || cs[axes[0] - off] == 1;
    if (along && ctx.type(sub->inputs[0]).shape == xs) {
      m.inputs = {sub->inputs[0]};
      m.nodes.push_back(id(sub));
      m.pattern = "softmax_shifted";
    }
  }
  m.nodes.push_back(id(&exp));
  m.nodes.push_back(id(sum));
  m.nodes.push_back(id(div));
  m.output = div->outputs[0];
  return m;
}

}  // namespace fusor
