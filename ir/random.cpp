#include "ir/random.h"

#include <cmath>
#include <numbers>

#include "ir/attribute.h"

namespace fusor {

uint64_t random_bits(uint64_t seed, uint64_t counter) {
  // splitmix64 over a seed-dependent stream: fast, stateless and well mixed.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {
// Uniform in (0, 1): 53 random bits, never exactly 0.
double unit(uint64_t seed, uint64_t counter) {
  return (double(random_bits(seed, counter) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
}  // namespace

std::string RandomRecipe::str() const {
  switch (kind) {
    case Kind::Normal:
      return "randn(seed=" + std::to_string(seed) + ", std=" + format_double(b) +
             (a != 0 ? ", mean=" + format_double(a) : std::string()) + ")";
    case Kind::Uniform:
      return "uniform(seed=" + std::to_string(seed) + ", low=" + format_double(a) + ", high=" + format_double(b) + ")";
    case Kind::Fill: return "fill(" + format_double(a) + ")";
  }
  return "?";
}

Tensor make_random(DType dtype, const Shape& shape, const RandomRecipe& r) {
  Tensor t = Tensor::empty(dtype, shape);
  int64_t n = t.numel();
  if (dtype == DType::F32 && r.kind == RandomRecipe::Kind::Normal) {  // the common case, kept fast
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      // Box-Muller on two independent uniforms of element i.
      double u1 = unit(r.seed, uint64_t(2 * i)), u2 = unit(r.seed, uint64_t(2 * i + 1));
      p[i] = float(r.a + r.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
    }
    return t;
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = r.a;
    if (r.kind == RandomRecipe::Kind::Normal) {
      double u1 = unit(r.seed, uint64_t(2 * i)), u2 = unit(r.seed, uint64_t(2 * i + 1));
      v = r.a + r.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    } else if (r.kind == RandomRecipe::Kind::Uniform) {
      v = r.a + (r.b - r.a) * unit(r.seed, uint64_t(i));
    }
    t.set(i, v);
  }
  return t;
}

}  // namespace fusor
