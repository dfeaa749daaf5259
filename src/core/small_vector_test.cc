#include "tenferro/core/small_vector.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tenferro {
namespace {

using SV = SmallVector<int64_t, 4>;

void expect_same(const SV& a, const std::vector<int64_t>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(SmallVector, InlineUpToCapacityThenSpills) {
  SV v{1, 2, 3, 4};
  EXPECT_TRUE(v.is_inline());
  v.push_back(5);
  EXPECT_FALSE(v.is_inline());
  expect_same(v, {1, 2, 3, 4, 5});
  SV copy = v;
  expect_same(copy, {1, 2, 3, 4, 5});
  SV moved = std::move(copy);
  expect_same(moved, {1, 2, 3, 4, 5});
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
}

TEST(SmallVector, RandomOperationsMatchStdVector) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    SV a;
    std::vector<int64_t> b;
    for (int step = 0; step < 40; ++step) {
      const int op = static_cast<int>(rng() % 6);
      const int64_t value = static_cast<int64_t>(rng() % 100);
      if (op <= 1) {
        a.push_back(value);
        b.push_back(value);
      } else if (op == 2 && !b.empty()) {
        const size_t pos = rng() % b.size();
        a.erase(pos);
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos));
      } else if (op == 3) {
        const size_t pos = b.empty() ? 0 : rng() % (b.size() + 1);
        a.insert(pos, value);
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), value);
      } else if (op == 4) {
        const size_t n = rng() % 10;
        a.resize(n, value);
        b.resize(n, value);
      } else {
        SV c = a;  // copy-assign round trip
        a = c;
      }
      expect_same(a, b);
    }
  }
}

}  // namespace
}  // namespace tenferro
