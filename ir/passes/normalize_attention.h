// normalize_attention: rewrites the forms the PyTorch exporters give scaled dot-product
// attention into the one the attention group takes (Q·Kᵀ, pointwise on the scores,
// softmax, ·V), see Note [Exported attention] in normalize_attention.cpp:
//   MatMul(Mul(q, a), Mul(k, b))            -> Mul(MatMul(q, k), a * b)     (a, b scalar constants)
//   MatMul(Where(IsNaN(p), 0, p), v)        -> o = MatMul(p, v); Where(IsNaN(o), 0, o)
//                                              (p a Softmax over the last axis)
// Layer: ir/passes (std only).
#pragma once

#include "ir/graph.h"
#include "ir/passes/fusion_options.h"

namespace fusor {

/// Applies both rewrites (with options.normalize_exports) wherever every intermediate they remove has no other consumer and
/// is no graph output; logs each one.
Graph normalize_attention(const Graph& g, const FusionOptions& options, FusionLog* log);

}  // namespace fusor
