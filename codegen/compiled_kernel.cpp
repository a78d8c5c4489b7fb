#include "codegen/compiled_kernel.h"

#include <algorithm>

#include "ir/error.h"

namespace fusor {

uint64_t CompiledKernel::resident_bytes() const {
  // code_bytes is the object's size when the kernel keeps one (llvm), else its machine code.
  const uint64_t code = object.empty() ? uint64_t(code_bytes) : uint64_t(object.size());
  return sizeof(CompiledKernel) + code + uint64_t(std::max<int64_t>(backend_bytes, 0));
}

std::shared_ptr<const CompiledKernel> JitBackend::load(const KernelSpec& spec, const std::string&) {
  fail(ErrorCode::Unsupported, name(), " backend: cannot load stored kernels (kernel '", spec.name, "')");
}

void CompiledKernel::bind_packed(void** buffers, std::vector<Tensor>& packed) const {
  for (const Prepack& p : prepacks) {
    packed.push_back(Tensor::zeros(DType::F32, Shape{std::max<int64_t>(p.floats, 1)}));
    pack(p, static_cast<const float*>(buffers[p.buffer]), packed.back().data<float>());
    buffers[p.buffer] = packed.back().raw();
  }
}

}  // namespace fusor
