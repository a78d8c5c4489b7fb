// Static kernels of the pools over NCHW: MaxPool, AveragePool (2-D windows with strides,
// pads, dilations and ceil_mode) and GlobalAveragePool (any rank >= 3). They compute in
// f32; f16/bf16 tensors are converted to f32 and back.
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/static/kernel_util.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

using static_kernels::run_floating;
using static_kernels::valid_range;

using static_kernels::kElementGrain;


// How many of the window points start + i * dil (i < k) lie in [low, high).
int64_t count_points(int64_t start, int64_t k, int64_t dil, int64_t low, int64_t high) {
  int64_t c = 0;
  for (int64_t i = 0; i < k; ++i) c += start + i * dil >= low && start + i * dil < high;
  return c;
}


// Both 2-D pools walk the output one row at a time: for each window point (ki, kj) that
// falls inside the input, a whole output row combines with a shifted (strided) input row, a
// loop over ow that vectorizes. Padding is never read, so it never wins a max and adds
// nothing to a sum. `combine(dst, src, off, lo, hi, stride)` folds src[o * stride + off]
// into dst[o] for o in [lo, hi); `finish(dst, oh)` completes the row.
template <class Combine, class Finish>
void pool_rows(const Pool2dParams& p, const float* x, float* y, float init, Parallel& par, Combine combine,
               Finish finish) {
  int64_t rows = p.n * p.c * p.oh;
  par.parallel_for(rows, std::max<int64_t>(1, kElementGrain / (p.ow * p.kh * p.kw)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t plane = r / p.oh, oh = r % p.oh;
      float* dst = y + r * p.ow;
      std::fill(dst, dst + p.ow, init);
      for (int64_t ki = 0; ki < p.kh; ++ki) {
        int64_t ih = oh * p.stride_h - p.pad_t + ki * p.dil_h;
        if (ih < 0 || ih >= p.h) continue;
        const float* src_row = x + (plane * p.h + ih) * p.w;
        for (int64_t kj = 0; kj < p.kw; ++kj) {
          int64_t off = kj * p.dil_w - p.pad_l, lo, hi;
          valid_range(off, p.stride_w, p.w, p.ow, &lo, &hi);
          combine(dst, src_row, off, lo, hi, p.stride_w);
        }
      }
      finish(dst, oh);
    }
  });
}

void maxpool_f32(StaticKernelArgs& args) {
  const Tensor& xt = args.in(0);
  Tensor& yt = args.out();
  if (yt.numel() == 0) return;
  Pool2dParams p = pool2d_params(args.node, xt.shape());
  // NaN propagates (as in ONNX's reference and PyTorch): a NaN in the window wins.
  auto combine = [](float* dst, const float* src, int64_t off, int64_t lo, int64_t hi, int64_t stride) {
    if (stride == 1)
      for (int64_t o = lo; o < hi; ++o) {
        float v = src[o + off];
        dst[o] = dst[o] < v || std::isnan(v) ? v : dst[o];
      }
    else
      for (int64_t o = lo; o < hi; ++o) {
        float v = src[o * stride + off];
        dst[o] = dst[o] < v || std::isnan(v) ? v : dst[o];
      }
  };
  pool_rows(p, xt.data<float>(), yt.data<float>(), -std::numeric_limits<float>::infinity(), args.parallel, combine,
            [](float*, int64_t) {});
}

void avgpool_f32(StaticKernelArgs& args) {
  const Tensor& xt = args.in(0);
  Tensor& yt = args.out();
  if (yt.numel() == 0) return;
  Pool2dParams p = pool2d_params(args.node, xt.shape());
  // The divisor of a window is (its points counted along h) * (along w). Without
  // count_include_pad a point counts when it is inside the input; with it, when it is inside
  // the explicitly padded input: the part of a ceil_mode window that hangs past the end
  // padding is never counted (ONNX and PyTorch agree).
  auto counted = [&](int64_t start, int64_t k, int64_t dil, int64_t pad_begin, int64_t size, int64_t pad_end) {
    return p.count_include_pad ? count_points(start, k, dil, -pad_begin, size + pad_end)
                               : count_points(start, k, dil, 0, size);
  };
  std::vector<float> count_w(size_t(p.ow));
  for (int64_t o = 0; o < p.ow; ++o)
    count_w[size_t(o)] = float(counted(o * p.stride_w - p.pad_l, p.kw, p.dil_w, p.pad_l, p.w, p.pad_r));
  auto combine = [](float* dst, const float* src, int64_t off, int64_t lo, int64_t hi, int64_t stride) {
    if (stride == 1)
      for (int64_t o = lo; o < hi; ++o) dst[o] += src[o + off];
    else
      for (int64_t o = lo; o < hi; ++o) dst[o] += src[o * stride + off];
  };
  auto finish = [&](float* dst, int64_t oh) {
    float ch = float(counted(oh * p.stride_h - p.pad_t, p.kh, p.dil_h, p.pad_t, p.h, p.pad_b));
    for (int64_t o = 0; o < p.ow; ++o) dst[o] /= ch * count_w[size_t(o)];
  };
  pool_rows(p, xt.data<float>(), yt.data<float>(), 0.0f, args.parallel, combine, finish);
}

void global_avgpool_f32(StaticKernelArgs& args) {
  const Tensor& xt = args.in(0);
  Tensor& yt = args.out();
  if (yt.numel() == 0) return;
  int64_t planes = xt.shape()[0] * xt.shape()[1];
  int64_t size = xt.numel() / planes;  // inference guarantees no empty spatial axis
  const float* x = xt.data<float>();
  float* y = yt.data<float>();
  args.parallel.parallel_for(planes, std::max<int64_t>(1, kElementGrain / size), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* src = x + pl * size;
      // Independent partial sums: vectorizable without reassociation, and more accurate
      // than one running sum over a large plane.
      constexpr int kLanes = 16;
      float acc[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= size; i += kLanes)
        for (int j = 0; j < kLanes; ++j) acc[j] += src[i + j];
      float s = 0;
      for (; i < size; ++i) s += src[i];
      for (int j = 0; j < kLanes; ++j) s += acc[j];
      y[pl] = s / float(size);
    }
  });
}

}  // namespace

void run_MaxPool(StaticKernelArgs& args) { run_floating(args, maxpool_f32); }
void run_AveragePool(StaticKernelArgs& args) { run_floating(args, avgpool_f32); }
void run_GlobalAveragePool(StaticKernelArgs& args) { run_floating(args, global_avgpool_f32); }

}  // namespace fusor
