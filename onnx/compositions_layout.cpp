// ONNX operators of indices, layout and normalization that fusor writes as its own (Note
// [Compositions]): CastLike, Size, ArgMin, DepthToSpace, SpaceToDepth, OneHot, EyeLike,
// Hardmax, MeanVarianceNormalization, LRN, Upsample, Scatter and ReverseSequence. What
// depends on the input's shape
// (a reshape's dims, a Range of classes or rows) is computed from Shape in the graph and
// folds to constants when a plan is traced.
#include "ir/error.h"
#include "onnx/composition_body.h"

namespace fusor::onnx_import::composition {

namespace {

// A blocksize attribute: given and positive.
int64_t blocksize(const OnnxNode& n, CompositionContext& cx) {
  const int64_t b = int_attr(n, "blocksize", 0);
  if (b < 1 || b > (int64_t(1) << 30)) cx.fail(ErrorCode::InvalidGraph, "blocksize must be in [1, 2^30], got " + std::to_string(b));
  return b;
}

void require_rank(Body& b, CompositionContext& cx, int want) {
  const int rank = cx.known_rank(b.x());
  if (rank >= 0 && rank != want)
    cx.fail(ErrorCode::InvalidGraph, "takes a " + std::to_string(want) + "-D input, got rank " + std::to_string(rank));
}

}  // namespace

std::vector<OnnxNode> cast_like(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string& target = b.input(1, "target_type");
  DType t;
  if (!cx.known_dtype(target, &t))
    cx.fail(ErrorCode::Unsupported, "the dtype of target_type '" + target + "' is not known when the model is loaded");
  b.op("Cast", {b.x()}, {cast_to(t)}, b.y());
  return b.done();
}

// The product of x's dims, an i64 scalar.
std::vector<OnnxNode> size(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  b.op("ReduceProd", {b.op("Shape", {b.x()})}, {int_attribute("keepdims", 0)}, b.y());
  return b.done();
}

// ArgMax of an order-reversing map: -x for floats (NaN stays the extreme, as ArgMin's), and
// -1 - x for integers (no overflow at the type's minimum).
std::vector<OnnxNode> arg_min(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string reversed = b.x_is_integer() ? b.op("Sub", {b.typed_scalar(-1), b.x()}) : b.op("Neg", {b.x()});
  b.op("ArgMax", {reversed}, n.attrs, b.y());
  return b.done();
}

// [N, C, H, W] -> [N, C / b^2, H b, W b]: DCR takes the blocks from the outer part of C,
// CRD from the inner (as PixelShuffle).
std::vector<OnnxNode> depth_to_space(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  require_rank(b, cx, 4);
  const int64_t k = blocksize(n, cx);
  const std::string mode = string_attr(n, "mode", "DCR");
  if (mode != "DCR" && mode != "CRD") cx.fail(ErrorCode::InvalidGraph, "mode \"" + mode + "\" is not DCR or CRD");
  const std::string s = b.op("Shape", {b.x()});
  const std::string lead = b.dims(s, 0, 1), h = b.dims(s, 2, 3), w = b.dims(s, 3, 4), kk = cx.ints({k});
  const bool dcr = mode == "DCR";
  const std::string split =
      b.op("Reshape", {b.x(), b.concat({lead, cx.ints(dcr ? std::vector<int64_t>{k, k, -1} : std::vector<int64_t>{-1, k, k}), h, w})});
  const std::string moved = b.op(
      "Transpose", {split},
      {ints_attribute("perm", dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3})});
  b.op("Reshape", {moved, b.concat({lead, cx.ints({-1}), b.op("Mul", {h, kk}), b.op("Mul", {w, kk})})}, {}, b.y());
  return b.done();
}

// [N, C, H, W] -> [N, C b^2, H / b, W / b], the blocks outermost in the new channels.
std::vector<OnnxNode> space_to_depth(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  require_rank(b, cx, 4);
  const int64_t k = blocksize(n, cx);
  const std::string s = b.op("Shape", {b.x()});
  const std::string kk = cx.ints({k});
  const std::string h = b.op("Div", {b.dims(s, 2, 3), kk}), w = b.op("Div", {b.dims(s, 3, 4), kk});
  const std::string split = b.op("Reshape", {b.x(), b.concat({b.dims(s, 0, 2), h, kk, w, kk})});
  const std::string moved = b.op("Transpose", {split}, {ints_attribute("perm", {0, 3, 5, 1, 2, 4})});
  b.op("Reshape", {moved, b.concat({b.dims(s, 0, 1), cx.ints({-1}), h, w})}, {}, b.y());
  return b.done();
}

// values[1] where the index (negative ones counted from depth) equals the class along the
// new axis, else values[0]: indices outside [-depth, depth) give values[0] throughout.
std::vector<OnnxNode> one_hot(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string& depth_in = b.input(1, "depth");
  const std::string& values = b.input(2, "values");
  const std::string idx = b.op("Cast", {b.x()}, {cast_to(DType::I64)});
  const std::string depth = b.op("Reshape", {b.op("Cast", {depth_in}, {cast_to(DType::I64)}), cx.ints({})});
  const std::string zero = cx.int_scalar(0);
  const std::string norm = b.op("Where", {b.op("Less", {idx, zero}), b.op("Add", {idx, depth}), idx});
  std::string classes = b.op("Range", {zero, depth, cx.int_scalar(1)});
  const int64_t axis = int_attr(n, "axis", -1);
  int64_t at = -1;
  if (axis != -1) {
    const int rank = cx.known_rank(b.x());
    if (rank < 0) cx.fail(ErrorCode::Unsupported, "axis " + std::to_string(axis) + " for indices of unknown rank (fusor needs their rank)");
    at = axis < 0 ? axis + rank + 1 : axis;
    if (at < 0 || at > rank)
      cx.fail(ErrorCode::InvalidGraph, "axis " + std::to_string(axis) + " is out of range for indices of rank " + std::to_string(rank));
    std::vector<int64_t> column(size_t(rank - at) + 1, 1);
    column[0] = -1;
    classes = b.op("Reshape", {classes, cx.ints(column)});
  }
  const std::string hit = b.op("Equal", {b.op("Unsqueeze", {norm}, {ints_attribute("axes", {at})}), classes});
  const std::string off = b.op("Gather", {values, zero}), on = b.op("Gather", {values, cx.int_scalar(1)});
  b.op("Where", {hit, on, off}, {}, b.y());
  return b.done();
}

// Ones where column - row = k, of x's 2-D shape, in dtype (x's by default).
std::vector<OnnxNode> eye_like(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  require_rank(b, cx, 2);
  OnnxAttribute to = int_attribute("to", int_attr(n, "dtype", 0));
  if (!find_attr(n, "dtype")) {
    DType t;
    if (!cx.known_dtype(b.x(), &t)) cx.fail(ErrorCode::Unsupported, "no dtype, and the input's is not known when the model is loaded");
    to = cast_to(t);
  }
  const std::string s = b.op("Shape", {b.x()});
  const std::string zero = cx.int_scalar(0), one = cx.int_scalar(1);
  auto range_of = [&](int64_t dim) { return b.op("Range", {zero, b.op("Gather", {s, cx.int_scalar(dim)}), one}); };
  const std::string rows = b.op("Unsqueeze", {range_of(0)}, {ints_attribute("axes", {1})});
  const std::string shifted = b.op("Add", {rows, cx.int_scalar(int_attr(n, "k", 0))});
  b.op("Cast", {b.op("Equal", {shifted, range_of(1)})}, {to}, b.y());
  return b.done();
}

// 1 at the first maximum along axis, else 0: x equal to the max, and the first such (a
// running count of them along the axis is 1).
std::vector<OnnxNode> hardmax(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const int64_t axis = int_attr(n, "axis", -1);
  const std::string m = b.op("ReduceMax", {b.x()}, {ints_attribute("axes", {axis}), int_attribute("keepdims", 1)});
  const std::string at_max = b.op("Equal", {b.x(), m});
  const std::string count = b.op("CumSum", {b.op("Cast", {at_max}, {cast_to(DType::I64)}), cx.int_scalar(axis)});
  const std::string first = b.op("And", {at_max, b.op("Equal", {count, cx.int_scalar(1)})});
  b.op("Where", {first, b.scalar(1.0), b.scalar(0.0)}, {}, b.y());
  return b.done();
}

// (x - mean) / (sqrt(var) + 1e-9) over axes (default N, H, W), the variance centred.
std::vector<OnnxNode> mean_variance_normalization(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::vector<OnnxAttribute> over{ints_attribute("axes", ints_attr(n, "axes", {0, 2, 3})), int_attribute("keepdims", 1)};
  const std::string d = b.op("Sub", {b.x(), b.op("ReduceMean", {b.x()}, over)});
  const std::string var = b.op("ReduceMean", {b.op("Mul", {d, d})}, over);
  b.op("Div", {d, b.op("Add", {b.op("Sqrt", {var}), b.scalar(1e-9)})}, {}, b.y());
  return b.done();
}

// x / (bias + alpha / size * sum of x^2 over the size channels around each)^beta: the sum
// as an AveragePool (zeros padded, counted) of x^2 viewed as [N, 1, C, H*W...].
std::vector<OnnxNode> lrn(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const int64_t size = int_attr(n, "size", 0);
  if (size < 1 || size > (int64_t(1) << 20)) cx.fail(ErrorCode::InvalidGraph, "size must be in [1, 2^20], got " + std::to_string(size));
  const std::string squares = b.op("Reshape", {b.op("Mul", {b.x(), b.x()}), cx.ints({0, 0, -1})});
  const std::string planes = b.op("Unsqueeze", {squares}, {ints_attribute("axes", {1})});
  const std::string mean = b.op("AveragePool", {planes},
                                {ints_attribute("kernel_shape", {size, 1}),
                                 ints_attribute("pads", {(size - 1) / 2, 0, size / 2, 0}), int_attribute("count_include_pad", 1)});
  const std::string base = b.op("Add", {b.scalar(float_attr(n, "bias", 1.0)), b.op("Mul", {b.scalar(float_attr(n, "alpha", 1e-4)), mean})});
  const std::string denom = b.op("Pow", {base, b.scalar(float_attr(n, "beta", 0.75))});
  b.op("Div", {b.x(), b.op("Reshape", {denom, b.op("Shape", {b.x()})})}, {}, b.y());
  return b.done();
}

// Scatter (opsets 9 and 10) is ScatterElements.
std::vector<OnnxNode> scatter(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  std::vector<std::string> in = n.inputs;
  b.op("ScatterElements", in, n.attrs, b.y());
  return b.done();
}

// Each batch entry's first len[b] steps along the time axis reversed, the rest kept: a
// GatherElements along time with index len - 1 - t where t < len, else t.
std::vector<OnnxNode> reverse_sequence(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string& lens = b.input(1, "sequence_lens");
  const int rank = cx.known_rank(b.x());
  if (rank < 0) cx.fail(ErrorCode::Unsupported, "an input of unknown rank (fusor needs its rank)");
  if (rank < 2) cx.fail(ErrorCode::InvalidGraph, "takes an input of rank >= 2, got " + std::to_string(rank));
  const int64_t time = int_attr(n, "time_axis", 0), batch = int_attr(n, "batch_axis", 1);
  if (!((time == 0 && batch == 1) || (time == 1 && batch == 0)))
    cx.fail(ErrorCode::InvalidGraph, "time_axis and batch_axis must be 0 and 1, in either order");
  auto along = [&](const std::string& v, int64_t axis) {
    std::vector<int64_t> dims(size_t(rank), 1);
    dims[size_t(axis)] = -1;
    return b.op("Reshape", {v, cx.ints(dims)});
  };
  const std::string s = b.op("Shape", {b.x()});
  const std::string t = along(b.op("Range", {cx.int_scalar(0), b.op("Gather", {s, cx.int_scalar(time)}), cx.int_scalar(1)}), time);
  const std::string len = along(b.op("Cast", {lens}, {cast_to(DType::I64)}), batch);
  const std::string reversed = b.op("Sub", {b.op("Sub", {len, cx.int_scalar(1)}), t});
  const std::string index = b.op("Where", {b.op("Less", {t, len}), reversed, t});
  b.op("GatherElements", {b.x(), b.op("Expand", {index, s})}, {int_attribute("axis", time)}, b.y());
  return b.done();
}

// Resize with asymmetric coordinates (nearest rounding down), the scales an attribute
// (opset 7) or input 1 (opset 9).
std::vector<OnnxNode> upsample(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  std::string mode = string_attr(n, "mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") cx.fail(ErrorCode::Unsupported, "mode \"" + mode + "\" (fusor upsamples nearest and linear)");
  std::string scales;
  if (const OnnxAttribute* a = find_attr(n, "scales"); a && a->type == OnnxAttrType::Floats) {
    scales = cx.constant(Tensor::from_doubles(DType::F32, Shape{int64_t(a->floats.size())}, a->floats), "scales");
  } else {
    scales = b.input(1, "scales");
  }
  b.op("Resize", {b.x(), "", scales},
       {string_attribute("mode", mode), string_attribute("coordinate_transformation_mode", "asymmetric"),
        string_attribute("nearest_mode", "floor")},
       b.y());
  return b.done();
}

}  // namespace fusor::onnx_import::composition
