#include "codegen/expr_check.h"

namespace fusor {

namespace {

bool node_is_bool(const ExprGraph& g, int32_t n) { return g.nodes[size_t(n)].dtype == DType::Bool; }

}  // namespace

int scalar_op_arity(ScalarOp op) {
  switch (op) {
    case ScalarOp::Load:
    case ScalarOp::Const:
    case ScalarOp::Acc:
    case ScalarOp::RowStat: return 0;
    case ScalarOp::Add:
    case ScalarOp::Sub:
    case ScalarOp::Mul:
    case ScalarOp::Div:
    case ScalarOp::Pow:
    case ScalarOp::Max:
    case ScalarOp::Min: return 2;
    case ScalarOp::Where: return 3;
    default: return 1;
  }
}

bool check_expr(const KernelSpec& spec, const ExprGraph& g, size_t rank, const ExprRules& rules, const std::string& what,
                std::vector<int>& reads, std::vector<int>& writes, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = what + reason;
    return false;
  };
  for (const StridedAccess& a : g.accesses) {
    if (a.buffer < 0 || size_t(a.buffer) >= spec.buffers.size()) return no("an access to a buffer out of range");
    if (a.strides.size() != rank) return no("an access whose strides do not match the index space");
    if (a.dtype != spec.buffers[size_t(a.buffer)].dtype) return no("an access whose dtype differs from its buffer's");
    if (a.dtype != DType::F32 && a.dtype != DType::Bool)
      return no("a " + std::string(dtype_name(a.dtype)) + " access (only f32, and bool Where conditions)");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    const std::string at = std::string(scalar_op_name(e.op)) + " node %" + std::to_string(i);
    for (int k = 0; k < scalar_op_arity(e.op); ++k)
      if (e.args[k] < 0 || size_t(e.args[k]) >= i) return no(at + ": an argument that is not an earlier node");
    switch (e.op) {
      case ScalarOp::Acc:
        if (!rules.acc) return no(at + ": not allowed here");
        break;
      case ScalarOp::RowStat:
        if (!rules.row_stat) return no(at + ": not allowed here");
        if (e.value != 0 && e.value != 1) return no(at + ": a statistic other than 0 or 1");
        break;
      case ScalarOp::Load: {
        if (e.load < 0 || size_t(e.load) >= g.accesses.size()) return no(at + ": load of an access out of range");
        const StridedAccess& a = g.accesses[size_t(e.load)];
        if (e.dtype != a.dtype) return no(at + ": loads a different dtype than its access");
        reads[size_t(a.buffer)]++;
        break;
      }
      case ScalarOp::Cast:
        if (node_is_bool(g, e.args[0])) return no(at + ": a cast from bool");
        break;
      default: break;
    }
    if (e.dtype == DType::Bool && e.op != ScalarOp::Load) return no(at + ": a bool result");
    if (e.dtype != DType::F32 && e.dtype != DType::Bool)
      return no(at + ": a " + std::string(dtype_name(e.dtype)) + " result (only f32)");
    // Bool values are only Where conditions (there is no comparison op to make others).
    for (int k = 0; k < scalar_op_arity(e.op); ++k)
      if (node_is_bool(g, e.args[k]) && !(e.op == ScalarOp::Where && k == 0))
        return no(at + ": uses a bool value other than as a Where condition");
  }
  if (!rules.stores && !g.stores.empty()) return no("stores where none are allowed");
  for (const ExprGraph::Store& s : g.stores) {
    if (s.node < 0 || size_t(s.node) >= g.nodes.size()) return no("a store of a node out of range");
    if (s.access < 0 || size_t(s.access) >= g.accesses.size()) return no("a store to an access out of range");
    const StridedAccess& a = g.accesses[size_t(s.access)];
    if (a.dtype != DType::F32 || node_is_bool(g, s.node)) return no("a store that is not f32");
    if (!spec.buffers[size_t(a.buffer)].output) return no("a store to a buffer that is not an output");
    writes[size_t(a.buffer)]++;
  }
  return true;
}

bool check_buffer_use(const std::vector<int>& reads, const std::vector<int>& writes, std::string* why) {
  for (size_t b = 0; b < reads.size(); ++b) {
    const char* wrong = writes[b] && reads[b] ? " is both read and written"
                        : writes[b] > 1       ? " is written through two accesses"
                                              : nullptr;
    if (!wrong) continue;
    if (why) *why = "buffer " + std::to_string(b) + wrong;
    return false;
  }
  return true;
}

}  // namespace fusor
