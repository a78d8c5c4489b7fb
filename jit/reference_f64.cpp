#include "jit/reference_f64.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.at(i);
  return v;
}

// Conv 2-D, NCHW, with groups, strides, dilations and pads; y is [n, m, oh, ow].
std::optional<std::vector<double>> conv2d(const FoldedBatchNorm& f, const Tensor& x, const Shape& out) {
  const Tensor& w = f.producer_constants.at(0);
  if (x.rank() != 4 || w.rank() != 4) return std::nullopt;
  const Conv2dParams p = conv2d_params(f.producer, x.shape(), w.shape());
  if (out.rank() != 4 || out[0] != p.n || out[1] != p.m || out[2] != p.oh || out[3] != p.ow) return std::nullopt;
  const std::vector<double> xs = doubles(x), ws = doubles(w);
  const Tensor* b = f.producer_constants.size() > 1 && f.producer_constants[1].defined() ? &f.producer_constants[1]
                                                                                          : nullptr;
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<double> y(size_t(p.n * p.m * p.oh * p.ow));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t m = 0; m < p.m; ++m) {
      const int64_t g = m / mg;
      double* yo = &y[size_t(((n * p.m + m) * p.oh) * p.ow)];
      for (int64_t i = 0; i < p.oh * p.ow; ++i) yo[i] = b ? b->at(m) : 0.0;
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const double wv = ws[size_t(((m * cg + c) * p.kh + ky) * p.kw + kx)];
            const double* xc = &xs[size_t((n * p.c + g * cg + c) * p.h * p.w)];
            // The output columns whose input column ix = ox*stride - pad + kx*dil is inside
            // the image, so that the inner loop has no test (and vectorizes).
            const int64_t shift = kx * p.dil_w - p.pad_l;
            const int64_t ox_lo = shift >= 0 ? 0 : (-shift + p.stride_w - 1) / p.stride_w;
            const int64_t ox_hi = p.w - 1 - shift < 0 ? 0 : std::min(p.ow, (p.w - 1 - shift) / p.stride_w + 1);
            for (int64_t oy = 0; oy < p.oh; ++oy) {
              const int64_t iy = oy * p.stride_h - p.pad_t + ky * p.dil_h;
              if (iy < 0 || iy >= p.h) continue;
              double* __restrict yr = yo + oy * p.ow;
              const double* __restrict xr = xc + iy * p.w + shift;
              if (p.stride_w == 1)
                for (int64_t ox = ox_lo; ox < ox_hi; ++ox) yr[ox] += wv * xr[ox];
              else
                for (int64_t ox = ox_lo; ox < ox_hi; ++ox) yr[ox] += wv * xr[ox * p.stride_w];
            }
          }
    }
  return y;
}

// MatMul of x [..., K] by a constant w [K, N].
std::optional<std::vector<double>> matmul(const FoldedBatchNorm& f, const Tensor& x, const Shape& out) {
  const Tensor& w = f.producer_constants.at(0);
  if (w.rank() != 2 || x.rank() < 1 || x.shape()[x.rank() - 1] != w.shape()[0]) return std::nullopt;
  const int64_t k = w.shape()[0], n = w.shape()[1], rows = x.numel() / std::max<int64_t>(k, 1);
  if (out.numel() != rows * n || out[out.rank() - 1] != n) return std::nullopt;
  const std::vector<double> xs = doubles(x), ws = doubles(w);
  std::vector<double> y(size_t(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i) {
      const double a = xs[size_t(r * k + i)];
      for (int64_t j = 0; j < n; ++j) y[size_t(r * n + j)] += a * ws[size_t(i * n + j)];
    }
  return y;
}

// Gemm: alpha * op(A) op(B) + beta * C, A the input, C broadcast over [M, N].
std::optional<std::vector<double>> gemm(const FoldedBatchNorm& f, const Tensor& a, const Shape& out) {
  const Tensor& b = f.producer_constants.at(0);
  if (a.rank() != 2 || b.rank() != 2 || out.rank() != 2) return std::nullopt;
  const bool ta = attr_int(f.producer, "transA") != 0, tb = attr_int(f.producer, "transB") != 0;
  const double alpha = attr_float(f.producer, "alpha"), beta = attr_float(f.producer, "beta");
  const int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  if ((tb ? b.shape()[1] : b.shape()[0]) != k || out[0] != m || out[1] != n) return std::nullopt;
  const std::vector<double> as = doubles(a), bs = doubles(b);
  std::vector<double> y(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += as[size_t(ta ? l * m + i : i * k + l)] * bs[size_t(tb ? j * k + l : l * n + j)];
      y[size_t(i * n + j)] = alpha * s;
    }
  if (f.producer_constants.size() > 1 && f.producer_constants[1].defined()) {
    const Tensor& c = f.producer_constants[1];
    const Shape& cs = c.shape();
    // C broadcasts to [M, N]: a scalar, [N], [1, N], [M, 1] or [M, N].
    const int64_t cm = cs.rank() == 2 ? cs[0] : 1, cn = cs.rank() >= 1 ? cs[cs.rank() - 1] : 1;
    if ((cm != 1 && cm != m) || (cn != 1 && cn != n) || cs.rank() > 2) return std::nullopt;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) y[size_t(i * n + j)] += beta * c.at((cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j));
  }
  return y;
}

}  // namespace

std::optional<Tensor> batchnorm_as_written_f64(const FoldedBatchNorm& f, const Tensor& x, const Shape& shape) {
  if (x.dtype() != DType::F32 || f.producer_constants.empty() || shape.rank() < 2) return std::nullopt;
  std::optional<std::vector<double>> y;
  switch (f.producer.op) {
    case OpKind::Conv: y = conv2d(f, x, shape); break;
    case OpKind::MatMul: y = matmul(f, x, shape); break;
    case OpKind::Gemm: y = gemm(f, x, shape); break;
    default: return std::nullopt;
  }
  if (!y) return std::nullopt;
  // BatchNormalization over axis 1: (y - mean) / sqrt(var + eps) * gamma + beta.
  const int64_t channels = shape[1];
  const int64_t inner = shape.numel() / std::max<int64_t>(shape[0] * channels, 1);
  const double eps = attr_float(f.batchnorm, "epsilon");
  for (const Tensor& t : f.bn_constants)
    if (t.numel() != channels) return std::nullopt;
  Tensor out = Tensor::empty(DType::F32, shape);
  float* o = out.data<float>();
  for (int64_t i = 0; i < shape.numel(); ++i) {
    const int64_t c = (i / inner) % channels;
    const double s = f.bn_constants[0].at(c) / std::sqrt(f.bn_constants[3].at(c) + eps);
    o[i] = float(((*y)[size_t(i)] - f.bn_constants[2].at(c)) * s + f.bn_constants[1].at(c));
  }
  return out;
}

}  // namespace fusor
