// quickstart: build a small graph in C++, run it with fusor, print the result.
//
//   y = LayerNorm(GELU(x @ W + b))      x: f32[B, 8], named dim B bound at run time
#include <cstdio>

#include "ir/builder.h"
#include "ir/text_format.h"
#include "jit/engine.h"

int main() {
  using namespace fusor;
  try {
    GraphBuilder b("quickstart");
    ValueId x = b.input("x", DType::F32, {"B", 8});
    ValueId w = b.randn("W", {8, 4}, /*seed=*/1, /*std=*/0.5);
    ValueId bias = b.fill("b", {4}, 0.1);
    ValueId h = b.gelu(b.add(b.matmul(x, w), bias));
    b.output(b.op(OpKind::LayerNormalization, {h, b.fill("gamma", {4}, 1.0), b.fill("beta", {4}, 0.0)}, {}, "y"));
    Graph graph = b.build();
    std::printf("The graph in fusor's text format:\n\n%s\n", print_graph(graph).c_str());

    Engine engine;  // static backend, one thread per core
    Tensor input = make_random(DType::F32, Shape{2, 8}, RandomRecipe::normal(/*seed=*/7, /*std=*/1.0));
    TensorMap out = engine.run(graph, {{"x", input}});

    const Tensor& y = out.at("y");
    std::printf("y: %s\n", y.type_str().c_str());
    for (int64_t r = 0; r < y.shape()[0]; ++r) {
      std::printf("  [");
      for (int64_t c = 0; c < y.shape()[1]; ++c) std::printf("%s%8.4f", c ? ", " : "", y.at(r * y.shape()[1] + c));
      std::printf("]\n");
    }
    // Errors name what is wrong: here, a width that does not match the declared 8.
    try {
      engine.run(graph, {{"x", Tensor::zeros(DType::F32, Shape{2, 9})}});
    } catch (const Error& e) {
      std::printf("\nA wrong input is refused with a clear error:\n  %s\n", e.what());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "quickstart failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
