// The types the Engine's API shares with the runtime stages below it (jit/executor.h and
// the stages it drives): EngineOptions, EngineStats, StepProfile and TensorMap, so that no
// stage includes the Engine to get one. Layer: jit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cache/redis_store.h"
#include "codegen/backends.h"
#include "codegen/precision.h"
#include "ir/passes/fusion_options.h"
#include "ir/tensor.h"

namespace fusor {

/// What an Engine does with each new plan's fused kernels (EngineOptions::verify; Note
/// [Verify mode] in jit/verify.h).
enum class VerifyMode {
  Off,       ///< no check
  Warn,      ///< check each JIT group once against its ops unfused; warn about a mismatch and keep its kernel
  Strict,    ///< check; a mismatch throws Error(NumericsMismatch) from that run, and the group runs unfused from then on
  Fallback,  ///< check; a mismatch is warned about, that run returns the unfused group's results, and the group
             ///< runs unfused from then on
};

/// "warn", "strict", "fallback" or "off" as a VerifyMode; InvalidArgument otherwise.
VerifyMode parse_verify_mode(const std::string& name);
/// The name parse_verify_mode reads.
const char* verify_mode_name(VerifyMode mode);

/// One fused group's check (EngineOptions::verify): its kernel's outputs against its ops
/// run one by one on the static kernels, on the same inputs, in one run.
struct GroupVerdict {
  std::string kernel;            ///< the step: "llvm contraction ff1_proj_ff1_ff1_act"
  std::string pattern;           ///< what formed the group: "matmul+add+gelu"
  std::vector<std::string> ops;  ///< its ops, in order
  std::string outputs;           ///< its outputs' types: "f32[16,3072]"
  double max_abs = 0;            ///< max |kernel - reference| over its outputs
  double max_rel = 0;            ///< max of that over |reference|, where |reference| >= 1e-3 of the scale
  double scale = 0;              ///< the outputs' own scale: max |reference|
  double error = 0;              ///< max_abs / scale: the error in units of the output's scale
  double tolerance = 0;          ///< the bound on `error` (Note [Verify tolerances])
  int64_t new_nonfinite = 0;     ///< elements NaN or infinite where the reference has a finite value
  int64_t mismatched = 0;        ///< elements beyond the tolerance (integer and bool outputs: unequal)
  bool passed = true;
  bool unfused = false;          ///< the group runs unfused from then on (VerifyMode Strict, Fallback)
  bool remembered = false;       ///< a pass an earlier check of the same kernel found (this process's or the
                                 ///< persistent store's): not run again (Note [Verdicts kept with the kernel])
  /// What the fusion passes did to keep this group's numerics finite (PassNote::guard):
  /// "BatchNorm variance floor 1e-12 applied to 16 channels of bn1" when FusionOptions'
  /// bn_variance_floor fired on a BatchNorm folded into it.
  std::vector<std::string> guards;
  /// The rewrites its reference undid, so that the check covers them too: "BatchNormalization
  /// bn1 as written after Conv conv1, in f64 (before fold_batchnorm)".
  std::vector<std::string> as_written;
  /// One line: kernel, verdict, errors and tolerance.
  std::string str() const;
  /// One JSON object of every field.
  std::string json() const;
};

/// Verdicts as one JSON array of GroupVerdict::json() objects.
std::string verdicts_json(const std::vector<GroupVerdict>& verdicts);

/// Everything that configures an Engine, in one place.
struct EngineOptions {
  /// Which code runs the graph's groups (codegen/backends.def). Static: the precompiled
  /// per-op kernels. Llvm: each fused group the LLVM backend takes (pointwise, row
  /// reductions, contractions, attention) becomes one JIT-compiled kernel (-O3, tens of ms
  /// per kernel); Asmjit: the same from the asmjit backend (machine code emitted directly,
  /// well under 1 ms per kernel; no attention yet). Groups a host JIT backend declines run on
  /// the static kernels. Cuda: every group runs as a kernel NVRTC compiled for the CUDA
  /// device (jit/cuda_executor.h), none on the host: a group without a CUDA kernel is
  /// Error(Unsupported); inputs may be host or device tensors.
  BackendKind backend = BackendKind::Static;
  /// Backend cuda: the CUDA device ordinal.
  int cuda_device = 0;
  /// Threads for kernels (the caller's thread included); <= 0 means one per core.
  int num_threads = 0;
  /// Trace, rewrite and group the graph per shape signature (ir/passes/pipeline.h). Off
  /// runs every op of the traced graph as its own kernel: the unfused baseline.
  bool fuse = true;
  /// The fusion passes' options (used when fuse is on).
  FusionOptions fusion;
  /// When not empty: an existing folder where JIT backends write each kernel's spec, IR
  /// and assembly (does not change the code, so it is not part of the plan key).
  std::string dump_dir;
  /// Keep compiled kernels in the persistent store (cache/disk_store.h), so that a process
  /// that restarts runs every shape it has seen before without compiling. A store that
  /// cannot be used (read-only, unsafe or missing folder) leaves the engine memory-only,
  /// with a warning.
  bool disk_cache = true;
  /// The store's folder; empty: $FUSOR_CACHE_DIR, $XDG_CACHE_HOME/fusor or ~/.cache/fusor.
  std::string cache_dir;
  /// A kernel store that the replicas of a fleet share, behind the disk store (cache/
  /// redis_store.h, Note [Remote store]; Note [Layered store]):
  /// "redis://[user:password@]host[:port][/db]" (the password may come from
  /// $FUSOR_REDIS_PASSWORD instead); empty: none. A read goes memory → disk → Redis, and a
  /// compile writes through. Every entry is authenticated with HMAC-SHA256 under the key file
  /// of remote.key_file or $FUSOR_STORE_KEY_FILE (Note [Store key file]); without one the
  /// remote store is not used unless remote.trust is Unauthenticated. A server that is down,
  /// slow or refusing costs at most remote.timeout_ms per state change, never a failed run
  /// (Note [Remote store failures]). A malformed URL is Error(InvalidArgument) at construction.
  std::string remote_store;
  /// The remote store's namespace, trust, key file, timeouts and size bound.
  RemoteStoreOptions remote;
  /// In-memory budgets, least recently used entries evicted beyond them (0: unbounded):
  /// plans (their arenas, their own constants and the kernels they hold, which outlive the
  /// kernel cache's eviction; the stock of spare arenas is bounded by it too), compiled
  /// kernels (their code and what their backend keeps to run it), and the weights the
  /// plans of every shape share (packed copies; merged or folded weights; other pass-made
  /// constants, interned); the last budget applies to each of those three caches. What
  /// evictions free goes back to the system (Note [Releasing evicted memory]).
  uint64_t plan_cache_bytes = uint64_t(1) << 30;
  uint64_t kernel_cache_bytes = uint64_t(256) << 20;
  uint64_t packed_cache_bytes = uint64_t(2) << 30;
  /// Receives warnings (e.g. a disk store that cannot be used); unset: standard error.
  std::function<void(const std::string&)> warn;
  /// Time every step of every run (Engine::profile()); costs two clock reads per step.
  bool profile = false;
  /// A never-seen shape runs at once with its groups on the static kernels, while its JIT
  /// kernels compile on a background thread; the compiled plan then replaces it atomically
  /// (jit/background_plans.h, Note [Background plans]). For JIT backends; no first-request stall.
  bool background_compile = false;
  /// Two x86 tiers (backend llvm): a never-seen shape runs at once on asmjit kernels
  /// (compiled in microseconds) while the LLVM plan compiles in the background and then
  /// replaces it (Note [Background plans]) kernel by kernel where LLVM's code is faster
  /// (jit/tiering.h, Note [Tiering]).
  /// Profile labels, compile_ms_by_backend and first_tier_kept show which tier serves.
  /// Without asmjit in the build, the first tier is the static kernels.
  bool tiering = false;
  /// The named input dim whose size changes from run to run ("T" for a sequence length;
  /// empty: none). With backend llvm, a never-seen size runs at once on symbolic kernels —
  /// compiled once for every size of that dim (codegen/symbolic.h, Note [Symbolic kernels];
  /// jit/symbolic_plans.h, Note [Symbolic first plans])
  /// and kept in the persistent store — while its exact kernels compile in the background
  /// and then replace them (Note [Background plans]). Groups with no symbolic form start on
  /// the first tier (asmjit with tiering, else the static kernels); groups that do not
  /// depend on the dim use their exact kernel from the start. The first size ever seen
  /// compiles the symbolic kernels; a graph without that dim runs as if it were empty.
  std::string symbolic_dim;
  /// With symbolic_dim: compile each size's exact kernels in the background (true), or keep
  /// serving every size with the symbolic kernels (false: one set of kernels for all sizes,
  /// no compile per size, at the speed bench/ `symbolic/*` measures).
  bool specialize = true;
  /// Check every fused kernel once, on the first run of each new plan (the caller's inputs;
  /// prepare() and warmup: seeded random ones), against its group's ops run unfused on the
  /// static kernels, and act on a mismatch as the mode says (jit/verify.h, Note [Verify
  /// mode]). A kernel that passed is not checked again: the verdict is kept with it, in
  /// memory and in the persistent store (Note [Verdicts kept with the kernel]).
  /// Engine::verdicts(), Engine::explain and EngineStats report the checks.
  VerifyMode verify = VerifyMode::Off;
  /// Multiplies every verify tolerance (Note [Verify tolerances]): below 1 is stricter.
  double verify_tolerance_scale = 1.0;
  /// What contractions compute in (codegen/precision.h, Note [bf16 contractions]): Fp32
  /// everywhere; Bf16 or Auto: the GEMMs with constant weights read bf16 operands and
  /// accumulate in f32 where the backend and the CPU can (llvm with AVX512-BF16), f32
  /// elsewhere, as explain says. Outputs, epilogues and the other kernels stay f32.
  Precision precision = Precision::Fp32;
  /// Backend llvm: compile each contraction in a few tilings, time them on this machine
  /// (on num_threads threads) and keep the fastest (Note [Tuned tilings], codegen/llvm/
  /// emit_contraction.cpp). A contraction then compiles several times over (about 5x), once
  /// per machine: the choice is kept with the kernel in the persistent store, so a restart,
  /// another process or a replica sharing the store never times it again. Best where compile
  /// time is not on a request's path: `fusor warmup --tune`, tiering, background_compile.
  bool tune = false;
  /// Hash of every field that changes the plans built.
  uint64_t hash() const;
};

/// Counters of an engine's caches (a snapshot; every field counts since construction
/// unless it says "now").
struct EngineStats {
  uint64_t plan_hits = 0;         ///< runs that found their plan
  uint64_t plan_misses = 0;       ///< plans built (a new graph or shape signature)
  uint64_t plans = 0;             ///< plans held now
  uint64_t plan_evictions = 0;
  uint64_t plan_bytes = 0;        ///< held now: the plans' arenas, own constants and kernels
  uint64_t kernel_hits = 0;       ///< kernels a plan found already in memory
  uint64_t kernels_compiled = 0;  ///< kernels compiled by a JIT backend
  uint64_t kernels_compiled_background = 0;  ///< of those, compiled by background plans (no run waited)
  uint64_t disk_hits = 0;         ///< kernels loaded from the persistent store (disk or remote), not compiled
  uint64_t disk_writes = 0;       ///< kernels saved to the persistent store
  uint64_t kernel_evictions = 0;
  uint64_t kernel_bytes = 0;      ///< held now: compiled code
  uint64_t packed_bytes = 0;      ///< held now: weights shared by all plans (packed copies,
                                  ///< weights the passes derived, other pass-made constants interned)
  double compile_ms = 0;          ///< total JIT compile time (all backends)
  std::map<std::string, double, std::less<>> compile_ms_by_backend;  ///< e.g. {"llvm": 412.5}
  double load_ms = 0;             ///< total time linking kernels from the store
  uint64_t background_swaps = 0;  ///< background JIT plans swapped in (background_compile, tiering)
  uint64_t first_tier_kept = 0;   ///< tiering: kernels where asmjit's code ran faster than LLVM's and stayed
  uint64_t symbolic_steps = 0;    ///< symbolic_dim: steps of first plans that ran a symbolic kernel
  uint64_t device_launches = 0;   ///< backend cuda: kernels launched on the device
  uint64_t groups_verified = 0;   ///< verify: fused groups checked against their unfused ops
  uint64_t groups_failed = 0;     ///< of those, beyond their tolerance or with new NaN/Inf
  uint64_t groups_unfused = 0;    ///< of those, running unfused from then on (Strict, Fallback)
  uint64_t verify_remembered = 0; ///< of the groups verified, those whose kernel had passed before (not run again)
  double verify_worst_error = 0;  ///< verify: the largest error seen, in units of its output's scale
  double verify_worst_ratio = 0;  ///< verify: the largest error over its tolerance (above 1: a failure)
  std::string disk_dir;           ///< the persistent store's folder ("" when off)
  uint64_t disk_entries = 0;      ///< kernels the store holds now (every graph's, every process's)
  uint64_t disk_bytes = 0;        ///< their size on disk
  bool disk_enabled = false;      ///< whether the store is in use
  std::string remote_url;         ///< the remote store, its password hidden ("" when none)
  bool remote_enabled = false;    ///< whether it is in use (it has a key, or trust is unauthenticated)
  std::string remote_state;       ///< "" when healthy, else what is wrong now ("unreachable: ...")
  uint64_t remote_hits = 0;       ///< entries (kernels, verdicts) read from it; disk_hits counts them too
  uint64_t remote_misses = 0;     ///< reads that found no valid entry there
  uint64_t remote_writes = 0;     ///< entries written to it
  uint64_t remote_rejected = 0;   ///< entries whose tag was missing or wrong: never loaded
  uint64_t remote_corrupt = 0;    ///< entries stale, foreign, truncated, corrupt or oversized
  uint64_t remote_unavailable = 0;  ///< reads and writes that did not reach it (down, timed out)

  uint64_t evictions() const { return plan_evictions + kernel_evictions; }
  uint64_t bytes() const { return plan_bytes + kernel_bytes + packed_bytes; }
};

/// Where run time went, per step of the plans run (EngineOptions::profile).
struct StepProfile {
  std::string step;     ///< "llvm contraction ff1_proj_ff1_ff1_act", "static Reshape context_merged"
  uint64_t calls = 0;
  double total_ms = 0;
};

/// Named tensors: the inputs and outputs of a run.
using TensorMap = std::map<std::string, Tensor, std::less<>>;

}  // namespace fusor
