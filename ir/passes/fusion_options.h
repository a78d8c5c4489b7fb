// FusionOptions: every knob of the fusion passes, in one struct that travels explicitly
// (passes read no global settings) and is part of the plan-cache key. FusionLog: what the
// passes did and declined, for the explain report (passes never print).
// Layer: ir/passes (std only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fusor {

struct FoldedBatchNorm;  // ir/passes/fold_batchnorm.h

/// Options of the fusion pipeline.
struct FusionOptions {
  /// Fold BatchNormalization into a preceding Conv / MatMul / Gemm.
  bool fold_batchnorm = true;
  /// When folding, var + epsilon below this floor is raised to it (near-zero or negative
  /// variances would otherwise give infinite or NaN weights). Each use is logged.
  double bn_variance_floor = 1e-12;
  /// Collapse decomposed GELU / LayerNorm / Softmax subgraphs into the single ops.
  bool recognize_patterns = true;
  /// Merge MatMuls that share an input and have constant weights into one wider MatMul
  /// (the Q/K/V projections), its outputs split by views.
  bool merge_parallel_matmuls = true;
  /// Rewrite what the PyTorch exporters spell differently into the forms fusion takes:
  /// attention with scaled operands and a NaN guard (ir/passes/normalize_attention.h),
  /// Gemm between flattening reshapes (ir/passes/fold_gemm_reshapes.h).
  bool normalize_exports = true;
  /// Group ops into fused kernels; off gives one group per op (the unfused baseline).
  bool group = true;
  /// The most ops one fused group takes; a longer chain is cut into groups of at most this
  /// many (its kernel's code grows with its ops, and asmjit's register allocation and LLVM's
  /// passes take time that grows faster: a 4000-op chain took 19 s and 75 s to compile).
  int64_t max_group_ops = 256;
  /// Hash of every field, for cache keys.
  uint64_t hash() const;
};

/// One thing a pass did ("folded BatchNormalization 'bn1' into Conv 'conv1'").
struct PassNote {
  std::string pass;
  std::string node;
  std::string message;
  /// Set when the pass changed the numerics to keep them finite, what it did
  /// ("BatchNorm variance floor 1e-12 applied to 16 channels of bn1"); verify reports it
  /// with the group of `node` (jit/verify.h).
  std::string guard;
  /// Set by fold_batchnorm: the ops as written before the fold, so that verify checks the
  /// folded group against them (jit/verify.h, Note [Verify mode]).
  std::shared_ptr<const FoldedBatchNorm> folded;
};

/// One fusion a pass considered and declined, and why.
struct DeclinedFusion {
  std::string producer;  ///< node whose output would have been swallowed
  std::string consumer;  ///< node that would have absorbed it
  std::string reason;    ///< "multi-consumer", "shape mismatch", "unsupported op", ...
  std::string detail;
};

/// What the passes did, in order.
struct FusionLog {
  std::vector<PassNote> applied;
  std::vector<DeclinedFusion> declined;
  void note(std::string pass, std::string node, std::string message, std::string guard = "",
            std::shared_ptr<const FoldedBatchNorm> folded = nullptr) {
    applied.push_back({std::move(pass), std::move(node), std::move(message), std::move(guard), std::move(folded)});
  }
  void decline(std::string producer, std::string consumer, std::string reason, std::string detail = "") {
    declined.push_back({std::move(producer), std::move(consumer), std::move(reason), std::move(detail)});
  }
};

}  // namespace fusor
