#include "codegen/cuda/render_cuda.h"

#include "codegen/cuda/render_expr.h"
#include "codegen/cuda/render_kinds.h"
#include "ir/error.h"

namespace fusor {

bool cuda_supports(const KernelSpec& spec, std::string* why) {
  if (spec.symbolic) {
    if (why) *why = "symbolic kernels (a run-time outer extent) are the llvm backend's";
    return false;
  }
  for (const BufferSpec& b : spec.buffers)
    if (b.elements < 0) {
      if (why) *why = "a buffer with a negative size";
      return false;
    }
  switch (spec.kind) {
    case KernelKind::Pointwise: return cuda_src::pointwise_supported(spec, why);
    case KernelKind::RowReduction: return cuda_src::reduction_supported(spec, why);
    case KernelKind::Contraction: return cuda_src::contraction_supported(spec, why);
    case KernelKind::Attention: return cuda_src::attention_supported(spec, why);
  }
  if (why) *why = "an unknown kernel kind";
  return false;
}

CudaSource render_cuda(const KernelSpec& spec, const std::string& symbol) {
  std::string why;
  FUSOR_CHECK(cuda_supports(spec, &why), Unsupported, "cuda backend: kernel '", spec.name, "': ", why);
  CudaSource s;
  switch (spec.kind) {
    case KernelKind::Pointwise: s = cuda_src::render_pointwise(spec, symbol); break;
    case KernelKind::RowReduction: s = cuda_src::render_reduction(spec, symbol); break;
    case KernelKind::Contraction: s = cuda_src::render_contraction(spec, symbol); break;
    case KernelKind::Attention: s = cuda_src::render_attention(spec, symbol); break;
  }
  std::string head = cuda_src::spec_comment(spec) + "// variant: " + s.variant + "\n" + cuda_src::kPreamble +
                     (cuda_src::narrow_index(spec) ? "typedef int idx_t;\n" : "typedef long long idx_t;\n");
  s.code = head + s.code;
  s.symbol = symbol;
  return s;
}

}  // namespace fusor
