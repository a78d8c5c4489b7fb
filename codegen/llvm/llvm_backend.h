// LlvmBackend: the llvm backend's entry point. It turns a KernelSpec into host code through
// one LlvmJit (ORC, -O3 for the host's real features) and hands back a CompiledKernel that
// owns that code. It takes Pointwise specs (codegen/llvm/emit_pointwise.h), RowReduction
// specs (codegen/llvm/emit_reduction.h), Contraction specs (codegen/llvm/emit_contraction.h;
// 3x3 convolutions as Winograd, emit_winograd.h) and Attention specs
// (codegen/llvm/emit_attention.h); the shapes llvm_supports names are declined with a reason. No LLVM headers here; in a build without LLVM
// this still links and make_llvm_backend() reports the backend unavailable.
// Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/compiled_kernel.h"
#include "codegen/kernel_spec.h"
#include "codegen/llvm/emit_contraction.h"
#include "codegen/llvm/llvm_jit.h"

namespace fusor {

/// Compiles KernelSpecs with LLVM. Thread-safe. Holds no cache: the runtime's kernel cache
/// decides when to compile.
class LlvmBackend final : public JitBackend {
 public:
  /// How the backend compiles.
  struct Options {
    /// When not empty: an existing folder that receives, per kernel, <symbol>.spec (the
    /// spec's str()), <symbol>.ll (optimized IR) and <symbol>.s (host assembly).
    std::string dump_dir;
    /// Time a few tilings of each contraction and keep the fastest (Note [Tuned tilings],
    /// emit_contraction.cpp): a compile then takes several times as long, once per kernel
    /// and machine (the choice is stored with the object). The compiler string says so,
    /// so tuned and rule kernels have different keys.
    bool tune = false;
    /// The threads the timed kernels will run on (the makespan of their tasks is compared;
    /// not part of the key: a kernel tuned for one count serves the others).
    int tune_threads = 1;
    /// Compute the bf16 GEMM forms on AMX tiles where the host has AMX and may use it (Note
    /// [AMX contractions], emit_amx.cpp); false keeps them on vdpbf16ps (the tests of that
    /// path on an AMX machine).
    bool amx = true;
  };

  ~LlvmBackend() override;
  LlvmBackend(const LlvmBackend&) = delete;
  LlvmBackend& operator=(const LlvmBackend&) = delete;

  std::string_view name() const override { return "llvm"; }
  /// Whether compile() takes `spec`; *why (if given) says why not.
  bool supports(const KernelSpec& spec, std::string* why) const override;
  /// Compiles `spec` under the symbol "fusor_k<hash>" (in a JITDylib of its own, so equal
  /// specs compiled twice never clash). Throws Error(Unsupported) when supports() is false,
  /// Error(CompileFailed) with LLVM's message and the IR when LLVM rejects it, Error(Io)
  /// when a dump cannot be written.
  std::shared_ptr<const CompiledKernel> compile(const KernelSpec& spec) override;
  /// Compiles a contraction `spec` in `choice`'s tiling (contraction_tiling) instead of the
  /// rules' or the tuned one; a non-empty choice is recorded in the kernel's object, which
  /// load() reads back (Note [Tuned tilings]). Throws as compile() does.
  std::shared_ptr<CompiledKernel> compile_tiling(const KernelSpec& spec, const TilingChoice& choice) const;
  bool can_load() const override { return true; }
  /// True on a CPU with AVX512-BF16 (Note [bf16 contractions]).
  bool computes_bf16() const override;
  /// Whether it computes the bf16 GEMM forms on AMX tiles (Options::amx, on a host with AMX
  /// it may use); the same flag contraction_tiling takes.
  bool computes_amx() const override;
  bool bf16_pays(const KernelSpec& spec) const override;
  bool splits_bf16_attention(const KernelSpec& spec) const override;
  /// The kernel of `spec` from `object` (a CompiledKernel::object of an equal spec
  /// compiled by this LLVM version for this target, e.g. from the disk store), linked
  /// without compiling. Throws Error(Unsupported) as compile() does, Error(CompileFailed)
  /// when the object is malformed or lacks the kernel.
  std::shared_ptr<const CompiledKernel> load(const KernelSpec& spec, const std::string& object) override;
  /// The code generator's version ("llvm-16.0.6"; "llvm-16.0.6 tuned" when tuning), part of
  /// persisted kernels' keys.
  std::string compiler_version() const override;
  /// The JIT's target (triple, CPU, features).
  std::string target_description() const override;
  /// The options it was made with.
  const Options& options() const;

  struct Impl;  // defined in the .cpp

 private:
  std::string describe(const KernelSpec& spec, CompiledKernel& kernel, std::string* ir,
                       const TilingChoice& choice = {}) const;
  // Compiles each of the spec's candidate tilings, times them, keeps the fastest.
  std::shared_ptr<CompiledKernel> compile_tuned(const KernelSpec& spec) const;
  friend std::unique_ptr<LlvmBackend> make_llvm_backend(Options options);
  explicit LlvmBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Whether the llvm backend takes `spec` (dispatching on its kind); when not, *why (if
/// given) says why. Needs no LLVM: it answers the same in a build without it.
bool llvm_supports(const KernelSpec& spec, std::string* why);

/// The tiling a kernel of this backend was compiled with: its stored choice's str()
/// ("mr=6 nv=4"), or "rules" (Note [Tuned tilings]).
std::string tuned_choice(const CompiledKernel& kernel);

/// The llvm backend for the host CPU. Throws Error(DeviceUnavailable) with the reason when
/// LLVM is not built in (or the host target cannot be initialized).
std::unique_ptr<LlvmBackend> make_llvm_backend(LlvmBackend::Options options = {});

}  // namespace fusor
