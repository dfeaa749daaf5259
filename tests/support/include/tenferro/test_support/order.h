#pragma once
// Test-only: an independent check of argsort results (not installed).

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro::test_support {

/// numpy's sort key of a value read as complex (reals have imaginary part 0): the NaN
/// class [R + Rj, R + nanj, nan + Rj, nan + nanj], then the non-NaN parts; keys compare as
/// tuples, equal keys are equal values (-0 and 0 included).
inline std::tuple<int, double, double> numpy_sort_key(c128 z) {
  const bool re_nan = std::isnan(z.real()), im_nan = std::isnan(z.imag());
  return {2 * re_nan + im_nan, re_nan ? 0.0 : z.real() + 0.0, im_nan ? 0.0 : z.imag() + 0.0};
}

/// "" when `order` (int64, x's shape) sorts every line of `x` along `axis` as numpy's
/// stable argsort does: each line a permutation of 0..n-1, the values it picks in
/// non-decreasing numpy_sort_key order, equal keys in increasing position; otherwise a
/// description of the first violation.
inline std::string check_argsort(const Tensor& x, const Tensor& order, int64_t axis) {
  if (order.dtype() != DType::kI64 || !(order.shape() == x.shape())) return "order has another dtype or shape";
  const Shape& shape = x.shape();
  const auto ax = static_cast<size_t>(axis);
  const int64_t n = shape[ax];
  if (x.numel() == 0) return "";
  for (int64_t line = 0; line < x.numel() / n; ++line) {
    Shape idx(shape.size(), 0);
    int64_t rest = line;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (k == ax) continue;
      idx[k] = rest % shape[k];
      rest /= shape[k];
    }
    std::vector<bool> seen(static_cast<size_t>(n), false);
    std::tuple<int, double, double> prev{};
    int64_t prev_pos = -1;
    for (int64_t j = 0; j < n; ++j) {
      idx[ax] = j;
      const int64_t p = order.get<int64_t>(idx).value();
      if (p < 0 || p >= n || seen[static_cast<size_t>(p)]) return "line " + std::to_string(line) + " is no permutation";
      seen[static_cast<size_t>(p)] = true;
      Shape src = idx;
      src[ax] = p;
      const auto key = numpy_sort_key(x.get_as_c128(src).value());
      if (j > 0 && key < prev) return "line " + std::to_string(line) + " descends at " + std::to_string(j);
      if (j > 0 && key == prev && prev_pos > p) {
        return "line " + std::to_string(line) + " reorders equal values at " + std::to_string(j);
      }
      prev = key;
      prev_pos = p;
    }
  }
  return "";
}

}  // namespace tenferro::test_support
