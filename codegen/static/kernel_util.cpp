#include "codegen/static/kernel_util.h"

#include <algorithm>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace fusor::static_kernels {

void run_floating(StaticKernelArgs& args, void (*kernel)(StaticKernelArgs&)) {
  DType t = args.in(0).dtype();
  if (t == DType::F32) return kernel(args);
  if (t != DType::F16 && t != DType::BF16) unsupported_dtype(args.node, t);
  run_in_f32(args, kernel);
}

void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t count, int64_t* lo, int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t h = size - offset <= 0 ? 0 : (size - offset + stride - 1) / stride;
  *lo = std::min(l, count);
  *hi = std::clamp(h, *lo, count);
}

int64_t StridedLoop::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) r *= dims[i];
  return r;
}

void StridedLoop::row_offsets(int64_t row, int64_t* offsets) const {
  for (size_t k = 0; k < strides.size(); ++k) offsets[k] = 0;
  for (size_t i = dims.size() - 1; i-- > 0;) {
    int64_t idx = row % dims[i];
    row /= dims[i];
    for (size_t k = 0; k < strides.size(); ++k) offsets[k] += idx * strides[k][i];
  }
}

void half_to_f32(DType t, const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  if (t == DType::BF16) {
    for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);  // a shift: vectorizes
    return;
  }
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void f32_to_half(DType t, const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  if (t == DType::BF16) {
    for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);  // branch-free after if-conversion: vectorizes
    return;
  }
#if defined(__F16C__)
  // vcvtps2ph rounds to nearest even, overflows to inf and quiets NaNs keeping the sign and
  // the top payload bits: the same results as f32_to_f16.
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

namespace {
bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

// dst = src converted elementwise between f32 and f16/bf16 (one of the two is f32).
void convert_floats(const Tensor& src, Tensor& dst, Parallel& par) {
  par.parallel_for(src.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    if (src.dtype() == DType::F32)
      f32_to_half(dst.dtype(), static_cast<const float*>(src.raw()) + b, static_cast<uint16_t*>(dst.raw()) + b, e - b);
    else
      half_to_f32(src.dtype(), static_cast<const uint16_t*>(src.raw()) + b, static_cast<float*>(dst.raw()) + b, e - b);
  });
}
}  // namespace

void run_in_f32(StaticKernelArgs& args, void (*kernel)(StaticKernelArgs&)) {
  std::vector<Tensor> inputs(args.inputs.size()), outputs(args.outputs.size());
  StaticKernelArgs staged{args.node, args.inputs, args.outputs, args.parallel};
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    if (!args.inputs[i] || !is_half(args.inputs[i]->dtype())) continue;
    inputs[i] = Tensor::empty(DType::F32, args.inputs[i]->shape());
    convert_floats(*args.inputs[i], inputs[i], args.parallel);
    staged.inputs[i] = &inputs[i];
  }
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    if (!is_half(args.outputs[i]->dtype())) continue;
    outputs[i] = Tensor::empty(DType::F32, args.outputs[i]->shape());
    staged.outputs[i] = &outputs[i];
  }
  kernel(staged);
  for (size_t i = 0; i < args.outputs.size(); ++i)
    if (outputs[i].defined()) convert_floats(outputs[i], *args.outputs[i], args.parallel);
}

StridedLoop make_strided_loop(const Shape& out, const std::vector<Shape>& operands) {
  std::vector<std::vector<int64_t>> st;
  for (const Shape& s : operands) st.push_back(broadcast_strides(s, out));
  StridedLoop loop;
  loop.strides.resize(operands.size());
  // Walk dims from the outside in, dropping size-1 dims and merging dim i into the previous
  // kept dim when every operand has stride[prev] == stride[i] * dims[i].
  for (int i = 0; i < out.rank(); ++i) {
    int64_t d = out.dims()[size_t(i)];
    if (d == 1) continue;
    bool merge = !loop.dims.empty();
    for (size_t k = 0; merge && k < st.size(); ++k)
      merge = loop.strides[k].back() == st[k][size_t(i)] * d;
    if (merge) {
      loop.dims.back() *= d;
      for (size_t k = 0; k < st.size(); ++k) loop.strides[k].back() = st[k][size_t(i)];
    } else {
      loop.dims.push_back(d);
      for (size_t k = 0; k < st.size(); ++k) loop.strides[k].push_back(st[k][size_t(i)]);
    }
  }
  if (loop.dims.empty()) {  // scalar (or all-ones) output: one element
    loop.dims.push_back(1);
    for (auto& s : loop.strides) s.push_back(0);
  }
  return loop;
}

}  // namespace fusor::static_kernels
