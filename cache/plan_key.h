// PlanKey: what identifies an execution plan. Layer: cache (uses ir/).
//
// Note [Plan key]
// ~~~~~~~~~~~~~~~
// A plan is valid for exactly one (graph, input signature, options) triple:
//  - the graph's structural fingerprint (ops, attributes, wiring, constants' data, input
//    and output names; see ir/fingerprint.h),
//  - every input's dtype and concrete shape, in graph-input order,
//  - the device the inputs live on,
//  - the hash of every option that changes what is built (backend, fusion options).
// The cache compares all of these on a hit, not only the combined hash.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/op_schema.h"
#include "ir/tensor.h"

namespace fusor {

/// The full key of a plan (see Note [Plan key]).
struct PlanKey {
  uint64_t graph_fingerprint = 0;
  std::vector<TensorType> inputs;
  Device device = Device::Host;
  uint64_t options_hash = 0;

  /// A hash of every field.
  uint64_t hash() const;
  bool operator==(const PlanKey&) const = default;
};

/// std::hash-style functor for unordered containers.
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const { return size_t(k.hash()); }
};

}  // namespace fusor
