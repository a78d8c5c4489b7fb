// merge_parallel_matmuls: MatMuls that read the same activation with constant weights of
// the same depth (BERT's Q, K and V projections) become one wider MatMul — one pass over
// the activation, one kernel, better GEMM shapes — whose result is split by Slices (views
// of the wide output). A bias Add following every one of them merges too.
// Layer: ir/passes (std only).
#pragma once

#include "ir/graph.h"
#include "ir/passes/derived_constants.h"
#include "ir/passes/fusion_options.h"

namespace fusor {

/// Merges each set of >= 2 sibling MatMuls x @ W_i (W_i constant, 2-D [K, N_i], same
/// dtype) into x @ [W_1 | ... | W_n] followed by Slices on the last axis; when every one is
/// followed by a sole-consumer Add of a constant [N_i] bias, the biases merge into one Add.
/// The Slices take the names of the values they replace. The merged weights and biases are
/// derived constants (`derive`, ir/passes/derived_constants.h).
Graph merge_parallel_matmuls(const Graph& g, const FusionOptions& options, FusionLog* log,
                             const DeriveConstants& derive = {});

}  // namespace fusor
