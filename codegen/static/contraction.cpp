// Static kernels of the contractions: Conv (im2col + sgemm, a direct GEMM for 1x1 and a
// direct loop for depthwise), MatMul (numpy batching and broadcasting) and Gemm. Every
// matrix product goes through OpenBLAS's cblas_sgemm (or sgemv for a single row/column).
// The kernels compute in f32; f16/bf16 tensors are converted to f32 and back.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "codegen/static/kernel_util.h"
#include "ir/ops/params.h"

namespace fusor {

namespace static_kernels {

// Note [BLAS threads]
// OpenBLAS keeps one process-wide thread count. Every BLAS caller sets the count it wants
// right before its calls (use_blas_threads) instead of assuming what the last caller left:
// a product issued from the calling thread uses as many BLAS threads as the engine has;
// products issued from inside parallel_for chunks (the many small products of a batched
// MatMul or a grouped Conv) run with one BLAS thread each, so the engine's threads and
// BLAS's never oversubscribe the cores. The count is restored to the engine's after such a
// region. The count only affects speed, never results, so a concurrent caller that briefly
// sees another's count is slower, not wrong.
void use_blas_threads(int n) {
  if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

// BLAS takes int dimensions; larger ones are refused rather than truncated.
void check_blas_dims(const Node& node, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d > INT_MAX)
      node_fail(node, ErrorCode::Unsupported, "dimension ", d, " exceeds what the BLAS library takes (", INT_MAX, ")");
}

// C[m, n] = alpha * op(A) * op(B) + beta * C, all row-major with the given leading
// dimensions (of A and B as stored). beta == 0 ignores what C held (it may be uninitialized).
// A single row or column goes to sgemv, which OpenBLAS runs faster than a degenerate sgemm.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  // BLAS rejects leading dimensions below 1 even where they are never used.
  int ia = int(std::max<int64_t>(lda, 1)), ib = int(std::max<int64_t>(ldb, 1)), ic = int(std::max<int64_t>(ldc, 1));
  if (n == 1 || m == 1) {
    // y = op(A) x with y a column of C (n == 1), or y^T = x^T op(B) (m == 1).
    int64_t len = n == 1 ? m : n, incy = n == 1 ? ldc : 1;
    if (beta == 0)  // y may be uninitialized, and whether sgemv reads it for beta == 0 varies
      for (int64_t i = 0; i < len; ++i) c[i * incy] = 0.0f;
    if (n == 1) {
      int incx = tb ? 1 : ib;
      if (!ta) cblas_sgemv(CblasRowMajor, CblasNoTrans, int(m), int(k), alpha, a, ia, b, incx, beta, c, int(incy));
      else cblas_sgemv(CblasRowMajor, CblasTrans, int(k), int(m), alpha, a, ia, b, incx, beta, c, int(incy));
    } else {
      int incx = ta ? ia : 1;
      if (!tb) cblas_sgemv(CblasRowMajor, CblasTrans, int(k), int(n), alpha, b, ib, a, incx, beta, c, 1);
      else cblas_sgemv(CblasRowMajor, CblasNoTrans, int(n), int(k), alpha, b, ib, a, incx, beta, c, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              alpha, a, ia, b, ib, beta, c, ic);
}

}  // namespace static_kernels

namespace {

using static_kernels::run_floating;
using static_kernels::valid_range;

using static_kernels::kElementGrain;

// The m*n*k of a product (4M multiply-adds: tens of microseconds on one core) below which
// the fork and join of a BLAS-threaded call is a large share of the call.
constexpr int64_t kSmallProduct = int64_t(1) << 22;

using static_kernels::check_blas_dims;
using static_kernels::gemm;
using static_kernels::use_blas_threads;

// ---- MatMul / Gemm --------------------------------------------------------------------

// The dims of s without its last `drop` (matrix) dims.
Shape batch_of(const Shape& s, int drop) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - std::min(drop, s.rank())));
}

void matmul_f32(StaticKernelArgs& args) {
  const Tensor& a = args.in(0);
  const Tensor& b = args.in(1);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  // 1-D operands are promoted: a [K] to [1, K], b [K] to [K, 1]; the unit dim is not in y.
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  int64_t m = as.rank() >= 2 ? as[-2] : 1, k = as[-1], n = bs.rank() >= 2 ? bs[-1] : 1;
  Shape a_batch = batch_of(as, 2), b_batch = batch_of(bs, 2);
  Shape batch;
  broadcast_shapes(a_batch, b_batch, &batch);  // inference checked that it broadcasts
  int64_t count = batch.numel();
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.data<float>();
  int threads = args.parallel.num_threads();

  // b shared by every batch entry: the batch folds into M and one product does it all
  // (a's batch is then the output's, contiguous [count * m, k]).
  if (b_batch.numel() == 1 && count * m <= INT_MAX) {
    check_blas_dims(args.node, {k, n});
    use_blas_threads(threads);
    gemm(false, false, count * m, n, k, 1.0f, pa, k, pb, n, 0.0f, py, n);
    return;
  }
  check_blas_dims(args.node, {m, n, k});
  // Per batch entry, the element offsets of its a and b matrices (0 strides on broadcast dims).
  std::vector<int64_t> sa = broadcast_strides(a_batch, batch), sb = broadcast_strides(b_batch, batch);
  std::vector<int64_t> offsets(size_t(2 * count));
  std::vector<int64_t> idx(size_t(batch.rank()), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < batch.rank(); ++d) {
      oa += idx[size_t(d)] * sa[size_t(d)];
      ob += idx[size_t(d)] * sb[size_t(d)];
    }
    offsets[size_t(2 * i)] = oa * m * k;
    offsets[size_t(2 * i + 1)] = ob * k * n;
    for (int d = batch.rank() - 1; d >= 0 && ++idx[size_t(d)] == batch[d]; --d) idx[size_t(d)] = 0;
  }
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      gemm(false, false, m, n, k, 1.0f, pa + offsets[size_t(2 * i)], k, pb + offsets[size_t(2 * i + 1)], n, 0.0f,
           py + i * m * n, n);
  };
  // Many matrices: one per engine thread at a time, each product single-threaded (splitting
  // a 128x64x128 attention head over BLAS threads costs a fork and join per head and buys
  // little). Few large ones: one after another, each spread over the threads by BLAS.
  bool across_batch = threads > 1 && count >= threads && (m * n * k <= kSmallProduct || count % threads == 0);
  if (across_batch) {
    use_blas_threads(1);
    args.parallel.parallel_for(count, 1, run);
    use_blas_threads(threads);
  } else {
    use_blas_threads(threads);
    run(0, count);
  }
}

// Writes C (unidirectionally broadcast to [m, n]) into y.
void broadcast_into(const Tensor& c, float* y, int64_t m, int64_t n, Parallel& par) {
  const float* pc = c.data<float>();
  if (c.numel() == m * n) {
    std::memcpy(y, pc, size_t(m * n) * sizeof(float));
    return;
  }
  std::vector<int64_t> st = broadcast_strides(c.shape(), Shape{m, n});
  int64_t sm = st[0], sn = st[1];
  par.parallel_for(m, std::max<int64_t>(1, kElementGrain / n), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float* row = y + i * n;
      const float* src = pc + i * sm;
      if (sn == 0) std::fill(row, row + n, src[0]);
      else std::memcpy(row, src, size_t(n) * sizeof(float));
    }
  });
}

void gemm_f32(StaticKernelArgs& args) {
  const Tensor& a = args.in(0);
  const Tensor& b = args.in(1);
  Tensor& y = args.out();
  bool ta = attr_int(args.node, "transA") != 0, tb = attr_int(args.node, "transB") != 0;
  float alpha = float(attr_float(args.node, "alpha")), beta = float(attr_float(args.node, "beta"));
  int64_t m = y.shape()[0], n = y.shape()[1], k = ta ? a.shape()[0] : a.shape()[1];
  if (m == 0 || n == 0) return;
  check_blas_dims(args.node, {m, n, k, a.shape()[1], b.shape()[1]});
  float* py = y.data<float>();
  // C is written into Y first so that sgemm's own beta applies it. beta == 0 skips C, as
  // BLAS does: 0 * C contributes nothing (C's infinities and NaNs included).
  bool with_c = args.has(2) && beta != 0;
  if (with_c) broadcast_into(args.in(2), py, m, n, args.parallel);
  use_blas_threads(args.parallel.num_threads());
  gemm(ta, tb, m, n, k, alpha, a.data<float>(), a.shape()[1], b.data<float>(), b.shape()[1], with_c ? beta : 0.0f, py,
       n);
}

// ---- Conv -----------------------------------------------------------------------------


// Lays out one group of one image as the [cg*kh*kw, oh*ow] matrix whose product with the
// group's weights is the convolution; padding reads as 0.
void im2col(const Conv2dParams& p, const float* x, int64_t cg, float* col, Parallel& par) {
  int64_t ohw = p.oh * p.ow, rows = cg * p.kh * p.kw;
  par.parallel_for(rows, std::max<int64_t>(1, kElementGrain / ohw), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t ci = r / (p.kh * p.kw), ki = r / p.kw % p.kh, kj = r % p.kw;
      const float* plane = x + ci * p.h * p.w;
      float* dst = col + r * ohw;
      int64_t col_off = kj * p.dil_w - p.pad_l, lo, hi;
      valid_range(col_off, p.stride_w, p.w, p.ow, &lo, &hi);
      for (int64_t oh = 0; oh < p.oh; ++oh, dst += p.ow) {
        int64_t ih = oh * p.stride_h - p.pad_t + ki * p.dil_h;
        if (ih < 0 || ih >= p.h) {
          std::fill(dst, dst + p.ow, 0.0f);
          continue;
        }
        const float* src = plane + ih * p.w;  // input column of output o: o * stride_w + col_off
        std::fill(dst, dst + lo, 0.0f);
        if (p.stride_w == 1) std::memcpy(dst + lo, src + lo + col_off, size_t(hi - lo) * sizeof(float));
        else
          for (int64_t o = lo; o < hi; ++o) dst[o] = src[o * p.stride_w + col_off];
        std::fill(dst + hi, dst + p.ow, 0.0f);
      }
    }
  });
}

// Depthwise convolution (group == C == M: one input channel per output channel) as a direct
// loop: each output row accumulates kh*kw shifted, scaled input rows, a loop over ow that
// vectorizes. im2col + GEMM would be a [1, kh*kw] x [kh*kw, oh*ow] product per channel.
void depthwise(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y, Parallel& par) {
  int64_t rows = p.n * p.c * p.oh;
  par.parallel_for(rows, std::max<int64_t>(1, kElementGrain / (p.ow * p.kh * p.kw)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t plane = r / p.oh, oh = r % p.oh, c = plane % p.c;
      float* dst = y + r * p.ow;
      std::fill(dst, dst + p.ow, bias ? bias[c] : 0.0f);
      const float* wc = w + c * p.kh * p.kw;
      for (int64_t ki = 0; ki < p.kh; ++ki) {
        int64_t ih = oh * p.stride_h - p.pad_t + ki * p.dil_h;
        if (ih < 0 || ih >= p.h) continue;
        const float* src = x + (plane * p.h + ih) * p.w;
        for (int64_t kj = 0; kj < p.kw; ++kj) {
          float wv = wc[ki * p.kw + kj];
          int64_t off = kj * p.dil_w - p.pad_l, lo, hi;  // input column of output o: o * stride_w + off
          valid_range(off, p.stride_w, p.w, p.ow, &lo, &hi);
          if (p.stride_w == 1)
            for (int64_t o = lo; o < hi; ++o) dst[o] += wv * src[o + off];
          else
            for (int64_t o = lo; o < hi; ++o) dst[o] += wv * src[o * p.stride_w + off];
        }
      }
    }
  });
}

void conv_f32(StaticKernelArgs& args) {
  const Tensor& xt = args.in(0);
  const Tensor& wt = args.in(1);
  Tensor& yt = args.out();
  if (yt.numel() == 0) return;
  Conv2dParams p = conv2d_params(args.node, xt.shape(), wt.shape());
  const float* x = xt.data<float>();
  const float* w = wt.data<float>();
  const float* bias = args.has(2) ? args.in(2).data<float>() : nullptr;
  float* y = yt.data<float>();
  Parallel& par = args.parallel;

  if (p.group == p.c && p.m == p.c) return depthwise(p, x, w, bias, y, par);

  int64_t cg = p.c / p.group, mg = p.m / p.group;
  int64_t hw = p.h * p.w, ohw = p.oh * p.ow, kk = cg * p.kh * p.kw;
  // A 1x1 kernel with unit stride and no padding reads the input as it lies: the group's
  // [cg, h*w] block already is the im2col matrix.
  bool pointwise = p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 && p.pad_l == 0 &&
                   p.pad_b == 0 && p.pad_r == 0;
  check_blas_dims(args.node, {mg, ohw, kk, hw});
  // The bias is written into y first so that sgemm adds the product to it (beta = 1).
  if (bias)
    par.parallel_for(p.n * p.m, std::max<int64_t>(1, kElementGrain / ohw), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) std::fill(y + i * ohw, y + (i + 1) * ohw, bias[i % p.m]);
    });
  // One (image, group) product: y_g [mg, ohw] += w_g [mg, kk] * im2col(x_g) [kk, ohw].
  int64_t units = p.n * p.group;
  auto unit = [&](int64_t u, float* col, Parallel& im2col_par) {
    int64_t img = u / p.group, g = u % p.group;
    const float* xg = x + (img * p.c + g * cg) * hw;
    const float* bmat = xg;
    if (!pointwise) {
      im2col(p, xg, cg, col, im2col_par);
      bmat = col;
    }
    gemm(false, false, mg, ohw, kk, 1.0f, w + g * mg * kk, kk, bmat, ohw, bias ? 1.0f : 0.0f,
         y + (img * p.m + g * mg) * ohw, ohw);
  };
  int threads = par.num_threads();
  // Many small products (grouped convolutions, batches of small images): one per engine
  // thread at a time, each with its own im2col buffer and one BLAS thread (Note [BLAS
  // threads]). Otherwise one after another, with im2col and BLAS each using every thread.
  if (threads > 1 && units >= threads && mg * ohw * kk <= kSmallProduct) {
    use_blas_threads(1);
    par.parallel_for(units, 1, [&](int64_t b, int64_t e) {
      Tensor col = pointwise ? Tensor() : Tensor::empty(DType::F32, Shape{kk, ohw});
      for (int64_t u = b; u < e; ++u) unit(u, pointwise ? nullptr : col.data<float>(), serial_parallel());
    });
    use_blas_threads(threads);
    return;
  }
  Tensor col = pointwise ? Tensor() : Tensor::empty(DType::F32, Shape{kk, ohw});
  use_blas_threads(threads);
  for (int64_t u = 0; u < units; ++u) unit(u, pointwise ? nullptr : col.data<float>(), par);
}

}  // namespace

void run_Conv(StaticKernelArgs& args) { run_floating(args, conv_f32); }
void run_MatMul(StaticKernelArgs& args) { run_floating(args, matmul_f32); }
void run_Gemm(StaticKernelArgs& args) { run_floating(args, gemm_f32); }

}  // namespace fusor
