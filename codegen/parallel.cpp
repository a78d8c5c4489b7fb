#include "codegen/parallel.h"

namespace fusor {

namespace {
class Serial final : public Parallel {
 public:
  int num_threads() const override { return 1; }
  void parallel_for(int64_t n, int64_t, RangeFn fn) override {
    if (n > 0) fn(0, n);
  }
};
}  // namespace

Parallel& serial_parallel() {
  static Serial s;  // stateless: not a cache
  return s;
}

}  // namespace fusor
