// kFusorVersion: the engine version that joins every kernel key and every disk-store entry.
// Layer: cache (std only).
//
// Bump the number after "+codegen." whenever a change could make the same KernelKey build
// different code or a different artifact: lowering, any backend's code generation, the
// calling convention, or the layout of what the disk store holds. Entries written by
// another version are then never loaded (they are stale; see Note [Disk store entry]), and
// in-memory keys never mix code of two versions.
#pragma once

#include <string_view>

namespace fusor {

/// The engine version: "<release>+codegen.<n>".
inline constexpr std::string_view kFusorVersion = "0.1.0+codegen.27";

}  // namespace fusor
