#pragma once
/// \file
/// `Result<T>`: a value or an `Error` (expected-like, ARCHITECTURE §4).

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "tenferro/core/error.h"

namespace tenferro {

template <class T>
class Result;

namespace detail {
template <class T>
struct IsResult : std::false_type {};
template <class T>
struct IsResult<Result<T>> : std::true_type {};
[[noreturn]] void throw_error(const Error& error);
}  // namespace detail

/// Holds either a `T` or an `Error`. Implicitly constructible from both, so a function
/// returning `Result<T>` may `return value;` or `return error;`.
///
/// Accessing `value()` of an error result throws `tenferro::Exception` (a usage bug of
/// the caller); `*` and `->` assume a value (checked by assert in debug builds).
/// Not thread-safe for concurrent mutation, like any value type.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported; use Result<T*>");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Error>, "Result<Error> is ambiguous");

 public:
  using value_type = T;

  template <class U = T,
            std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                 !std::is_same_v<std::remove_cvref_t<U>, Result> &&
                                 !std::is_same_v<std::remove_cvref_t<U>, Error>,
                             int> = 0>
  Result(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}       // NOLINT

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & {
    if (!has_value()) detail::throw_error(std::get<1>(v_));
    return std::get<0>(v_);
  }
  const T& value() const& {
    if (!has_value()) detail::throw_error(std::get<1>(v_));
    return std::get<0>(v_);
  }
  T&& value() && {
    if (!has_value()) detail::throw_error(std::get<1>(v_));
    return std::get<0>(std::move(v_));
  }
  /// The error; precondition: `!has_value()`.
  const Error& error() const& {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(v_));
  }

  T& operator*() & { return *std::get_if<0>(&v_); }
  const T& operator*() const& { return *std::get_if<0>(&v_); }
  T&& operator*() && { return std::move(*std::get_if<0>(&v_)); }
  T* operator->() { return std::get_if<0>(&v_); }
  const T* operator->() const { return std::get_if<0>(&v_); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(fallback));
  }

  /// Calls `f(value)` (which returns a Result) or forwards the error.
  template <class F>
  auto and_then(F&& f) const& {
    using R = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    static_assert(detail::IsResult<R>::value, "and_then: f must return a Result");
    if (!has_value()) return R(std::get<1>(v_));
    return std::forward<F>(f)(std::get<0>(v_));
  }
  template <class F>
  auto and_then(F&& f) && {
    using R = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    static_assert(detail::IsResult<R>::value, "and_then: f must return a Result");
    if (!has_value()) return R(std::get<1>(std::move(v_)));
    return std::forward<F>(f)(std::get<0>(std::move(v_)));
  }
  /// Maps the value with `f` (which returns a plain value) or forwards the error.
  template <class F>
  auto transform(F&& f) const& {
    using U = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    if (!has_value()) return Result<U>(std::get<1>(v_));
    if constexpr (std::is_void_v<U>) {
      std::forward<F>(f)(std::get<0>(v_));
      return Result<U>();  // U is void here (dependent, so clang defers it too)
    } else {
      return Result<U>(std::forward<F>(f)(std::get<0>(v_)));
    }
  }
  template <class F>
  auto transform(F&& f) && {
    using U = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    if (!has_value()) return Result<U>(std::get<1>(std::move(v_)));
    if constexpr (std::is_void_v<U>) {
      std::forward<F>(f)(std::get<0>(std::move(v_)));
      return Result<U>();  // U is void here (dependent, so clang defers it too)
    } else {
      return Result<U>(std::forward<F>(f)(std::get<0>(std::move(v_))));
    }
  }

 private:
  std::variant<T, Error> v_;
};

/// Success without a value, or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool has_value() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  /// Throws `tenferro::Exception` when this holds an error.
  void value() const {
    if (error_) detail::throw_error(*error_);
  }
  const Error& error() const& {
    assert(error_);
    return *error_;
  }
  Error&& error() && {
    assert(error_);
    return std::move(*error_);
  }
  template <class F>
  auto and_then(F&& f) const {
    using R = std::remove_cvref_t<std::invoke_result_t<F>>;
    static_assert(detail::IsResult<R>::value, "and_then: f must return a Result");
    if (error_) return R(*error_);
    return std::forward<F>(f)();
  }
  template <class F>
  auto transform(F&& f) const {
    using U = std::remove_cvref_t<std::invoke_result_t<F>>;
    if (error_) return Result<U>(*error_);
    if constexpr (std::is_void_v<U>) {
      std::forward<F>(f)();
      return Result<U>();  // U is void here (dependent, so clang defers it too)
    } else {
      return Result<U>(std::forward<F>(f)());
    }
  }

 private:
  std::optional<Error> error_;
};

/// An `ok()` helper for readability: `return ok();` in a `Result<void>` function.
inline Result<void> ok() { return {}; }

}  // namespace tenferro

#define TENFERRO_CONCAT_INNER_(a, b) a##b
#define TENFERRO_CONCAT_(a, b) TENFERRO_CONCAT_INNER_(a, b)

/// `TENFERRO_TRY(auto x, expr);` evaluates `expr` (a Result); on error returns the error
/// from the enclosing function (whose return type must be a Result), otherwise binds
/// the value to the declaration `x`.
#define TENFERRO_TRY(decl, expr) \
  TENFERRO_TRY_IMPL_(TENFERRO_CONCAT_(tenferro_try_, __LINE__), decl, expr)
#define TENFERRO_TRY_IMPL_(tmp, decl, expr)   \
  auto tmp = (expr);                          \
  if (!tmp.has_value()) {                     \
    return std::move(tmp).error();            \
  }                                           \
  decl = std::move(tmp).value()

/// `TENFERRO_TRY_VOID(expr);` for a `Result<void>` (or any Result whose value is unused).
#define TENFERRO_TRY_VOID(expr)                                                  \
  do {                                                                           \
    auto tenferro_try_void_ = (expr);                                            \
    if (!tenferro_try_void_.has_value()) return std::move(tenferro_try_void_).error(); \
  } while (false)
