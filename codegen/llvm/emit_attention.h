// The LLVM IR of an Attention KernelSpec: softmax(score(Q·Kᵀ))·V with the epilogue, one
// kernel, the scores of a block of query rows kept in a stack scratch (never in memory the
// caller sees). As text (LLVM 16, opaque pointers), for LlvmJit; Note [Attention kernels]
// in the .cpp. No LLVM headers. Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/llvm/emit_contraction.h"
#include "codegen/llvm/emit_tile.h"

namespace fusor {

/// How one attention kernel is blocked.
struct AttentionTiling {
  llvm_ir::TileShape qk, pv;   ///< the tiles of Q·Kᵀ and of P·V
  int64_t rows_per_task = 0;   ///< query rows of one block (the scores' scratch holds them)
  int64_t row_blocks = 0;      ///< blocks of rows_per_task per batch index
  int64_t blocks_per_task = 1; ///< row blocks of one task, which packs K and V once for them
  int64_t batches = 1;
  /// Queries and keys are both the run's extent (Note [Symbolic kernels]): row_blocks is
  /// that of kSymbolicTypicalM, the kernel counts the run's (one block per task).
  bool symbolic = false;
  int64_t tasks_per_batch() const { return (row_blocks + blocks_per_task - 1) / blocks_per_task; }
  int64_t tasks() const { return batches * tasks_per_batch(); }
  /// One line for dumps.
  std::string str() const;
};

/// Whether emit_attention_ir takes `spec`; when not, *why (if given) says why: a kind other
/// than Attention, dtypes other than f32, empty sizes, a score graph that stores, scratch
/// beyond the stack budget, malformed graphs.
bool attention_supports(const KernelSpec& spec, std::string* why);

/// The blocking for `spec` with vectors of `vector_floats` floats: the rules', with
/// `choice`'s tiles (mr/nv for Q·Kᵀ, pv_mr/pv_nv for P·V) where they fit the registers
/// (Note [Tuned tilings], emit_contraction.cpp). Deterministic, as contraction_tiling.
AttentionTiling attention_tiling(const KernelSpec& spec, int64_t vector_floats, const TilingChoice& choice = {});

/// The tilings a tuned compile times for an attention `spec`: the rules' first, then the
/// cost model's runners-up for Q·Kᵀ (any width, so a machine where narrow panels win shows
/// it) and for P·V, each within the stack scratch. Only the rules' for a symbolic kernel.
std::vector<TilingChoice> attention_candidates(const KernelSpec& spec, int64_t vector_floats);

/// The most keys (and queries) a symbolic attention kernel of `spec` serves: its stack
/// scratch grows with them. A run at a longer length needs the exact kernel (which the
/// same budget bounds) or the static kernels.
int64_t attention_max_extent(const KernelSpec& spec);

/// The module defining `void @<symbol>(ptr %buffers, i64 %task_begin, i64 %task_end)` over
/// [0, t.tasks()). Throws Error(Unsupported) when attention_supports(spec) is false.
std::string emit_attention_ir(const KernelSpec& spec, const std::string& symbol, const AttentionTiling& t);

}  // namespace fusor
