#include "ir/passes/sink_squeezes.h"

#include <algorithm>
#include <vector>

#include "ir/op_schema.h"
#include "ir/passes/graph_rewriter.h"
#include "ir/passes/pattern.h"

namespace fusor {

// Note [Sinking squeezes]
// ~~~~~~~~~~~~~~~~~~~~~~~
// y = Squeeze(c, axes) with c a contraction's output, then z = P(y, b...) pointwise: P is
// computed on c itself (shape U, the unsqueezed one) and z = Squeeze(P', axes). Each operand
// b of P is lifted to rank U: aligned at the right as broadcasting aligns it, with a 1
// inserted at every squeezed axis it spans (a per-channel [C, 1] beside [N, C, L] becomes
// [C, 1, 1] beside [N, C, 1, L]); a constant is lifted by its data, anything else through a
// Reshape (a view). BatchNormalization keeps its per-channel operands when no squeezed axis
// is 0 or 1. The walk goes in node order, so z, itself a squeeze of P', sinks through its
// own pointwise consumer next: the whole chain ends up on the contraction's shape, with one
// Squeeze after it (a view, no kernel). The squeezes left without consumers are dropped.
// Each lifted op computes the same elements in the same order: results are bit-identical.
//
// Where it matters: a 1-D convolution (Whisper's and wav2vec's front ends, temporal
// convolutions) loads as the 2-D one over [N, C, 1, L] followed by a Squeeze (Note
// [Compositions] in onnx/compositions.cpp). Without the sink, its bias add, BN and
// activation run as separate kernels behind the Squeeze; with it, BN folds into the weights
// (fold_batchnorm) and the rest is the convolution's epilogue.

namespace {

constexpr const char* kPass = "sink_squeezes";

// The squeezed axes of Squeeze node n (normalized against its input's rank), or empty when
// they are not known constants.
std::vector<int> squeezed_axes(const PatternContext& ctx, const Node& n) {
  const int rank = ctx.type(n.inputs[0]).shape.rank();
  std::vector<int64_t> raw;
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) {
    const Tensor* t = ctx.graph().constant_data(n.inputs[1]);
    if (!t) return {};
    for (int64_t i = 0; i < t->numel(); ++i) raw.push_back(int64_t(t->at(i)));
  } else if (has_attr(n, "axes")) {
    raw = attr_ints(n, "axes");
  }
  std::vector<int> axes;
  if (raw.empty()) {  // every dim of size 1
    const Shape& s = ctx.type(n.inputs[0]).shape;
    for (int i = 0; i < rank; ++i)
      if (s[i] == 1) axes.push_back(i);
    return axes;
  }
  for (int64_t a : raw) axes.push_back(int(a < 0 ? a + rank : a));
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool elementwise(OpKind op) { return op_family(op) == OpFamily::Pointwise && op != OpKind::BatchNormalization; }

// A value that stands for Squeeze(full, axes) of the new graph.
struct Squeezed {
  ValueId full = kNoValue;  // new graph, rank U
  std::vector<int> axes;    // squeezed axes of U, sorted
};

}  // namespace

Graph sink_squeezes(const Graph& g, const FusionOptions& options, FusionLog* log) {
  if (!options.normalize_exports) return g;
  PatternContext ctx(g);
  // Only a squeeze of a contraction's output starts a chain.
  bool any = false;
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::Squeeze) continue;
    const Node* p = ctx.producer(n.inputs[0]);
    any |= p && op_family(p->op) == OpFamily::Contraction;
  }
  if (!any) return g;

  GraphRewriter rw(g);
  Graph& ng = rw.graph();
  std::vector<Squeezed> sq(g.values().size());
  bool changed = false;

  for (const Node& n : g.nodes()) {
    if (n.op == OpKind::Squeeze) {
      rw.copy_node(n);
      const Node* p = ctx.producer(n.inputs[0]);
      std::vector<int> axes = squeezed_axes(ctx, n);
      if (p && op_family(p->op) == OpFamily::Contraction && !axes.empty())
        sq[size_t(n.outputs[0])] = {rw.mapped(n.inputs[0]), std::move(axes)};
      continue;
    }
    const bool bn = n.op == OpKind::BatchNormalization;
    if ((!elementwise(n.op) && !bn) || n.outputs.size() != 1) {
      rw.copy_node(n);
      continue;
    }
    const Shape& out = ctx.type(n.outputs[0]).shape;
    // The squeeze it sinks: an operand squeezed to exactly the op's output shape.
    const Squeezed* lead = nullptr;
    for (size_t i = 0; i < n.inputs.size() && !lead; ++i) {
      ValueId v = n.inputs[i];
      if (v != kNoValue && sq[size_t(v)].full != kNoValue && ctx.type(v).shape == out && (!bn || i == 0)) lead = &sq[size_t(v)];
    }
    if (!lead || (bn && lead->axes.front() < 2)) {
      rw.copy_node(n);
      continue;
    }
    const std::vector<int>& axes = lead->axes;
    const int R = out.rank(), U = R + int(axes.size());
    // Squeezed dim j is full dim map[j].
    std::vector<int> map;
    for (int u = 0; u < U; ++u)
      if (!std::binary_search(axes.begin(), axes.end(), u)) map.push_back(u);
    std::vector<ValueId> lifted;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueId v = n.inputs[i];
      if (v == kNoValue) {
        lifted.push_back(kNoValue);
        continue;
      }
      const Squeezed& s = sq[size_t(v)];
      if (s.full != kNoValue && s.axes == axes && ctx.type(v).shape == out) {
        lifted.push_back(s.full);
        continue;
      }
      const Shape& bs = ctx.type(v).shape;
      if ((bn && i > 0) || bs.rank() == 0) {
        lifted.push_back(rw.mapped(v));
        continue;
      }
      // b spans squeezed dims [R - r, R): full dims [map[R - r], U), 1 at the squeezed ones.
      const int r = bs.rank();
      if (r > R) {
        lifted.clear();
        break;
      }
      std::vector<int64_t> dims;
      int k = 0;
      for (int u = map[size_t(R - r)]; u < U; ++u)
        dims.push_back(std::binary_search(axes.begin(), axes.end(), u) ? 1 : bs[k++]);
      if (int(dims.size()) == r) {
        lifted.push_back(rw.mapped(v));
        continue;
      }
      const std::string name = g.value(v).name + "_lifted";
      if (const Tensor* c = g.constant_data(v)) {
        lifted.push_back(rw.add_constant(name, c->reshaped(Shape(dims))));
      } else {
        ValueId shape = rw.add_constant(name + "_shape",
                                        Tensor::from_doubles(DType::I64, Shape{int64_t(dims.size())},
                                                             std::vector<double>(dims.begin(), dims.end())));
        lifted.push_back(rw.emit(OpKind::Reshape, {rw.mapped(v), shape}, {}, ng.unique_name(name),
                                 ng.unique_name(n.name + "_lift")));
      }
    }
    if (lifted.empty()) {  // an operand of higher rank than the output: cannot happen for a broadcast
      rw.copy_node(n);
      continue;
    }
    const std::string& out_name = g.value(n.outputs[0]).name;
    ValueId full = rw.emit(n.op, lifted, n.attrs, ng.unique_name(out_name + "_full"), n.name);
    ValueId axes_v = rw.add_constant(out_name + "_axes",
                                     Tensor::from_doubles(DType::I64, Shape{int64_t(axes.size())},
                                                          std::vector<double>(axes.begin(), axes.end())));
    ValueId z = rw.emit(OpKind::Squeeze, {full, axes_v}, {}, out_name, ng.unique_name(n.name + "_squeeze"));
    rw.map(n.outputs[0], z);
    sq[size_t(n.outputs[0])] = {full, axes};
    log->note(kPass, n.name, "computed before the Squeeze, on the contraction's shape");
    changed = true;
  }
  if (!changed) return g;
  return eliminate_dead_nodes(rw.finish());
}

}  // namespace fusor
