// AsmjitBackend in a build without asmjit (FUSOR_WITH_ASMJIT=OFF): everything links,
// make_asmjit_backend() says why the backend is unavailable, and no backend object can be
// made. asmjit_supports() (supports.cpp) answers as in a full build. Layer: codegen/asmjit.
#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/backends.h"
#include "ir/error.h"

#ifndef FUSOR_ASMJIT_UNAVAILABLE_REASON
#define FUSOR_ASMJIT_UNAVAILABLE_REASON "fusor was built without asmjit"
#endif

namespace fusor {

struct AsmjitBackend::Impl {
  Options options;
};

AsmjitBackend::AsmjitBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AsmjitBackend::~AsmjitBackend() = default;

bool AsmjitBackend::supports(const KernelSpec& spec, std::string* why) const { return asmjit_supports(spec, why); }

std::shared_ptr<const CompiledKernel> AsmjitBackend::compile(const KernelSpec&) {
  fail(ErrorCode::DeviceUnavailable, "asmjit backend: not built in (", FUSOR_ASMJIT_UNAVAILABLE_REASON, ")");
}

std::string AsmjitBackend::target_description() const { return "asmjit backend not built in"; }
std::string AsmjitBackend::compiler_version() const { return "none"; }
int AsmjitBackend::vector_lanes() const { return 0; }
const AsmjitBackend::Options& AsmjitBackend::options() const { return impl_->options; }

std::unique_ptr<AsmjitBackend> make_asmjit_backend(AsmjitBackend::Options) {
  fail(ErrorCode::DeviceUnavailable, "asmjit backend: not built in (", FUSOR_ASMJIT_UNAVAILABLE_REASON, ")");
}

std::unique_ptr<JitBackend> make_asmjit_jit(const BackendOptions&) { return make_asmjit_backend(); }

}  // namespace fusor
