// Schemas of the indexing operators and masks by position: GatherElements (index along one
// axis per element), GatherND (index tuples into the leading dims), their inverses
// ScatterElements and ScatterND (a copy of data with updates written, or combined by
// `reduction`, at the indexed places) and Trilu (the lower or upper triangle of the last two
// dims). Indices are data: kernels check their range.
#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

void expect_indices(InferContext& ctx, int i) {
  DType t = ctx.input(i).dtype;
  if (t != DType::I64 && t != DType::I32)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(i), " must be i64 or i32 indices");
}

// GatherElements' and ScatterElements' indices (input 1): of data's rank, no larger than
// data off the axis.
void check_element_indices(InferContext& ctx) {
  expect_indices(ctx, 1);
  const Shape& x = ctx.input(0).shape;
  const Shape& idx = ctx.input(1).shape;
  if (x.rank() == 0 || idx.rank() != x.rank())
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(1), " must have the rank of ", ctx.describe_input(0),
             " (at least 1)");
  const int axis = node_axis(ctx.node(), attr_int(ctx.node(), "axis"), x.rank(), "axis");
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis && idx[d] > x[d])
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(1), " is larger than ", ctx.describe_input(0),
               " in dimension ", d);
}

void infer_gather_elements(InferContext& ctx) {
  check_element_indices(ctx);
  ctx.set_output(0, ctx.input(0).dtype, ctx.input(1).shape);
}

void infer_gather_nd(InferContext& ctx) {
  expect_indices(ctx, 1);
  ctx.set_output(0, ctx.input(0).dtype, gather_nd_shape(ctx.node(), ctx.input(0).shape, ctx.input(1).shape));
}

void check_reduction(const Node& n) {
  const std::string& r = attr_string(n, "reduction");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    node_fail(n, ErrorCode::InvalidGraph, "reduction \"", r, "\" is not none, add, mul, max or min");
}

void infer_scatter_elements(InferContext& ctx) {
  check_element_indices(ctx);
  ctx.expect_same_dtype(0, 2);
  if (ctx.input(2).shape != ctx.input(1).shape)
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(2), " must have the shape of ", ctx.describe_input(1));
  ctx.set_output(0, ctx.input(0).dtype, ctx.input(0).shape);
}

void infer_scatter_nd(InferContext& ctx) {
  expect_indices(ctx, 1);
  ctx.expect_same_dtype(0, 2);
  const Shape& x = ctx.input(0).shape;
  const Shape& idx = ctx.input(1).shape;
  if (x.rank() == 0 || idx.rank() == 0)
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(0), " and ", ctx.describe_input(1), " must have rank >= 1");
  const int64_t k = idx[-1];
  if (k < 1 || k > x.rank())
    ctx.fail(ErrorCode::ShapeMismatch, "the last dim of ", ctx.describe_input(1), " (", k,
             ") must be in [1, the rank of ", ctx.describe_input(0), "]");
  std::vector<int64_t> want(idx.dims().begin(), idx.dims().end() - 1);
  for (int d = int(k); d < x.rank(); ++d) want.push_back(x[d]);
  if (ctx.input(2).shape != Shape(want))
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(2), " must have shape ", Shape(want).str(),
             " (the indices' leading dims, then the data's past the indexed ones)");
  ctx.set_output(0, ctx.input(0).dtype, x);
}

void infer_trilu(InferContext& ctx) {
  if (ctx.input(0).shape.rank() < 2) ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(0), " must have rank >= 2");
  if (ctx.has_input(1)) {
    ctx.expect_dtype(1, DType::I64);
    if (ctx.input(1).shape.numel() != 1 || ctx.input(1).shape.rank() > 1)
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(1), " (k) must be a scalar");
  }
  ctx.set_output(0, ctx.input(0).dtype, ctx.input(0).shape);
}

void check_trilu(const Node& n) {
  if (attr_int(n, "upper") != 0 && attr_int(n, "upper") != 1)
    node_fail(n, ErrorCode::InvalidGraph, "upper must be 0 or 1, got ", attr_int(n, "upper"));
}

}  // namespace

const OpSchema kGatherElementsSchema{"GatherElements", 2, 2, 1, {{"axis", AttrType::Int, false, 0}}, nullptr,
                                     infer_gather_elements};
const OpSchema kGatherNDSchema{"GatherND", 2, 2, 1, {{"batch_dims", AttrType::Int, false, 0}}, nullptr, infer_gather_nd};
// Scatter(data, indices, updates): data with each update written to (or, by reduction, added
// to, multiplied into, maxed or minned with) its indexed place, updates in order.
const OpSchema kScatterElementsSchema{"ScatterElements",
                                      3,
                                      3,
                                      1,
                                      {{"axis", AttrType::Int, false, 0}, {"reduction", AttrType::String, false, "none"}},
                                      check_reduction,
                                      infer_scatter_elements};
const OpSchema kScatterNDSchema{"ScatterND",     3, 3, 1, {{"reduction", AttrType::String, false, "none"}},
                                check_reduction, infer_scatter_nd};
// Trilu(x, k): keeps j - i >= k (upper) or j - i <= k (lower) of each [i, j] in the last two
// dims and zeroes the rest; k (optional, i64 scalar) may be a runtime value.
const OpSchema kTriluSchema{"Trilu", 1, 2, 1, {{"upper", AttrType::Int, false, 1}}, check_trilu, infer_trilu};

}  // namespace fusor
