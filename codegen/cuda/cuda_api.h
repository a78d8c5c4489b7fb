// The NVRTC and CUDA driver entry points fusor calls, loaded with dlopen at run time so one
// binary runs on machines with and without CUDA: no CUDA header and no link-time dependency.
// Each library is a table of function pointers with self-declared prototypes (the few
// handle types are opaque pointers); loading fails softly with the reason (which names the
// library tried and where). Errors of either API become fusor::Error here.
// Internal to codegen/cuda. Layer: codegen/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/error.h"

namespace fusor::cuda {

// ---- NVRTC ---------------------------------------------------------------------------------

/// nvrtcResult (0 is NVRTC_SUCCESS) and the opaque program handle.
using NvrtcResult = int;
using NvrtcProgram = struct NvrtcProgramOpaque*;

/// The NVRTC C API, dlopen'd. Copies share the library (dlopen is reference counted).
struct Nvrtc {
  const char* (*GetErrorString)(NvrtcResult) = nullptr;
  NvrtcResult (*Version)(int* major, int* minor) = nullptr;
  NvrtcResult (*CreateProgram)(NvrtcProgram*, const char* src, const char* name, int num_headers,
                               const char* const* headers, const char* const* include_names) = nullptr;
  NvrtcResult (*DestroyProgram)(NvrtcProgram*) = nullptr;
  NvrtcResult (*CompileProgram)(NvrtcProgram, int num_options, const char* const* options) = nullptr;
  NvrtcResult (*GetCUBINSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*GetCUBIN)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*GetPTXSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*GetPTX)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*GetProgramLogSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*GetProgramLog)(NvrtcProgram, char*) = nullptr;

  std::string path;        ///< what was opened
  std::shared_ptr<void> handle;  ///< dlclose'd when the last copy goes

  /// "13.0": nvrtcVersion().
  std::string version() const;
};

/// Loads NVRTC from the first of `candidates` that opens (empty: libnvrtc.so.13, .so.12,
/// .so, then the same names in the toolkit's usual folders). Returns false with *why
/// naming every place tried when none loads or a symbol is missing.
bool load_nvrtc(Nvrtc* out, std::string* why, const std::vector<std::string>& candidates = {});

// ---- CUDA driver API -----------------------------------------------------------------------

using CuResult = int;  ///< CUresult (0 is CUDA_SUCCESS)
using CuDevice = int;
using CuDevicePtr = unsigned long long;
using CuContext = struct CuContextOpaque*;
using CuModule = struct CuModuleOpaque*;
using CuFunction = struct CuFunctionOpaque*;
using CuStream = struct CuStreamOpaque*;

/// The driver attributes fusor reads (values of CUdevice_attribute / CUfunction_attribute).
enum : int {
  kCuAttrMultiprocessorCount = 16,
  kCuAttrComputeCapabilityMajor = 75,
  kCuAttrComputeCapabilityMinor = 76,
  kCuAttrMaxSharedPerBlockOptin = 97,
  kCuFuncAttrMaxDynamicSharedBytes = 8,
  kCuStreamNonBlocking = 1,
};

/// The CUDA driver API, dlopen'd (the _v2 entry points that cuda.h maps the names to).
struct Driver {
  CuResult (*Init)(unsigned flags) = nullptr;
  CuResult (*DriverGetVersion)(int*) = nullptr;
  CuResult (*GetErrorName)(CuResult, const char**) = nullptr;
  CuResult (*GetErrorString)(CuResult, const char**) = nullptr;
  CuResult (*DeviceGetCount)(int*) = nullptr;
  CuResult (*DeviceGet)(CuDevice*, int ordinal) = nullptr;
  CuResult (*DeviceGetName)(char*, int len, CuDevice) = nullptr;
  CuResult (*DeviceGetAttribute)(int*, int attribute, CuDevice) = nullptr;
  CuResult (*DevicePrimaryCtxRetain)(CuContext*, CuDevice) = nullptr;
  CuResult (*DevicePrimaryCtxRelease)(CuDevice) = nullptr;
  CuResult (*CtxSetCurrent)(CuContext) = nullptr;
  CuResult (*StreamCreate)(CuStream*, unsigned flags) = nullptr;
  CuResult (*StreamDestroy)(CuStream) = nullptr;
  CuResult (*StreamSynchronize)(CuStream) = nullptr;
  CuResult (*ModuleLoadData)(CuModule*, const void* image) = nullptr;
  CuResult (*ModuleUnload)(CuModule) = nullptr;
  CuResult (*ModuleGetFunction)(CuFunction*, CuModule, const char* name) = nullptr;
  CuResult (*FuncSetAttribute)(CuFunction, int attribute, int value) = nullptr;
  CuResult (*LaunchKernel)(CuFunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned shared_bytes, CuStream, void** params, void** extra) = nullptr;
  CuResult (*MemAlloc)(CuDevicePtr*, size_t) = nullptr;
  CuResult (*MemFree)(CuDevicePtr) = nullptr;
  // Copies and fills go to a stream, so they are ordered with the launches on it (a
  // non-blocking stream does not wait for the legacy default stream).
  CuResult (*MemcpyHtoDAsync)(CuDevicePtr, const void*, size_t, CuStream) = nullptr;
  CuResult (*MemcpyDtoHAsync)(void*, CuDevicePtr, size_t, CuStream) = nullptr;
  CuResult (*MemsetD8Async)(CuDevicePtr, unsigned char, size_t, CuStream) = nullptr;

  std::string path;
  std::shared_ptr<void> handle;

  /// "CUDA_ERROR_X: text" for a result.
  std::string error_text(CuResult r) const;
  /// Throws Error(code, what + ": " + error_text(r)) unless r is CUDA_SUCCESS; an
  /// out-of-memory result throws OutOfMemory whatever `code` says.
  void check(CuResult r, const std::string& what, ErrorCode code = ErrorCode::Internal) const;
};

/// Loads the CUDA driver from the first of `candidates` that opens (empty: libcuda.so.1,
/// libcuda.so). Returns false with *why when none is there or a symbol is missing. Does not
/// call cuInit.
bool load_driver(Driver* out, std::string* why, const std::vector<std::string>& candidates = {});

}  // namespace fusor::cuda
