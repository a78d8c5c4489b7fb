#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include "ir/builder.h"
#include "jit/engine.h"
#include "tests/jit/backend_util.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::error_of;

namespace {


// y = relu(x @ w + b), with a named dim B.
Graph mlp() {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::F32, {"B", 3});
  ValueId w = b.constant("w", test::make(DType::F32, {3, 2}, {1, -1, 2, 0, -1, 1}));
  ValueId bias = b.constant("b", test::make(DType::F32, {2}, {0.5, -0.5}));
  b.output(b.op(OpKind::Relu, {b.add(b.matmul(x, w), bias)}, {}, "y"));
  return b.build();
}

}  // namespace

TEST_SUITE("jit/engine") {
  TEST_CASE("run computes outputs by name") {
    Engine engine(EngineOptions{.num_threads = 2});
    Tensor x = test::make(DType::F32, {2, 3}, {1, 2, 3, -1, 0, 1});
    TensorMap out = engine.run(mlp(), {{"x", x}});
    REQUIRE(out.count("y"));
    // row 0: [1*1+2*2+3*-1, 1*-1+0+3*1] + b = [2.5, 1.5]; row 1: [-1-1, 1+1] + b = [-1.5 -> 0, 1.5]
    FUSOR_CHECK_CLOSE(out.at("y"), test::make(DType::F32, {2, 2}, {2.5, 1.5, 0, 1.5}), 1e-6, 1e-6);
  }

  TEST_CASE("every backend of the list computes what the static engine does") {
    Graph g = mlp();
    const TensorMap in{{"x", test::randn({5, 3}, 11)}};
    Engine reference(EngineOptions{.num_threads = 1, .fuse = false, .disk_cache = false});
    const Tensor want = reference.run(g, in).at("y");
    const EngineOptions options{.num_threads = 2, .disk_cache = false};
    const int ran = test::for_each_backend(options, [&](const BackendInfo&, Engine& e) {
      FUSOR_CHECK_CLOSE(e.run(g, in).at("y"), want, 1e-5, 1e-6);
      CHECK(e.stats().plan_misses == 1);
    });
    CHECK(ran >= 1);  // the static backend always runs
  }

  TEST_CASE("the same graph runs at different bound sizes") {
    Engine engine;
    Graph g = mlp();
    for (int64_t b : {1, 5, 17}) {
      TensorMap out = engine.run(g, {{"x", test::randn({b, 3}, uint64_t(b))}});
      CHECK(out.at("y").shape() == Shape{b, 2});
    }
  }

  TEST_CASE("caller-supplied outputs are written in place") {
    Engine engine;
    float buf[4] = {-7, -7, -7, -7};
    TensorMap outs{{"y", Tensor::borrow(buf, DType::F32, Shape{2, 2})}};
    engine.run(mlp(), {{"x", test::make(DType::F32, {2, 3}, {1, 2, 3, -1, 0, 1})}}, outs);
    CHECK(buf[0] == doctest::Approx(2.5));
    CHECK(buf[2] == 0.0f);
    std::string msg;
    TensorMap wrong{{"y", Tensor::empty(DType::F32, Shape{3, 2})}};
    CHECK(error_of([&] { engine.run(mlp(), {{"x", test::randn({2, 3}, 1)}}, wrong); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(msg.find("f32[2, 2]") != std::string::npos);
    TensorMap unknown{{"z", Tensor::empty(DType::F32, Shape{2, 2})}};
    CHECK(error_of([&] { engine.run(mlp(), {{"x", test::randn({2, 3}, 1)}}, unknown); }) ==
          ErrorCode::InvalidArgument);
  }

  TEST_CASE("unknown input name is InvalidArgument naming the inputs") {
    Engine engine;
    std::string msg;
    CHECK(error_of([&] { engine.run(mlp(), {{"x", test::randn({2, 3}, 1)}, {"xx", test::randn({2, 3}, 1)}}); },
                   &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("no input named 'xx'") != std::string::npos);
    CHECK(msg.find("its inputs: x") != std::string::npos);
  }

  TEST_CASE("missing input is InvalidArgument") {
    Engine engine;
    std::string msg;
    CHECK(error_of([&] { engine.run(mlp(), {}); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("'x'") != std::string::npos);
  }

  TEST_CASE("wrong dtype is DTypeMismatch") {
    Engine engine;
    CHECK(error_of([&] { engine.run(mlp(), {{"x", test::randn({2, 3}, 1, 1.0, DType::F16)}}); }) ==
          ErrorCode::DTypeMismatch);
  }

  TEST_CASE("wrong rank or size is ShapeMismatch") {
    Engine engine;
    std::string msg;
    CHECK(error_of([&] { engine.run(mlp(), {{"x", test::randn({2, 3, 1}, 1)}}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { engine.run(mlp(), {{"x", test::randn({2, 4}, 1)}}); }, &msg) == ErrorCode::ShapeMismatch);
    CHECK(msg.find("dimension 1 must be 3") != std::string::npos);
  }

  TEST_CASE("broadcasting mismatch inside the graph names the node") {
    GraphBuilder b("bc");
    ValueId x = b.input("x", DType::F32, {"N"});
    ValueId y = b.input("y", DType::F32, {"M"});
    b.output(b.op(OpKind::Add, {x, y}, {}, "z"));
    Graph g = b.build();
    Engine engine;
    std::string msg;
    CHECK(error_of([&] { engine.run(g, {{"x", test::randn({3}, 1)}, {"y", test::randn({4}, 2)}}); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(msg.find("node 'z' (Add)") != std::string::npos);
    TensorMap ok = engine.run(g, {{"x", test::randn({3}, 1)}, {"y", test::randn({1}, 2)}});
    CHECK(ok.at("z").shape() == Shape{3});
  }

  TEST_CASE("malformed graph is InvalidGraph at run") {
    Graph g = mlp();
    g.mutable_node(0).inputs[0] = g.outputs()[0];  // matmul reads relu's output: a cycle
    Engine engine;
    CHECK(error_of([&] { engine.run(g, {{"x", test::randn({2, 3}, 1)}}); }) == ErrorCode::InvalidGraph);
  }

  TEST_CASE("inputs and constants returned as outputs are copies") {
    GraphBuilder b("id");
    ValueId x = b.input("x", DType::F32, {2});
    ValueId c = b.fill("c", {2}, 3.0);
    b.output(x);
    b.output(c);
    b.output(b.op(OpKind::Add, {x, c}, {}, "s"));
    Graph g = b.build();
    Engine engine;
    Tensor in = test::make(DType::F32, {2}, {1, 2});
    TensorMap out = engine.run(g, {{"x", in}});
    CHECK(out.at("x").raw() != in.raw());
    CHECK(out.at("x").at(1) == 2);
    CHECK(out.at("c").at(0) == 3);
    CHECK(out.at("s").at(1) == 5);
  }

  TEST_CASE("concurrent runs on one engine give the same answers") {
    Engine engine(EngineOptions{.num_threads = 2});
    Graph g = mlp();
    Tensor x = test::randn({64, 3}, 9);
    Tensor want = engine.run(g, {{"x", x}}).at("y");
    std::vector<std::thread> ts;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&, t] {
        int good = 1;
        for (int i = 0; i < 20; ++i) {
          Tensor got = engine.run(g, {{"x", x}}).at("y");
          std::string why;
          good &= test::allclose(got, want, 0, 0, &why) ? 1 : 0;
        }
        ok[size_t(t)] = good;
      });
    for (auto& t : ts) t.join();
    for (int v : ok) CHECK(v == 1);
  }

  TEST_CASE("unknown backend name") {
    CHECK(error_of([] { parse_backend("tpu"); }) == ErrorCode::InvalidArgument);
    CHECK(parse_backend("static") == BackendKind::Static);
  }
}
