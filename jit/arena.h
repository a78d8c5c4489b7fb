// Memory for a plan's intermediates: one block per run, laid out once per plan by
// liveness (values whose lifetimes do not overlap share bytes), and blocks recycled across
// runs so a steady state allocates nothing and touches no fresh pages. Layer: jit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace fusor {

/// One buffer to place: its size and the steps [first, last] during which it is live.
struct ArenaItem {
  int64_t bytes = 0;
  int first = 0;
  int last = 0;
};

/// Offsets (64-byte aligned) for the items such that items live at the same step never
/// overlap; returns the total size. Greedy: largest first, lowest free offset.
int64_t layout_arena(const std::vector<ArenaItem>& items, std::vector<int64_t>* offsets);

/// A block of memory for a run's intermediates and the bytes it holds (its capacity, which
/// may exceed what was asked: Note [Arena blocks]).
struct ArenaBlock {
  std::shared_ptr<void> memory;
  int64_t bytes = 0;
  explicit operator bool() const { return memory != nullptr; }
};

/// The capacity a new block of at least `bytes` gets (Note [Arena blocks]).
int64_t arena_block_capacity(int64_t bytes);

/// A thread-safe stock of 64-byte aligned blocks, reused across runs. The stock is bounded
/// in blocks (kMaxSpare) and in bytes (`max_spare_bytes`, 0: by count alone), so the arenas
/// of shapes the plan cache has long evicted are not kept resident: the engine bounds it by
/// its plan budget, which charges each plan for its arena.
class ArenaPool {
 public:
  explicit ArenaPool(uint64_t max_spare_bytes = 0) : max_spare_bytes_(max_spare_bytes) {}
  /// A block of at least `bytes`: the smallest one in stock that is large enough, else a new
  /// one of arena_block_capacity(bytes).
  ArenaBlock acquire(int64_t bytes);
  /// Returns a block to the stock, which keeps the largest blocks within its bounds and
  /// frees the others.
  void release(ArenaBlock block);
  /// The bytes of the blocks in stock.
  uint64_t spare_bytes() const;

 private:
  static constexpr size_t kMaxSpare = 8;
  const uint64_t max_spare_bytes_;
  mutable std::mutex mu_;
  uint64_t spare_bytes_ = 0;
  std::vector<ArenaBlock> spare_;
};

/// A run's arena block from a pool, given back however the run ends.
class ArenaLease {
 public:
  /// A block of at least `bytes` (none for 0).
  ArenaLease(ArenaPool& pool, int64_t bytes) : pool_(pool), block_(bytes ? pool.acquire(bytes) : ArenaBlock{}) {}
  ~ArenaLease() {
    if (block_) pool_.release(std::move(block_));
  }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  char* base() const { return static_cast<char*>(block_.memory.get()); }

 private:
  ArenaPool& pool_;
  ArenaBlock block_;
};

}  // namespace fusor
