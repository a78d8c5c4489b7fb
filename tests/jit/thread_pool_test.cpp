#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "jit/thread_pool.h"

using namespace fusor;

TEST_SUITE("jit/thread_pool") {
  TEST_CASE("parallel_for covers every index exactly once") {
    ThreadPool pool(3);
    CHECK(pool.num_threads() == 3);
    for (int64_t n : {0, 1, 2, 7, 100, 100001}) {
      std::vector<std::atomic<int>> hits(size_t(n > 0 ? n : 1));
      pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) CHECK(hits[size_t(i)] == 1);
    }
  }

  TEST_CASE("an exception in a chunk is rethrown to the caller and the pool stays usable") {
    ThreadPool pool(2);
    CHECK_THROWS_AS(pool.parallel_for(1000, 1,
                                      [](int64_t b, int64_t) {
                                        if (b > 0) throw std::runtime_error("chunk failed");
                                      }),
                    std::runtime_error);
    std::atomic<int64_t> sum{0};
    pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    CHECK(sum == 1000);
  }

  TEST_CASE("nested parallel_for runs serially instead of deadlocking") {
    ThreadPool pool(2);
    std::atomic<int64_t> sum{0};
    pool.parallel_for(8, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        pool.parallel_for(10, 1, [&](int64_t bb, int64_t ee) { sum += ee - bb; });
    });
    CHECK(sum == 80);
  }

  TEST_CASE("a pool of one runs on the caller") {
    ThreadPool pool(1);
    int64_t covered = 0;
    pool.parallel_for(50, 1, [&](int64_t b, int64_t e) { covered += e - b; });
    CHECK(covered == 50);
  }
}
