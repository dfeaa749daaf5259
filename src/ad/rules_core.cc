// Differentiation rules of the core op vocabulary: one JVP rule per op and one transpose
// rule per op that can be used linearly.

#include <algorithm>
#include <numeric>

#include "rules.h"

namespace tenferro::ad::detail {

using program::Attrs;
using program::CompareDirection;
using program::Extent;
using program::ReduceKind;

// Note [Core JVP rules]: each rule states the derivative of the op's semantics (Note
// [Core op semantics] in program/ops.cc) as core ops, linear in the tangents:
// - Non-differentiable: compare, iota, constant, sign (zero almost everywhere), and any
//   op whose result is an integer or bool; convert to an integer drops the tangent.
// - Ties: max/min pass the first operand's tangent where the operands are equal;
//   reduce max/min split the tangent evenly over the tied maxima (minima); clamp passes
//   x's tangent on the closed interval [lo, hi].
// - reduce prod is exact with zeros: the derivative by x_i is the product of the other
//   elements, computed from the zero count (no division by zero).
// - pow(x, p) by p uses y * log(x), defined as 0 where x == 0.
// - abs of a complex z: d|z| = re(conj(sign z) dz) (0 at z == 0).

namespace {

bool inexact(DType d) { return is_inexact(d); }

// tangent or zeros of the operand's type.
Result<Value> or_zeros(Emitter& e, const MaybeValue& t, const ValueType& type) {
  if (t) return *t;
  return e.zeros(type);
}

Result<Value> compare(Emitter& e, Value a, Value b, CompareDirection d) {
  return e.op(OpCode::kCompare, {a, b}, Attrs{.direction = d});
}

Result<Value> select(Emitter& e, Value p, Value a, Value b) { return e.op(OpCode::kSelect, {p, a, b}); }

// `v` (rank 0 or of the shape of `like_type`) broadcast to `like_type`'s shape.
Result<Value> broadcast_like(Emitter& e, Value v, const ValueType& like_type) {
  TENFERRO_TRY(ValueType t, e.type(v));
  if (t.rank() == like_type.rank()) return v;
  return e.broadcast(v, like_type.shape, {});
}

// Axes of a rank-r value that are not in `dims`, in order.
std::vector<int64_t> kept_axes(int64_t rank, std::span<const int64_t> dims) {
  std::vector<int64_t> kept;
  for (int64_t a = 0; a < rank; ++a) {
    if (std::find(dims.begin(), dims.end(), a) == dims.end()) kept.push_back(a);
  }
  return kept;
}

std::vector<Extent> shape_without(const ValueType& t, std::span<const int64_t> dims) {
  std::vector<Extent> out;
  for (int64_t a : kept_axes(t.rank(), dims)) out.push_back(t.shape[static_cast<size_t>(a)]);
  return out;
}

// d reduce(x, dims) for prod: sum over the reduced axes of t * (product of the other
// elements), exact with zeros (Note [Core JVP rules]).
Result<Value> reduce_prod_jvp(Emitter& e, const Attrs& a, Value x, const ValueType& xt, Value t) {
  const DType rd = real_dtype(xt.dtype);
  const std::vector<int64_t> kept = kept_axes(xt.rank(), a.dims);
  const std::vector<Extent> kept_shape = shape_without(xt, a.dims);
  TENFERRO_TRY(Value zero, e.zeros(xt));
  TENFERRO_TRY(Value is_zero, compare(e, x, zero, CompareDirection::kEq));
  TENFERRO_TRY(Value ones, e.full(xt, 1.0));
  TENFERRO_TRY(Value nonzero_x, select(e, is_zero, ones, x));
  TENFERRO_TRY(Value prod_nz, e.op(OpCode::kReduce, {nonzero_x}, Attrs{.dims = a.dims, .reduce = ReduceKind::kProd}));
  TENFERRO_TRY(Value zc, e.convert(is_zero, rd));
  TENFERRO_TRY(Value count, e.sum(zc, a.dims));
  TENFERRO_TRY(Value prod_b, e.broadcast(prod_nz, xt.shape, kept));
  TENFERRO_TRY(Value count_b, e.broadcast(count, xt.shape, kept));
  ValueType ct = xt;
  ct.dtype = rd;
  TENFERRO_TRY(Value c0, e.zeros(ct));
  TENFERRO_TRY(Value c1, e.full(ct, 1.0));
  TENFERRO_TRY(Value none, compare(e, count_b, c0, CompareDirection::kEq));
  TENFERRO_TRY(Value one, compare(e, count_b, c1, CompareDirection::kEq));
  TENFERRO_TRY(Value others_if_none, e.div(prod_b, nonzero_x));
  TENFERRO_TRY(Value others_if_one, select(e, is_zero, prod_b, zero));
  TENFERRO_TRY(Value one_or_more, select(e, one, others_if_one, zero));
  TENFERRO_TRY(Value others, select(e, none, others_if_none, one_or_more));
  TENFERRO_TRY(Value prod_t, e.mul(others, t));
  return e.sum(prod_t, a.dims);
}

// d reduce(x, dims) for max/min: the tangent averaged over the tied extrema.
Result<Value> reduce_extremum_jvp(Emitter& e, const Attrs& a, Value x, const ValueType& xt, Value y, Value t) {
  const std::vector<int64_t> kept = kept_axes(xt.rank(), a.dims);
  TENFERRO_TRY(Value yb, e.broadcast(y, xt.shape, kept));
  TENFERRO_TRY(Value hit, compare(e, x, yb, CompareDirection::kEq));
  TENFERRO_TRY(Value mask, e.convert(hit, xt.dtype));
  TENFERRO_TRY(Value count, e.sum(mask, a.dims));
  TENFERRO_TRY(Value masked, e.mul(t, mask));
  TENFERRO_TRY(Value total, e.sum(masked, a.dims));
  return e.div(total, count);
}

}  // namespace

Result<MaybeValue> jvp_core(Emitter& e, OpCode code, const Attrs& a, std::span<const Value> in,
                            std::span<const ValueType> in_types, Value out, std::span<const MaybeValue> tan) {
  TENFERRO_TRY(ValueType ot, e.type(out));
  if (!inexact(ot.dtype)) return MaybeValue{};
  bool any = false;
  for (size_t i = 0; i < tan.size(); ++i) any = any || (tan[i].has_value() && inexact(in_types[i].dtype));
  if (!any) return MaybeValue{};
  auto some = [](Result<Value> r) -> Result<MaybeValue> {
    if (!r) return r.error();
    return MaybeValue(*r);
  };
  const MaybeValue t0 = tan.empty() ? MaybeValue{} : tan[0];
  switch (code) {
    case OpCode::kNeg: return some(e.neg(*t0));
    case OpCode::kAbs: {
      TENFERRO_TRY(Value s, e.op(OpCode::kSign, {in[0]}));
      if (!is_complex(in_types[0].dtype)) return some(e.mul(s, *t0));
      TENFERRO_TRY(Value cs, e.conj(s));
      TENFERRO_TRY(Value p, e.mul(cs, *t0));
      return some(e.op(OpCode::kReal, {p}));
    }
    case OpCode::kSign: return MaybeValue{};
    case OpCode::kExp: return some(e.mul(out, *t0));
    case OpCode::kLog: return some(e.div(*t0, in[0]));
    case OpCode::kExpm1: {
      TENFERRO_TRY(Value one, e.splat_like(out, 1.0));
      TENFERRO_TRY(Value ex, e.add(out, one));
      return some(e.mul(ex, *t0));
    }
    case OpCode::kLog1p: {
      TENFERRO_TRY(Value one, e.splat_like(in[0], 1.0));
      TENFERRO_TRY(Value d, e.add(in[0], one));
      return some(e.div(*t0, d));
    }
    case OpCode::kSin: {
      TENFERRO_TRY(Value c, e.op(OpCode::kCos, {in[0]}));
      return some(e.mul(c, *t0));
    }
    case OpCode::kCos: {
      TENFERRO_TRY(Value s, e.op(OpCode::kSin, {in[0]}));
      TENFERRO_TRY(Value p, e.mul(s, *t0));
      return some(e.neg(p));
    }
    case OpCode::kTanh: {
      TENFERRO_TRY(Value one, e.splat_like(out, 1.0));
      TENFERRO_TRY(Value y2, e.mul(out, out));
      TENFERRO_TRY(Value d, e.sub(one, y2));
      return some(e.mul(d, *t0));
    }
    case OpCode::kSqrt: {
      TENFERRO_TRY(Value two_y, e.add(out, out));
      return some(e.div(*t0, two_y));
    }
    case OpCode::kRsqrt: {
      TENFERRO_TRY(Value h, e.splat_like(out, -0.5));
      TENFERRO_TRY(Value y2, e.mul(out, out));
      TENFERRO_TRY(Value y3, e.mul(y2, out));
      TENFERRO_TRY(Value d, e.mul(h, y3));
      return some(e.mul(d, *t0));
    }
    case OpCode::kConj: return some(e.op(OpCode::kConj, {*t0}));
    case OpCode::kReal:
    case OpCode::kImag: return some(e.op(code, {*t0}));
    case OpCode::kAdd: return e.add(tan[0], tan[1]);
    case OpCode::kSub: {
      if (!tan[1]) return t0;
      TENFERRO_TRY(Value n, e.neg(*tan[1]));
      return e.add(t0, MaybeValue(n));
    }
    case OpCode::kMul: {
      MaybeValue l, r;
      if (tan[0]) {
        TENFERRO_TRY(l, some(e.mul(*tan[0], in[1])));
      }
      if (tan[1]) {
        TENFERRO_TRY(r, some(e.mul(in[0], *tan[1])));
      }
      return e.add(l, r);
    }
    case OpCode::kDiv: {
      // d(x/y) = (dx - (x/y) dy) / y
      MaybeValue num = tan[0];
      if (tan[1]) {
        TENFERRO_TRY(Value zdy, e.mul(out, *tan[1]));
        TENFERRO_TRY(Value n, e.neg(zdy));
        TENFERRO_TRY(num, e.add(num, MaybeValue(n)));
      }
      return some(e.div(*num, in[1]));
    }
    case OpCode::kRem: {
      // rem(x, y) = x - y * trunc(x / y): d = dx - trunc(x / y) dy, trunc(x / y) = (x - rem) / y.
      MaybeValue r = tan[0];
      if (tan[1]) {
        TENFERRO_TRY(Value diff, e.sub(in[0], out));
        TENFERRO_TRY(Value q, e.div(diff, in[1]));
        TENFERRO_TRY(Value qd, e.mul(q, *tan[1]));
        TENFERRO_TRY(Value n, e.neg(qd));
        TENFERRO_TRY(r, e.add(r, MaybeValue(n)));
      }
      return r;
    }
    case OpCode::kPow: {
      MaybeValue l, r;
      if (tan[0]) {
        TENFERRO_TRY(Value one, e.splat_like(in[1], 1.0));
        TENFERRO_TRY(Value pm1, e.sub(in[1], one));
        TENFERRO_TRY(Value xp, e.op(OpCode::kPow, {in[0], pm1}));
        TENFERRO_TRY(Value d, e.mul(in[1], xp));
        TENFERRO_TRY(l, some(e.mul(d, *tan[0])));
      }
      if (tan[1]) {
        TENFERRO_TRY(Value zero, e.zeros(in_types[0]));
        TENFERRO_TRY(Value at0, compare(e, in[0], zero, CompareDirection::kEq));
        TENFERRO_TRY(Value lg, e.op(OpCode::kLog, {in[0]}));
        TENFERRO_TRY(Value ylg, e.mul(out, lg));
        TENFERRO_TRY(Value d, select(e, at0, zero, ylg));
        TENFERRO_TRY(r, some(e.mul(d, *tan[1])));
      }
      return e.add(l, r);
    }
    case OpCode::kAtan2: {
      // d atan2(y, x) = (x dy - y dx) / (x^2 + y^2) (NaN at the origin, where atan2 jumps).
      MaybeValue num;
      if (tan[0]) {
        TENFERRO_TRY(num, some(e.mul(in[1], *tan[0])));
      }
      if (tan[1]) {
        TENFERRO_TRY(Value ydx, e.mul(in[0], *tan[1]));
        TENFERRO_TRY(Value n, e.neg(ydx));
        TENFERRO_TRY(num, e.add(num, MaybeValue(n)));
      }
      TENFERRO_TRY(Value y2, e.mul(in[0], in[0]));
      TENFERRO_TRY(Value x2, e.mul(in[1], in[1]));
      TENFERRO_TRY(Value r2, e.add(y2, x2));
      return some(e.div(*num, r2));
    }
    case OpCode::kMax:
    case OpCode::kMin: {
      TENFERRO_TRY(Value first, compare(e, in[0], in[1], code == OpCode::kMax ? CompareDirection::kGe : CompareDirection::kLe));
      TENFERRO_TRY(Value ta, or_zeros(e, tan[0], in_types[0]));
      TENFERRO_TRY(Value tb, or_zeros(e, tan[1], in_types[1]));
      return some(select(e, first, ta, tb));
    }
    case OpCode::kSelect: {
      TENFERRO_TRY(Value ta, or_zeros(e, tan[1], in_types[1]));
      TENFERRO_TRY(Value tb, or_zeros(e, tan[2], in_types[2]));
      return some(select(e, in[0], ta, tb));
    }
    case OpCode::kClamp: {
      // clamp(lo, x, hi) = min(max(x, lo), hi)
      TENFERRO_TRY(Value lo, broadcast_like(e, in[0], ot));
      TENFERRO_TRY(Value hi, broadcast_like(e, in[2], ot));
      MaybeValue tlo_m, thi_m;
      if (tan[0]) {
        TENFERRO_TRY(tlo_m, some(broadcast_like(e, *tan[0], ot)));
      }
      if (tan[2]) {
        TENFERRO_TRY(thi_m, some(broadcast_like(e, *tan[2], ot)));
      }
      TENFERRO_TRY(Value tlo, or_zeros(e, tlo_m, ot));
      TENFERRO_TRY(Value thi, or_zeros(e, thi_m, ot));
      TENFERRO_TRY(Value tx, or_zeros(e, tan[1], ot));
      TENFERRO_TRY(Value below, compare(e, in[1], lo, CompareDirection::kLt));
      TENFERRO_TRY(Value m, e.op(OpCode::kMax, {in[1], lo}));
      TENFERRO_TRY(Value above, compare(e, m, hi, CompareDirection::kGt));
      TENFERRO_TRY(Value inner, select(e, below, tlo, tx));
      return some(select(e, above, thi, inner));
    }
    case OpCode::kConvert:
      if (!inexact(in_types[0].dtype)) return MaybeValue{};
      return some(e.convert(*t0, ot.dtype));
    case OpCode::kCompare:
    case OpCode::kConstant:
    case OpCode::kIota: return MaybeValue{};
    case OpCode::kBroadcastInDim:
    case OpCode::kReshape:
    case OpCode::kTranspose:
    case OpCode::kReverse:
    case OpCode::kSlice:
    case OpCode::kExtractDiag:
    case OpCode::kEmbedDiag:
    case OpCode::kTril:
    case OpCode::kTriu: return some(e.op(code, {*t0}, a));
    case OpCode::kReduce:
      switch (a.reduce) {
        case ReduceKind::kSum: return some(e.op(code, {*t0}, a));
        case ReduceKind::kProd: return some(reduce_prod_jvp(e, a, in[0], in_types[0], *t0));
        case ReduceKind::kMax:
        case ReduceKind::kMin: return some(reduce_extremum_jvp(e, a, in[0], in_types[0], out, *t0));
      }
      break;
    case OpCode::kDynamicSlice:
    case OpCode::kGather: {
      std::vector<Value> ops(in.begin(), in.end());
      ops[0] = *t0;
      return some(e.op(code, ops, a));
    }
    case OpCode::kDynamicUpdateSlice:
    case OpCode::kPad:
    case OpCode::kScatterAdd:
    case OpCode::kConcatenate: {
      // Linear in the data operands (all but the integer indices).
      std::vector<Value> ops(in.begin(), in.end());
      for (size_t i = 0; i < ops.size(); ++i) {
        if (!inexact(in_types[i].dtype)) continue;
        TENFERRO_TRY(ops[i], or_zeros(e, tan[i], in_types[i]));
      }
      return some(e.op(code, ops, a));
    }
    case OpCode::kDotGeneral: {
      MaybeValue l, r;
      if (tan[0]) {
        TENFERRO_TRY(l, some(e.op(code, {*tan[0], in[1]}, a)));
      }
      if (tan[1]) {
        TENFERRO_TRY(r, some(e.op(code, {in[0], *tan[1]}, a)));
      }
      return e.add(l, r);
    }
    case OpCode::kArgsort: return MaybeValue{};  // integer positions: no tangent (returned above)
    case OpCode::kExtension: break;
  }
  return ad_error(ErrorCode::kInternal, "jvp", "no rule for core op " + std::string(program::op_name(code)));
}

LinearSlots linear_slots(OpCode code, const Attrs& attrs, std::span<const ValueType> in_types, const ValueType& out_type) {
  const size_t n = in_types.size();
  if (!is_inexact(out_type.dtype)) return {};
  auto additive = [&](std::initializer_list<size_t> slots) {
    LinearSlots s{Linearity::kAdditive, std::vector<bool>(n, false)};
    for (size_t i : slots) {
      if (i < n) s.slots[i] = true;
    }
    return s;
  };
  switch (code) {
    case OpCode::kNeg:
    case OpCode::kConj:
    case OpCode::kReal:
    case OpCode::kImag:
    case OpCode::kBroadcastInDim:
    case OpCode::kReshape:
    case OpCode::kTranspose:
    case OpCode::kReverse:
    case OpCode::kSlice:
    case OpCode::kExtractDiag:
    case OpCode::kEmbedDiag:
    case OpCode::kTril:
    case OpCode::kTriu:
    case OpCode::kDynamicSlice:
    case OpCode::kGather:
    case OpCode::kDiv: return additive({0});
    case OpCode::kConvert:
      if (!is_inexact(in_types[0].dtype)) return {};
      return additive({0});
    case OpCode::kReduce:
      if (attrs.reduce != ReduceKind::kSum) return {};
      return additive({0});
    case OpCode::kAdd:
    case OpCode::kSub:
    case OpCode::kPad:
    case OpCode::kDynamicUpdateSlice: return additive({0, 1});
    case OpCode::kSelect: return additive({1, 2});
    case OpCode::kScatterAdd: return additive({0, 2});
    case OpCode::kConcatenate: {
      LinearSlots s{Linearity::kAdditive, std::vector<bool>(n, true)};
      return s;
    }
    case OpCode::kMul:
    case OpCode::kDotGeneral: return LinearSlots{Linearity::kOneFactor, std::vector<bool>(n, true)};
    default: return {};
  }
}

namespace {

Result<Value> need_exact(const Extent& x, std::string_view what) {
  (void)x;
  return ad_error(ErrorCode::kUnsupported, "transpose",
                  "the transpose of " + std::string(what) + " needs exact extents; this one is symbolic");
}

bool all_exact(std::span<const Extent> s) {
  return std::all_of(s.begin(), s.end(), [](const Extent& x) { return x.is_exact(); });
}

// The last valid index of an axis of extent `d` as a rank-0 value of `dtype`.
Result<Value> last_index(Emitter& e, const Extent& d, DType dtype) {
  if (d.is_exact()) return e.scalar(dtype, static_cast<double>(d.exact_value() - 1));
  TENFERRO_TRY(Value io, e.op(OpCode::kIota, {}, Attrs{.shape = {d}, .axis = 0, .dtype = dtype}));
  return e.op(OpCode::kReduce, {io}, Attrs{.dims = {0}, .reduce = ReduceKind::kMax});
}

// Cotangents of dot_general(lhs, rhs) for the linear side.
Result<Value> dot_transpose(Emitter& e, const Attrs& a, const ValueType& lt, const ValueType& rt, Value ct,
                            Value other, bool lhs_linear) {
  const int64_t nb = static_cast<int64_t>(a.lhs_batch.size());
  auto free_axes = [](int64_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
    std::vector<int64_t> f;
    for (int64_t i = 0; i < rank; ++i) {
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contract.begin(), contract.end(), i) == contract.end()) {
        f.push_back(i);
      }
    }
    return f;
  };
  const std::vector<int64_t> lf = free_axes(lt.rank(), a.lhs_batch, a.lhs_contract);
  const std::vector<int64_t> rf = free_axes(rt.rank(), a.rhs_batch, a.rhs_contract);
  const auto nlf = static_cast<int64_t>(lf.size());
  const auto nrf = static_cast<int64_t>(rf.size());
  std::vector<int64_t> ct_batch(static_cast<size_t>(nb));
  std::iota(ct_batch.begin(), ct_batch.end(), 0);
  TENFERRO_TRY(Value oc, e.conj(other));
  // rank of axis `x` among the sorted `axes`
  auto rank_in = [](const std::vector<int64_t>& axes, int64_t x) {
    return static_cast<int64_t>(std::count_if(axes.begin(), axes.end(), [&](int64_t y) { return y < x; }));
  };
  if (lhs_linear) {
    // ct [batch, lf, rf] . conj(rhs): contract rf; result [batch, lf, rhs contract axes (sorted)]
    std::vector<int64_t> ct_contract;
    for (int64_t j = 0; j < nrf; ++j) ct_contract.push_back(nb + nlf + j);
    TENFERRO_TRY(Value d, e.op(OpCode::kDotGeneral, {ct, oc},
                               Attrs{.lhs_batch = ct_batch, .rhs_batch = a.rhs_batch, .lhs_contract = ct_contract, .rhs_contract = rf}));
    std::vector<int64_t> perm(static_cast<size_t>(lt.rank()));
    for (int64_t k = 0; k < nb; ++k) perm[static_cast<size_t>(a.lhs_batch[static_cast<size_t>(k)])] = k;
    for (int64_t j = 0; j < nlf; ++j) perm[static_cast<size_t>(lf[static_cast<size_t>(j)])] = nb + j;
    for (size_t k = 0; k < a.lhs_contract.size(); ++k) {
      perm[static_cast<size_t>(a.lhs_contract[k])] = nb + nlf + rank_in(a.rhs_contract, a.rhs_contract[k]);
    }
    return e.op(OpCode::kTranspose, {d}, Attrs{.dims = perm});
  }
  // conj(lhs) . ct [batch, lf, rf]: contract lf; result [batch, lhs contract axes (sorted), rf]
  std::vector<int64_t> ct_contract;
  for (int64_t j = 0; j < nlf; ++j) ct_contract.push_back(nb + j);
  TENFERRO_TRY(Value d, e.op(OpCode::kDotGeneral, {oc, ct},
                             Attrs{.lhs_batch = a.lhs_batch, .rhs_batch = ct_batch, .lhs_contract = lf, .rhs_contract = ct_contract}));
  const auto nlc = static_cast<int64_t>(a.lhs_contract.size());
  std::vector<int64_t> perm(static_cast<size_t>(rt.rank()));
  for (int64_t k = 0; k < nb; ++k) perm[static_cast<size_t>(a.rhs_batch[static_cast<size_t>(k)])] = k;
  for (size_t k = 0; k < a.rhs_contract.size(); ++k) {
    perm[static_cast<size_t>(a.rhs_contract[k])] = nb + rank_in(a.lhs_contract, a.lhs_contract[k]);
  }
  for (int64_t j = 0; j < nrf; ++j) perm[static_cast<size_t>(rf[static_cast<size_t>(j)])] = nb + nlc + j;
  return e.op(OpCode::kTranspose, {d}, Attrs{.dims = perm});
}

// The operand of a slice (or of a pad's inverse) as zeros with `ct` placed at start with
// the given strides.
Result<Value> unslice(Emitter& e, const Attrs& a, const ValueType& xt, const ValueType& ot, Value ct) {
  const int64_t r = xt.rank();
  if (all_exact(xt.shape) && all_exact(ot.shape)) {
    for (int64_t i = 0; i < r; ++i) {
      if (ot.shape[static_cast<size_t>(i)].exact_value() == 0) return e.zeros(xt);
    }
    Attrs p;
    for (int64_t i = 0; i < r; ++i) {
      const auto u = static_cast<size_t>(i);
      const int64_t d = xt.shape[u].exact_value(), n = ot.shape[u].exact_value();
      // One element taken (n == 1): no interior, whatever the stride (a stride may be as
      // large as int64 holds; with n > 1 it is below the extent).
      p.low.push_back(a.start[u]);
      p.interior.push_back(n > 1 ? a.stride[u] - 1 : 0);
      p.high.push_back(d - (a.start[u] + (n - 1) * a.stride[u] + 1));
    }
    TENFERRO_TRY(Value z, e.scalar(xt.dtype, 0.0));
    return e.op(OpCode::kPad, {ct, z}, std::move(p));
  }
  for (int64_t s : a.stride) {
    if (s != 1) return need_exact(xt.shape[0], "a strided slice");
  }
  TENFERRO_TRY(Value zeros, e.zeros(xt));
  std::vector<Value> ops{zeros, ct};
  for (int64_t s : a.start) {
    TENFERRO_TRY(Value st, e.scalar(DType::kI64, static_cast<double>(s)));
    ops.push_back(st);
  }
  return e.op(OpCode::kDynamicUpdateSlice, ops);
}

}  // namespace

Result<std::vector<MaybeValue>> transpose_core(Emitter& e, OpCode code, const Attrs& a, std::span<const MaybeValue> in,
                                               std::span<const ValueType> in_types, const std::vector<bool>& linear,
                                               const ValueType& out_type, Value ct) {
  std::vector<MaybeValue> r(in.size());
  const ValueType& xt = in_types[0];
  auto set = [&](size_t i, Result<Value> v) -> Result<void> {
    if (!v) return v.error();
    if (linear[i]) r[i] = *v;
    return {};
  };
  switch (code) {
    case OpCode::kNeg: TENFERRO_TRY_VOID(set(0, e.neg(ct))); break;
    case OpCode::kAdd:
      TENFERRO_TRY_VOID(set(0, ct));
      TENFERRO_TRY_VOID(set(1, ct));
      break;
    case OpCode::kSub:
      TENFERRO_TRY_VOID(set(0, ct));
      if (linear[1]) {
        TENFERRO_TRY_VOID(set(1, e.neg(ct)));
      }
      break;
    case OpCode::kMul: {
      const size_t l = linear[0] ? 0 : 1;
      TENFERRO_TRY(Value oc, e.conj(*in[1 - l]));
      TENFERRO_TRY_VOID(set(l, e.mul(oc, ct)));
      break;
    }
    case OpCode::kDiv: {
      TENFERRO_TRY(Value yc, e.conj(*in[1]));
      TENFERRO_TRY_VOID(set(0, e.div(ct, yc)));
      break;
    }
    case OpCode::kConj: TENFERRO_TRY_VOID(set(0, e.op(OpCode::kConj, {ct}))); break;
    case OpCode::kReal:
      TENFERRO_TRY_VOID(set(0, e.convert(ct, xt.dtype)));
      break;
    case OpCode::kImag:
      if (is_complex(xt.dtype)) {
        TENFERRO_TRY(Value c, e.convert(ct, xt.dtype));
        TENFERRO_TRY(Value i, e.splat_like(c, 0.0, 1.0));
        TENFERRO_TRY_VOID(set(0, e.mul(c, i)));
      }
      break;
    case OpCode::kConvert: TENFERRO_TRY_VOID(set(0, e.convert(ct, xt.dtype))); break;
    case OpCode::kSelect: {
      TENFERRO_TRY(Value z, e.zeros(out_type));
      if (linear[1]) {
        TENFERRO_TRY_VOID(set(1, e.op(OpCode::kSelect, {*in[0], ct, z})));
      }
      if (linear[2]) {
        TENFERRO_TRY_VOID(set(2, e.op(OpCode::kSelect, {*in[0], z, ct})));
      }
      break;
    }
    case OpCode::kBroadcastInDim: {
      std::vector<int64_t> axes;
      for (int64_t j = 0; j < out_type.rank(); ++j) {
        auto it = std::find(a.dims.begin(), a.dims.end(), j);
        if (it == a.dims.end()) {
          axes.push_back(j);
          continue;
        }
        const Extent& src = xt.shape[static_cast<size_t>(it - a.dims.begin())];
        const Extent& dst = out_type.shape[static_cast<size_t>(j)];
        if (src.is_exact() && src.exact_value() == 1 && !(dst.is_exact() && dst.exact_value() == 1)) axes.push_back(j);
      }
      TENFERRO_TRY(Value s, e.sum(ct, axes));
      TENFERRO_TRY(ValueType st, e.type(s));
      if (st.shape == xt.shape) {
        TENFERRO_TRY_VOID(set(0, s));
      } else {
        TENFERRO_TRY_VOID(set(0, e.op(OpCode::kReshape, {s}, Attrs{.shape = xt.shape})));
      }
      break;
    }
    case OpCode::kReshape: TENFERRO_TRY_VOID(set(0, e.op(OpCode::kReshape, {ct}, Attrs{.shape = xt.shape}))); break;
    case OpCode::kTranspose: {
      std::vector<int64_t> inv(a.dims.size());
      for (size_t i = 0; i < a.dims.size(); ++i) inv[static_cast<size_t>(a.dims[i])] = static_cast<int64_t>(i);
      TENFERRO_TRY_VOID(set(0, e.op(OpCode::kTranspose, {ct}, Attrs{.dims = inv})));
      break;
    }
    case OpCode::kReverse: TENFERRO_TRY_VOID(set(0, e.op(OpCode::kReverse, {ct}, Attrs{.dims = a.dims}))); break;
    case OpCode::kSlice: TENFERRO_TRY_VOID(set(0, unslice(e, a, xt, out_type, ct))); break;
    case OpCode::kPad: {
      if (!all_exact(xt.shape) || !all_exact(out_type.shape)) {
        TENFERRO_TRY_VOID(need_exact(xt.shape[0], "pad"));
      }
      // Undo cropping (negative low/high), then take every (interior + 1)-th element.
      Value c = ct;
      bool crop = false;
      Attrs uncrop;
      Attrs sl;
      bool empty = false;
      for (size_t i = 0; i < xt.shape.size(); ++i) {
        const int64_t lo = a.low[i], hi = a.high[i], d = xt.shape[i].exact_value();
        uncrop.low.push_back(std::max<int64_t>(0, -lo));
        uncrop.high.push_back(std::max<int64_t>(0, -hi));
        uncrop.interior.push_back(0);
        crop = crop || lo < 0 || hi < 0;
        const int64_t st = std::max<int64_t>(0, lo);
        sl.start.push_back(st);
        sl.stride.push_back(a.interior[i] + 1);
        sl.limit.push_back(d == 0 ? st : st + (d - 1) * (a.interior[i] + 1) + 1);
        empty = empty || d == 0;
      }
      Value ctx;
      if (empty) {
        TENFERRO_TRY(ctx, e.zeros(xt));
      } else {
        if (crop) {
          TENFERRO_TRY(Value z, e.scalar(xt.dtype, 0.0));
          TENFERRO_TRY(c, e.op(OpCode::kPad, {c, z}, std::move(uncrop)));
        }
        TENFERRO_TRY(ctx, e.op(OpCode::kSlice, {c}, std::move(sl)));
      }
      if (linear[0]) r[0] = ctx;
      if (linear[1]) {
        std::vector<int64_t> all(static_cast<size_t>(out_type.rank()));
        std::iota(all.begin(), all.end(), 0);
        std::vector<int64_t> allx(static_cast<size_t>(xt.rank()));
        std::iota(allx.begin(), allx.end(), 0);
        TENFERRO_TRY(Value total, e.sum(ct, all));
        TENFERRO_TRY(Value inner, e.sum(ctx, allx));
        TENFERRO_TRY_VOID(set(1, e.sub(total, inner)));
      }
      break;
    }
    case OpCode::kDynamicSlice: {
      TENFERRO_TRY(Value z, e.zeros(xt));
      std::vector<Value> ops{z, ct};
      for (size_t i = 1; i < in.size(); ++i) ops.push_back(*in[i]);
      TENFERRO_TRY_VOID(set(0, e.op(OpCode::kDynamicUpdateSlice, ops)));
      break;
    }
    case OpCode::kDynamicUpdateSlice: {
      const ValueType& ut = in_types[1];
      std::vector<Value> idx;
      for (size_t i = 2; i < in.size(); ++i) idx.push_back(*in[i]);
      if (linear[0]) {
        TENFERRO_TRY(Value z, e.zeros(ut));
        std::vector<Value> ops{ct, z};
        ops.insert(ops.end(), idx.begin(), idx.end());
        TENFERRO_TRY_VOID(set(0, e.op(OpCode::kDynamicUpdateSlice, ops)));
      }
      if (linear[1]) {
        if (!all_exact(ut.shape)) {
          TENFERRO_TRY_VOID(need_exact(ut.shape[0], "dynamic_update_slice"));
        }
        Attrs ds;
        for (const Extent& x : ut.shape) ds.sizes.push_back(x.exact_value());
        std::vector<Value> ops{ct};
        ops.insert(ops.end(), idx.begin(), idx.end());
        TENFERRO_TRY_VOID(set(1, e.op(OpCode::kDynamicSlice, ops, std::move(ds))));
      }
      break;
    }
    case OpCode::kConcatenate: {
      if (!all_exact(out_type.shape)) {
        TENFERRO_TRY_VOID(need_exact(out_type.shape[0], "concatenate"));
      }
      int64_t offset = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t d = in_types[i].shape[static_cast<size_t>(a.axis)].exact_value();
        if (linear[i]) {
          Attrs sl;
          for (int64_t j = 0; j < out_type.rank(); ++j) {
            const bool ax = j == a.axis;
            sl.start.push_back(ax ? offset : 0);
            sl.limit.push_back(ax ? offset + d : out_type.shape[static_cast<size_t>(j)].exact_value());
            sl.stride.push_back(1);
          }
          TENFERRO_TRY_VOID(set(i, e.op(OpCode::kSlice, {ct}, std::move(sl))));
        }
        offset += d;
      }
      break;
    }
    case OpCode::kGather: {
      // gather clamps its indices, scatter_add skips out-of-range ones: clamp first.
      const Value idx = *in[1];
      TENFERRO_TRY(ValueType it, e.type(idx));
      TENFERRO_TRY(Value lo, e.scalar(it.dtype, 0.0));
      TENFERRO_TRY(Value hi, last_index(e, xt.shape[static_cast<size_t>(a.axis)], it.dtype));
      TENFERRO_TRY(Value ci, e.op(OpCode::kClamp, {lo, idx, hi}));
      TENFERRO_TRY(Value z, e.zeros(xt));
      TENFERRO_TRY_VOID(set(0, e.op(OpCode::kScatterAdd, {z, ci, ct}, Attrs{.axis = a.axis})));
      break;
    }
    case OpCode::kScatterAdd: {
      if (linear[0]) r[0] = ct;
      if (linear[2]) {
        const Value idx = *in[1];
        TENFERRO_TRY(ValueType it, e.type(idx));
        const ValueType& ut = in_types[2];
        TENFERRO_TRY(Value g, e.op(OpCode::kGather, {ct, idx}, Attrs{.axis = a.axis}));
        TENFERRO_TRY(Value lo, e.zeros(it));
        TENFERRO_TRY(Value hi0, last_index(e, xt.shape[static_cast<size_t>(a.axis)], it.dtype));
        TENFERRO_TRY(Value hi, broadcast_like(e, hi0, it));
        TENFERRO_TRY(Value ge, compare(e, idx, lo, CompareDirection::kGe));
        TENFERRO_TRY(Value le, compare(e, idx, hi, CompareDirection::kLe));
        std::vector<int64_t> dims;
        for (int64_t j = 0; j < it.rank(); ++j) dims.push_back(a.axis + j);
        TENFERRO_TRY(Value geb, e.broadcast(ge, ut.shape, dims));
        TENFERRO_TRY(Value leb, e.broadcast(le, ut.shape, dims));
        TENFERRO_TRY(Value z, e.zeros(ut));
        TENFERRO_TRY(Value inner, select(e, leb, g, z));
        TENFERRO_TRY_VOID(set(2, select(e, geb, inner, z)));
      }
      break;
    }
    case OpCode::kReduce:
      TENFERRO_TRY_VOID(set(0, e.broadcast(ct, xt.shape, kept_axes(xt.rank(), a.dims))));
      break;
    case OpCode::kDotGeneral: {
      const bool lhs = linear[0];
      TENFERRO_TRY(Value d, dot_transpose(e, a, in_types[0], in_types[1], ct, *in[lhs ? 1 : 0], lhs));
      r[lhs ? 0 : 1] = d;
      break;
    }
    case OpCode::kExtractDiag: TENFERRO_TRY_VOID(set(0, e.op(OpCode::kEmbedDiag, {ct}, Attrs{.axis = a.axis}))); break;
    case OpCode::kEmbedDiag: TENFERRO_TRY_VOID(set(0, e.op(OpCode::kExtractDiag, {ct}, Attrs{.axis = a.axis}))); break;
    case OpCode::kTril:
    case OpCode::kTriu: TENFERRO_TRY_VOID(set(0, e.op(code, {ct}, Attrs{.k = a.k}))); break;
    default:
      return ad_error(ErrorCode::kInvalidArgument, "transpose",
                      "core op " + std::string(program::op_name(code)) + " is not linear in its operands");
  }
  return r;
}

}  // namespace tenferro::ad::detail
