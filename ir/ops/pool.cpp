// Schemas of the 2-D pools over NCHW: MaxPool, AveragePool, GlobalAveragePool.
#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

void infer_pool(InferContext& ctx) {
  ctx.expect_floating(0);
  Pool2dParams p = pool2d_params(ctx.node(), ctx.input(0).shape);
  ctx.set_output(0, ctx.input(0).dtype, Shape{p.n, p.c, p.oh, p.ow});
}

void infer_global_pool(InferContext& ctx) {
  ctx.expect_floating(0);
  const Shape& x = ctx.input(0).shape;
  if (x.rank() < 3) ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(0), " must have rank >= 3 [N, C, ...]");
  std::vector<int64_t> out = x.dims();
  for (size_t i = 2; i < out.size(); ++i) {
    if (out[i] == 0) ctx.fail(ErrorCode::ShapeMismatch, "average over an empty axis in ", ctx.describe_input(0));
    out[i] = 1;
  }
  ctx.set_output(0, ctx.input(0).dtype, Shape(std::move(out)));
}

void check_maxpool(const Node& n) {
  check_window_attributes(n);
  if (attr_int(n, "storage_order") != 0)
    node_fail(n, ErrorCode::Unsupported, "storage_order=1 (column-major indices) is not supported");
}

}  // namespace

const OpSchema kMaxPoolSchema{"MaxPool",
                              1,
                              1,
                              1,
                              {{"auto_pad", AttrType::String, false, "NOTSET"},
                               {"ceil_mode", AttrType::Int, false, 0},
                               {"dilations", AttrType::Ints, false, std::vector<int64_t>{}},
                               {"kernel_shape", AttrType::Ints, true, {}},
                               {"pads", AttrType::Ints, false, std::vector<int64_t>{}},
                               {"storage_order", AttrType::Int, false, 0},
                               {"strides", AttrType::Ints, false, std::vector<int64_t>{}}},
                              check_maxpool,
                              infer_pool};
const OpSchema kAveragePoolSchema{"AveragePool",
                                  1,
                                  1,
                                  1,
                                  {{"auto_pad", AttrType::String, false, "NOTSET"},
                                   {"ceil_mode", AttrType::Int, false, 0},
                                   {"count_include_pad", AttrType::Int, false, 0},
                                   {"dilations", AttrType::Ints, false, std::vector<int64_t>{}},
                                   {"kernel_shape", AttrType::Ints, true, {}},
                                   {"pads", AttrType::Ints, false, std::vector<int64_t>{}},
                                   {"strides", AttrType::Ints, false, std::vector<int64_t>{}}},
                                  check_window_attributes,
                                  infer_pool};
const OpSchema kGlobalAveragePoolSchema{"GlobalAveragePool", 1, 1, 1, {}, nullptr, infer_global_pool};

}  // namespace fusor
