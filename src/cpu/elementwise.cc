#include "tenferro/cpu/elementwise.h"
#include "tenferro/core/complex_math.h"
#include "tenferro/core/saturating_cast.h"

#include <cmath>
#include <complex>
#include <limits>
#include <tuple>
#include <type_traits>

#include "map_kernel.h"

namespace tenferro::cpu {

// Note [Integer edge cases]: integer ops never trap. Division by zero yields -1 and
// remainder by zero yields the dividend (XLA's CPU semantics); MIN / -1 yields MIN and
// MIN % -1 yields 0 (two's complement wrap, computed without overflow). neg and abs of
// MIN wrap to MIN. Float-to-integer conversion truncates and saturates; NaN gives 0.

namespace {

template <class T>
inline constexpr bool kIsComplex = tenferro::detail::ComplexScalar<T>;
template <class T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;
template <class T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !kIsBool<T>;
template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

std::string dn(DType d) { return std::string(dtype_name(d)); }

Error dtype_error(const char* op, std::string_view what, DType d) {
  return usage_error(ErrorCode::kDTypeMismatch, op, std::string(what) + " is not defined for dtype " + dn(d));
}

template <class T>
T wrap_neg(T v) {
  if constexpr (kIsInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U{0} - static_cast<U>(v));
  } else {
    return -v;
  }
}

template <class T>
T int_div(T a, T b) {
  if (b == 0) return T(-1);
  if (b == T(-1)) return wrap_neg(a);
  return static_cast<T>(a / b);
}
template <class T>
T int_rem(T a, T b) {
  if (b == 0) return a;
  if (b == T(-1)) return T(0);
  return static_cast<T>(a % b);
}
template <class T>
T int_pow(T base, T exp) {
  if (exp < 0) return base == 1 ? T(1) : base == T(-1) ? ((exp & 1) ? T(-1) : T(1)) : T(0);
  using U = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<U>(base);
  auto e = static_cast<U>(exp);
  while (e) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<T>(result);
}

// ---- Output allocation and destination checks -------------------------------------------

Result<void> check_out(const Tensor& out, DType dtype, const Shape& shape, const char* op) {
  if (!out.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "destination handle is null");
  if (out.dtype() != dtype) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "destination dtype " + dn(out.dtype()) + " differs from result dtype " + dn(dtype));
  }
  if (!(out.shape() == shape)) {
    return usage_error(ErrorCode::kShapeMismatch, op,
                       "destination shape " + format_dims(out.shape()) + " differs from result shape " +
                           format_dims(shape));
  }
  return tenferro::detail::check_mutable(out.storage(), out.layout(), op);
}

// A planned destination (Destination::kPlanned): writable and injective like any
// destination; exclusivity is the caller's plan, so only partial overlap with an input is
// checked (exact aliasing is an in-place update, safe for element-wise maps).
Result<void> check_planned_out(const Tensor& out, DType dtype, const Shape& shape, std::span<const Tensor* const> inputs,
                               const char* op) {
  if (!out.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "destination handle is null");
  if (out.dtype() != dtype || !(out.shape() == shape)) {
    return usage_error(out.dtype() != dtype ? ErrorCode::kDTypeMismatch : ErrorCode::kShapeMismatch, op,
                       "planned destination " + dn(out.dtype()) + format_dims(out.shape()) + " differs from the result " +
                           dn(dtype) + format_dims(shape));
  }
  if (!out.storage()->writable() || !is_injective(out.layout())) {
    return usage_error(ErrorCode::kIncompatibleLayout, op, "planned destination is read-only or not injective");
  }
  for (const Tensor* in : inputs) {
    if (in->storage() == out.storage() &&
        !(in->offset() == out.offset() && in->shape() == out.shape() && in->strides() == out.strides())) {
      return usage_error(ErrorCode::kInvalidArgument, op,
                         "planned destination overlaps an input without being exactly that input");
    }
  }
  return ok();
}

Result<void> check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "tensor handle is null");
  return ok();
}

// ---- Unary ----------------------------------------------------------------------------------

template <class T, class R>
void run_unary(const CpuExecutionContext& ctx, UnaryOp op, const Tensor& x, Tensor& out) {
  const std::array<const void*, 1> in{x.storage()->data()};
  const std::array<const Layout*, 1> lay{&x.layout()};
  void* o = out.storage()->data();
  auto go = [&](auto f) { detail::map_kernel<R, T>(ctx, o, out.layout(), in, lay, f); };
  if constexpr (!std::is_same_v<T, R>) {
    // Complex input, component output.
    switch (op) {
      case UnaryOp::kAbs: go([](T v) -> R { return std::abs(v); }); return;
      case UnaryOp::kReal: go([](T v) -> R { return v.real(); }); return;
      case UnaryOp::kImag: go([](T v) -> R { return v.imag(); }); return;
      default: return;
    }
  } else {
  switch (op) {
    case UnaryOp::kNeg:
      if constexpr (!kIsBool<T>) go([](T v) -> R { return wrap_neg(v); });
      return;
    case UnaryOp::kAbs:
      if constexpr (kIsInt<T>) {
        go([](T v) -> R { return v < 0 ? wrap_neg(v) : v; });
      } else if constexpr (kIsFloat<T>) {
        go([](T v) -> R { return std::fabs(v); });
      }
      return;
    case UnaryOp::kSign:
      if constexpr (kIsComplex<T>) {
        go([](T v) -> R {
          const auto a = std::abs(v);
          return a == 0 ? T(0) : v / a;
        });
      } else if constexpr (kIsFloat<T>) {
        go([](T v) -> R { return std::isnan(v) ? v : static_cast<R>((v > 0) - (v < 0)); });
      } else if constexpr (kIsInt<T>) {
        go([](T v) -> R { return static_cast<R>((v > 0) - (v < 0)); });
      }
      return;
    case UnaryOp::kConj:
      if constexpr (kIsComplex<T>) {
        go([](T v) -> R { return std::conj(v); });
      } else {
        go([](T v) -> R { return v; });
      }
      return;
    case UnaryOp::kReal:
      if constexpr (!kIsComplex<T>) go([](T v) -> R { return v; });
      return;
    case UnaryOp::kImag:
      if constexpr (!kIsComplex<T>) go([](T) -> R { return R{}; });
      return;
    default: break;
  }
  if constexpr (kIsFloat<T> || kIsComplex<T>) {
    switch (op) {
      case UnaryOp::kExp: go([](T v) -> R { return std::exp(v); }); return;
      case UnaryOp::kLog: go([](T v) -> R { return std::log(v); }); return;
      case UnaryOp::kExpm1:
        if constexpr (kIsComplex<T>) {
          go([](T v) -> R { return complex_expm1(v); });
        } else {
          go([](T v) -> R { return std::expm1(v); });
        }
        return;
      case UnaryOp::kLog1p:
        if constexpr (kIsComplex<T>) {
          go([](T v) -> R { return complex_log1p(v); });
        } else {
          go([](T v) -> R { return std::log1p(v); });
        }
        return;
      case UnaryOp::kSin: go([](T v) -> R { return std::sin(v); }); return;
      case UnaryOp::kCos: go([](T v) -> R { return std::cos(v); }); return;
      case UnaryOp::kTanh: go([](T v) -> R { return std::tanh(v); }); return;
      case UnaryOp::kSqrt: go([](T v) -> R { return std::sqrt(v); }); return;
      case UnaryOp::kRsqrt: go([](T v) -> R { return T(1) / std::sqrt(v); }); return;
      default: return;
    }
  }
  }
}

}  // namespace

std::string_view unary_op_name(UnaryOp op) noexcept {
  static constexpr std::string_view kNames[] = {"neg", "abs",  "sign", "exp",  "log",   "expm1", "log1p", "sin",
                                                "cos", "tanh", "sqrt", "rsqrt", "conj", "real",  "imag"};
  return kNames[static_cast<size_t>(op)];
}
std::string_view binary_op_name(BinaryOp op) noexcept {
  static constexpr std::string_view kNames[] = {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"};
  return kNames[static_cast<size_t>(op)];
}
std::string_view compare_op_name(CompareOp op) noexcept {
  static constexpr std::string_view kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return kNames[static_cast<size_t>(op)];
}

Result<Shape> broadcast_shapes(Dims a, Dims b, const char* op) {
  if (a.size() == b.size()) {  // the common case: equal shapes (a plain loop: a few elements)
    size_t k = 0;
    while (k < a.size() && a[k] == b[k]) ++k;
    if (k == a.size()) return Shape(a);
  }
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t ea = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
    const int64_t eb = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      return usage_error(ErrorCode::kShapeMismatch, op,
                         "shapes " + format_dims(a) + " and " + format_dims(b) + " do not broadcast (axis " +
                             std::to_string(k) + " of the result: " + std::to_string(ea) + " vs " + std::to_string(eb) +
                             ")");
    }
    out[k] = ea == 1 ? eb : ea;
  }
  return out;
}

Result<DType> unary_result_dtype(UnaryOp op, DType d) {
  const char* const name = unary_op_name(op).data();  // a literal: NUL-terminated
  switch (op) {
    case UnaryOp::kConj: return d;
    case UnaryOp::kReal:
    case UnaryOp::kImag:
    case UnaryOp::kAbs:
      if (d == DType::kBool && op == UnaryOp::kAbs) return dtype_error(name, name, d);
      return real_dtype(d);
    case UnaryOp::kNeg:
    case UnaryOp::kSign:
      if (d == DType::kBool) return dtype_error(name, name, d);
      return d;
    default:
      if (!is_inexact(d)) return dtype_error(name, name, d);
      return d;
  }
}

namespace {

// Runs a validated unary op (result dtype `rd`) into a checked destination.
void run_unary_checked(const CpuExecutionContext& ctx, UnaryOp op, const Tensor& x, DType rd, Tensor& out) {
  visit_dtype(x.dtype(), [&]<class T>() {
    if (rd == x.dtype()) {
      run_unary<T, T>(ctx, op, x, out);
    } else if constexpr (kIsComplex<T>) {
      run_unary<T, typename T::value_type>(ctx, op, x, out);
    }
  });
}

}  // namespace

Result<void> unary_into(const CpuExecutionContext& ctx, UnaryOp op, const Tensor& x, Tensor& out,
                        Destination destination) {
  const char* const name = unary_op_name(op).data();  // a literal: NUL-terminated
  TENFERRO_TRY_VOID(check_defined(x, name));
  TENFERRO_TRY(DType rd, unary_result_dtype(op, x.dtype()));
  if (destination == Destination::kPlanned) {
    const Tensor* const ins[] = {&x};
    TENFERRO_TRY_VOID(check_planned_out(out, rd, x.shape(), ins, name));
  } else {
    TENFERRO_TRY_VOID(check_out(out, rd, x.shape(), name));
  }
  run_unary_checked(ctx, op, x, rd, out);
  return ok();
}

Result<Tensor> unary(const CpuExecutionContext& ctx, UnaryOp op, const Tensor& x,
                     const std::shared_ptr<HostBufferPool>& pool) {
  const char* const name = unary_op_name(op).data();  // a literal: NUL-terminated
  TENFERRO_TRY_VOID(check_defined(x, name));
  TENFERRO_TRY(DType rd, unary_result_dtype(op, x.dtype()));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(rd, x.shape(), pool));
  run_unary_checked(ctx, op, x, rd, out);  // a fresh compact output needs no destination checks
  return out;
}

// ---- Binary ---------------------------------------------------------------------------------

Result<void> check_binary_dtype(BinaryOp op, DType d) {
  const char* const name = binary_op_name(op).data();  // a literal: NUL-terminated
  bool okay = d != DType::kBool;
  if (op == BinaryOp::kRem || op == BinaryOp::kMax || op == BinaryOp::kMin) okay = okay && !is_complex(d);
  if (op == BinaryOp::kAtan2) okay = is_inexact(d) && !is_complex(d);
  if (!okay) return dtype_error(name, name, d);
  return ok();
}

namespace {

template <class T>
void run_binary(const CpuExecutionContext& ctx, BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out) {
  const std::array<const void*, 2> in{x.storage()->data(), y.storage()->data()};
  const std::array<const Layout*, 2> lay{&x.layout(), &y.layout()};
  void* o = out.storage()->data();
  auto go = [&](auto f) { detail::map_kernel<T, T, T>(ctx, o, out.layout(), in, lay, f); };
  if constexpr (!kIsBool<T>) {
    switch (op) {
      case BinaryOp::kAdd:
        if constexpr (kIsInt<T>) {
          go([](T a, T b) -> T { return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b)); });
        } else {
          go([](T a, T b) -> T { return a + b; });
        }
        return;
      case BinaryOp::kSub:
        if constexpr (kIsInt<T>) {
          go([](T a, T b) -> T { return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b)); });
        } else {
          go([](T a, T b) -> T { return a - b; });
        }
        return;
      case BinaryOp::kMul:
        if constexpr (kIsInt<T>) {
          go([](T a, T b) -> T { return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b)); });
        } else {
          go([](T a, T b) -> T { return a * b; });
        }
        return;
      case BinaryOp::kDiv:
        if constexpr (kIsInt<T>) {
          go([](T a, T b) -> T { return int_div(a, b); });
        } else {
          go([](T a, T b) -> T { return a / b; });
        }
        return;
      case BinaryOp::kPow:
        if constexpr (kIsInt<T>) {
          go([](T a, T b) -> T { return int_pow(a, b); });
        } else if constexpr (kIsComplex<T>) {
          go([](T a, T b) -> T { return complex_pow(a, b); });
        } else {
          go([](T a, T b) -> T { return std::pow(a, b); });
        }
        return;
      default: break;
    }
    if constexpr (!kIsComplex<T>) {
      switch (op) {
        case BinaryOp::kRem:
          if constexpr (kIsInt<T>) {
            go([](T a, T b) -> T { return int_rem(a, b); });
          } else {
            go([](T a, T b) -> T { return std::fmod(a, b); });
          }
          return;
        case BinaryOp::kMax:
          if constexpr (kIsFloat<T>) {
            go([](T a, T b) -> T { return (a != a || a > b) ? a : (b != b ? b : (a == b ? (std::signbit(a) ? b : a) : b)); });
          } else {
            go([](T a, T b) -> T { return a > b ? a : b; });
          }
          return;
        case BinaryOp::kMin:
          if constexpr (kIsFloat<T>) {
            go([](T a, T b) -> T { return (a != a || a < b) ? a : (b != b ? b : (a == b ? (std::signbit(a) ? a : b) : b)); });
          } else {
            go([](T a, T b) -> T { return a < b ? a : b; });
          }
          return;
        case BinaryOp::kAtan2:
          if constexpr (kIsFloat<T>) go([](T a, T b) -> T { return std::atan2(a, b); });
          return;
        default: return;
      }
    }
  }
}

// Broadcast views of the operands to the result shape.
Result<std::pair<Tensor, Tensor>> broadcast_pair(const Tensor& x, const Tensor& y, const Shape& shape) {
  TENFERRO_TRY(Tensor bx, x.broadcast_to(shape));
  TENFERRO_TRY(Tensor by, y.broadcast_to(shape));
  return std::make_pair(std::move(bx), std::move(by));
}

// Calls f(x', y') with the operands as tensors of the result shape `shape`: operands
// already of that shape as they are (no handle copies), others as broadcast views.
template <class F>
Result<void> with_broadcast(const Tensor& x, const Tensor& y, const Shape& shape, F&& f) {
  if (x.shape() == shape && y.shape() == shape) {
    f(x, y);
    return ok();
  }
  TENFERRO_TRY(auto views, broadcast_pair(x, y, shape));
  f(views.first, views.second);
  return ok();
}

// Runs a validated binary op into `out` (result shape `shape`).
Result<void> run_binary_checked(const CpuExecutionContext& ctx, BinaryOp op, const Tensor& x, const Tensor& y,
                                const Shape& shape, Tensor& out) {
  return with_broadcast(x, y, shape, [&](const Tensor& bx, const Tensor& by) {
    visit_dtype(x.dtype(), [&]<class T>() { run_binary<T>(ctx, op, bx, by, out); });
  });
}

Result<void> check_same_dtype(const Tensor& x, const Tensor& y, const char* op) {
  if (x.dtype() != y.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "operand dtypes " + dn(x.dtype()) + " and " + dn(y.dtype()) +
                           " differ (convert explicitly; there is no implicit promotion)");
  }
  return ok();
}

}  // namespace

Result<void> binary_into(const CpuExecutionContext& ctx, BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out,
                         Destination destination) {
  const char* const name = binary_op_name(op).data();  // a literal: NUL-terminated
  TENFERRO_TRY_VOID(check_defined(x, name));
  TENFERRO_TRY_VOID(check_defined(y, name));
  TENFERRO_TRY_VOID(check_same_dtype(x, y, name));
  TENFERRO_TRY_VOID(check_binary_dtype(op, x.dtype()));
  TENFERRO_TRY(Shape shape, broadcast_shapes(x.shape(), y.shape(), name));
  if (destination == Destination::kPlanned) {
    const Tensor* const ins[] = {&x, &y};
    TENFERRO_TRY_VOID(check_planned_out(out, x.dtype(), shape, ins, name));
  } else {
    TENFERRO_TRY_VOID(check_out(out, x.dtype(), shape, name));
  }
  return run_binary_checked(ctx, op, x, y, shape, out);
}

Result<Tensor> binary(const CpuExecutionContext& ctx, BinaryOp op, const Tensor& x, const Tensor& y,
                      const std::shared_ptr<HostBufferPool>& pool) {
  const char* const name = binary_op_name(op).data();  // a literal: NUL-terminated
  TENFERRO_TRY_VOID(check_defined(x, name));
  TENFERRO_TRY_VOID(check_defined(y, name));
  TENFERRO_TRY_VOID(check_same_dtype(x, y, name));
  TENFERRO_TRY_VOID(check_binary_dtype(op, x.dtype()));
  TENFERRO_TRY(Shape shape, broadcast_shapes(x.shape(), y.shape(), name));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(x.dtype(), shape, pool));
  TENFERRO_TRY_VOID(run_binary_checked(ctx, op, x, y, shape, out));
  return out;
}

Result<Tensor> compare(const CpuExecutionContext& ctx, CompareOp op, const Tensor& x, const Tensor& y,
                       const std::shared_ptr<HostBufferPool>& pool) {
  const char* const name = compare_op_name(op).data();  // a literal: NUL-terminated
  TENFERRO_TRY_VOID(check_defined(x, name));
  TENFERRO_TRY_VOID(check_defined(y, name));
  TENFERRO_TRY_VOID(check_same_dtype(x, y, name));
  if (is_complex(x.dtype()) && op != CompareOp::kEq && op != CompareOp::kNe) {
    return dtype_error(name, "ordering comparison", x.dtype());
  }
  TENFERRO_TRY(Shape shape, broadcast_shapes(x.shape(), y.shape(), name));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(DType::kBool, shape, pool));
  TENFERRO_TRY_VOID(with_broadcast(x, y, shape, [&](const Tensor& bx, const Tensor& by) {
    const std::array<const void*, 2> in{bx.storage()->data(), by.storage()->data()};
    const std::array<const Layout*, 2> lay{&bx.layout(), &by.layout()};
    visit_dtype(x.dtype(), [&]<class T>() {
      auto go = [&](auto f) { detail::map_kernel<bool, T, T>(ctx, out.storage()->data(), out.layout(), in, lay, f); };
      switch (op) {
        case CompareOp::kEq: go([](T a, T b) { return a == b; }); return;
        case CompareOp::kNe: go([](T a, T b) { return a != b; }); return;
        default: break;
      }
      if constexpr (!kIsComplex<T>) {
        switch (op) {
          case CompareOp::kLt: go([](T a, T b) { return a < b; }); return;
          case CompareOp::kLe: go([](T a, T b) { return a <= b; }); return;
          case CompareOp::kGt: go([](T a, T b) { return a > b; }); return;
          case CompareOp::kGe: go([](T a, T b) { return a >= b; }); return;
          default: return;
        }
      }
    });
  }));
  return out;
}

namespace {

// Three operands broadcast to their common shape, plus a fresh output of `dtype`.
// (bases/layouts point into `views`: call them on the final object, never store them.)
struct Ternary {
  Tensor out;
  std::array<Tensor, 3> views;
  std::array<const void*, 3> bases() const {
    return {views[0].storage()->data(), views[1].storage()->data(), views[2].storage()->data()};
  }
  std::array<const Layout*, 3> layouts() const { return {&views[0].layout(), &views[1].layout(), &views[2].layout()}; }
};

Result<Ternary> broadcast_ternary(const Tensor& a, const Tensor& b, const Tensor& c, DType dtype, const char* op,
                                  const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY(Shape s1, broadcast_shapes(a.shape(), b.shape(), op));
  TENFERRO_TRY(Shape shape, broadcast_shapes(s1, c.shape(), op));
  Ternary t;
  const Tensor* src[3] = {&a, &b, &c};
  for (size_t i = 0; i < 3; ++i) {
    TENFERRO_TRY(t.views[i], src[i]->broadcast_to(shape));
  }
  TENFERRO_TRY(t.out, Tensor::uninitialized(dtype, shape, pool));
  return t;
}

}  // namespace

Result<Tensor> select(const CpuExecutionContext& ctx, const Tensor& pred, const Tensor& on_true, const Tensor& on_false,
                      const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY_VOID(check_defined(pred, "select"));
  TENFERRO_TRY_VOID(check_defined(on_true, "select"));
  TENFERRO_TRY_VOID(check_defined(on_false, "select"));
  if (pred.dtype() != DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, "select", "predicate dtype is " + dn(pred.dtype()) + ", needs bool");
  }
  TENFERRO_TRY_VOID(check_same_dtype(on_true, on_false, "select"));
  TENFERRO_TRY(Ternary t, broadcast_ternary(pred, on_true, on_false, on_true.dtype(), "select", pool));
  visit_dtype(on_true.dtype(), [&]<class T>() {
    detail::map_kernel<T, bool, T, T>(ctx, t.out.storage()->data(), t.out.layout(), t.bases(), t.layouts(),
                                      [](bool c, T a, T b) { return c ? a : b; });
  });
  return t.out;
}

Result<Tensor> clamp(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& lo, const Tensor& hi,
                     const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY_VOID(check_defined(x, "clamp"));
  TENFERRO_TRY_VOID(check_defined(lo, "clamp"));
  TENFERRO_TRY_VOID(check_defined(hi, "clamp"));
  TENFERRO_TRY_VOID(check_same_dtype(x, lo, "clamp"));
  TENFERRO_TRY_VOID(check_same_dtype(x, hi, "clamp"));
  if (is_complex(x.dtype()) || x.dtype() == DType::kBool) return dtype_error("clamp", "clamp", x.dtype());
  TENFERRO_TRY(Ternary t, broadcast_ternary(x, lo, hi, x.dtype(), "clamp", pool));
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!kIsComplex<T> && !kIsBool<T>) {
      detail::map_kernel<T, T, T, T>(ctx, t.out.storage()->data(), t.out.layout(), t.bases(), t.layouts(),
                                     [](T v, T l, T h) {
                                       // min(max(v, l), h) with NaN propagation, as documented
                                       // (StableHLO's order: h wins when l > h).
                                       if constexpr (std::is_floating_point_v<T>) {
                                         if (std::isnan(v) || std::isnan(l)) return std::isnan(v) ? v : l;
                                         const T m = v < l ? l : v;
                                         return std::isnan(h) ? h : (m > h ? h : m);
                                       } else {
                                         const T m = v < l ? l : v;
                                         return m > h ? h : m;
                                       }
                                     });
    }
  });
  return t.out;
}

namespace {
template <class To, class From>
To convert_one(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else if constexpr (kIsComplex<To>) {
    if constexpr (kIsComplex<From>) {
      return To(static_cast<typename To::value_type>(v.real()), static_cast<typename To::value_type>(v.imag()));
    } else {
      return To(static_cast<typename To::value_type>(v), 0);
    }
  } else if constexpr (kIsComplex<From>) {
    return convert_one<To>(v.real());
  } else if constexpr (kIsInt<To> && kIsFloat<From>) {
    return saturating_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace

Result<Tensor> convert(const CpuExecutionContext& ctx, const Tensor& x, DType dtype,
                       const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY_VOID(check_defined(x, "convert"));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(dtype, x.shape(), pool));
  const std::array<const void*, 1> in{x.storage()->data()};
  const std::array<const Layout*, 1> lay{&x.layout()};
  visit_dtype(x.dtype(), [&]<class From>() {
    visit_dtype(dtype, [&]<class To>() {
      detail::map_kernel<To, From>(ctx, out.storage()->data(), out.layout(), in, lay,
                                   [](From v) { return convert_one<To>(v); });
    });
  });
  return out;
}

}  // namespace tenferro::cpu
