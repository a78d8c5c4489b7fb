// Schemas of the pointwise operators: numpy-broadcasting binary/variadic arithmetic, unary
// math and activations (Clip, LeakyRelu, HardSigmoid, HardSwish), Cast and Where.
#include <cmath>

#include "ir/op_schema.h"

namespace fusor {

namespace {

void expect_numeric(InferContext& ctx, int i) {
  if (ctx.input(i).dtype == DType::Bool)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(i), ": ", op_name(ctx.node().op),
             " does not take bool");
}

// Broadcasts all present inputs (which must share one numeric dtype).
void infer_broadcast(InferContext& ctx) {
  Shape out = ctx.input(0).shape;
  expect_numeric(ctx, 0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    ctx.expect_same_dtype(0, i);
    Shape next;
    if (!broadcast_shapes(out, ctx.input(i).shape, &next))
      ctx.fail(ErrorCode::ShapeMismatch, "cannot broadcast ", ctx.describe_input(i), " with ", out.str());
    out = std::move(next);
  }
  ctx.set_output(0, ctx.input(0).dtype, std::move(out));
}

void infer_pow(InferContext& ctx) {
  ctx.expect_floating(0);
  infer_broadcast(ctx);
}

void infer_unary_float(InferContext& ctx) {
  ctx.expect_floating(0);
  ctx.set_output(0, ctx.input(0).dtype, ctx.input(0).shape);
}

void infer_unary_numeric(InferContext& ctx) {
  expect_numeric(ctx, 0);
  ctx.set_output(0, ctx.input(0).dtype, ctx.input(0).shape);
}

void check_gelu(const Node& n) {
  const std::string& a = attr_string(n, "approximate");
  if (a != "none" && a != "tanh")
    node_fail(n, ErrorCode::InvalidGraph, "approximate must be \"none\" or \"tanh\", got \"", a, "\"");
}

void check_cast(const Node& n) {
  DType t;
  if (!parse_dtype(attr_string(n, "to"), &t))
    node_fail(n, ErrorCode::InvalidGraph, "to=\"", attr_string(n, "to"),
              "\" is not a dtype (f32, f16, bf16, i64, i32, bool)");
}

void infer_cast(InferContext& ctx) {
  DType t;
  parse_dtype(attr_string(ctx.node(), "to"), &t);
  ctx.set_output(0, t, ctx.input(0).shape);
}

// Clip(x, min, max): min and max are optional scalar inputs (opset 11+) of x's dtype, or
// the opset-6 float attributes `min` / `max` (not both forms for one bound).
void check_clip(const Node& n) {
  for (const char* name : {"min", "max"})
    if (has_attr(n, name) && std::isnan(attr_float(n, name)))
      node_fail(n, ErrorCode::InvalidGraph, name, " is NaN");
}

void infer_clip(InferContext& ctx) {
  expect_numeric(ctx, 0);
  const char* names[] = {"", "min", "max"};
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    if (has_attr(ctx.node(), names[i]))
      ctx.fail(ErrorCode::InvalidGraph, names[i], " given both as attribute and as input ", i);
    ctx.expect_same_dtype(0, i);
    if (ctx.input(i).shape.numel() != 1 || ctx.input(i).shape.rank() > 1)
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(i), " must be a scalar");
  }
  if ((has_attr(ctx.node(), "min") || has_attr(ctx.node(), "max")) && !is_floating(ctx.input(0).dtype))
    ctx.fail(ErrorCode::DTypeMismatch, "the min/max attributes (opset 6) take a floating input, not ",
             ctx.describe_input(0));
  ctx.set_output(0, ctx.input(0).dtype, ctx.input(0).shape);
}

void check_alpha_finite(const Node& n) {
  for (const AttrSpec& a : op_schema(n.op).attrs)
    if (!std::isfinite(attr_float(n, a.name)))
      node_fail(n, ErrorCode::InvalidGraph, a.name, " must be finite, got ", attr_float(n, a.name));
}

void infer_where(InferContext& ctx) {
  ctx.expect_dtype(0, DType::Bool);
  ctx.expect_same_dtype(1, 2);
  Shape a, out;
  if (!broadcast_shapes(ctx.input(0).shape, ctx.input(1).shape, &a) || !broadcast_shapes(a, ctx.input(2).shape, &out))
    ctx.fail(ErrorCode::ShapeMismatch, "cannot broadcast ", ctx.describe_input(0), ", ", ctx.describe_input(1), " and ",
             ctx.describe_input(2));
  ctx.set_output(0, ctx.input(1).dtype, std::move(out));
}

}  // namespace

const OpSchema kAddSchema{"Add", 2, 2, 1, {}, nullptr, infer_broadcast};
const OpSchema kSubSchema{"Sub", 2, 2, 1, {}, nullptr, infer_broadcast};
const OpSchema kMulSchema{"Mul", 2, 2, 1, {}, nullptr, infer_broadcast};
const OpSchema kDivSchema{"Div", 2, 2, 1, {}, nullptr, infer_broadcast};
const OpSchema kPowSchema{"Pow", 2, 2, 1, {}, nullptr, infer_pow};
const OpSchema kMaxSchema{"Max", 1, kVariadic, 1, {}, nullptr, infer_broadcast};
const OpSchema kMinSchema{"Min", 1, kVariadic, 1, {}, nullptr, infer_broadcast};

const OpSchema kReluSchema{"Relu", 1, 1, 1, {}, nullptr, infer_unary_numeric};
const OpSchema kNegSchema{"Neg", 1, 1, 1, {}, nullptr, infer_unary_numeric};
const OpSchema kGeluSchema{"Gelu", 1, 1, 1, {{"approximate", AttrType::String, false, "none"}}, check_gelu,
                           infer_unary_float};
const OpSchema kErfSchema{"Erf", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kTanhSchema{"Tanh", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kSigmoidSchema{"Sigmoid", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kExpSchema{"Exp", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kSqrtSchema{"Sqrt", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kAbsSchema{"Abs", 1, 1, 1, {}, nullptr, infer_unary_numeric};
const OpSchema kReciprocalSchema{"Reciprocal", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kLogSchema{"Log", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kSinSchema{"Sin", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kCosSchema{"Cos", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kFloorSchema{"Floor", 1, 1, 1, {}, nullptr, infer_unary_float};
const OpSchema kCeilSchema{"Ceil", 1, 1, 1, {}, nullptr, infer_unary_float};
// To the nearest integer, halves to even (ONNX's Round, numpy's round).
const OpSchema kRoundSchema{"Round", 1, 1, 1, {}, nullptr, infer_unary_float};
// min(max(x, min), max), NaN propagating (numpy's clip); a missing bound does not clip.
const OpSchema kClipSchema{"Clip",
                           1,
                           3,
                           1,
                           {{"max", AttrType::Float, false, 0.0}, {"min", AttrType::Float, false, 0.0}},
                           check_clip,
                           infer_clip};
// x < 0 ? alpha * x : x.
const OpSchema kLeakyReluSchema{"LeakyRelu", 1, 1, 1, {{"alpha", AttrType::Float, false, 0.01}}, check_alpha_finite,
                                infer_unary_float};
// max(0, min(1, alpha * x + beta)).
const OpSchema kHardSigmoidSchema{"HardSigmoid",
                                  1,
                                  1,
                                  1,
                                  {{"alpha", AttrType::Float, false, 0.2}, {"beta", AttrType::Float, false, 0.5}},
                                  check_alpha_finite,
                                  infer_unary_float};
// x * max(0, min(1, x / 6 + 0.5)).
const OpSchema kHardSwishSchema{"HardSwish", 1, 1, 1, {}, nullptr, infer_unary_float};

// Cast's `to` is a fusor dtype name ("f16"), not ONNX's integer enum.
const OpSchema kCastSchema{"Cast", 1, 1, 1, {{"to", AttrType::String, true, {}}}, check_cast, infer_cast};
const OpSchema kWhereSchema{"Where", 3, 3, 1, {}, nullptr, infer_where};

}  // namespace fusor
