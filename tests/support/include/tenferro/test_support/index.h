#pragma once
// Test-only helpers shared by the suites (not installed).

#include <cstdint>
#include <functional>
#include <vector>

#include "tenferro/core/shape.h"

namespace tenferro::test_support {

using Index = std::vector<int64_t>;

/// Calls `f(index)` for every multi-index of `shape`, axis 0 fastest.
inline void for_each_index(const Shape& shape, const std::function<void(const Index&)>& f) {
  const int64_t n = element_count(shape);
  Index idx(shape.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t rem = lin;
    for (size_t k = 0; k < shape.size(); ++k) {
      idx[k] = rem % shape[k];
      rem /= shape[k];
    }
    f(idx);
  }
}

}  // namespace tenferro::test_support
