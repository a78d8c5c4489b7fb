// Symbolic kernels: one compiled kernel for every size of a dimension that changes between
// runs (BERT's sequence length). Layer: codegen.
//
// Note [Symbolic kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A symbolic KernelSpec (KernelSpec::symbolic) leaves its outer extent to run time: the
// pointwise index space's shape[0], the row reduction's shape[0] (rows), a GEMM's m, or
// self-attention's queries and keys together (tq = tk, at batch 1). The
// spec holds 0 there, in `tasks`, and in the elements of every buffer whose size follows
// the extent; the kernel reads the extent through buffers[buffers.size()] (the address of
// one int64_t) and the runtime sizes the task range with CompiledKernel::tasks_for. Those
// fields are the only ones allowed to vary, so one symbolic spec serves every size.
//
// Which fields follow the varying dimension is not guessed: the group is lowered at two
// sizes of it (the run's and a reference), both are normalized (normalize_dims: dims of
// extent 1 dropped — B = 1 gives a batch stride of T x 768 that addresses nothing — runs
// merged, a [B, T, K] x [K, N] product folded into one B*T-row GEMM), and the two specs
// must then be equal except for the outer extent, `tasks` and buffer sizes. A group
// whose other fields change too — a head-split [12, T, 64] space, a mean over T, attention
// at batch 2 (its batch stride is T x 2304) or whose context is written head-major ([12, T,
// 64]: a head stride of T x 64; BERT's and GPT-2's are not, their heads' merge is the
// kernel's store, Note [Grouping rules]), a convolution — has no symbolic form and keeps
// exact kernels; so does a group that does not depend on the dimension (its exact kernel
// already serves every size). A symbolic attention kernel's stack scratch grows with the
// keys, so it serves lengths up to CompiledKernel::max_extent; the runtime takes the exact
// kernel (or the static ones) beyond.
//
// The code differs from an exact kernel only in what it cannot know: loop bounds and the
// task split come from the run-time extent, and a GEMM's register tile is chosen for a
// typical m (codegen/llvm/emit_contraction.cpp) rather than the run's. bench/ measures
// what that costs (`symbolic/*`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/kernel_spec.h"

namespace fusor {

/// A symbolic spec and the outer extent one run binds it to.
struct SymbolicSpec {
  KernelSpec spec;     ///< symbolic: the same for every size of the varying dimension
  int64_t extent = 0;  ///< this run's outer extent
};

/// The same computation with its index space simplified, so that specs lowered at two sizes
/// line up: dims of extent 1 dropped (pointwise dims, row-reduction row dims, GEMM batch
/// dims) with their strides, adjacent dims every access walks as one run merged (the
/// leading dims of pointwise and row-reduction spaces), and GEMM batch dims folded into m
/// where A's rows and the epilogue's run on across them and B is shared. Other kinds are
/// returned unchanged.
KernelSpec normalize_dims(const KernelSpec& spec);

/// The symbolic form of `exact` (Note [Symbolic kernels]), given `other`: the same group
/// lowered at another size of the varying dimension. nullopt with *why set when the kind has
/// no symbolic form or the two specs differ in more than the outer extent.
std::optional<SymbolicSpec> symbolize(const KernelSpec& exact, const KernelSpec& other, std::string* why);

}  // namespace fusor
