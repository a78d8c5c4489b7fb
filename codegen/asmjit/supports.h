// What the asmjit backend takes, per kernel kind, and the task split of its pointwise
// kernels: plain checks over a KernelSpec that need no asmjit, so a build without asmjit
// answers asmjit_supports() the same. Internal to codegen/asmjit (std and codegen only).
// Layer: codegen/asmjit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu_rules.h"
#include "codegen/index_math.h"
#include "codegen/expr_check.h"
#include "codegen/kernel_spec.h"

namespace fusor::asmjit_emit {

// The expression-graph checks are codegen/expr_check.h's (shared by every backend).
using fusor::check_buffer_use;
using fusor::check_expr;
using fusor::ExprRules;

/// Whether the pointwise emitter takes `spec`; *why says what it declines.
bool pointwise_supports(const KernelSpec& spec, std::string* why);

/// Whether the row reduction emitter takes `spec`; *why says what it declines.
bool reduction_supports(const KernelSpec& spec, std::string* why);

/// Whether the contraction emitter takes `spec` (GEMM, and Conv2d as an implicit GEMM);
/// *why says what it declines: dtypes other than f32, operand strides a vector gather
/// cannot span, convolution weights or outputs whose (c, kh, kw) or (oh, ow) do not flatten
/// to one stride, an im2col panel beyond kConvPanelBytes, a malformed epilogue.
bool contraction_supports(const KernelSpec& spec, std::string* why);

/// The one stride that walks dims `sizes` (outermost first, `strides` theirs) as a flat
/// row-major index: the stride of the innermost dim of size > 1 (1 when there is none), if
/// every dim of size > 1 steps over the dims inside it; nullopt otherwise.
std::optional<int64_t> flat_stride(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

/// The largest im2col panel (c/group * kh * kw rows of 32 floats) a convolution kernel keeps
/// on the stack.
inline constexpr int64_t kConvPanelBytes = 256 * 1024;

/// Rows of M one GEMM task covers at most.
inline constexpr int64_t kGemmTaskRows = 64;

/// The most vectors a panel of B spans (Note [asmjit GEMM kernels]).
inline constexpr int kMaxPanelVectors = 3;
/// A micro-kernel tile's rows: a GEMM's 8 x 3 vectors with AVX-512 (24 accumulators of 32
/// registers, and kGemmTaskRows a multiple), a convolution's 6 x 2; 4 x 2 with AVX2's 16.
inline int64_t gemm_tile_rows(bool conv, bool avx512) { return avx512 ? (conv ? 6 : 8) : 4; }
/// The vectors of a micro-kernel tile's row, the width of B's panels in vectors.
inline int gemm_panel_vectors(bool conv, bool avx512) { return avx512 && !conv ? 3 : 2; }

/// How an asmjit contraction is split into tasks and where it reads B (Note [asmjit GEMM
/// kernels]): a GEMM's tasks are (batch, chunk of panels, block of kGemmTaskRows rows), rows
/// fastest, and a constant B is packed once by the runtime (codegen/packing.h,
/// PackKind::Panels of width nb); a Conv2d's are (image and group, chunk of panels of output
/// pixels), every output channel in each.
struct GemmTasks {
  int64_t nb = 0;               ///< panel columns: gemm_panel_vectors() vectors
  bool prepack = false;         ///< B is constant: packed once per plan, width nb
  int64_t batches = 1, m_blocks = 1, panels = 1, panels_per_task = 1, n_chunks = 1;
  int64_t tasks() const { return batches * n_chunks * m_blocks; }
};
/// The split of a contraction `spec` (asmjit_supports) for vectors of AVX-512 or AVX2.
GemmTasks gemm_tasks(const KernelSpec& spec, bool avx512);

// The rules both x86 backends share (codegen/cpu_rules.h).
using fusor::pointwise_task_elements;
using fusor::reduction_keeps_x;
using fusor::reduction_uses_scratch;

using fusor::numel;  // codegen/index_math.h

}  // namespace fusor::asmjit_emit
