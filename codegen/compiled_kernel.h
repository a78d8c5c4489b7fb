// CompiledKernel: a kernel some JIT backend built, as the runtime runs it, and JitBackend:
// what every JIT backend (llvm, asmjit) offers the runtime. Backend-neutral: the engine
// holds kernels and backends only through these. Layer: codegen.
//
// A kernel is called as in codegen/kernel_spec.h: fn(buffers, task_begin, task_end) over
// [0, tasks) (a symbolic kernel: [0, tasks_for(extent))); its machine code lives as long as
// the last reference to the kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/packing.h"
#include "ir/tensor.h"

namespace fusor {

/// A kernel a JIT backend compiled (or linked from a stored object).
struct CompiledKernel {
  /// The kernel ABI.
  using Fn = void (*)(void** buffers, int64_t task_begin, int64_t task_end);
  /// A constant operand the kernel reads in a packed layout (codegen/packing.h): the runtime
  /// packs it once (pack()) into `floats` floats and passes that copy as buffers[buffer].
  struct Prepack {
    int buffer = -1;
    int64_t floats = 0;
    int64_t width = 0;  ///< width of the layout (codegen/packing.h)
    PackKind kind = PackKind::Panels;
  };
  Fn fn = nullptr;                  ///< the entry point
  KernelSpec spec;                  ///< what it computes
  int64_t tasks = 1;                ///< the task range to split: [0, tasks)
  /// A symbolic kernel's task range at outer extent s (Note [Symbolic kernels]):
  /// [0, tasks_fixed * ceil(s * tasks_scale / tasks_per)).
  int64_t tasks_fixed = 1, tasks_scale = 1, tasks_per = 1;
  /// A symbolic kernel serves runs whose outer extent is at most this (its scratch grows
  /// with it: symbolic attention); the runtime uses another kernel beyond.
  int64_t max_extent = INT64_MAX;
  std::vector<Prepack> prepacks;    ///< constants to pass packed
  int64_t compile_us = 0;           ///< wall time of compiling (or linking) it
  std::string backend;              ///< "llvm", "asmjit"
  std::string symbol;               ///< its entry symbol (names dump files)
  std::string object;               ///< what the disk store keeps (llvm: the relocatable object); may be empty
  int64_t code_bytes = 0;           ///< size of its machine code (or object)
  /// What its backend keeps in memory to run it besides this struct, its spec and its
  /// object (llvm: the linked, page-aligned segments and the JIT's records of them).
  int64_t backend_bytes = 0;
  std::shared_ptr<const void> code; ///< owns the machine code behind fn
  /// How its tiling was chosen when a tuned compile timed several (Note [Tuned tilings]):
  /// "tuned: mr=6 nv=4 0.912 ms, the rules' 0.987 ms, 5 tilings timed"; "tuned: mr=6 nv=4
  /// (stored)" when loaded from the store; empty otherwise.
  std::string tuning;

  /// What keeping it costs in memory: what the kernel cache and the plans holding it
  /// charge (Note [Kernel source]).
  uint64_t resident_bytes() const;
  /// The task range to split when the run's outer extent is `extent` (symbolic kernels),
  /// else `tasks`.
  int64_t tasks_for(int64_t extent) const {
    return spec.symbolic ? tasks_fixed * ((extent * tasks_scale + tasks_per - 1) / tasks_per) : tasks;
  }
  /// Runs tasks [task_begin, task_end) on `buffers`.
  void run(void** buffers, int64_t task_begin, int64_t task_end) const { fn(buffers, task_begin, task_end); }
  /// Packs `src` (the constant buffer p.buffer) into `dst` (p.floats floats).
  void pack(const Prepack& p, const float* src, float* dst) const { pack_b(spec.contraction, p.width, src, dst, p.kind); }
  /// Replaces each constant of `buffers` the kernel reads packed (prepacks) by a packed copy
  /// of it, kept in `packed`: the buffers a kernel is called with apart from a plan (a plan
  /// shares its packed copies through the runtime's cache instead).
  void bind_packed(void** buffers, std::vector<Tensor>& packed) const;
  /// What the packed copy of p depends on besides its source (packed_b_layout): copies with
  /// equal layouts of one constant are shared.
  std::string layout(const Prepack& p) const { return packed_b_layout(spec.contraction, p.width, p.kind); }
};

/// A backend that compiles KernelSpecs to machine code at run time. Implementations are
/// thread-safe and hold no cache (the runtime's kernel cache decides when to compile).
class JitBackend {
 public:
  virtual ~JitBackend() = default;
  /// "llvm", "asmjit": part of kernel keys and profile labels.
  virtual std::string_view name() const = 0;
  /// Whether compile() takes `spec`; *why (if given) says why not.
  virtual bool supports(const KernelSpec& spec, std::string* why) const = 0;
  /// Compiles `spec`. Throws Error(Unsupported) when supports() is false, Error(CompileFailed)
  /// with the compiler's message when it rejects the code.
  virtual std::shared_ptr<const CompiledKernel> compile(const KernelSpec& spec) = 0;
  /// Whether it compiles contractions marked ContractionSpec::bf16 on this CPU (Note [bf16
  /// contractions], codegen/precision.h).
  virtual bool computes_bf16() const { return false; }
  /// Whether it computes the bf16 GEMM forms on AMX tiles (Note [AMX contractions],
  /// codegen/llvm/emit_amx.cpp).
  virtual bool computes_amx() const { return false; }
  /// Whether computing `spec` (marked bf16) in bf16 pays on this CPU: on one with AMX, the
  /// forms its tiles do not take stay f32 where vdpbf16ps runs slower than f32 FMAs (Note
  /// [bf16 contractions], codegen/precision.h). apply_precision takes the mark back if not.
  virtual bool bf16_pays(const KernelSpec&) const { return true; }
  /// Whether an attention `spec` (f32) computes faster in bf16 as its parts (Note [Declined
  /// attention], jit/plan.cpp: its two products as bf16 GEMMs) than as one kernel: then the
  /// plan splits it where bf16 is asked.
  virtual bool splits_bf16_attention(const KernelSpec&) const { return false; }
  /// Whether load() can link a kernel from its stored CompiledKernel::object.
  virtual bool can_load() const { return false; }
  /// The kernel of `spec` from `object` (an equal spec's CompiledKernel::object, made by
  /// this compiler version for this target). Throws Error(CompileFailed) when malformed,
  /// Error(Unsupported) for a backend that cannot load.
  virtual std::shared_ptr<const CompiledKernel> load(const KernelSpec& spec, const std::string& object);
  /// The target the code is for (CPU features); part of kernel keys.
  virtual std::string target_description() const = 0;
  /// The code generator and its version ("llvm-16.0.6"); part of kernel keys.
  virtual std::string compiler_version() const = 0;
};

}  // namespace fusor
