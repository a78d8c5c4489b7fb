#include "codegen/cpu_rules.h"

#include "codegen/index_math.h"

namespace fusor {

namespace {

// Whether reading x costs more than one contiguous load (Note [Row scratch]).
bool costly_prologue(const RowReductionSpec& r) {
  if (r.prologue.nodes.size() > 1 || r.prologue.nodes[0].op != ScalarOp::Load) return true;
  const int64_t stride = r.prologue.accesses[size_t(r.prologue.nodes[0].load)].strides.back();
  return stride != 0 && stride != 1;
}

}  // namespace

int64_t pointwise_task_elements(const KernelSpec& spec) {
  if (spec.symbolic) return kSymbolicPointwiseTaskElements;
  const int64_t total = numel(spec.pointwise.shape);
  const int64_t tasks = spec.tasks < 1 ? 1 : spec.tasks;
  const int64_t per = (total + tasks - 1) / tasks;
  const int64_t aligned = (per + kPointwiseChunkAlign - 1) / kPointwiseChunkAlign * kPointwiseChunkAlign;
  return aligned < 1 ? 1 : aligned;
}

bool pointwise_streams_stores(const KernelSpec& spec) {
  if (spec.kind != KernelKind::Pointwise || spec.symbolic) return false;
  const ExprGraph& g = spec.pointwise.body;
  if (g.stores.empty()) return false;
  for (const ExprGraph::Store& st : g.stores) {
    const StridedAccess& a = g.accesses[size_t(st.access)];
    if (a.dtype != DType::F32 || a.strides.empty() || a.strides.back() != 1) return false;
  }
  for (const ScalarExpr& n : g.nodes) {
    switch (n.op) {
      case ScalarOp::Div: case ScalarOp::Pow: case ScalarOp::Exp: case ScalarOp::Tanh: case ScalarOp::Erf:
      case ScalarOp::Sigmoid: case ScalarOp::Sqrt: case ScalarOp::GeluErf: case ScalarOp::GeluTanh:
      case ScalarOp::Log: case ScalarOp::Sin: case ScalarOp::Cos:
        return false;  // compute-bound: the detour through L1 would cost it
      default:
        break;
    }
  }
  return numel(spec.pointwise.shape) * int64_t(sizeof(float)) * int64_t(g.stores.size()) >= kStreamingStoreBytes;
}

bool reduction_uses_scratch(const KernelSpec& spec) {
  if (spec.kind != KernelKind::RowReduction || spec.reduction.shape.empty() || spec.reduction.prologue.empty())
    return false;
  const RowReductionSpec& r = spec.reduction;
  if (r.shape.back() > kRowScratchCols || r.shape.back() == 0) return false;
  if (r.kind == RowReductionSpec::Kind::Softmax) return true;
  return r.kind == RowReductionSpec::Kind::LayerNorm && costly_prologue(r);
}

bool reduction_keeps_x(const KernelSpec& spec) { return reduction_uses_scratch(spec) && costly_prologue(spec.reduction); }

}  // namespace fusor
