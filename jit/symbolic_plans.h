// Symbolic first plans (EngineOptions::symbolic_dim): the kernels a never-seen size of the
// varying dim runs on at once. Layer: jit.
//
// Note [Symbolic first plans]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A size of symbolic_dim the engine has not seen gets a first plan whose groups need no
// compile for it (Note [Symbolic kernels]): each group is lowered once at the run's size
// and compared with the same group lowered at a reference size of the dim (64, or 65 for a
// run at 64; ReferenceSpecs, one per graph and other dims, lowered once). A group whose spec
// does not change with the dim runs its exact kernel (the same at every size); a group with
// a symbolic form runs the symbolic kernel (compiled once, for every size, and kept in the
// store); any other group runs on the first tier (asmjit with tiering) or the static
// kernels. The exact plan is then built in the background (Note [Background plans]) unless
// EngineOptions::specialize is off. The first size ever seen compiles the symbolic kernels,
// on the request's path unless a first tier serves it:
//
// Note [Symbolic kernels compiled behind the first size]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With tiering, a size's first plan takes only the llvm kernels that need no compile (in
// memory or in the persistent store); a group whose symbolic (or size-independent) kernel
// is not there yet runs on the first tier, asmjit, and the plan records the reference
// (Plan::symbolic_pending). Its background job then compiles those kernels before the
// exact plan (or, with specialize off, builds the symbolic plan as the final one). So the
// first size a process ever serves is as fast as tiering alone, and the next sizes find
// the symbolic kernels compiled.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "cache/keyed_cache.h"
#include "cache/plan_key.h"
#include "jit/plan.h"

namespace fusor {

/// The exact specs of a graph's groups at a reference size of EngineOptions::symbolic_dim,
/// which the plans of other sizes are symbolized against: each group with a kernel kind, and
/// the parts an attention group splits into where a backend declines it (Note [Declined
/// attention] in jit/plan.cpp), found by their nodes (a plan that splits a group shifts the
/// index of every group after it).
struct ReferenceSpecs {
  std::map<std::vector<NodeId>, KernelSpec> by_nodes;
  /// The reference of the group with grp's nodes, or null.
  const KernelSpec* find(const FusionGroup& grp) const {
    auto it = by_nodes.find(grp.nodes);
    return it == by_nodes.end() ? nullptr : &it->second;
  }
};

/// The reference specs of one engine, by graph and other dims. Thread-safe.
class SymbolicReferences {
 public:
  /// References of the dim `dim` (empty: none) fused by `fuser`.
  SymbolicReferences(std::string dim, const Fuser& fuser);
  /// The reference specs key's size of the dim is symbolized against: g's groups lowered
  /// at size 64 of it (65 when key is at 64; the key's size - 1, or + 1 at sizes 1 and 2,
  /// when g cannot take that size). nullptr when the dim is off, g has no dim of that
  /// name, or g traces at neither size.
  std::shared_ptr<const ReferenceSpecs> reference_for(const Graph& g, const PlanKey& key);

 private:
  std::string dim_;
  const Fuser& fuser_;
  KeyedCache<PlanKey, ReferenceSpecs, PlanKeyHash> references_;
};

/// Group `group`'s kernel in the first plan of a size of the dim (Note [Symbolic first
/// plans]): `jit`'s symbolic kernel when the group has a symbolic form, `jit`'s exact kernel
/// when it does not depend on the dim, else `fallback`'s exact kernel (the first tier) or
/// none (null fallback: the static kernels); in `precision` where each backend computes it
/// (apply_precision). With `missing`, `jit`'s kernels are taken only where they need no
/// compile (KernelSource::find); a group whose kernel would need one sets *missing and takes
/// the fallback's (Note [Symbolic kernels compiled behind the first size]).
GroupKernel symbolic_first_kernel(const FusedGraph& f, size_t group, const ReferenceSpecs& ref, JitBackend& jit,
                                  JitBackend* fallback, HostKernelSource& source, Precision precision,
                                  std::atomic<bool>* missing = nullptr);

}  // namespace fusor
