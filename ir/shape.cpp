#include "ir/shape.h"

#include "ir/error.h"

namespace fusor {

int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    FUSOR_CHECK(d >= 0, InvalidArgument, what, ": negative dimension ", d);
    if (d == 0) return 0 * n;  // keep going is pointless: empty tensor
    if (n > kMaxElements / d)
      fail(ErrorCode::OutOfMemory, what, ": element count overflows (more than 2^48 elements)");
    n *= d;
  }
  return n;
}

int64_t try_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d == 0) {
      n = 0;
      continue;  // a negative dim after it is still an error
    }
    if (n > kMaxElements / d) return -1;
    n *= d;
  }
  return n;
}

int64_t Shape::numel() const {
  return checked_numel_by(dims_, [this] { return "shape " + str(); });
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims_.size());
  int64_t acc = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims_[i] > 0 ? dims_[i] : 1;
  }
  return s;
}

std::string Shape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  int r = std::max(a.rank(), b.rank());
  std::vector<int64_t> d(size_t(r), 1);
  for (int i = 0; i < r; ++i) {
    int64_t x = i < r - a.rank() ? 1 : a.dims()[size_t(i - (r - a.rank()))];
    int64_t y = i < r - b.rank() ? 1 : b.dims()[size_t(i - (r - b.rank()))];
    if (x == y || y == 1) d[size_t(i)] = x;
    else if (x == 1) d[size_t(i)] = y;
    else return false;
  }
  *out = Shape(std::move(d));
  return true;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  FUSOR_ASSERT(in.rank() <= out.rank());
  std::vector<int64_t> s(size_t(out.rank()), 0);
  std::vector<int64_t> own = in.strides();
  int off = out.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i) {
    int64_t d = in.dims()[size_t(i)];
    FUSOR_ASSERT(d == 1 || d == out.dims()[size_t(i + off)], "broadcast ", in.str(), " to ", out.str());
    s[size_t(i + off)] = d == 1 ? 0 : own[size_t(i)];
  }
  return s;
}

bool normalize_axis(int64_t axis, int rank, int* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = int(axis < 0 ? axis + rank : axis);
  return true;
}

}  // namespace fusor
