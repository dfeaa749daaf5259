#pragma once
// Internal to the ad module: the core-op rules and shared helpers of the transforms.

#include <span>
#include <vector>

#include "tenferro/ad/ad.h"

namespace tenferro::ad::detail {

/// Error of a transform (stage kCompile).
Error ad_error(ErrorCode code, std::string_view transform, std::string message);

/// Tangent of the result of core op `code` (attributes already moved into the target
/// builder): `in` are the primal operands, `out` the primal result, `tan` the operand
/// tangents (nullopt: zero). Returns nullopt for a zero tangent (non-differentiable op,
/// integer result, or no tangent reaches a differentiable operand).
Result<MaybeValue> jvp_core(Emitter& e, OpCode code, const program::Attrs& attrs, std::span<const Value> in,
                            std::span<const ValueType> in_types, Value out, std::span<const MaybeValue> tan);

/// Which operands of a core op may carry linear values when the op is used linearly
/// (the others must not depend on the linear inputs): additive slots of add, sub, select,
/// pad, concatenate, ...; for mul and dot_general exactly one operand is linear.
enum class Linearity : uint8_t { kNotLinear, kAdditive, kOneFactor };
struct LinearSlots {
  Linearity kind = Linearity::kNotLinear;
  std::vector<bool> slots;  ///< kAdditive: the operands that may be linear
};
LinearSlots linear_slots(OpCode code, const program::Attrs& attrs, std::span<const ValueType> in_types,
                         const ValueType& out_type);

/// Cotangents of the linear operands of a core op used linearly: `in[i]` is the value of
/// a non-linear operand (nullopt for linear ones), `linear[i]` marks the linear ones,
/// `ct` is the result's cotangent. Returns one entry per operand (nullopt where not
/// linear or zero). Errors: kUnsupported when an exact extent is needed and symbolic.
Result<std::vector<MaybeValue>> transpose_core(Emitter& e, OpCode code, const program::Attrs& attrs,
                                               std::span<const MaybeValue> in, std::span<const ValueType> in_types,
                                               const std::vector<bool>& linear, const ValueType& out_type, Value ct);

}  // namespace tenferro::ad::detail
