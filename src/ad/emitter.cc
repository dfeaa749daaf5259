#include <complex>

#include "rules.h"
#include "tenferro/ad/ad.h"

namespace tenferro::ad {

using program::Attrs;
using program::Extent;
using program::Literal;

namespace detail {
Error ad_error(ErrorCode code, std::string_view transform, std::string message) {
  return Error(ErrorStage::kCompile, code, std::string(transform), std::move(message));
}
}  // namespace detail

Result<Value> Emitter::op(OpCode code, std::span<const Value> operands, Attrs attrs) {
  return b_.op(code, operands, std::move(attrs));
}

Result<Value> Emitter::scalar(DType dtype, double re, double im) {
  Result<Literal> lit = [&]() -> Result<Literal> {
    switch (dtype) {
      case DType::kBool: {
        const bool v = re != 0.0;
        return Literal::from_values<bool>({}, std::span<const bool>(&v, 1));
      }
      case DType::kI32: {
        const auto v = static_cast<int32_t>(re);
        return Literal::from_values<int32_t>({}, std::span<const int32_t>(&v, 1));
      }
      case DType::kI64: {
        const auto v = static_cast<int64_t>(re);
        return Literal::from_values<int64_t>({}, std::span<const int64_t>(&v, 1));
      }
      case DType::kF32: {
        const auto v = static_cast<float>(re);
        return Literal::from_values<float>({}, std::span<const float>(&v, 1));
      }
      case DType::kF64: return Literal::from_values<double>({}, std::span<const double>(&re, 1));
      case DType::kC64: {
        const c64 v(static_cast<float>(re), static_cast<float>(im));
        return Literal::from_values<c64>({}, std::span<const c64>(&v, 1));
      }
      case DType::kC128: {
        const c128 v(re, im);
        return Literal::from_values<c128>({}, std::span<const c128>(&v, 1));
      }
    }
    return detail::ad_error(ErrorCode::kInternal, "ad", "unknown dtype");
  }();
  if (!lit) return lit.error();
  return b_.constant(std::move(*lit));
}

Result<Value> Emitter::full(const ValueType& t, double re, double im) {
  TENFERRO_TRY(Value s, scalar(t.dtype, re, im));
  if (t.shape.empty()) return s;
  return b_.op(OpCode::kBroadcastInDim, {s}, Attrs{.shape = t.shape});
}

Result<Value> Emitter::splat_like(Value like, double re, double im) {
  TENFERRO_TRY(ValueType t, b_.type(like));
  return full(t, re, im);
}

Result<Value> Emitter::conj(Value a) {
  TENFERRO_TRY(ValueType t, b_.type(a));
  if (!is_complex(t.dtype)) return a;
  return b_.op(OpCode::kConj, {a});
}

Result<MaybeValue> Emitter::add(MaybeValue a, MaybeValue b) {
  if (!a) return b;
  if (!b) return a;
  TENFERRO_TRY(Value s, add(*a, *b));
  return MaybeValue(s);
}

Result<Value> Emitter::sum(Value a, std::vector<int64_t> dims) {
  if (dims.empty()) return a;
  return b_.op(OpCode::kReduce, {a}, Attrs{.dims = std::move(dims), .reduce = program::ReduceKind::kSum});
}

Result<Value> Emitter::broadcast(Value a, std::vector<Extent> shape, std::vector<int64_t> dims) {
  return b_.op(OpCode::kBroadcastInDim, {a}, Attrs{.dims = std::move(dims), .shape = std::move(shape)});
}

Result<Value> Emitter::convert(Value a, DType dtype) {
  TENFERRO_TRY(ValueType t, b_.type(a));
  if (t.dtype == dtype) return a;
  return b_.op(OpCode::kConvert, {a}, Attrs{.dtype = dtype});
}

}  // namespace tenferro::ad
