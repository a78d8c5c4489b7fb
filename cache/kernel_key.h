// KernelKey: what identifies a compiled kernel in the kernel cache. Layer: cache.
//
// Note [Kernel key]
// ~~~~~~~~~~~~~~~~~
// Identical kernels are shared across shapes, graphs and plans: the key is the KernelSpec
// itself (every size, stride, dtype and expression; not names), compared in full on a hit
// (KernelSpec::same_code), plus the backend's name and its target (CPU features), since
// the same spec compiles to different code for different targets. Compiler versions and the
// engine version join the key when kernels are persisted (the disk store).
#pragma once

#include <string>

#include "codegen/kernel_spec.h"

namespace fusor {

/// The full key of a compiled kernel (see Note [Kernel key]).
struct KernelKey {
  KernelSpec spec;
  std::string backend;  ///< "llvm", ...
  std::string target;   ///< the backend's target description

  bool operator==(const KernelKey& o) const { return backend == o.backend && target == o.target && spec.same_code(o.spec); }
};

/// Hash functor for unordered containers.
struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const;
};

}  // namespace fusor
