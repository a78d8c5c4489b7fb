#include "ir/passes/normalize_attention.h"

#include <cmath>

#include "ir/op_schema.h"
#include "ir/passes/graph_rewriter.h"
#include "ir/passes/pattern.h"

namespace fusor {

// Note [Exported attention]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// torch's scaled_dot_product_attention exports (TorchScript opset 14+ and torch.export)
// scale both operands by sqrt(1/sqrt(d)) before the product, and guard the probabilities
// against the NaN rows a fully masked row gives (-inf - -inf):
//   s = MatMul(Mul(q, c), Mul(kᵀ, c)); p = Softmax(s + mask); o = MatMul(Where(IsNaN(p), 0, p), v)
// Neither fits the attention group: the scales are kernels of their own before the
// product, and the guard sits between the softmax and ·V. So:
//  - the two scalar scales move behind the product: (q a)·(k b) = (q·k)(a b), exact up to
//    rounding (exact when a and b are powers of two, as sqrt(1/sqrt(64)) is not, but
//    sqrt(1/sqrt(16)) is); the scale is then a pointwise op on the scores.
//  - the guard moves behind ·V. A softmax row holds a NaN only when all of it is NaN (a NaN
//    or +inf score makes the max and so every entry NaN; an all -inf row is 0/0), so the
//    guarded product of that row is 0·V = 0 and the guarded output row is 0 too. The two
//    agree whenever V is finite (with an inf or NaN in V the original gives NaN where it
//    meets a finite probability, the moved guard 0): the one documented deviation.

namespace {

constexpr const char* kPass = "normalize_attention";

class Normalizer {
 public:
  Normalizer(const Graph& g, FusionLog* log) : g_(g), ctx_(g), log_(log) {}

  Graph run() {
    GraphRewriter rw(g_);
    for (const Node& n : g_.nodes()) {
      if (skip_[size_t(id(n))]) continue;
      if (n.op == OpKind::MatMul && (scales(rw, n) || guard(rw, n))) continue;
      rw.copy_node(n);
    }
    return rw.finish();
  }

  bool changed() const { return changed_; }

  // Marks the nodes a rewrite of `at` would remove, when they are all sole-consumer
  // intermediates (decided before any is emitted; nodes come before `at` in order).
  void plan() {
    skip_.assign(g_.nodes().size(), 0);
    for (const Node& n : g_.nodes()) {
      if (n.op != OpKind::MatMul) continue;
      if (const Node* a = scaled(n.inputs[0], n), *b = scaled(n.inputs[1], n); a || b) {
        if (a) skip_[size_t(id(*a))] = 1;
        if (b) skip_[size_t(id(*b))] = 1;
        changed_ = true;
      } else if (auto [where, isnan] = guarded(n); where) {
        skip_[size_t(id(*where))] = skip_[size_t(id(*isnan))] = 1;
        changed_ = true;
      }
    }
  }

 private:
  NodeId id(const Node& n) const { return NodeId(&n - g_.nodes().data()); }

  // The Mul producing v as (x * scalar constant), v consumed only by `user`.
  const Node* scaled(ValueId v, const Node& user) const {
    const Node* m = ctx_.producer_of(v, OpKind::Mul);
    if (!m || ctx_.sole_consumer(v) != &user) return nullptr;
    for (int k = 0; k < 2; ++k)
      if (std::isfinite(ctx_.scalar_value(m->inputs[size_t(k)])) && ctx_.type(m->inputs[size_t(1 - k)]).dtype == DType::F32 &&
          ctx_.type(m->inputs[size_t(1 - k)]).shape == ctx_.type(v).shape)
        return m;
    return nullptr;
  }
  ValueId unscaled(const Node& m) const {
    return std::isfinite(ctx_.scalar_value(m.inputs[1])) ? m.inputs[0] : m.inputs[1];
  }
  double factor(const Node& m) const {
    double s = ctx_.scalar_value(m.inputs[1]);
    return std::isfinite(s) ? s : ctx_.scalar_value(m.inputs[0]);
  }

  // Where(IsNaN(p), 0, p) feeding MatMul n as its first operand, p a last-axis Softmax.
  std::pair<const Node*, const Node*> guarded(const Node& n) const {
    const Node* w = ctx_.producer_of(n.inputs[0], OpKind::Where);
    if (!w || ctx_.sole_consumer(n.inputs[0]) != &n) return {};
    const Node* isnan = ctx_.producer_of(w->inputs[0], OpKind::IsNaN);
    if (!isnan || ctx_.sole_consumer(w->inputs[0]) != w) return {};
    ValueId p = isnan->inputs[0];
    const Node* sm = ctx_.producer_of(p, OpKind::Softmax);
    if (!sm || w->inputs[2] != p || !ctx_.is_scalar(w->inputs[1], 0.0, 0) || ctx_.type(p).dtype != DType::F32) return {};
    int axis;
    const Shape& s = ctx_.type(p).shape;
    if (!normalize_axis(attr_int(*sm, "axis"), s.rank(), &axis) || axis != s.rank() - 1) return {};
    if (ctx_.is_output(p) || ctx_.consumers(p).size() != 2 || ctx_.type(n.inputs[0]).shape != s) return {};
    return {w, isnan};
  }

  bool scales(GraphRewriter& rw, const Node& n) {
    const Node* a = scaled(n.inputs[0], n);
    const Node* b = scaled(n.inputs[1], n);
    if (!a && !b) return false;
    double f = (a ? factor(*a) : 1.0) * (b ? factor(*b) : 1.0);
    ValueId lhs = rw.mapped(a ? unscaled(*a) : n.inputs[0]), rhs = rw.mapped(b ? unscaled(*b) : n.inputs[1]);
    const std::string& out = g_.value(n.outputs[0]).name;
    ValueId prod = rw.emit(OpKind::MatMul, {lhs, rhs}, {}, rw.graph().unique_name(out + "_unscaled"), n.name);
    ValueId k = rw.add_constant(out + "_scale", Tensor::from_doubles(DType::F32, Shape{}, {double(float(f))}));
    rw.map(n.outputs[0], rw.emit(OpKind::Mul, {prod, k}, {}, out, rw.graph().unique_name(n.name + "_scale")));
    log_->note(kPass, n.name, "moved the scalar scales of its operands (" + std::string(a ? a->name : "") +
                                  (a && b ? ", " : "") + (b ? b->name : "") + ") behind the product");
    return true;
  }

  bool guard(GraphRewriter& rw, const Node& n) {
    auto [w, isnan] = guarded(n);
    if (!w) return false;
    const std::string& out = g_.value(n.outputs[0]).name;
    ValueId prod = rw.emit(OpKind::MatMul, {rw.mapped(isnan->inputs[0]), rw.mapped(n.inputs[1])}, {},
                           rw.graph().unique_name(out + "_unguarded"), n.name);
    ValueId nan = rw.emit(OpKind::IsNaN, {prod}, {}, rw.graph().unique_name(out + "_isnan"), rw.graph().unique_name(isnan->name));
    rw.map(n.outputs[0], rw.emit(OpKind::Where, {nan, rw.mapped(w->inputs[1]), prod}, {}, out, rw.graph().unique_name(w->name)));
    log_->note(kPass, n.name, "moved the NaN guard " + w->name + " of the softmax behind the product (Note [Exported attention])");
    return true;
  }

  const Graph& g_;
  PatternContext ctx_;
  FusionLog* log_;
  std::vector<char> skip_;
  bool changed_ = false;
};

}  // namespace

Graph normalize_attention(const Graph& g, const FusionOptions& options, FusionLog* log) {
  if (!options.normalize_exports) return g;
  Normalizer n(g, log);
  n.plan();
  if (!n.changed()) return g;
  return n.run();
}

}  // namespace fusor
