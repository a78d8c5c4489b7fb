// The CUDA side of the Engine (EngineOptions::backend = Cuda): kernel keys for cubins,
// the plan of a graph at one input signature on the device, and the executor that builds
// and runs those plans on one device's stream. Layer: jit (no CUDA header: the driver and
// NVRTC are reached through codegen/cuda).
#pragma once

#include <string>

#include "cache/kernel_key.h"
#include "codegen/kernel_spec.h"

namespace fusor {

/// The key of `spec`'s cubin (Note [Kernel key]): backend "cuda", target the architecture
/// ("sm_90"), compiler "nvrtc-<version>" ("nvrtc-13.0"), engine version kFusorVersion. The
/// persistent store keeps cubins under KernelKey::serialize() of it.
KernelKey cuda_kernel_key(const KernelSpec& spec, const std::string& arch, const std::string& nvrtc_version);

}  // namespace fusor
