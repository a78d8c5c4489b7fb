// Shape: the concrete dimensions of a tensor, with overflow-checked element counts and
// numpy broadcasting. Layer: ir (std only).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace fusor {

/// The largest element count fusor accepts for one tensor (2^48), far below where byte
/// sizes could overflow int64 for any dtype.
inline constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Concrete dimensions of a tensor (row-major, contiguous unless strides say otherwise).
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  /// Number of dimensions.
  int rank() const { return int(dims_.size()); }
  /// Dimension i; negative i counts from the back.
  int64_t operator[](int i) const { return dims_[size_t(i < 0 ? i + rank() : i)]; }
  int64_t& operator[](int i) { return dims_[size_t(i < 0 ? i + rank() : i)]; }
  /// All dimensions.
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  /// Product of the dimensions (1 for a scalar). Throws OutOfMemory past kMaxElements.
  int64_t numel() const;
  /// Row-major contiguous strides, in elements.
  std::vector<int64_t> strides() const;
  /// "[1, 128, 768]".
  std::string str() const;

  bool operator==(const Shape&) const = default;

 private:
  std::vector<int64_t> dims_;
};

/// Product of dims, checked: throws OutOfMemory naming `what` when it exceeds kMaxElements,
/// InvalidArgument when a dim is negative.
int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what);

/// The product of dims, or -1 when a dim is negative or the product exceeds kMaxElements.
int64_t try_numel(const std::vector<int64_t>& dims);

/// checked_numel, with the description made by describe() only when it throws: numel runs
/// on every shape the passes, the planner and each run touch.
template <class Describe>
int64_t checked_numel_by(const std::vector<int64_t>& dims, const Describe& describe) {
  const int64_t n = try_numel(dims);
  return n >= 0 ? n : checked_numel(dims, describe());
}

/// Numpy broadcasting of two shapes; returns false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);

/// Strides (in elements) that read a tensor of shape `in` as if it had shape `out` under
/// numpy broadcasting: broadcast dims get stride 0; the result has out.rank() entries.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

/// Normalizes a possibly negative axis against rank; returns false when out of range.
bool normalize_axis(int64_t axis, int rank, int* out);

}  // namespace fusor
