#include "tenferro/cpu/reduce.h"

#include <gtest/gtest.h>

#include "tenferro/test_support/index.h"
#include "tenferro/test_support/strided.h"

#include <cmath>
#include <limits>
#include <random>

namespace tenferro::cpu {
namespace {

using test_support::for_each_index;
using test_support::Index;


class Reduce : public ::testing::TestWithParam<std::tuple<DType, ReduceOp>> {};

TEST_P(Reduce, MatchesNaiveOverRandomAxes) {
  const auto [d, op] = GetParam();
  const bool sum_like = op == ReduceOp::kSum || op == ReduceOp::kProd;
  const bool supported = sum_like ? d != DType::kBool : !is_complex(d);
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(static_cast<uint64_t>(d) * 13 + static_cast<uint64_t>(op));
  for (int trial = 0; trial < 60; ++trial) {
    const size_t rank = rng() % 5;
    Shape shape;
    for (size_t k = 0; k < rank; ++k) shape.push_back(static_cast<int64_t>(rng() % (k == 0 ? (op == ReduceOp::kProd ? 12 : 300) : 6)));
    if (rng() % 8 != 0) {
      for (auto& e : shape) e = std::max<int64_t>(e, 1);
    }
    const double lo = op == ReduceOp::kProd ? 0.6 : -4, hi = op == ReduceOp::kProd ? 0.8 : 4;  // |z| near 1
    Tensor x = Tensor::random_uniform(d, shape, rng(), lo, hi).value();
    if (rank > 1 && rng() % 2) {
      Index perm(rank);
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
      std::shuffle(perm.begin(), perm.end(), rng);
      x = x.permute(perm).value();
    }
    if (rank > 0 && rng() % 3 == 0) x = x.flip(0).value();
    Index axes;
    for (int64_t k = 0; k < static_cast<int64_t>(rank); ++k) {
      if (rng() % 2) axes.push_back(k);
    }
    std::shuffle(axes.begin(), axes.end(), rng);
    const bool keep = rng() % 2;
    Result<Tensor> r(Error(ErrorStage::kUsage, ErrorCode::kInternal, "t", "unset"));
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
      r = reduce(ctx, op, x, axes, keep);
    });
    if (!supported) {
      ASSERT_EQ(r.error().code(), ErrorCode::kDTypeMismatch);
      return;
    }
    ASSERT_TRUE(r) << r.error().to_string();
    // reduce_into a destination with a scrambled layout, holding random values it must
    // overwrite: checked against the same reference below.
    Tensor into = test_support::strided_random(rng, d, r->shape(), -9, 9);
    {
      Result<void> st = ok();
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
        st = reduce_into(ctx, op, x, axes, keep, into);
      });
      ASSERT_TRUE(st) << st.error().to_string();
    }
    // Naive reference: accumulate every input element into its output slot in long double.
    std::vector<bool> is_red(rank, false);
    for (int64_t a : axes) is_red[static_cast<size_t>(a)] = true;
    Shape out_shape;
    for (size_t k = 0; k < rank; ++k) {
      if (!is_red[k]) out_shape.push_back(x.shape()[k]);
      else if (keep) out_shape.push_back(1);
    }
    ASSERT_EQ(r->shape(), out_shape);
    const int64_t m = element_count(out_shape);
    std::vector<std::complex<long double>> acc(static_cast<size_t>(m));
    std::vector<char> seen(static_cast<size_t>(m), 0);
    auto out_lin = [&](const Index& idx) {
      int64_t lin = 0, mul = 1;
      size_t j = 0;
      for (size_t k = 0; k < rank; ++k) {
        if (!is_red[k]) {
          lin += idx[k] * mul;
          mul *= x.shape()[k];
        }
        (void)j;
      }
      return lin;
    };
    for_each_index(x.shape(), [&](const Index& idx) {
      const c128 v = x.get_as_c128(idx).value();
      const std::complex<long double> lv(v.real(), v.imag());
      auto& a = acc[static_cast<size_t>(out_lin(idx))];
      char& s = seen[static_cast<size_t>(out_lin(idx))];
      if (!s) {
        a = lv;
        s = 1;
        return;
      }
      switch (op) {
        case ReduceOp::kSum: a += lv; break;
        case ReduceOp::kProd: a *= lv; break;
        case ReduceOp::kMax: a = std::max(a.real(), lv.real()); break;
        case ReduceOp::kMin: a = std::min(a.real(), lv.real()); break;
      }
    });
    int64_t count_reduced = 1;
    for (int64_t a : axes) count_reduced *= x.shape()[static_cast<size_t>(a)];
    for (int64_t lin = 0; lin < m; ++lin) {
      Index oidx(out_shape.size());
      int64_t rem = lin;
      for (size_t k = 0; k < out_shape.size(); ++k) {
        oidx[k] = rem % out_shape[k];
        rem /= out_shape[k];
      }
      const c128 got = r->get_as_c128(oidx).value();
      const c128 got_into = into.get_as_c128(oidx).value();
      if (!seen[static_cast<size_t>(lin)]) {  // empty reduction: identity
        if (op == ReduceOp::kSum) {
          EXPECT_EQ(got, c128(0));
          EXPECT_EQ(got_into, c128(0));
        } else if (op == ReduceOp::kProd) {
          EXPECT_EQ(got, c128(1));
          EXPECT_EQ(got_into, c128(1));
        }
        continue;
      }
      const c128 want(static_cast<double>(acc[static_cast<size_t>(lin)].real()),
                      static_cast<double>(acc[static_cast<size_t>(lin)].imag()));
      const bool low = d == DType::kF32 || d == DType::kC64;
      double tol = 0;
      if (op == ReduceOp::kSum && is_inexact(d)) tol = (low ? 1e-6 : 1e-14) * 4 * std::sqrt(double(count_reduced) + 1) * 4;
      if (op == ReduceOp::kProd && is_inexact(d)) tol = (low ? 1e-6 : 1e-14) * (double(count_reduced) + 1);
      if (is_integral(d) && op == ReduceOp::kProd) continue;  // wraps; checked elsewhere
      ASSERT_LE(std::abs(got - want), tol * std::max(1.0, std::abs(want)))
          << reduce_op_name(op) << " " << dtype_name(d) << " shape " << format_dims(x.shape()) << " axes "
          << format_dims(axes) << " got " << got << " want " << want;
      ASSERT_LE(std::abs(got_into - want), tol * std::max(1.0, std::abs(want)))
          << "reduce_into " << reduce_op_name(op) << " " << dtype_name(d) << " shape " << format_dims(x.shape())
          << " axes " << format_dims(axes) << " got " << got_into << " want " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Reduce,
                         ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                                            ::testing::Values(ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                                              ReduceOp::kMin)),
                         [](const auto& param_info) {
                           return std::string(dtype_name(std::get<0>(param_info.param))) + "_" +
                                  std::string(reduce_op_name(std::get<1>(param_info.param)));
                         });

TEST(ReduceFull, LargeSumIsThreadCountIndependentAndAccurate) {
  Tensor x = Tensor::random_uniform(DType::kF32, {1 << 22}, 5, 0.0, 1.0).value();
  auto e1 = make_tbb_executor(1).value();
  auto e2 = make_tbb_executor(2).value();
  float s1 = 0, s2 = 0;
  e1->install([&] {
    CpuExecutionContext ctx(e1.get(), ParallelMode::kInner, 1);
    s1 = reduce(ctx, ReduceOp::kSum, x, {0}).value().get<float>({}).value();
  });
  e2->install([&] {
    CpuExecutionContext ctx(e2.get(), ParallelMode::kInner, 2);
    s2 = reduce(ctx, ReduceOp::kSum, x, {0}).value().get<float>({}).value();
  });
  EXPECT_EQ(s1, s2) << "fixed chunking: same result for any thread count";
  double exact = 0;
  const float* p = static_cast<const float*>(x.storage()->data());
  for (int64_t i = 0; i < (1 << 22); ++i) exact += p[i];
  EXPECT_NEAR(s1, exact, exact * 1e-6) << "pairwise summation keeps f32 sums accurate";
}

TEST(ReduceInto, FullReductionsOfManyChunks) {
  // 2^16 elements per chunk: 3 chunks (inline partials) and 70 chunks (beyond the inline
  // capacity), into a destination with an offset; f64 against a long double sum.
  auto e2 = make_tbb_executor(2).value();
  for (int64_t n : {int64_t{3} << 16, int64_t{70} << 16}) {
    Tensor x = Tensor::random_uniform(DType::kF64, {n}, 11, -1.0, 1.0).value();
    Tensor buf = Tensor::full(DType::kF64, {3}, c128(7.0)).value();
    Tensor dst = buf.select(0, 1).value();
    buf = Tensor();
    Result<void> st = ok();
    e2->install([&] {
      CpuExecutionContext ctx(e2.get(), ParallelMode::kInner, 2);
      st = reduce_into(ctx, ReduceOp::kSum, x, {0}, false, dst);
    });
    ASSERT_TRUE(st) << st.error().to_string();
    long double exact = 0;
    const double* p = static_cast<const double*>(x.storage()->data());
    for (int64_t i = 0; i < n; ++i) exact += p[i];
    EXPECT_NEAR(dst.get<double>({}).value(), static_cast<double>(exact), 1e-10) << n;
    const double* whole = static_cast<const double*>(dst.storage()->data());
    EXPECT_EQ(whole[0], 7.0) << "elements outside the destination stay untouched";
    EXPECT_EQ(whole[2], 7.0);
  }
}

TEST(ReduceInto, ErrorsBeforeAnyWrite) {
  auto ctx = CpuExecutionContext::sequential();
  Tensor x = Tensor::ones(DType::kF64, {2, 3}).value();
  Tensor dst = Tensor::full(DType::kF64, {3}, c128(5.0)).value();
  auto untouched = [&] {
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(dst.get<double>({i}).value(), 5.0);
  };
  EXPECT_EQ(reduce_into(ctx, ReduceOp::kSum, x, {1}, false, dst).error().code(), ErrorCode::kShapeMismatch);
  untouched();
  EXPECT_EQ(reduce_into(ctx, ReduceOp::kSum, x, {2}, false, dst).error().code(), ErrorCode::kOutOfRange);
  untouched();
  Tensor f32 = Tensor::zeros(DType::kF32, {3}).value();
  EXPECT_EQ(reduce_into(ctx, ReduceOp::kSum, x, {0}, false, f32).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(reduce_into(ctx, ReduceOp::kMax, Tensor::ones(DType::kC64, {2}).value(), {0}, false, f32).error().code(),
            ErrorCode::kDTypeMismatch);
  Tensor null_dst;
  EXPECT_EQ(reduce_into(ctx, ReduceOp::kSum, x, {0}, false, null_dst).error().code(), ErrorCode::kInvalidArgument);
  Tensor shared = dst;  // a second handle: the storage is not exclusive
  EXPECT_EQ(reduce_into(ctx, ReduceOp::kSum, x, {0}, false, dst).error().code(), ErrorCode::kNotExclusive);
  shared = Tensor();
  untouched();
  Tensor bcast = Tensor::zeros(DType::kF64, {1}).value().broadcast_to({3}).value();
  EXPECT_FALSE(reduce_into(ctx, ReduceOp::kSum, x, {0}, false, bcast)) << "overlapping destination";
  ASSERT_TRUE(reduce_into(ctx, ReduceOp::kSum, x, {0}, false, dst));
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(dst.get<double>({i}).value(), 2.0);
  Tensor keep = Tensor::zeros(DType::kF64, {2, 1}).value();
  ASSERT_TRUE(reduce_into(ctx, ReduceOp::kSum, x, {1}, true, keep));
  EXPECT_EQ(keep.get<double>({1, 0}).value(), 3.0);
}

TEST(ReduceErrors, Typed) {
  auto ctx = CpuExecutionContext::sequential();
  Tensor x = Tensor::ones(DType::kF64, {2, 3}).value();
  EXPECT_EQ(reduce(ctx, ReduceOp::kSum, x, {2}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(reduce(ctx, ReduceOp::kSum, x, {1, 1}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reduce(ctx, ReduceOp::kMax, Tensor::ones(DType::kC64, {2}).value(), {0}).error().code(),
            ErrorCode::kDTypeMismatch);
  const double nan = std::nan("");
  Tensor n = Tensor::from_col_major<double>({3}, {1.0, nan, 2.0}).value();
  EXPECT_TRUE(std::isnan(reduce(ctx, ReduceOp::kMax, n, {0}).value().get<double>({}).value()));
  EXPECT_TRUE(std::isnan(reduce(ctx, ReduceOp::kMin, n, {0}).value().get<double>({}).value()));
}

}  // namespace
}  // namespace tenferro::cpu
