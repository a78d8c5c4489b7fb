// The factories of codegen/backends.def at the runtime's level. Layer: jit.
#pragma once

#include <memory>

#include "codegen/backends.h"
#include "codegen/compiled_kernel.h"

namespace fusor {

/// The host JIT backend `kind` (a HostJit line of codegen/backends.def): make_<name>_jit.
/// InvalidArgument for another role; DeviceUnavailable when it cannot be made here.
std::unique_ptr<JitBackend> make_jit_backend(BackendKind kind, const BackendOptions& options = {});

}  // namespace fusor
