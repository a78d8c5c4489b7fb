// PLACEHOLDER: being written; every kernel reports Unsupported until then.
#include "codegen/static/kernel_util.h"

namespace fusor {

void run_Transpose(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Reshape(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Flatten(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Squeeze(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Unsqueeze(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Concat(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Slice(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Gather(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }

}  // namespace fusor
