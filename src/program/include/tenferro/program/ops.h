#pragma once
/// \file
/// The core op vocabulary of semantic programs (ARCHITECTURE §4): op codes, their
/// attributes, small constant literals, and the value type (dtype + symbolic shape).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tenferro/core/dtype.h"
#include "tenferro/core/result.h"
#include "tenferro/program/extent.h"

namespace tenferro::program {

/// The type of a program value: element type and symbolic shape.
struct ValueType {
  DType dtype = DType::kF64;
  std::vector<Extent> shape;
  int64_t rank() const noexcept { return static_cast<int64_t>(shape.size()); }
  friend bool operator==(const ValueType&, const ValueType&) = default;
};

/// Core semantic operations (StableHLO-like semantics; Note [Core op semantics] in
/// ops.cc states the exact meaning of each). kExtension marks an extension op.
// clang-format off
enum class OpCode : uint8_t {
  // elementwise unary
  kNeg, kAbs, kSign, kExp, kLog, kExpm1, kLog1p, kSin, kCos, kTanh, kSqrt, kRsqrt, kConj, kReal, kImag,
  // elementwise binary
  kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kAtan2,
  kCompare, kSelect, kClamp, kConvert, kConstant, kIota,
  // shape and data movement
  kBroadcastInDim, kReshape, kTranspose, kReverse, kSlice, kDynamicSlice, kDynamicUpdateSlice, kConcatenate, kPad,
  kGather, kScatterAdd,
  // reductions and contractions
  kReduce, kDotGeneral, kExtractDiag, kEmbedDiag, kTril, kTriu,
  // ordering
  kArgsort,
  kExtension,
};
// clang-format on
inline constexpr int kCoreOpCount = static_cast<int>(OpCode::kExtension);

/// Elementwise unary ops (neg ... imag): one operand, the result of its shape.
constexpr bool is_elementwise_unary(OpCode c) noexcept { return c <= OpCode::kImag; }
/// Elementwise binary ops (add ... atan2): two operands of one dtype and shape.
constexpr bool is_elementwise_binary(OpCode c) noexcept { return c >= OpCode::kAdd && c <= OpCode::kAtan2; }

/// Stable text name ("add", "dot_general", "scatter_add", ...).
std::string_view op_name(OpCode code) noexcept;
/// Inverse of op_name (core ops only).
std::optional<OpCode> parse_op_name(std::string_view name) noexcept;

enum class CompareDirection : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
enum class ReduceKind : uint8_t { kSum, kProd, kMax, kMin };
std::string_view compare_direction_name(CompareDirection d) noexcept;
std::string_view reduce_kind_name(ReduceKind k) noexcept;

/// A small constant: exact shape, column-major elements stored as raw bytes of the dtype.
/// At most kMaxLiteralElements elements; larger tensors are program bindings.
struct Literal {
  DType dtype = DType::kF64;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // element_count * dtype_size bytes, column-major
  int64_t element_count() const noexcept;
  friend bool operator==(const Literal&, const Literal&) = default;

  /// Builds a literal from column-major values. Errors: kInvalidShape (count mismatch,
  /// negative extent), kInvalidArgument (more than kMaxLiteralElements elements).
  template <PresetScalar T>
  static Result<Literal> from_values(std::vector<int64_t> shape, std::span<const T> values);
  /// Element i as c128 (bool/ints converted) for printing and tests.
  c128 element_as_c128(int64_t i) const noexcept;
};
inline constexpr int64_t kMaxLiteralElements = 4096;

/// Attributes of a core op. Which fields an op uses is fixed by its schema (op_schema);
/// unused fields keep their defaults, so structural equality and hashing over the used
/// fields equal those over the whole struct.
struct Attrs {
  std::vector<int64_t> dims{};        ///< transpose permutation, reverse/reduce axes, broadcast_in_dim mapping
  std::vector<Extent> shape{};        ///< result shape of reshape, broadcast_in_dim, iota
  std::vector<int64_t> start{}, limit{}, stride{};  ///< slice
  std::vector<int64_t> low{}, high{}, interior{};   ///< pad
  std::vector<int64_t> sizes{};       ///< dynamic_slice result extents
  std::vector<int64_t> lhs_batch{}, rhs_batch{}, lhs_contract{}, rhs_contract{};  ///< dot_general
  int64_t axis = 0;                 ///< concatenate, gather, scatter_add, iota, extract/embed_diag
  int64_t k = 0;                    ///< tril/triu diagonal offset
  DType dtype = DType::kF64;        ///< convert target, iota element type
  CompareDirection direction = CompareDirection::kEq;
  ReduceKind reduce = ReduceKind::kSum;
  std::optional<Literal> literal{};   ///< constant
  friend bool operator==(const Attrs&, const Attrs&) = default;
};

/// Attribute keys, in text order.
enum class AttrKey : uint8_t {
  kDims, kShape, kStart, kLimit, kStride, kLow, kHigh, kInterior, kSizes, kLhsBatch, kRhsBatch, kLhsContract,
  kRhsContract, kAxis, kK, kDType, kDirection, kReduce, kValue,
};
std::string_view attr_key_name(AttrKey key) noexcept;

/// The field of `a` that holds attribute `key`, as a pointer in a variant (const when `a`
/// is const): one place that maps keys to fields, shared by encoding, canonicalization,
/// printing and parsing.
template <class A>
auto attr_field(A& a, AttrKey key) noexcept {
  using V = std::variant<decltype(&a.dims), decltype(&a.shape), decltype(&a.axis), decltype(&a.dtype),
                         decltype(&a.direction), decltype(&a.reduce), decltype(&a.literal)>;
  switch (key) {
    case AttrKey::kDims: return V(&a.dims);
    case AttrKey::kShape: return V(&a.shape);
    case AttrKey::kStart: return V(&a.start);
    case AttrKey::kLimit: return V(&a.limit);
    case AttrKey::kStride: return V(&a.stride);
    case AttrKey::kLow: return V(&a.low);
    case AttrKey::kHigh: return V(&a.high);
    case AttrKey::kInterior: return V(&a.interior);
    case AttrKey::kSizes: return V(&a.sizes);
    case AttrKey::kLhsBatch: return V(&a.lhs_batch);
    case AttrKey::kRhsBatch: return V(&a.rhs_batch);
    case AttrKey::kLhsContract: return V(&a.lhs_contract);
    case AttrKey::kRhsContract: return V(&a.rhs_contract);
    case AttrKey::kAxis: return V(&a.axis);
    case AttrKey::kK: return V(&a.k);
    case AttrKey::kDType: return V(&a.dtype);
    case AttrKey::kDirection: return V(&a.direction);
    case AttrKey::kReduce: return V(&a.reduce);
    case AttrKey::kValue: return V(&a.literal);
  }
  return V(&a.dims);
}

/// Static description of a core op: operand count range and attribute keys.
struct OpSchema {
  std::string_view name;
  int min_operands = 0;
  int max_operands = 0;  ///< -1: unbounded (concatenate, dynamic_slice indices)
  std::vector<AttrKey> keys;
};
/// The schema of a core op (precondition: code != kExtension).
const OpSchema& op_schema(OpCode code);

/// Every constraint id that core inference and ProgramBuilder can report (for
/// documentation and for the negative-test coverage check).
const std::vector<std::string>& constraint_ids();

/// Infers the result type of a core op from its operand types and attributes, or returns
/// a kCompile error whose message starts with the violated constraint id
/// (`dot_general_c3: ...`). Relations the symbolic algebra cannot decide are appended
/// to `guards` as (lhs, rhs, constraint id, is_equality) instead of failing. Extents that
/// are not polynomials (max(0, p)) append derived symbols to `symbols`. On error neither
/// `guards` nor `symbols` is changed.
struct PendingGuard {
  Extent lhs, rhs;
  bool equality = true;  ///< lhs == rhs, else lhs <= rhs
  std::string constraint;
};
Result<ValueType> infer_core(OpCode code, const Attrs& attrs, std::span<const ValueType> operands,
                             std::vector<SymbolInfo>& symbols, std::vector<PendingGuard>& guards);

}  // namespace tenferro::program
