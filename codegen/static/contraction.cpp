// PLACEHOLDER: being written; every kernel reports Unsupported until then.
#include "codegen/static/kernel_util.h"

namespace fusor {

void run_Conv(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_MatMul(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Gemm(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }

}  // namespace fusor
