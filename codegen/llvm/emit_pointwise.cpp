#include "codegen/llvm/emit_pointwise.h"

#include <limits>
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
// A segment runs an internal function `<symbol>.body(ptr %a0, ..., i64 %n)`, one pointer
// per access (already at the segment's first element) and alwaysinline: inlining turns its
// noalias parameters into alias scopes, so the loop vectorizer needs no runtime overlap
// checks. Only the pointers it stores through are noalias: loads need no order among
// themselves, and a scope per input would give every access a list of every other scope
// (a Max of 1000 inputs took LLVM 150 s). That is sound because a kernel's output buffers never alias its inputs
// (fusor's arena gives values that are live at once disjoint memory) and llvm_supports
// declines a spec that reads a buffer it writes. The body is the spec's ExprGraph as
// Note [Expression emission] (codegen/llvm/emit_expr.cpp) writes it.
//
// Note [Pointwise interleaving]
// The body's loop carries loop metadata asking the vectorizer for an interleave count: how
// many vectors each iteration computes side by side. Left to itself the vectorizer takes 1
// for these bodies (no reduction to hide), so a transcendental runs as one long dependent
// chain per vector (tanh: an exp, a division, two polynomials, ~60 cycles of latency): a
// core whose FP scheduler holds only part of one chain (Zen 1's is small) runs it at its
// latency, not at its throughput. Four chains side by side fill it. But the vector loop then
// steps by 4 vectors and the rest of a row runs scalar, so the count shrinks with the row a
// segment can cover (interleave_count). Measured on a 2-vCPU AMD EPYC Zen 1 (family 23
// model 1, AVX2), `fusor run --repeat 100` medians over 1M floats, one thread, counts 1 / 2 /
// 4: exp 1.80 / 1.50 / 1.43 ms, tanh 3.57 / 2.89 / 2.51, GELU (erf) 3.60 / 2.84 / 2.27; a
// broadcast Add + Tanh over rows of 20 floats 5.78 / 6.31 / 13.6, of 50 4.00 / 3.31 / 6.61,
// of 100 3.99 / 3.19 / 3.08.
//
// Note [Streaming stores]
// A kernel that stores kStreamingStoreBytes or more (pointwise_streams_stores,
// codegen/cpu_rules.h) writes with non-temporal stores, as a memory copy does at its ceiling:
// a plain store first reads the line it writes (RFO) and then evicts it unread, so a chain
// over 16M floats moved 3 bytes for every 2 it had to. The body still runs as above, in
// blocks of kStreamBlock elements whose outputs go to stack buffers (L1); each block is
// then copied out with 32-byte `!nontemporal` vector stores (vmovntps on AVX2 and AVX-512)
// and the rest of the block with memcpy. The body is not inlined there: called per block and
// per plain segment, it compiles once. A segment whose outputs are not 32-byte aligned
// (an odd offset), or that is shorter than a block, takes the plain path. The task ends
// with sfence, so that its streamed lines are visible before the pool reports it done.
// The floats are the plain path's: only where they are stored changes.

namespace {

using namespace llvm_ir;

// Elements per block of the streaming path (Note [Streaming stores]): 2 KiB per output.
constexpr int64_t kStreamBlock = 512;

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

// Which accesses of `g` are stored to (per access).
std::vector<bool> stored_accesses(const ExprGraph& g) {
  std::vector<bool> stored(g.accesses.size(), false);
  for (const ExprGraph::Store& st : g.stores) stored[size_t(st.access)] = true;
  return stored;
}

// The loop's interleave count (Note [Pointwise interleaving]): 4 when a segment's row holds
// at least 16 vectors, 2 from 4 vectors, else 1. The row is the innermost dim of the index
// space (lowering has merged what is contiguous into it); a symbolic rank-1 space's row is
// its whole run-time extent, taken as long.
int64_t interleave_count(const KernelSpec& spec, int64_t vector_floats) {
  const std::vector<int64_t>& shape = spec.pointwise.shape;
  const bool unknown = spec.symbolic && shape.size() == 1;
  const int64_t row = unknown ? std::numeric_limits<int64_t>::max() : shape.back();
  if (row >= 16 * vector_floats) return 4;
  if (row >= 4 * vector_floats) return 2;
  return 1;
}

// The internal body function of Note [Pointwise inner loop]; `streams`: the kernel's
// pointwise_streams_stores. Its loop's metadata !1 (the interleave count) is the module's.
std::string emit_body(const KernelSpec& spec, const std::string& symbol, bool streams) {
  const ExprGraph& g = spec.pointwise.body;
  IrText pre("h"), loop("v");
  ExprEnv env;
  for (size_t k = 0; k < g.accesses.size(); ++k) env.access_ptr.push_back("%a" + std::to_string(k));
  emit_stores(g, env, emit_expr(g, env, pre, loop), loop);

  std::ostringstream os;
  os << "define internal void @" << symbol << ".body(";
  const std::vector<bool> stored = stored_accesses(g);
  for (size_t k = 0; k < g.accesses.size(); ++k) os << (stored[k] ? "ptr noalias nocapture %a" : "ptr nocapture readonly %a") << k << ", ";
  // A streaming kernel calls the body from two places (Note [Streaming stores]): not
  // inlined there, it compiles once (its noalias parameters serve the vectorizer as well).
  os << "i64 %n) " << (streams ? "#2" : "#1") << " {\nentry:\n" << pre.text() << "  br label %loop\nloop:\n"
     << "  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]\n"
     << loop.text() << "  %i.next = add nuw nsw i64 %i, 1\n"
     << "  %done = icmp eq i64 %i.next, %n\n"
     << "  br i1 %done, label %exit, label %loop, !llvm.loop !1\nexit:\n  ret void\n}\n";
  return os.str();
}

// The ABI wrapper of Note [Pointwise tasks] (and Note [Streaming stores] when `streams`).
std::string emit_wrapper(const KernelSpec& spec, const std::string& symbol, bool streams) {
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
  auto call = [&](IrText& at, const std::vector<std::string>& args, const std::string& n) {
    std::string c = "call void @" + symbol + ".body(";
    for (const std::string& q : args) c += "ptr " + q + ", ";
    at.line(c + "i64 " + n + ")");
  };
  // The segment loop: its body (ending in the block `latch`), the back edge, the exit.
  auto segment_loop = [&](const std::string& prefix, const std::string& body, const std::string& latch,
                          const std::string& on_exit) {
    std::ostringstream out;
    out << prefix << "seg:\n  %pos = phi i64 [ " << begin << ", %entry ], [ %pos.next, %" << latch << " ]\n" << body
        << "  %pos.next = add nsw i64 %pos, " << len << "\n"
        << "  %more = icmp slt i64 %pos.next, " << end << "\n"
        << "  br i1 %more, label %seg, label %done\ndone:\n" << on_exit << "  ret void\n}\n";
    return out.str();
  };
  if (!streams) {
    call(seg, ptrs, len);
    return segment_loop(os.str(), seg.text(), "seg", "");
  }
  // Note [Streaming stores]: the stack buffers (in the entry block), the alignment test.
  const std::vector<bool> stored = stored_accesses(g);
  std::vector<size_t> outs;
  for (size_t k = 0; k < g.accesses.size(); ++k)
    if (stored[k]) outs.push_back(k);
  auto buf = [](size_t k) { return "%buf" + std::to_string(k); };
  std::string allocas;
  std::string misaligned = "0";
  for (size_t k : outs) {
    allocas += "  " + buf(k) + " = alloca [" + std::to_string(kStreamBlock) + " x float], align 64\n";
    std::string addr = seg.op("ptrtoint ptr " + ptrs[k] + " to i64");
    misaligned = seg.op("or i64 " + misaligned + ", " + seg.op("and i64 " + addr + ", 31"));
  }
  std::string aligned = seg.op("icmp eq i64 " + misaligned + ", 0");
  std::string long_seg = seg.op("icmp sge i64 " + len + ", " + std::to_string(kStreamBlock));
  seg.line("br i1 " + seg.op("and i1 " + aligned + ", " + long_seg) + ", label %blk, label %plain");
  IrText plain("p");
  call(plain, ptrs, len);
  plain.line("br label %seg.end");
  // One block: the body into the buffers, then the copy out.
  IrText blk("b");
  std::string rem = blk.op("sub i64 " + len + ", %b");
  std::string n = blk.op("select i1 " + blk.op("icmp slt i64 " + rem + ", " + std::to_string(kStreamBlock)) + ", i64 " +
                         rem + ", i64 " + std::to_string(kStreamBlock));
  std::vector<std::string> args, dst(g.accesses.size());
  for (size_t k = 0; k < g.accesses.size(); ++k) {
    const StridedAccess& a = g.accesses[k];
    if (stored[k]) {
      dst[k] = blk.op("getelementptr inbounds float, ptr " + ptrs[k] + ", i64 %b");
      args.push_back(buf(k));
    } else if (a.strides.back() == 0) {
      args.push_back(ptrs[k]);
    } else {
      std::string off = blk.op("mul i64 %b, " + std::to_string(a.strides.back()));
      args.push_back(blk.op("getelementptr " + access_type(a) + ", ptr " + ptrs[k] + ", i64 " + off));
    }
  }
  call(blk, args, n);
  std::string vectors = blk.op("lshr i64 " + n + ", 3");
  blk.line("br label %cp");
  IrText cp("c");
  std::string more_v = cp.op("icmp ult i64 %v, " + vectors);
  cp.line("br i1 " + more_v + ", label %cp.body, label %cp.tail");
  IrText body("v");
  std::string voff = body.op("shl i64 %v, 3");
  for (size_t k : outs) {
    std::string src = body.op("getelementptr inbounds float, ptr " + buf(k) + ", i64 " + voff);
    std::string x = body.op("load <8 x float>, ptr " + src + ", align 32");
    std::string to = body.op("getelementptr inbounds float, ptr " + dst[k] + ", i64 " + voff);
    body.line("store <8 x float> " + x + ", ptr " + to + ", align 32, !nontemporal !0");
  }
  body.line("%v.next = add nuw i64 %v, 1");
  body.line("br label %cp");
  IrText tail("t");
  std::string copied = tail.op("shl i64 " + vectors + ", 3");
  std::string bytes = tail.op("shl i64 " + tail.op("sub i64 " + n + ", " + copied) + ", 2");
  for (size_t k : outs) {
    std::string src = tail.op("getelementptr inbounds float, ptr " + buf(k) + ", i64 " + copied);
    std::string to = tail.op("getelementptr inbounds float, ptr " + dst[k] + ", i64 " + copied);
    tail.line("call void @llvm.memcpy.p0.p0.i64(ptr " + to + ", ptr " + src + ", i64 " + bytes + ", i1 false)");
  }
  std::string b_next = tail.op("add nsw i64 %b, " + n);
  tail.line("br i1 " + tail.op("icmp slt i64 " + b_next + ", " + len) + ", label %blk, label %seg.end");
  std::string prefix = os.str();
  prefix.insert(prefix.find("entry:\n") + 7, allocas);
  const std::string blocks = seg.text() + "plain:\n" + plain.text() + "blk:\n  %b = phi i64 [ 0, %seg ], [ " + b_next +
                             ", %cp.tail ]\n" + blk.text() + "cp:\n  %v = phi i64 [ 0, %blk ], [ %v.next, %cp.body ]\n" +
                             cp.text() + "cp.body:\n" + body.text() + "cp.tail:\n" + tail.text() + "seg.end:\n";
  return segment_loop(prefix, blocks, "seg.end", "  call void @llvm.x86.sse.sfence()\n");
}

}  // namespace

bool pointwise_supports(const KernelSpec& spec, std::string* why) { return check(spec, why); }

std::string emit_pointwise_ir(const KernelSpec& spec, const std::string& symbol, int64_t vector_floats) {
  std::string why;
  if (!check(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  const bool streams = pointwise_streams_stores(spec);
  std::ostringstream os;
  os << spec_comment(spec) << "\n"
     << emit_body(spec, symbol, streams) << "\n"
     << emit_wrapper(spec, symbol, streams) << "\n"
     << kDeclarations
     << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\nattributes #2 = { noinline nounwind }\n"
     << "!1 = distinct !{!1, !2}\n!2 = !{!\"llvm.loop.interleave.count\", i32 " << interleave_count(spec, vector_floats)
     << "}\n";
  if (streams)
    os << "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\ndeclare void @llvm.x86.sse.sfence()\n!0 = !{i32 1}\n";
  return os.str();
}

}  // namespace fusor
