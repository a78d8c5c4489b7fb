// KernelStore: what the runtime asks of a store of compiled kernels that outlives the
// process (cubins, relocatable objects): get and put payloads under the bytes of a
// KernelKey (KernelKey::serialize(), Note [Kernel key]), and say what it holds. The kernel
// source (jit/kernel_source.h) sees stores only through this, so a disk store, a remote
// one or a layered memory → disk → remote store plug in alike. Layer: cache.
//
// A store never throws for a bad entry or an unreachable medium: a get that cannot return
// a valid payload is a miss, a put that cannot write returns false, and the store warns
// through its own sink.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fusor {

/// Counters of one process's use of a store, and what the store holds now.
struct StoreStats {
  uint64_t loads = 0;          ///< get() calls on an enabled store
  uint64_t hits = 0;           ///< gets that returned a payload
  uint64_t misses = 0;         ///< gets that found no valid entry (includes corrupt)
  uint64_t corrupt = 0;        ///< entries found stale, foreign, truncated, corrupt or oversized
  uint64_t rejected = 0;       ///< entries whose authentication tag was missing or wrong (never loaded)
  uint64_t unavailable = 0;    ///< gets and puts that did not reach the medium (down, timed out, refused)
  uint64_t writes = 0;         ///< entries saved
  uint64_t write_failures = 0; ///< puts that failed (disk full, removed directory)
  uint64_t bytes_read = 0;     ///< payload bytes returned by get
  uint64_t bytes_written = 0;  ///< payload bytes saved
  uint64_t entries = 0;        ///< entries held now (every process's)
  uint64_t bytes = 0;          ///< their size in the store
  std::string location;        ///< where it keeps them (a folder, a URL), for messages
  std::string state;           ///< "" when healthy, else what is wrong now ("unreachable: ...")
};

/// The counters of StoreStats that every store keeps the same way, thread-safe.
class StoreCounters {
 public:
  void load() { add(loads_); }
  void hit(uint64_t bytes) { add(hits_), add(bytes_read_, bytes); }
  void miss() { add(misses_); }
  void corrupt() { add(corrupt_); }
  void rejected() { add(rejected_); }
  void unavailable() { add(unavailable_); }
  void wrote(uint64_t bytes) { add(writes_), add(bytes_written_, bytes); }
  void write_failed() { add(write_failures_); }
  /// The counts into `s` (its other fields untouched).
  void fill(StoreStats& s) const {
    s.loads = loads_.load();
    s.hits = hits_.load();
    s.misses = misses_.load();
    s.corrupt = corrupt_.load();
    s.rejected = rejected_.load();
    s.unavailable = unavailable_.load();
    s.writes = writes_.load();
    s.write_failures = write_failures_.load();
    s.bytes_read = bytes_read_.load();
    s.bytes_written = bytes_written_.load();
  }

 private:
  static void add(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
  std::atomic<uint64_t> loads_{0}, hits_{0}, misses_{0}, corrupt_{0}, rejected_{0}, unavailable_{0}, writes_{0},
      write_failures_{0}, bytes_read_{0}, bytes_written_{0};
};

/// A store of compiled kernels keyed by serialized KernelKeys. Implementations are
/// thread-safe.
class KernelStore {
 public:
  virtual ~KernelStore() = default;
  /// The payload put under `key`, or nullopt when there is none or it is not valid.
  virtual std::optional<std::vector<uint8_t>> get(std::string_view key) = 0;
  /// Saves `payload` under `key`, replacing any earlier one; false when it was not saved.
  virtual bool put(std::string_view key, std::span<const uint8_t> payload) = 0;
  /// The counters and what the store holds now.
  virtual StoreStats stats() const = 0;
};

}  // namespace fusor
