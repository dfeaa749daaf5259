// Elementwise kernels against a naive per-element reference on random strided,
// broadcast operands, for every dtype an op supports.

#include "tenferro/cpu/elementwise.h"

#include <gtest/gtest.h>

#include "tenferro/test_support/index.h"

#include <cmath>
#include <limits>
#include <random>

namespace tenferro::cpu {
namespace {

using test_support::for_each_index;
using test_support::Index;


// Index of an operand broadcast into `idx` of the result.
Index operand_index(const Index& idx, const Shape& shape) {
  Index out(shape.size());
  const size_t lead = idx.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) out[k] = shape[k] == 1 ? 0 : idx[k + lead];
  return out;
}

// Random operand of `shape` (values in [lo, hi)), sometimes permuted/flipped (strided).
Tensor random_operand(std::mt19937_64& rng, DType d, const Shape& shape, double lo, double hi) {
  const size_t rank = shape.size();
  Index perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  if (rng() % 2) std::shuffle(perm.begin(), perm.end(), rng);
  Shape permuted(rank);
  for (size_t i = 0; i < rank; ++i) permuted[static_cast<size_t>(perm[i])] = shape[i];
  Tensor t = Tensor::random_uniform(d, permuted, rng(), lo, hi).value();
  Index inv(rank);
  for (size_t i = 0; i < rank; ++i) inv[i] = perm[i];
  t = t.permute(inv).value();
  if (rank > 0 && rng() % 3 == 0) t = t.flip(static_cast<int64_t>(rng() % rank)).value();
  return t;
}

// Random pair of broadcast-compatible shapes.
std::pair<Shape, Shape> random_shapes(std::mt19937_64& rng) {
  const size_t rank = rng() % 5;
  Shape out;
  for (size_t k = 0; k < rank; ++k) out.push_back(1 + static_cast<int64_t>(rng() % 5));
  auto derive = [&] {
    Shape s;
    const size_t drop = rank > 0 ? rng() % (rank + 1) : 0;
    for (size_t k = drop; k < rank; ++k) s.push_back(rng() % 3 == 0 ? 1 : out[k]);
    return s;
  };
  return {derive(), derive()};
}

bool close(c128 got, c128 want, DType d) {
  if (std::isnan(want.real()) || std::isnan(want.imag())) {
    return std::isnan(got.real()) || std::isnan(got.imag());
  }
  const double tol = (d == DType::kF32 || d == DType::kC64) ? 2e-6 : 1e-13;
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

template <class T>
c128 as_c(T v) {
  if constexpr (tenferro::detail::ComplexScalar<T>) {
    return c128(v.real(), v.imag());
  } else {
    return c128(static_cast<double>(v), 0);
  }
}

// Reference of a binary op on doubles/complex (computed in the operand type).
template <class T>
T ref_binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kAdd: return static_cast<T>(a + b);
    case BinaryOp::kSub: return static_cast<T>(a - b);
    case BinaryOp::kMul: return static_cast<T>(a * b);
    case BinaryOp::kDiv:
      if constexpr (std::is_integral_v<T>) {
        return b == 0 ? T(-1) : static_cast<T>(a / b);
      } else {
        return a / b;
      }
    case BinaryOp::kPow:
      if constexpr (std::is_integral_v<T>) {
        T r = 1;
        for (T i = 0; i < b; ++i) r = static_cast<T>(r * a);
        if (b < 0) return a == 1 ? T(1) : a == -1 ? T(b % 2 != 0 ? -1 : 1) : T(0);  // truncated 1/a^|b|
        return r;
      } else {
        return std::pow(a, b);
      }
    default: break;
  }
  if constexpr (!tenferro::detail::ComplexScalar<T>) {
    switch (op) {
      case BinaryOp::kRem:
        if constexpr (std::is_integral_v<T>) {
          return b == 0 ? a : static_cast<T>(a % b);
        } else {
          return std::fmod(a, b);
        }
      case BinaryOp::kMax: return std::max(a, b);
      case BinaryOp::kMin: return std::min(a, b);
      case BinaryOp::kAtan2:
        // The angle of (b, a) by quadrants from atan (an oracle independent of atan2).
        if constexpr (std::is_floating_point_v<T>) {
          const double pi = std::acos(-1.0), y = a, x = b;
          if (x > 0) return static_cast<T>(std::atan(y / x));
          if (x < 0) return static_cast<T>(std::atan(y / x) + (y >= 0 ? pi : -pi));
          return static_cast<T>(y > 0 ? pi / 2 : y < 0 ? -pi / 2 : 0.0);
        }
        break;
      default: break;
    }
  }
  return T{};
}

class Binary : public ::testing::TestWithParam<std::tuple<DType, BinaryOp>> {};

TEST_P(Binary, MatchesReference) {
  const auto [d, op] = GetParam();
  const bool supported =
      op == BinaryOp::kAtan2
          ? d == DType::kF32 || d == DType::kF64
          : d != DType::kBool &&
                !(is_complex(d) && (op == BinaryOp::kRem || op == BinaryOp::kMax || op == BinaryOp::kMin));
  std::mt19937_64 rng(static_cast<uint64_t>(d) * 31 + static_cast<uint64_t>(op));
  auto ctx = CpuExecutionContext::sequential();
  const double lo = op == BinaryOp::kPow ? (is_integral(d) ? -2 : 0.5) : -6;
  const double hi = op == BinaryOp::kPow ? (is_integral(d) ? 5 : 2.0) : 6;
  for (int trial = 0; trial < 40; ++trial) {
    auto [sa, sb] = random_shapes(rng);
    Tensor a = random_operand(rng, d, sa, lo, hi);
    Tensor b = random_operand(rng, d, sb, lo, hi);
    auto r = binary(ctx, op, a, b);
    if (!supported) {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code(), ErrorCode::kDTypeMismatch);
      return;
    }
    ASSERT_TRUE(r) << r.error().to_string();
    Tensor z = *r;
    visit_dtype(d, [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) return;
      else
      for_each_index(z.shape(), [&](const Index& idx) {
        const T va = a.get<T>(operand_index(idx, a.shape())).value();
        const T vb = b.get<T>(operand_index(idx, b.shape())).value();
        const c128 want = as_c(ref_binary<T>(op, va, vb));
        const c128 got = z.get_as_c128(idx).value();
        ASSERT_TRUE(close(got, want, d)) << binary_op_name(op) << " " << dtype_name(d) << " at " << format_dims(idx)
                                         << " got " << got << " want " << want;
      });
    });
  }
}

INSTANTIATE_TEST_SUITE_P(All, Binary,
                         ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                                            ::testing::Values(BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul,
                                                              BinaryOp::kDiv, BinaryOp::kRem, BinaryOp::kPow,
                                                              BinaryOp::kMax, BinaryOp::kMin, BinaryOp::kAtan2)),
                         [](const auto& param_info) {
                           return std::string(dtype_name(std::get<0>(param_info.param))) + "_" +
                                  std::string(binary_op_name(std::get<1>(param_info.param)));
                         });

template <class T>
c128 ref_unary(UnaryOp op, T v) {
  if constexpr (tenferro::detail::ComplexScalar<T>) {
    switch (op) {
      case UnaryOp::kNeg: return as_c(-v);
      case UnaryOp::kAbs: return std::abs(v);
      case UnaryOp::kSign: return std::abs(v) == 0 ? c128(0) : as_c(v / std::abs(v));
      case UnaryOp::kExp: return as_c(std::exp(v));
      case UnaryOp::kLog: return as_c(std::log(v));
      case UnaryOp::kExpm1: return as_c(std::exp(v)) - c128(1);
      case UnaryOp::kLog1p: return std::log(c128(1) + as_c(v));
      case UnaryOp::kSin: return as_c(std::sin(v));
      case UnaryOp::kCos: return as_c(std::cos(v));
      case UnaryOp::kTanh: return as_c(std::tanh(v));
      case UnaryOp::kSqrt: return as_c(std::sqrt(v));
      case UnaryOp::kRsqrt: return c128(1) / as_c(std::sqrt(v));
      case UnaryOp::kConj: return as_c(std::conj(v));
      case UnaryOp::kReal: return v.real();
      case UnaryOp::kImag: return v.imag();
    }
  } else {
    const double x = static_cast<double>(v);
    switch (op) {
      case UnaryOp::kNeg: return as_c(static_cast<T>(-v));
      case UnaryOp::kAbs: return as_c(static_cast<T>(v < 0 ? -v : v));
      case UnaryOp::kSign: return (x > 0) - (x < 0);
      case UnaryOp::kExp: return as_c(static_cast<T>(std::exp(v)));
      case UnaryOp::kLog: return as_c(static_cast<T>(std::log(v)));
      case UnaryOp::kExpm1: return as_c(static_cast<T>(std::expm1(v)));
      case UnaryOp::kLog1p: return as_c(static_cast<T>(std::log1p(v)));
      case UnaryOp::kSin: return as_c(static_cast<T>(std::sin(v)));
      case UnaryOp::kCos: return as_c(static_cast<T>(std::cos(v)));
      case UnaryOp::kTanh: return as_c(static_cast<T>(std::tanh(v)));
      case UnaryOp::kSqrt: return as_c(static_cast<T>(std::sqrt(v)));
      case UnaryOp::kRsqrt: return 1.0 / std::sqrt(x);
      case UnaryOp::kConj: return x;
      case UnaryOp::kReal: return x;
      case UnaryOp::kImag: return 0;
    }
  }
  return 0;
}

class Unary : public ::testing::TestWithParam<std::tuple<DType, UnaryOp>> {};

TEST_P(Unary, MatchesReference) {
  const auto [d, op] = GetParam();
  auto ctx = CpuExecutionContext::sequential();
  std::mt19937_64 rng(static_cast<uint64_t>(d) * 17 + static_cast<uint64_t>(op));
  const bool positive = op == UnaryOp::kLog || op == UnaryOp::kSqrt || op == UnaryOp::kRsqrt || op == UnaryOp::kLog1p;
  auto rd = unary_result_dtype(op, d);
  for (int trial = 0; trial < 20; ++trial) {
    auto [sa, sb] = random_shapes(rng);
    (void)sb;
    Tensor x = random_operand(rng, d, sa, positive ? 0.1 : -3, 3);
    auto r = unary(ctx, op, x);
    ASSERT_EQ(r.has_value(), rd.has_value());
    if (!r) {
      EXPECT_EQ(r.error().code(), ErrorCode::kDTypeMismatch);
      return;
    }
    EXPECT_EQ(r->dtype(), *rd);
    visit_dtype(d, [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        for_each_index(x.shape(), [&](const Index& idx) {
          const c128 want = ref_unary<T>(op, x.get<T>(idx).value());
          const c128 got = r->get_as_c128(idx).value();
          ASSERT_TRUE(close(got, want, d)) << unary_op_name(op) << " " << dtype_name(d) << " got " << got << " want "
                                           << want;
        });
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, Unary,
    ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                       ::testing::Values(UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kSign, UnaryOp::kExp, UnaryOp::kLog,
                                         UnaryOp::kExpm1, UnaryOp::kLog1p, UnaryOp::kSin, UnaryOp::kCos,
                                         UnaryOp::kTanh, UnaryOp::kSqrt, UnaryOp::kRsqrt, UnaryOp::kConj,
                                         UnaryOp::kReal, UnaryOp::kImag)),
    [](const auto& param_info) {
      return std::string(dtype_name(std::get<0>(param_info.param))) + "_" +
             std::string(unary_op_name(std::get<1>(param_info.param)));
    });

TEST(Elementwise, IntegerEdgeCasesDoNotTrap) {
  auto ctx = CpuExecutionContext::sequential();
  const int32_t mn = std::numeric_limits<int32_t>::min();
  Tensor a = Tensor::from_col_major<int32_t>({4}, {7, mn, mn, 5}).value();
  Tensor b = Tensor::from_col_major<int32_t>({4}, {0, -1, -1, 0}).value();
  Tensor q = binary(ctx, BinaryOp::kDiv, a, b).value();
  Tensor r = binary(ctx, BinaryOp::kRem, a, b).value();
  EXPECT_EQ(q.get<int32_t>({0}).value(), -1);
  EXPECT_EQ(q.get<int32_t>({1}).value(), mn);
  EXPECT_EQ(r.get<int32_t>({2}).value(), 0);
  EXPECT_EQ(r.get<int32_t>({3}).value(), 5);
  EXPECT_EQ(unary(ctx, UnaryOp::kNeg, a).value().get<int32_t>({1}).value(), mn);
}

TEST(Elementwise, MaxMinPropagateNaN) {
  auto ctx = CpuExecutionContext::sequential();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = Tensor::from_col_major<double>({3}, {nan, 1.0, 2.0}).value();
  Tensor b = Tensor::from_col_major<double>({3}, {0.0, nan, 3.0}).value();
  Tensor mx = binary(ctx, BinaryOp::kMax, a, b).value();
  Tensor mn = binary(ctx, BinaryOp::kMin, a, b).value();
  EXPECT_TRUE(std::isnan(mx.get<double>({0}).value()));
  EXPECT_TRUE(std::isnan(mx.get<double>({1}).value()));
  EXPECT_EQ(mx.get<double>({2}).value(), 3.0);
  EXPECT_TRUE(std::isnan(mn.get<double>({1}).value()));
  EXPECT_EQ(mn.get<double>({2}).value(), 2.0);
}

TEST(Elementwise, CompareSelectClampConvert) {
  auto ctx = CpuExecutionContext::sequential();
  std::mt19937_64 rng(8);
  for (DType d : kAllDTypes) {
    if (d == DType::kBool) continue;
    Tensor a = random_operand(rng, d, Shape{3, 4}, -2, 3);
    Tensor b = random_operand(rng, d, Shape{4}, -2, 3);
    Tensor eq = compare(ctx, CompareOp::kEq, a, b).value();
    Tensor lt = compare(ctx, CompareOp::kLt, a, b).value_or(Tensor());
    Tensor sel = select(ctx, eq, a, b).value();
    Tensor cv = convert(ctx, a, DType::kI64).value();
    for_each_index(Shape{3, 4}, [&](const Index& idx) {
      const c128 va = a.get_as_c128(idx).value();
      const c128 vb = b.get_as_c128({idx[1]}).value();
      EXPECT_EQ(eq.get<bool>(idx).value(), va == vb);
      if (!is_complex(d)) {
        EXPECT_EQ(lt.get<bool>(idx).value(), va.real() < vb.real());
      }
      EXPECT_EQ(sel.get_as_c128(idx).value(), va == vb ? va : vb);
      EXPECT_EQ(cv.get<int64_t>(idx).value(), static_cast<int64_t>(va.real()));
    });
    if (is_complex(d)) {
      EXPECT_EQ(compare(ctx, CompareOp::kLt, a, b).error().code(), ErrorCode::kDTypeMismatch);
      continue;
    }
    Tensor lo = Tensor::full(d, {}, c128(-1, 0)).value();
    Tensor hi = Tensor::full(d, {}, c128(1, 0)).value();
    Tensor cl = clamp(ctx, a, lo, hi).value();
    for_each_index(Shape{3, 4}, [&](const Index& idx) {
      const double v = a.get_as_c128(idx).value().real();
      EXPECT_EQ(cl.get_as_c128(idx).value().real(), std::min(1.0, std::max(-1.0, v)));
    });
  }
  // clamp is min(max(x, lo), hi): with crossed bounds (lo > hi) every element is hi;
  // a NaN anywhere gives NaN.
  {
    Tensor x = Tensor::from_col_major<double>({4}, {-5.0, 0.5, 5.0, std::nan("")}).value();
    Tensor cl = clamp(ctx, x, Tensor::full(DType::kF64, {}, 2.0).value(), Tensor::full(DType::kF64, {}, -1.0).value()).value();
    for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(cl.get<double>({k}).value(), -1.0) << k;
    EXPECT_TRUE(std::isnan(cl.get<double>({3}).value()));
    Tensor nan_lo = clamp(ctx, x, Tensor::full(DType::kF64, {}, std::nan("")).value(), Tensor::full(DType::kF64, {}, 1.0).value()).value();
    Tensor nan_hi = clamp(ctx, x, Tensor::full(DType::kF64, {}, 0.0).value(), Tensor::full(DType::kF64, {}, std::nan("")).value()).value();
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_TRUE(std::isnan(nan_lo.get<double>({k}).value())) << k;
      EXPECT_TRUE(std::isnan(nan_hi.get<double>({k}).value())) << k;
    }
    Tensor xi = Tensor::from_col_major<int64_t>({3}, {-5, 1, 5}).value();
    Tensor ci = clamp(ctx, xi, Tensor::full(DType::kI64, {}, 3.0).value(), Tensor::full(DType::kI64, {}, 0.0).value()).value();
    for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(ci.get<int64_t>({k}).value(), 0) << k;
  }
  Tensor f = Tensor::from_col_major<double>({4}, {1e300, -1e300, std::nan(""), -2.7}).value();
  Tensor i = convert(ctx, f, DType::kI32).value();
  EXPECT_EQ(i.get<int32_t>({0}).value(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i.get<int32_t>({1}).value(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i.get<int32_t>({2}).value(), 0);
  EXPECT_EQ(i.get<int32_t>({3}).value(), -2);
}

TEST(Elementwise, ErrorsAndIntoDestination) {
  auto ctx = CpuExecutionContext::sequential();
  Tensor a = Tensor::ones(DType::kF64, {2, 3}).value();
  Tensor b = Tensor::ones(DType::kF32, {2, 3}).value();
  EXPECT_EQ(binary(ctx, BinaryOp::kAdd, a, b).error().code(), ErrorCode::kDTypeMismatch);
  Tensor c = Tensor::ones(DType::kF64, {3, 2}).value();
  EXPECT_EQ(binary(ctx, BinaryOp::kAdd, a, c).error().code(), ErrorCode::kShapeMismatch);
  Tensor out = Tensor::zeros(DType::kF64, {2, 3}).value();
  Tensor alias = out;
  EXPECT_EQ(binary_into(ctx, BinaryOp::kAdd, a, a, out).error().code(), ErrorCode::kNotExclusive);
  alias = Tensor();
  Tensor wrong = Tensor::zeros(DType::kF64, {3}).value();
  EXPECT_EQ(binary_into(ctx, BinaryOp::kAdd, a, a, wrong).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(wrong.get<double>({0}).value(), 0.0) << "nothing written on error";
  ASSERT_TRUE(binary_into(ctx, BinaryOp::kAdd, a, a, out).has_value());
  EXPECT_EQ(out.get<double>({1, 2}).value(), 2.0);
  // In place: out = out * out.
  ASSERT_TRUE(binary_into(ctx, BinaryOp::kMul, out, out, out).has_value());
  EXPECT_EQ(out.get<double>({0, 0}).value(), 4.0);
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 1}).value(), (Shape{2, 4, 3}));
}


TEST(Elementwise, LongContiguousAxisSplitsAcrossThreads) {
  auto executor = make_tbb_executor(2).value();
  Tensor a = Tensor::random_uniform(DType::kF64, {100003}, 1, -1, 1).value();
  Tensor b = Tensor::random_uniform(DType::kF64, {100003}, 2, -1, 1).value();
  Tensor z;
  executor->install([&] {
    CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
    z = binary(ctx, BinaryOp::kSub, a, b).value();
  });
  for (int64_t i = 0; i < 100003; i += 7) {
    ASSERT_EQ(z.get<double>({i}).value(), a.get<double>({i}).value() - b.get<double>({i}).value());
  }
  ASSERT_EQ(z.get<double>({100002}).value(), a.get<double>({100002}).value() - b.get<double>({100002}).value());
}

// Note [Streaming map stores]: destinations of at least 8 MiB take non-temporal stores
// with a scalar head up to 32-byte alignment and a scalar tail. Every element checked
// for 16-, 8-, 4- and 1-byte outputs (the first three into a destination starting one
// element into a buffer, whose two outer elements must stay untouched), 1 and 2 threads.
TEST(Elementwise, LargeDestinationsStreamEveryElement) {
  auto executor = make_tbb_executor(2).value();
  for (int threads : {1, 2}) {
    for (DType d : {DType::kC128, DType::kF64, DType::kF32}) {
      const int64_t n = (int64_t{9} << 20) / dtype_size(d) + 37;  // > 8 MiB, odd length
      const Tensor x = Tensor::random_uniform(d, {n}, 3, -1, 1).value();
      const Tensor y = Tensor::random_uniform(d, {n}, 4, -1, 1).value();
      Tensor out = Tensor::ones(d, {n + 2}).value().slice(0, 1, n + 1).value();  // sole owner
      Result<void> st = ok();
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
        st = binary_into(ctx, BinaryOp::kMul, x, y, out);
      });
      ASSERT_TRUE(st) << st.error().to_string();
      const Tensor whole = Tensor::from_storage(d, out.storage(), Layout::col_major(Shape{n + 2})).value();
      ASSERT_EQ(whole.get_as_c128({0}).value(), c128(1));
      ASSERT_EQ(whole.get_as_c128({n + 1}).value(), c128(1));
      for (int64_t i = 0; i < n; ++i) {
        const c128 want = x.get_as_c128({i}).value() * y.get_as_c128({i}).value();
        const c128 got = out.get_as_c128({i}).value();
        ASSERT_NEAR(got.real(), want.real(), 1e-6 * (1 + std::abs(want))) << dtype_name(d) << " at " << i;
        ASSERT_NEAR(got.imag(), want.imag(), 1e-6 * (1 + std::abs(want))) << dtype_name(d) << " at " << i;
      }
    }
    const int64_t n = (int64_t{9} << 20) + 5;  // bool: 1 byte per element
    const Tensor x = Tensor::random_uniform(DType::kF32, {n}, 5, -1, 1).value();
    const Tensor y = Tensor::random_uniform(DType::kF32, {n}, 6, -1, 1).value();
    Tensor lt;
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
      lt = compare(ctx, CompareOp::kLt, x, y).value();
    });
    const auto* xs = static_cast<const float*>(x.storage()->data());
    const auto* ys = static_cast<const float*>(y.storage()->data());
    const auto* ls = static_cast<const bool*>(lt.storage()->data()) + lt.offset();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(ls[i], xs[i] < ys[i]) << "at " << i;
  }
}

TEST(Elementwise, ComplexExpm1AndLog1pAreAccurateNearZero) {
  auto ctx = CpuExecutionContext::sequential();
  const c128 z(1e-10, 1e-10);
  Tensor x = Tensor::from_col_major<c128>({1}, {z}).value();
  const c128 e = unary(ctx, UnaryOp::kExpm1, x).value().get<c128>({0}).value();
  const c128 l = unary(ctx, UnaryOp::kLog1p, x).value().get<c128>({0}).value();
  // Series: expm1(z) = z + z^2/2 + ..., z^2 = 2e-20 i; log1p(z) = z - z^2/2 + ...
  EXPECT_NEAR(e.real(), 1e-10, 1e-24);
  EXPECT_NEAR(e.imag(), 1e-10 + 1e-20, 1e-24);
  EXPECT_NEAR(l.real(), 1e-10, 1e-24);
  EXPECT_NEAR(l.imag(), 1e-10 - 1e-20, 1e-24);
}

}  // namespace
}  // namespace tenferro::cpu
