// Ceilings: this machine's own limits, measured when a benchmark binary starts, so that every
// figure can be read as a fraction of what the machine can do (issue 17; ../shared/BENCH.md
// lists what earlier machines measured). Layer: bench.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fusor::bench {

/// Medians of short repeated measurements at 1 and 2 threads (index = threads - 1).
struct Ceilings {
  double fma_zmm_gflops[2] = {0, 0};  ///< fp32 FMA peak with 512-bit vectors (0: no AVX-512)
  double fma_ymm_gflops[2] = {0, 0};  ///< fp32 FMA peak with 256-bit vectors (0: no FMA)
  double copy_gbps[2] = {0, 0};       ///< memory copy, plain stores, read + write bytes counted
  double copy_nt_gbps[2] = {0, 0};    ///< memory copy with non-temporal stores
  double read_gbps[2] = {0, 0};       ///< memory read only
  std::string cpu;                    ///< the CPU's model name

  /// The fp32 FMA peak at `threads` (1 or 2): zmm where the CPU has AVX-512, else ymm.
  double fma_peak(int threads) const;
  /// The bandwidth a memory-bound kernel is held to at `threads`: the plain-store copy.
  double bandwidth(int threads) const { return copy_gbps[threads > 1 ? 1 : 0]; }
  /// (name, value) pairs for a benchmark report's context.
  std::vector<std::pair<std::string, std::string>> context() const;
};

/// Measures the ceilings (about two seconds).
Ceilings measure_ceilings();

}  // namespace fusor::bench
