#include "codegen/llvm/emit_reduction.h"

#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <vector>

#include "codegen/cpu_rules.h"
#include "codegen/index_math.h"
#include "codegen/llvm/emit_expr.h"
#include "ir/error.h"

namespace fusor {

// Note [Row reduction kernels]
// One task is one row of `cols` elements (the last dim of RowReductionSpec::shape); the
// kernel loops over rows [task_begin, min(task_end, rows)), computes each row's base
// pointers (leading indices times strides, as pointwise segments do) and runs a few passes
// over the row's columns. Each pass is an internal alwaysinline function with one noalias
// pointer per access (Note [Pointwise inner loop]: the same reasoning, the same checks) and
// one simple counted loop that LLVM's loop vectorizer takes:
//   softmax    max of x;  Σ e, e = exp(x - max);  per element Acc = e * (1/Σ), epilogue
//   layernorm  Σ x;  Σ d and Σ d², d = x - mean0;  per element Acc = (x - mean) * rstd
//   sum/mean   Σ x;  then once per row Acc = Σ (or Σ/cols), epilogue (the per-row store)
//   max        max of x and "any NaN";  then once per row Acc = max (NaN if any), epilogue
// x is the prologue's value (its last node) at the column. The statistics match
// codegen/static/normalization.cpp and reduce.cpp, which define the special values:
// softmax's max skips NaN (a NaN then reaches every output through exp); a row of all -inf
// has max -inf, so x - max is NaN and the whole row is NaN, as on the static kernel; a
// -inf among finite values gives exactly 0; huge finite values are safe (x - max <= 0).
// ReduceMax is NaN when the row holds a NaN, -inf for an empty row.
//
// Note [Row statistics]
// Sums run in float vector lanes within blocks of kSumBlock columns (the loop vectorizer's
// VF x interleave lanes, fadd marked `reassoc` so it may reorder), block totals added in
// double in column order: each float partial sum adds at most kSumBlock / lanes terms
// (<= 32 with 8 lanes), so the relative error of a sum of same-sign terms is below
// ~(32 + log2(lanes)) * 2^-24 worst case, a few ulp in practice, and the result depends
// only on the shape (not on the thread split). The max is `x > m ? x : m` marked nnan/nsz,
// which the vectorizer turns into vmaxps; that is honest because NaNs are replaced by -inf
// before (a separate or-reduction remembers them for ReduceMax); -0 and +0 compare equal,
// so either may come out, which no result can tell apart (x - max, exp) except ReduceMax's
// sign of a zero. LayerNorm is two-pass with the corrected second pass (Chan, Golub and
// LeVeque): mean0 = Σx / cols in float, then with d = x - mean0:
//   mean = mean0 + Σd / cols,  var = (Σd² - (Σd)² / cols) / cols  (biased, clamped at 0),
// in double, rstd = 1 / sqrt(var + eps). The correction removes mean0's rounding: a
// constant row gives mean exactly the constant and var 0, so with eps = 1e-12 its output is
// exactly 0 (a one-ulp error in the mean would be amplified 1e6 times).
//
// Note [Row scratch]
// When cols <= kRowScratchCols (32 KiB of floats: the row stays in L1) and a pass would
// otherwise recompute something, the kernel keeps a stack scratch row (one alloca per
// kernel call, reused for its rows). When the prologue costs more than one contiguous load
// (a scale, a mask, a residual add, a strided gather), the first pass stores each x there and
// later passes read it; softmax always uses the row for e = exp(x - max), written by its
// second pass, so the epilogue needs no second exp. A lone contiguous load is not copied
// (later passes re-read the input: the copy would be a memcpy for nothing). Rows longer
// than kRowScratchCols use no stack: every pass re-evaluates the prologue from the inputs
// (re-read from L2/L3) and softmax computes exp twice. Both designs compute the same floats.

namespace {

using namespace llvm_ir;
using Kind = RowReductionSpec::Kind;

constexpr int64_t kSumBlock = 256;

bool per_element(Kind k) { return k == Kind::Softmax || k == Kind::LayerNorm; }

// A double as an LLVM IR literal (exact).
std::string lit_double(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, std::bit_cast<uint64_t>(d));
  return buf;
}

bool check(const KernelSpec& spec, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind != KernelKind::RowReduction) return no("not a row reduction kernel");
  const RowReductionSpec& r = spec.reduction;
  if (r.shape.empty()) return no("an empty row space (rank 0)");
  for (int64_t d : r.shape)
    if (d < 0) return no("a negative dim in the row space");
  if (!spec.symbolic && spec.tasks < 1) return no("tasks < 1");
  if (spec.symbolic && r.shape.size() < 2) return no("a symbolic row space of rank < 2 (its extent is the rows)");
  if (r.prologue.empty()) return no("a prologue without a value");
  if (r.prologue.nodes.back().dtype != DType::F32) return no("a prologue whose value is not f32");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  const size_t rank = r.shape.size();
  if (!check_expr(spec, r.prologue, rank, ExprRules{false, false, false}, "prologue: ", reads, writes, why)) return false;
  // RowStat is defined per element of softmax / layernorm only (kernel_spec.h).
  const ExprRules epi{true, per_element(r.kind), true};
  if (!check_expr(spec, r.epilogue, rank, epi, "epilogue: ", reads, writes, why)) return false;
  return check_buffer_use(reads, writes, why);
}

// One kernel being emitted: the spec, its symbol and the shared signature of the passes.
struct Emitter {
  Emitter(const KernelSpec& s, std::string sym)
      : spec(s),
        r(s.reduction),
        symbol(std::move(sym)),
        scratch(reduction_uses_scratch(s)),
        keep_x(reduction_keeps_x(s)) {}

  const KernelSpec& spec;
  const RowReductionSpec& r;
  std::string symbol;
  bool scratch;  // a scratch row exists
  bool keep_x;   // the first pass stores x there (else later passes re-read the input)
  std::ostringstream passes;  // the pass functions

  // The parameters of every pass function (Note [Row reduction kernels]).
  std::string params() const {
    std::string s;
    for (size_t k = 0; k < r.prologue.accesses.size(); ++k) s += "ptr noalias nocapture %p" + std::to_string(k) + ", ";
    for (size_t k = 0; k < r.epilogue.accesses.size(); ++k) s += "ptr noalias nocapture %e" + std::to_string(k) + ", ";
    if (scratch) s += "ptr noalias nocapture %s, ";
    return s + "float %stat0, float %stat1, i64 %begin, i64 %end";
  }

  // x at column %i: from the scratch row, or the prologue evaluated there.
  std::string x_at(IrText& pre, IrText& loop, bool from_scratch) const {
    if (from_scratch) return loop.op("load float, ptr " + scratch_ptr(loop) + ", align 4");
    ExprEnv env;
    for (size_t k = 0; k < r.prologue.accesses.size(); ++k) env.access_ptr.push_back("%p" + std::to_string(k));
    return emit_expr(r.prologue, env, pre, loop).back();
  }
  std::string scratch_ptr(IrText& loop) const { return loop.op("getelementptr inbounds float, ptr %s, i64 %i"); }
  void to_scratch(IrText& loop, const std::string& v) const {
    loop.line("store float " + v + ", ptr " + scratch_ptr(loop) + ", align 4");
  }

  // A loop-carried value of a pass: its IR type and its value before the first column.
  struct Carried {
    std::string type, init;
  };
  using Body = std::function<std::vector<std::string>(IrText& pre, IrText& loop, const std::vector<std::string>& carried)>;

  // Defines `@<symbol>.<name>`: a loop over columns [%begin, %end) running `body`, which
  // gets the carried values' phis and returns their next values; returns them as a struct.
  void pass(const std::string& name, const std::vector<Carried>& carried, const Body& body) {
    IrText pre("h"), loop("v");
    std::vector<std::string> phi;
    for (size_t j = 0; j < carried.size(); ++j) phi.push_back("%c" + std::to_string(j));
    std::vector<std::string> next = body(pre, loop, phi);
    std::string ret = "void";
    if (!carried.empty()) {
      ret = "{ ";
      for (size_t j = 0; j < carried.size(); ++j) ret += (j ? ", " : "") + carried[j].type;
      ret += " }";
    }
    std::ostringstream& os = passes;
    os << "define internal " << ret << " @" << symbol << "." << name << "(" << params() << ") #1 {\nentry:\n"
       << "  %empty = icmp sge i64 %begin, %end\n  br i1 %empty, label %exit, label %pre\npre:\n"
       << pre.text() << "  br label %loop\nloop:\n  %i = phi i64 [ %begin, %pre ], [ %i.next, %loop ]\n";
    for (size_t j = 0; j < carried.size(); ++j)
      os << "  " << phi[j] << " = phi " << carried[j].type << " [ " << carried[j].init << ", %pre ], [ " << next[j]
         << ", %loop ]\n";
    os << loop.text() << "  %i.next = add nuw nsw i64 %i, 1\n  %done = icmp eq i64 %i.next, %end\n"
       << "  br i1 %done, label %exit, label %loop\nexit:\n";
    if (carried.empty()) {
      os << "  ret void\n}\n\n";
      return;
    }
    for (size_t j = 0; j < carried.size(); ++j)
      os << "  %out" << j << " = phi " << carried[j].type << " [ " << carried[j].init << ", %entry ], [ " << next[j]
         << ", %loop ]\n";
    std::string agg = "poison";
    for (size_t j = 0; j < carried.size(); ++j) {
      os << "  %agg" << j << " = insertvalue " << ret << " " << agg << ", " << carried[j].type << " %out" << j << ", " << j
         << "\n";
      agg = "%agg" + std::to_string(j);
    }
    os << "  ret " << ret << " " << agg << "\n}\n\n";
  }

  // The max pass: m = max over x skipping NaN (Note [Row statistics]); with `nan`, also
  // whether any x is NaN. Softmax with a scratch row stores x.
  void max_pass(bool nan) {
    std::vector<Carried> carried = {{"float", lit(-INFINITY)}};
    if (nan) carried.push_back({"i1", "false"});
    pass("max", carried, [&](IrText& pre, IrText& loop, const std::vector<std::string>& c) {
      std::string x = x_at(pre, loop, false);
      if (keep_x) to_scratch(loop, x);
      std::string ordered = loop.fcmp("ord", x, x);
      std::string xs = loop.select(ordered, x, lit(-INFINITY));
      std::string gt = loop.op("fcmp nnan nsz ogt float " + xs + ", " + c[0]);
      std::vector<std::string> next = {loop.op("select nnan nsz i1 " + gt + ", float " + xs + ", float " + c[0])};
      if (nan) next.push_back(loop.op("or i1 " + c[1] + ", " + loop.op("xor i1 " + ordered + ", true")));
      return next;
    });
  }

  // A float sum pass over `terms` values per column (reassociable: Note [Row statistics]).
  void sum_pass(const std::string& name, size_t terms,
                const std::function<std::vector<std::string>(IrText& pre, IrText& loop)>& values) {
    pass(name, std::vector<Carried>(terms, Carried{"float", lit(0.0f)}),
         [&](IrText& pre, IrText& loop, const std::vector<std::string>& c) {
           std::vector<std::string> v = values(pre, loop), next;
           for (size_t j = 0; j < terms; ++j) next.push_back(loop.op("fadd reassoc float " + c[j] + ", " + v[j]));
           return next;
         });
  }

  // The per-element epilogue pass: Acc from `acc`, RowStat from the stats.
  void epilogue_pass(const std::function<std::string(IrText& pre, IrText& loop)>& acc) {
    pass("epilogue", {}, [&](IrText& pre, IrText& loop, const std::vector<std::string>&) {
      ExprEnv env;
      for (size_t k = 0; k < r.epilogue.accesses.size(); ++k) env.access_ptr.push_back("%e" + std::to_string(k));
      env.acc = acc(pre, loop);
      env.stat[0] = "%stat0";
      env.stat[1] = "%stat1";
      emit_stores(r.epilogue, env, emit_expr(r.epilogue, env, pre, loop), loop);
      return std::vector<std::string>{};
    });
  }

  void define_passes() {
    switch (r.kind) {
      case Kind::Softmax:
        max_pass(false);
        sum_pass("sumexp", 1, [&](IrText& pre, IrText& loop) {
          std::string e = exp_f32(loop, loop.fsub(x_at(pre, loop, keep_x), "%stat0"));
          if (scratch) to_scratch(loop, e);
          return std::vector<std::string>{e};
        });
        epilogue_pass([&](IrText& pre, IrText& loop) {
          std::string e = scratch ? x_at(pre, loop, true) : exp_f32(loop, loop.fsub(x_at(pre, loop, false), "%stat0"));
          return loop.fmul(e, "%stat1");
        });
        break;
      case Kind::LayerNorm:
        sum_pass("sum", 1, [&](IrText& pre, IrText& loop) {
          std::string x = x_at(pre, loop, false);
          if (keep_x) to_scratch(loop, x);
          return std::vector<std::string>{x};
        });
        sum_pass("var", 2, [&](IrText& pre, IrText& loop) {
          std::string d = loop.fsub(x_at(pre, loop, keep_x), "%stat0");
          return std::vector<std::string>{d, loop.fmul(d, d)};
        });
        epilogue_pass([&](IrText& pre, IrText& loop) {
          return loop.fmul(loop.fsub(x_at(pre, loop, keep_x), "%stat0"), "%stat1");
        });
        break;
      case Kind::Sum:
      case Kind::Mean:
        sum_pass("sum", 1, [&](IrText& pre, IrText& loop) { return std::vector<std::string>{x_at(pre, loop, false)}; });
        break;
      case Kind::Max: max_pass(true); break;
    }
  }

  // ---- The kernel: the row loop calling the passes ----------------------------------------

  IrText w{"w"};
  std::string label = "entry";  // the block being written (for phis)
  std::vector<std::string> row_args;  // pointer arguments of every pass call, per row
  int blocks = 0;

  std::string call(const std::string& name, const std::string& ret, const std::string& stat0, const std::string& stat1,
                   const std::string& begin, const std::string& end) {
    std::string args;
    for (const std::string& a : row_args) args += "ptr " + a + ", ";
    args += "float " + stat0 + ", float " + stat1 + ", i64 " + begin + ", i64 " + end;
    std::string c = "call " + ret + " @" + symbol + "." + name + "(" + args + ")";
    if (ret == "void") {
      w.line(c);
      return "";
    }
    return w.op(c);
  }

  // Runs the sum pass `name` (with `terms` float results) over blocks of kSumBlock columns;
  // returns the double totals (Note [Row statistics]).
  std::vector<std::string> blocked_sum(const std::string& name, size_t terms, const std::string& stat0) {
    const std::string id = std::to_string(blocks++), cols = std::to_string(r.shape.back());
    const std::string blk = "blk" + id, b = "%b" + id;
    std::string ret = "{ ";
    for (size_t j = 0; j < terms; ++j) ret += (j ? ", float" : "float");
    ret += " }";
    w.line("br label %" + blk);
    w.label(blk);
    w.line(b + " = phi i64 [ 0, %" + label + " ], [ " + b + ".next, %" + blk + " ]");
    std::vector<std::string> total;
    for (size_t j = 0; j < terms; ++j) {
      total.push_back("%t" + id + "." + std::to_string(j));
      w.line(total[j] + " = phi double [ 0.0, %" + label + " ], [ " + total[j] + ".next, %" + blk + " ]");
    }
    w.line(b + ".next = add nuw nsw i64 " + b + ", " + std::to_string(kSumBlock));
    std::string shorter = w.op("icmp slt i64 " + b + ".next, " + cols);
    std::string end = w.op("select i1 " + shorter + ", i64 " + b + ".next, i64 " + cols);
    std::string res = call(name, ret, stat0, lit(0.0f), b, end);
    for (size_t j = 0; j < terms; ++j) {
      std::string part = w.op("fpext float " + w.op("extractvalue " + ret + " " + res + ", " + std::to_string(j)) + " to double");
      w.line(total[j] + ".next = fadd double " + total[j] + ", " + part);
    }
    w.line("br i1 " + shorter + ", label %" + blk + ", label %" + blk + ".done");
    label = blk + ".done";
    w.label(label);
    for (std::string& t : total) t += ".next";
    return total;
  }

  std::string to_float(const std::string& d) { return w.op("fptrunc double " + d + " to float"); }
  std::string dbin(const char* inst, const std::string& a, const std::string& b) {
    return w.op(std::string(inst) + " double " + a + ", " + b);
  }

  // The statistics and the epilogue of the row whose pointers are in row_args.
  void row(const std::vector<std::string>& epi_ptrs) {
    const std::string cols = std::to_string(r.shape.back());
    const std::string n = lit_double(double(r.shape.back()));
    std::string acc;  // per-row kinds: the reduced value
    switch (r.kind) {
      case Kind::Softmax: {
        std::string mx = w.op("extractvalue { float } " + call("max", "{ float }", lit(0.0f), lit(0.0f), "0", cols) + ", 0");
        std::string sum = blocked_sum("sumexp", 1, mx)[0];
        std::string inv = to_float(dbin("fdiv", lit_double(1.0), sum));
        call("epilogue", "void", mx, inv, "0", cols);
        return;
      }
      case Kind::LayerNorm: {
        std::string sum = blocked_sum("sum", 1, lit(0.0f))[0];
        std::string mean0 = to_float(dbin("fdiv", sum, n));
        std::vector<std::string> s = blocked_sum("var", 2, mean0);
        std::string mean = dbin("fadd", w.op("fpext float " + mean0 + " to double"), dbin("fdiv", s[0], n));
        std::string var = dbin("fdiv", dbin("fsub", s[1], dbin("fdiv", dbin("fmul", s[0], s[0]), n)), n);
        std::string negative = w.op("fcmp olt double " + var + ", 0.0");
        var = w.op("select i1 " + negative + ", double 0.0, double " + var);
        std::string sd = w.op("call double @llvm.sqrt.f64(double " + dbin("fadd", var, lit_double(r.epsilon)) + ")");
        std::string rstd = to_float(dbin("fdiv", lit_double(1.0), sd));
        call("epilogue", "void", to_float(mean), rstd, "0", cols);
        return;
      }
      case Kind::Sum:
      case Kind::Mean: {
        std::string sum = blocked_sum("sum", 1, lit(0.0f))[0];
        acc = to_float(r.kind == Kind::Sum ? sum : dbin("fdiv", sum, n));
        break;
      }
      case Kind::Max: {
        std::string res = call("max", "{ float, i1 }", lit(0.0f), lit(0.0f), "0", cols);
        std::string mx = w.op("extractvalue { float, i1 } " + res + ", 0");
        std::string nan = w.op("extractvalue { float, i1 } " + res + ", 1");
        acc = w.select(nan, lit(NAN), mx);
        break;
      }
    }
    // Once per row, at column 0 (the per-row store has inner stride 0).
    ExprEnv env;
    env.access_ptr = epi_ptrs;
    env.index = "0";
    env.acc = acc;
    emit_stores(r.epilogue, env, emit_expr(r.epilogue, env, w, w), w);
  }

  std::string kernel() {
    std::ostringstream os;
    os << "define void @" << symbol << "(ptr %buffers, i64 %task_begin, i64 %task_end) #0 {\n";
    w.label("entry");
    const std::vector<int64_t> outer(r.shape.begin(), r.shape.end() - 1);
    // Symbolic: shape[0] is the run-time extent S, so rows = S * the other row dims.
    // (One row, e.g. a reduction of every axis: `outer` is empty and so is its tail.)
    const int64_t per_outer = outer.empty() ? 1 : numel(std::vector<int64_t>(outer.begin() + 1, outer.end()));
    if ((!spec.symbolic && numel(outer) == 0) || per_outer == 0 || r.epilogue.stores.empty() ||
        (per_element(r.kind) && r.shape.back() == 0)) {
      w.line("ret void");
      os << w.text() << "}\n";
      return os.str();
    }
    const std::vector<std::string> base = load_buffer_bases(w, spec.buffers.size());
    const std::string rows = spec.symbolic ? w.op("mul nsw i64 " + load_symbolic_extent(w, spec.buffers.size()) + ", " +
                                                  std::to_string(per_outer))
                                           : std::to_string(numel(outer));
    std::string scratch_row;
    if (scratch) scratch_row = w.op("alloca float, i64 " + std::to_string(r.shape.back()) + ", align 64");
    std::string shorter = w.op("icmp slt i64 %task_end, " + rows);
    std::string end = w.op("select i1 " + shorter + ", i64 %task_end, i64 " + rows);
    std::string any = w.op("icmp slt i64 %task_begin, " + end);
    w.line("br i1 " + any + ", label %row, label %done");
    w.label("row");
    label = "row";
    // The latch block is known only after the row is written: its phi input is named ahead.
    w.line("%r = phi i64 [ %task_begin, %entry ], [ %r.next, %latch ]");
    std::vector<std::string> idx = split_index(w, "%r", outer);
    idx.push_back("0");
    std::vector<std::string> epi_ptrs;
    for (const StridedAccess& a : r.prologue.accesses) row_args.push_back(access_pointer(w, a, base[size_t(a.buffer)], idx));
    for (const StridedAccess& a : r.epilogue.accesses) {
      epi_ptrs.push_back(access_pointer(w, a, base[size_t(a.buffer)], idx));
      row_args.push_back(epi_ptrs.back());
    }
    if (scratch) row_args.push_back(scratch_row);
    row(epi_ptrs);
    w.line("br label %latch");
    w.label("latch");
    w.line("%r.next = add nuw nsw i64 %r, 1");
    std::string more = w.op("icmp slt i64 %r.next, " + end);
    w.line("br i1 " + more + ", label %row, label %done");
    w.label("done");
    w.line("ret void");
    os << w.text() << "}\n";
    return os.str();
  }
};

}  // namespace

bool reduction_supports(const KernelSpec& spec, std::string* why) { return check(spec, why); }

std::string emit_reduction_ir(const KernelSpec& spec, const std::string& symbol) {
  std::string why;
  if (!check(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  Emitter e(spec, symbol);
  e.define_passes();
  const std::string kernel = e.kernel();
  std::ostringstream os;
  os << spec_comment(spec) << "\n" << e.passes.str() << kernel << "\n" << kDeclarations
     << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
  return os.str();
}

}  // namespace fusor
