#pragma once
/// \file
/// FunctionRef: a non-owning reference to a callable (no allocation).

#include <type_traits>

namespace tenferro {

/// A non-owning reference to a callable. No allocation; the callable must outlive every
/// call made through the reference (pass it down a call chain, never store it).
template <class Signature>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, Args... args) -> R { return (*static_cast<std::remove_reference_t<F>*>(obj))(args...); }) {}
  R operator()(Args... args) const { return call_(obj_, args...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace tenferro
