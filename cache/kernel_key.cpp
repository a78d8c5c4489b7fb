#include "cache/kernel_key.h"

#include "ir/hash.h"

namespace fusor {

uint64_t KernelKey::hash() const {
  return Hasher().u64(spec.hash()).str(backend).str(target).str(compiler).str(engine_version).digest();
}

std::string KernelKey::serialize() const {
  // Length-prefixed strings, then the spec's own serialization (KernelSpec::key_bytes: every
  // field its hash covers), so no two different keys give the same bytes.
  std::string out;
  auto str = [&](std::string_view v) {
    const uint64_t n = v.size();
    for (int i = 0; i < 8; ++i) out.push_back(char((n >> (8 * i)) & 0xff));
    out.append(v);
  };
  str("KernelKey-v2");
  for (const std::string* f : {&backend, &target, &compiler, &engine_version}) str(*f);
  out += spec.key_bytes();
  return out;
}

}  // namespace fusor
