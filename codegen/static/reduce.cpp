// Static kernels of the reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd
// over any set of axes.
//
// Note [Reduction plan]
// The input's dims are canonicalised: size-1 dims dropped, adjacent dims that are both
// reduced or both kept merged. What is left alternates kept (K) and reduced (R) groups.
//  - innermost group R ("row" reductions: [K, R], full reductions, [K, R, K, R]): each
//    output sums contiguous runs with sum_f32 (float partial sums, double across blocks);
//  - innermost group K ("column" reductions: [R, K], [K, R, K]): each output row
//    accumulates whole input rows, vectorized across the columns, in double.
// Work is split over outputs; when there are fewer than kTargetUnits output units the
// reduction itself is cut into segments whose partial sums are combined in a fixed order.
// Segment sizes depend only on the shapes, never on the thread count, so results are
// bit-identical for every Parallel. Integers accumulate in 64 bits with wrap-around
// (i32 results wrap modulo 2^32); integer ReduceMean truncates the sum / count toward zero.
// f16/bf16 run the f32 kernel on converted copies (run_in_f32). ReduceMax and ReduceMin use
// the same plan with max / min in place of + (accumulating in the element type, NaN
// propagating); ReduceProd with * (floats multiplied in double, integers in 64 bits with
// wrap-around).
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "codegen/static/kernel_util.h"
#include "codegen/static/math.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

using namespace static_kernels;

constexpr int64_t kTargetUnits = 64;   // aim for at least this many independent work units
constexpr int64_t kColumnTile = 2048;  // columns accumulated at once (16 KiB of doubles)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A run of merged dims of one kind, contiguous in the input.
struct Group {
  int64_t size, stride;
};

// Row-major odometer over a list of groups, tracking the input element offset.
class GroupCursor {
 public:
  GroupCursor(const std::vector<Group>& groups, int64_t flat) : groups_(groups), idx_(groups.size()) {
    for (size_t i = groups.size(); i-- > 0;) {
      idx_[i] = flat % groups[i].size;
      flat /= groups[i].size;
      offset_ += idx_[i] * groups[i].stride;
    }
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (size_t i = groups_.size(); i-- > 0;) {
      offset_ += groups_[i].stride;
      if (++idx_[i] < groups_[i].size) return;
      offset_ -= groups_[i].stride * groups_[i].size;
      idx_[i] = 0;
    }
  }

 private:
  const std::vector<Group>& groups_;
  std::vector<int64_t> idx_;
  int64_t offset_ = 0;
};

int64_t product(const std::vector<Group>& g) {
  int64_t p = 1;
  for (const Group& x : g) p *= x.size;
  return p;
}

enum class Kind { Sum, Mean, Max, Min, Prod };

// Accumulation per element type: double for float, wrapping 64-bit for integers; the
// element type itself for max and min.
constexpr bool is_extremum(Kind k) { return k == Kind::Max || k == Kind::Min; }

template <class T, Kind K>
using Acc = std::conditional_t<is_extremum(K), T, std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>>;

template <class T, Kind K>
Acc<T, K> identity() {
  if constexpr (K == Kind::Prod) return 1;
  else if constexpr (!is_extremum(K)) return 0;
  else if constexpr (std::is_floating_point_v<T>)
    return K == Kind::Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else return K == Kind::Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

// Combines two partial results (max and min propagate NaN).
template <class T, Kind K>
Acc<T, K> combine(Acc<T, K> a, Acc<T, K> b) {
  if constexpr (K == Kind::Prod) return a * b;
  else if constexpr (!is_extremum(K)) return a + b;
  else if constexpr (std::is_floating_point_v<T>)
    return a != a || b != b ? std::numeric_limits<T>::quiet_NaN() : K == Kind::Max ? (a > b ? a : b) : (a < b ? a : b);
  else return K == Kind::Max ? (a > b ? a : b) : (a < b ? a : b);
}

// An element as its accumulator (integers as their 64-bit two's complement).
template <class T, Kind K>
Acc<T, K> element_acc(T v) {
  if constexpr (std::is_same_v<Acc<T, K>, uint64_t>) return uint64_t(int64_t(v));
  else return Acc<T, K>(v);
}

template <class T, Kind K>
Acc<T, K> run_reduce(const T* p, int64_t n) {
  if constexpr (K == Kind::Min || K == Kind::Prod) {
    Acc<T, K> m = identity<T, K>();
    for (int64_t i = 0; i < n; ++i) m = combine<T, K>(m, element_acc<T, K>(p[i]));
    return m;
  } else if constexpr (K == Kind::Max) {
    if constexpr (std::is_floating_point_v<T>) {
      int64_t nans = 0;
      for (int64_t i = 0; i < n; ++i) nans += p[i] != p[i];
      return nans ? std::numeric_limits<T>::quiet_NaN() : max_f32(p, n);
    } else {
      T m = std::numeric_limits<T>::lowest();
      for (int64_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
      return m;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    return sum_f32(p, n);
  } else {
    uint64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += uint64_t(int64_t(p[i]));
    return s;
  }
}

template <class T, Kind K>
void column_accumulate(Acc<T, K>* acc, const T* p, int64_t w) {
  for (int64_t j = 0; j < w; ++j) {
    if constexpr (is_extremum(K) || K == Kind::Prod) acc[j] = combine<T, K>(acc[j], element_acc<T, K>(p[j]));
    else if constexpr (std::is_floating_point_v<T>) acc[j] += double(p[j]);
    else acc[j] += uint64_t(int64_t(p[j]));
  }
}

template <class T, Kind K>
T finish(Acc<T, K> s, int64_t count) {
  if constexpr (is_extremum(K)) {
    return s;
  } else if constexpr (std::is_floating_point_v<T>) {
    return T(K == Kind::Mean ? s / double(count) : s);
  } else {
    const int64_t v = int64_t(s);  // modular (C++20)
    return T(K == Kind::Mean ? v / count : v);
  }
}

// Number of segments to cut each unit's reduction of `work` elements into (Note [Reduction
// plan]): 1 when there are enough units, else enough to reach kTargetUnits, each segment
// keeping at least kElementGrain elements.
int64_t segments_for(int64_t units, int64_t work) {
  if (units >= kTargetUnits) return 1;
  return std::max<int64_t>(1, std::min(ceil_div(kTargetUnits, units), work / kElementGrain));
}

template <class T>
struct ReducePlan {
  const T* x;
  T* y;
  int64_t count;  // elements per output
  Parallel& parallel;
};

// Innermost group reduced: y[o] = sum over outer reduced combos of contiguous runs of rin.
template <class T, Kind K>
void reduce_rows(const ReducePlan<T>& p, const std::vector<Group>& kept, const std::vector<Group>& outer_red,
                 int64_t rin) {
  const int64_t outs = product(kept), total = product(outer_red) * rin;
  int64_t segs = segments_for(outs, total);
  const int64_t seg = ceil_div(total, segs);
  segs = ceil_div(total, seg);
  std::vector<Acc<T, K>> partial(size_t(segs > 1 ? outs * segs : 0));
  const int64_t grain = std::max<int64_t>(1, kElementGrain / seg);
  p.parallel.parallel_for(outs * segs, grain, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / segs, s = u % segs;
      const int64_t base = GroupCursor(kept, o).offset();
      int64_t f = s * seg;
      const int64_t f1 = std::min(total, f + seg);
      GroupCursor combo(outer_red, f / rin);
      int64_t col = f % rin;
      Acc<T, K> acc = identity<T, K>();
      while (f < f1) {
        const int64_t n = std::min(rin - col, f1 - f);
        acc = combine<T, K>(acc, run_reduce<T, K>(p.x + base + combo.offset() + col, n));
        f += n;
        col = 0;
        combo.next();
      }
      if (segs == 1) p.y[o] = finish<T, K>(acc, p.count);
      else partial[size_t(u)] = acc;
    }
  });
  for (int64_t o = 0; segs > 1 && o < outs; ++o) {
    Acc<T, K> acc = identity<T, K>();
    for (int64_t s = 0; s < segs; ++s) acc = combine<T, K>(acc, partial[size_t(o * segs + s)]);
    p.y[o] = finish<T, K>(acc, p.count);
  }
}

// Innermost group kept (kin contiguous columns): y[oo, j] = sum over reduced combos of
// x[oo, combo, j], tiles of columns accumulated in double.
template <class T, Kind K>
void reduce_columns(const ReducePlan<T>& p, const std::vector<Group>& kept_outer, const std::vector<Group>& red,
                    int64_t kin) {
  const int64_t oo_count = product(kept_outer), combos = product(red);
  const int64_t tiles = ceil_div(kin, kColumnTile), base_units = oo_count * tiles;
  int64_t segs = segments_for(base_units, combos * std::min(kin, kColumnTile));
  const int64_t seg = ceil_div(combos, segs);
  segs = ceil_div(combos, seg);
  std::vector<Acc<T, K>> partial(size_t(segs > 1 ? segs * oo_count * kin : 0));
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (seg * std::min(kin, kColumnTile)));
  p.parallel.parallel_for(base_units * segs, grain, [&](int64_t u0, int64_t u1) {
    Acc<T, K> acc[kColumnTile];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t s = u / base_units, bu = u % base_units, oo = bu / tiles;
      const int64_t j0 = (bu % tiles) * kColumnTile, w = std::min(kColumnTile, kin - j0);
      const int64_t base = GroupCursor(kept_outer, oo).offset() + j0;
      std::fill(acc, acc + w, identity<T, K>());
      const int64_t c1 = std::min(combos, (s + 1) * seg);
      GroupCursor combo(red, s * seg);
      for (int64_t c = s * seg; c < c1; ++c, combo.next()) column_accumulate<T, K>(acc, p.x + base + combo.offset(), w);
      const int64_t out = oo * kin + j0;
      if (segs == 1) {
        for (int64_t j = 0; j < w; ++j) p.y[out + j] = finish<T, K>(acc[j], p.count);
      } else {
        std::copy(acc, acc + w, partial.begin() + (s * oo_count * kin + out));
      }
    }
  });
  if (segs > 1) {
    const int64_t outs = oo_count * kin;
    p.parallel.parallel_for(outs, kElementGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        Acc<T, K> acc = identity<T, K>();
        for (int64_t s = 0; s < segs; ++s) acc = combine<T, K>(acc, partial[size_t(s * outs + i)]);
        p.y[i] = finish<T, K>(acc, p.count);
      }
    });
  }
}

template <class T, Kind K>
void reduce_typed(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out();
  if (y.numel() == 0) return;
  T* py = static_cast<T*>(y.raw());
  if (x.numel() == 0) {  // a sum or product over an empty axis (a mean over one is rejected by inference)
    std::fill(py, py + y.numel(), T(K == Kind::Prod ? 1 : 0));
    return;
  }
  const std::vector<int> axes = reduce_axes(a.node, x.shape(), a.has(1) ? &a.in(1) : nullptr);
  // Canonical groups (Note [Reduction plan]); `reduced` marks each group's kind.
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
  for (int i = 0; i < x.rank(); ++i) {
    const int64_t d = x.shape()[i];
    const bool r = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (d == 1) continue;
    if (!sizes.empty() && reduced.back() == r) sizes.back() *= d;
    else sizes.push_back(d), reduced.push_back(r);
  }
  const T* px = static_cast<const T*>(x.raw());
  const bool any_reduced = std::find(reduced.begin(), reduced.end(), true) != reduced.end();
  if (!any_reduced) {  // no axes (noop_with_empty_axes) or only size-1 axes: a copy
    std::memcpy(py, px, x.nbytes());
    return;
  }
  std::vector<Group> kept, red;
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    std::vector<Group>& dst = reduced[i] ? red : kept;
    dst.insert(dst.begin(), Group{sizes[i], stride});
    stride *= sizes[i];
  }
  const ReducePlan<T> plan{px, py, x.numel() / y.numel(), a.parallel};
  if (reduced.back()) {
    const int64_t rin = red.back().size;
    red.pop_back();
    reduce_rows<T, K>(plan, kept, red, rin);
  } else {
    const int64_t kin = kept.back().size;
    kept.pop_back();
    reduce_columns<T, K>(plan, kept, red, kin);
  }
}

template <Kind K>
void reduce_kernel(StaticKernelArgs& a) {
  switch (a.in(0).dtype()) {
    case DType::F32: reduce_typed<float, K>(a); return;
    case DType::I32: reduce_typed<int32_t, K>(a); return;
    case DType::I64: reduce_typed<int64_t, K>(a); return;
    case DType::F16:
    case DType::BF16: run_in_f32(a, +[](StaticKernelArgs& s) { reduce_typed<float, K>(s); }); return;
    default: unsupported_dtype(a.node, a.in(0).dtype());
  }
}

}  // namespace

void run_ReduceMean(StaticKernelArgs& a) { reduce_kernel<Kind::Mean>(a); }
void run_ReduceSum(StaticKernelArgs& a) { reduce_kernel<Kind::Sum>(a); }
void run_ReduceMax(StaticKernelArgs& a) { reduce_kernel<Kind::Max>(a); }
void run_ReduceMin(StaticKernelArgs& a) { reduce_kernel<Kind::Min>(a); }
void run_ReduceProd(StaticKernelArgs& a) { reduce_kernel<Kind::Prod>(a); }

}  // namespace fusor
