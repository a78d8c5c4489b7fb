// fold_batchnorm: folds an inference BatchNormalization into the Conv, MatMul or Gemm that
// feeds it, so the normalization costs nothing at run time. Layer: ir/passes (std only).
#pragma once

#include "ir/graph.h"
#include "ir/passes/derived_constants.h"
#include "ir/passes/fusion_options.h"

namespace fusor {

/// What one fold replaced (PassNote::folded): the producer and the BatchNormalization as
/// written, with their constants, so that verify can compute the folded group's values from
/// the ops before the rewrite (jit/verify.h, Note [Verify mode]).
struct FoldedBatchNorm {
  Node producer;                           ///< the Conv, MatMul or Gemm (its op and attributes)
  std::vector<Tensor> producer_constants;  ///< its inputs after the first (undefined where absent)
  Node batchnorm;                          ///< the BatchNormalization (its epsilon)
  std::vector<Tensor> bn_constants;        ///< gamma, beta, mean, var
  std::string output;                      ///< the BN's output: the value the folded nodes make
  double variance_floor = 0;               ///< FusionOptions::bn_variance_floor the fold used
};

/// Rewrites every  P -> BatchNormalization  where P is a Conv (constant weight and bias),
/// a MatMul with a rank-2 output and a constant 2-D right operand, or a Gemm with constant
/// B (and C), P's output feeds only the BN and is not a graph output, and the BN's
/// parameters are constants. With s = gamma / sqrt(var + eps) per output channel:
///   W' = W * s,   b' = (b - mean) * s + beta,
/// computed in double and rounded once. var + eps below options.bn_variance_floor is
/// raised to it (logged). A MatMul gains an Add of b'. The folded node keeps P's name and
/// takes the BN's output name. Declined folds are logged with their reason. The folded
/// weights are derived constants (`derive`, ir/passes/derived_constants.h).
Graph fold_batchnorm(const Graph& g, const FusionOptions& options, FusionLog* log, const DeriveConstants& derive = {});

}  // namespace fusor
