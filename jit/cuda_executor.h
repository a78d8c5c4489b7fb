// The Engine on a CUDA device (EngineOptions::backend = Cuda): kernel keys for cubins, the
// device plan of a fused graph (plan_cuda, built and tested without a device) and the
// executor that compiles or loads those plans' kernels and runs them on one device's
// stream. Layer: jit (no CUDA header: the driver and NVRTC are reached through
// codegen/cuda).
//
// Note [CUDA plans]
// ~~~~~~~~~~~~~~~~~
// A plan per (graph, input signature), from the same trace and fusion pipeline as the CPU
// engine's (Engine::Impl::fuse). Every group becomes one launch of its lowered spec; views
// cost nothing where a kernel reads them through strides (lowering resolves them), and a
// view some kernel must read as a buffer of its own (a chain strides cannot express, or a
// graph output) is either an alias of its root's bytes (contiguous, at a 256-byte aligned
// offset) or materialized by a copy launch (lower_view_copy). There is no host fallback: a
// group the renderer declines, or an op with no kernel (Opaque groups), is
// Error(Unsupported) naming its node when the plan is built.
// Memory: graph inputs given on the host, intermediates and outputs bound for the host
// live in one device arena per plan, laid out by liveness like the CPU arena; constants
// are uploaded once and shared by every plan that reads the same storage (or, for the
// constants passes make, the same bytes); outputs of runs on device inputs are fresh
// allocations the caller owns. Runs are serialized per executor (one stream, one arena
// per plan); every launch and copy goes to that stream, in order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/kernel_key.h"
#include "codegen/kernel_spec.h"
#include "ir/passes/pipeline.h"
#include "jit/engine.h"

namespace fusor {

class KernelStore;

/// The key of `spec`'s cubin (Note [Kernel key]): backend "cuda", target the architecture
/// ("sm_90"), compiler "nvrtc-<version>" ("nvrtc-13.0"), engine version kFusorVersion. The
/// persistent store keeps cubins under KernelKey::serialize() of it.
KernelKey cuda_kernel_key(const KernelSpec& spec, const std::string& arch, const std::string& nvrtc_version);

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

/// Runs graphs on one CUDA device for an Engine. Thread-safe (runs are serialized).
class CudaExecutor {
 public:
  /// Traces and fuses a graph at input types: the engine's own pipeline.
  using Fuse = std::function<FusedGraph(const Graph&, const std::vector<TensorType>&)>;
  struct Options {
    int device = 0;               ///< CUDA device ordinal
    std::string dump_dir;         ///< CudaOptions::dump_dir
    KernelStore* store = nullptr;  ///< the persistent kernel store (cubins), or null
    uint64_t options_hash = 0;    ///< EngineOptions::hash(): part of plan keys
    uint64_t plan_cache_bytes = 0, kernel_cache_bytes = 0, constant_cache_bytes = 0;  ///< 0: unbounded
    Fuse fuse;
    std::function<void(const std::string&)> warn;
  };

  /// Opens device `options.device`. Throws Error(DeviceUnavailable) naming what is missing
  /// (libcuda, a device, compute capability 8.0, libnvrtc).
  explicit CudaExecutor(Options options);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  /// Engine::run on the device: host inputs are copied in and outputs copied out to the
  /// host; when any input is a device tensor, outputs not supplied stay on the device.
  /// Supplied outputs (either device) are written in place.
  void run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs);
  /// Builds (or finds) the plan of `graph` at `input_types` with every kernel loaded.
  void prepare(const Graph& graph, const std::vector<TensorType>& input_types);
  /// A device copy of host tensor `t` (a device tensor is returned as is).
  Tensor to_device(const Tensor& t);
  /// A host copy of device tensor `t`, after all work enqueued (a host tensor is returned as is).
  Tensor to_host(const Tensor& t);
  /// Waits for everything enqueued on the device's stream.
  void synchronize();
  /// Adds this executor's counters (plans, kernels, store, compile time) to `s`.
  void add_stats(EngineStats& s) const;
  /// "NVIDIA H200, sm_90, 132 SMs, driver 13000, NVRTC 13.0".
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fusor
