#include "tests/support/reference_contraction.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusor::test {

namespace {

// Row-major multi-index of flat element i of shape s.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

// Flat element of multi-index idx in shape s.
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

int64_t product(const std::vector<int64_t>& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Output size of a window op along one dim (ceil_mode: the last window must start inside
// the input or its begin padding).
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pad_begin, int64_t pad_end,
                   bool ceil_mode) {
  int64_t span = in + pad_begin + pad_end - ((k - 1) * dil + 1);
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// Element idx of x after numpy broadcasting to a shape whose trailing dims are out_idx's.
double broadcast_at(const Tensor& x, const std::vector<int64_t>& out_idx) {
  const std::vector<int64_t>& xs = x.shape().dims();
  std::vector<int64_t> idx(xs.size());
  size_t shift = out_idx.size() - xs.size();
  for (size_t d = 0; d < xs.size(); ++d) idx[d] = xs[d] == 1 ? 0 : out_idx[d + shift];
  return x.at(ravel(idx, xs));
}

}  // namespace

Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const RefConv& g) {
  const auto& xs = x.shape().dims();
  const auto& ws = w.shape().dims();
  int64_t n = xs[0], h = xs[2], wd = xs[3];
  int64_t m = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  int64_t oh = window_out(h, kh, g.stride_h, g.dil_h, g.pad_t, g.pad_b, false);
  int64_t ow = window_out(wd, kw, g.stride_w, g.dil_w, g.pad_l, g.pad_r, false);
  int64_t mg = m / g.group;
  Tensor y = Tensor::empty(x.dtype(), Shape{n, m, oh, ow});
  std::vector<int64_t> ys = y.shape().dims();
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, ys);  // [img, oc, r, q]
    int64_t grp = o[1] / mg;
    double acc = bias ? bias->at(o[1]) : 0.0;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t b = 0; b < kw; ++b) {
          int64_t ih = o[2] * g.stride_h - g.pad_t + a * g.dil_h;
          int64_t iw = o[3] * g.stride_w - g.pad_l + b * g.dil_w;
          if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
          double xv = x.at(ravel({o[0], grp * cg + ci, ih, iw}, xs));
          double wv = w.at(ravel({o[1], ci, a, b}, ws));
          acc += xv * wv;
        }
    y.set(i, acc);
  }
  return y;
}

Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> as = a.shape().dims(), bs = b.shape().dims();
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> batch(r);
  for (size_t d = 0; d < r; ++d) batch[d] = std::max(ab[d], bb[d]);
  std::vector<int64_t> full = batch;  // the output with both matrix dims kept
  full.push_back(m);
  full.push_back(n);
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  Tensor y = Tensor::empty(a.dtype(), Shape(out));
  std::vector<int64_t> a_full = ab, b_full = bb;
  a_full.insert(a_full.end(), {m, k});
  b_full.insert(b_full.end(), {k, n});
  for (int64_t i = 0; i < product(full); ++i) {
    std::vector<int64_t> o = unravel(i, full);
    // The operands' indices at p = 0; p then steps a's last dim and b's second to last.
    std::vector<int64_t> ia(o.begin(), o.end() - 2), ib(o.begin(), o.end() - 2);
    for (size_t d = 0; d < r; ++d) {
      if (ab[d] == 1) ia[d] = 0;
      if (bb[d] == 1) ib[d] = 0;
    }
    ia.insert(ia.end(), {o[r], 0});
    ib.insert(ib.end(), {0, o[r + 1]});
    int64_t a0 = ravel(ia, a_full), b0 = ravel(ib, b_full);
    double acc = 0;
    for (int64_t p = 0; p < k; ++p) acc += a.at(a0 + p) * b.at(b0 + p * n);
    y.set(i, acc);  // dropping unit dims keeps the row-major order
  }
  return y;
}

Tensor ref_gemm(const Tensor& a, const Tensor& b, const Tensor* c, double alpha, double beta, bool trans_a,
                bool trans_b) {
  int64_t m = trans_a ? a.shape()[1] : a.shape()[0], k = trans_a ? a.shape()[0] : a.shape()[1];
  int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
  Tensor y = Tensor::empty(a.dtype(), Shape{m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        double av = trans_a ? a.at(p * m + i) : a.at(i * k + p);
        double bv = trans_b ? b.at(j * k + p) : b.at(p * n + j);
        acc += av * bv;
      }
      double v = alpha * acc;
      if (c) v += beta * broadcast_at(*c, {i, j});
      y.set(i * n + j, v);
    }
  return y;
}

namespace {

enum class PoolKind { Max, Average };

Tensor ref_pool(const Tensor& x, const RefPool& g, PoolKind kind) {
  const auto& xs = x.shape().dims();
  int64_t h = xs[2], w = xs[3];
  int64_t oh = window_out(h, g.kh, g.stride_h, g.dil_h, g.pad_t, g.pad_b, g.ceil_mode);
  int64_t ow = window_out(w, g.kw, g.stride_w, g.dil_w, g.pad_l, g.pad_r, g.ceil_mode);
  Tensor y = Tensor::empty(x.dtype(), Shape{xs[0], xs[1], oh, ow});
  std::vector<int64_t> ys = y.shape().dims();
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, ys);
    double best = -std::numeric_limits<double>::infinity(), sum = 0;
    int64_t inside = 0, padded = 0;
    for (int64_t a = 0; a < g.kh; ++a)
      for (int64_t b = 0; b < g.kw; ++b) {
        int64_t ih = o[2] * g.stride_h - g.pad_t + a * g.dil_h;
        int64_t iw = o[3] * g.stride_w - g.pad_l + b * g.dil_w;
        if (ih >= -g.pad_t && ih < h + g.pad_b && iw >= -g.pad_l && iw < w + g.pad_r) ++padded;
        if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
        ++inside;
        double v = x.at(ravel({o[0], o[1], ih, iw}, xs));
        sum += v;
        if (!std::isnan(best) && (std::isnan(v) || v > best)) best = v;  // NaN propagates
      }
    if (kind == PoolKind::Max) y.set(i, best);
    else y.set(i, sum / double(g.count_include_pad ? padded : inside));
  }
  return y;
}

}  // namespace

Tensor ref_maxpool(const Tensor& x, const RefPool& g) { return ref_pool(x, g, PoolKind::Max); }
Tensor ref_avgpool(const Tensor& x, const RefPool& g) { return ref_pool(x, g, PoolKind::Average); }

Tensor ref_global_avgpool(const Tensor& x) {
  std::vector<int64_t> ys = x.shape().dims();
  for (size_t d = 2; d < ys.size(); ++d) ys[d] = 1;
  Tensor y = Tensor::empty(x.dtype(), Shape(ys));
  int64_t spatial = x.numel() / (ys[0] * ys[1]);
  for (int64_t i = 0; i < y.numel(); ++i) {
    double s = 0;
    for (int64_t j = 0; j < spatial; ++j) s += x.at(i * spatial + j);
    y.set(i, s / double(spatial));
  }
  return y;
}

Tensor ref_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  const auto& xs = x.shape().dims();
  std::vector<int64_t> ys;
  for (int64_t p : perm) ys.push_back(xs[size_t(p)]);
  Tensor y = Tensor::empty(x.dtype(), Shape(ys));
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, ys), idx(xs.size());
    for (size_t d = 0; d < perm.size(); ++d) idx[size_t(perm[d])] = o[d];
    y.set(i, x.at(ravel(idx, xs)));
  }
  return y;
}

Tensor ref_concat(const std::vector<Tensor>& xs, int64_t axis) {
  std::vector<int64_t> ys = xs[0].shape().dims();
  size_t ax = size_t(norm_axis(axis, int64_t(ys.size())));
  ys[ax] = 0;
  for (const Tensor& t : xs) ys[ax] += t.shape()[int(ax)];
  Tensor y = Tensor::empty(xs[0].dtype(), Shape(ys));
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, ys);
    size_t which = 0;
    while (o[ax] >= xs[which].shape()[int(ax)]) o[ax] -= xs[which++].shape()[int(ax)];
    y.set(i, xs[which].at(ravel(o, xs[which].shape().dims())));
  }
  return y;
}

Tensor ref_slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  const auto& xs = x.shape().dims();
  int64_t r = int64_t(xs.size());
  std::vector<int64_t> first(xs.size(), 0), step(xs.size(), 1), count = xs;
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t ax = size_t(axes.empty() ? int64_t(i) : norm_axis(axes[i], r));
    int64_t dim = xs[ax], st = steps.empty() ? 1 : steps[i];
    // ONNX: negative positions count from the back, then clamp to [0, dim] (step > 0) or
    // [-1, dim - 1] for the end and [0, dim - 1] for the start (step < 0).
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t c = 0;
    for (int64_t p = s; st > 0 ? p < e : p > e; p += st) ++c;
    first[ax] = s;
    step[ax] = st;
    count[ax] = c;
  }
  Tensor y = Tensor::empty(x.dtype(), Shape(count));
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, count);
    for (size_t d = 0; d < o.size(); ++d) o[d] = first[d] + o[d] * step[d];
    y.set(i, x.at(ravel(o, xs)));
  }
  return y;
}

Tensor ref_gather(const Tensor& x, const Tensor& indices, int64_t axis) {
  const auto& xs = x.shape().dims();
  const auto& is = indices.shape().dims();
  size_t ax = size_t(norm_axis(axis, int64_t(xs.size())));
  std::vector<int64_t> ys(xs.begin(), xs.begin() + int64_t(ax));
  ys.insert(ys.end(), is.begin(), is.end());
  ys.insert(ys.end(), xs.begin() + int64_t(ax) + 1, xs.end());
  Tensor y = Tensor::empty(x.dtype(), Shape(ys));
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, ys);
    std::vector<int64_t> ii(o.begin() + int64_t(ax), o.begin() + int64_t(ax + is.size()));
    int64_t v = int64_t(indices.at(ravel(ii, is)));
    if (v < 0) v += xs[ax];
    std::vector<int64_t> src(o.begin(), o.begin() + int64_t(ax));
    src.push_back(v);
    src.insert(src.end(), o.begin() + int64_t(ax + is.size()), o.end());
    y.set(i, x.at(ravel(src, xs)));
  }
  return y;
}

}  // namespace fusor::test
