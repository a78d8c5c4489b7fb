#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <variant>

#include "ir/op_schema.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::error_of;

namespace {

struct Absent {};
using In = std::variant<TensorType, Tensor, Absent>;

TensorType f32(std::vector<int64_t> d) { return TensorType{DType::F32, Shape(std::move(d))}; }
TensorType of(DType t, std::vector<int64_t> d) { return TensorType{t, Shape(std::move(d))}; }

// Infers the output type of one node.
TensorType infer(OpKind op, std::vector<In> ins, Attributes attrs = {}) {
  Graph g("t");
  std::vector<ValueId> ids;
  std::vector<TensorType> types;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (auto* t = std::get_if<TensorType>(&ins[i])) {
      std::vector<Dim> dims(t->shape.dims().begin(), t->shape.dims().end());
      ids.push_back(g.add_input(name, t->dtype, dims));
      types.push_back(*t);
    } else if (auto* c = std::get_if<Tensor>(&ins[i])) {
      ids.push_back(g.add_constant(name, *c));
    } else {
      ids.push_back(kNoValue);
    }
  }
  NodeId n = g.add_node(op, ids, {"out"}, std::move(attrs), "node");
  g.add_output(g.node(n).outputs[0]);
  verify(g);
  return infer_types(g, types)[size_t(g.node(n).outputs[0])];
}


}  // namespace

TEST_SUITE("ir/shape_inference") {
  TEST_CASE("broadcasting binary ops") {
    CHECK(infer(OpKind::Add, {f32({2, 1, 4}), f32({3, 1})}) == f32({2, 3, 4}));
    CHECK(infer(OpKind::Mul, {f32({}), f32({5})}) == f32({5}));
    CHECK(infer(OpKind::Max, {f32({3}), f32({2, 1}), f32({1})}) == f32({2, 3}));
    CHECK(infer(OpKind::Sub, {of(DType::I64, {3}), of(DType::I64, {3})}) == of(DType::I64, {3}));
    std::string msg;
    CHECK(error_of([] { infer(OpKind::Add, {f32({2, 3}), f32({4, 3})}); }, &msg) == ErrorCode::ShapeMismatch);
    CHECK(msg.find("node 'node' (Add)") != std::string::npos);
    CHECK(msg.find("'in1' f32[4, 3]") != std::string::npos);
    CHECK(error_of([] { infer(OpKind::Add, {f32({3}), of(DType::I32, {3})}); }) == ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::Add, {of(DType::Bool, {3}), of(DType::Bool, {3})}); }) ==
          ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::Pow, {of(DType::I32, {3}), of(DType::I32, {3})}); }) ==
          ErrorCode::DTypeMismatch);
  }

  TEST_CASE("unary ops keep the type and check float-ness") {
    CHECK(infer(OpKind::Gelu, {f32({2, 7})}, {{"approximate", "tanh"}}) == f32({2, 7}));
    CHECK(infer(OpKind::Relu, {of(DType::I32, {5})}) == of(DType::I32, {5}));
    CHECK(error_of([] { infer(OpKind::Exp, {of(DType::I64, {5})}); }) == ErrorCode::DTypeMismatch);
    CHECK(infer(OpKind::Cast, {f32({2})}, {{"to", "f16"}}) == of(DType::F16, {2}));
  }

  TEST_CASE("Where broadcasts three ways") {
    CHECK(infer(OpKind::Where, {of(DType::Bool, {2, 1}), f32({3}), f32({1, 1})}) == f32({2, 3}));
    CHECK(error_of([] { infer(OpKind::Where, {f32({2}), f32({2}), f32({2})}); }) == ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::Where, {of(DType::Bool, {2}), f32({3}), f32({3})}); }) ==
          ErrorCode::ShapeMismatch);
  }

  TEST_CASE("Conv geometry") {
    CHECK(infer(OpKind::Conv, {f32({1, 64, 56, 56}), f32({64, 64, 3, 3})},
                {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}) == f32({1, 64, 56, 56}));
    CHECK(infer(OpKind::Conv, {f32({2, 3, 224, 224}), f32({64, 3, 7, 7}), f32({64})},
                {{"pads", std::vector<int64_t>{3, 3, 3, 3}}, {"strides", std::vector<int64_t>{2, 2}}}) ==
          f32({2, 64, 112, 112}));
    CHECK(infer(OpKind::Conv, {f32({1, 8, 9, 9}), f32({8, 1, 3, 3})},
                {{"group", 8}, {"dilations", std::vector<int64_t>{2, 2}}}) == f32({1, 8, 5, 5}));
    CHECK(infer(OpKind::Conv, {f32({1, 4, 7, 7}), f32({4, 4, 3, 3})},
                {{"auto_pad", "SAME_UPPER"}, {"strides", std::vector<int64_t>{2, 2}}}) == f32({1, 4, 4, 4}));
    std::string msg;
    CHECK(error_of([] { infer(OpKind::Conv, {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})}); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(msg.find("input channels") != std::string::npos);
    CHECK(error_of([] { infer(OpKind::Conv, {f32({1, 4, 8, 8}), f32({4, 2, 3, 3})}, {{"group", 3}}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(error_of([] { infer(OpKind::Conv, {f32({1, 3, 2, 2}), f32({4, 3, 3, 3})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([] { infer(OpKind::Conv, {f32({1, 3, 8}), f32({4, 3, 3})}); }) == ErrorCode::Unsupported);
    CHECK(error_of([] { infer(OpKind::Conv, {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({3})}); }) ==
          ErrorCode::ShapeMismatch);
  }

  TEST_CASE("MatMul numpy semantics") {
    CHECK(infer(OpKind::MatMul, {f32({128, 768}), f32({768, 3072})}) == f32({128, 3072}));
    CHECK(infer(OpKind::MatMul, {f32({2, 1, 5, 7}), f32({3, 7, 4})}) == f32({2, 3, 5, 4}));
    CHECK(infer(OpKind::MatMul, {f32({7}), f32({7, 4})}) == f32({4}));
    CHECK(infer(OpKind::MatMul, {f32({3, 7}), f32({7})}) == f32({3}));
    CHECK(infer(OpKind::MatMul, {f32({7}), f32({7})}) == f32({}));
    std::string msg;
    CHECK(error_of([] { infer(OpKind::MatMul, {f32({1, 128, 768}), f32({700, 3072})}); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(msg.find("inner dimensions differ") != std::string::npos);
    CHECK(msg.find("768 vs 700") != std::string::npos);
    CHECK(error_of([] { infer(OpKind::MatMul, {f32({2, 5, 7}), f32({3, 7, 4})}); }) == ErrorCode::ShapeMismatch);
  }

  TEST_CASE("Gemm transposes and C broadcast") {
    CHECK(infer(OpKind::Gemm, {f32({4, 3}), f32({5, 4}), f32({5})}, {{"transA", 1}, {"transB", 1}}) ==
          f32({3, 5}));
    CHECK(error_of([] { infer(OpKind::Gemm, {f32({4, 3}), f32({4, 5})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([] { infer(OpKind::Gemm, {f32({4, 3}), f32({3, 5}), f32({3})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([] { infer(OpKind::Gemm, {f32({4, 3}), f32({3, 5})}, {{"transA", 2}}); }) ==
          ErrorCode::InvalidGraph);
  }

  TEST_CASE("normalizations") {
    CHECK(infer(OpKind::BatchNormalization, {f32({1, 3, 4, 4}), f32({3}), f32({3}), f32({3}), f32({3})}) ==
          f32({1, 3, 4, 4}));
    CHECK(error_of([] {
            infer(OpKind::BatchNormalization, {f32({1, 3, 4, 4}), f32({4}), f32({3}), f32({3}), f32({3})});
          }) == ErrorCode::ShapeMismatch);
    CHECK(infer(OpKind::LayerNormalization, {f32({2, 5, 768}), f32({768}), f32({768})}) == f32({2, 5, 768}));
    CHECK(infer(OpKind::LayerNormalization, {f32({2, 5, 6}), f32({5, 6}), Absent{}}, {{"axis", 1}}) ==
          f32({2, 5, 6}));
    CHECK(error_of([] { infer(OpKind::LayerNormalization, {f32({2, 5, 768}), f32({767})}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(error_of([] { infer(OpKind::Softmax, {f32({2, 5})}, {{"axis", 2}}); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("reductions") {
    CHECK(infer(OpKind::ReduceMean, {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{-1}}}) == f32({2, 3, 1}));
    CHECK(infer(OpKind::ReduceSum, {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", 0}}) ==
          f32({3}));
    CHECK(infer(OpKind::ReduceSum, {f32({2, 3, 4}), test::ints({1})}, {{"keepdims", 0}}) == f32({2, 4}));
    CHECK(infer(OpKind::ReduceSum, {f32({2, 3})}, {{"keepdims", 0}}) == f32({}));
    CHECK(error_of([] { infer(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", std::vector<int64_t>{2}}}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(error_of([] { infer(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", std::vector<int64_t>{1, -1}}}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(error_of([] { infer(OpKind::ReduceSum, {f32({2, 3}), f32({1})}); }) == ErrorCode::Unsupported);
    CHECK(infer(OpKind::ReduceMax, {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{1}}}) == f32({2, 1, 4}));
    CHECK(infer(OpKind::ReduceSum, {f32({2, 0})}, {{"axes", std::vector<int64_t>{1}}}) == f32({2, 1}));
    CHECK(error_of([] { infer(OpKind::ReduceMax, {f32({2, 0})}, {{"axes", std::vector<int64_t>{1}}}); }) ==
          ErrorCode::ShapeMismatch);
  }

  TEST_CASE("pools") {
    CHECK(infer(OpKind::MaxPool, {f32({1, 64, 112, 112})},
                {{"kernel_shape", std::vector<int64_t>{3, 3}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"pads", std::vector<int64_t>{1, 1, 1, 1}}}) == f32({1, 64, 56, 56}));
    CHECK(infer(OpKind::AveragePool, {f32({1, 1, 5, 5})},
                {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
                 {"ceil_mode", 1}}) == f32({1, 1, 3, 3}));
    CHECK(infer(OpKind::GlobalAveragePool, {f32({2, 8, 7, 7})}) == f32({2, 8, 1, 1}));
    CHECK(error_of([] { infer(OpKind::MaxPool, {f32({1, 1, 5, 5})}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([] { infer(OpKind::MaxPool, {f32({1, 1, 2, 2})}, {{"kernel_shape", std::vector<int64_t>{3, 3}}}); }) ==
          ErrorCode::ShapeMismatch);
  }

  TEST_CASE("layout ops") {
    CHECK(infer(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", std::vector<int64_t>{1, 2, 0}}}) == f32({3, 4, 2}));
    CHECK(infer(OpKind::Transpose, {f32({2, 3, 4})}) == f32({4, 3, 2}));
    CHECK(error_of([] { infer(OpKind::Transpose, {f32({2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(infer(OpKind::Reshape, {f32({1, 128, 768}), test::ints({0, 0, 12, 64})}) == f32({1, 128, 12, 64}));
    CHECK(infer(OpKind::Reshape, {f32({2, 3, 4}), test::ints({-1, 4})}) == f32({6, 4}));
    CHECK(error_of([] { infer(OpKind::Reshape, {f32({2, 3}), test::ints({4, -1})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([] { infer(OpKind::Reshape, {f32({2, 3}), test::ints({-1, -1})}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([] { infer(OpKind::Reshape, {f32({2, 3}), of(DType::I64, {2})}); }) == ErrorCode::Unsupported);
    CHECK(infer(OpKind::Flatten, {f32({2, 3, 4, 5})}, {{"axis", 2}}) == f32({6, 20}));
    CHECK(infer(OpKind::Flatten, {f32({2, 3})}, {{"axis", 0}}) == f32({1, 6}));
    CHECK(infer(OpKind::Flatten, {f32({2, 3, 4, 5})}, {{"axis", -1}}) == f32({24, 5}));  // r + axis
    CHECK(infer(OpKind::Flatten, {f32({2, 3, 4, 5})}, {{"axis", -4}}) == f32({1, 120}));
    CHECK(infer(OpKind::Flatten, {f32({2, 3, 4, 5})}, {{"axis", 4}}) == f32({120, 1}));
    CHECK(error_of([] { infer(OpKind::Flatten, {f32({2, 3, 4, 5})}, {{"axis", -5}}); }) == ErrorCode::InvalidGraph);
    CHECK(infer(OpKind::Squeeze, {f32({1, 3, 1, 2})}) == f32({3, 2}));
    CHECK(infer(OpKind::Squeeze, {f32({1, 3, 1, 2})}, {{"axes", std::vector<int64_t>{-2}}}) == f32({1, 3, 2}));
    CHECK(error_of([] { infer(OpKind::Squeeze, {f32({1, 3})}, {{"axes", std::vector<int64_t>{1}}}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(infer(OpKind::Unsqueeze, {f32({3, 2})}, {{"axes", std::vector<int64_t>{0, -1}}}) == f32({1, 3, 2, 1}));
    CHECK(infer(OpKind::Unsqueeze, {f32({3}), test::ints({1})}) == f32({3, 1}));
    CHECK(infer(OpKind::Concat, {f32({2, 3}), f32({2, 5})}, {{"axis", -1}}) == f32({2, 8}));
    CHECK(error_of([] { infer(OpKind::Concat, {f32({2, 3}), f32({3, 5})}, {{"axis", 1}}); }) ==
          ErrorCode::ShapeMismatch);
    CHECK(infer(OpKind::Slice, {f32({10, 8}), test::ints({1, -3}), test::ints({1000, -1})}) == f32({9, 2}));
    CHECK(infer(OpKind::Slice, {f32({10, 8}), test::ints({-1}), test::ints({-1000}), test::ints({0}),
                                test::ints({-2})}) == f32({5, 8}));
    CHECK(error_of([] {
            infer(OpKind::Slice, {f32({10}), test::ints({0}), test::ints({5}), test::ints({0}), test::ints({0})});
          }) == ErrorCode::InvalidGraph);
    CHECK(infer(OpKind::Gather, {f32({30522, 768}), of(DType::I64, {1, 128})}) == f32({1, 128, 768}));
    CHECK(infer(OpKind::Gather, {f32({4, 5, 6}), of(DType::I32, {2})}, {{"axis", -1}}) == f32({4, 5, 2}));
    CHECK(error_of([] { infer(OpKind::Gather, {f32({4}), f32({2})}); }) == ErrorCode::DTypeMismatch);
  }

  TEST_CASE("comparisons logic and activations") {
    CHECK(infer(OpKind::Less, {f32({2, 1}), f32({3})}) == of(DType::Bool, {2, 3}));
    CHECK(infer(OpKind::Equal, {of(DType::Bool, {3}), of(DType::Bool, {1})}) == of(DType::Bool, {3}));
    CHECK(infer(OpKind::GreaterOrEqual, {of(DType::I64, {}), of(DType::I64, {4})}) == of(DType::Bool, {4}));
    CHECK(infer(OpKind::And, {of(DType::Bool, {2, 3}), of(DType::Bool, {3})}) == of(DType::Bool, {2, 3}));
    CHECK(infer(OpKind::Not, {of(DType::Bool, {5})}) == of(DType::Bool, {5}));
    CHECK(infer(OpKind::IsNaN, {of(DType::F16, {5})}) == of(DType::Bool, {5}));
    CHECK(infer(OpKind::Clip, {f32({4}), Tensor::from_doubles(DType::F32, {}, {0.0}), Absent{}}) == f32({4}));
    CHECK(infer(OpKind::Clip, {of(DType::I32, {4})}) == of(DType::I32, {4}));
    CHECK(infer(OpKind::HardSwish, {f32({2, 2})}) == f32({2, 2}));
    CHECK(error_of([] { infer(OpKind::Greater, {of(DType::Bool, {2}), of(DType::Bool, {2})}); }) == ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::Or, {f32({2}), f32({2})}); }) == ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::IsInf, {of(DType::I32, {2})}); }) == ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::HardSigmoid, {of(DType::I64, {2})}); }) == ErrorCode::DTypeMismatch);
    CHECK(error_of([] { infer(OpKind::Clip, {of(DType::I32, {4})}, {{"max", 1.0}}); }) == ErrorCode::DTypeMismatch);
  }

  TEST_CASE("data movement and indexing shapes") {
    auto c = [](std::vector<int64_t> v) { return In(test::ints(std::move(v))); };
    CHECK(infer(OpKind::Expand, {f32({3, 1}), c({2, 1, 5})}) == f32({2, 3, 5}));
    CHECK(infer(OpKind::Tile, {f32({3, 1}), c({2, 7})}) == f32({6, 7}));
    CHECK(infer(OpKind::Pad, {f32({3, 4}), c({1, -1, 2, 0})}) == f32({6, 3}));
    CHECK(infer(OpKind::Pad, {f32({3, 4}), c({2, 2}), Absent{}, c({-1})}) == f32({3, 8}));
    CHECK(infer(OpKind::GatherND, {f32({2, 3, 4}), of(DType::I64, {5, 2})}) == f32({5, 4}));
    CHECK(infer(OpKind::GatherND, {f32({2, 3, 4}), of(DType::I64, {2, 1})}, {{"batch_dims", int64_t(1)}}) == f32({2, 4}));
    CHECK(infer(OpKind::GatherElements, {f32({2, 3}), of(DType::I32, {2, 9})}, {{"axis", int64_t(1)}}) == f32({2, 9}));
    CHECK(infer(OpKind::Trilu, {f32({2, 3, 4}), of(DType::I64, {})}) == f32({2, 3, 4}));
    CHECK(infer(OpKind::CumSum, {of(DType::I64, {3, 4}), c({-1})}) == of(DType::I64, {3, 4}));
    CHECK(infer(OpKind::ArgMax, {f32({3, 4, 5})}, {{"axis", int64_t(-2)}, {"keepdims", int64_t(0)}}) == of(DType::I64, {3, 5}));
    CHECK(infer(OpKind::ReduceMin, {f32({3, 4}), c({0})}) == f32({1, 4}));
    CHECK(infer(OpKind::ReduceProd, {f32({0, 4}), c({0})}) == f32({1, 4}));  // a product over nothing is 1
    CHECK(infer(OpKind::ScatterND, {f32({4, 5, 6}), of(DType::I64, {3, 2}), f32({3, 6})}) == f32({4, 5, 6}));
    CHECK(infer(OpKind::ScatterElements, {f32({4, 5}), of(DType::I64, {9, 2}), f32({9, 2})}) == f32({4, 5}));
    CHECK(error_of([&] { infer(OpKind::ScatterND, {f32({4, 5, 6}), of(DType::I64, {3, 2}), f32({3, 5})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { infer(OpKind::ScatterND, {f32({4, 5}), of(DType::I64, {3, 3}), f32({3})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { infer(OpKind::ScatterElements, {f32({4, 5}), of(DType::I64, {2, 2}), of(DType::I64, {2, 2})}); }) ==
          ErrorCode::DTypeMismatch);
    CHECK(error_of([&] { infer(OpKind::ReduceMin, {f32({0, 4}), c({0})}); }) == ErrorCode::ShapeMismatch);
    CHECK(infer(OpKind::ConstantOfShape, {c({2, 0, 3})}, {{"dtype", "bool"}}) == of(DType::Bool, {2, 0, 3}));
    CHECK(error_of([&] { infer(OpKind::GatherElements, {f32({2, 3}), of(DType::I64, {3, 4})}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { infer(OpKind::Expand, {f32({3}), of(DType::I64, {2})}); }) == ErrorCode::Unsupported);
  }

  TEST_CASE("huge attribute and constant values of the ONNX ops are clean InvalidGraph errors") {
    const int64_t hi = std::numeric_limits<int64_t>::max(), lo = std::numeric_limits<int64_t>::min();
    auto c = [](std::vector<int64_t> v) { return In(test::ints(std::move(v))); };
    struct Case {
      const char* what;
      std::function<void()> run;
      const char* names;  // what the message must name
    };
    std::vector<Case> cases;
    for (int64_t v : {hi, lo, hi - 1, lo + 1, int64_t(1) << 62}) {
      cases.push_back({"Pad pads", [=] { infer(OpKind::Pad, {f32({3, 4}), c({v, 0, v, 0})}); }, "pads"});
      cases.push_back({"Pad attribute", [=] { infer(OpKind::Pad, {f32({3, 4})}, {{"pads", std::vector<int64_t>{0, v, 0, v}}}); }, "pads"});
      cases.push_back({"Split sizes", [=] { infer(OpKind::Split, {f32({4, 6}), c({v, v})}, {{"axis", int64_t(1)}}); }, "split"});
      cases.push_back({"Split axis", [=] { infer(OpKind::Split, {f32({4, 6})}, {{"axis", v}}); }, "axis"});
      cases.push_back({"Expand shape", [=] { infer(OpKind::Expand, {f32({3, 1}), c({v, 1})}); }, "shape"});
      cases.push_back({"ArgMax axis", [=] { infer(OpKind::ArgMax, {f32({3})}, {{"axis", v}}); }, "axis"});
      cases.push_back({"CumSum axis", [=] { infer(OpKind::CumSum, {f32({3}), c({v})}); }, "axis"});
      cases.push_back({"GatherElements axis", [=] { infer(OpKind::GatherElements, {f32({3}), of(DType::I64, {3})}, {{"axis", v}}); },
                       "axis"});
      cases.push_back({"GatherND batch_dims", [=] { infer(OpKind::GatherND, {f32({3, 2}), of(DType::I64, {3, 1})}, {{"batch_dims", v}}); },
                       "batch_dims"});
      cases.push_back({"Split num_outputs", [=] { infer(OpKind::Split, {f32({4, 6})}, {{"num_outputs", v}}); }, "num_outputs"});
      if (v > 0) {
        cases.push_back({"Tile repeats", [=] { infer(OpKind::Tile, {f32({3, 4}), c({v, 2})}); }, "repeats"});
        cases.push_back({"ConstantOfShape", [=] { infer(OpKind::ConstantOfShape, {c({v, 2})}); }, "output"});
      } else {
        cases.push_back({"Tile repeats", [=] { infer(OpKind::Tile, {f32({3, 4}), c({v, 2})}); }, "repeats"});
        cases.push_back({"ConstantOfShape", [=] { infer(OpKind::ConstantOfShape, {c({v, 2})}); }, "shape"});
      }
    }
    for (const Case& k : cases) {
      INFO(k.what);
      std::string msg;
      ErrorCode code = error_of(k.run, &msg);
      INFO(msg);
      CHECK((code == ErrorCode::InvalidGraph || code == ErrorCode::OutOfMemory || code == ErrorCode::ShapeMismatch));
      CHECK(msg.find("node 'node'") != std::string::npos);
      CHECK(msg.find(k.names) != std::string::npos);
    }
  }

  TEST_CASE("outputs that overflow are refused") {
    CHECK(error_of([] { infer(OpKind::Add, {f32({int64_t(1) << 30, 1}), f32({1, int64_t(1) << 30})}); }) ==
          ErrorCode::OutOfMemory);
  }
}

TEST_SUITE("ir/shape_inference") {
  TEST_CASE("binding named dims") {
    Graph g("b");
    ValueId x = g.add_input("x", DType::F32, {"B", "T", 768});
    ValueId m = g.add_input("mask", DType::F32, {"B", 1, 1, "T"});
    DimBindings dims;
    bind_input(g, x, f32({2, 7, 768}), &dims);
    CHECK(dims.at("B") == 2);
    CHECK(dims.at("T") == 7);
    CHECK_NOTHROW(bind_input(g, m, f32({2, 1, 1, 7}), &dims));
    std::string msg;
    CHECK(error_of([&] { bind_input(g, m, f32({2, 1, 1, 8}), &dims); }, &msg) == ErrorCode::ShapeMismatch);
    CHECK(msg.find("'T' is already bound to 7") != std::string::npos);
    CHECK(error_of([&] { bind_input(g, x, f32({2, 7, 769}), &dims); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { bind_input(g, x, f32({2, 7}), &dims); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { bind_input(g, x, of(DType::F16, {2, 7, 768}), &dims); }) == ErrorCode::DTypeMismatch);
    auto types = input_types_from_dims(g, {{"B", 1}, {"T", 3}});
    CHECK(types[0] == f32({1, 3, 768}));
    CHECK(error_of([&] { input_types_from_dims(g, {{"B", 1}}); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("'T'") != std::string::npos);
  }
}

// Issue 20: sizes computed from user attributes are overflow-checked. Every window attribute
// of Conv, MaxPool and AveragePool and every Slice bound at the int64 limits gives either a
// clean fusor::Error or a result within [0, kMaxElements] (the UBSan build of this suite
// reports any signed overflow on the way).
TEST_SUITE("ir/shape_inference") {
  TEST_CASE("window and slice attributes at the int64 limits are refused cleanly or computed exactly") {
    const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    const std::vector<int64_t> extremes = {hi, hi - 1, lo, lo + 1, int64_t(1) << 62, kMaxElements + 1, kMaxElements, -1, 0};
    int refused = 0, computed = 0;
    auto probe = [&](OpKind op, std::vector<In> ins, Attributes attrs) {
      try {
        const TensorType t = infer(op, std::move(ins), std::move(attrs));
        for (int64_t d : t.shape.dims()) {
          CHECK(d >= 0);
          CHECK(d <= kMaxElements);
        }
        ++computed;
      } catch (const Error&) {
        ++refused;
      }
    };
    for (int64_t v : extremes) {
      CAPTURE(v);
      for (OpKind op : {OpKind::Conv, OpKind::MaxPool, OpKind::AveragePool}) {
        std::vector<In> ins = {f32({1, 2, 9, 9})};
        Attributes base;
        if (op == OpKind::Conv) ins.push_back(f32({2, 2, 3, 3}));
        else base["kernel_shape"] = std::vector<int64_t>{3, 3};
        for (const char* name : {"pads", "strides", "dilations", "kernel_shape"}) {
          Attributes a = base;
          a[name] = std::string(name) == "pads" ? std::vector<int64_t>{v, 0, v, 1} : std::vector<int64_t>{v, 1};
          probe(op, ins, a);
          a["auto_pad"] = std::string("SAME_UPPER");
          if (std::string(name) != "pads") probe(op, ins, a);
        }
      }
      for (int64_t w : extremes) {  // Slice: every start/end pair and a step of each extreme
        probe(OpKind::Slice, {f32({10}), test::ints({v}), test::ints({w}), test::ints({0}), test::ints({1})}, {});
        probe(OpKind::Slice, {f32({10}), test::ints({v}), test::ints({w}), test::ints({0}), test::ints({-1})}, {});
        probe(OpKind::Slice, {f32({10}), test::ints({3}), test::ints({9}), test::ints({0}), test::ints({w})}, {});
        probe(OpKind::Slice, {f32({10}), test::ints({9}), test::ints({-11}), test::ints({0}), test::ints({w})}, {});
      }
    }
    CHECK(refused > 0);
    CHECK(computed > 0);
    // The reported cases: a dilation of 2^62 (was (kh - 1) * dh + 1) and pads of INT64_MAX
    // (was h + pt + pb) name the attribute; a step of INT64_MIN takes exactly one element.
    std::string msg;
    CHECK(error_of([&] { infer(OpKind::Conv, {f32({1, 2, 9, 9}), f32({2, 2, 3, 3})}, {{"dilations", std::vector<int64_t>{int64_t(1) << 62, 1}}}); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("dilations") != std::string::npos);
    CHECK(error_of([&] { infer(OpKind::MaxPool, {f32({1, 2, 9, 9})}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{hi, 0, hi, 0}}}); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("pads") != std::string::npos);
    CHECK(infer(OpKind::Slice, {f32({10}), test::ints({9}), test::ints({lo}), test::ints({0}), test::ints({lo})}) == f32({1}));
    CHECK(infer(OpKind::Slice, {f32({10}), test::ints({0}), test::ints({hi}), test::ints({0}), test::ints({hi})}) == f32({1}));
  }
}
