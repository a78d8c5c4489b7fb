// Schemas of the shape computations: Shape (a tensor's dims as i64), Range and
// ConstantOfShape. Their results depend only on shapes and constants, so tracing folds
// them away.
#include <cmath>

#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

void infer_shape(InferContext& ctx) {
  ctx.set_output(0, DType::I64, Shape{int64_t(shape_op_dims(ctx.node(), ctx.input(0).shape).size())});
}

double scalar(const Tensor& t) { return t.at(0); }

void infer_range(InferContext& ctx) {
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).shape.rank() != 0)
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(i), " must be a scalar");
    if (i) ctx.expect_same_dtype(0, i);
  }
  DType t = ctx.input(0).dtype;
  if (t != DType::F32 && t != DType::I32 && t != DType::I64)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), " must be f32, i32 or i64");
  if (t != DType::F32) {  // integers exactly (a double loses them near the int64 limits)
    const int64_t start = int_vector(ctx.node(), ctx.require_constant(0, "start"), "start")[0];
    const int64_t limit = int_vector(ctx.node(), ctx.require_constant(1, "limit"), "limit")[0];
    const int64_t delta = int_vector(ctx.node(), ctx.require_constant(2, "delta"), "delta")[0];
    if (delta == 0) ctx.fail(ErrorCode::InvalidArgument, "delta must be non-zero");
    // ceil((limit - start) / delta) in unsigned magnitudes (no overflow at the limits).
    uint64_t n = 0;
    if ((limit > start && delta > 0) || (limit < start && delta < 0)) {
      const uint64_t span = limit > start ? uint64_t(limit) - uint64_t(start) : uint64_t(start) - uint64_t(limit);
      const uint64_t step = delta > 0 ? uint64_t(delta) : uint64_t(0) - uint64_t(delta);
      n = span / step + (span % step != 0 ? 1 : 0);
    }
    if (n > uint64_t(kMaxElements)) ctx.fail(ErrorCode::OutOfMemory, "range of ", n, " elements is too large");
    ctx.set_output(0, t, Shape{int64_t(n)});
    return;
  }
  double start = scalar(ctx.require_constant(0, "start"));
  double limit = scalar(ctx.require_constant(1, "limit"));
  double delta = scalar(ctx.require_constant(2, "delta"));
  if (delta == 0 || !std::isfinite(delta) || !std::isfinite(start) || !std::isfinite(limit))
    ctx.fail(ErrorCode::InvalidArgument, "delta must be finite and non-zero, start and limit finite");
  double n = std::ceil((limit - start) / delta);
  if (n > double(kMaxElements)) ctx.fail(ErrorCode::OutOfMemory, "range of ", n, " elements is too large");
  ctx.set_output(0, t, Shape{int64_t(std::max(0.0, n))});
}

void check_constant_of_shape(const Node& n) {
  DType t;
  if (!parse_dtype(attr_string(n, "dtype"), &t))
    node_fail(n, ErrorCode::InvalidGraph, "dtype=\"", attr_string(n, "dtype"), "\" is not a dtype (f32, f16, bf16, i64, i32, bool)");
}

void infer_constant_of_shape(InferContext& ctx) {
  DType t;
  parse_dtype(attr_string(ctx.node(), "dtype"), &t);
  ctx.expect_dtype(0, DType::I64);
  std::vector<int64_t> dims = int_vector(ctx.node(), ctx.require_constant(0, "shape"), "shape");
  for (int64_t d : dims)
    if (d < 0) ctx.fail(ErrorCode::InvalidGraph, "shape ", Attribute(dims).str(), " has a negative dimension");
  ctx.set_output(0, t, Shape(std::move(dims)));  // set_output checks the element count
}

}  // namespace

const OpSchema kShapeSchema{"Shape",
                            1,
                            1,
                            1,
                            {{"end", AttrType::Int, false, 0}, {"start", AttrType::Int, false, 0}},
                            nullptr,
                            infer_shape};
const OpSchema kRangeSchema{"Range", 3, 3, 1, {}, nullptr, infer_range};
// ONNX's `value` is a one-element tensor attribute; fusor's attributes hold no tensors, so it
// is `value` (its element, as a float: exact for every integer up to 2^53) and `dtype` (its
// element type, a fusor dtype name as Cast's `to`; default f32, value 0 as in ONNX).
const OpSchema kConstantOfShapeSchema{"ConstantOfShape",
                                      1,
                                      1,
                                      1,
                                      {{"dtype", AttrType::String, false, "f32"}, {"value", AttrType::Float, false, 0.0}},
                                      check_constant_of_shape,
                                      infer_constant_of_shape};

}  // namespace fusor
