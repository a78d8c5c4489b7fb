#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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

  TEST_CASE("the pool recycles blocks, which keep their capacity when they serve less") {
    ArenaPool pool;
    ArenaBlock a = pool.acquire(4096);
    void* raw = a.memory.get();
    CHECK(a.bytes == 4096);
    pool.release(std::move(a));
    ArenaBlock b = pool.acquire(1000);
    CHECK(b.memory.get() == raw);
    CHECK(b.bytes == 4096);
    ArenaBlock c = pool.acquire(8192);
    CHECK(c.memory.get() != raw);
    pool.release(std::move(b));
    // Given back as 4096 bytes, not the 1000 it served: a 4000-byte arena still fits in it.
    CHECK(pool.spare_bytes() == 4096);
    CHECK(pool.acquire(4000).memory.get() == raw);
  }

  TEST_CASE("new blocks come in size classes, from 2 MiB in whole huge pages") {
    CHECK(arena_block_capacity(0) == 64);
    CHECK(arena_block_capacity(1) == 64);
    CHECK(arena_block_capacity(4000) == 4032);  // small: 64-byte multiples
    const int64_t k = 1024, m = 1024 * 1024;
    CHECK(arena_block_capacity(64 * k) == 64 * k);
    CHECK(arena_block_capacity(64 * k + 1) == 80 * k);  // 1.25 x 64 KiB
    CHECK(arena_block_capacity(100 * k) == 112 * k);    // 1.75 x 64 KiB
    CHECK(arena_block_capacity(113 * k) == 128 * k);
    CHECK(arena_block_capacity(1843200) == 2 * m);  // the BERT layer's arena at 128 tokens
    CHECK(arena_block_capacity(2 * m + 1) == 4 * m);  // 2.5 MiB, rounded up to huge pages
    CHECK(arena_block_capacity(5 * m) == 6 * m);
    for (int64_t b = 1; b < 64 * m; b = b * 3 / 2 + 7) {
      CAPTURE(b);
      const int64_t cap = arena_block_capacity(b);
      CHECK(cap >= b);
      CHECK(cap % 64 == 0);
      CHECK(cap <= std::max<int64_t>(b + 63, b + b / 4 + 2 * m));
      if (cap >= 2 * m) CHECK(cap % (2 * m) == 0);
    }
    // A block from the 2 MiB classes is aligned to a huge page and holds its capacity.
    ArenaPool pool;
    ArenaBlock big = pool.acquire(3 * m);
    CHECK(big.bytes == 4 * m);
    CHECK(reinterpret_cast<uintptr_t>(big.memory.get()) % uintptr_t(2 * m) == 0);
    std::memset(big.memory.get(), 1, size_t(big.bytes));
  }

  TEST_CASE("the pool's stock is bounded in bytes and keeps the largest blocks") {
    ArenaPool pool(10000);
    ArenaBlock a = pool.acquire(4000), b = pool.acquire(5000), c = pool.acquire(3000);
    CHECK(a.bytes == 4032);
    CHECK(b.bytes == 5056);
    CHECK(c.bytes == 3008);
    void* rb = b.memory.get();
    pool.release(std::move(a));
    pool.release(std::move(b));
    CHECK(pool.spare_bytes() == 9088);
    pool.release(std::move(c));  // 12096 > 10000: the smallest block (itself) is freed
    CHECK(pool.spare_bytes() == 9088);
    pool.release(pool.acquire(20000));  // larger than the whole stock may be: freed
    CHECK(pool.spare_bytes() == 9088);
    ArenaBlock d = pool.acquire(4500);  // the smallest that fits: the 5056 block
    CHECK(d.memory.get() == rb);
    pool.release(std::move(d));
    ArenaBlock e = pool.acquire(6000);
    void* re = e.memory.get();
    pool.release(std::move(e));  // 15104: the 4032 then the 5056 block go, smaller than it
    CHECK(pool.spare_bytes() == 6016);
    CHECK(pool.acquire(100).memory.get() == re);
  }
}
