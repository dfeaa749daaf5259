#pragma once
/// \file
/// numpy's sort order of one dtype's values, shared by every argsort implementation.

#include <cmath>
#include <complex>
#include <type_traits>

namespace tenferro {

/// Whether `a` sorts before `b` in numpy's order: reals ascending with NaN last (-0 equal
/// to 0); complex values lexicographically by real then imaginary part, in the NaN classes
/// [R + Rj, R + nanj, nan + Rj, nan + nanj], each class ordered by its non-NaN parts
/// (numpy's documented complex order). A strict weak order: equal values compare false
/// both ways, so a stable sort keeps them in place.
template <class T>
bool numpy_less(const T& a, const T& b) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return !std::isnan(a) && (std::isnan(b) || a < b);
  } else if constexpr (requires { a.real(); }) {
    const bool ar = std::isnan(a.real()), ai = std::isnan(a.imag()), br = std::isnan(b.real()),
               bi = std::isnan(b.imag());
    const int ca = 2 * ar + ai, cb = 2 * br + bi;  // the NaN class
    if (ca != cb) return ca < cb;
    if (ar) return a.imag() < b.imag();  // nan + Rj (nan + nanj: false)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  } else {
    return a < b;
  }
}

}  // namespace tenferro
