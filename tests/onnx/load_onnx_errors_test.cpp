// One test per kind of bad ONNX model: each must be a fusor::Error of the right code whose
// message names the file, the node or tensor, and the reason; never a crash or a hang.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "onnx/load_onnx.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

// Loading `bytes` (as "bad.onnx") must fail with `code` and a message holding every part.
void check_error(const std::string& bytes, ErrorCode code, const std::vector<std::string>& parts) {
  std::string msg;
  OnnxOptions o;
  o.source = "bad.onnx";
  o.warn = [](const std::string&) {};
  ErrorCode got = error_of([&] { load_onnx_bytes(bytes, o); }, &msg);
  INFO("message: " << msg);
  CHECK(got == code);
  CHECK(msg.find("bad.onnx: ") != std::string::npos);
  for (const std::string& p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "missing: " << p);
}

void check_error(const OnnxBuilder& b, ErrorCode code, const std::vector<std::string>& parts) {
  check_error(b.bytes(), code, parts);
}

// x -> Relu -> y, a valid model to break.
OnnxBuilder relu_model(int64_t opset = 17) {
  OnnxBuilder b(opset);
  b.input("x", kFloat, {2});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y");
  return b;
}

}  // namespace

TEST_SUITE("onnx/load_onnx errors") {
  TEST_CASE("garbage is not a model") {
    check_error(std::string("\xff\xff\xff\xff garbage \x01\x02", 16), ErrorCode::ParseError, {"not an ONNX model"});
    check_error("graph g\ninput x: f32[2]\n", ErrorCode::ParseError, {"not an ONNX model"});
  }

  TEST_CASE("an empty file is not a model") { check_error("", ErrorCode::ParseError, {"empty"}); }

  TEST_CASE("a truncated model") {
    OnnxBuilder b = relu_model();
    b.initializer("big", {64}, std::vector<float>(64, 1.f));
    std::string bytes = b.bytes();
    for (size_t cut : {size_t(1), bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
      INFO("cut at " << cut << " of " << bytes.size());
      std::string msg;
      OnnxOptions o{.source = "bad.onnx"};
      ErrorCode code = error_of([&] { load_onnx_bytes(bytes.substr(0, cut), o); }, &msg);
      CHECK((code == ErrorCode::ParseError || code == ErrorCode::InvalidGraph));
      CHECK(msg.find("bad.onnx") != std::string::npos);
    }
  }

  TEST_CASE("another protobuf message is not a model") {
    check_error(float_tensor("t", {4}, {1, 2, 3, 4}).SerializeAsString(), ErrorCode::ParseError, {"not an ONNX model"});
    onnx::TensorProto named;  // a TensorProto whose fields happen to parse as a ModelProto's
    named.add_dims(3);
    check_error(named.SerializeAsString(), ErrorCode::ParseError, {"not an ONNX model", "no graph"});
    onnx::GraphProto g;
    g.set_name("just a graph");
    check_error(g.SerializeAsString(), ErrorCode::ParseError, {"not an ONNX model"});
  }

  TEST_CASE("unsupported operators are named all at once with their opsets and first nodes") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.node("Frobnicate", {"x"}, {"a"}, "frob_1");
    b.node("Relu", {"a"}, {"b"});
    b.node("Frobnicate", {"b"}, {"c"}, "frob_2");
    b.node("Quux", {"c"}, {"d"}, "quux");
    b.node("FusedGelu", {"d"}, {"y"}, "ms_gelu", "com.microsoft");
    b.model().add_opset_import()->set_domain("com.microsoft");
    b.model().mutable_opset_import(1)->set_version(1);
    b.output("y");
    check_error(b, ErrorCode::Unsupported,
                {"3 operators are not supported", "Frobnicate (opset 17", "2 nodes, first 'frob_1'", "Quux (opset 17",
                 "node 'quux'", "FusedGelu (domain com.microsoft version 1", "node 'ms_gelu'"});
  }

  TEST_CASE("a model-local function is named as one") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.node("MyGelu", {"x"}, {"y"}, "call", "custom.fns");
    b.output("y");
    auto* f = b.model().add_functions();
    f->set_name("MyGelu");
    f->set_domain("custom.fns");
    check_error(b, ErrorCode::Unsupported, {"MyGelu (a function the model defines in domain custom.fns", "node 'call'"});
  }

  TEST_CASE("an opset above kOnnxMaxOpset is refused") {
    check_error(relu_model(kOnnxMaxOpset + 1), ErrorCode::Unsupported,
                {"opset " + std::to_string(kOnnxMaxOpset + 1), "opsets 13 to " + std::to_string(kOnnxMaxOpset)});
  }

  TEST_CASE("an operator older than fusor implements is refused") {
    OnnxBuilder b(11);
    b.input("x", kFloat, {2, 3});
    b.node("Softmax", {"x"}, {"y"}, "sm");
    b.output("y");
    check_error(b, ErrorCode::Unsupported, {"Softmax (opset 11", "from opset 13", "node 'sm'"});
  }

  TEST_CASE("a model without a default-domain opset") {
    OnnxBuilder b(-1);
    b.input("x", kFloat, {2});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    check_error(b, ErrorCode::ParseError, {"no default-domain opset"});
  }

  TEST_CASE("an unknown or unsupported dtype names the tensor and the dtype") {
    OnnxBuilder b = relu_model();
    onnx::TensorProto d;
    d.set_name("weights64");
    d.set_data_type(kDouble);
    d.add_dims(2);
    d.add_double_data(1.0);
    d.add_double_data(2.0);
    b.initializer(d);
    b.node("Add", {"y", "weights64"}, {"z"});
    b.graph().mutable_output(0)->set_name("z");
    check_error(b, ErrorCode::Unsupported, {"initializer 'weights64'", "DOUBLE"});

    b.graph().mutable_initializer(0)->set_data_type(99);
    check_error(b, ErrorCode::Unsupported, {"initializer 'weights64'", "unknown type 99"});
    b.graph().mutable_initializer(0)->set_data_type(0);
    check_error(b, ErrorCode::ParseError, {"initializer 'weights64'", "no data_type"});

    OnnxBuilder u(17);
    u.input("pixels", kUint8, {4});
    u.node("Relu", {"pixels"}, {"y"});
    u.output("y");
    check_error(u, ErrorCode::Unsupported, {"graph input 'pixels'", "UINT8"});
  }

  TEST_CASE("data that does not fit the shape") {
    auto with_weight = [](const onnx::TensorProto& w) {
      OnnxBuilder b = relu_model();
      b.initializer(w);
      b.node("Add", {"y", w.name()}, {"z"});
      b.graph().mutable_output(0)->set_name("z");
      return b;
    };
    onnx::TensorProto raw = float_tensor("w", {2}, {1, 2}, true);
    raw.mutable_raw_data()->resize(7);
    check_error(with_weight(raw), ErrorCode::ParseError, {"initializer 'w'", "raw_data has 7 bytes", "needs 8"});
    check_error(with_weight(float_tensor("w", {3}, {1, 2})), ErrorCode::ParseError,
                {"initializer 'w'", "float_data has 2 values", "3 elements"});
    onnx::TensorProto wrong = float_tensor("w", {2}, {});
    wrong.add_int64_data(1);
    wrong.add_int64_data(2);
    check_error(with_weight(wrong), ErrorCode::DTypeMismatch, {"initializer 'w'", "int64_data"});
    check_error(with_weight(float_tensor("w", {-2}, {})), ErrorCode::ParseError, {"initializer 'w'", "negative"});
    onnx::TensorProto huge = float_tensor("w", {1 << 30, 1 << 30, 1 << 30}, {1});
    check_error(with_weight(huge), ErrorCode::ParseError, {"initializer 'w'", "more than"});
    onnx::TensorProto half = float_tensor("w", {1}, {});
    half.set_data_type(kFloat16);
    half.add_int32_data(70000);
    check_error(with_weight(half), ErrorCode::ParseError, {"initializer 'w'", "16 bits"});
  }

  TEST_CASE("a cycle names a node on it") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.node("Add", {"x", "c"}, {"a"}, "first");
    b.node("Relu", {"a"}, {"b"}, "second");
    b.node("Neg", {"b"}, {"c"}, "third");
    b.output("c");
    check_error(b, ErrorCode::InvalidGraph, {"cycle", "'first'", "'second'", "'third'"});
  }

  TEST_CASE("a value defined twice") {
    OnnxBuilder b = relu_model();
    b.node("Neg", {"x"}, {"y"}, "again");
    check_error(b, ErrorCode::InvalidGraph, {"node 'again'", "'y' is also produced by node 'relu'"});

    OnnxBuilder i = relu_model();
    i.initializer("w", {2}, {1, 2});
    i.initializer("w", {2}, {3, 4});
    check_error(i, ErrorCode::InvalidGraph, {"two initializers are named 'w'"});

    OnnxBuilder in = relu_model();
    in.input("x", kFloat, {2});
    check_error(in, ErrorCode::InvalidGraph, {"graph input 'x' is declared twice"});

    OnnxBuilder o = relu_model();
    o.node("Neg", {"y"}, {"x"}, "shadow");
    check_error(o, ErrorCode::InvalidGraph, {"node 'shadow'", "'x' is also a graph input"});

    OnnxBuilder out = relu_model();
    out.output("y");
    check_error(out, ErrorCode::InvalidGraph, {"graph output 'y' is listed twice"});
  }

  TEST_CASE("a dangling name") {
    OnnxBuilder b = relu_model();
    b.node("Add", {"y", "nowhere"}, {"z"}, "adder");
    b.graph().mutable_output(0)->set_name("z");
    check_error(b, ErrorCode::InvalidGraph, {"node 'adder'", "input 1 'nowhere' is not defined"});

    OnnxBuilder o = relu_model();
    o.output("ghost");
    check_error(o, ErrorCode::InvalidGraph, {"graph output 'ghost' is not produced"});

    OnnxBuilder none = relu_model();
    none.graph().clear_output();
    check_error(none, ErrorCode::InvalidGraph, {"no outputs"});
  }

  TEST_CASE("attributes of the wrong type or unknown to fusor") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2, 3});
    attr(b.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1.5f);
    b.output("y");
    check_error(b, ErrorCode::InvalidGraph, {"node 'sm'", "attribute 'axis' is FLOAT", "takes int"});

    OnnxBuilder u(17);
    u.input("x", kFloat, {2, 3});
    attr(u.node("Softmax", {"x"}, {"y"}, "sm"), "temperature", 2.0f);
    u.output("y");
    check_error(u, ErrorCode::Unsupported, {"node 'sm'", "attribute 'temperature' is not supported"});
  }

  TEST_CASE("a training-mode Dropout and used outputs fusor does not produce") {
    OnnxBuilder b(13);
    b.input("x", kFloat, {2});
    b.initializer("ratio", {}, {0.1f});
    onnx::TensorProto mode;
    mode.set_name("mode");
    mode.set_data_type(kBool);
    mode.add_int32_data(1);
    b.initializer(mode);
    b.node("Dropout", {"x", "ratio", "mode"}, {"y"}, "drop");
    b.output("y");
    check_error(b, ErrorCode::Unsupported, {"node 'drop'", "training_mode is true"});

    OnnxBuilder ln(17);
    ln.input("x", kFloat, {2, 3});
    ln.initializer("g", {3}, {1, 1, 1});
    ln.node("Relu", {"x"}, {"r"});  // of unknown rank here
    ln.node("LayerNormalization", {"r", "g"}, {"y", "mean"}, "ln");
    ln.output("y");
    ln.output("mean");
    check_error(ln, ErrorCode::Unsupported, {"node 'ln'", "Mean or InvStdDev output is used"});

    OnnxBuilder pool(17);
    pool.input("x", kFloat, {1, 1, 2, 2});
    attr(pool.node("MaxPool", {"x"}, {"y", "indices"}, "mp"), "kernel_shape", std::vector<int64_t>{2, 2});
    pool.output("y");
    pool.output("indices", kInt64);
    check_error(pool, ErrorCode::Unsupported, {"node 'mp'", "output 1 'indices' is used"});
  }

  TEST_CASE("a node without its required inputs") {
    // (The fuzzer's first finding: LayerNormalization without inputs was read past its end.)
    for (const char* op : {"LayerNormalization", "Pow", "Relu", "Dropout", "Identity"}) {
      INFO(op);
      OnnxBuilder b(17);
      b.input("x", kFloat, {2});
      const bool ln = std::string(op) == "LayerNormalization";
      b.node(op, {}, ln ? std::vector<std::string>{"y", "mean"} : std::vector<std::string>{"y"}, "empty");
      b.output("y");
      if (ln) b.output("mean");
      check_error(b, ErrorCode::InvalidGraph, {"'empty'"});
      OnnxBuilder omitted(17);
      omitted.input("x", kFloat, {2});
      omitted.node(op, {"", "x"}, {"y"}, "omitted");
      omitted.output("y");
      check_error(omitted, ErrorCode::InvalidGraph, {"'omitted'"});
    }
  }

  TEST_CASE("graph inputs fusor cannot take") {
    OnnxBuilder b(17);
    b.graph().add_input()->set_name("untyped");
    b.node("Relu", {"untyped"}, {"y"});
    b.output("y");
    check_error(b, ErrorCode::InvalidGraph, {"graph input 'untyped' has no type"});

    OnnxBuilder r(17);
    auto* in = r.graph().add_input();
    in->set_name("rankless");
    in->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
    r.node("Relu", {"rankless"}, {"y"});
    r.output("y");
    check_error(r, ErrorCode::Unsupported, {"graph input 'rankless' has no shape"});

    OnnxBuilder s(17);
    auto* seq = s.graph().add_input();
    seq->set_name("items");
    seq->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kFloat);
    s.node("Relu", {"items"}, {"y"});
    s.output("y");
    check_error(s, ErrorCode::Unsupported, {"graph input 'items' is not a tensor"});
  }

  TEST_CASE("a TENSOR attribute without its tensor") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    add_attr(b.node("Constant", {}, {"c"}, "const"), "value", onnx::AttributeProto::TENSOR);
    b.node("Add", {"x", "c"}, {"y"});
    b.output("y");
    check_error(b, ErrorCode::ParseError, {"node 'const'", "attribute 'value' is a TENSOR without a tensor"});
  }

  TEST_CASE("a Cast to a dtype fusor lacks") {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    attr(b.node("Cast", {"x"}, {"y"}, "to_double"), "to", int64_t(kDouble));
    b.output("y");
    check_error(b, ErrorCode::Unsupported, {"node 'to_double'", "DOUBLE"});
  }

  TEST_CASE("the model file itself: missing, a folder, a FIFO") {
    TempDir dir("onnx-badfile");
    std::string msg;
    CHECK(error_of([&] { load_onnx(dir.file("missing.onnx")); }, &msg) == ErrorCode::Io);
    CHECK(msg.find("missing.onnx") != std::string::npos);
    CHECK(error_of([&] { load_onnx(dir.path().string()); }, &msg) == ErrorCode::Io);
    CHECK(msg.find("a folder") != std::string::npos);
    REQUIRE(::mkfifo(dir.file("fifo.onnx").c_str(), 0600) == 0);
    CHECK(error_of([&] { load_onnx(dir.file("fifo.onnx")); }, &msg) == ErrorCode::Io);  // must not block
    CHECK(msg.find("a FIFO") != std::string::npos);
    CHECK(error_of([&] { read_onnx_tensor(dir.file("fifo.onnx")); }) == ErrorCode::Io);
    CHECK_FALSE(is_onnx_file(dir.file("fifo")));
  }
}
