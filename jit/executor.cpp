#include "jit/executor.h"

#include "ir/error.h"

namespace fusor {

std::unique_ptr<JitBackend> make_jit_backend(BackendKind kind, const BackendOptions& options) {
#define FUSOR_BACKEND_MAKE_Precompiled(name) break;
#define FUSOR_BACKEND_MAKE_HostJit(name) return make_##name##_jit(options);
#define FUSOR_BACKEND_MAKE_DeviceJit(name) break;
#define FUSOR_BACKEND(kind, name, role, summary) \
  case BackendKind::kind: FUSOR_BACKEND_MAKE_##role(name)
  switch (kind) {
#include "codegen/backends.def"
  }
#undef FUSOR_BACKEND
#undef FUSOR_BACKEND_MAKE_Precompiled
#undef FUSOR_BACKEND_MAKE_HostJit
#undef FUSOR_BACKEND_MAKE_DeviceJit
  fail(ErrorCode::InvalidArgument, "backend ", backend_name(kind), " is not a host JIT backend");
}

}  // namespace fusor
