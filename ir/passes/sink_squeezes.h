// sink_squeezes: a Squeeze of a contraction's output moves below the pointwise ops that
// follow it (Note [Sinking squeezes] in sink_squeezes.cpp). A 1-D convolution is the 2-D one
// over [N, C, 1, L] then a Squeeze (onnx/compositions.h); with the Squeeze sunk, its bias,
// BatchNormalization and activation see the convolution's own shape again, so BN folds into
// the weights and the rest fuses as the epilogue. Layer: ir/passes (std only).
#pragma once

#include "ir/graph.h"
#include "ir/passes/fusion_options.h"

namespace fusor {

/// Sinks every Squeeze of a Conv, MatMul or Gemm output through the pointwise ops below it
/// (and BatchNormalization, when no channel axis is squeezed); logs each op it moves past.
Graph sink_squeezes(const Graph& g, const FusionOptions& options, FusionLog* log);

}  // namespace fusor
