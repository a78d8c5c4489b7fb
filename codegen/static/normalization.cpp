// PLACEHOLDER: being written; every kernel reports Unsupported until then.
#include "codegen/static/kernel_util.h"

namespace fusor {

void run_BatchNormalization(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_LayerNormalization(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Softmax(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }

}  // namespace fusor
