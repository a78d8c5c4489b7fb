// The x86 code of a RowReduction KernelSpec (softmax, layernorm, sum, mean, max over the
// last dim of its row space, with a pointwise prologue and epilogue), emitted with asmjit's
// x86::Compiler. Layer: codegen/asmjit.
#include <cmath>

#include "codegen/asmjit/emit_expr.h"
#include "codegen/asmjit/supports.h"

namespace fusor::asmjit_emit {

// Note [asmjit row reductions]
// The same kernels as the llvm backend's (Note [Row reduction kernels], [Row statistics]
// and [Row scratch] in codegen/llvm/emit_reduction.cpp), pass for pass:
//   softmax    max of x (NaN skipped);  Σ e, e = exp(x - max);  Acc = e * (1/Σ), epilogue
//   layernorm  Σ x;  Σ d and Σ d², d = x - mean0;  Acc = (x - mean) * rstd, epilogue
//   sum/mean   Σ x;  then once per row Acc = Σ (or Σ/cols), epilogue (the per-row store)
//   max        max of x and "any NaN";  then once per row Acc = max (NaN if any), epilogue
// with the same special values and the same scratch row (a stack slot of `cols` floats when
// cols <= 8192: x kept when the prologue costs more than one contiguous load, and
// softmax's e). One task is one row; each pass is a vector_loop over the row's columns
// (Note [Vector steps and tails] in emit_expr.cpp). Sums run in float vector lanes within
// blocks of kSumBlock columns (a lane adds at most kSumBlock / lanes terms: 16 with 16
// lanes, 32 with 8) and add the block totals in double; the statistics are computed in
// double (layernorm's corrected two-pass variance) and rounded to float once. A tail's
// masked-off lanes enter sums as 0 and maxima as -inf. The max is x86's maxps on values
// whose NaNs were replaced by -inf first, so it is exact; only the sums' order differs from
// the llvm kernels (a few ulp).

namespace {

using Kind = RowReductionSpec::Kind;
namespace Inst = x86::Inst;
using x86::VCmpImm;

constexpr int64_t kSumBlock = 256;

bool per_element(Kind k) { return k == Kind::Softmax || k == Kind::LayerNorm; }

// The pointers of one pass: copies of the row's pointers, advanced by its loop.
struct Cursors {
  ExprEnv pro;                     // the prologue's accesses
  ExprEnv epi;                     // the epilogue's accesses (the epilogue pass only)
  AccessPtr scratch;               // the scratch row, when there is one
  std::vector<AccessPtr> moving;   // every pointer the loop advances
};

class RowEmitter {
 public:
  RowEmitter(VecEmitter& emitter, const KernelSpec& spec)
      : e(emitter),
        cc(emitter.cc),
        r(spec.reduction),
        cols(spec.reduction.shape.back()),
        scratch(reduction_uses_scratch(spec)),
        keep_x(reduction_keeps_x(spec)) {}

  void kernel(const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin, const x86::Gp& task_end) {
    const std::vector<int64_t> outer(r.shape.begin(), r.shape.end() - 1);
    const int64_t rows = numel(outer);
    if (rows == 0 || r.epilogue.stores.empty() || (per_element(r.kind) && cols == 0)) return;
    asmjit::Label done = cc.newLabel();
    x86::Gp end = e.gp(), rows_reg = e.gp();
    cc.mov(end, task_end);
    cc.mov(rows_reg, asmjit::Imm(rows));
    e.min_into(end, rows_reg);
    x86::Gp row = e.gp();
    cc.mov(row, task_begin);
    cc.cmp(row, end);
    cc.jge(done);

    std::vector<bool> used(spec.buffers.size(), false);
    for (const StridedAccess& a : r.prologue.accesses) used[size_t(a.buffer)] = true;
    for (const StridedAccess& a : r.epilogue.accesses) used[size_t(a.buffer)] = true;
    const std::vector<x86::Gp> base = load_buffer_bases(e, buffers, used);
    if (scratch) {
      scratch_row = e.gp();
      cc.lea(scratch_row, e.stack(uint32_t(cols * 4)));
    }

    asmjit::Label next_row = cc.newLabel();
    cc.bind(next_row);
    std::vector<x86::Gp> idx = split_index(e, row, outer);
    idx.emplace_back();  // column 0
    pro_row.clear();
    epi_row.clear();
    for (const StridedAccess& a : r.prologue.accesses) pro_row.push_back(access_pointer(e, a, base[size_t(a.buffer)], idx));
    for (const StridedAccess& a : r.epilogue.accesses) epi_row.push_back(access_pointer(e, a, base[size_t(a.buffer)], idx));
    one_row();
    cc.inc(row);
    cc.cmp(row, end);
    cc.jl(next_row);
    cc.bind(done);
  }

 private:
  VecEmitter& e;
  x86::Compiler& cc;
  const RowReductionSpec& r;
  const int64_t cols;
  const bool scratch;  // a scratch row exists
  const bool keep_x;   // the first pass stores x there (else later passes re-read the input)
  x86::Gp scratch_row;
  std::vector<x86::Gp> pro_row, epi_row;

  Cursors start(bool prologue, bool epilogue) {
    Cursors c;
    auto copy = [&](const ExprGraph& g, const std::vector<x86::Gp>& row_ptrs, ExprEnv& env) {
      for (size_t k = 0; k < g.accesses.size(); ++k) {
        x86::Gp p = e.gp();
        cc.mov(p, row_ptrs[k]);
        env.access.push_back(AccessPtr{p, g.accesses[k].strides.back(), g.accesses[k].dtype});
        c.moving.push_back(env.access.back());
      }
      hoist_loads(e, g, env);
    };
    if (prologue) copy(r.prologue, pro_row, c.pro);
    if (epilogue) copy(r.epilogue, epi_row, c.epi);
    if (scratch) {
      c.scratch = AccessPtr{e.gp(), 1, DType::F32};
      cc.mov(c.scratch.ptr, scratch_row);
      c.moving.push_back(c.scratch);
    }
    return c;
  }

  x86::Gp cols_reg() {
    x86::Gp n = e.gp();
    cc.mov(n, asmjit::Imm(cols));
    return n;
  }

  // x at the step: from the scratch row, or the prologue evaluated there.
  x86::Vec x_at(const Cursors& c, const Step& step, bool from_scratch) {
    if (from_scratch) return e.load(x86::ptr(c.scratch.ptr), step);
    return emit_expr(e, r.prologue, c.pro, step).back().v;
  }
  void to_scratch(const Cursors& c, const x86::Vec& v, const Step& step) { e.store(x86::ptr(c.scratch.ptr), v, step); }

  // The max over the row's x, NaNs skipped, in every lane; with `nan`, NaN when any x is.
  x86::Vec max_pass(bool nan) {
    Cursors c = start(true, false);
    x86::Vec m = e.konst(-INFINITY), flags;
    if (nan) flags = e.zero();
    vector_loop(
        e, cols_reg(),
        [&](const Step& step) {
          x86::Vec x = x_at(c, step, false);
          if (keep_x) to_scratch(c, x, step);
          x86::Vec xs = e.select(e.cmp(x, x, VCmpImm::kORD_Q), x, e.konst(-INFINITY));
          xs = e.live_or(step, xs, -INFINITY);
          cc.vmaxps(m, xs, m);  // xs > m ? xs : m (no NaN here)
          if (nan) {
            x86::Vec ones = e.vec();
            cc.vmovups(ones, e.cmem_bits(0xffffffffu));
            x86::Vec f = e.live_or(step, e.select(e.cmp(x, x, VCmpImm::kUNORD_Q), ones, e.zero()), 0.0f);
            cc.emit(e.avx512 ? Inst::kIdVpord : Inst::kIdVpor, flags, flags, f);
          }
        },
        [&] { advance(e, c.moving); });
    x86::Vec mx = e.reduce(Inst::kIdVmaxps, m);
    if (!nan) return mx;
    x86::Vec any = e.reduce(e.avx512 ? Inst::kIdVpord : Inst::kIdVpor, flags);
    return e.select(e.cmp(any, any, VCmpImm::kUNORD_Q), e.konst(NAN), mx);  // all-ones lanes are NaN
  }

  using Terms = std::function<std::vector<x86::Vec>(const Cursors& c, const Step& step)>;

  // Σ over the row of each of `terms` values per column, in double (Note [asmjit row
  // reductions]).
  std::vector<x86::Xmm> blocked_sum(size_t terms, const Terms& values) {
    Cursors c = start(true, false);
    std::vector<x86::Xmm> total(terms);
    for (x86::Xmm& t : total) {
      t = cc.newXmmSd();
      cc.vxorpd(t, t, t);
    }
    x86::Gp b = e.gp(), block_len = e.gp(), block_cap = e.gp();
    cc.xor_(b, b);
    asmjit::Label block = cc.newLabel();
    cc.bind(block);
    cc.mov(block_len, asmjit::Imm(cols));
    cc.sub(block_len, b);
    cc.mov(block_cap, asmjit::Imm(kSumBlock));
    e.min_into(block_len, block_cap);
    std::vector<x86::Vec> acc(terms);
    for (x86::Vec& a : acc) a = e.zero();
    vector_loop(
        e, block_len,
        [&](const Step& step) {
          std::vector<x86::Vec> v = values(c, step);
          for (size_t j = 0; j < terms; ++j) cc.vaddps(acc[j], acc[j], e.live_or(step, v[j], 0.0f));
        },
        [&] { advance(e, c.moving); });
    for (size_t j = 0; j < terms; ++j) {
      x86::Vec s = e.reduce(Inst::kIdVaddps, acc[j]);
      x86::Xmm d = cc.newXmmSd();
      cc.vcvtss2sd(d, d, s.xmm());
      cc.vaddsd(total[j], total[j], d);
    }
    cc.add(b, asmjit::Imm(kSumBlock));
    cc.cmp(b, asmjit::Imm(cols));
    cc.jl(block);
    return total;
  }

  // The per-element epilogue pass: Acc from `acc` at each step, RowStat from the stats.
  void epilogue_pass(bool prologue, const std::function<x86::Vec(const Cursors& c, const Step& step)>& acc,
                     const x86::Vec& stat0, const x86::Vec& stat1) {
    Cursors c = start(prologue, true);
    vector_loop(
        e, cols_reg(),
        [&](const Step& step) {
          ExprEnv env = c.epi;
          env.acc = acc(c, step);
          env.stat[0] = stat0;
          env.stat[1] = stat1;
          emit_stores(e, r.epilogue, env, emit_expr(e, r.epilogue, env, step), step);
        },
        [&] { advance(e, c.moving); });
  }

  // The once-per-row epilogue (sum, mean, max) at column 0.
  void row_epilogue(const x86::Vec& acc) {
    ExprEnv env;
    for (size_t k = 0; k < r.epilogue.accesses.size(); ++k)
      env.access.push_back(AccessPtr{epi_row[k], 0, r.epilogue.accesses[k].dtype});
    env.column0 = true;
    env.acc = acc;
    emit_stores(e, r.epilogue, env, emit_expr(e, r.epilogue, env, Step{}), Step{});
  }

  x86::Mem dconst(double v) {
    x86::Mem m = cc.newConst(asmjit::ConstPoolScope::kLocal, &v, sizeof v);
    m.setSize(8);
    return m;
  }
  // A double rounded to float, in every lane.
  x86::Vec to_float(const x86::Xmm& d) {
    x86::Xmm f = cc.newXmmSs();
    cc.vcvtsd2ss(f, f, d);
    return e.broadcast(f);
  }
  x86::Xmm dnew() { return cc.newXmmSd(); }

  void one_row() {
    const double n = double(cols);
    switch (r.kind) {
      case Kind::Softmax: {
        x86::Vec mx = max_pass(false);
        x86::Xmm sum = blocked_sum(1, [&](const Cursors& c, const Step& step) {
          x86::Vec ex = e.exp(e.sub(x_at(c, step, keep_x), mx));
          if (scratch) to_scratch(c, ex, step);
          return std::vector<x86::Vec>{ex};
        })[0];
        x86::Xmm inv_d = dnew();
        cc.vmovsd(inv_d, dconst(1.0));
        cc.vdivsd(inv_d, inv_d, sum);
        x86::Vec inv = to_float(inv_d);
        epilogue_pass(
            !scratch,
            [&](const Cursors& c, const Step& step) {
              x86::Vec ex = scratch ? x_at(c, step, true) : e.exp(e.sub(x_at(c, step, false), mx));
              return e.mul(ex, inv);
            },
            mx, inv);
        return;
      }
      case Kind::LayerNorm: {
        x86::Xmm sum = blocked_sum(1, [&](const Cursors& c, const Step& step) {
          x86::Vec x = x_at(c, step, false);
          if (keep_x) to_scratch(c, x, step);
          return std::vector<x86::Vec>{x};
        })[0];
        x86::Xmm mean0_d = dnew();
        cc.vdivsd(mean0_d, sum, dconst(n));
        x86::Xmm mean0_f = cc.newXmmSs();
        cc.vcvtsd2ss(mean0_f, mean0_f, mean0_d);
        x86::Vec mean0 = e.broadcast(mean0_f);
        std::vector<x86::Xmm> s = blocked_sum(2, [&](const Cursors& c, const Step& step) {
          x86::Vec d = e.sub(x_at(c, step, keep_x), mean0);
          return std::vector<x86::Vec>{d, e.mul(d, d)};
        });
        // mean = mean0 + Σd/n;  var = max((Σd² - (Σd)²/n) / n, 0);  rstd = 1/sqrt(var + eps)
        x86::Xmm mean = dnew(), t = dnew(), var = dnew(), zero = dnew(), rstd = dnew();
        cc.vcvtss2sd(mean, mean, mean0_f);
        cc.vdivsd(t, s[0], dconst(n));
        cc.vaddsd(mean, mean, t);
        cc.vmulsd(var, s[0], s[0]);
        cc.vdivsd(var, var, dconst(n));
        cc.vsubsd(var, s[1], var);
        cc.vdivsd(var, var, dconst(n));
        cc.vxorpd(zero, zero, zero);
        cc.vmaxsd(var, zero, var);  // 0 > var ? 0 : var; NaN passes
        cc.vaddsd(var, var, dconst(r.epsilon));
        cc.vsqrtsd(var, var, var);
        cc.vmovsd(rstd, dconst(1.0));
        cc.vdivsd(rstd, rstd, var);
        x86::Vec mean_f = to_float(mean), rstd_f = to_float(rstd);
        epilogue_pass(
            !keep_x,
            [&](const Cursors& c, const Step& step) { return e.mul(e.sub(x_at(c, step, keep_x), mean_f), rstd_f); },
            mean_f, rstd_f);
        return;
      }
      case Kind::Sum:
      case Kind::Mean: {
        x86::Xmm sum = blocked_sum(1, [&](const Cursors& c, const Step& step) {
          return std::vector<x86::Vec>{x_at(c, step, false)};
        })[0];
        if (r.kind == Kind::Mean) cc.vdivsd(sum, sum, dconst(n));
        row_epilogue(to_float(sum));
        return;
      }
      case Kind::Max: row_epilogue(max_pass(true)); return;
    }
  }
};

}  // namespace

void emit_reduction(VecEmitter& e, const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin,
                    const x86::Gp& task_end) {
  RowEmitter(e, spec).kernel(spec, buffers, task_begin, task_end);
}

}  // namespace fusor::asmjit_emit
