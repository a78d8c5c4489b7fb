// The design rules both x86 backends (llvm, asmjit) follow, in one place, so that their
// kernels split work and keep rows the same way and compute the same floats: which flat
// elements a pointwise task covers (Note [Pointwise tasks], codegen/llvm/emit_pointwise.cpp)
// when a row reduction keeps a stack scratch row (Note [Row scratch],
// codegen/llvm/emit_reduction.cpp), and how far a GEMM prefetches its packed weights.
// Layer: codegen.
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

/// Outputs of a pointwise kernel from this many bytes on are written with streaming
/// (non-temporal) stores: far beyond a core's L2 and its share of L3, a plain store's line
/// is first read from memory (RFO) only to be evicted unread; streaming stores skip that
/// read, a third of the traffic (Note [Streaming stores], codegen/llvm/emit_pointwise.cpp).
/// The llvm backend streams; asmjit, the tier that serves a shape while LLVM compiles,
/// stores plainly (the floats are the same either way).
inline constexpr int64_t kStreamingStoreBytes = int64_t(32) << 20;
/// Whether the pointwise kernel of `spec` streams its stores: not symbolic, every store an
/// f32 run (inner stride 1), kStreamingStoreBytes or more stored in all, and a body bound by
/// memory: no division, root or transcendental, whose cost per vector hides the memory
/// traffic (measured on the 2-vCPU Xeon over 16M floats: mul/add/relu/mul/add 12-14 ms ->
/// 9-11 ms streamed, the same chain with tanh 18-20 ms -> 21-22 ms).
bool pointwise_streams_stores(const KernelSpec& spec);

/// How far ahead (floats) a GEMM micro-kernel prefetches a constant B packed once per plan:
/// 4 KiB, about the bytes consumed while one L3 or DRAM miss is outstanding, which keeps
/// more misses in flight than the hardware prefetchers do while the FMAs run (Note
/// [Contraction kernels], codegen/llvm/emit_contraction.cpp; Note [asmjit GEMM kernels]).
inline constexpr int64_t kPackedPanelPrefetchFloats = 1024;

/// Whether the row reduction kernel of `spec` keeps a stack scratch row: softmax (its
/// exponentials) and layernorm whose prologue costs more than one contiguous load, for rows
/// of at most kRowScratchCols columns. Exposed for tests, which cover both designs.
bool reduction_uses_scratch(const KernelSpec& spec);
/// Whether that scratch row keeps x itself (the prologue is read once per row).
bool reduction_keeps_x(const KernelSpec& spec);

}  // namespace fusor
