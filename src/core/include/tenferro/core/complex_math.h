#pragma once
/// \file
/// Complex functions that the standard library lacks, accurate near zero.

#include <cmath>
#include <complex>

namespace tenferro {

/// exp(z) - 1 without the cancellation of computing exp(z) first: with z = x + iy,
/// Re = expm1(x) cos(y) - 2 sin^2(y / 2) and Im = exp(x) sin(y).
template <class R>
std::complex<R> complex_expm1(std::complex<R> z) noexcept {
  const R x = z.real(), y = z.imag();
  const R s = std::sin(y / 2);
  return {std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y)};
}

/// log(1 + z) without the cancellation of forming 1 + z first: with z = x + iy,
/// Re = log1p(2x + x^2 + y^2) / 2 = log|1 + z| and Im = atan2(y, 1 + x).
template <class R>
std::complex<R> complex_log1p(std::complex<R> z) noexcept {
  const R x = z.real(), y = z.imag();
  return {std::log1p(x * (2 + x) + y * y) / 2, std::atan2(y, 1 + x)};
}

/// z^w with numpy's special cases (npy_cpow), where exp(w log z) is wrong or inexact:
/// z^0 = 1 for every z (NaN, infinities and 0 included: exp(0 log 0) is NaN); a real
/// integer exponent |n| <= 100 by repeated squaring (exact where the products are:
/// (1 + i)^2 = 2i, 3^3 = 27), negative ones as 1 / z^|n|; 0^w = 0 for Re w > 0. Otherwise
/// std::pow, exp(w log z).
template <class R>
std::complex<R> complex_pow(std::complex<R> z, std::complex<R> w) noexcept {
  if (w.imag() == 0) {
    const R n = w.real();
    if (n == 0) return {1, 0};
    if (n == std::trunc(n) && std::abs(n) <= 100) {
      auto k = static_cast<int>(std::abs(n));
      std::complex<R> r(1, 0), base = z;
      for (; k > 0; k >>= 1) {
        if (k & 1) r *= base;
        base *= base;
      }
      return n > 0 ? r : std::complex<R>(1, 0) / r;
    }
  }
  if (z.real() == 0 && z.imag() == 0 && w.real() > 0) return {0, 0};
  return std::pow(z, w);
}

}  // namespace tenferro
