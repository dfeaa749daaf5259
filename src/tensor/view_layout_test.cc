// Every view op against a naive index-mapping oracle on random strided layouts: ranks
// 0-10, negative and zero strides, empty dimensions. The base tensor's storage holds
// its own positions (storage[i] = i), so a value read through a view names exactly the
// storage element the view maps to.

#include <gtest/gtest.h>

#include "tenferro/test_support/index.h"

#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro {
namespace {

using test_support::for_each_index;
using test_support::Index;


// Asserts view[idx] == base[map(idx)] for every index of `view`.
void expect_maps(const Tensor& base, const Tensor& view, const std::function<Index(const Index&)>& map,
                 const char* what) {
  ASSERT_TRUE(view.shares_storage_with(base)) << what;
  int failures = 0;
  for_each_index(view.shape(), [&](const Index& idx) {
    if (failures > 3) return;
    const Index src = map(idx);
    auto got = view.get<double>(idx);
    auto want = base.get<double>(src);
    if (!got.has_value() || !want.has_value() || *got != *want) {
      ++failures;
      ADD_FAILURE() << what << ": view " << format_dims(idx) << " vs base " << format_dims(src) << " base shape "
                    << format_dims(base.shape()) << " strides " << format_dims(base.strides()) << " view strides "
                    << format_dims(view.strides());
    }
  });
}

// A random strided view over a storage of positions: rank 0..max_rank, extents 0..3
// (bounded total size), strides in [-4, 4] including 0.
Tensor random_base(std::mt19937_64& rng, int max_rank) {
  const size_t rank = rng() % static_cast<uint64_t>(max_rank + 1);
  Shape shape;
  Strides strides;
  int64_t total = 1;
  for (size_t k = 0; k < rank; ++k) {
    int64_t e = static_cast<int64_t>(rng() % 4);
    if (rng() % 10 != 0 && e == 0) e = 1 + static_cast<int64_t>(rng() % 3);  // empty axes ~10%
    if (total * std::max<int64_t>(e, 1) > 2048) e = 1;
    total *= std::max<int64_t>(e, 1);
    shape.push_back(e);
    strides.push_back(static_cast<int64_t>(rng() % 9) - 4);
  }
  Layout probe{shape, strides, 0};
  auto range = reachable_range(probe).value();
  const int64_t offset = range.empty ? 0 : -range.min;
  const int64_t capacity = (range.empty ? 0 : range.max - range.min + 1) + static_cast<int64_t>(rng() % 3) + 1;
  Tensor storage = Tensor::arange(DType::kF64, capacity).value();
  return storage.as_strided(shape, strides, offset).value();
}

class ViewOracle : public ::testing::Test {
 protected:
  std::mt19937_64 rng{2024};
  int64_t pick(int64_t n) { return n <= 0 ? 0 : static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); }
};

TEST_F(ViewOracle, Permute) {
  for (int trial = 0; trial < 400; ++trial) {
    Tensor b = random_base(rng, 10);
    Index perm(static_cast<size_t>(b.rank()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    Tensor v = b.permute(perm).value();
    expect_maps(b, v, [&](const Index& idx) {
      Index src(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) src[static_cast<size_t>(perm[i])] = idx[i];
      return src;
    }, "permute");
    Tensor t = b.transpose().value();
    expect_maps(b, t, [&](const Index& idx) { return Index(idx.rbegin(), idx.rend()); }, "transpose");
  }
}

TEST_F(ViewOracle, SliceAnyStep) {
  int non_empty = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Tensor b = random_base(rng, 10);
    if (b.rank() == 0) continue;
    const int64_t axis = pick(b.rank());
    const int64_t n = b.dim(axis);
    int64_t step = pick(7) - 3;
    if (step == 0) step = 1;
    int64_t start = 0;
    int64_t stop = 0;
    if (step > 0) {
      start = pick(n + 1);
      stop = start + pick(n - start + 1);
    } else {
      start = n == 0 ? -1 : pick(n);
      stop = start - pick(start + 2);  // down to -1
      if (n == 0) stop = start;
    }
    auto r = b.slice(axis, start, stop, step);
    ASSERT_TRUE(r.has_value()) << r.error().to_string();
    Tensor v = *r;
    const int64_t expected_count = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / (-step);
    ASSERT_EQ(v.dim(axis), expected_count);
    non_empty += v.numel() > 0;
    expect_maps(b, v, [&](const Index& idx) {
      Index src = idx;
      src[static_cast<size_t>(axis)] = start + idx[static_cast<size_t>(axis)] * step;
      return src;
    }, "slice");
  }
  EXPECT_GT(non_empty, 200);
}

// Steps up to the int64 limits (numpy allows any): one element per slice, counted and
// placed without overflow, against the same oracle.
TEST_F(ViewOracle, SliceHugeSteps) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const int64_t steps[] = {kMax, kMax - 1, int64_t{1} << 62, kMin, kMin + 1, -(int64_t{1} << 62)};
  int checked = 0;
  for (int trial = 0; trial < 100; ++trial) {
    Tensor b = random_base(rng, 10);
    if (b.rank() == 0) continue;
    const int64_t axis = pick(b.rank());
    const int64_t n = b.dim(axis);
    for (const int64_t step : steps) {
      const int64_t start = step > 0 ? pick(n + 1) : (n == 0 ? -1 : pick(n));
      const int64_t stop = step > 0 ? n : -1;
      auto r = b.slice(axis, start, stop, step);
      ASSERT_TRUE(r.has_value()) << r.error().to_string();
      // |step| >= 2^62 exceeds every span here: one element where the range is not empty.
      const int64_t span = step > 0 ? stop - start : start - stop;
      ASSERT_EQ(r->dim(axis), span > 0 ? 1 : 0) << "step " << step << " start " << start;
      expect_maps(
          b, *r,
          [&](const Index& idx) {
            Index src = idx;
            src[static_cast<size_t>(axis)] = start;  // at most one element
            return src;
          },
          "huge-step slice");
      checked += r->numel() > 0;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST_F(ViewOracle, SelectAndFlip) {
  for (int trial = 0; trial < 400; ++trial) {
    Tensor b = random_base(rng, 10);
    if (b.rank() == 0) continue;
    const int64_t axis = pick(b.rank());
    Tensor f = b.flip(axis).value();
    expect_maps(b, f, [&](const Index& idx) {
      Index src = idx;
      src[static_cast<size_t>(axis)] = b.dim(axis) - 1 - idx[static_cast<size_t>(axis)];
      return src;
    }, "flip");
    if (b.dim(axis) == 0) continue;
    const int64_t at = pick(b.dim(axis));
    Tensor s = b.select(axis, at).value();
    ASSERT_EQ(s.rank(), b.rank() - 1);
    expect_maps(b, s, [&](const Index& idx) {
      Index src = idx;
      src.insert(src.begin() + axis, at);
      return src;
    }, "select");
  }
}

TEST_F(ViewOracle, DiagonalOverRepeatedAxes) {
  int done = 0;
  for (int trial = 0; trial < 2000 && done < 300; ++trial) {
    Tensor b = random_base(rng, 10);
    if (b.rank() < 2) continue;
    // Pick 2..4 distinct axes and force equal extents by slicing them to the minimum.
    Index axes(static_cast<size_t>(b.rank()));
    for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    std::shuffle(axes.begin(), axes.end(), rng);
    axes.resize(static_cast<size_t>(std::min<int64_t>(b.rank(), 2 + pick(3))));
    int64_t m = b.dim(axes[0]);
    for (int64_t a : axes) m = std::min(m, b.dim(a));
    Tensor sq = b;
    for (int64_t a : axes) sq = sq.slice(a, 0, m).value();
    Tensor d = sq.diagonal(axes).value();
    ASSERT_EQ(d.rank(), sq.rank() - static_cast<int64_t>(axes.size()) + 1);
    expect_maps(sq, d, [&](const Index& idx) {
      // Result axes: the source axes in order, with the diagonal axes collapsed into
      // one at the position of axes[0].
      Index src(static_cast<size_t>(sq.rank()));
      size_t r = 0;
      for (int64_t k = 0; k < sq.rank(); ++k) {
        const bool in = std::find(axes.begin(), axes.end(), k) != axes.end();
        if (k == axes[0]) {
          for (int64_t a : axes) src[static_cast<size_t>(a)] = idx[r];
          ++r;
        } else if (!in) {
          src[static_cast<size_t>(k)] = idx[r++];
        }
      }
      return src;
    }, "diagonal");
    ++done;
  }
  EXPECT_GE(done, 300);
}

TEST_F(ViewOracle, BroadcastUsesStrideZero) {
  for (int trial = 0; trial < 400; ++trial) {
    Tensor b = random_base(rng, 8);
    // Target: 0-2 new leading axes; each extent-1 axis may grow.
    const int64_t lead = pick(3);
    Shape target;
    for (int64_t k = 0; k < lead; ++k) target.push_back(1 + pick(3));
    for (int64_t k = 0; k < b.rank(); ++k) target.push_back(b.dim(k) == 1 ? 1 + pick(3) : b.dim(k));
    if (element_count(target.span()) > 20000) continue;
    Tensor v = b.broadcast_to(target).value();
    for (int64_t k = 0; k < lead; ++k) EXPECT_EQ(v.strides()[static_cast<size_t>(k)], 0);
    expect_maps(b, v, [&](const Index& idx) {
      Index src(static_cast<size_t>(b.rank()));
      for (int64_t k = 0; k < b.rank(); ++k) {
        src[static_cast<size_t>(k)] = b.dim(k) == 1 ? 0 : idx[static_cast<size_t>(k + lead)];
      }
      return src;
    }, "broadcast_to");
  }
}

// Column-major unravel/ravel used by the reshape oracle.
Index unravel(int64_t lin, const Shape& shape) {
  Index idx(shape.size());
  for (size_t k = 0; k < shape.size(); ++k) {
    idx[k] = lin % shape[k];
    lin /= shape[k];
  }
  return idx;
}
int64_t ravel(const Index& idx, const Shape& shape) {
  int64_t lin = 0;
  for (size_t k = shape.size(); k-- > 0;) lin = lin * shape[k] + idx[k];
  return lin;
}

// Random factorization of the element count into up to 5 extents.
Shape random_reshape_target(std::mt19937_64& rng, int64_t n) {
  Shape out;
  int64_t rest = n;
  while (rest > 1 && out.size() < 5) {
    std::vector<int64_t> divisors;
    for (int64_t d = 2; d <= rest; ++d) {
      if (rest % d == 0) divisors.push_back(d);
    }
    const int64_t d = divisors[rng() % divisors.size()];
    out.push_back(d);
    rest /= d;
    if (rng() % 4 == 0) out.push_back(1);
  }
  if (rest > 1) out.push_back(rest);
  if (n == 0) out = Shape{0, 1 + static_cast<int64_t>(rng() % 3)};
  return out;
}

TEST_F(ViewOracle, ReshapeViewOrTypedErrorThenCopy) {
  int views = 0;
  int refused = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Tensor b = random_base(rng, 8);
    const Shape target = random_reshape_target(rng, b.numel());
    auto r = b.reshape(target);
    auto oracle = [&](const Index& idx) { return unravel(ravel(idx, target), b.shape()); };
    if (r.has_value()) {
      ++views;
      ASSERT_EQ(r->shape(), target);
      expect_maps(b, *r, oracle, "reshape");
    } else {
      ++refused;
      ASSERT_EQ(r.error().code(), ErrorCode::kIncompatibleLayout) << r.error().to_string();
      EXPECT_FALSE(b.is_contiguous()) << "a compact tensor must always reshape";
      // Exact oracle for "no view exists": the only candidate strides are the position
      // differences along unit indices; a refusal is right only if they fail somewhere.
      ASSERT_GT(b.numel(), 0);
      auto pos = [&](const Index& idx) { return checked_offset(b.layout(), oracle(idx)).value(); };
      const Index zero(target.size(), 0);
      Strides cand(target.size(), 0);
      for (size_t k = 0; k < target.size(); ++k) {
        if (target[k] > 1) {
          Index unit = zero;
          unit[k] = 1;
          cand[k] = pos(unit) - pos(zero);
        }
      }
      bool view_exists = true;
      for_each_index(target, [&](const Index& idx) {
        int64_t p = pos(zero);
        for (size_t k = 0; k < idx.size(); ++k) p += idx[k] * cand[k];
        view_exists = view_exists && p == pos(idx);
      });
      EXPECT_FALSE(view_exists) << "reshape refused a possible view: " << format_dims(b.shape()) << " strides "
                                << format_dims(b.strides()) << " -> " << format_dims(target);
      Tensor c = b.reshape_copy(target).value();
      ASSERT_EQ(c.shape(), target);
      for_each_index(c.shape(), [&](const Index& idx) {
        EXPECT_EQ(c.get<double>(idx).value(), b.get<double>(oracle(idx)).value());
      });
    }
    // Compact inputs always succeed, splitting one axis always succeeds.
    Tensor compact = b.contiguous().value();
    EXPECT_TRUE(compact.reshape(target).has_value());
  }
  EXPECT_GT(views, 100);
  EXPECT_GT(refused, 20);
  // -1 inference.
  Tensor a = Tensor::arange(DType::kF64, 24).value();
  EXPECT_EQ(a.reshape({2, -1, 3}).value().shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(a.reshape({-1, -1}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(a.reshape({5, -1}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(a.reshape({5, 5}).error().code(), ErrorCode::kInvalidShape);
}

TEST_F(ViewOracle, SplittingAnAxisOfAnyStrideIsAView) {
  Tensor a = Tensor::arange(DType::kF64, 200).value();
  Tensor v = a.slice(0, 190, -1, -3).value();  // 64 elements, stride -3
  ASSERT_EQ(v.numel(), 64);
  Tensor s = v.reshape({4, 16}).value();
  expect_maps(v, s, [&](const Index& idx) { return Index{idx[0] + 4 * idx[1]}; }, "split");
}

TEST_F(ViewOracle, ChainsOfViews) {
  for (int trial = 0; trial < 300; ++trial) {
    Tensor b = random_base(rng, 10);
    Tensor cur = b;
    for (int step = 0; step < 4 && cur.rank() > 0; ++step) {
      const int64_t axis = pick(cur.rank());
      Tensor next;
      switch (rng() % 3) {
        case 0: next = cur.flip(axis).value(); break;
        case 1: next = cur.transpose().value(); break;
        default: next = cur.slice(axis, 0, cur.dim(axis), 1 + pick(2)).value(); break;
      }
      // Check the whole chain against the base via values: every value of the view is
      // a storage position, which must equal the layout's own position computation.
      for_each_index(next.shape(), [&](const Index& idx) {
        const int64_t pos = checked_offset(next.layout(), idx).value();
        EXPECT_EQ(next.get<double>(idx).value(), static_cast<double>(pos));
      });
      cur = next;
    }
  }
}

TEST(ComplexViews, RealAndImagShareStorage) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    Tensor z = Tensor::random_normal(DType::kC128, {3, 4, 2}, trial).value();
    Tensor p = z.permute({2, 0, 1}).value().flip(1).value();
    Tensor re = p.real().value();
    Tensor im = p.imag().value();
    ASSERT_EQ(re.dtype(), DType::kF64);
    ASSERT_TRUE(re.shares_storage_with(z));
    for_each_index(p.shape(), [&](const Index& idx) {
      const c128 v = p.get<c128>(idx).value();
      EXPECT_EQ(re.get<double>(idx).value(), v.real());
      EXPECT_EQ(im.get<double>(idx).value(), v.imag());
    });
  }
  Tensor c = Tensor::random_normal(DType::kC64, {5}, 1).value();
  EXPECT_EQ(c.imag().value().dtype(), DType::kF32);
  EXPECT_EQ(Tensor::zeros(DType::kF64, {2}).value().real().error().code(), ErrorCode::kDTypeMismatch);
}

TEST(ViewErrors, TypedAndNamed) {
  Tensor a = Tensor::zeros(DType::kF64, {2, 3, 4}).value();
  auto e1 = a.permute({0, 1});
  EXPECT_EQ(e1.error().code(), ErrorCode::kInvalidPermutation);
  EXPECT_EQ(e1.error().op(), "permute");
  EXPECT_EQ(a.permute({0, 1, 3}).error().code(), ErrorCode::kInvalidPermutation);
  EXPECT_EQ(a.permute({2, 2, 0}).error().code(), ErrorCode::kInvalidPermutation);
  EXPECT_EQ(a.slice(3, 0, 1).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.slice(1, 0, 4).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.slice(1, 2, 1).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.slice(1, 3, 0, -1).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.slice(1, 0, 2, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.select(2, 4).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.select(-1, 0).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.diagonal({0, 1}).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(a.diagonal({0}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.diagonal({1, 1}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.broadcast_to({2, 5, 4}).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(a.broadcast_to({3, 4}).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(a.flip(3).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.as_strided({10}, {3}, 0).error().code(), ErrorCode::kInvalidLayout);
  EXPECT_EQ(a.as_strided({2}, {-1}, 0).error().code(), ErrorCode::kInvalidLayout);
  EXPECT_EQ(a.as_strided({2, 2}, {1}, 0).error().code(), ErrorCode::kInvalidLayout);
  // Messages name the offending values.
  EXPECT_NE(a.slice(1, 0, 4).error().message().find("extent 3"), std::string::npos);
}

}  // namespace
}  // namespace tenferro
