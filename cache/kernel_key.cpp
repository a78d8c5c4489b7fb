#include "cache/kernel_key.h"

#include "ir/hash.h"

namespace fusor {

size_t KernelKeyHash::operator()(const KernelKey& k) const {
  return size_t(Hasher().u64(k.spec.hash()).str(k.backend).str(k.target).digest());
}

}  // namespace fusor
