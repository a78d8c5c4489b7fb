// Schemas of the reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin and ReduceProd over any set of
// axes. Axes come from the `axes` attribute (opset 13 ReduceMean/Max/Min) or a constant
// second input (opset 13 ReduceSum, opset 18 all); either form is accepted for every one.
// And the reductions along one axis: ArgMax (i64 indices), CumSum (the axis a constant
// scalar input) and TopK (k a constant input; the values and their i64 indices).
#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

void infer_reduce(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  if (ctx.input(0).dtype == DType::Bool)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), ": reductions do not take bool");
  const Tensor* axes_in = ctx.has_input(1) ? &ctx.require_constant(1, "axes") : nullptr;
  std::vector<int> axes = reduce_axes(ctx.node(), x, axes_in);
  bool keep = attr_int(ctx.node(), "keepdims") != 0;
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(x[i]);
    else if (keep) out.push_back(1);
    // Mean, Max, Min: no value (a sum over nothing is 0, a product 1)
    if (reduced && x[i] == 0 && ctx.node().op != OpKind::ReduceSum && ctx.node().op != OpKind::ReduceProd)
      ctx.fail(ErrorCode::ShapeMismatch, op_name(ctx.node().op), " over an empty axis ", i, " of ",
               ctx.describe_input(0), " has no value");
  }
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void check_01(const Node& n) {
  for (const AttrSpec& a : op_schema(n.op).attrs)
    if (a.type == AttrType::Int && a.name != "axis" && attr_int(n, a.name) != 0 && attr_int(n, a.name) != 1)
      node_fail(n, ErrorCode::InvalidGraph, a.name, " must be 0 or 1, got ", attr_int(n, a.name));
}

void infer_argmax(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  if (ctx.input(0).dtype == DType::Bool)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), ": ArgMax does not take bool");
  const int axis = node_axis(ctx.node(), attr_int(ctx.node(), "axis"), x.rank(), "axis");
  if (x[axis] == 0) ctx.fail(ErrorCode::ShapeMismatch, "ArgMax over the empty axis ", axis, " of ", ctx.describe_input(0));
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) {
    if (i != axis) out.push_back(x[i]);
    else if (attr_int(ctx.node(), "keepdims")) out.push_back(1);
  }
  ctx.set_output(0, DType::I64, Shape(std::move(out)));
}

void infer_cumsum(InferContext& ctx) {
  const DType t = ctx.input(0).dtype;
  if (t == DType::Bool) ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), ": CumSum does not take bool");
  if (ctx.input(1).shape.numel() != 1 || ctx.input(1).shape.rank() > 1)
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(1), " (axis) must be a scalar");
  std::vector<int64_t> axis = int_vector(ctx.node(), ctx.require_constant(1, "axis"), "axis");
  node_axis(ctx.node(), axis[0], ctx.input(0).shape.rank(), "axis");
  ctx.set_output(0, t, ctx.input(0).shape);
}

void infer_topk(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  if (ctx.input(0).dtype == DType::Bool)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), ": TopK does not take bool");
  ctx.expect_dtype(1, DType::I64);
  if (ctx.input(1).shape.numel() != 1 || ctx.input(1).shape.rank() > 1)
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(1), " (k) must hold one value");
  const int64_t k = ctx.require_constant(1, "k").data<int64_t>()[0];
  if (x.rank() == 0) ctx.fail(ErrorCode::ShapeMismatch, "TopK of the scalar ", ctx.describe_input(0));
  const int axis = node_axis(ctx.node(), attr_int(ctx.node(), "axis"), x.rank(), "axis");
  if (k < 0 || k > x[axis])
    ctx.fail(ErrorCode::ShapeMismatch, "k = ", k, " is outside [0, ", x[axis], "], the length of axis ", axis, " of ",
             ctx.describe_input(0));
  std::vector<int64_t> dims = x.dims();
  dims[size_t(axis)] = k;
  ctx.set_output(0, ctx.input(0).dtype, Shape(dims));
  ctx.set_output(1, DType::I64, Shape(std::move(dims)));
}

const std::vector<AttrSpec> kReduceAttrs = {{"axes", AttrType::Ints, false, std::vector<int64_t>{}},
                                            {"keepdims", AttrType::Int, false, 1},
                                            {"noop_with_empty_axes", AttrType::Int, false, 0}};

}  // namespace

const OpSchema kReduceMeanSchema{"ReduceMean", 1, 2, 1, kReduceAttrs, check_01, infer_reduce};
const OpSchema kReduceSumSchema{"ReduceSum", 1, 2, 1, kReduceAttrs, check_01, infer_reduce};
const OpSchema kReduceMaxSchema{"ReduceMax", 1, 2, 1, kReduceAttrs, check_01, infer_reduce};
const OpSchema kReduceMinSchema{"ReduceMin", 1, 2, 1, kReduceAttrs, check_01, infer_reduce};
const OpSchema kReduceProdSchema{"ReduceProd", 1, 2, 1, kReduceAttrs, check_01, infer_reduce};
// NaN is the maximum (numpy's argmax); ties take the first index, or the last with
// select_last_index.
const OpSchema kArgMaxSchema{"ArgMax",
                             1,
                             1,
                             1,
                             {{"axis", AttrType::Int, false, 0},
                              {"keepdims", AttrType::Int, false, 1},
                              {"select_last_index", AttrType::Int, false, 0}},
                             check_01,
                             infer_argmax};
// TopK(x, k): the k largest (or smallest) along axis and their indices, sorted (also with
// sorted=0, which leaves the order free); equal values in index order; NaN is larger than
// every number (numpy's sort).
const OpSchema kTopKSchema{"TopK",
                           2,
                           2,
                           2,
                           {{"axis", AttrType::Int, false, -1},
                            {"largest", AttrType::Int, false, 1},
                            {"sorted", AttrType::Int, false, 1}},
                           check_01,
                           infer_topk};
const OpSchema kCumSumSchema{"CumSum",
                             2,
                             2,
                             1,
                             {{"exclusive", AttrType::Int, false, 0}, {"reverse", AttrType::Int, false, 0}},
                             check_01,
                             infer_cumsum};

}  // namespace fusor
