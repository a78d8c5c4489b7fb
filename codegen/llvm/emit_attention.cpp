#include "codegen/llvm/emit_attention.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "codegen/index_math.h"
#include "codegen/llvm/emit_expr.h"
#include "ir/error.h"

namespace fusor {

// Note [Attention kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A task is one batch index (e.g. an image and a head) and one or more blocks of R query
// rows:
//   1. K's panels (Kᵀ as [d][tk] in panels of NR_qk keys) and V's panels ([tk][NR_pv]) are
//      packed onto the stack (codegen/packing.h's panel layout), once for the task's blocks;
//   then per block:
//   2. S = Q_rows · Kᵀ by the micro-kernel of emit_tile.h, each tile going through the score
//      expression (scale, mask: Acc = the dot product) into the scratch S[R][tk];
//   3. each row of S becomes its softmax in place: the max over the row (NaN skipped, as
//      the static softmax does), e = exp(x - max) (codegen/math_approx.h's exp), Σe, e / Σe;
//   4. O = P · V by the micro-kernel again, each tile through the spec's epilogue to the
//      output. The T x T scores live only in the task's scratch (R x tk floats, L1/L2).
// A task takes as many of its batch index's blocks as leave at least 8 tasks: each packs K
// and V once for all of them (BERT at seq 384, 12 heads of 3 blocks: 12 tasks of 3 blocks
// rather than 36 of one, a third of the packing). Measured on a Zen 5, that attention alone
// (`fusor run`, medians of 300, interleaved with a build taking one block per task, twice
// or thrice): f32 one thread 2.89-3.03 -> 2.64-2.93 ms, two 1.54 -> 1.34-1.37; bf16 one
// thread 2.52-2.83 -> 2.06-2.09, two 1.23 -> 0.89-0.99.
// In bf16 (AttentionSpec::bf16, Note [bf16 contractions]) both products read bf16 pairs
// and accumulate in f32 with vdpbf16ps: K's and V's panels are packed as pairs
// (fusor_rt_pack_panel_bf16; Kᵀ, read across rows, by 16 x 16 transposes of pairs), the block's Q rows are converted once per block and P's rows
// once after the softmax (fusor_rt_pack_a_bf16); scores, softmax and epilogue stay f32.
// The Q·Kᵀ tile is the cost model's best (codegen/llvm/emit_tile.h) among those at least
// kQkMinVectors vectors wide, when the keys fill them: its k is d (64 in BERT), so short
// that the model's pick of 10 x 2 vectors ran far below the wider tiles. 12 heads, d 64,
// one thread on a Zen 5, `fusor run` medians of 150, two rounds (f32; bf16): 128 keys
// 0.49-0.62 -> 0.31-0.35 ms (0.38-0.50 -> 0.21-0.23), 256 keys 1.9-2.7 -> 1.15-1.23 (1.5-2.2
// -> 0.74-0.81), 512 keys 7.7 -> 4.6-4.8 (5.8-7.5 -> 3.0-3.2); 384 keys already took 8 x 3.
// With AVX2 the model's own pick stands: on a 2-vCPU Zen 1 (`fusor run` of the 12 heads, d 64,
// one thread, medians of 200 / 30 runs, two rounds) the Q·Kᵀ tiles 4 x 3, 5 x 2 and 6 x 2
// were within noise of each other at 128 keys (1.91-2.01 ms) and at 384 (16.2-16.6), 2 x 4
// 5-15% slower at 128 keys; and 3 x 4, then taken by both products, spilled (tile_fits):
// 128 keys 2.63-2.69 -> 1.90-1.93 ms with both at 6 x 2, 384 keys 19.6-23.8 -> 15.8-20.3 ms
// with P·V at 6 x 2.
// R is at most 128 rows, fewer when that leaves fewer than 8 tasks; the scratch (K and V
// panels, S) must fit kScratchBytes of stack. Floating point: dot products in float with
// FMA in d order, the softmax in float (sums `reassoc`: vector lanes), P·V in tk order.

namespace {

using namespace llvm_ir;

constexpr int64_t kScratchBytes = 1024 * 1024;
// Q·Kᵀ tiles are at least this many vectors wide (Note [Attention kernels]).
constexpr int64_t kQkMinVectors = 3;
// A runner-up tile is timed when the cost model puts it within this factor of its best
// (wider than contractions': the model missed Q·Kᵀ's best by far, Note [Attention kernels]).
constexpr double kAttentionTuneTileCost = 1.5;

struct Strides {
  std::vector<int64_t> batch;
  int64_t row = 0, col = 0;
};

// An access over [batch..., rows, cols] split into batch strides and the two inner ones.
Strides split(const StridedAccess& a, size_t r) {
  return {std::vector<int64_t>(a.strides.begin(), a.strides.begin() + std::ptrdiff_t(r)), a.strides[r], a.strides[r + 1]};
}

// The stack scratch of a task (floats) over tk keys.
int64_t scratch_floats(const AttentionSpec& a, const AttentionTiling& t, int64_t tk) {
  const int64_t tk_pad = ceil_div(tk, t.qk.nr) * t.qk.nr;
  // K's and V's panels hold pairs in bf16 (half the steps); Q's and P's rows are pairs too.
  const int64_t dk = a.bf16 ? ceil_div(a.d, 2) : a.d, vk = a.bf16 ? ceil_div(tk, 2) : tk;
  const int64_t pairs = a.bf16 ? t.rows_per_task * (ceil_div(a.d, 2) + ceil_div(tk, 2)) : 0;
  return dk * tk_pad + t.rows_per_task * tk_pad + vk * ceil_div(a.dv, t.pv.nr) * t.pv.nr +
         std::max(t.qk.mr * t.qk.nr, t.pv.mr * t.pv.nr) + pairs;
}
int64_t scratch_floats(const AttentionSpec& a, const AttentionTiling& t) { return scratch_floats(a, t, a.tk); }

bool check(const KernelSpec& spec, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind != KernelKind::Attention) return no("not an attention kernel");
  const AttentionSpec& a = spec.attention;
  if (a.bf16 && spec.symbolic) return no("bf16 operands in a symbolic attention kernel (its exact kernel computes in bf16)");
  if (spec.symbolic && (a.tq != 0 || a.tk != 0))
    return no("a symbolic attention kernel whose queries or keys are not both the run's extent");
  const size_t r = a.batch.size();
  for (const StridedAccess* x : {&a.q, &a.k, &a.v}) {
    if (x->buffer < 0 || size_t(x->buffer) >= spec.buffers.size()) return no("an operand buffer out of range");
    if (x->dtype != DType::F32 || spec.buffers[size_t(x->buffer)].dtype != DType::F32)
      return no("a " + std::string(dtype_name(x->dtype)) + " operand (only f32)");
    if (x->strides.size() != r + 2) return no("operand strides do not match the batch rank");
  }
  if ((!spec.symbolic && (a.tq < 1 || a.tk < 1)) || a.d < 1 || a.dv < 1) return no("an empty dimension");
  for (int64_t d : a.batch)
    if (d < 1) return no("an empty batch dim");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  for (const StridedAccess* x : {&a.q, &a.k, &a.v}) reads[size_t(x->buffer)]++;
  if (!check_expr(spec, a.score, r + 2, ExprRules{true, false, false}, "score: ", reads, writes, why)) return false;
  if (!check_expr(spec, a.epilogue, r + 2, ExprRules{true, false, true}, "epilogue: ", reads, writes, why)) return false;
  if (a.epilogue.stores.empty()) return no("an epilogue that stores nothing");
  if (!check_buffer_use(reads, writes, why)) return false;
  if (spec.symbolic ? attention_max_extent(spec) < 1 : scratch_floats(a, attention_tiling(spec, 16)) * 4 > kScratchBytes)
    return no("keys or head size too large for the stack scratch of a query block");
  return true;
}

// A guarded counted loop: `body` runs with %<var> over [lo, hi); it may open blocks of its
// own and must leave the last one unterminated.
std::string loop(const std::string& name, const std::string& var, const std::string& lo, const std::string& hi,
                 const std::string& body) {
  std::ostringstream os;
  os << "  br label %" << name << ".pre\n" << name << ".pre:\n  %" << name << ".any = icmp slt i64 " << lo << ", " << hi
     << "\n  br i1 %" << name << ".any, label %" << name << ".head, label %" << name << ".exit\n"
     << name << ".head:\n  " << var << " = phi i64 [ " << lo << ", %" << name << ".pre ], [ " << var << ".next, %" << name
     << ".latch ]\n"
     << body << "  br label %" << name << ".latch\n" << name << ".latch:\n  " << var << ".next = add nuw nsw i64 " << var
     << ", 1\n  %" << name << ".more = icmp slt i64 " << var << ".next, " << hi << "\n  br i1 %" << name << ".more, label %"
     << name << ".head, label %" << name << ".exit\n" << name << ".exit:\n";
  return os.str();
}

}  // namespace

std::string AttentionTiling::str() const {
  std::ostringstream os;
  os << "tiling: qk mr=" << qk.mr << " nr=" << qk.nr << ", pv mr=" << pv.mr << " nr=" << pv.nr
     << ", rows/block=" << rows_per_task << " blocks/task=" << blocks_per_task << " tasks=" << tasks();
  return os.str();
}

bool attention_supports(const KernelSpec& spec, std::string* why) { return check(spec, why); }

AttentionTiling attention_tiling(const KernelSpec& spec, int64_t vector_floats, const TilingChoice& choice) {
  const AttentionSpec& a = spec.attention;
  AttentionTiling t;
  t.batches = numel(a.batch);
  // Symbolic: blocked for a typical length; the kernel counts the run's row blocks.
  t.symbolic = spec.symbolic;
  const int64_t tq = spec.symbolic ? kSymbolicTypicalM : a.tq, tk = spec.symbolic ? kSymbolicTypicalM : a.tk;
  t.rows_per_task = std::min<int64_t>(tq, 128);
  while (t.batches * ceil_div(tq, t.rows_per_task) < 8 && t.rows_per_task > 8) t.rows_per_task = ceil_div(t.rows_per_task, 2);
  t.row_blocks = ceil_div(tq, t.rows_per_task);
  if (!t.symbolic) {  // blocks per task: as many as leave 8 tasks, in even chunks
    while (t.blocks_per_task < t.row_blocks && t.batches * ceil_div(t.row_blocks, t.blocks_per_task + 1) >= 8)
      ++t.blocks_per_task;
    t.blocks_per_task = ceil_div(t.row_blocks, ceil_div(t.row_blocks, t.blocks_per_task));
  }
  // Q·Kᵀ: the cost model's best tile, with AVX-512 of at least kQkMinVectors vectors a row
  // (when tk has that many), Note [Attention kernels].
  const std::vector<TileShape> qk = ranked_tiles(vector_floats, t.rows_per_task, [&](int64_t nr) { return ceil_div(tk, nr); });
  t.qk = qk.front();
  if (vector_floats >= 16 && tk >= kQkMinVectors * vector_floats)
    for (const TileShape& s : qk)
      if (s.nv >= kQkMinVectors) {
        t.qk = s;
        break;
      }
  choose_tile(vector_floats, t.rows_per_task, [&](int64_t nr) { return ceil_div(a.dv, nr); }, &t.pv);
  // A measured choice of tiles replaces the rules' (Note [Tuned tilings]).
  if (choice.mr > 0 && tile_fits(vector_floats, choice.mr, choice.nv))
    t.qk = TileShape{vector_floats, choice.mr, choice.nv, choice.nv * vector_floats};
  if (choice.pv_mr > 0 && tile_fits(vector_floats, choice.pv_mr, choice.pv_nv))
    t.pv = TileShape{vector_floats, choice.pv_mr, choice.pv_nv, choice.pv_nv * vector_floats};
  return t;
}

std::vector<TilingChoice> attention_candidates(const KernelSpec& spec, int64_t vector_floats) {
  std::vector<TilingChoice> out{TilingChoice{}};
  std::string why;
  if (spec.symbolic || !check(spec, &why)) return out;
  const AttentionSpec& a = spec.attention;
  const AttentionTiling rules = attention_tiling(spec, vector_floats);
  // Up to `count` runner-up tiles for `rows` rows over `cols` columns, other than `skip`,
  // within kAttentionTuneTileCost of the best's cost, each as the choice `make` builds.
  auto add = [&](int64_t cols, const TileShape& skip, int count, auto make) {
    auto panels = [&](int64_t nr) { return ceil_div(cols, nr); };
    for (const TileShape& s : ranked_tiles(vector_floats, rules.rows_per_task, panels, 0, kAttentionTuneTileCost)) {
      if (count == 0) break;
      if (s.mr == skip.mr && s.nv == skip.nv) continue;
      const TilingChoice c = make(s);
      if (scratch_floats(a, attention_tiling(spec, vector_floats, c)) * 4 > kScratchBytes) continue;
      out.push_back(c);
      --count;
    }
  };
  add(a.tk, rules.qk, 3, [](const TileShape& s) { return TilingChoice{.mr = s.mr, .nv = s.nv}; });
  add(a.dv, rules.pv, 2, [](const TileShape& s) { return TilingChoice{.pv_mr = s.mr, .pv_nv = s.nv}; });
  return out;
}

int64_t attention_max_extent(const KernelSpec& spec) {
  const AttentionTiling t = attention_tiling(spec, 16);  // the widest panels: the most scratch
  int64_t lo = 0, hi = int64_t(1) << 20;  // the largest tk whose scratch fits (monotone in tk)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (scratch_floats(spec.attention, t, mid) * 4 <= kScratchBytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

std::string emit_attention_ir(const KernelSpec& spec, const std::string& symbol, const AttentionTiling& t) {
  std::string why;
  if (!check(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  const AttentionSpec& a = spec.attention;
  const size_t r = a.batch.size();
  const Strides q = split(a.q, r), k = split(a.k, r), v = split(a.v, r);
  const int64_t nr1 = t.qk.nr, nr2 = t.pv.nr, mr1 = t.qk.mr, mr2 = t.pv.mr;
  const int64_t p2 = ceil_div(a.dv, nr2), rows = t.rows_per_task;
  std::ostringstream os;
  os << spec_comment(spec) << "; " << t.str() << "\n\n";

  // Micro-kernels: S tile = Q rows (step: Q's d stride) x K panel; O tile = S rows x V panel.
  // In bf16 each step is a pair of d (of keys), from Q's (P's) rows converted to pairs.
  const bool bf = a.bf16;
  const int64_t dk = bf ? ceil_div(a.d, 2) : a.d, vk = bf ? ceil_div(a.tk, 2) : a.tk;
  BRead b1, b2;
  b1.ks = dk;
  b1.step = nr1;
  b1.bf16 = bf;
  b2.ks = vk;
  b2.step = nr2;
  b2.bf16 = bf;
  b2.runtime_ks = t.symbolic;  // P·V runs over the run's keys
  os << emit_microkernel(symbol + ".qk", t.qk, b1, bf ? 1 : q.col) << "\n"
     << emit_microkernel(symbol + ".pv", t.pv, b2, 1) << "\n";
  std::vector<TileAccess> score_strides, epi_strides;
  for (const StridedAccess& x : a.score.accesses) score_strides.push_back({x.strides[r], x.strides[r + 1]});
  for (const StridedAccess& x : a.epilogue.accesses) epi_strides.push_back({x.strides[r], x.strides[r + 1]});
  os << emit_tile_epilogue(symbol + ".score", a.score, score_strides, nr1, t.symbolic ? -1 : ceil_div(a.tk, nr1) * nr1) << "\n"
     << emit_tile_epilogue(symbol + ".epi", a.epilogue, epi_strides, nr2, 0) << "\n";

  IrText e("e");
  const std::vector<std::string> base = load_buffer_bases(e, spec.buffers.size());
  // Queries and keys: compiled in, or (symbolic) both the run's extent.
  const std::string tq_s = t.symbolic ? load_symbolic_extent(e, spec.buffers.size()) : i64(a.tq);
  const std::string tk_s = t.symbolic ? tq_s : i64(a.tk);
  const std::string p1 = t.symbolic ? e.op("udiv i64 " + e.op("add i64 " + tk_s + ", " + i64(nr1 - 1)) + ", " + i64(nr1))
                                    : i64(ceil_div(a.tk, nr1));
  const std::string tk_pad = t.symbolic ? e.op("mul i64 " + p1 + ", " + i64(nr1)) : i64(ceil_div(a.tk, nr1) * nr1);
  const std::string row_blocks =
      t.symbolic ? e.op("udiv i64 " + e.op("add i64 " + tq_s + ", " + i64(rows - 1)) + ", " + i64(rows)) : i64(t.row_blocks);
  auto times = [&](const std::string& x, int64_t c) { return t.symbolic ? e.op("mul i64 " + x + ", " + i64(c)) : i64(std::stoll(x) * c); };
  e.line("%kpack = alloca float, i64 " + times(tk_pad, dk) + ", align 64");
  e.line("%vpack = alloca float, i64 " + (bf ? i64(vk * p2 * nr2) : times(tk_s, p2 * nr2)) + ", align 64");
  if (bf) {
    e.line("%qpack = alloca i32, i64 " + i64(rows * dk) + ", align 64");
    e.line("%ppack = alloca i32, i64 " + i64(rows * vk) + ", align 64");
  }
  e.line("%s = alloca float, i64 " + times(tk_pad, rows) + ", align 64");
  e.line("%tile = alloca float, i64 " + i64(std::max(mr1 * nr1, mr2 * nr2)) + ", align 64");

  // The task: batch index and its row blocks [rb_lo, rb_hi); its base pointers.
  IrText tk("t");
  const std::string per_batch = t.symbolic ? row_blocks : i64(t.tasks_per_batch());
  std::string bflat = tk.op("udiv i64 %t, " + per_batch);
  std::string rb_lo = tk.op("mul i64 " + tk.op("urem i64 %t, " + per_batch) + ", " + i64(t.blocks_per_task));
  std::string rb_end = tk.op("add i64 " + rb_lo + ", " + i64(t.blocks_per_task));
  std::string rb_hi = tk.op("select i1 " + tk.op("icmp sgt i64 " + rb_end + ", " + row_blocks) + ", i64 " + row_blocks +
                            ", i64 " + rb_end);
  std::vector<std::string> bidx = split_index(tk, bflat, a.batch);
  auto batch_ptr = [&](const StridedAccess& x, const std::vector<int64_t>& strides) {
    std::string off = i64(x.offset);
    for (size_t d = 0; d < strides.size(); ++d) {
      if (strides[d] == 0 || a.batch[d] == 1) continue;
      off = tk.op("add nsw i64 " + off + ", " + tk.op("mul nsw i64 " + bidx[d] + ", " + i64(strides[d])));
    }
    return tk.op("getelementptr " + access_type(x) + ", ptr " + base[size_t(x.buffer)] + ", i64 " + off);
  };
  std::string qb = batch_ptr(a.q, q.batch), kb = batch_ptr(a.k, k.batch), vb = batch_ptr(a.v, v.batch);
  std::vector<std::string> sbb, ebb;  // score and epilogue accesses at (batch, 0, 0)
  for (const StridedAccess& x : a.score.accesses) sbb.push_back(batch_ptr(x, split(x, r).batch));
  for (const StridedAccess& x : a.epilogue.accesses) ebb.push_back(batch_ptr(x, split(x, r).batch));

  // The row block %rb: its first row r0, its rows, and the accesses there.
  IrText rb("rb");
  std::string r0 = rb.op("mul i64 %rb, " + i64(rows));
  std::string left = rb.op("sub i64 " + tq_s + ", " + r0);
  std::string nrows = rb.op("select i1 " + rb.op("icmp sgt i64 " + left + ", " + i64(rows)) + ", i64 " + i64(rows) +
                            ", i64 " + left);
  std::vector<std::string> sb, eb;  // score and epilogue accesses at (batch, r0, 0)
  for (size_t x = 0; x < sbb.size(); ++x)
    sb.push_back(rb.op("getelementptr " + access_type(a.score.accesses[x]) + ", ptr " + sbb[x] + ", i64 " +
                       rb.op("mul i64 " + r0 + ", " + i64(a.score.accesses[x].strides[r]))));
  for (size_t x = 0; x < ebb.size(); ++x)
    eb.push_back(rb.op("getelementptr " + access_type(a.epilogue.accesses[x]) + ", ptr " + ebb[x] + ", i64 " +
                       rb.op("mul i64 " + r0 + ", " + i64(a.epilogue.accesses[x].strides[r]))));
  std::string qrow0 = rb.op("getelementptr float, ptr " + qb + ", i64 " + rb.op("mul i64 " + r0 + ", " + i64(q.row)));
  if (bf)  // the block's query rows as bf16 pairs of d
    rb.line("call void @fusor_rt_pack_a_bf16(ptr " + qrow0 + ", i64 " + i64(q.row) + ", i64 " + i64(q.col) + ", i64 " +
            nrows + ", i64 " + i64(a.d) + ", i64 " + i64(rows) + ", ptr %qpack)");

  // 1. Pack K and V panels.
  // (`steps`: a panel's k steps, kk elements or, in bf16, their pairs.)
  auto pack_loop = [&](const std::string& name, const std::string& var, const std::string& panels, int64_t nr,
                       const std::string& src, int64_t s_k, int64_t s_n, const std::string& kk, const std::string& steps,
                       const std::string& n, const std::string& dst) {
    IrText b(name + "_");
    std::string c0 = b.op("mul i64 " + var + ", " + i64(nr));
    std::string cols = b.op("sub i64 " + n + ", " + c0);
    cols = b.op("select i1 " + b.op("icmp sgt i64 " + cols + ", " + i64(nr)) + ", i64 " + i64(nr) + ", i64 " + cols);
    std::string from = b.op("getelementptr float, ptr " + src + ", i64 " + b.op("mul i64 " + c0 + ", " + i64(s_n)));
    std::string block = b.op("mul i64 " + steps + ", " + i64(nr));
    std::string to = b.op("getelementptr inbounds float, ptr " + dst + ", i64 " + b.op("mul i64 " + var + ", " + block));
    b.line(std::string("call void @") + (bf ? "fusor_rt_pack_panel_bf16" : "fusor_rt_pack_panel") + "(ptr " + from +
           ", i64 " + i64(s_k) + ", i64 " + i64(s_n) + ", i64 " + kk + ", i64 " + cols + ", i64 " + i64(nr) + ", ptr " +
           to + ")");
    return loop(name, var, "0", panels, b.text());
  };
  const std::string packs = pack_loop("pk", "%pk", p1, nr1, kb, k.row, k.col, i64(a.d), i64(dk), tk_s, "%kpack") +
                            pack_loop("pv", "%pv", i64(p2), nr2, vb, v.row, v.col, tk_s, bf ? i64(vk) : tk_s, i64(a.dv),
                                      "%vpack");
  std::string body = rb.text();

  // 2./4. Tiles: rows tiles of mr, panels of nr, the micro-kernel then its epilogue.
  auto tiles = [&](const std::string& name, const TileShape& ts, const std::string& panels, const std::string& ncols,
                   const std::function<std::string(IrText&, const std::string& row)>& a_row, const std::string& bpanels,
                   const std::string& kk, bool runtime_ks, const std::string& epi, const std::vector<std::string>& ptrs,
                   const std::vector<TileAccess>& strides, bool sink) {
    const std::string tv = "%" + name + "r", pv = "%" + name + "c";
    IrText in(name + "i_");
    std::string row0 = in.op("mul i64 " + tv + ", " + i64(ts.mr));
    std::string rleft = in.op("sub i64 " + nrows + ", " + row0);
    std::string vrows = in.op("select i1 " + in.op("icmp sgt i64 " + rleft + ", " + i64(ts.mr)) + ", i64 " + i64(ts.mr) +
                              ", i64 " + rleft);
    std::string last = in.op("sub i64 " + nrows + ", 1");
    std::vector<std::string> ap;
    for (int64_t i = 0; i < ts.mr; ++i) {
      std::string ri = in.op("add i64 " + row0 + ", " + i64(i));
      std::string rc = in.op("select i1 " + in.op("icmp sgt i64 " + ri + ", " + last) + ", i64 " + last + ", i64 " + ri);
      ap.push_back(a_row(in, rc));  // rows past the block re-read its last row (not stored)
    }
    std::string c0 = in.op("mul i64 " + pv + ", " + i64(ts.nr));
    std::string cleft = in.op("sub i64 " + ncols + ", " + c0);
    std::string vcols = in.op("select i1 " + in.op("icmp sgt i64 " + cleft + ", " + i64(ts.nr)) + ", i64 " + i64(ts.nr) +
                              ", i64 " + cleft);
    std::string bp = in.op("getelementptr inbounds float, ptr " + bpanels + ", i64 " +
                           in.op("mul i64 " + pv + ", " + in.op("mul i64 " + kk + ", " + i64(ts.nr))));
    std::string call = "call void @" + symbol + "." + name + "(";
    for (const std::string& p : ap) call += "ptr " + p + ", ";
    in.line(call + "ptr " + bp + ", ptr %tile" + (runtime_ks ? ", i64 " + kk : std::string()) + ")");
    std::string ecall = "call void @" + epi + "(ptr %tile, ";
    const ExprGraph& eg = sink ? a.score : a.epilogue;  // whose accesses ptrs are (bool ones step by bytes)
    for (size_t x = 0; x < ptrs.size(); ++x) {
      std::string off = in.op("add i64 " + in.op("mul i64 " + row0 + ", " + i64(strides[x].row)) + ", " +
                              in.op("mul i64 " + c0 + ", " + i64(strides[x].col)));
      ecall += "ptr " + in.op("getelementptr " + access_type(eg.accesses[x]) + ", ptr " + ptrs[x] + ", i64 " + off) + ", ";
    }
    if (sink) {
      std::string off = in.op("add i64 " + in.op("mul i64 " + row0 + ", " + tk_pad) + ", " + c0);
      ecall += "ptr " + in.op("getelementptr inbounds float, ptr %s, i64 " + off) + ", ";
      if (t.symbolic) ecall += "i64 " + tk_pad + ", ";  // the scratch's row stride
    }
    in.line(ecall + "i64 " + vrows + ", i64 " + vcols + ")");
    IrText hdr(name + "h_");
    std::string count = hdr.op("udiv i64 " + hdr.op("add i64 " + nrows + ", " + i64(ts.mr - 1)) + ", " + i64(ts.mr));
    return hdr.text() + loop(name + "R", tv, "0", count, loop(name + "C", pv, "0", panels, in.text()));
  };
  body += tiles(
      "qk", t.qk, p1, tk_s,
      [&](IrText& ir, const std::string& row) {
        if (bf) return ir.op("getelementptr inbounds i32, ptr %qpack, i64 " + ir.op("mul i64 " + row + ", " + i64(dk)));
        return ir.op("getelementptr float, ptr " + qrow0 + ", i64 " + ir.op("mul i64 " + row + ", " + i64(q.row)));
      },
      "%kpack", i64(dk), false, symbol + ".score", sb, score_strides, true);

  // 3. Softmax of each row of S, in place.
  {
    IrText h("sm_");
    std::string row = h.op("getelementptr inbounds float, ptr %s, i64 " + h.op("mul i64 %smr, " + tk_pad));
    // max (NaN as -inf, so the max is vmaxps-able; a NaN reaches the row through exp below)
    IrText m("mx_");
    std::string x = m.op("load float, ptr " + m.op("getelementptr inbounds float, ptr " + row + ", i64 %mxj") + ", align 4");
    std::string xn = m.op("select i1 " + m.op("fcmp uno float " + x + ", " + x) + ", float 0xFFF0000000000000, float " + x);
    std::string gt = m.op("fcmp nnan nsz ogt float " + xn + ", %mx");
    m.line("%mx.new = select nnan nsz i1 " + gt + ", float " + xn + ", float %mx");
    std::string max_loop = "  br label %mxl.pre\nmxl.pre:\n  br label %mxl.head\nmxl.head:\n"
                           "  %mxj = phi i64 [ 0, %mxl.pre ], [ %mxj.next, %mxl.head ]\n"
                           "  %mx = phi float [ 0xFFF0000000000000, %mxl.pre ], [ %mx.new, %mxl.head ]\n" +
                           m.text() + "  %mxj.next = add nuw nsw i64 %mxj, 1\n  %mxl.more = icmp slt i64 %mxj.next, " +
                           tk_s + "\n  br i1 %mxl.more, label %mxl.head, label %mxl.exit\nmxl.exit:\n";
    IrText sm("ex_");
    std::string p = sm.op("getelementptr inbounds float, ptr " + row + ", i64 %exj");
    std::string y = sm.op("load float, ptr " + p + ", align 4");
    std::string ev = exp_f32(sm, sm.fsub(y, "%mx.new"));
    sm.line("store float " + ev + ", ptr " + p + ", align 4");
    sm.line("%sum.new = fadd reassoc float %sum, " + ev);
    std::string exp_loop = "  br label %exl.pre\nexl.pre:\n  br label %exl.head\nexl.head:\n"
                           "  %exj = phi i64 [ 0, %exl.pre ], [ %exj.next, %exl.head ]\n"
                           "  %sum = phi float [ 0.0, %exl.pre ], [ %sum.new, %exl.head ]\n" +
                           sm.text() + "  %exj.next = add nuw nsw i64 %exj, 1\n  %exl.more = icmp slt i64 %exj.next, " +
                           tk_s + "\n  br i1 %exl.more, label %exl.head, label %exl.exit\nexl.exit:\n";
    IrText nm("nm_");
    std::string inv = "%inv";
    std::string q2 = nm.op("getelementptr inbounds float, ptr " + row + ", i64 %nmj");
    nm.line("store float " + nm.fmul(nm.op("load float, ptr " + q2 + ", align 4"), inv) + ", ptr " + q2 + ", align 4");
    std::string norm = "  %inv = fdiv float 1.0, %sum.new\n" + loop("nml", "%nmj", "0", tk_s, nm.text());
    body += loop("sml", "%smr", "0", nrows, h.text() + max_loop + exp_loop + norm);
  }
  if (bf)  // P's rows as bf16 pairs of keys
    body += "  call void @fusor_rt_pack_a_bf16(ptr %s, i64 " + tk_pad + ", i64 1, i64 " + nrows + ", i64 " + tk_s +
            ", i64 " + i64(rows) + ", ptr %ppack)\n";

  body += tiles(
      "pv", t.pv, i64(p2), i64(a.dv),
      [&](IrText& ir, const std::string& row) {
        if (bf) return ir.op("getelementptr inbounds i32, ptr %ppack, i64 " + ir.op("mul i64 " + row + ", " + i64(vk)));
        return ir.op("getelementptr inbounds float, ptr %s, i64 " + ir.op("mul i64 " + row + ", " + tk_pad));
      },
      "%vpack", bf ? i64(vk) : tk_s, t.symbolic, symbol + ".epi", eb, epi_strides, false);

  os << "define void @" << symbol << "(ptr %buffers, i64 %task_begin, i64 %task_end) #0 {\nentry:\n" << e.text()
     << loop("task", "%t", "%task_begin", "%task_end", tk.text() + packs + loop("blk", "%rb", rb_lo, rb_hi, body))
     << "  ret void\n}\n\n"
     << kDeclarations << fma_declarations(t.qk.vl)
     << "declare void @fusor_rt_pack_panel(ptr, i64, i64, i64, i64, i64, ptr)\n"
     << (bf ? "declare void @fusor_rt_pack_panel_bf16(ptr, i64, i64, i64, i64, i64, ptr)\n"
              "declare void @fusor_rt_pack_a_bf16(ptr, i64, i64, i64, i64, i64, ptr)\n"
            : "")
     << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
  return os.str();
}

}  // namespace fusor
