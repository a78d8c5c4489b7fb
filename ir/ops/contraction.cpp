// Schemas of the contractions: Conv (2-D, NCHW), MatMul (numpy semantics), Gemm.
#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

void check_conv(const Node& n) {
  check_window_attributes(n);
  if (attr_int(n, "group") < 1) node_fail(n, ErrorCode::InvalidGraph, "group must be >= 1, got ", attr_int(n, "group"));
}

void infer_conv(InferContext& ctx) {
  ctx.expect_floating(0);
  ctx.expect_same_dtype(0, 1);
  Conv2dParams p = conv2d_params(ctx.node(), ctx.input(0).shape, ctx.input(1).shape);
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    if (ctx.input(2).shape != Shape{p.m})
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(2), " must be [", p.m, "]");
  }
  ctx.set_output(0, ctx.input(0).dtype, Shape{p.n, p.m, p.oh, p.ow});
}

void infer_matmul(InferContext& ctx) {
  ctx.expect_floating(0);
  ctx.expect_same_dtype(0, 1);
  Shape a = ctx.input(0).shape, b = ctx.input(1).shape;
  if (a.rank() == 0 || b.rank() == 0)
    ctx.fail(ErrorCode::ShapeMismatch, "MatMul does not take scalars: ", ctx.describe_input(0), ", ",
             ctx.describe_input(1));
  int64_t k_a = a[-1];
  int64_t k_b = b.rank() == 1 ? b[0] : b[-2];
  if (k_a != k_b)
    ctx.fail(ErrorCode::ShapeMismatch, "inner dimensions differ: ", ctx.describe_input(0), " · ",
             ctx.describe_input(1), " (", k_a, " vs ", k_b, ")");
  Shape batch_a(std::vector<int64_t>(a.dims().begin(), a.dims().end() - std::min(2, a.rank())));
  Shape batch_b(std::vector<int64_t>(b.dims().begin(), b.dims().end() - std::min(2, b.rank())));
  Shape batch;
  if (!broadcast_shapes(batch_a, batch_b, &batch))
    ctx.fail(ErrorCode::ShapeMismatch, "batch dimensions do not broadcast: ", ctx.describe_input(0), " · ",
             ctx.describe_input(1));
  std::vector<int64_t> out = batch.dims();
  if (a.rank() >= 2) out.push_back(a[-2]);
  if (b.rank() >= 2) out.push_back(b[-1]);
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void infer_gemm(InferContext& ctx) {
  ctx.expect_floating(0);
  ctx.expect_same_dtype(0, 1);
  ctx.expect_rank(0, 2);
  ctx.expect_rank(1, 2);
  const Node& n = ctx.node();
  const Shape& a = ctx.input(0).shape;
  const Shape& b = ctx.input(1).shape;
  bool ta = attr_int(n, "transA") != 0, tb = attr_int(n, "transB") != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  if (k != kb)
    ctx.fail(ErrorCode::ShapeMismatch, "inner dimensions differ: ", ctx.describe_input(0), (ta ? "ᵀ" : ""), " · ",
             ctx.describe_input(1), (tb ? "ᵀ" : ""), " (", k, " vs ", kb, ")");
  Shape out{m, nn};
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    Shape bc;
    if (ctx.input(2).shape.rank() > 2 || !broadcast_shapes(ctx.input(2).shape, out, &bc) || bc != out)
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(2), " does not broadcast to the output ", out.str());
  }
  ctx.set_output(0, ctx.input(0).dtype, std::move(out));
}

void check_gemm(const Node& n) {
  for (const char* name : {"transA", "transB"})
    if (attr_int(n, name) != 0 && attr_int(n, name) != 1)
      node_fail(n, ErrorCode::InvalidGraph, name, " must be 0 or 1, got ", attr_int(n, name));
}

}  // namespace

const OpSchema kConvSchema{"Conv",
                           2,
                           3,
                           1,
                           {{"auto_pad", AttrType::String, false, "NOTSET"},
                            {"dilations", AttrType::Ints, false, std::vector<int64_t>{}},
                            {"group", AttrType::Int, false, 1},
                            {"kernel_shape", AttrType::Ints, false, std::vector<int64_t>{}},
                            {"pads", AttrType::Ints, false, std::vector<int64_t>{}},
                            {"strides", AttrType::Ints, false, std::vector<int64_t>{}}},
                           check_conv,
                           infer_conv};
const OpSchema kMatMulSchema{"MatMul", 2, 2, 1, {}, nullptr, infer_matmul};
const OpSchema kGemmSchema{"Gemm",
                           2,
                           3,
                           1,
                           {{"alpha", AttrType::Float, false, 1.0},
                            {"beta", AttrType::Float, false, 1.0},
                            {"transA", AttrType::Int, false, 0},
                            {"transB", AttrType::Int, false, 0}},
                           check_gemm,
                           infer_gemm};

}  // namespace fusor
