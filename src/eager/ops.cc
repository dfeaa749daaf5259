#include <algorithm>
#include <array>
#include <optional>
#include <numeric>

#include "detail.h"
#include "vjp.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/elementwise.h"
#include "tenferro/cpu/kernels.h"
#include "tenferro/cpu/reduce.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"

namespace tenferro::eager {

// Note [Eager ops]: every operation validates its operands (Detail::begin: defined, one
// runtime, domain) and its dtypes before anything runs, then gives decide_entry a direct
// function (the CPU kernels through cpu_runtime::run_core_op, i.e. the code prepared
// nodes run, or a kernel called with borrowed dims for the hot ops: reductions,
// contractions) and a program builder for promotion. Both compute the program's
// semantics. numpy broadcasting is the kernels' own on the direct path and explicit
// broadcast_in_dim ops in a promoted program. Ops without a hand-written check (gather,
// pad, ...) are validated by program inference (Context::core), whose compile-stage
// errors come back as usage errors with the same code and message.

namespace {

using program::Attrs;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;

const Attrs& no_attrs() {
  static const Attrs attrs;  // immutable, allocation-free default attributes
  return attrs;
}

std::vector<program::Extent> extents(Dims shape) {
  std::vector<program::Extent> e;
  e.reserve(shape.size());
  for (int64_t x : shape) e.push_back(program::Extent::exact(x));
  return e;
}

Result<int64_t> norm_axis(int64_t axis, int64_t rank, const char* op) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return usage_error(ErrorCode::kOutOfRange, op,
                       "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return a;
}

Result<void> same_dtype(const EagerTensor& x, const EagerTensor& y, const char* op) {
  if (x.dtype() != y.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "dtypes " + std::string(dtype_name(x.dtype())) + " and " + std::string(dtype_name(y.dtype())) +
                           " differ (no implicit promotion; convert with astype)");
  }
  return ok();
}

// broadcast_in_dim of v (shape `from`) to `to`, numpy alignment (trailing axes).
Result<Value> bcast(ProgramBuilder& b, Value v, const Shape& from, const Shape& to) {
  if (from == to) return v;
  Attrs a;
  a.shape = extents(to);
  const size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) a.dims.push_back(static_cast<int64_t>(i + offset));
  return b.op(OpCode::kBroadcastInDim, {v}, std::move(a));
}

// The program forms of the broadcasting elementwise ops and of reductions (shared by
// promotion and the AD record).
Result<Value> emit_binary(ProgramBuilder& b, std::span<const Value> v, OpCode code, const Attrs& attrs,
                          const Shape& xs, const Shape& ys, const Shape& shape) {
  TENFERRO_TRY(Value bx, bcast(b, v[0], xs, shape));
  TENFERRO_TRY(Value by, bcast(b, v[1], ys, shape));
  return b.op(code, {bx, by}, attrs);
}
Result<Value> emit_ternary(ProgramBuilder& b, std::span<const Value> v, OpCode code, const Shape& s0, const Shape& s1,
                           const Shape& s2, const Shape& shape) {
  TENFERRO_TRY(Value a0, bcast(b, v[0], s0, shape));
  TENFERRO_TRY(Value a1, bcast(b, v[1], s1, shape));
  TENFERRO_TRY(Value a2, bcast(b, v[2], s2, shape));
  return b.op(code, {a0, a1, a2});
}
Shape kept_shape(const Shape& in, std::span<const int64_t> axes, bool keep);
Result<Value> emit_reduce(ProgramBuilder& b, Value x, program::ReduceKind kind, std::span<const int64_t> axes,
                          const Shape& in, bool keep) {
  Attrs a;
  a.dims.assign(axes.begin(), axes.end());
  a.reduce = kind;
  TENFERRO_TRY(Value r, b.op(OpCode::kReduce, {x}, std::move(a)));
  if (!keep) return r;
  Attrs rs;
  rs.shape = extents(kept_shape(in, axes, true));
  return b.op(OpCode::kReshape, {r}, std::move(rs));
}

// A one-element literal of `dtype` holding `value` (real part for real dtypes).
Result<program::Literal> scalar_literal(DType dtype, c128 value);

// mean: sum over `axes` divided by the count `n`.
Result<Value> emit_mean(ProgramBuilder& b, Value x, std::span<const int64_t> axes, const Shape& in, DType dtype,
                        c128 n, bool keep) {
  Attrs a;
  a.dims.assign(axes.begin(), axes.end());
  TENFERRO_TRY(Value s, b.op(OpCode::kReduce, {x}, std::move(a)));
  const Shape out = kept_shape(in, axes, false);
  TENFERRO_TRY(program::Literal lit, scalar_literal(dtype, n));
  TENFERRO_TRY(Value c, b.constant(std::move(lit)));
  TENFERRO_TRY(Value cb, bcast(b, c, Shape{}, out));
  TENFERRO_TRY(Value m, b.op(OpCode::kDiv, {s, cb}));
  if (!keep) return m;
  Attrs rs;
  rs.shape = extents(kept_shape(in, axes, true));
  return b.op(OpCode::kReshape, {m}, std::move(rs));
}

// A one-element literal of `dtype` holding `value` (real part for real dtypes).
Result<program::Literal> scalar_literal(DType dtype, c128 value) {
  return visit_dtype(dtype, [&]<class T>() -> Result<program::Literal> {
    T v;
    if constexpr (std::is_same_v<T, c64>) {
      v = c64(static_cast<float>(value.real()), static_cast<float>(value.imag()));
    } else if constexpr (std::is_same_v<T, c128>) {
      v = value;
    } else if constexpr (std::is_same_v<T, bool>) {
      v = value != c128(0.0, 0.0);
    } else {
      v = static_cast<T>(value.real());
    }
    return program::Literal::from_values<T>({}, std::span<const T>(&v, 1));
  });
}

Result<Tensor> scalar_tensor(DType dtype, c128 value, const std::shared_ptr<HostBufferPool>& pool) {
  return Tensor::full(dtype, {}, value, pool);
}

// Normalized, sorted, distinct reduction axes; empty -> all axes.
Result<SmallVector<int64_t, 8>> reduce_axes(Dims axes, int64_t rank, const char* op) {
  SmallVector<int64_t, 8> out;
  if (axes.size() == 0) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    TENFERRO_TRY(int64_t n, norm_axis(a, rank, op));
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return usage_error(ErrorCode::kInvalidArgument, op, "axis " + std::to_string(a) + " listed twice");
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape kept_shape(const Shape& in, std::span<const int64_t> axes, bool keep) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  return out;
}

// Resolves one -1 extent of a reshape target.
Result<Shape> resolve_shape(Dims shape, int64_t numel, const char* op) {
  Shape out(shape);
  int64_t known = 1, hole = -1;
  bool overflow = false, zero = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && hole < 0) {
      hole = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      return usage_error(ErrorCode::kInvalidShape, op, "invalid target shape " + format_dims(shape));
    } else {
      zero = zero || out[i] == 0;
      overflow = overflow || __builtin_mul_overflow(known, out[i], &known);
    }
  }
  if (zero) {
    known = 0;  // a zero extent: no elements, whatever the others multiply to
  } else if (overflow) {
    return usage_error(ErrorCode::kOverflow, op,
                       "target shape " + format_dims(shape) + " has more elements than int64 holds");
  }
  if (hole >= 0) {
    if (known == 0 || numel % known != 0) {
      return usage_error(ErrorCode::kInvalidShape, op,
                         "cannot infer -1 in " + format_dims(shape) + " for " + std::to_string(numel) + " elements");
    }
    out[static_cast<size_t>(hole)] = numel / known;
  } else if (known != numel) {
    return usage_error(ErrorCode::kInvalidShape, op,
                       "target shape " + format_dims(shape) + " has " + std::to_string(known) + " elements, the tensor " +
                           std::to_string(numel));
  }
  return out;
}

// A record of a single-operand op whose program form is `code` with `attrs`.
Result<EagerTensor> record_op(const Context& c, Result<EagerTensor> r, const EagerTensor& x, const char* op,
                              OpCode code, Attrs attrs, AdNode::Vjp vjp = {}) {
  if (!Detail::tracing(c, {&x})) return r;
  return Detail::record(
      std::move(r), {&x}, op,
      [code, attrs = std::move(attrs)](ProgramBuilder& b, std::span<const Value> v) { return b.op(code, {v[0]}, attrs); },
      std::move(vjp));
}

Result<EagerTensor> finish(const Call& call, Result<Tensor>&& r) {
  if (!r) return r.error();
  return Detail::wrap(call, std::move(*r));  // one move of the tensor handle
}

// Note [Eager dtype checks]: an elementwise op a dtype does not define fails before
// anything runs (no kernel call, no prepared graph), naming the op as called
// ("maximum", not the kernel's "max").
Error named(const Error& e, const char* op) { return e.op() == op ? e : Error(e.stage(), e.code(), op, e.message()); }

Result<EagerTensor> unary(const Context& c, OpCode code, const EagerTensor& x, const char* op) {
  TENFERRO_TRY(Call call, Detail::begin(c, {&x}, op));
  if (auto rd = cpu::unary_result_dtype(static_cast<cpu::UnaryOp>(static_cast<int>(code)), x.dtype()); !rd) {
    return named(rd.error(), op);  // Note [Eager dtype checks]
  }
  const Tensor& t = Detail::physical(x);
  Result<EagerTensor> r = finish(
      call, Detail::execute(
                call, true, t.numel(),
                [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                  // The unary core ops are cpu::unary's (the order of the two enums agrees),
                  // called directly: the generic core-op runner copies attributes per call.
                  return cpu::unary(ctx, static_cast<cpu::UnaryOp>(static_cast<int>(code)), t, pool);
                },
                {&t, 1}, [&](ProgramBuilder& b, std::span<const Value> v) { return b.op(code, {v[0]}); }, op));
  if (!Detail::tracing(c, {&x})) return r;
  return Detail::record(
      std::move(r), {&x}, op, [code](ProgramBuilder& b, std::span<const Value> v) { return b.op(code, {v[0]}); },
      vjp_unary(code));
}

const Attrs& compare_attrs(program::CompareDirection dir) {
  static const std::array<Attrs, 6> table = [] {  // immutable, built once
    std::array<Attrs, 6> t;
    for (size_t i = 0; i < t.size(); ++i) t[i].direction = static_cast<program::CompareDirection>(i);
    return t;
  }();
  return table[static_cast<size_t>(dir)];
}

Result<EagerTensor> binary(const Context& c, OpCode code, const EagerTensor& x, const EagerTensor& y, const char* op,
                           program::CompareDirection dir = program::CompareDirection::kEq) {
  TENFERRO_TRY(Call call, Detail::begin(c, {&x, &y}, op));
  TENFERRO_TRY_VOID(same_dtype(x, y, op));
  const bool compare = code == OpCode::kCompare;
  if (!compare && x.dtype() == DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, op, "no arithmetic on bool tensors (convert them with astype)");
  }
  if (!compare) {  // Note [Eager dtype checks]
    const auto kernel = static_cast<cpu::BinaryOp>(static_cast<int>(code) - static_cast<int>(OpCode::kAdd));
    if (auto checked = cpu::check_binary_dtype(kernel, x.dtype()); !checked) return named(checked.error(), op);
  }
  TENFERRO_TRY(Shape shape, cpu::broadcast_shapes(x.shape(), y.shape(), op));
  const Attrs& attrs = compare ? compare_attrs(dir) : no_attrs();
  const Tensor& tx = Detail::physical(x);
  const Tensor& ty = Detail::physical(y);
  const bool integral = x.dtype() == DType::kI32 || x.dtype() == DType::kI64;
  auto direct = [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) -> Result<Tensor> {
    if (integral) {  // integer division/pow checks of the program semantics
      const Tensor in[2] = {tx, ty};
      return cpu_runtime::run_core_op(ctx, pool, code, attrs, in, x.dtype(), shape);
    }
    if (compare) return cpu::compare(ctx, static_cast<cpu::CompareOp>(dir), tx, ty, pool);
    return cpu::binary(ctx, static_cast<cpu::BinaryOp>(static_cast<int>(code) - static_cast<int>(OpCode::kAdd)), tx,
                       ty, pool);
  };
  auto build = [&](ProgramBuilder& b, std::span<const Value> v) {
    return emit_binary(b, v, code, attrs, x.shape(), y.shape(), shape);
  };
  // Operand copies only where a span of tensors is needed (promotion); the direct path
  // passes references and keeps no tensor array in its frame.
  Result<EagerTensor> r =
      call.slots->cpu == nullptr
          ? finish(call, Detail::execute(call, true, element_count(shape), direct, std::array<Tensor, 2>{tx, ty},
                                         build, op))
          : finish(call, Detail::execute(call, true, element_count(shape), direct, {}, build, op));
  if (!Detail::tracing(c, {&x, &y})) return r;
  return Detail::record(std::move(r), {&x, &y}, op,
                        [code, attrs, xs = x.shape(), ys = y.shape(), shape](ProgramBuilder& b, std::span<const Value> v) {
                          return emit_binary(b, v, code, attrs, xs, ys, shape);
                        },
                        vjp_binary(code));
}

// where / clamp: three broadcast operands; `order` maps program operand slots to them.
Result<EagerTensor> ternary(const Context& c, OpCode code, const EagerTensor& p0, const EagerTensor& p1,
                            const EagerTensor& p2, const char* op) {
  TENFERRO_TRY(Call call, Detail::begin(c, {&p0, &p1, &p2}, op));
  TENFERRO_TRY(Shape s01, cpu::broadcast_shapes(p0.shape(), p1.shape(), op));
  TENFERRO_TRY(Shape shape, cpu::broadcast_shapes(s01, p2.shape(), op));
  const Tensor in[3] = {Detail::physical(p0), Detail::physical(p1), Detail::physical(p2)};
  const DType out = p1.dtype();  // select(pred, t, f) and clamp(lo, x, hi): the middle operand's
  Result<EagerTensor> r = finish(call, Detail::execute(
                          call, true, element_count(shape),
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                            return cpu_runtime::run_core_op(ctx, pool, code, no_attrs(), in, out, shape);
                          },
                          in,
                          [&](ProgramBuilder& b, std::span<const Value> v) {
                            return emit_ternary(b, v, code, p0.shape(), p1.shape(), p2.shape(), shape);
                          },
                          op));
  if (!Detail::tracing(c, {&p0, &p1, &p2})) return r;
  return Detail::record(std::move(r), {&p0, &p1, &p2}, op,
                        [code, s0 = p0.shape(), s1 = p1.shape(), s2 = p2.shape(), shape](ProgramBuilder& b,
                                                                                         std::span<const Value> v) {
                          return emit_ternary(b, v, code, s0, s1, s2, shape);
                        });
}

Result<EagerTensor> reduce(const Context& c, program::ReduceKind kind, const EagerTensor& x, Dims axes, bool keep,
                           const char* op) {
  TENFERRO_TRY(Call call, Detail::begin(c, {&x}, op));
  const bool arith = kind == program::ReduceKind::kSum || kind == program::ReduceKind::kProd;
  if (arith ? x.dtype() == DType::kBool : is_complex(x.dtype())) {
    return usage_error(
        ErrorCode::kDTypeMismatch, op,
        "not defined for dtype " + std::string(dtype_name(x.dtype())) +
            (arith ? " (no arithmetic on bool: convert with astype)" : " (complex values are unordered)"));
  }
  TENFERRO_TRY(auto ax, reduce_axes(axes, x.rank(), op));
  const Tensor& t = Detail::physical(x);
  Result<EagerTensor> r = finish(call, Detail::execute(
                          call, true, t.numel(),
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                            return cpu::reduce(ctx, static_cast<cpu::ReduceOp>(static_cast<int>(kind)), t, ax, keep,
                                               pool);
                          },
                          {&t, 1},
                          [&](ProgramBuilder& b, std::span<const Value> v) {
                            return emit_reduce(b, v[0], kind, ax, t.shape(), keep);
                          },
                          op));
  if (!Detail::tracing(c, {&x})) return r;
  return Detail::record(std::move(r), {&x}, op,
                        [ax, shape = t.shape(), kind, keep](ProgramBuilder& b, std::span<const Value> v) {
                          return emit_reduce(b, v[0], kind, ax, shape, keep);
                        },
                        kind == program::ReduceKind::kSum ? vjp_sum(ax, t.shape(), keep) : AdNode::Vjp());
}

}  // namespace

// ---- unary ----
Result<EagerTensor> Context::neg(const EagerTensor& x) const { return unary(*this, OpCode::kNeg, x, "neg"); }
Result<EagerTensor> Context::abs(const EagerTensor& x) const { return unary(*this, OpCode::kAbs, x, "abs"); }
Result<EagerTensor> Context::sign(const EagerTensor& x) const { return unary(*this, OpCode::kSign, x, "sign"); }
Result<EagerTensor> Context::exp(const EagerTensor& x) const { return unary(*this, OpCode::kExp, x, "exp"); }
Result<EagerTensor> Context::log(const EagerTensor& x) const { return unary(*this, OpCode::kLog, x, "log"); }
Result<EagerTensor> Context::expm1(const EagerTensor& x) const { return unary(*this, OpCode::kExpm1, x, "expm1"); }
Result<EagerTensor> Context::log1p(const EagerTensor& x) const { return unary(*this, OpCode::kLog1p, x, "log1p"); }
Result<EagerTensor> Context::sin(const EagerTensor& x) const { return unary(*this, OpCode::kSin, x, "sin"); }
Result<EagerTensor> Context::cos(const EagerTensor& x) const { return unary(*this, OpCode::kCos, x, "cos"); }
Result<EagerTensor> Context::tanh(const EagerTensor& x) const { return unary(*this, OpCode::kTanh, x, "tanh"); }
Result<EagerTensor> Context::sqrt(const EagerTensor& x) const { return unary(*this, OpCode::kSqrt, x, "sqrt"); }
Result<EagerTensor> Context::rsqrt(const EagerTensor& x) const { return unary(*this, OpCode::kRsqrt, x, "rsqrt"); }
Result<EagerTensor> Context::conj(const EagerTensor& x) const { return unary(*this, OpCode::kConj, x, "conj"); }

Result<EagerTensor> Context::real(const EagerTensor& x) const {
  if (x.defined() && is_complex(x.dtype())) {
    TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "real"));
    TENFERRO_TRY(Tensor v, Detail::physical(x).real());
    return record_op(*this, Detail::view(call, x, std::move(v)), x, "real", OpCode::kReal, {}, vjp_unary(OpCode::kReal));
  }
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "real"));
  return record_op(*this, Detail::view(call, x, Tensor(Detail::physical(x))), x, "real", OpCode::kReal, {},
                   vjp_unary(OpCode::kReal));
}

Result<EagerTensor> Context::imag(const EagerTensor& x) const {
  if (x.defined() && is_complex(x.dtype())) {
    TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "imag"));
    TENFERRO_TRY(Tensor v, Detail::physical(x).imag());
    return record_op(*this, Detail::view(call, x, std::move(v)), x, "imag", OpCode::kImag, {}, vjp_unary(OpCode::kImag));
  }
  return unary(*this, OpCode::kImag, x, "imag");
}

// ---- binary ----
Result<EagerTensor> Context::add(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kAdd, x, y, "add");
}
Result<EagerTensor> Context::sub(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kSub, x, y, "sub");
}
Result<EagerTensor> Context::mul(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kMul, x, y, "mul");
}
Result<EagerTensor> Context::div(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kDiv, x, y, "div");
}
Result<EagerTensor> Context::rem(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kRem, x, y, "rem");
}
Result<EagerTensor> Context::pow(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kPow, x, y, "pow");
}
Result<EagerTensor> Context::maximum(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kMax, x, y, "maximum");
}
Result<EagerTensor> Context::minimum(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kMin, x, y, "minimum");
}
Result<EagerTensor> Context::atan2(const EagerTensor& y, const EagerTensor& x) const {
  return binary(*this, OpCode::kAtan2, y, x, "atan2");
}
Result<EagerTensor> Context::eq(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kCompare, x, y, "eq", program::CompareDirection::kEq);
}
Result<EagerTensor> Context::ne(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kCompare, x, y, "ne", program::CompareDirection::kNe);
}
Result<EagerTensor> Context::lt(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kCompare, x, y, "lt", program::CompareDirection::kLt);
}
Result<EagerTensor> Context::le(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kCompare, x, y, "le", program::CompareDirection::kLe);
}
Result<EagerTensor> Context::gt(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kCompare, x, y, "gt", program::CompareDirection::kGt);
}
Result<EagerTensor> Context::ge(const EagerTensor& x, const EagerTensor& y) const {
  return binary(*this, OpCode::kCompare, x, y, "ge", program::CompareDirection::kGe);
}

Result<EagerTensor> Context::where(const EagerTensor& pred, const EagerTensor& on_true,
                                   const EagerTensor& on_false) const {
  if (pred.defined() && pred.dtype() != DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, "where",
                       "the predicate must be bool, not " + std::string(dtype_name(pred.dtype())));
  }
  if (on_true.defined() && on_false.defined()) {
    TENFERRO_TRY_VOID(same_dtype(on_true, on_false, "where"));
  }
  return ternary(*this, OpCode::kSelect, pred, on_true, on_false, "where");
}

Result<EagerTensor> Context::clamp(const EagerTensor& x, const EagerTensor& lo, const EagerTensor& hi) const {
  if (x.defined() && lo.defined() && hi.defined()) {
    TENFERRO_TRY_VOID(same_dtype(x, lo, "clamp"));
    TENFERRO_TRY_VOID(same_dtype(x, hi, "clamp"));
    if (x.dtype() == DType::kBool || is_complex(x.dtype())) {
      return usage_error(ErrorCode::kDTypeMismatch, "clamp",
                         "needs an ordered dtype, not " + std::string(dtype_name(x.dtype())));
    }
  }
  return ternary(*this, OpCode::kClamp, lo, x, hi, "clamp");
}

Result<EagerTensor> Context::astype(const EagerTensor& x, DType dtype) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "astype"));
  if (x.dtype() == dtype) return x;  // immutable tensors: sharing is a copy
  const Tensor& t = Detail::physical(x);
  Attrs a;
  a.dtype = dtype;
  Result<EagerTensor> r = finish(
      call, Detail::execute(
                call, true, t.numel(),
                [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                  return cpu_runtime::run_core_op(ctx, pool, OpCode::kConvert, a, {&t, 1}, dtype, t.shape());
                },
                {&t, 1}, [&](ProgramBuilder& b, std::span<const Value> v) { return b.op(OpCode::kConvert, {v[0]}, a); },
                "astype"));
  if (!Detail::tracing(*this, {&x})) return r;
  return record_op(*this, std::move(r), x, "astype", OpCode::kConvert, a, vjp_unary(OpCode::kConvert));
}

// ---- creation ----
Result<EagerTensor> Context::full(Dims shape, c128 value, DType dtype) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, std::span<const EagerTensor* const>{}, "full"));
  for (int64_t e : shape) {
    if (e < 0) return usage_error(ErrorCode::kInvalidShape, "full", "negative extent in " + format_dims(shape));
  }
  const Shape s(shape);
  return finish(call, Detail::execute(
                          call, true, element_count(s),
                          [&](cpu::CpuExecutionContext&, const std::shared_ptr<HostBufferPool>& pool) {
                            return Tensor::full(dtype, s, value, pool);
                          },
                          {},
                          [&](ProgramBuilder& b, std::span<const Value>) -> Result<Value> {
                            TENFERRO_TRY(program::Literal lit, scalar_literal(dtype, value));
                            TENFERRO_TRY(Value v, b.constant(std::move(lit)));
                            return bcast(b, v, Shape{}, s);
                          },
                          "full"));
}
Result<EagerTensor> Context::zeros(Dims shape, DType dtype) const { return full(shape, c128(0.0, 0.0), dtype); }
Result<EagerTensor> Context::ones(Dims shape, DType dtype) const { return full(shape, c128(1.0, 0.0), dtype); }
Result<EagerTensor> Context::scalar(c128 value, DType dtype) const { return full({}, value, dtype); }

Result<EagerTensor> Context::iota(Dims shape, int64_t axis, DType dtype) const {
  Attrs a;
  a.shape = extents(shape);
  a.axis = axis;
  a.dtype = dtype;
  return core(OpCode::kIota, {}, std::move(a));
}

// ---- views and data movement ----
Result<EagerTensor> Context::permute(const EagerTensor& x, Dims perm) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "permute"));
  TENFERRO_TRY(Tensor v, Detail::physical(x).permute(perm));
  Result<EagerTensor> r = Detail::view(call, x, std::move(v));
  if (!Detail::tracing(*this, {&x})) return r;
  Attrs a;
  a.dims.assign(perm.begin(), perm.end());
  for (int64_t& d : a.dims) d = d < 0 ? d + x.rank() : d;
  AdNode::Vjp vjp = vjp_permute(a.dims);
  return record_op(*this, std::move(r), x, "permute", OpCode::kTranspose, std::move(a), std::move(vjp));
}

Result<EagerTensor> Context::transpose(const EagerTensor& x) const {
  SmallVector<int64_t, 8> perm;
  for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  return permute(x, perm);
}

Result<EagerTensor> Context::transpose(const EagerTensor& x, int64_t a, int64_t b) const {
  TENFERRO_TRY(int64_t na, norm_axis(a, x.rank(), "transpose"));
  TENFERRO_TRY(int64_t nb, norm_axis(b, x.rank(), "transpose"));
  SmallVector<int64_t, 8> perm;
  for (int64_t i = 0; i < x.rank(); ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(na)], perm[static_cast<size_t>(nb)]);
  return permute(x, perm);
}

Result<EagerTensor> Context::reshape(const EagerTensor& x, Dims shape) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "reshape"));
  const Tensor& t = Detail::physical(x);
  TENFERRO_TRY(Shape target, resolve_shape(shape, t.numel(), "reshape"));
  Result<Tensor> v = t.reshape(target);
  auto recorded = [&](Result<EagerTensor> r) {
    if (!Detail::tracing(*this, {&x})) return r;
    Attrs a;
    a.shape = extents(target);
    return record_op(*this, std::move(r), x, "reshape", OpCode::kReshape, std::move(a), vjp_reshape(t.shape()));
  };
  if (v) return recorded(Detail::view(call, x, std::move(*v)));
  if (v.error().code() != ErrorCode::kIncompatibleLayout) return v.error();
  // Not expressible as a view: a compact copy, then the (now valid) view.
  return recorded(finish(call, Detail::execute(
                          call, true, t.numel(),
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) -> Result<Tensor> {
                            TENFERRO_TRY(Tensor m, cpu::materialize(ctx, t, pool));
                            return m.reshape(target);
                          },
                          {&t, 1},
                          [&](ProgramBuilder& b, std::span<const Value> val) {
                            Attrs a;
                            a.shape = extents(target);
                            return b.op(OpCode::kReshape, {val[0]}, std::move(a));
                          },
                          "reshape")));
}

Result<EagerTensor> Context::broadcast_to(const EagerTensor& x, Dims shape) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "broadcast_to"));
  TENFERRO_TRY(Tensor v, Detail::physical(x).broadcast_to(shape));
  Result<EagerTensor> r = Detail::view(call, x, std::move(v));
  if (!Detail::tracing(*this, {&x})) return r;
  return Detail::record(std::move(r), {&x}, "broadcast_to",
                        [from = x.shape(), to = Shape(shape)](ProgramBuilder& b, std::span<const Value> val) {
                          return bcast(b, val[0], from, to);
                        },
                        vjp_broadcast_to(x.shape()));
}

Result<EagerTensor> Context::broadcast_in_dim(const EagerTensor& x, Dims shape, Dims dims) const {
  Attrs a;
  a.shape = extents(shape);
  a.dims.assign(dims.begin(), dims.end());
  const EagerTensor ops[1] = {x};
  return core(OpCode::kBroadcastInDim, ops, std::move(a));
}

Result<EagerTensor> Context::slice(const EagerTensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "slice"));
  TENFERRO_TRY(int64_t a, norm_axis(axis, x.rank(), "slice"));
  TENFERRO_TRY(Tensor v, Detail::physical(x).slice(a, start, stop, step));
  const int64_t n = v.shape()[static_cast<size_t>(a)];
  Result<EagerTensor> r = Detail::view(call, x, std::move(v));
  if (!Detail::tracing(*this, {&x})) return r;
  // Program form: a slice with stride |step| (of the reversed axis for a negative step).
  const int64_t e = x.shape()[static_cast<size_t>(a)];
  // With at most one element taken the stride is never applied (and |step| may not fit:
  // step = INT64_MIN); with more, |step| is below the extent.
  const int64_t s0 = step > 0 ? start : e - 1 - start, st = n <= 1 ? 1 : step > 0 ? step : -step;
  Attrs at;
  for (int64_t i = 0; i < x.rank(); ++i) {
    const bool ax = i == a;
    at.start.push_back(ax ? (n == 0 ? 0 : s0) : 0);
    at.limit.push_back(ax ? (n == 0 ? 0 : s0 + (n - 1) * st + 1) : x.shape()[static_cast<size_t>(i)]);
    at.stride.push_back(ax ? st : 1);
  }
  return Detail::record(std::move(r), {&x}, "slice",
                        [at = std::move(at), a, reversed = step < 0](ProgramBuilder& b,
                                                                     std::span<const Value> val) -> Result<Value> {
                          Value src = val[0];
                          if (reversed) {
                            Attrs rv;
                            rv.dims = {a};
                            TENFERRO_TRY(src, b.op(OpCode::kReverse, {src}, std::move(rv)));
                          }
                          return b.op(OpCode::kSlice, {src}, at);
                        });
}

Result<EagerTensor> Context::slice(const EagerTensor& x, Dims start, Dims limit, Dims stride) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "slice"));
  const auto r = static_cast<size_t>(x.rank());
  if (start.size() != r || limit.size() != r || stride.size() != r) {
    return usage_error(ErrorCode::kInvalidArgument, "slice",
                       "start, limit and stride need one entry per axis (rank " + std::to_string(r) + ")");
  }
  Tensor t = Detail::physical(x);
  for (size_t i = 0; i < r; ++i) {
    if (stride[i] < 1 || start[i] < 0 || limit[i] < start[i] || limit[i] > t.shape()[i]) {
      return usage_error(ErrorCode::kOutOfRange, "slice",
                         "axis " + std::to_string(i) + ": start " + std::to_string(start[i]) + ", limit " +
                             std::to_string(limit[i]) + ", stride " + std::to_string(stride[i]) + " for extent " +
                             std::to_string(t.shape()[i]));
    }
    TENFERRO_TRY(t, t.slice(static_cast<int64_t>(i), start[i], limit[i], stride[i]));
  }
  Result<EagerTensor> res = Detail::view(call, x, std::move(t));
  if (!Detail::tracing(*this, {&x})) return res;
  Attrs at;
  at.start.assign(start.begin(), start.end());
  at.limit.assign(limit.begin(), limit.end());
  at.stride.assign(stride.begin(), stride.end());
  return record_op(*this, std::move(res), x, "slice", OpCode::kSlice, std::move(at));
}

Result<EagerTensor> Context::flip(const EagerTensor& x, Dims axes) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "flip"));
  TENFERRO_TRY(auto ax, reduce_axes(axes, x.rank(), "flip"));
  Tensor t = Detail::physical(x);
  for (int64_t a : ax) {
    TENFERRO_TRY(t, t.flip(a));
  }
  Result<EagerTensor> r = Detail::view(call, x, std::move(t));
  if (!Detail::tracing(*this, {&x})) return r;
  Attrs at;
  at.dims.assign(ax.begin(), ax.end());
  return record_op(*this, std::move(r), x, "flip", OpCode::kReverse, std::move(at));
}

Result<EagerTensor> Context::diagonal(const EagerTensor& x, int64_t a, int64_t b) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "diagonal"));
  TENFERRO_TRY(int64_t na, norm_axis(a, x.rank(), "diagonal"));
  TENFERRO_TRY(int64_t nb, norm_axis(b, x.rank(), "diagonal"));
  if (na == nb) return usage_error(ErrorCode::kInvalidArgument, "diagonal", "the two axes must differ");
  // numpy: axes of different extents give the diagonal of their leading square part.
  Tensor sq = Detail::physical(x);
  const int64_t len = std::min(sq.shape()[static_cast<size_t>(na)], sq.shape()[static_cast<size_t>(nb)]);
  TENFERRO_TRY(sq, sq.slice(na, 0, len, 1));
  TENFERRO_TRY(sq, sq.slice(nb, 0, len, 1));
  TENFERRO_TRY(Tensor d, sq.diagonal({na, nb}));
  // The diagonal took the place of the first axis named (na), among the axes left after
  // nb is removed; numpy puts it last.
  const int64_t at = nb < na ? na - 1 : na;
  SmallVector<int64_t, 8> perm;
  for (int64_t i = 0; i < d.rank(); ++i) {
    if (i != at) perm.push_back(i);
  }
  perm.push_back(at);
  TENFERRO_TRY(Tensor v, d.permute(perm));
  Result<EagerTensor> r = Detail::view(call, x, std::move(v));
  if (!Detail::tracing(*this, {&x})) return r;
  // Program form: slice both axes to `len`, move them last (na, nb), extract_diag there.
  return Detail::record(std::move(r), {&x}, "diagonal",
                        [shape = x.shape(), na, nb, len](ProgramBuilder& pb, std::span<const Value> val) -> Result<Value> {
                          const auto rank = static_cast<int64_t>(shape.size());
                          Attrs sl;
                          for (int64_t i = 0; i < rank; ++i) {
                            sl.start.push_back(0);
                            sl.limit.push_back(i == na || i == nb ? len : shape[static_cast<size_t>(i)]);
                            sl.stride.push_back(1);
                          }
                          TENFERRO_TRY(Value s, pb.op(OpCode::kSlice, {val[0]}, std::move(sl)));
                          Attrs tr;
                          for (int64_t i = 0; i < rank; ++i) {
                            if (i != na && i != nb) tr.dims.push_back(i);
                          }
                          tr.dims.push_back(na);
                          tr.dims.push_back(nb);
                          TENFERRO_TRY(Value t, pb.op(OpCode::kTranspose, {s}, std::move(tr)));
                          Attrs ed;
                          ed.axis = rank - 2;
                          return pb.op(OpCode::kExtractDiag, {t}, std::move(ed));
                        });
}

Result<EagerTensor> Context::contiguous(const EagerTensor& x) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "contiguous"));
  const Tensor& t = Detail::physical(x);
  Attrs a;
  a.dtype = t.dtype();
  Result<EagerTensor> r = finish(
      call, Detail::execute(
                call, true, t.numel(),
                [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                  return cpu::materialize(ctx, t, pool);
                },
                {&t, 1}, [&](ProgramBuilder& b, std::span<const Value> v) { return b.op(OpCode::kConvert, {v[0]}, a); },
                "contiguous"));
  // The same values: the program form is a no-op convert.
  return record_op(*this, std::move(r), x, "contiguous", OpCode::kConvert, std::move(a), vjp_unary(OpCode::kConvert));
}

Result<EagerTensor> Context::dynamic_slice(const EagerTensor& x, std::span<const EagerTensor> starts, Dims sizes) const {
  std::vector<EagerTensor> ops{x};
  ops.insert(ops.end(), starts.begin(), starts.end());
  Attrs a;
  a.sizes.assign(sizes.begin(), sizes.end());
  return core(OpCode::kDynamicSlice, ops, std::move(a));
}

Result<EagerTensor> Context::dynamic_update_slice(const EagerTensor& x, const EagerTensor& update,
                                                  std::span<const EagerTensor> starts) const {
  std::vector<EagerTensor> ops{x, update};
  ops.insert(ops.end(), starts.begin(), starts.end());
  return core(OpCode::kDynamicUpdateSlice, ops, {});
}

Result<EagerTensor> Context::concatenate(std::span<const EagerTensor> parts, int64_t axis) const {
  if (parts.empty()) return usage_error(ErrorCode::kInvalidArgument, "concatenate", "no operands");
  Attrs a;
  TENFERRO_TRY(a.axis, norm_axis(axis, parts[0].rank(), "concatenate"));
  return core(OpCode::kConcatenate, parts, std::move(a));
}

Result<EagerTensor> Context::pad(const EagerTensor& x, const EagerTensor& value, Dims low, Dims high,
                                 Dims interior) const {
  Attrs a;
  a.low.assign(low.begin(), low.end());
  a.high.assign(high.begin(), high.end());
  a.interior.assign(interior.begin(), interior.end());
  const EagerTensor ops[2] = {x, value};
  return core(OpCode::kPad, ops, std::move(a));
}

Result<EagerTensor> Context::gather(const EagerTensor& x, const EagerTensor& indices, int64_t axis) const {
  Attrs a;
  TENFERRO_TRY(a.axis, norm_axis(axis, x.rank(), "gather"));
  const EagerTensor ops[2] = {x, indices};
  return core(OpCode::kGather, ops, std::move(a));
}

Result<EagerTensor> Context::scatter_add(const EagerTensor& x, const EagerTensor& indices, const EagerTensor& updates,
                                         int64_t axis) const {
  Attrs a;
  TENFERRO_TRY(a.axis, norm_axis(axis, x.rank(), "scatter_add"));
  const EagerTensor ops[3] = {x, indices, updates};
  return core(OpCode::kScatterAdd, ops, std::move(a));
}

Result<EagerTensor> Context::embed_diag(const EagerTensor& v, int64_t axis) const {
  Attrs a;
  a.axis = axis;
  const EagerTensor ops[1] = {v};
  return core(OpCode::kEmbedDiag, ops, std::move(a));
}

Result<EagerTensor> Context::tril(const EagerTensor& x, int64_t k) const {
  Attrs a;
  a.k = k;
  const EagerTensor ops[1] = {x};
  return core(OpCode::kTril, ops, std::move(a));
}

Result<EagerTensor> Context::triu(const EagerTensor& x, int64_t k) const {
  Attrs a;
  a.k = k;
  const EagerTensor ops[1] = {x};
  return core(OpCode::kTriu, ops, std::move(a));
}

Result<EagerTensor> Context::argsort(const EagerTensor& x, int64_t axis) const {
  Attrs a;
  TENFERRO_TRY(a.axis, norm_axis(axis, x.rank(), "argsort"));
  const EagerTensor ops[1] = {x};
  return core(OpCode::kArgsort, ops, std::move(a));
}

Result<EagerTensor> Context::sort(const EagerTensor& x, int64_t axis) const {
  // x's column-major flat positions of the sorted elements: argsort's positions times the
  // axis stride plus the other axes' iotas times theirs; one gather of the flattened x.
  TENFERRO_TRY(const int64_t ax, norm_axis(axis, x.rank(), "sort"));
  Result<EagerTensor> order = argsort(x, ax);
  if (!order) return named(order.error(), "sort");
  const Shape shape = x.shape();
  int64_t stride = 1;
  EagerTensor flat;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const int64_t extent = shape[static_cast<size_t>(k)];
    if (k == ax || extent > 1) {
      EagerTensor at = *order;
      if (k != ax) {
        TENFERRO_TRY(at, iota(shape, k));
      }
      TENFERRO_TRY(EagerTensor step, full({}, c128(static_cast<double>(stride), 0.0), DType::kI64));
      TENFERRO_TRY(EagerTensor part, mul(at, step));
      if (flat.defined()) {
        TENFERRO_TRY(flat, add(flat, part));
      } else {
        flat = std::move(part);
      }
    }
    stride *= extent;
  }
  TENFERRO_TRY(EagerTensor xs, reshape(x, {-1}));
  TENFERRO_TRY(EagerTensor fs, reshape(flat, {-1}));
  TENFERRO_TRY(EagerTensor sorted, gather(xs, fs, 0));
  return reshape(sorted, shape);
}

// ---- reductions ----
Result<EagerTensor> Context::sum(const EagerTensor& x, Dims axes, bool keep) const {
  return reduce(*this, program::ReduceKind::kSum, x, axes, keep, "sum");
}
Result<EagerTensor> Context::prod(const EagerTensor& x, Dims axes, bool keep) const {
  return reduce(*this, program::ReduceKind::kProd, x, axes, keep, "prod");
}
Result<EagerTensor> Context::amax(const EagerTensor& x, Dims axes, bool keep) const {
  return reduce(*this, program::ReduceKind::kMax, x, axes, keep, "amax");
}
Result<EagerTensor> Context::amin(const EagerTensor& x, Dims axes, bool keep) const {
  return reduce(*this, program::ReduceKind::kMin, x, axes, keep, "amin");
}

Result<EagerTensor> Context::mean(const EagerTensor& x, Dims axes, bool keep) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&x}, "mean"));
  if (!is_inexact(x.dtype())) {
    return usage_error(ErrorCode::kDTypeMismatch, "mean",
                       "needs a floating or complex dtype, not " + std::string(dtype_name(x.dtype())) +
                           " (convert with astype)");
  }
  TENFERRO_TRY(auto ax, reduce_axes(axes, x.rank(), "mean"));
  const Tensor& t = Detail::physical(x);
  int64_t count = 1;
  for (int64_t a : ax) count *= t.shape()[static_cast<size_t>(a)];
  const c128 n(static_cast<double>(count), 0.0);
  // One operation-local composite on the direct path (sum, then one scaling pass).
  Result<EagerTensor> r = finish(call, Detail::execute(
                          call, true, t.numel(),
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) -> Result<Tensor> {
                            TENFERRO_TRY(Tensor s, cpu::reduce(ctx, cpu::ReduceOp::kSum, t, ax, keep, pool));
                            TENFERRO_TRY(Tensor d, scalar_tensor(t.dtype(), n, nullptr));
                            return cpu::binary(ctx, cpu::BinaryOp::kDiv, s, d, pool);
                          },
                          {&t, 1},
                          [&](ProgramBuilder& b, std::span<const Value> v) {
                            return emit_mean(b, v[0], ax, t.shape(), t.dtype(), n, keep);
                          },
                          "mean"));
  if (!Detail::tracing(*this, {&x})) return r;
  return Detail::record(std::move(r), {&x}, "mean",
                        [ax, shape = t.shape(), dtype = t.dtype(), n, keep](ProgramBuilder& b, std::span<const Value> v) {
                          return emit_mean(b, v[0], ax, shape, dtype, n, keep);
                        },
                        vjp_mean(ax, t.shape(), n, keep));
}

// ---- contractions ----
Result<EagerTensor> Context::matmul(const EagerTensor& a, const EagerTensor& b) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, {&a, &b}, "matmul"));
  TENFERRO_TRY_VOID(same_dtype(a, b, "matmul"));
  if (a.rank() == 0 || b.rank() == 0) {
    return usage_error(ErrorCode::kInvalidShape, "matmul", "0-d operands (use mul)");
  }
  if (a.rank() == 2 && b.rank() == 2) {
    // The common plain product: no batch axes to broadcast, no views, fixed dims.
    const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    if (k != b.shape()[0]) {
      return usage_error(ErrorCode::kShapeMismatch, "matmul",
                         "contracted extents differ: " + format_dims(a.shape()) + " @ " + format_dims(b.shape()));
    }
    static const cpu::DotDims kPlain = [] {
      cpu::DotDims d;
      d.lhs_contracting.push_back(1);
      d.rhs_contracting.push_back(0);
      return d;
    }();
    const Tensor& pa = Detail::physical(a);
    const Tensor& pb = Detail::physical(b);
    std::optional<std::array<Tensor, 2>> copies;  // only for promotion
    if (call.slots->cpu == nullptr) copies.emplace(std::array<Tensor, 2>{pa, pb});
    const std::span<const Tensor> ins = copies ? std::span<const Tensor>(*copies) : std::span<const Tensor>();
    Result<EagerTensor> r = finish(call, Detail::execute(
                            call, true, m * n * std::max<int64_t>(k, 1),
                            [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                              return cpu::dot_general(ctx, pa, pb, kPlain, {}, pool);
                            },
                            ins,
                            [&](ProgramBuilder& pb2, std::span<const Value> v) {
                              Attrs at;
                              at.lhs_contract = {1};
                              at.rhs_contract = {0};
                              return pb2.op(OpCode::kDotGeneral, {v[0], v[1]}, std::move(at));
                            },
                            "matmul"));
    if (!Detail::tracing(*this, {&a, &b})) return r;
    return Detail::record(
        std::move(r), {&a, &b}, "matmul",
        [](ProgramBuilder& pb2, std::span<const Value> v) {
          Attrs at;
          at.lhs_contract = {1};
          at.rhs_contract = {0};
          return pb2.op(OpCode::kDotGeneral, {v[0], v[1]}, std::move(at));
        },
        vjp_matmul2d());
  }
  Tensor ta = Detail::physical(a), tb = Detail::physical(b);
  const bool a1 = ta.rank() == 1, b1 = tb.rank() == 1;
  if (a1) {
    TENFERRO_TRY(ta, ta.reshape({1, ta.shape()[0]}));
  }
  if (b1) {
    TENFERRO_TRY(tb, tb.reshape({tb.shape()[0], 1}));
  }
  const size_t ra = ta.shape().size(), rb = tb.shape().size();
  const int64_t m = ta.shape()[ra - 2], k = ta.shape()[ra - 1], kb = tb.shape()[rb - 2], n = tb.shape()[rb - 1];
  if (k != kb) {
    return usage_error(ErrorCode::kShapeMismatch, "matmul",
                       "contracted extents differ: " + format_dims(a.shape()) + " @ " + format_dims(b.shape()));
  }
  TENFERRO_TRY(Shape batch, cpu::broadcast_shapes(std::span<const int64_t>(ta.shape().data(), ra - 2),
                                                  std::span<const int64_t>(tb.shape().data(), rb - 2), "matmul"));
  Shape full_a = batch, full_b = batch;
  full_a.push_back(m);
  full_a.push_back(k);
  full_b.push_back(k);
  full_b.push_back(n);
  if (ta.shape() != full_a) {
    TENFERRO_TRY(ta, ta.broadcast_to(full_a));
  }
  if (tb.shape() != full_b) {
    TENFERRO_TRY(tb, tb.broadcast_to(full_b));
  }
  const auto nb = static_cast<int64_t>(batch.size());
  cpu::DotDims dims;
  for (int64_t i = 0; i < nb; ++i) {
    dims.lhs_batch.push_back(i);
    dims.rhs_batch.push_back(i);
  }
  dims.lhs_contracting.push_back(nb + 1);
  dims.rhs_contracting.push_back(nb);
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  const int64_t work = element_count(batch) * m * n * std::max<int64_t>(k, 1);
  const Tensor in[2] = {ta, tb};
  Result<EagerTensor> res = finish(call, Detail::execute(
                          call, true, work,
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) -> Result<Tensor> {
                            TENFERRO_TRY(Tensor r, cpu::dot_general(ctx, ta, tb, dims, {}, pool));
                            if (!a1 && !b1) return r;
                            return r.reshape(out);
                          },
                          in,
                          [&](ProgramBuilder& pb, std::span<const Value> v) -> Result<Value> {
                            Attrs at;
                            at.lhs_batch.assign(dims.lhs_batch.begin(), dims.lhs_batch.end());
                            at.rhs_batch.assign(dims.rhs_batch.begin(), dims.rhs_batch.end());
                            at.lhs_contract = {nb + 1};
                            at.rhs_contract = {nb};
                            TENFERRO_TRY(Value r, pb.op(OpCode::kDotGeneral, {v[0], v[1]}, std::move(at)));
                            if (!a1 && !b1) return r;
                            Attrs rs;
                            rs.shape = extents(out);
                            return pb.op(OpCode::kReshape, {r}, std::move(rs));
                          },
                          "matmul"));
  if (!Detail::tracing(*this, {&a, &b})) return res;
  // Program form from the original operands: 1-D promotion, numpy batch broadcast,
  // dot_general, the 1-D squeeze.
  return Detail::record(
      std::move(res), {&a, &b}, "matmul",
      [sa = a.shape(), sb = b.shape(), full_a, full_b, a1, b1, nb, out](
          ProgramBuilder& pb, std::span<const Value> v) -> Result<Value> {
        Value va = v[0], vb = v[1];
        if (a1) {
          Attrs rs;
          rs.shape = extents(Shape{1, sa[0]});
          TENFERRO_TRY(va, pb.op(OpCode::kReshape, {va}, std::move(rs)));
        }
        if (b1) {
          Attrs rs;
          rs.shape = extents(Shape{sb[0], 1});
          TENFERRO_TRY(vb, pb.op(OpCode::kReshape, {vb}, std::move(rs)));
        }
        const Shape pa = a1 ? Shape{1, sa[0]} : sa, pbs = b1 ? Shape{sb[0], 1} : sb;
        TENFERRO_TRY(va, bcast(pb, va, pa, full_a));
        TENFERRO_TRY(vb, bcast(pb, vb, pbs, full_b));
        Attrs at;
        for (int64_t i = 0; i < nb; ++i) {
          at.lhs_batch.push_back(i);
          at.rhs_batch.push_back(i);
        }
        at.lhs_contract = {nb + 1};
        at.rhs_contract = {nb};
        TENFERRO_TRY(Value prod, pb.op(OpCode::kDotGeneral, {va, vb}, std::move(at)));
        if (!a1 && !b1) return prod;
        Attrs rs;
        rs.shape = extents(out);
        return pb.op(OpCode::kReshape, {prod}, std::move(rs));
      });
}

Result<EagerTensor> Context::dot_general(const EagerTensor& lhs, const EagerTensor& rhs, const DotDims& dims) const {
  Attrs a;
  a.lhs_batch = dims.lhs_batch;
  a.rhs_batch = dims.rhs_batch;
  a.lhs_contract = dims.lhs_contract;
  a.rhs_contract = dims.rhs_contract;
  const EagerTensor ops[2] = {lhs, rhs};
  return core(OpCode::kDotGeneral, ops, std::move(a));
}

// Note [Eager einsum]: einsum is an extension op (family "einsum"). Its implementation is
// selected from the runtime's registrations for the target engine (spec 004), resolved
// once per epoch (Note [Eager slots]): with the CPU's native einsum module registered for
// a CPU target, the call runs directly as one operation (a plan from the runtime's
// bounded eager einsum plan cache, keyed by subscripts, shapes, dtype and the memory order
// the operands fit, Note [Row-major operands] in einsum.cc, then one execution: path
// search only on a miss); otherwise it is promoted to a one-node
// prepared graph of the einsum op, which the runtime resolves on the target engine (its
// native module, else the einsum's core lowering; a typed kUnsupported when neither
// works there). Nothing is registered by the call and nothing falls back to another
// engine.
Result<EagerTensor> Context::einsum(std::string_view subscripts, std::span<const EagerTensor> operands) const {
  static const einsum::PathPolicy kDefault{};
  return einsum(subscripts, operands, kDefault);
}

Result<EagerTensor> Context::einsum(std::string_view subscripts, std::span<const EagerTensor> operands,
                                    const einsum::PathPolicy& policy) const {
  SmallVector<const EagerTensor*, 8> ptrs;
  for (const EagerTensor& t : operands) ptrs.push_back(&t);
  TENFERRO_TRY(Call call, Detail::begin(*this, std::span<const EagerTensor* const>(ptrs.data(), ptrs.size()), "einsum"));
  if (operands.empty()) return usage_error(ErrorCode::kInvalidArgument, "einsum", "no operands");
  for (size_t i = 1; i < operands.size(); ++i) {
    TENFERRO_TRY_VOID(same_dtype(operands[0], operands[i], "einsum"));
  }
  std::vector<Tensor> in;
  std::vector<Shape> shapes;
  in.reserve(operands.size());
  shapes.reserve(operands.size());
  for (const EagerTensor& t : operands) {
    in.push_back(Detail::physical(t));
    shapes.push_back(t.shape());
  }
  const DType dtype = operands[0].dtype();
  const bool native = call.slots->einsum_native;
  std::shared_ptr<const einsum::EinsumPlan> plan;
  int64_t work = 0;
  if (native) {
    // The memory order the physical operands fit (Note [Row-major operands] in einsum.cc).
    const einsum::OperandOrder order = einsum::preferred_operand_order(std::span<const Tensor>(in.data(), in.size()));
    TENFERRO_TRY(plan, Detail::einsum_plans(*call.rt).get(
                           subscripts, std::span<const Shape>(shapes.data(), shapes.size()), dtype, policy, order));
    work = static_cast<int64_t>(std::min(plan->cost().flops, 9.0e18));
  } else if (policy.algorithm != einsum::PathPolicy{}.algorithm) {
    return usage_error(ErrorCode::kUnsupported, "einsum",
                       "a path policy (" + std::string(einsum::path_algorithm_name(policy.algorithm)) +
                           ") needs the target's native einsum module; a promoted einsum plans with its lowering");
  }
  const std::span<const Tensor> ins(in.data(), in.size());
  Result<EagerTensor> r = finish(call, Detail::execute(
                          call, native, work,
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                            return plan->execute(ctx, ins, pool);
                          },
                          ins,
                          [&](ProgramBuilder& b, std::span<const Value> v) {
                            return einsum::emit_einsum(b, std::string(subscripts), v);
                          },
                          "einsum"));
  const std::span<const EagerTensor* const> inputs(ptrs.data(), ptrs.size());
  if (!Detail::tracing(*this, inputs)) return r;
  // Note [Recorded einsum paths]: the record (what a trace compiles, what backward
  // replays) keeps the path this call used where the caller chose one: an explicit path
  // as given, a TreeSA path (not reproducible by the op) as the tree it found; the
  // algorithms as their names (the program plans them for its shapes).
  einsum::PathPolicy recorded;
  recorded.algorithm = policy.algorithm;
  if (policy.algorithm == einsum::PathAlgorithm::kExplicit || policy.algorithm == einsum::PathAlgorithm::kTreeSA) {
    recorded.algorithm = einsum::PathAlgorithm::kExplicit;
    recorded.explicit_tree = plan ? plan->tree() : policy.explicit_tree;
  }
  return Detail::record(
      std::move(r), inputs, "einsum",
      [sub = std::string(subscripts), recorded](ProgramBuilder& b, std::span<const Value> v) {
        return einsum::emit_einsum(b, sub, v, recorded);
      },
      vjp_einsum(plan, std::span<const Shape>(shapes.data(), shapes.size())));
}

Result<EagerTensor> einsum(std::string_view subscripts, std::span<const EagerTensor> operands) {
  if (operands.empty() || !operands[0].defined()) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum", "no operands (or an undefined first operand)");
  }
  return Context::of(operands[0]).einsum(subscripts, operands);
}

// ---- any core op ----
Result<EagerTensor> Context::core(program::OpCode code, std::span<const EagerTensor> operands,
                                  program::Attrs attrs) const {
  const std::string_view name = code == OpCode::kExtension ? "extension" : program::op_name(code);
  const std::string op(name);
  SmallVector<const EagerTensor*, 8> ptrs;
  for (const EagerTensor& t : operands) ptrs.push_back(&t);
  TENFERRO_TRY(Call call, Detail::begin(*this, std::span<const EagerTensor* const>(ptrs.data(), ptrs.size()), op.c_str()));
  if (code == OpCode::kExtension || code == OpCode::kConstant) {
    return usage_error(ErrorCode::kInvalidArgument, op, "not an eager core op (use full/scalar or the family's function)");
  }
  std::vector<program::ValueType> types;
  std::vector<Tensor> in;
  for (const EagerTensor& t : operands) {
    types.push_back(program::ValueType{t.dtype(), extents(t.shape())});
    in.push_back(Detail::physical(t));
  }
  std::vector<program::PendingGuard> guards;
  std::vector<program::SymbolInfo> no_symbols;  // exact shapes: inference adds none
  Result<program::ValueType> inferred = program::infer_core(code, attrs, types, no_symbols, guards);
  if (!inferred) return Error(ErrorStage::kUsage, inferred.error().code(), op, inferred.error().message());
  if (is_elementwise_binary(code) && !operands.empty() && operands[0].dtype() == DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, op, "no arithmetic on bool tensors (convert them with astype)");
  }
  Shape out_shape;
  for (const program::Extent& e : inferred->shape) out_shape.push_back(e.exact_value());
  const DType out_dtype = inferred->dtype;
  Result<EagerTensor> r = finish(call, Detail::execute(
                          call, true, element_count(out_shape),
                          [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) {
                            return cpu_runtime::run_core_op(ctx, pool, code, attrs, in, out_dtype, out_shape);
                          },
                          in, [&](ProgramBuilder& b, std::span<const Value> v) { return b.op(code, v, attrs); },
                          op.c_str()));
  const std::span<const EagerTensor* const> inputs(ptrs.data(), ptrs.size());
  if (!Detail::tracing(*this, inputs)) return r;
  // Core elementwise ops have equal operand shapes: the broadcasting rules apply as they are.
  AdNode::Vjp vjp = operands.size() == 1 ? vjp_unary(code) : operands.size() == 2 ? vjp_binary(code) : AdNode::Vjp();
  return Detail::record(
      std::move(r), inputs, program::op_name(code).data(),
      [code, attrs](ProgramBuilder& b, std::span<const Value> v) { return b.op(code, v, attrs); }, std::move(vjp));
}

// ---- operators ----
namespace {
EagerTensor unwrap(Result<EagerTensor> r) {
  if (!r) throw Exception(r.error());
  return std::move(*r);
}
EagerTensor scalar_like(const EagerTensor& x, double s) {
  if (!x.defined()) throw Exception(usage_error(ErrorCode::kInvalidArgument, "operator", "undefined tensor"));
  return unwrap(Context::of(x).scalar(c128(s, 0.0), x.dtype()));
}
}  // namespace

EagerTensor operator+(const EagerTensor& x, const EagerTensor& y) { return unwrap(add(x, y)); }
EagerTensor operator-(const EagerTensor& x, const EagerTensor& y) { return unwrap(sub(x, y)); }
EagerTensor operator*(const EagerTensor& x, const EagerTensor& y) { return unwrap(mul(x, y)); }
EagerTensor operator/(const EagerTensor& x, const EagerTensor& y) { return unwrap(div(x, y)); }
EagerTensor operator-(const EagerTensor& x) { return unwrap(neg(x)); }
EagerTensor operator<(const EagerTensor& x, const EagerTensor& y) { return unwrap(lt(x, y)); }
EagerTensor operator<=(const EagerTensor& x, const EagerTensor& y) { return unwrap(le(x, y)); }
EagerTensor operator>(const EagerTensor& x, const EagerTensor& y) { return unwrap(gt(x, y)); }
EagerTensor operator>=(const EagerTensor& x, const EagerTensor& y) { return unwrap(ge(x, y)); }
EagerTensor operator+(const EagerTensor& x, double s) { return unwrap(add(x, scalar_like(x, s))); }
EagerTensor operator-(const EagerTensor& x, double s) { return unwrap(sub(x, scalar_like(x, s))); }
EagerTensor operator*(const EagerTensor& x, double s) { return unwrap(mul(x, scalar_like(x, s))); }
EagerTensor operator/(const EagerTensor& x, double s) { return unwrap(div(x, scalar_like(x, s))); }
EagerTensor operator+(double s, const EagerTensor& x) { return unwrap(add(scalar_like(x, s), x)); }
EagerTensor operator-(double s, const EagerTensor& x) { return unwrap(sub(scalar_like(x, s), x)); }
EagerTensor operator*(double s, const EagerTensor& x) { return unwrap(mul(scalar_like(x, s), x)); }
EagerTensor operator/(double s, const EagerTensor& x) { return unwrap(div(scalar_like(x, s), x)); }

}  // namespace tenferro::eager
