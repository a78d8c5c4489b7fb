// jit/executor.h: the latch a background plan waits on (Note [Background plans]).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "jit/executor.h"

using namespace fusor;

TEST_SUITE("jit/first_run_gate") {
  TEST_CASE("a background job waiting on an entry's first run goes on once that run opens the gate") {
    FirstRunGate gate;
    std::atomic<bool> released{false};
    std::thread job([&] {
      gate.wait(std::chrono::hours(1));
      released = true;
    });
    CHECK_FALSE(released.load());  // the job cannot pass a closed gate (its wait is an hour)
    gate.open();
    job.join();
    CHECK(released.load());
    gate.open();                             // opening twice is harmless
    gate.wait(std::chrono::hours(1));        // and an open gate does not wait
    FirstRunGate never;
    never.wait(std::chrono::milliseconds(1));  // a gate nobody opens bounds the wait
  }
}
