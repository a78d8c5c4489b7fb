// check_buffer_use (codegen/expr_check.h), which every CPU JIT backend's support check ends
// with: aliasing buffers and kernels wider than kMaxKernelBuffers are declined with the
// reason (issue 20: a Max of 20000 inputs took asmjit a minute, its register allocation
// growing with the square of a kernel's pointers).
#include <doctest/doctest.h>

#include <sstream>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/expr_check.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "tests/support/pass_util.h"

using namespace fusor;

TEST_SUITE("codegen/expr_check") {
  TEST_CASE("aliasing and too many buffers are declined with the reason") {
    std::string why;
    CHECK(check_buffer_use({1, 0}, {0, 1}, &why));
    CHECK_FALSE(check_buffer_use({1, 0}, {1, 0}, &why));
    CHECK(why.find("both read and written") != std::string::npos);
    CHECK_FALSE(check_buffer_use({0, 0}, {2, 0}, &why));
    CHECK(why.find("two accesses") != std::string::npos);
    const size_t n = size_t(kMaxKernelBuffers) + 1;
    CHECK_FALSE(check_buffer_use(std::vector<int>(n, 1), std::vector<int>(n, 0), &why));
    CHECK(why.find("past the") != std::string::npos);
  }

  TEST_CASE("a Max wider than kMaxKernelBuffers stays on the static kernels; a narrower one is JIT's") {
    for (int inputs : {int(kMaxKernelBuffers) - 1, int(kMaxKernelBuffers) + 44}) {
      CAPTURE(inputs);
      std::ostringstream text;
      text << "graph g\n";
      for (int i = 0; i < inputs; ++i) text << "input x" << i << ": f32[64]\n";
      text << "y = Max(";
      for (int i = 0; i < inputs; ++i) text << (i ? ", x" : "x") << i;
      text << ")\noutput y\n";
      FusedGraph f = test::fuse_text(text.str(), {});
      REQUIRE(f.groups.size() == 1);
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f, f.groups[0], &why);
      REQUIRE_MESSAGE(spec, why);
      const bool fits = int64_t(spec->buffers.size()) <= kMaxKernelBuffers;
      CHECK(fits == (inputs < kMaxKernelBuffers));
      CHECK(llvm_supports(*spec, &why) == fits);
      CHECK(asmjit_supports(*spec, &why) == fits);
      if (!fits) CHECK(why.find("buffers, past the") != std::string::npos);
    }
  }
}
