// The x86 code of a Contraction KernelSpec (a batched GEMM with any strides, or a Conv2d
// as an implicit GEMM over im2col panels, each with its epilogue), emitted with asmjit's
// x86::Compiler: a register-blocked micro-kernel in the style of LIBXSMM / oneDNN.
// Layer: codegen/asmjit.
#include <array>
#include <cstdlib>
#include <limits>
#include <utility>

#include "codegen/asmjit/emit_expr.h"
#include "codegen/asmjit/supports.h"
#include "codegen/packing.h"

namespace fusor::asmjit_emit {

// Note [asmjit GEMM kernels]
// out[b..., m, n] = epilogue(Σ_k A[b..., m, k] · B[b..., k, n]). A task is one batch, a chunk
// of B's panels and kGemmTaskRows rows of M (gemm_tasks: rows fastest, the panels split until
// there are 16 tasks, so a short product still spreads over the cores). Inside a task, the
// columns are walked in panels of NV vectors (NB floats) and each panel's rows in tiles of MR
// rows: a GEMM with AVX-512 takes 8 x 3 (24 accumulators of the 32 registers, NB 48, the
// width the llvm backend packs weights in, so the tiers share one packed copy), a
// convolution 6 x 2, AVX2 4 x 2 of its 16 (gemm_tile_rows, gemm_panel_vectors). A tile's
// MR x NV accumulators live in vector registers; each k step loads B[k, panel] (NV vectors),
// broadcasts A[row, k] for each row, and issues MR x NV FMAs. With 6 x 2 a step's 8 loads
// fed 12 FMAs and the BERT layer's GEMMs ran ~1.3x slower than the llvm backend's 8 x 3; on
// the 2-vCPU Xeon (model 207), one thread, `fusor run --backend asmjit` medians over three or
// four interleaved rounds: seq 16 3.27-3.52 -> 2.64-2.70 ms, seq 128 14.6-25.7 -> 14.3-20.0
// (a host whose load changed between rounds). A constant B (weights)
// is packed once per plan by the runtime, [batch][panel][k][NB] (codegen/packing.h,
// PackKind::Panels of width NB; CompiledKernel::prepacks), and read with unmasked vector loads,
// each k step prefetching the panel kPackedPanelPrefetchFloats ahead (codegen/cpu_rules.h; past
// a panel's end that is the next panel's start): the weights of a BERT layer come from L3 or
// memory, and the hardware prefetchers alone kept too few misses in flight (the layer on a
// 2-vCPU Zen 1, one thread, two interleaved rounds of `fusor run --repeat 20`: seq 16 9.3-9.8
// -> 7.8-8.0 ms, seq 128 54.7-55.7 -> 53.3-53.8, seq 384 182.6-186.2 -> 179.0-180.8). Before,
// every task packed each of its panels to the stack, so a product of 128 rows packed its
// weights twice per call, 384 rows six times: the BERT layer at seq 128 on asmjit took 15.7 ms
// (one thread, Zen 5; FF2 5.6 ms), 10.5-11.2 ms packed once (FF2 3.0 ms, as fast as LLVM's).
// Another B's panel is packed to the stack as k rows of NB contiguous floats (masked loads, or
// gathers when B's columns are strided as in Q·Kᵀ) when it fits in kPackBytes, shared by the
// task's ceil(64 / MR) tiles. Larger panels are read in place (contiguous loads, gathers for
// strided columns; a panel narrower than NB takes a second, masked copy of the k loop). A is
// read in place through one pointer per row plus a shared k offset, so any strides (transposes)
// cost nothing. Edge tiles: rows past the task's end read row 0 of the tile again (valid
// memory, never stored); dead columns of a packed edge panel are computed and never stored. A
// full tile with a cheap epilogue (bias, scale, residual, ReLU: register_epilogue) then applies
// it to the accumulator registers and stores each vector once, as oneDNN's post-op injectors
// do. Edge tiles and costly epilogues (GELU's ~60 instructions would be copied MR x 2 times) go
// through a stack tile (L1) to an epilogue that runs row by row as a pointwise vector loop with
// Acc = the tile element: one body serves every tile shape. A full tile's costly epilogue
// instead runs two rows a step, their four vectors' copies of the body merged instruction by
// instruction (Note [Interleaved copies] in emit_expr.cpp): one GELU after another ran near its
// latency (MatMul + bias + GELU 128 x 768 x 3072 on a Zen 1, one thread, `fusor run --repeat
// 40` medians: GELU cost 1.2-1.5 ms over the bias alone in two rounds, 0.55-1.1 merged in
// four). Either way each output element is stored once, after the epilogue was applied.
//
// A Conv2d is the same product per (image, group), its tasks a chunk of its pixel panels
// each (a single image was one task, on one core): rows are the group's output
// channels with A = their weights read in place along the flat (c, kh, kw) (constant
// weights are contiguous), columns are the output pixels (oh, ow) flattened, and B is the
// im2col of the image, always packed per panel (pack_conv_panel): for each (c, kh, kw) one
// gather per vector, with int32 lane offsets row * stride_h + col * stride_w from each
// pixel's window corner and a mask that zeroes the padding (an unsigned compare of row and
// column against the image size) and the lanes past the panel. The epilogue walks the
// output's flat (oh, ow) like a GEMM row. contraction_supports bounds the packed panel
// (c/group * kh * kw rows of 32 floats) by kConvPanelBytes of stack.

namespace {

// The live lanes of a panel's vectors.
using Lanes = std::array<Mask, kMaxPanelVectors>;

// The largest packed B panel (k x nb floats) of a GEMM kept on the stack (a convolution's
// im2col panel is always packed: contraction_supports bounds it by kConvPanelBytes).
constexpr int64_t kPackBytes = 128 * 1024;

// The product one task computes, in the terms of the micro-kernel: rows x cols with a
// reduction of length k; A's rows read in place (strides in bytes), B's columns.
struct Geometry {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_row = 0, a_k = 0;  // A: bytes per row, per k step
  int64_t b_k = 0, b_n = 0;    // B (GEMM): bytes per k step, per column
  std::vector<int64_t> epi_row, epi_col;  // per epilogue access: elements per row, per column
};

Geometry gemm_geometry(const ContractionSpec& c) {
  const size_t r = c.batch.size();
  Geometry g{c.m, c.n, c.k, c.a.strides[r] * 4, c.a.strides[r + 1] * 4, c.b.strides[r] * 4, c.b.strides[r + 1] * 4, {}, {}};
  for (const StridedAccess& a : c.epilogue.accesses) {
    g.epi_row.push_back(a.strides[r]);
    g.epi_col.push_back(a.strides[r + 1]);
  }
  return g;
}

// Conv2d as an implicit GEMM per (image, group): rows = the group's output channels, A =
// their weights [m][(c, kh, kw)] read in place; cols = output pixels (oh, ow) flattened;
// B = the im2col of the image, packed per panel (pack_conv_panel).
Geometry conv_geometry(const ContractionSpec& c) {
  const Conv2dParams& p = c.conv;
  const std::vector<int64_t>& w = c.b.strides;  // [M, C/g, kh, kw]
  const int64_t w_k = *flat_stride({p.c / p.group, p.kh, p.kw}, {w[1], w[2], w[3]});  // contraction_supports
  Geometry g{p.m / p.group, p.oh * p.ow, p.c / p.group * p.kh * p.kw, w[0] * 4, w_k * 4, 0, 0, {}, {}};
  for (const StridedAccess& a : c.epilogue.accesses) {  // over [N, M, oh, ow]
    g.epi_row.push_back(a.strides[1]);
    g.epi_col.push_back(*flat_stride({p.oh, p.ow}, {a.strides[2], a.strides[3]}));
  }
  return g;
}

class GemmEmitter {
 public:
  GemmEmitter(VecEmitter& emitter, const KernelSpec& s)
      : e(emitter), cc(emitter.cc), spec(s), c(s.contraction), conv(s.contraction.kind == ContractionSpec::Kind::Conv2d),
        rank(conv ? 0 : s.contraction.batch.size()), g(conv ? conv_geometry(c) : gemm_geometry(c)),
        mr(gemm_tile_rows(conv, emitter.avx512)), nv(gemm_panel_vectors(conv, emitter.avx512)), nb(nv * emitter.lanes),
        split(gemm_tasks(s, emitter.avx512)) {}

  void kernel(const x86::Gp& buffers, const x86::Gp& task_begin, const x86::Gp& task_end) {
    const int64_t tasks = split.tasks();
    if (tasks == 0 || g.m == 0 || g.n == 0 || c.epilogue.stores.empty()) return;
    asmjit::Label done = cc.newLabel();
    x86::Gp end = e.gp(), limit = e.gp(), task = e.gp();
    cc.mov(end, task_end);
    cc.mov(limit, asmjit::Imm(tasks));
    e.min_into(end, limit);
    cc.mov(task, task_begin);
    cc.cmp(task, end);
    cc.jge(done);

    std::vector<bool> used(spec.buffers.size(), false);
    used[size_t(c.a.buffer)] = used[size_t(c.b.buffer)] = true;
    for (const StridedAccess& a : c.epilogue.accesses) used[size_t(a.buffer)] = true;
    base = load_buffer_bases(e, buffers, used);
    tile = e.gp();
    cc.lea(tile, e.stack(uint32_t(mr * nb * 4)));
    if (packs()) {
      pack = e.gp();
      cc.lea(pack, e.stack(uint32_t(g.k * nb * 4)));
    }
    if (!conv && c.b.strides.back() != 1) {
      std::vector<int32_t> offsets(size_t(e.lanes));
      for (int i = 0; i < e.lanes; ++i) offsets[size_t(i)] = int32_t(i * c.b.strides.back());
      gather_index = e.vec();
      cc.vmovups(gather_index, cc.newConst(asmjit::ConstPoolScope::kLocal, offsets.data(), offsets.size() * 4));
    }

    asmjit::Label next_task = cc.newLabel();
    cc.bind(next_task);
    if (conv)
      conv_task(task);
    else
      gemm_task(task);
    cc.inc(task);
    cc.cmp(task, end);
    cc.jl(next_task);
    cc.bind(done);
  }

 private:
  VecEmitter& e;
  x86::Compiler& cc;
  const KernelSpec& spec;
  const ContractionSpec& c;
  const bool conv;
  const size_t rank;  // GEMM batch dims
  const Geometry g;
  const int64_t mr;   // tile rows
  const int64_t nv;   // panel vectors (kMaxPanelVectors at most)
  const int64_t nb;   // panel columns (nv vectors)
  const GemmTasks split;  // a GEMM's tasks, and whether its B is prepacked
  std::vector<x86::Gp> base;
  x86::Gp tile;
  x86::Gp pack;  // the packed B panel [k][nb] on the stack, when it fits (packs())
  x86::Vec gather_index;  // lane * B's column stride, when B's columns are strided

  // Whether B's panels are packed (Note [asmjit GEMM kernels]).
  bool packs() const { return g.k > 0 && (conv || (!split.prepack && g.k * nb * 4 <= kPackBytes)); }
  // Whether B's panels come packed by the runtime (a constant GEMM B): [batch][panel][k][nb].
  bool prepacked() const { return !conv && split.prepack; }

  // Copies the panel's k rows of nb columns (the live ones; gathered when B's columns are
  // strided) contiguously to `pack`.
  void pack_panel(const x86::Gp& b_panel, const Lanes& live) {
    const int64_t sb_k = g.b_k, sb_n = g.b_n;
    x86::Gp src = e.gp(), dst = e.gp(), kk = e.gp();
    cc.mov(src, b_panel);
    cc.mov(dst, pack);
    cc.mov(kk, asmjit::Imm(g.k));
    asmjit::Label step = cc.newLabel();
    cc.bind(step);
    for (int v = 0; v < nv; ++v) {
      const int64_t off = int64_t(v) * e.lanes * sb_n;
      x86::Vec val;
      if (sb_n == 4) {
        Step s;
        s.tail = true;
        s.live = live[v];
        val = e.load(x86::ptr(src, int32_t(off)), s);
      } else {
        val = gather(src, off, &live[v]);
      }
      cc.vmovups(x86::ptr(dst, int32_t(v * e.lanes * 4)), val);
    }
    e.add_imm(src, sb_k);
    e.add_imm(dst, nb * 4);
    cc.dec(kk);
    cc.jnz(step);
  }

  // The address of `a` at the batch indices `bidx` (rows and columns 0).
  x86::Gp batch_pointer(const StridedAccess& a, const std::vector<x86::Gp>& bidx) {
    std::vector<x86::Gp> idx = bidx;
    idx.resize(rank + 2);  // rows and columns: index 0 (unset registers)
    return access_pointer(e, a, base[size_t(a.buffer)], idx);
  }

  // A GEMM task: one batch, a chunk of panels, kGemmTaskRows rows of M (rows fastest).
  void gemm_task(const x86::Gp& task) {
    x86::Gp bi = e.gp(), mb = e.gp(), nc = e.gp(), divisor = e.gp();
    cc.mov(bi, task);
    cc.xor_(mb, mb);
    cc.mov(divisor, asmjit::Imm(split.m_blocks));
    cc.div(mb, bi, divisor);  // bi = task / m_blocks, mb = task % m_blocks
    cc.xor_(nc, nc);
    cc.mov(divisor, asmjit::Imm(split.n_chunks));
    cc.div(nc, bi, divisor);  // bi = the batch, nc = the chunk of panels
    x86::Gp b_batch;
    if (prepacked()) {  // the batch's block of packed panels (one block when B does not vary)
      b_batch = e.gp();
      cc.mov(b_batch, base[size_t(c.b.buffer)]);
      if (b_varies_over_batch(c)) {
        x86::Gp t = e.gp();
        e.mul_imm(t, bi, split.panels * g.k * nb * 4);
        cc.add(b_batch, t);
      }
    }
    std::vector<x86::Gp> bidx = split_index(e, bi, c.batch);
    x86::Gp a_batch = batch_pointer(c.a, bidx);
    if (!prepacked()) b_batch = batch_pointer(c.b, bidx);
    std::vector<x86::Gp> epi_batch;
    for (const StridedAccess& a : c.epilogue.accesses) epi_batch.push_back(batch_pointer(a, bidx));

    x86::Gp m_begin = e.gp(), m_end = e.gp(), m_limit = e.gp();
    e.mul_imm(m_begin, mb, kGemmTaskRows);
    cc.mov(m_end, m_begin);
    cc.add(m_end, asmjit::Imm(kGemmTaskRows));
    cc.mov(m_limit, asmjit::Imm(g.m));
    e.min_into(m_end, m_limit);
    auto [n_begin, n_end] = panel_range(nc);
    panels(a_batch, b_batch, epi_batch, m_begin, m_end, n_begin, n_end);
  }

  // The columns [begin, end) of chunk `nc` of the panels.
  std::pair<x86::Gp, x86::Gp> panel_range(const x86::Gp& nc) {
    x86::Gp n_begin = e.gp(), n_end = e.gp(), n_limit = e.gp();
    e.mul_imm(n_begin, nc, split.panels_per_task * nb);
    cc.mov(n_end, n_begin);
    cc.add(n_end, asmjit::Imm(split.panels_per_task * nb));
    cc.mov(n_limit, asmjit::Imm(g.n));
    e.min_into(n_end, n_limit);
    return {n_begin, n_end};
  }

  // A Conv2d task: one image and group, all its output channels, a chunk of its pixels.
  void conv_task(const x86::Gp& task) {
    const Conv2dParams& p = c.conv;
    x86::Gp ni = e.gp(), gi = e.gp(), nc = e.gp(), divisor = e.gp();
    cc.mov(ni, task);
    cc.xor_(nc, nc);
    cc.mov(divisor, asmjit::Imm(split.n_chunks));
    cc.div(nc, ni, divisor);  // ni = (image, group), nc = the chunk of pixel panels
    cc.xor_(gi, gi);
    cc.mov(divisor, asmjit::Imm(p.group));
    cc.div(gi, ni, divisor);  // ni = task / group (the image), gi = task % group
    x86::Gp ch0 = e.gp();     // the group's first input channel
    e.mul_imm(ch0, gi, p.c / p.group);
    x86::Gp m_first = e.gp();  // the group's first output channel
    e.mul_imm(m_first, gi, g.m);
    // The image at the group's first channel; the weights and outputs at its first output channel.
    x86::Gp image = access_pointer(e, c.a, base[size_t(c.a.buffer)], {ni, ch0, x86::Gp(), x86::Gp()});
    x86::Gp a_batch = access_pointer(e, c.b, base[size_t(c.b.buffer)], {m_first, x86::Gp(), x86::Gp(), x86::Gp()});
    std::vector<x86::Gp> epi_batch;
    for (const StridedAccess& a : c.epilogue.accesses)
      epi_batch.push_back(access_pointer(e, a, base[size_t(a.buffer)], {ni, m_first, x86::Gp(), x86::Gp()}));
    x86::Gp m_begin = e.gp(), m_end = e.gp();
    cc.xor_(m_begin, m_begin);
    cc.mov(m_end, asmjit::Imm(g.m));
    auto [n_begin, n_end] = panel_range(nc);
    panels(a_batch, image, epi_batch, m_begin, m_end, n_begin, n_end);
  }

  // Rows [m_begin, m_end) of the task against its panels of nb columns, [n_begin, n_end)
  // (n_begin a multiple of nb, n_end > n_begin). `b_batch` is B at (k 0, column 0) for a GEMM
  // (its packed panels when prepacked()), the image at the group's first channel for a
  // convolution.
  void panels(const x86::Gp& a_batch, const x86::Gp& b_batch, const std::vector<x86::Gp>& epi_batch,
              const x86::Gp& m_begin, const x86::Gp& m_end, const x86::Gp& n_begin, const x86::Gp& n_end) {
    x86::Gp n0 = e.gp();
    cc.mov(n0, n_begin);
    asmjit::Label panel = cc.newLabel();
    cc.bind(panel);
    x86::Gp nw = e.gp(), n_cap = e.gp();
    cc.mov(nw, n_end);
    cc.sub(nw, n0);
    cc.mov(n_cap, asmjit::Imm(nb));
    e.min_into(nw, n_cap);
    x86::Gp b_panel = e.gp(), t = e.gp();
    e.mul_imm(t, n0, prepacked() ? g.k * 4 : g.b_n);  // packed: panel n0 / nb of k * nb floats
    cc.lea(b_panel, x86::ptr(b_batch, t));
    // Live lanes of the panel's vectors: clamp(nw - v*lanes, 0, lanes).
    Lanes live{};
    for (int v = 0; v < nv; ++v) {
      x86::Gp cnt = e.gp(), zero = e.gp(), cap = e.gp();
      cc.mov(cnt, nw);
      cc.sub(cnt, asmjit::Imm(v * e.lanes));
      cc.xor_(zero, zero);
      cc.cmp(cnt, zero);
      cc.cmovl(cnt, zero);
      cc.mov(cap, asmjit::Imm(e.lanes));
      e.min_into(cnt, cap);
      live[v] = e.first_lanes(cnt);
    }

    if (conv)
      pack_conv_panel(b_batch, n0, nw);
    else if (packs())
      pack_panel(b_panel, live);

    // Tiles of mr rows.
    x86::Gp m0 = e.gp();
    cc.mov(m0, m_begin);
    asmjit::Label tile_loop = cc.newLabel(), tiles_done = cc.newLabel();
    cc.bind(tile_loop);
    cc.cmp(m0, m_end);
    cc.jge(tiles_done);
    x86::Gp rows = e.gp();
    cc.mov(rows, m_end);
    cc.sub(rows, m0);
    x86::Gp row_cap = e.gp();
    cc.mov(row_cap, asmjit::Imm(mr));
    e.min_into(rows, row_cap);
    std::vector<x86::Vec> acc = micro_kernel(a_batch, b_panel, m0, rows, nw, live);
    asmjit::Label through_tile = cc.newLabel(), stored = cc.newLabel();
    if (register_epilogue()) {  // full tiles: the epilogue on the accumulators
      cc.cmp(rows, asmjit::Imm(mr));
      cc.jne(through_tile);
      cc.cmp(nw, asmjit::Imm(nb));
      cc.jne(through_tile);
      epilogue_in_registers(acc, epi_batch, m0, n0);
      cc.jmp(stored);
    }
    cc.bind(through_tile);
    for (int64_t i = 0; i < mr; ++i)
      for (int v = 0; v < nv; ++v)
        cc.vmovups(x86::ptr(tile, int32_t((i * nb + v * e.lanes) * 4)), acc[size_t(i * nv + v)]);
    if (!register_epilogue() && interleaves_epilogue()) {  // full tiles: vectors side by side
      asmjit::Label edge = cc.newLabel();
      cc.cmp(rows, asmjit::Imm(mr));
      cc.jne(edge);
      cc.cmp(nw, asmjit::Imm(nb));
      cc.jne(edge);
      full_tile_epilogue(epi_batch, m0, n0);
      cc.jmp(stored);
      cc.bind(edge);
    }
    epilogue(epi_batch, m0, n0, rows, nw);
    cc.bind(stored);
    cc.add(m0, asmjit::Imm(mr));
    cc.jmp(tile_loop);
    cc.bind(tiles_done);

    cc.add(n0, asmjit::Imm(nb));
    cc.cmp(n0, n_end);
    cc.jl(panel);
  }

  // Whether full tiles apply the epilogue to the accumulator registers (Note [asmjit GEMM
  // kernels]): an epilogue of a few cheap ops (bias, scale, residual, ReLU), whose mr x 2
  // copies stay small.
  bool register_epilogue() const {
    const ExprGraph& epi = c.epilogue;
    if (epi.nodes.size() > 12) return false;
    for (const ScalarExpr& n : epi.nodes)
      switch (n.op) {
        case ScalarOp::Load: case ScalarOp::Const: case ScalarOp::Acc: case ScalarOp::Add: case ScalarOp::Sub:
        case ScalarOp::Mul: case ScalarOp::Neg: case ScalarOp::Relu: case ScalarOp::Cast: case ScalarOp::Where: break;
        default: return false;
      }
    return true;
  }

  // The epilogue of a full tile on its accumulators: row i, vector v at (m0 + i, n0 + v * lanes).
  void epilogue_in_registers(const std::vector<x86::Vec>& acc, const std::vector<x86::Gp>& epi_batch, const x86::Gp& m0,
                             const x86::Gp& n0) {
    const ExprGraph& epi = c.epilogue;
    std::vector<x86::Gp> row0;  // per access: its element at (m0, n0)
    for (size_t x = 0; x < epi.accesses.size(); ++x) {
      const int64_t es = element_bytes(epi.accesses[x].dtype);
      x86::Gp p = e.gp(), t = e.gp();
      cc.mov(p, epi_batch[x]);
      e.mul_imm(t, m0, g.epi_row[x] * es);
      cc.add(p, t);
      e.mul_imm(t, n0, g.epi_col[x] * es);
      cc.add(p, t);
      row0.push_back(p);
    }
    for (int64_t i = 0; i < mr; ++i) {
      ExprEnv env;
      for (size_t x = 0; x < epi.accesses.size(); ++x) {
        const DType t = epi.accesses[x].dtype;
        x86::Gp p = e.gp();
        cc.mov(p, row0[x]);
        e.add_imm(p, i * g.epi_row[x] * element_bytes(t));
        env.access.push_back(AccessPtr{p, g.epi_col[x], t});
      }
      hoist_loads(e, epi, env);  // per row: values constant along the columns (a per-row bias)
      for (int v = 0; v < nv; ++v) {
        if (v > 0) advance(e, env.access);
        ExprEnv at = env;
        at.acc = acc[size_t(i * nv + v)];
        emit_stores(e, epi, at, emit_expr(e, epi, at, Step{}), Step{});
      }
    }
  }

  // Accumulates the tile at rows [m0, m0 + rows) of the panel at b_panel into registers.
  // A full tile reads its rows through one pointer and constant displacements; an edge tile
  // through a pointer per row, those past its end repeating its first row. (Eight row
  // pointers, the panel's, the k offset and the count left asmjit's allocator too few
  // registers: it kept the panel pointer on the stack, a load and a store every step.)
  std::vector<x86::Vec> micro_kernel(const x86::Gp& a_batch, const x86::Gp& b_panel, const x86::Gp& m0, const x86::Gp& rows,
                    const x86::Gp& nw, const Lanes& live) {
    const int64_t sa_m = g.a_row, sa_k = g.a_k;
    int64_t sb_k = g.b_k, sb_n = g.b_n;
    x86::Gp row0 = e.gp(), t = e.gp();
    e.mul_imm(t, m0, sa_m);
    cc.lea(row0, x86::ptr(a_batch, t));
    std::vector<x86::Gp> a;  // the edge tile's row pointers
    std::vector<x86::Vec> acc(static_cast<size_t>(mr * nv));
    for (x86::Vec& v : acc) v = e.zero();

    const bool packed = packs() || prepacked();
    if (packed) {  // B rows of nb contiguous floats, dead columns included (never stored)
      sb_k = nb * 4;
      sb_n = 4;
    }
    auto k_loop = [&](bool masked, bool full_rows) {
      if (g.k == 0) return;
      x86::Gp bk = e.gp(), koff = e.gp(), kk = e.gp();
      cc.mov(bk, packs() ? pack : b_panel);
      cc.xor_(koff, koff);
      cc.mov(kk, asmjit::Imm(g.k));
      asmjit::Label step = cc.newLabel();
      cc.bind(step);
      x86::Vec bv[kMaxPanelVectors];
      for (int v = 0; v < nv; ++v) {
        const int64_t off = int64_t(v) * e.lanes * sb_n;
        if (sb_n == 4) {
          Step s;
          s.tail = masked;
          s.live = live[v];
          bv[v] = e.load(x86::ptr(bk, int32_t(off)), s);
        } else {
          bv[v] = gather(bk, off, masked ? &live[v] : nullptr);
        }
      }
      if (prepacked())  // one line of each of the step's nb / 16 lines, far ahead (Note [asmjit GEMM kernels])
        for (int64_t line = 0; line < nb / 16; ++line)
          cc.prefetcht0(x86::ptr(bk, int32_t((kPackedPanelPrefetchFloats + line * 16) * 4)));
      for (int64_t i = 0; i < mr; ++i) {
        x86::Vec av = e.broadcast(full_rows ? x86::ptr(row0, koff, 0, int32_t(i * sa_m)) : x86::ptr(a[size_t(i)], koff));
        for (int v = 0; v < nv; ++v) cc.vfmadd231ps(acc[size_t(i * nv + v)], av, bv[v]);
      }
      e.add_imm(bk, sb_k);
      e.add_imm(koff, sa_k);
      cc.dec(kk);
      cc.jnz(step);
    };
    auto k_loops = [&](bool full_rows) {
      if (packed) {
        k_loop(false, full_rows);
        return;
      }
      asmjit::Label edge = cc.newLabel(), accumulated = cc.newLabel();
      cc.cmp(nw, asmjit::Imm(nb));
      cc.jne(edge);
      k_loop(false, full_rows);
      cc.jmp(accumulated);
      cc.bind(edge);
      k_loop(true, full_rows);
      cc.bind(accumulated);
    };
    asmjit::Label accumulated = cc.newLabel();
    if ((mr - 1) * std::abs(sa_m) <= std::numeric_limits<int32_t>::max()) {  // (a full tile's rows lie in one buffer)
      asmjit::Label edge_rows = cc.newLabel();
      cc.cmp(rows, asmjit::Imm(mr));
      cc.jne(edge_rows);
      k_loops(true);
      cc.jmp(accumulated);
      cc.bind(edge_rows);
    }
    for (int64_t i = 0; i < mr; ++i) {
      a.push_back(e.gp());
      cc.mov(a.back(), row0);
      if (i == 0) continue;
      e.add_imm(a.back(), i * sa_m);
      cc.cmp(rows, asmjit::Imm(i));
      cc.cmovle(a.back(), row0);
    }
    k_loops(false);
    cc.bind(accumulated);
    return acc;
  }

  // B's lanes at p + off + lane * column stride (the live lanes, or all).
  x86::Vec gather(const x86::Gp& p, int64_t off, const Mask* live) { return gather(p, off, live, gather_index); }

  // The floats at p + off + index[lane] elements (the live lanes, or all; others 0).
  x86::Vec gather(const x86::Gp& p, int64_t off, const Mask* live, const x86::Vec& index) {
    x86::Gp q = e.gp();
    cc.lea(q, x86::ptr(p, int32_t(off)));
    x86::Vec v = e.zero();
    if (e.avx512) {
      x86::KReg k = cc.newKw();
      if (live)
        cc.kmovw(k, live->k);
      else
        cc.kxnorw(k, k, k);
      cc.k(k).vgatherdps(v, x86::ptr(q, index, 2));  // consumes k
    } else {
      x86::Vec m = e.vec();
      if (live)
        cc.vmovaps(m, live->v);
      else
        cc.vpcmpeqd(m, m, m);
      cc.vgatherdps(v, x86::ptr(q, index, 2), m);  // consumes m
    }
    return v;
  }

  // The im2col panel of a convolution into `pack`, k = (ci, i, j) rows of nb floats: lane l
  // is output pixel p = n0 + l (oy = p / ow, ox = p % ow) and holds the image at channel ci,
  // row oy * stride_h - pad_t + i * dil_h, column ox * stride_w - pad_l + j * dil_w, or 0
  // in the padding and in lanes past the panel (masked gathers).
  void pack_conv_panel(const x86::Gp& image, const x86::Gp& n0, const x86::Gp& nw) {
    FUSOR_ASSERT(nv == 2, "a convolution's im2col panel is two vectors wide");
    const Conv2dParams& p = c.conv;
    const int64_t s_c = c.a.strides[1], s_h = c.a.strides[2], s_w = c.a.strides[3];
    // Per lane: the window's top row and left column (dead lanes: far outside the image).
    x86::Gp rows = e.gp(), cols = e.gp();
    cc.lea(rows, e.stack(uint32_t(nb * 4)));
    cc.lea(cols, e.stack(uint32_t(nb * 4)));
    x86::Gp oy = e.gp(), ox = e.gp(), divisor = e.gp(), lane = e.gp(), y = e.gp(), x = e.gp(), outside = e.gp();
    cc.mov(oy, n0);
    cc.xor_(ox, ox);
    cc.mov(divisor, asmjit::Imm(p.ow));
    cc.div(ox, oy, divisor);
    cc.mov(outside, asmjit::Imm(-(int64_t(1) << 30)));
    cc.xor_(lane, lane);
    asmjit::Label pixel = cc.newLabel(), same_row = cc.newLabel();
    cc.bind(pixel);
    e.mul_imm(y, oy, p.stride_h);
    e.add_imm(y, -p.pad_t);
    e.mul_imm(x, ox, p.stride_w);
    e.add_imm(x, -p.pad_l);
    cc.cmp(lane, nw);
    cc.cmovge(y, outside);
    cc.mov(x86::dword_ptr(rows, lane, 2), y.r32());
    cc.mov(x86::dword_ptr(cols, lane, 2), x.r32());
    cc.inc(ox);
    cc.cmp(ox, asmjit::Imm(p.ow));
    cc.jne(same_row);
    cc.xor_(ox, ox);
    cc.inc(oy);
    cc.bind(same_row);
    cc.inc(lane);
    cc.cmp(lane, asmjit::Imm(nb));
    cc.jl(pixel);
    x86::Vec top[2], left[2];
    for (int v = 0; v < 2; ++v) {
      top[v] = e.vec();
      left[v] = e.vec();
      cc.vmovups(top[v], x86::ptr(rows, v * e.lanes * 4));  // int32 lanes (vmovdqu has no zmm form)
      cc.vmovups(left[v], x86::ptr(cols, v * e.lanes * 4));
    }

    x86::Gp chan = e.gp(), dst = e.gp(), ci = e.gp(), i = e.gp(), j = e.gp(), di = e.gp(), dj = e.gp();
    cc.mov(chan, image);
    cc.mov(dst, pack);
    cc.xor_(ci, ci);
    asmjit::Label channel = cc.newLabel(), tap_row = cc.newLabel(), tap = cc.newLabel();
    cc.bind(channel);
    cc.xor_(i, i);
    cc.bind(tap_row);
    e.mul_imm(di, i, p.dil_h);
    x86::Vec row_off = e.broadcast_int(di);
    x86::Vec row_v[2], row_elems[2];
    Mask row_in[2];
    for (int v = 0; v < 2; ++v) {
      row_v[v] = e.bin(x86::Inst::kIdVpaddd, top[v], row_off);
      row_in[v] = e.in_range(row_v[v], p.h);
      row_elems[v] = s_h == 1 ? row_v[v] : e.bin(x86::Inst::kIdVpmulld, row_v[v], e.cmem_bits(uint32_t(s_h)));
    }
    cc.xor_(j, j);
    cc.bind(tap);
    e.mul_imm(dj, j, p.dil_w);
    x86::Vec col_off = e.broadcast_int(dj);
    for (int v = 0; v < 2; ++v) {
      x86::Vec col = e.bin(x86::Inst::kIdVpaddd, left[v], col_off);
      Mask live = e.mask_and(row_in[v], e.in_range(col, p.w));
      x86::Vec col_elems = s_w == 1 ? col : e.bin(x86::Inst::kIdVpmulld, col, e.cmem_bits(uint32_t(s_w)));
      x86::Vec index = e.bin(x86::Inst::kIdVpaddd, row_elems[v], col_elems);
      cc.vmovups(x86::ptr(dst, int32_t(v * e.lanes * 4)), gather(chan, 0, &live, index));
    }
    e.add_imm(dst, nb * 4);
    cc.inc(j);
    cc.cmp(j, asmjit::Imm(p.kw));
    cc.jl(tap);
    cc.inc(i);
    cc.cmp(i, asmjit::Imm(p.kh));
    cc.jl(tap_row);
    e.add_imm(chan, s_c * 4);
    cc.inc(ci);
    cc.cmp(ci, asmjit::Imm(p.c / p.group));
    cc.jl(channel);
  }

  // The epilogue's accesses at row m0 + i, column n0.
  std::vector<AccessPtr> row_pointers(const std::vector<x86::Gp>& epi_batch, const x86::Gp& m0, const x86::Gp& i,
                                      const x86::Gp& n0) {
    const ExprGraph& epi = c.epilogue;
    x86::Gp m = e.gp();
    cc.mov(m, m0);
    cc.add(m, i);
    std::vector<AccessPtr> access;
    for (size_t x = 0; x < epi.accesses.size(); ++x) {
      const DType dt = epi.accesses[x].dtype;
      const int64_t es = element_bytes(dt);
      x86::Gp p = e.gp(), t = e.gp();
      cc.mov(p, epi_batch[x]);
      e.mul_imm(t, m, g.epi_row[x] * es);
      cc.add(p, t);
      e.mul_imm(t, n0, g.epi_col[x] * es);
      cc.add(p, t);
      access.push_back(AccessPtr{p, g.epi_col[x], dt});
    }
    return access;
  }

  // Whether a full tile's costly epilogue computes each row's two vectors side by side (Note
  // [Interleaved copies] in emit_expr.cpp): every store of the epilogue writes a buffer that
  // no access reads at another element, so the copies' memory is disjoint.
  bool interleaves_epilogue() const {
    const ExprGraph& epi = c.epilogue;
    for (const ExprGraph::Store& st : epi.stores) {
      const StridedAccess& w = epi.accesses[size_t(st.access)];
      if (g.epi_col[size_t(st.access)] == 0) return false;
      for (const StridedAccess& a : epi.accesses)
        if (a.buffer == w.buffer && (a.strides != w.strides || a.offset != w.offset)) return false;
    }
    return true;
  }

  // The epilogue of a full tile (mr rows, nb columns) from the stack tile, two rows a step,
  // their four vectors computed side by side (Note [Interleaved copies]; two rows measured
  // ~1% faster than one on MatMul + bias + GELU 128 x 768 x 3072, Zen 1).
  void full_tile_epilogue(const std::vector<x86::Gp>& epi_batch, const x86::Gp& m0, const x86::Gp& n0) {
    const ExprGraph& epi = c.epilogue;
    x86::Gp i = e.gp();
    cc.xor_(i, i);
    asmjit::Label row = cc.newLabel();
    cc.bind(row);
    // (Three vectors a row take one row a step: six copies of GELU would not fit the registers.)
    const int rows_per_step = nv >= 3 ? 1 : 2;  // divides mr (8, 6 or 4)
    std::vector<ExprEnv> env(static_cast<size_t>(rows_per_step));
    for (int r = 0; r < rows_per_step; ++r) {
      x86::Gp ir = e.gp();
      cc.lea(ir, x86::ptr(i, r));
      env[size_t(r)].access = row_pointers(epi_batch, m0, ir, n0);
      hoist_loads(e, epi, env[size_t(r)]);
    }
    x86::Gp tile_row = e.gp();
    e.mul_imm(tile_row, i, nb * 4);
    cc.add(tile_row, tile);
    emit_interleaved(e, rows_per_step * int(nv), [&](int copy) {
      const int r = copy / int(nv), v = copy % int(nv);
      ExprEnv at = env[size_t(r)];
      for (AccessPtr& a : at.access) {  // the second vector's own pointers
        if (v == 0 || a.stride == 0) continue;
        x86::Gp p = e.gp();
        cc.lea(p, x86::ptr(a.ptr, int32_t(v * e.lanes * a.stride * element_bytes(a.dtype))));
        a.ptr = p;
      }
      at.acc = e.load(x86::ptr(tile_row, int32_t(r * nb * 4 + v * e.bytes)), Step{});
      emit_stores(e, epi, at, emit_expr(e, epi, at, Step{}), Step{});
    });
    cc.add(i, asmjit::Imm(rows_per_step));
    cc.cmp(i, asmjit::Imm(mr));
    cc.jl(row);
  }

  // The epilogue of the tile's rows, one vector loop per row along the panel's columns.
  void epilogue(const std::vector<x86::Gp>& epi_batch, const x86::Gp& m0, const x86::Gp& n0, const x86::Gp& rows,
                const x86::Gp& nw) {
    const ExprGraph& epi = c.epilogue;
    x86::Gp i = e.gp();
    cc.xor_(i, i);
    asmjit::Label row = cc.newLabel();
    cc.bind(row);
    ExprEnv env;
    env.access = row_pointers(epi_batch, m0, i, n0);
    AccessPtr tile_row{e.gp(), 1, DType::F32};
    e.mul_imm(tile_row.ptr, i, nb * 4);
    cc.add(tile_row.ptr, tile);
    hoist_loads(e, epi, env);
    std::vector<AccessPtr> moving = env.access;
    moving.push_back(tile_row);
    vector_loop(
        e, nw,
        [&](const Step& step) {
          ExprEnv at = env;
          at.acc = e.load(x86::ptr(tile_row.ptr), step);
          emit_stores(e, epi, at, emit_expr(e, epi, at, step), step);
        },
        [&] { advance(e, moving); });
    cc.inc(i);
    cc.cmp(i, rows);
    cc.jl(row);
  }
};

}  // namespace

void emit_gemm(VecEmitter& e, const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin,
               const x86::Gp& task_end) {
  GemmEmitter(e, spec).kernel(buffers, task_begin, task_end);
}

}  // namespace fusor::asmjit_emit
