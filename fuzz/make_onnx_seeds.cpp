// Writes the seed corpus of onnx_loader_fuzz (fuzz/corpus/onnx_loader/): small models that
// reach each part of the loader (opset forms, constants, names, dtypes, external data
// references, unsupported operators). Built with FUSOR_FUZZ=ON;
//   build-fuzz/fuzz/make_onnx_seeds fuzz/corpus/onnx_loader
#include <cstdio>
#include <string>

#include "tests/onnx/model_builder.h"

using namespace fusor::test;

namespace {

std::string dir;
int written = 0;

void save(const std::string& name, const OnnxBuilder& b) {
  b.save(dir + "/" + name + ".onnx");
  ++written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_onnx_seeds DIR\n");
    return 2;
  }
  dir = argv[1];
  {
    OnnxBuilder b(17);
    b.input("x", kFloat, {"batch", 3});
    b.initializer("w", {3, 2}, {0.5f, -1.f, 1.f, 0.25f, -0.5f, 2.f});
    b.initializer(float_tensor("b", {2}, {0.1f, -0.2f}, true));
    b.node("MatMul", {"x", "w"}, {"/fc/MatMul_output_0"}, "/fc/MatMul");
    b.node("Add", {"/fc/MatMul_output_0", "b"}, {"a"}, "/fc/Add");
    b.node("Relu", {"a"}, {"r"});
    b.node("Identity", {"r"}, {"y"});
    b.output("y");
    save("mlp", b);
  }
  {
    OnnxBuilder b(13);
    b.input("x", kFloat, {2, ""});
    attr(b.node("Constant", {}, {"c1"}), "value", float_tensor("", {1}, {2.f}));
    attr(b.node("Constant", {}, {"c2"}), "value_float", 0.5f);
    attr(b.node("Constant", {}, {"c3"}), "value_floats", std::vector<float>{1.f, 2.f});
    attr(b.node("Constant", {}, {"c4"}), "value_int", int64_t(1));
    attr(b.node("Constant", {}, {"c5"}), "value_ints", std::vector<int64_t>{0});
    b.node("Mul", {"x", "c1"}, {"m"});
    b.node("Add", {"m", "c2"}, {"s"});
    b.node("Unsqueeze", {"s", "c5"}, {"u"});
    b.node("Squeeze", {"u", "c5"}, {"q"});
    b.initializer("ratio", {}, {0.1f});
    b.node("Dropout", {"q", "ratio"}, {"d", "mask"});
    b.output("d");
    save("constants", b);
  }
  {
    OnnxBuilder b(9);
    b.input("x", kFloat, {2, 3, 4});
    auto& n = b.node("Slice", {"x"}, {"s"});
    attr(n, "starts", std::vector<int64_t>{1});
    attr(n, "ends", std::vector<int64_t>{3});
    attr(n, "axes", std::vector<int64_t>{1});
    auto& r = b.node("ReduceSum", {"s"}, {"r"});
    attr(r, "axes", std::vector<int64_t>{-1});
    attr(r, "keepdims", int64_t(0));
    attr(b.node("Cast", {"r"}, {"c"}), "to", int64_t(kFloat16));
    b.output("c", kFloat16);
    save("opset9_forms", b);
  }
  {
    OnnxBuilder b(18);
    b.input("input_ids", kInt64, {"batch", "sequence"});
    b.input("attention_mask", kInt64, {"batch", "sequence"});
    b.initializer("table", {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
    b.initializer_i64("axes", {1}, {1});
    b.node("Gather", {"table", "input_ids"}, {"emb"});
    b.node("ReduceMean", {"emb", "axes"}, {"mean"});
    attr(b.node("Cast", {"attention_mask"}, {"maskf"}), "to", int64_t(kFloat));
    b.node("Unsqueeze", {"maskf", "axes"}, {"m2"});
    b.node("Pow", {"m2", "axes"}, {"p"});
    b.node("Where", {"cond", "p", "mean"}, {"w"});
    onnx::TensorProto cond;
    cond.set_name("cond");
    cond.set_data_type(kBool);
    cond.add_dims(1);
    cond.set_raw_data(std::string("\x01", 1));
    b.initializer(cond);
    b.output("w");
    b.output("mean");
    save("opset18_ids", b);
  }
  {
    OnnxBuilder b(17);
    b.input("x", kFloat, {1, 3});
    onnx::TensorProto h;
    h.set_name("g");
    h.set_data_type(kFloat16);
    h.add_dims(3);
    for (int v : {0x3c00, 0x3c00, 0x3c00}) h.add_int32_data(v);
    b.initializer(h);
    attr(b.node("Cast", {"x"}, {"xh"}), "to", int64_t(kFloat16));
    auto& ln = b.node("LayerNormalization", {"xh", "g", ""}, {"y", "", ""}, "ln");
    attr(ln, "epsilon", 1e-5f);
    attr(ln, "axis", int64_t(-1));
    b.node("Softmax", {"y"}, {"sm"});
    b.output("sm", kFloat16);
    save("layernorm_f16", b);
  }
  {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(kFloat);
    t.add_dims(2);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t.add_external_data();
    kv->set_key("location");
    kv->set_value("weights.bin");
    kv = t.add_external_data();
    kv->set_key("offset");
    kv->set_value("0");
    b.initializer(t);
    b.node("Add", {"x", "w"}, {"y"});
    b.output("y");
    save("external", b);
  }
  {
    OnnxBuilder b(17);
    b.input("x", kFloat, {2});
    b.node("NonZero", {"x"}, {"a"}, "nz");
    b.node("Relu", {"a"}, {"b"});
    b.node("Gelu", {"b"}, {"y"}, "g", "com.microsoft");
    b.output("y");
    save("unsupported", b);
  }
  {
    OnnxBuilder b(11);
    b.input("x", kFloat, {1, 1, 4, 4});
    b.input("w", kFloat, {1, 1, 3, 3});
    b.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
    auto& c = b.node("Conv", {"x", "w"}, {"c"});
    attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
    attr(c, "kernel_shape", std::vector<int64_t>{3, 3});
    auto& p = b.node("MaxPool", {"c"}, {"p", ""});
    attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
    attr(p, "strides", std::vector<int64_t>{2, 2});
    b.node("GlobalAveragePool", {"p"}, {"g"});
    attr(b.node("Flatten", {"g"}, {"f"}), "axis", int64_t(1));
    auto& gemm = b.node("Gemm", {"f", "gw", "gb"}, {"y"});
    attr(gemm, "transB", int64_t(1));
    b.initializer("gw", {2, 1}, {1.f, 2.f});
    b.initializer("gb", {2}, {0.f, 1.f});
    b.output("y");
    save("opset11_conv", b);
  }
  {
    OnnxBuilder b(14);
    b.input("a b", kFloat, {"s 1", 2});
    b.initializer_i64("shape", {2}, {-1, 0});
    b.node("Reshape", {"a b", "shape"}, {"r[0]"}, "re shape");
    b.node("Transpose", {"r[0]"}, {"t"});
    attr(b.node("Concat", {"t", "t"}, {"c"}), "axis", int64_t(0));
    b.node("Shape", {"c"}, {"s"});
    b.node("Identity", {"c"}, {"out 1"});
    b.output("out 1");
    b.output("s", kInt64);
    save("names", b);
  }
  {
    // The operand forms of operators with inputs-or-attributes (Split, Clip, Pad, CumSum,
    // Trilu, ConstantOfShape) at opsets 11 and 18.
    for (int64_t opset : {11, 18}) {
      OnnxBuilder b(opset);
      b.input("x", kFloat, {2, 6});
      b.initializer("lo", {}, {0.f});
      b.initializer("hi", {}, {6.f});
      b.initializer_i64("pads", {4}, {0, 1, 1, 0});
      b.initializer_i64("split", {2}, {2, 4});
      b.initializer_i64("axis", {}, {1});
      if (opset == 11) {
        auto& c = b.node("Clip", {"x"}, {"c"});
        attr(c, "min", 0.f);
        attr(c, "max", 6.f);
        auto& s = b.node("Split", {"c"}, {"p", "q"});
        attr(s, "split", std::vector<int64_t>{2, 4});
        attr(s, "axis", int64_t(1));
      } else {
        b.node("Clip", {"x", "lo", "hi"}, {"c"});
        auto& s = b.node("Split", {"c"}, {"p", "q", "r"});
        attr(s, "num_outputs", int64_t(3));
        attr(s, "axis", int64_t(1));
      }
      b.node("Pad", {"p", "pads"}, {"padded"});
      b.node("CumSum", {"q", "axis"}, {"cs"});
      if (opset >= 14) b.node("Trilu", {"cs", "axis"}, {"tri"});
      else b.node("Relu", {"cs"}, {"tri"});
      b.node("Shape", {"tri"}, {"shape"});
      attr(b.node("ConstantOfShape", {"shape"}, {"ones"}), "value", float_tensor("", {1}, {1.f}));
      b.node("Add", {"tri", "ones"}, {"y"});
      b.output("padded");
      b.output("y");
      save("forms_opset" + std::to_string(opset), b);
    }
  }
  std::printf("wrote %d seeds to %s\n", written, dir.c_str());
  return 0;
}
