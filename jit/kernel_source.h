// KernelSource: where every executor gets its kernels, one implementation for every
// backend. Layer: jit.
//
// Note [Kernel source]
// ~~~~~~~~~~~~~~~~~~~~
// A kernel is asked for by its spec on a backend; its KernelKey (Note [Kernel key]) is the
// spec with the backend's name, target and compiler. Then, in order:
//  1. memory: the kernel cache (cache/keyed_cache.h: single flight, bounded in bytes, a
//     failed build never cached), shared by every plan, shape and graph of the engine;
//  2. the persistent store (cache/kernel_store.h), when the engine has one and the backend
//     can load what it saved: the payload stored under KernelKey::serialize() is loaded
//     without compiling. A payload the backend refuses is warned about and compiled again;
//  3. the backend compiles the spec, and what it can load later is put into the store.
// The source counts compiles (those of background plans apart: count_compiles_as_
// background), store hits and writes, compile time per backend and load time, for
// EngineStats. A Backend offers name(), target_description(), compiler_version(),
// can_load(), compile(spec) and load(spec, payload) returning shared_ptr<const Kernel>:
// JitBackend (codegen/compiled_kernel.h) for CompiledKernel, CudaBackend
// (codegen/cuda/cuda_backend.h) for CudaKernel; kernel_source.cpp instantiates both.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/kernel_key.h"
#include "cache/kernel_store.h"
#include "cache/keyed_cache.h"
#include "jit/engine_types.h"

namespace fusor {

/// Marks the calling thread as a background builder: the kernels it compiles from then on
/// count as kernels_compiled_background as well (Note [Background plans]).
void count_compiles_as_background();

/// Kernels from memory, the persistent store or the compiler (Note [Kernel source]).
/// Thread-safe.
template <class Backend, class Kernel>
class KernelSource {
 public:
  struct Options {
    uint64_t budget_bytes = 0;      ///< of the kernel cache (0: unbounded)
    KernelStore* store = nullptr;   ///< the persistent store, or null
    std::function<void(const std::string&)> warn;
  };
  explicit KernelSource(Options options);

  /// The kernel of `spec` on `backend`. Throws the backend's errors (Unsupported,
  /// CompileFailed); a failure is not cached.
  std::shared_ptr<const Kernel> get(Backend& backend, KernelSpec spec);
  /// The kernel of `spec` on `backend` when it needs no compile: in memory, or loadable
  /// from the persistent store (loaded now); else null. A stored payload the backend
  /// refuses is warned about and compiled, as get() does.
  std::shared_ptr<const Kernel> find(Backend& backend, KernelSpec spec);
  /// Adds the kernel counters to `s`: hits, evictions and bytes of the cache, compiles,
  /// store hits and writes, compile and load times.
  void add_stats(EngineStats& s) const;

 private:
  // Loads key's kernel from `payload` (read from the store: null, read it now) or compiles it.
  SizedValue<Kernel> make(Backend& backend, const KernelKey& key, std::optional<std::vector<uint8_t>> payload);

  Options options_;
  KeyedCache<KernelKey, Kernel, KernelKeyHash> kernels_;
  std::atomic<uint64_t> compiled_{0}, compiled_background_{0}, store_hits_{0}, store_writes_{0}, load_us_{0};
  mutable std::mutex by_backend_mu_;
  std::map<std::string, uint64_t, std::less<>> compile_us_by_backend_;
};

class JitBackend;
struct CompiledKernel;
class CudaBackend;
struct CudaKernel;
extern template class KernelSource<JitBackend, CompiledKernel>;
extern template class KernelSource<CudaBackend, CudaKernel>;

/// The kernels of the host JIT backends.
using HostKernelSource = KernelSource<JitBackend, CompiledKernel>;
/// The kernels of the CUDA device.
using CudaKernelSource = KernelSource<CudaBackend, CudaKernel>;

}  // namespace fusor
