// Indexing kernels against naive index arithmetic on strided inputs, every dtype.

#include "tenferro/cpu/indexing.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tenferro/cpu/elementwise.h"
#include "tenferro/test_support/index.h"
#include "tenferro/test_support/order.h"

namespace tenferro::cpu {
namespace {

using test_support::for_each_index;
using test_support::Index;


// A strided (flipped, permuted) tensor of `shape` with random values.
Tensor strided(std::mt19937_64& rng, DType d, const Shape& shape) {
  const size_t r = shape.size();
  Shape rev;
  for (size_t k = r; k-- > 0;) rev.push_back(shape[k]);
  Tensor t = Tensor::random_uniform(d, rev, rng(), -5, 5).value().transpose().value();
  if (r > 0) t = t.flip(static_cast<int64_t>(rng() % r)).value();
  return t;
}

class Indexing : public ::testing::TestWithParam<DType> {
 protected:
  std::mt19937_64 rng{static_cast<uint64_t>(GetParam()) + 99};
  CpuExecutionContext ctx = CpuExecutionContext(nullptr, ParallelMode::kSequential, 1);
};

TEST_P(Indexing, SliceAndDynamicSlices) {
  const DType d = GetParam();
  Tensor x = strided(rng, d, {7, 5, 3});
  Tensor s = slice(ctx, x, {1, 0, 2}, {7, 5, 3}, {2, 3, 1}).value();
  ASSERT_EQ(s.shape(), (Shape{3, 2, 1}));
  for_each_index(s.shape(), [&](const Index& i) {
    EXPECT_EQ(s.get_as_c128(i).value(), x.get_as_c128({1 + 2 * i[0], 3 * i[1], 2}).value());
  });
  // Clamped start: 6 -> 7 - 3 = 4.
  Tensor ds = dynamic_slice(ctx, x, {6, -2, 1}, {3, 2, 2}).value();
  for_each_index(ds.shape(), [&](const Index& i) {
    EXPECT_EQ(ds.get_as_c128(i).value(), x.get_as_c128({4 + i[0], i[1], 1 + i[2]}).value());
  });
  Tensor u = strided(rng, d, {2, 5, 1});
  Tensor up = dynamic_update_slice(ctx, x, u, {3, 9, 2}).value();
  for_each_index(x.shape(), [&](const Index& i) {
    const bool inside = i[0] >= 3 && i[0] < 5 && i[2] == 2;
    const c128 want = inside ? u.get_as_c128({i[0] - 3, i[1], 0}).value() : x.get_as_c128(i).value();
    EXPECT_EQ(up.get_as_c128(i).value(), want);
  });
  EXPECT_EQ(slice(ctx, x, {0, 0}, {1, 1}, {1, 1}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(slice(ctx, x, {0, 0, 0}, {8, 1, 1}, {1, 1, 1}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(dynamic_slice(ctx, x, {0, 0, 0}, {8, 1, 1}).error().code(), ErrorCode::kOutOfRange);
}

TEST_P(Indexing, GatherAndScatterAdd) {
  const DType d = GetParam();
  Tensor x = strided(rng, d, {4, 6, 3});
  Tensor idx = Tensor::from_col_major<int64_t>({2, 2}, {5, 0, 5, 2}).value();
  Tensor g = gather(ctx, x, idx, 1).value();
  ASSERT_EQ(g.shape(), (Shape{4, 2, 2, 3}));
  for_each_index(g.shape(), [&](const Index& i) {
    const int64_t j = idx.get<int64_t>({i[1], i[2]}).value();
    EXPECT_EQ(g.get_as_c128(i).value(), x.get_as_c128({i[0], j, i[3]}).value());
  });
  Tensor bad = Tensor::from_col_major<int32_t>({2}, {1, 6}).value();
  auto e = gather(ctx, x, bad, 1);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(e.error().message().find("index 6"), std::string::npos);
  if (d == DType::kBool) {
    EXPECT_EQ(scatter_add(ctx, x, idx, g, 1).error().code(), ErrorCode::kDTypeMismatch);
    return;
  }
  Tensor sa = scatter_add(ctx, x, idx, g, 1).value();
  // Naive: out = x; out[:, idx[p], :] += g[:, p, :] for every flat p (5 appears twice).
  for_each_index(x.shape(), [&](const Index& i) {
    c128 want = x.get_as_c128(i).value();
    for_each_index(idx.shape(), [&](const Index& p) {
      if (idx.get<int64_t>(p).value() == i[1]) want += g.get_as_c128({i[0], p[0], p[1], i[2]}).value();
    });
    const c128 got = sa.get_as_c128(i).value();
    if (is_inexact(d)) {
      EXPECT_NEAR(std::abs(got - want), 0.0, 1e-5 * (1 + std::abs(want)));
    } else {
      EXPECT_EQ(got, want);
    }
  });
}

TEST_P(Indexing, ConcatenatePadReverse) {
  const DType d = GetParam();
  Tensor a = strided(rng, d, {2, 3});
  Tensor b = strided(rng, d, {2, 1});
  Tensor c = strided(rng, d, {2, 4});
  Tensor cat = concatenate(ctx, {a, b, c}, 1).value();
  ASSERT_EQ(cat.shape(), (Shape{2, 8}));
  for_each_index(cat.shape(), [&](const Index& i) {
    const c128 want = i[1] < 3   ? a.get_as_c128({i[0], i[1]}).value()
                      : i[1] < 4 ? b.get_as_c128({i[0], 0}).value()
                                 : c.get_as_c128({i[0], i[1] - 4}).value();
    EXPECT_EQ(cat.get_as_c128(i).value(), want);
  });
  EXPECT_EQ(concatenate(ctx, {a, c}, 0).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(concatenate(ctx, {}, 0).error().code(), ErrorCode::kInvalidArgument);
  Tensor v = Tensor::full(d, {}, c128(1, 0)).value();
  Tensor p = pad(ctx, a, v, {1, 0}, {0, 2}, {1, 2}).value();
  ASSERT_EQ(p.shape(), (Shape{4, 9}));  // 1 + 2 + 1, 0 + 3 + 2*2 + 2
  // Extents past int64 (user input) are kOverflow errors, never wrapped arithmetic.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(pad(ctx, a, v, {kMax, 0}, {1, 0}, {0, 0}).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(pad(ctx, a, v, {0, 0}, {0, kMax - 2}, {0, 0}).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(pad(ctx, a, v, {0, 0}, {0, 0}, {0, kMax / 2}).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(pad(ctx, a, v, {0, 0}, {0, 0}, {0, -1}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(pad(ctx, a, v, {-2, 0}, {-1, 0}, {0, 0}).error().code(), ErrorCode::kInvalidShape);  // 2 - 3 < 0
  // Negative sides crop (StableHLO), against placement by hand: every low/high in -6..3
  // and interior 0..2 on both axes of the 2 x 3 operand.
  for (int64_t lo0 = -6; lo0 <= 3; lo0 += 3) {
    for (int64_t hi0 = -4; hi0 <= 3; hi0 += 2) {
      for (int64_t lo1 = -5; lo1 <= 2; ++lo1) {
        for (int64_t in1 = 0; in1 <= 2; ++in1) {
          const int64_t hi1 = 1 - lo1, in0 = 1;
          const int64_t e0 = 2 + 1 * in0 + lo0 + hi0, e1 = 3 + 2 * in1 + lo1 + hi1;
          auto r = pad(ctx, a, v, {lo0, lo1}, {hi0, hi1}, {in0, in1});
          if (e0 < 0 || e1 < 0) {
            EXPECT_EQ(r.error().code(), ErrorCode::kInvalidShape);
            continue;
          }
          ASSERT_TRUE(r) << r.error().to_string();
          ASSERT_EQ(r->shape(), (Shape{e0, e1}));
          for_each_index(r->shape(), [&](const Index& i) {
            const int64_t p0 = i[0] - lo0, p1 = i[1] - lo1;  // position in the dilated operand
            const bool hit = p0 >= 0 && p1 >= 0 && p0 % (in0 + 1) == 0 && p1 % (in1 + 1) == 0 && p0 / (in0 + 1) < 2 &&
                             p1 / (in1 + 1) < 3;
            const c128 want = hit ? a.get_as_c128({p0 / (in0 + 1), p1 / (in1 + 1)}).value() : c128(1, 0);
            EXPECT_EQ(r->get_as_c128(i).value(), want) << lo0 << " " << hi0 << " " << lo1 << " " << in1;
          });
        }
      }
    }
  }
  // Padding axis 0 (extent 2) by 2^62 - 2 and cropping 2^62 - 1: one row of padding,
  // allocated alone.
  constexpr int64_t kBig = (int64_t{1} << 62) - 1;
  Tensor far = pad(ctx, a, v, {-kBig, 0}, {kBig - 1, 0}, {0, 0}).value();
  ASSERT_EQ(far.shape(), (Shape{1, 3}));
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(far.get_as_c128({0, j}).value(), c128(1, 0));
  for_each_index(p.shape(), [&](const Index& i) {
    const bool on_row = i[0] >= 1 && (i[0] - 1) % 2 == 0;
    const bool on_col = i[1] % 3 == 0 && i[1] / 3 < 3;
    const c128 want = on_row && on_col ? a.get_as_c128({(i[0] - 1) / 2, i[1] / 3}).value() : c128(1, 0);
    EXPECT_EQ(p.get_as_c128(i).value(), want);
  });
  Tensor r = reverse(ctx, a, {0, 1}).value();
  for_each_index(r.shape(), [&](const Index& i) {
    EXPECT_EQ(r.get_as_c128(i).value(), a.get_as_c128({1 - i[0], 2 - i[1]}).value());
  });
  EXPECT_EQ(reverse(ctx, a, {1, 1}).error().code(), ErrorCode::kInvalidArgument);
}

TEST_P(Indexing, TrianglesAndDiagonals) {
  const DType d = GetParam();
  Tensor x = strided(rng, d, {4, 5, 2});
  // Offsets inside the matrix and past it, up to the int64 limits (no overflow: numpy
  // keeps or zeroes everything there).
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  for (const int64_t k : {kMin, kMin + 1, int64_t{-6}, int64_t{-4}, int64_t{-2}, int64_t{-1}, int64_t{0}, int64_t{1},
                          int64_t{2}, int64_t{4}, int64_t{5}, int64_t{7}, kMax - 1, kMax}) {
    Tensor lo = tril(ctx, x, k).value();
    Tensor up = triu(ctx, x, k).value();
    for_each_index(x.shape(), [&](const Index& i) {
      const c128 v = x.get_as_c128(i).value();
      EXPECT_EQ(lo.get_as_c128(i).value(), i[1] - i[0] <= k ? v : c128(0)) << "k " << k;
      EXPECT_EQ(up.get_as_c128(i).value(), i[1] - i[0] >= k ? v : c128(0)) << "k " << k;
    });
  }
  Tensor sq = strided(rng, d, {3, 2, 3});
  Tensor dg = extract_diag(ctx, sq, {0, 2}).value();
  ASSERT_EQ(dg.shape(), (Shape{3, 2}));
  for_each_index(dg.shape(), [&](const Index& i) {
    EXPECT_EQ(dg.get_as_c128(i).value(), sq.get_as_c128({i[0], i[1], i[0]}).value());
  });
  Tensor vec = strided(rng, d, {2, 3});
  Tensor em = embed_diag(ctx, vec, 1).value();
  ASSERT_EQ(em.shape(), (Shape{2, 3, 3}));
  for_each_index(em.shape(), [&](const Index& i) {
    EXPECT_EQ(em.get_as_c128(i).value(), i[1] == i[2] ? vec.get_as_c128({i[0], i[1]}).value() : c128(0));
  });
  EXPECT_EQ(tril(ctx, vec.select(0, 0).value(), 0).error().code(), ErrorCode::kInvalidShape);
}

TEST_P(Indexing, ArgsortIsNumpysStableOrder) {
  const DType d = GetParam();
  // Small integers (ties), and for floats NaN, -0 and 0 (complex: in either part, every
  // NaN class), on transposed and flipped layouts, along every axis; sequential and with
  // two threads splitting the lines.
  auto executor = make_tbb_executor(2).value();
  std::uniform_int_distribution<int> pick(-3, 3);
  // (40000: one line long enough to be cut into chunks and merged, Note [Argsort lines].)
  for (const Shape& shape : {Shape{7}, Shape{5, 9, 3}, Shape{2, 0, 3}, Shape{300, 40}, Shape{40000}}) {
    Shape rev;
    for (size_t k = shape.size(); k-- > 0;) rev.push_back(shape[k]);
    std::vector<double> v(static_cast<size_t>(element_count(shape)));
    for (double& e : v) {
      const int k = pick(rng);
      e = !is_inexact(d) ? k : k == 3 ? std::numeric_limits<double>::quiet_NaN() : k == -3 ? -0.0 : k;
    }
    Tensor x = convert(ctx, Tensor::from_col_major<double>(rev, v).value(), d).value();
    if (is_complex(d)) {  // an imaginary part of the same kind of values
      std::vector<c128> z(v.size());
      for (size_t k = 0; k < v.size(); ++k) {
        const int m = pick(rng);
        z[k] = c128(v[k], m == 3 ? std::numeric_limits<double>::quiet_NaN() : m == -3 ? -0.0 : m);
      }
      x = convert(ctx, Tensor::from_col_major<c128>(rev, z).value(), d).value();
    }
    x = x.transpose().value();
    if (x.rank() > 0) x = x.flip(static_cast<int64_t>(rng() % static_cast<uint64_t>(x.rank()))).value();
    for (int64_t axis = 0; axis < x.rank(); ++axis) {
      Tensor seq = argsort(ctx, x, axis).value(), par;
      executor->install([&] {
        CpuExecutionContext two(executor.get(), ParallelMode::kInner, 2);
        par = argsort(two, x, axis).value();
      });
      for (const Tensor& order : {seq, par}) {
        EXPECT_EQ(test_support::check_argsort(x, order, axis), "")
            << dtype_name(d) << " " << format_dims(shape) << " axis " << axis;
      }
    }
  }
  EXPECT_EQ(argsort(ctx, strided(rng, d, {3}), 1).error().code(), ErrorCode::kOutOfRange);
}

TEST_P(Indexing, ElementGathersAndScattersOfVectors) {
  // One-element hyperplanes take the element-wise path (Note [Element gathers]): values
  // and repeated-index accumulation as the definitions, from a strided vector.
  const DType d = GetParam();
  Tensor x = strided(rng, d, {1, 9, 1}).select(0, 0).value();  // a strided 9 x 1 view
  Tensor idx = Tensor::from_col_major<int64_t>({2, 3}, {8, 0, 3, 3, 8, 1}).value();
  Tensor g = gather(ctx, x, idx, 0).value();
  ASSERT_EQ(g.shape(), (Shape{2, 3, 1}));
  for_each_index(g.shape(), [&](const Index& i) {
    EXPECT_EQ(g.get_as_c128(i).value(), x.get_as_c128({idx.get<int64_t>({i[0], i[1]}).value(), 0}).value());
  });
  if (d == DType::kBool) return;
  // Updates as computed, and one value broadcast (stride 0) to the updates' shape.
  const Tensor two = Tensor::full(d, {1, 1, 1}, c128(2, 0)).value().broadcast_to({2, 3, 1}).value();
  for (const Tensor& upd : {g, two}) {
    Tensor sa = scatter_add(ctx, x, idx, upd, 0).value();
    for_each_index(x.shape(), [&](const Index& i) {
      c128 want = x.get_as_c128(i).value();
      for_each_index(idx.shape(), [&](const Index& p) {
        if (idx.get<int64_t>(p).value() == i[0]) want += upd.get_as_c128({p[0], p[1], 0}).value();
      });
      const c128 got = sa.get_as_c128(i).value();
      EXPECT_NEAR(std::abs(got - want), 0.0, 1e-5 * (1 + std::abs(want))) << format_dims(i);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, Indexing, ::testing::ValuesIn(kAllDTypes),
                         [](const auto& param_info) { return std::string(dtype_name(param_info.param)); });

}  // namespace
}  // namespace tenferro::cpu
