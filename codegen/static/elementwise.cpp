// PLACEHOLDER: being written; every kernel reports Unsupported until then.
#include "codegen/static/kernel_util.h"

namespace fusor {

void run_Add(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Sub(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Mul(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Div(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Pow(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Max(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Min(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Relu(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Gelu(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Erf(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Tanh(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Sigmoid(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Exp(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Sqrt(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Neg(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Cast(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }
void run_Where(StaticKernelArgs& a) { node_fail(a.node, ErrorCode::Unsupported, "not yet implemented"); }

}  // namespace fusor
