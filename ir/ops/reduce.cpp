// Schemas of the reductions: ReduceMean, ReduceSum and ReduceMax over any set of axes. Axes come from
// the `axes` attribute (opset 13 ReduceMean) or a constant second input (opset 13 ReduceSum,
// opset 18 both); either form is accepted for both ops.
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
    if (reduced && x[i] == 0 && ctx.node().op != OpKind::ReduceSum)
      ctx.fail(ErrorCode::ShapeMismatch, op_name(ctx.node().op), " over an empty axis ", i, " of ",
               ctx.describe_input(0), " has no value");
  }
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

const std::vector<AttrSpec> kReduceAttrs = {{"axes", AttrType::Ints, false, std::vector<int64_t>{}},
                                            {"keepdims", AttrType::Int, false, 1},
                                            {"noop_with_empty_axes", AttrType::Int, false, 0}};

}  // namespace

const OpSchema kReduceMeanSchema{"ReduceMean", 1, 2, 1, kReduceAttrs, nullptr, infer_reduce};
const OpSchema kReduceSumSchema{"ReduceSum", 1, 2, 1, kReduceAttrs, nullptr, infer_reduce};
const OpSchema kReduceMaxSchema{"ReduceMax", 1, 2, 1, kReduceAttrs, nullptr, infer_reduce};

}  // namespace fusor
