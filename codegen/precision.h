// The precision contractions compute in (EngineOptions::precision), what the host CPU offers
// for it, and the bfloat16 rounding every bf16 path shares. Layer: codegen.
//
// Note [bf16 contractions]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// With precision bf16 (or auto where it pays, below), every contraction of f32 operands is
// marked ContractionSpec::bf16 (mark_bf16) and keeps the mark where the backend takes it
// (apply_precision, jit/plan.h): the llvm backend computes the GEMM forms in bf16 (Linear
// and MatMul layers, batched products of two activations, 1x1 convolutions) and Winograd's
// 3x3 convolutions (their transformed weights and image as pairs of channels: Note
// [Winograd convolutions], codegen/winograd.h) and the convolutions by output rows that
// pack their panels (strided, with 16 or more output channels per group: Note [Contraction
// kernels]); the convolutions that read their image in place (stride 1 outside Winograd),
// those with fewer output channels per group, and every contraction on another backend,
// stay f32. A fused attention
// (AttentionSpec::bf16) computes both its products so on llvm: Q·Kᵀ from Q's rows and K's
// panels as pairs of the head dim, P·V from the probabilities (rounded after the f32
// softmax) and V's panels as pairs of keys; its scores, softmax and epilogue stay f32, and
// its symbolic form stays f32 (Note [Attention kernels]). A bf16 kernel's
// products read A and B rounded to bfloat16 (8 significant bits, round to nearest even)
// and add up in f32, the way AVX512-BF16's vdpbf16ps computes: per f32 lane,
// acc += a[2i]·b[2i] + a[2i+1]·b[2i+1]. The epilogue (bias, GELU, residual), softmax,
// LayerNorm and every pointwise group stay f32, and so do the outputs.
//   Weights   are rounded and packed once per plan, as pairs of k (PackKind::Bf16Panels,
//             codegen/packing.h): half the bytes of the f32 panels; a B that is not
//             constant is packed to the same layout panel by panel by the kernel
//             (fusor_rt_pack_panel_bf16).
//   Activations are rounded by the kernel itself, a tile's rows at a time
//             (fusor_rt_pack_a_bf16: two vector loads and one vcvtne2ps2bf16 per 32
//             floats), into a stack block the micro-kernel broadcasts pairs from.
// Both conversions flush subnormal inputs to zero and keep NaN and the infinities, as
// vcvtne2ps2bf16 does, so the packed weights and the converted activations agree bit for
// bit whichever path rounded them (to_bf16 is the scalar one).
//
// Error: each product carries the two operands' rounding errors, |δ| <= 2·2⁻⁸ relative;
// the errors of a k-term sum mostly cancel (random signs), so relative to the output's
// scale (max |y|) the error stays near 2⁻⁸·√(Σ pᵢ²)/max|y| <= 2⁻⁸ whatever k is, and a
// worst case (every error one way) grows as 2⁻⁷·√k. Verify mode bounds it by
// kBf16ContractionTolerance per bf16 contraction of a group (jit/verify.h).
//
// Which backends and CPUs: the llvm backend on a CPU with AVX512-BF16 (Zen 4, Xeon since
// Cooper Lake). Elsewhere, and for the kernels it declines (the convolutions above,
// symbolic attention), the kernels compute in f32; explain says which and why.
// In attention the scores' rounding passes through exp: a score off by δ scales its
// probability by e^δ, with δ about 2⁻⁸·√(Σ (qᵢkᵢ)²)·scale; on the BERT layer the fused
// attention's error is 0.0038 of its scale (T=37, tests/jit/precision_test.cpp), inside the
// same per-kernel bound.
// On a CPU with AMX the GEMM forms whose k fills whole AMX steps run on its tiles instead
// (Note [AMX contractions], codegen/llvm/emit_amx.cpp), and the other forms take bf16 only
// where vdpbf16ps runs at least at the f32 FMA rate (JitBackend::bf16_pays): on the 2-vCPU
// Xeon (model 207) it measured 0.5x, so there attention and the convolutions stay f32.
//
// Auto takes bf16 only where it pays: vdpbf16ps does twice the multiply-adds of an f32 FMA
// per instruction, but cores issue it at different rates (Zen 4: one per cycle, as its
// FMAs, so 2x the FLOPs, measured 1.7x on the Linear layers; a 2-vCPU Xeon with AVX512-BF16
// but no AMX (model 207): a quarter of its FMA rate, so half the FLOPs, and its bf16 GEMMs
// ran 2x slower than f32). measured_bf16_speedup() times the micro-kernel's own loop (an
// 8 x 3 tile, panel loads and A broadcasts) in both forms once per process (about 3 ms,
// the best of three; 0.50-0.54 on that Xeon, matching its GEMMs' 0.51) and Auto uses bf16
// from kBf16AutoSpeedup on; Bf16 uses it wherever the instructions exist.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "codegen/kernel_spec.h"
#include "ir/dtype.h"

namespace fusor {

/// What EngineOptions::precision asks for.
enum class Precision : uint8_t {
  Fp32,  ///< every kernel computes in f32
  Bf16,  ///< contractions with constant weights in bf16 where the backend and CPU can
  Auto,  ///< bf16 where the backend and CPU can (AVX512-BF16), else f32
};

/// "fp32", "bf16" or "auto" as a Precision; Error(InvalidArgument) naming the choices otherwise.
Precision parse_precision(const std::string& name);
/// The name parse_precision reads.
const char* precision_name(Precision p);

/// The bf16 instruction sets of the host CPU (cpuid, and the OS's saved vector state).
struct HostBf16 {
  bool avx512_bf16 = false;  ///< vdpbf16ps, vcvtne2ps2bf16 (AVX512-BF16 with AVX512F)
  /// tdpbf16ps (AMX-BF16 and AMX-TILE), with the tile state enabled by the OS and this
  /// process granted it (Note [AMX contractions], codegen/llvm/emit_amx.cpp)
  bool amx_bf16 = false;
  /// Why a CPU with AMX cannot use it here (empty when it can, or has none).
  std::string amx_unusable;
  /// "avx512_bf16 amx_bf16", the ones usable ("none" when neither is), and why AMX is not.
  std::string str() const;
};
/// The host's, read once per process; the first call asks the OS for AMX's tile state.
const HostBf16& host_bf16();

/// The rate of vdpbf16ps multiply-adds over f32 FMA ones on this core (Note [bf16
/// contractions]), timed once per process; 0 without AVX512-BF16.
double measured_bf16_speedup();
/// Auto computes in bf16 from this measured speedup on.
inline constexpr double kBf16AutoSpeedup = 1.3;
/// Whether `p` asks for bf16 on a backend that computes it: Bf16 always, Auto where the host
/// has AMX or measured_bf16_speedup() reaches kBf16AutoSpeedup.
bool wants_bf16(Precision p);

/// Whether a spec may compute in bf16 (Note [bf16 contractions]): a contraction or an
/// attention of f32 operands (the backend decides which of its forms it computes so). When not, *why (if
/// given) says why.
bool bf16_applies(const KernelSpec& spec, std::string* why);
/// Marks `spec` bf16 when bf16_applies; returns whether it did.
bool mark_bf16(KernelSpec& spec);
/// Whether `spec` is marked bf16 (a contraction's or an attention's products).
bool is_bf16(const KernelSpec& spec);
/// Takes the mark back (a backend that computes that form in f32 only).
void clear_bf16(KernelSpec& spec);

/// The verify tolerance each bf16 contraction adds, in units of the output's scale (Note
/// [bf16 contractions]): 4·2⁻⁸, about seven standard deviations of the rounding error of
/// a sum whose terms do not cancel, and twice the 2⁻⁸ the users accept.
inline constexpr double kBf16ContractionTolerance = 4.0 / 256.0;

/// x rounded to bfloat16 as vcvtne2ps2bf16 rounds it: f32_to_bf16 (ir/dtype.h: to nearest
/// even, NaN stays a quiet NaN) with subnormal inputs flushed to a signed zero.
inline uint16_t to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x7f800000u) == 0 ? uint16_t((u >> 16) & 0x8000u) : f32_to_bf16(x);
}
/// Two bf16 as one 32-bit pair, lo in the low half (the order vdpbf16ps reads).
inline uint32_t bf16_pair(float lo, float hi) { return uint32_t(to_bf16(lo)) | uint32_t(to_bf16(hi)) << 16; }

}  // namespace fusor

extern "C" {
/// A tile's A rows as bf16 pairs (Note [bf16 contractions]): for i < rows, dst[i * k2 + j]
/// = bf16_pair(a[i*row_stride + 2j*k_stride], a[i*row_stride + (2j+1)*k_stride]) with
/// k2 = ceil(k / 2) and the element past an odd k read as 0; rows <= i < mr are zeros.
/// Called by JIT kernels of bf16 contractions (only on CPUs with AVX512-BF16, which its
/// vector path uses).
void fusor_rt_pack_a_bf16(const float* a, int64_t row_stride, int64_t k_stride, int64_t rows, int64_t k, int64_t mr,
                          uint32_t* dst);
/// The same pairs in the order AMX tiles load them (Note [AMX contractions]): for each group
/// of 16 rows (mr a multiple of 16), for each step of 16 pairs (ceil(k / 2) a multiple of
/// 16), the 16 rows' 16 pairs, one 64-byte line per row: pair j of row i at
/// dst[(i / 16) * ceil(k/2) * 16 + (j / 16) * 256 + (i % 16) * 16 + j % 16].
void fusor_rt_pack_a_bf16_amx(const float* a, int64_t row_stride, int64_t k_stride, int64_t rows, int64_t k, int64_t mr,
                              uint32_t* dst);
}
