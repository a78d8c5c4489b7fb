#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "jit/thread_pool.h"
#include "tests/support/sanitizer.h"

using namespace fusor;

TEST_SUITE("jit/thread_pool") {
  TEST_CASE("parallel_for covers every index exactly once") {
    ThreadPool pool(3);
    CHECK(pool.num_threads() == std::min(3, ThreadPool::available_cpus()));
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

  TEST_CASE("more threads than CPUs are capped at the CPUs") {
    ThreadPool pool(100000);
    CHECK(pool.num_threads() == ThreadPool::available_cpus());
    ThreadPool all(0);
    CHECK(all.num_threads() == ThreadPool::available_cpus());
  }

  TEST_CASE("back-to-back regions, sleeping workers and concurrent callers all cover every index once") {
    ThreadPool pool(0);
    // Many short regions (workers spinning between them), then regions far apart (workers
    // asleep), from several calling threads at once (regions serialized).
    auto region = [&](int64_t n) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      int64_t bad = 0;
      for (auto& h : hits) bad += h != 1;
      return bad;
    };
    std::atomic<int64_t> bad{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c)
      callers.emplace_back([&, c] {
        for (int r = 0; r < 2000; ++r) bad += region(1 + (r * 7 + c) % 61);
      });
    for (auto& t : callers) t.join();
    for (int r = 0; r < 5; ++r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // past the spin: workers sleep
      bad += region(97);
    }
    CHECK(bad == 0);
  }

#if !defined(FUSOR_TEST_ASAN) && !defined(FUSOR_TEST_TSAN)  // (their runtimes map memory per thread)
  TEST_CASE("a thread the system refuses to start is an OutOfMemory error, not a hang") {
    if (ThreadPool::available_cpus() < 2) {
      MESSAGE("skipped: one CPU, so the pool starts no worker");
      return;
    }
    // In a child: an address-space limit at the current size makes every new thread's
    // stack mapping fail. The child reports the error code it saw through its exit status.
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      struct rlimit lim {};
      getrlimit(RLIMIT_AS, &lim);
      lim.rlim_cur = 64ull << 20;  // far below what the process has mapped already
      setrlimit(RLIMIT_AS, &lim);
      // Stacks of threads that ended earlier are cached and reused without a mapping: use
      // them up with threads that wait, so that the pool's thread needs a new one.
      std::atomic<bool> release{false};
      std::vector<std::thread> holders;
      for (int i = 0; i < 256; ++i) {
        try {
          holders.emplace_back([&] {
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          });
        } catch (...) {
          break;
        }
      }
      int status = 1;
      try {
        ThreadPool pool(2);
        status = 2;  // started anyway (nothing to check on this system)
      } catch (const Error& e) {
        status = e.code() == ErrorCode::OutOfMemory ? 0 : 3;
      } catch (...) {
        status = 4;
      }
      release = true;
      for (auto& t : holders) t.join();
      _exit(status);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 2) {
      MESSAGE("skipped: this system started a thread under the address-space limit");
      return;
    }
    CHECK(WEXITSTATUS(status) == 0);
  }
#endif
}
