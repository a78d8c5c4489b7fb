// Static kernels of the reductions along one axis: ArgMax, CumSum and TopK. The input is seen
// as [outer, dim, inner] around the axis; work is split over the (outer, inner) lines.
//   ArgMax  the first index of the maximum (the last with select_last_index); NaN is
//           larger than every number (numpy's argmax), the first NaN wins. f16/bf16 compare
//           their exact f32 values.
//   CumSum  a running sum in the element type (f32 sums in order, as numpy's cumsum; i32 /
//           i64 wrap modulo 2^bits), exclusive shifts it by one, reverse runs from the end.
//           f16/bf16 sum in f32 and round each result once.
//   TopK    a partial sort of each line's indices (std::partial_sort, O(dim log k)) by value,
//           then by index: descending for largest, ascending otherwise, NaN above every
//           number, equal values in index order; the values are copied, never converted.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>
#include <type_traits>

#include "codegen/static/kernel_util.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

using namespace static_kernels;

struct Lines {
  int64_t outer = 1, dim = 1, inner = 1;
};

Lines lines_around(const Shape& x, int axis) {
  Lines l;
  for (int d = 0; d < axis; ++d) l.outer *= x[d];
  l.dim = x[axis];
  for (int d = axis + 1; d < x.rank(); ++d) l.inner *= x[d];
  return l;
}

template <DType D>
float half_value(uint16_t h) {
  if constexpr (D == DType::F16) return f16_to_f32(h);
  else return bf16_to_f32(h);
}

template <class S, class Load>
void argmax_typed(StaticKernelArgs& a, Load load) {
  const Tensor& x = a.in(0);
  const int axis = node_axis(a.node, attr_int(a.node, "axis"), x.rank(), "axis");
  const bool last = attr_int(a.node, "select_last_index") != 0;
  const Lines l = lines_around(x.shape(), axis);
  const S* px = static_cast<const S*>(x.raw());
  int64_t* py = a.out().data<int64_t>();
  a.parallel.parallel_for(l.outer * l.inner, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, l.dim)),
                          [&](int64_t b, int64_t e) {
                            for (int64_t u = b; u < e; ++u) {
                              const S* p = px + (u / l.inner) * l.dim * l.inner + u % l.inner;
                              auto best = load(p[0]);
                              int64_t at = 0;
                              bool nan = best != best;
                              for (int64_t j = 1; j < l.dim && !(nan && !last); ++j) {
                                const auto v = load(p[j * l.inner]);
                                const bool v_nan = v != v;
                                const bool take = nan ? v_nan : (v_nan || (last ? v >= best : v > best));
                                if (take) best = v, at = j, nan = v_nan;
                              }
                              py[u] = at;
                            }
                          });
}

template <class T>
void cumsum_typed(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  const int axis = node_axis(a.node, int_vector(a.node, a.in(1), "axis")[0], x.rank(), "axis");
  const bool exclusive = attr_int(a.node, "exclusive") != 0, reverse = attr_int(a.node, "reverse") != 0;
  const Lines l = lines_around(x.shape(), axis);
  const T* px = static_cast<const T*>(x.raw());
  T* py = static_cast<T*>(a.out().raw());
  using Acc = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T>>::type;
  a.parallel.parallel_for(l.outer * l.inner, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, l.dim)),
                          [&](int64_t b, int64_t e) {
                            for (int64_t u = b; u < e; ++u) {
                              const int64_t base = (u / l.inner) * l.dim * l.inner + u % l.inner;
                              Acc s = 0;
                              for (int64_t k = 0; k < l.dim; ++k) {
                                const int64_t j = reverse ? l.dim - 1 - k : k;
                                const int64_t at = base + j * l.inner;
                                if (exclusive) {
                                  py[at] = T(s);
                                  s = Acc(s + Acc(px[at]));
                                } else {
                                  s = Acc(s + Acc(px[at]));
                                  py[at] = T(s);
                                }
                              }
                            }
                          });
}

template <class S, class Load>
void topk_typed(StaticKernelArgs& a, Load load) {
  const Tensor& x = a.in(0);
  const int axis = node_axis(a.node, attr_int(a.node, "axis"), x.rank(), "axis");
  const bool largest = attr_int(a.node, "largest") != 0;
  const Lines l = lines_around(x.shape(), axis);
  const int64_t k = a.out(0).shape()[axis];
  if (k == 0 || a.out(0).numel() == 0) return;
  const S* px = static_cast<const S*>(x.raw());
  S* values = static_cast<S*>(a.out(0).raw());
  int64_t* indices = a.out(1).data<int64_t>();
  a.parallel.parallel_for(l.outer * l.inner, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, l.dim)),
                          [&](int64_t b, int64_t e) {
                            std::vector<int64_t> order(size_t(l.dim));
                            for (int64_t u = b; u < e; ++u) {
                              const int64_t o = u / l.inner, in = u % l.inner;
                              const S* p = px + o * l.dim * l.inner + in;
                              auto before = [&](int64_t i, int64_t j) {
                                const auto vi = load(p[i * l.inner]), vj = load(p[j * l.inner]);
                                const bool ni = vi != vi, nj = vj != vj;
                                if (ni || nj) return ni && nj ? i < j : (largest ? ni : nj);
                                if (vi != vj) return largest ? vi > vj : vi < vj;
                                return i < j;
                              };
                              std::iota(order.begin(), order.end(), int64_t(0));
                              std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
                              for (int64_t r = 0; r < k; ++r) {
                                const int64_t at = (o * k + r) * l.inner + in;
                                values[at] = p[order[size_t(r)] * l.inner];
                                indices[at] = order[size_t(r)];
                              }
                            }
                          });
}

}  // namespace

void run_TopK(StaticKernelArgs& a) {
  auto same = [](auto v) { return v; };
  switch (a.in(0).dtype()) {
    case DType::F32: return topk_typed<float>(a, same);
    case DType::I32: return topk_typed<int32_t>(a, same);
    case DType::I64: return topk_typed<int64_t>(a, same);
    case DType::F16: return topk_typed<uint16_t>(a, half_value<DType::F16>);
    case DType::BF16: return topk_typed<uint16_t>(a, half_value<DType::BF16>);
    default: unsupported_dtype(a.node, a.in(0).dtype());
  }
}

void run_ArgMax(StaticKernelArgs& a) {
  auto same = [](auto v) { return v; };
  switch (a.in(0).dtype()) {
    case DType::F32: return argmax_typed<float>(a, same);
    case DType::I32: return argmax_typed<int32_t>(a, same);
    case DType::I64: return argmax_typed<int64_t>(a, same);
    case DType::F16: return argmax_typed<uint16_t>(a, half_value<DType::F16>);
    case DType::BF16: return argmax_typed<uint16_t>(a, half_value<DType::BF16>);
    default: unsupported_dtype(a.node, a.in(0).dtype());
  }
}

void run_CumSum(StaticKernelArgs& a) {
  if (a.out().numel() == 0) return;
  switch (a.in(0).dtype()) {
    case DType::F32: return cumsum_typed<float>(a);
    case DType::I32: return cumsum_typed<int32_t>(a);
    case DType::I64: return cumsum_typed<int64_t>(a);
    case DType::F16:
    case DType::BF16: return run_in_f32(a, +[](StaticKernelArgs& s) { cumsum_typed<float>(s); });
    default: unsupported_dtype(a.node, a.in(0).dtype());
  }
}

}  // namespace fusor
