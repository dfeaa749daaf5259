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

}  // namespace tenferro
