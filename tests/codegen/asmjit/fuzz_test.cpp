// Random KernelSpecs on every instruction set the host runs. Pointwise: random index spaces
// (rank 1 to 3, sizes 1 to 40 around the vector widths), random access layouts (any dim
// order, broadcast dims, reversed dims with offsets, bool conditions), random expression
// graphs and one or two outputs stored in random layouts (strided stores included), run
// with a random task count one task at a time and compared with the spec interpreter. The
// ops are the well-conditioned ones (no division or pow), so a loose bound holds for any
// graph: |got - want| <= 1e-4 * |want| + 1e-5 (NaN equals NaN, infinities equal).
// Contraction: random batched GEMMs (broadcast batches, transposed operands, sizes around
// the tiles and panels) with random epilogues over Acc and a broadcast operand, the bound's
// absolute part scaled by sqrt(k). Row reductions: every kind over random row spaces with
// random prologues (strided, broadcast) and epilogues (Acc, RowStat), rel and abs 1e-4.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "codegen/asmjit/asmjit_backend.h"
#include "tests/codegen/asmjit/asmjit_test_util.h"
#include "tests/support/kernel_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// A random layout of `shape` in a buffer: strides per dim and an offset; returns the
// elements the buffer needs. `broadcast` allows stride-0 dims; `unique` keeps every index
// at its own element (outputs).
int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t random_layout(std::mt19937_64& rng, const std::vector<int64_t>& shape, bool broadcast, StridedAccess& a) {
  const size_t rank = shape.size();
  std::vector<size_t> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  std::shuffle(order.begin(), order.end(), rng);
  a.strides.assign(rank, 0);
  a.offset = 0;
  int64_t step = 1 + int64_t(rng() % 2);  // an inner gap of 1 or 2 elements
  for (size_t o = rank; o-- > 0;) {
    const size_t d = order[o];
    if (broadcast && rng() % 4 == 0) continue;  // stride 0
    a.strides[d] = step;
    step *= shape[d];
  }
  for (size_t d = 0; d < rank; ++d)
    if (a.strides[d] != 0 && rng() % 4 == 0) {  // reversed
      a.offset += a.strides[d] * (shape[d] - 1);
      a.strides[d] = -a.strides[d];
    }
  return step;
}

// Appends 3 to 10 random ops over `values` to g, each result joining `values`. Where
// conditions are `bools` or `conditions` (inputs as loaded: a computed value may be
// exactly 0 in one evaluation and not the other, e.g. the interpreter's double GELU cancels
// to 0 where the float approximation keeps a tiny value, or a layernorm of a constant row,
// and Where is discontinuous there).
void add_random_ops(std::mt19937_64& rng, ExprGraph& g, std::vector<int32_t>& values, const std::vector<int32_t>& bools,
                    const std::vector<int32_t>& conditions) {
  auto node = [&](ScalarOp op, int32_t a = -1, int32_t b = -1, int32_t c = -1) {
    ScalarExpr e;
    e.op = op;
    e.args[0] = a;
    e.args[1] = b;
    e.args[2] = c;
    g.nodes.push_back(e);
    return int32_t(g.nodes.size() - 1);
  };
  const ScalarOp unary[] = {ScalarOp::Neg, ScalarOp::Relu, ScalarOp::Exp, ScalarOp::Tanh, ScalarOp::Erf,
                            ScalarOp::Sigmoid, ScalarOp::GeluErf, ScalarOp::GeluTanh, ScalarOp::Cast};
  const ScalarOp binary[] = {ScalarOp::Add, ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Max, ScalarOp::Min};
  const int ops = 3 + int(rng() % 8);
  for (int i = 0; i < ops; ++i) {
    auto pick = [&] { return values[rng() % values.size()]; };
    const bool can_where = !bools.empty() || !conditions.empty();
    const int kind = int(rng() % (can_where ? 5 : 4));
    int32_t n;
    if (kind < 2) {
      n = node(unary[rng() % std::size(unary)], pick());
    } else if (kind < 4) {
      n = node(binary[rng() % std::size(binary)], pick(), pick());
    } else {
      const bool use_bool = !bools.empty() && (conditions.empty() || rng() % 2);
      const int32_t c = use_bool ? bools[0] : conditions[rng() % conditions.size()];
      n = node(ScalarOp::Where, c, pick(), pick());
    }
    // Keep magnitudes moderate: Exp of an unbounded chain would overflow everywhere.
    if (g.nodes[size_t(n)].op == ScalarOp::Exp) n = node(ScalarOp::Tanh, n);
    values.push_back(n);
  }
}

// Runs `spec` one task at a time and compares its outputs with the interpreter's.
void check_against_interpreter(AsmjitBackend& be, const KernelSpec& spec, const std::vector<Tensor>& inputs, double rel,
                               double abs) {
  std::string why;
  REQUIRE_MESSAGE(be.supports(spec, &why), why);
  std::shared_ptr<const CompiledKernel> k = be.compile(spec);
  std::vector<Tensor> got, want;
  size_t in = 0;
  for (const BufferSpec& b : spec.buffers) {
    if (b.output) {
      // Gaps between the elements an output layout covers keep their NaN in both.
      Tensor nan = Tensor::empty(DType::F32, Shape{b.elements});
      std::fill(nan.data<float>(), nan.data<float>() + b.elements, std::numeric_limits<float>::quiet_NaN());
      got.push_back(nan);
      want.push_back(nan.clone());
    } else {
      got.push_back(inputs[in]);
      want.push_back(inputs[in++]);
    }
  }
  std::vector<Tensor> packed;
  std::vector<void*> ptrs = test::kernel_pointers(*k, got, packed);
  for (int64_t t = 0; t < k->tasks; ++t) k->run(ptrs.data(), t, t + 1);
  test::interpret(spec, want);
  for (size_t i = 0; i < spec.buffers.size(); ++i)
    if (spec.buffers[i].output) FUSOR_CHECK_CLOSE(got[i], want[i], rel, abs);
}

// A random batched GEMM: batch rank 0 to 2 (broadcast batch dims included), m, n and k
// around the tiles, A and B in random layouts (transposes), an epilogue of random ops over
// Acc and a broadcast operand, stored in a random layout.
KernelSpec random_gemm(std::mt19937_64& rng, std::vector<Tensor>& inputs) {
  KernelSpec spec;
  spec.kind = KernelKind::Contraction;
  spec.name = "fuzz_gemm";
  ContractionSpec& c = spec.contraction;
  const int64_t sizes[] = {1, 2, 5, 6, 7, 8, 13, 16, 17, 31, 32, 33, 40, 64, 65, 70};
  for (size_t d = 0, rank = rng() % 3; d < rank; ++d) c.batch.push_back(1 + int64_t(rng() % 3));
  c.m = sizes[rng() % std::size(sizes)];
  c.n = sizes[rng() % std::size(sizes)];
  c.k = sizes[rng() % std::size(sizes)];
  auto operand = [&](int64_t rows, int64_t cols, StridedAccess& a, const char* name) {
    std::vector<int64_t> shape = c.batch;
    shape.push_back(rows);
    shape.push_back(cols);
    a.buffer = int(spec.buffers.size());
    int64_t elements = random_layout(rng, shape, false, a);
    for (size_t d = 0; d < c.batch.size(); ++d)
      if (rng() % 3 == 0) a.strides[d] = 0;  // a broadcast batch dim (the offset stays valid)
    spec.buffers.push_back(BufferSpec{name, DType::F32, elements, false, false});
    inputs.push_back(test::randn({elements}, rng()));
  };
  operand(c.m, c.k, c.a, "a");
  operand(c.k, c.n, c.b, "b");
  std::vector<int64_t> space = c.batch;
  space.push_back(c.m);
  space.push_back(c.n);
  ExprGraph& g = c.epilogue;
  ScalarExpr acc;
  acc.op = ScalarOp::Acc;
  g.nodes.push_back(acc);
  std::vector<int32_t> values = {0};
  StridedAccess bias;
  bias.buffer = int(spec.buffers.size());
  const int64_t elements = random_layout(rng, space, true, bias);
  spec.buffers.push_back(BufferSpec{"bias", DType::F32, elements, false, false});
  inputs.push_back(test::randn({elements}, rng()));
  g.accesses.push_back(bias);
  ScalarExpr load;
  load.op = ScalarOp::Load;
  load.load = 0;
  g.nodes.push_back(load);
  values.push_back(1);
  if (rng() % 3) add_random_ops(rng, g, values, {}, {1});
  StridedAccess out;
  out.buffer = int(spec.buffers.size());
  const int64_t out_elements = random_layout(rng, space, false, out);
  spec.buffers.push_back(BufferSpec{"out", DType::F32, out_elements, true, false});
  g.accesses.push_back(out);
  g.stores.push_back({int32_t(g.nodes.size() - 1), 1});
  spec.tasks = numel_of(c.batch) * ((c.m + 63) / 64);
  return spec;
}

// A random row reduction: any kind over a rank 2 or 3 row space (rows of 1 to 300
// columns), a prologue of random ops over inputs in random layouts, an epilogue of random
// ops over Acc, RowStat (softmax, layernorm) and a broadcast operand, stored per element in
// a random layout or (sum, mean, max) once per row.
KernelSpec random_reduction(std::mt19937_64& rng, std::vector<Tensor>& inputs) {
  using Kind = RowReductionSpec::Kind;
  KernelSpec spec;
  spec.kind = KernelKind::RowReduction;
  spec.name = "fuzz_reduction";
  RowReductionSpec& r = spec.reduction;
  r.kind = Kind(rng() % 5);
  r.epsilon = 1e-5;
  const int64_t rows[] = {1, 2, 3, 5}, cols[] = {1, 7, 8, 16, 17, 33, 256, 257, 300};
  for (size_t d = 0, rank = 1 + rng() % 2; d < rank; ++d) r.shape.push_back(rows[rng() % std::size(rows)]);
  r.shape.push_back(cols[rng() % std::size(cols)]);
  spec.tasks = numel_of(std::vector<int64_t>(r.shape.begin(), r.shape.end() - 1));
  auto add_input = [&](ExprGraph& g, std::vector<int32_t>& values, bool broadcast) {
    StridedAccess a;
    a.buffer = int(spec.buffers.size());
    const int64_t elements = random_layout(rng, r.shape, broadcast, a);
    spec.buffers.push_back(BufferSpec{"in" + std::to_string(a.buffer), DType::F32, elements, false, false});
    inputs.push_back(test::randn({elements}, rng()));
    g.accesses.push_back(a);
    ScalarExpr load;
    load.op = ScalarOp::Load;
    load.load = int32_t(g.accesses.size() - 1);
    g.nodes.push_back(load);
    values.push_back(int32_t(g.nodes.size() - 1));
  };
  std::vector<int32_t> pro;
  add_input(r.prologue, pro, false);
  if (rng() % 2) add_input(r.prologue, pro, true);
  if (rng() % 2) add_random_ops(rng, r.prologue, pro, {}, pro);
  if (r.prologue.nodes.back().op == ScalarOp::Load && rng() % 2) {  // a last node that is not the load
    ScalarExpr cast;
    cast.op = ScalarOp::Cast;
    cast.args[0] = int32_t(r.prologue.nodes.size() - 1);
    r.prologue.nodes.push_back(cast);
  }
  const bool per_element = r.kind == Kind::Softmax || r.kind == Kind::LayerNorm;
  ExprGraph& g = r.epilogue;
  std::vector<int32_t> epi;
  ScalarExpr acc;
  acc.op = ScalarOp::Acc;
  g.nodes.push_back(acc);
  epi.push_back(0);
  if (per_element) {
    for (double stat : {0.0, 1.0}) {
      ScalarExpr e;
      e.op = ScalarOp::RowStat;
      e.value = stat;
      g.nodes.push_back(e);
    }
    add_input(g, epi, true);
    if (rng() % 2) add_random_ops(rng, g, epi, {}, {epi.back()});
  } else if (rng() % 2) {
    add_random_ops(rng, g, epi, {}, {});
  }
  StridedAccess out;
  out.buffer = int(spec.buffers.size());
  int64_t elements;
  if (per_element) {
    elements = random_layout(rng, r.shape, false, out);
  } else {  // one element per row, inner stride 0
    std::vector<int64_t> lead(r.shape.begin(), r.shape.end() - 1);
    elements = random_layout(rng, lead, false, out);
    out.strides.push_back(0);
  }
  spec.buffers.push_back(BufferSpec{"out", DType::F32, elements, true, false});
  g.accesses.push_back(out);
  g.stores.push_back({int32_t(g.nodes.size() - 1), int32_t(g.accesses.size() - 1)});
  return spec;
}

KernelSpec random_spec(std::mt19937_64& rng, std::vector<Tensor>& inputs) {
  KernelSpec spec;
  spec.kind = KernelKind::Pointwise;
  spec.name = "fuzz";
  const size_t rank = 1 + rng() % 3;
  const int64_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 40};
  std::vector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(sizes[rng() % std::size(sizes)]);
  spec.pointwise.shape = shape;
  spec.tasks = 1 + int64_t(rng() % 5);
  ExprGraph& g = spec.pointwise.body;
  // Inputs: 1 to 3 f32 buffers and maybe one bool, each read through its own layout.
  const int f32_inputs = 1 + int(rng() % 3);
  const bool with_bool = rng() % 2;
  std::vector<int32_t> values, bools;
  for (int i = 0; i < f32_inputs + (with_bool ? 1 : 0); ++i) {
    const bool is_bool = i == f32_inputs;
    StridedAccess a;
    a.buffer = int(spec.buffers.size());
    a.dtype = is_bool ? DType::Bool : DType::F32;
    const int64_t elements = random_layout(rng, shape, true, a);
    spec.buffers.push_back(BufferSpec{"in" + std::to_string(i), a.dtype, elements, false, false});
    g.accesses.push_back(a);
    ScalarExpr load;
    load.op = ScalarOp::Load;
    load.dtype = a.dtype;
    load.load = int32_t(g.accesses.size() - 1);
    g.nodes.push_back(load);
    (is_bool ? bools : values).push_back(int32_t(g.nodes.size() - 1));
    if (is_bool) {
      std::vector<double> v(static_cast<size_t>(elements));
      for (double& x : v) x = double(rng() % 2);
      inputs.push_back(test::make(DType::Bool, Shape{elements}, v));
    } else {
      inputs.push_back(test::randn({elements}, rng(), 2.0));
    }
  }
  ScalarExpr k;
  k.op = ScalarOp::Const;
  k.value = 0.5;
  g.nodes.push_back(k);
  values.push_back(int32_t(g.nodes.size() - 1));
  add_random_ops(rng, g, values, bools, std::vector<int32_t>(values.begin(), values.begin() + f32_inputs));
  // One or two outputs in their own layouts (no broadcast: every element written once).
  const int outputs = 1 + int(rng() % 2);
  for (int o = 0; o < outputs; ++o) {
    StridedAccess a;
    a.buffer = int(spec.buffers.size());
    const int64_t elements = random_layout(rng, shape, false, a);
    spec.buffers.push_back(BufferSpec{"out" + std::to_string(o), DType::F32, elements, true, false});
    g.accesses.push_back(a);
    g.stores.push_back({o == 0 ? int32_t(g.nodes.size() - 1) : values[rng() % values.size()], int32_t(g.accesses.size() - 1)});
  }
  return spec;
}

}  // namespace

TEST_SUITE("asmjit/fuzz") {
  TEST_CASE("random pointwise specs agree with the interpreter") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      INFO(be->target_description());
      std::mt19937_64 rng(20261130);
      for (int round = 0; round < 200; ++round) {
        CAPTURE(round);
        std::vector<Tensor> inputs;
        KernelSpec spec = random_spec(rng, inputs);
        INFO(spec.str());
        check_against_interpreter(*be, spec, inputs, 1e-4, 1e-5);
      }
    }
  }

  TEST_CASE("random batched gemms with random layouts and epilogues agree with the interpreter") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      INFO(be->target_description());
      std::mt19937_64 rng(20261201);
      for (int round = 0; round < 100; ++round) {
        CAPTURE(round);
        std::vector<Tensor> inputs;
        KernelSpec spec = random_gemm(rng, inputs);
        INFO(spec.str());
        // Sums of k products of N(0, 1) terms (|sum| ~ sqrt(k)), through the epilogue's ops.
        check_against_interpreter(*be, spec, inputs, 1e-4, 2e-5 * std::sqrt(double(spec.contraction.k)));
      }
    }
  }

  TEST_CASE("random row reductions with random prologues layouts and epilogues agree with the interpreter") {
    for (AsmjitBackend* be : test::asmjit_backends_or_skip()) {
      INFO(be->target_description());
      std::mt19937_64 rng(20261202);
      for (int round = 0; round < 200; ++round) {
        CAPTURE(round);
        std::vector<Tensor> inputs;
        KernelSpec spec = random_reduction(rng, inputs);
        INFO(spec.str());
        // Float lane sums of up to 300 terms against double (sum, mean, the statistics); the
        // epilogue's ops carry their inputs' error.
        check_against_interpreter(*be, spec, inputs, 1e-4, 1e-4);
      }
    }
  }
}
