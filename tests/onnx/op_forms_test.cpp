// The per-opset forms of ONNX operators (onnx/op_forms.h): an operand given as an attribute
// in one opset and as an input in another must load and compute the same, whatever form
// fusor's schema takes. Each case runs the loaded model on the static backend against ONNX's
// semantics. An operator fusor does not have yet (ir/ops.def) is skipped, saying so.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ir/op_kind.h"
#include "jit/engine.h"
#include "onnx/load_onnx.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

TensorMap run(const OnnxBuilder& b, const TensorMap& inputs) {
  Graph g = load_onnx_bytes(b.bytes(), {.source = "forms.onnx", .warn = [](const std::string&) {}});
  Engine engine(EngineOptions{.num_threads = 1, .disk_cache = false});
  return engine.run(g, inputs);
}

bool have_op(const char* name) {
  OpKind k;
  if (parse_op_kind(name, &k)) return true;
  MESSAGE("skipped: fusor has no " << std::string(name) << " operator yet (ir/ops.def)");
  return false;
}

Tensor x234() {
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i);
  return make(DType::F32, {2, 3, 4}, v);
}

void check_values(const Tensor& got, const Shape& shape, const std::vector<double>& want) {
  CHECK(got.shape() == shape);
  FUSOR_CHECK_CLOSE(got, make(got.dtype(), shape, want), 1e-6, 1e-6);
}

// ReduceX over the last axis of x234(), axes as attribute (opset 17) and as input (18).
void check_reduce_last_axis(const char* op) {
    OnnxBuilder attr_form(17);
    attr_form.input("x", kFloat, {2, 3, 4});
    attr(attr_form.node(op, {"x"}, {"y"}), "axes", std::vector<int64_t>{-1});
    attr_form.output("y");
    OnnxBuilder input_form(18);
    input_form.input("x", kFloat, {2, 3, 4});
    input_form.initializer_i64("axes", {1}, {-1});
    input_form.node(op, {"x", "axes"}, {"y"});
    input_form.output("y");
    std::string o = op;
    std::vector<double> want;
    for (int r = 0; r < 6; ++r)
      want.push_back(o == "ReduceMean"   ? 4 * r + 1.5
                     : o == "ReduceMax"  ? 4 * r + 3
                     : o == "ReduceProd" ? double(4 * r) * (4 * r + 1) * (4 * r + 2) * (4 * r + 3)
                                         : 4 * r);
    check_values(run(attr_form, {{"x", x234()}}).at("y"), Shape{2, 3, 1}, want);
    check_values(run(input_form, {{"x", x234()}}).at("y"), Shape{2, 3, 1}, want);
}

}  // namespace

TEST_SUITE("onnx/op forms") {
  TEST_CASE("Squeeze and Unsqueeze: axes as attribute (opset 11) and as input (13)") {
    OnnxBuilder attr_form(11);
    attr_form.input("x", kFloat, {1, 3, 1});
    attr(attr_form.node("Squeeze", {"x"}, {"s"}), "axes", std::vector<int64_t>{0, -1});
    attr(attr_form.node("Unsqueeze", {"s"}, {"y"}), "axes", std::vector<int64_t>{1});
    attr_form.output("y");
    OnnxBuilder input_form(13);
    input_form.input("x", kFloat, {1, 3, 1});
    input_form.initializer_i64("sq", {2}, {0, -1});
    input_form.initializer_i64("un", {1}, {1});
    input_form.node("Squeeze", {"x", "sq"}, {"s"});
    input_form.node("Unsqueeze", {"s", "un"}, {"y"});
    input_form.output("y");
    Tensor x = make(DType::F32, {1, 3, 1}, {1, 2, 3});
    check_values(run(attr_form, {{"x", x}}).at("y"), Shape{3, 1}, {1, 2, 3});
    check_values(run(input_form, {{"x", x}}).at("y"), Shape{3, 1}, {1, 2, 3});
  }

  TEST_CASE("ReduceSum: axes as attribute (opset 11) and as input (13)") {
    OnnxBuilder attr_form(11);
    attr_form.input("x", kFloat, {2, 3, 4});
    auto& n = attr_form.node("ReduceSum", {"x"}, {"y"});
    attr(n, "axes", std::vector<int64_t>{1});
    attr(n, "keepdims", int64_t(0));
    attr_form.output("y");
    OnnxBuilder input_form(13);
    input_form.input("x", kFloat, {2, 3, 4});
    input_form.initializer_i64("axes", {1}, {1});
    attr(input_form.node("ReduceSum", {"x", "axes"}, {"y"}), "keepdims", int64_t(0));
    input_form.output("y");
    std::vector<double> want = {12, 15, 18, 21, 48, 51, 54, 57};
    check_values(run(attr_form, {{"x", x234()}}).at("y"), Shape{2, 4}, want);
    check_values(run(input_form, {{"x", x234()}}).at("y"), Shape{2, 4}, want);
  }

  TEST_CASE("ReduceMean: axes as attribute (opset 17) and as input (18)") { check_reduce_last_axis("ReduceMean"); }
  TEST_CASE("ReduceMax: axes as attribute (opset 17) and as input (18)") { check_reduce_last_axis("ReduceMax"); }
  TEST_CASE("ReduceMin: axes as attribute (opset 17) and as input (18)") {
    if (have_op("ReduceMin")) check_reduce_last_axis("ReduceMin");
  }

  TEST_CASE("ReduceProd: axes as attribute (opset 17) and as input (18)") { check_reduce_last_axis("ReduceProd"); }

  TEST_CASE("ReduceSum with empty axes: all axes, or none with noop_with_empty_axes") {
    OnnxBuilder b(13);
    b.input("x", kFloat, {2, 2});
    b.initializer_i64("none", {0}, {});
    b.node("ReduceSum", {"x", "none"}, {"all"});
    attr(b.node("ReduceSum", {"x", "none"}, {"same"}), "noop_with_empty_axes", int64_t(1));
    b.output("all");
    b.output("same");
    TensorMap out = run(b, {{"x", make(DType::F32, {2, 2}, {1, 2, 3, 4})}});
    check_values(out.at("all"), Shape{1, 1}, {10});
    check_values(out.at("same"), Shape{2, 2}, {1, 2, 3, 4});
  }

  TEST_CASE("Slice: starts/ends/axes as attributes (opset 9) and as inputs (13)") {
    OnnxBuilder attr_form(9);
    attr_form.input("x", kFloat, {2, 3, 4});
    auto& n = attr_form.node("Slice", {"x"}, {"y"});
    attr(n, "starts", std::vector<int64_t>{1, 0});
    attr(n, "ends", std::vector<int64_t>{3, -1});
    attr(n, "axes", std::vector<int64_t>{1, 2});
    attr_form.output("y");
    OnnxBuilder input_form(13);
    input_form.input("x", kFloat, {2, 3, 4});
    input_form.initializer_i64("starts", {2}, {1, 0});
    input_form.initializer_i64("ends", {2}, {3, -1});
    input_form.initializer_i64("axes", {2}, {1, 2});
    input_form.initializer_i64("steps", {2}, {1, 2});
    input_form.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
    input_form.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"z"});
    input_form.output("y");
    input_form.output("z");
    std::vector<double> want = {4, 5, 6, 8, 9, 10, 16, 17, 18, 20, 21, 22};
    check_values(run(attr_form, {{"x", x234()}}).at("y"), Shape{2, 2, 3}, want);
    TensorMap out = run(input_form, {{"x", x234()}});
    check_values(out.at("y"), Shape{2, 2, 3}, want);
    check_values(out.at("z"), Shape{2, 2, 2}, {4, 6, 8, 10, 16, 18, 20, 22});
  }

  TEST_CASE("Reshape: opset 13, and allowzero from opset 14") {
    OnnxBuilder b(14);
    b.input("x", kFloat, {2, 3, 4});
    b.initializer_i64("shape", {3}, {0, -1, 2});
    b.node("Reshape", {"x", "shape"}, {"y"});
    b.output("y");
    CHECK(run(b, {{"x", x234()}}).at("y").shape() == Shape{2, 6, 2});
  }

  TEST_CASE("Pow with an integer exponent (opset 15) runs in the base's dtype") {
    OnnxBuilder b(15);
    b.input("x", kFloat, {3});
    b.initializer_i64("three", {}, {3});
    b.input("e", kInt64, {3});
    b.node("Pow", {"x", "three"}, {"cube"});
    b.node("Pow", {"x", "e"}, {"y"});
    b.node("Relu", {"x"}, {"r"});  // a computed base: its dtype follows from x's
    b.node("Pow", {"r", "three"}, {"rcube"});
    b.output("cube");
    b.output("y");
    b.output("rcube");
    TensorMap out = run(b, {{"x", make(DType::F32, {3}, {1, 2, 3})}, {"e", make(DType::I64, {3}, {2, 0, 1})}});
    check_values(out.at("cube"), Shape{3}, {1, 8, 27});
    check_values(out.at("y"), Shape{3}, {1, 1, 3});
    check_values(out.at("rcube"), Shape{3}, {1, 8, 27});
  }

  TEST_CASE("Split: split as attribute (opset 11), as input (13), num_outputs (18)") {
    if (!have_op("Split")) return;
    Tensor x = make(DType::F32, {6}, {1, 2, 3, 4, 5, 6});
    OnnxBuilder a(11);
    a.input("x", kFloat, {6});
    attr(a.node("Split", {"x"}, {"p", "q"}), "split", std::vector<int64_t>{2, 4});
    a.output("p");
    a.output("q");
    TensorMap out = run(a, {{"x", x}});
    check_values(out.at("p"), Shape{2}, {1, 2});
    check_values(out.at("q"), Shape{4}, {3, 4, 5, 6});
    OnnxBuilder i(13);
    i.input("x", kFloat, {6});
    i.initializer_i64("split", {2}, {2, 4});
    i.node("Split", {"x", "split"}, {"p", "q"});
    i.output("p");
    i.output("q");
    out = run(i, {{"x", x}});
    check_values(out.at("q"), Shape{4}, {3, 4, 5, 6});
    OnnxBuilder n(18);
    n.input("x", kFloat, {6});
    attr(n.node("Split", {"x"}, {"p", "q", "r"}), "num_outputs", int64_t(3));
    n.output("p");
    n.output("q");
    n.output("r");
    out = run(n, {{"x", x}});
    check_values(out.at("r"), Shape{2}, {5, 6});
  }

  TEST_CASE("Clip: min and max as inputs (opset 11+), either omitted") {
    if (!have_op("Clip")) return;
    OnnxBuilder b(13);
    b.input("x", kFloat, {4});
    b.initializer("lo", {}, {0.f});
    b.initializer("hi", {}, {6.f});
    b.node("Clip", {"x", "lo", "hi"}, {"relu6"});
    b.node("Clip", {"x", "", "hi"}, {"upper"});
    b.node("Clip", {"x", "lo"}, {"lower"});
    b.output("relu6");
    b.output("upper");
    b.output("lower");
    TensorMap out = run(b, {{"x", make(DType::F32, {4}, {-1, 3, 7, 6})}});
    check_values(out.at("relu6"), Shape{4}, {0, 3, 6, 6});
    check_values(out.at("upper"), Shape{4}, {-1, 3, 6, 6});
    check_values(out.at("lower"), Shape{4}, {0, 3, 7, 6});
  }

  TEST_CASE("Pad: pads and constant_value as inputs (opset 13), axes (18)") {
    if (!have_op("Pad")) return;
    OnnxBuilder b(13);
    b.input("x", kFloat, {2, 2});
    b.initializer_i64("pads", {4}, {0, 1, 1, 0});
    b.initializer("value", {}, {9.f});
    b.node("Pad", {"x", "pads", "value"}, {"y"});
    b.output("y");
    check_values(run(b, {{"x", make(DType::F32, {2, 2}, {1, 2, 3, 4})}}).at("y"), Shape{3, 3},
                 {9, 1, 2, 9, 3, 4, 9, 9, 9});
    OnnxBuilder a(18);
    a.input("x", kFloat, {2, 2});
    a.initializer_i64("pads", {2}, {1, 0});
    a.initializer_i64("axes", {1}, {1});
    a.node("Pad", {"x", "pads", "", "axes"}, {"y"});
    a.output("y");
    check_values(run(a, {{"x", make(DType::F32, {2, 2}, {1, 2, 3, 4})}}).at("y"), Shape{2, 3}, {0, 1, 2, 0, 3, 4});
  }

  TEST_CASE("CumSum: the axis as a scalar input") {
    if (have_op("CumSum")) {
      OnnxBuilder b(14);
      b.input("x", kFloat, {2, 2});
      b.initializer_i64("axis", {}, {1});
      b.node("CumSum", {"x", "axis"}, {"y"});
      b.output("y");
      check_values(run(b, {{"x", make(DType::F32, {2, 2}, {1, 2, 3, 4})}}).at("y"), Shape{2, 2}, {1, 3, 3, 7});
    }
  }

  TEST_CASE("Trilu: k as a scalar input") {
    if (have_op("Trilu")) {
      OnnxBuilder b(14);
      b.input("x", kFloat, {2, 2});
      b.initializer_i64("k", {}, {0});
      attr(b.node("Trilu", {"x", "k"}, {"y"}), "upper", int64_t(0));
      b.output("y");
      check_values(run(b, {{"x", make(DType::F32, {2, 2}, {1, 2, 3, 4})}}).at("y"), Shape{2, 2}, {1, 0, 3, 4});
    }
  }

  TEST_CASE("ConstantOfShape: the value tensor gives the value and the dtype") {
    if (!have_op("ConstantOfShape")) return;
    OnnxBuilder b(17);
    b.input("x", kInt64, {2, 3});
    b.node("Shape", {"x"}, {"s"});
    onnx::TensorProto seven = int64_tensor("", {1}, {7});
    attr(b.node("ConstantOfShape", {"s"}, {"sevens"}), "value", seven);
    b.node("ConstantOfShape", {"s"}, {"zeros"});  // no value: f32 zeros
    b.node("Add", {"x", "sevens"}, {"y"});
    b.output("y", kInt64);
    b.output("zeros");
    TensorMap out = run(b, {{"x", make(DType::I64, {2, 3}, {0, 1, 2, 3, 4, 5})}});
    CHECK(out.at("y").dtype() == DType::I64);
    check_values(out.at("y"), Shape{2, 3}, {7, 8, 9, 10, 11, 12});
    CHECK(out.at("zeros").dtype() == DType::F32);
    check_values(out.at("zeros"), Shape{2, 3}, {0, 0, 0, 0, 0, 0});
  }

  TEST_CASE("ConstantOfShape: a bool value (the TorchScript exporter's attention mask) gives bools") {
    if (!have_op("ConstantOfShape")) return;
    OnnxBuilder b(17);
    b.input("x", kBool, {2, 2});
    b.node("Shape", {"x"}, {"s"});
    onnx::TensorProto yes;
    yes.set_data_type(kBool);
    yes.add_dims(1);
    yes.add_int32_data(1);
    attr(b.node("ConstantOfShape", {"s"}, {"ones"}), "value", yes);
    b.node("And", {"x", "ones"}, {"y"});
    b.output("y", kBool);
    TensorMap out = run(b, {{"x", make(DType::Bool, {2, 2}, {1, 0, 0, 1})}});
    CHECK(out.at("y").dtype() == DType::Bool);
    check_values(out.at("y"), Shape{2, 2}, {1, 0, 0, 1});
  }

  TEST_CASE("LSTM: activations as a list of strings, and a left-out Y") {
    // The same LSTM with its default activations named, unnamed, and with h = Relu.
    auto model = [](const std::vector<std::string>& acts) {
      OnnxBuilder b(14);
      b.input("x", kFloat, {3, 2, 4});
      std::vector<float> w(8 * 4), r(8 * 2);
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * float(i % 7) - 0.3f;
      for (size_t i = 0; i < r.size(); ++i) r[i] = 0.2f * float(i % 5) - 0.4f;
      b.initializer("w", {1, 8, 4}, w);
      b.initializer("r", {1, 8, 2}, r);
      onnx::NodeProto& n = b.node("LSTM", {"x", "w", "r"}, {"", "y"}, "lstm");
      attr(n, "hidden_size", int64_t(2));
      if (!acts.empty()) {
        auto* a = add_attr(n, "activations", onnx::AttributeProto::STRINGS);
        for (const std::string& name : acts) a->add_strings(name);
      }
      b.output("y");
      return b;
    };
    std::vector<double> xs(24);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25 * double(i % 9) - 1;
    const TensorMap in = {{"x", make(DType::F32, {3, 2, 4}, xs)}};
    const Tensor plain = run(model({}), in).at("y");
    CHECK(plain.shape() == Shape{1, 2, 2});
    FUSOR_CHECK_CLOSE(run(model({"Sigmoid", "Tanh", "Tanh"}), in).at("y"), plain, 0, 0);
    const Tensor relu = run(model({"sigmoid", "tanh", "Relu"}), in).at("y");
    std::string msg;
    CHECK_FALSE(allclose(relu, plain, 1e-3, 1e-3, &msg));
    CHECK(error_of([&] { run(model({"Sigmoid", "Tanh,Tanh", "Tanh"}), in); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("with a comma") != std::string::npos);
  }
}
