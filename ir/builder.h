// GraphBuilder: the C++ way to write a graph, one call per op. Layer: ir (std only).
//
//   GraphBuilder b("mlp");
//   ValueId x = b.input("x", DType::F32, {"B", 768});
//   ValueId w = b.randn("w", {768, 3072}, /*seed=*/1, /*std=*/0.02);
//   b.output(b.op(OpKind::Gelu, {b.matmul(x, w)}, {}, "y"));
//   Graph g = b.build();
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/random.h"

namespace fusor {

/// Options of a 2-D convolution (ONNX Conv attributes).
struct ConvOptions {
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  ///< top, left, bottom, right
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
};

/// Builds a Graph op by op; every call checks its arguments immediately.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph") : g_(std::move(name)) {}

  /// Declares an input; dims may be sizes or symbols: {"B", "T", 768}.
  ValueId input(const std::string& name, DType dtype, std::vector<Dim> dims);
  /// A constant with the given data.
  ValueId constant(const std::string& name, Tensor data);
  /// A seeded normal(mean, std) constant; prints as its recipe in the text format.
  ValueId randn(const std::string& name, Shape shape, uint64_t seed, double std, double mean = 0,
                DType dtype = DType::F32);
  /// A seeded uniform[low, high) constant.
  ValueId uniform(const std::string& name, Shape shape, uint64_t seed, double low, double high,
                  DType dtype = DType::F32);
  /// A constant filled with one value.
  ValueId fill(const std::string& name, Shape shape, double value, DType dtype = DType::F32);
  /// A 1-D i64 constant (shapes, axes).
  ValueId ints(const std::string& name, const std::vector<int64_t>& values);

  /// Any op, by kind; returns its first output. `out` names the output (fresh if empty).
  ValueId op(OpKind kind, std::vector<ValueId> inputs, Attributes attrs = {}, std::string out = "");

  ValueId add(ValueId a, ValueId b) { return op(OpKind::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpKind::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpKind::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(OpKind::Div, {a, b}); }
  ValueId relu(ValueId x) { return op(OpKind::Relu, {x}); }
  ValueId gelu(ValueId x, bool tanh_approx = false) {
    return op(OpKind::Gelu, {x}, {{"approximate", tanh_approx ? "tanh" : "none"}});
  }
  ValueId matmul(ValueId a, ValueId b) { return op(OpKind::MatMul, {a, b}); }
  ValueId conv(ValueId x, ValueId w, ValueId bias = kNoValue, const ConvOptions& o = {});
  ValueId batchnorm(ValueId x, ValueId scale, ValueId bias, ValueId mean, ValueId var, double eps = 1e-5);
  ValueId layernorm(ValueId x, ValueId scale, ValueId bias, double eps = 1e-5, int64_t axis = -1);
  ValueId softmax(ValueId x, int64_t axis = -1) { return op(OpKind::Softmax, {x}, {{"axis", axis}}); }
  ValueId transpose(ValueId x, std::vector<int64_t> perm) { return op(OpKind::Transpose, {x}, {{"perm", perm}}); }
  /// Reshape to `dims` (ONNX rules: 0 copies, -1 infers); the shape becomes a constant.
  ValueId reshape(ValueId x, const std::vector<int64_t>& dims);

  /// Marks v as a graph output (outputs are returned under their value's name; name the
  /// value through op(..., out) to choose it).
  void output(ValueId v);

  /// The graph so far (for inspection while building).
  const Graph& graph() const { return g_; }
  /// Verifies and returns the graph.
  Graph build();

 private:
  Graph g_;
};

}  // namespace fusor
