// The LLVM IR of a Winograd F(2x2, 3x3) convolution kernel (Note [Winograd convolutions],
// codegen/winograd.h): per task, one panel of NR output tiles of one image is transformed
// (fusor_rt_winograd_input), the 16 GEMMs over the channels run on the contraction
// micro-kernel (emit_tile.h), and each tile row's outputs go through the spec's epilogue.
// Chosen by contraction_tiling (emit_contraction.h) for the convolutions it applies to.
// Internal to codegen/llvm. Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/llvm/emit_contraction.h"

namespace fusor {

/// How a Winograd kernel addresses its operands, as the contraction's form has them.
struct WinogradOperands {
  int image = -1;                      ///< the image's buffer
  int64_t image_offset = 0;
  std::vector<int64_t> image_batch;    ///< elements between images (over the conv's [N, group])
  int64_t sc = 0, sy = 0;              ///< the image's channel and row strides (columns: 1)
  int weights = -1;                    ///< the packed transformed weights' buffer
  /// Per epilogue access: its batch strides over [N, group], and its strides between
  /// output channels (rows) and pixels (columns; rows of pixels merge).
  struct Epi {
    std::vector<int64_t> batch;
    int64_t row = 0, col = 0;
  };
  std::vector<Epi> epi;
};

/// Scratch bytes one task of a Winograd kernel takes on the stack with tile mr x nr over
/// `channels` input channels: the transformed image, the 16 GEMM tiles, the staged outputs.
int64_t winograd_scratch_bytes(int64_t channels, int64_t mr, int64_t nr);

/// The module defining `void @<symbol>(ptr %buffers, i64 %task_begin, i64 %task_end)` over
/// [0, t.tasks()), with buffers[ops.weights] holding pack_b(..., t.mr, ..., prepack_kind(t))
/// (PackKind::WinogradWeights, or Bf16WinogradWeights when t.bf16).
std::string emit_winograd_ir(const KernelSpec& spec, const std::string& symbol, const ContractionTiling& t,
                             const WinogradOperands& ops);

}  // namespace fusor
