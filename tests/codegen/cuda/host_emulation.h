// A host emulation of the CUDA execution model, enough to run fusor's generated kernels on
// the CPU (emulation_util.h compiles each rendered kernel with the host C++ compiler against
// this header). Blocks run one after another on the calling thread; a block's threads are
// fibers (ucontext) that one scheduler runs in turn, each until its next barrier, so a
// launch of 256-thread blocks costs no OS threads at all (Note [Emulated threads]).
// __shared__ arrays become function statics (one block at a time), __syncthreads is a
// barrier of the block, and warp shuffles and mma.sync exchange values through a per-warp
// buffer between barriers of the warp. mma.sync m16n8k16 follows the PTX ISA fragment
// layouts, the same reading of them as the renderer's, so it checks how the kernels index
// fragments, not that reading itself (the GPU suite does). The math is the host's libm.
// Included only by generated test sources; it includes as little as it can (each kernel is
// compiled on its own, and the compile is most of an emulated test's time).
//
// Note [Emulated threads]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every emulated thread of a block is a fiber with its own stack. The scheduler sweeps the
// fibers in order; a fiber runs until it waits (at __syncthreads, or at a warp exchange) or
// ends. Which waits are over is decided at the start of each sweep: a warp's exchange when
// every live lane of the warp waits at one, the block barrier when every live thread of the
// block waits at it. Since a warp's lanes run the same code, the lanes of a warp reach their
// exchanges together, and a sweep that releases nobody while threads live is a deadlock (a
// barrier some thread never reaches): the launch reports it and stops the process. The
// exchange slots alternate as before: a lane cannot reuse a slot before every lane has read
// it. threadIdx is a plain global that the scheduler sets before it resumes a fiber.
#pragma once

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "tests/codegen/cuda/emulation_hooks.h"

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline Dim3 threadIdx, blockIdx;  // the running fiber's (the scheduler sets them)
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
  __builtin_memcpy(&f, &i, 4);
  return f;
}
inline float __uint_as_float(unsigned i) {
  float f;
  __builtin_memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned i;
  __builtin_memcpy(&i, &f, 4);
  return i;
}

namespace fusor_emu {

inline const Hooks* hooks;  // set by fusor_emulate

/// Stand-ins for the preamble's cvt instructions (the test rewrites those asm lines).
inline float f16_to_f32(unsigned short h) { return hooks->f16_to_f32(h); }
inline unsigned short f32_to_f16(float f) { return hooks->f32_to_f16(f); }

enum class State { Run, WarpWait, BlockWait, Done };

struct Fiber {
  ucontext_t context;
  Dim3 tid;
  int slot = 0;  // alternates per exchange; the same sequence on every lane
  State state = State::Run;
};

// A warp's exchange slots, two of each: a lane writes slot s, waits for the warp, reads
// slot s; its next exchange uses the other slot.
struct Warp {
  float value[2][32];
  unsigned a[2][32][4], b[2][32][2];
};

inline ucontext_t scheduler;
inline Fiber* current;
inline Warp* warps;
inline float* dynamic_shared;
inline void (*body)(void*);
inline void* body_arg;

inline void wait(State s) {
  current->state = s;
  swapcontext(&current->context, &scheduler);
}

inline void fiber_main() {
  body(body_arg);
  current->state = State::Done;  // returns to the scheduler (uc_link)
}

inline Warp& my_warp() { return warps[current->tid.x / 32]; }

inline float exchange(float v, int src) {
  const int lane = int(threadIdx.x & 31), s = current->slot ^= 1;
  my_warp().value[s][lane] = v;
  wait(State::WarpWait);
  return my_warp().value[s][src];
}

inline float half(unsigned reg, int k, bool bf16) {
  const unsigned short h = (unsigned short)(k % 2 ? reg >> 16 : reg & 0xffffu);
  return bf16 ? hooks->bf16_to_f32(h) : hooks->f16_to_f32(h);
}

/// mma.sync.m16n8k16.row.col.f32.{f16,bf16}: lane (g = lane / 4, t = lane % 4) holds
/// A[g (+8)][2t (+8) .. +1] in a[0..3], B[2t (+8) .. +1][g] in b[0..1], C[g (+8)][2t .. +1].
inline void mma_16816(float c[4], const unsigned a[4], const unsigned b[2], bool bf16) {
  const int lane = int(threadIdx.x & 31), s = current->slot ^= 1;
  Warp& w = my_warp();
  for (int i = 0; i < 4; ++i) w.a[s][lane][i] = a[i];
  for (int i = 0; i < 2; ++i) w.b[s][lane][i] = b[i];
  wait(State::WarpWait);
  const int g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; ++r) {
    const int row = g + (r >= 2 ? 8 : 0), col = t * 2 + (r & 1);
    float sum = 0;
    for (int k = 0; k < 16; ++k) {
      const int la = (row % 8) * 4 + (k % 8) / 2, ra = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
      const int lb = col * 4 + (k % 8) / 2, rb = k >= 8 ? 1 : 0;
      sum += half(w.a[s][la][ra], k, bf16) * half(w.b[s][lb][rb], k, bf16);
    }
    c[r] += sum;
  }
}

// Runs one block's fibers to their end (Note [Emulated threads]).
inline void run_block(Fiber* fibers, unsigned threads, char* stacks, size_t stack_stride, size_t stack_bytes,
                      unsigned nwarps, unsigned* warp_live, unsigned* warp_waiting) {
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = fibers[t];
    f.tid = {t, 0, 0};
    f.slot = 0;
    f.state = State::Run;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = stacks + size_t(t) * stack_stride + (stack_stride - stack_bytes);
    f.context.uc_stack.ss_size = stack_bytes;
    f.context.uc_link = &scheduler;
    makecontext(&f.context, fiber_main, 0);
  }
  for (;;) {
    unsigned live = 0, at_block = 0;
    for (unsigned w = 0; w < nwarps; ++w) warp_live[w] = warp_waiting[w] = 0;
    for (unsigned t = 0; t < threads; ++t) {
      const State s = fibers[t].state;
      if (s == State::Done) continue;
      ++live;
      ++warp_live[t / 32];
      at_block += s == State::BlockWait;
      warp_waiting[t / 32] += s == State::WarpWait;
    }
    if (live == 0) return;
    const bool release_block = at_block == live;
    bool resumed = false;
    for (unsigned t = 0; t < threads; ++t) {
      Fiber& f = fibers[t];
      if (f.state == State::Done) continue;
      if (f.state == State::BlockWait && !release_block) continue;
      if (f.state == State::WarpWait && warp_waiting[t / 32] != warp_live[t / 32]) continue;
      f.state = State::Run;
      current = &f;
      threadIdx = f.tid;
      swapcontext(&scheduler, &f.context);
      resumed = true;
    }
    if (!resumed) {
      fprintf(stderr, "host emulation: block (%u, %u, %u) deadlocks: %u of %u threads wait at a barrier that the others never reach\n",
              blockIdx.x, blockIdx.y, blockIdx.z, live, threads);
      abort();
    }
  }
}

/// Runs `kernel` (a call of the __global__ function) over the grid, a block at a time.
template <class F>
void launch(unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned shared_bytes, F kernel) {
  blockDim = {threads, 1, 1};
  gridDim = {gx, gy, gz};
  // 128 KiB of stack per thread (the renderer's register tiles are a few KiB), each above
  // a guard page, so an overflow faults instead of writing into the next thread's stack.
  // Not more: AddressSanitizer's swapcontext clears the shadow of the whole stack it
  // switches to, and with 1 MiB stacks that made the emulation suites the longest part of
  // the sanitizer pass of CI.
  const size_t page = 4096, stack_bytes = size_t(128) << 10, stride = stack_bytes + page, nwarps = (threads + 31) / 32;
  const size_t bytes = stride * threads;
  void* stacks = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  Fiber* fibers = new Fiber[threads];
  Warp* block_warps = new Warp[nwarps];
  unsigned* counts = new unsigned[2 * nwarps];
  float* shared = new float[shared_bytes / 4 + 1];
  if (stacks == MAP_FAILED) {
    fprintf(stderr, "host emulation: cannot map %zu bytes of fiber stacks\n", bytes);
    abort();
  }
  for (unsigned t = 0; t < threads; ++t) mprotect(static_cast<char*>(stacks) + size_t(t) * stride, page, PROT_NONE);
  dynamic_shared = shared;
  warps = block_warps;
  body = [](void* k) { (*static_cast<F*>(k))(); };
  body_arg = &kernel;
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        blockIdx = {x, y, z};
        run_block(fibers, threads, static_cast<char*>(stacks), stride, stack_bytes, unsigned(nwarps), counts,
                  counts + nwarps);
      }
  delete[] shared;
  delete[] counts;
  delete[] block_warps;
  delete[] fibers;
  munmap(stacks, bytes);
}

}  // namespace fusor_emu

inline void __syncthreads() { fusor_emu::wait(fusor_emu::State::BlockWait); }
inline float __shfl_xor_sync(unsigned, float v, int mask) { return fusor_emu::exchange(v, int(threadIdx.x & 31) ^ mask); }
inline float __shfl_sync(unsigned, float v, int src) { return fusor_emu::exchange(v, src); }
