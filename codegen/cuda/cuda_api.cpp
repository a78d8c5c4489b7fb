#include "codegen/cuda/cuda_api.h"

#include <dlfcn.h>

#include <initializer_list>
#include <vector>

namespace fusor::cuda {

namespace {

constexpr int kCudaErrorOutOfMemory = 2;

// dlopen's the first name that loads; *tried lists every attempt with dlerror's reason.
// The library stays loaded for the life of the process, as driver libraries must: NVRTC and
// libcuda keep state (atexit handlers, their own runtime's allocations) that unloading them
// would leave dangling.
std::shared_ptr<void> open_first(const std::vector<std::string>& names, std::string* path, std::string* tried) {
  for (const std::string& n : names) {
    dlerror();
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = n;
      return std::shared_ptr<void>(h, [](void*) {});  // never dlclose'd (see above)
    }
    const char* e = dlerror();
    *tried += "\n  " + n + ": " + (e ? e : "not found");
  }
  return nullptr;
}

// Resolves each (slot, symbol) pair; false with *missing naming the first absent symbol.
struct Resolver {
  void* handle;
  std::string missing;
  template <class Fn>
  void operator()(Fn*& slot, const char* symbol) {
    void* p = dlsym(handle, symbol);
    if (!p && missing.empty()) missing = symbol;
    slot = reinterpret_cast<Fn*>(p);
  }
};

}  // namespace

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  if (!Version || Version(&major, &minor) != 0) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

bool load_nvrtc(Nvrtc* out, std::string* why, const std::vector<std::string>& candidates) {
  std::vector<std::string> names = candidates;
  if (names.empty()) {
    names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    for (const char* dir : {"/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"})
      for (const char* lib : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.push_back(std::string(dir) + lib);
  }
  Nvrtc n;
  std::string tried;
  n.handle = open_first(names, &n.path, &tried);
  if (!n.handle) {
    *why = "NVRTC (libnvrtc) could not be loaded; tried:" + tried;
    return false;
  }
  Resolver r{n.handle.get(), {}};
  r(n.GetErrorString, "nvrtcGetErrorString");
  r(n.Version, "nvrtcVersion");
  r(n.CreateProgram, "nvrtcCreateProgram");
  r(n.DestroyProgram, "nvrtcDestroyProgram");
  r(n.CompileProgram, "nvrtcCompileProgram");
  r(n.GetCUBINSize, "nvrtcGetCUBINSize");
  r(n.GetCUBIN, "nvrtcGetCUBIN");
  r(n.GetPTXSize, "nvrtcGetPTXSize");
  r(n.GetPTX, "nvrtcGetPTX");
  r(n.GetProgramLogSize, "nvrtcGetProgramLogSize");
  r(n.GetProgramLog, "nvrtcGetProgramLog");
  if (!r.missing.empty()) {
    *why = n.path + " lacks " + r.missing + " (NVRTC older than CUDA 11.1?)";
    return false;
  }
  *out = std::move(n);
  return true;
}

std::string Driver::error_text(CuResult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (GetErrorName) GetErrorName(r, &name);
  if (GetErrorString) GetErrorString(r, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(r)) + (text ? std::string(": ") + text : "");
}

void Driver::check(CuResult r, const std::string& what, ErrorCode code) const {
  if (r == 0) return;
  fail(r == kCudaErrorOutOfMemory ? ErrorCode::OutOfMemory : code, what, ": ", error_text(r));
}

bool load_driver(Driver* out, std::string* why, const std::vector<std::string>& candidates) {
  Driver d;
  std::string tried;
  d.handle = open_first(candidates.empty() ? std::vector<std::string>{"libcuda.so.1", "libcuda.so"} : candidates, &d.path,
                        &tried);
  if (!d.handle) {
    *why = "the CUDA driver (libcuda) could not be loaded; tried:" + tried;
    return false;
  }
  Resolver r{d.handle.get(), {}};
  r(d.Init, "cuInit");
  r(d.DriverGetVersion, "cuDriverGetVersion");
  r(d.GetErrorName, "cuGetErrorName");
  r(d.GetErrorString, "cuGetErrorString");
  r(d.DeviceGetCount, "cuDeviceGetCount");
  r(d.DeviceGet, "cuDeviceGet");
  r(d.DeviceGetName, "cuDeviceGetName");
  r(d.DeviceGetAttribute, "cuDeviceGetAttribute");
  r(d.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  r(d.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  r(d.CtxSetCurrent, "cuCtxSetCurrent");
  r(d.StreamCreate, "cuStreamCreate");
  r(d.StreamDestroy, "cuStreamDestroy_v2");
  r(d.StreamSynchronize, "cuStreamSynchronize");
  r(d.ModuleLoadData, "cuModuleLoadData");
  r(d.ModuleUnload, "cuModuleUnload");
  r(d.ModuleGetFunction, "cuModuleGetFunction");
  r(d.FuncSetAttribute, "cuFuncSetAttribute");
  r(d.LaunchKernel, "cuLaunchKernel");
  r(d.MemAlloc, "cuMemAlloc_v2");
  r(d.MemFree, "cuMemFree_v2");
  r(d.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  r(d.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  r(d.MemsetD8Async, "cuMemsetD8Async");
  if (!r.missing.empty()) {
    *why = d.path + " lacks " + r.missing + " (a driver older than CUDA 11?)";
    return false;
  }
  *out = std::move(d);
  return true;
}

}  // namespace fusor::cuda
