// The register-blocked tile machinery the llvm backend's contraction and attention kernels
// share: the micro-kernel (MR x NR accumulators in vector registers, one broadcast of A per
// row and NR/VL vector loads of B per k step), the epilogue over a finished tile, and the
// choice of tile size. As LLVM IR text, like emit_expr.h. Note [Contraction kernels]
// (emit_contraction.cpp) explains the design. Internal to codegen/llvm. Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/llvm/emit_expr.h"

namespace fusor::llvm_ir {

/// A tile: MR rows x NR = NV * VL columns.
struct TileShape {
  int64_t vl = 16, mr = 0, nv = 0, nr = 0;
};

/// How a micro-kernel reads B.
struct BRead {
  bool masked_image = false;     ///< conv direct: %img, %iy0, %ix0; filter taps and lane masks
  int64_t segs = 1;              ///< segments (filter taps)
  int64_t ks = 0;                ///< steps per segment
  int64_t step = 0;              ///< elements between k steps (packed panel: nr; image: channel stride)
  Conv2dParams conv{};           ///< masked_image: the geometry
  int64_t image_row_stride = 0;  ///< masked_image: elements between image rows
  /// masked_image over flat pixels: B args `ptr %img, i64 %p0`; the panel is nr consecutive
  /// output pixels p0.. of the whole image (across rows: a stride-1 conv whose output rows
  /// are as wide as the image's, so pixel p's tap (ky, kx) is image element
  /// p + (ky*dil_h - pad_t) * w + kx*dil_w - pad_l), each lane masked by its own row and column.
  bool flat = false;
  int64_t prefetch_floats = 0;   ///< packed panel: prefetch B this many floats ahead (0: none)
  bool prefetch_to_l2 = false;   ///< prefetcht1 (into L2) rather than prefetcht0 (into L1)
  /// The steps are a run-time count: the micro-kernel takes a trailing `i64 %ks` (one
  /// segment only; ks is then ignored). Symbolic attention's P·V, over the run's keys.
  bool runtime_ks = false;
  /// Each step is a pair of k in bf16 (Note [bf16 contractions], codegen/precision.h): B's
  /// vectors hold VL 32-bit pairs, each A element is a pair broadcast, and one vdpbf16ps per
  /// accumulator adds both products. AVX-512 (VL 16) and a packed B only.
  bool bf16 = false;
  /// Lines of the next panel to prefetch into L2 over the call (a trailing `ptr %pf`, the
  /// first of them): one every ks / next_lines steps (Note [Contraction kernels]).
  int64_t next_lines = 0;
};

/// "<16 x float>".
std::string vec_type(int64_t vl);
/// An integer as IR text.
std::string i64(int64_t v);

/// A micro-kernel @<name>(ptr %a0..., <B args>, ptr %tile[, i64 %ks]). Row i's A element of segment s,
/// step kk is at a_i + s * ks * astep + kk * astep; the tile is stored row-major [mr][nr].
/// B args: `ptr %b` (a packed panel: (s * ks + kk) * nr + v * vl) or, for masked_image,
/// `ptr %img, i64 %iy0, i64 %ix0` (the tap (ky, kx) reads the image at row iy0 + ky * dil_h,
/// columns ix0 + kx * dil_w + lane, channel kk; lanes outside the image read as 0), or with
/// br.flat `ptr %img, i64 %p0` (BRead::flat).
std::string emit_microkernel(const std::string& name, const TileShape& t, const BRead& br, int64_t astep);

/// Per epilogue access: elements between tile rows and between tile columns.
struct TileAccess {
  int64_t row = 0, col = 0;
};

/// An epilogue @<name>(ptr %tile, ptr %p0..., [ptr %sink,] i64 %rows, i64 %cols) running
/// `g` over the tile's valid [rows][cols] elements (rows outer, columns inner) with Acc =
/// the tile element and %p<x> = access x at the tile's first element. With sink_row_stride,
/// the graph's value (its last node, or Acc when it has none) is also stored to
/// %sink + row * sink_row_stride + col; a negative sink_row_stride is a run-time one, the
/// parameter `i64 %sinkstride` after %sink. With interleave > 1 (dividing nr), a full tile's
/// epilogue (%cols = nr): `interleave` copies of the body side by side, each over its
/// nr / interleave columns, whose loop carries metadata !<loop_id> .. !<loop_id + 2> (written
/// after the function; the module's other metadata must not use those numbers) asking the
/// vectorizer for that width (Note [Epilogue interleaving], emit_tile.cpp), and whose loop
/// over rows carries !<loop_id + 3> .. !<loop_id + 4>, never vectorized.
std::string emit_tile_epilogue(const std::string& name, const ExprGraph& g, const std::vector<TileAccess>& strides,
                               int64_t nr, int64_t sink_row_stride, int64_t interleave = 1, int loop_id = 0);

/// The tile for `rows` rows whose B splits into panels(nr) panels: the least work wasted on
/// edge tiles plus a per-step overhead, among the tiles tile_fits allows. With fixed_nv > 0
/// only tiles of that many vectors per row are considered (the panel width is given: a
/// constant B packed for every shape).
void choose_tile(int64_t vector_floats, int64_t rows, const std::function<int64_t(int64_t nr)>& panels, TileShape* t,
                 int64_t fixed_nv = 0);
/// Whether an MR x NV tile fits the registers choose_tile allows (MR*NV <= 24 with AVX-512,
/// <= 12 with AVX2; MR <= 14, <= 8; NV <= 4; and MR*NV + NV + 1, the accumulators, a step's
/// B vectors and a broadcast, within the 32 or 16 vector registers).
bool tile_fits(int64_t vector_floats, int64_t mr, int64_t nv);
/// Every tile choose_tile considers, best first by its cost (ties: the larger tile first);
/// with `within` > 0 only those costing at most `within` times the best: the candidates a
/// tuned compile times (Note [Tuned tilings], emit_contraction.cpp).
std::vector<TileShape> ranked_tiles(int64_t vector_floats, int64_t rows,
                                    const std::function<int64_t(int64_t nr)>& panels, int64_t fixed_nv = 0,
                                    double within = 0);

/// The declarations the micro-kernels need (llvm.fma and llvm.masked.load at width vl, and
/// the AVX512-BF16 dot product).
std::string fma_declarations(int64_t vl);

}  // namespace fusor::llvm_ir
