#include <doctest/doctest.h>

#include "ir/random.h"
#include "jit/arena.h"

using namespace fusor;

TEST_SUITE("jit/arena") {
  TEST_CASE("values alive at the same step never share bytes and dead ones are reused") {
    // a [0,1], b [1,2], c [2,3]: a and c may share; b overlaps both.
    std::vector<ArenaItem> items{{1000, 0, 1}, {500, 1, 2}, {1000, 2, 3}};
    std::vector<int64_t> off;
    int64_t total = layout_arena(items, &off);
    CHECK(off[0] == off[2]);
    CHECK(total == 1024 + 512);
    for (int64_t o : off) CHECK(o % 64 == 0);
  }

  TEST_CASE("random lifetimes: no two live items overlap") {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
      std::vector<ArenaItem> items;
      for (int i = 0; i < 40; ++i) {
        int a = int(random_bits(seed, uint64_t(3 * i)) % 30), len = int(random_bits(seed, uint64_t(3 * i + 1)) % 8);
        items.push_back({int64_t(random_bits(seed, uint64_t(3 * i + 2)) % 5000), a, a + len});
      }
      std::vector<int64_t> off;
      int64_t total = layout_arena(items, &off);
      int64_t sum = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        sum += (items[i].bytes + 63) / 64 * 64 + (items[i].bytes == 0 ? 64 : 0);
        CHECK(off[i] + items[i].bytes <= total);
        for (size_t j = 0; j < i; ++j) {
          bool live_together = items[i].first <= items[j].last && items[j].first <= items[i].last;
          bool disjoint = off[i] + std::max<int64_t>(items[i].bytes, 1) <= off[j] ||
                          off[j] + std::max<int64_t>(items[j].bytes, 1) <= off[i];
          if (live_together) CHECK(disjoint);
        }
      }
      CHECK(total <= sum);
    }
  }

  TEST_CASE("the pool recycles blocks") {
    ArenaPool pool;
    std::shared_ptr<void> a = pool.acquire(4096);
    void* raw = a.get();
    pool.release(std::move(a), 4096);
    std::shared_ptr<void> b = pool.acquire(1000);
    CHECK(b.get() == raw);
    std::shared_ptr<void> c = pool.acquire(8192);
    CHECK(c.get() != raw);
  }

  TEST_CASE("the pool's stock is bounded in bytes and keeps the largest blocks") {
    ArenaPool pool(10000);
    std::shared_ptr<void> a = pool.acquire(4000), b = pool.acquire(5000), c = pool.acquire(3000);
    void* rb = b.get();
    pool.release(std::move(a), 4000);
    pool.release(std::move(b), 5000);
    CHECK(pool.spare_bytes() == 9000);
    pool.release(std::move(c), 3000);  // 12000 > 10000: the smallest block (itself) is freed
    CHECK(pool.spare_bytes() == 9000);
    pool.release(pool.acquire(20000), 20000);  // larger than the whole stock may be: freed
    CHECK(pool.spare_bytes() == 9000);
    std::shared_ptr<void> d = pool.acquire(4500);  // the smallest that fits: the 5000 block
    CHECK(d.get() == rb);
    pool.release(std::move(d), 5000);
    std::shared_ptr<void> e = pool.acquire(6000);
    void* re = e.get();
    pool.release(std::move(e), 6000);  // 15000: the 4000 then the 5000 block go, smaller than it
    CHECK(pool.spare_bytes() == 6000);
    CHECK(pool.acquire(100).get() == re);
  }
}
