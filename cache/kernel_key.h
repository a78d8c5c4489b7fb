// KernelKey: what identifies a compiled kernel in the kernel cache and the disk store.
// Layer: cache.
//
// Note [Kernel key]
// ~~~~~~~~~~~~~~~~~
// Identical kernels are shared across shapes, graphs and plans, so the key says what the
// code is, never where it came from:
//  - spec: the KernelSpec itself (kind, tasks, every buffer's dtype, size and role, every
//    size, stride, offset and dtype, the expression graphs; not names), compared in full on
//    a hit (KernelSpec::same_code);
//  - backend: the backend's name ("llvm", "asmjit", "cuda");
//  - target: the backend's target description (CPU features, or the GPU architecture),
//    since the same spec compiles to different code for different targets;
//  - compiler: the compiler's name and version ("LLVM 18.1.8", "NVRTC 12.4"), since
//    another compiler may build other code from the same spec;
//  - engine_version: kFusorVersion (cache/version.h), bumped whenever fusor's own code
//    generation changes.
// compiler and engine_version matter most once kernels outlive the process (the disk
// store), but they are part of the in-memory key too, so that one key means one thing.
// hash() covers every field; operator== compares every field; serialize() writes every
// field as the bytes the disk store keeps inside each entry and compares on load, so a
// hash collision never loads another kernel. tests/cache/keys_test.cpp checks that each
// field changes all three.
#pragma once

#include <cstdint>
#include <string>

#include "cache/version.h"
#include "codegen/kernel_spec.h"

namespace fusor {

/// The full key of a compiled kernel (see Note [Kernel key]).
struct KernelKey {
  KernelSpec spec;
  std::string backend;  ///< "llvm", ...
  std::string target;   ///< the backend's target description
  std::string compiler;  ///< the compiler's name and version; empty when not known
  std::string engine_version = std::string(kFusorVersion);  ///< see cache/version.h

  /// A deterministic hash of every field (the same on every run and machine).
  uint64_t hash() const;
  /// Every field as bytes, for the disk store: equal keys give equal bytes and different
  /// keys different bytes.
  std::string serialize() const;
  bool operator==(const KernelKey& o) const {
    return backend == o.backend && target == o.target && compiler == o.compiler &&
           engine_version == o.engine_version && spec.same_code(o.spec);
  }
};

/// Hash functor for unordered containers.
struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const { return size_t(k.hash()); }
};

}  // namespace fusor
