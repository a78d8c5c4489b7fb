#include "ir/passes/group_fusions.h"

#include <algorithm>
#include <functional>

#include "ir/op_schema.h"
#include "ir/ops/params.h"
#include "ir/passes/pattern.h"

namespace fusor {

// Note [Grouping rules]
// ~~~~~~~~~~~~~~~~~~~~~
// Groups are formed greedily, in this order (each step only takes nodes no earlier step
// took), so that the rules of the fusion issue hold:
//  1. Views (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Split) are groups of
//     their own: they cost no kernel, consumers read through strides.
//  2. Attention: MatMul(Q, K) -> pointwise ops of the scores' shape (scale, mask) ->
//     Softmax over the last axis -> MatMul(P, V), every intermediate with one consumer,
//     is one group; the T×T scores never reach memory in a kernel made for it. A side
//     input of the chain made by a pointwise op for it alone (a broadcast mask) joins too.
//  3. A row reduction (Softmax, LayerNormalization, ReduceMean/Sum/Max over trailing
//     axes) takes its pointwise prologue: producers of its data input whose output has the
//     reduction input's shape and is consumed only there (scale + mask + softmax, residual
//     add + layernorm), recursively.
//  4. A contraction (Conv, MatMul, Gemm) takes its pointwise epilogue: the chain of sole
//     consumers whose output has the contraction's output shape (bias, folded-BN shift,
//     residual add, activation). The epilogue runs on the accumulator tile before the store.
//  5. A row reduction (and an attention group) takes its pointwise epilogue the same way.
//     An attention group then takes the Transpose its result goes through alone when that
//     keeps the last axis (the heads merged back, [B, H, T, d] -> [B, T, H, d]): the kernel
//     stores each row where the transposed value has it, so the value the next product
//     reads is written once, contiguous, instead of written head-major and copied by a
//     Transpose kernel. (Its strides then no longer grow with T, so a self-attention of
//     batch 1 has a symbolic form: codegen/symbolic.h.)
//  6. The remaining pointwise ops form maximal pointwise groups: a node joins the group of a
//     pointwise producer when that producer's output has the node's shape and the node is
//     its only consumer.
//  7. Everything else is an opaque single-op group.
// A value with several consumers is never swallowed: it ends its group and is written to
// memory (recomputing it in each consumer is not done yet — pointwise recompute is cheap,
// but the win is small next to the risk of duplicating a contraction). Graph outputs are
// always written. A node joins a group only if none of its other inputs depends on the
// group (that would make the group both before and after that input: a cycle).

namespace {

bool is_view(OpKind op) { return op_family(op) == OpFamily::View; }

// Fills fg's pattern ("matmul+add+gelu"), inputs (the values its nodes read that none of
// them produces) and outputs (the values its nodes write that a node outside it reads, or
// that are graph outputs) from fg.nodes, given which nodes are members.
void describe_group(const Graph& g, FusionGroup& fg, const std::function<bool(NodeId)>& member,
                    const std::function<const std::vector<NodeId>&(ValueId)>& consumers,
                    const std::function<bool(ValueId)>& is_output) {
  fg.pattern.clear();
  fg.inputs.clear();
  fg.outputs.clear();
  for (NodeId n : fg.nodes) {
    const Node& nd = g.node(n);
    std::string op(op_name(nd.op));
    std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    fg.pattern += (fg.pattern.empty() ? "" : "+") + op;
    for (ValueId in : nd.inputs) {
      if (in == kNoValue) continue;
      const Value& v = g.value(in);
      const bool inside = v.kind == ValueKind::NodeOutput && member(v.producer);
      if (!inside && std::find(fg.inputs.begin(), fg.inputs.end(), in) == fg.inputs.end()) fg.inputs.push_back(in);
    }
    for (ValueId o : nd.outputs) {
      bool outside = is_output(o);
      for (NodeId u : consumers(o)) outside |= !member(u);
      if (outside) fg.outputs.push_back(o);
    }
  }
}
bool is_contraction(OpKind op) { return op_family(op) == OpFamily::Contraction; }
bool is_pointwise(OpKind op) { return op_family(op) == OpFamily::Pointwise; }

class Grouper {
 public:
  Grouper(const Graph& g, int64_t max_ops, FusionLog* log)
      : g_(g), ctx_(g), log_(log), max_ops_(max_ops), group_of_(g.nodes().size(), -1) {}

  std::vector<FusionGroup> run(bool fuse);

 private:
  const Node& node(NodeId n) const { return g_.node(n); }
  NodeId id(const Node* n) const { return NodeId(n - g_.nodes().data()); }
  const Shape& shape(ValueId v) const { return ctx_.type(v).shape; }

  bool is_row_reduction(const Node& n) const;
  int new_group(GroupKind kind, NodeId anchor);
  void take(int grp, NodeId n) {
    group_of_[size_t(n)] = grp;
    members_[size_t(grp)].push_back(n);
  }
  // True when value v depends on a node of group grp.
  bool depends_on_group(ValueId v, int grp) const;
  // True when value v, read by a node joining grp, depends on grp through a node outside
  // it (a direct edge from grp is fine; a detour would make a cycle).
  bool reaches_via_outside(ValueId v, int grp) const {
    const Node* p = ctx_.producer(v);
    return p && group_of_[size_t(id(p))] != grp && depends_on_group(v, grp);
  }
  // True when some node of group `to` reads a value that depends on group `from` through
  // nodes outside both.
  bool path_via_outside(int from, int to) const {
    for (NodeId m : members_[size_t(to)])
      for (ValueId x : node(m).inputs) {
        const Node* p = ctx_.producer(x);
        if (!p || group_of_[size_t(id(p))] == to || group_of_[size_t(id(p))] == from) continue;
        if (depends_on_group(x, from)) return true;
      }
    return false;
  }
  // Can pointwise node u join group grp through its input `via` (a value grp produces)?
  // Logs the reason when not.
  bool can_join(const Node& u, ValueId via, int grp, const Shape& index_space, const Node& producer);
  void take_prologue(int grp, const Node& consumer, ValueId input);
  // Forms an attention group around softmax node s when the pattern holds.
  bool take_attention(const Node& s);
  void take_epilogue(int grp, ValueId start);
  // Moves the Transpose that is the sole consumer of an attention group's result into the
  // group, which then stores in the transposed order (Note [Grouping rules], 5).
  void take_output_transpose(int grp);

  // True (and the decline logged) when group grp cannot take `more` nodes: one kernel's
  // code grows with its ops, and some compilers' time with its square.
  bool full(int grp, size_t more, const std::string& producer, const std::string& consumer) {
    if (int64_t(members_[size_t(grp)].size() + more) <= max_ops_) return false;
    log_->decline(producer, consumer, "group size",
                  "the group would have " + std::to_string(members_[size_t(grp)].size() + more) +
                      " ops, past FusionOptions::max_group_ops = " + std::to_string(max_ops_));
    return true;
  }

  const Graph& g_;
  PatternContext ctx_;
  FusionLog* log_;
  int64_t max_ops_;
  std::vector<int> group_of_;
  std::vector<GroupKind> kinds_;
  std::vector<NodeId> anchors_;
  std::vector<std::vector<NodeId>> members_;
};

bool Grouper::is_row_reduction(const Node& n) const {
  if (n.op == OpKind::Softmax || n.op == OpKind::LayerNormalization) return true;
  if (n.op != OpKind::ReduceMean && n.op != OpKind::ReduceSum && n.op != OpKind::ReduceMax) return false;
  const Shape& x = shape(n.inputs[0]);
  const Tensor* axes_in = n.inputs.size() > 1 && n.inputs[1] != kNoValue ? g_.constant_data(n.inputs[1]) : nullptr;
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue && !axes_in) return false;
  std::vector<int> axes = reduce_axes(n, x, axes_in);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != x.rank() - int(axes.size()) + int(i)) return false;
  return !axes.empty();
}

int Grouper::new_group(GroupKind kind, NodeId anchor) {
  kinds_.push_back(kind);
  anchors_.push_back(anchor);
  members_.emplace_back();
  return int(kinds_.size()) - 1;
}

bool Grouper::depends_on_group(ValueId v, int grp) const {
  std::vector<char> seen(g_.nodes().size(), 0);
  std::function<bool(ValueId)> visit = [&](ValueId x) {
    const Node* p = ctx_.producer(x);
    if (!p) return false;
    NodeId pid = id(p);
    if (group_of_[size_t(pid)] == grp) return true;
    if (seen[size_t(pid)]) return false;
    seen[size_t(pid)] = 1;
    for (ValueId in : p->inputs)
      if (in != kNoValue && visit(in)) return true;
    return false;
  };
  return visit(v);
}

bool Grouper::can_join(const Node& u, ValueId via, int grp, const Shape& index_space, const Node& producer) {
  if (group_of_[size_t(id(&u))] >= 0) return false;  // already taken: not a decline
  if (!is_pointwise(u.op)) {
    log_->decline(producer.name, u.name, "unsupported op",
                  std::string(op_name(u.op)) + " cannot join a " + std::string(group_kind_name(kinds_[size_t(grp)])) +
                      " group");
    return false;
  }
  if (shape(u.outputs[0]) != index_space) {
    log_->decline(producer.name, u.name, "shape mismatch",
                  "output " + shape(u.outputs[0]).str() + " is not the group's index space " + index_space.str());
    return false;
  }
  if (full(grp, 1, producer.name, u.name)) return false;
  for (ValueId in : u.inputs)
    if (in != kNoValue && in != via && reaches_via_outside(in, grp)) {
      log_->decline(producer.name, u.name, "cycle",
                    "input '" + g_.value(in).name + "' depends on the group, so joining would create a cycle");
      return false;
    }
  return true;
}

void Grouper::take_prologue(int grp, const Node& consumer, ValueId input) {
  const Node* p = ctx_.producer(input);
  if (!p || group_of_[size_t(id(p))] >= 0 || !is_pointwise(p->op)) return;
  if (ctx_.sole_consumer(input) != &consumer) {
    log_->decline(p->name, consumer.name, "multi-consumer",
                  "'" + g_.value(input).name + "' has " + std::to_string(ctx_.consumers(input).size()) +
                      " consumers" + (ctx_.is_output(input) ? " and is a graph output" : "") + ": it is written once");
    return;
  }
  if (full(grp, 1, p->name, consumer.name)) return;
  const Node& anchor = node(anchors_[size_t(grp)]);
  if (shape(p->outputs[0]) != shape(anchor.inputs[0])) {
    log_->decline(p->name, consumer.name, "shape mismatch",
                  "output " + shape(p->outputs[0]).str() + " is broadcast into the group");
    return;
  }
  take(grp, id(p));
  for (ValueId in : p->inputs)
    if (in != kNoValue) take_prologue(grp, *p, in);
}

void Grouper::take_epilogue(int grp, ValueId start) {
  Shape space = shape(start);
  ValueId cur = start;
  for (;;) {
    const std::vector<NodeId>& users = ctx_.consumers(cur);
    if (users.empty()) return;
    const Node& last = node(members_[size_t(grp)].back());
    if (users.size() > 1 && !ctx_.is_output(cur) && kinds_[size_t(grp)] != GroupKind::Reduction) {
      // A diamond after a product: every user but one feeds only that one, which reads cur
      // too (the NaN guard Where(IsNaN(o), 0, o)): all of them join, and the chain goes on
      // from it. (Not after reductions: their epilogues stay as they were planned.)
      const Node* join = nullptr;
      for (NodeId uid : users) {
        const Node& u = node(uid);
        const Node* next = u.outputs.size() == 1 ? ctx_.sole_consumer(u.outputs[0]) : nullptr;
        bool feeds_other = next && next != &u && std::find(users.begin(), users.end(), id(next)) != users.end();
        if (!feeds_other) join = join && join != &u ? nullptr : &u;
      }
      bool ok = join != nullptr;
      std::vector<NodeId> taken;
      for (NodeId uid : users) {
        const Node& u = node(uid);
        if (!ok || &u == join || std::find(taken.begin(), taken.end(), uid) != taken.end()) continue;
        ok = ctx_.sole_consumer(u.outputs[0]) == join && can_join(u, cur, grp, space, last);
        if (ok) {
          take(grp, uid);
          taken.push_back(uid);
        }
      }
      if (ok && can_join(*join, cur, grp, space, last)) {
        take(grp, id(join));
        cur = join->outputs[0];
        continue;
      }
      for (NodeId uid : taken) {  // undo: the diamond does not join whole
        group_of_[size_t(uid)] = -1;
        members_[size_t(grp)].erase(std::find(members_[size_t(grp)].begin(), members_[size_t(grp)].end(), uid));
      }
    }
    if (users.size() != 1 || ctx_.is_output(cur)) {
      for (NodeId uid : users) {
        const Node& u = node(uid);
        if (group_of_[size_t(uid)] >= 0 || !is_pointwise(u.op)) continue;
        log_->decline(last.name, u.name, "multi-consumer",
                      "'" + g_.value(cur).name + "' has " + std::to_string(users.size()) + " consumers" +
                          (ctx_.is_output(cur) ? " and is a graph output" : "") + ": it is written once");
        break;
      }
      return;
    }
    const Node& u = node(users[0]);
    if (!can_join(u, cur, grp, space, last)) return;
    take(grp, users[0]);
    cur = u.outputs[0];
  }
}

void Grouper::take_output_transpose(int grp) {
  const Node& last = node(members_[size_t(grp)].back());
  if (last.outputs.size() != 1) return;
  ValueId out = last.outputs[0];
  const Node* t = ctx_.sole_consumer(out);
  if (!t || t->op != OpKind::Transpose || ctx_.is_output(out)) return;
  int tg = group_of_[size_t(id(t))];
  if (tg < 0 || kinds_[size_t(tg)] != GroupKind::View || members_[size_t(tg)].size() != 1) return;
  const int rank = shape(out).rank();
  std::vector<int> perm = transpose_perm(*t, rank);
  // Rows stay rows: the store is contiguous along the last axis either way.
  if (rank < 2 || perm.back() != rank - 1) return;
  members_[size_t(tg)].clear();
  take(grp, id(t));
}

bool Grouper::take_attention(const Node& s) {
  if (s.op != OpKind::Softmax) return false;
  const Shape& scores_shape = shape(s.inputs[0]);
  int axis;
  if (scores_shape.rank() < 2 || !normalize_axis(attr_int(s, "axis"), scores_shape.rank(), &axis) ||
      axis != scores_shape.rank() - 1)
    return false;
  // Walk back through single-consumer pointwise ops of the scores' shape to the QK MatMul.
  std::vector<NodeId> chain;
  ValueId cur = s.inputs[0];
  const Node* consumer = &s;
  const Node* qk = nullptr;
  for (;;) {
    const Node* p = ctx_.producer(cur);
    if (!p || group_of_[size_t(id(p))] >= 0 || ctx_.sole_consumer(cur) != consumer) return false;
    if (p->op == OpKind::MatMul) {
      qk = p;
      break;
    }
    if (!is_pointwise(p->op) || shape(p->outputs[0]) != scores_shape) return false;
    // Exactly one operand continues the chain (has the scores' shape and a producer);
    // the others (scale, mask) are read from outside.
    ValueId next = kNoValue;
    for (ValueId in : p->inputs)
      if (in != kNoValue && shape(in) == scores_shape && ctx_.producer(in)) {
        if (next != kNoValue) return false;
        next = in;
      }
    if (next == kNoValue) return false;
    chain.push_back(id(p));
    consumer = p;
    cur = next;
  }
  const Node* pv = ctx_.sole_consumer(s.outputs[0]);
  if (!pv || pv->op != OpKind::MatMul || pv->inputs[0] != s.outputs[0] || group_of_[size_t(id(pv))] >= 0) return false;
  int grp = new_group(GroupKind::Attention, id(&s));
  take(grp, id(qk));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) take(grp, *it);
  take(grp, id(&s));
  // The side inputs of the chain and V must not depend on the group (a cycle otherwise).
  for (NodeId n : members_[size_t(grp)])
    for (ValueId in : node(n).inputs)
      if (in != kNoValue && reaches_via_outside(in, grp)) {
        for (NodeId m : members_[size_t(grp)]) group_of_[size_t(m)] = -1;
        members_[size_t(grp)].clear();
        log_->decline(qk->name, s.name, "cycle", "an input of the attention pattern depends on it");
        return false;
      }
  if (reaches_via_outside(pv->inputs[1], grp)) {
    for (NodeId m : members_[size_t(grp)]) group_of_[size_t(m)] = -1;
    members_[size_t(grp)].clear();
    log_->decline(s.name, pv->name, "cycle", "V depends on the attention scores");
    return false;
  }
  // A side input computed only for one chain op by a pointwise op of its own (the mask's
  // Where(keep, 0, -inf) of [B, 1, T, T], per layer in TorchScript exports) is computed in
  // the score expression instead, broadcast like the value it made: a select per score
  // costs less than writing and reading the mask.
  for (NodeId c : chain)
    for (ValueId in : node(c).inputs) {
      const Node* p = in == kNoValue ? nullptr : ctx_.producer(in);
      if (!p || group_of_[size_t(id(p))] >= 0 || !is_pointwise(p->op) || p->op == OpKind::BatchNormalization ||
          ctx_.sole_consumer(in) != &node(c))
        continue;
      bool outside = true;
      for (ValueId x : p->inputs) outside &= x == kNoValue || !depends_on_group(x, grp);
      if (outside) take(grp, id(p));
    }
  take(grp, id(pv));
  return true;
}

std::vector<FusionGroup> Grouper::run(bool fuse) {
  const auto& nodes = g_.nodes();
  if (fuse) {
    // 1. views; 2. reduction prologues.
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (is_view(nodes[i].op)) take(new_group(GroupKind::View, NodeId(i)), NodeId(i));
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (group_of_[i] < 0) take_attention(nodes[i]);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (group_of_[i] >= 0 || !is_row_reduction(nodes[i])) continue;
      int grp = new_group(GroupKind::Reduction, NodeId(i));
      take(grp, NodeId(i));
      take_prologue(grp, nodes[i], nodes[i].inputs[0]);
    }
    // 3. contraction epilogues.
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (group_of_[i] >= 0 || !is_contraction(nodes[i].op)) continue;
      int grp = new_group(GroupKind::Contraction, NodeId(i));
      take(grp, NodeId(i));
      take_epilogue(grp, nodes[i].outputs[0]);
    }
    // 4. reduction epilogues.
    for (size_t grp = 0; grp < kinds_.size(); ++grp) {
      if (members_[grp].empty()) continue;
      if (kinds_[grp] == GroupKind::Reduction) take_epilogue(int(grp), node(anchors_[grp]).outputs[0]);
      if (kinds_[grp] != GroupKind::Attention) continue;
      take_epilogue(int(grp), node(members_[grp].back()).outputs[0]);
      take_output_transpose(int(grp));
    }
    // 5. pointwise groups, in node order.
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& u = nodes[i];
      if (group_of_[i] >= 0 || !is_pointwise(u.op)) continue;
      int grp = -1;
      for (ValueId in : u.inputs) {
        const Node* p = ctx_.producer(in);
        if (!p) continue;
        int pg = group_of_[size_t(id(p))];
        if (pg < 0 || kinds_[size_t(pg)] != GroupKind::Pointwise || pg == grp) continue;
        if (ctx_.sole_consumer(in) != &u) {
          log_->decline(p->name, u.name, "multi-consumer",
                        "'" + g_.value(in).name + "' has " + std::to_string(ctx_.consumers(in).size()) + " consumers" +
                            (ctx_.is_output(in) ? " and is a graph output" : "") + ": it is written once");
          continue;
        }
        if (shape(in) != shape(u.outputs[0])) {
          log_->decline(p->name, u.name, "shape mismatch",
                        "output " + shape(in).str() + " is broadcast to " + shape(u.outputs[0]).str());
          continue;
        }
        if (grp < 0) {
          if (!can_join(u, in, pg, shape(u.outputs[0]), *p)) continue;
          take(pg, NodeId(i));
          grp = pg;
        } else {
          // u already joined grp; merge pg into it unless a path leaves one group and
          // comes back into the other through outside nodes.
          if (full(grp, members_[size_t(pg)].size(), p->name, u.name)) continue;
          if (path_via_outside(pg, grp) || path_via_outside(grp, pg)) {
            log_->decline(p->name, u.name, "cycle", "merging the two pointwise groups would create a cycle");
            continue;
          }
          for (NodeId m : members_[size_t(pg)]) take(grp, m);
          members_[size_t(pg)].clear();
        }
      }
      if (grp < 0) take(new_group(GroupKind::Pointwise, -1), NodeId(i));
    }
  }
  // 6. opaque singletons (and every node when not fusing).
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (group_of_[i] >= 0) continue;
    GroupKind k = op_group_kind(nodes[i].op);
    if (k == GroupKind::Reduction && !is_row_reduction(nodes[i])) k = GroupKind::Opaque;
    take(new_group(k, (k == GroupKind::Contraction || k == GroupKind::Reduction) ? NodeId(i) : -1), NodeId(i));
  }

  // Materialize groups: members in node order, inputs, outputs, pattern names.
  std::vector<FusionGroup> groups;
  std::vector<int> index(kinds_.size(), -1);
  for (size_t grp = 0; grp < kinds_.size(); ++grp) {
    if (members_[grp].empty()) continue;
    FusionGroup fg;
    fg.kind = kinds_[grp];
    fg.anchor = anchors_[grp];
    fg.nodes = members_[grp];
    std::sort(fg.nodes.begin(), fg.nodes.end());
    describe_group(
        g_, fg, [&](NodeId n) { return group_of_[size_t(n)] == int(grp); },
        [&](ValueId v) -> const std::vector<NodeId>& { return ctx_.consumers(v); },
        [&](ValueId v) { return ctx_.is_output(v); });
    index[grp] = int(groups.size());
    groups.push_back(std::move(fg));
  }

  // Order groups so that every group comes after the groups it reads from (Kahn's
  // algorithm; ties broken by the first node, which keeps the source order).
  size_t n = groups.size();
  std::vector<std::vector<int>> succ(n);
  std::vector<int> indeg(n, 0);
  for (size_t gi = 0; gi < n; ++gi)
    for (ValueId in : groups[gi].inputs)
      if (const Node* p = ctx_.producer(in)) {
        int pg = index[size_t(group_of_[size_t(id(p))])];
        if (pg != int(gi) && std::find(succ[size_t(pg)].begin(), succ[size_t(pg)].end(), int(gi)) == succ[size_t(pg)].end()) {
          succ[size_t(pg)].push_back(int(gi));
          ++indeg[gi];
        }
      }
  std::vector<FusionGroup> ordered;
  std::vector<char> done(n, 0);
  for (size_t step = 0; step < n; ++step) {
    int best = -1;
    for (size_t gi = 0; gi < n; ++gi)
      if (!done[gi] && indeg[gi] == 0 && (best < 0 || groups[gi].nodes[0] < groups[size_t(best)].nodes[0])) best = int(gi);
    FUSOR_ASSERT(best >= 0, "fusion groups form a cycle");
    done[size_t(best)] = 1;
    for (int s : succ[size_t(best)]) --indeg[size_t(s)];
    ordered.push_back(std::move(groups[size_t(best)]));
  }
  return ordered;
}

}  // namespace

std::string_view group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Pointwise: return "pointwise";
    case GroupKind::Reduction: return "reduction";
    case GroupKind::Contraction: return "contraction";
    case GroupKind::Attention: return "attention";
    case GroupKind::Opaque: return "opaque";
    case GroupKind::View: return "view";
  }
  return "?";
}

GroupKind op_group_kind(OpKind op) {
  if (is_view(op)) return GroupKind::View;
  if (is_contraction(op)) return GroupKind::Contraction;
  if (is_pointwise(op)) return GroupKind::Pointwise;
  switch (op) {
    case OpKind::Softmax:
    case OpKind::LayerNormalization:
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax: return GroupKind::Reduction;
    default: return GroupKind::Opaque;
  }
}

std::vector<FusionGroup> split_attention(const Graph& g, const FusionGroup& attention) {
  FUSOR_ASSERT(attention.kind == GroupKind::Attention, "split_attention takes an attention group");
  // The group in node order (as lower_attention reads it): side-input ops, the QK MatMul,
  // the score ops, the Softmax, the PV MatMul, the epilogue and output transpose.
  const std::vector<NodeId>& n = attention.nodes;
  size_t qi = 0;
  while (g.node(n[qi]).op != OpKind::MatMul) ++qi;
  size_t si = qi + 1;
  while (g.node(n[si]).op != OpKind::Softmax) ++si;
  FUSOR_ASSERT(si + 1 < n.size() && g.node(n[si + 1]).op == OpKind::MatMul, "attention ends in the PV MatMul");
  std::vector<FusionGroup> parts(3);
  parts[0].kind = GroupKind::Contraction;  // the anchor first (lower_contraction), then the score ops
  parts[0].nodes.push_back(n[qi]);
  parts[0].nodes.insert(parts[0].nodes.end(), n.begin(), n.begin() + std::ptrdiff_t(qi));
  parts[0].nodes.insert(parts[0].nodes.end(), n.begin() + std::ptrdiff_t(qi + 1), n.begin() + std::ptrdiff_t(si));
  parts[1].kind = GroupKind::Reduction;
  parts[1].nodes = {n[si]};
  parts[2].kind = GroupKind::Contraction;
  parts[2].nodes.assign(n.begin() + std::ptrdiff_t(si + 1), n.end());
  std::vector<std::vector<NodeId>> consumers(g.values().size());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (ValueId in : g.nodes()[i].inputs)
      if (in != kNoValue) consumers[size_t(in)].push_back(NodeId(i));
  std::vector<char> is_output(g.values().size(), 0);
  for (ValueId o : g.outputs()) is_output[size_t(o)] = 1;
  for (FusionGroup& part : parts) {
    part.anchor = part.nodes[0];
    describe_group(
        g, part, [&](NodeId x) { return std::find(part.nodes.begin(), part.nodes.end(), x) != part.nodes.end(); },
        [&](ValueId v) -> const std::vector<NodeId>& { return consumers[size_t(v)]; },
        [&](ValueId v) { return is_output[size_t(v)] != 0; });
  }
  return parts;
}

std::vector<FusionGroup> group_fusions(const Graph& g, const FusionOptions& options, FusionLog* log) {
  return Grouper(g, options.max_group_ops, log).run(options.group);
}

}  // namespace fusor
