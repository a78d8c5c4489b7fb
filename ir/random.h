// Seeded, counter-based random tensors: element i depends only on (seed, i), so the same
// recipe gives bit-identical data on every machine, in any thread order. Used for the
// text format's randn/uniform constants, the CLI's random inputs, tests and benchmarks.
// Layer: ir (std only).
#pragma once

#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace fusor {

/// How to generate a constant: normal(mean, std), uniform[low, high), or a fill value.
struct RandomRecipe {
  enum class Kind : uint8_t { Normal, Uniform, Fill };
  Kind kind = Kind::Normal;
  uint64_t seed = 0;
  double a = 0;  ///< mean (Normal), low (Uniform), value (Fill)
  double b = 1;  ///< std (Normal), high (Uniform)

  static RandomRecipe normal(uint64_t seed, double std, double mean = 0) { return {Kind::Normal, seed, mean, std}; }
  static RandomRecipe uniform(uint64_t seed, double low, double high) { return {Kind::Uniform, seed, low, high}; }
  static RandomRecipe fill(double value) { return {Kind::Fill, 0, value, 0}; }

  /// The text format's spelling: "randn(seed=1, std=0.02)", "uniform(seed=2, low=-1.0,
  /// high=1.0)", "fill(1.0)". Parsing it gives back an equal recipe.
  std::string str() const;
};

/// Generates a tensor of the given type from a recipe. Integer dtypes round toward zero;
/// bool is value != 0.
Tensor make_random(DType dtype, const Shape& shape, const RandomRecipe& recipe);

/// A 64-bit mix of (seed, counter): the generator underneath make_random.
uint64_t random_bits(uint64_t seed, uint64_t counter);

}  // namespace fusor
