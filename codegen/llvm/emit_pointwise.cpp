#include "codegen/llvm/emit_pointwise.h"

#include <sstream>
#include <vector>

#include "codegen/cpu_rules.h"
#include "codegen/index_math.h"
#include "codegen/llvm/emit_expr.h"
#include "ir/error.h"

namespace fusor {

// Note [Pointwise tasks]
// The index space [outer..., inner] is walked in row-major order as one flat range of
// `total` elements; task t covers the flat elements [t*chunk, (t+1)*chunk) clipped to
// total, with chunk = pointwise_task_elements (codegen/cpu_rules.h: ceil(total / tasks)
// rounded up to a multiple of 64, so chunks start on cache lines of a contiguous output; the
// asmjit backend splits the same way). Flat chunks split
// a 1-D space of 16M elements over cores as well as a [100000, 3] one, whichever tasks
// count lowering chose; a task that crosses rows is cut into row segments, each segment
// getting its accesses' base offsets from its row's outer indices (division by the
// compile-time dims) and running the inner loop over its columns.
//
// Note [Pointwise inner loop]
// A segment runs an internal function `<symbol>.body(ptr noalias %a0, ..., i64 %n)`, one
// pointer per access (already at the segment's first element) and alwaysinline: inlining
// turns the noalias parameters into alias scopes, so the loop vectorizer needs no runtime
// overlap checks. That is sound because a kernel's output buffers never alias its inputs
// (fusor's arena gives values that are live at once disjoint memory) and llvm_supports
// declines a spec that reads a buffer it writes. The body is the spec's ExprGraph as
// Note [Expression emission] (codegen/llvm/emit_expr.cpp) writes it.

namespace {

using namespace llvm_ir;


bool check(const KernelSpec& spec, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind != KernelKind::Pointwise) return no("not a pointwise kernel");
  const PointwiseSpec& p = spec.pointwise;
  if (p.shape.empty()) return no("an empty index space (rank 0)");
  for (int64_t d : p.shape)
    if (d < 0) return no("a negative dim in the index space");
  if (!spec.symbolic && spec.tasks < 1) return no("tasks < 1");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  const ExprRules rules{.acc = false, .row_stat = false, .stores = true, .bool_stores = true};
  if (!check_expr(spec, p.body, p.shape.size(), rules, "", reads, writes, why)) return false;
  return check_buffer_use(reads, writes, why);  // Note [Pointwise inner loop]: noalias needs it
}

// The internal body function of Note [Pointwise inner loop].
std::string emit_body(const KernelSpec& spec, const std::string& symbol) {
  const ExprGraph& g = spec.pointwise.body;
  IrText pre("h"), loop("v");
  ExprEnv env;
  for (size_t k = 0; k < g.accesses.size(); ++k) env.access_ptr.push_back("%a" + std::to_string(k));
  emit_stores(g, env, emit_expr(g, env, pre, loop), loop);

  std::ostringstream os;
  os << "define internal void @" << symbol << ".body(";
  for (size_t k = 0; k < g.accesses.size(); ++k) os << "ptr noalias nocapture %a" << k << ", ";
  os << "i64 %n) #1 {\nentry:\n" << pre.text() << "  br label %loop\nloop:\n"
     << "  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]\n"
     << loop.text() << "  %i.next = add nuw nsw i64 %i, 1\n"
     << "  %done = icmp eq i64 %i.next, %n\n"
     << "  br i1 %done, label %exit, label %loop\nexit:\n  ret void\n}\n";
  return os.str();
}

// The ABI wrapper of Note [Pointwise tasks].
std::string emit_wrapper(const KernelSpec& spec, const std::string& symbol) {
  const PointwiseSpec& p = spec.pointwise;
  const ExprGraph& g = p.body;
  // A symbolic space [S, rest...] has S * numel(rest) elements (Note [Symbolic kernels]).
  const int64_t inner = p.shape.back(), chunk = pointwise_task_elements(spec);
  const int64_t per_outer = numel(std::vector<int64_t>(p.shape.begin() + 1, p.shape.end()));
  const size_t rank = p.shape.size();
  IrText ir("w");
  std::ostringstream os;
  os << "define void @" << symbol << "(ptr %buffers, i64 %task_begin, i64 %task_end) #0 {\nentry:\n";
  if ((!spec.symbolic && numel(p.shape) == 0) || per_outer == 0 || g.stores.empty()) {
    os << "  ret void\n}\n";
    return os.str();
  }
  const std::vector<std::string> base = load_buffer_bases(ir, spec.buffers.size());
  const std::string total = spec.symbolic
                                ? ir.op("mul nsw i64 " + load_symbolic_extent(ir, spec.buffers.size()) + ", " +
                                        std::to_string(per_outer))
                                : std::to_string(numel(p.shape));
  auto clip = [&](const std::string& task) {
    std::string e = ir.op("mul i64 " + task + ", " + std::to_string(chunk));
    std::string c = ir.op("icmp slt i64 " + e + ", " + total);
    return ir.op("select i1 " + c + ", i64 " + e + ", i64 " + total);
  };
  std::string begin = clip("%task_begin"), end = clip("%task_end");
  std::string any = ir.op("icmp slt i64 " + begin + ", " + end);
  ir.line("br i1 " + any + ", label %seg, label %done");
  os << ir.text();

  // One row segment per iteration.
  IrText seg("s");
  std::string row = "0", col = "%pos";
  if (rank > 1) {
    row = seg.op("udiv i64 %pos, " + std::to_string(inner));
    col = seg.op("urem i64 %pos, " + std::to_string(inner));
  }
  // A rank-1 space is one row: its inner extent is the total (at run time when symbolic).
  const std::string inner_s = rank > 1 ? std::to_string(inner) : total;
  std::string left = seg.op("sub i64 " + inner_s + ", " + col);
  std::string avail = seg.op("sub i64 " + end + ", %pos");
  std::string shorter = seg.op("icmp slt i64 " + left + ", " + avail);
  std::string len = seg.op("select i1 " + shorter + ", i64 " + left + ", i64 " + avail);
  std::vector<std::string> idx = split_index(seg, row, std::vector<int64_t>(p.shape.begin(), p.shape.end() - 1));
  idx.push_back(col);
  std::vector<std::string> ptrs;
  for (const StridedAccess& a : g.accesses) ptrs.push_back(access_pointer(seg, a, base[size_t(a.buffer)], idx));
  std::string call = "call void @" + symbol + ".body(";
  for (const std::string& q : ptrs) call += "ptr " + q + ", ";
  seg.line(call + "i64 " + len + ")");
  os << "seg:\n  %pos = phi i64 [ " << begin << ", %entry ], [ %pos.next, %seg ]\n"
     << seg.text() << "  %pos.next = add nsw i64 %pos, " << len << "\n"
     << "  %more = icmp slt i64 %pos.next, " << end << "\n"
     << "  br i1 %more, label %seg, label %done\ndone:\n  ret void\n}\n";
  return os.str();
}

}  // namespace

bool pointwise_supports(const KernelSpec& spec, std::string* why) { return check(spec, why); }

std::string emit_pointwise_ir(const KernelSpec& spec, const std::string& symbol) {
  std::string why;
  if (!check(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  std::ostringstream os;
  os << spec_comment(spec) << "\n" << emit_body(spec, symbol) << "\n" << emit_wrapper(spec, symbol) << "\n" << kDeclarations
     << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
  return os.str();
}

}  // namespace fusor
