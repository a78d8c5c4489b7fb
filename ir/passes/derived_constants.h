// Derived constants: the constants passes compute from other constants (merged Q/K/V
// weights, BatchNorm-folded weights). A pass names each derivation — a recipe (what it
// computes, with every parameter that changes the result) and the constants it reads — and
// gets its tensors from `make` or, through a DeriveConstants the caller supplies, from an
// equal earlier derivation: the engine keeps them across the plans of every shape, so a new
// sequence length neither recomputes nor re-copies 7 MiB of merged BERT weights (Note
// [Derived constants] in jit/shared_constants.h). Layer: ir/passes (std only).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace fusor {

/// One derivation: its result depends only on the recipe and the sources' contents.
struct ConstantDerivation {
  std::string recipe;           ///< "merge_parallel_matmuls.concat_columns", "fold_batchnorm Conv eps=..."
  std::vector<Tensor> sources;  ///< the constants it reads, in order
};

/// The derivation's tensors: make() or an earlier equal derivation's (never modified by
/// anyone: constants are read-only).
using DeriveConstants =
    std::function<std::vector<Tensor>(const ConstantDerivation&, const std::function<std::vector<Tensor>()>& make)>;

/// derive(d, make), or make() when no derive was given.
inline std::vector<Tensor> derive_constants(const DeriveConstants& derive, const ConstantDerivation& d,
                                            const std::function<std::vector<Tensor>()>& make) {
  return derive ? derive(d, make) : make();
}

}  // namespace fusor
