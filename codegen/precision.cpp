#include "codegen/precision.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>

#include "ir/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
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
  if (s.empty()) s = "none";
  if (!amx_unusable.empty()) s += " (" + amx_unusable + ")";
  return s;
}

namespace {

#ifdef FUSOR_X86
// Asks Linux for the AMX tile data state (XTILEDATA, XSAVE component 18), which a process must
// hold before its first tile instruction (else SIGILL); granted per process, once. Empty when
// granted, else why not.
std::string request_amx_permission() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3u) != 3u) return "AMX present but the OS does not enable its tile state (XCR0)";
#ifdef SYS_arch_prctl
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return "AMX present but the kernel refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM)";
  return "";
#else
  return "AMX present but this system has no arch_prctl to ask for its tile data";
#endif
}
#endif

}  // namespace

const HostBf16& host_bf16() {
  static const HostBf16 host = [] {
    HostBf16 h;
#ifdef FUSOR_X86
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__builtin_cpu_supports("avx512f")) return h;  // (also checks that the OS saves zmm state)
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) h.avx512_bf16 = (a >> 5) & 1u;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 22) & 1u) && ((d >> 24) & 1u)) {
      h.amx_unusable = request_amx_permission();
      h.amx_bf16 = h.amx_unusable.empty();
    }
#endif
    return h;
  }();
  return host;
}

namespace {

#ifdef FUSOR_X86
// The best of three rates of `step`, which does `per_call` multiply-adds.
template <class Step>
double rate(Step step, double per_call) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, per_call / s);
  }
  return best;
}

// The timed loop is the micro-kernel's own (Note [Contraction kernels]): an 8 x 3 tile of
// sums in registers; each step loads three vectors of a packed panel and broadcasts one
// element of A per row from memory. Timing the bare instruction instead (a chain of
// register operands) measured a 2-vCPU Xeon's vdpbf16ps at the FMA's FLOP rate, where its
// GEMMs ran at half of it: the loads and broadcasts share the issue with it there. The
// operands (12 KiB of panel, 2 KiB of A) stay in L1, so the rate is the core's.
constexpr int kSteps = 64, kRepeats = 500, kRows = 8, kVecs = 3;
alignas(64) float g_panel[kSteps * kVecs * 16];
alignas(64) float g_rows[kRows][kSteps];

template <bool Dot>
__attribute__((target("avx512f,avx512bf16,fma"))) void tile_loop(float* sink) {
  __m512 acc[kRows][kVecs];
  for (auto& row : acc)
    for (__m512& a : row) a = _mm512_setzero_ps();
  for (int rep = 0; rep < kRepeats; ++rep)
    for (int k = 0; k < kSteps; ++k) {
      const float* b = g_panel + k * kVecs * 16;
      const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), b2 = _mm512_load_ps(b + 32);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const __m512 x = _mm512_set1_ps(g_rows[i][k]);
        if constexpr (Dot) {
          acc[i][0] = _mm512_dpbf16_ps(acc[i][0], (__m512bh)x, (__m512bh)b0);
          acc[i][1] = _mm512_dpbf16_ps(acc[i][1], (__m512bh)x, (__m512bh)b1);
          acc[i][2] = _mm512_dpbf16_ps(acc[i][2], (__m512bh)x, (__m512bh)b2);
        } else {
          acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
          acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
          acc[i][2] = _mm512_fmadd_ps(x, b2, acc[i][2]);
        }
      }
    }
  for (auto& row : acc)
    for (__m512& a : row) {
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
    // (Small finite values, so the sums stay normal: a denormal or NaN could slow either.)
    for (size_t i = 0; i < std::size(g_panel); ++i) g_panel[i] = 1.0f / float(1 + i % 7);
    for (auto& row : g_rows)
      for (float& x : row) x = 0.5f;
    float sink = 0;
    const double fmas = double(kRepeats) * kSteps * kRows * kVecs * 16;
    const double dot = rate([&] { tile_loop<true>(&sink); }, 2 * fmas);
    const double fma = rate([&] { tile_loop<false>(&sink); }, fmas);
    return fma > 0 ? dot / fma : 0.0;
#else
    return 0.0;
#endif
  }();
  return speedup;
}

bool wants_bf16(Precision p) {
  return p == Precision::Bf16 ||
         (p == Precision::Auto && (host_bf16().amx_bf16 || measured_bf16_speedup() >= kBf16AutoSpeedup));
}

bool bf16_applies(const KernelSpec& spec, std::string* why) {
  auto no = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind == KernelKind::Attention) {
    const AttentionSpec& a = spec.attention;
    if (a.q.dtype != DType::F32 || a.k.dtype != DType::F32 || a.v.dtype != DType::F32)
      return no("operands other than f32");
    return true;
  }
  if (spec.kind != KernelKind::Contraction) return no("not a contraction or an attention");
  const ContractionSpec& c = spec.contraction;
  if (c.a.dtype != DType::F32 || c.b.dtype != DType::F32) return no("operands other than f32");
  return true;
}

bool mark_bf16(KernelSpec& spec) {
  if (!bf16_applies(spec, nullptr)) return false;
  (spec.kind == KernelKind::Attention ? spec.attention.bf16 : spec.contraction.bf16) = true;
  return true;
}

bool is_bf16(const KernelSpec& spec) {
  return (spec.kind == KernelKind::Contraction && spec.contraction.bf16) ||
         (spec.kind == KernelKind::Attention && spec.attention.bf16);
}

void clear_bf16(KernelSpec& spec) {
  spec.contraction.bf16 = false;
  spec.attention.bf16 = false;
}

}  // namespace fusor

namespace {

using fusor::bf16_pair;

// One row of k floats (k_stride apart) as pairs: the pairs of each step of 32 floats (16
// pairs) at out + step * step_stride, the element past an odd k read as 0.
void pack_row_scalar(const float* src, int64_t k_stride, int64_t k, uint32_t* out, int64_t step_stride) {
  for (int64_t j = 0; j < k; j += 2) {
    const float hi = j + 1 < k ? src[(j + 1) * k_stride] : 0.0f;
    out[(j / 32) * step_stride + (j % 32) / 2] = bf16_pair(src[j * k_stride], hi);
  }
}

#ifdef FUSOR_X86
// A contiguous row: 32 floats per vcvtne2ps2bf16, the tail masked (its odd element's partner
// loads as 0).
__attribute__((target("avx512f,avx512bf16"))) void pack_row_avx512(const float* src, int64_t k, uint32_t* out,
                                                                     int64_t step_stride) {
  auto mask = [](int64_t n) { return __mmask16(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); };
  for (int64_t j = 0; j < k; j += 32) {
    const int64_t n = std::min<int64_t>(32, k - j);
    const __m512 lo = _mm512_maskz_loadu_ps(mask(n), src + j);
    const __m512 hi = _mm512_maskz_loadu_ps(mask(n - 16), src + j + 16);
    const __m512bh pairs = _mm512_cvtne2ps_pbh(hi, lo);  // lo's 16 floats in the low half
    _mm512_mask_storeu_epi32(out + (j / 32) * step_stride, mask((n + 1) / 2), (__m512i)pairs);
  }
}
#endif

void pack_row(const float* src, int64_t k_stride, int64_t k, uint32_t* out, int64_t step_stride) {
#ifdef FUSOR_X86
  static const bool vector = fusor::host_bf16().avx512_bf16;
  if (vector && k_stride == 1) return pack_row_avx512(src, k, out, step_stride);
#endif
  pack_row_scalar(src, k_stride, k, out, step_stride);
}

}  // namespace

extern "C" void fusor_rt_pack_a_bf16(const float* a, int64_t row_stride, int64_t k_stride, int64_t rows, int64_t k,
                                     int64_t mr, uint32_t* dst) {
  const int64_t k2 = (k + 1) / 2;
  for (int64_t i = 0; i < rows; ++i) pack_row(a + i * row_stride, k_stride, k, dst + i * k2, 16);
  if (rows < mr) std::memset(dst + rows * k2, 0, size_t((mr - rows) * k2) * sizeof(uint32_t));
}

extern "C" void fusor_rt_pack_a_bf16_amx(const float* a, int64_t row_stride, int64_t k_stride, int64_t rows, int64_t k,
                                         int64_t mr, uint32_t* dst) {
  constexpr int64_t kRows = 16, kPairs = 16;  // a tile's rows, a step's pairs
  const int64_t steps = (k + 1) / 2 / kPairs;
  for (int64_t i = 0; i < mr; ++i) {
    uint32_t* out = dst + (i / kRows) * steps * kRows * kPairs + (i % kRows) * kPairs;
    if (i < rows) {
      pack_row(a + i * row_stride, k_stride, k, out, kRows * kPairs);
    } else {
      for (int64_t s = 0; s < steps; ++s) std::memset(out + s * kRows * kPairs, 0, kPairs * sizeof(uint32_t));
    }
  }
}
