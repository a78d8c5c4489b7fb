#include "jit/executor.h"

#include "cache/disk_store.h"
#include "cache/layered_store.h"
#include "jit/host_executor.h"

namespace fusor {

namespace {

EngineOptions with_default_sink(EngineOptions o) {
  if (!o.warn) o.warn = warn_to_stderr;
  return o;
}

// "backend cuda" (or "backend cuda or rocm"): the backends that run on a device.
std::string device_backends() {
  std::string s;
  for (const BackendInfo& b : kBackends)
    if (b.role == BackendRole::DeviceJit) (s += s.empty() ? "backend " : " or ") += b.name;
  return s.empty() ? "a device backend" : s;
}

}  // namespace

ExecutorContext::ExecutorContext(EngineOptions o)
    : options(with_default_sink(std::move(o))),
      options_hash(options.hash()),
      pool(options.num_threads),
      constants(options.packed_cache_bytes),
      fuser(options, pool, constants) {
  if (!options.remote_store.empty()) parse_redis_url(options.remote_store);  // a bad URL fails here, not later
}

KernelStore* ExecutorContext::store() {
  if (store_opened_) return store_.get();
  store_opened_ = true;
  std::vector<std::unique_ptr<KernelStore>> layers;
  if (options.disk_cache) {
    DiskStore::Options so;
    so.dir = options.cache_dir;
    so.warn = options.warn;
    auto disk = std::make_unique<DiskStore>(DiskStore::open(so));  // disabled (with a warning) when unusable
    if (disk->enabled()) {
      disk_ = disk.get();
      layers.push_back(std::move(disk));
    }
  }
  if (!options.remote_store.empty()) {
    std::unique_ptr<RedisStore> remote =
        RedisStore::open({options.remote_store, options.remote, std::string(), options.warn});
    remote_ = remote.get();
    if (remote->enabled())
      layers.push_back(std::move(remote));
    else
      disabled_remote_ = std::move(remote);  // refused (warned): kept for its reason
  }
  if (layers.size() == 1)
    store_ = std::move(layers[0]);
  else if (layers.size() > 1)
    store_ = std::make_unique<LayeredStore>(std::move(layers));
  return store_.get();
}

std::string Executor::precision_report(Precision asked) const {
  return std::string("precision fp32 (asked ") + precision_name(asked) + "): backend " + std::string(backend_name(kind_)) +
         " computes in f32 only";
}

Tensor Executor::to_device(const Tensor&) {
  fail(ErrorCode::InvalidArgument, "Engine::to_device needs an engine with ", device_backends(), " (this one is ",
       backend_name(kind_), ")");
}

Tensor Executor::to_host(const Tensor&) {
  fail(ErrorCode::InvalidArgument, "Engine::to_host needs an engine with ", device_backends(), " (this one is ",
       backend_name(kind_), ")");
}

std::unique_ptr<JitBackend> make_jit_backend(BackendKind kind, const BackendOptions& options) {
#define FUSOR_BACKEND_MAKE_Precompiled(name) break;
#define FUSOR_BACKEND_MAKE_HostJit(name) return make_##name##_jit(options);
#define FUSOR_BACKEND_MAKE_DeviceJit(name) break;
#define FUSOR_BACKEND(kind, name, role, summary) \
  case BackendKind::kind: FUSOR_BACKEND_MAKE_##role(name)
  switch (kind) {
#include "codegen/backends.def"
  }
#undef FUSOR_BACKEND
#undef FUSOR_BACKEND_MAKE_Precompiled
#undef FUSOR_BACKEND_MAKE_HostJit
#undef FUSOR_BACKEND_MAKE_DeviceJit
  fail(ErrorCode::InvalidArgument, "backend ", backend_name(kind), " is not a host JIT backend");
}

std::unique_ptr<Executor> make_executor(ExecutorContext& ctx) {
  const BackendKind backend = ctx.options.backend;
  const BackendOptions options{ctx.options.dump_dir, ctx.options.tune, ctx.pool.num_threads()};
#define FUSOR_BACKEND_MAKE_Precompiled(name) return make_host_executor(ctx, backend, nullptr);
#define FUSOR_BACKEND_MAKE_HostJit(name) return make_host_executor(ctx, backend, make_##name##_jit(options));
#define FUSOR_BACKEND_MAKE_DeviceJit(name)                                                            \
  FUSOR_CHECK(ctx.options.verify == VerifyMode::Off, Unsupported, "EngineOptions::verify checks host plans only; " \
              "backend " #name " has no verify mode yet");                                               \
  return make_##name##_executor(ctx);
#define FUSOR_BACKEND(kind, name, role, summary) \
  case BackendKind::kind: FUSOR_BACKEND_MAKE_##role(name)
  switch (backend) {
#include "codegen/backends.def"
  }
#undef FUSOR_BACKEND
#undef FUSOR_BACKEND_MAKE_Precompiled
#undef FUSOR_BACKEND_MAKE_HostJit
#undef FUSOR_BACKEND_MAKE_DeviceJit
  fail(ErrorCode::InvalidArgument, "backend kind ", int(backend), " is not one of codegen/backends.def");
}

}  // namespace fusor
