// Verify mode: every fused kernel checked where it runs, once, against its group's ops run
// unfused on the static kernels (EngineOptions::verify). Layer: jit.
//
// Note [Verify mode]
// ~~~~~~~~~~~~~~~~~~
// Fusion changes the order of floating-point evaluation, and a kernel right on the test
// machine can be wrong on another ISA, shape or tile. With verify on, the first run of each
// new host plan with JIT steps (one run per plan claims it: Plan::verify_claimed) checks
// every JIT step right after it ran: the step's group is run op by op on the static kernels
// (run_group_unfused) on the very values the kernel read, and each of the group's outputs
// is compared with the kernel's (GroupVerdict: errors, the output's scale, NaN or Inf the
// reference does not have). The inputs are the caller's on a run's first sight of a plan;
// Engine::prepare and `fusor warmup --verify` run the plan once on seeded random inputs.
// A group is checked on its own inputs, so an error upstream is not counted again
// downstream. The static kernels compute in f32 (they have no double path): the check
// bounds the difference of two f32 evaluations, by the tolerance of Note [Verify
// tolerances]. A rewrite that changes the numbers beyond evaluation order is undone in the
// reference, so that its error is checked too: a BatchNormalization folded into the
// group's Conv, MatMul or Gemm (PassNote::folded) is computed as written, the producer with
// its own weights and then the normalization, in double (jit/reference_f64.h; f32 as
// written would lose more to cancellation than the fold does when var + eps is tiny). So a
// fold whose variance floor fired, or whose folded weights lost the normalization's
// precision, fails its check (naming the guard), and Fallback and Strict then serve the
// group as written. Such a verdict is remembered under a digest of the fold's constants as
// well as the kernel's key. What a failure does is the mode's:
//  - Warn: warned about (EngineOptions::warn), counted, and the kernel keeps serving;
//  - Fallback: warned about; the run carries on with the unfused group's results in place
//    of the kernel's (its outputs are the unfused ones), and the step runs its group
//    unfused from then on (Step::unfused);
//  - Strict: as Fallback, then the run throws Error(NumericsMismatch) naming the group, its
//    ops, its outputs, the errors and the tolerance. Later runs are served by the unfused
//    group, so a caller that retries gets the unfused results, never the failed kernel's.
// Plans made later (another shape, a background plan replacing a first one) are checked
// on their own first run. The claiming run keeps its verdicts in the plan (Engine::explain
// shows them beside the groups); Engine::verdicts() keeps the most recent ones; EngineStats
// counts groups verified, failed, unfused and remembered, and the worst error.
//
// Note [Verdicts kept with the kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A verdict is a property of a kernel, keyed like it: the KernelKey's bytes (spec, backend,
// target, compiler, engine version; Note [Kernel key]) under the prefix "verdict:" and the
// tolerance scale, and a checksum of the kernel's object, so that a pass vouches for the
// very code that was checked: another object under the same key (a store entry replaced,
// by a rebuild or by someone else) is checked on its own. A pass is remembered in memory (the twelve identical layers of a BERT
// encoder share their kernels, so one check serves all twelve) and in the persistent store
// beside the kernel's object, so a restarted process or another replica sharing the store
// does not check it again; the remembered verdict is reported with `remembered` set. A
// failure is never taken on trust: the kernel is checked again wherever it is met, which
// its fallback needs anyway (the unfused results replace the kernel's in that run). A store
// entry that does not decode is ignored. Verdicts are stored where the kernels are: the
// backends that store theirs (llvm), when the engine has a store.
//
// Note [Verify tolerances]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An error is max |kernel - reference| over an output, in units of that output's scale
// (max |reference|; 1 for an all-zero reference), so one bound serves every magnitude. The
// bound of a group is
//     tolerance = s * u(dtype) * 8 * (ops + sqrt(terms))
// where u is the unit roundoff of the output's dtype (2^-24 f32, 2^-11 f16, 2^-8 bf16),
// `ops` the group's ops, `terms` the sum over its ops of the terms one output element
// adds up (K of a GEMM, C/groups*kh*kw of a convolution, the row of a LayerNorm, softmax
// or reduction; 0 elementwise), and s EngineOptions::verify_tolerance_scale. Each op
// rounds once in either evaluation, and the exp, tanh and erf approximations of the
// kernels and of the static kernels are within 4 ulp of each other; a sum of n terms in
// another order differs by about sqrt(n) u of the output's scale for terms of mixed sign
// (n u at worst). The worst seen on the BERT layer and the ResNet bottleneck, llvm and
// asmjit on an AVX-512 Xeon, was 0.09 of this bound (1.9e-6 of scale on a 3072-term GEMM;
// tests/jit/verify_test.cpp prints it): a 10x margin for other instruction sets, tiles
// and summation orders, small enough that a wrong tile edge or a dropped term (errors of
// the output's own size) fails by orders of magnitude. Integer and bool outputs must be
// equal. Elements where the reference is NaN are not compared (NaN propagation through min
// and max differs between instruction sets by design); an infinity must be matched.
// A kernel whose contraction reads bf16 operands (ContractionSpec::bf16) is compared with
// the f32 ops all the same, and its bound adds kBf16ContractionTolerance (4 * 2^-8 of
// scale; Note [bf16 contractions], codegen/precision.h).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/kernel_store.h"
#include "codegen/parallel.h"
#include "jit/engine_types.h"
#include "jit/execute.h"
#include "jit/plan.h"

namespace fusor {

/// The tolerance of group `group` of `fused` run by a kernel of `spec` (Note [Verify
/// tolerances]), before the option's scale.
double verify_tolerance(const FusedGraph& fused, size_t group, const KernelSpec& spec);

/// Compares one output of a group: `got` (the kernel's) against `ref` (the unfused ops'),
/// into `v` (its worst output so far is kept), against `tolerance`.
void compare_output(const Tensor& got, const Tensor& ref, double tolerance, GroupVerdict& v);

/// A verdict's numbers as a store payload, and back (nullopt for bytes that are not one).
std::vector<uint8_t> encode_verdict(const GroupVerdict& v);
std::optional<GroupVerdict> decode_verdict(std::span<const uint8_t> bytes);

/// Seeded random inputs of g at `types` (g.inputs() order), what Engine::prepare checks a
/// plan on: floats N(0, 1), integers 0 or 1 (valid ids, masks and token types), bools.
TensorMap verify_inputs(const Graph& g, const std::vector<TensorType>& types);

/// An executor's checks (Note [Verify mode]). Thread-safe.
class Verifier {
 public:
  /// `warn` receives the failures' reports; `store` (may be null) keeps passes across
  /// processes under `key_of`'s key of each kernel (empty: not kept).
  Verifier(VerifyMode mode, double tolerance_scale, std::function<void(const std::string&)> warn,
           KernelStore* store = nullptr, std::function<std::string(const CompiledKernel&)> key_of = nullptr);

  /// Whether this run of `plan` is the one that checks it: verify is on, the plan has JIT
  /// steps and no run claimed it before.
  bool claim(const Plan& plan) const;

  /// Runs `plan` as execute_plan does, checking each JIT step; acts on failures as the
  /// mode says (Strict throws Error(NumericsMismatch) after the run, its outputs written).
  void execute_checked(const Plan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs,
                       Parallel& parallel, ArenaPool& arenas, StepTimes* times);

  /// The most recent verdicts, oldest first (at most kKept).
  std::vector<GroupVerdict> verdicts() const;
  void add_stats(EngineStats& s) const;

  static constexpr size_t kKept = 1024;
  /// Passes remembered in memory (beyond it the memory starts again; the store keeps all).
  static constexpr size_t kKnown = 4096;

 private:
  void record(const Plan& plan, const std::vector<GroupVerdict>& verdicts);
  // The pass remembered for kernel key `key` (memory, then the store), if any.
  std::optional<GroupVerdict> remembered(const std::string& key);
  void remember(const std::string& key, const GroupVerdict& v);

  const VerifyMode mode_;
  const double scale_;
  std::function<void(const std::string&)> warn_;
  KernelStore* const store_;
  const std::function<std::string(const CompiledKernel&)> key_of_;
  mutable std::mutex mu_;
  std::deque<GroupVerdict> recent_;
  std::unordered_map<std::string, GroupVerdict> known_;
  uint64_t verified_ = 0, failed_ = 0, unfused_ = 0, remembered_ = 0;
  double worst_error_ = 0, worst_ratio_ = 0;
};

}  // namespace fusor
