// The cuda backend: KernelSpec -> CUDA C++ (render_cuda.h) -> NVRTC -> cubin -> driver API.
// Two entry points. CudaCompiler needs only NVRTC: it compiles for an explicit
// architecture ("sm_90") with no GPU present, which is how CI checks that every spec kind
// compiles. CudaBackend needs libcuda and a device (compute capability 8.0 or newer: the
// tensor-core kernels use mma.sync m16n8k16): it compiles for the device's architecture,
// loads cubins with cuModuleLoadData and launches on its own stream, and owns the
// device-memory helpers tests use. Both libraries are loaded at run time; when one is
// missing the factory throws Error(DeviceUnavailable) naming what is missing. No CUDA
// header here or in the .cpp (codegen/cuda/cuda_api.h declares what is called).
// Layer: codegen/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cuda/render_cuda.h"
#include "codegen/kernel_spec.h"

namespace fusor {

/// How the cuda backend compiles.
struct CudaOptions {
  /// When not empty: an existing folder that receives, per compiled kernel, <symbol>.cu (the
  /// rendered source, the spec on top), <symbol>.cubin and, when NVRTC said anything,
  /// <symbol>.log. A source NVRTC rejects is written too.
  std::string dump_dir;
};

/// A kernel compiled by NVRTC (not loaded anywhere).
struct CudaBinary {
  CudaSource source;        ///< what was compiled, with its launch configuration
  std::string arch;         ///< "sm_90"
  std::string cubin;        ///< the cubin's bytes
  std::string log;          ///< NVRTC's log (warnings; empty when clean)
  int64_t compile_us = 0;   ///< NVRTC's compile wall time
};

/// NVRTC alone. Thread-safe (NVRTC programs are independent).
class CudaCompiler {
 public:
  ~CudaCompiler();
  CudaCompiler(const CudaCompiler&) = delete;
  CudaCompiler& operator=(const CudaCompiler&) = delete;

  /// Renders `spec` and compiles it for `arch` ("sm_80", "sm_90", ...). Throws
  /// Error(Unsupported) when the renderer declines the spec, Error(CompileFailed) with the
  /// generated source and NVRTC's log when NVRTC rejects it.
  CudaBinary compile(const KernelSpec& spec, const std::string& arch) const;
  /// Compiles an already rendered kernel (the same errors). Throws Error(Io) when a dump
  /// cannot be written.
  CudaBinary compile(const CudaSource& source, const std::string& arch) const;
  /// The options it was made with.
  const CudaOptions& options() const;
  /// NVRTC's version, "13.0".
  std::string nvrtc_version() const;
  /// The library that was loaded.
  std::string nvrtc_path() const;

  struct Impl;

 private:
  friend std::unique_ptr<CudaCompiler> make_cuda_compiler(CudaOptions options);
  explicit CudaCompiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The NVRTC compiler. Throws Error(DeviceUnavailable) with every place tried when
/// libnvrtc cannot be loaded.
std::unique_ptr<CudaCompiler> make_cuda_compiler(CudaOptions options = {});

/// The compiler part of a cubin's kernel key for NVRTC `version`: "nvrtc-<version>".
std::string cuda_compiler_version(const std::string& nvrtc_version);

/// The symbol a spec's kernel is rendered under: "fusor_k<16 hex digits of spec.hash()>".
std::string cuda_symbol(const KernelSpec& spec);

class CudaBackend;

/// A block of device memory; freed when destroyed. Movable, not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// The device address (CUdeviceptr), 256-byte aligned; 0 when empty.
  uint64_t address() const { return address_; }
  size_t bytes() const { return bytes_; }

 private:
  friend class CudaBackend;
  std::shared_ptr<void> device_;  // keeps the context alive while memory is held
  uint64_t address_ = 0;
  size_t bytes_ = 0;
};

/// A kernel loaded on the device. The module is unloaded when the last reference drops.
struct CudaKernel {
  KernelSpec spec;
  CudaBinary binary;
  int64_t load_us = 0;        ///< cuModuleLoadData + cuModuleGetFunction
  std::shared_ptr<void> module;  ///< owns the CUmodule (and the device context)
  void* function = nullptr;   ///< the CUfunction
};

/// Compiles and runs KernelSpecs on one CUDA device. Holds no cache: the runtime's kernel
/// cache decides when to compile. Launches go to the backend's stream, in order.
class CudaBackend {
 public:
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  /// "cuda": part of kernel keys.
  std::string_view name() const { return "cuda"; }
  /// Whether compile() takes `spec`; *why (if given) says why not.
  bool supports(const KernelSpec& spec, std::string* why) const { return cuda_supports(spec, why); }
  /// The architecture the cubins are for, arch(); part of kernel keys.
  std::string target_description() const { return arch(); }
  /// cuda_compiler_version() of the NVRTC in use; part of kernel keys.
  std::string compiler_version() const;
  /// Cubins load back (load()): the persistent store keeps them.
  bool can_load() const { return true; }
  /// Renders, compiles for the device's architecture and loads `spec`. Throws
  /// Error(Unsupported), Error(CompileFailed) (with the source and NVRTC's log, or the
  /// driver's reason when the cubin does not load).
  std::shared_ptr<const CudaKernel> compile(const KernelSpec& spec);
  /// Loads `spec`'s kernel from `cubin`, the CudaBinary::cubin that this NVRTC version built
  /// for arch() (e.g. from the persistent store): the spec is rendered again for its symbol
  /// and launch configuration (microseconds) and nothing is compiled. Throws
  /// Error(Unsupported) when the renderer declines the spec, Error(CompileFailed) with the
  /// driver's reason when the image does not load or lacks the kernel's symbol.
  std::shared_ptr<const CudaKernel> load(const KernelSpec& spec, std::string cubin);
  /// Enqueues `k` on the stream; buffers[i] is the device address of spec.buffers[i]
  /// (aligned to k.binary.source.alignment). Throws Error(InvalidArgument) on a wrong
  /// count or a misaligned address, Error(Internal) when the launch fails.
  void launch(const CudaKernel& k, const std::vector<uint64_t>& buffers);
  /// Waits for everything enqueued; throws Error(Internal) with the driver's reason when a
  /// kernel faulted.
  void synchronize();

  /// Device memory (uninitialized).
  DeviceBuffer alloc(size_t bytes);
  /// Enqueues a copy from host memory on the stream (`src` may be reused on return).
  void copy_to_device(DeviceBuffer& dst, const void* src, size_t bytes);
  /// Copies to host memory after everything enqueued before it; returns when done.
  void copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes);
  /// The same at a device address (inside memory this backend allocated).
  void copy_to_device(uint64_t dst, const void* src, size_t bytes);
  /// The same from a device address (inside memory this backend allocated).
  void copy_to_host(void* dst, uint64_t src, size_t bytes);
  /// Enqueues setting every byte of `dst` to `value` on the stream.
  void fill(DeviceBuffer& dst, unsigned char value);

  /// "sm_90".
  std::string arch() const;
  /// "NVIDIA H200, sm_90, 132 SMs, driver 13000, NVRTC 13.0".
  std::string description() const;
  /// The compiler it uses.
  const CudaCompiler& compiler() const;

  struct Impl;

 private:
  friend std::unique_ptr<CudaBackend> make_cuda_backend(int ordinal, CudaOptions options);
  explicit CudaBackend(std::unique_ptr<Impl> impl);
  // Loads a compiled (or stored) binary of `spec` on the device.
  std::shared_ptr<const CudaKernel> load_binary(const KernelSpec& spec, CudaBinary binary);
  std::unique_ptr<Impl> impl_;
};

/// The backend for CUDA device `ordinal`. Throws Error(DeviceUnavailable) naming what is
/// missing: libcuda, a device (cuInit's reason), compute capability 8.0, or libnvrtc.
std::unique_ptr<CudaBackend> make_cuda_backend(int ordinal = 0, CudaOptions options = {});

}  // namespace fusor
