#include "codegen/llvm/emit_contraction.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "codegen/cpu_rules.h"
#include "codegen/index_math.h"
#include "codegen/llvm/emit_amx.h"
#include "codegen/llvm/emit_expr.h"
#include "codegen/llvm/emit_tile.h"
#include "codegen/llvm/emit_winograd.h"
#include "codegen/packing.h"
#include "codegen/precision.h"
#include "codegen/winograd.h"
#include "ir/error.h"

namespace fusor {

// Note [Contraction kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every contraction is computed as C[row, col] = Σ_kk A[row, kk] · B[kk, col] per batch,
// in tiles of MR rows x NR = NV*VL columns accumulated in MR*NV vector registers by a
// micro-kernel (an internal alwaysinline function whose accumulators are SSA vectors):
// each k step loads NV vectors of B and broadcasts one A element per row, MR*NV FMAs.
//   GEMM       rows m, cols n, batch = the output's batch dims. A is read in place (row
//              i's element kk at a_i + kk * stride: any strides); B comes in panels of NR
//              columns, [k][NR] contiguous (codegen/packing.h): packed once per plan when
//              constant, else one panel at a time on the stack by the kernel.
//   1x1 conv   (stride 1, no padding) the same GEMM per (image, group): rows = output
//              channels with the weights as A, cols = pixels with the image as B.
//   Conv2d     rows = output channels of a group, A = the weights packed once per plan as
//              [mtile][kh][kw][c][MR]; cols = NR output pixels of one output row. With unit
//              column stride the pixels are loaded straight from the image: one segment per
//              filter tap (kh, kw) shifts the image, kk runs over channels, and a lane mask
//              per tap zeroes what falls in the padding (masked loads never touch it).
//              Strided convolutions pack each panel with fusor_rt_pack_conv_tile instead.
// The tile then goes through the epilogue (bias, folded BN, residual, activation: the
// spec's ExprGraph with Acc = the tile element) and each output element is stored once,
// along the output's contiguous dim (GEMM rows, NCHW pixels). The tile passes through a
// stack array between the two (L1), which lets one epilogue body serve full and edge tiles.
//
// Tasks are (batch, column chunk, row chunk), row chunk fastest, so a thread's contiguous
// task range shares B panels. Inside a task, panels are the outer loop when B is the larger
// operand or is packed by the kernel (each panel is read or packed once and stays in cache
// while the rows stream past), tiles otherwise. Tile sizes minimize the work wasted on edge
// tiles plus a per-step overhead, within the registers: MR*NV <= 24 of AVX-512's 32
// registers, <= 12 of AVX2's 16, with room for a step's NV vectors of B and a broadcast
// (tile_fits: AVX2's 3 x 4 needs 17 and spilled an accumulator on every step; the 12-head
// attention at 128 keys on a Zen 1, whose Q·Kᵀ and P·V both took it, 2.6-2.7 -> 1.9 ms,
// Note [Attention kernels]).
// With panels outer, every panel re-reads the task's rows of A (f32, in place); they stay in
// the core's L2 only when they fit beside the panels streaming through, so a task takes no
// more rows than fill half of it (host_l2_bytes(), which joins the kernel key through the
// target description). FF2 of a BERT layer at seq 128 (128 x 3072 by 3072 x 768) read 1.5
// MB of A per panel from L3 on a core of 1 MiB; 64 rows a task fit. The BERT layer at seq
// 128 on a 2-vCPU Zen 5, `fusor run --repeat 40` medians, three interleaved rounds: one
// thread 10.2-10.5 -> 9.6-9.8 ms, two threads 5.2-5.9 -> 4.7-5.5 ms; seq 384 within noise.
// The panel being computed and the next one, which the tiles prefetch (below), share that L2
// with A's rows: FF2 at seq 384 (panels of 3072 x 48, 590 KB each) took 80 rows a task, 983
// KB, and the three did not fit a core of 2 MiB. A task takes no more rows than leave room
// for both panels where two panels fit the core's L2 (64 rows there). The 2-vCPU Xeon (model
// 207), 384 x 3072 x 768 + bias at one thread, `fusor run --repeat 15` medians over five
// interleaved rounds: 16.8-21.7 -> 12.0-15.8 ms; at two threads 9.6-10.1 -> 7.2-7.6 ms (four).
// These rules are the default; a tuned compile times their neighbours (Note [Tuned tilings]).
// Blocking k as well (each of a task's tiles taking a panel's k steps 128 at a time, so that
// a 24 KiB block of the panel stays in L1 across the tiles and their sums wait on the stack
// between blocks, as BLIS-style GEMMs do) was built and measured, and left out: no gain on
// the 2-vCPU Xeon (model 207), one thread, `fusor run` medians over two or three rounds,
// MatMul + bias 128 x 768 x 2304 2.53-2.62 ms without, 2.61-2.72 with blocks of 128, 256 or
// 384 steps; the BERT layer at seq 16 1.53-1.54 -> 1.52-1.62 ms; and half again the compile
// time. The panel streams from L2 at ~16 bytes a cycle there, well within what L2 delivers,
// and the small-m products are bound by reading the weights from L3 (16 x 768 x 3072 + bias:
// 0.40 ms at 8 rows, 0.49 at 16, ~24 GB/s of weights), which blocking does not change.
//
// Weights (a constant B, packed) are read once per call from L3 or memory when the
// activations are few (short sequences): the micro-kernel prefetches the panel
// kPrefetchFloats ahead, which keeps more misses in flight than the hardware prefetchers
// do while the FMAs run (BERT layer at seq 16: 2.3 -> 1.95 ms on a 2-vCPU Xeon). With at
// most kFarPrefetchRows rows, few FMAs cover each byte of weights and the panel's first
// tile waits on memory: the prefetch goes twice as far (8 KiB).
// That prefetch helps only a panel's first tile: the others find the panel in L2, and the
// next panel's first tile waits on memory again. So with panels outer each tile also
// prefetches its share of the *next* panel into L2 (BRead::next_lines: the panel's lines
// split evenly among the task's tiles, spread evenly over its steps), and a panel arrives
// while the one before it is computed. Measured on the 2-vCPU Xeon (model 207), the BERT
// layer at one thread, five interleaved rounds of `fusor run --repeat 30` (the medians'
// ratios, paired by round): seq 128 0.86 (0.81-0.92), seq 384 0.93, seq 16 0.96; with the
// next panel's prefetch alone (without the near one) seq 128 gained only 0.93.
// Few rows took the far prefetch into L2 (prefetcht1) without the next panel's, until the
// next panel's prefetch stopped costing a line index per step (a multiply on the FMA ports:
// emit_microkernel now takes several steps per iteration and prefetches per iteration);
// with it the far prefetch goes into L1 as the near one does. The same Xeon, one thread,
// `fusor run` medians over four or five interleaved rounds: the BERT layer at seq 64
// 8.5-8.9 -> 7.5-7.7 ms, MatMul + bias 24 x 768 x 2304 0.80-0.84 -> 0.70-0.72 ms, seq 16
// 2.36-2.40 -> 2.31-2.33 ms; 1 x 768 x 2304 (bound by L3's bandwidth) within noise; two
// threads, seq 64 4.5-4.7 -> 4.1-4.3 ms in three of four rounds, seq 16 within noise. The
// cheaper prefetch alone, MatMul + bias 128 x 768 x 2304: the best of 60 runs 2.71-2.74 ->
// 2.59-2.61 ms over three rounds (175 GFLOP/s: this core's FMA peak as fusor_bench's
// ceilings measure it), the BERT layer at seq 128 3-7% faster in each of five rounds.
//
// Note [Epilogue prefetch]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An epilogue that reads a value per output element (a residual, Conv + BN + Add + ReLU)
// reads each tile's MR rows of it, one row per output channel, rows a whole image apart: no
// hardware prefetcher follows MR streams that jump by a row for each tile, so every row's
// lines missed to memory after the tile's FMAs, and the epilogue waited on them. Before its
// micro-kernel a tile now prefetches those lines (every 16 floats of its NR columns and the
// last, into L1), and they arrive while the k steps run. Accesses read the same along the
// columns (a bias) or whose rows share lines are left to the caches. Prefetching the output
// lines for writing as well measured slower than the reads alone. ResNet's 1x1 conv 64 ->
// 256 + BN + residual + ReLU over 56 x 56 on a Zen 1, one thread, `fusor run --repeat 200`
// medians, three interleaved rounds on a busy host: none 4.00 / 4.04 / 4.13 ms, reads 3.69
// / 3.68 / 3.71, reads and writes 4.01 / 3.90 / 3.99, writes alone 3.94 / 4.00 / 4.00; on a
// quiet one, old and new binaries, one thread 3.06-3.11 -> 2.96-3.04 ms (87% of the FMA
// peak), two 2.34-2.48 -> 2.35-2.36. The ResNet bottleneck over 56 x 56, one thread, over
// six rounds: faster in five (9.82-10.21 ms and one round 12.6 -> 9.60-9.75 ms and one
// 10.29); at two threads within noise (6.14-6.60 -> 6.24-6.64 ms).
//
// bf16 (ContractionSpec::bf16, Note [bf16 contractions] in codegen/precision.h): the GEMM
// forms (a 1x1 convolution included), Winograd's convolutions (codegen/winograd.h), and the
// convolutions by rows that pack their panels (strided; 16 or more output channels per
// group): weights packed once as pairs of the (kh, kw, c) reduction rows, each panel packed
// in f32 and then as pairs (fusor_rt_pack_panel_bf16); ResNet-50's stride-2 3x3 (128
// channels over 56 x 56) 1.55 -> 1.26 ms on a Zen 5, one thread. A convolution that reads
// its image in place stays f32 (packing costs more than the pairs save; check() has the
// figures). A constant B is packed once as pairs of k
// (PackKind::Bf16Panels), any other panel by the kernel (fusor_rt_pack_panel_bf16, same
// layout). A's rows are converted to pairs on the stack (fusor_rt_pack_a_bf16): all of a
// task's rows at its start when panels are outer and they fit kBf16TaskABytes, else each
// tile's as it starts (once per tile and panel). The micro-kernel's steps are pairs of k:
// NV vector loads of B, one broadcast pair per row and MR*NV vdpbf16ps. Tiles and panels
// are chosen as for f32; with panels outer a task takes no more rows than kBf16TaskABytes
// holds as pairs. Otherwise a long product split by panels alone (each task one panel and
// every row: FF2 of a BERT layer, 384x3072 by 3072x768) converts each tile of A once per
// panel, reading all of A from L3 as f32 for every panel, a pass the FMAs do not hide.
// Measured on a 2-vCPU Zen 5, one thread, `fusor run` medians of 100 runs, two rounds:
// 128x3072x768 with a bias 1.48-1.50 -> 1.24-1.31 ms, 384x3072x768 4.51-4.67 -> 3.73-3.89
// ms (465 GFLOP/s, 96% of the vdpbf16ps peak); the BERT layer in bf16 at seq 128 5.05 ->
// 4.78 ms (2 threads 2.59 -> 2.46), at seq 384 17.2 -> 15.3 ms (2 threads 9.13 -> 8.10).
//
// Floating point: each output is Σ over kk in order (tap by tap for a conv), with FMA: a
// different order than OpenBLAS's, so results differ from the static backend by rounding
// (tests bound it by the condition of the sum).

namespace {

using namespace llvm_ir;

constexpr int64_t kScratchBytes = 512 * 1024;
// How far ahead a micro-kernel prefetches a packed constant panel (codegen/cpu_rules.h).
constexpr int64_t kPrefetchFloats = kPackedPanelPrefetchFloats;
// Up to this many rows (m) the prefetch goes 2 * kPrefetchFloats ahead.
constexpr int64_t kFarPrefetchRows = 64;
// AMX: the fewest panels a task with panels outer takes (contraction_tiling).
constexpr int64_t kAmxTaskPanels = 16;
// Floats per 64-byte cache line (the next-panel prefetch counts lines; BRead::next_lines).
constexpr int64_t kLineFloats = 16;

struct EpiAccess {
  std::vector<int64_t> batch;  // per batch dim
  int64_t row = 0, col = 0;    // per tile row and column
};

// The contraction as the tile loops see it.
struct Form {
  bool conv = false;                // Conv2d by output rows (not the 1x1 GEMM form)
  int a_buf = -1, b_buf = -1;       // the buffers read as A (broadcast) and B (vectors)
  int64_t a_off = 0, b_off = 0;
  std::vector<int64_t> batch;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> a_batch;     // GEMM forms: A in place
  int64_t a_row = 0, a_k = 0;
  std::vector<int64_t> b_batch;     // B's offset per batch index (GEMM forms; conv: the image)
  int64_t b_k = 0, b_n = 0;         // GEMM forms: B in place
  Conv2dParams p{};
  int64_t sc = 0, sy = 0, sx = 0;   // conv: the image's channel, row and column strides
  bool direct = false;              // conv: pixels loaded from the image (unit column stride)
  bool flat = false;                // direct over flat pixels: panels span output rows (BRead::flat)
  std::vector<EpiAccess> epi;       // per epilogue access
};

std::optional<Form> make_form(const KernelSpec& spec, std::string* why) {
  auto no = [&](const std::string& reason) -> std::optional<Form> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const ContractionSpec& c = spec.contraction;
  Form f;
  if (spec.symbolic && c.kind != ContractionSpec::Kind::Gemm) return no("a symbolic convolution (only GEMMs have a symbolic m)");
  if (c.kind == ContractionSpec::Kind::Gemm) {
    const size_t r = c.batch.size();
    if (c.a.strides.size() != r + 2 || c.b.strides.size() != r + 2) return no("operand strides do not match the batch rank");
    f.a_buf = c.a.buffer;
    f.b_buf = c.b.buffer;
    f.a_off = c.a.offset;
    f.b_off = c.b.offset;
    f.batch = c.batch;
    f.m = c.m;
    f.n = c.n;
    f.k = c.k;
    f.a_batch.assign(c.a.strides.begin(), c.a.strides.begin() + std::ptrdiff_t(r));
    f.a_row = c.a.strides[r];
    f.a_k = c.a.strides[r + 1];
    f.b_batch.assign(c.b.strides.begin(), c.b.strides.begin() + std::ptrdiff_t(r));
    f.b_k = c.b.strides[r];
    f.b_n = c.b.strides[r + 1];
    for (const StridedAccess& a : c.epilogue.accesses) {
      if (a.strides.size() != r + 2) return no("an epilogue access whose strides do not match the output rank");
      f.epi.push_back({std::vector<int64_t>(a.strides.begin(), a.strides.begin() + std::ptrdiff_t(r)), a.strides[r],
                       a.strides[r + 1]});
    }
    return f;
  }
  const Conv2dParams& p = c.conv;
  if (p.group < 1 || p.c % p.group || p.m % p.group) return no("channels not divisible by the groups");
  if (c.a.strides.size() != 4 || c.b.strides.size() != 4) return no("conv operands of rank other than 4");
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  const std::vector<int64_t>& sx = c.a.strides;
  const std::vector<int64_t>& sw = c.b.strides;
  auto pixel_stride = [&](const std::vector<int64_t>& st) { return p.ow > 1 ? st[3] : st[2]; };
  for (const StridedAccess& a : c.epilogue.accesses) {
    if (a.strides.size() != 4) return no("an epilogue access whose strides do not match the output rank");
    if (p.oh > 1 && p.ow > 1 && a.strides[2] != p.ow * a.strides[3])
      return no("an epilogue operand whose pixels are not one strided run (rows and columns do not merge)");
    f.epi.push_back({{a.strides[0], mg * a.strides[1]}, a.strides[1], pixel_stride(a.strides)});
  }
  f.p = p;
  f.batch = {p.n, p.group};
  f.m = mg;
  f.a_buf = c.b.buffer;  // the weights are A, the image is B
  f.b_buf = c.a.buffer;
  f.a_off = c.b.offset;
  f.b_off = c.a.offset;
  f.b_batch = {sx[0], cg * sx[1]};
  if (p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 && p.pad_l == 0 &&
      (p.oh == 1 || p.ow == 1 || sx[2] == p.ow * sx[3])) {
    // 1x1: out[channel, pixel] = Σ_c W[channel, c] · X[c, pixel], a GEMM with any strides.
    f.n = p.oh * p.ow;
    f.k = cg;
    f.a_batch = {0, mg * sw[0]};
    f.a_row = sw[0];
    f.a_k = sw[1];
    f.b_k = sx[1];
    f.b_n = pixel_stride(sx);
    return f;
  }
  f.conv = true;
  f.n = p.oh * p.ow;
  f.k = cg * p.kh * p.kw;
  f.sc = sx[1];
  f.sy = sx[2];
  f.sx = sx[3];
  f.direct = p.stride_w == 1 && sx[3] == 1;
  // Stride 1, output rows as wide as the image's, image rows contiguous: pixel p's taps are
  // p plus a constant per tap, so a panel may run across rows (no lanes lost at the end of
  // each row), with per-lane masks.
  f.flat = f.direct && p.stride_h == 1 && p.ow == p.w && sx[2] == p.w && p.oh * p.ow < (int64_t(1) << 30) &&
           p.h < (int64_t(1) << 30) && p.pad_t < (int64_t(1) << 30) && p.pad_l < (int64_t(1) << 30) &&
           (p.kh - 1) * p.dil_h < (int64_t(1) << 30) && (p.kw - 1) * p.dil_w < (int64_t(1) << 30);
  return f;
}

// B panels per batch: NR columns (GEMM) or NR pixels of one output row (conv).
int64_t panels_for(const Form& f, int64_t nr) {
  return f.conv && !f.flat ? f.p.oh * ceil_div(f.p.ow, nr) : ceil_div(f.n, nr);
}

// Whether a convolution runs as Winograd F(2x2, 3x3) (Note [Winograd convolutions]): where
// it applies, with enough channels on both sides to amortize the transforms and enough
// tiles to fill a panel, and a transformed image of one 16-tile panel within the scratch.
bool use_winograd(const KernelSpec& spec, const Form& f) {
  const Conv2dParams& p = f.p;
  return f.conv && !spec.symbolic && winograd_applies(spec.contraction) && p.c >= 16 && p.m >= 16 &&
         winograd_tiles(p) >= 16 && winograd_scratch_bytes(p.c, 8, 16) <= kScratchBytes;
}

bool check(const KernelSpec& spec, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind != KernelKind::Contraction) return no("not a contraction kernel");
  const ContractionSpec& c = spec.contraction;
  for (const StridedAccess* a : {&c.a, &c.b}) {
    if (a->buffer < 0 || size_t(a->buffer) >= spec.buffers.size()) return no("an operand buffer out of range");
    if (a->dtype != DType::F32 || spec.buffers[size_t(a->buffer)].dtype != DType::F32)
      return no("a " + std::string(dtype_name(a->dtype)) + " operand (only f32)");
  }
  std::optional<Form> f = make_form(spec, why);
  if (!f) return false;
  if ((f->m < 1 && !spec.symbolic) || f->n < 1 || f->k < 1) return no("an empty dimension (m, n or k is 0)");
  for (int64_t d : f->batch)
    if (d < 1) return no("an empty batch dim");
  const bool weights_const = spec.buffers[size_t(c.b.buffer)].constant;
  if (f->conv && !weights_const) return no("convolution weights that are not constant (they are packed once per plan)");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  reads[size_t(c.a.buffer)]++;
  reads[size_t(c.b.buffer)]++;
  const size_t rank = c.kind == ContractionSpec::Kind::Conv2d ? 4 : c.batch.size() + 2;
  if (!check_expr(spec, c.epilogue, rank, ExprRules{true, false, true}, "epilogue: ", reads, writes, why)) return false;
  if (c.epilogue.stores.empty()) return no("an epilogue that stores nothing");
  if (!check_buffer_use(reads, writes, why)) return false;
  // Stack scratch for the widest panel (AVX-512: NR <= 64) a kernel packs itself.
  const bool kernel_packs = f->conv ? !f->direct && !use_winograd(spec, *f) : !(weights_const && f->b_buf == c.b.buffer);
  if (kernel_packs && f->k * 64 * 4 > kScratchBytes) return no("k too long for a stack panel");
  if (c.bf16) {
    std::string w;
    if (!bf16_applies(spec, &w)) return no("bf16 operands on " + w);
    if (!f->conv && 14 * ceil_div(f->k, 2) * 4 > kScratchBytes) return no("k too long for a bf16 block of A on the stack");
    // A convolution by rows (not Winograd's) packs each panel in f32, then as pairs (both on
    // the stack). One that reads the image in place in f32 (unit column stride) stays f32:
    // packing its panels costs more than the pairs save (a depthwise 3x3 over 144 x 56 x 56:
    // 0.22 ms direct in f32, 2.8 ms packed in bf16; 8 -> 32 channels over 112 x 112: 0.31
    // against 1.04 ms; Zen 5, one thread). So does one with few output channels per group,
    // which each panel's pairs serve (a depthwise 3x3 with stride 2 over 144 x 56 x 56: 0.43
    // ms in f32, 0.47 in bf16).
    if (f->conv && !use_winograd(spec, *f)) {
      if (f->direct) return no("a bf16 convolution that reads its image in place (unit column stride: direct, f32)");
      if (f->p.m / f->p.group < 16)
        return no("a bf16 convolution with fewer than 16 output channels per group (f32: its panels' pairs would cost "
                  "more than they save)");
      if ((f->k + ceil_div(f->k, 2)) * 64 * 4 > kScratchBytes)
        return no("k too long for a bf16 convolution panel on the stack");
    }
  }
  return true;
}

}  // namespace

int64_t host_l2_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 <= 0) return kDefaultL2Bytes;
  return std::clamp<int64_t>(l2, int64_t(256) << 10, int64_t(8) << 20);
}

std::string ContractionTiling::str() const {
  std::ostringstream os;
  os << "tiling: mr=" << mr << " nr=" << nr << " (" << nv << " x " << vl << " floats) tiles=" << m_tiles
     << " panels=" << panels << " chunks=" << tiles_per_chunk << "x" << panels_per_chunk;
  if (symbolic)
    os << " tasks=" << batches * n_chunks << "*ceil(m/" << mr * tiles_per_chunk << ") symbolic m";
  else
    os << " tasks=" << tasks();
  os
     << (panel_outer ? " panels-outer" : " tiles-outer") << (prepack ? " prepacked" : "") << (bf16 ? " bf16" : "")
     << (amx ? " amx" : "");
  if (prepack && !winograd)
    os << " prefetch=" << prefetch_floats << (prefetch_to_l2 ? "-l2" : "-l1") << (next_panel ? "+next" : "");
  os
     << (conv_rows ? (winograd ? " conv-winograd-2x2" : direct ? (flat ? " conv-direct-flat" : " conv-direct") : " conv-packed") : "");
  return os.str();
}

bool contraction_supports(const KernelSpec& spec, std::string* why) { return check(spec, why); }

bool amx_applies(const KernelSpec& spec) {
  if (spec.kind != KernelKind::Contraction || !spec.contraction.bf16 || !check(spec, nullptr)) return false;
  std::string why;
  const std::optional<Form> f = make_form(spec, &why);
  // (The 32 rows of A's pairs a tile converts must fit the stack as vdpbf16ps's 14 do.)
  return !f->conv && llvm_ir::amx_whole_steps(f->k) && 2 * llvm_ir::kAmxTileRows * ceil_div(f->k, 2) * 4 <= kScratchBytes;
}

ContractionTiling contraction_tiling(const KernelSpec& spec, int64_t vector_floats, const TilingChoice& choice,
                                     int64_t l2_bytes, bool amx) {
  std::string why;
  std::optional<Form> f = make_form(spec, &why);
  FUSOR_ASSERT(f, "contraction_tiling: ", why);
  const ContractionSpec& c = spec.contraction;
  ContractionTiling t;
  t.vl = vector_floats;
  t.conv_rows = f->conv;
  t.bf16 = c.bf16;
  t.direct = f->direct;
  t.flat = f->flat;
  // The spec's B (GEMM B, conv weights) is packed by the runtime when constant; a 1x1 conv's
  // weights are read in place.
  t.prepack = spec.buffers[size_t(c.b.buffer)].constant && (f->conv || f->b_buf == c.b.buffer);
  if (use_winograd(spec, *f)) {
    // Rows: output channels; columns: output tiles, one panel per task (Note [Winograd
    // convolutions]); more tasks by splitting the channel tiles.
    const Conv2dParams& p = f->p;
    const int64_t tiles = winograd_tiles(p);
    auto panels = [&](int64_t nr) { return ceil_div(tiles, nr); };
    TileShape shape;
    choose_tile(vector_floats, p.m, panels, &shape);
    while (shape.nv > 1 && winograd_scratch_bytes(p.c, shape.mr, shape.nr) > kScratchBytes)
      choose_tile(vector_floats, p.m, panels, &shape, shape.nv - 1);
    t.winograd = t.conv_rows = t.prepack = true;
    t.direct = t.flat = false;
    t.mr = shape.mr;
    t.nv = shape.nv;
    t.nr = shape.nr;
    t.batches = p.n * p.group;
    t.m_tiles = ceil_div(p.m, t.mr);
    t.panels = panels(t.nr);
    t.panels_per_chunk = 1;
    t.tiles_per_chunk = t.m_tiles;
    while (t.batches * t.panels * ceil_div(t.m_tiles, t.tiles_per_chunk) < 16 && t.tiles_per_chunk > 1)
      t.tiles_per_chunk = ceil_div(t.tiles_per_chunk, 2);
    t.tiles_per_chunk = ceil_div(t.m_tiles, ceil_div(t.m_tiles, t.tiles_per_chunk));
    t.n_chunks = t.panels;
    t.m_chunks = ceil_div(t.m_tiles, t.tiles_per_chunk);
    return t;
  }
  // Symbolic: tile and split for a typical m; the kernel counts the run's tiles.
  t.symbolic = spec.symbolic;
  const int64_t m = spec.symbolic ? kSymbolicTypicalM : f->m;
  // A GEMM's constant B is packed once in panels of NR columns and shared by the plans of
  // every shape (Note [Packed layouts]): its width is chosen for a typical m, so that a new
  // m reuses the packed copy; the rows of the tile still fit the run's m.
  TileShape shape;
  auto panels = [&](int64_t nr) { return panels_for(*f, nr); };
  int64_t fixed_nv = 0;
  if (t.prepack && !f->conv) {  // (a convolution packs its weights by MR, as A)
    choose_tile(vector_floats, kSymbolicTypicalM, panels, &shape);
    fixed_nv = shape.nv;
  }
  choose_tile(vector_floats, m, panels, &shape, fixed_nv);
  if (choice.mr > 0 && choice.nv > 0 && tile_fits(vector_floats, choice.mr, choice.nv)) {
    shape.mr = choice.mr;
    shape.nv = choice.nv;
    shape.nr = choice.nv * vector_floats;
  }
  // AMX (Note [AMX contractions], emit_amx.cpp): 16 or 32 rows by 32 columns, whatever m is.
  t.amx = amx && vector_floats == llvm_ir::kAmxTileRows && amx_applies(spec);
  if (t.amx) {
    shape.mr = m <= llvm_ir::kAmxTileRows ? llvm_ir::kAmxTileRows : 2 * llvm_ir::kAmxTileRows;
    shape.nr = llvm_ir::kAmxCols;
    shape.nv = shape.nr / vector_floats;
  }
  t.mr = shape.mr;
  t.nv = shape.nv;
  t.nr = shape.nr;
  t.batches = numel(f->batch);
  t.m_tiles = ceil_div(m, t.mr);
  t.panels = panels_for(*f, t.nr);
  const bool b_prepacked = t.prepack && !f->conv;
  t.panel_outer = f->conv || !b_prepacked || f->n >= m;
  if (choice.panel_outer >= 0 && b_prepacked && !f->conv) t.panel_outer = choice.panel_outer == 1;
  // AMX with panels outer: a task converts its rows of A to pairs once for all its panels, and
  // the conversion costs about what the tiles of four panels do (tdpbf16ps runs 16 x 32 x 32
  // multiply-adds in 16 cycles), so a task takes at least kAmxTaskPanels panels, even where
  // that leaves fewer than 16 tasks (Note [AMX contractions]).
  const int64_t min_panels = t.amx && t.panel_outer ? std::min(t.panels, kAmxTaskPanels) : 1;
  if (t.panel_outer) {
    t.panels_per_chunk = std::min(t.panels, std::max<int64_t>(min_panels, (f->conv ? 1024 : 256) / t.nr));
    t.tiles_per_chunk = t.m_tiles;
  } else {
    t.panels_per_chunk = t.panels;
    t.tiles_per_chunk = std::min(t.m_tiles, std::max<int64_t>(1, 128 / t.mr));
  }
  // bf16 with panels outer: a task converts its rows' A to pairs once, at its start, when they
  // fit kBf16TaskABytes, else each tile's rows once per panel, re-reading A as f32 for every
  // panel. So a task takes no more rows than fit (Note [Contraction kernels]).
  auto bound_bf16_rows = [&] {
    if (!c.bf16 || !t.panel_outer || f->conv) return;
    const int64_t tile_pairs_bytes = t.mr * ceil_div(f->k, 2) * 4;
    if (t.tiles_per_chunk * tile_pairs_bytes > kBf16TaskABytes)
      t.tiles_per_chunk = std::max<int64_t>(1, kBf16TaskABytes / tile_pairs_bytes);
  };
  bound_bf16_rows();
  // f32 with panels outer: every panel re-reads the task's rows of A, which stay in the core's
  // L2 only if they fit beside the panels streaming through: a task takes no more rows than
  // fill half of it, nor more than leave room for the panel and the next one (prefetched
  // meanwhile) where the two fit (Note [Contraction kernels]).
  if (!c.bf16 && t.panel_outer && !f->conv) {
    const int64_t tile_bytes = t.mr * f->k * 4, panel_bytes = t.nr * f->k * 4;
    const int64_t budget = 2 * panel_bytes < l2_bytes ? std::min(l2_bytes / 2, l2_bytes - 2 * panel_bytes) : l2_bytes / 2;
    if (t.tiles_per_chunk * tile_bytes > budget) t.tiles_per_chunk = std::max<int64_t>(1, budget / tile_bytes);
  }
  // Enough tasks to balance a few cores, split along the outer loop first: the operand it
  // walks is the one streamed (panels outer: B, the larger, e.g. the weights of a short
  // sequence or a convolution's image), so each task streams its own part of it once and
  // re-reads only the smaller operand, which stays in its core's L2.
  auto tasks = [&] { return t.batches * ceil_div(t.panels, t.panels_per_chunk) * ceil_div(t.m_tiles, t.tiles_per_chunk); };
  while (tasks() < 16) {
    const bool tiles_first = !t.panel_outer;
    int64_t& first = tiles_first ? t.tiles_per_chunk : t.panels_per_chunk;
    int64_t& second = tiles_first ? t.panels_per_chunk : t.tiles_per_chunk;
    const int64_t first_floor = tiles_first ? 1 : min_panels, second_floor = tiles_first ? min_panels : 1;
    if (first > first_floor) {
      first = std::max(first_floor, ceil_div(first, 2));
    } else if (second > second_floor) {
      second = std::max(second_floor, ceil_div(second, 2));
    } else {
      break;
    }
  }
  // A measured choice of blocking replaces the rules' (Note [Tuned tilings]), within the
  // bound on bf16 rows.
  if (choice.tiles_per_chunk > 0) t.tiles_per_chunk = std::min(choice.tiles_per_chunk, t.m_tiles);
  if (choice.panels_per_chunk > 0) t.panels_per_chunk = std::min(choice.panels_per_chunk, t.panels);
  bound_bf16_rows();
  // The prepacked panel's prefetch (Note [Contraction kernels]): into L1, twice as far for few
  // rows, with the next panel's share per tile when panels are outer (AMX: into L2 for few
  // rows, no next panel).
  if (t.prepack && !t.direct) {  // (a direct convolution reads its image in place)
    const bool far = !spec.symbolic && f->m <= kFarPrefetchRows;
    t.prefetch_floats = far ? 2 * kPrefetchFloats : kPrefetchFloats;
    t.prefetch_to_l2 = far && t.amx;  // (AMX tiles take no next-panel prefetch: far goes into L2)
    if (choice.prefetch >= 0) t.prefetch_floats = std::min<int64_t>(choice.prefetch, 16 * kPrefetchFloats);
    if (choice.prefetch_l2 >= 0) t.prefetch_to_l2 = choice.prefetch_l2 == 1;
    t.next_panel = !f->conv && t.panel_outer && !t.prefetch_to_l2 && !t.amx;
  }
  // Chunks as even as uniform chunks can be (16 panels in 4 + 4 + 4 + 4, not 5 + 5 + 5 + 1).
  t.panels_per_chunk = ceil_div(t.panels, ceil_div(t.panels, t.panels_per_chunk));
  t.tiles_per_chunk = ceil_div(t.m_tiles, ceil_div(t.m_tiles, t.tiles_per_chunk));
  t.n_chunks = ceil_div(t.panels, t.panels_per_chunk);
  t.m_chunks = ceil_div(t.m_tiles, t.tiles_per_chunk);
  return t;
}

// Note [Tuned tilings]
// ~~~~~~~~~~~~~~~~~~~~
// The rules above choose a tile by a cost model of wasted edge work and a blocking of tasks
// by constants; both were tuned on the machines this project has seen, and other CPUs (other
// L1/L2 sizes, load ports, FMA latencies, prefetchers) want others. Since fusor compiles a
// kernel per shape anyway, a tuned compile (LlvmBackend::Options::tune; EngineOptions::tune)
// measures instead of guessing: tiling_candidates() gives the rules' tiling and a few
// neighbours of it,
//   - the next tiles of the cost model (within kTuneTileCost of its best), in the same
//     panel width when B is a constant packed for every shape (so the packed copy is still
//     shared), any width otherwise;
//   - the other loop order (a GEMM with a prepacked B: panels or tiles outer);
//   - the rules' blocking with half and twice the rows or panels per task (how much of A
//     or B a task keeps in L2 while it streams the other);
// LlvmBackend compiles each and times it on scratch operands of the spec's sizes (codegen/
// tuning.h: each task's fastest of a few passes, then the tasks' makespan on the engine's
// threads), and keeps the fastest. The choice is stored with the object (a first line
// "fusor-tiling <choice>"), so a kernel loaded from the persistent store gets the tiling it
// was compiled with, and a restart, another process or another replica sharing the store
// never times again. The compiler string of the kernel key says "tuned", so tuned and rule
// kernels are kept apart. Every candidate computes the same sums in the same order (the
// tile and the blocking do not change the order over k), so tuning changes speed, never
// the floats. Symbolic kernels (one kernel for every m) and Winograd's convolutions keep
// the rules' tiling. Fused attention (emit_attention.h) is tuned the same way over its two
// tiles (attention_candidates: Q·Kᵀ's runners-up of every width, P·V's), its choice stored
// the same way; the timings of its narrow Q·Kᵀ tiles (2x slower at 128 and 384 keys on a
// Zen 5) are what Note [Attention kernels]'s rule came from.

namespace {

// The fields of a TilingChoice as its text names them, in order, with the values they take
// and the one that means "the rules'".
struct ChoiceField {
  const char* name;
  int64_t TilingChoice::*member;
  int64_t lo, hi, unset;
};
constexpr int64_t kChoiceMax = 999999999;  // (at most 9 digits: no overflow while reading)
constexpr ChoiceField kChoiceFields[] = {
    {"mr", &TilingChoice::mr, 1, kChoiceMax, 0},
    {"nv", &TilingChoice::nv, 1, kChoiceMax, 0},
    {"outer", &TilingChoice::panel_outer, 0, 1, -1},
    {"tiles", &TilingChoice::tiles_per_chunk, 1, kChoiceMax, 0},
    {"panels", &TilingChoice::panels_per_chunk, 1, kChoiceMax, 0},
    {"prefetch", &TilingChoice::prefetch, 0, kChoiceMax, -1},
    {"l2", &TilingChoice::prefetch_l2, 0, 1, -1},
    {"pv_mr", &TilingChoice::pv_mr, 1, kChoiceMax, 0},
    {"pv_nv", &TilingChoice::pv_nv, 1, kChoiceMax, 0},
};

}  // namespace

bool TilingChoice::empty() const {
  for (const ChoiceField& f : kChoiceFields)
    if (this->*f.member != f.unset) return false;
  return true;
}

std::string TilingChoice::str() const {
  if (empty()) return "rules";
  std::ostringstream os;
  const char* sep = "";
  for (const ChoiceField& f : kChoiceFields)
    if (this->*f.member != f.unset) {
      os << sep << f.name << "=" << this->*f.member;
      sep = " ";
    }
  return os.str();
}

std::optional<TilingChoice> TilingChoice::parse(std::string_view text) {
  TilingChoice c;
  if (text == "rules") return c;
  if (text.empty()) return std::nullopt;
  size_t pos = 0;
  while (true) {
    const size_t end = std::min(text.find(' ', pos), text.size());
    const std::string_view field = text.substr(pos, end - pos);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos || eq + 1 >= field.size() || field.size() - eq - 1 > 9) return std::nullopt;
    int64_t v = 0;
    for (char ch : field.substr(eq + 1)) {
      if (ch < '0' || ch > '9') return std::nullopt;
      v = v * 10 + (ch - '0');
    }
    const ChoiceField* f = nullptr;
    for (const ChoiceField& g : kChoiceFields)
      if (field.substr(0, eq) == g.name) f = &g;
    if (!f || v < f->lo || v > f->hi || c.*f->member != f->unset) return std::nullopt;
    c.*f->member = v;
    if (end == text.size()) break;
    pos = end + 1;
  }
  if ((c.mr > 0) != (c.nv > 0) || (c.pv_mr > 0) != (c.pv_nv > 0)) return std::nullopt;
  return c;
}

namespace {
// A runner-up tile is timed when the cost model puts it within this factor of its best.
constexpr double kTuneTileCost = 1.25;
}  // namespace

std::vector<TilingChoice> tiling_candidates(const KernelSpec& spec, int64_t vector_floats, int64_t l2_bytes, bool amx) {
  std::vector<TilingChoice> out{TilingChoice{}};
  std::string why;
  const std::optional<Form> f = make_form(spec, &why);
  if (!f || spec.symbolic) return out;
  const ContractionTiling rules = contraction_tiling(spec, vector_floats, {}, l2_bytes, amx);
  if (rules.winograd) return out;
  std::vector<ContractionTiling> seen{rules};
  auto add = [&](const TilingChoice& c) {
    const ContractionTiling t = contraction_tiling(spec, vector_floats, c, l2_bytes, amx);
    for (const ContractionTiling& s : seen)  // the same kernel under another name
      if (s.mr == t.mr && s.nv == t.nv && s.panel_outer == t.panel_outer && s.tiles_per_chunk == t.tiles_per_chunk &&
          s.panels_per_chunk == t.panels_per_chunk && s.prefetch_floats == t.prefetch_floats &&
          s.prefetch_to_l2 == t.prefetch_to_l2 && s.next_panel == t.next_panel)
        return;
    seen.push_back(t);
    out.push_back(c);
  };
  // The tiles: the cost model's runners-up, in the packed width when B is packed for every shape.
  const bool b_prepacked = rules.prepack && !f->conv;
  auto panels = [&](int64_t nr) { return panels_for(*f, nr); };
  int tiles = 0;
  for (const TileShape& t : ranked_tiles(vector_floats, f->m, panels, b_prepacked ? rules.nv : 0, kTuneTileCost)) {
    if (tiles == 2 || rules.amx) break;  // (an AMX tile is fixed)
    if (t.mr == rules.mr && t.nv == rules.nv) continue;
    add(TilingChoice{.mr = t.mr, .nv = t.nv});
    ++tiles;
  }
  // The other loop order.
  if (b_prepacked) add(TilingChoice{.panel_outer = rules.panel_outer ? 0 : 1});
  // The rules' blocking with half and twice the inner chunk of a task.
  if (rules.panel_outer) {
    if (rules.tiles_per_chunk > 1) add(TilingChoice{.tiles_per_chunk = ceil_div(rules.tiles_per_chunk, 2)});
    if (rules.panels_per_chunk > 1) add(TilingChoice{.panels_per_chunk = ceil_div(rules.panels_per_chunk, 2)});
    if (rules.panels_per_chunk < rules.panels) add(TilingChoice{.panels_per_chunk = 2 * rules.panels_per_chunk});
  } else {
    if (rules.panels_per_chunk > 1) add(TilingChoice{.panels_per_chunk = ceil_div(rules.panels_per_chunk, 2)});
    if (rules.tiles_per_chunk > 1) add(TilingChoice{.tiles_per_chunk = ceil_div(rules.tiles_per_chunk, 2)});
    if (rules.tiles_per_chunk < rules.m_tiles) add(TilingChoice{.tiles_per_chunk = 2 * rules.tiles_per_chunk});
  }
  // The packed panel's prefetch: half and twice as far, and into the other cache.
  if (rules.prepack && !rules.direct) {
    add(TilingChoice{.prefetch = rules.prefetch_floats / 2});
    add(TilingChoice{.prefetch = rules.prefetch_floats * 2});
    add(TilingChoice{.prefetch_l2 = rules.prefetch_to_l2 ? 0 : 1});
  }
  return out;
}

std::string emit_contraction_ir(const KernelSpec& spec, const std::string& symbol, const ContractionTiling& t) {
  std::string why;
  if (!check(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  const ContractionSpec& c = spec.contraction;
  const Form f = *make_form(spec, &why);
  const Conv2dParams& p = f.p;
  if (t.winograd) {
    WinogradOperands ops;
    ops.image = f.b_buf;
    ops.image_offset = f.b_off;
    ops.image_batch = f.b_batch;
    ops.sc = f.sc;
    ops.sy = f.sy;
    ops.weights = c.b.buffer;
    for (const EpiAccess& a : f.epi) ops.epi.push_back({a.batch, a.row, a.col});
    return emit_winograd_ir(spec, symbol, t, ops);
  }
  const int64_t mr = t.mr, nr = t.nr, kk = f.k;
  // Steps of the micro-kernel: k, or its pairs in bf16 (Note [bf16 contractions]).
  const int64_t ksteps = c.bf16 ? ceil_div(kk, 2) : kk;
  const ExprGraph& epi = c.epilogue;
  std::ostringstream os;
  os << spec_comment(spec) << "; " << t.str() << "\n\n";

  // Micro-kernels and the epilogue.
  const std::string mk = symbol + ".mk", ep = symbol + ".epi";
  BRead br;
  if (f.conv && f.direct) {
    br.masked_image = true;
    br.segs = p.kh * p.kw;
    br.ks = p.c / p.group;
    br.step = f.sc;
    br.conv = p;
    br.image_row_stride = f.sy;
    br.flat = f.flat;
  } else {
    br.ks = ksteps;
    br.step = nr;
    br.bf16 = c.bf16;
    if (t.prepack) {
      br.prefetch_floats = t.prefetch_floats;
      br.prefetch_to_l2 = t.prefetch_to_l2;
      // Panels outer: the task's tiles share the next panel's lines between them.
      if (t.next_panel) br.next_lines = ceil_div(ceil_div(ksteps * nr, kLineFloats), t.tiles_per_chunk);
    }
  }
  std::vector<TileAccess> epi_strides;
  for (const EpiAccess& a : f.epi) epi_strides.push_back({a.row, a.col});
  if (t.amx)
    os << emit_amx_microkernel(mk, mr, ksteps, t.prepack ? t.prefetch_floats * 4 : 0, t.prefetch_to_l2) << "\n"
       << amx_tile_config(symbol) << "\n";
  else
    os << emit_microkernel(mk, TileShape{t.vl, mr, t.nv, nr}, br, f.conv ? mr : c.bf16 ? 1 : f.a_k) << "\n";
  os << emit_tile_epilogue(ep, epi, epi_strides, nr, 0) << "\n";
  // A full tile's epilogue computes its rows' vectors side by side (Note [Epilogue
  // interleaving], emit_tile.cpp); an edge tile's runs the plain loop over what is valid.
  const bool interleaved = t.nv > 1;
  if (interleaved) os << emit_tile_epilogue(ep + ".full", epi, epi_strides, nr, 0, t.nv, 1) << "\n";
  if (f.conv && !f.direct) {
    os << "@" << symbol << ".geo = private unnamed_addr constant [" << kGeoCount << " x i64] [";
    const int64_t geo[kGeoCount] = {p.c / p.group, p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w,
                                    p.pad_t, p.pad_l, f.sc, f.sy, f.sx};
    for (int i = 0; i < kGeoCount; ++i) os << (i ? ", " : "") << "i64 " << geo[i];
    os << "]\n\n";
  }

  // The ABI function.
  IrText e("e");
  const std::vector<std::string> base = load_buffer_bases(e, spec.buffers.size());
  e.line("%tile = alloca float, i64 " + i64(mr * nr) + ", align 64");
  const bool kernel_packs_b = f.conv ? !f.direct : !(t.prepack);
  if (kernel_packs_b) e.line("%bpack = alloca float, i64 " + i64(ksteps * nr) + ", align 64");
  // A bf16 convolution's panel in f32 before it becomes pairs.
  if (f.conv && c.bf16) e.line("%bconv = alloca float, i64 " + i64(kk * nr) + ", align 64");
  // bf16 A pairs: the task's rows at once (panels outer: every panel reuses them), else a
  // tile's rows.
  const bool task_a = c.bf16 && !f.conv && t.panel_outer && t.tiles_per_chunk * mr * ksteps * 4 <= kBf16TaskABytes;
  // (AMX takes them in the order its tiles load them: Note [AMX contractions].)
  const std::string pack_a = t.amx ? "fusor_rt_pack_a_bf16_amx" : "fusor_rt_pack_a_bf16";
  if (c.bf16 && !f.conv) e.line("%apack = alloca i32, i64 " + i64((task_a ? t.tiles_per_chunk : 1) * mr * ksteps) + ", align 64");
  // The run's m and its tile and chunk counts: compiled in, or from the run-time extent.
  std::string m_s = i64(f.m), m_last = i64(f.m - 1), m_tiles = i64(t.m_tiles), m_chunks = i64(t.m_chunks);
  if (t.symbolic) {
    m_s = load_symbolic_extent(e, spec.buffers.size());
    m_last = e.op("sub i64 " + m_s + ", 1");
    m_tiles = e.op("udiv i64 " + e.op("add i64 " + m_s + ", " + i64(mr - 1)) + ", " + i64(mr));
    m_chunks = e.op("udiv i64 " + e.op("add i64 " + m_tiles + ", " + i64(t.tiles_per_chunk - 1)) + ", " +
                    i64(t.tiles_per_chunk));
  }
  // AMX: this call's tile configuration (released at its end).
  if (t.amx) e.line("call void @llvm.x86.ldtilecfg(ptr @" + symbol + ".amxcfg)");
  std::string any = e.op("icmp slt i64 %task_begin, %task_end");
  e.line("br i1 " + any + ", label %task, label %done");
  os << "define void @" << symbol << "(ptr %buffers, i64 %task_begin, i64 %task_end) #0 {\nentry:\n" << e.text();

  // Task: (batch, column chunk, row chunk).
  IrText tk("t");
  const std::string per_batch = t.symbolic ? tk.op("mul i64 " + m_chunks + ", " + i64(t.n_chunks))
                                           : i64(t.n_chunks * t.m_chunks);
  std::string bflat = tk.op("udiv i64 %t, " + per_batch);
  std::string rem = tk.op("urem i64 %t, " + per_batch);
  std::string nc = tk.op("udiv i64 " + rem + ", " + m_chunks);
  std::string mc = tk.op("urem i64 " + rem + ", " + m_chunks);
  std::vector<std::string> bidx = split_index(tk, bflat, f.batch);
  auto batch_ptr = [&](const std::string& type, const std::string& b, int64_t offset, const std::vector<int64_t>& strides) {
    std::string off = i64(offset);
    for (size_t d = 0; d < strides.size(); ++d) {
      if (strides[d] == 0 || f.batch[d] == 1) continue;
      std::string term = tk.op("mul nsw i64 " + bidx[d] + ", " + i64(strides[d]));
      off = tk.op("add nsw i64 " + off + ", " + term);
    }
    return tk.op("getelementptr " + type + ", ptr " + b + ", i64 " + off);
  };
  // The packed operand (Note [Packed layouts]): conv weights per group, GEMM B per batch.
  std::string packed;
  if (t.prepack) {
    const int64_t block = f.conv ? t.m_tiles * ksteps * mr : t.panels * ksteps * nr;
    std::string which = f.conv ? bidx[1] : packed_b_batches(c) == 1 ? "0" : bflat;
    std::string off = tk.op("mul i64 " + which + ", " + i64(block));
    packed = tk.op("getelementptr inbounds float, ptr " + base[size_t(c.b.buffer)] + ", i64 " + off);
  }
  std::string a_b = f.conv ? packed : batch_ptr("float", base[size_t(f.a_buf)], f.a_off, f.a_batch);
  std::string b_b = t.prepack && !f.conv ? packed : batch_ptr("float", base[size_t(f.b_buf)], f.b_off, f.b_batch);
  std::vector<std::string> e_b;
  for (size_t x = 0; x < epi.accesses.size(); ++x) {
    const StridedAccess& a = epi.accesses[x];
    e_b.push_back(batch_ptr(access_type(a), base[size_t(a.buffer)], a.offset, f.epi[x].batch));
  }
  // Which epilogue accesses the tiles prefetch (Note [Epilogue prefetch]): f32 values read
  // along the tile's columns whose rows lie on lines of their own.
  std::vector<bool> epi_prefetch(epi.accesses.size(), false);
  for (const ScalarExpr& n : epi.nodes)
    if (n.op == ScalarOp::Load) epi_prefetch[size_t(n.load)] = true;
  for (size_t x = 0; x < epi.accesses.size(); ++x)
    epi_prefetch[x] = epi_prefetch[x] && epi.accesses[x].dtype == DType::F32 && f.epi[x].col == 1 &&
                      std::abs(f.epi[x].row) >= kLineFloats;
  auto range = [&](const std::string& chunk, int64_t per, const std::string& total, std::string* lo, std::string* hi) {
    *lo = tk.op("mul i64 " + chunk + ", " + i64(per));
    std::string h = tk.op("add i64 " + *lo + ", " + i64(per));
    std::string over = tk.op("icmp sgt i64 " + h + ", " + total);
    *hi = tk.op("select i1 " + over + ", i64 " + total + ", i64 " + h);
  };
  std::string p_lo, p_hi, m_lo, m_hi;
  range(nc, t.panels_per_chunk, i64(t.panels), &p_lo, &p_hi);
  range(mc, t.tiles_per_chunk, m_tiles, &m_lo, &m_hi);
  if (task_a) {
    std::string row0 = tk.op("mul i64 " + m_lo + ", " + i64(mr));
    std::string end = tk.op("mul i64 " + m_hi + ", " + i64(mr));
    std::string over = tk.op("icmp sgt i64 " + end + ", " + m_s);
    std::string valid = tk.op("sub i64 " + tk.op("select i1 " + over + ", i64 " + m_s + ", i64 " + end) + ", " + row0);
    std::string src = tk.op("getelementptr float, ptr " + a_b + ", i64 " + tk.op("mul i64 " + row0 + ", " + i64(f.a_row)));
    tk.line("call void @" + pack_a + "(ptr " + src + ", i64 " + i64(f.a_row) + ", i64 " + i64(f.a_k) + ", i64 " +
            valid + ", i64 " + i64(kk) + ", i64 " + tk.op("sub i64 " + end + ", " + row0) + ", ptr %apack)");
  }
  const std::string& o_lo = t.panel_outer ? p_lo : m_lo;
  const std::string& o_hi = t.panel_outer ? p_hi : m_hi;
  const std::string& i_lo = t.panel_outer ? m_lo : p_lo;
  const std::string& i_hi = t.panel_outer ? m_hi : p_hi;
  os << "task:\n  %t = phi i64 [ %task_begin, %entry ], [ %t.next, %task.end ]\n" << tk.text() << "  br label %outer\n";

  // The panel %<pv>: its first column (for a conv: pixel), valid columns, and how the
  // micro-kernel reads it (`b_args`).
  struct Panel {
    std::string col0, cols, b_args;
  };
  auto panel_setup = [&](IrText& ir, const std::string& pv) {
    Panel pn;
    auto clamp = [&](const std::string& left) {
      std::string wide = ir.op("icmp sgt i64 " + left + ", " + i64(nr));
      return ir.op("select i1 " + wide + ", i64 " + i64(nr) + ", i64 " + left);
    };
    if (f.flat) {
      pn.col0 = ir.op("mul i64 " + pv + ", " + i64(nr));
      pn.cols = clamp(ir.op("sub i64 " + i64(f.n) + ", " + pn.col0));
      pn.b_args = "ptr " + b_b + ", i64 " + pn.col0;
      return pn;
    }
    if (f.conv) {
      const int64_t per_row = ceil_div(p.ow, nr);
      std::string oh = ir.op("udiv i64 " + pv + ", " + i64(per_row));
      std::string ow0 = ir.op("mul i64 " + ir.op("urem i64 " + pv + ", " + i64(per_row)) + ", " + i64(nr));
      pn.cols = clamp(ir.op("sub i64 " + i64(p.ow) + ", " + ow0));
      pn.col0 = ir.op("add i64 " + ir.op("mul i64 " + oh + ", " + i64(p.ow)) + ", " + ow0);
      if (f.direct) {
        std::string iy0 = ir.op("sub i64 " + ir.op("mul i64 " + oh + ", " + i64(p.stride_h)) + ", " + i64(p.pad_t));
        std::string ix0 = ir.op("sub i64 " + ow0 + ", " + i64(p.pad_l));
        pn.b_args = "ptr " + b_b + ", i64 " + iy0 + ", i64 " + ix0;
      } else {
        ir.line("call void @fusor_rt_pack_conv_tile(ptr " + b_b + ", ptr @" + symbol + ".geo, i64 " + oh + ", i64 " + ow0 +
                ", i64 " + pn.cols + ", i64 " + i64(nr) + ", ptr " + (c.bf16 ? "%bconv" : "%bpack") + ")");
        if (c.bf16)  // the panel's rows (kh, kw, c flattened) as pairs, as the weights are
          ir.line("call void @fusor_rt_pack_panel_bf16(ptr %bconv, i64 " + i64(nr) + ", i64 1, i64 " + i64(kk) + ", i64 " +
                  i64(nr) + ", i64 " + i64(nr) + ", ptr %bpack)");
        pn.b_args = "ptr %bpack";
      }
      return pn;
    }
    pn.col0 = ir.op("mul i64 " + pv + ", " + i64(nr));
    pn.cols = clamp(ir.op("sub i64 " + i64(f.n) + ", " + pn.col0));
    if (t.prepack) {
      std::string off = ir.op("mul i64 " + pv + ", " + i64(ksteps * nr));
      pn.b_args = "ptr " + ir.op("getelementptr inbounds float, ptr " + b_b + ", i64 " + off);
    } else {
      std::string off = ir.op("mul i64 " + pn.col0 + ", " + i64(f.b_n));
      std::string src = ir.op("getelementptr float, ptr " + b_b + ", i64 " + off);
      ir.line(std::string("call void @") + (c.bf16 ? "fusor_rt_pack_panel_bf16" : "fusor_rt_pack_panel") + "(ptr " + src +
              ", i64 " + i64(f.b_k) + ", i64 " + i64(f.b_n) + ", i64 " + i64(kk) + ", i64 " + pn.cols + ", i64 " + i64(nr) +
              ", ptr %bpack)");
      pn.b_args = "ptr %bpack";
    }
    return pn;
  };
  // The row tile %<tv>: its first row, valid rows and A row pointers.
  struct Tile {
    std::string row0, rows;
    std::vector<std::string> a;
    // A symbolic kernel's full tile: the rows as one pointer and constant offsets (Note
    // [Symbolic full tiles]); empty where `a` serves every tile.
    std::vector<std::string> a_full;
  };
  auto tile_setup = [&](IrText& ir, const std::string& tv) {
    Tile tl;
    tl.row0 = ir.op("mul i64 " + tv + ", " + i64(mr));
    std::string left = ir.op("sub i64 " + m_s + ", " + tl.row0);
    std::string tall = ir.op("icmp sgt i64 " + left + ", " + i64(mr));
    tl.rows = ir.op("select i1 " + tall + ", i64 " + i64(mr) + ", i64 " + left);
    if (f.conv) {
      // Packed weights: the tile's [kh][kw][c][mr] block (rows past the edge are zeros; bf16:
      // pairs of that reduction order).
      std::string blk = ir.op("getelementptr inbounds float, ptr " + a_b + ", i64 " + ir.op("mul i64 " + tv + ", " + i64(ksteps * mr)));
      for (int64_t i = 0; i < mr; ++i) tl.a.push_back(ir.op("getelementptr inbounds float, ptr " + blk + ", i64 " + i64(i)));
      return tl;
    }
    if (task_a) {  // converted at the task's start
      std::string first = ir.op("mul i64 " + ir.op("sub i64 " + tv + ", " + m_lo) + ", " + i64(mr * ksteps));
      for (int64_t i = 0; i < mr; ++i)
        tl.a.push_back(ir.op("getelementptr inbounds i32, ptr %apack, i64 " + ir.op("add i64 " + first + ", " + i64(i * ksteps))));
      return tl;
    }
    if (c.bf16) {
      // The tile's rows as bf16 pairs (rows past the edge: zeros, never stored).
      std::string src = ir.op("getelementptr float, ptr " + a_b + ", i64 " + ir.op("mul i64 " + tl.row0 + ", " + i64(f.a_row)));
      ir.line("call void @" + pack_a + "(ptr " + src + ", i64 " + i64(f.a_row) + ", i64 " + i64(f.a_k) + ", i64 " +
              tl.rows + ", i64 " + i64(kk) + ", i64 " + i64(mr) + ", ptr %apack)");
      for (int64_t i = 0; i < mr; ++i) tl.a.push_back(ir.op("getelementptr inbounds i32, ptr %apack, i64 " + i64(i * ksteps)));
      return tl;
    }
    for (int64_t i = 0; i < mr; ++i) {
      // Rows past the edge re-read the last row (their results are not stored).
      std::string r = ir.op("add i64 " + tl.row0 + ", " + i64(t.symbolic ? i : std::min(i, f.m - 1)));
      std::string past = ir.op("icmp sgt i64 " + r + ", " + m_last);
      std::string rc = ir.op("select i1 " + past + ", i64 " + m_last + ", i64 " + r);
      std::string off = ir.op("mul i64 " + rc + ", " + i64(f.a_row));
      tl.a.push_back(ir.op("getelementptr float, ptr " + a_b + ", i64 " + off));
    }
    if (t.symbolic) {  // (f32 only: bf16 rows, AMX's included, returned above)
      std::string first = ir.op("getelementptr float, ptr " + a_b + ", i64 " + ir.op("mul i64 " + tl.row0 + ", " + i64(f.a_row)));
      for (int64_t i = 0; i < mr; ++i) tl.a_full.push_back(ir.op("getelementptr float, ptr " + first + ", i64 " + i64(i * f.a_row)));
    }
    return tl;
  };

  IrText out("o"), in("i");
  Panel pn;
  Tile tl;
  if (t.panel_outer) {
    pn = panel_setup(out, "%o");
    tl = tile_setup(in, "%x");
  } else {
    tl = tile_setup(out, "%o");
    pn = panel_setup(in, "%x");
  }
  auto call_with = [&](const std::vector<std::string>& a) {
    std::string call = "call void @" + mk + "(";
    for (int64_t i = 0; i < (t.amx ? 1 : mr); ++i) call += "ptr " + a[size_t(i)] + ", ";  // (AMX: rows ksteps apart)
    return call;
  };
  std::string pf_arg;
  if (br.next_lines > 0) {
    // This tile's share of the next panel (the last panel re-reads its own: a hint only).
    std::string next = in.op("add i64 %o, 1");
    std::string over = in.op("icmp sge i64 " + next + ", " + i64(t.panels));
    std::string pv = in.op("select i1 " + over + ", i64 %o, i64 " + next);
    std::string off = in.op("add i64 " + in.op("mul i64 " + pv + ", " + i64(ksteps * nr)) + ", " +
                            in.op("mul i64 " + in.op("sub i64 %x, " + m_lo) + ", " + i64(br.next_lines * kLineFloats)));
    pf_arg = ", ptr " + in.op("getelementptr float, ptr " + b_b + ", i64 " + off);
  }
  // The tile's rows of what the epilogue reads, fetched while its k steps run (Note
  // [Epilogue prefetch]).
  for (size_t x = 0; x < epi.accesses.size(); ++x) {
    if (!epi_prefetch[x]) continue;
    const std::string col = in.op("mul i64 " + pn.col0 + ", " + i64(f.epi[x].col));
    for (int64_t i = 0; i < mr; ++i) {
      const std::string row = in.op("mul i64 " + in.op("add i64 " + tl.row0 + ", " + i64(i)) + ", " + i64(f.epi[x].row));
      const std::string first = in.op("add i64 " + row + ", " + col);
      for (int64_t c = 0; c < nr + kLineFloats - 1; c += kLineFloats) {
        const std::string at = in.op("getelementptr float, ptr " + e_b[x] + ", i64 " +
                                     in.op("add i64 " + first + ", " + i64(std::min(c, nr - 1))));
        in.line("call void @llvm.prefetch.p0(ptr " + at + ", i32 0, i32 3, i32 1)");
      }
    }
  }
  // Note [Symbolic full tiles]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // An exact kernel's tiles below its last full one read their rows at constant offsets from
  // one pointer: LLVM proves from m that no row is past the edge and drops the clamps. A
  // symbolic kernel's m is the run's, so every tile kept eight clamped row pointers, and with
  // eight base registers the unrolled k loop spilled vectors (82 stack accesses per iteration
  // of FF2's 128 x 3072 x 768 tile, none in the exact kernel; the kernel ran 1.35-1.4x
  // slower, on the Xeon model 207). So a symbolic tile that is full takes the micro-kernel
  // with the rows at constant offsets, and only the last, partial tile the clamped pointers.
  if (!tl.a_full.empty()) {
    const std::string fits = in.op("icmp eq i64 " + tl.rows + ", " + i64(mr));
    in.line("br i1 " + fits + ", label %mk.full, label %mk.edge");
    in.label("mk.full");
    in.line(call_with(tl.a_full) + pn.b_args + ", ptr %tile" + pf_arg + ")");
    in.line("br label %mk.done");
    in.label("mk.edge");
    in.line(call_with(tl.a) + pn.b_args + ", ptr %tile" + pf_arg + ")");
    in.line("br label %mk.done");
    in.label("mk.done");
  } else {
    in.line(call_with(tl.a) + pn.b_args + ", ptr %tile" + pf_arg + ")");
  }
  IrText ee("f");
  std::vector<std::string> q;
  for (size_t x = 0; x < epi.accesses.size(); ++x) {
    std::string ro = ee.op("mul i64 " + tl.row0 + ", " + i64(f.epi[x].row));
    std::string co = ee.op("mul i64 " + pn.col0 + ", " + i64(f.epi[x].col));
    std::string off = ee.op("add i64 " + ro + ", " + co);
    q.push_back(ee.op("getelementptr " + access_type(epi.accesses[x]) + ", ptr " + e_b[x] + ", i64 " + off));
  }
  std::string full_r = ee.op("icmp eq i64 " + tl.rows + ", " + i64(mr));
  std::string full_c = ee.op("icmp eq i64 " + pn.cols + ", " + i64(nr));
  std::string full = ee.op("and i1 " + full_r + ", " + full_c);
  ee.line("br i1 " + full + ", label %epi.full, label %epi.edge");
  auto call_epi = [&](const std::string& rows, const std::string& cols, bool full) {
    std::string s = "  call void @" + ep + (full && interleaved ? ".full" : "") + "(ptr %tile, ";
    for (const std::string& v : q) s += "ptr " + v + ", ";
    return s + "i64 " + rows + ", i64 " + cols + ")\n";
  };
  os << "outer:\n  %o = phi i64 [ " << o_lo << ", %task ], [ %o.next, %outer.end ]\n" << out.text()
     << "  br label %inner\ninner:\n  %x = phi i64 [ " << i_lo << ", %outer ], [ %x.next, %epi.done ]\n"
     << in.text() << ee.text() << "epi.full:\n" << call_epi(i64(mr), i64(nr), true) << "  br label %epi.done\nepi.edge:\n"
     << call_epi(tl.rows, pn.cols, false) << "  br label %epi.done\nepi.done:\n"
     << "  %x.next = add nuw nsw i64 %x, 1\n  %xmore = icmp slt i64 %x.next, " << i_hi
     << "\n  br i1 %xmore, label %inner, label %outer.end\nouter.end:\n"
     << "  %o.next = add nuw nsw i64 %o, 1\n  %omore = icmp slt i64 %o.next, " << o_hi
     << "\n  br i1 %omore, label %outer, label %task.end\ntask.end:\n"
     << "  %t.next = add nuw nsw i64 %t, 1\n  %tmore = icmp slt i64 %t.next, %task_end\n"
     << "  br i1 %tmore, label %task, label %done\ndone:\n"
     << (t.amx ? "  call void @llvm.x86.tilerelease()\n" : "") << "  ret void\n}\n\n";

  os << kDeclarations << fma_declarations(t.vl)
     << "declare void @fusor_rt_pack_panel(ptr, i64, i64, i64, i64, i64, ptr)\n"
     << "declare void @fusor_rt_pack_panel_bf16(ptr, i64, i64, i64, i64, i64, ptr)\n"
     << "declare void @fusor_rt_pack_conv_tile(ptr, ptr, i64, i64, i64, i64, ptr)\n"
     << "declare void @fusor_rt_pack_a_bf16(ptr, i64, i64, i64, i64, i64, ptr)\n"
     << "declare void @fusor_rt_pack_a_bf16_amx(ptr, i64, i64, i64, i64, i64, ptr)\n"
     << (t.amx ? amx_declarations() : "") << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
  return os.str();
}

}  // namespace fusor
