// Schemas of the pointwise operators: numpy-broadcasting binary/variadic arithmetic, unary
// math, Cast and Where.
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

// Cast's `to` is a fusor dtype name ("f16"), not ONNX's integer enum.
const OpSchema kCastSchema{"Cast", 1, 1, 1, {{"to", AttrType::String, true, {}}}, check_cast, infer_cast};
const OpSchema kWhereSchema{"Where", 3, 3, 1, {}, nullptr, infer_where};

}  // namespace fusor
