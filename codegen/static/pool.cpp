// PLACEHOLDER: being written; every kernel reports Unsupported until then.
#include "codegen/static/kernel_util.h"

namespace fusor {

void run_MaxPool(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_AveragePool(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_GlobalAveragePool(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }

}  // namespace fusor
