#include "codegen/cuda/cuda_backend.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>

#include "codegen/cuda/cuda_api.h"
#include "ir/error.h"

namespace fusor {

namespace {

int64_t micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
}

// Destroys an NVRTC program on every path out of a compile.
struct ProgramGuard {
  const cuda::Nvrtc& api;
  cuda::NvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) api.DestroyProgram(&prog);
  }
};

// One device's context and stream, shared by the backend, its buffers and its modules so
// none outlives the context.
struct DeviceContext {
  cuda::Driver drv;
  cuda::CuDevice dev = 0;
  cuda::CuContext ctx = nullptr;
  cuda::CuStream stream = nullptr;

  ~DeviceContext() {
    if (ctx) {
      drv.CtxSetCurrent(ctx);
      if (stream) drv.StreamDestroy(stream);
      drv.DevicePrimaryCtxRelease(dev);
    }
  }
  // The context is current per thread: every entry point that calls the driver sets it.
  void make_current() const { drv.check(drv.CtxSetCurrent(ctx), "cuCtxSetCurrent"); }
};

DeviceContext& device_of(const std::shared_ptr<void>& p) { return *static_cast<DeviceContext*>(p.get()); }

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail(ErrorCode::Io, "cuda backend: cannot write the dump '", path, "'");
}

}  // namespace

// ---- CudaCompiler --------------------------------------------------------------------------

struct CudaCompiler::Impl {
  cuda::Nvrtc nvrtc;
  CudaOptions options;
};

CudaCompiler::CudaCompiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCompiler::~CudaCompiler() = default;

std::unique_ptr<CudaCompiler> make_cuda_compiler(CudaOptions options) {
  auto impl = std::make_unique<CudaCompiler::Impl>();
  impl->options = std::move(options);
  std::string why;
  FUSOR_CHECK(cuda::load_nvrtc(&impl->nvrtc, &why), DeviceUnavailable, "cuda backend: ", why);
  return std::unique_ptr<CudaCompiler>(new CudaCompiler(std::move(impl)));
}

std::string CudaCompiler::nvrtc_version() const { return impl_->nvrtc.version(); }
std::string CudaCompiler::nvrtc_path() const { return impl_->nvrtc.path; }
const CudaOptions& CudaCompiler::options() const { return impl_->options; }

CudaBinary CudaCompiler::compile(const KernelSpec& spec, const std::string& arch) const {
  return compile(render_cuda(spec, cuda_symbol(spec)), arch);
}

CudaBinary CudaCompiler::compile(const CudaSource& source, const std::string& arch) const {
  const cuda::Nvrtc& api = impl_->nvrtc;
  auto failed = [&](const std::string& what, cuda::NvrtcResult r, const std::string& log) {
    fail(ErrorCode::CompileFailed, "cuda backend: NVRTC ", nvrtc_version(), " ", what, " kernel '", source.symbol, "' for ",
         arch, ": ", api.GetErrorString(r), "\n--- NVRTC log ---\n", log, "\n--- source ---\n", source.code);
  };
  const std::string& dump = impl_->options.dump_dir;
  if (!dump.empty()) write_file(dump + "/" + source.symbol + ".cu", source.code);
  ProgramGuard guard{api};
  const std::string name = source.symbol + ".cu";
  if (cuda::NvrtcResult r = api.CreateProgram(&guard.prog, source.code.c_str(), name.c_str(), 0, nullptr, nullptr))
    failed("could not create a program for", r, "");
  const std::string arch_opt = "--gpu-architecture=" + arch;
  // IEEE math (no -use_fast_math): Note [CUDA scalar math] in render_expr.cpp.
  const char* options[] = {arch_opt.c_str(), "-std=c++17", "-default-device"};
  auto t0 = std::chrono::steady_clock::now();
  cuda::NvrtcResult r = api.CompileProgram(guard.prog, int(std::size(options)), options);
  CudaBinary b;
  b.compile_us = micros_since(t0);
  size_t log_size = 0;
  if (api.GetProgramLogSize(guard.prog, &log_size) == 0 && log_size > 1) {
    b.log.resize(log_size);
    api.GetProgramLog(guard.prog, b.log.data());
    b.log.resize(log_size - 1);  // the terminating NUL
  }
  if (!dump.empty() && !b.log.empty()) write_file(dump + "/" + source.symbol + ".log", b.log);
  if (r) failed("failed to compile", r, b.log);
  size_t size = 0;
  if (cuda::NvrtcResult e = api.GetCUBINSize(guard.prog, &size)) failed("gave no cubin for", e, b.log);
  b.cubin.resize(size);
  if (cuda::NvrtcResult e = api.GetCUBIN(guard.prog, b.cubin.data())) failed("gave no cubin for", e, b.log);
  if (!dump.empty()) write_file(dump + "/" + source.symbol + ".cubin", b.cubin);
  b.source = source;
  b.arch = arch;
  return b;
}

std::string cuda_symbol(const KernelSpec& spec) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fusor_k%016" PRIx64, spec.hash());
  return buf;
}

// ---- DeviceBuffer --------------------------------------------------------------------------

DeviceBuffer::~DeviceBuffer() {
  if (address_ && device_) {
    DeviceContext& d = device_of(device_);
    d.drv.CtxSetCurrent(d.ctx);
    d.drv.MemFree(address_);
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : device_(std::move(o.device_)), address_(o.address_), bytes_(o.bytes_) {
  o.address_ = 0;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    DeviceBuffer old(std::move(*this));
    device_ = std::move(o.device_);
    address_ = o.address_;
    bytes_ = o.bytes_;
    o.address_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

// ---- CudaBackend ---------------------------------------------------------------------------

struct CudaBackend::Impl {
  std::shared_ptr<void> device;  // a DeviceContext
  std::unique_ptr<CudaCompiler> compiler;
  std::string arch, name;
  int sms = 0, driver_version = 0, max_shared_optin = 48 * 1024;
  DeviceContext& dev() const { return device_of(device); }
};

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaBackend::~CudaBackend() = default;

std::unique_ptr<CudaBackend> make_cuda_backend(int ordinal, CudaOptions options) {
  auto dev = std::make_shared<DeviceContext>();
  std::string why;
  FUSOR_CHECK(cuda::load_driver(&dev->drv, &why), DeviceUnavailable, "cuda backend: ", why);
  const cuda::Driver& d = dev->drv;
  d.check(d.Init(0), "cuda backend: cuInit (no usable CUDA device or driver)", ErrorCode::DeviceUnavailable);
  int count = 0;
  d.check(d.DeviceGetCount(&count), "cuda backend: cuDeviceGetCount", ErrorCode::DeviceUnavailable);
  FUSOR_CHECK(ordinal >= 0 && ordinal < count, DeviceUnavailable, "cuda backend: no CUDA device ", ordinal, " (", count,
              " present)");
  d.check(d.DeviceGet(&dev->dev, ordinal), "cuda backend: cuDeviceGet", ErrorCode::DeviceUnavailable);
  auto impl = std::make_unique<CudaBackend::Impl>();
  int major = 0, minor = 0;
  d.check(d.DeviceGetAttribute(&major, cuda::kCuAttrComputeCapabilityMajor, dev->dev), "cuDeviceGetAttribute");
  d.check(d.DeviceGetAttribute(&minor, cuda::kCuAttrComputeCapabilityMinor, dev->dev), "cuDeviceGetAttribute");
  d.check(d.DeviceGetAttribute(&impl->sms, cuda::kCuAttrMultiprocessorCount, dev->dev), "cuDeviceGetAttribute");
  d.check(d.DeviceGetAttribute(&impl->max_shared_optin, cuda::kCuAttrMaxSharedPerBlockOptin, dev->dev), "cuDeviceGetAttribute");
  d.check(d.DriverGetVersion(&impl->driver_version), "cuDriverGetVersion");
  char name[256] = {};
  d.check(d.DeviceGetName(name, int(sizeof name) - 1, dev->dev), "cuDeviceGetName");
  impl->name = name;
  FUSOR_CHECK(major >= 8, DeviceUnavailable, "cuda backend: ", impl->name, " has compute capability ", major, ".", minor,
              "; the cuda backend needs 8.0 or newer (mma.sync m16n8k16)");
  impl->arch = "sm_" + std::to_string(major) + std::to_string(minor);
  impl->compiler = make_cuda_compiler(std::move(options));
  d.check(d.DevicePrimaryCtxRetain(&dev->ctx, dev->dev), "cuda backend: cuDevicePrimaryCtxRetain", ErrorCode::DeviceUnavailable);
  dev->make_current();
  d.check(d.StreamCreate(&dev->stream, cuda::kCuStreamNonBlocking), "cuda backend: cuStreamCreate");
  impl->device = std::move(dev);
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl)));
}

std::shared_ptr<const CudaKernel> CudaBackend::compile(const KernelSpec& spec) {
  CudaBinary binary = impl_->compiler->compile(spec, impl_->arch);
  return load_binary(spec, std::move(binary));
}

std::shared_ptr<const CudaKernel> CudaBackend::load(const KernelSpec& spec, std::string cubin) {
  CudaBinary binary;
  binary.source = render_cuda(spec, cuda_symbol(spec));
  binary.arch = impl_->arch;
  binary.cubin = std::move(cubin);
  return load_binary(spec, std::move(binary));
}

std::shared_ptr<const CudaKernel> CudaBackend::load_binary(const KernelSpec& spec, CudaBinary binary) {
  auto k = std::make_shared<CudaKernel>();
  k->spec = spec;
  k->binary = std::move(binary);
  const CudaSource& src = k->binary.source;
  FUSOR_CHECK(int64_t(src.launch.shared_bytes) <= impl_->max_shared_optin, Unsupported, "cuda backend: kernel '", spec.name,
              "' needs ", src.launch.shared_bytes, " bytes of shared memory; ", impl_->name, " allows ",
              impl_->max_shared_optin);
  // cuModuleLoadData reads an ELF image of unstated length: a stored image too short to be
  // one is refused here rather than read past its end.
  FUSOR_CHECK(k->binary.cubin.size() >= 64 && k->binary.cubin.compare(0, 4, "\x7f" "ELF") == 0, CompileFailed,
              "cuda backend: the image of kernel '", src.symbol, "' is not a cubin (", k->binary.cubin.size(), " bytes)");
  DeviceContext& d = impl_->dev();
  d.make_current();
  auto t0 = std::chrono::steady_clock::now();
  cuda::CuModule mod = nullptr;
  d.drv.check(d.drv.ModuleLoadData(&mod, k->binary.cubin.data()),
              "cuda backend: cuModuleLoadData of kernel '" + src.symbol + "' (" + impl_->arch + ")", ErrorCode::CompileFailed);
  std::shared_ptr<void> device = impl_->device;
  k->module = std::shared_ptr<void>(mod, [device](void* m) {
    DeviceContext& dv = device_of(device);
    dv.drv.CtxSetCurrent(dv.ctx);
    dv.drv.ModuleUnload(static_cast<cuda::CuModule>(m));
  });
  cuda::CuFunction fn = nullptr;
  d.drv.check(d.drv.ModuleGetFunction(&fn, mod, src.symbol.c_str()), "cuda backend: cuModuleGetFunction " + src.symbol,
              ErrorCode::CompileFailed);
  if (src.launch.shared_bytes > 48 * 1024)
    d.drv.check(d.drv.FuncSetAttribute(fn, cuda::kCuFuncAttrMaxDynamicSharedBytes, int(src.launch.shared_bytes)),
                "cuda backend: cuFuncSetAttribute (dynamic shared memory)");
  k->function = fn;
  k->load_us = micros_since(t0);
  return k;
}

void CudaBackend::launch(const CudaKernel& k, const std::vector<uint64_t>& buffers) {
  const CudaSource& src = k.binary.source;
  FUSOR_CHECK(buffers.size() == k.spec.buffers.size(), InvalidArgument, "cuda backend: kernel '", k.spec.name, "' takes ",
              k.spec.buffers.size(), " buffers, got ", buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    FUSOR_CHECK(buffers[i] % src.alignment == 0, InvalidArgument, "cuda backend: buffer ", i, " (", k.spec.buffers[i].name,
                ") of kernel '", k.spec.name, "' is not aligned to ", src.alignment, " bytes");
  // The launch is on the engine's hot path: no allocation for the usual few buffers.
  constexpr size_t kInline = 32;
  cuda::CuDevicePtr inline_values[kInline];
  void* inline_params[kInline];
  std::vector<cuda::CuDevicePtr> heap_values;
  std::vector<void*> heap_params;
  cuda::CuDevicePtr* values = inline_values;
  void** params = inline_params;
  if (buffers.size() > kInline) {
    heap_values.resize(buffers.size());
    heap_params.resize(buffers.size());
    values = heap_values.data();
    params = heap_params.data();
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    values[i] = buffers[i];
    params[i] = &values[i];
  }
  DeviceContext& d = impl_->dev();
  d.make_current();
  const CudaLaunchConfig& l = src.launch;
  d.drv.check(d.drv.LaunchKernel(static_cast<cuda::CuFunction>(k.function), l.grid[0], l.grid[1], l.grid[2], l.block[0],
                                 l.block[1], l.block[2], l.shared_bytes, d.stream, params, nullptr),
              "cuda backend: cuLaunchKernel of '" + src.symbol + "' (" + src.variant + ")");
}

void CudaBackend::synchronize() {
  DeviceContext& d = impl_->dev();
  d.make_current();
  d.drv.check(d.drv.StreamSynchronize(d.stream), "cuda backend: cuStreamSynchronize");
}

DeviceBuffer CudaBackend::alloc(size_t bytes) {
  DeviceContext& d = impl_->dev();
  d.make_current();
  DeviceBuffer b;
  b.device_ = impl_->device;
  b.bytes_ = bytes;
  cuda::CuDevicePtr p = 0;
  d.drv.check(d.drv.MemAlloc(&p, bytes == 0 ? 1 : bytes), "cuda backend: cuMemAlloc of " + std::to_string(bytes) + " bytes",
              ErrorCode::OutOfMemory);
  b.address_ = p;
  return b;
}

void CudaBackend::copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes) {
  FUSOR_CHECK(bytes <= dst.bytes(), InvalidArgument, "cuda backend: copy of ", bytes, " bytes into a buffer of ", dst.bytes());
  copy_to_device(dst.address(), src, bytes);
}

void CudaBackend::copy_to_device(uint64_t dst, const void* src, size_t bytes) {
  DeviceContext& d = impl_->dev();
  d.make_current();
  // From pageable memory the data is staged before the call returns: `src` may be reused.
  if (bytes) d.drv.check(d.drv.MemcpyHtoDAsync(dst, src, bytes, d.stream), "cuda backend: cuMemcpyHtoDAsync");
}

void CudaBackend::copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) {
  FUSOR_CHECK(bytes <= src.bytes(), InvalidArgument, "cuda backend: copy of ", bytes, " bytes out of a buffer of ", src.bytes());
  copy_to_host(dst, src.address(), bytes);
}

void CudaBackend::copy_to_host(void* dst, uint64_t src, size_t bytes) {
  DeviceContext& d = impl_->dev();
  d.make_current();
  if (bytes) d.drv.check(d.drv.MemcpyDtoHAsync(dst, src, bytes, d.stream), "cuda backend: cuMemcpyDtoHAsync");
  d.drv.check(d.drv.StreamSynchronize(d.stream), "cuda backend: cuStreamSynchronize");
}

void CudaBackend::fill(DeviceBuffer& dst, unsigned char value) {
  DeviceContext& d = impl_->dev();
  d.make_current();
  if (dst.bytes()) d.drv.check(d.drv.MemsetD8Async(dst.address(), value, dst.bytes(), d.stream), "cuda backend: cuMemsetD8Async");
}

std::string CudaBackend::arch() const { return impl_->arch; }

std::string cuda_compiler_version(const std::string& nvrtc_version) { return "nvrtc-" + nvrtc_version; }

std::string CudaBackend::compiler_version() const { return cuda_compiler_version(impl_->compiler->nvrtc_version()); }

std::string CudaBackend::description() const {
  return impl_->name + ", " + impl_->arch + ", " + std::to_string(impl_->sms) + " SMs, driver " +
         std::to_string(impl_->driver_version) + ", NVRTC " + impl_->compiler->nvrtc_version();
}

const CudaCompiler& CudaBackend::compiler() const { return *impl_->compiler; }

}  // namespace fusor
