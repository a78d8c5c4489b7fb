// Schemas of the normalizations: BatchNormalization (inference), LayerNormalization, Softmax.
#include "ir/op_schema.h"

namespace fusor {

namespace {

void check_batchnorm(const Node& n) {
  if (attr_int(n, "training_mode") != 0)
    node_fail(n, ErrorCode::Unsupported, "training_mode=1; fusor is an inference engine");
  if (!(attr_float(n, "epsilon") >= 0))
    node_fail(n, ErrorCode::InvalidGraph, "epsilon must be >= 0, got ", attr_float(n, "epsilon"));
}

void infer_batchnorm(InferContext& ctx) {
  ctx.expect_floating(0);
  const Shape& x = ctx.input(0).shape;
  if (x.rank() < 2) ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(0), " must have rank >= 2 [N, C, ...]");
  for (int i = 1; i <= 4; ++i) {
    ctx.expect_same_dtype(0, i);
    if (ctx.input(i).shape != Shape{x[1]})
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(i), " must be [", x[1], "] (one per channel)");
  }
  ctx.set_output(0, ctx.input(0).dtype, x);
}

void check_eps(const Node& n) {
  if (!(attr_float(n, "epsilon") >= 0))
    node_fail(n, ErrorCode::InvalidGraph, "epsilon must be >= 0, got ", attr_float(n, "epsilon"));
}

void infer_layernorm(InferContext& ctx) {
  ctx.expect_floating(0);
  const Shape& x = ctx.input(0).shape;
  int axis;
  if (!normalize_axis(attr_int(ctx.node(), "axis"), x.rank(), &axis))
    ctx.fail(ErrorCode::InvalidGraph, "axis ", attr_int(ctx.node(), "axis"), " is out of range for ",
             ctx.describe_input(0));
  Shape norm(std::vector<int64_t>(x.dims().begin() + axis, x.dims().end()));
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    ctx.expect_same_dtype(0, i);
    Shape bc;
    if (!broadcast_shapes(ctx.input(i).shape, norm, &bc) || bc != norm)
      ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(i), " does not broadcast to the normalized shape ",
               norm.str());
  }
  ctx.set_output(0, ctx.input(0).dtype, x);
}

void infer_softmax(InferContext& ctx) {
  ctx.expect_floating(0);
  const Shape& x = ctx.input(0).shape;
  int axis;
  if (!normalize_axis(attr_int(ctx.node(), "axis"), std::max(1, x.rank()), &axis))
    ctx.fail(ErrorCode::InvalidGraph, "axis ", attr_int(ctx.node(), "axis"), " is out of range for ",
             ctx.describe_input(0));
  ctx.set_output(0, ctx.input(0).dtype, x);
}

}  // namespace

const OpSchema kBatchNormalizationSchema{"BatchNormalization",
                                         5,
                                         5,
                                         1,
                                         {{"epsilon", AttrType::Float, false, 1e-5},
                                          {"momentum", AttrType::Float, false, 0.9},
                                          {"training_mode", AttrType::Int, false, 0}},
                                         check_batchnorm,
                                         infer_batchnorm};
// Only the normalized output Y; ONNX's optional Mean and InvStdDev outputs are training aids.
const OpSchema kLayerNormalizationSchema{"LayerNormalization",
                                         2,
                                         3,
                                         1,
                                         {{"axis", AttrType::Int, false, -1},
                                          {"epsilon", AttrType::Float, false, 1e-5},
                                          {"stash_type", AttrType::Int, false, 1}},
                                         check_eps,
                                         infer_layernorm};
const OpSchema kSoftmaxSchema{"Softmax", 1, 1, 1, {{"axis", AttrType::Int, false, -1}}, nullptr, infer_softmax};

}  // namespace fusor
