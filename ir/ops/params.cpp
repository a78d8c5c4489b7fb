#include "ir/ops/params.h"

#include <algorithm>
#include <limits>

#include "ir/op_schema.h"

namespace fusor {

namespace {

// Reads an optional 2-element int list attribute (strides, dilations), default 1s.
void pair_attr(const Node& n, const char* name, int64_t* a, int64_t* b) {
  const auto& v = attr_ints(n, name);
  *a = *b = 1;
  if (v.empty()) return;
  if (v.size() != 2) node_fail(n, ErrorCode::InvalidGraph, name, " has ", v.size(), " values; a 2-D op needs 2");
  *a = v[0];
  *b = v[1];
  if (*a < 1 || *b < 1) node_fail(n, ErrorCode::InvalidGraph, name, " must be >= 1, got ", Attribute(v).str());
  if (*a > kMaxElements || *b > kMaxElements)
    node_fail(n, ErrorCode::InvalidGraph, name, " must be <= ", kMaxElements, ", got ", Attribute(v).str());
}

// Resolves pads (explicit or auto_pad) for one 2-D window op. Returns the output size.
void resolve_window(const Node& n, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                    int64_t dh, int64_t dw, bool ceil_mode, int64_t* pt, int64_t* pl, int64_t* pb,
                    int64_t* pr, int64_t* oh, int64_t* ow) {
  const std::string& ap = attr_string(n, "auto_pad");
  const auto& pads = attr_ints(n, "pads");
  // Every size below is at most a few times kMaxElements once these are checked (dims, pads,
  // strides and dilations are each at most kMaxElements): no signed overflow.
  const int64_t ekh = checked_size_add(n, checked_size_mul(n, kh - 1, dh, "dilations"), 1, "dilations");
  const int64_t ekw = checked_size_add(n, checked_size_mul(n, kw - 1, dw, "dilations"), 1, "dilations");
  if (ap == "NOTSET") {
    if (!pads.empty() && pads.size() != 4)
      node_fail(n, ErrorCode::InvalidGraph, "pads has ", pads.size(), " values; a 2-D op needs 4");
    *pt = pads.empty() ? 0 : pads[0];
    *pl = pads.empty() ? 0 : pads[1];
    *pb = pads.empty() ? 0 : pads[2];
    *pr = pads.empty() ? 0 : pads[3];
    if (*pt < 0 || *pl < 0 || *pb < 0 || *pr < 0)
      node_fail(n, ErrorCode::InvalidGraph, "pads must be >= 0, got ", Attribute(pads).str());
    for (int64_t v : {*pt, *pl, *pb, *pr})
      if (v > kMaxElements)
        node_fail(n, ErrorCode::InvalidGraph, "pads must be <= ", kMaxElements, ", got ", Attribute(pads).str());
  } else if (ap == "VALID") {
    *pt = *pl = *pb = *pr = 0;
  } else {  // SAME_UPPER / SAME_LOWER: output = ceil(in / stride)
    int64_t o_h = (h + sh - 1) / sh, o_w = (w + sw - 1) / sw;
    int64_t th = std::max<int64_t>(0, (o_h - 1) * sh + ekh - h);
    int64_t tw = std::max<int64_t>(0, (o_w - 1) * sw + ekw - w);
    bool upper = ap == "SAME_UPPER";
    *pt = upper ? th / 2 : th - th / 2;
    *pb = th - *pt;
    *pl = upper ? tw / 2 : tw - tw / 2;
    *pr = tw - *pl;
  }
  const int64_t padded_h = checked_size_add(n, checked_size_add(n, h, *pt, "pads"), *pb, "pads");
  const int64_t padded_w = checked_size_add(n, checked_size_add(n, w, *pl, "pads"), *pr, "pads");
  int64_t span_h = padded_h - ekh, span_w = padded_w - ekw;
  if (span_h < 0 || span_w < 0)
    node_fail(n, ErrorCode::ShapeMismatch, "window ", kh, "x", kw, " (dilated ", ekh, "x", ekw,
              ") is larger than the padded input ", padded_h, "x", padded_w);
  if (ceil_mode) {
    *oh = (span_h + sh - 1) / sh + 1;
    *ow = (span_w + sw - 1) / sw + 1;
    // ONNX/PyTorch rule: the last window must start inside the input or left padding.
    if ((*oh - 1) * sh >= h + *pt) --*oh;
    if ((*ow - 1) * sw >= w + *pl) --*ow;
  } else {
    *oh = span_h / sh + 1;
    *ow = span_w / sw + 1;
  }
}

int64_t scalar_int(const Tensor& t, int64_t i) { return t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i]; }

}  // namespace

std::vector<int64_t> shape_op_dims(const Node& n, const Shape& x) {
  int r = x.rank();
  int64_t start = attr_int(n, "start"), end = has_attr(n, "end") ? attr_int(n, "end") : r;
  auto clamp = [r](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v < 0 ? v + r : v, 0), r); };
  std::vector<int64_t> dims;
  for (int64_t i = clamp(start); i < clamp(end); ++i) dims.push_back(x[int(i)]);
  return dims;
}

std::vector<int64_t> int_vector(const Node& n, const Tensor& t, const char* what) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
    node_fail(n, ErrorCode::DTypeMismatch, what, " must be i64 or i32, got ", t.type_str());
  if (t.rank() > 1) node_fail(n, ErrorCode::ShapeMismatch, what, " must be a 1-D vector, got ", t.type_str());
  std::vector<int64_t> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = scalar_int(t, i);
  return v;
}

void check_window_attributes(const Node& n) {
  const std::string& a = attr_string(n, "auto_pad");
  if (a != "NOTSET" && a != "SAME_UPPER" && a != "SAME_LOWER" && a != "VALID")
    node_fail(n, ErrorCode::InvalidGraph, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \"", a, "\"");
  if (a != "NOTSET" && !attr_ints(n, "pads").empty())
    node_fail(n, ErrorCode::InvalidGraph, "pads cannot be given with auto_pad=", a);
  for (const char* name : {"strides", "dilations"})
    for (int64_t v : attr_ints(n, name))
      if (v < 1) node_fail(n, ErrorCode::InvalidGraph, name, " must be >= 1, got ", v);
  for (int64_t v : attr_ints(n, "pads"))
    if (v < 0) node_fail(n, ErrorCode::InvalidGraph, "pads must be >= 0, got ", v);
}

Conv2dParams conv2d_params(const Node& n, const Shape& x, const Shape& w) {
  if (x.rank() != 4)
    node_fail(n, ErrorCode::Unsupported, "input is rank ", x.rank(), " ", x.str(),
              "; only 2-D convolution over NCHW (rank 4) is supported");
  if (w.rank() != 4)
    node_fail(n, ErrorCode::ShapeMismatch, "weight ", w.str(), " must be rank 4 [M, C/group, kH, kW]");
  Conv2dParams p{};
  p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
  p.m = w[0], p.kh = w[2], p.kw = w[3];
  p.group = attr_int(n, "group");
  if (p.group < 1) node_fail(n, ErrorCode::InvalidGraph, "group must be >= 1, got ", p.group);
  if (p.c % p.group != 0 || p.m % p.group != 0)
    node_fail(n, ErrorCode::ShapeMismatch, "group ", p.group, " does not divide input channels ", p.c,
              " and output channels ", p.m);
  if (w[1] != p.c / p.group)
    node_fail(n, ErrorCode::ShapeMismatch, "weight ", w.str(), " has ", w[1], " input channels per group but input ",
              x.str(), " with group ", p.group, " needs ", p.c / p.group);
  const auto& ks = attr_ints(n, "kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != p.kh || ks[1] != p.kw))
    node_fail(n, ErrorCode::ShapeMismatch, "kernel_shape ", Attribute(ks).str(), " disagrees with weight ", w.str());
  if (p.kh < 1 || p.kw < 1) node_fail(n, ErrorCode::ShapeMismatch, "weight ", w.str(), " has an empty kernel");
  pair_attr(n, "strides", &p.stride_h, &p.stride_w);
  pair_attr(n, "dilations", &p.dil_h, &p.dil_w);
  resolve_window(n, p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w, false, &p.pad_t, &p.pad_l,
                 &p.pad_b, &p.pad_r, &p.oh, &p.ow);
  return p;
}

Pool2dParams pool2d_params(const Node& n, const Shape& x) {
  if (x.rank() != 4)
    node_fail(n, ErrorCode::Unsupported, "input is rank ", x.rank(), " ", x.str(),
              "; only 2-D pooling over NCHW (rank 4) is supported");
  Pool2dParams p{};
  p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
  const auto& ks = attr_ints(n, "kernel_shape");
  if (ks.size() != 2) node_fail(n, ErrorCode::InvalidGraph, "kernel_shape must have 2 values, got ", Attribute(ks).str());
  p.kh = ks[0], p.kw = ks[1];
  if (p.kh < 1 || p.kw < 1) node_fail(n, ErrorCode::InvalidGraph, "kernel_shape must be >= 1, got ", Attribute(ks).str());
  pair_attr(n, "strides", &p.stride_h, &p.stride_w);
  pair_attr(n, "dilations", &p.dil_h, &p.dil_w);
  p.count_include_pad = n.op == OpKind::AveragePool && attr_int(n, "count_include_pad") != 0;
  resolve_window(n, p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w, attr_int(n, "ceil_mode") != 0,
                 &p.pad_t, &p.pad_l, &p.pad_b, &p.pad_r, &p.oh, &p.ow);
  const int64_t wh = checked_size_mul(n, p.kh, p.dil_h, "dilations"), ww = checked_size_mul(n, p.kw, p.dil_w, "dilations");
  if (p.pad_t >= wh || p.pad_b >= wh || p.pad_l >= ww || p.pad_r >= ww)
    node_fail(n, ErrorCode::InvalidGraph, "pads must be smaller than the window; some window would see only padding");
  return p;
}

std::vector<int> reduce_axes(const Node& n, const Shape& x, const Tensor* axes_input) {
  std::vector<int64_t> raw = axes_input ? int_vector(n, *axes_input, "axes") : attr_ints(n, "axes");
  if (axes_input && has_attr(n, "axes"))
    node_fail(n, ErrorCode::InvalidGraph, "axes given both as attribute and as input");
  std::vector<int> axes;
  if (raw.empty()) {
    if (attr_int(n, "noop_with_empty_axes")) return axes;
    for (int i = 0; i < x.rank(); ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t a : raw) {
    int ax;
    if (!normalize_axis(a, x.rank(), &ax))
      node_fail(n, ErrorCode::InvalidGraph, "axis ", a, " is out of range for input ", x.str());
    if (std::find(axes.begin(), axes.end(), ax) != axes.end())
      node_fail(n, ErrorCode::InvalidGraph, "axis ", a, " is repeated");
    axes.push_back(ax);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

std::vector<int> transpose_perm(const Node& n, int rank) {
  const auto& p = attr_ints(n, "perm");
  std::vector<int> perm;
  if (p.empty()) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  if (int(p.size()) != rank)
    node_fail(n, ErrorCode::ShapeMismatch, "perm ", Attribute(p).str(), " has ", p.size(), " entries for a rank ",
              rank, " input");
  std::vector<char> seen(size_t(rank), 0);
  for (int64_t a : p) {
    if (a < 0 || a >= rank || seen[size_t(a)])
      node_fail(n, ErrorCode::InvalidGraph, "perm ", Attribute(p).str(), " is not a permutation of 0..", rank - 1);
    seen[size_t(a)] = 1;
    perm.push_back(int(a));
  }
  return perm;
}

SliceParams slice_params(const Node& n, const Shape& x, const Tensor& starts_t, const Tensor& ends_t,
                         const Tensor* axes_t, const Tensor* steps_t) {
  std::vector<int64_t> starts = int_vector(n, starts_t, "starts");
  std::vector<int64_t> ends = int_vector(n, ends_t, "ends");
  std::vector<int64_t> axes, steps;
  if (axes_t) axes = int_vector(n, *axes_t, "axes");
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps_t) steps = int_vector(n, *steps_t, "steps");
  else steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    node_fail(n, ErrorCode::ShapeMismatch, "starts, ends, axes and steps must have equal lengths, got ", starts.size(),
              ", ", ends.size(), ", ", axes.size(), ", ", steps.size());
  SliceParams p;
  int r = x.rank();
  p.start.assign(size_t(r), 0);
  p.step.assign(size_t(r), 1);
  p.count = x.dims();
  std::vector<char> seen(size_t(r), 0);
  for (size_t i = 0; i < starts.size(); ++i) {
    int ax;
    if (!normalize_axis(axes[i], r, &ax))
      node_fail(n, ErrorCode::InvalidGraph, "axis ", axes[i], " is out of range for input ", x.str());
    if (seen[size_t(ax)]) node_fail(n, ErrorCode::InvalidGraph, "axis ", axes[i], " is repeated");
    seen[size_t(ax)] = 1;
    int64_t dim = x[ax], step = steps[i];
    if (step == 0) node_fail(n, ErrorCode::InvalidGraph, "step for axis ", axes[i], " is 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0 && e > std::numeric_limits<int64_t>::min() + dim) e += dim;
    else if (e < 0) e = -1;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      p.count[size_t(ax)] = e > s ? 1 + (e - s - 1) / step : 0;  // (e - s + step - 1 overflows)
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // |step| in unsigned: -INT64_MIN is not an int64_t.
      const uint64_t mag = uint64_t(0) - uint64_t(step);
      p.count[size_t(ax)] = s > e ? int64_t(1 + uint64_t(s - e - 1) / mag) : 0;
    }
    p.start[size_t(ax)] = s;
    p.step[size_t(ax)] = step;
  }
  return p;
}

Shape reshape_target(const Node& n, const Shape& x, const Tensor& shape_t) {
  std::vector<int64_t> want = int_vector(n, shape_t, "shape");
  bool allowzero = attr_int(n, "allowzero") != 0;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == -1) {
      if (infer_at >= 0) node_fail(n, ErrorCode::InvalidGraph, "shape ", Attribute(want).str(), " has more than one -1");
      infer_at = int(i);
      continue;
    }
    if (d == 0 && !allowzero) {
      if (int(i) >= x.rank())
        node_fail(n, ErrorCode::ShapeMismatch, "shape ", Attribute(want).str(), " copies dimension ", i,
                  " but input ", x.str(), " has rank ", x.rank());
      d = want[i] = x[int(i)];
    }
    if (d < 0) node_fail(n, ErrorCode::InvalidGraph, "shape ", Attribute(want).str(), " has negative dimension ", d);
    known = d == 0 ? 0 : (known > kMaxElements / d ? kMaxElements + 1 : known * d);
  }
  int64_t total = x.numel();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      node_fail(n, ErrorCode::ShapeMismatch, "cannot reshape ", x.str(), " (", total, " elements) to ",
                Attribute(want).str());
    want[size_t(infer_at)] = total / known;
  } else if (known != total) {
    node_fail(n, ErrorCode::ShapeMismatch, "cannot reshape ", x.str(), " (", total, " elements) to ",
              Attribute(want).str(), " (", known, " elements)");
  }
  return Shape(std::move(want));
}

std::vector<int> squeeze_axes(const Node& n, const Shape& x, const Tensor* axes_input) {
  std::vector<int64_t> raw = axes_input ? int_vector(n, *axes_input, "axes") : attr_ints(n, "axes");
  std::vector<int> axes;
  if (raw.empty()) {
    for (int i = 0; i < x.rank(); ++i)
      if (x[i] == 1) axes.push_back(i);
    return axes;
  }
  for (int64_t a : raw) {
    int ax;
    if (!normalize_axis(a, x.rank(), &ax))
      node_fail(n, ErrorCode::InvalidGraph, "axis ", a, " is out of range for input ", x.str());
    if (x[ax] != 1)
      node_fail(n, ErrorCode::ShapeMismatch, "cannot squeeze axis ", a, " of ", x.str(), ": its size is ", x[ax]);
    if (std::find(axes.begin(), axes.end(), ax) != axes.end())
      node_fail(n, ErrorCode::InvalidGraph, "axis ", a, " is repeated");
    axes.push_back(ax);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

std::vector<int> unsqueeze_axes(const Node& n, int out_rank, const Tensor* axes_input) {
  std::vector<int64_t> raw = axes_input ? int_vector(n, *axes_input, "axes") : attr_ints(n, "axes");
  if (raw.empty()) node_fail(n, ErrorCode::InvalidGraph, "axes is empty or missing");
  std::vector<int> axes;
  for (int64_t a : raw) {
    int ax;
    if (!normalize_axis(a, out_rank, &ax))
      node_fail(n, ErrorCode::InvalidGraph, "axis ", a, " is out of range for an output of rank ", out_rank);
    if (std::find(axes.begin(), axes.end(), ax) != axes.end())
      node_fail(n, ErrorCode::InvalidGraph, "axis ", a, " is repeated");
    axes.push_back(ax);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

int64_t checked_size_add(const Node& n, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r < 0 || r > kMaxElements)
    node_fail(n, ErrorCode::InvalidGraph, what, ": size ", a, " + ", b, " is out of range [0, ", kMaxElements, "]");
  return r;
}

int64_t checked_size_mul(const Node& n, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r < 0 || r > kMaxElements)
    node_fail(n, ErrorCode::InvalidGraph, what, ": size ", a, " * ", b, " is out of range [0, ", kMaxElements, "]");
  return r;
}

int node_axis(const Node& n, int64_t axis, int rank, const char* what) {
  int ax;
  if (!normalize_axis(axis, rank, &ax))
    node_fail(n, ErrorCode::InvalidGraph, what, " ", axis, " is out of range for a rank ", rank, " input");
  return ax;
}

Shape expand_shape(const Node& n, const Shape& x, const Tensor& shape_t) {
  std::vector<int64_t> want = int_vector(n, shape_t, "shape");
  for (int64_t d : want)
    if (d < 0 || d > kMaxElements)
      node_fail(n, ErrorCode::InvalidGraph, "shape ", Attribute(want).str(), " has dimension ", d, " out of range");
  Shape out;
  if (!broadcast_shapes(x, Shape(want), &out))
    node_fail(n, ErrorCode::ShapeMismatch, "cannot expand ", x.str(), " to ", Attribute(want).str());
  return out;
}

Shape tile_shape(const Node& n, const Shape& x, const Tensor& repeats_t) {
  std::vector<int64_t> rep = int_vector(n, repeats_t, "repeats");
  if (int(rep.size()) != x.rank())
    node_fail(n, ErrorCode::ShapeMismatch, "repeats ", Attribute(rep).str(), " has ", rep.size(),
              " values for a rank ", x.rank(), " input ", x.str());
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) {
    if (rep[size_t(i)] < 0) node_fail(n, ErrorCode::InvalidGraph, "repeats ", Attribute(rep).str(), " has a negative value");
    out.push_back(checked_size_mul(n, x[i], rep[size_t(i)], "repeats"));
  }
  return Shape(std::move(out));
}

PadParams pad_params(const Node& n, const Shape& x, const Tensor* pads_t, const Tensor* axes_t) {
  const int r = x.rank();
  std::vector<int64_t> pads = pads_t ? int_vector(n, *pads_t, "pads") : attr_ints(n, "pads");
  if (pads_t && has_attr(n, "pads")) node_fail(n, ErrorCode::InvalidGraph, "pads given both as attribute and as input");
  std::vector<int64_t> axes;
  if (axes_t) {
    axes = int_vector(n, *axes_t, "axes");
  } else {
    for (int i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    node_fail(n, ErrorCode::ShapeMismatch, "pads has ", pads.size(), " values; ", axes.size(), " padded axes need ",
              2 * axes.size());
  PadParams p;
  p.begin.assign(size_t(r), 0);
  p.end.assign(size_t(r), 0);
  std::vector<char> seen(size_t(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int ax = node_axis(n, axes[i], r, "axis");
    if (seen[size_t(ax)]) node_fail(n, ErrorCode::InvalidGraph, "axis ", axes[i], " is repeated");
    seen[size_t(ax)] = 1;
    p.begin[size_t(ax)] = pads[i];
    p.end[size_t(ax)] = pads[i + axes.size()];
  }
  const std::string& mode = attr_string(n, "mode");
  std::vector<int64_t> out;
  for (int i = 0; i < r; ++i) {
    const int64_t b = p.begin[size_t(i)], e = p.end[size_t(i)], d = x[i];
    if (b < -kMaxElements || b > kMaxElements || e < -kMaxElements || e > kMaxElements)
      node_fail(n, ErrorCode::InvalidGraph, "pads ", Attribute(pads).str(), " has a value out of range");
    // |b|, |e| and d are at most kMaxElements: the sum cannot overflow.
    const int64_t size = d + b + e;
    if (size < 0 || size > kMaxElements || -b > d || -e > d)
      node_fail(n, ErrorCode::InvalidGraph, "pads ", Attribute(pads).str(), " give axis ", i, " of ", x.str(), " size ", size);
    if ((b > 0 || e > 0) && mode != "constant") {
      if (d == 0) node_fail(n, ErrorCode::InvalidGraph, "mode ", mode, " cannot pad the empty axis ", i, " of ", x.str());
      if (mode == "reflect" && (b >= d || e >= d))
        node_fail(n, ErrorCode::InvalidGraph, "mode reflect needs pads smaller than the axis: pads ", Attribute(pads).str(),
                  " on ", x.str());
    }
    out.push_back(size);
  }
  p.out = Shape(std::move(out));
  return p;
}

std::vector<int64_t> split_sizes(const Node& n, const Shape& x, const Tensor* split_t, int count, int* axis_out) {
  const int axis = node_axis(n, attr_int(n, "axis"), x.rank(), "axis");
  *axis_out = axis;
  const int64_t dim = x[axis];
  std::vector<int64_t> sizes;
  if (split_t && has_attr(n, "split")) node_fail(n, ErrorCode::InvalidGraph, "split given both as attribute and as input");
  if (split_t || has_attr(n, "split")) {
    sizes = split_t ? int_vector(n, *split_t, "split") : attr_ints(n, "split");
    if (int(sizes.size()) != count)
      node_fail(n, ErrorCode::InvalidGraph, "split ", Attribute(sizes).str(), " has ", sizes.size(), " sizes for ", count,
                " outputs");
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) node_fail(n, ErrorCode::InvalidGraph, "split ", Attribute(sizes).str(), " has a negative size");
      total = checked_size_add(n, total, s, "split");
    }
    if (total != dim)
      node_fail(n, ErrorCode::ShapeMismatch, "split ", Attribute(sizes).str(), " sums to ", total, " but axis ", axis,
                " of ", x.str(), " is ", dim);
    return sizes;
  }
  if (has_attr(n, "num_outputs")) {
    const int64_t parts = attr_int(n, "num_outputs");
    if (parts != count)
      node_fail(n, ErrorCode::InvalidGraph, "num_outputs=", parts, " but the node has ", count, " outputs");
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i) {
      sizes.push_back(std::min(chunk, left));
      left -= sizes.back();
    }
    if (chunk * (parts - 1) >= dim && parts > 1)
      node_fail(n, ErrorCode::ShapeMismatch, "num_outputs=", parts, " leaves an empty last chunk of axis ", axis, " of ",
                x.str());
    return sizes;
  }
  if (dim % count != 0)
    node_fail(n, ErrorCode::ShapeMismatch, "axis ", axis, " of ", x.str(), " does not split into ", count,
              " equal parts (give split or num_outputs)");
  sizes.assign(size_t(count), dim / count);
  return sizes;
}

Shape gather_nd_shape(const Node& n, const Shape& data, const Shape& indices) {
  const int64_t b = attr_int(n, "batch_dims");
  if (indices.rank() < 1) node_fail(n, ErrorCode::ShapeMismatch, "indices ", indices.str(), " must have rank >= 1");
  if (b < 0 || b >= std::min(data.rank(), indices.rank()))
    node_fail(n, ErrorCode::InvalidGraph, "batch_dims ", b, " must be in [0, min(rank(data), rank(indices)))");
  for (int i = 0; i < int(b); ++i)
    if (data[i] != indices[i])
      node_fail(n, ErrorCode::ShapeMismatch, "batch dimension ", i, " differs: data ", data.str(), ", indices ",
                indices.str());
  const int64_t last = indices[-1];
  if (last < 1 || last > data.rank() - b)
    node_fail(n, ErrorCode::ShapeMismatch, "indices ", indices.str(), " index ", last, " dims of data ", data.str(),
              " past batch_dims ", b);
  std::vector<int64_t> out(indices.dims().begin(), indices.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + b + last, data.dims().end());
  return Shape(std::move(out));
}

}  // namespace fusor
