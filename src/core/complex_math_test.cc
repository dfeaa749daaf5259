#include "tenferro/core/complex_math.h"

#include <gtest/gtest.h>

#include <complex>

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

}  // namespace
}  // namespace tenferro
