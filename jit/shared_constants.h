// SharedConstants: the constants the plans of every shape share instead of holding their
// own: what the passes derive, the constants tracing makes anew per plan, and the packed
// copies kernels read. Both executors use it (the CUDA one then uploads each shared
// constant once, jit/cuda_executor.cpp). The keys are in cache/constant_keys.h. Layer: jit.
//
// Note [Derived constants]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Passes derive constants per plan (merged Q/K/V weights, BN-folded weights:
// ir/passes/derived_constants.h). The engine keeps each derivation's result keyed by its
// recipe and its sources' storage, which the key keeps alive (so an address is never reused
// while the entry lives): the plan of every later shape gets the same tensors without
// computing or copying them (a BERT layer's merged QKV weights are 7 MiB: copying them into
// fresh pages cost ~4.5 ms per layer per new sequence length), and, their storage being
// shared, packed copies (PackKey) are shared too and interning skips them.
//
// Note [Interned constants]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Tracing makes constants per plan (folded subgraphs of constants). Without care every
// shape's plan would hold its own copy and pack it again. After fusion the engine interns
// them: a constant that neither the user's graph nor the derived cache (Note [Derived
// constants]: merged and folded weights, shared already) holds is looked up by its bytes
// (hash, then a full compare) and replaced by the first equal copy, so all plans share one
// tensor and one packed copy. Constants under kInternMinBytes stay with their plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

#include "cache/constant_keys.h"
#include "cache/keyed_cache.h"
#include "codegen/compiled_kernel.h"
#include "ir/graph.h"

namespace fusor {

/// Storage (Tensor::raw()) that every plan shares: the user's constants, derived and
/// interned ones.
using SharedStorage = std::unordered_set<const void*>;

/// The caches of shared constants, each bounded by one budget (EngineOptions::
/// packed_cache_bytes). Thread-safe.
class SharedConstants {
 public:
  /// Smaller constants are cheaper to keep per plan than to intern.
  static constexpr size_t kInternMinBytes = 4096;

  explicit SharedConstants(uint64_t budget_bytes);

  /// The tensors of derivation d (Note [Derived constants]): make()'s, or those of an equal
  /// earlier derivation. Their storage is added to *shared when given.
  std::vector<Tensor> derive(const ConstantDerivation& d, const std::function<std::vector<Tensor>()>& make,
                             SharedStorage* shared);
  /// Replaces each constant of g at least kInternMinBytes large whose storage is not in
  /// *shared by the first equal copy (Note [Interned constants]), and adds it to *shared.
  void intern(SharedStorage* shared, Graph& g);
  /// The packed copy of constant `c` that kernel k reads as `p` (packed once, shared).
  std::shared_ptr<const Tensor> packed(const CompiledKernel& k, const CompiledKernel::Prepack& p, const Tensor& c);

  /// The bytes the three caches hold now.
  uint64_t bytes() const;

 private:
  struct DerivedTensors {
    std::vector<Tensor> tensors;
  };
  KeyedCache<DerivedKey, DerivedTensors, DerivedKeyHash> derived_;
  KeyedCache<InternKey, Tensor, InternKeyHash> interned_;
  KeyedCache<PackKey, Tensor, PackKeyHash> packed_;
};

}  // namespace fusor
