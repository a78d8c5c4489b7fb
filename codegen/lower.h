// Lowering: a FusionGroup of a fused graph becomes a KernelSpec. Group inputs produced by
// view chains (Reshape, Transpose, Slice, ...) are read through composed strides, so views
// cost nothing. Layer: codegen.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "codegen/kernel_spec.h"
#include "codegen/strided_view.h"
#include "ir/passes/pipeline.h"

namespace fusor {

/// The spec of group `group` of `fused`, or nullopt with *why (if given) set when the group has no
/// kernel kind yet (opaque ops, views, a shape this lowering does not express): such a
/// group runs on the static backend.
std::optional<KernelSpec> lower_group(const FusedGraph& fused, const FusionGroup& group, std::string* why);

/// The value whose buffer a kernel reads for v (v itself unless v is a view of another
/// value), and the view of that buffer that equals v; false when a view in the chain
/// needs a copy (then v itself must be materialized, and lowering reads v's own buffer).
/// A view op inside a compute group (an attention's output transpose) ends the chain: that
/// group's kernel writes its output.
bool resolve_view(const FusedGraph& fused, ValueId v, ValueId* root, StridedView* view);

/// The same, except that the chain also ends at the first value (v itself excluded) for
/// which stop() is true: a value the runtime has already materialized, read contiguously.
bool resolve_view(const FusedGraph& fused, ValueId v, const std::function<bool(ValueId)>& stop, ValueId* root,
                  StridedView* view);

/// The pointwise spec that materializes value v of `fused` (a view, or any value the
/// runtime needs in a buffer of its own) by copying it from buffer `root` read through
/// `view` (v's shape): buffers {root, v}. For runtimes without a host kernel for views
/// (the GPU).
KernelSpec lower_view_copy(const FusedGraph& fused, ValueId v, ValueId root, const StridedView& view);

}  // namespace fusor
