// The executor of backend cuda (EngineOptions::backend = Cuda; make_cuda_executor, declared
// by jit/executor.h from codegen/backends.def): the device plans of jit/cuda_plan.h with
// their kernels from the kernel source (cubins in the persistent store, Note [Kernel
// source]), their constants uploaded once (jit/shared_constants.h, cache/constant_keys.h)
// and one device arena each, run on one device's stream. Runs are serialized (one stream,
// one arena per plan): a launch enqueues without waiting, so the lock is never held while a
// kernel runs on the host. Layer: jit (no CUDA header: the driver and NVRTC are reached
// through codegen/cuda).
#pragma once

#include <string>

#include "cache/kernel_key.h"
#include "codegen/kernel_spec.h"
#include "jit/cuda_plan.h"
#include "jit/executor.h"

namespace fusor {

/// The key of `spec`'s cubin (Note [Kernel key]): backend "cuda", target the architecture
/// ("sm_90"), compiler cuda_compiler_version(nvrtc_version) ("nvrtc-13.0"), engine version
/// kFusorVersion: what the kernel source asks the CUDA backend for. The persistent store
/// keeps cubins under KernelKey::serialize() of it.
KernelKey cuda_kernel_key(const KernelSpec& spec, const std::string& arch, const std::string& nvrtc_version);

}  // namespace fusor
