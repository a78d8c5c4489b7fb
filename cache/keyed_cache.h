// KeyedCache: a thread-safe map from full keys to immutable shared values, built on demand
// with single flight and bounded in bytes with LRU eviction (see Note [Keyed cache]).
// Layer: cache.
//
// Note [Keyed cache]
// ~~~~~~~~~~~~~~~~~~
// - Single flight: when several threads ask for one missing key, the first starts the
//   build (without the cache lock held) and the others wait for its result.
// - Failures are never cached: a build that throws hands its error to every waiter, the
//   slot is dropped, and the next request builds again.
// - Every entry has a cost in bytes: the builder returns it with the value (SizedValue), or
//   Options::cost computes it from the value; otherwise it costs 0.
// - With a budget (Options::budget_bytes, set_budget; 0 = unbounded), a completed build
//   that takes the total over the budget evicts the least recently used entries until the
//   total fits again. Only completed entries are evicted: a build in flight has a slot but
//   no place in the LRU list. An entry costing more than the whole budget is returned to
//   its builder and its waiters but not kept.
// - Eviction only drops the cache's reference. The value (compiled code, a plan) is freed
//   when its last user drops its shared_ptr, so a kernel running in one thread stays
//   valid while another thread evicts it. Options::on_evict is called for each entry
//   dropped (by the budget or by clear()), after the cache lock is released.
// - A hit costs one lock, one hash lookup and one list splice; no allocation.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/error.h"

namespace fusor {

/// Counters of a cache, read with KeyedCache::stats().
struct CacheStats {
  uint64_t hits = 0;       ///< requests served by an entry built or being built
  uint64_t misses = 0;     ///< builds started
  uint64_t failures = 0;   ///< builds that threw (never cached)
  uint64_t evictions = 0;  ///< entries dropped to stay within the budget
  uint64_t entries = 0;    ///< completed entries held now
  uint64_t bytes = 0;      ///< the summed cost of the entries held now
};

/// What a builder may return to give its value's cost in bytes along with the value.
template <class Value>
struct SizedValue {
  std::shared_ptr<const Value> value;
  uint64_t bytes = 0;
};

/// A map Key → shared immutable Value with single-flight builds and an LRU byte budget
/// (see Note [Keyed cache]). Hash is a functor returning size_t for a Key.
template <class Key, class Value, class Hash = std::hash<Key>>
class KeyedCache {
 public:
  /// How a cache is bounded, and who hears of evictions.
  struct Options {
    uint64_t budget_bytes = 0;  ///< 0: unbounded
    /// The cost of a value whose builder returned no size; unset: 0 bytes.
    std::function<uint64_t(const Value&)> cost;
    /// Called for every entry the cache drops, without the cache lock held; must not throw.
    std::function<void(const Key&, const std::shared_ptr<const Value>&)> on_evict;
  };

  KeyedCache() : KeyedCache(Options{}) {}
  explicit KeyedCache(Options options) : options_(std::move(options)), budget_(options_.budget_bytes) {}
  KeyedCache(const KeyedCache&) = delete;
  KeyedCache& operator=(const KeyedCache&) = delete;

  /// The value for key, building it with build() when absent. build() returns either a
  /// std::shared_ptr<const Value> (its cost from Options::cost) or a SizedValue<Value>, and
  /// runs without the cache lock held. Thread-safe; an error thrown by build() reaches
  /// every caller waiting for that key and is not cached. A null value is an Internal error.
  template <class Build>
  std::shared_ptr<const Value> get_or_build(const Key& key, Build&& build) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lk(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        ++stats_.hits;
        Slot& s = *it->second;
        if (s.done) {
          lru_.splice(lru_.begin(), lru_, s.lru);  // most recently used first
          return s.value;
        }
        slot = it->second;  // built by another thread right now: wait for it
        done_cv_.wait(lk, [&] { return slot->done; });
        if (slot->value) return slot->value;
        std::rethrow_exception(slot->error);
      }
      slot = std::make_shared<Slot>();
      slot->key = &map_.emplace(key, slot).first->first;  // node keys never move
      ++stats_.misses;
    }

    std::shared_ptr<const Value> value;
    uint64_t bytes = 0;
    try {
      using Result = std::decay_t<std::invoke_result_t<Build&>>;
      Result built = build();
      if constexpr (std::is_same_v<Result, SizedValue<Value>>) {
        value = std::move(built.value);
        bytes = built.bytes;
      } else {
        value = std::shared_ptr<const Value>(std::move(built));
        if (value && options_.cost) bytes = options_.cost(*value);
      }
      FUSOR_ASSERT(value != nullptr, "a cache builder returned no value");
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      slot->error = std::current_exception();
      slot->done = true;
      map_.erase(map_.find(*slot->key));  // in-flight slots are never dropped, so this is ours
      ++stats_.failures;
      done_cv_.notify_all();
      throw;
    }

    std::vector<Node> dropped;
    {
      std::lock_guard<std::mutex> lk(mu_);
      slot->value = value;
      slot->bytes = bytes;
      slot->done = true;
      lru_.push_front(slot.get());
      slot->lru = lru_.begin();
      bytes_ += bytes;
      evict_over_budget(&dropped);
      done_cv_.notify_all();
    }
    notify_dropped(dropped);
    return value;
  }

  /// The value for key when it is built and held (a hit, most recently used now), else
  /// null: never builds, and never waits for a build under way.
  std::shared_ptr<const Value> find(const Key& key) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(key);
    if (it == map_.end() || !it->second->done) return nullptr;
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second->lru);
    return it->second->value;
  }

  /// Charges `bytes` for key's completed entry when it still holds `value` (whose contents
  /// changed in place, e.g. a plan replaced in its entry), evicting least recently used
  /// entries to meet the budget; otherwise does nothing.
  void recharge(const Key& key, const Value* value, uint64_t bytes) {
    std::vector<Node> dropped;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = map_.find(key);
      if (it == map_.end() || !it->second->done || it->second->value.get() != value) return;
      Slot& s = *it->second;
      bytes_ = bytes_ - s.bytes + bytes;
      s.bytes = bytes;
      evict_over_budget(&dropped);
    }
    notify_dropped(dropped);
  }

  /// Changes the budget (0 = unbounded), evicting least recently used entries to meet it.
  void set_budget(uint64_t bytes) {
    std::vector<Node> dropped;
    {
      std::lock_guard<std::mutex> lk(mu_);
      budget_ = bytes;
      evict_over_budget(&dropped);
    }
    notify_dropped(dropped);
  }

  /// The budget in bytes (0 = unbounded).
  uint64_t budget() const {
    std::lock_guard<std::mutex> lk(mu_);
    return budget_;
  }

  /// A snapshot of the counters.
  CacheStats stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    CacheStats s = stats_;
    s.entries = lru_.size();
    s.bytes = bytes_;
    return s;
  }

  /// Drops every completed entry (on_evict hears of each; not counted as evictions).
  /// Builds in flight complete into the cache as usual.
  void clear() {
    std::vector<Node> dropped;
    {
      std::lock_guard<std::mutex> lk(mu_);
      while (!lru_.empty()) drop_lru_tail(&dropped);
    }
    notify_dropped(dropped);
  }

 private:
  struct Slot {
    const Key* key = nullptr;  // the map node's key
    std::shared_ptr<const Value> value;
    std::exception_ptr error;
    uint64_t bytes = 0;
    bool done = false;
    typename std::list<Slot*>::iterator lru;  // valid once done
  };
  using Map = std::unordered_map<Key, std::shared_ptr<Slot>, Hash>;
  using Node = typename Map::node_type;

  // Both with mu_ held. The extracted map nodes keep key and value alive until
  // notify_dropped, so values are released outside the lock.
  void drop_lru_tail(std::vector<Node>* dropped) {
    Slot* s = lru_.back();
    lru_.pop_back();
    bytes_ -= s->bytes;
    dropped->push_back(map_.extract(map_.find(*s->key)));
  }
  void evict_over_budget(std::vector<Node>* dropped) {
    while (budget_ != 0 && bytes_ > budget_ && !lru_.empty()) {
      drop_lru_tail(dropped);
      ++stats_.evictions;
    }
  }

  // Without mu_ held.
  void notify_dropped(std::vector<Node>& dropped) {
    if (options_.on_evict)
      for (Node& n : dropped) options_.on_evict(n.key(), n.mapped()->value);
    dropped.clear();
  }

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  Map map_;               // completed entries and builds in flight
  std::list<Slot*> lru_;  // completed entries, most recently used first
  uint64_t budget_ = 0;
  uint64_t bytes_ = 0;
  CacheStats stats_;
};

}  // namespace fusor
