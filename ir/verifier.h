// The graph verifier: structural checks that need no shapes. Layer: ir (std only).
#pragma once

#include "ir/graph.h"

namespace fusor {

/// Checks g and throws InvalidGraph naming the first problem: a node whose inputs are not
/// defined before it (a cycle or use before definition), an input id that does not exist,
/// an arity outside the schema, a missing required input or attribute, an unknown attribute,
/// an attribute of the wrong type or out of range, a graph without outputs.
void verify(const Graph& g);

}  // namespace fusor
