#pragma once
/// \file
/// The library's one float-to-integer conversion rule.

#include <limits>
#include <type_traits>

namespace tenferro {

/// A floating value converted to the integer type I: truncated toward zero, saturating at
/// I's limits, NaN to 0 (a direct cast of an out-of-range value is undefined behaviour).
/// The one float-to-integer rule of the library (kernels, interpreter, StableHLO constants).
template <class I, class F>
constexpr I saturating_cast(F v) noexcept {
  static_assert(std::is_integral_v<I> && std::is_floating_point_v<F>);
  if (v != v) return I(0);
  if (v <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace tenferro
