// LlvmJit: the ORC LLJIT instance under the llvm backend. It takes LLVM IR text, optimizes
// it at -O3 for the host's real CPU features, compiles it to host code and hands back the
// function's address with a handle that frees the code when dropped. No LLVM types appear
// here: the LLVM headers stay in the .cpp files of codegen/llvm/. In a build without LLVM
// (FUSOR_WITH_LLVM=OFF) this still links, and create() says why it is unavailable.
// Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace fusor {

/// One ORC LLJIT instance targeting the host CPU. Thread-safe: any number of threads may
/// compile and release functions at once.
class LlvmJit {
 public:
  /// How one compile() is done.
  struct CompileOptions {
    /// When not empty: an existing folder that receives <symbol>.ll (the optimized IR) and
    /// <symbol>.s (the host assembly). For inspection only; costs a second codegen.
    std::string dump_dir;
  };

  /// A compiled function: its address, valid until the handle is released or destroyed
  /// (which removes the code from the JIT and frees it). Move-only. The handle keeps its
  /// JIT's state alive, so it may outlive the LlvmJit that made it.
  class CompiledFunction {
   public:
    CompiledFunction();
    CompiledFunction(CompiledFunction&& other) noexcept;
    CompiledFunction& operator=(CompiledFunction&& other) noexcept;
    CompiledFunction(const CompiledFunction&) = delete;
    CompiledFunction& operator=(const CompiledFunction&) = delete;
    /// Releases the code (errors from LLVM are swallowed here; call release() to see them).
    ~CompiledFunction();

    /// The entry point; nullptr once released (or for a default-constructed handle).
    void* address() const { return address_; }
    /// The entry point as a function pointer type, e.g. as<void (*)(float*, int64_t)>().
    template <class Fn>
    Fn as() const {
      return reinterpret_cast<Fn>(address_);
    }
    /// The symbol that was looked up.
    const std::string& symbol() const { return symbol_; }
    /// The relocatable object the code was linked from (load() takes it back).
    const std::string& object() const { return object_; }
    /// Wall time of compile() (parse, optimize, codegen, link, dumps) in microseconds.
    int64_t compile_us() const { return compile_us_; }
    /// Whether the handle still owns code.
    explicit operator bool() const { return address_ != nullptr; }

    /// Removes the code from the JIT now (the symbol may then be compiled again). No-op on
    /// a released handle. Throws Error(Internal) with LLVM's message if removal fails.
    void release();

   private:
    friend class LlvmJit;
    struct Tracker;  // the ORC ResourceTracker and the JIT state it belongs to
    std::unique_ptr<Tracker> tracker_;
    void* address_ = nullptr;
    std::string symbol_;
    std::string object_;
    int64_t compile_us_ = 0;
  };

  /// Creates a JIT for the host CPU (its name and its full feature list), code generation
  /// at the Aggressive level. Throws Error(DeviceUnavailable) with the reason when LLVM is
  /// not built in or the host target cannot be initialized.
  static std::unique_ptr<LlvmJit> create();

  ~LlvmJit();
  LlvmJit(const LlvmJit&) = delete;
  LlvmJit& operator=(const LlvmJit&) = delete;

  /// Parses `llvm_ir_text` (textual LLVM IR, a .ll file's contents), verifies it, runs the
  /// -O3 module pipeline for the host target, compiles it to a relocatable object, links
  /// that into a JITDylib of its own and returns the address of `symbol` (so equal symbols
  /// of different functions never clash). Throws Error(CompileFailed) carrying LLVM's
  /// message and the IR text (truncated when huge); Error(Io) if a dump cannot be written.
  CompiledFunction compile(const std::string& llvm_ir_text, const std::string& symbol,
                           const CompileOptions& options);
  /// compile() with default options (no dumps).
  CompiledFunction compile(const std::string& llvm_ir_text, const std::string& symbol);
  /// Links `object` (a CompiledFunction::object() made by this LLVM version for this target,
  /// e.g. read back from the disk store) and returns the address of `symbol` in it, with
  /// no compilation. Throws Error(CompileFailed) when the object is malformed or does not
  /// define `symbol`.
  CompiledFunction load(const std::string& object, const std::string& symbol);
  /// The LLVM version built in ("16.0.6"), part of persisted kernels' keys.
  static std::string llvm_version();

  /// The target: triple, CPU name and the enabled features, e.g.
  /// "x86_64-pc-linux-gnu cpu=znver4 features=+adx,+aes,...,+avx2,...,+avx512f,...".
  std::string target_description() const;

  struct Impl;  // defined in the .cpp; public only so the .cpp's helpers can name it

 private:
  explicit LlvmJit(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace fusor
