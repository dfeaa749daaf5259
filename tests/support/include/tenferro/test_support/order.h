#pragma once
// Test-only: an independent check of argsort results (not installed).

#include <cmath>
#include <string>
#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro::test_support {

/// "" when `order` (int64, x's shape) sorts every line of the real tensor `x` along `axis`
/// as numpy's stable argsort does: each line a permutation of 0..n-1, the values it picks
/// non-decreasing with NaN last, equal values (and NaNs) in increasing position;
/// otherwise a description of the first violation. Values are compared as doubles.
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
    double prev = 0;
    int64_t prev_pos = -1;
    for (int64_t j = 0; j < n; ++j) {
      idx[ax] = j;
      const int64_t p = order.get<int64_t>(idx).value();
      if (p < 0 || p >= n || seen[static_cast<size_t>(p)]) return "line " + std::to_string(line) + " is no permutation";
      seen[static_cast<size_t>(p)] = true;
      Shape src = idx;
      src[ax] = p;
      const double v = x.get_as_c128(src).value().real();
      if (j > 0) {
        const bool prev_nan = std::isnan(prev), nan = std::isnan(v);
        const bool ascending = prev_nan ? nan : (nan || prev <= v);
        const bool tie = prev_nan ? nan : prev == v;
        if (!ascending) return "line " + std::to_string(line) + " descends at " + std::to_string(j);
        if (tie && prev_pos > p)
          return "line " + std::to_string(line) + " reorders equal values at " + std::to_string(j);
      }
      prev = v;
      prev_pos = p;
    }
  }
  return "";
}

}  // namespace tenferro::test_support
