// Tests of load_onnx on well-formed models: what becomes an input, a constant, a node; the
// names of dims, values and outputs; the removal of Identity and Dropout; loaded models run
// through the Engine (static and llvm) against hand-computed results and against the same
// graph written in fusor's text format.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/op_schema.h"
#include "ir/text_format.h"
#include "jit/engine.h"
#include "onnx/load_onnx.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

// Loads b's model, collecting the warnings.
Graph load(const OnnxBuilder& b, std::vector<std::string>* warnings = nullptr) {
  OnnxOptions o;
  o.source = "test.onnx";
  o.warn = [warnings](const std::string& m) {
    if (warnings) warnings->push_back(m);
  };
  return load_onnx_bytes(b.bytes(), o);
}

const Value& value_named(const Graph& g, const std::string& name) {
  ValueId v = g.find_value(name);
  REQUIRE_MESSAGE(v != kNoValue, "no value named " << name);
  return g.value(v);
}

int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void check_close(const Tensor& got, const Tensor& want) { FUSOR_CHECK_CLOSE(got, want, 1e-5, 1e-6); }

TensorMap run_on(BackendKind backend, const Graph& g, const TensorMap& in) {
  Engine engine(EngineOptions{.backend = backend, .num_threads = 2, .disk_cache = false});
  return engine.run(g, in);
}

// An MLP written as PyTorch's TorchScript exporter writes one: y = relu(x @ w + b) @ w2.
OnnxBuilder mlp_model() {
  OnnxBuilder b(17);
  b.input("x", kFloat, {"batch", 3});
  b.initializer("w", {3, 2}, {0.5f, -1.f, 1.f, 0.25f, -0.5f, 2.f});
  b.initializer("b", {2}, {0.1f, -0.2f});
  b.initializer("w2", {2, 1}, {1.f, -1.f});
  b.node("MatMul", {"x", "w"}, {"/fc1/MatMul_output_0"}, "/fc1/MatMul");
  b.node("Add", {"/fc1/MatMul_output_0", "b"}, {"/fc1/Add_output_0"}, "/fc1/Add");
  b.node("Relu", {"/fc1/Add_output_0"}, {"/act/Relu_output_0"}, "/act/Relu");
  b.node("MatMul", {"/act/Relu_output_0", "w2"}, {"y"}, "/fc2/MatMul");
  b.output("y");
  return b;
}

}  // namespace

TEST_SUITE("onnx/load_onnx") {
  TEST_CASE("an exported MLP: inputs, constants, nodes and names") {
    Graph g = load(mlp_model());
    REQUIRE(g.inputs().size() == 1);
    const Value& x = g.value(g.inputs()[0]);
    CHECK(x.name == "x");
    CHECK(x.dtype == DType::F32);
    REQUIRE(x.dims.size() == 2);
    CHECK(x.dims[0] == Dim("batch"));
    CHECK(x.dims[1] == Dim(3));
    CHECK(value_named(g, "w").kind == ValueKind::Constant);
    CHECK(value_named(g, "b").kind == ValueKind::Constant);
    CHECK(g.nodes().size() == 4);
    CHECK(g.nodes()[0].name == "/fc1/MatMul");
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.value(g.outputs()[0]).name == "y");
    CHECK(g.name() == "test_graph");
  }

  TEST_CASE("a loaded model runs on static and llvm as hand-computed") {
    Graph g = load(mlp_model());
    Tensor x = make(DType::F32, {2, 3}, {1, 2, 3, -1, 0, 1});
    // h = x@w + b: row 0: [0.5+2-1.5+0.1, -1+0.5+6-0.2] = [1.1, 5.3]; row 1: [-0.5-0.5+0.1, 1+2-0.2] = [-0.9, 2.8]
    // relu then @ [1, -1]: row 0: 1.1-5.3 = -4.2; row 1: 0-2.8 = -2.8
    Tensor want = make(DType::F32, {2, 1}, {-4.2, -2.8});
    FUSOR_CHECK_CLOSE(run_on(BackendKind::Static, g, {{"x", x}}).at("y"), want, 1e-5, 1e-5);
    try {
      FUSOR_CHECK_CLOSE(run_on(BackendKind::Llvm, g, {{"x", x}}).at("y"), want, 1e-5, 1e-5);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      MESSAGE("skipped: " << e.what());
    }
  }

  TEST_CASE("a loaded model matches the same graph in the text format") {
    Graph onnx = load(mlp_model());
    Graph text = parse_graph(R"(graph mlp
input x: f32[batch, 3]
const w: f32[3, 2] = [0.5, -1.0, 1.0, 0.25, -0.5, 2.0]
const b: f32[2] = [0.1, -0.2]
const w2: f32[2, 1] = [1.0, -1.0]
h = MatMul(x, w)
a = Add(h, b)
r = Relu(a)
y = MatMul(r, w2)
output y
)");
    Tensor x = randn({5, 3}, 7);
    for (BackendKind backend : {BackendKind::Static, BackendKind::Llvm}) {
      try {
        FUSOR_CHECK_CLOSE(run_on(backend, onnx, {{"x", x}}).at("y"), run_on(backend, text, {{"x", x}}).at("y"), 1e-6,
                          1e-6);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::DeviceUnavailable) throw;
        MESSAGE("skipped: " << e.what());
      }
    }
  }

  TEST_CASE("dim_param names a dim and an unnamed dynamic dim gets a stable reported name") {
    OnnxBuilder b(18);
    b.input("input_ids", kInt64, {"batch", ""});
    b.input("mask", kInt64, {"batch", "sequence length"});
    b.node("Add", {"input_ids", "mask"}, {"y"});
    b.output("y", kInt64);
    std::vector<std::string> warnings;
    Graph g = load(b, &warnings);
    const Value& ids = value_named(g, "input_ids");
    REQUIRE(ids.dims.size() == 2);
    CHECK(ids.dims[0] == Dim("batch"));
    CHECK(ids.dims[1] == Dim("input_ids_d1"));
    CHECK(value_named(g, "mask").dims[1] == Dim("sequence_length"));
    REQUIRE(warnings.size() == 2);
    CHECK(has(warnings[0], "input_ids_d1"));
    CHECK(has(warnings[0], "--dim input_ids_d1=SIZE"));
    CHECK(has(warnings[1], "'sequence length' is named 'sequence_length'"));
    CHECK(load(b).fingerprint() == g.fingerprint());  // the same names every time
    // The names bind at run time like any other dims.
    TensorMap out = run_on(BackendKind::Static, g,
                           {{"input_ids", make(DType::I64, {1, 3}, {1, 2, 3})},
                            {"mask", make(DType::I64, {1, 3}, {1, 1, 0})}});
    CHECK(out.at("y").at(2) == 3);
  }

  TEST_CASE("an initializer also listed as a graph input is a constant") {
    OnnxBuilder b(13);
    b.input("x", kFloat, {2});
    b.input("w", kFloat, {2});  // old exporters list every initializer as an input
    b.initializer("w", {2}, {3.f, 4.f});
    b.node("Mul", {"x", "w"}, {"y"});
    b.output("y");
    Graph g = load(b);
    REQUIRE(g.inputs().size() == 1);
    CHECK(g.value(g.inputs()[0]).name == "x");
    CHECK(value_named(g, "w").kind == ValueKind::Constant);
    Tensor y = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2}, {1, 2})}}).at("y");
    CHECK(y.at(0) == 3);
    CHECK(y.at(1) == 8);
  }

  TEST_CASE("Identity and inference Dropout are removed and the outputs keep their names") {
    OnnxBuilder b(13);
    b.input("x", kFloat, {3});
    b.initializer("ratio", {}, {0.5f});
    onnx::TensorProto mode;
    mode.set_name("training_mode");
    mode.set_data_type(kBool);
    mode.add_int32_data(0);
    b.initializer(mode);
    b.node("Identity", {"x"}, {"x1"});
    b.node("Dropout", {"x1", "ratio", "training_mode"}, {"d", "mask"});  // the mask is unused
    b.node("Relu", {"d"}, {"r"});
    b.node("Identity", {"r"}, {"out"});       // an output through Identity: r takes its name
    b.node("Identity", {"x"}, {"copy_of_x"});  // an output that is a graph input: a copy
    b.output("out");
    b.output("copy_of_x");
    Graph g = load(b);
    CHECK(count_ops(g, OpKind::Relu) == 1);
    CHECK(count_ops(g, OpKind::Cast) == 1);  // the copy of x
    CHECK(g.nodes().size() == 2);
    REQUIRE(g.outputs().size() == 2);
    CHECK(g.value(g.outputs()[0]).name == "out");
    CHECK(g.value(g.outputs()[0]).kind == ValueKind::NodeOutput);
    CHECK(g.value(g.outputs()[1]).name == "copy_of_x");
    TensorMap out = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {3}, {-1, 2, -3})}});
    CHECK(out.at("out").at(1) == 2);
    CHECK(out.at("out").at(0) == 0);
    CHECK(out.at("copy_of_x").at(2) == -3);
  }

  TEST_CASE("two outputs that are the same value") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.node("Neg", {"x"}, {"n"});
    b.node("Identity", {"n"}, {"a"});
    b.node("Identity", {"n"}, {"b"});
    b.output("a");
    b.output("b");
    Graph g = load(b);
    TensorMap out = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2}, {1, 2})}});
    CHECK(out.at("a").at(1) == -2);
    CHECK(out.at("b").at(1) == -2);
  }

  TEST_CASE("Constant nodes in each of their forms become constants") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    attr(b.node("Constant", {}, {"c_tensor"}), "value", float_tensor("", {2}, {1.f, 2.f}));
    attr(b.node("Constant", {}, {"c_float"}), "value_float", 0.5f);
    attr(b.node("Constant", {}, {"c_floats"}), "value_floats", std::vector<float>{3.f, 4.f});
    attr(b.node("Constant", {}, {"c_int"}), "value_int", int64_t(7));
    attr(b.node("Constant", {}, {"c_ints"}), "value_ints", std::vector<int64_t>{2});
    b.node("Add", {"x", "c_tensor"}, {"s1"});
    b.node("Mul", {"s1", "c_float"}, {"s2"});
    b.node("Add", {"s2", "c_floats"}, {"s3"});
    b.node("Reshape", {"s3", "c_ints"}, {"y"});
    attr(b.node("Cast", {"c_int"}, {"i"}), "to", int64_t(kFloat));
    b.output("y");
    b.output("i");
    Graph g = load(b);
    CHECK(value_named(g, "c_tensor").kind == ValueKind::Constant);
    CHECK(value_named(g, "c_int").dtype == DType::I64);
    CHECK(value_named(g, "c_float").dtype == DType::F32);
    CHECK(value_named(g, "c_float").dims.empty());
    TensorMap out = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2}, {1, 2})}});
    CHECK(out.at("y").at(0) == doctest::Approx((1 + 1) * 0.5 + 3));
    CHECK(out.at("y").at(1) == doctest::Approx((2 + 2) * 0.5 + 4));
    CHECK(out.at("i").dtype() == DType::F32);
    CHECK(out.at("i").at(0) == 7);
  }

  TEST_CASE("Cast's ONNX dtype enum becomes fusor's dtype name") {
    OnnxBuilder b(13);
    b.input("x", kFloat, {3});
    attr(b.node("Cast", {"x"}, {"h"}), "to", int64_t(kFloat16));
    attr(b.node("Cast", {"h"}, {"i"}), "to", int64_t(kInt32));
    b.output("i", kInt32);
    Graph g = load(b);
    CHECK(attr_string(g.nodes()[0], "to") == "f16");
    CHECK(attr_string(g.nodes()[1], "to") == "i32");
    Tensor i = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {3}, {1.5, -2.25, 7})}}).at("i");
    CHECK(i.dtype() == DType::I32);
    CHECK(i.at(2) == 7);
  }

  TEST_CASE("initializer dtypes and encodings: raw_data and typed fields") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.initializer(float_tensor("raw", {2}, {1.5f, -2.f}, /*raw=*/true));
    onnx::TensorProto h;  // f16 bits in int32_data: 1.0 = 0x3c00, -2.0 = 0xc000
    h.set_name("half");
    h.set_data_type(kFloat16);
    h.add_dims(2);
    h.add_int32_data(0x3c00);
    h.add_int32_data(0xc000);
    b.initializer(h);
    onnx::TensorProto bf;  // bf16 raw: 1.0 = 0x3f80
    bf.set_name("brain");
    bf.set_data_type(kBfloat16);
    bf.add_dims(1);
    bf.set_raw_data(std::string("\x80\x3f", 2));
    b.initializer(bf);
    onnx::TensorProto i32;
    i32.set_name("i32");
    i32.set_data_type(kInt32);
    i32.add_dims(2);
    i32.add_int32_data(-5);
    i32.add_int32_data(6);
    b.initializer(i32);
    onnx::TensorProto flags;
    flags.set_name("flags");
    flags.set_data_type(kBool);
    flags.add_dims(2);
    flags.set_raw_data(std::string("\x00\x07", 2));  // any non-zero byte is true
    b.initializer(flags);
    b.node("Add", {"x", "raw"}, {"a"});
    b.node("Identity", {"half"}, {"half_out"});
    b.node("Identity", {"brain"}, {"brain_out"});
    b.node("Identity", {"i32"}, {"i32_out"});
    b.node("Where", {"flags", "a", "x"}, {"w"});
    for (const char* o : {"a", "half_out", "brain_out", "i32_out", "w"}) b.output(o);
    Graph g = load(b);
    CHECK(g.constant_data(g.find_value("half"))->dtype() == DType::F16);
    CHECK(g.constant_data(g.find_value("brain"))->dtype() == DType::BF16);
    TensorMap out = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2}, {1, 1})}});
    CHECK(out.at("a").at(0) == 2.5);
    CHECK(out.at("half_out").at(0) == 1.0);
    CHECK(out.at("half_out").at(1) == -2.0);
    CHECK(out.at("brain_out").at(0) == 1.0);
    CHECK(out.at("i32_out").at(0) == -5);
    CHECK(out.at("w").at(0) == 1);    // flags[0] false: x
    CHECK(out.at("w").at(1) == -1);   // flags[1] true: a = 1 - 2
  }

  TEST_CASE("integer inputs: an embedding lookup of input_ids") {
    OnnxBuilder b(17);
    b.input("input_ids", kInt64, {"batch", "seq"});
    b.initializer("table", {4, 2}, {0, 0, 1, 1, 2, 2, 3, 3});
    b.node("Gather", {"table", "input_ids"}, {"emb"});
    b.output("emb");
    Graph g = load(b);
    Tensor emb = run_on(BackendKind::Static, g, {{"input_ids", make(DType::I64, {1, 3}, {3, 0, 2})}}).at("emb");
    CHECK(emb.shape() == Shape{1, 3, 2});
    CHECK(emb.at(0) == 3);
    CHECK(emb.at(5) == 2);
  }

  TEST_CASE("names outside fusor's characters are replaced and reported") {
    OnnxBuilder b(17);
    b.input("input 0", kFloat, {2});
    b.node("Relu", {"input 0"}, {"out[0]"}, "relu node");
    b.output("out[0]");
    std::vector<std::string> warnings;
    Graph g = load(b, &warnings);
    CHECK(g.value(g.inputs()[0]).name == "input_0");
    CHECK(g.value(g.outputs()[0]).name == "out_0_");
    CHECK(g.nodes()[0].name == "relu_node");
    REQUIRE(warnings.size() == 2);
    CHECK(has(warnings[0], "'input 0' is named 'input_0'"));
    CHECK(has(warnings[1], "'out[0]' is named 'out_0_'"));
  }

  TEST_CASE("nodes out of topological order are sorted and dead nodes dropped") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.node("Neg", {"r"}, {"y"});
    b.node("Relu", {"x"}, {"r"});
    b.node("Exp", {"x"}, {"unused"});  // feeds no output
    b.output("y");
    Graph g = load(b);
    REQUIRE(g.nodes().size() == 2);
    CHECK(g.nodes()[0].op == OpKind::Relu);
    CHECK(g.nodes()[1].op == OpKind::Neg);
  }

  TEST_CASE("empty names are omitted optional inputs and outputs") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2, 3});
    b.initializer("w", {3, 3}, std::vector<float>(9, 1.f));
    b.node("Gemm", {"x", "w", ""}, {"y"});  // no C
    b.node("LayerNormalization", {"y", "g", ""}, {"z", "", ""});
    b.initializer("g", {3}, {1.f, 1.f, 1.f});
    b.output("z");
    Graph g = load(b);
    CHECK(g.nodes()[0].inputs.size() == 2);  // trailing omitted inputs are dropped
    CHECK(g.nodes()[1].inputs.size() == 2);
    Tensor z = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}}).at("z");
    CHECK(z.shape() == Shape{2, 3});
    CHECK(std::fabs(z.at(0)) < 1e-3);  // every column of x@ones is the same: normalized to 0
  }

  TEST_CASE("LayerNormalization's Mean and InvStdDev outputs are computed beside it") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2, 2, 2});
    b.initializer("g", {2, 2}, {1, 1, 1, 1});
    auto& ln = b.node("LayerNormalization", {"x", "g"}, {"y", "mean", "inv"}, "ln");
    attr(ln, "axis", int64_t(1));
    attr(ln, "epsilon", 0.25f);
    b.output("y");
    b.output("mean");
    b.output("inv");
    Graph g = load(b);
    TensorMap out = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2, 2, 2}, {1, 2, 3, 4, 0, 0, 0, 8})}});
    // Row 0: mean 2.5, variance 1.25 -> 1/sqrt(1.5); row 1: mean 2, variance 12 -> 1/sqrt(12.25)
    check_close(out.at("mean"), make(DType::F32, {2, 1, 1}, {2.5, 2}));
    check_close(out.at("inv"), make(DType::F32, {2, 1, 1}, {1 / std::sqrt(1.5), 1 / 3.5}));
    CHECK(out.at("y").at(0) == doctest::Approx(-1.5 / std::sqrt(1.5)));
  }

  TEST_CASE("opsets 19 to kOnnxMaxOpset are read: the dynamo exporter's 20, Cast's saturate and round_mode") {
    for (int64_t opset : {int64_t(19), int64_t(20), int64_t(21), kOnnxMaxOpset}) {
      CAPTURE(opset);
      OnnxBuilder b(opset);
      b.input("x", kFloat, {2, 3});
      onnx::NodeProto& c = b.node("Cast", {"x"}, {"c"}, "cast");
      attr(c, "to", int64_t(kFloat));
      attr(c, "saturate", int64_t(1));
      if (opset >= 24) attr(c, "round_mode", "up");
      b.node("Gelu", {"c"}, {"y"}, "gelu");
      b.output("y");
      Graph g = load(b);
      Tensor x = make(DType::F32, {2, 3}, {-2, -1, 0, 0.5, 1, 3});
      std::vector<double> want;
      for (double v : {-2.0, -1.0, 0.0, 0.5, 1.0, 3.0}) want.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
      FUSOR_CHECK_CLOSE(run_on(BackendKind::Static, g, {{"x", x}}).at("y"), make(DType::F32, {2, 3}, want), 1e-5, 1e-6);
    }
  }

  TEST_CASE("older opsets are read where the operator did not change") {
    OnnxBuilder b(11);
    b.input("x", kFloat, {1, 1, 3, 3});
    b.initializer("w", {1, 1, 2, 2}, {1.f, 1.f, 1.f, 1.f});
    b.node("Conv", {"x", "w"}, {"c"});
    attr(b.node("Unsqueeze", {"c"}, {"u"}), "axes", std::vector<int64_t>{0});  // opset 11: axes attribute
    b.output("u");
    Graph g = load(b);
    Tensor u = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}}).at("u");
    CHECK(u.shape() == Shape{1, 1, 1, 2, 2});
    CHECK(u.at(0) == 1 + 2 + 4 + 5);
  }

  TEST_CASE("constant_inputs freeze a graph input") {
    OnnxBuilder b(14);
    b.input("x", kFloat, {2, 3});
    b.input("shape", kInt64, {2});
    b.node("Reshape", {"x", "shape"}, {"y"});
    b.output("y");
    OnnxOptions o;
    o.constant_inputs["shape"] = make(DType::I64, {2}, {3, 2});
    Graph g = load_onnx_bytes(b.bytes(), o);
    CHECK(g.inputs().size() == 1);
    Tensor y = run_on(BackendKind::Static, g, {{"x", make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}}).at("y");
    CHECK(y.shape() == Shape{3, 2});
    o.constant_inputs["shape"] = make(DType::I32, {2}, {3, 2});
    CHECK(error_of([&] { load_onnx_bytes(b.bytes(), o); }) == ErrorCode::DTypeMismatch);
    o.constant_inputs["shape"] = make(DType::I64, {3}, {3, 2, 1});
    CHECK(error_of([&] { load_onnx_bytes(b.bytes(), o); }) == ErrorCode::ShapeMismatch);
    o.constant_inputs.clear();
    o.constant_inputs["nope"] = make(DType::I64, {2}, {3, 2});
    CHECK(error_of([&] { load_onnx_bytes(b.bytes(), o); }) == ErrorCode::InvalidArgument);
  }

  TEST_CASE("load_onnx reads a file and names it in messages") {
    TempDir dir("onnx-load");
    mlp_model().save(dir.file("mlp.onnx"));
    Graph g = load_onnx(dir.file("mlp.onnx"));
    CHECK(g.nodes().size() == 4);
    OnnxBuilder bad = mlp_model();
    bad.graph().mutable_node(0)->set_op_type("Frobnicate");
    bad.save(dir.file("bad.onnx"));
    std::string msg;
    CHECK(error_of([&] { load_onnx(dir.file("bad.onnx")); }, &msg) == ErrorCode::Unsupported);
    CHECK(has(msg, dir.file("bad.onnx") + ": "));
  }

  TEST_CASE("is_onnx_file: by extension or by the first byte of a ModelProto") {
    TempDir dir("onnx-detect");
    mlp_model().save(dir.file("model.bin"));
    std::ofstream(dir.file("graph.txt")) << "graph g\ninput x: f32[2]\n";
    CHECK(is_onnx_file(dir.file("model.bin")));
    CHECK(is_onnx_file(dir.file("any.onnx")));  // by name, even before it exists
    CHECK_FALSE(is_onnx_file(dir.file("graph.txt")));
    CHECK_FALSE(is_onnx_file(dir.file("missing")));
    CHECK_FALSE(is_onnx_file(dir.path().string()));
  }

  TEST_CASE("read_onnx_tensor reads a TensorProto file") {
    TempDir dir("onnx-tensor");
    std::ofstream(dir.file("t.pb"), std::ios::binary) << float_tensor("input_0", {2, 2}, {1, 2, 3, 4}).SerializeAsString();
    std::string name;
    Tensor t = read_onnx_tensor(dir.file("t.pb"), &name);
    CHECK(name == "input_0");
    CHECK(t.shape() == Shape{2, 2});
    CHECK(t.at(3) == 4);
  }

  TEST_CASE("onnx_operators lists every operator of ir/ops.def, those the loader composes and those it resolves") {
    std::vector<OnnxOperator> ops = onnx_operators();
    const char* composed[] = {"LogSoftmax", "Softplus", "Mish", "Softsign", "Elu", "Selu", "Celu", "ThresholdedRelu",
                              "PRelu", "Shrink", "Sum", "Mean", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                              "ReduceLogSum", "ReduceLogSumExp", "InstanceNormalization", "Resize", "ConvTranspose",
                              "GlobalMaxPool", "Sign", "Xor", "Mod", "Tan", "Sinh", "Cosh", "Asinh", "Acosh",
                              "Atanh", "Atan", "Asin", "Acos", "CastLike", "Size", "ArgMin", "DepthToSpace",
                              "SpaceToDepth", "OneHot", "EyeLike", "Hardmax", "MeanVarianceNormalization", "LRN",
                              "Upsample", "Einsum", "Scatter", "ReverseSequence", "GroupNormalization",
                              "LpNormalization", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "Swish",
                              "RMSNormalization"};
    CHECK(ops.size() == size_t(kNumOpKinds) + 3 + std::size(composed));
    for (const char* c : composed) {
      auto it = std::find_if(ops.begin(), ops.end(), [&](const OnnxOperator& o) { return o.op_type == c; });
      REQUIRE_MESSAGE(it != ops.end(), c);
      CHECK(it->note.rfind("as ", 0) == 0);
    }
    for (const char* form : {"Conv", "MaxPool", "AveragePool"}) {
      auto it = std::find_if(ops.begin(), ops.end(), [&](const OnnxOperator& o) { return o.op_type == form; });
      REQUIRE(it != ops.end());
      CHECK(it->note.find("1-D") != std::string::npos);
    }
    for (int k = 0; k < kNumOpKinds; ++k) {
      std::string name(op_name(OpKind(k)));
      auto it = std::find_if(ops.begin(), ops.end(), [&](const OnnxOperator& o) { return o.op_type == name; });
      CHECK_MESSAGE(it != ops.end(), name);
    }
    for (const char* own : {"Constant", "Identity", "Dropout"}) {
      auto it = std::find_if(ops.begin(), ops.end(), [&](const OnnxOperator& o) { return o.op_type == own; });
      REQUIRE(it != ops.end());
      CHECK(!it->note.empty());
    }
    CHECK(std::is_sorted(ops.begin(), ops.end(),
                         [](const OnnxOperator& a, const OnnxOperator& b) { return a.op_type < b.op_type; }));
  }

  TEST_CASE("onnx_operators_used lists a model's operators without converting it") {
    TempDir dir("onnx-used");
    OnnxBuilder b = mlp_model();
    b.node("Custom", {"y"}, {"z"}, "c", "com.example");
    b.save(dir.file("m.onnx"));
    std::vector<OnnxOperatorUse> used = onnx_operators_used(dir.file("m.onnx"));
    REQUIRE(used.size() == 4);
    CHECK(used[0].op_type == "MatMul");
    CHECK(used[0].nodes == 2);
    CHECK(used[3].domain == "com.example");
  }
}
