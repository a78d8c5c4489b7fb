#include "jit/kernel_source.h"

#include <span>

#include "codegen/compiled_kernel.h"
#include "codegen/cuda/cuda_backend.h"

namespace fusor {

namespace {

// True on the threads count_compiles_as_background() marked.
thread_local bool tl_background = false;

// What the source reads of a kernel a backend made: what the store keeps of it, the time
// spent compiling and loading it, and what it costs the kernel cache.
struct Made {
  const std::string& artifact;
  int64_t compile_us = 0, load_us = 0;
  uint64_t bytes = 0;
};

// A host kernel's compile_us is its compile time, or its link time when it came from the
// store (`loaded`).
Made made(const CompiledKernel& k, bool loaded) {
  return {k.object, loaded ? 0 : k.compile_us, loaded ? k.compile_us : 0, k.resident_bytes()};
}

// A CUDA kernel is loaded on the device whether it was compiled or came from the store.
Made made(const CudaKernel& k, bool) {
  return {k.binary.cubin, k.binary.compile_us, k.load_us, uint64_t(k.binary.cubin.size()) + sizeof(CudaKernel)};
}

// spec's KernelKey on `backend` (Note [Kernel key]).
template <class Backend>
KernelKey key_on(const Backend& backend, KernelSpec spec) {
  return KernelKey{std::move(spec), std::string(backend.name()), backend.target_description(), backend.compiler_version()};
}

}  // namespace

void count_compiles_as_background() { tl_background = true; }

template <class Backend, class Kernel>
KernelSource<Backend, Kernel>::KernelSource(Options options)
    : options_(std::move(options)), kernels_({options_.budget_bytes, nullptr, nullptr}) {}

template <class Backend, class Kernel>
std::shared_ptr<const Kernel> KernelSource<Backend, Kernel>::get(Backend& backend, KernelSpec spec) {
  const KernelKey key = key_on(backend, std::move(spec));
  return kernels_.get_or_build(key, [&] { return make(backend, key, std::nullopt); });
}

template <class Backend, class Kernel>
std::shared_ptr<const Kernel> KernelSource<Backend, Kernel>::find(Backend& backend, KernelSpec spec) {
  const KernelKey key = key_on(backend, std::move(spec));
  if (std::shared_ptr<const Kernel> k = kernels_.find(key)) return k;
  KernelStore* store = backend.can_load() ? options_.store : nullptr;
  if (!store) return nullptr;
  std::optional<std::vector<uint8_t>> payload = store->get(key.serialize());
  if (!payload) return nullptr;
  return kernels_.get_or_build(key, [&] { return make(backend, key, std::move(payload)); });
}

template <class Backend, class Kernel>
SizedValue<Kernel> KernelSource<Backend, Kernel>::make(Backend& backend, const KernelKey& key,
                                                       std::optional<std::vector<uint8_t>> payload) {
  KernelStore* store = backend.can_load() ? options_.store : nullptr;
  std::shared_ptr<const Kernel> k;
  std::string key_bytes;
  if (store) {
    key_bytes = key.serialize();
    if (!payload) payload = store->get(key_bytes);
    if (payload) {
      try {
        k = backend.load(key.spec, std::string(payload->begin(), payload->end()));
        store_hits_.fetch_add(1, std::memory_order_relaxed);
        load_us_.fetch_add(uint64_t(made(*k, true).load_us), std::memory_order_relaxed);
      } catch (const Error& e) {
        options_.warn("a " + key.backend + " kernel from the persistent store in " + store->stats().location +
                      " cannot be loaded; compiling it again (" + e.what() + ")");
      }
    }
  }
  if (!k) {
    k = backend.compile(key.spec);
    const Made m = made(*k, false);
    compiled_.fetch_add(1, std::memory_order_relaxed);
    if (tl_background) compiled_background_.fetch_add(1, std::memory_order_relaxed);
    load_us_.fetch_add(uint64_t(m.load_us), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lk(by_backend_mu_);
      compile_us_by_backend_[key.backend] += uint64_t(m.compile_us);
    }
    const std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(m.artifact.data()), m.artifact.size());
    if (store && !payload.empty() && store->put(key_bytes, payload))
      store_writes_.fetch_add(1, std::memory_order_relaxed);
  }
  return {k, made(*k, false).bytes};
}

template <class Backend, class Kernel>
void KernelSource<Backend, Kernel>::add_stats(EngineStats& s) const {
  const CacheStats k = kernels_.stats();
  s.kernel_hits += k.hits;
  s.kernel_evictions += k.evictions;
  s.kernel_bytes += k.bytes;
  s.kernels_compiled += compiled_.load();
  s.kernels_compiled_background += compiled_background_.load();
  s.disk_hits += store_hits_.load();
  s.disk_writes += store_writes_.load();
  s.load_ms += double(load_us_.load()) / 1000.0;
  std::lock_guard<std::mutex> lk(by_backend_mu_);
  for (const auto& [name, us] : compile_us_by_backend_) {
    s.compile_ms_by_backend[name] += double(us) / 1000.0;
    s.compile_ms += double(us) / 1000.0;
  }
}

template class KernelSource<JitBackend, CompiledKernel>;
template class KernelSource<CudaBackend, CudaKernel>;

}  // namespace fusor
