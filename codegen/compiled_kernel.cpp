#include "codegen/compiled_kernel.h"

#include "ir/error.h"

namespace fusor {

std::shared_ptr<const CompiledKernel> JitBackend::load(const KernelSpec& spec, const std::string&) {
  fail(ErrorCode::Unsupported, name(), " backend: cannot load stored kernels (kernel '", spec.name, "')");
}

}  // namespace fusor
