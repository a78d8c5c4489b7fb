// The LayerNorm matcher (see recognize_patterns.h).
#include "ir/ops/params.h"
#include "ir/passes/recognize_patterns.h"

namespace fusor {

namespace {

// The axes of a ReduceMean when they are the trailing `k` axes of its input and keepdims is
// set: returns the first axis, or -1.
int trailing_axes(const PatternContext& ctx, const Node& r) {
  if (r.op != OpKind::ReduceMean || attr_int(r, "keepdims") == 0) return -1;
  const Shape& x = ctx.type(r.inputs[0]).shape;
  const Tensor* axes_in = r.inputs.size() > 1 && r.inputs[1] != kNoValue ? ctx.graph().constant_data(r.inputs[1]) : nullptr;
  if (r.inputs.size() > 1 && r.inputs[1] != kNoValue && !axes_in) return -1;
  std::vector<int> axes = reduce_axes(r, x, axes_in);
  if (axes.empty()) return -1;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != x.rank() - int(axes.size()) + int(i)) return -1;
  return axes[0];
}

}  // namespace

std::optional<PatternMatch> match_layernorm(const PatternContext& ctx, const Node& mean) {
  const Graph& g = ctx.graph();
  auto id = [&](const Node* n) { return NodeId(n - g.nodes().data()); };
  int axis = trailing_axes(ctx, mean);
  if (axis < 0) return std::nullopt;
  ValueId x = mean.inputs[0];
  const Node* sub = ctx.sole_consumer(mean.outputs[0]);
  if (!sub || sub->op != OpKind::Sub || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0]) return std::nullopt;
  ValueId d = sub->outputs[0];
  if (ctx.is_output(d)) return std::nullopt;
  // d feeds exactly the square and the division.
  const Node *sq = nullptr, *div = nullptr;
  for (NodeId u : ctx.consumers(d)) {
    const Node& n = g.node(u);
    if (n.op == OpKind::Div && n.inputs[0] == d) div = &n;
    else if (n.op == OpKind::Pow && n.inputs[0] == d && ctx.is_scalar(n.inputs[1], 2.0, 0)) sq = &n;
    else if (n.op == OpKind::Mul && n.inputs[0] == d && n.inputs[1] == d) sq = &n;
    else return std::nullopt;
  }
  size_t expect_uses = 1 + (sq && sq->op == OpKind::Mul ? 2 : 1);
  if (!sq || !div || ctx.consumers(d).size() != expect_uses) return std::nullopt;
  const Node* var = ctx.sole_consumer(sq->outputs[0]);
  if (!var || trailing_axes(ctx, *var) != axis) return std::nullopt;
  const Node* add = ctx.sole_consumer(var->outputs[0]);
  if (!add || add->op != OpKind::Add) return std::nullopt;
  double eps = ctx.scalar_value(PatternContext::other_operand(*add, var->outputs[0]));
  if (!(eps >= 0)) return std::nullopt;
  const Node* sqrt = ctx.sole_consumer(add->outputs[0]);
  if (!sqrt || sqrt->op != OpKind::Sqrt || ctx.sole_consumer(sqrt->outputs[0]) != div || div->inputs[1] != sqrt->outputs[0])
    return std::nullopt;
  // (d / s) * gamma [+ beta]; gamma and beta must broadcast to the normalized shape only.
  const Node* mul = ctx.sole_consumer(div->outputs[0]);
  if (!mul || mul->op != OpKind::Mul) return std::nullopt;
  ValueId gamma = PatternContext::other_operand(*mul, div->outputs[0]);
  const Shape& xs = ctx.type(x).shape;
  Shape norm(std::vector<int64_t>(xs.dims().begin() + axis, xs.dims().end()));
  auto fits = [&](ValueId v) {
    Shape b;
    return broadcast_shapes(ctx.type(v).shape, norm, &b) && b == norm && ctx.type(v).dtype == ctx.type(x).dtype;
  };
  if (gamma == kNoValue || !fits(gamma)) return std::nullopt;
  PatternMatch m;
  m.pattern = "layernorm";
  m.op = OpKind::LayerNormalization;
  m.nodes = {id(&mean), id(sub), id(sq), id(var), id(add), id(sqrt), id(div), id(mul)};
  m.inputs = {x, gamma};
  m.output = mul->outputs[0];
  if (const Node* badd = ctx.sole_consumer(mul->outputs[0]); badd && badd->op == OpKind::Add) {
    ValueId beta = PatternContext::other_operand(*badd, mul->outputs[0]);
    if (beta != kNoValue && fits(beta)) {
      m.nodes.push_back(id(badd));
      m.inputs.push_back(beta);
      m.output = badd->outputs[0];
    }
  }
  m.attrs["axis"] = int64_t(axis);
  m.attrs["epsilon"] = eps;
  return m;
}

}  // namespace fusor
