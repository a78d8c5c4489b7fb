// Rendering a KernelSpec as CUDA C++: one extern "C" __global__ function per spec, taking
// one pointer per KernelSpec::buffers entry (b0, b1, ... in order; inputs const), with the
// spec printed as a comment on top, and the launch configuration that goes with it. The
// source needs no CUDA header (NVRTC compiles it as is). Every kernel kind is rendered:
// pointwise (render_pointwise.cpp), row reductions (render_reduction.cpp), GEMM and Conv2d
// (render_contraction.cpp), attention (render_attention.cpp). Layer: codegen/cuda (no CUDA
// library is needed to render).
#pragma once

#include <cstdint>
#include <string>

#include "codegen/kernel_spec.h"

namespace fusor {

/// How a rendered kernel is launched.
struct CudaLaunchConfig {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  ///< dynamic shared memory per block
};

/// A rendered kernel.
struct CudaSource {
  std::string code;        ///< the whole translation unit
  std::string symbol;      ///< the extern "C" name of the __global__ function
  CudaLaunchConfig launch; ///< its launch configuration
  /// Every buffer pointer passed at launch must be aligned to this many bytes (vector
  /// loads and stores); cuMemAlloc gives 256.
  uint32_t alignment = 16;
  /// What the renderer chose, for dumps and tests ("pointwise vec4", "gemm mma.sync f16 128x128x32", ...).
  std::string variant;
};

/// Whether render_cuda takes `spec` (a well-formed spec within the renderer's limits);
/// *why (if given) says why not.
bool cuda_supports(const KernelSpec& spec, std::string* why);

/// Renders `spec` as a kernel named `symbol`. Throws Error(Unsupported) with the reason
/// when cuda_supports() is false.
CudaSource render_cuda(const KernelSpec& spec, const std::string& symbol);

}  // namespace fusor
