#include "onnx/compositions.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "ir/error.h"
#include "onnx/composition_body.h"
#include "onnx/onnx_dtype.h"

namespace fusor::onnx_import {

// Note [Compositions]
// ~~~~~~~~~~~~~~~~~~~
// Many ONNX operators are, in ONNX's own definition, functions of others: LogSoftmax is
// x - max - log(sum(exp(x - max))), Elu a Where over an Exp, ReduceL2 a Sqrt of a ReduceSum
// of squares. fusor has the operators those bodies use, and its fusion passes turn a chain of
// them into one kernel (the pointwise ones always; Note [Grouping rules]). So the loader
// writes such a node as its body, a few ONNX nodes of fusor's operators with fresh names
// for the intermediates, and converts them as it converts the model's own: every opset form
// of their operands (attribute or input), every dtype rule and message applies unchanged.
// The last node of a body writes the node's output, under its name.
//
// Bodies are written for numbers, not only for the formula: Softplus is max(x, 0) +
// log(1 + exp(-|x|)) (the literal log(exp(x) + 1) overflows from x = 89), ReduceLogSumExp
// subtracts the max (a finite one: a row of -inf keeps -inf), LogSoftmax subtracts the max
// before the exponential, as ORT's kernels do. Each is checked against ONNX's reference
// outputs by the node tests (tests/onnx/conformance.cpp) on every CPU backend, and against
// hand-computed values in tests/onnx/compositions_test.cpp.
//
// A form of an operator fusor has but whose kernels lack it is composed too: a 1-D Conv,
// MaxPool or AveragePool (Whisper's and wav2vec's front ends, temporal convolutions) is the
// 2-D one over [N, C, 1, L]: Unsqueeze, the 2-D op with its attributes widened (kernel 1 x k,
// pads [0, b, 0, e]), Squeeze. Constant 1-D weights are reshaped once at load, so they stay
// constants the convolution packs. Unsqueeze and Squeeze are views (no kernel).
//
// Some bodies compute in the graph what depends on the input's shape: Resize's source
// indices and blend weights (from Shape(X) and the scales or sizes), ConvTranspose's zero
// insertion and its weights flipped and regrouped, GlobalMaxPool's output shape. Those
// nodes read only shapes and constants, so tracing a plan folds them to constants for the
// shape at hand (Note [ONNX import]; ir/passes/trace.h): the kernels see constant indices
// and weights, and a BN after a ConvTranspose folds into its weights. The loader needs only
// ranks and lengths, which it reads off the model (CompositionContext::known_length).

namespace {

using namespace composition;

// ---- activations -----------------------------------------------------------------------

// y = x - m - log(sum(exp(x - m))), m = max(x) along axis (opset 13: one axis, default -1).
std::vector<OnnxNode> log_softmax(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::vector<OnnxAttribute> along{ints_attribute("axes", {int_attr(n, "axis", -1)}), int_attribute("keepdims", 1)};
  std::string shifted = b.op("Sub", {b.x(), b.op("ReduceMax", {b.x()}, along)});
  std::string sum = b.op("ReduceSum", {b.op("Exp", {shifted})}, along);
  b.op("Sub", {shifted, b.op("Log", {sum})}, {}, b.y());
  return b.done();
}

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): no overflow.
std::string softplus_of(Body& b, const std::string& x) {
  std::string tail = b.op("Exp", {b.op("Neg", {b.op("Abs", {x})})});
  return b.op("Add", {b.op("Relu", {x}), b.op("Log", {b.op("Add", {tail, b.scalar(1.0)})})});
}

std::vector<OnnxNode> softplus(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  b.finish(softplus_of(b, b.x()));
  return b.done();
}

// x * tanh(softplus(x)).
std::vector<OnnxNode> mish(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  b.op("Mul", {b.x(), b.op("Tanh", {softplus_of(b, b.x())})}, {}, b.y());
  return b.done();
}

// x / (1 + |x|).
std::vector<OnnxNode> softsign(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  b.op("Div", {b.x(), b.op("Add", {b.op("Abs", {b.x()}), b.scalar(1.0)})}, {}, b.y());
  return b.done();
}

// alpha * (e^x - 1) where `below`, else x; times gamma unless it is 1.
void exponential_linear(Body& b, const std::string& below, double alpha, double gamma) {
  std::string neg = b.op("Mul", {b.scalar(alpha), b.op("Sub", {b.op("Exp", {b.x()}), b.scalar(1.0)})});
  if (gamma == 1.0) {
    b.op("Where", {below, neg, b.x()}, {}, b.y());
    return;
  }
  b.op("Mul", {b.scalar(gamma), b.op("Where", {below, neg, b.x()})}, {}, b.y());
}

std::vector<OnnxNode> elu(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  exponential_linear(b, b.op("Less", {b.x(), b.scalar(0.0)}), float_attr(n, "alpha", 1.0), 1.0);
  return b.done();
}

std::vector<OnnxNode> selu(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  exponential_linear(b, b.op("LessOrEqual", {b.x(), b.scalar(0.0)}),
                     float_attr(n, "alpha", double(1.67326319217681884765625f)),
                     float_attr(n, "gamma", double(1.05070102214813232421875f)));
  return b.done();
}

// max(0, x) + min(0, alpha * (e^(x / alpha) - 1)).
std::vector<OnnxNode> celu(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const double alpha = float_attr(n, "alpha", 1.0);
  if (alpha == 0) cx.fail(ErrorCode::InvalidGraph, "alpha must not be 0");
  std::string e = b.op("Exp", {b.op("Div", {b.x(), b.scalar(alpha)})});
  std::string neg = b.op("Mul", {b.scalar(alpha), b.op("Sub", {e, b.scalar(1.0)})});
  b.op("Add", {b.op("Relu", {b.x()}), b.op("Min", {neg, b.scalar(0.0)})}, {}, b.y());
  return b.done();
}

// x where x > alpha, else 0.
std::vector<OnnxNode> thresholded_relu(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  std::string above = b.op("Greater", {b.x(), b.scalar(float_attr(n, "alpha", 1.0))});
  b.op("Where", {above, b.x(), b.scalar(0.0)}, {}, b.y());
  return b.done();
}

// slope * x where x < 0, else x (the slope broadcasts to x).
std::vector<OnnxNode> prelu(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  if (n.inputs.size() != 2 || n.inputs[1].empty()) cx.fail(ErrorCode::InvalidGraph, "takes two inputs (X, slope)");
  std::string negative = b.op("Less", {b.x(), b.scalar(0.0)});
  b.op("Where", {negative, b.op("Mul", {b.x(), n.inputs[1]}), b.x()}, {}, b.y());
  return b.done();
}

// x + bias where x < -lambd, x - bias where x > lambd, else 0.
std::vector<OnnxNode> shrink(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const double bias = float_attr(n, "bias", 0.0), lambd = float_attr(n, "lambd", 0.5);
  std::string low = b.op("Less", {b.x(), b.scalar(-lambd)}), high = b.op("Greater", {b.x(), b.scalar(lambd)});
  std::string inner = b.op("Where", {high, b.op("Sub", {b.x(), b.scalar(bias)}), b.scalar(0.0)});
  b.op("Where", {low, b.op("Add", {b.x(), b.scalar(bias)}), inner}, {}, b.y());
  return b.done();
}

// ---- variadic ----------------------------------------------------------------------------

// The inputs added in turn (one input: itself, as Max of one), into `out` or a fresh name.
std::string sum_of(Body& b, const OnnxNode& n, CompositionContext& cx, const std::string& out) {
  for (const std::string& in : n.inputs)
    if (in.empty()) cx.fail(ErrorCode::InvalidGraph, "has an empty input name");
  std::string acc = n.inputs[0];
  if (n.inputs.size() == 1) return b.op("Max", {acc}, {}, out);
  for (size_t k = 1; k < n.inputs.size(); ++k) acc = b.op("Add", {acc, n.inputs[k]}, {}, k + 1 == n.inputs.size() ? out : "");
  return acc;
}

std::vector<OnnxNode> sum(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  sum_of(b, n, cx, b.y());
  return b.done();
}

std::vector<OnnxNode> mean(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const bool one = n.inputs.size() == 1;  // its own mean
  const std::string s = sum_of(b, n, cx, one ? b.y() : "");
  if (!one) b.op("Div", {s, b.scalar(double(n.inputs.size()))}, {}, b.y());
  return b.done();
}

// ---- reductions --------------------------------------------------------------------------

// ReduceSum over n's axes (attribute or input, n's keepdims and noop_with_empty_axes) of
// `pre` applied to x, then `post`.
std::vector<OnnxNode> reduce_sum_of(const OnnxNode& n, CompositionContext& cx, std::string_view pre,
                                    std::string_view post) {
  Body b(n, cx);
  std::vector<std::string> in = n.inputs;
  if (pre == "Square") in[0] = b.op("Mul", {b.x(), b.x()});
  else if (!pre.empty()) in[0] = b.op(pre, {b.x()});
  std::string r = b.op("ReduceSum", in, n.attrs, post.empty() ? b.y() : "");
  if (!post.empty()) b.op(post, {r}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> reduce_l1(const OnnxNode& n, CompositionContext& cx) { return reduce_sum_of(n, cx, "Abs", ""); }
std::vector<OnnxNode> reduce_l2(const OnnxNode& n, CompositionContext& cx) {
  return reduce_sum_of(n, cx, "Square", "Sqrt");
}
std::vector<OnnxNode> reduce_sum_square(const OnnxNode& n, CompositionContext& cx) {
  return reduce_sum_of(n, cx, "Square", "");
}
std::vector<OnnxNode> reduce_log_sum(const OnnxNode& n, CompositionContext& cx) {
  return reduce_sum_of(n, cx, "", "Log");
}

// log(sum(e^(x - m))) + m with m the max where it is finite, else 0 (so that a slice of -inf
// gives -inf and one holding +inf gives +inf, as the literal formula does).
std::vector<OnnxNode> reduce_log_sum_exp(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  std::vector<std::string> in = n.inputs;
  auto finite_max = [&](int64_t keep) {
    std::string m = b.op("ReduceMax", in, with_keepdims(n, keep));
    return b.op("Where", {b.op("IsInf", {m}), b.scalar(0.0), m});
  };
  std::string m = finite_max(1);
  in[0] = b.op("Exp", {b.op("Sub", {b.x(), m})});
  std::string s = b.op("ReduceSum", in, n.attrs);
  in[0] = b.x();
  const bool keep = int_attr(n, "keepdims", 1) != 0;
  b.op("Add", {b.op("Log", {s}), keep ? m : finite_max(0)}, {}, b.y());
  return b.done();
}

// ---- normalization -----------------------------------------------------------------------

// Each (image, channel) of x normalized over its spatial dims, then scale[c] * . + B[c]: in
// the view [N, C, L] of x (any rank), back to x's shape at the end.
std::vector<OnnxNode> instance_normalization(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  if (n.inputs.size() != 3 || n.inputs[1].empty() || n.inputs[2].empty())
    cx.fail(ErrorCode::InvalidGraph, "takes three inputs (input, scale, B)");
  const std::vector<OnnxAttribute> spatial{ints_attribute("axes", {2}), int_attribute("keepdims", 1)};
  std::string x3 = b.op("Reshape", {b.x(), cx.ints({0, 0, -1})});
  std::string d = b.op("Sub", {x3, b.op("ReduceMean", {x3}, spatial)});
  std::string var = b.op("ReduceMean", {b.op("Mul", {d, d})}, spatial);
  std::string sd = b.op("Sqrt", {b.op("Add", {var, b.scalar(float_attr(n, "epsilon", 1e-5))})});
  std::string per_channel = b.op("Div", {d, sd});
  std::string scale = b.op("Unsqueeze", {n.inputs[1]}, {ints_attribute("axes", {1})});
  std::string bias = b.op("Unsqueeze", {n.inputs[2]}, {ints_attribute("axes", {1})});
  std::string y3 = b.op("Add", {b.op("Mul", {per_channel, scale}), bias});
  b.op("Reshape", {y3, b.op("Shape", {b.x()})}, {}, b.y());
  return b.done();
}

// ---- Resize ------------------------------------------------------------------------------

// Resize, nearest or linear, one axis after the other: along axis d, the source coordinate
// of each output index (by coordinate_transformation_mode), then a Gather of the nearest
// source index (by nearest_mode), or of the two neighbours blended (linear). The indices
// and weights are computed in the graph from Shape(X) and the scales or sizes, so they fold
// to constants when the plan is traced, for whatever shape X has. Neighbours outside the
// input are clamped to its edge, as ONNX's reference pads it.
std::vector<OnnxNode> resize(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string mode = string_attr(n, "mode", "nearest");
  const std::string coords = string_attr(n, "coordinate_transformation_mode", "half_pixel");
  const std::string rounding = string_attr(n, "nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear")
    cx.fail(ErrorCode::Unsupported, "mode \"" + mode + "\" (fusor resizes nearest and linear)");
  if (coords != "half_pixel" && coords != "pytorch_half_pixel" && coords != "align_corners" && coords != "asymmetric")
    cx.fail(ErrorCode::Unsupported, "coordinate_transformation_mode \"" + coords +
                                         "\" (fusor has half_pixel, pytorch_half_pixel, align_corners, asymmetric)");
  if (mode == "nearest" && rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" &&
      rounding != "ceil")
    cx.fail(ErrorCode::InvalidGraph, "nearest_mode \"" + rounding + "\" is not an ONNX nearest mode");
  if (int_attr(n, "antialias", 0) != 0) cx.fail(ErrorCode::Unsupported, "antialias=1");
  if (int_attr(n, "exclude_outside", 0) != 0) cx.fail(ErrorCode::Unsupported, "exclude_outside=1");
  const std::string policy = string_attr(n, "keep_aspect_ratio_policy", "stretch");
  // Scales (input 2) or sizes (input 3); an empty constant stands for an absent input.
  auto given = [&](size_t k) { return n.inputs.size() > k && !n.inputs[k].empty() && cx.known_numel(n.inputs[k]) != 0; };
  const bool by_scales = given(2), by_sizes = given(3);
  if (by_scales == by_sizes) cx.fail(ErrorCode::InvalidGraph, "needs exactly one of scales and sizes");
  if (by_sizes && policy != "stretch")
    cx.fail(ErrorCode::Unsupported, "keep_aspect_ratio_policy \"" + policy + "\" (fusor stretches)");
  const std::string& factors = n.inputs[by_scales ? 2 : 3];
  std::vector<int64_t> axes;
  if (const OnnxAttribute* a = find_attr(n, "axes")) axes = a->ints;
  const int64_t entries = cx.known_length(factors);
  int64_t rank = cx.known_rank(b.x());
  if (axes.empty()) {
    if (entries < 0 && rank < 0)
      cx.fail(ErrorCode::Unsupported, std::string(by_scales ? "scales" : "sizes") +
                                          " computed in the graph for an input of unknown rank (fusor needs its rank)");
    if (entries >= 0 && rank >= 0 && entries != rank)
      cx.fail(ErrorCode::InvalidGraph, std::string(by_scales ? "scales" : "sizes") + " has " + std::to_string(entries) +
                                           " values for an input of rank " + std::to_string(rank));
    if (rank < 0) rank = entries;
    if (rank > 16) cx.fail(ErrorCode::Unsupported, "an input of rank " + std::to_string(rank) + " (at most 16)");
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  } else {
    if (rank < 0) cx.fail(ErrorCode::Unsupported, "axes for an input of unknown rank (fusor needs its rank)");
    for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  }
  auto f32 = [&](double v) { return cx.scalar(v, ""); };
  std::string cur = b.x();
  const std::string shape = b.op("Shape", {b.x()});
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t d = axes[k];
    if (d < 0 || d >= rank) cx.fail(ErrorCode::InvalidGraph, "axis " + std::to_string(d) + " is out of range");
    const std::string entry = cx.int_scalar(int64_t(k));
    const std::string in_len = b.op("Cast", {b.op("Gather", {shape, cx.int_scalar(d)})}, {cast_to(DType::F32)});
    // f32 scalars: the scale, the output length, and the length before flooring (in * scale),
    // which align_corners and pytorch_half_pixel read as ONNX's reference does.
    std::string scale, out_len, out_exact;
    if (by_scales) {
      scale = b.op("Cast", {b.op("Gather", {factors, entry})}, {cast_to(DType::F32)});
      out_exact = b.op("Mul", {in_len, scale});
      out_len = b.op("Floor", {out_exact});
    } else {
      out_len = out_exact = b.op("Cast", {b.op("Gather", {factors, entry})}, {cast_to(DType::F32)});
      scale = b.op("Div", {out_len, in_len});
    }
    const std::string count = b.op("Cast", {out_len}, {cast_to(DType::I64)});
    const std::string at = b.op("Cast", {b.op("Range", {cx.int_scalar(0), count, cx.int_scalar(1)})}, {cast_to(DType::F32)});
    std::string x;  // the source coordinate of each output index
    if (coords == "asymmetric") {
      x = b.op("Div", {at, scale});
    } else if (coords == "align_corners") {
      // x (in - 1) / (out - 1), 0 for an output of length 1 (at is then 0 alone).
      const std::string span = b.op("Sub", {out_exact, f32(1)});
      const std::string safe = b.op("Where", {b.op("Equal", {span, f32(0)}), f32(1), span});
      x = b.op("Div", {b.op("Mul", {at, b.op("Sub", {in_len, f32(1)})}), safe});
    } else {
      x = b.op("Sub", {b.op("Div", {b.op("Add", {at, f32(0.5)}), scale}), f32(0.5)});
      if (coords == "pytorch_half_pixel")
        x = b.op("Where", {b.op("Equal", {out_exact, f32(1)}), f32(-0.5), x});
    }
    const std::string last = b.op("Sub", {in_len, f32(1)});
    auto index = [&](const std::string& v) {
      return b.op("Cast", {b.op("Clip", {v, f32(0), last})}, {cast_to(DType::I64)});
    };
    const std::vector<OnnxAttribute> along{int_attribute("axis", d)};
    const bool final_axis = k + 1 == axes.size();
    if (mode == "nearest") {
      std::string i;
      if (rounding == "floor") i = b.op("Floor", {x});
      else if (rounding == "ceil") i = b.op("Ceil", {x});
      else if (rounding == "round_prefer_floor") i = b.op("Ceil", {b.op("Sub", {x, f32(0.5)})});
      else i = b.op("Floor", {b.op("Add", {x, f32(0.5)})});
      cur = b.op("Gather", {cur, index(i)}, along, final_axis ? b.y() : "");
      continue;
    }
    const std::string lo = b.op("Floor", {x});
    std::string w = b.op("Sub", {x, lo});  // the upper neighbour's weight, along axis d
    std::vector<int64_t> w_shape(size_t(rank - d), 1);
    w_shape[0] = -1;
    w = b.op("Reshape", {w, cx.ints(w_shape)});
    if (DType t; cx.known_dtype(b.x(), &t) && t != DType::F32) w = b.op("Cast", {w}, {cast_to(t)});
    const std::string g0 = b.op("Gather", {cur, index(lo)}, along);
    const std::string g1 = b.op("Gather", {cur, index(b.op("Add", {lo, f32(1)}))}, along);
    const std::string one = cx.scalar(1.0, b.x());
    cur = b.op("Add", {b.op("Mul", {b.op("Sub", {one, w}), g0}), b.op("Mul", {w, g1})}, {},
               final_axis ? b.y() : "");
  }
  if (axes.empty()) b.finish(b.x());
  return b.done();
}

// ---- ConvTranspose -----------------------------------------------------------------------

// A transposed convolution (1-D or 2-D) as the direct one it equals: the input with s - 1
// zeros inserted between neighbours along each axis of stride s (Unsqueeze after each
// spatial dim, Pad, Reshape), padded by d (k - 1) less the pads (a negative pad crops;
// output_padding adds at the end), then convolved at stride 1 with the weights flipped in
// space and their in and out channels swapped per group (constant weights fold at trace).
// The zeros cost s^2 more products than a scatter would, but every output is what ONNX
// defines.
std::vector<OnnxNode> conv_transpose(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  if (n.inputs.size() < 2 || n.inputs[1].empty()) cx.fail(ErrorCode::InvalidGraph, "needs inputs X and W");
  const std::string& weights = n.inputs[1];
  // The kernel: kernel_shape, else the weights' own (a constant's, a graph input's declared).
  std::vector<int64_t> k = ints_attr(n, "kernel_shape", {});
  if (k.empty()) {
    const std::vector<int64_t> wd = cx.known_dims(weights);
    if (wd.size() < 3) cx.fail(ErrorCode::Unsupported, "weights of unknown shape without kernel_shape");
    k.assign(wd.begin() + 2, wd.end());
  }
  const int dims = int(k.size());
  if (dims != 1 && dims != 2)
    cx.fail(ErrorCode::Unsupported, std::to_string(dims) + "-D kernel: fusor has 1-D and 2-D transposed convolutions");
  if (find_attr(n, "output_shape")) cx.fail(ErrorCode::Unsupported, "output_shape (give pads and output_padding)");
  const int64_t group = int_attr(n, "group", 1);
  if (group < 1) cx.fail(ErrorCode::InvalidGraph, "group must be >= 1");
  const std::vector<int64_t> ones(size_t(dims), 1), zeros(size_t(2 * dims), 0);
  const std::vector<int64_t> s = ints_attr(n, "strides", ones), d = ints_attr(n, "dilations", ones);
  const std::vector<int64_t> out_pad = ints_attr(n, "output_padding", std::vector<int64_t>(size_t(dims), 0));
  std::vector<int64_t> pads = ints_attr(n, "pads", zeros);
  if (s.size() != size_t(dims) || d.size() != size_t(dims) || out_pad.size() != size_t(dims) ||
      pads.size() != size_t(2 * dims))
    cx.fail(ErrorCode::InvalidGraph, "strides, dilations, output_padding and pads must match the " +
                                         std::to_string(dims) + "-D kernel");
  constexpr int64_t kLimit = int64_t(1) << 30;  // keeps every padding below in range
  for (int i = 0; i < dims; ++i)
    if (k[size_t(i)] < 1 || s[size_t(i)] < 1 || d[size_t(i)] < 1 || out_pad[size_t(i)] < 0 ||
        out_pad[size_t(i)] >= std::max(s[size_t(i)], d[size_t(i)]))
      cx.fail(ErrorCode::InvalidGraph, "kernel, strides and dilations must be >= 1 and output_padding below the stride");
  for (const std::vector<int64_t>* v : std::initializer_list<const std::vector<int64_t>*>{&k, &s, &d, &pads})
    for (int64_t x : *v)
      if (x < 0 || x > kLimit)
        cx.fail(ErrorCode::InvalidGraph, "kernel, strides, dilations and pads must be in [0, 2^30]");
  const std::string auto_pad = string_attr(n, "auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    pads = zeros;
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {  // output = input * stride
    for (int i = 0; i < dims; ++i) {
      const int64_t total = std::max<int64_t>(0, out_pad[size_t(i)] + (k[size_t(i)] - 1) * d[size_t(i)] + 1 - s[size_t(i)]);
      const int64_t small = total / 2, large = total - small;
      pads[size_t(i)] = auto_pad == "SAME_UPPER" ? small : large;
      pads[size_t(dims + i)] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET") {
    cx.fail(ErrorCode::InvalidGraph, "auto_pad \"" + auto_pad + "\" is not an ONNX auto_pad");
  }
  constexpr int64_t kFar = int64_t(1) << 40;  // past either end of any dim
  auto concat = [&](std::vector<std::string> parts) { return b.op("Concat", std::move(parts), {int_attribute("axis", 0)}); };
  auto dims_of = [&](const std::string& shape, int64_t from, int64_t to) {
    return b.op("Slice", {shape, cx.ints({from}), cx.ints({to})});
  };
  // W [c_in, c_out / g, k..] -> [g, c_in / g, c_out / g, k..] -> swap the channels -> [c_out,
  // c_in / g, k..], flipped along k. In the graph: a constant W folds when the plan is traced.
  const std::string w_shape = b.op("Shape", {weights});
  const std::string g = cx.ints({group});
  std::string w = b.op("Reshape", {weights, concat({g, b.op("Div", {dims_of(w_shape, 0, 1), g}), dims_of(w_shape, 1, kFar)})});
  std::vector<int64_t> perm{0, 2, 1, 3};
  if (dims == 2) perm.push_back(4);
  w = b.op("Transpose", {w}, {ints_attribute("perm", perm)});
  const std::string t_shape = b.op("Shape", {w});
  w = b.op("Reshape", {w, concat({b.op("Mul", {dims_of(t_shape, 0, 1), dims_of(t_shape, 1, 2)}), dims_of(t_shape, 2, kFar)})});
  std::vector<int64_t> flip_axes, back(size_t(dims), -1), past(size_t(dims), -kFar);
  for (int i = 0; i < dims; ++i) flip_axes.push_back(2 + i);
  w = b.op("Slice", {w, cx.ints(back), cx.ints(past), cx.ints(flip_axes), cx.ints(back)});

  std::string x = b.x();
  const bool strided = std::any_of(s.begin(), s.end(), [](int64_t v) { return v > 1; });
  if (strided) {  // zeros between neighbours: [N, C, L..] -> [N, C, L, 1..] -> pad to [N, C, L, s..] -> [N, C, L*s..]
    std::vector<int64_t> after, zero_pads(size_t(2 * (2 + 2 * dims)), 0);
    for (int i = 0; i < dims; ++i) {
      after.push_back(3 + 2 * i);
      zero_pads[size_t(2 + 2 * dims + 3 + 2 * i)] = s[size_t(i)] - 1;
    }
    x = b.op("Unsqueeze", {x}, {ints_attribute("axes", after)});
    x = b.op("Pad", {x, cx.ints(zero_pads)});
    const std::string shape = b.op("Shape", {b.x()});
    x = b.op("Reshape", {x, concat({dims_of(shape, 0, 2), b.op("Mul", {dims_of(shape, 2, 2 + dims), cx.ints(s)})})});
  }
  // d (k - 1) - pad at the start; at the end also output_padding, less the s - 1 zeros the
  // insertion left after the last element (a negative pad crops).
  std::vector<int64_t> edge(size_t(2 * (2 + dims)), 0);
  bool padded = false;
  for (int i = 0; i < dims; ++i) {
    const int64_t reach = d[size_t(i)] * (k[size_t(i)] - 1);
    edge[size_t(2 + i)] = reach - pads[size_t(i)];
    edge[size_t(2 + dims + 2 + i)] = reach - pads[size_t(dims + i)] + out_pad[size_t(i)] - (s[size_t(i)] - 1);
    padded |= edge[size_t(2 + i)] != 0 || edge[size_t(2 + dims + 2 + i)] != 0;
  }
  if (padded) x = b.op("Pad", {x, cx.ints(edge)});
  std::vector<std::string> in{x, w};
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) in.push_back(n.inputs[2]);
  b.op("Conv", in, {int_attribute("group", group), ints_attribute("dilations", d), ints_attribute("kernel_shape", k)},
       b.y());
  return b.done();
}

// The max over all spatial dims, kept as dims of size 1: over [N, C, H*W...], reshaped to
// x's shape with the spatial dims divided by themselves.
std::vector<OnnxNode> global_max_pool(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string x3 = b.op("Reshape", {b.x(), cx.ints({0, 0, -1})});
  const std::string m = b.op("ReduceMax", {x3}, {ints_attribute("axes", {2}), int_attribute("keepdims", 1)});
  const std::string shape = b.op("Shape", {b.x()});
  const std::string spatial = b.op("Slice", {shape, cx.ints({2}), cx.ints({int64_t(1) << 40})});
  const std::string lead = b.op("Slice", {shape, cx.ints({0}), cx.ints({2})});
  const std::string target = b.op("Concat", {lead, b.op("Div", {spatial, spatial})}, {int_attribute("axis", 0)});
  b.op("Reshape", {m, target}, {}, b.y());
  return b.done();
}

// ---- 1-D convolution and pooling ---------------------------------------------------------

bool conv_1d(const OnnxNode& n, CompositionContext& cx) {
  if (const OnnxAttribute* ks = find_attr(n, "kernel_shape")) return ks->ints.size() == 1;
  return n.inputs.size() > 1 && !n.inputs[1].empty() && cx.known_rank(n.inputs[1]) == 3;
}

bool pool_1d(const OnnxNode& n, CompositionContext&) {
  const OnnxAttribute* ks = find_attr(n, "kernel_shape");
  return ks && ks->ints.size() == 1;
}

// The 2-D op over [N, C, 1, L]: attributes of one spatial dim widened to two.
std::vector<OnnxNode> spatial_1d(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::vector<OnnxAttribute> at_h{ints_attribute("axes", {2})};
  std::vector<std::string> in = n.inputs;
  in[0] = b.op("Unsqueeze", {b.x()}, at_h);
  if (n.op_type == "Conv" && in.size() > 1 && !in[1].empty()) {
    Tensor w = cx.constant_copy(n.inputs[1]);  // reshaped once, still a constant to pack
    if (w.defined() && w.rank() == 3) {
      std::vector<int64_t> dims = w.shape().dims();
      dims.insert(dims.begin() + 2, 1);
      in[1] = cx.constant(w.reshaped(Shape(dims)), "unsqueezed");
    } else {
      in[1] = b.op("Unsqueeze", {n.inputs[1]}, at_h);
    }
  }
  std::vector<OnnxAttribute> attrs;
  for (const OnnxAttribute& a : n.attrs) {
    OnnxAttribute w = a;
    const bool per_dim = a.name == "kernel_shape" || a.name == "strides" || a.name == "dilations";
    if (per_dim || a.name == "pads") {
      const size_t want = per_dim ? 1 : 2;
      if (a.type != OnnxAttrType::Ints || a.ints.size() != want)
        cx.fail(ErrorCode::InvalidGraph, "attribute '" + a.name + "' of a 1-D " + n.op_type + " must have " +
                                             std::to_string(want) + " value" + (want == 1 ? "" : "s"));
      w.ints = per_dim ? std::vector<int64_t>{1, a.ints[0]} : std::vector<int64_t>{0, a.ints[0], 0, a.ints[1]};
    }
    attrs.push_back(std::move(w));
  }
  std::string y4 = b.op(n.op_type, in, attrs);
  b.op("Squeeze", {y4}, at_h, b.y());
  return b.done();
}

// ---- the table ---------------------------------------------------------------------------

// Opsets: the first version whose semantics the body has (LogSoftmax before 13 flattens to
// 2-D at axis; PRelu 6 has consumed_inputs; Sum and Mean before 8 do not broadcast;
// ThresholdedRelu before 10 was experimental; the reductions' axes move to an input at 18,
// a form the converted ReduceSum reads either way).
constexpr Composition kCompositions[] = {
    {"LogSoftmax", 13, nullptr, log_softmax, "as x - m - log(sum(exp(x - m))), m the max"},
    {"Softplus", 1, nullptr, softplus, "as max(x, 0) + log(1 + exp(-|x|))"},
    {"Mish", 18, nullptr, mish, "as x * tanh(softplus(x))"},
    {"Softsign", 1, nullptr, softsign, "as x / (1 + |x|)"},
    {"Elu", 6, nullptr, elu, "as Where(x < 0, alpha * (exp(x) - 1), x)"},
    {"Selu", 6, nullptr, selu, "as gamma * Where(x <= 0, alpha * (exp(x) - 1), x)"},
    {"Celu", 12, nullptr, celu, "as max(0, x) + min(0, alpha * (exp(x / alpha) - 1))"},
    {"ThresholdedRelu", 10, nullptr, thresholded_relu, "as Where(x > alpha, x, 0)"},
    {"PRelu", 7, nullptr, prelu, "as Where(x < 0, slope * x, x)"},
    {"Shrink", 9, nullptr, shrink, "as two Wheres"},
    {"Sum", 8, nullptr, sum, "as Adds"},
    {"Mean", 8, nullptr, mean, "as Adds and a Div"},
    {"ReduceL1", 1, nullptr, reduce_l1, "as ReduceSum(Abs(x))"},
    {"ReduceL2", 1, nullptr, reduce_l2, "as Sqrt(ReduceSum(x * x))"},
    {"ReduceSumSquare", 1, nullptr, reduce_sum_square, "as ReduceSum(x * x)"},
    {"ReduceLogSum", 1, nullptr, reduce_log_sum, "as Log(ReduceSum(x))"},
    {"ReduceLogSumExp", 1, nullptr, reduce_log_sum_exp, "as log(sum(exp(x - m))) + m, m the finite max"},
    {"InstanceNormalization", 6, nullptr, instance_normalization, "as ReduceMeans over [N, C, H*W...]"},
    {"ConvTranspose", 11, nullptr, conv_transpose, "as a Conv over the input with zeros inserted"},
    {"GlobalMaxPool", 1, nullptr, global_max_pool, "as ReduceMax over [N, C, H*W...]"},
    {"Resize", 11, nullptr, resize, "as Gathers (nearest) or two Gathers and a blend (linear) per axis"},
    {"Conv", 1, conv_1d, spatial_1d, "1-D: the 2-D one over [N, C, 1, L]"},
    {"MaxPool", 8, pool_1d, spatial_1d, "1-D: the 2-D one over [N, C, 1, L]"},
    {"AveragePool", 7, pool_1d, spatial_1d, "1-D: the 2-D one over [N, C, 1, L]"},
    // compositions_math.cpp (Note [Elementwise compositions])
    {"Sign", 9, nullptr, composition::sign, "as Where(x > 0, 1, Where(x < 0, -1, x))"},
    {"Xor", 7, nullptr, composition::logical_xor, "as Or(And(a, Not(b)), And(Not(a), b))"},
    {"Mod", 10, nullptr, composition::mod, "as a - trunc(a / b) * b, the sign fixed"},
    {"Swish", 24, nullptr, composition::swish, "as x * Sigmoid(alpha * x)"},
    {"Tan", 7, nullptr, composition::tan, "as Sin / Cos"},
    {"Sinh", 9, nullptr, composition::sinh, "as (e^x - e^-x) / 2, a series below 1"},
    {"Cosh", 9, nullptr, composition::cosh, "as (e^x + e^-x) / 2"},
    {"Asinh", 9, nullptr, composition::asinh, "as log(|x| + sqrt(x^2 + 1)) signed, a series below 0.125"},
    {"Acosh", 9, nullptr, composition::acosh, "as log(x + sqrt((x - 1)(x + 1)))"},
    {"Atanh", 9, nullptr, composition::atanh, "as log((1 + x) / (1 - x)) / 2, a series below 0.125"},
    {"Atan", 7, nullptr, composition::atan, "as a reduced argument and a polynomial"},
    {"Asin", 7, nullptr, composition::asin, "as atan(x / sqrt((1 - x)(1 + x)))"},
    {"Acos", 7, nullptr, composition::acos, "as 2 atan(sqrt((1 - x) / (1 + x)))"},
    {"Einsum", 12, nullptr, composition::einsum, "as batched MatMuls of transposed, merged operands (Note [Einsum])"},
    // compositions_layout.cpp
    {"CastLike", 15, nullptr, composition::cast_like, "as Cast to the dtype of target_type"},
    {"Size", 1, nullptr, composition::size, "as ReduceProd(Shape(x))"},
    {"ArgMin", 1, nullptr, composition::arg_min, "as ArgMax(-x) (ints: ArgMax(-1 - x))"},
    {"DepthToSpace", 1, nullptr, composition::depth_to_space, "as Reshape, Transpose, Reshape"},
    {"SpaceToDepth", 1, nullptr, composition::space_to_depth, "as Reshape, Transpose, Reshape"},
    {"OneHot", 11, nullptr, composition::one_hot, "as Where(Equal(indices, Range(depth)), on, off)"},
    {"EyeLike", 9, nullptr, composition::eye_like, "as Cast(Equal(row + k, column))"},
    {"Hardmax", 13, nullptr, composition::hardmax, "as the first x equal to ReduceMax (a CumSum)"},
    {"MeanVarianceNormalization", 9, nullptr, composition::mean_variance_normalization,
     "as (x - mean) / (sqrt(var) + 1e-9) by ReduceMeans"},
    {"LRN", 1, nullptr, composition::lrn, "as x / (bias + alpha * AveragePool(x^2 over channels))^beta"},
    {"Upsample", 7, nullptr, composition::upsample, "as Resize (asymmetric; nearest rounds down)"},
    {"Scatter", 9, nullptr, composition::scatter, "as ScatterElements (its later name)"},
    {"ReverseSequence", 10, nullptr, composition::reverse_sequence, "as GatherElements along time, the indices computed"},
    // compositions_norm.cpp
    {"GroupNormalization", 18, nullptr, composition::group_normalization,
     "as ReduceMeans over [N, G, C/G, H*W...], scale and bias per group (18) or channel (21)"},
    {"RMSNormalization", 23, nullptr, composition::rms_normalization,
     "as x / sqrt(ReduceMean(x * x) + epsilon) * scale"},
    {"LpNormalization", 1, nullptr, composition::lp_normalization, "as x / ReduceSum(|x|) or x / sqrt(ReduceSum(x * x))"},
    {"NegativeLogLikelihoodLoss", 13, nullptr, composition::negative_log_likelihood_loss,
     "as -GatherElements(input, target) weighted, ignore_index masked, reduced"},
    {"SoftmaxCrossEntropyLoss", 13, nullptr, composition::softmax_cross_entropy_loss,
     "as NegativeLogLikelihoodLoss(LogSoftmax(scores))"},
};

}  // namespace

std::span<const Composition> compositions() { return kCompositions; }

const Composition* composed_operator(std::string_view op_type) {
  for (const Composition& c : kCompositions)
    if (!c.applies && c.op_type == op_type) return &c;
  return nullptr;
}

const Composition* composed_form(const OnnxNode& n, CompositionContext& cx) {
  for (const Composition& c : kCompositions)
    if (c.applies && c.op_type == n.op_type && c.applies(n, cx)) return &c;
  return nullptr;
}

}  // namespace fusor::onnx_import
