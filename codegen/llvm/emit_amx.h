// The AMX micro-kernel of bf16 GEMM tiles (Note [AMX contractions] in the .cpp): LLVM IR
// text calling LLVM 16's tile intrinsics (llvm.x86.tileloadd64, tdpbf16ps, tilestored64,
// ldtilecfg, tilerelease) with fixed tile registers. No LLVM headers. Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <string>

namespace fusor::llvm_ir {

/// Pairs of k one AMX step reads: a tile row holds 64 bytes, sixteen 32-bit pairs.
inline constexpr int64_t kAmxStepPairs = 16;
/// Rows (and f32 columns) of one AMX tile.
inline constexpr int64_t kAmxTileRows = 16;
/// The AMX tile's columns: a GEMM tile of AMX is kAmxTileRows or twice as many rows by
/// kAmxCols columns (two column tiles).
inline constexpr int64_t kAmxCols = 32;

/// Whether a sum over k fills whole AMX steps: ceil(k / 2) pairs, a multiple of kAmxStepPairs
/// (an odd k's last pair is half zeros). The one rule for what AMX takes (Note [AMX
/// contractions]).
inline bool amx_whole_steps(int64_t k) { return k > 0 && (k + 1) / 2 % kAmxStepPairs == 0; }

/// `define internal void @<name>(ptr %a, ptr %b, ptr %tile)`: the mr x kAmxCols tile (mr 16
/// or 32) of Σ over `ksteps` pairs of k (a multiple of kAmxStepPairs) of A's rows (pairs in
/// the order tiles load them, fusor_rt_pack_a_bf16_amx: per 16 rows and step, 16 rows of 16
/// pairs) by a panel of B pairs ([ksteps][kAmxCols], 32-bit pairs),
/// stored row-major [mr][kAmxCols] as f32 at %tile. The caller has loaded amx_tile_config().
/// With prefetch_bytes > 0 each step prefetches the lines of B that far past its own (into
/// L2 when prefetch_to_l2, else L1).
std::string emit_amx_microkernel(const std::string& name, int64_t mr, int64_t ksteps, int64_t prefetch_bytes,
                                 bool prefetch_to_l2);

/// `@<symbol>.amxcfg`: the 64-byte tile configuration the micro-kernel's tiles assume (palette
/// 1, eight tiles of 16 rows x 64 bytes), as a private constant.
std::string amx_tile_config(const std::string& symbol);

/// The declarations of the tile intrinsics the micro-kernel and its caller use.
std::string amx_declarations();

}  // namespace fusor::llvm_ir
