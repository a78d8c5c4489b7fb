// The structural fingerprint of a graph: equal for graphs that compute the same function
// with the same interface. Layer: ir (std only).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace fusor {

/// Hashes what the graph computes and how it is called: input names, dtypes and declared
/// dims; every node's op, attributes and input wiring (by definition order, not by name);
/// constants' dtype, shape and data; output names and wiring. Internal value and node
/// names do not count. Deterministic across runs and machines.
uint64_t fingerprint(const Graph& g);

}  // namespace fusor
