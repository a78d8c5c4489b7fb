#include "codegen/static/static_backend.h"

#include <array>

#include "ir/op_schema.h"

namespace fusor {

// Every family file of codegen/static defines one kernel per op it owns (a missing one is a
// link error): run_<Kind>(StaticKernelArgs&).
#define FUSOR_OP(kind, family) void run_##kind(StaticKernelArgs&);
#include "ir/ops.def"
#undef FUSOR_OP

namespace {
using KernelFn = void (*)(StaticKernelArgs&);
const std::array<KernelFn, kNumOpKinds> kKernels = {
#define FUSOR_OP(kind, family) &run_##kind,
#include "ir/ops.def"
#undef FUSOR_OP
};
}  // namespace

void run_static_kernel(StaticKernelArgs& args) {
  FUSOR_ASSERT(size_t(args.node.op) < kKernels.size());
  FUSOR_ASSERT(args.outputs.size() == args.node.outputs.size(), node_label(args.node), " outputs");
  kKernels[size_t(args.node.op)](args);
}

}  // namespace fusor
