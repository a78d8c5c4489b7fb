// The ops a fold replaced, evaluated in double: the reference verify checks a folded group
// against (Note [Verify mode], jit/verify.h). Layer: jit.
#pragma once

#include <optional>

#include "ir/passes/fold_batchnorm.h"
#include "ir/tensor.h"

namespace fusor {

/// The BatchNormalization's output as written before `fold`: its producer (Conv 2-D,
/// MatMul, Gemm) with its own constants, then the normalization, from the producer's first
/// input `x`, in double, rounded once to an f32 tensor of `shape`. nullopt where there is
/// no double path (a Conv that is not 2-D, inputs that are not f32, a shape that does not
/// fit); the caller then keeps the folded ops as the reference.
std::optional<Tensor> batchnorm_as_written_f64(const FoldedBatchNorm& fold, const Tensor& x, const Shape& shape);

}  // namespace fusor
