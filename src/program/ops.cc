#include "tenferro/program/ops.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace tenferro::program {

// Note [Core op semantics]: core ops follow StableHLO where it has the op, with these
// precise choices.
// - Elementwise ops need equal operand shapes (no implicit broadcasting; use
//   broadcast_in_dim). abs of a complex value is real; conj/real/imag take every dtype
//   (numpy's): of a real or bool value they are the value, the value and zeros; sign of complex is z/|z| (0 at 0).
//   Integer div/rem truncate toward zero (division by zero is a runtime error in the interpreter), rem takes the sign
//   of the dividend, pow on integers needs a non-negative exponent. max/min propagate NaN.
//   atan2(y, x) is the angle of (x, y) in [-pi, pi] (C's atan2, signed zeros included), of
//   real floating values only (numpy's arctan2; StableHLO also defines it for complex).
// - compare on complex supports eq/ne only; clamp(min, x, max) accepts scalar bounds.
// - convert: complex -> real keeps the real part, float -> int truncates toward zero,
//   anything -> bool is `!= 0`.
// - iota fills `axis` with 0, 1, 2, ... along that axis.
// - broadcast_in_dim maps operand axis i to result axis dims[i] (strictly increasing);
//   operand extent 1 broadcasts.
// - slice: 0 <= start <= limit <= extent, stride >= 1. dynamic_slice and
//   dynamic_update_slice clamp their scalar integer start indices into range, as StableHLO.
// - pad(x, value): low/high may be negative (cropping); interior >= 0. An axis of extent
//   d becomes low + high + max(0, d + (d-1)*interior) long (d = 0: low + high, as
//   numpy/StableHLO); for a symbolic d with interior > 0 that is a derived symbol.
// - gather(x, indices) {axis}: numpy `take`: result = x.shape[:axis] + indices.shape +
//   x.shape[axis+1:], indices clamped into range; a non-empty result gathered from an
//   axis of extent 0 is an out_of_range error at completion (nothing to clamp to, as
//   numpy's take). scatter_add(x, indices, updates)
//   {axis}: the adjoint of gather with out-of-range indices skipped.
// - reduce {kind, dims}: sum/prod/max/min over the listed axes (removed from the result);
//   max/min of bools are any/all (StableHLO's maximum/minimum of i1), sum/prod of bools
//   are not defined.
// - reshape keeps column-major element order (the library's layout convention; a
//   StableHLO lowering adds the transposes its row-major reshape needs).
// - dot_general: result axes are [batch, lhs free, rhs free], free axes in operand order;
//   of bools, an OR of ANDs.
// - extract_diag {axis}: axes axis and axis+1 (equal extents) become one axis at `axis`
//   holding the diagonal; embed_diag {axis} is its inverse (zeros off the diagonal).
// - argsort {axis}: the positions along `axis` that sort each line ascending, as int64
//   (numpy's argsort with kind='stable': equal values keep their order, -0 equals 0, NaN
//   last; complex values lexicographically with numpy's NaN classes: numpy_less in
//   tenferro/core/order.h). StableHLO: a stable sort of the values and an iota with that
//   less-than as comparator, keeping the iota.
// - tril/triu {k}: on the last two axes, keep elements with col - row <= k (tril) or
//   >= k (triu), zero the rest.

namespace {

struct OpInfo {
  OpCode code;
  std::string_view name;
};

// clang-format off
constexpr std::array<std::string_view, kCoreOpCount> kNames = {
    "neg", "abs", "sign", "exp", "log", "expm1", "log1p", "sin", "cos", "tanh", "sqrt", "rsqrt", "conj", "real", "imag",
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
    "compare", "select", "clamp", "convert", "constant", "iota",
    "broadcast_in_dim", "reshape", "transpose", "reverse", "slice", "dynamic_slice", "dynamic_update_slice",
    "concatenate", "pad", "gather", "scatter_add",
    "reduce", "dot_general", "extract_diag", "embed_diag", "tril", "triu", "argsort"};
// clang-format on

std::string s(int64_t v) { return std::to_string(v); }
std::string list(std::span<const int64_t> v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(s(v[i]));
  return out + "]";
}

}  // namespace

std::string_view op_name(OpCode code) noexcept {
  const int i = static_cast<int>(code);
  return i < kCoreOpCount ? kNames[static_cast<size_t>(i)] : std::string_view("extension");
}

std::optional<OpCode> parse_op_name(std::string_view name) noexcept {
  for (int i = 0; i < kCoreOpCount; ++i) {
    if (kNames[static_cast<size_t>(i)] == name) return static_cast<OpCode>(i);
  }
  return std::nullopt;
}

std::string_view compare_direction_name(CompareDirection d) noexcept {
  constexpr std::array<std::string_view, 6> n = {"eq", "ne", "lt", "le", "gt", "ge"};
  return n[static_cast<size_t>(d)];
}
std::string_view reduce_kind_name(ReduceKind k) noexcept {
  constexpr std::array<std::string_view, 4> n = {"sum", "prod", "max", "min"};
  return n[static_cast<size_t>(k)];
}

std::string_view attr_key_name(AttrKey key) noexcept {
  constexpr std::array<std::string_view, 19> n = {
      "dims",  "shape",     "start",        "limit",        "stride", "low", "high",  "interior",  "sizes", "lhs_batch",
      "rhs_batch", "lhs_contract", "rhs_contract", "axis", "k",   "dtype", "direction", "reduce", "value"};
  return n[static_cast<size_t>(key)];
}

int64_t Literal::element_count() const noexcept {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

template <PresetScalar T>
Result<Literal> Literal::from_values(std::vector<int64_t> shape, std::span<const T> values) {
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e < 0) return usage_error(ErrorCode::kInvalidShape, "Literal", "negative extent " + s(e));
    if (__builtin_mul_overflow(n, e, &n)) return usage_error(ErrorCode::kOverflow, "Literal", "element count overflows");
  }
  if (n != static_cast<int64_t>(values.size())) {
    return usage_error(ErrorCode::kInvalidShape, "Literal",
                       "shape " + list(shape) + " has " + s(n) + " elements but " + s(static_cast<int64_t>(values.size())) +
                           " values were given");
  }
  if (n > kMaxLiteralElements) {
    return usage_error(ErrorCode::kInvalidArgument, "Literal",
                       s(n) + " elements exceed the literal limit " + s(kMaxLiteralElements) +
                           "; pass large tensors as program bindings");
  }
  Literal lit;
  lit.dtype = kDTypeOf<T>;
  lit.shape = std::move(shape);
  lit.bytes.resize(static_cast<size_t>(n) * sizeof(T));
  if (n > 0) std::memcpy(lit.bytes.data(), values.data(), lit.bytes.size());
  return lit;
}
template Result<Literal> Literal::from_values<bool>(std::vector<int64_t>, std::span<const bool>);
template Result<Literal> Literal::from_values<int32_t>(std::vector<int64_t>, std::span<const int32_t>);
template Result<Literal> Literal::from_values<int64_t>(std::vector<int64_t>, std::span<const int64_t>);
template Result<Literal> Literal::from_values<float>(std::vector<int64_t>, std::span<const float>);
template Result<Literal> Literal::from_values<double>(std::vector<int64_t>, std::span<const double>);
template Result<Literal> Literal::from_values<c64>(std::vector<int64_t>, std::span<const c64>);
template Result<Literal> Literal::from_values<c128>(std::vector<int64_t>, std::span<const c128>);

c128 Literal::element_as_c128(int64_t i) const noexcept {
  const uint8_t* p = bytes.data() + static_cast<size_t>(i * dtype_size(dtype));
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (dtype) {
    case DType::kBool: return c128(get(bool{}) ? 1.0 : 0.0, 0.0);
    case DType::kI32: return c128(static_cast<double>(get(int32_t{})), 0.0);
    case DType::kI64: return c128(static_cast<double>(get(int64_t{})), 0.0);
    case DType::kF32: return c128(static_cast<double>(get(float{})), 0.0);
    case DType::kF64: return c128(get(double{}), 0.0);
    case DType::kC64: {
      const c64 v = get(c64{});
      return c128(static_cast<double>(v.real()), static_cast<double>(v.imag()));
    }
    case DType::kC128: return get(c128{});
  }
  return {};
}

const OpSchema& op_schema(OpCode code) {
  using K = AttrKey;
  static const std::array<OpSchema, kCoreOpCount> schemas = [] {
    std::array<OpSchema, kCoreOpCount> t{};
    for (int i = 0; i < kCoreOpCount; ++i) {
      const auto c = static_cast<OpCode>(i);
      OpSchema& sc = t[static_cast<size_t>(i)];
      sc.name = kNames[static_cast<size_t>(i)];
      if (is_elementwise_unary(c)) sc.min_operands = sc.max_operands = 1;
      if (is_elementwise_binary(c)) sc.min_operands = sc.max_operands = 2;
    }
    auto set = [&](OpCode c, int lo, int hi, std::vector<K> keys) {
      OpSchema& sc = t[static_cast<size_t>(c)];
      sc.min_operands = lo;
      sc.max_operands = hi;
      sc.keys = std::move(keys);
    };
    set(OpCode::kCompare, 2, 2, {K::kDirection});
    set(OpCode::kSelect, 3, 3, {});
    set(OpCode::kClamp, 3, 3, {});
    set(OpCode::kConvert, 1, 1, {K::kDType});
    set(OpCode::kConstant, 0, 0, {K::kValue});
    set(OpCode::kIota, 0, 0, {K::kShape, K::kAxis, K::kDType});
    set(OpCode::kBroadcastInDim, 1, 1, {K::kDims, K::kShape});
    set(OpCode::kReshape, 1, 1, {K::kShape});
    set(OpCode::kTranspose, 1, 1, {K::kDims});
    set(OpCode::kReverse, 1, 1, {K::kDims});
    set(OpCode::kSlice, 1, 1, {K::kStart, K::kLimit, K::kStride});
    set(OpCode::kDynamicSlice, 1, -1, {K::kSizes});
    set(OpCode::kDynamicUpdateSlice, 2, -1, {});
    set(OpCode::kConcatenate, 1, -1, {K::kAxis});
    set(OpCode::kPad, 2, 2, {K::kLow, K::kHigh, K::kInterior});
    set(OpCode::kGather, 2, 2, {K::kAxis});
    set(OpCode::kScatterAdd, 3, 3, {K::kAxis});
    set(OpCode::kReduce, 1, 1, {K::kDims, K::kReduce});
    set(OpCode::kDotGeneral, 2, 2, {K::kLhsBatch, K::kRhsBatch, K::kLhsContract, K::kRhsContract});
    set(OpCode::kExtractDiag, 1, 1, {K::kAxis});
    set(OpCode::kEmbedDiag, 1, 1, {K::kAxis});
    set(OpCode::kTril, 1, 1, {K::kK});
    set(OpCode::kTriu, 1, 1, {K::kK});
    set(OpCode::kArgsort, 1, 1, {K::kAxis});
    return t;
  }();
  return schemas[static_cast<size_t>(code)];
}

const std::vector<std::string>& constraint_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> v;
    auto add = [&](OpCode c, int n) {
      for (int i = 0; i < n; ++i) v.push_back(std::string(op_name(c)).append("_c").append(s(i)));
    };
    for (int i = 0; i <= static_cast<int>(OpCode::kImag); ++i) {
      const auto c = static_cast<OpCode>(i);  // conj / real / imag take every dtype
      add(c, c == OpCode::kConj || c == OpCode::kReal || c == OpCode::kImag ? 1 : 2);
    }
    for (int i = static_cast<int>(OpCode::kAdd); i <= static_cast<int>(OpCode::kAtan2); ++i)
      add(static_cast<OpCode>(i), 4);
    add(OpCode::kCompare, 4);
    add(OpCode::kSelect, 4);
    add(OpCode::kClamp, 4);
    add(OpCode::kConvert, 1);
    add(OpCode::kConstant, 3);
    add(OpCode::kIota, 3);
    add(OpCode::kBroadcastInDim, 5);
    add(OpCode::kReshape, 3);
    add(OpCode::kTranspose, 2);
    add(OpCode::kReverse, 2);
    add(OpCode::kSlice, 4);
    add(OpCode::kDynamicSlice, 4);
    add(OpCode::kDynamicUpdateSlice, 5);
    add(OpCode::kConcatenate, 4);
    add(OpCode::kPad, 5);
    add(OpCode::kGather, 3);
    add(OpCode::kScatterAdd, 5);
    add(OpCode::kReduce, 3);
    add(OpCode::kDotGeneral, 6);
    add(OpCode::kExtractDiag, 3);
    add(OpCode::kEmbedDiag, 2);
    add(OpCode::kTril, 2);
    add(OpCode::kTriu, 2);
    add(OpCode::kArgsort, 2);
    v.push_back("iota_c9");
    v.push_back("broadcast_in_dim_c9");
    for (const char* id : {"input_c1", "program_c1", "program_c2", "extension_c1", "extension_c2", "extension_c3",
                           "extension_c4", "extension_c5", "import_c1", "import_c2"}) {
      v.push_back(id);
    }
    return v;
  }();
  return ids;
}

// ---- Inference ---------------------------------------------------------------------------------

namespace {

class Infer {
 public:
  Infer(OpCode code, std::vector<SymbolInfo>& symbols, std::vector<PendingGuard>& guards)
      : code_(code), symbols_(symbols), guards_(guards) {}

  Error fail(int id, ErrorCode ec, const std::string& msg) const {
    return Error(ErrorStage::kCompile, ec, std::string(op_name(code_)),
                 std::string(op_name(code_)).append("_c").append(s(id)).append(": ").append(msg));
  }
  std::string ext(const Extent& e) const { return e.to_string(symbols_); }
  std::string shape(const std::vector<Extent>& sh) const {
    std::string out = "[";
    for (size_t i = 0; i < sh.size(); ++i) out.append(i ? ", " : "").append(ext(sh[i]));
    return out + "]";
  }
  std::string type(const ValueType& t) const { return std::string(dtype_name(t.dtype)).append(shape(t.shape)); }

  // a == b: proved, refuted (error), or a guard.
  Result<Extent> unify(const Extent& a, const Extent& b, int id, const std::string& what) {
    if (a == b) return a;
    if (a.is_exact() && b.is_exact()) {
      return fail(id, ErrorCode::kShapeMismatch, what + ": " + ext(a) + " != " + ext(b));
    }
    guards_.push_back({a, b, true, std::string(op_name(code_)).append("_c").append(s(id))});
    // The result takes the exact side, else the canonically smaller one, so that operand
    // order (e.g. of a commutative op) never changes the inferred type.
    if (a.is_exact()) return a;
    if (b.is_exact()) return b;
    std::vector<uint8_t> ea, eb;
    a.encode(ea);
    b.encode(eb);
    return eb < ea ? b : a;
  }
  // a <= b: proved, refuted, or a guard.
  Result<void> at_most(const Extent& a, const Extent& b, int id, const std::string& what) {
    const Extent d = b - a;
    if (d.is_exact()) {
      if (d.exact_value() >= 0) return {};
      return fail(id, ErrorCode::kOutOfRange, what + ": " + ext(a) + " > " + ext(b));
    }
    if (auto ub = b.upper_bound(symbols_); ub && a.is_exact() && a.exact_value() > *ub) {
      return fail(id, ErrorCode::kOutOfRange, what + ": " + ext(a) + " exceeds the bound " + s(*ub) + " of " + ext(b));
    }
    guards_.push_back({a, b, false, std::string(op_name(code_)).append("_c").append(s(id))});
    return {};
  }
  Result<std::vector<Extent>> same_shape(const ValueType& a, const ValueType& b, int id) {
    if (a.rank() != b.rank()) {
      return fail(id, ErrorCode::kShapeMismatch, "operand shapes " + shape(a.shape) + " and " + shape(b.shape) + " differ");
    }
    std::vector<Extent> out;
    for (size_t i = 0; i < a.shape.size(); ++i) {
      TENFERRO_TRY(Extent e, unify(a.shape[i], b.shape[i], id, "operand shapes differ in axis " + s(static_cast<int64_t>(i))));
      out.push_back(std::move(e));
    }
    return out;
  }
  Result<void> axes(std::span<const int64_t> ax, int64_t rank, int id, const char* what, bool unique = true) const {
    std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
    for (int64_t a : ax) {
      if (a < 0 || a >= rank) {
        return fail(id, ErrorCode::kOutOfRange, std::string(what) + " " + list(ax) + ": axis " + s(a) +
                                                    " is outside [0, " + s(rank) + ")");
      }
      if (unique && seen[static_cast<size_t>(a)]) {
        return fail(id, ErrorCode::kInvalidArgument, std::string(what) + " " + list(ax) + " repeats axis " + s(a));
      }
      seen[static_cast<size_t>(a)] = true;
    }
    return {};
  }
  Result<void> dtype_is(const ValueType& t, bool ok, int id, const char* need) const {
    if (ok) return {};
    return fail(id, ErrorCode::kDTypeMismatch, std::string("dtype ").append(dtype_name(t.dtype)).append(" is not ") + need);
  }

  // max(0, p), possibly a new derived symbol of the table (Note [Derived symbols]).
  Extent max0(const Extent& p) { return program::max0(p, symbols_); }

  OpCode code_;
  std::vector<SymbolInfo>& symbols_;
  std::vector<PendingGuard>& guards_;
};

bool numeric(DType d) { return d != DType::kBool; }
bool ordered(DType d) { return !is_complex(d); }

}  // namespace

namespace {
Result<ValueType> infer_rule(OpCode code, const Attrs& at, std::span<const ValueType> in,
                             std::vector<SymbolInfo>& symbols, std::vector<PendingGuard>& guards) {
  Infer I(code, symbols, guards);
  const OpSchema& sc = op_schema(code);
  const int n = static_cast<int>(in.size());
  if (n < sc.min_operands || (sc.max_operands >= 0 && n > sc.max_operands)) {
    return I.fail(0, ErrorCode::kInvalidArgument,
                  "takes " + (sc.max_operands == sc.min_operands ? s(sc.min_operands)
                              : sc.max_operands < 0              ? "at least " + s(sc.min_operands)
                                                                 : s(sc.min_operands) + ".." + s(sc.max_operands)) +
                      " operands, got " + s(n));
  }
  if (is_elementwise_unary(code)) {
    const ValueType& x = in[0];
    ValueType r = x;
    switch (code) {
      case OpCode::kNeg:
      case OpCode::kSign: TENFERRO_TRY_VOID(I.dtype_is(x, numeric(x.dtype), 1, "numeric")); break;
      case OpCode::kAbs:
        TENFERRO_TRY_VOID(I.dtype_is(x, numeric(x.dtype), 1, "numeric"));
        r.dtype = real_dtype(x.dtype);
        break;
      // Every dtype (Note [Core op semantics]).
      case OpCode::kConj: break;
      case OpCode::kReal:
      case OpCode::kImag: r.dtype = real_dtype(x.dtype); break;
      default: TENFERRO_TRY_VOID(I.dtype_is(x, is_inexact(x.dtype), 1, "floating or complex")); break;
    }
    return r;
  }
  if (is_elementwise_binary(code)) {
    if (in[0].dtype != in[1].dtype) {
      return I.fail(1, ErrorCode::kDTypeMismatch, "operand dtypes " + I.type(in[0]) + " and " + I.type(in[1]) + " differ");
    }
    const DType d = in[0].dtype;
    const bool real_only = code == OpCode::kRem || code == OpCode::kMax || code == OpCode::kMin;
    const bool ok = code == OpCode::kAtan2 ? is_inexact(d) && !is_complex(d)
                    : real_only            ? ordered(d) && numeric(d)
                                           : numeric(d);
    TENFERRO_TRY_VOID(I.dtype_is(in[0], ok, 3,
                                 code == OpCode::kAtan2 ? "floating"
                                 : real_only            ? "a real numeric type"
                                                        : "numeric"));
    TENFERRO_TRY(auto sh, I.same_shape(in[0], in[1], 2));
    return ValueType{d, std::move(sh)};
  }
  switch (code) {
    case OpCode::kCompare: {
      if (in[0].dtype != in[1].dtype) {
        return I.fail(1, ErrorCode::kDTypeMismatch, "operand dtypes " + I.type(in[0]) + " and " + I.type(in[1]) + " differ");
      }
      TENFERRO_TRY(auto sh, I.same_shape(in[0], in[1], 2));
      if (is_complex(in[0].dtype) && at.direction != CompareDirection::kEq && at.direction != CompareDirection::kNe) {
        return I.fail(3, ErrorCode::kDTypeMismatch,
                      std::string("direction ").append(compare_direction_name(at.direction)) + " is not defined for complex");
      }
      return ValueType{DType::kBool, std::move(sh)};
    }
    case OpCode::kSelect: {
      TENFERRO_TRY_VOID(I.dtype_is(in[0], in[0].dtype == DType::kBool, 1, "bool (predicate)"));
      if (in[1].dtype != in[2].dtype) {
        return I.fail(2, ErrorCode::kDTypeMismatch, "branch dtypes " + I.type(in[1]) + " and " + I.type(in[2]) + " differ");
      }
      TENFERRO_TRY(auto sh, I.same_shape(in[1], in[2], 3));
      TENFERRO_TRY(sh, I.same_shape(in[0], ValueType{in[1].dtype, sh}, 3));
      return ValueType{in[1].dtype, std::move(sh)};
    }
    case OpCode::kClamp: {
      const ValueType& x = in[1];
      for (int i : {0, 2}) {
        if (in[static_cast<size_t>(i)].dtype != x.dtype) {
          return I.fail(1, ErrorCode::kDTypeMismatch, "bound " + I.type(in[static_cast<size_t>(i)]) + " and operand " + I.type(x) + " differ in dtype");
        }
        if (in[static_cast<size_t>(i)].rank() != 0) TENFERRO_TRY_VOID(I.same_shape(in[static_cast<size_t>(i)], x, 2));
      }
      TENFERRO_TRY_VOID(I.dtype_is(x, ordered(x.dtype) && numeric(x.dtype), 3, "a real numeric type"));
      return x;
    }
    case OpCode::kConvert: return ValueType{at.dtype, in[0].shape};
    case OpCode::kConstant: {
      if (!at.literal) return I.fail(1, ErrorCode::kInvalidArgument, "constant without a value");
      const Literal& l = *at.literal;
      if (l.bytes.size() != static_cast<size_t>(l.element_count() * dtype_size(l.dtype))) {
        return I.fail(1, ErrorCode::kInvalidShape, "literal byte count does not match its shape");
      }
      if (l.element_count() > kMaxLiteralElements) {
        return I.fail(2, ErrorCode::kInvalidArgument,
                      s(l.element_count()) + " elements exceed the literal limit " + s(kMaxLiteralElements));
      }
      ValueType r{l.dtype, {}};
      for (int64_t e : l.shape) r.shape.push_back(Extent::exact(e));
      return r;
    }
    case OpCode::kIota: {
      if (at.axis < 0 || at.axis >= static_cast<int64_t>(at.shape.size())) {
        return I.fail(1, ErrorCode::kOutOfRange, "axis " + s(at.axis) + " is outside [0, " + s(static_cast<int64_t>(at.shape.size())) + ")");
      }
      if (at.dtype == DType::kBool) return I.fail(2, ErrorCode::kDTypeMismatch, "iota of bool");
      return ValueType{at.dtype, at.shape};
    }
    case OpCode::kBroadcastInDim: {
      const ValueType& x = in[0];
      if (static_cast<int64_t>(at.dims.size()) != x.rank()) {
        return I.fail(1, ErrorCode::kInvalidArgument, "dims " + list(at.dims) + " must have one entry per operand axis (" + s(x.rank()) + ")");
      }
      TENFERRO_TRY_VOID(I.axes(at.dims, static_cast<int64_t>(at.shape.size()), 2, "dims"));
      for (size_t i = 1; i < at.dims.size(); ++i) {
        if (at.dims[i] <= at.dims[i - 1]) return I.fail(3, ErrorCode::kInvalidArgument, "dims " + list(at.dims) + " must increase");
      }
      for (size_t i = 0; i < at.dims.size(); ++i) {
        const Extent& src = x.shape[i];
        if (src.is_exact() && src.exact_value() == 1) continue;
        TENFERRO_TRY_VOID(I.unify(src, at.shape[static_cast<size_t>(at.dims[i])], 4,
                                  "operand axis " + s(static_cast<int64_t>(i)) + " must be 1 or equal result axis " + s(at.dims[i])));
      }
      return ValueType{x.dtype, at.shape};
    }
    case OpCode::kReshape: {
      for (const Extent& e : at.shape) {
        if (e.is_exact() && e.exact_value() < 0) return I.fail(2, ErrorCode::kInvalidShape, "negative extent " + I.ext(e));
      }
      TENFERRO_TRY_VOID(I.unify(product(in[0].shape), product(at.shape), 1,
                                "element counts of " + I.shape(in[0].shape) + " and " + I.shape(at.shape) + " differ"));
      return ValueType{in[0].dtype, at.shape};
    }
    case OpCode::kTranspose: {
      const ValueType& x = in[0];
      if (static_cast<int64_t>(at.dims.size()) != x.rank()) {
        return I.fail(1, ErrorCode::kInvalidPermutation, "permutation " + list(at.dims) + " is not of length " + s(x.rank()));
      }
      TENFERRO_TRY_VOID(I.axes(at.dims, x.rank(), 1, "permutation"));
      ValueType r{x.dtype, {}};
      for (int64_t p : at.dims) r.shape.push_back(x.shape[static_cast<size_t>(p)]);
      return r;
    }
    case OpCode::kReverse: {
      TENFERRO_TRY_VOID(I.axes(at.dims, in[0].rank(), 1, "dims"));
      return in[0];
    }
    case OpCode::kSlice: {
      const ValueType& x = in[0];
      const auto r = static_cast<size_t>(x.rank());
      if (at.start.size() != r || at.limit.size() != r || at.stride.size() != r) {
        return I.fail(1, ErrorCode::kInvalidArgument, "start/limit/stride need " + s(x.rank()) + " entries each");
      }
      ValueType out{x.dtype, {}};
      for (size_t i = 0; i < r; ++i) {
        if (at.stride[i] < 1) return I.fail(3, ErrorCode::kInvalidArgument, "stride " + s(at.stride[i]) + " in axis " + s(static_cast<int64_t>(i)) + " is < 1");
        if (at.start[i] < 0 || at.start[i] > at.limit[i]) {
          return I.fail(2, ErrorCode::kOutOfRange, "axis " + s(static_cast<int64_t>(i)) + ": need 0 <= start " + s(at.start[i]) + " <= limit " + s(at.limit[i]));
        }
        TENFERRO_TRY_VOID(I.at_most(Extent::exact(at.limit[i]), x.shape[i], 2, "axis " + s(static_cast<int64_t>(i)) + " limit"));
        // ceil((limit - start) / stride) without overflow (0 <= start <= limit here).
        const int64_t span = at.limit[i] - at.start[i];
        out.shape.push_back(Extent::exact(span == 0 ? 0 : (span - 1) / at.stride[i] + 1));
      }
      return out;
    }
    case OpCode::kDynamicSlice: {
      const ValueType& x = in[0];
      if (n - 1 != x.rank() || static_cast<int64_t>(at.sizes.size()) != x.rank()) {
        return I.fail(1, ErrorCode::kInvalidArgument, "needs one start index operand and one size per axis (" + s(x.rank()) + ")");
      }
      ValueType out{x.dtype, {}};
      for (size_t i = 0; i < at.sizes.size(); ++i) {
        const ValueType& idx = in[i + 1];
        if (idx.rank() != 0 || !is_integral(idx.dtype)) return I.fail(2, ErrorCode::kDTypeMismatch, "start index " + s(static_cast<int64_t>(i)) + " must be an integer scalar, got " + I.type(idx));
        if (at.sizes[i] < 0) return I.fail(3, ErrorCode::kOutOfRange, "negative size " + s(at.sizes[i]));
        TENFERRO_TRY_VOID(I.at_most(Extent::exact(at.sizes[i]), x.shape[i], 3, "size of axis " + s(static_cast<int64_t>(i))));
        out.shape.push_back(Extent::exact(at.sizes[i]));
      }
      return out;
    }
    case OpCode::kDynamicUpdateSlice: {
      const ValueType& x = in[0];
      const ValueType& u = in[1];
      if (u.dtype != x.dtype) return I.fail(1, ErrorCode::kDTypeMismatch, "update " + I.type(u) + " and operand " + I.type(x) + " differ in dtype");
      if (u.rank() != x.rank() || n - 2 != x.rank()) {
        return I.fail(2, ErrorCode::kInvalidArgument, "update rank and start index count must equal the operand rank " + s(x.rank()));
      }
      for (size_t i = 0; i < x.shape.size(); ++i) {
        const ValueType& idx = in[i + 2];
        if (idx.rank() != 0 || !is_integral(idx.dtype)) return I.fail(3, ErrorCode::kDTypeMismatch, "start index " + s(static_cast<int64_t>(i)) + " must be an integer scalar, got " + I.type(idx));
        TENFERRO_TRY_VOID(I.at_most(u.shape[i], x.shape[i], 4, "update axis " + s(static_cast<int64_t>(i))));
      }
      return x;
    }
    case OpCode::kConcatenate: {
      const ValueType& x = in[0];
      if (at.axis < 0 || at.axis >= x.rank()) return I.fail(1, ErrorCode::kOutOfRange, "axis " + s(at.axis) + " is outside [0, " + s(x.rank()) + ")");
      ValueType out = x;
      for (int i = 1; i < n; ++i) {
        const ValueType& y = in[static_cast<size_t>(i)];
        if (y.dtype != x.dtype || y.rank() != x.rank()) {
          return I.fail(2, ErrorCode::kShapeMismatch, "operand " + s(i) + " " + I.type(y) + " does not match " + I.type(x) + " in dtype or rank");
        }
        for (size_t a = 0; a < x.shape.size(); ++a) {
          if (static_cast<int64_t>(a) == at.axis) {
            out.shape[a] = out.shape[a] + y.shape[a];
          } else {
            TENFERRO_TRY(out.shape[a], I.unify(out.shape[a], y.shape[a], 3, "operand " + s(i) + " axis " + s(static_cast<int64_t>(a))));
          }
        }
      }
      return out;
    }
    case OpCode::kPad: {
      const ValueType& x = in[0];
      if (in[1].dtype != x.dtype || in[1].rank() != 0) return I.fail(1, ErrorCode::kDTypeMismatch, "padding value must be a scalar of " + std::string(dtype_name(x.dtype)) + ", got " + I.type(in[1]));
      const auto r = static_cast<size_t>(x.rank());
      if (at.low.size() != r || at.high.size() != r || at.interior.size() != r) {
        return I.fail(2, ErrorCode::kInvalidArgument, "low/high/interior need " + s(x.rank()) + " entries each");
      }
      ValueType out{x.dtype, {}};
      for (size_t i = 0; i < r; ++i) {
        if (at.interior[i] < 0) return I.fail(3, ErrorCode::kInvalidArgument, "interior " + s(at.interior[i]) + " is negative");
        // Padding or cropping of 2^62 elements or more on one side: beyond any extent (so
        // low + high, the AD rule's -low and the interpreter's index - low stay in int64).
        constexpr int64_t kPaddingLimit = int64_t{1} << 62;
        for (const int64_t p : {at.low[i], at.high[i], at.interior[i]}) {
          if (p <= -kPaddingLimit || p >= kPaddingLimit) {
            return I.fail(4, ErrorCode::kOverflow,
                          "axis " + s(static_cast<int64_t>(i)) + ": padding " + s(p) + " is not within +-(2^62 - 1)");
          }
        }
        const Extent& d = x.shape[i];
        // low + high + max(0, d + (d - 1) * interior): d = 0 has no interior padding. For a
        // symbolic d with interior > 0 the max is a derived symbol (Note [Derived symbols]).
        const Extent inner = d + (d - Extent::exact(1)) * Extent::exact(at.interior[i]);
        Extent e = I.max0(inner) + Extent::exact(at.low[i] + at.high[i]);
        if (e.is_exact() && e.exact_value() < 0) return I.fail(4, ErrorCode::kInvalidShape, "axis " + s(static_cast<int64_t>(i)) + " would have negative extent " + I.ext(e));
        if (!e.is_exact() && at.low[i] + at.high[i] < 0) {  // cropping: guard a non-negative extent
          TENFERRO_TRY_VOID(I.at_most(Extent::exact(0), e, 4, "extent of axis " + s(static_cast<int64_t>(i))));
        }
        out.shape.push_back(std::move(e));
      }
      return out;
    }
    case OpCode::kGather:
    case OpCode::kScatterAdd: {
      const ValueType& x = in[0];
      const ValueType& idx = in[1];
      if (at.axis < 0 || at.axis >= x.rank()) return I.fail(1, ErrorCode::kOutOfRange, "axis " + s(at.axis) + " is outside [0, " + s(x.rank()) + ")");
      if (!is_integral(idx.dtype)) return I.fail(2, ErrorCode::kDTypeMismatch, "indices must be integers, got " + I.type(idx));
      ValueType g{x.dtype, {}};
      for (int64_t a = 0; a < at.axis; ++a) g.shape.push_back(x.shape[static_cast<size_t>(a)]);
      for (const Extent& e : idx.shape) g.shape.push_back(e);
      for (int64_t a = at.axis + 1; a < x.rank(); ++a) g.shape.push_back(x.shape[static_cast<size_t>(a)]);
      if (code == OpCode::kGather) return g;
      const ValueType& u = in[2];
      if (u.dtype != x.dtype) return I.fail(3, ErrorCode::kDTypeMismatch, "updates " + I.type(u) + " and operand " + I.type(x) + " differ in dtype");
      if (u.rank() != g.rank()) return I.fail(4, ErrorCode::kShapeMismatch, "updates " + I.type(u) + " must have shape " + I.shape(g.shape));
      for (size_t i = 0; i < g.shape.size(); ++i) TENFERRO_TRY_VOID(I.unify(u.shape[i], g.shape[i], 4, "updates axis " + s(static_cast<int64_t>(i))));
      return x;
    }
    case OpCode::kReduce: {
      const ValueType& x = in[0];
      TENFERRO_TRY_VOID(I.axes(at.dims, x.rank(), 1, "dims"));
      // max / min of bools are any / all (false < true), as StableHLO's maximum / minimum
      // of i1; sums and products of bools are not defined (convert first).
      const bool arith = at.reduce == ReduceKind::kSum || at.reduce == ReduceKind::kProd;
      const bool ok = arith ? numeric(x.dtype) : x.dtype == DType::kBool || (ordered(x.dtype) && numeric(x.dtype));
      TENFERRO_TRY_VOID(I.dtype_is(x, ok, 2, arith ? "numeric" : "bool or a real numeric type"));
      ValueType out{x.dtype, {}};
      for (int64_t a = 0; a < x.rank(); ++a) {
        if (std::find(at.dims.begin(), at.dims.end(), a) == at.dims.end()) out.shape.push_back(x.shape[static_cast<size_t>(a)]);
      }
      return out;
    }
    case OpCode::kDotGeneral: {
      const ValueType& l = in[0];
      const ValueType& r = in[1];
      if (l.dtype != r.dtype) return I.fail(1, ErrorCode::kDTypeMismatch, "operand dtypes " + I.type(l) + " and " + I.type(r) + " differ");
      // bool products are ORs of ANDs (numpy's matmul of bools, XLA's dot of PRED).
      TENFERRO_TRY_VOID(I.dtype_is(l, numeric(l.dtype) || l.dtype == DType::kBool, 1, "numeric or bool"));
      if (at.lhs_batch.size() != at.rhs_batch.size() || at.lhs_contract.size() != at.rhs_contract.size()) {
        return I.fail(2, ErrorCode::kInvalidArgument, "batch dims " + list(at.lhs_batch) + " / " + list(at.rhs_batch) + " or contracting dims " + list(at.lhs_contract) + " / " + list(at.rhs_contract) + " differ in length");
      }
      std::vector<int64_t> lall = at.lhs_batch, rall = at.rhs_batch;
      lall.insert(lall.end(), at.lhs_contract.begin(), at.lhs_contract.end());
      rall.insert(rall.end(), at.rhs_contract.begin(), at.rhs_contract.end());
      TENFERRO_TRY_VOID(I.axes(lall, l.rank(), 3, "lhs batch+contracting dims"));
      TENFERRO_TRY_VOID(I.axes(rall, r.rank(), 3, "rhs batch+contracting dims"));
      ValueType out{l.dtype, {}};
      for (size_t i = 0; i < at.lhs_batch.size(); ++i) {
        TENFERRO_TRY(Extent e, I.unify(l.shape[static_cast<size_t>(at.lhs_batch[i])], r.shape[static_cast<size_t>(at.rhs_batch[i])], 4, "batch dim pair " + s(static_cast<int64_t>(i))));
        out.shape.push_back(std::move(e));
      }
      for (size_t i = 0; i < at.lhs_contract.size(); ++i) {
        TENFERRO_TRY_VOID(I.unify(l.shape[static_cast<size_t>(at.lhs_contract[i])], r.shape[static_cast<size_t>(at.rhs_contract[i])], 5, "contracting dim pair " + s(static_cast<int64_t>(i))));
      }
      for (int64_t a = 0; a < l.rank(); ++a) {
        if (std::find(lall.begin(), lall.end(), a) == lall.end()) out.shape.push_back(l.shape[static_cast<size_t>(a)]);
      }
      for (int64_t a = 0; a < r.rank(); ++a) {
        if (std::find(rall.begin(), rall.end(), a) == rall.end()) out.shape.push_back(r.shape[static_cast<size_t>(a)]);
      }
      return out;
    }
    case OpCode::kExtractDiag: {
      const ValueType& x = in[0];
      if (at.axis < 0 || at.axis + 1 >= x.rank()) return I.fail(1, ErrorCode::kOutOfRange, "axis " + s(at.axis) + " needs axes axis and axis+1 inside rank " + s(x.rank()));
      ValueType out = x;
      TENFERRO_TRY(out.shape[static_cast<size_t>(at.axis)], I.unify(x.shape[static_cast<size_t>(at.axis)], x.shape[static_cast<size_t>(at.axis + 1)], 2, "diagonal axes"));
      out.shape.erase(out.shape.begin() + at.axis + 1);
      return out;
    }
    case OpCode::kEmbedDiag: {
      const ValueType& x = in[0];
      if (at.axis < 0 || at.axis >= x.rank()) return I.fail(1, ErrorCode::kOutOfRange, "axis " + s(at.axis) + " is outside [0, " + s(x.rank()) + ")");
      ValueType out = x;
      out.shape.insert(out.shape.begin() + at.axis, x.shape[static_cast<size_t>(at.axis)]);
      return out;
    }
    case OpCode::kTril:
    case OpCode::kTriu:
      if (in[0].rank() < 2) return I.fail(1, ErrorCode::kInvalidShape, "needs rank >= 2, got " + I.type(in[0]));
      return in[0];
    case OpCode::kArgsort: {
      const ValueType& x = in[0];
      if (at.axis < 0 || at.axis >= x.rank()) {
        return I.fail(1, ErrorCode::kOutOfRange, "axis " + s(at.axis) + " is outside [0, " + s(x.rank()) + ")");
      }
      return ValueType{DType::kI64, x.shape};
    }
    default: break;
  }
  return Error(ErrorStage::kCompile, ErrorCode::kInternal, std::string(op_name(code)), "no inference rule");
}
}  // namespace

Result<ValueType> infer_core(OpCode code, const Attrs& attrs, std::span<const ValueType> operands,
                             std::vector<SymbolInfo>& symbols, std::vector<PendingGuard>& guards) {
  if (code == OpCode::kExtension) {
    return Error(ErrorStage::kCompile, ErrorCode::kInvalidArgument, "extension", "infer_core called for an extension op");
  }
  const size_t mark = guards.size();
  const size_t symbol_mark = symbols.size();
  auto undo = [&](Error e) -> Result<ValueType> {
    guards.resize(mark);
    symbols.resize(symbol_mark);
    return e;
  };
  auto r = infer_rule(code, attrs, operands, symbols, guards);
  if (!r) return undo(r.error());
  // Common to every op (constraint c9): result extents are non-negative and finite.
  Infer I(code, symbols, guards);
  for (const Extent& e : r->shape) {
    if (e.overflowed()) return undo(I.fail(9, ErrorCode::kOverflow, "a result extent overflows int64 or exceeds the size cap of shape polynomials"));
    if (e.is_exact() && e.exact_value() < 0) {
      return undo(I.fail(9, ErrorCode::kInvalidShape, "result shape " + I.shape(r->shape) + " has a negative extent"));
    }
  }
  return r;
}

}  // namespace tenferro::program
