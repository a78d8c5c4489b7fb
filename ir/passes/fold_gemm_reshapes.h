// fold_gemm_reshapes: a Gemm between two Reshapes that only flatten and restore the leading
// dims (PyTorch's Linear / GPT-2's Conv1D as exported: Reshape(x, [-1, K]) -> Gemm ->
// Reshape to [..., N]) becomes MatMul on the unflattened x, then Mul(alpha) and Add(beta*C)
// as separate pointwise ops. The product's epilogue (bias, GELU, residual) then sees one
// shape from the GEMM to the last op and fuses into it. Layer: ir/passes (std only).
#pragma once

#include "ir/graph.h"
#include "ir/passes/fusion_options.h"

namespace fusor {

/// Applies the rewrite wherever it holds (transA = 0; C of rank <= 1 or [1, N]; the Gemm's
/// only consumer the restoring Reshape); logs each one.
Graph fold_gemm_reshapes(const Graph& g, const FusionOptions& options, FusionLog* log);

}  // namespace fusor
