// The keys under which the runtime shares constants across the plans of every shape: a
// packed copy of a weight, the constants the passes derive, the pass-made constants
// interned by their bytes, and a constant's copy on a device. The policies that use them
// are in jit/shared_constants.h (Notes [Derived constants], [Interned constants]) and
// jit/cuda_executor.cpp. Layer: cache (uses ir/).
//
// A constant is identified one of two ways:
//  - by its storage (address and size): the constants of the user's graph and those the
//    sharing made common are the same storage in every plan. The key holds the tensor, so
//    the storage, and with it the address, cannot be reused while the entry lives;
//  - by its content (dtype, shape, bytes; the hash first, then a full compare): the
//    constants each plan's tracing makes anew.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/passes/derived_constants.h"
#include "ir/tensor.h"

namespace fusor {

/// The hash of a constant's bytes, as a content key compares them.
uint64_t content_hash(const Tensor& t);

/// A packed copy of a constant (codegen/packing.h) in one layout: by the constant's storage.
struct PackKey {
  Tensor source;
  std::string layout;  ///< packed_b_layout
  bool operator==(const PackKey& o) const;
};
struct PackKeyHash {
  size_t operator()(const PackKey& k) const;
};

/// A pass-made constant interned by its content (Note [Interned constants]).
struct InternKey {
  Tensor data;
  uint64_t content = 0;  ///< content_hash(data)
  bool operator==(const InternKey& o) const;
};
struct InternKeyHash {
  size_t operator()(const InternKey& k) const { return size_t(k.content); }
};

/// What a pass derived (Note [Derived constants]): its recipe and its sources' storage.
struct DerivedKey {
  ConstantDerivation d;
  bool operator==(const DerivedKey& o) const;
};
struct DerivedKeyHash {
  size_t operator()(const DerivedKey& k) const;
};

/// A constant's copy in device memory: by storage for the constants every plan shares, by
/// content for those a plan made on its own.
struct DeviceConstKey {
  Tensor source;
  bool by_content = false;
  uint64_t content = 0;  ///< by_content: content_hash(source)
  bool operator==(const DeviceConstKey& o) const;
};
struct DeviceConstKeyHash {
  size_t operator()(const DeviceConstKey& k) const;
};

}  // namespace fusor
