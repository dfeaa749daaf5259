#pragma once
// Test-only: random tensors with scrambled layouts (not installed).

#include <algorithm>
#include <random>
#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro::test_support {

/// Uniform random values in [low, high) of logical `shape`, stored with a random axis
/// order, maybe a step-2 slice of a larger buffer, maybe flipped on one axis.
inline Tensor strided_random(std::mt19937_64& rng, DType d, const Shape& shape, double low, double high) {
  const size_t rank = shape.size();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  if (rng() % 2) std::shuffle(perm.begin(), perm.end(), rng);
  Shape stored(rank);
  for (size_t i = 0; i < rank; ++i) stored[static_cast<size_t>(perm[i])] = shape[i];
  const bool step = rank > 0 && rng() % 4 == 0;
  const size_t step_axis = rank > 0 ? rng() % rank : 0;
  if (step) stored[step_axis] = stored[step_axis] * 2;
  Tensor t = Tensor::random_uniform(d, stored, rng(), low, high).value();
  if (step) t = t.slice(static_cast<int64_t>(step_axis), 0, stored[step_axis], 2).value();
  t = t.permute(perm).value();
  if (rank > 0 && rng() % 4 == 0) t = t.flip(static_cast<int64_t>(rng() % rank)).value();
  return t;
}

}  // namespace tenferro::test_support
