// Schemas of the comparisons and logical operators: Equal, Less, LessOrEqual, Greater,
// GreaterOrEqual (numpy broadcasting, bool results), And, Or, Not (bool in and out), IsNaN
// and IsInf (floating in, bool out).
#include "ir/op_schema.h"

namespace fusor {

namespace {

Shape broadcast_inputs(InferContext& ctx) {
  ctx.expect_same_dtype(0, 1);
  Shape out;
  if (!broadcast_shapes(ctx.input(0).shape, ctx.input(1).shape, &out))
    ctx.fail(ErrorCode::ShapeMismatch, "cannot broadcast ", ctx.describe_input(0), " with ", ctx.describe_input(1));
  return out;
}

// Equal takes bool too; the order comparisons take numbers only.
void infer_compare(InferContext& ctx) {
  if (ctx.node().op != OpKind::Equal && ctx.input(0).dtype == DType::Bool)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), ": ", op_name(ctx.node().op), " does not take bool");
  ctx.set_output(0, DType::Bool, broadcast_inputs(ctx));
}

void infer_logical(InferContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.expect_dtype(i, DType::Bool);
  ctx.set_output(0, DType::Bool, ctx.num_inputs() == 2 ? broadcast_inputs(ctx) : ctx.input(0).shape);
}

void infer_float_test(InferContext& ctx) {
  ctx.expect_floating(0);
  ctx.set_output(0, DType::Bool, ctx.input(0).shape);
}

void check_isinf(const Node& n) {
  for (const char* name : {"detect_negative", "detect_positive"})
    if (attr_int(n, name) != 0 && attr_int(n, name) != 1)
      node_fail(n, ErrorCode::InvalidGraph, name, " must be 0 or 1, got ", attr_int(n, name));
}

}  // namespace

const OpSchema kEqualSchema{"Equal", 2, 2, 1, {}, nullptr, infer_compare};
const OpSchema kLessSchema{"Less", 2, 2, 1, {}, nullptr, infer_compare};
const OpSchema kLessOrEqualSchema{"LessOrEqual", 2, 2, 1, {}, nullptr, infer_compare};
const OpSchema kGreaterSchema{"Greater", 2, 2, 1, {}, nullptr, infer_compare};
const OpSchema kGreaterOrEqualSchema{"GreaterOrEqual", 2, 2, 1, {}, nullptr, infer_compare};
const OpSchema kAndSchema{"And", 2, 2, 1, {}, nullptr, infer_logical};
const OpSchema kOrSchema{"Or", 2, 2, 1, {}, nullptr, infer_logical};
const OpSchema kNotSchema{"Not", 1, 1, 1, {}, nullptr, infer_logical};
const OpSchema kIsNaNSchema{"IsNaN", 1, 1, 1, {}, nullptr, infer_float_test};
const OpSchema kIsInfSchema{"IsInf",
                            1,
                            1,
                            1,
                            {{"detect_negative", AttrType::Int, false, 1}, {"detect_positive", AttrType::Int, false, 1}},
                            check_isinf,
                            infer_float_test};

}  // namespace fusor
