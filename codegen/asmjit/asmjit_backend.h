// AsmjitBackend: the asmjit backend's entry point, fusor's first x86 tier. It turns a
// KernelSpec into host machine code in microseconds (asmjit's x86::Compiler: virtual
// registers, linear-scan allocation, no optimizer), AVX-512 where the host has it and AVX2
// + FMA otherwise, with the same float approximations as the other backends
// (codegen/math_approx.h). It takes Pointwise, RowReduction and Contraction (GEMM, Conv2d)
// specs; Attention is declined with a reason, as are the few shapes asmjit_supports names.
// No asmjit headers here; in a build without asmjit this still links and
// make_asmjit_backend() reports the backend unavailable.
// Layer: codegen/asmjit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codegen/compiled_kernel.h"
#include "codegen/kernel_spec.h"

namespace fusor {

/// Compiles KernelSpecs to x86 machine code with asmjit. Thread-safe. Holds no cache: the
/// runtime's kernel cache decides when to compile.
class AsmjitBackend final : public JitBackend {
 public:
  /// The vector instruction set kernels are emitted for.
  enum class Isa : uint8_t {
    Host,    ///< AVX-512 (zmm, k-mask tails) when the host has avx512f and bmi2, else AVX2
    Avx2,    ///< AVX2 + FMA (ymm, vmaskmov tails) even on an AVX-512 host (tests, comparisons)
  };
  /// How the backend compiles.
  struct Options {
    Isa isa = Isa::Host;
    /// When not empty: an existing folder that receives, per kernel, <symbol>.spec (the
    /// spec's str()) and <symbol>.s (the emitted assembly, as asmjit's logger prints it).
    std::string dump_dir;
  };

  ~AsmjitBackend() override;
  AsmjitBackend(const AsmjitBackend&) = delete;
  AsmjitBackend& operator=(const AsmjitBackend&) = delete;

  std::string_view name() const override { return "asmjit"; }
  /// Whether compile() takes `spec`; *why (if given) says why not.
  bool supports(const KernelSpec& spec, std::string* why) const override;
  /// Compiles `spec` under a fresh symbol "fusor_k<hash>_<n>". Throws Error(Unsupported)
  /// when supports() is false, Error(CompileFailed) with asmjit's message when asmjit
  /// rejects the code, Error(Io) when a dump cannot be written.
  std::shared_ptr<const CompiledKernel> compile(const KernelSpec& spec) override;
  /// The target the code is emitted for, e.g. "x86-64 avx512f+bmi2+fma (zmm, 16 lanes)";
  /// part of a kernel cache key.
  std::string target_description() const override;
  /// "asmjit-<Debian snapshot>"; part of kernel keys.
  std::string compiler_version() const override;
  /// Lanes of one vector step: 16 (AVX-512) or 8 (AVX2).
  int vector_lanes() const;
  /// The options it was made with.
  const Options& options() const;

  struct Impl;  // defined in the .cpp

 private:
  friend std::unique_ptr<AsmjitBackend> make_asmjit_backend(Options options);
  explicit AsmjitBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Whether the asmjit backend takes `spec` (dispatching on its kind); when not, *why (if
/// given) says why. Needs no asmjit: it answers the same in a build without it.
bool asmjit_supports(const KernelSpec& spec, std::string* why);

/// The asmjit backend for the host CPU. Throws Error(DeviceUnavailable) with the reason
/// when asmjit is not built in or the host is not x86-64 with AVX2 and FMA.
std::unique_ptr<AsmjitBackend> make_asmjit_backend(AsmjitBackend::Options options = {});

}  // namespace fusor
