// KeyedCache: a thread-safe map from full keys to immutable shared values, built on demand
// with single flight: when several threads ask for one missing key, one builds it and the
// others wait for that result. A build that throws is not cached: every waiter gets the
// error and the next request builds again. Layer: cache.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace fusor {

/// Counters of a cache, read with KeyedCache::stats().
struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  ///< builds started
  uint64_t failures = 0;
  uint64_t entries = 0;
};

template <class Key, class Value, class Hash>
class KeyedCache {
 public:
  /// The value for key, building it with build() when absent. Thread-safe; build runs
  /// without the cache lock held.
  std::shared_ptr<const Value> get_or_build(const Key& key, const std::function<std::shared_ptr<const Value>()>& build) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lk(mu_);
      auto it = map_.find(key);
      if (it == map_.end()) {
        slot = std::make_shared<Slot>();
        map_.emplace(key, slot);
        ++stats_.misses;
      } else {
        slot = it->second;
        ++stats_.hits;
        if (slot->value) return slot->value;
        slot_cv_.wait(lk, [&] { return slot->done; });
        if (slot->value) return slot->value;
        std::rethrow_exception(slot->error);
      }
    }
    try {
      std::shared_ptr<const Value> v = build();
      std::lock_guard<std::mutex> lk(mu_);
      slot->value = v;
      slot->done = true;
      slot_cv_.notify_all();
      return v;
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      slot->error = std::current_exception();
      slot->done = true;
      map_.erase(key);  // failures are never cached
      ++stats_.failures;
      slot_cv_.notify_all();
      throw;
    }
  }

  CacheStats stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    CacheStats s = stats_;
    s.entries = map_.size();
    return s;
  }

  void clear() {
    std::lock_guard<std::mutex> lk(mu_);
    map_.clear();
  }

 private:
  struct Slot {
    std::shared_ptr<const Value> value;
    std::exception_ptr error;
    bool done = false;
  };
  mutable std::mutex mu_;
  std::condition_variable slot_cv_;
  std::unordered_map<Key, std::shared_ptr<Slot>, Hash> map_;
  CacheStats stats_;
};

}  // namespace fusor
