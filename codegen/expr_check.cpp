#include "codegen/expr_check.h"

namespace fusor {

namespace {

bool node_is_bool(const ExprGraph& g, int32_t n) { return g.nodes[size_t(n)].dtype == DType::Bool; }

}  // namespace

int scalar_op_arity(ScalarOp op) {
  switch (op) {
#define FUSOR_SCALAR_OP(kind, name, arity) \
  case ScalarOp::kind: return arity;
#include "codegen/scalar_ops.def"
#undef FUSOR_SCALAR_OP
  }
  return 0;
}

// Note [Expression types]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A node's value is f32 or bool. Bool comes from a bool Load, a comparison (Eq, Lt, Le of
// two f32), logic (And, Or, Not of bools) or a Cast of an f32 to bool; it goes into logic,
// a Where condition (an f32 condition means != 0), a Cast to f32 (1 or 0), or a bool store.
// Every other op takes and gives f32. Contraction, attention and reduction emitters store
// f32 only, and read the last node of a graph as an f32 (a reduction's prologue value);
// ExprRules::bool_stores lifts both limits where the emitter stores bool bytes (pointwise).
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
      return no("a " + std::string(dtype_name(a.dtype)) + " access (only f32 and bool)");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    const std::string at = std::string(scalar_op_name(e.op)) + " node %" + std::to_string(i);
    for (int k = 0; k < scalar_op_arity(e.op); ++k)
      if (e.args[k] < 0 || size_t(e.args[k]) >= i) return no(at + ": an argument that is not an earlier node");
    if (e.dtype != DType::F32 && e.dtype != DType::Bool)
      return no(at + ": a " + std::string(dtype_name(e.dtype)) + " result (only f32 and bool)");
    bool want_bool = false;       // the result type the op gives
    int bool_args = 0;            // bit k: argument k must be bool (else f32)
    int free_args = 0;            // bit k: argument k may be either
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
        want_bool = a.dtype == DType::Bool;
        reads[size_t(a.buffer)]++;
        break;
      }
      case ScalarOp::Eq:
      case ScalarOp::Lt:
      case ScalarOp::Le: want_bool = true; break;
      case ScalarOp::And:
      case ScalarOp::Or: want_bool = true, bool_args = 3; break;
      case ScalarOp::Not: want_bool = true, bool_args = 1; break;
      case ScalarOp::Cast: want_bool = e.dtype == DType::Bool, free_args = 1; break;
      case ScalarOp::Where: free_args = 1; break;
      default: break;
    }
    if ((e.dtype == DType::Bool) != want_bool)
      return no(at + (want_bool ? ": a bool result typed " + std::string(dtype_name(e.dtype)) : ": a bool result"));
    for (int k = 0; k < scalar_op_arity(e.op); ++k) {
      if (free_args & (1 << k)) continue;
      const bool arg_bool = node_is_bool(g, e.args[k]), need = (bool_args >> k) & 1;
      if (arg_bool != need)
        return no(at + (need ? ": an f32 argument where a bool is needed" : ": uses a bool value as a number"));
    }
  }
  if (!rules.stores && !g.stores.empty()) return no("stores where none are allowed");
  if (!rules.bool_stores && !g.nodes.empty() && g.nodes.back().dtype == DType::Bool) return no("a bool last value");
  for (const ExprGraph::Store& s : g.stores) {
    if (s.node < 0 || size_t(s.node) >= g.nodes.size()) return no("a store of a node out of range");
    if (s.access < 0 || size_t(s.access) >= g.accesses.size()) return no("a store to an access out of range");
    const StridedAccess& a = g.accesses[size_t(s.access)];
    if (a.dtype != g.nodes[size_t(s.node)].dtype) return no("a store whose value and access dtypes differ");
    if (a.dtype == DType::Bool && !rules.bool_stores) return no("a bool store (only f32 here)");
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
