// The per-kind renderers behind render_cuda (codegen/cuda/render_cuda.h): each checks the
// limits of its kind and renders the kernel and its launch configuration. Internal to
// codegen/cuda. Layer: codegen/cuda.
#pragma once

#include <string>

#include "codegen/cuda/render_cuda.h"

namespace fusor::cuda_src {

/// Kind-specific checks (the expression graphs' structure included); false with *why.
bool pointwise_supported(const KernelSpec& spec, std::string* why);
bool reduction_supported(const KernelSpec& spec, std::string* why);
bool contraction_supported(const KernelSpec& spec, std::string* why);
bool attention_supported(const KernelSpec& spec, std::string* why);

/// The kernel body and launch (the caller adds the spec comment and the preamble in front).
CudaSource render_pointwise(const KernelSpec& spec, const std::string& symbol);
CudaSource render_reduction(const KernelSpec& spec, const std::string& symbol);
CudaSource render_contraction(const KernelSpec& spec, const std::string& symbol);
CudaSource render_attention(const KernelSpec& spec, const std::string& symbol);

}  // namespace fusor::cuda_src
