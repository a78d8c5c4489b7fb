#include "cache/plan_key.h"

#include "ir/hash.h"

namespace fusor {

uint64_t PlanKey::hash() const {
  Hasher h;
  h.u64(graph_fingerprint).u64(uint64_t(device)).u64(options_hash).u64(inputs.size());
  for (const TensorType& t : inputs) {
    h.u64(uint64_t(t.dtype)).u64(uint64_t(t.shape.rank()));
    for (int64_t d : t.shape.dims()) h.i64(d);
  }
  return h.digest();
}

}  // namespace fusor
