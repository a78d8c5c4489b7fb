// Tests of KeyedCache (cache/keyed_cache.h): LRU order and the byte bound, eviction
// releasing values, failures never cached, single flight under 8 threads, stats.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cache/keyed_cache.h"

using namespace fusor;

namespace {

// prefix + a (+ "-" + b): built by appending (GCC 12 warns falsely on "lit" + std::string).
std::string named(std::string prefix, int a, int b = -1) {
  prefix += std::to_string(a);
  if (b >= 0) {
    prefix += '-';
    prefix += std::to_string(b);
  }
  return prefix;
}

// A value whose cost is its `bytes` field.
struct Blob {
  std::string name;
  uint64_t bytes = 0;
};

using BlobCache = KeyedCache<std::string, Blob, std::hash<std::string>>;

BlobCache::Options budgeted(uint64_t budget, std::vector<std::string>* evicted = nullptr) {
  BlobCache::Options o;
  o.budget_bytes = budget;
  o.cost = [](const Blob& b) { return b.bytes; };
  if (evicted)
    o.on_evict = [evicted](const std::string& k, const std::shared_ptr<const Blob>&) { evicted->push_back(k); };
  return o;
}

// Gets key from the cache, building a blob of `bytes` when absent; counts builds.
std::shared_ptr<const Blob> get(BlobCache& c, const std::string& key, uint64_t bytes, int* builds = nullptr) {
  return c.get_or_build(key, [&] {
    if (builds) ++*builds;
    return std::make_shared<const Blob>(Blob{key, bytes});
  });
}

}  // namespace

TEST_SUITE("cache/keyed_cache") {
  TEST_CASE("least recently used entries are evicted first and bytes stay within the budget") {
    std::vector<std::string> evicted;
    BlobCache c(budgeted(30, &evicted));
    get(c, "a", 10);
    get(c, "b", 10);
    get(c, "c", 10);
    CHECK(evicted.empty());
    CHECK(c.stats().bytes == 30);
    get(c, "a", 10);  // a becomes the most recently used: b is now the oldest
    get(c, "d", 10);
    CHECK(evicted == std::vector<std::string>{"b"});
    get(c, "e", 20);  // needs 20 more bytes: c, then a go
    CHECK(evicted == std::vector<std::string>{"b", "c", "a"});
    CacheStats s = c.stats();
    CHECK(s.entries == 2);
    CHECK(s.bytes == 30);
    CHECK(s.evictions == 3);

    int builds = 0;
    get(c, "d", 10, &builds);  // still there
    get(c, "e", 20, &builds);
    CHECK(builds == 0);
    get(c, "b", 10, &builds);  // evicted: built again
    CHECK(builds == 1);
    CHECK(c.stats().bytes <= 30);
  }

  TEST_CASE("an entry larger than the whole budget is returned but not kept") {
    std::vector<std::string> evicted;
    BlobCache c(budgeted(30, &evicted));
    get(c, "a", 10);
    auto big = get(c, "big", 40);
    REQUIRE(big);
    CHECK(big->bytes == 40);
    CHECK(evicted == std::vector<std::string>{"a", "big"});
    CHECK(c.stats().entries == 0);
    CHECK(c.stats().bytes == 0);
  }

  TEST_CASE("set_budget evicts down to the new budget and zero means unbounded") {
    std::vector<std::string> evicted;
    BlobCache c(budgeted(0, &evicted));
    for (int i = 0; i < 10; ++i) get(c, named("k", i), 100);
    CHECK(c.stats().bytes == 1000);
    CHECK(evicted.empty());
    c.set_budget(350);
    CHECK(c.budget() == 350);
    CHECK(c.stats().bytes == 300);
    CHECK(evicted == std::vector<std::string>{"k0", "k1", "k2", "k3", "k4", "k5", "k6"});
    c.set_budget(0);
    for (int i = 10; i < 20; ++i) get(c, named("k", i), 100);
    CHECK(c.stats().bytes == 1300);
  }

  TEST_CASE("recharge changes an entry's cost in place and evicts to meet the budget") {
    std::vector<std::string> evicted;
    BlobCache c(budgeted(100, &evicted));
    auto a = get(c, "a", 10);
    get(c, "b", 10);
    get(c, "c", 10);
    c.recharge("b", a.get(), 500);  // not b's value: nothing happens
    CHECK(c.stats().bytes == 30);
    c.recharge("zz", a.get(), 500);  // no such key
    CHECK(c.stats().bytes == 30);
    c.recharge("a", a.get(), 50);  // a costs 50 now
    CHECK(c.stats().bytes == 70);
    CHECK(evicted.empty());
    c.recharge("a", a.get(), 85);  // 105 > 100: the least recently used (a) goes
    CHECK(evicted == std::vector<std::string>{"a"});
    CHECK(c.stats().bytes == 20);
    CHECK(c.stats().evictions == 1);
  }

  TEST_CASE("a builder may return the cost with the value") {
    BlobCache c(BlobCache::Options{.budget_bytes = 100});
    auto v = c.get_or_build("a", [] { return SizedValue<Blob>{std::make_shared<const Blob>(Blob{"a", 0}), 60}; });
    CHECK(v->name == "a");
    CHECK(c.stats().bytes == 60);
    c.get_or_build("b", [] { return SizedValue<Blob>{std::make_shared<const Blob>(Blob{"b", 0}), 60}; });
    CHECK(c.stats().bytes == 60);
    CHECK(c.stats().evictions == 1);
  }

  TEST_CASE("without a cost function or size entries cost nothing") {
    KeyedCache<int, int> c(KeyedCache<int, int>::Options{.budget_bytes = 1});
    for (int i = 0; i < 5; ++i) c.get_or_build(i, [i] { return std::make_shared<const int>(i); });
    CHECK(c.stats().entries == 5);
    CHECK(c.stats().bytes == 0);
  }

  TEST_CASE("eviction drops only the cache's reference and the value dies with its last user") {
    BlobCache c(budgeted(10));
    std::weak_ptr<const Blob> held_weak, dropped_weak;
    std::shared_ptr<const Blob> held = get(c, "held", 10);
    held_weak = held;
    get(c, "other", 10);  // evicts "held" while a user still holds it
    CHECK(c.stats().evictions == 1);
    CHECK(!held_weak.expired());
    CHECK(held->name == "held");
    held.reset();
    CHECK(held_weak.expired());

    dropped_weak = get(c, "dropped", 10);  // nobody holds it but the cache
    CHECK(!dropped_weak.expired());
    get(c, "next", 10);
    CHECK(dropped_weak.expired());
  }

  TEST_CASE("clear drops every entry and on_evict hears of each") {
    std::vector<std::string> evicted;
    BlobCache c(budgeted(0, &evicted));
    std::weak_ptr<const Blob> w = get(c, "a", 1);
    get(c, "b", 1);
    c.clear();
    CHECK(evicted.size() == 2);
    CHECK(w.expired());
    CacheStats s = c.stats();
    CHECK(s.entries == 0);
    CHECK(s.bytes == 0);
    CHECK(s.evictions == 0);
    int builds = 0;
    get(c, "a", 1, &builds);
    CHECK(builds == 1);
  }

  TEST_CASE("failures are never cached") {
    BlobCache c(budgeted(100));
    int builds = 0;
    auto failing = [&] {
      ++builds;
      throw std::runtime_error("compile failed");
      return std::make_shared<const Blob>();
    };
    CHECK_THROWS_WITH_AS(c.get_or_build("k", failing), "compile failed", std::runtime_error);
    CHECK_THROWS_AS(c.get_or_build("k", failing), std::runtime_error);
    CHECK(builds == 2);
    CacheStats s = c.stats();
    CHECK(s.failures == 2);
    CHECK(s.misses == 2);
    CHECK(s.entries == 0);
    CHECK(s.bytes == 0);
    auto v = get(c, "k", 5, &builds);  // the next request builds again and succeeds
    CHECK(builds == 3);
    CHECK(v->name == "k");
    CHECK(c.stats().entries == 1);
  }

  TEST_CASE("a builder returning no value is an internal error and is not cached") {
    BlobCache c;
    try {
      c.get_or_build("k", [] { return std::shared_ptr<const Blob>(); });
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Internal);
    }
    CHECK(c.stats().failures == 1);
    CHECK(c.stats().entries == 0);
  }

  TEST_CASE("single flight: 8 threads asking for one new key build it once and share it") {
    BlobCache c(budgeted(1000));
    std::atomic<int> builds{0};
    std::latch start(8);
    std::vector<std::shared_ptr<const Blob>> got(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        got[size_t(t)] = c.get_or_build("shape-128", [&] {
          builds.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a slow compile
          return std::make_shared<const Blob>(Blob{"shape-128", 10});
        });
      });
    for (auto& th : threads) th.join();
    CHECK(builds.load() == 1);
    for (const auto& g : got) CHECK(g == got[0]);
    CacheStats s = c.stats();
    CHECK(s.misses == 1);
    CHECK(s.hits == 7);
    CHECK(s.entries == 1);
  }

  TEST_CASE("single flight: a failed build reaches every waiter and nothing is cached") {
    BlobCache c;
    std::atomic<int> builds{0}, errors{0};
    std::latch start(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        start.arrive_and_wait();
        try {
          c.get_or_build("bad", [&]() -> std::shared_ptr<const Blob> {
            builds.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            throw std::runtime_error("no");
          });
        } catch (const std::runtime_error&) {
          errors.fetch_add(1);
        }
      });
    for (auto& th : threads) th.join();
    CHECK(errors.load() == 8);
    CHECK(builds.load() >= 1);
    CHECK(c.stats().failures == uint64_t(builds.load()));
    CHECK(c.stats().entries == 0);
  }

  TEST_CASE("a build in flight is never evicted") {
    std::vector<std::string> evicted;
    BlobCache c(budgeted(20, &evicted));
    std::latch building(1), release(1);
    std::shared_ptr<const Blob> slow;
    std::thread t([&] {
      slow = c.get_or_build("slow", [&] {
        building.count_down();
        release.wait();
        return std::make_shared<const Blob>(Blob{"slow", 10});
      });
    });
    building.wait();
    get(c, "p", 10);
    get(c, "q", 10);
    get(c, "r", 10);  // over budget: only completed entries (p) can go
    CHECK(evicted == std::vector<std::string>{"p"});
    release.count_down();
    t.join();
    REQUIRE(slow);
    CHECK(evicted == std::vector<std::string>{"p", "q"});
    int builds = 0;
    CHECK(get(c, "slow", 10, &builds) == slow);
    CHECK(builds == 0);
  }

  TEST_CASE("stats count hits misses failures evictions entries and bytes") {
    BlobCache c(budgeted(25));
    get(c, "a", 10);
    get(c, "a", 10);
    get(c, "b", 10);
    get(c, "c", 10);  // evicts a
    CHECK_THROWS(c.get_or_build("x", []() -> std::shared_ptr<const Blob> { throw std::runtime_error("x"); }));
    CacheStats s = c.stats();
    CHECK(s.hits == 1);
    CHECK(s.misses == 4);
    CHECK(s.failures == 1);
    CHECK(s.evictions == 1);
    CHECK(s.entries == 2);
    CHECK(s.bytes == 20);
  }

  TEST_CASE("many threads over a small budget keep the bound and get correct values") {
    BlobCache c(budgeted(64));
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 2000; ++i) {
          int k = (i * 7 + t * 13) % 23;
          std::string key = named("k", k);
          auto v = get(c, key, uint64_t(k % 5 + 1));
          if (v->name != key || v->bytes != uint64_t(k % 5 + 1)) wrong.fetch_add(1);
          if (c.stats().bytes > 64) wrong.fetch_add(1);
        }
      });
    for (auto& th : threads) th.join();
    CHECK(wrong.load() == 0);
    CacheStats s = c.stats();
    CHECK(s.hits + s.misses == 8 * 2000);
    CHECK(s.bytes <= 64);
  }
}
