// The x86 code of a Pointwise KernelSpec, emitted with asmjit's x86::Compiler.
// Layer: codegen/asmjit.
#include "codegen/asmjit/emit_expr.h"
#include "codegen/asmjit/supports.h"

namespace fusor::asmjit_emit {

// Note [asmjit pointwise kernels]
// Tasks split the index space [outer..., inner], walked in row-major order, into flat chunks
// of pointwise_task_elements() elements, exactly as the llvm backend does (Note [Pointwise
// tasks] in codegen/llvm/emit_pointwise.cpp). A task's range is cut into row segments; each
// segment gets its accesses' pointers from its row's outer indices (division by the
// compile-time dims) and its first column, loads the accesses with inner stride 0 once
// (hoist_loads), and runs vector_loop over its columns: full vector steps, then one masked
// tail step (Note [Vector steps and tails] in emit_expr.cpp). Every step evaluates the whole
// ExprGraph and stores its outputs; pointers move one vector per step.

void emit_pointwise(VecEmitter& e, const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin,
                    const x86::Gp& task_end) {
  x86::Compiler& cc = e.cc;
  const PointwiseSpec& p = spec.pointwise;
  const ExprGraph& g = p.body;
  const int64_t total = numel(p.shape), inner = p.shape.back(), chunk = pointwise_task_elements(spec);
  const size_t rank = p.shape.size();
  if (total == 0 || g.stores.empty()) return;

  asmjit::Label done = cc.newLabel();
  x86::Gp total_reg = e.gp();
  cc.mov(total_reg, asmjit::Imm(total));
  auto clip = [&](const x86::Gp& task) {
    x86::Gp r = e.gp();
    e.mul_imm(r, task, chunk);
    e.min_into(r, total_reg);
    return r;
  };
  x86::Gp begin = clip(task_begin), end = clip(task_end);
  cc.cmp(begin, end);
  cc.jge(done);

  std::vector<bool> used(spec.buffers.size(), false);
  for (const StridedAccess& a : g.accesses) used[size_t(a.buffer)] = true;
  const std::vector<x86::Gp> base = load_buffer_bases(e, buffers, used);

  x86::Gp pos = e.gp();
  cc.mov(pos, begin);
  asmjit::Label segment = cc.newLabel();
  cc.bind(segment);
  x86::Gp row, col = e.gp();
  if (rank > 1) {
    row = e.gp();
    x86::Gp divisor = e.gp();
    cc.mov(row, pos);
    cc.xor_(col, col);
    cc.mov(divisor, asmjit::Imm(inner));
    cc.div(col, row, divisor);  // row = pos / inner, col = pos % inner
  } else {
    cc.mov(col, pos);
  }
  // len = min(inner - col, end - pos)
  x86::Gp len = e.gp(), avail = e.gp();
  cc.mov(len, asmjit::Imm(inner));
  cc.sub(len, col);
  cc.mov(avail, end);
  cc.sub(avail, pos);
  e.min_into(len, avail);

  std::vector<x86::Gp> idx;
  if (rank > 1) idx = split_index(e, row, std::vector<int64_t>(p.shape.begin(), p.shape.end() - 1));
  idx.push_back(col);
  ExprEnv env;
  for (const StridedAccess& a : g.accesses)
    env.access.push_back(AccessPtr{access_pointer(e, a, base[size_t(a.buffer)], idx), a.strides.back(), a.dtype});
  hoist_loads(e, g, env);
  vector_loop(
      e, len,
      [&](const Step& step) { emit_stores(e, g, env, emit_expr(e, g, env, step), step); },
      [&] { advance(e, env.access); });

  cc.add(pos, len);
  cc.cmp(pos, end);
  cc.jl(segment);
  cc.bind(done);
}

}  // namespace fusor::asmjit_emit
