// The device plan of a fused graph for the CUDA executor (jit/cuda_executor.h): plan_cuda,
// a pure function built and tested without a device. Layer: jit (no CUDA header).
//
// Note [CUDA plans]
// ~~~~~~~~~~~~~~~~~
// A plan per (graph, input signature), from the same trace and fusion pipeline as the CPU
// engine's (jit/fuse.h). Every group becomes one launch of its lowered spec; views
// cost nothing where a kernel reads them through strides (lowering resolves them), and a
// view some kernel must read as a buffer of its own (a chain strides cannot express, or a
// graph output) is either an alias of its root's bytes (contiguous, at a 256-byte aligned
// offset) or materialized by a copy launch (lower_view_copy). There is no host fallback: a
// group the renderer declines, or an op with no kernel (Opaque groups), is
// Error(Unsupported) naming its node when the plan is built.
// Memory: graph inputs given on the host, intermediates and outputs bound for the host
// live in one device arena per plan, laid out by liveness like the CPU arena (jit/arena.h);
// constants are uploaded once and shared by every plan that reads the same storage (the
// user's, derived and interned ones: jit/shared_constants.h) or, for the small constants a
// plan makes alone, the same bytes; outputs of runs on device inputs are fresh allocations
// the caller owns. Runs are serialized per executor (one stream, one arena per plan);
// every launch and copy goes to that stream, in order (jit/cuda_executor.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "ir/passes/pipeline.h"

namespace fusor {

/// Where one buffer of a CUDA plan is at run time (Note [CUDA plans]).
struct CudaPlace {
  enum class Kind : uint8_t {
    Unused,    ///< no launch reads or writes it
    Input,     ///< graph input `input`: the caller's device tensor, or its host copy staged at
               ///< `offset` (-1: no launch reads it, nothing staged)
    Constant,  ///< a constant of the fused graph, uploaded once
    Arena,     ///< written by a launch; at `offset` of the plan's arena (graph outputs: unless the
               ///< run returns them on the device)
    Alias,     ///< the bytes of place `root` from byte `offset` on (a contiguous view)
  };
  Kind kind = Kind::Unused;
  ValueId value = kNoValue;  ///< the value of the fused graph it holds
  int input = -1;            ///< Input: index in the graph's inputs
  int root = -1;             ///< Alias: the place it shares (never an Alias itself)
  int64_t offset = 0;        ///< bytes: Input (staging), Arena, Alias
  int64_t bytes = 0;
};

/// One kernel launch of a CUDA plan.
struct CudaLaunch {
  KernelSpec spec;            ///< a group's lowered spec, or the copy that materializes a view
  std::vector<int> places;    ///< the place of each spec.buffers entry
  std::string label;          ///< "contraction q_proj_q", "copy context_t"
};

/// The device plan of one fused graph (Note [CUDA plans]).
struct CudaPlan {
  FusedGraph fused;
  std::vector<CudaLaunch> launches;  ///< in order
  /// Places 0 .. values-1 are the values of fused.graph; places after them are buffers of
  /// their own for graph outputs that are graph inputs or constants (copied there).
  std::vector<CudaPlace> places;
  std::vector<int> output_places;    ///< per graph output, its place (Arena, written by a launch)
  int64_t arena_bytes = 0;           ///< staging for host inputs, intermediates, outputs
};

/// Alignment of every arena place and alias offset: cuMemAlloc's, and at least what any
/// rendered kernel asks of its buffers (CudaSource::alignment).
inline constexpr int64_t kCudaBufferAlignment = 256;

/// Plans `fused` for a CUDA device. Needs no device: every spec is checked against the CUDA
/// renderer (cuda_supports). Throws Error(Unsupported) naming the node of a group with no
/// CUDA kernel.
CudaPlan plan_cuda(FusedGraph fused);

}  // namespace fusor
