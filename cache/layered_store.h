// LayeredStore: stores read in order, nearest first, written through: the local disk store
// in front of the remote store a fleet shares. Layer: cache.
//
// Note [Layered store]
// ~~~~~~~~~~~~~~~~~~~~
// A read is memory → local disk → remote: memory is the engine's kernel cache (jit/
// kernel_source.h), which asks the store only for a kernel it does not hold; the store then
// asks its layers in order. A payload found in a farther layer is put into the nearer ones,
// so the next process on this machine reads it from its disk. A compile writes through:
// put() saves to every layer, and succeeds if any layer took it. Each layer validates what
// it returns (the disk store its checksums, the remote store its tags too), so a layer
// never vouches for another's bytes. A layer that fails (a full disk, a remote server that
// is down) costs only its own misses.
#pragma once

#include <memory>
#include <vector>

#include "cache/kernel_store.h"

namespace fusor {

/// Stores read nearest first and written through (Note [Layered store]). Thread-safe when
/// every layer is.
class LayeredStore final : public KernelStore {
 public:
  /// The layers, nearest first (at least one).
  explicit LayeredStore(std::vector<std::unique_ptr<KernelStore>> layers);

  std::optional<std::vector<uint8_t>> get(std::string_view key) override;
  bool put(std::string_view key, std::span<const uint8_t> payload) override;
  /// The layered reads and writes; entries and bytes are the nearest layer's, the other
  /// counters (corrupt, rejected, unavailable, write failures) the sum of the layers', and
  /// location and state join the layers'.
  StoreStats stats() const override;

  /// The layers, nearest first.
  const std::vector<std::unique_ptr<KernelStore>>& layers() const { return layers_; }

 private:
  std::vector<std::unique_ptr<KernelStore>> layers_;
  StoreCounters counts_;  // the layered gets and puts
};

}  // namespace fusor
