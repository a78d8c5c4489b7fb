#include "ir/passes/fusion_options.h"

#include "ir/hash.h"

namespace fusor {

uint64_t FusionOptions::hash() const {
  Hasher h;
  h.str("FusionOptions-v1")
      .u64(fold_batchnorm)
      .f64(bn_variance_floor)
      .u64(recognize_patterns)
      .u64(merge_parallel_matmuls)
      .u64(normalize_exports)
      .u64(group);
  return h.digest();
}

}  // namespace fusor
