// Static kernels of the layout and data-movement operators: Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze, Concat, Slice, Gather, Split, Expand, Tile, Pad. They move bytes and
// never look at values, so every dtype takes the same path: elements are copied by their
// byte size.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "codegen/static/kernel_util.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

using static_kernels::kElementGrain;

// Bytes per parallel chunk of a copy: tens of microseconds of memcpy, well above the cost
// of handing the chunk to another thread.
constexpr int64_t kByteGrain = int64_t(1) << 18;

// Copies `bytes` from src to dst (non-overlapping), split over threads when large.
void copy_bytes(void* dst, const void* src, int64_t bytes, Parallel& par) {
  if (bytes <= 0 || dst == src) return;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  par.parallel_for(bytes, kByteGrain, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
}

// Calls f(std::integral_constant<size_t, S>) with S the element size: copies of a
// compile-time number of bytes compile to single moves, and memcpy keeps them free of
// aliasing questions whatever the dtype.
template <class F>
void with_element_size(size_t size, F&& f) {
  switch (size) {
    case 1: return f(std::integral_constant<size_t, 1>{});
    case 2: return f(std::integral_constant<size_t, 2>{});
    case 4: return f(std::integral_constant<size_t, 4>{});
    case 8: return f(std::integral_constant<size_t, 8>{});
    default: FUSOR_ASSERT(false, "element size ", size);
  }
}

// ---- strided copy: dst (contiguous) [i...] = src[offset + sum_d i_d * stride_d] ---------

// The loop nest of a strided copy, simplified: size-1 dims dropped and each dim merged into
// the one outside it when the source is contiguous across the two (the destination always
// is). At least one dim remains.
struct CopyNest {
  std::vector<int64_t> dims, strides;  ///< innermost last; source strides in elements
};

CopyNest simplify(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  CopyNest nest;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!nest.dims.empty() && nest.strides.back() == strides[i] * dims[i]) {
      nest.dims.back() *= dims[i];
      nest.strides.back() = strides[i];
    } else {
      nest.dims.push_back(dims[i]);
      nest.strides.push_back(strides[i]);
    }
  }
  if (nest.dims.empty()) {
    nest.dims.push_back(1);
    nest.strides.push_back(1);
  }
  return nest;
}

// Walks the rows of a nest (its dims but the innermost) in row-major order, tracking the
// source offset of the current row.
class Odometer {
 public:
  explicit Odometer(const CopyNest& nest)
      : dims_(nest.dims.begin(), nest.dims.end() - 1), strides_(nest.strides.begin(), nest.strides.end() - 1),
        idx_(dims_.size(), 0) {}
  /// Number of positions.
  int64_t count() const {
    int64_t c = 1;
    for (int64_t d : dims_) c *= d;
    return c;
  }
  /// Moves to flat position i.
  void seek(int64_t i) {
    offset_ = 0;
    for (size_t d = dims_.size(); d-- > 0;) {
      idx_[d] = i % dims_[d];
      i /= dims_[d];
      offset_ += idx_[d] * strides_[d];
    }
  }
  /// Moves to the next position.
  void next() {
    for (size_t d = dims_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++idx_[d] < dims_[d]) return;
      offset_ -= idx_[d] * strides_[d];
      idx_[d] = 0;
    }
  }
  int64_t offset() const { return offset_; }

 private:
  std::vector<int64_t> dims_, strides_, idx_;
  int64_t offset_ = 0;
};

// Copies one tile of a 2-D transpose, dst[a * dst_row + c] = src[a + c * src_row] for
// a < rows, c < cols (both at most T), through a buffer in L1: the tile's source rows are
// first copied whole (each source cache line is read once, in one go, so power-of-two strides
// that map all of a tile's lines to one cache set cannot evict them half-used), then each
// destination row is gathered from the buffer and written contiguously.
template <size_t S, int64_t T>
void transpose_tile(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols) {
  alignas(64) char buf[T * T * S];
  constexpr int64_t s = int64_t(S);
  if (rows == T && cols == T) {  // constant trip counts for the common full tile
    for (int64_t c = 0; c < T; ++c) std::memcpy(buf + c * T * s, src + c * src_row * s, T * S);
    for (int64_t a = 0; a < T; ++a)
      for (int64_t c = 0; c < T; ++c) std::memcpy(dst + (a * dst_row + c) * s, buf + (c * T + a) * s, S);
    return;
  }
  for (int64_t c = 0; c < cols; ++c) std::memcpy(buf + c * T * s, src + c * src_row * s, size_t(rows) * S);
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t c = 0; c < cols; ++c) std::memcpy(dst + (a * dst_row + c) * s, buf + (c * T + a) * s, S);
}

template <size_t S>
void strided_copy_sized(const CopyNest& nest, const char* src, char* dst, Parallel& par) {
  int r = int(nest.dims.size());
  int64_t inner = nest.dims.back(), inner_stride = nest.strides.back();
  if (r == 1 && inner_stride == 1) return copy_bytes(dst, src, inner * int64_t(S), par);

  // Transposing the innermost dim with the source's contiguous one (dim j): copy 2-D tiles,
  // so that neither side is read or written one element per cache line.
  int j = -1;
  for (int d = 0; d + 1 < r; ++d)
    if (nest.strides[size_t(d)] == 1) j = d;
  if (inner_stride != 1 && j >= 0 && inner >= 4 && nest.dims[size_t(j)] >= 4) {
    constexpr int64_t kTile = S >= 4 ? 16 : 64 / int64_t(S);  // a tile row fills a cache line
    std::vector<int64_t> dst_strides(size_t(r), 1);
    for (int d = r - 1; d-- > 0;) dst_strides[size_t(d)] = dst_strides[size_t(d + 1)] * nest.dims[size_t(d + 1)];
    int64_t rows = nest.dims[size_t(j)], dst_row = dst_strides[size_t(j)];
    int64_t bands = (rows + kTile - 1) / kTile, outer = 1;
    for (int d = 0; d + 1 < r; ++d)
      if (d != j) outer *= nest.dims[size_t(d)];
    // Unit: one position of the other dims x one band of kTile rows of dim j, all columns.
    par.parallel_for(outer * bands, std::max<int64_t>(1, kElementGrain / (kTile * inner)), [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        int64_t rem = u / bands, band = u % bands, src_off = 0, dst_off = 0;
        for (int d = r - 2; d >= 0; --d) {
          if (d == j) continue;
          int64_t i = rem % nest.dims[size_t(d)];
          rem /= nest.dims[size_t(d)];
          src_off += i * nest.strides[size_t(d)];
          dst_off += i * dst_strides[size_t(d)];
        }
        const char* s = src + src_off * int64_t(S);
        char* dd = dst + dst_off * int64_t(S);
        int64_t a0 = band * kTile, a_n = std::min(rows - a0, kTile);
        for (int64_t c0 = 0; c0 < inner; c0 += kTile)
          transpose_tile<S, kTile>(s + (a0 + c0 * inner_stride) * int64_t(S), inner_stride,
                                   dd + (a0 * dst_row + c0) * int64_t(S), dst_row, a_n, std::min(inner - c0, kTile));
      }
    });
    return;
  }

  // Rows of the innermost dim: a memcpy each when the source is contiguous along it, an
  // element loop otherwise.
  Odometer outer0(nest);
  par.parallel_for(outer0.count(), std::max<int64_t>(1, kElementGrain / inner), [&](int64_t b, int64_t e) {
    Odometer outer = outer0;
    outer.seek(b);
    for (int64_t row = b; row < e; ++row, outer.next()) {
      const char* s = src + outer.offset() * int64_t(S);
      char* dd = dst + row * inner * int64_t(S);
      if (inner_stride == 1) std::memcpy(dd, s, size_t(inner) * S);
      else
        for (int64_t c = 0; c < inner; ++c) std::memcpy(dd + c * int64_t(S), s + c * inner_stride * int64_t(S), S);
    }
  });
}

// dst (contiguous, shape dims) = the elements of src at offset + sum_d i_d * strides[d].
void strided_copy(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, const char* src, char* dst,
                  size_t elem, Parallel& par) {
  CopyNest nest = simplify(dims, strides);
  with_element_size(elem, [&](auto size) { strided_copy_sized<decltype(size)::value>(nest, src, dst, par); });
}

// The same tensor's bytes under a new shape.
void run_copy(StaticKernelArgs& args) {
  copy_bytes(args.out().raw(), args.in(0).raw(), int64_t(args.in(0).nbytes()), args.parallel);
}

}  // namespace

void run_Transpose(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  std::vector<int> perm = transpose_perm(args.node, x.rank());
  std::vector<int64_t> xs = x.shape().strides(), dims, strides;
  for (int p : perm) {
    dims.push_back(x.shape()[p]);
    strides.push_back(xs[size_t(p)]);
  }
  strided_copy(dims, strides, static_cast<const char*>(x.raw()), static_cast<char*>(y.raw()), dtype_size(x.dtype()),
               args.parallel);
}

void run_Reshape(StaticKernelArgs& args) { run_copy(args); }
void run_Flatten(StaticKernelArgs& args) { run_copy(args); }
void run_Squeeze(StaticKernelArgs& args) { run_copy(args); }
void run_Unsqueeze(StaticKernelArgs& args) { run_copy(args); }

void run_Slice(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  SliceParams p = slice_params(args.node, x.shape(), args.in(1), args.in(2), args.has(3) ? &args.in(3) : nullptr,
                               args.has(4) ? &args.in(4) : nullptr);
  std::vector<int64_t> xs = x.shape().strides(), strides(xs.size());
  int64_t base = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    base += p.start[d] * xs[d];
    strides[d] = p.step[d] * xs[d];
  }
  size_t elem = dtype_size(x.dtype());
  strided_copy(p.count, strides, static_cast<const char*>(x.raw()) + base * int64_t(elem),
               static_cast<char*>(y.raw()), elem, args.parallel);
}

void run_Concat(StaticKernelArgs& args) {
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  int axis;
  normalize_axis(attr_int(args.node, "axis"), y.rank(), &axis);  // inference checked the range
  const Shape& ys = y.shape();
  size_t elem = dtype_size(y.dtype());
  int64_t outer = 1, inner_bytes = int64_t(elem);
  for (int d = 0; d < axis; ++d) outer *= ys[d];
  for (int d = axis + 1; d < ys.rank(); ++d) inner_bytes *= ys[d];
  // Output row o is the inputs' rows o side by side, each seg[i] bytes long.
  std::vector<int64_t> seg, at;
  int64_t row_bytes = 0;
  for (const Tensor* in : args.inputs) {
    seg.push_back(in->shape()[axis] * inner_bytes);
    at.push_back(row_bytes);
    row_bytes += seg.back();
  }
  char* dst = static_cast<char*>(y.raw());
  Parallel& par = args.parallel;
  if (outer >= int64_t(par.num_threads()) * 4 || outer * row_bytes <= kByteGrain) {
    par.parallel_for(outer, std::max<int64_t>(1, kByteGrain / row_bytes), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (size_t i = 0; i < seg.size(); ++i)
          std::memcpy(dst + o * row_bytes + at[i], static_cast<const char*>(args.inputs[i]->raw()) + o * seg[i],
                      size_t(seg[i]));
    });
    return;
  }
  // Few, long rows: split each segment instead.
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < seg.size(); ++i)
      copy_bytes(dst + o * row_bytes + at[i], static_cast<const char*>(args.inputs[i]->raw()) + o * seg[i], seg[i],
                 par);
}

void run_Gather(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  const Tensor& ind = args.in(1);
  Tensor& y = args.out();
  int axis;
  normalize_axis(attr_int(args.node, "axis"), x.rank(), &axis);  // inference checked the range
  int64_t dim = x.shape()[axis], count = ind.numel();
  // Indices are data, not shapes: every one is checked before anything is read.
  std::vector<int64_t> idx(static_cast<size_t>(count));
  const int64_t* i64 = ind.dtype() == DType::I64 ? ind.data<int64_t>() : nullptr;
  const int32_t* i32 = ind.dtype() == DType::I32 ? ind.data<int32_t>() : nullptr;
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = i64 ? i64[i] : i32[i];
    if (v < -dim || v >= dim)
      node_fail(args.node, ErrorCode::InvalidArgument, "index ", v, " is out of range [", -dim, ", ", dim - 1,
                "] for axis ", axis, " of input ", x.type_str());
    idx[size_t(i)] = v < 0 ? v + dim : v;
  }
  if (y.numel() == 0) return;
  size_t elem = dtype_size(x.dtype());
  int64_t outer = 1, block = int64_t(elem);
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.rank(); ++d) block *= x.shape()[d];
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  // y[o, i, :] = x[o, idx[i], :], one block of `block` bytes each.
  with_element_size(elem, [&](auto size) {
    constexpr size_t S = decltype(size)::value;
    args.parallel.parallel_for(outer * count, std::max<int64_t>(1, kByteGrain / block), [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        int64_t o = u / count, i = u % count;
        const char* s = src + (o * dim + idx[size_t(i)]) * block;
        char* d = dst + u * block;
        if (block == int64_t(S)) std::memcpy(d, s, S);
        else std::memcpy(d, s, size_t(block));
      }
    });
  });
}

}  // namespace fusor

namespace fusor {

void run_Split(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  int axis;
  std::vector<int64_t> sizes =
      split_sizes(args.node, x.shape(), args.has(1) ? &args.in(1) : nullptr, int(args.outputs.size()), &axis);
  const size_t elem = dtype_size(x.dtype());
  const std::vector<int64_t> xs = x.shape().strides();
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor& y = args.out(int(k));
    if (y.numel())
      strided_copy(y.shape().dims(), xs, static_cast<const char*>(x.raw()) + at * xs[size_t(axis)] * int64_t(elem),
                   static_cast<char*>(y.raw()), elem, args.parallel);
    at += sizes[k];
  }
}

void run_Expand(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  strided_copy(y.shape().dims(), broadcast_strides(x.shape(), y.shape()), static_cast<const char*>(x.raw()),
               static_cast<char*>(y.raw()), dtype_size(x.dtype()), args.parallel);
}

// Tile: the output [r0 * x0, r1 * x1, ...] read as [r0, x0, r1, x1, ...] with strides
// [0, s0, 0, s1, ...] is one strided copy.
void run_Tile(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  const std::vector<int64_t> rep = int_vector(args.node, args.in(1), "repeats"), xs = x.shape().strides();
  std::vector<int64_t> dims, strides;
  for (int d = 0; d < x.rank(); ++d) {
    dims.insert(dims.end(), {rep[size_t(d)], x.shape()[d]});
    strides.insert(strides.end(), {0, xs[size_t(d)]});
  }
  strided_copy(dims, strides, static_cast<const char*>(x.raw()), static_cast<char*>(y.raw()), dtype_size(x.dtype()),
               args.parallel);
}

// Pad: per axis, a map from output position to input position (-1: the constant), by the
// mode; rows of the output are filled from their source rows through the inner axis's map.
void run_Pad(StaticKernelArgs& args) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  const PadParams p = pad_params(args.node, x.shape(), args.has(1) ? &args.in(1) : nullptr, args.has(3) ? &args.in(3) : nullptr);
  const std::string& mode = attr_string(args.node, "mode");
  const int r = x.rank();
  std::vector<std::vector<int64_t>> map(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) {
    const int64_t n = x.shape()[d];
    for (int64_t o = 0; o < p.out[d]; ++o) {
      int64_t i = o - p.begin[size_t(d)];
      if (i < 0 || i >= n) {
        if (mode == "constant") i = -1;
        else if (mode == "edge") i = i < 0 ? 0 : n - 1;
        else if (mode == "wrap") i = ((i % n) + n) % n;
        else i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect (pads < n: one reflection suffices)
      }
      map[size_t(d)].push_back(i);
    }
  }
  const size_t elem = dtype_size(x.dtype());
  Tensor fill = Tensor::zeros(y.dtype(), Shape{1});
  if (args.has(2)) std::memcpy(fill.raw(), args.in(2).raw(), elem);
  else fill.set(0, attr_float(args.node, "value"));
  const std::vector<int64_t> xs = x.shape().strides();
  const int64_t inner = r ? p.out[r - 1] : 1, rows = y.numel() / inner;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  const char* value = static_cast<const char*>(fill.raw());
  args.parallel.parallel_for(rows, std::max<int64_t>(1, kElementGrain / inner), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t off = 0, rest = row;
      for (int d = r - 2; d >= 0 && off >= 0; --d) {
        const int64_t i = map[size_t(d)][size_t(rest % p.out[d])];
        rest /= p.out[d];
        off = i < 0 ? -1 : off + i * xs[size_t(d)];
      }
      char* out = dst + row * inner * int64_t(elem);
      for (int64_t c = 0; c < inner; ++c) {
        const int64_t i = r ? map[size_t(r - 1)][size_t(c)] : 0;
        std::memcpy(out + c * int64_t(elem), off < 0 || i < 0 ? value : src + (off + i) * int64_t(elem), elem);
      }
    }
  });
}

}  // namespace fusor
