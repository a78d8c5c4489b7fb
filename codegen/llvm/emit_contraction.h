// The LLVM IR of a Contraction KernelSpec (batched GEMM with any strides, Conv2d with any
// stride, padding, dilation and groups), with its epilogue applied to each tile of
// accumulators before the single store. As text (LLVM 16, opaque pointers), for LlvmJit.
// How tiles, panels and tasks are laid out is Note [Contraction kernels] in the .cpp; the
// packed operand layouts are codegen/packing.h's. No LLVM headers. Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/packing.h"

namespace fusor {

/// How one contraction kernel is blocked, chosen from the spec and the vector width.
struct ContractionTiling {
  int64_t vl = 16;              ///< floats per vector register
  int64_t mr = 0;               ///< tile rows (A side: GEMM rows, conv output channels)
  int64_t nv = 0;               ///< vector accumulators per tile row
  int64_t nr = 0;               ///< tile columns (B side: GEMM columns, conv pixels), nv * vl
  bool conv_rows = false;       ///< a convolution by output rows (not the 1x1 GEMM form)
  bool direct = false;          ///< conv_rows: pixels loaded from the image, masked per tap
  bool flat = false;            ///< direct: panels of consecutive pixels across output rows
  /// Winograd F(2x2, 3x3) (emit_winograd.h): panels of NR output tiles; the packed weights
  /// are transformed (PackKind::WinogradWeights, width mr).
  bool winograd = false;
  bool bf16 = false;            ///< operands in bf16, k in pairs (ContractionSpec::bf16)
  /// bf16 on AMX tiles (Note [AMX contractions], emit_amx.cpp): mr 16 or 32, nr 32, k/2 in
  /// whole steps of 16 pairs.
  bool amx = false;
  bool prepack = false;         ///< the spec's B (GEMM B, conv weights) is constant and packed
                                ///< once by the runtime (codegen/packing.h)
  bool panel_outer = true;      ///< inside a task: panels outer, tiles inner (else the reverse)
  int64_t batches = 1;          ///< GEMM batch product; conv N * group
  int64_t m_tiles = 0;          ///< tiles per batch
  int64_t panels = 0;           ///< B panels per batch
  int64_t tiles_per_chunk = 0;  ///< tiles of one task
  int64_t panels_per_chunk = 0; ///< panels of one task
  int64_t m_chunks = 0, n_chunks = 0;
  /// A prepacked B (not Winograd's, not a direct convolution's): how far ahead the micro-kernel prefetches the packed
  /// panel, in floats (0: no prefetch), into L2 (prefetcht1) or L1, and whether each tile
  /// also prefetches its share of the task's next panel (Note [Contraction kernels]).
  int64_t prefetch_floats = 0;
  bool prefetch_to_l2 = false;
  bool next_panel = false;
  bool symbolic = false;        ///< m is read at run time: m_tiles and m_chunks are those of
                                ///< kSymbolicTypicalM, the kernel computes the run's
  /// Tasks of the kernel: batches x n_chunks x m_chunks.
  int64_t tasks() const { return batches * n_chunks * m_chunks; }
  /// One line for dumps: "tiling: mr=8 nr=48 (3 x 16 floats) tiles=16 panels=64 ...".
  std::string str() const;
};

/// What measurement may change in the rules' tiling of a contraction (Note [Tuned tilings]
/// in the .cpp): the tile and the blocking of tasks. A zero (or -1) field keeps the rules'
/// choice; an empty choice is the rules' tiling.
struct TilingChoice {
  int64_t mr = 0, nv = 0;             ///< the tile: rows and vectors per row (both or neither)
  int64_t panel_outer = -1;           ///< 1 panels outer, 0 tiles outer (GEMMs with a prepacked B only)
  int64_t tiles_per_chunk = 0;        ///< tiles of one task
  int64_t panels_per_chunk = 0;       ///< panels of one task
  int64_t prefetch = -1;              ///< floats ahead the packed panel is prefetched (0: none)
  int64_t prefetch_l2 = -1;           ///< 1 into L2, 0 into L1 (with the next panel's prefetch)
  /// Attention (emit_attention.h): mr/nv are Q·Kᵀ's tile, these P·V's (both or neither).
  int64_t pv_mr = 0, pv_nv = 0;
  /// Every field the rules' (str() "rules").
  bool empty() const;
  bool operator==(const TilingChoice&) const = default;
  /// "mr=6 nv=4 outer=1 tiles=3 panels=2 prefetch=2048 l2=1 pv_mr=10 pv_nv=2", the fields
  /// set; "rules" when empty.
  std::string str() const;
  /// The choice str() wrote; nullopt for anything else (a field out of range included).
  static std::optional<TilingChoice> parse(std::string_view text);
};

/// bf16: the bytes of A pairs (a task's rows, k/2 pairs of 4 bytes each) a task converts once,
/// at its start, on the stack; a bf16 task with panels outer takes no more rows than fit
/// (Note [Contraction kernels]).
inline constexpr int64_t kBf16TaskABytes = 256 * 1024;

/// The m a symbolic GEMM's tile and task split are chosen for (Note [Symbolic kernels]):
/// a sequence of 128 tokens, the middle of BERT's usual range.
inline constexpr int64_t kSymbolicTypicalM = 128;

/// Whether emit_contraction_ir takes `spec`; when not, *why (if given) says why: a kind
/// other than Contraction, dtypes other than f32 (bool only as a Where condition in the
/// epilogue), empty sizes, a convolution with non-constant weights, an epilogue operand
/// the tile loops cannot address, scratch beyond the stack budget, a malformed epilogue.
bool contraction_supports(const KernelSpec& spec, std::string* why);

/// A core's L2 where the host does not say (host_l2_bytes): the Zen 4 and Zen 5 cores'.
inline constexpr int64_t kDefaultL2Bytes = int64_t(1) << 20;

/// The L2 cache of one core of the host, in bytes, as the C library reads it (cpuid),
/// within [256 KiB, 8 MiB]; kDefaultL2Bytes when it cannot tell.
int64_t host_l2_bytes();

/// The blocking for `spec` on a target whose vectors hold `vector_floats` floats (16 with
/// AVX-512, 8 with AVX2) and whose cores have `l2_bytes` of L2: the rules', with `choice`'s fields in place of theirs where they
/// apply (a tile beyond the registers, or an orientation the form does not allow, keeps the
/// rules'; chunks are clamped to the tiles and panels there are). Deterministic: a kernel
/// loaded with its stored choice gets the tiling it was compiled with. With `amx` (the target
/// computes tdpbf16ps) a bf16 GEMM form whose k steps are whole takes AMX tiles (amx_applies).
ContractionTiling contraction_tiling(const KernelSpec& spec, int64_t vector_floats, const TilingChoice& choice = {},
                                     int64_t l2_bytes = kDefaultL2Bytes, bool amx = false);

/// Whether a target with AMX computes `spec` on AMX tiles (Note [AMX contractions]): a bf16
/// GEMM form (a 1x1 convolution included) whose k/2, rounded up, is a multiple of 16.
bool amx_applies(const KernelSpec& spec);

/// The tilings a tuned compile times for `spec` (Note [Tuned tilings]): the rules' first
/// (empty), then the runners-up of the tile's cost model, the other loop order, the rules'
/// blocking with half and twice the tiles or panels per task, and for a prepacked B the
/// prefetch at half and twice its distance and into the other cache. Only the rules' for a
/// symbolic kernel or a Winograd convolution; an AMX tiling keeps its tile (only its
/// blocking and prefetch vary).
std::vector<TilingChoice> tiling_candidates(const KernelSpec& spec, int64_t vector_floats,
                                           int64_t l2_bytes = kDefaultL2Bytes, bool amx = false);

/// The module defining `void @<symbol>(ptr %buffers, i64 %task_begin, i64 %task_end)` over
/// [0, t.tasks()). When t.prepack, buffers[spec.contraction.b.buffer] must hold that operand
/// packed by pack_b(spec.contraction, prepack_width(t), ...) instead of itself. Throws Error(Unsupported) with
/// the reason when contraction_supports(spec) is false.
std::string emit_contraction_ir(const KernelSpec& spec, const std::string& symbol, const ContractionTiling& t);

/// The width of the packed layout (codegen/packing.h): NR for a GEMM's B, MR for conv weights.
inline int64_t prepack_width(const ContractionTiling& t) { return t.conv_rows ? t.mr : t.nr; }
/// The kind of the packed layout.
inline PackKind prepack_kind(const ContractionTiling& t) {
  if (t.winograd) return t.bf16 ? PackKind::Bf16WinogradWeights : PackKind::WinogradWeights;
  return t.bf16 ? PackKind::Bf16Panels : PackKind::Panels;
}

}  // namespace fusor
