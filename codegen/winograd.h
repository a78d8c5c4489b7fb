// Winograd F(2x2, 3x3) convolution: the transforms a JIT convolution kernel runs around its
// GEMMs, and the packed layout of its transformed weights. Backend-neutral (the transforms
// are runtime routines JIT code calls, like codegen/packing.h's). Layer: codegen.
//
// Note [Winograd convolutions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A 3x3, stride-1, undilated, ungrouped convolution computes each 2x2 block ("tile") of
// output pixels from the 4x4 input patch under it as
//     Y = Aᵀ [ Σ_c (G g_{m,c} Gᵀ) ⊙ (Bᵀ d_{c,tile} B) ] A,
// 16 products per tile and channel pair instead of 36 (2.25x fewer multiplications). With
// U[ξ][m][c] = (G g Gᵀ)_ξ (the weights, transformed once when packed) and V[ξ][c][tile] =
// (Bᵀ d B)_ξ (the image, transformed per task), the sum is 16 independent GEMMs
// M[ξ] = U[ξ] · V[ξ] over the channels: the contraction kernels' micro-kernel runs them,
// then Aᵀ M A gives the tile's four outputs, which go through the spec's epilogue. The
// matrices (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016):
//     Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1]
//     Aᵀ = [1 1 1 0; 0 1 -1 -1]
// Tiles are numbered row-major over the output (ceil(oh/2) x ceil(ow/2)); a task transforms
// one panel of NR consecutive tiles, which may run across tile rows. Floating point: the
// transforms add and subtract (½ in G is exact), so each output is a different sum of the
// same products as the direct convolution's, with a few more roundings (tests bound it).
//
// bf16 (Note [bf16 contractions], codegen/precision.h): the 16 GEMMs take U and V as bf16
// pairs of channels, so both are rounded in the transformed domain. U is packed once as
// [16][ceil(M / mr)][ceil(C / 2)][mr] pairs (PackKind::Bf16WinogradWeights), V is written as
// [16][ceil(C / 2)][nr] pairs by fusor_rt_winograd_input_bf16, and the micro-kernel runs
// vdpbf16ps over ceil(C / 2) steps; the output transform and the epilogue stay f32. A
// transformed value is a sum of up to 4 image values (Bᵀ d B) or 9 weights (G g Gᵀ), so its
// rounding is 2⁻⁹ of that sum, not of each term, and the output transform adds 9 such
// products with signs. Measured: on the sweep of tests/codegen/llvm/bf16_test.cpp (outputs
// of unit spread) the worst error against the f32 convolution is 0.018 (4.6·2⁻⁸); on the
// ResNet bottleneck at 14x14 the output's error is 4.5e-3 of its scale with the 3x3 in bf16,
// 3.2e-3 with it in f32; each conv within kBf16ContractionTolerance (verify: 0.0029 of scale).
#pragma once

#include <cstdint>

#include "codegen/kernel_spec.h"

namespace fusor {

/// Whether `c` is a convolution Winograd F(2x2, 3x3) computes: 3x3, stride 1, dilation 1,
/// one group, the image read with unit column stride.
bool winograd_applies(const ContractionSpec& c);

/// Output tiles of one image: ceil(oh / 2) * ceil(ow / 2).
int64_t winograd_tiles(const Conv2dParams& p);

/// Floats of the transformed weights packed with `mr` rows: [16][ceil(M / mr)][C][mr], or
/// in bf16 32-bit pairs of channels [16][ceil(M / mr)][ceil(C / 2)][mr] (one float each).
int64_t winograd_weight_floats(const ContractionSpec& c, int64_t mr, bool bf16 = false);

/// Transforms and packs the convolution's weights (the buffer c.b.buffer points at, read
/// through c.b) into `dst`: dst[((ξ * mtiles + tile) * C + ci) * mr + i] = (G g Gᵀ)_ξ of
/// output channel tile * mr + i and input channel ci; rows past M are 0.
void pack_winograd_weights(const ContractionSpec& c, int64_t mr, const float* weights, float* dst);
/// The same as bf16 pairs of input channels: dst[((ξ * mtiles + tile) * C2 + q) * mr + i] =
/// bf16_pair(U of channel 2q, U of channel 2q + 1) with C2 = ceil(C / 2), the channel past an
/// odd C and rows past M 0 (U as pack_winograd_weights rounds it to f32, then to bf16).
void pack_winograd_weights_bf16(const ContractionSpec& c, int64_t mr, const float* weights, uint32_t* dst);

/// The geometry fusor_rt_winograd_input reads, as the int64 array JIT code passes.
enum WinogradGeo : int { kWgC, kWgH, kWgW, kWgPadT, kWgPadL, kWgTilesX, kWgStrideC, kWgStrideY, kWgCount };

}  // namespace fusor

extern "C" {
/// The transformed image of tiles [t0, t0 + count) of one image `x` (channel 0, row 0,
/// column 0): v[(ξ * C + c) * nr + j] = (Bᵀ d B)_ξ of channel c and tile t0 + j, with d the
/// 4x4 patch at rows 2 ty - pad_t + (0..3), columns 2 tx - pad_l + (0..3) (0 outside the
/// image); tiles count <= j < nr are 0. geo is indexed by fusor::WinogradGeo. Called by JIT
/// kernels (Note [Winograd convolutions]).
void fusor_rt_winograd_input(const float* x, const int64_t* geo, int64_t t0, int64_t count, int64_t nr, float* v);
/// The same on any CPU, one tile at a time: what fusor_rt_winograd_input does where the CPU
/// has no AVX-512 (exposed so that tests compare both paths).
void fusor_rt_winograd_input_portable(const float* x, const int64_t* geo, int64_t t0, int64_t count, int64_t nr, float* v);
/// The transformed image as bf16 pairs of channels (Note [Winograd convolutions], bf16):
/// v[(ξ * C2 + q) * nr + j] = fusor::bf16_pair of the values fusor_rt_winograd_input gives
/// for channels 2q and 2q + 1 (0 for the channel past an odd C) and tile t0 + j, C2 =
/// ceil(C / 2); tiles count <= j < nr are 0. Called by bf16 Winograd kernels.
void fusor_rt_winograd_input_bf16(const float* x, const int64_t* geo, int64_t t0, int64_t count, int64_t nr,
                                  uint32_t* v);
}
