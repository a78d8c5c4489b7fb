#include "cache/layered_store.h"

#include "ir/error.h"

namespace fusor {

LayeredStore::LayeredStore(std::vector<std::unique_ptr<KernelStore>> layers) : layers_(std::move(layers)) {
  FUSOR_CHECK(!layers_.empty(), InvalidArgument, "a layered store needs at least one layer");
  for (const auto& l : layers_) FUSOR_CHECK(l != nullptr, InvalidArgument, "a layered store's layer is null");
}

std::optional<std::vector<uint8_t>> LayeredStore::get(std::string_view key) {
  counts_.load();
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::optional<std::vector<uint8_t>> payload = layers_[i]->get(key);
    if (!payload) continue;
    for (size_t j = 0; j < i; ++j) layers_[j]->put(key, *payload);  // fill the nearer layers
    counts_.hit(payload->size());
    return payload;
  }
  counts_.miss();
  return std::nullopt;
}

bool LayeredStore::put(std::string_view key, std::span<const uint8_t> payload) {
  bool any = false;
  for (const auto& l : layers_) any = l->put(key, payload) || any;
  if (any) counts_.wrote(payload.size());
  return any;
}

StoreStats LayeredStore::stats() const {
  StoreStats s;
  counts_.fill(s);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const StoreStats l = layers_[i]->stats();
    if (i == 0) {
      s.entries = l.entries;
      s.bytes = l.bytes;
    }
    s.corrupt += l.corrupt;
    s.rejected += l.rejected;
    s.unavailable += l.unavailable;
    s.write_failures += l.write_failures;
    s.location += (i ? " → " : "") + l.location;
    if (!l.state.empty()) s.state += (s.state.empty() ? "" : "; ") + l.location + ": " + l.state;
  }
  return s;
}

}  // namespace fusor
