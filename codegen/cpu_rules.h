// The design rules both x86 backends (llvm, asmjit) follow, in one place, so that their
// kernels split work and keep rows the same way and compute the same floats: which flat
// elements a pointwise task covers (Note [Pointwise tasks], codegen/llvm/emit_pointwise.cpp)
// and when a row reduction keeps a stack scratch row (Note [Row scratch],
// codegen/llvm/emit_reduction.cpp). Layer: codegen.
#pragma once

#include <cstdint>

#include "codegen/kernel_spec.h"

namespace fusor {

/// Chunks of a pointwise task start on multiples of this many elements (cache lines of a
/// contiguous output).
inline constexpr int64_t kPointwiseChunkAlign = 64;
/// Rows up to this many columns (32 KiB of floats: L1) may keep a stack scratch row.
inline constexpr int64_t kRowScratchCols = 8192;

/// Elements of one task of a symbolic pointwise kernel (its total is known at run time
/// only): 64 KiB of floats per operand, enough to amortize a task, small enough to balance.
inline constexpr int64_t kSymbolicPointwiseTaskElements = 16384;
/// The flat elements one task of a pointwise `spec` covers: ceil(total / tasks) rounded up
/// to a multiple of kPointwiseChunkAlign (the last task may cover fewer, tasks past the end
/// none); kSymbolicPointwiseTaskElements for a symbolic spec.
int64_t pointwise_task_elements(const KernelSpec& spec);

/// Whether the row reduction kernel of `spec` keeps a stack scratch row: softmax (its
/// exponentials) and layernorm whose prologue costs more than one contiguous load, for rows
/// of at most kRowScratchCols columns. Exposed for tests, which cover both designs.
bool reduction_uses_scratch(const KernelSpec& spec);
/// Whether that scratch row keeps x itself (the prologue is read once per row).
bool reduction_keeps_x(const KernelSpec& spec);

}  // namespace fusor
