#pragma once
/// \file
/// Element types (`DType`), their C++ types and properties.

#include <complex>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace tenferro {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

/// The element types a dtype-erased `Tensor` can hold. The numeric value is stable.
enum class DType : uint8_t { kBool = 0, kI32, kI64, kF32, kF64, kC64, kC128 };

inline constexpr int kDTypeCount = 7;
inline constexpr DType kAllDTypes[kDTypeCount] = {DType::kBool, DType::kI32,  DType::kI64,
                                                  DType::kF32,  DType::kF64,  DType::kC64,
                                                  DType::kC128};

/// Size of one element in bytes.
constexpr int64_t dtype_size(DType d) noexcept {
  switch (d) {
    case DType::kBool: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kC64: return 8;
    case DType::kC128: return 16;
  }
  return 0;
}
/// Required alignment of one element in bytes.
constexpr int64_t dtype_alignment(DType d) noexcept {
  return d == DType::kC64 ? 4 : d == DType::kC128 ? 8 : dtype_size(d);
}
constexpr bool is_complex(DType d) noexcept { return d == DType::kC64 || d == DType::kC128; }
constexpr bool is_floating(DType d) noexcept { return d == DType::kF32 || d == DType::kF64; }
constexpr bool is_integral(DType d) noexcept { return d == DType::kI32 || d == DType::kI64; }
/// Floating or complex.
constexpr bool is_inexact(DType d) noexcept { return is_floating(d) || is_complex(d); }
/// The component type of a complex dtype (c64 -> f32, c128 -> f64); other dtypes map to
/// themselves.
constexpr DType real_dtype(DType d) noexcept {
  return d == DType::kC64 ? DType::kF32 : d == DType::kC128 ? DType::kF64 : d;
}
/// The complex dtype with the given component (f32 -> c64, f64 -> c128); nullopt otherwise.
constexpr std::optional<DType> complex_dtype(DType d) noexcept {
  if (d == DType::kF32 || d == DType::kC64) return DType::kC64;
  if (d == DType::kF64 || d == DType::kC128) return DType::kC128;
  return std::nullopt;
}

/// Short stable name: "bool", "i32", "i64", "f32", "f64", "c64", "c128".
std::string_view dtype_name(DType d) noexcept;
/// Inverse of dtype_name; also accepts numpy spellings ("float64", "complex128", ...).
std::optional<DType> parse_dtype(std::string_view name) noexcept;

/// `kDTypeOf<T>`: the DType of a C++ element type (only for the seven preset types).
template <class T>
struct DTypeOf;
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<c64> { static constexpr DType value = DType::kC64; };
template <> struct DTypeOf<c128> { static constexpr DType value = DType::kC128; };

/// True for the seven C++ types that have a DType.
template <class T>
concept PresetScalar = requires { DTypeOf<std::remove_cv_t<T>>::value; };

template <PresetScalar T>
inline constexpr DType kDTypeOf = DTypeOf<std::remove_cv_t<T>>::value;

/// `ScalarOf<D>`: the C++ type of a DType.
template <DType D> struct ScalarOfT;
template <> struct ScalarOfT<DType::kBool> { using type = bool; };
template <> struct ScalarOfT<DType::kI32> { using type = int32_t; };
template <> struct ScalarOfT<DType::kI64> { using type = int64_t; };
template <> struct ScalarOfT<DType::kF32> { using type = float; };
template <> struct ScalarOfT<DType::kF64> { using type = double; };
template <> struct ScalarOfT<DType::kC64> { using type = c64; };
template <> struct ScalarOfT<DType::kC128> { using type = c128; };
template <DType D>
using ScalarOf = typename ScalarOfT<D>::type;

/// Calls `f(T{})`-style: `visit_dtype(d, [&]<class T>() { ... })` with T = ScalarOf<d>.
/// The lambda must be a template lambda taking no arguments.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::kBool: return std::forward<F>(f).template operator()<bool>();
    case DType::kI32: return std::forward<F>(f).template operator()<int32_t>();
    case DType::kI64: return std::forward<F>(f).template operator()<int64_t>();
    case DType::kF32: return std::forward<F>(f).template operator()<float>();
    case DType::kF64: return std::forward<F>(f).template operator()<double>();
    case DType::kC64: return std::forward<F>(f).template operator()<c64>();
    case DType::kC128: break;
  }
  return std::forward<F>(f).template operator()<c128>();
}

/// Compile-time properties of a preset scalar type.
template <PresetScalar T>
struct ScalarTraits {
  static constexpr DType dtype = kDTypeOf<T>;
  static constexpr bool is_complex = tenferro::is_complex(dtype);
  using Real = std::conditional_t<std::is_same_v<T, c64>, float,
                                  std::conditional_t<std::is_same_v<T, c128>, double, T>>;
};

}  // namespace tenferro
