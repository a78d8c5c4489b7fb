#include "bench/cases.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "codegen/lower.h"
#include "ir/builder.h"
#include "ir/passes/pipeline.h"
#include "ir/text_format.h"

namespace fusor::bench {

namespace {

Tensor randn(Shape s, uint64_t seed) { return make_random(DType::F32, s, RandomRecipe::normal(seed, 1.0)); }

// Conv (no bias) + BatchNormalization (+ residual Add) + Relu, batch 1.
void conv_bn_relu(Graph* g, TensorMap* in, int64_t cin, int64_t cout, int64_t k, int64_t hw, bool residual) {
  GraphBuilder b(residual ? "conv_bn_add_relu" : "conv_bn_relu");
  ValueId x = b.input("x", DType::F32, {1, cin, hw, hw});
  ValueId w = b.randn("w", {cout, cin, k, k}, 1, std::sqrt(2.0 / double(cin * k * k)));
  ConvOptions o;
  o.pads = {k / 2, k / 2, k / 2, k / 2};
  ValueId y = b.conv(x, w, kNoValue, o);
  y = b.batchnorm(y, b.uniform("g", {cout}, 2, 0.5, 1.5), b.randn("beta", {cout}, 3, 0.1),
                  b.randn("mu", {cout}, 4, 0.1), b.uniform("var", {cout}, 5, 0.5, 1.5));
  if (residual) y = b.add(y, b.input("r", DType::F32, {1, cout, hw, hw}));
  b.output(b.op(OpKind::Relu, {y}, {}, "y"));
  *g = b.build();
  (*in)["x"] = randn({1, cin, hw, hw}, 10);
  if (residual) (*in)["r"] = randn({1, cout, hw, hw}, 11);
}

void matmul_bias(Graph* g, TensorMap* in, int64_t m, int64_t k, int64_t n, bool gelu) {
  GraphBuilder b(gelu ? "matmul_bias_gelu" : "matmul_bias");
  ValueId x = b.input("x", DType::F32, {m, k});
  ValueId y = b.add(b.matmul(x, b.randn("w", {k, n}, 1, 0.02)), b.randn("b", {n}, 2, 0.02));
  if (gelu) y = b.gelu(y);
  b.output(y);
  *g = b.build();
  (*in)["x"] = randn({m, k}, 10);
}

// The source tree: $FUSOR_SOURCE_DIR when set (a copy of the tree on another machine),
// else the one this binary was built from.
std::string source_dir() {
  const char* dir = std::getenv("FUSOR_SOURCE_DIR");
  return dir && *dir ? dir : FUSOR_SOURCE_DIR;
}

Graph load_example(const char* name) { return load_graph(source_dir() + "/examples/graphs/" + name); }

std::vector<BenchCase> make_cases() {
  std::vector<BenchCase> c;
  c.push_back({"conv3x3_bn_relu_64x56x56", 2.0 * 64 * 64 * 9 * 56 * 56, 4.0 * 2 * 64 * 56 * 56,
               [](Graph* g, TensorMap* in) { conv_bn_relu(g, in, 64, 64, 3, 56, false); }});
  c.push_back({"conv1x1_bn_add_relu_256x56x56", 2.0 * 64 * 256 * 56 * 56, 4.0 * (64 + 256 + 256) * 56 * 56,
               [](Graph* g, TensorMap* in) { conv_bn_relu(g, in, 64, 256, 1, 56, true); }});
  c.push_back({"resnet_bottleneck_256x56x56",
               2.0 * 56 * 56 * (256 * 64 + 64 * 64 * 9 + 64 * 256), 4.0 * 2 * 256 * 56 * 56,
               [](Graph* g, TensorMap* in) {
                 *g = load_example("resnet_bottleneck");
                 (*in)["x"] = randn({1, 256, 56, 56}, 10);
               }});
  c.push_back({"matmul_bias_128x768x2304", 2.0 * 128 * 768 * 2304, 4.0 * (128 * 768 + 768 * 2304 + 128 * 2304),
               [](Graph* g, TensorMap* in) { matmul_bias(g, in, 128, 768, 2304, false); }});
  c.push_back({"matmul_bias_gelu_128x768x3072", 2.0 * 128 * 768 * 3072, 4.0 * (128 * 768 + 768 * 3072 + 128 * 3072),
               [](Graph* g, TensorMap* in) { matmul_bias(g, in, 128, 768, 3072, true); }});
  c.push_back({"residual_layernorm_128x768", 0, 4.0 * 3 * 128 * 768, [](Graph* g, TensorMap* in) {
                 GraphBuilder b("residual_layernorm");
                 ValueId x = b.input("x", DType::F32, {128, 768});
                 ValueId r = b.input("r", DType::F32, {128, 768});
                 b.output(b.layernorm(b.add(x, r), b.fill("g", {768}, 1.0), b.fill("b", {768}, 0.0), 1e-12));
                 *g = b.build();
                 (*in)["x"] = randn({128, 768}, 10);
                 (*in)["r"] = randn({128, 768}, 11);
               }});
  c.push_back({"scale_mask_softmax_12x128x128", 0, 4.0 * (2 * 12 * 128 * 128 + 128), [](Graph* g, TensorMap* in) {
                 GraphBuilder b("scale_mask_softmax");
                 ValueId s = b.input("scores", DType::F32, {1, 12, 128, 128});
                 ValueId m = b.input("mask", DType::F32, {1, 1, 1, 128});
                 b.output(b.softmax(b.add(b.mul(s, b.fill("scale", {}, 0.125)), m)));
                 *g = b.build();
                 (*in)["scores"] = randn({1, 12, 128, 128}, 10);
                 (*in)["mask"] = Tensor::zeros(DType::F32, Shape{1, 1, 1, 128});
               }});
  c.push_back({"eltwise_chain5_16M", 0, 4.0 * 2 * (1 << 24), [](Graph* g, TensorMap* in) {
                 GraphBuilder b("eltwise_chain5");
                 ValueId x = b.input("x", DType::F32, {1 << 24});
                 ValueId y = b.mul(x, b.fill("a", {}, 0.5));
                 y = b.add(y, b.fill("b", {}, 0.25));
                 y = b.op(OpKind::Tanh, {y});
                 y = b.mul(y, b.fill("c", {}, 2.0));
                 b.output(b.add(y, b.fill("d", {}, -1.0)));
                 *g = b.build();
                 (*in)["x"] = randn({1 << 24}, 10);
               }});
  for (int64_t t : {16, 64, 128, 384}) {
    // FLOPs of one BERT-base layer at batch 1: 4 projections + 2 FFN GEMMs + attention.
    double flops = 2.0 * double(t) * 768 * 768 * 4 + 2.0 * double(t) * 768 * 3072 * 2 + 2.0 * 2 * 12 * double(t * t) * 64;
    c.push_back({"bert_layer_seq" + std::to_string(t), flops, 4.0 * (2 * double(t) * 768 + 4 * 768 * 768 + 2 * 768 * 3072),
                 [t](Graph* g, TensorMap* in) {
                   *g = load_example("bert_layer");
                   (*in)["x"] = randn({1, t, 768}, 10);
                   (*in)["mask"] = Tensor::zeros(DType::F32, Shape{1, 1, 1, t});
                 }});
  }
  return c;
}

std::string example_text(const char* name) {
  std::ifstream in(source_dir() + "/examples/graphs/" + name);
  FUSOR_CHECK(in.good(), Io, "cannot read ", source_dir(), "/examples/graphs/", name, " (set FUSOR_SOURCE_DIR)");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `text` with every f32 tensor type turned into `dtype` ("f16").
std::string as_dtype(std::string text, const std::string& dtype) {
  const std::string from = ": f32[", to = ": " + dtype + "[";
  for (size_t p = 0; (p = text.find(from, p)) != std::string::npos; p += to.size()) text.replace(p, from.size(), to);
  return text;
}

DType dtype_of(const std::string& name) {
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return DType::F32;
}

std::vector<BenchCase> make_gpu_cases() {
  std::vector<BenchCase> c;
  for (const char* dt : {"f32", "f16"}) {
    const DType d = dtype_of(dt);
    const double es = double(dtype_size(d));
    for (int64_t t : {37, 128, 384}) {
      const int64_t b = 8;
      const double rows = double(b * t);
      // 4 projections + 2 FFN GEMMs + attention (Q·Kᵀ and ·V) per layer.
      double flops = 2.0 * rows * 768 * 768 * 4 + 2.0 * rows * 768 * 3072 * 2 + 2.0 * 2 * double(b) * 12 * double(t * t) * 64;
      double bytes = es * (2 * rows * 768 + 4 * 768 * 768 + 2 * 768 * 3072);
      c.push_back({"bert_layer_b8_seq" + std::to_string(t) + "_" + dt, flops, bytes, [t, d, dt = std::string(dt)](Graph* g, TensorMap* in) {
                     *g = parse_graph(as_dtype(example_text("bert_layer"), dt));
                     (*in)["x"] = make_random(d, {8, t, 768}, RandomRecipe::normal(10, 1.0));
                     (*in)["mask"] = Tensor::zeros(d, Shape{8, 1, 1, t});
                   }});
    }
  }
  c.push_back({"resnet_bottleneck_b32_56x56_f32", 32 * 2.0 * 56 * 56 * (256 * 64 + 64 * 64 * 9 + 64 * 256),
               32 * 4.0 * 2 * 256 * 56 * 56, [](Graph* g, TensorMap* in) {
                 *g = parse_graph(example_text("resnet_bottleneck"));
                 (*in)["x"] = randn({32, 256, 56, 56}, 10);
               }});
  for (const char* dt : {"f32", "f16"}) {
    const DType d = dtype_of(dt);
    const int64_t m = 4096, k = 768, n = 3072;
    c.push_back({std::string("linear_bias_gelu_4096x768x3072_") + dt, 2.0 * m * k * n,
                 double(dtype_size(d)) * double(m * k + k * n + n + m * n), [=, dt = std::string(dt)](Graph* g, TensorMap* in) {
                   *g = parse_graph(as_dtype(
                       "graph linear_bias_gelu\ninput x: f32[4096, 768]\nconst w: f32[768, 3072] = randn(seed=1, std=0.02)\n"
                       "const b: f32[3072] = randn(seed=2, std=0.02)\nmm = MatMul(x, w)\nh = Add(mm, b)\n"
                       "y = Gelu(h)\noutput y\n",
                       dt));
                   (*in)["x"] = make_random(d, {m, k}, RandomRecipe::normal(10, 1.0));
                 }});
  }
  const int64_t n = int64_t(1) << 27;  // 128M floats: 512 MiB in, 512 MiB out
  c.push_back({"eltwise_chain5_128M_f32", 5.0 * double(n), 4.0 * 2 * double(n), [](Graph* g, TensorMap* in) {
                 GraphBuilder b("eltwise_chain5");
                 ValueId x = b.input("x", DType::F32, {n});
                 ValueId y = b.mul(x, b.fill("a", {}, 0.5));
                 y = b.add(y, b.fill("b", {}, 0.25));
                 y = b.op(OpKind::Tanh, {y});
                 y = b.mul(y, b.fill("c", {}, 2.0));
                 b.output(b.add(y, b.fill("d", {}, -1.0)));
                 *g = b.build();
                 (*in)["x"] = randn({n}, 10);
               }});
  return c;
}

}  // namespace

const std::vector<BenchCase>& gpu_bench_cases() {
  static const std::vector<BenchCase> cases = make_gpu_cases();  // immutable table, built once
  return cases;
}

const std::vector<BenchCase>& bench_cases() {
  static const std::vector<BenchCase> cases = make_cases();  // immutable table, built once
  return cases;
}

// The spec of the first group of `kind` in bench case `name` (lowered as the engine would).
KernelSpec spec_of_case(const std::string& name, GroupKind kind) {
  for (const BenchCase& c : bench_cases()) {
    if (c.name != name) continue;
    Graph g;
    TensorMap inputs;
    c.make(&g, &inputs);
    std::vector<TensorType> types;
    for (ValueId v : g.inputs()) types.push_back({inputs.at(g.value(v).name).dtype(), inputs.at(g.value(v).name).shape()});
    FusedGraph f = fuse_graph(g, types, FusionOptions{}, nullptr);
    for (const FusionGroup& grp : f.groups) {
      std::string why;
      if (grp.kind != kind) continue;
      if (std::optional<KernelSpec> spec = lower_group(f, grp, &why)) return *spec;
    }
  }
  fail(ErrorCode::Internal, "bench case '", name, "' has no lowerable ", group_kind_name(kind), " group");
}


}  // namespace fusor::bench
