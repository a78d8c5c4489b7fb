#include "codegen/precision.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ir/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define FUSOR_X86 1
#endif

namespace fusor {

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::Fp32, Precision::Bf16, Precision::Auto})
    if (name == precision_name(p)) return p;
  fail(ErrorCode::InvalidArgument, "unknown precision '", name, "' (fp32, bf16 or auto)");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Bf16: return "bf16";
    case Precision::Auto: return "auto";
  }
  return "?";
}

std::string HostBf16::str() const {
  std::string s;
  if (avx512_bf16) s += "avx512_bf16";
  if (amx_bf16) s += s.empty() ? "amx_bf16" : " amx_bf16";
  return s.empty() ? "none" : s;
}

HostBf16 host_bf16() {
  HostBf16 h;
#ifdef FUSOR_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__builtin_cpu_supports("avx512f")) return h;  // (also checks that the OS saves zmm state)
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) h.avx512_bf16 = (a >> 5) & 1u;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) h.amx_bf16 = ((d >> 22) & 1u) && ((d >> 24) & 1u);
#endif
  return h;
}

namespace {

#ifdef FUSOR_X86
// Multiply-adds per second of 24 independent accumulators (the micro-kernels' shape).
template <class Step>
double rate(Step step, double per_op) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, per_op / s);
  }
  return best;
}

constexpr long kIters = 20000;

__attribute__((target("avx512f,avx512bf16"))) void dot_loop(float* sink) {
  __m512 acc[24];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512i x = _mm512_set1_epi32(0x3f803f80);
  for (long it = 0; it < kIters; ++it) {
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, (__m512bh)x, (__m512bh)x);
    __asm__ volatile("" : "+v"(x));
  }
  for (__m512& a : acc) {
    float lanes[16];
    _mm512_storeu_ps(lanes, a);
    *sink += lanes[0];
  }
}

__attribute__((target("avx512f,fma"))) void fma_loop(float* sink) {
  __m512 acc[24];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1.0f);
  for (long it = 0; it < kIters; ++it) {
    for (__m512& a : acc) a = _mm512_fmadd_ps(x, x, a);
    __asm__ volatile("" : "+v"(x));
  }
  for (__m512& a : acc) {
    float lanes[16];
    _mm512_storeu_ps(lanes, a);
    *sink += lanes[0];
  }
}
#endif

}  // namespace

double measured_bf16_speedup() {
  static const double speedup = [] {
#ifdef FUSOR_X86
    if (!host_bf16().avx512_bf16) return 0.0;
    float sink = 0;
    const double ops = double(kIters) * 24 * 16;
    const double dot = rate([&] { dot_loop(&sink); }, 2 * ops), fma = rate([&] { fma_loop(&sink); }, ops);
    return fma > 0 ? dot / fma : 0.0;
#else
    return 0.0;
#endif
  }();
  return speedup;
}

bool wants_bf16(Precision p) {
  return p == Precision::Bf16 || (p == Precision::Auto && measured_bf16_speedup() >= kBf16AutoSpeedup);
}

bool bf16_applies(const KernelSpec& spec, std::string* why) {
  auto no = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind != KernelKind::Contraction) return no("not a contraction");
  const ContractionSpec& c = spec.contraction;
  if (c.a.dtype != DType::F32 || c.b.dtype != DType::F32) return no("operands other than f32");
  return true;
}

bool mark_bf16(KernelSpec& spec) {
  if (!bf16_applies(spec, nullptr)) return false;
  spec.contraction.bf16 = true;
  return true;
}

}  // namespace fusor

namespace {

using fusor::bf16_pair;

void pack_rows_scalar(const float* a, int64_t row_stride, int64_t k_stride, int64_t rows, int64_t k, uint32_t* dst) {
  const int64_t k2 = (k + 1) / 2;
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = a + i * row_stride;
    uint32_t* out = dst + i * k2;
    for (int64_t j = 0; j < k / 2; ++j) out[j] = bf16_pair(src[2 * j * k_stride], src[(2 * j + 1) * k_stride]);
    if (k % 2) out[k2 - 1] = bf16_pair(src[(k - 1) * k_stride], 0.0f);
  }
}

#ifdef FUSOR_X86
// Contiguous rows: 32 floats per vcvtne2ps2bf16, the tail masked (its odd element's partner
// loads as 0).
__attribute__((target("avx512f,avx512bf16"))) void pack_rows_avx512(const float* a, int64_t row_stride, int64_t rows,
                                                                      int64_t k, uint32_t* dst) {
  const int64_t k2 = (k + 1) / 2;
  auto mask = [](int64_t n) { return __mmask16(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); };
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = a + i * row_stride;
    uint32_t* out = dst + i * k2;
    for (int64_t j = 0; j < k; j += 32) {
      const int64_t n = std::min<int64_t>(32, k - j);
      const __m512 lo = _mm512_maskz_loadu_ps(mask(n), src + j);
      const __m512 hi = _mm512_maskz_loadu_ps(mask(n - 16), src + j + 16);
      const __m512bh pairs = _mm512_cvtne2ps_pbh(hi, lo);  // lo's 16 floats in the low half
      _mm512_mask_storeu_epi32(out + j / 2, mask((n + 1) / 2), (__m512i)pairs);
    }
  }
}
#endif

}  // namespace

extern "C" void fusor_rt_pack_a_bf16(const float* a, int64_t row_stride, int64_t k_stride, int64_t rows, int64_t k,
                                     int64_t mr, uint32_t* dst) {
  const int64_t k2 = (k + 1) / 2;
#ifdef FUSOR_X86
  static const bool vector = fusor::host_bf16().avx512_bf16;
  if (vector && k_stride == 1)
    pack_rows_avx512(a, row_stride, rows, k, dst);
  else
#endif
    pack_rows_scalar(a, row_stride, k_stride, rows, k, dst);
  if (rows < mr) std::memset(dst + rows * k2, 0, size_t((mr - rows) * k2) * sizeof(uint32_t));
}
