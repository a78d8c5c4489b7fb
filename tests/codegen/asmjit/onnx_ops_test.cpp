// The asmjit backend (AVX-512 where the host has it, and AVX2) on the pointwise ops added for ONNX exports (tests/support/onnx_op_graphs.h):
// each graph's group lowered, compiled, run serially and over a pool, and compared with the
// static kernels node by node and with the spec interpreter, over sizes around the vector
// widths, with NaN, infinities and signed zeros in the inputs.
//
// Tolerances: vs static 2 ulp relative and 1e-6 absolute (HardSigmoid's multiply-add may
// be fused by GCC in the static kernel, and its clamp keeps the difference absolute); vs
// the interpreter 1e-5 relative and absolute (logf and the f32 multiply-adds against
// double); bool outputs exactly.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/kernel_util.h"
#include "tests/support/onnx_op_graphs.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

using test::onnx_op_tolerance;

TEST_SUITE("asmjit/onnx_ops") {
  TEST_CASE("the new pointwise ops fuse and agree with static and the interpreter") {
    uint64_t seed = 1;
    for (AsmjitBackend* be : test::asmjit_backends_or_skip())
    for (const std::string& text : {test::onnx_pointwise_graph(), test::onnx_compare_graph()})
      for (int64_t a : {1, 3})
        for (int64_t b : {1, 7, 8, 9, 15, 16, 17, 33, 1000}) {
          CAPTURE(a);
          CAPTURE(b);
          FusedGraph f = test::fuse_text(text, {{"A", a}, {"B", b}});
          CHECK(test::check_groups(*be, f, test::onnx_op_inputs(a, b, seed++, b > 4), GroupKind::Pointwise, onnx_op_tolerance).kernels == 1);
        }
  }

  TEST_CASE("ReLU6 as Clip is a conv epilogue") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
    FusedGraph f = test::fuse_text(test::onnx_conv_epilogue_graph(), {{"N", 2}, {"H", 9}, {"W", 11}});
    REQUIRE(f.groups.size() == 1);
    CHECK(f.groups[0].pattern == "conv+clip");
    CHECK(test::check_groups(*be, f, {{"x", test::randn({2, 8, 9, 11}, 5)}}, GroupKind::Contraction,
                             [](const KernelSpec&) { return test::Tol{1e-4, 1e-5, 1e-5, 1e-5}; })
              .kernels == 1);
    }
  }
}
