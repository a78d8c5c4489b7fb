#include "ir/passes/fold_gemm_reshapes.h"

#include <vector>

#include "ir/op_schema.h"
#include "ir/passes/graph_rewriter.h"
#include "ir/passes/pattern.h"

namespace fusor {

namespace {

constexpr const char* kPass = "fold_gemm_reshapes";

struct Match {
  ValueId x = kNoValue;           // the flattening Reshape's input
  const Node* restore = nullptr;  // the Reshape after the Gemm
  std::vector<int64_t> operand;   // the MatMul operand's shape [lead..., K]
};

Match match(const PatternContext& ctx, const Node& gemm) {
  if (gemm.op != OpKind::Gemm || attr_int(gemm, "transA") != 0) return {};
  const Node* flat = ctx.producer_of(gemm.inputs[0], OpKind::Reshape);
  const Node* restore = ctx.sole_consumer(gemm.outputs[0]);
  if (!flat || !restore || restore->op != OpKind::Reshape) return {};
  const Shape& a = ctx.type(gemm.inputs[0]).shape;
  const Shape& y = ctx.type(gemm.outputs[0]).shape;
  const Shape& out = ctx.type(restore->outputs[0]).shape;
  // The restored shape [lead..., N] must flatten to the Gemm's rows: the operand is then
  // flat's input seen as [lead..., K] (itself when it has that shape, else a reshape view).
  if (out.rank() < 3 || a.rank() != 2 || out[-1] != y[1]) return {};
  int64_t rows = 1;
  for (int i = 0; i + 1 < out.rank(); ++i) rows *= out[i];
  if (rows != a[0]) return {};
  if (gemm.inputs.size() > 2 && gemm.inputs[2] != kNoValue) {
    const Shape& c = ctx.type(gemm.inputs[2]).shape;
    if (c.rank() > 2 || (c.rank() == 2 && c[0] != 1)) return {};
  }
  std::vector<int64_t> operand(out.dims().begin(), out.dims().end() - 1);
  operand.push_back(a[1]);
  return {flat->inputs[0], restore, operand};
}

}  // namespace

Graph fold_gemm_reshapes(const Graph& g, const FusionOptions& options, FusionLog* log) {
  if (!options.normalize_exports) return g;
  PatternContext ctx(g);
  std::vector<Match> matches(g.nodes().size());
  std::vector<char> restores(g.nodes().size(), 0);
  bool any = false;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    matches[i] = match(ctx, g.nodes()[i]);
    if (matches[i].restore) {
      restores[size_t(matches[i].restore - g.nodes().data())] = 1;
      any = true;
    }
  }
  if (!any) return g;
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (restores[i]) continue;  // emitted with its Gemm
    const Match& m = matches[i];
    if (!m.restore) {
      rw.copy_node(n);
      continue;
    }
    const std::string& out = g.value(m.restore->outputs[0]).name;
    Graph& ng = rw.graph();
    ValueId b = rw.mapped(n.inputs[1]);
    if (attr_int(n, "transB"))
      b = rw.emit(OpKind::Transpose, {b}, {{"perm", std::vector<int64_t>{1, 0}}}, ng.unique_name(out + "_bt"),
                  ng.unique_name(n.name + "_bt"));
    const double alpha = attr_float(n, "alpha"), beta = attr_float(n, "beta");
    const bool has_c = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
    const bool last_is_matmul = alpha == 1.0 && !has_c;
    ValueId x = rw.mapped(m.x);
    if (ctx.type(m.x).shape.dims() != m.operand) {
      ValueId shape = rw.add_constant(out + "_rows", Tensor::from_doubles(DType::I64, Shape{int64_t(m.operand.size())},
                                                                           std::vector<double>(m.operand.begin(), m.operand.end())));
      x = rw.emit(OpKind::Reshape, {x, shape}, {}, ng.unique_name(out + "_in"), ng.unique_name(n.name + "_in"));
    }
    ValueId y = rw.emit(OpKind::MatMul, {x, b}, {}, last_is_matmul ? out : ng.unique_name(out + "_mm"), n.name);
    const DType t = ctx.type(n.outputs[0]).dtype;
    if (alpha != 1.0) {
      ValueId k = rw.add_constant(out + "_alpha", Tensor::from_doubles(t, Shape{}, {alpha}));
      y = rw.emit(OpKind::Mul, {y, k}, {}, has_c ? ng.unique_name(out + "_scaled") : out, ng.unique_name(n.name + "_alpha"));
    }
    if (has_c) {
      ValueId c = rw.mapped(n.inputs[2]);
      if (beta != 1.0) {
        ValueId k = rw.add_constant(out + "_beta", Tensor::from_doubles(t, Shape{}, {beta}));
        c = rw.emit(OpKind::Mul, {c, k}, {}, ng.unique_name(out + "_c"), ng.unique_name(n.name + "_beta"));
      }
      y = rw.emit(OpKind::Add, {y, c}, {}, out, ng.unique_name(n.name + "_bias"));
    }
    rw.map(m.restore->outputs[0], y);
    log->note(kPass, n.name, "folded the reshapes around it into a MatMul on " + Shape(m.operand).str());
  }
  return eliminate_dead_nodes(rw.finish());
}

}  // namespace fusor
