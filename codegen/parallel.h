// Parallel: how CPU kernels split work over cores without knowing who owns the threads
// (the runtime in jit/ does). Layer: codegen.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace fusor {

/// A non-owning reference to a callable void(int64_t begin, int64_t end); no allocation.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT: implicit from any callable
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

/// Runs index ranges, possibly on several threads.
class Parallel {
 public:
  virtual ~Parallel() = default;
  /// Threads that may run tasks at once (including the caller).
  virtual int num_threads() const = 0;
  /// Calls fn on disjoint chunks covering [0, n), each at least `grain` long (except the
  /// last), and returns when all are done. The first exception thrown by a chunk is
  /// rethrown here after the others finish.
  virtual void parallel_for(int64_t n, int64_t grain, RangeFn fn) = 0;
};

/// A Parallel that runs everything on the calling thread.
Parallel& serial_parallel();

}  // namespace fusor
