#include "tenferro/core/complex_math.h"

#include <gtest/gtest.h>

#include <complex>
#include <limits>

namespace tenferro {
namespace {

// Oracle: the Taylor series in long double, accurate for |z| << 1.
std::complex<long double> expm1_series(std::complex<long double> z) {
  std::complex<long double> term = z, sum = z;
  for (int k = 2; k < 30; ++k) {
    term *= z / static_cast<long double>(k);
    sum += term;
  }
  return sum;
}
std::complex<long double> log1p_series(std::complex<long double> z) {
  std::complex<long double> power = z, sum = 0;
  for (int k = 1; k < 40; ++k) {
    sum += (k % 2 ? 1.0L : -1.0L) * power / static_cast<long double>(k);
    power *= z;
  }
  return sum;
}

double rel(std::complex<double> got, std::complex<long double> want) {
  const std::complex<long double> g(got.real(), got.imag());
  return static_cast<double>(std::abs(g - want) / std::abs(want));
}

TEST(ComplexMath, AccurateNearZero) {
  for (double scale : {1e-12, 1e-8, 1e-4, 1e-2}) {
    for (auto [x, y] : {std::pair{1.0, 1.0}, std::pair{-1.0, 0.5}, std::pair{0.3, -2.0}, std::pair{1.0, 0.0}}) {
      const std::complex<double> z(x * scale, y * scale);
      const std::complex<long double> zl(z.real(), z.imag());
      EXPECT_LT(rel(complex_expm1(z), expm1_series(zl)), 1e-14) << z;
      EXPECT_LT(rel(complex_log1p(z), log1p_series(zl)), 1e-14) << z;
    }
  }
  // The naive forms lose these digits (the reason for the functions).
  const std::complex<double> z(1e-10, 1e-10);
  EXPECT_GT(rel(std::exp(z) - 1.0, expm1_series({1e-10L, 1e-10L})), 1e-9);
}

TEST(ComplexMath, MatchesTheStandardFunctionsAwayFromZero) {
  for (auto z : {std::complex<double>(0.7, -1.3), std::complex<double>(-2.0, 0.4), std::complex<double>(3.0, 3.0)}) {
    EXPECT_LT(std::abs(complex_expm1(z) - (std::exp(z) - 1.0)), 1e-13 * std::abs(std::exp(z)));
    EXPECT_LT(std::abs(complex_log1p(z) - std::log(1.0 + z)), 1e-13);
  }
  const std::complex<float> f(1e-6f, 2e-6f);
  // Series: Re expm1 = x + (x^2 - y^2)/2 = 1e-6 - 1.5e-12; Im log1p = y - xy = 2e-6 - 2e-12.
  EXPECT_NEAR(complex_expm1(f).real(), 1e-6 - 1.5e-12, 3e-13);
  EXPECT_NEAR(complex_log1p(f).imag(), 2e-6 - 2e-12, 5e-13);
}

// complex_pow: numpy's special cases exactly, exp(w log z) elsewhere (long double oracle).
TEST(ComplexMath, PowSpecialCasesAndIntegerExponents) {
  using C = std::complex<double>;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (const C z : {C(0, 0), C(nan, nan), C(inf, 0), C(-inf, 1), C(1, inf), C(3, -4)}) {
    const C one = complex_pow(z, C(0, 0));
    EXPECT_EQ(one.real(), 1) << z;
    EXPECT_EQ(one.imag(), 0) << z;
  }
  // Repeated squaring: exact where every product is.
  EXPECT_EQ(complex_pow(C(1, 1), C(2, 0)), C(0, 2));
  EXPECT_EQ(complex_pow(C(1, 1), C(-2, 0)), C(0, -0.5));
  EXPECT_EQ(complex_pow(C(3, 4), C(3, 0)), C(-117, 44));
  EXPECT_EQ(complex_pow(C(2, 0), C(10, 0)), C(1024, 0));
  EXPECT_EQ(complex_pow(C(0, 1), C(100, 0)), C(1, 0));
  EXPECT_EQ(complex_pow(C(0, 0), C(2, 0)), C(0, 0));
  EXPECT_EQ(complex_pow(C(0, 0), C(0.5, 2)), C(0, 0));  // 0^w = 0 for Re w > 0
  EXPECT_EQ(complex_pow(std::complex<float>(1, 1), std::complex<float>(2, 0)), std::complex<float>(0, 2));
  // Elsewhere exp(w log z): non-integer, complex and large integer exponents.
  for (const auto& [z, w] : {std::pair{C(1.5, -0.5), C(0.3, 0.7)}, std::pair{C(-2, 0.25), C(0.5, 0)},
                             std::pair{C(0.9, 0.1), C(101, 0)}, std::pair{C(0.5, 2), C(-3.5, 1)}}) {
    const std::complex<long double> zl(z.real(), z.imag()), wl(w.real(), w.imag());
    EXPECT_LT(rel(complex_pow(z, w), std::exp(wl * std::log(zl))), 1e-13) << z << " ^ " << w;
  }
  // Integer exponents within the squaring range agree with exp(w log z) to rounding.
  for (int n = -7; n <= 7; ++n) {
    const C z(0.8, -1.3);
    const std::complex<long double> zl(z.real(), z.imag());
    EXPECT_LT(rel(complex_pow(z, C(n, 0)), std::exp(static_cast<long double>(n) * std::log(zl))), 1e-14) << n;
  }
}

}  // namespace
}  // namespace tenferro
