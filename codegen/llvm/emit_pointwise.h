// The LLVM IR of a Pointwise KernelSpec, as text (LLVM 16, opaque pointers), for LlvmJit.
// The kernel follows the ABI of codegen/kernel_spec.h; how it splits work into tasks and
// how its inner loop is shaped for LLVM's loop vectorizer is Note [Pointwise tasks] and
// Note [Pointwise inner loop] in the .cpp. No LLVM headers: the IR is built as a string.
// Layer: codegen/llvm.
#pragma once

#include <string>

#include "codegen/kernel_spec.h"

namespace fusor {

/// Whether emit_pointwise_ir takes `spec`; when not, *why (if given) says what it declines:
/// a kind other than Pointwise, a dtype other than f32 (bool is taken only as a Where
/// condition loaded from a buffer), an op it has no form for, a malformed graph.
bool pointwise_supports(const KernelSpec& spec, std::string* why);

/// The module defining `void @<symbol>(ptr %buffers, i64 %task_begin, i64 %task_end)` that
/// computes tasks [task_begin, task_end) of `spec` (see KernelSpec::tasks). Throws
/// Error(Unsupported) with the reason when pointwise_supports(spec) is false.
/// `vector_floats` (8 with AVX2, 16 with AVX-512) sizes the inner loop's interleaving.
std::string emit_pointwise_ir(const KernelSpec& spec, const std::string& symbol, int64_t vector_floats);

}  // namespace fusor
