#include "tenferro/core/shape.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>
#include <vector>

namespace tenferro {
namespace {

TEST(Shape, ElementCountAndValidation) {
  EXPECT_EQ(checked_element_count({}).value(), 1);
  EXPECT_EQ(checked_element_count({2, 3, 4}).value(), 24);
  EXPECT_EQ(checked_element_count({2, 0, 4}).value(), 0);
  auto neg = checked_element_count({2, -1});
  ASSERT_FALSE(neg);
  EXPECT_EQ(neg.error().code(), ErrorCode::kInvalidShape);
  EXPECT_NE(neg.error().message().find("-1"), std::string::npos);
  const int64_t big = int64_t{1} << 40;
  auto over = checked_element_count({big, big});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kOverflow);
  // A zero extent makes an otherwise overflowing product valid.
  EXPECT_EQ(checked_element_count({big, big, 0}).value(), 0);
  auto bytes = checked_byte_count({int64_t{1} << 60}, DType::kC128);
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(checked_byte_count({3, 5}, DType::kC64).value(), 120);
}

TEST(Shape, CompactStrides) {
  EXPECT_EQ(col_major_strides({2, 3, 4}), (Strides{1, 2, 6}));
  EXPECT_EQ(row_major_strides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(col_major_strides({2, 0, 4}), (Strides{1, 2, 2}));
  EXPECT_TRUE(col_major_strides({}).empty());
  Layout l = Layout::col_major({3, 1, 5});
  EXPECT_TRUE(is_col_major_contiguous(l));
  l.strides[1] = 999;  // strides of extent-1 axes do not matter
  EXPECT_TRUE(is_col_major_contiguous(l));
  EXPECT_FALSE(is_row_major_contiguous(l));
  EXPECT_TRUE(is_row_major_contiguous(Layout{Shape{3, 5}, Strides{5, 1}, 7}));
}

TEST(Shape, ReachableRangeWithNegativeAndZeroStrides) {
  Layout l{Shape{3, 4}, Strides{-2, 0}, 10};
  auto r = reachable_range(l).value();
  EXPECT_FALSE(r.empty);
  EXPECT_EQ(r.min, 6);
  EXPECT_EQ(r.max, 10);
  EXPECT_TRUE(validate_layout(l, 11).has_value());
  auto bad = validate_layout(l, 10);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidLayout);
  Layout below{Shape{3}, Strides{-1}, 1};
  EXPECT_EQ(validate_layout(below, 100).error().code(), ErrorCode::kInvalidLayout);
  // Empty layouts reach nothing: only the offset is bounded.
  Layout empty{Shape{0, 5}, Strides{1000, 1000}, 3};
  EXPECT_TRUE(reachable_range(empty).value().empty);
  EXPECT_TRUE(validate_layout(empty, 3).has_value());
  EXPECT_FALSE(validate_layout(Layout{Shape{0}, Strides{1}, 4}, 3).has_value());
  // Rank 0: one element at the offset.
  EXPECT_TRUE(validate_layout(Layout{Shape{}, Strides{}, 2}, 3).has_value());
  EXPECT_FALSE(validate_layout(Layout{Shape{}, Strides{}, 3}, 3).has_value());
  // Overflow of reachable offsets.
  Layout huge{Shape{4}, Strides{std::numeric_limits<int64_t>::max() / 2}, 0};
  EXPECT_EQ(validate_layout(huge, 10).error().code(), ErrorCode::kOverflow);
  // Rank mismatch.
  EXPECT_EQ(validate_layout(Layout{Shape{2, 2}, Strides{1}, 0}, 10).error().code(), ErrorCode::kInvalidLayout);
}

// Brute force: enumerate every position of a small layout.
bool injective_brute(const Layout& l) {
  std::set<int64_t> seen;
  const int64_t n = l.element_count();
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t rem = lin;
    int64_t pos = l.offset;
    for (size_t k = 0; k < l.shape.size(); ++k) {
      pos += (rem % l.shape[k]) * l.strides[k];
      rem /= l.shape[k];
    }
    if (!seen.insert(pos).second) return false;
  }
  return true;
}

TEST(Shape, InjectivityIsSoundAgainstBruteForce) {
  std::mt19937_64 rng(7);
  int proven = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t rank = rng() % 5;
    Layout l;
    for (size_t k = 0; k < rank; ++k) {
      l.shape.push_back(static_cast<int64_t>(rng() % 4));
      l.strides.push_back(static_cast<int64_t>(rng() % 13) - 6);
    }
    l.offset = 100;
    const bool claim = is_injective(l);
    if (claim) {
      ++proven;
      EXPECT_TRUE(injective_brute(l)) << format_dims(l.shape) << " " << format_dims(l.strides);
    }
  }
  EXPECT_GT(proven, 300);
  // Compact layouts, permuted or flipped, are always proven.
  EXPECT_TRUE(is_injective(Layout{Shape{3, 4, 5}, Strides{20, -5, 1}, 60}));
  EXPECT_FALSE(is_injective(Layout{Shape{3, 2}, Strides{1, 0}, 0}));
}

TEST(Shape, CheckedOffset) {
  Layout l{Shape{2, 3}, Strides{3, -1}, 2};
  EXPECT_EQ(checked_offset(l, {1, 2}).value(), 3);
  EXPECT_EQ(checked_offset(l, {0, 0}).value(), 2);
  EXPECT_EQ(checked_offset(l, {2, 0}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(checked_offset(l, {0, -1}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(checked_offset(l, {0}).error().code(), ErrorCode::kInvalidShape);
}

TEST(Shape, FormatDims) {
  EXPECT_EQ(format_dims({}), "[]");
  EXPECT_EQ(format_dims({2, -3}), "[2, -3]");
}

}  // namespace
}  // namespace tenferro
