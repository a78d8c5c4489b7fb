// Schemas of the layout and data-movement operators: Transpose, Reshape, Flatten, Squeeze,
// Unsqueeze, Concat, Slice, Gather, Split, Expand, Tile, Pad. Shape-defining inputs
// (Reshape's shape, Slice's starts/ends/axes/steps, Squeeze/Unsqueeze's axes, Split's
// split, Expand's shape, Tile's repeats, Pad's pads and axes) must be constants when the
// graph is traced (they usually are, or fold to constants from Shape).
#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

void infer_transpose(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  std::vector<int> perm = transpose_perm(ctx.node(), x.rank());
  std::vector<int64_t> out;
  for (int p : perm) out.push_back(x[p]);
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void infer_reshape(InferContext& ctx) {
  const Tensor& shape = ctx.require_constant(1, "shape");
  ctx.set_output(0, ctx.input(0).dtype, reshape_target(ctx.node(), ctx.input(0).shape, shape));
}

void infer_flatten(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  // ONNX: axis in [-r, r], a negative one counting from the back (r + axis); r itself is
  // allowed, so the range is not normalize_axis's.
  const int64_t a = attr_int(ctx.node(), "axis");
  if (a < -int64_t(x.rank()) || a > x.rank())
    ctx.fail(ErrorCode::InvalidGraph, "axis ", a, " is out of range for ", ctx.describe_input(0));
  const int axis = int(a < 0 ? a + x.rank() : a);
  int64_t outer = checked_numel(std::vector<int64_t>(x.dims().begin(), x.dims().begin() + axis), "Flatten");
  int64_t inner = checked_numel(std::vector<int64_t>(x.dims().begin() + axis, x.dims().end()), "Flatten");
  ctx.set_output(0, ctx.input(0).dtype, Shape{outer, inner});
}

void infer_squeeze(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const Tensor* axes_in = ctx.has_input(1) ? &ctx.require_constant(1, "axes") : nullptr;
  std::vector<int> axes = squeeze_axes(ctx.node(), x, axes_in);
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(x[i]);
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void infer_unsqueeze(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const Tensor* axes_in = ctx.has_input(1) ? &ctx.require_constant(1, "axes") : nullptr;
  size_t n_axes = axes_in ? size_t(axes_in->numel()) : attr_ints(ctx.node(), "axes").size();
  int out_rank = x.rank() + int(n_axes);
  std::vector<int> axes = unsqueeze_axes(ctx.node(), out_rank, axes_in);
  std::vector<int64_t> out;
  size_t k = 0;
  for (int i = 0; i < out_rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) out.push_back(1);
    else out.push_back(x.dims()[k++]);
  }
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void infer_concat(InferContext& ctx) {
  const Shape& x0 = ctx.input(0).shape;
  int axis;
  if (!normalize_axis(attr_int(ctx.node(), "axis"), x0.rank(), &axis))
    ctx.fail(ErrorCode::InvalidGraph, "axis ", attr_int(ctx.node(), "axis"), " is out of range for ",
             ctx.describe_input(0));
  Shape out = x0;
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    ctx.expect_same_dtype(0, i);
    const Shape& xi = ctx.input(i).shape;
    if (xi.rank() != x0.rank())
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(i), " has a different rank than ", ctx.describe_input(0));
    for (int d = 0; d < x0.rank(); ++d)
      if (d != axis && xi[d] != x0[d])
        ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(i), " differs from ", ctx.describe_input(0),
                 " in dimension ", d, " (only the concat axis ", axis, " may differ)");
    out[axis] += xi[axis];
  }
  ctx.set_output(0, ctx.input(0).dtype, std::move(out));
}

void infer_slice(InferContext& ctx) {
  const Tensor& starts = ctx.require_constant(1, "starts");
  const Tensor& ends = ctx.require_constant(2, "ends");
  const Tensor* axes = ctx.has_input(3) ? &ctx.require_constant(3, "axes") : nullptr;
  const Tensor* steps = ctx.has_input(4) ? &ctx.require_constant(4, "steps") : nullptr;
  SliceParams p = slice_params(ctx.node(), ctx.input(0).shape, starts, ends, axes, steps);
  ctx.set_output(0, ctx.input(0).dtype, Shape(p.count));
}

void infer_gather(InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  DType it = ctx.input(1).dtype;
  if (it != DType::I64 && it != DType::I32)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(1), " must be i64 or i32 indices");
  int axis;
  if (x.rank() == 0 || !normalize_axis(attr_int(ctx.node(), "axis"), x.rank(), &axis))
    ctx.fail(ErrorCode::InvalidGraph, "axis ", attr_int(ctx.node(), "axis"), " is out of range for ",
             ctx.describe_input(0));
  std::vector<int64_t> out(x.dims().begin(), x.dims().begin() + axis);
  for (int64_t d : ctx.input(1).shape.dims()) out.push_back(d);
  out.insert(out.end(), x.dims().begin() + axis + 1, x.dims().end());
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void infer_split(InferContext& ctx) {
  const Tensor* split = ctx.has_input(1) ? &ctx.require_constant(1, "split") : nullptr;
  int axis;
  std::vector<int64_t> sizes = split_sizes(ctx.node(), ctx.input(0).shape, split, ctx.num_outputs(), &axis);
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Shape out = ctx.input(0).shape;
    out[axis] = sizes[size_t(i)];
    ctx.set_output(i, ctx.input(0).dtype, std::move(out));
  }
}

void check_split(const Node& n) {
  if (has_attr(n, "num_outputs") && attr_int(n, "num_outputs") < 1)
    node_fail(n, ErrorCode::InvalidGraph, "num_outputs must be >= 1, got ", attr_int(n, "num_outputs"));
}

void infer_expand(InferContext& ctx) {
  ctx.set_output(0, ctx.input(0).dtype,
                 expand_shape(ctx.node(), ctx.input(0).shape, ctx.require_constant(1, "shape")));
}

void infer_tile(InferContext& ctx) {
  ctx.set_output(0, ctx.input(0).dtype, tile_shape(ctx.node(), ctx.input(0).shape, ctx.require_constant(1, "repeats")));
}

void check_pad(const Node& n) {
  const std::string& m = attr_string(n, "mode");
  if (m != "constant" && m != "reflect" && m != "edge" && m != "wrap")
    node_fail(n, ErrorCode::InvalidGraph, "mode must be constant, reflect, edge or wrap, got \"", m, "\"");
}

void infer_pad(InferContext& ctx) {
  const Node& n = ctx.node();
  if (!ctx.has_input(1) && !has_attr(n, "pads")) ctx.fail(ErrorCode::InvalidGraph, "pads is missing (input 1 or attribute)");
  const Tensor* pads = ctx.has_input(1) ? &ctx.require_constant(1, "pads") : nullptr;
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    if (ctx.input(2).shape.numel() != 1 || ctx.input(2).shape.rank() > 1)
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(2), " (constant_value) must be a scalar");
    if (has_attr(n, "value")) ctx.fail(ErrorCode::InvalidGraph, "value given both as attribute and as input 2");
  }
  const Tensor* axes = ctx.has_input(3) ? &ctx.require_constant(3, "axes") : nullptr;
  ctx.set_output(0, ctx.input(0).dtype, pad_params(n, ctx.input(0).shape, pads, axes).out);
}

}  // namespace

const OpSchema kTransposeSchema{"Transpose", 1, 1, 1, {{"perm", AttrType::Ints, false, std::vector<int64_t>{}}},
                                nullptr, infer_transpose};
const OpSchema kReshapeSchema{"Reshape", 2, 2, 1, {{"allowzero", AttrType::Int, false, 0}}, nullptr, infer_reshape};
const OpSchema kFlattenSchema{"Flatten", 1, 1, 1, {{"axis", AttrType::Int, false, 1}}, nullptr, infer_flatten};
const OpSchema kSqueezeSchema{"Squeeze", 1, 2, 1, {{"axes", AttrType::Ints, false, std::vector<int64_t>{}}}, nullptr,
                              infer_squeeze};
const OpSchema kUnsqueezeSchema{"Unsqueeze", 1, 2, 1, {{"axes", AttrType::Ints, false, std::vector<int64_t>{}}},
                                nullptr, infer_unsqueeze};
const OpSchema kConcatSchema{"Concat", 1, kVariadic, 1, {{"axis", AttrType::Int, true, {}}}, nullptr, infer_concat};
const OpSchema kSliceSchema{"Slice", 3, 5, 1, {}, nullptr, infer_slice};
const OpSchema kGatherSchema{"Gather", 2, 2, 1, {{"axis", AttrType::Int, false, 0}}, nullptr, infer_gather};

}  // namespace fusor

namespace fusor {

// The sizes come from the `split` input (opset 13+), the `split` attribute (opset 11), the
// `num_outputs` attribute (opset 18) or equal parts; one output per part.
const OpSchema kSplitSchema{"Split",
                            1,
                            2,
                            1,
                            {{"axis", AttrType::Int, false, 0},
                             {"num_outputs", AttrType::Int, false, 0},
                             {"split", AttrType::Ints, false, std::vector<int64_t>{}}},
                            check_split,
                            infer_split,
                            kVariadic};
const OpSchema kExpandSchema{"Expand", 2, 2, 1, {}, nullptr, infer_expand};
const OpSchema kTileSchema{"Tile", 2, 2, 1, {}, nullptr, infer_tile};
// Pad(data, pads, constant_value, axes) (opset 18) or Pad(data) {pads, value} (opset 2);
// modes constant, reflect, edge, wrap; negative pads crop.
const OpSchema kPadSchema{"Pad",
                          1,
                          4,
                          1,
                          {{"mode", AttrType::String, false, "constant"},
                           {"pads", AttrType::Ints, false, std::vector<int64_t>{}},
                           {"value", AttrType::Float, false, 0.0}},
                          check_pad,
                          infer_pad};

}  // namespace fusor
