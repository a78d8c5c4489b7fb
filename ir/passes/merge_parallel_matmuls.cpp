#include "ir/passes/merge_parallel_matmuls.h"

#include <cstring>
#include <map>

#include "ir/op_schema.h"
#include "ir/passes/graph_rewriter.h"
#include "ir/passes/pattern.h"

namespace fusor {

namespace {

constexpr const char* kPass = "merge_parallel_matmuls";

struct Member {
  NodeId matmul;
  NodeId bias_add = -1;  // sole-consumer Add of a constant [N] bias, if any
  ValueId bias = kNoValue;
  int64_t n = 0;
};

// Concatenates 2-D constants [K, N_i] along columns (or 1-D [N_i] end to end).
Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  int64_t k = parts[0]->rank() == 2 ? parts[0]->shape()[0] : 1, total = 0;
  for (const Tensor* p : parts) total += p->shape()[-1];
  Tensor out = Tensor::empty(parts[0]->dtype(), parts[0]->rank() == 2 ? Shape{k, total} : Shape{total});
  size_t es = dtype_size(out.dtype());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < k; ++r) {
    int64_t col = 0;
    for (const Tensor* p : parts) {
      int64_t n = p->shape()[-1];
      std::memcpy(dst + size_t(r * total + col) * es, static_cast<const char*>(p->raw()) + size_t(r * n) * es, size_t(n) * es);
      col += n;
    }
  }
  return out;
}

}  // namespace

Graph merge_parallel_matmuls(const Graph& g, const FusionOptions& options, FusionLog* log,
                             const DeriveConstants& derive) {
  if (!options.merge_parallel_matmuls) return g;
  PatternContext ctx(g);
  // Group candidate MatMuls by (activation, K, dtype) in node order.
  std::map<std::tuple<ValueId, int64_t, int>, std::vector<Member>> sets;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != OpKind::MatMul) continue;
    const Tensor* w = g.constant_data(n.inputs[1]);
    if (!w || w->rank() != 2 || ctx.type(n.inputs[0]).shape.rank() < 2) continue;
    Member m{NodeId(i)};
    m.n = w->shape()[1];
    if (const Node* add = ctx.sole_consumer(n.outputs[0]); add && add->op == OpKind::Add) {
      ValueId b = PatternContext::other_operand(*add, n.outputs[0]);
      const Tensor* bt = b == kNoValue ? nullptr : g.constant_data(b);
      if (bt && bt->shape() == Shape{m.n} && bt->dtype() == w->dtype()) {
        m.bias_add = NodeId(add - g.nodes().data());
        m.bias = b;
      }
    }
    sets[{n.inputs[0], w->shape()[0], int(w->dtype())}].push_back(m);
  }

  // Rewrite plan: the first member's position emits the merged ops; the others vanish.
  std::vector<std::vector<Member>*> merged;
  std::vector<int> owner(g.nodes().size(), -1);
  for (auto& [key, members] : sets) {
    if (members.size() < 2) continue;
    bool with_bias = true;
    for (const Member& m : members) with_bias &= m.bias_add >= 0;
    for (Member& m : members) {
      if (!with_bias) m.bias_add = -1;  // biases merge all together or not at all
      owner[size_t(m.matmul)] = int(merged.size());
      if (m.bias_add >= 0) owner[size_t(m.bias_add)] = int(merged.size());
    }
    merged.push_back(&members);
  }
  if (merged.empty()) return g;

  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    int o = owner[i];
    if (o < 0) {
      rw.copy_node(g.nodes()[i]);
      continue;
    }
    const std::vector<Member>& members = *merged[size_t(o)];
    if (NodeId(i) != members[0].matmul) continue;
    bool with_bias = members[0].bias_add >= 0;
    std::vector<const Tensor*> ws, bs;
    std::string names;
    for (const Member& m : members) {
      ws.push_back(g.constant_data(g.node(m.matmul).inputs[1]));
      if (with_bias) bs.push_back(g.constant_data(m.bias));
      names += (names.empty() ? "" : "+") + g.node(m.matmul).name;
    }
    const Node& first = g.node(members[0].matmul);
    auto concat = [&](const std::vector<const Tensor*>& parts) {
      ConstantDerivation d{"merge_parallel_matmuls.concat_columns", {}};
      for (const Tensor* p : parts) d.sources.push_back(*p);
      return derive_constants(derive, d, [&] { return std::vector<Tensor>{concat_columns(parts)}; }).at(0);
    };
    ValueId w = rw.add_constant(first.name + ".w_merged", concat(ws));
    std::string base = rw.graph().unique_name(first.name + ".merged");
    ValueId y = rw.emit(OpKind::MatMul, {rw.mapped(first.inputs[0]), w}, {}, base, base);
    if (with_bias) {
      ValueId b = rw.add_constant(first.name + ".b_merged", concat(bs));
      std::string bn = rw.graph().unique_name(base + ".bias");
      y = rw.emit(OpKind::Add, {y, b}, {}, bn, bn);
    }
    ValueId axes = rw.add_constant(base + ".axis", Tensor::from_doubles(DType::I64, Shape{1}, {-1}));
    int64_t col = 0;
    for (const Member& m : members) {
      // Each piece keeps the name of the value it replaces (the bias Add's output if merged).
      ValueId old_out = with_bias ? g.node(m.bias_add).outputs[0] : g.node(m.matmul).outputs[0];
      ValueId s = rw.add_constant(g.value(old_out).name + ".start", Tensor::from_doubles(DType::I64, Shape{1}, {double(col)}));
      ValueId e = rw.add_constant(g.value(old_out).name + ".end", Tensor::from_doubles(DType::I64, Shape{1}, {double(col + m.n)}));
      const Node& src = with_bias ? g.node(m.bias_add) : g.node(m.matmul);
      ValueId piece = rw.emit(OpKind::Slice, {y, s, e, axes}, {}, g.value(old_out).name, src.name);
      rw.map(old_out, piece);
      col += m.n;
    }
    log->note(kPass, first.name,
              "merged " + std::to_string(members.size()) + " MatMuls (" + names + ") into one of width " +
                  std::to_string(col) + (with_bias ? " with their biases" : ""));
  }
  return rw.finish();
}

}  // namespace fusor
