#include "jit/engine_types.h"

#include "ir/hash.h"

namespace fusor {

uint64_t EngineOptions::hash() const {
  Hasher h;
  h.str("EngineOptions-v1").u64(uint64_t(backend)).u64(fuse).u64(fuse ? fusion.hash() : 0).str(symbolic_dim).u64(specialize)
      .u64(uint64_t(precision)).u64(tune);
  return h.digest();
}

}  // namespace fusor
