// Test helpers shared by every suite: seeded random tensors, tolerance comparison that
// prints where and by how much two tensors differ, and running one op on the static backend.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "codegen/parallel.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/random.h"
#include "ir/tensor.h"

namespace fusor::test {

/// `text` with every occurrence of each key replaced by its value (graph templates).
std::string with(std::string text, const std::map<std::string, std::string>& subst);
/// The graph "y = <op>" over input x: f32[n] (op text such as `Gelu(x) {approximate="tanh"}`).
std::string unary_graph(const std::string& op, int64_t n);
/// A pointwise group with two outputs over x: f32[rows, 2049] and y: f32[2049] (s = (x + y) *
/// x, u = Relu(x - y)): at 4099 rows each output is at the streaming-store threshold on its
/// own (Note [Streaming stores]); rows of 2049 floats leave most rows' outputs unaligned.
std::string two_output_rows_graph(int64_t rows);

/// A normal(0, std) tensor (any dtype; integers are rounded toward zero).
Tensor randn(Shape shape, uint64_t seed, double std = 1.0, DType dtype = DType::F32);
/// n normal(0, std) floats from std::mt19937(seed) (raw buffers for runtime routines).
std::vector<float> normal_floats(size_t n, uint32_t seed, float std = 1.0f);
/// A uniform[low, high) tensor.
Tensor uniform(Shape shape, uint64_t seed, double low, double high, DType dtype = DType::F32);
/// A tensor from values (converted to dtype).
Tensor make(DType dtype, Shape shape, const std::vector<double>& values);
/// A 1-D i64 tensor.
Tensor ints(const std::vector<int64_t>& values);

/// Elementwise |got - want| <= atol + rtol * |want|, NaNs equal to NaNs, infinities equal
/// to themselves. On failure returns false and fills *why with the shapes, the number of
/// mismatches and the worst few (index, got, want).
bool allclose(const Tensor& got, const Tensor& want, double rtol, double atol, std::string* why);

/// Max |got - want| over all elements (for reporting).
double max_abs_diff(const Tensor& got, const Tensor& want);

/// One input of a single-op test: a tensor fed as a graph input, or as a constant (shape
/// tensors such as Reshape's shape must be constants).
struct OpInput {
  Tensor tensor;
  bool constant = false;
  bool absent = false;  ///< an omitted optional input
  OpInput(Tensor t, bool is_constant = false) : tensor(std::move(t)), constant(is_constant) {}  // NOLINT
  static OpInput none() {
    OpInput i{Tensor()};
    i.absent = true;
    return i;
  }
  static OpInput constant_of(Tensor t) { return OpInput(std::move(t), true); }
};

/// Builds a graph of one node, verifies it, infers types and runs the static kernel.
/// Throws what the verifier, shape inference or the kernel throw. `outputs`: the node's
/// number of outputs (0: the schema's; Split takes any).
std::vector<Tensor> run_static_op(OpKind op, const std::vector<OpInput>& inputs, const Attributes& attrs = {},
                                  Parallel& parallel = serial_parallel(), int outputs = 0);

/// A shared pool of 3 threads (odd, so chunks split unevenly) for kernel tests.
Parallel& pool();
/// The Parallels every kernel test runs on: serial, then pool().
std::vector<Parallel*> parallels();

/// Runs f and returns the code of the fusor::Error it throws (and its what() in *msg); a
/// test failure when it throws nothing.
template <class F>
ErrorCode error_of(F&& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.code();
  }
  FAIL("expected a fusor::Error");
  return ErrorCode::Internal;
}

/// The sizes a sweep should cover around a vector width w: 1, w-1, w, w+1, 2w+3, and a
/// larger odd size.
std::vector<int64_t> sizes_around(int64_t w);

}  // namespace fusor::test

/// CHECK that two tensors are close; prints the comparison report on failure.
#define FUSOR_CHECK_CLOSE(got, want, rtol, atol)                       \
  do {                                                                 \
    std::string fusor_why_;                                            \
    bool fusor_ok_ = ::fusor::test::allclose(got, want, rtol, atol, &fusor_why_); \
    INFO(fusor_why_);                                                  \
    CHECK(fusor_ok_);                                                  \
  } while (0)
