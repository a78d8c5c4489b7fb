#include "jit/cuda_executor.h"

#include <atomic>
#include <mutex>

#include "codegen/cuda/cuda_backend.h"
#include "jit/bind_run.h"
#include "jit/kernel_source.h"

namespace fusor {

KernelKey cuda_kernel_key(const KernelSpec& spec, const std::string& arch, const std::string& nvrtc_version) {
  return KernelKey{spec, "cuda", arch, cuda_compiler_version(nvrtc_version)};
}

namespace {

// The most any rendered kernel asks of a buffer's address (CudaSource::alignment: 16-byte
// vector loads); device tensors the caller passes in must meet it.
constexpr uint64_t kKernelAlignment = 16;

void check_device_alignment(const Tensor& t, const char* role, const std::string& name) {
  FUSOR_CHECK(t.device_address() % kKernelAlignment == 0, InvalidArgument, role, " '", name, "' (", t.type_str(),
              ") is at device address ", t.device_address(), ", not aligned to ", kKernelAlignment,
              " bytes as the CUDA kernels' vector accesses need");
}

// A plan with its kernels loaded, its constants on the device and its arena.
struct CudaExecutable final : ExecutablePlan {
  CudaPlan plan;
  std::vector<std::shared_ptr<const CudaKernel>> kernels;       // per launch
  std::vector<std::shared_ptr<const DeviceBuffer>> constants;   // per place (Constant places)
  DeviceBuffer arena;
  // Per-run scratch (the places' addresses, one launch's buffers), touched only under the
  // executor's run lock, so a run on a known shape allocates no host memory for them.
  mutable std::vector<uint64_t> addr, buffers;
};

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(ExecutorContext& ctx)
      : Executor(BackendKind::Cuda),
        ctx_(ctx),
        backend_(make_cuda_backend(ctx.options.cuda_device, CudaOptions{ctx.options.dump_dir})),
        kernels_({ctx.options.kernel_cache_bytes, ctx.store(), ctx.options.warn}),
        constants_({ctx.options.packed_cache_bytes, nullptr, nullptr}) {}

  Device device() const override { return Device::Cuda; }

  void check_inputs(const Graph& g, const std::vector<const Tensor*>& feeds) const override {
    for (size_t i = 0; i < feeds.size(); ++i)
      if (feeds[i]->device() != Device::Host) check_device_alignment(*feeds[i], "input", g.value(g.inputs()[i]).name);
  }

  SizedValue<PlanEntry> build(const Graph& g, const PlanKey& key) override {
    auto e = std::make_shared<CudaExecutable>();
    SharedStorage shared;  // the user's constants, then derived and interned ones
    for (const Constant& c : g.constants()) shared.insert(c.data.raw());
    FusedGraph fused = ctx_.fuser.fuse(g, key.inputs, &shared);
    ctx_.constants.intern(&shared, fused.graph);
    e->plan = plan_cuda(std::move(fused));
    for (const CudaLaunch& l : e->plan.launches) e->kernels.push_back(kernels_.get(*backend_, l.spec));
    const Graph& fg = e->plan.fused.graph;
    e->constants.resize(e->plan.places.size());
    for (size_t p = 0; p < e->plan.places.size(); ++p) {
      const CudaPlace& pl = e->plan.places[p];
      if (pl.kind != CudaPlace::Kind::Constant) continue;
      const Tensor* c = fg.constant_data(pl.value);
      FUSOR_ASSERT(c != nullptr, "constant place '", fg.value(pl.value).name, "' has no data");
      e->constants[p] = constant(*c, shared.count(c->raw()) != 0);
    }
    e->arena = backend_->alloc(size_t(e->plan.arena_bytes));
    e->bytes = uint64_t(e->plan.arena_bytes) + sizeof(CudaExecutable);
    auto entry = std::make_shared<PlanEntry>();
    entry->plan.store(e);
    return {entry, e->bytes};
  }

  void execute(const ExecutablePlan& executable, const std::vector<const Tensor*>& feeds, TensorMap& outputs) override;

  void synchronize() override {
    std::lock_guard<std::mutex> lk(run_mu_);
    backend_->synchronize();
  }

  Tensor to_device(const Tensor& t) override {
    FUSOR_CHECK(t.defined(), InvalidArgument, "Engine::to_device of an undefined tensor");
    if (t.device() != Device::Host) return t;
    std::lock_guard<std::mutex> lk(run_mu_);
    auto buffer = std::make_shared<DeviceBuffer>(backend_->alloc(t.nbytes()));
    backend_->copy_to_device(*buffer, t.raw(), t.nbytes());
    const uint64_t address = buffer->address();
    return Tensor::wrap_device(address, t.dtype(), t.shape(), std::move(buffer));
  }

  Tensor to_host(const Tensor& t) override {
    FUSOR_CHECK(t.defined(), InvalidArgument, "Engine::to_host of an undefined tensor");
    if (t.device() == Device::Host) return t;
    Tensor out = Tensor::empty(t.dtype(), t.shape());
    std::lock_guard<std::mutex> lk(run_mu_);
    backend_->copy_to_host(out.raw(), t.device_address(), t.nbytes());
    return out;
  }

  void add_stats(EngineStats& s) const override {
    kernels_.add_stats(s);
    s.packed_bytes += constants_.stats().bytes;
    s.device_launches += launches_.load();
  }

 private:
  // Constant `c` on the device: by storage when every plan shares it, else by its bytes.
  std::shared_ptr<const DeviceBuffer> constant(const Tensor& c, bool shared) {
    DeviceConstKey key{c, !shared, shared ? 0 : content_hash(c)};
    return constants_.get_or_build(key, [&] {
      auto b = std::make_shared<DeviceBuffer>(backend_->alloc(c.nbytes()));
      backend_->copy_to_device(*b, c.raw(), c.nbytes());
      return SizedValue<DeviceBuffer>{b, uint64_t(c.nbytes())};
    });
  }

  ExecutorContext& ctx_;
  std::unique_ptr<CudaBackend> backend_;
  CudaKernelSource kernels_;
  KeyedCache<DeviceConstKey, DeviceBuffer, DeviceConstKeyHash> constants_;
  std::atomic<uint64_t> launches_{0};
  std::mutex run_mu_;  // one run at a time: one stream, one arena per plan
};

void CudaExecutor::execute(const ExecutablePlan& executable, const std::vector<const Tensor*>& feeds,
                           TensorMap& outputs) {
  const CudaExecutable& exe = static_cast<const CudaExecutable&>(executable);
  const CudaPlan& plan = exe.plan;
  const Graph& g = plan.fused.graph;
  bool on_host = true;  // every input on the host: outputs not supplied go to the host too
  for (const Tensor* t : feeds) on_host &= t->device() == Device::Host;

  std::lock_guard<std::mutex> lk(run_mu_);
  const uint64_t arena = exe.arena.address();
  std::vector<uint64_t>& addr = exe.addr;
  addr.assign(plan.places.size(), 0);
  for (size_t p = 0; p < plan.places.size(); ++p) {
    const CudaPlace& pl = plan.places[p];
    switch (pl.kind) {
      case CudaPlace::Kind::Input: {
        const Tensor& t = *feeds[size_t(pl.input)];
        if (t.device() != Device::Host) {
          addr[p] = t.device_address();
        } else if (pl.offset >= 0) {
          addr[p] = arena + uint64_t(pl.offset);
          backend_->copy_to_device(addr[p], t.raw(), t.nbytes());
        }
        break;
      }
      case CudaPlace::Kind::Constant: addr[p] = exe.constants[p]->address(); break;
      case CudaPlace::Kind::Arena: addr[p] = arena + uint64_t(pl.offset); break;
      case CudaPlace::Kind::Alias:
      case CudaPlace::Kind::Unused: break;
    }
  }
  // Outputs: supplied ones in place (device tensors written directly, host ones copied
  // into after the run); the others on the host, or in fresh device memory.
  struct HostCopy {
    void* dst;
    int place;
    size_t bytes;
  };
  std::vector<HostCopy> host_copies;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId o = g.outputs()[i];
    const int p = plan.output_places[i];
    const std::string& name = g.value(o).name;
    const TensorType& want = plan.fused.types[size_t(o)];
    auto it = outputs.find(name);
    if (it != outputs.end()) {
      const Tensor& t = it->second;
      check_supplied_output(name, t, want);
      if (t.device() == Device::Host) {
        host_copies.push_back({it->second.raw(), p, t.nbytes()});
      } else {
        check_device_alignment(t, "output", name);
        addr[size_t(p)] = t.device_address();
      }
    } else if (on_host) {
      Tensor t = Tensor::empty(want.dtype, want.shape);
      host_copies.push_back({t.raw(), p, t.nbytes()});
      outputs.emplace(name, std::move(t));
    } else {
      auto buffer = std::make_shared<DeviceBuffer>(backend_->alloc(size_t(plan.places[size_t(p)].bytes)));
      addr[size_t(p)] = buffer->address();
      outputs.emplace(name, Tensor::wrap_device(buffer->address(), want.dtype, want.shape, std::move(buffer)));
    }
  }
  for (size_t p = 0; p < plan.places.size(); ++p)
    if (plan.places[p].kind == CudaPlace::Kind::Alias) addr[p] = addr[size_t(plan.places[p].root)] + uint64_t(plan.places[p].offset);

  std::vector<uint64_t>& buffers = exe.buffers;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const CudaLaunch& l = plan.launches[i];
    buffers.clear();
    for (int p : l.places) buffers.push_back(addr[size_t(p)]);
    backend_->launch(*exe.kernels[i], buffers);
  }
  launches_.fetch_add(plan.launches.size(), std::memory_order_relaxed);
  for (const HostCopy& c : host_copies) backend_->copy_to_host(c.dst, addr[size_t(c.place)], c.bytes);
}

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(ExecutorContext& ctx) { return std::make_unique<CudaExecutor>(ctx); }

}  // namespace fusor
