// The LLVM IR of a RowReduction KernelSpec (softmax, layernorm, sum, mean, max over the last
// dim of its row space, with a pointwise prologue and epilogue), as text (LLVM 16, opaque
// pointers), for LlvmJit. The kernel follows the ABI of codegen/kernel_spec.h with one task
// per row; how a row is computed (scratch or recompute, the statistics, vectorization and
// its error) is Note [Row reduction kernels] in the .cpp. No LLVM headers.
// Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/kernel_spec.h"

namespace fusor {

/// Whether emit_reduction_ir takes `spec`; when not, *why (if given) says what it declines:
/// a kind other than RowReduction, dtypes other than f32 (bool only as a Where condition),
/// a prologue with stores or without a value, Acc/RowStat where they mean nothing, a
/// buffer both read and written, a malformed graph.
bool reduction_supports(const KernelSpec& spec, std::string* why);

/// The module defining `void @<symbol>(ptr %buffers, i64 %task_begin, i64 %task_end)` that
/// computes rows [task_begin, task_end) of `spec` (one task per row: KernelSpec::tasks is
/// the row count, as lowering sets it; tasks past the last row do nothing). Throws
/// Error(Unsupported) with the reason when reduction_supports(spec) is false.
std::string emit_reduction_ir(const KernelSpec& spec, const std::string& symbol);

}  // namespace fusor
