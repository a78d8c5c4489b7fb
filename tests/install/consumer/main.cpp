// Runs a two-op graph through an installed fusor; exits 0 when the answer is right.
#include <cstdio>

#include <ir/builder.h>
#include <jit/engine.h>
#include <onnx/load_onnx.h>

int main() {
  fusor::GraphBuilder b("consumer");
  fusor::ValueId x = b.input("x", fusor::DType::F32, {3});
  b.output(b.op(fusor::OpKind::Relu, {b.op(fusor::OpKind::Neg, {x})}, {}, "y"));
  fusor::Engine engine;
  fusor::Tensor in = fusor::Tensor::from_doubles(fusor::DType::F32, fusor::Shape{3}, {1, -2, 3});
  fusor::Tensor y = engine.run(b.build(), {{"x", in}}).at("y");
  bool ok = y.at(0) == 0 && y.at(1) == 2 && y.at(2) == 0;
  // The ONNX front end links too (its protobuf dependencies come with the package).
  try {
    fusor::load_onnx_bytes("not a model");
    ok = false;
  } catch (const fusor::Error& e) {
    ok = ok && e.code() == fusor::ErrorCode::ParseError;
  }
  std::printf("consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
