// A host emulation of the CUDA execution model, enough to run fusor's generated kernels on
// the CPU (emulation_test.cpp compiles each rendered kernel with the host C++ compiler
// against this header). Blocks run one after another; a block's threads run as std::threads,
// so __shared__ arrays become function statics (one block at a time), __syncthreads is a
// barrier of the block, and warp shuffles and mma.sync exchange values through a per-warp
// buffer between barriers of the warp. mma.sync m16n8k16 follows the PTX ISA fragment
// layouts, the same reading of them as the renderer's, so it checks how the kernels index
// fragments, not that reading itself (the GPU suite does). The math is the host's libm.
// Included only by generated test sources.
#pragma once

#include <barrier>
#include <cstring>
#include <math.h>
#include <memory>
#include <thread>
#include <vector>

#include "ir/dtype.h"

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx, blockIdx;
inline Dim3 blockDim, gridDim;

struct float4 {
  float x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float __uint_as_float(unsigned i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned i;
  std::memcpy(&i, &f, 4);
  return i;
}

namespace fusor_emu {

/// Stand-ins for the preamble's cvt instructions (the test rewrites those asm lines).
inline float f16_to_f32(unsigned short h) { return fusor::f16_to_f32(h); }
inline unsigned short f32_to_f16(float f) { return fusor::f32_to_f16(f); }

// A warp's exchange slots, two of each: a lane writes slot s, waits for the warp, reads
// slot s; its next exchange uses the other slot, and it cannot come back to slot s before
// every lane has passed the barrier after its read of it. One barrier per exchange.
struct Warp {
  float value[2][32];
  unsigned a[2][32][4], b[2][32][2];
  std::barrier<> bar{32};
};
inline std::barrier<>* block_barrier;
inline float* dynamic_shared;
inline thread_local Warp* warp;
inline thread_local int slot;  // alternates per exchange; the same sequence on every lane

inline float exchange(float v, int src) {
  const int lane = int(threadIdx.x & 31), s = slot ^= 1;
  warp->value[s][lane] = v;
  warp->bar.arrive_and_wait();
  return warp->value[s][src];
}

inline float half(unsigned reg, int k, bool bf16) {
  const unsigned short h = (unsigned short)(k % 2 ? reg >> 16 : reg & 0xffffu);
  return bf16 ? fusor::bf16_to_f32(h) : fusor::f16_to_f32(h);
}

/// mma.sync.m16n8k16.row.col.f32.{f16,bf16}: lane (g = lane / 4, t = lane % 4) holds
/// A[g (+8)][2t (+8) .. +1] in a[0..3], B[2t (+8) .. +1][g] in b[0..1], C[g (+8)][2t .. +1].
inline void mma_16816(float c[4], const unsigned a[4], const unsigned b[2], bool bf16) {
  const int lane = int(threadIdx.x & 31), s = slot ^= 1;
  for (int i = 0; i < 4; ++i) warp->a[s][lane][i] = a[i];
  for (int i = 0; i < 2; ++i) warp->b[s][lane][i] = b[i];
  warp->bar.arrive_and_wait();
  const int g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; ++r) {
    const int row = g + (r >= 2 ? 8 : 0), col = t * 2 + (r & 1);
    float sum = 0;
    for (int k = 0; k < 16; ++k) {
      const int la = (row % 8) * 4 + (k % 8) / 2, ra = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
      const int lb = col * 4 + (k % 8) / 2, rb = k >= 8 ? 1 : 0;
      sum += half(warp->a[s][la][ra], k, bf16) * half(warp->b[s][lb][rb], k, bf16);
    }
    c[r] += sum;
  }
}

/// Runs `kernel` (a call of the __global__ function) over the grid, a block at a time.
template <class F>
void launch(unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned shared_bytes, F kernel) {
  blockDim = {threads, 1, 1};
  gridDim = {gx, gy, gz};
  std::vector<float> shared(shared_bytes / 4 + 1);
  dynamic_shared = shared.data();
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        std::barrier<> bar(threads);
        block_barrier = &bar;
        std::unique_ptr<Warp[]> warps(new Warp[(threads + 31) / 32]);
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; ++t)
          ts.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            blockIdx = {x, y, z};
            warp = &warps[t / 32];
            slot = 0;
            kernel();
          });
        for (std::thread& th : ts) th.join();
      }
}

}  // namespace fusor_emu

inline void __syncthreads() { fusor_emu::block_barrier->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int mask) { return fusor_emu::exchange(v, int(threadIdx.x & 31) ^ mask); }
inline float __shfl_sync(unsigned, float v, int src) { return fusor_emu::exchange(v, src); }
