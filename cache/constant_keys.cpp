#include "cache/constant_keys.h"

#include <cstring>

#include "ir/hash.h"

namespace fusor {

namespace {

uint64_t address_of(const Tensor& t) { return uint64_t(reinterpret_cast<uintptr_t>(t.raw())); }

bool same_storage(const Tensor& a, const Tensor& b) { return a.raw() == b.raw() && a.nbytes() == b.nbytes(); }

bool same_content(const Tensor& a, uint64_t ha, const Tensor& b, uint64_t hb) {
  return ha == hb && a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

uint64_t content_hash(const Tensor& t) { return Hasher().bytes(t.raw(), t.nbytes()).digest(); }

bool PackKey::operator==(const PackKey& o) const { return same_storage(source, o.source) && layout == o.layout; }

size_t PackKeyHash::operator()(const PackKey& k) const {
  return size_t(Hasher().u64(address_of(k.source)).str(k.layout).digest());
}

bool InternKey::operator==(const InternKey& o) const { return same_content(data, content, o.data, o.content); }

bool DerivedKey::operator==(const DerivedKey& o) const {
  if (d.recipe != o.d.recipe || d.sources.size() != o.d.sources.size()) return false;
  for (size_t i = 0; i < d.sources.size(); ++i) {
    const Tensor &a = d.sources[i], &b = o.d.sources[i];
    if (a.defined() != b.defined() || a.raw() != b.raw() || a.dtype() != b.dtype() || !(a.shape() == b.shape()))
      return false;
  }
  return true;
}

size_t DerivedKeyHash::operator()(const DerivedKey& k) const {
  Hasher h;
  h.str(k.d.recipe);
  for (const Tensor& t : k.d.sources) h.u64(address_of(t)).u64(t.nbytes());
  return size_t(h.digest());
}

bool DeviceConstKey::operator==(const DeviceConstKey& o) const {
  if (by_content != o.by_content) return false;
  return by_content ? same_content(source, content, o.source, o.content) : same_storage(source, o.source);
}

size_t DeviceConstKeyHash::operator()(const DeviceConstKey& k) const {
  return k.by_content ? size_t(k.content) : size_t(Hasher().u64(address_of(k.source)).digest());
}

}  // namespace fusor
