// Static kernels of the normalizations: BatchNormalization (inference), LayerNormalization
// and Softmax. All compute in f32; f16/bf16 nodes run the f32 kernel on converted copies
// (run_in_f32), a deliberate trade of two extra passes for one code path.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "codegen/static/kernel_util.h"
#include "codegen/static/math.h"

namespace fusor {

namespace {

using namespace static_kernels;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// y = x*s[c] + b[c] with the per-channel affine folded in double:
// s = scale/sqrt(var + eps), b = bias - mean*s.
void batchnorm_f32(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out();
  const auto& dims = x.shape().dims();
  const int64_t channels = dims[1], plane = product(dims, 2, dims.size());
  const double eps = attr_float(a.node, "epsilon");
  std::vector<float> s(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    double sc = a.in(1).at(c) / std::sqrt(a.in(4).at(c) + eps);
    s[size_t(c)] = float(sc);
    b[size_t(c)] = float(a.in(2).at(c) - a.in(3).at(c) * sc);
  }
  const float* px = static_cast<const float*>(x.raw());
  float* py = static_cast<float*>(y.raw());
  // Flat range split over threads; each piece walks its (n, c) planes.
  a.parallel.parallel_for(x.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t p = begin / plane, off = begin % plane;
      const int64_t n = std::min(plane - off, end - begin);
      const float sc = s[size_t(p % channels)], bc = b[size_t(p % channels)];
      const float* xi = px + begin;
      float* yi = py + begin;
      for (int64_t i = 0; i < n; ++i) yi[i] = fmadd(xi[i], sc, bc);
      begin += n;
    }
  });
}

// Rows of `cols` elements normalized over the row: y = (x - mean)/sqrt(var + eps)*g + b,
// with g and b the Scale and B inputs broadcast to the normalized shape. Mean and variance
// are two-pass (variance of the centred row: never negative, no cancellation).
void layernorm_f32(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out();
  if (x.numel() == 0) return;
  const auto& dims = x.shape().dims();
  int axis = 0;
  normalize_axis(attr_int(a.node, "axis"), x.rank(), &axis);  // validated by inference
  const int64_t rows = product(dims, 0, size_t(axis)), cols = product(dims, size_t(axis), dims.size());
  const double eps = attr_float(a.node, "epsilon");
  // Scale and bias expanded to one value per column (one pass over `cols`, not per row).
  const Shape norm(std::vector<int64_t>(dims.begin() + axis, dims.end()));
  auto expand = [&](const Tensor* t, float fallback) {
    std::vector<float> v(size_t(cols), fallback);
    if (!t) return v;
    const std::vector<int64_t> st = broadcast_strides(t->shape(), norm);
    std::vector<int64_t> idx(size_t(norm.rank()), 0);
    for (int64_t j = 0; j < cols; ++j) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
      v[size_t(j)] = float(t->at(off));
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < norm.dims()[d]) break;
        idx[d] = 0;
      }
    }
    return v;
  };
  const std::vector<float> gamma = expand(&a.in(1), 1.0f), beta = expand(a.has(2) ? &a.in(2) : nullptr, 0.0f);
  const float* px = static_cast<const float*>(x.raw());
  float* py = static_cast<float*>(y.raw());
  const float* g = gamma.data();
  const float* bt = beta.data();
  const int64_t grain = std::max<int64_t>(1, kElementGrain / cols);
  a.parallel.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = px + r * cols;
      float* yr = py + r * cols;
      const float mean = float(sum_f32(xr, cols) / double(cols));
      const double ss = sum_f32(xr, cols, [mean](float v) {
        float d = v - mean;
        return d * d;
      });
      const float rstd = float(1.0 / std::sqrt(ss / double(cols) + eps));
      for (int64_t j = 0; j < cols; ++j) yr[j] = fmadd((xr[j] - mean) * rstd, g[j], bt[j]);
    }
  });
}

// Softmax over contiguous rows of n: y = exp(x - max) / sum.
void softmax_row(const float* x, float* y, int64_t n) {
  const float mx = max_f32(x, n);
  for (int64_t k = 0; k < n; ++k) y[k] = exp_f32(x[k] - mx);
  const float inv = float(1.0 / sum_f32(y, n));
  for (int64_t k = 0; k < n; ++k) y[k] *= inv;
}

// Softmax over the middle axis of [len, inner] for columns [j0, j0 + w), vectorized across
// the columns; column sums in double. The slab [len, w] is read three times, so w is chosen
// to keep it within kSlabBytes (L2) when len allows.
constexpr int64_t kColumnTile = 256;
constexpr int64_t kSlabBytes = 256 << 10;
void softmax_columns(const float* x, float* y, int64_t len, int64_t inner, int64_t w) {
  float m[kColumnTile];
  double s[kColumnTile];
  float inv[kColumnTile];
  std::fill(m, m + w, -std::numeric_limits<float>::infinity());
  std::fill(s, s + w, 0.0);
  for (int64_t k = 0; k < len; ++k) {
    const float* xk = x + k * inner;
    for (int64_t j = 0; j < w; ++j) m[j] = xk[j] > m[j] ? xk[j] : m[j];
  }
  for (int64_t k = 0; k < len; ++k) {
    const float* xk = x + k * inner;
    float* yk = y + k * inner;
    for (int64_t j = 0; j < w; ++j) yk[j] = exp_f32(xk[j] - m[j]);
    for (int64_t j = 0; j < w; ++j) s[j] += double(yk[j]);
  }
  for (int64_t j = 0; j < w; ++j) inv[j] = float(1.0 / s[j]);
  for (int64_t k = 0; k < len; ++k) {
    float* yk = y + k * inner;
    for (int64_t j = 0; j < w; ++j) yk[j] *= inv[j];
  }
}

void softmax_f32(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out();
  if (x.numel() == 0) return;
  const auto& dims = x.shape().dims();
  int axis = 0;
  normalize_axis(attr_int(a.node, "axis"), std::max(1, x.rank()), &axis);
  const int64_t outer = product(dims, 0, size_t(std::min<int>(axis, x.rank())));
  const int64_t len = x.rank() == 0 ? 1 : dims[size_t(axis)];
  const int64_t inner = x.rank() == 0 ? 1 : product(dims, size_t(axis) + 1, dims.size());
  const float* px = static_cast<const float*>(x.raw());
  float* py = static_cast<float*>(y.raw());
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kElementGrain / len);
    a.parallel.parallel_for(outer, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) softmax_row(px + r * len, py + r * len, len);
    });
    return;
  }
  // Units of work: (outer index, tile of columns).
  const int64_t tile = std::clamp<int64_t>(kSlabBytes / (len * 4) / 16 * 16, 16, kColumnTile);
  const int64_t tiles = (inner + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (len * std::min(inner, tile)));
  a.parallel.parallel_for(outer * tiles, grain, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / tiles, j0 = (u % tiles) * tile;
      const int64_t off = o * len * inner + j0;
      softmax_columns(px + off, py + off, len, inner, std::min(tile, inner - j0));
    }
  });
}

void run_f32_or_staged(StaticKernelArgs& a, void (*kernel)(StaticKernelArgs&)) {
  if (a.in(0).dtype() == DType::F32) kernel(a);
  else if (a.in(0).dtype() == DType::F16 || a.in(0).dtype() == DType::BF16) run_in_f32(a, kernel);
  else unsupported_dtype(a.node, a.in(0).dtype());
}

}  // namespace

void run_BatchNormalization(StaticKernelArgs& a) { run_f32_or_staged(a, batchnorm_f32); }
void run_LayerNormalization(StaticKernelArgs& a) { run_f32_or_staged(a, layernorm_f32); }
void run_Softmax(StaticKernelArgs& a) { run_f32_or_staged(a, softmax_f32); }

}  // namespace fusor
