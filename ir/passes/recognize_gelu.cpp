// The GELU matchers (see recognize_patterns.h).
#include <cmath>
#include <numbers>

#include "ir/passes/recognize_patterns.h"

namespace fusor {

namespace {

// Given A = 1 + f(x) (produced by `add`), matches the products with x and 0.5 that follow,
// in any association: (x*A)*0.5, (x*0.5)*A, (A*0.5)*x, x*(A*0.5), (0.5*x)*A. Appends the
// nodes and returns the final product's output, or kNoValue.
ValueId match_half_x_times(const PatternContext& ctx, ValueId a, ValueId x, std::vector<NodeId>* nodes) {
  const Node* m1 = ctx.sole_consumer(a);
  if (!m1 || m1->op != OpKind::Mul) return kNoValue;
  ValueId t = PatternContext::other_operand(*m1, a);
  const Graph& g = ctx.graph();
  auto id = [&](const Node* n) { return NodeId(n - g.nodes().data()); };
  if (t == x || ctx.is_scalar(t, 0.5)) {
    // m1 = A*x (or A*0.5); the next Mul supplies the other factor.
    const Node* m2 = ctx.sole_consumer(m1->outputs[0]);
    if (!m2 || m2->op != OpKind::Mul) return kNoValue;
    ValueId u = PatternContext::other_operand(*m2, m1->outputs[0]);
    bool ok = t == x ? ctx.is_scalar(u, 0.5) : u == x;
    if (!ok) return kNoValue;
    nodes->push_back(id(m1));
    nodes->push_back(id(m2));
    return m2->outputs[0];
  }
  // m1 = A * t where t = x*0.5 (its own single-use Mul).
  const Node* h = ctx.producer_of(t, OpKind::Mul);
  if (!h || ctx.consumers(t).size() != 1 || ctx.is_output(t)) return kNoValue;
  ValueId other = PatternContext::other_operand(*h, x);
  if (other == kNoValue || !ctx.is_scalar(other, 0.5)) return kNoValue;
  nodes->push_back(id(h));
  nodes->push_back(id(m1));
  return m1->outputs[0];
}

// A = Add(f, 1) where f is the anchor's single-use output.
const Node* add_one(const PatternContext& ctx, const Node& anchor) {
  const Node* add = ctx.sole_consumer(anchor.outputs[0]);
  if (!add || add->op != OpKind::Add) return nullptr;
  return ctx.is_scalar(PatternContext::other_operand(*add, anchor.outputs[0]), 1.0) ? add : nullptr;
}

}  // namespace

std::optional<PatternMatch> match_gelu(const PatternContext& ctx, const Node& anchor) {
  const Graph& g = ctx.graph();
  auto id = [&](const Node* n) { return NodeId(n - g.nodes().data()); };
  PatternMatch m;
  m.op = OpKind::Gelu;
  ValueId x = kNoValue;
  if (anchor.op == OpKind::Erf) {
    // erf(x / sqrt2) or erf(x * (1/sqrt2)).
    const Node* scale = ctx.producer(anchor.inputs[0]);
    if (!scale || ctx.sole_consumer(scale->outputs[0]) != &anchor) return std::nullopt;
    if (scale->op == OpKind::Div && ctx.is_scalar(scale->inputs[1], std::numbers::sqrt2)) {
      x = scale->inputs[0];
    } else if (scale->op == OpKind::Mul) {
      for (int k = 0; k < 2; ++k)
        if (ctx.is_scalar(scale->inputs[size_t(k)], 1 / std::numbers::sqrt2)) x = scale->inputs[size_t(1 - k)];
    }
    if (x == kNoValue) return std::nullopt;
    m.nodes.push_back(id(scale));
    m.pattern = "gelu_erf";
    m.attrs["approximate"] = "none";
  } else if (anchor.op == OpKind::Tanh) {
    // tanh(c * (x + 0.044715 * x^3)), c = sqrt(2/pi); x^3 as Pow(x, 3) or x*x*x.
    const Node* sc = ctx.producer_of(anchor.inputs[0], OpKind::Mul);
    if (!sc || ctx.sole_consumer(sc->outputs[0]) != &anchor) return std::nullopt;
    ValueId inner = kNoValue;
    for (int k = 0; k < 2; ++k)
      if (ctx.is_scalar(sc->inputs[size_t(k)], std::sqrt(2 / std::numbers::pi))) inner = sc->inputs[size_t(1 - k)];
    const Node* add = ctx.producer_of(inner, OpKind::Add);
    if (!add || ctx.sole_consumer(inner) != sc) return std::nullopt;
    for (int k = 0; k < 2 && x == kNoValue; ++k) {
      ValueId cand_x = add->inputs[size_t(k)], cube_term = add->inputs[size_t(1 - k)];
      const Node* mc = ctx.producer_of(cube_term, OpKind::Mul);
      if (!mc || ctx.sole_consumer(cube_term) != add) continue;
      ValueId cube = kNoValue;
      for (int j = 0; j < 2; ++j)
        if (ctx.is_scalar(mc->inputs[size_t(j)], 0.044715)) cube = mc->inputs[size_t(1 - j)];
      const Node* p = ctx.producer(cube);
      if (!p || ctx.sole_consumer(cube) != mc) continue;
      std::vector<NodeId> cube_nodes{id(p)};
      bool ok = false;
      if (p->op == OpKind::Pow && p->inputs[0] == cand_x && ctx.is_scalar(p->inputs[1], 3.0, 0)) {
        ok = true;
      } else if (p->op == OpKind::Mul) {  // x * (x * x) or (x * x) * x
        ValueId sq = PatternContext::other_operand(*p, cand_x);
        const Node* s = ctx.producer_of(sq, OpKind::Mul);
        if (s && s->inputs[0] == cand_x && s->inputs[1] == cand_x && ctx.sole_consumer(sq) == p) {
          ok = true;
          cube_nodes.push_back(id(s));
        }
      }
      if (!ok) continue;
      x = cand_x;
      m.nodes.insert(m.nodes.end(), cube_nodes.begin(), cube_nodes.end());
      m.nodes.push_back(id(mc));
      m.nodes.push_back(id(add));
      m.nodes.push_back(id(sc));
    }
    if (x == kNoValue) return std::nullopt;
    m.pattern = "gelu_tanh";
    m.attrs["approximate"] = "tanh";
  } else {
    return std::nullopt;
  }
  m.nodes.push_back(id(&anchor));
  const Node* a = add_one(ctx, anchor);
  if (!a) return std::nullopt;
  m.nodes.push_back(id(a));
  ValueId out = match_half_x_times(ctx, a->outputs[0], x, &m.nodes);
  if (out == kNoValue) return std::nullopt;
  m.inputs = {x};
  m.output = out;
  return m;
}

}  // namespace fusor
