#include "tests/support/reference_indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/error.h"

namespace fusor::test::ref {

namespace {

std::vector<int64_t> unflat(const std::vector<int64_t>& dims, int64_t o) {
  std::vector<int64_t> idx(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    idx[i] = o % dims[i];
    o /= dims[i];
  }
  return idx;
}

int64_t flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}

void copy_elem(Tensor& dst, int64_t i, const Tensor& src, int64_t j) {
  const size_t e = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + i * int64_t(e), static_cast<const char*>(src.raw()) + j * int64_t(e), e);
}

int64_t index_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
}

}  // namespace

Tensor expand(const Tensor& x, const std::vector<int64_t>& shape) {
  const std::vector<int64_t>& xd = x.shape().dims();
  const size_t r = std::max(xd.size(), shape.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t a = i + xd.size() >= r ? xd[i + xd.size() - r] : 1;
    const int64_t b = i + shape.size() >= r ? shape[i + shape.size() - r] : 1;
    out[i] = a == 1 ? b : a;
  }
  Tensor y = Tensor::empty(x.dtype(), Shape(out));
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(out, o), src(xd.size());
    for (size_t i = 0; i < xd.size(); ++i) src[i] = xd[i] == 1 ? 0 : idx[i + r - xd.size()];
    copy_elem(y, o, x, flat(xd, src));
  }
  return y;
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) {
  const std::vector<int64_t>& xd = x.shape().dims();
  std::vector<int64_t> out(xd.size());
  for (size_t i = 0; i < xd.size(); ++i) out[i] = xd[i] * repeats[i];
  Tensor y = Tensor::empty(x.dtype(), Shape(out));
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(out, o);
    for (size_t i = 0; i < xd.size(); ++i) idx[i] %= xd[i];
    copy_elem(y, o, x, flat(xd, idx));
  }
  return y;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end, const std::string& mode,
           double value) {
  const std::vector<int64_t>& xd = x.shape().dims();
  std::vector<int64_t> out(xd.size());
  for (size_t i = 0; i < xd.size(); ++i) out[i] = xd[i] + begin[i] + end[i];
  Tensor y = Tensor::empty(x.dtype(), Shape(out));
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(out, o);
    bool inside = true;
    for (size_t i = 0; i < xd.size(); ++i) {
      int64_t j = idx[i] - begin[i];
      const int64_t n = xd[i];
      if (j < 0 || j >= n) {
        if (mode == "constant") inside = false;
        else if (mode == "edge") j = j < 0 ? 0 : n - 1;
        else if (mode == "wrap") j = ((j % n) + n) % n;
        else j = j < 0 ? -j : 2 * (n - 1) - j;
      }
      idx[i] = j;
    }
    if (inside) copy_elem(y, o, x, flat(xd, idx));
    else y.set(o, value);
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> d = x.shape().dims();
    d[size_t(axis)] = size;
    Tensor y = Tensor::empty(x.dtype(), Shape(d));
    for (int64_t o = 0; o < y.numel(); ++o) {
      std::vector<int64_t> idx = unflat(d, o);
      idx[size_t(axis)] += start;
      copy_elem(y, o, x, flat(x.shape().dims(), idx));
    }
    parts.push_back(y);
    start += size;
  }
  return parts;
}

Tensor gather_elements(const Tensor& x, const Tensor& index, int axis) {
  Tensor y = Tensor::empty(x.dtype(), index.shape());
  const int64_t dim = x.shape().dims()[size_t(axis)];
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(index.shape().dims(), o);
    int64_t k = index_at(index, o);
    idx[size_t(axis)] = k < 0 ? k + dim : k;
    copy_elem(y, o, x, flat(x.shape().dims(), idx));
  }
  return y;
}

Tensor gather_nd(const Tensor& x, const Tensor& index, int b) {
  const std::vector<int64_t>& xd = x.shape().dims();
  const std::vector<int64_t>& id = index.shape().dims();
  const int64_t k = id.back();
  std::vector<int64_t> out(id.begin(), id.end() - 1);
  out.insert(out.end(), xd.begin() + b + k, xd.end());
  Tensor y = Tensor::empty(x.dtype(), Shape(out));
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> oi = unflat(out, o);
    std::vector<int64_t> ti(oi.begin(), oi.begin() + int64_t(id.size()) - 1);  // which tuple
    std::vector<int64_t> tuple_dims(id.begin(), id.end() - 1);
    const int64_t t = flat(tuple_dims, ti);
    std::vector<int64_t> src(oi.begin(), oi.begin() + b);
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = index_at(index, t * k + j);
      src.push_back(v < 0 ? v + xd[size_t(b + j)] : v);
    }
    src.insert(src.end(), oi.begin() + int64_t(id.size()) - 1, oi.end());
    copy_elem(y, o, x, flat(xd, src));
  }
  return y;
}

Tensor trilu(const Tensor& x, int64_t k, bool upper) {
  Tensor y = Tensor::zeros(x.dtype(), x.shape());
  const std::vector<int64_t>& d = x.shape().dims();
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(d, o);
    const int64_t i = idx[d.size() - 2], j = idx[d.size() - 1];
    // Compared in double: k may be near the int64 limits.
    const double diff = double(j) - double(i);
    if (upper ? diff >= double(k) : diff <= double(k)) copy_elem(y, o, x, o);
  }
  return y;
}

Tensor cumsum(const Tensor& x, int axis, bool exclusive, bool reverse) {
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  const std::vector<int64_t>& d = x.shape().dims();
  const bool ints = x.dtype() == DType::I32 || x.dtype() == DType::I64;
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(d, o);
    const int64_t at = idx[size_t(axis)];
    double s = 0;
    uint64_t si = 0;
    for (int64_t j = 0; j < d[size_t(axis)]; ++j) {
      const bool take = reverse ? (exclusive ? j > at : j >= at) : (exclusive ? j < at : j <= at);
      if (!take) continue;
      idx[size_t(axis)] = j;
      const int64_t f = flat(d, idx);
      if (ints) si += uint64_t(x.dtype() == DType::I64 ? x.data<int64_t>()[f] : x.data<int32_t>()[f]);
      else s += x.at(f);
    }
    if (x.dtype() == DType::I64) y.data<int64_t>()[o] = int64_t(si);
    else if (x.dtype() == DType::I32) y.data<int32_t>()[o] = int32_t(int64_t(si));
    else y.set(o, s);
  }
  return y;
}

Tensor argmax(const Tensor& x, int axis, bool keepdims, bool select_last) {
  std::vector<int64_t> d = x.shape().dims(), out;
  for (size_t i = 0; i < d.size(); ++i)
    if (int(i) != axis) out.push_back(d[i]);
    else if (keepdims) out.push_back(1);
  Tensor y = Tensor::empty(DType::I64, Shape(out));
  std::vector<int64_t> rest = d;
  rest[size_t(axis)] = 1;
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<int64_t> idx = unflat(rest, o);
    int64_t best = -1;
    double bv = 0;
    for (int64_t j = 0; j < d[size_t(axis)]; ++j) {
      idx[size_t(axis)] = j;
      const int64_t f = flat(d, idx);
      // Exact integers: compare as long double would be needed past 2^53; the tests keep
      // i64 values small.
      const double v = x.at(f);
      const bool better = best < 0 || (std::isnan(bv) ? (select_last && std::isnan(v))
                                                       : std::isnan(v) || (select_last ? v >= bv : v > bv));
      if (better) best = j, bv = v;
    }
    y.data<int64_t>()[o] = best;
  }
  return y;
}

namespace {

double combined(const std::string& r, double a, double b) {
  if (r == "add") return a + b;
  if (r == "mul") return a * b;
  if (r == "max") return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  if (r == "min") return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  return b;
}

}  // namespace

Tensor scatter_elements(const Tensor& x, const Tensor& index, const Tensor& updates, int axis, const std::string& reduction) {
  Tensor y = x.clone();
  const int64_t dim = x.shape().dims()[size_t(axis)];
  for (int64_t u = 0; u < index.numel(); ++u) {
    std::vector<int64_t> idx = unflat(index.shape().dims(), u);
    const int64_t k = index_at(index, u);
    idx[size_t(axis)] = k < 0 ? k + dim : k;
    const int64_t at = flat(x.shape().dims(), idx);
    y.set(at, combined(reduction, y.at(at), updates.at(u)));
  }
  return y;
}

Tensor scatter_nd(const Tensor& x, const Tensor& index, const Tensor& updates, const std::string& reduction) {
  Tensor y = x.clone();
  const std::vector<int64_t>& xd = x.shape().dims();
  const int64_t k = index.shape().dims().back(), tuples = index.numel() / k;
  std::vector<int64_t> tail(xd.begin() + k, xd.end());
  const int64_t block = Shape(tail).numel();
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t e = 0; e < block; ++e) {
      std::vector<int64_t> idx;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t v = index_at(index, t * k + j);
        idx.push_back(v < 0 ? v + xd[size_t(j)] : v);
      }
      const std::vector<int64_t> rest = unflat(tail, e);
      idx.insert(idx.end(), rest.begin(), rest.end());
      const int64_t at = flat(xd, idx);
      y.set(at, combined(reduction, y.at(at), updates.at(t * block + e)));
    }
  return y;
}

std::vector<Tensor> topk(const Tensor& x, int axis, int64_t k, bool largest) {
  std::vector<int64_t> d = x.shape().dims(), out = d;
  out[size_t(axis)] = k;
  Tensor values = Tensor::empty(x.dtype(), Shape(out)), indices = Tensor::empty(DType::I64, Shape(out));
  std::vector<int64_t> rest = d;
  rest[size_t(axis)] = 1;
  for (int64_t o = 0; o < Shape(rest).numel(); ++o) {
    std::vector<int64_t> idx = unflat(rest, o);
    std::vector<std::pair<double, int64_t>> line;
    for (int64_t j = 0; j < d[size_t(axis)]; ++j) {
      idx[size_t(axis)] = j;
      line.push_back({x.at(flat(d, idx)), j});
    }
    // NaN above every number; a stable sort keeps equal values in index order.
    std::stable_sort(line.begin(), line.end(), [&](const auto& a, const auto& b) {
      const bool na = std::isnan(a.first), nb = std::isnan(b.first);
      if (na || nb) return na != nb && (largest ? na : nb);
      return largest ? a.first > b.first : a.first < b.first;
    });
    for (int64_t r = 0; r < k; ++r) {
      idx[size_t(axis)] = r;
      const int64_t at = flat(out, idx);
      values.set(at, line[size_t(r)].first);
      indices.data<int64_t>()[at] = line[size_t(r)].second;
    }
  }
  return {values, indices};
}

}  // namespace fusor::test::ref
