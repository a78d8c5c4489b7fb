// The backends, generated from codegen/backends.def: BackendKind, each backend's name, role
// and summary, the parser, and the factories of the host JIT backends (each defined in its
// backend's folder). Layer: codegen.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fusor {

class JitBackend;

/// Which code runs a graph's groups: one enumerator per line of codegen/backends.def.
enum class BackendKind : uint8_t {
#define FUSOR_BACKEND(kind, name, role, summary) kind,
#include "codegen/backends.def"
#undef FUSOR_BACKEND
};

/// What kind of code a backend runs (codegen/backends.def).
enum class BackendRole : uint8_t {
  Precompiled,  ///< kernels built ahead of time (the static backend)
  HostJit,      ///< kernels compiled at run time for this CPU (make_<name>_jit)
  DeviceJit,    ///< kernels compiled at run time for a device, run by its own executor
};

/// One line of codegen/backends.def.
struct BackendInfo {
  BackendKind kind;
  std::string_view name;     ///< "llvm"
  BackendRole role;
  std::string_view summary;  ///< one line for help texts
};

/// Every backend, in the order of codegen/backends.def.
inline constexpr BackendInfo kBackends[] = {
#define FUSOR_BACKEND(kind, name, role, summary) {BackendKind::kind, #name, BackendRole::role, summary},
#include "codegen/backends.def"
#undef FUSOR_BACKEND
};

/// The line of `b`.
const BackendInfo& backend_info(BackendKind b);
/// "static", "llvm", "asmjit", "cuda".
std::string_view backend_name(BackendKind b);
/// Parses a backend name; InvalidArgument naming the choices otherwise.
BackendKind parse_backend(std::string_view name);
/// The names of every backend, "static, llvm, asmjit, cuda".
std::string backend_choices();

/// What every host JIT backend's factory takes.
struct BackendOptions {
  /// When not empty: an existing folder that receives each kernel's spec, IR and assembly.
  std::string dump_dir;
  /// llvm: time a few tilings of each contraction and keep the fastest (Note [Tuned
  /// tilings], codegen/llvm/emit_contraction.cpp), for runs on `tune_threads` threads.
  bool tune = false;
  int tune_threads = 1;
};

// make_<name>_jit for each HostJit line: the backend for this CPU, or Error(DeviceUnavailable)
// with the reason (not built in, or the host lacks what it needs).
#define FUSOR_BACKEND_FACTORY_Precompiled(name)
#define FUSOR_BACKEND_FACTORY_HostJit(name) std::unique_ptr<JitBackend> make_##name##_jit(const BackendOptions& options);
#define FUSOR_BACKEND_FACTORY_DeviceJit(name)
#define FUSOR_BACKEND(kind, name, role, summary) FUSOR_BACKEND_FACTORY_##role(name)
#include "codegen/backends.def"
#undef FUSOR_BACKEND
#undef FUSOR_BACKEND_FACTORY_Precompiled
#undef FUSOR_BACKEND_FACTORY_HostJit
#undef FUSOR_BACKEND_FACTORY_DeviceJit

}  // namespace fusor
