#include "jit/cuda_executor.h"

namespace fusor {

KernelKey cuda_kernel_key(const KernelSpec& spec, const std::string& arch, const std::string& nvrtc_version) {
  return KernelKey{spec, "cuda", arch, "nvrtc-" + nvrtc_version};
}

}  // namespace fusor
