// LlvmBackend: the llvm backend's entry point. It turns a KernelSpec into host code through
// one LlvmJit (ORC, -O3 for the host's real features) and hands back a CompiledKernel that
// owns that code. It takes Pointwise specs (codegen/llvm/emit_pointwise.h), RowReduction
// specs (codegen/llvm/emit_reduction.h) and Contraction specs (codegen/llvm/emit_contraction.h);
// other kinds are declined with a reason. No LLVM headers here; in a build without LLVM
// this still links and make_llvm_backend() reports the backend unavailable.
// Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/llvm/llvm_jit.h"

namespace fusor {

/// A kernel compiled by the llvm backend. Called as in codegen/kernel_spec.h:
/// fn(buffers, task_begin, task_end) over [0, spec.tasks). The code is freed when the last
/// reference drops.
struct CompiledKernel {
  /// The kernel ABI.
  using Fn = void (*)(void** buffers, int64_t task_begin, int64_t task_end);
  /// A constant operand the kernel reads in a packed layout (codegen/packing.h): the runtime
  /// packs it once (pack()) into `floats` floats and passes that copy as buffers[buffer].
  struct Prepack {
    int buffer = -1;
    int64_t floats = 0;
    int64_t width = 0;  ///< width of the layout (codegen/packing.h)
  };
  Fn fn = nullptr;                  ///< the entry point
  KernelSpec spec;                  ///< what it computes
  int64_t tasks = 1;                ///< the task range to split: [0, tasks)
  std::vector<Prepack> prepacks;    ///< constants to pass packed
  int64_t compile_us = 0;           ///< wall time of emission plus LLVM's compile
  LlvmJit::CompiledFunction code;   ///< owns the machine code behind fn

  /// Runs tasks [task_begin, task_end) on `buffers`.
  void run(void** buffers, int64_t task_begin, int64_t task_end) const { fn(buffers, task_begin, task_end); }
  /// Packs `src` (the constant buffer p.buffer) into `dst` (p.floats floats).
  void pack(const Prepack& p, const float* src, float* dst) const;
};

/// Compiles KernelSpecs with LLVM. Thread-safe. Holds no cache: the runtime's kernel cache
/// decides when to compile.
class LlvmBackend {
 public:
  /// How the backend compiles.
  struct Options {
    /// When not empty: an existing folder that receives, per kernel, <symbol>.spec (the
    /// spec's str()), <symbol>.ll (optimized IR) and <symbol>.s (host assembly).
    std::string dump_dir;
  };

  ~LlvmBackend();
  LlvmBackend(const LlvmBackend&) = delete;
  LlvmBackend& operator=(const LlvmBackend&) = delete;

  /// Whether compile() takes `spec`; *why (if given) says why not.
  bool supports(const KernelSpec& spec, std::string* why) const;
  /// Compiles `spec` under the symbol "fusor_k<hash>" (in a JITDylib of its own, so equal
  /// specs compiled twice never clash). Throws Error(Unsupported) when supports() is false,
  /// Error(CompileFailed) with LLVM's message and the IR when LLVM rejects it, Error(Io)
  /// when a dump cannot be written.
  std::shared_ptr<const CompiledKernel> compile(const KernelSpec& spec);
  /// The kernel of `spec` from `object` (a CompiledKernel::code.object() of an equal spec
  /// compiled by this LLVM version for this target, e.g. from the disk store), linked
  /// without compiling. Throws Error(Unsupported) as compile() does, Error(CompileFailed)
  /// when the object is malformed or lacks the kernel.
  std::shared_ptr<const CompiledKernel> load(const KernelSpec& spec, const std::string& object);
  /// The code generator's version ("llvm-16.0.6"), part of persisted kernels' keys.
  std::string compiler_version() const;
  /// The JIT's target (triple, CPU, features).
  std::string target_description() const;
  /// The options it was made with.
  const Options& options() const;

  struct Impl;  // defined in the .cpp

 private:
  void describe(const KernelSpec& spec, CompiledKernel& kernel, std::string* ir) const;
  friend std::unique_ptr<LlvmBackend> make_llvm_backend(Options options);
  explicit LlvmBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Whether the llvm backend takes `spec` (dispatching on its kind); when not, *why (if
/// given) says why. Needs no LLVM: it answers the same in a build without it.
bool llvm_supports(const KernelSpec& spec, std::string* why);

/// The llvm backend for the host CPU. Throws Error(DeviceUnavailable) with the reason when
/// LLVM is not built in (or the host target cannot be initialized).
std::unique_ptr<LlvmBackend> make_llvm_backend(LlvmBackend::Options options = {});

}  // namespace fusor
