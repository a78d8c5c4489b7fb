// The reference graphs in examples/graphs/ (a BERT-base encoder layer and a ResNet-50
// bottleneck) load, verify, print back exactly and infer the expected shapes, including at
// odd sizes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "ir/fingerprint.h"
#include "ir/shape_inference.h"
#include "ir/text_format.h"
#include "ir/verifier.h"

using namespace fusor;

namespace {

std::string graph_path(const char* name) { return std::string(FUSOR_SOURCE_DIR "/examples/graphs/") + name; }

// Loads a reference graph and checks what every reference graph must satisfy.
Graph load_reference(const char* name) {
  Graph g = load_graph(graph_path(name));
  verify(g);
  CHECK(g.name() == name);
  std::string text = print_graph(g);
  Graph back = parse_graph(text, ".", std::string(name) + " (printed)");
  CHECK(print_graph(back) == text);
  CHECK(fingerprint(back) == fingerprint(g));
  // Every generated weight has its own seed.
  std::set<std::string> recipes;
  for (const Constant& c : g.constants())
    if (c.recipe.rfind("fill(", 0) != 0 && !c.recipe.empty()) CHECK(recipes.insert(c.recipe).second);
  return g;
}

std::string type_of(const Graph& g, const std::vector<TensorType>& types, const char* value) {
  ValueId v = g.find_value(value);
  REQUIRE(v != kNoValue);
  return types[size_t(v)].str();
}

// The sample standard deviation of a constant.
double stddev(const Graph& g, const char* name) {
  const Tensor& t = *g.constant_data(g.find_value(name));
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += t.at(i);
    sq += t.at(i) * t.at(i);
  }
  double mean = sum / double(t.numel());
  return std::sqrt(sq / double(t.numel()) - mean * mean);
}

}  // namespace

TEST_SUITE("ir/reference_graphs") {
  TEST_CASE("bert_layer loads and infers BERT-base shapes") {
    Graph g = load_reference("bert_layer");
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.value(g.outputs()[0]).name == "y");
    CHECK(g.constant_data(g.find_value("scale"))->at(0) == 1.0 / std::sqrt(64.0));
    CHECK(stddev(g, "w1") == doctest::Approx(0.02).epsilon(0.02));

    std::vector<TensorType> t = infer_types(g, input_types_from_dims(g, {{"B", 1}, {"T", 128}}));
    CHECK(type_of(g, t, "y") == "f32[1, 128, 768]");
    CHECK(type_of(g, t, "q_t") == "f32[1, 12, 128, 64]");
    CHECK(type_of(g, t, "k_t") == "f32[1, 12, 64, 128]");
    CHECK(type_of(g, t, "probs") == "f32[1, 12, 128, 128]");
    CHECK(type_of(g, t, "context_merged") == "f32[1, 128, 768]");
    CHECK(type_of(g, t, "ff1_act") == "f32[1, 128, 3072]");

    t = infer_types(g, input_types_from_dims(g, {{"B", 1}, {"T", 7}}));
    CHECK(type_of(g, t, "y") == "f32[1, 7, 768]");
    CHECK(type_of(g, t, "probs") == "f32[1, 12, 7, 7]");
    t = infer_types(g, input_types_from_dims(g, {{"B", 3}, {"T", 1}}));
    CHECK(type_of(g, t, "y") == "f32[3, 1, 768]");
  }

  TEST_CASE("resnet_bottleneck loads and infers ResNet-50 shapes") {
    Graph g = load_reference("resnet_bottleneck");
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.value(g.outputs()[0]).name == "y");
    CHECK(stddev(g, "w2") == doctest::Approx(std::sqrt(2.0 / 576)).epsilon(0.05));
    // The He stds are written as the shortest decimal of sqrt(2 / fan_in), so they print back
    // exactly as written.
    std::string text = print_graph(g);
    CHECK(text.find("randn(seed=1, std=0.08838834764831845)") != std::string::npos);
    CHECK(text.find("randn(seed=11, std=0.1767766952966369)") != std::string::npos);

    std::vector<TensorType> t = infer_types(g, input_types_from_dims(g, {{"N", 1}, {"H", 56}, {"W", 56}}));
    CHECK(type_of(g, t, "y") == "f32[1, 256, 56, 56]");
    CHECK(type_of(g, t, "relu1") == "f32[1, 64, 56, 56]");
    CHECK(type_of(g, t, "relu2") == "f32[1, 64, 56, 56]");
    CHECK(type_of(g, t, "bn3") == "f32[1, 256, 56, 56]");

    t = infer_types(g, input_types_from_dims(g, {{"N", 1}, {"H", 9}, {"W", 9}}));
    CHECK(type_of(g, t, "y") == "f32[1, 256, 9, 9]");
    t = infer_types(g, input_types_from_dims(g, {{"N", 2}, {"H", 7}, {"W", 5}}));
    CHECK(type_of(g, t, "y") == "f32[2, 256, 7, 5]");
    t = infer_types(g, input_types_from_dims(g, {{"N", 1}, {"H", 1}, {"W", 1}}));
    CHECK(type_of(g, t, "y") == "f32[1, 256, 1, 1]");
  }

  TEST_CASE("reference graphs start with a comment saying what they are") {
    for (const char* name : {"bert_layer", "resnet_bottleneck"}) {
      INFO(name);
      std::FILE* f = std::fopen(graph_path(name).c_str(), "rb");
      REQUIRE(f != nullptr);
      char first[3] = {0, 0, 0};
      CHECK(std::fread(first, 1, 2, f) == 2);
      std::fclose(f);
      CHECK(std::string(first) == "# ");
    }
  }
}
