#include <doctest/doctest.h>

#include "ir/builder.h"
#include "ir/fingerprint.h"
#include "ir/op_schema.h"
#include "ir/verifier.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::error_of;

namespace {


Graph small_mlp(uint64_t seed = 1) {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::F32, {"B", 16});
  ValueId w = b.randn("w", {16, 8}, seed, 0.1);
  ValueId bias = b.fill("b", {8}, 0.5);
  ValueId h = b.add(b.matmul(x, w), bias);
  b.output(b.op(OpKind::Relu, {h}, {}, "y"));
  return b.build();
}

}  // namespace

TEST_SUITE("ir/graph") {
  TEST_CASE("builder creates a verified graph with named outputs") {
    Graph g = small_mlp();
    CHECK(g.inputs().size() == 1);
    CHECK(g.outputs().size() == 1);
    CHECK(g.value(g.outputs()[0]).name == "y");
    CHECK(g.nodes().size() == 3);
    CHECK(g.constants().size() == 2);
    CHECK(g.constants()[0].recipe == "randn(seed=1, std=0.1)");
    CHECK(g.find_value("x") == g.inputs()[0]);
    CHECK(g.find_value("nope") == kNoValue);
  }

  TEST_CASE("duplicate and malformed names are InvalidGraph") {
    GraphBuilder b;
    b.input("x", DType::F32, {4});
    std::string msg;
    CHECK(error_of([&] { b.input("x", DType::F32, {4}); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("'x' is defined twice") != std::string::npos);
    CHECK(error_of([&] { b.input("bad name", DType::F32, {4}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { b.input("", DType::F32, {4}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { b.input("neg", DType::F32, {-3}); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("a node input that does not exist is InvalidGraph") {
    Graph g;
    CHECK(error_of([&] { g.add_node(OpKind::Relu, {42}, {}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { g.add_output(7); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("schemas exist for every op and parse back from their names") {
    for (int k = 0; k < kNumOpKinds; ++k) {
      const OpSchema& s = op_schema(OpKind(k));
      CHECK((s.infer != nullptr));
      OpKind back;
      REQUIRE(parse_op_kind(s.name, &back));
      CHECK(back == OpKind(k));
    }
    OpKind x;
    CHECK_FALSE(parse_op_kind("Convolution", &x));
  }
}

TEST_SUITE("ir/verifier") {
  TEST_CASE("a cycle is reported naming the node and value") {
    GraphBuilder b("cyc");
    ValueId x = b.input("x", DType::F32, {4});
    ValueId a = b.op(OpKind::Relu, {x}, {}, "a");
    ValueId c = b.op(OpKind::Neg, {a}, {}, "c");
    b.output(c);
    Graph g = b.build();
    // Rewire relu's input to its own consumer's output: a -> c -> a.
    g.mutable_node(0).inputs[0] = c;
    std::string msg;
    CHECK(error_of([&] { verify(g); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("node 'a' (Relu)") != std::string::npos);
    CHECK(msg.find("cycle") != std::string::npos);
  }

  TEST_CASE("dangling input id is reported") {
    Graph g = small_mlp();
    g.mutable_node(1).inputs[1] = 999;
    std::string msg;
    CHECK(error_of([&] { verify(g); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("does not exist") != std::string::npos);
  }

  TEST_CASE("arity outside the schema") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {4});
    g.add_node(OpKind::Add, {x}, {"y"});
    g.add_output(g.find_value("y"));
    std::string msg;
    CHECK(error_of([&] { verify(g); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("has 1 inputs; Add takes 2") != std::string::npos);
  }

  TEST_CASE("missing required input") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {1, 1, 4, 4});
    g.add_node(OpKind::Conv, {x, kNoValue}, {"y"});
    g.add_output(g.find_value("y"));
    CHECK(error_of([&] { verify(g); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("unknown attribute names the accepted ones") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {4});
    g.add_node(OpKind::Softmax, {x}, {"y"}, {{"axes", 1}});
    g.add_output(g.find_value("y"));
    std::string msg;
    CHECK(error_of([&] { verify(g); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("unknown attribute 'axes'") != std::string::npos);
    CHECK(msg.find("axis") != std::string::npos);
  }

  TEST_CASE("attribute of the wrong type") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {4});
    g.add_node(OpKind::Softmax, {x}, {"y"}, {{"axis", 1.5}});
    g.add_output(g.find_value("y"));
    std::string msg;
    CHECK(error_of([&] { verify(g); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("must be int") != std::string::npos);
  }

  TEST_CASE("attribute out of range") {
    auto conv_with = [](Attributes attrs) {
      Graph g;
      ValueId x = g.add_input("x", DType::F32, {1, 2, 5, 5});
      ValueId w = g.add_input("w", DType::F32, {2, 2, 3, 3});
      g.add_node(OpKind::Conv, {x, w}, {"y"}, std::move(attrs));
      g.add_output(g.find_value("y"));
      verify(g);
    };
    CHECK(error_of([&] { conv_with({{"group", 0}}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { conv_with({{"strides", std::vector<int64_t>{0, 1}}}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { conv_with({{"pads", std::vector<int64_t>{-1, 0, 0, 0}}}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { conv_with({{"auto_pad", "SAME"}}); }) == ErrorCode::InvalidGraph);
    CHECK_NOTHROW(conv_with({{"auto_pad", "SAME_UPPER"}}));
  }

  TEST_CASE("missing required attribute") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {4});
    g.add_node(OpKind::Concat, {x, x}, {"y"});
    g.add_output(g.find_value("y"));
    std::string msg;
    CHECK(error_of([&] { verify(g); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("required attribute 'axis'") != std::string::npos);
  }

  TEST_CASE("a graph without outputs") {
    Graph g;
    g.add_input("x", DType::F32, {4});
    CHECK(error_of([&] { verify(g); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("bad enum strings") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {4});
    g.add_node(OpKind::Gelu, {x}, {"y"}, {{"approximate", "fast"}});
    g.add_output(g.find_value("y"));
    CHECK(error_of([&] { verify(g); }) == ErrorCode::InvalidGraph);
    Graph h;
    ValueId z = h.add_input("z", DType::F32, {4});
    h.add_node(OpKind::Cast, {z}, {"y"}, {{"to", "float64"}});
    h.add_output(h.find_value("y"));
    CHECK(error_of([&] { verify(h); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("training mode BatchNormalization is Unsupported") {
    Graph g;
    ValueId x = g.add_input("x", DType::F32, {1, 2});
    ValueId c = g.add_input("c", DType::F32, {2});
    g.add_node(OpKind::BatchNormalization, {x, c, c, c, c}, {"y"}, {{"training_mode", 1}});
    g.add_output(g.find_value("y"));
    CHECK(error_of([&] { verify(g); }) == ErrorCode::Unsupported);
  }
}

TEST_SUITE("ir/fingerprint") {
  TEST_CASE("equal graphs fingerprint equal and every change shows") {
    uint64_t base = fingerprint(small_mlp());
    CHECK(base == fingerprint(small_mlp()));
    CHECK(base != fingerprint(small_mlp(2)));  // different weights
    // Renaming internal values does not matter; renaming an input does.
    auto variant = [](const char* in_name, const char* mid, double fillv, DType dt, Dim d) {
      GraphBuilder b("mlp");
      ValueId x = b.input(in_name, dt, {d, 16});
      ValueId w = b.randn("w", {16, 8}, 1, 0.1);
      ValueId bias = b.fill("b", {8}, fillv);
      ValueId h = b.op(OpKind::Add, {b.op(OpKind::MatMul, {x, w}, {}, mid), bias});
      b.output(b.op(OpKind::Relu, {h}, {}, "y"));
      return fingerprint(b.build());
    };
    uint64_t v0 = variant("x", "mm", 0.5, DType::F32, "B");
    CHECK(v0 == base);
    CHECK(variant("x", "other_name", 0.5, DType::F32, "B") == base);
    CHECK(variant("x2", "mm", 0.5, DType::F32, "B") != base);
    CHECK(variant("x", "mm", 0.25, DType::F32, "B") != base);
    CHECK(variant("x", "mm", 0.5, DType::F16, "B") != base);
    CHECK(variant("x", "mm", 0.5, DType::F32, "N") != base);
    CHECK(variant("x", "mm", 0.5, DType::F32, 4) != base);
  }

  TEST_CASE("attributes change the fingerprint") {
    auto g = [](int64_t axis) {
      GraphBuilder b;
      b.output(b.softmax(b.input("x", DType::F32, {2, 3}), axis));
      return fingerprint(b.build());
    };
    CHECK(g(-1) != g(0));
    CHECK(g(1) == g(1));
  }
}

TEST_CASE("every operator has its family from ir/ops.def") {
  using fusor::OpFamily;
  using fusor::OpKind;
  using fusor::op_family;
  CHECK(op_family(OpKind::MatMul) == OpFamily::Contraction);
  CHECK(op_family(OpKind::BatchNormalization) == OpFamily::Pointwise);  // an affine at inference
  CHECK(op_family(OpKind::Where) == OpFamily::Pointwise);
  CHECK(op_family(OpKind::Softmax) == OpFamily::Normalization);
  CHECK(op_family(OpKind::CumSum) == OpFamily::Reduction);
  CHECK(op_family(OpKind::Split) == OpFamily::View);
  CHECK(op_family(OpKind::Concat) == OpFamily::Movement);
  CHECK(op_family(OpKind::Range) == OpFamily::Shape);
  int views = 0;
  for (int k = 0; k < fusor::kNumOpKinds; ++k) views += op_family(OpKind(k)) == OpFamily::View;
  CHECK(views == 7);  // Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Slice, Split
}
