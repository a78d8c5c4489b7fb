// The host executor: plans (jit/plan.h) run on this CPU, their groups on the kernels of the
// engine's host JIT backend (none for the static backend) and the static kernels elsewhere.
// A miss builds the plan to serve at once; with background_compile, tiering or
// symbolic_dim that is a first plan (static kernels, the asmjit tier, or symbolic kernels:
// Notes [Background plans], [Tiering], [Symbolic first plans]) and the final plan follows
// from the background. A hit runs execute_plan (jit/execute.h). Layer: jit.
#pragma once

#include <memory>

#include "codegen/compiled_kernel.h"
#include "jit/executor.h"

namespace fusor {

/// The executor of a Precompiled or HostJit backend (codegen/backends.def): `jit` is the
/// backend's, null for the static backend.
std::unique_ptr<Executor> make_host_executor(ExecutorContext& ctx, BackendKind backend,
                                            std::unique_ptr<JitBackend> jit);

}  // namespace fusor
