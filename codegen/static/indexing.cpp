// Static kernels of the indexing operators: GatherElements, GatherND, ScatterElements,
// ScatterND and Trilu. Indices are data: every one is range-checked (negative ones count from
// the end) before anything is read or written, and an index out of range is the node's
// InvalidArgument error. The scatters copy data, then apply the updates one after the other
// in index order, so a place indexed twice ends as the last write (reduction none, where
// ONNX leaves it undefined) or the combination of all, the same on every run; f16 and bf16
// combine in f32 and round once per update, integers wrap.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <string>

#include "codegen/static/kernel_util.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

using namespace static_kernels;

// The indices of t as int64, each checked against [-dim, dim) and made non-negative;
// dim_of(i) gives the bound of element i.
template <class DimOf>
std::vector<int64_t> checked_indices(const Node& n, const Tensor& t, DimOf dim_of, const char* what) {
  std::vector<int64_t> idx(size_t(t.numel()));
  const bool wide = t.dtype() == DType::I64;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = wide ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
    const int64_t dim = dim_of(i);
    if (v < -dim || v >= dim)
      node_fail(n, ErrorCode::InvalidArgument, what, " ", v, " (element ", i, " of ", t.type_str(),
                ") is out of range [", -dim, ", ", dim - 1, "]");
    idx[size_t(i)] = v < 0 ? v + dim : v;
  }
  return idx;
}

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}

// The element offset (by `strides`) of element u of an index tensor of dims `is`, its
// coordinate along `axis` replaced by index `at` (GatherElements' source, ScatterElements'
// target).
int64_t element_offset(int64_t u, const std::vector<int64_t>& is, const std::vector<int64_t>& strides, int axis, int64_t at) {
  int64_t rest = u, off = 0;
  for (int d = int(is.size()) - 1; d >= 0; --d) {
    const int64_t c = rest % is[size_t(d)];
    rest /= is[size_t(d)];
    off += (d == axis ? at : c) * strides[size_t(d)];
  }
  return off;
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const Node& n) {
  const std::string& r = attr_string(n, "reduction");
  return r == "add" ? Reduction::Add : r == "mul" ? Reduction::Mul : r == "max" ? Reduction::Max
         : r == "min" ? Reduction::Min : Reduction::None;
}

template <class T>
T combine(Reduction r, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (r) {
      case Reduction::Add: return T(U(a) + U(b));
      case Reduction::Mul: return T(U(a) * U(b));
      case Reduction::Max: return a > b ? a : b;
      case Reduction::Min: return a < b ? a : b;
      case Reduction::None: break;
    }
  } else {
    switch (r) {
      case Reduction::Add: return a + b;
      case Reduction::Mul: return a * b;
      case Reduction::Max: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : std::max(a, b);
      case Reduction::Min: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : std::min(a, b);
      case Reduction::None: break;
    }
  }
  return b;
}

// Writes (or combines) `count` updates at src into dst, elements of dtype t.
class Scatterer {
 public:
  Scatterer(const Node& n, DType t) : node_(n), t_(t), r_(reduction_of(n)), elem_(dtype_size(t)) {
    if (r_ != Reduction::None && t == DType::Bool) unsupported_dtype(n, t);
  }
  void apply(char* dst, const char* src, int64_t count) const {
    if (r_ == Reduction::None) {
      std::memcpy(dst, src, size_t(count) * elem_);
      return;
    }
    switch (t_) {
      case DType::F32: return typed<float>(dst, src, count);
      case DType::I32: return typed<int32_t>(dst, src, count);
      case DType::I64: return typed<int64_t>(dst, src, count);
      case DType::F16: return half(dst, src, count, f16_to_f32, f32_to_f16);
      case DType::BF16: return half(dst, src, count, bf16_to_f32, f32_to_bf16);
      default: unsupported_dtype(node_, t_);
    }
  }
  size_t elem() const { return elem_; }

 private:
  template <class T>
  void typed(char* dst, const char* src, int64_t count) const {
    for (int64_t i = 0; i < count; ++i) {
      T a, b;
      std::memcpy(&a, dst + i * int64_t(sizeof(T)), sizeof(T));
      std::memcpy(&b, src + i * int64_t(sizeof(T)), sizeof(T));
      a = combine(r_, a, b);
      std::memcpy(dst + i * int64_t(sizeof(T)), &a, sizeof(T));
    }
  }
  void half(char* dst, const char* src, int64_t count, float (*load)(uint16_t), uint16_t (*store)(float)) const {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t a, b;
      std::memcpy(&a, dst + i * 2, 2);
      std::memcpy(&b, src + i * 2, 2);
      a = store(combine(r_, load(a), load(b)));
      std::memcpy(dst + i * 2, &a, 2);
    }
  }
  const Node& node_;
  DType t_;
  Reduction r_;
  size_t elem_;
};

}  // namespace

// y = data; y[i... with index[i...] at axis] (op)= updates[i...], in order.
void run_ScatterElements(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  const Tensor& ind = a.in(1);
  const Tensor& upd = a.in(2);
  Tensor& y = a.out();
  const int axis = node_axis(a.node, attr_int(a.node, "axis"), x.rank(), "axis");
  const int64_t dim = x.shape()[axis];
  const std::vector<int64_t> idx = checked_indices(a.node, ind, [&](int64_t) { return dim; }, "index");
  const Scatterer scatter(a.node, x.dtype());
  std::memcpy(y.raw(), x.raw(), x.nbytes());
  const std::vector<int64_t> ys = y.shape().strides();
  const std::vector<int64_t>& is = ind.shape().dims();
  const size_t elem = scatter.elem();
  char* dst = static_cast<char*>(y.raw());
  const char* src = static_cast<const char*>(upd.raw());
  for (int64_t u = 0; u < ind.numel(); ++u)
    scatter.apply(dst + element_offset(u, is, ys, axis, idx[size_t(u)]) * int64_t(elem), src + u * int64_t(elem), 1);
}

// y = data; y[index[t, :], ...] (op)= updates[t, ...] for each index tuple t, in order.
void run_ScatterND(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  const Tensor& ind = a.in(1);
  const Tensor& upd = a.in(2);
  Tensor& y = a.out();
  const int64_t k = ind.shape()[-1];
  const std::vector<int64_t> idx = checked_indices(a.node, ind, [&](int64_t i) { return x.shape()[int(i % k)]; }, "index");
  const Scatterer scatter(a.node, x.dtype());
  std::memcpy(y.raw(), x.raw(), x.nbytes());
  const std::vector<int64_t> ys = y.shape().strides();
  const int64_t block = k < x.rank() ? ys[size_t(k - 1)] : 1;
  const int64_t elem = int64_t(scatter.elem());
  char* dst = static_cast<char*>(y.raw());
  const char* src = static_cast<const char*>(upd.raw());
  for (int64_t t = 0; t < ind.numel() / k; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) off += idx[size_t(t * k + j)] * ys[size_t(j)];
    scatter.apply(dst + off * elem, src + t * block * elem, block);
  }
}

// y[i...] = x[i... with index[i...] at axis].
void run_GatherElements(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  const Tensor& ind = a.in(1);
  Tensor& y = a.out();
  const int axis = node_axis(a.node, attr_int(a.node, "axis"), x.rank(), "axis");
  const int64_t dim = x.shape()[axis];
  const std::vector<int64_t> idx = checked_indices(a.node, ind, [&](int64_t) { return dim; }, "index");
  if (y.numel() == 0) return;
  const std::vector<int64_t> xs = x.shape().strides();
  const std::vector<int64_t>& is = ind.shape().dims();
  const size_t elem = dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  a.parallel.parallel_for(y.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u)
      std::memcpy(dst + u * int64_t(elem), src + element_offset(u, is, xs, axis, idx[size_t(u)]) * int64_t(elem), elem);
  });
}

// y[b..., i...] = x[b..., index[b..., i..., :], ...]: one block of the trailing dims per tuple.
void run_GatherND(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  const Tensor& ind = a.in(1);
  Tensor& y = a.out();
  const int b = int(attr_int(a.node, "batch_dims"));
  const int64_t k = ind.shape()[-1];
  const std::vector<int64_t> xs = x.shape().strides();
  const std::vector<int64_t> idx =
      checked_indices(a.node, ind, [&](int64_t i) { return x.shape()[b + int(i % k)]; }, "index");
  if (y.numel() == 0) return;
  int64_t batches = 1;
  for (int d = 0; d < b; ++d) batches *= x.shape()[d];
  const int64_t tuples = ind.numel() / k, per_batch = tuples / batches;
  const size_t elem = dtype_size(x.dtype());
  const int64_t block = (b + k < x.rank() ? xs[size_t(b + k - 1)] : 1) * int64_t(elem);
  const int64_t batch_stride = b > 0 ? xs[size_t(b - 1)] : 0;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  a.parallel.parallel_for(tuples, std::max<int64_t>(1, kElementGrain * 4 / std::max<int64_t>(1, block)),
                          [&](int64_t lo, int64_t hi) {
                            for (int64_t t = lo; t < hi; ++t) {
                              int64_t off = (t / per_batch) * batch_stride;
                              for (int64_t j = 0; j < k; ++j) off += idx[size_t(t * k + j)] * xs[size_t(b + j)];
                              std::memcpy(dst + t * block, src + off * int64_t(elem), size_t(block));
                            }
                          });
}

// Keeps element [..., i, j] where j - i >= k (upper) or j - i <= k (lower), zero elsewhere.
void run_Trilu(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out();
  if (y.numel() == 0) return;
  const int64_t k = a.has(1) ? a.in(1).data<int64_t>()[0] : 0;
  const bool upper = attr_int(a.node, "upper") != 0;
  const int64_t rows = x.shape()[-2], cols = x.shape()[-1];
  const size_t elem = dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  a.parallel.parallel_for(y.numel() / cols, std::max<int64_t>(1, kElementGrain / cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t i = r % rows;
      // Kept columns: [i + k, cols) upper, [0, i + k] lower, clamped to the row (k may be
      // anywhere in int64: the sums saturate).
      const int64_t start = sat_add(i, k);
      const int64_t lo = upper ? std::clamp<int64_t>(start, 0, cols) : 0;
      const int64_t hi = upper ? cols : std::clamp<int64_t>(sat_add(start, 1), 0, cols);
      char* out = dst + r * cols * int64_t(elem);
      const char* in = src + r * cols * int64_t(elem);
      std::memset(out, 0, size_t(cols) * elem);
      if (hi > lo) std::memcpy(out + lo * int64_t(elem), in + lo * int64_t(elem), size_t(hi - lo) * elem);
    }
  });
}

}  // namespace fusor
