// Operand packing for the JIT contraction kernels: the layouts the register-blocked
// micro-kernels read, and the routines that produce them. Backend-neutral (the LLVM and
// asmjit backends' kernels call the same routines, so one piece of code owns each layout).
// Layer: codegen.
//
// Note [Packed layouts]
// ~~~~~~~~~~~~~~~~~~~~~
// A micro-kernel computes an MR x NR tile of C with NR/VL vector accumulators per row; per k
// step it loads NR/VL vectors of B and broadcasts MR elements of A. The layouts it reads:
//   GEMM B:       [batch_b][panel][k][NR]: panels of NR columns, zero-padded past the last
//                 column; batch_b is 1 when B does not vary over the batch dims (all its
//                 batch strides 0), else every batch index in row-major order.
//   Conv weights: A of a convolution (rows = output channels), [group][mtile][kh][kw][c][MR]
//                 with c over the group's input channels and rows past the group's last
//                 channel zero: the reduction index runs (kh, kw, c), so for a fixed filter
//                 tap the kernel reads the image at one (h, w) shift through every channel.
//   GEMM B, bf16: (PackKind::Bf16Panels, Note [bf16 contractions] in codegen/precision.h)
//                 [batch_b][panel][ceil(k/2)][NR] 32-bit pairs: element (kk, j) is the
//                 bf16 of B[kk, j] in the low half of pair (kk/2, j) for even kk, the high
//                 half for odd kk; columns past the last and the row past an odd k are 0.
//   Conv weights, bf16: (Bf16Panels of a convolution) [group][mtile][ceil(k/2)][MR] pairs
//                 of the f32 layout's reduction rows (k = kh*kw*c/group flattened: a pair
//                 may join the last channel of one tap and the first of the next).
//   Conv panel:   B of a strided convolution, NR output pixels of one output row as
//                 [kh][kw][c][NR] with zeros where the window leaves the image
//                 (fusor_rt_pack_conv_tile); unit-stride convolutions read the image itself.
//                 In bf16 every convolution by rows packs its panels so, then as pairs of
//                 rows (fusor_rt_pack_panel_bf16), to match its weights.
// Constant operands (weights) are packed once per plan (pack_b); a non-constant GEMM B is
// packed panel by panel inside the kernel (fusor_rt_pack_panel).
#pragma once

#include <cstdint>
#include <string>

#include "codegen/kernel_spec.h"

namespace fusor {

/// Which layout a packed constant operand has: the micro-kernels' panels (Note [Packed
/// layouts]), a Winograd convolution's transformed weights (codegen/winograd.h), a GEMM B's
/// panels of bf16 pairs (Bf16Panels), or the transformed weights as bf16 pairs of channels
/// (Bf16WinogradWeights).
enum class PackKind : uint8_t { Panels, WinogradWeights, Bf16Panels, Bf16WinogradWeights };

/// Whether a contraction's B operand varies over its batch dims (GEMM only; conv weights
/// vary over groups, see packed_b_batches).
bool b_varies_over_batch(const ContractionSpec& c);
/// How many blocks a packed B holds (Note [Packed layouts]): GEMM batches, conv groups.
int64_t packed_b_batches(const ContractionSpec& c);
/// The reduction length a micro-kernel walks: k (GEMM) or C/group * kh * kw (conv).
int64_t reduction_length(const ContractionSpec& c);
/// The width the packed operand is split along: n (GEMM B's columns) or M/group (conv
/// weights' output channels).
int64_t b_columns(const ContractionSpec& c);
/// Floats (4-byte words: a Bf16Panels pair takes one) of the spec's B operand packed with
/// `width` (NR of a GEMM, MR of a conv).
int64_t packed_b_floats(const ContractionSpec& c, int64_t width, PackKind kind = PackKind::Panels);
/// Packs the contraction's B operand (the buffer c.b.buffer points at, read through c.b:
/// a GEMM's B or a convolution's weights) into `dst` (packed_b_floats(c, width, kind)
/// floats), as Note [Packed layouts] (or, for WinogradWeights, codegen/winograd.h) says.
void pack_b(const ContractionSpec& c, int64_t width, const float* b_buffer, float* dst, PackKind kind = PackKind::Panels);

/// Everything besides the source data that pack_b's output depends on, as bytes: packed
/// copies of one constant are shared by every kernel (every shape) with equal layout bytes.
/// A GEMM's rows (m), which change with the sequence length, are not part of it.
std::string packed_b_layout(const ContractionSpec& c, int64_t width, PackKind kind = PackKind::Panels);

/// The geometry pack_conv_tile reads, as the int64 array JIT code passes (one per kernel).
enum ConvGeo : int {
  kGeoC, kGeoH, kGeoW, kGeoKh, kGeoKw, kGeoStrideH, kGeoStrideW, kGeoDilH, kGeoDilW, kGeoPadT, kGeoPadL,
  kGeoStrideC, kGeoStrideY, kGeoStrideX, kGeoCount
};

}  // namespace fusor

extern "C" {
/// One B panel: dst[kk * nr + j] = src[kk * sk + j * sn] for j < n_valid, 0 for
/// n_valid <= j < nr, kk < k. Called by JIT kernels for a non-constant B.
void fusor_rt_pack_panel(const float* src, int64_t sk, int64_t sn, int64_t k, int64_t n_valid, int64_t nr, float* dst);
/// The same panel as bf16 pairs of k (the Bf16Panels layout, Note [Packed layouts]):
/// dst[q * nr + j] = bf16_pair(src[2q * sk + j * sn], src[(2q+1) * sk + j * sn]) for
/// q < ceil(k / 2), j < n_valid, with 0 past an odd k and for n_valid <= j < nr.
void fusor_rt_pack_panel_bf16(const float* src, int64_t sk, int64_t sn, int64_t k, int64_t n_valid, int64_t nr,
                              uint32_t* dst);
/// One convolution panel of output row `oh`, columns [ow0, ow0 + mr_valid): dst is
/// [kh][kw][c][mr] (columns past mr_valid and taps in the padding are 0). `x` points at the
/// tile's image and group (channel 0 of the group); geo is indexed by fusor::ConvGeo.
void fusor_rt_pack_conv_tile(const float* x, const int64_t* geo, int64_t oh, int64_t ow0, int64_t mr_valid, int64_t mr,
                             float* dst);
}
