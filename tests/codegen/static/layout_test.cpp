// The static layout kernels (Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Concat, Slice,
// Gather) against the reference, for every dtype, on one thread and on a thread pool. They
// move bytes, so every comparison is exact (rtol = atol = 0).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ir/error.h"
#include "jit/thread_pool.h"
#include "tests/support/reference_contraction.h"
#include "tests/support/reference_indexing.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

using test::pool;

constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min(), kI32Max = std::numeric_limits<int32_t>::max();

const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool};

// Distinct-looking values of any dtype: integers in [-1000, 1000], bools mixed.
Tensor sample(const Shape& s, uint64_t seed, DType t) {
  if (t == DType::Bool) {
    Tensor u = uniform(s, seed, 0, 2);
    Tensor b = Tensor::empty(DType::Bool, s);
    for (int64_t i = 0; i < u.numel(); ++i) b.set(i, u.at(i) >= 1 ? 1 : 0);
    return b;
  }
  return is_integer(t) ? uniform(s, seed, -1000, 1000, t) : randn(s, seed, 1.0, t);
}

// Runs op serially and on the pool; both must equal want exactly.
void check_exact(OpKind op, const std::vector<OpInput>& inputs, const Attributes& attrs, const Tensor& want) {
  for (Parallel* par : {&serial_parallel(), &pool()}) {
    INFO("threads: ", par->num_threads());
    std::vector<Tensor> got = run_static_op(op, inputs, attrs, *par);
    FUSOR_CHECK_CLOSE(got[0], want, 0, 0);
  }
}

void check_transpose(const Shape& s, const std::vector<int64_t>& perm, DType t, uint64_t seed) {
  INFO("Transpose ", s.str(), " perm ", Shape(perm).str(), " ", dtype_name(t));
  Tensor x = sample(s, seed, t);
  check_exact(OpKind::Transpose, {x}, {{"perm", perm}}, ref_transpose(x, perm));
}

void check_slice(const Shape& s, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes,
                 std::vector<int64_t> steps, DType t = DType::F32, DType index_type = DType::I64) {
  INFO("Slice ", s.str(), " starts ", Shape(starts).str(), " ends ", Shape(ends).str(), " axes ", Shape(axes).str(),
       " steps ", Shape(steps).str(), " ", dtype_name(t), " indices ", dtype_name(index_type));
  Tensor x = sample(s, 99, t);
  auto vec = [&](const std::vector<int64_t>& v) {
    Tensor r = Tensor::empty(index_type, Shape{int64_t(v.size())});
    for (size_t i = 0; i < v.size(); ++i) {
      if (index_type == DType::I64) r.data<int64_t>()[i] = v[i];
      else r.data<int32_t>()[i] = int32_t(std::clamp<int64_t>(v[i], kI32Min, kI32Max));
    }
    return OpInput::constant_of(r);
  };
  std::vector<OpInput> in{x, vec(starts), vec(ends)};
  if (!axes.empty() || !steps.empty()) in.push_back(axes.empty() ? OpInput::none() : vec(axes));
  if (!steps.empty()) in.push_back(vec(steps));
  if (index_type == DType::I32)
    for (auto* v : {&starts, &ends})
      for (int64_t& e : *v) e = std::clamp<int64_t>(e, kI32Min, kI32Max);
  check_exact(OpKind::Slice, in, {}, ref_slice(x, starts, ends, axes, steps));
}

Tensor index_tensor(const Shape& s, const std::vector<int64_t>& v, DType t) {
  Tensor r = Tensor::empty(t, s);
  for (size_t i = 0; i < v.size(); ++i) r.set(int64_t(i), double(v[i]));
  return r;
}

}  // namespace

TEST_SUITE("static/layout") {
  TEST_CASE("Transpose every perm of a rank-3 tensor in every dtype") {
    uint64_t seed = 1;
    for (DType t : kAllDTypes) {
      std::vector<int64_t> perm{0, 1, 2};
      do {
        check_transpose(Shape{3, 5, 7}, perm, t, seed++);
        check_transpose(Shape{4, 19, 33}, perm, t, seed++);  // large enough for the tiled path
        check_transpose(Shape{1, 6, 1}, perm, t, seed++);    // unit dims merge away
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }

  TEST_CASE("Transpose rank-4 and rank-5 perms") {
    uint64_t seed = 100;
    for (DType t : kAllDTypes) {
      for (const auto& perm : {std::vector<int64_t>{0, 2, 1, 3}, {0, 3, 1, 2}, {3, 2, 1, 0}, {0, 1, 3, 2}, {2, 0, 3, 1},
                               {1, 0, 2, 3}})
        check_transpose(Shape{2, 5, 6, 9}, perm, t, seed++);
      for (const auto& perm : {std::vector<int64_t>{0, 4, 1, 2, 3}, {4, 3, 2, 1, 0}, {0, 2, 4, 1, 3}, {1, 0, 2, 4, 3}})
        check_transpose(Shape{2, 3, 4, 5, 6}, perm, t, seed++);
    }
  }

  TEST_CASE("Transpose of large matrices") {
    // Sizes around the 16x16 tile, big enough to be split over threads.
    uint64_t seed = 200;
    for (int64_t r : {15, 16, 17, 130})
      for (int64_t c : {1, 4, 33, 257}) check_transpose(Shape{r, c}, {1, 0}, DType::F32, seed++);
    check_transpose(Shape{1, 128, 12, 64}, {0, 2, 1, 3}, DType::F32, seed++);  // attention heads
    check_transpose(Shape{2, 12, 64, 128}, {0, 1, 3, 2}, DType::F16, seed++);
    check_transpose(Shape{3, 300, 200}, {2, 1, 0}, DType::I64, seed++);
  }

  TEST_CASE("Transpose without perm reverses the axes") {
    Tensor x = sample(Shape{2, 3, 4}, 5, DType::I32);
    check_exact(OpKind::Transpose, {x}, {}, ref_transpose(x, {2, 1, 0}));
  }

  TEST_CASE("Reshape Flatten Squeeze and Unsqueeze keep the bytes") {
    for (DType t : kAllDTypes) {
      INFO(dtype_name(t));
      Tensor x = sample(Shape{2, 1, 3, 40}, 300, t);
      auto same_data = [&](OpKind op, std::vector<OpInput> in, const Attributes& attrs, const Shape& want) {
        for (Parallel* par : {&serial_parallel(), &pool()}) {
          std::vector<Tensor> got = run_static_op(op, in, attrs, *par);
          FUSOR_CHECK_CLOSE(got[0], x.reshaped(want), 0, 0);
        }
      };
      same_data(OpKind::Reshape, {x, OpInput::constant_of(ints({0, -1, 8}))}, {}, Shape{2, 15, 8});
      same_data(OpKind::Flatten, {x}, {{"axis", int64_t(2)}}, Shape{2, 120});
      same_data(OpKind::Flatten, {x}, {{"axis", int64_t(0)}}, Shape{1, 240});
      same_data(OpKind::Squeeze, {x}, {}, Shape{2, 3, 40});
      same_data(OpKind::Squeeze, {x, OpInput::constant_of(ints({1}))}, {}, Shape{2, 3, 40});
      same_data(OpKind::Unsqueeze, {x, OpInput::constant_of(ints({0, -1}))}, {}, Shape{1, 2, 1, 3, 40, 1});
    }
    // A copy large enough to be split over threads.
    Tensor big = sample(Shape{64, 4096}, 301, DType::F32);
    std::vector<Tensor> got = run_static_op(OpKind::Reshape, {big, OpInput::constant_of(ints({-1}))}, {}, pool());
    FUSOR_CHECK_CLOSE(got[0], big.reshaped(Shape{64 * 4096}), 0, 0);
  }

  TEST_CASE("Concat along every axis in every dtype") {
    uint64_t seed = 400;
    for (DType t : kAllDTypes)
      for (int64_t axis : {0, 1, 2, -1, -3}) {
        INFO("Concat axis ", axis, " ", dtype_name(t));
        std::vector<Tensor> xs;
        for (int64_t len : {2, 1, 5}) {
          std::vector<int64_t> s{3, 4, 6};
          s[size_t(axis < 0 ? axis + 3 : axis)] = len;
          xs.push_back(sample(Shape(s), seed++, t));
        }
        check_exact(OpKind::Concat, {xs[0], xs[1], xs[2]}, {{"axis", axis}}, ref_concat(xs, axis));
        check_exact(OpKind::Concat, {xs[1]}, {{"axis", axis}}, ref_concat({xs[1]}, axis));
      }
  }

  TEST_CASE("Concat of few long rows and of many short ones") {
    Tensor a = sample(Shape{1, 30000}, 500, DType::F32), b = sample(Shape{1, 20001}, 501, DType::F32);
    check_exact(OpKind::Concat, {a, b}, {{"axis", int64_t(1)}}, ref_concat({a, b}, 1));
    Tensor c = sample(Shape{2, 70000}, 502, DType::I32), d = sample(Shape{2, 3}, 503, DType::I32);
    check_exact(OpKind::Concat, {c, d}, {{"axis", int64_t(-1)}}, ref_concat({c, d}, -1));
    Tensor e = sample(Shape{5000, 3}, 504, DType::F16), f = sample(Shape{5000, 2}, 505, DType::F16);
    check_exact(OpKind::Concat, {e, f, e}, {{"axis", int64_t(1)}}, ref_concat({e, f, e}, 1));
  }

  TEST_CASE("Slice with positive steps") {
    check_slice(Shape{7, 9}, {1, 2}, {5, 8}, {}, {});
    check_slice(Shape{7, 9}, {0}, {3}, {1}, {});
    check_slice(Shape{7, 9, 4}, {1, 0}, {7, 4}, {0, 2}, {2, 3});
    check_slice(Shape{10, 11}, {0, 1}, {10, 11}, {-1, -2}, {3, 2});  // negative axes
    check_slice(Shape{5, 300}, {0, 7}, {5, 290}, {}, {1, 1});          // long contiguous rows
  }

  TEST_CASE("Slice with negative and huge starts and ends") {
    int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
    check_slice(Shape{7, 9}, {-3, -100}, {big, -1}, {}, {});
    check_slice(Shape{7, 9}, {small, 2}, {-2, big}, {}, {});
    check_slice(Shape{7, 9}, {100}, {200}, {0}, {});  // empty
    check_slice(Shape{7, 9}, {4}, {2}, {1}, {});      // empty: end before start
  }

  TEST_CASE("Slice with negative steps") {
    int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
    check_slice(Shape{7, 9}, {-1}, {small}, {1}, {-1});  // reverse a row
    check_slice(Shape{7, 9}, {big, 8}, {small, 0}, {0, 1}, {-2, -3});
    check_slice(Shape{7, 9, 5}, {5, -1}, {1, -100}, {0, 2}, {-1, -2});
    check_slice(Shape{7, 9}, {2}, {5}, {0}, {-1});  // empty: end after start
    check_slice(Shape{7, 9}, {100, 3}, {-100, 3}, {0, 1}, {-1, 1});
  }

  TEST_CASE("Slice in every dtype and with i32 parameters") {
    for (DType t : kAllDTypes) {
      check_slice(Shape{6, 5, 4}, {1, -1}, {5, 0}, {0, 1}, {2, -1}, t);
      check_slice(Shape{6, 5, 4}, {1, -1}, {5, 0}, {0, 1}, {2, -1}, t, DType::I32);
    }
    int64_t big = std::numeric_limits<int64_t>::max();
    check_slice(Shape{8}, {-3}, {big}, {}, {}, DType::F32, DType::I32);
  }

  TEST_CASE("Gather along axes 0 1 and -1 with negative indices") {
    uint64_t seed = 600;
    for (DType t : kAllDTypes)
      for (int64_t axis : {0, 1, -1})
        for (DType it : {DType::I64, DType::I32}) {
          INFO("Gather axis ", axis, " ", dtype_name(t), " indices ", dtype_name(it));
          Tensor x = sample(Shape{4, 5, 6}, seed++, t);
          int64_t dim = x.shape()[int(axis)];
          Tensor ind = index_tensor(Shape{2, 3}, {0, -1, dim - 1, -dim, 2, 1}, it);
          check_exact(OpKind::Gather, {x, ind}, {{"axis", axis}}, ref_gather(x, ind, axis));
          Tensor scalar = index_tensor(Shape{}, {-2}, it);  // rank-0 indices drop the axis
          check_exact(OpKind::Gather, {x, scalar}, {{"axis", axis}}, ref_gather(x, scalar, axis));
        }
  }

  TEST_CASE("Gather of embedding rows") {
    Tensor table = sample(Shape{1000, 96}, 700, DType::F32);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 256; ++i) ids.push_back((i * 37) % 1000 - (i % 3 == 0 ? 1000 : 0));
    Tensor ind = index_tensor(Shape{2, 128}, ids, DType::I64);
    check_exact(OpKind::Gather, {table, ind}, {}, ref_gather(table, ind, 0));
  }

  TEST_CASE("Gather rejects an out-of-range index") {
    Tensor x = sample(Shape{4, 5}, 800, DType::F32);
    for (int64_t bad : {5, -6, 1000})
      for (DType it : {DType::I64, DType::I32}) {
        INFO("index ", bad, " ", dtype_name(it));
        Tensor ind = index_tensor(Shape{3}, {0, bad, 1}, it);
        try {
          run_static_op(OpKind::Gather, {x, ind}, {{"axis", int64_t(1)}});
          FAIL("no error");
        } catch (const Error& e) {
          CHECK(e.code() == ErrorCode::InvalidArgument);
          CHECK(e.message().find("index " + std::to_string(bad)) != std::string::npos);
          CHECK(e.message().find("[-5, 4]") != std::string::npos);
        }
      }
  }
}

TEST_SUITE("static/layout") {
  TEST_CASE("Split by input sizes by attribute by num_outputs and into equal parts") {
    uint64_t seed = 700;
    for (DType t : kAllDTypes) {
      const Tensor x = sample({4, 9, 17}, seed++, t);
      struct Case {
        Attributes attrs;
        std::vector<int64_t> input_sizes;  // empty: no split input
        int outputs;
        int axis;
        std::vector<int64_t> want;
      };
      const std::vector<Case> cases = {
          {{{"axis", int64_t(1)}}, {2, 0, 7}, 3, 1, {2, 0, 7}},
          {{{"axis", int64_t(-1)}, {"split", std::vector<int64_t>{16, 1}}}, {}, 2, 2, {16, 1}},
          {{{"axis", int64_t(2)}, {"num_outputs", int64_t(3)}}, {}, 3, 2, {6, 6, 5}},
          {{{"axis", int64_t(0)}}, {}, 2, 0, {2, 2}},
          {{{"axis", int64_t(1)}}, {}, 3, 1, {3, 3, 3}},
      };
      for (const Case& c : cases) {
        std::vector<OpInput> ins{x};
        if (!c.input_sizes.empty()) ins.push_back(OpInput::constant_of(ints(c.input_sizes)));
        const std::vector<Tensor> want = test::ref::split(x, c.axis, c.want);
        for (Parallel* par : {&serial_parallel(), &pool()}) {
          std::vector<Tensor> got = run_static_op(OpKind::Split, ins, c.attrs, *par, c.outputs);
          REQUIRE(got.size() == want.size());
          for (size_t k = 0; k < got.size(); ++k) FUSOR_CHECK_CLOSE(got[k], want[k], 0, 0);
        }
      }
    }
  }

  TEST_CASE("Split errors") {
    const Tensor x = randn({4, 9}, 1);
    std::string msg;
    CHECK(error_of([&] { run_static_op(OpKind::Split, {x, OpInput::constant_of(ints({4, 4}))}, {{"axis", int64_t(1)}}, serial_parallel(), 2); },
                   &msg) == ErrorCode::ShapeMismatch);
    CHECK(msg.find("sums to 8") != std::string::npos);
    CHECK(error_of([&] { run_static_op(OpKind::Split, {x}, {{"axis", int64_t(1)}}, serial_parallel(), 2); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { run_static_op(OpKind::Split, {x, OpInput::constant_of(ints({-1, 10}))}, {{"axis", int64_t(1)}}, serial_parallel(), 2); }) ==
          ErrorCode::InvalidGraph);
    CHECK(error_of([&] { run_static_op(OpKind::Split, {x}, {{"num_outputs", int64_t(3)}}, serial_parallel(), 2); }, &msg) ==
          ErrorCode::InvalidGraph);
    CHECK(error_of([&] { run_static_op(OpKind::Split, {x}, {{"axis", int64_t(5)}}, serial_parallel(), 2); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("axis 5") != std::string::npos);
    const int64_t big = std::numeric_limits<int64_t>::max();
    CHECK(error_of([&] { run_static_op(OpKind::Split, {x, OpInput::constant_of(ints({big, big}))}, {{"axis", int64_t(1)}}, serial_parallel(), 2); },
                   &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("split") != std::string::npos);
  }

  TEST_CASE("Expand and Tile in every dtype") {
    uint64_t seed = 800;
    for (DType t : kAllDTypes) {
      for (const auto& [s, target] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
               {{3, 1}, {2, 3, 17}}, {{}, {5}}, {{1, 17}, {4, 1}}, {{2, 1, 3}, {2, 4, 3}}, {{5}, {1}}, {{1}, {3, 40000}}}) {
        const Tensor x = sample(s, seed++, t);
        check_exact(OpKind::Expand, {x, OpInput::constant_of(ints(target))}, {}, test::ref::expand(x, target));
      }
      for (const auto& [s, rep] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
               {{3, 4}, {2, 3}}, {{5}, {1}}, {{2, 1, 3}, {1, 4, 2}}, {{7}, {0}}, {{2, 9}, {3000, 1}}}) {
        const Tensor x = sample(s, seed++, t);
        check_exact(OpKind::Tile, {x, OpInput::constant_of(ints(rep))}, {}, test::ref::tile(x, rep));
      }
    }
    const Tensor x = randn({3, 2}, 1);
    CHECK(error_of([&] { run_static_op(OpKind::Expand, {x, OpInput::constant_of(ints({4, 2}))}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { run_static_op(OpKind::Expand, {x, OpInput::constant_of(ints({-2, 2}))}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { run_static_op(OpKind::Tile, {x, OpInput::constant_of(ints({2}))}); }) == ErrorCode::ShapeMismatch);
    CHECK(error_of([&] { run_static_op(OpKind::Tile, {x, OpInput::constant_of(ints({-1, 1}))}); }) == ErrorCode::InvalidGraph);
    std::string msg;
    const int64_t huge = int64_t(1) << 62;
    CHECK(error_of([&] { run_static_op(OpKind::Tile, {x, OpInput::constant_of(ints({huge, 4}))}); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("repeats") != std::string::npos);
    CHECK(error_of([&] { run_static_op(OpKind::Expand, {x}); }) == ErrorCode::InvalidGraph);  // arity
  }

  TEST_CASE("Pad in every mode and dtype with negative pads and axes") {
    uint64_t seed = 900;
    for (DType t : kAllDTypes) {
      const Tensor x = sample({3, 5, 4}, seed++, t);
      struct Case {
        std::string mode;
        std::vector<int64_t> begin, end;
      };
      for (const Case& c : std::vector<Case>{{"constant", {0, 2, 1}, {1, 0, 3}},
                                             {"constant", {-1, 1, 0}, {0, -2, 2}},
                                             {"reflect", {2, 4, 3}, {1, 3, 0}},
                                             {"edge", {3, 1, 5}, {2, 6, 0}},
                                             {"wrap", {1, 7, 2}, {4, 0, 9}}}) {
        std::vector<int64_t> pads = c.begin;
        pads.insert(pads.end(), c.end.begin(), c.end.end());
        INFO(c.mode << " " << dtype_name(t));
        const Tensor want = test::ref::pad(x, c.begin, c.end, c.mode, t == DType::Bool ? 1.0 : 2.0);
        const Tensor value = test::make(t, {}, {t == DType::Bool ? 1.0 : 2.0});
        check_exact(OpKind::Pad, {x, OpInput::constant_of(ints(pads)), value}, {{"mode", c.mode}}, want);
        check_exact(OpKind::Pad, {x}, {{"mode", c.mode}, {"pads", pads}, {"value", t == DType::Bool ? 1.0 : 2.0}}, want);
      }
      // Only some axes (opset 18), the constant defaulting to 0.
      const Tensor want = test::ref::pad(x, {0, 0, 2}, {0, 0, 1}, "constant", 0.0);
      check_exact(OpKind::Pad, {x, OpInput::constant_of(ints({-1, 1})), OpInput::none(), OpInput::constant_of(ints({-1}))}, {},
                  test::ref::pad(x, {0, 0, -1}, {0, 0, 1}, "constant", 0.0));
      check_exact(OpKind::Pad, {x, OpInput::constant_of(ints({2, 1})), OpInput::none(), OpInput::constant_of(ints({2}))}, {}, want);
    }
    const Tensor big = randn({600, 300}, 3);
    check_exact(OpKind::Pad, {big, OpInput::constant_of(ints({1, 2, 3, 4}))}, {{"mode", "reflect"}}, test::ref::pad(big, {1, 2}, {3, 4}, "reflect", 0));
  }

  TEST_CASE("Pad errors name the node and the pads") {
    const Tensor x = randn({3, 4}, 1);
    std::string msg;
    CHECK(error_of([&] { run_static_op(OpKind::Pad, {x, OpInput::constant_of(ints({1, 1}))}); }, &msg) == ErrorCode::ShapeMismatch);
    CHECK(msg.find("node 'op' (Pad)") != std::string::npos);
    CHECK(error_of([&] { run_static_op(OpKind::Pad, {x, OpInput::constant_of(ints({3, 0, 0, 0}))}, {{"mode", "reflect"}}); }, &msg) ==
          ErrorCode::InvalidGraph);
    CHECK(msg.find("reflect") != std::string::npos);
    CHECK(error_of([&] { run_static_op(OpKind::Pad, {x, OpInput::constant_of(ints({-4, 0, 0, 0}))}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { run_static_op(OpKind::Pad, {x}, {{"mode", "mirror"}, {"pads", std::vector<int64_t>{0, 0, 0, 0}}}); }) ==
          ErrorCode::InvalidGraph);
    CHECK(error_of([&] { run_static_op(OpKind::Pad, {x}); }, &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("pads is missing") != std::string::npos);
    const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
    for (int64_t v : {big, small, int64_t(1) << 50})
      CHECK(error_of([&] { run_static_op(OpKind::Pad, {x, OpInput::constant_of(ints({v, 0, v, 0}))}); }) == ErrorCode::InvalidGraph);
    CHECK(error_of([&] { run_static_op(OpKind::Pad, {Tensor::empty(DType::F32, {0, 2}), OpInput::constant_of(ints({1, 0, 0, 0}))},
                                       {{"mode", "edge"}}); }) == ErrorCode::InvalidGraph);
  }
}
