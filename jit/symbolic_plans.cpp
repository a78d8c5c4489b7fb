#include "jit/symbolic_plans.h"

#include <atomic>

#include "codegen/lower.h"
#include "codegen/symbolic.h"
#include "ir/error.h"
#include "ir/passes/group_fusions.h"
#include "ir/shape_inference.h"

namespace fusor {

SymbolicReferences::SymbolicReferences(std::string dim, const Fuser& fuser)
    : dim_(std::move(dim)), fuser_(fuser), references_({uint64_t(64) << 20, nullptr, nullptr}) {}

std::shared_ptr<const ReferenceSpecs> SymbolicReferences::reference_for(const Graph& g, const PlanKey& key) {
  if (dim_.empty()) return nullptr;
  DimBindings dims;
  for (size_t i = 0; i < g.inputs().size() && i < key.inputs.size(); ++i) bind_input(g, g.inputs()[i], key.inputs[i], &dims);
  auto it = dims.find(dim_);
  if (it == dims.end()) return nullptr;
  // Size 64 (65 when the key is at 64): far from the degenerate sizes 1 and 2. A model that
  // cannot take it (a position table shorter than 65 entries) is symbolized against the
  // size one below the key's, or above it at sizes 1 and 2; a graph that takes neither
  // gets no reference, and its first plan runs on the first tier.
  constexpr int64_t kReferenceSize = 64;
  const int64_t size = it->second;
  const int64_t candidates[] = {size == kReferenceSize ? kReferenceSize + 1 : kReferenceSize,
                                size > 2 ? size - 1 : size + 1};
  for (int64_t candidate : candidates) {
    it->second = candidate;
    PlanKey ref_key = key;
    ref_key.inputs = input_types_from_dims(g, dims);
    try {
      return references_.get_or_build(ref_key, [&] {
        auto ref = std::make_shared<ReferenceSpecs>();
        const FusedGraph f = fuser_.fuse(g, ref_key.inputs);
        uint64_t bytes = sizeof(ReferenceSpecs);
        auto add = [&](const FusionGroup& grp) {
          if (grp.kind == GroupKind::View || grp.kind == GroupKind::Opaque) return;
          std::optional<KernelSpec> spec = lower_group(f, grp, nullptr);
          if (!spec) return;
          bytes += spec->key_bytes().size() + grp.nodes.size() * sizeof(NodeId);
          ref->by_nodes.emplace(grp.nodes, std::move(*spec));
        };
        for (const FusionGroup& grp : f.groups) {
          add(grp);
          if (grp.kind == GroupKind::Attention)
            for (const FusionGroup& part : split_attention(f.graph, grp)) add(part);
        }
        return SizedValue<ReferenceSpecs>{ref, bytes};
      });
    } catch (const Error& e) {
      if (e.code() != ErrorCode::ShapeMismatch && e.code() != ErrorCode::InvalidArgument &&
          e.code() != ErrorCode::InvalidGraph) {
        throw;
      }
    }
  }
  return nullptr;
}

GroupKernel symbolic_first_kernel(const FusedGraph& f, size_t group, const ReferenceSpecs& ref, JitBackend& jit,
                                  JitBackend* fallback, HostKernelSource& source, Precision precision,
                                  std::atomic<bool>* missing) {
  const FusionGroup& grp = f.groups[group];
  if (grp.kind == GroupKind::View || grp.kind == GroupKind::Opaque) return {};
  std::optional<KernelSpec> lowered = lower_group(f, grp, nullptr);  // once, for every path below
  if (!lowered) return {};
  // `jit`'s kernel of spec: compiled when needed, or (missing) only when it needs no compile.
  auto jit_kernel = [&](KernelSpec spec) -> std::shared_ptr<const CompiledKernel> {
    if (!missing) return source.get(jit, std::move(spec));
    std::shared_ptr<const CompiledKernel> ready = source.find(jit, std::move(spec));
    if (!ready) missing->store(true, std::memory_order_relaxed);
    return ready;
  };
  GroupKernel k;
  if (const KernelSpec* found = ref.find(grp)) {
    const KernelSpec& other = *found;
    if (lowered->same_code(other)) {  // (compared as lowered: both f32)
      KernelSpec spec = *lowered;
      apply_precision(spec, precision, jit);
      if (jit.supports(spec, nullptr)) {
        if (std::shared_ptr<const CompiledKernel> kernel = jit_kernel(spec)) {
          k.spec = std::move(spec);
          k.kernel = std::move(kernel);
          return k;
        }
      }
    }
    std::optional<SymbolicSpec> sym = symbolize(*lowered, other, nullptr);
    if (sym) apply_precision(sym->spec, precision, jit);
    if (sym && jit.supports(sym->spec, nullptr)) {
      std::shared_ptr<const CompiledKernel> kernel = jit_kernel(std::move(sym->spec));
      if (kernel && sym->extent <= kernel->max_extent) {  // (symbolic attention serves lengths up to its scratch)
        apply_precision(*lowered, precision, jit);
        k.spec = std::move(*lowered);
        k.extent = sym->extent;
        k.kernel = std::move(kernel);
        return k;
      }
    }
  }
  if (!fallback) return {};
  apply_precision(*lowered, precision, *fallback);
  if (!fallback->supports(*lowered, nullptr)) return {};
  k.spec = *lowered;
  k.kernel = source.get(*fallback, std::move(*lowered));
  return k;
}

}  // namespace fusor
