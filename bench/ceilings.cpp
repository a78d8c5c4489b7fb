#include "bench/ceilings.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

namespace fusor::bench {

namespace {

using Clock = std::chrono::steady_clock;

// fp32 FMAs on 16 independent accumulators (4-cycle latency x 2 ports needs 8), `iters`
// rounds. Returns a value that depends on every accumulator so nothing is optimized away.
__attribute__((target("avx512f"))) float fma_zmm(int64_t iters) {
  __m512 a[16];
  for (int i = 0; i < 16; ++i) a[i] = _mm512_set1_ps(1.0f + float(i) * 1e-7f);
  const __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-8f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) a[i] = _mm512_fmadd_ps(a[i], b, c);
  __m512 s = a[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, a[i]);
  alignas(64) float v[16];
  _mm512_store_ps(v, s);
  return v[0] + v[15];
}

__attribute__((target("avx2,fma"))) float fma_ymm(int64_t iters) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(1.0f + float(i) * 1e-7f);
  const __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-8f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], b, c);
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, a[i]);
  alignas(32) float v[8];
  _mm256_store_ps(v, s);
  return v[0] + v[7];
}

__attribute__((target("avx2"))) void copy_plain(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 32)
    for (int j = 0; j < 32; j += 8) _mm256_store_ps(dst + i + j, _mm256_load_ps(src + i + j));
}

__attribute__((target("avx2"))) void copy_nt(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 32)
    for (int j = 0; j < 32; j += 8) _mm256_stream_ps(dst + i + j, _mm256_load_ps(src + i + j));
  _mm_sfence();
}

__attribute__((target("avx2"))) float read_only(const float* src, int64_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  for (int64_t i = 0; i < n; i += 32) {
    a = _mm256_add_ps(a, _mm256_load_ps(src + i));
    b = _mm256_add_ps(b, _mm256_load_ps(src + i + 8));
    c = _mm256_add_ps(c, _mm256_load_ps(src + i + 16));
    d = _mm256_add_ps(d, _mm256_load_ps(src + i + 24));
  }
  alignas(32) float v[8];
  _mm256_store_ps(v, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  return v[0] + v[7];
}

// Wall seconds of `work(thread)` run on `threads` threads at once.
double timed(int threads, const std::function<void(int)>& work) {
  const auto start = Clock::now();
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(work, t);
  work(0);
  for (auto& t : others) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median of `reps` measurements of rate().
double median_of(int reps, const std::function<double()>& rate) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) v.push_back(rate());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct Free {
  void operator()(float* p) const { std::free(p); }
};

}  // namespace

double Ceilings::fma_peak(int threads) const {
  const int i = threads > 1 ? 1 : 0;
  return fma_zmm_gflops[i] > 0 ? fma_zmm_gflops[i] : fma_ymm_gflops[i];
}

std::vector<std::pair<std::string, std::string>> Ceilings::context() const {
  std::vector<std::pair<std::string, std::string>> c{{"cpu_model", cpu}};
  for (int t = 1; t <= 2; ++t) {
    const std::string s = "_t" + std::to_string(t);
    const int i = t - 1;
    if (fma_zmm_gflops[i] > 0) c.push_back({"ceiling_fma_zmm_gflops" + s, fmt(fma_zmm_gflops[i])});
    c.push_back({"ceiling_fma_ymm_gflops" + s, fmt(fma_ymm_gflops[i])});
    c.push_back({"ceiling_copy_GBps" + s, fmt(copy_gbps[i])});
    c.push_back({"ceiling_copy_nt_GBps" + s, fmt(copy_nt_gbps[i])});
    c.push_back({"ceiling_read_GBps" + s, fmt(read_gbps[i])});
  }
  return c;
}

Ceilings measure_ceilings() {
  Ceilings c;
  c.cpu = cpu_model();
  const bool avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  // 64 MiB per buffer and thread: far beyond any L2, and beyond most L3 slices a VM sees.
  const int64_t n = int64_t(16) << 20;
  std::unique_ptr<float, Free> src(static_cast<float*>(std::aligned_alloc(64, size_t(2 * n) * 4)));
  std::unique_ptr<float, Free> dst(static_cast<float*>(std::aligned_alloc(64, size_t(2 * n) * 4)));
  if (!src || !dst) return c;
  std::memset(src.get(), 0, size_t(2 * n) * 4);
  std::memset(dst.get(), 0, size_t(2 * n) * 4);
  volatile float sink = 0;
  for (int threads = 1; threads <= 2; ++threads) {
    const int i = threads - 1;
    const int64_t iters = 2000000;  // ~20-40 ms per thread
    if (avx512)
      c.fma_zmm_gflops[i] = median_of(5, [&] {
        double s = timed(threads, [&](int) { sink = sink + fma_zmm(iters); });
        return double(threads) * double(iters) * 16 * 16 * 2 / s * 1e-9;
      });
    if (avx2)
      c.fma_ymm_gflops[i] = median_of(5, [&] {
        double s = timed(threads, [&](int) { sink = sink + fma_ymm(iters); });
        return double(threads) * double(iters) * 12 * 8 * 2 / s * 1e-9;
      });
    if (!avx2) continue;
    const double bytes_moved = double(threads) * double(n) * 4;
    c.copy_gbps[i] = median_of(5, [&] {
      double s = timed(threads, [&](int t) { copy_plain(src.get() + t * n, dst.get() + t * n, n); });
      return 2 * bytes_moved / s * 1e-9;
    });
    c.copy_nt_gbps[i] = median_of(5, [&] {
      double s = timed(threads, [&](int t) { copy_nt(src.get() + t * n, dst.get() + t * n, n); });
      return 2 * bytes_moved / s * 1e-9;
    });
    c.read_gbps[i] = median_of(5, [&] {
      double s = timed(threads, [&](int t) { sink = sink + read_only(src.get() + t * n, n); });
      return bytes_moved / s * 1e-9;
    });
  }
  return c;
}

}  // namespace fusor::bench
