// Tensor: a typed, shaped, contiguous block of elements, owning its memory or borrowing
// the caller's; or a handle to such a block in a CUDA device's memory (wrap_device), which
// the host never dereferences. Layer: ir (std only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/shape.h"

namespace fusor {

/// Where a tensor's memory lives: host memory, or a CUDA device's (Engine::to_device, and
/// the outputs of a CUDA engine run on device inputs).
enum class Device : uint8_t { Host, Cuda };

/// "host", "cuda".
const char* device_name(Device d);

/// Bytes of alignment of every buffer fusor allocates (one cache line, one zmm register).
inline constexpr size_t kTensorAlignment = 64;

/// A contiguous row-major tensor. Copies share the buffer (like a shared_ptr); use clone()
/// for a deep copy. A default-constructed Tensor is "undefined" (defined() is false).
class Tensor {
 public:
  Tensor() = default;

  /// Allocates an uninitialized tensor (64-byte aligned). Throws OutOfMemory.
  static Tensor empty(DType dtype, Shape shape);
  /// Allocates a zero-filled tensor.
  static Tensor zeros(DType dtype, Shape shape);
  /// Wraps caller memory without owning it; the caller keeps it alive and sized.
  static Tensor borrow(void* data, DType dtype, Shape shape);
  /// A tensor in CUDA device memory at `address` (a CUdeviceptr), kept alive by `owner`
  /// (the allocation; may be null when the caller keeps the memory alive). The host never
  /// touches the elements: raw() is null, and data(), at(), set() and clone() throw
  /// InvalidArgument (Engine::to_host copies the tensor to the host). Throws
  /// InvalidArgument for a zero address with elements.
  static Tensor wrap_device(uint64_t address, DType dtype, Shape shape, std::shared_ptr<void> owner);
  /// A tensor of the given shape filled with `values` converted to dtype (for tests, small
  /// constants); values.size() must equal the element count.
  static Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& values);

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtype_size(dtype_); }
  Device device() const { return device_; }
  /// True when the tensor owns (shares ownership of) its memory.
  bool owns_memory() const { return owner_ != nullptr; }
  /// The device address of a tensor in device memory (wrap_device); 0 for host tensors.
  uint64_t device_address() const { return address_; }

  /// The host address of the elements (null for a tensor in device memory).
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  /// Typed element pointer; throws DTypeMismatch when T does not match dtype(),
  /// InvalidArgument for a tensor in device memory.
  template <class T>
  T* data() {
    check_type(sizeof(T), type_tag<T>());
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_type(sizeof(T), type_tag<T>());
    return static_cast<const T*>(data_);
  }

  /// Element i converted to double (any dtype; for tests, printing and checksums). Throws
  /// InvalidArgument for a tensor in device memory.
  double at(int64_t i) const;
  /// Stores v converted to dtype at element i (InvalidArgument in device memory).
  void set(int64_t i, double v);

  /// Deep copy into a new owning host tensor (InvalidArgument in device memory).
  Tensor clone() const;
  /// Same buffer seen with another shape of equal element count (either device).
  Tensor reshaped(Shape shape) const;
  /// "f32[1, 128, 768]".
  std::string type_str() const;

 private:
  template <class T>
  static constexpr int type_tag() {
    if constexpr (std::is_same_v<T, float>) return 1;
    else if constexpr (std::is_same_v<T, int64_t>) return 2;
    else if constexpr (std::is_same_v<T, int32_t>) return 3;
    else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>) return 4;
    else if constexpr (std::is_same_v<T, uint16_t>) return 5;
    else return 0;
  }
  void check_type(size_t size, int tag) const;
  // Throws InvalidArgument naming `what` when the elements are not in host memory.
  void check_host(const char* what) const;

  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  uint64_t address_ = 0;  // device tensors: the device address (data_ is null)
  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t numel_ = 0;
  Device device_ = Device::Host;
  bool defined_ = false;
};

}  // namespace fusor
