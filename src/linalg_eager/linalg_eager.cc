#include "tenferro/linalg_eager/linalg_eager.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/linalg_ir/linalg_op.h"

namespace tenferro::eager::linalg {

namespace ops = tenferro::linalg;
using cpu::CpuExecutionContext;
using PoolPtr = std::shared_ptr<HostBufferPool>;

namespace {

// Estimated multiply-adds of one call on a [.., m, n] operand (chooses inline vs entered).
int64_t work_of(const EagerTensor& a) {
  if (a.rank() < 2) return a.numel();
  const int64_t m = a.shape()[static_cast<size_t>(a.rank() - 2)], n = a.shape()[static_cast<size_t>(a.rank() - 1)];
  return std::max<int64_t>(1, a.numel()) * std::min(m, n);
}

// The program form of a linalg call (for the AD tape): `payload` over the inputs, its
// outputs in the native function's order (native output k = program output order[k]).
Result<std::vector<EagerTensor>> run(const Context& c, std::initializer_list<const EagerTensor*> ins, const char* op,
                                     Context::NativeFn f, const linalg_ir::Payload& payload,
                                     std::span<const int> order) {
  return c.run_native(std::span<const EagerTensor* const>(ins.begin(), ins.size()), op, work_of(**ins.begin()), f,
                      [&]() -> Context::ProgramForm {
                        return [payload, ord = std::vector<int>(order.begin(), order.end())](
                                   program::ProgramBuilder& b,
                                   std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
                          TENFERRO_TRY(std::vector<program::Value> outs, linalg_ir::emit_linalg(b, payload, v));
                          std::vector<program::Value> r;
                          for (int k : ord) r.push_back(outs.at(static_cast<size_t>(k)));
                          return r;
                        };
                      });
}

// Native output orders (native output k = program output order[k]).
constexpr int kOne[] = {0};
constexpr int kSame2[] = {0, 1};
constexpr int kSame3[] = {0, 1, 2};
constexpr int kSvdOrder[] = {1, 0, 2};  // native [S, U, Vh], program [U, S, Vh]
constexpr int kQrOrder[] = {1, 0};      // native [R, Q], program [Q, R]

linalg_ir::Payload payload_of(linalg_ir::Kind kind) {
  linalg_ir::Payload p;
  p.kind = kind;
  return p;
}

// Note [Solver program forms]: the native solvers broadcast the batch axes of A and B
// (numpy's rule, trailing alignment) and solve takes a 1-D B as a vector; the linalg IR
// op takes B [.., rows, k] with exactly A's batch axes. The program form recorded for
// AD spells the native semantics around the IR op in core ops: A and B broadcast to the
// common batch (broadcast_in_dim), a vector B reshaped to one column and the solution
// back to a vector. Their AD rules then sum a gradient over the broadcast axes, so a
// gradient has its input's shape.
std::vector<program::Extent> extents_of(std::span<const int64_t> dims) {
  std::vector<program::Extent> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.push_back(program::Extent::exact(d));
  return out;
}

// v (shape `from`) broadcast to `to` with trailing alignment; v itself when equal.
Result<program::Value> broadcast_to(program::ProgramBuilder& b, program::Value v, const std::vector<int64_t>& from,
                                    const std::vector<int64_t>& to) {
  if (from == to) return v;
  program::Attrs attrs;
  attrs.shape = extents_of(to);
  for (size_t i = 0; i < from.size(); ++i) attrs.dims.push_back(static_cast<int64_t>(to.size() - from.size() + i));
  return b.op(program::OpCode::kBroadcastInDim, {v}, std::move(attrs));
}

// The native solvers' call as a program form (Note [Solver program forms]): A [.., r, r]
// and B [.., rows, k] (or a vector [rows] when `vector`), shapes as the native call
// accepted them.
Context::ProgramForm solver_form(const linalg_ir::Payload& payload, const Shape& a_shape, const Shape& b_shape,
                                 bool vector) {
  std::vector<int64_t> as(a_shape.begin(), a_shape.end()), bs(b_shape.begin(), b_shape.end());
  return [payload, as, bs, vector](program::ProgramBuilder& b,
                                   std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
    if (as.size() < 2 || (!vector && bs.size() < 2)) {
      return usage_error(ErrorCode::kInvalidShape, std::string(linalg_ir::kind_name(payload.kind)),
                         "needs matrices in the last two axes (rank >= 2)");
    }
    const size_t a_batch = as.size() - 2, b_batch = vector ? 0 : bs.size() - 2;
    const size_t rank = std::max(a_batch, b_batch);
    std::vector<int64_t> batch(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t ea = i + a_batch >= rank ? as[i + a_batch - rank] : 1;
      const int64_t eb = i + b_batch >= rank ? bs[i + b_batch - rank] : 1;
      batch[i] = ea == 1 ? eb : ea;
    }
    std::vector<int64_t> a_to = batch, b_from = bs, b_to = batch;
    a_to.insert(a_to.end(), as.end() - 2, as.end());
    if (vector) b_from.push_back(1);
    b_to.insert(b_to.end(), b_from.end() - 2, b_from.end());
    program::Value bv = v[1];
    if (vector) {
      program::Attrs col;
      col.shape = extents_of(b_from);
      TENFERRO_TRY(bv, b.op(program::OpCode::kReshape, {bv}, std::move(col)));
    }
    TENFERRO_TRY(program::Value av, broadcast_to(b, v[0], as, a_to));
    TENFERRO_TRY(bv, broadcast_to(b, bv, b_from, b_to));
    const program::Value ins[] = {av, bv};
    TENFERRO_TRY(std::vector<program::Value> outs, linalg_ir::emit_linalg(b, payload, ins));
    if (!vector) return outs;
    program::Attrs flat;
    flat.shape = extents_of(std::span<const int64_t>(b_to.data(), b_to.size() - 1));
    TENFERRO_TRY(program::Value x, b.op(program::OpCode::kReshape, {outs.at(0)}, std::move(flat)));
    return std::vector<program::Value>{x};
  };
}

Result<void> defined(const EagerTensor& a, const char* op) {
  if (!a.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined tensor");
  return ok();
}

}  // namespace

Result<Svd> svd(const Context& c, const EagerTensor& a, const SvdOptions& options) {
  TENFERRO_TRY(auto out, run(c, {&a}, "svd",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(ops::SvdResult r, ops::svd(ctx, a.tensor(), options, pool));
                               o = {std::move(r.s)};
                               if (r.u.defined()) {
                                 o.push_back(std::move(r.u));
                                 o.push_back(std::move(r.vh));
                               }
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kSvd);
                               p.svd_mode = options.mode;
                               p.gauge_fix = options.gauge_fix;
                               return p;
                             }(),
                             options.mode == ops::SvdMode::kValuesOnly ? std::span<const int>(kOne)
                                                                       : std::span<const int>(kSvdOrder)));
  Svd r;
  r.s = std::move(out[0]);
  if (out.size() == 3) {
    r.u = std::move(out[1]);
    r.vh = std::move(out[2]);
  }
  return r;
}
Result<Svd> svd(const EagerTensor& a, const SvdOptions& options) {
  TENFERRO_TRY_VOID(defined(a, "svd"));
  return svd(Context::of(a), a, options);
}

Result<Qr> qr(const Context& c, const EagerTensor& a, QrMode mode) {
  TENFERRO_TRY(auto out, run(c, {&a}, "qr",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(ops::QrResult r, ops::qr(ctx, a.tensor(), mode, {}, pool));
                               o = {std::move(r.r), std::move(r.q)};
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kQr);
                               p.qr_mode = mode;
                               return p;
                             }(),
                             mode == QrMode::kR ? std::span<const int>(kOne) : std::span<const int>(kQrOrder)));
  Qr r;
  r.r = std::move(out[0]);
  if (out[1].defined()) r.q = std::move(out[1]);
  return r;
}
Result<Qr> qr(const EagerTensor& a, QrMode mode) {
  TENFERRO_TRY_VOID(defined(a, "qr"));
  return qr(Context::of(a), a, mode);
}

Result<Eigh> eigh(const Context& c, const EagerTensor& a, Uplo uplo) {
  TENFERRO_TRY(auto out, run(c, {&a}, "eigh",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(ops::EighResult r, ops::eigh(ctx, a.tensor(), uplo, {}, pool));
                               o = {std::move(r.values), std::move(r.vectors)};
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kEigh);
                               p.uplo = uplo;
                               return p;
                             }(),
                             kSame2));
  return Eigh{std::move(out[0]), std::move(out[1])};
}
Result<Eigh> eigh(const EagerTensor& a, Uplo uplo) {
  TENFERRO_TRY_VOID(defined(a, "eigh"));
  return eigh(Context::of(a), a, uplo);
}

Result<EagerTensor> eigvalsh(const EagerTensor& a, Uplo uplo) {
  TENFERRO_TRY_VOID(defined(a, "eigvalsh"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "eigvalsh",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(Tensor w, ops::eigvalsh(ctx, a.tensor(), uplo, {}, pool));
                               o = {std::move(w)};
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kEigh);
                               p.uplo = uplo;
                               p.vectors = false;
                               return p;
                             }(),
                             kOne));
  return std::move(out[0]);
}

Result<Eig> eig(const EagerTensor& a) {
  TENFERRO_TRY_VOID(defined(a, "eig"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "eig",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(ops::EigResult r, ops::eig(ctx, a.tensor(), {}, pool));
                               o = {std::move(r.values), std::move(r.vectors)};
                               return ok();
                             },
                             payload_of(linalg_ir::Kind::kEig), kSame2));
  return Eig{std::move(out[0]), std::move(out[1])};
}

Result<EagerTensor> eigvals(const EagerTensor& a) {
  TENFERRO_TRY_VOID(defined(a, "eigvals"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "eigvals",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(Tensor w, ops::eigvals(ctx, a.tensor(), {}, pool));
                               o = {std::move(w)};
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kEig);
                               p.vectors = false;
                               return p;
                             }(),
                             kOne));
  return std::move(out[0]);
}

Result<EagerTensor> cholesky(const Context& c, const EagerTensor& a, Uplo uplo) {
  TENFERRO_TRY(auto out, run(c, {&a}, "cholesky",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(Tensor l, ops::cholesky(ctx, a.tensor(), uplo, {}, pool));
                               o = {std::move(l)};
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kCholesky);
                               p.uplo = uplo;
                               return p;
                             }(),
                             kOne));
  return std::move(out[0]);
}
Result<EagerTensor> cholesky(const EagerTensor& a, Uplo uplo) {
  TENFERRO_TRY_VOID(defined(a, "cholesky"));
  return cholesky(Context::of(a), a, uplo);
}

Result<Lu> lu(const EagerTensor& a) {
  TENFERRO_TRY_VOID(defined(a, "lu"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "lu",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(ops::LuResult r, ops::lu(ctx, a.tensor(), {}, pool));
                               o = {std::move(r.p), std::move(r.l), std::move(r.u)};
                               return ok();
                             },
                             payload_of(linalg_ir::Kind::kLu), kSame3));
  return Lu{std::move(out[0]), std::move(out[1]), std::move(out[2])};
}

Result<EagerTensor> solve(const Context& c, const EagerTensor& a, const EagerTensor& b) {
  const EagerTensor* ins[] = {&a, &b};
  TENFERRO_TRY(
      auto out,
      c.run_native(
          ins, "solve", work_of(a),
          [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
            TENFERRO_TRY(Tensor x, ops::solve(ctx, a.tensor(), b.tensor(), {}, pool));
            o = {std::move(x)};
            return ok();
          },
          [&] { return solver_form(payload_of(linalg_ir::Kind::kSolve), a.shape(), b.shape(), b.rank() == 1); }));
  return std::move(out[0]);
}
Result<EagerTensor> solve(const EagerTensor& a, const EagerTensor& b) {
  TENFERRO_TRY_VOID(defined(a, "solve"));
  return solve(Context::of(a), a, b);
}

Result<EagerTensor> triangular_solve(const EagerTensor& a, const EagerTensor& b, const TriangularOptions& options) {
  TENFERRO_TRY_VOID(defined(a, "triangular_solve"));
  const EagerTensor* ins[] = {&a, &b};
  TENFERRO_TRY(auto out,
               Context::of(a).run_native(
                   ins, "triangular_solve", work_of(a),
                   [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                     TENFERRO_TRY(Tensor x, ops::triangular_solve(ctx, a.tensor(), b.tensor(), options, pool));
                     o = {std::move(x)};
                     return ok();
                   },
                   [&] {
                     linalg_ir::Payload p = payload_of(linalg_ir::Kind::kTriangularSolve);
                     p.triangular = options;
                     return solver_form(p, a.shape(), b.shape(), false);
                   }));
  return std::move(out[0]);
}

Result<EagerTensor> inv(const EagerTensor& a) {
  TENFERRO_TRY_VOID(defined(a, "inv"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "inv",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(Tensor x, ops::inv(ctx, a.tensor(), {}, pool));
                               o = {std::move(x)};
                               return ok();
                             },
                             payload_of(linalg_ir::Kind::kInv), kOne));
  return std::move(out[0]);
}

Result<EagerTensor> det(const EagerTensor& a) {
  TENFERRO_TRY_VOID(defined(a, "det"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "det",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(Tensor x, ops::det(ctx, a.tensor(), {}, pool));
                               o = {std::move(x)};
                               return ok();
                             },
                             payload_of(linalg_ir::Kind::kDet), kOne));
  return std::move(out[0]);
}

Result<Slogdet> slogdet(const EagerTensor& a) {
  TENFERRO_TRY_VOID(defined(a, "slogdet"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "slogdet",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(ops::SlogdetResult r, ops::slogdet(ctx, a.tensor(), {}, pool));
                               o = {std::move(r.sign), std::move(r.logabsdet)};
                               return ok();
                             },
                             payload_of(linalg_ir::Kind::kSlogdet), kSame2));
  return Slogdet{std::move(out[0]), std::move(out[1])};
}

namespace {
// Note [Eager pinv cut]: pinv's rule (locally constant rank, Golub-Pereyra) is the
// derivative of the pseudo-inverse at matrices of rank r. With a cutoff that drops
// singular values that are not zero (a user rtol, a truncation), the function is
// V_r S_r^-1 U_r^H of the truncated SVD, whose derivative also couples kept and dropped
// singular vectors (terms of order s_cut / s_kept). So where the call dropped a nonzero
// singular value, the eager pinv and lstsq record that form instead: the thin SVD with
// the kept values inverted and the dropped ones masked to zero (the mask is this call's
// choice, per batch item; a traced program keeps it), through the SVD rule. Where every
// dropped value is zero (exact rank deficiency or full rank) the pinv op's form stays:
// both derivatives agree there and the op decides its cutoff where it runs.
//
// The mask [.., k] (1 kept, 0 dropped) when the cutoff of pinv / lstsq (rtol, default
// max(m, n) * eps) drops a nonzero singular value of `a`; nullopt otherwise.
Result<std::optional<Tensor>> dropped_nonzero_mask(const EagerTensor& a, std::optional<double> rtol) {
  SvdOptions values;
  values.mode = ops::SvdMode::kValuesOnly;
  TENFERRO_TRY(Svd sv, svd(Context::of(a).no_grad(), a, values));
  const Tensor& s = sv.s.tensor();
  const int64_t m = a.shape()[a.rank() - 2], n = a.shape()[a.rank() - 1], k = std::min(m, n);
  if (k == 0) return std::optional<Tensor>();
  const double eps = s.dtype() == DType::kF32 ? static_cast<double>(std::numeric_limits<float>::epsilon())
                                              : std::numeric_limits<double>::epsilon();
  const double rel = rtol.value_or(eps * static_cast<double>(std::max(m, n)));
  TENFERRO_TRY(const Tensor flat, s.reshape_copy({s.numel()}));
  std::vector<double> mask(static_cast<size_t>(s.numel()), 1.0);
  bool dropped_nonzero = false;
  for (int64_t item = 0; item < s.numel() / k; ++item) {
    // S is [batch.., k], column-major: value j of item b is element b + items * j.
    double top = 0;
    std::vector<double> vals(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      TENFERRO_TRY(const c128 v, flat.get_as_c128({item + (s.numel() / k) * j}));
      vals[static_cast<size_t>(j)] = v.real();
      top = std::max(top, v.real());
    }
    for (int64_t j = 0; j < k; ++j) {
      const double v = vals[static_cast<size_t>(j)];
      if (v <= rel * top) {
        mask[static_cast<size_t>(item + (s.numel() / k) * j)] = 0.0;
        dropped_nonzero = dropped_nonzero || v > 0;
      }
    }
  }
  if (!dropped_nonzero) return std::optional<Tensor>();
  if (s.dtype() == DType::kF32) {
    TENFERRO_TRY(Tensor mf, Tensor::from_col_major<float>(s.shape(), std::vector<float>(mask.begin(), mask.end())));
    return std::optional<Tensor>(std::move(mf));
  }
  TENFERRO_TRY(Tensor md, Tensor::from_col_major<double>(s.shape(), mask));
  return std::optional<Tensor>(std::move(md));
}

// V diag(mask / S) U^H from the thin SVD of `a` (Note [Eager pinv cut]).
Result<program::Value> emit_masked_pinv(program::ProgramBuilder& b, program::Value a, const Tensor& mask) {
  using program::OpCode;
  linalg_ir::Payload p = payload_of(linalg_ir::Kind::kSvd);
  p.svd_mode = ops::SvdMode::kThin;
  const program::Value in[] = {a};
  TENFERRO_TRY(std::vector<program::Value> usv, linalg_ir::emit_linalg(b, p, in));
  TENFERRO_TRY(program::Value mk, b.capture(mask));
  // S + (1 - mask): the kept values, and 1 + s where dropped (never 0); then mask / that.
  TENFERRO_TRY(program::Value one_minus, b.op(OpCode::kSub, {mk, mk}));  // 0
  TENFERRO_TRY(const program::ValueType st, b.type(usv[1]));
  Result<program::Literal> lit = st.dtype == DType::kF32
                                     ? program::Literal::from_values<float>({}, std::array<float, 1>{1.0f})
                                     : program::Literal::from_values<double>({}, std::array<double, 1>{1.0});
  if (!lit) return lit.error();
  TENFERRO_TRY(program::Value c1, b.constant(std::move(*lit)));
  program::Attrs bc;
  bc.shape = st.shape;
  TENFERRO_TRY(program::Value ones, b.op(OpCode::kBroadcastInDim, {c1}, std::move(bc)));
  TENFERRO_TRY(one_minus, b.op(OpCode::kSub, {ones, mk}));
  TENFERRO_TRY(program::Value safe, b.op(OpCode::kAdd, {usv[1], one_minus}));
  TENFERRO_TRY(program::Value sinv, b.op(OpCode::kDiv, {mk, safe}));
  TENFERRO_TRY(const program::ValueType ut, b.type(usv[0]));
  program::Value sc = sinv;
  if (ut.dtype != st.dtype) {
    program::Attrs cv;
    cv.dtype = ut.dtype;
    TENFERRO_TRY(sc, b.op(OpCode::kConvert, {sinv}, std::move(cv)));
  }
  TENFERRO_TRY(program::Value uc, b.op(OpCode::kConj, {usv[0]}));
  TENFERRO_TRY(program::Value vc, b.op(OpCode::kConj, {usv[2]}));
  const program::Value ops3[] = {vc, sc, uc};
  return einsum::emit_einsum(b, "...kn,...k,...mk->...nm",
                             std::vector<program::Value>(std::begin(ops3), std::end(ops3)));
}
}  // namespace

Result<EagerTensor> pinv(const EagerTensor& a, std::optional<double> rtol) {
  TENFERRO_TRY_VOID(defined(a, "pinv"));
  const EagerTensor* const ins[1] = {&a};
  TENFERRO_TRY(auto out,
               Context::of(a).run_native(
                   ins, "pinv", work_of(a),
                   [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                     TENFERRO_TRY(Tensor x, ops::pinv(ctx, a.tensor(), rtol, {}, pool));
                     o = {std::move(x)};
                     return ok();
                   },
                   [&]() -> Context::ProgramForm {
                     Result<std::optional<Tensor>> mask = dropped_nonzero_mask(a, rtol);
                     if (mask && *mask) {  // Note [Eager pinv cut]
                       return [m = **mask](program::ProgramBuilder& b,
                                           std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
                         TENFERRO_TRY(program::Value x, emit_masked_pinv(b, v[0], m));
                         return std::vector<program::Value>{x};
                       };
                     }
                     linalg_ir::Payload p = payload_of(linalg_ir::Kind::kPinv);
                     p.rtol = rtol;
                     return [p](program::ProgramBuilder& b,
                                std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
                       return linalg_ir::emit_linalg(b, p, v);
                     };
                   }));
  return std::move(out[0]);
}

// Note [Eager lstsq derivative]: gelsd's minimum-norm solution is pinv(A) B with pinv's
// cutoff equal to lstsq's rcond (both count singular values at most rcond * max(S) as
// zero, with the same default), so the form the tape records is the pinv op followed by
// a batched product; the singular values are the values-only SVD, and the residuals,
// when the native call returned them (m > n, every item of full rank), sum |A X - B|^2
// over the rows (else they are empty: a zero-width slice of S). Where rcond drops a
// nonzero singular value, pinv's form is the masked thin SVD of Note [Eager pinv cut].
// The integer rank has no program form.
Result<Lstsq> lstsq(const EagerTensor& a, const EagerTensor& b, std::optional<double> rcond) {
  TENFERRO_TRY_VOID(defined(a, "lstsq"));
  TENFERRO_TRY_VOID(defined(b, "lstsq"));
  bool residuals = false;
  auto native = [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
    TENFERRO_TRY(ops::LstsqResult r, ops::lstsq(ctx, a.tensor(), b.tensor(), rcond, {}, pool));
    residuals = r.residuals.rank() > 0 && r.residuals.shape().back() > 0;
    o = {std::move(r.solution), std::move(r.residuals), std::move(r.rank), std::move(r.singular_values)};
    return ok();
  };
  auto form = [&]() -> Context::ProgramForm {
    const int64_t rank = a.rank();
    const bool vector = b.rank() == rank - 1;  // as the native call reads B
    Result<std::optional<Tensor>> cut = dropped_nonzero_mask(a, rcond);  // Note [Eager pinv cut]
    std::optional<Tensor> mask = cut ? std::move(*cut) : std::nullopt;
    return [rcond, residuals, rank, vector, mask](
               program::ProgramBuilder& pb, std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
      using program::Attrs;
      using program::OpCode;
      using program::Value;
      std::vector<int64_t> batch;
      for (int64_t i = 0; i < rank - 2; ++i) batch.push_back(i);
      std::vector<Value> pinv;
      if (mask) {
        TENFERRO_TRY(Value x, emit_masked_pinv(pb, v[0], *mask));
        pinv.push_back(x);
      } else {
        linalg_ir::Payload pp = payload_of(linalg_ir::Kind::kPinv);
        pp.rtol = rcond;
        TENFERRO_TRY(pinv, linalg_ir::emit_linalg(pb, pp, v.first(1)));
      }
      // X = pinv(A) B: contract pinv's rows-of-A axis with B's rows.
      Attrs mm;
      mm.lhs_batch = batch;
      mm.rhs_batch = batch;
      mm.lhs_contract = {rank - 1};
      mm.rhs_contract = {rank - 2};  // B's rows, a vector's or a matrix's
      TENFERRO_TRY(Value x, pb.op(OpCode::kDotGeneral, {pinv.at(0), v[1]}, std::move(mm)));
      linalg_ir::Payload sp = payload_of(linalg_ir::Kind::kSvd);
      sp.svd_mode = ops::SvdMode::kValuesOnly;
      TENFERRO_TRY(std::vector<Value> sv, linalg_ir::emit_linalg(pb, sp, v.first(1)));
      const Value s = sv.at(0);
      Value res;
      if (residuals) {
        // sum over the rows of |A X - B|^2: [.., k], or [.., 1] for a vector B.
        Attrs ax;
        ax.lhs_batch = batch;
        ax.rhs_batch = batch;
        ax.lhs_contract = {rank - 1};
        ax.rhs_contract = {rank - 2};
        TENFERRO_TRY(Value fit, pb.op(OpCode::kDotGeneral, {v[0], x}, std::move(ax)));
        TENFERRO_TRY(Value d, pb.op(OpCode::kSub, {fit, v[1]}));
        TENFERRO_TRY(Value dc, pb.op(OpCode::kConj, {d}));
        TENFERRO_TRY(Value dd, pb.op(OpCode::kMul, {dc, d}));
        TENFERRO_TRY(Value re, pb.op(OpCode::kReal, {dd}));
        Attrs rows;
        rows.dims = {rank - 2};
        TENFERRO_TRY(res, pb.op(OpCode::kReduce, {re}, std::move(rows)));
        if (vector) {
          TENFERRO_TRY(const program::ValueType t, pb.type(res));
          Attrs one;
          one.shape = t.shape;
          one.shape.push_back(program::Extent::exact(1));
          TENFERRO_TRY(res, pb.op(OpCode::kReshape, {res}, std::move(one)));
        }
      } else {
        // Empty residuals [.., 0]: a zero-width slice of S.
        TENFERRO_TRY(const program::ValueType t, pb.type(s));
        Attrs none;
        for (size_t i = 0; i < t.shape.size(); ++i) {
          none.start.push_back(0);
          none.limit.push_back(i + 1 == t.shape.size() ? 0 : t.shape[i].exact_value());
          none.stride.push_back(1);
        }
        TENFERRO_TRY(res, pb.op(OpCode::kSlice, {s}, std::move(none)));
      }
      return std::vector<Value>{x, res, Value{}, s};
    };
  };
  const EagerTensor* const ins[2] = {&a, &b};
  TENFERRO_TRY(auto out, Context::of(a).run_native(ins, "lstsq", work_of(a), native, form));
  return Lstsq{std::move(out[0]), std::move(out[1]), std::move(out[2]), std::move(out[3])};
}

Result<EagerTensor> matrix_norm(const EagerTensor& a, MatrixNorm kind) {
  TENFERRO_TRY_VOID(defined(a, "matrix_norm"));
  TENFERRO_TRY(auto out, run(Context::of(a), {&a}, "matrix_norm",
                             [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                               TENFERRO_TRY(Tensor x, ops::matrix_norm(ctx, a.tensor(), kind, {}, pool));
                               o = {std::move(x)};
                               return ok();
                             },
                             [&] {
                               linalg_ir::Payload p = payload_of(linalg_ir::Kind::kMatrixNorm);
                               p.norm = kind;
                               return p;
                             }(),
                             kOne));
  return std::move(out[0]);
}

namespace {
// The program form of vector_norm (for the AD tape) from core ops over |x|: sum (ord 1),
// max/min (ord +-inf), sqrt(sum |x|^2) (ord 2), (sum |x|^p)^(1/p) otherwise. ord 0 (a
// count) is piecewise constant: its form refuses.
Result<program::Value> emit_vector_norm(program::ProgramBuilder& b, program::Value x, double ord,
                                        std::span<const int64_t> axes, bool keep_dims) {
  using program::OpCode;
  if (ord == 0.0) {
    return usage_error(ErrorCode::kUnsupported, "vector_norm", "ord 0 counts nonzeros: it has no derivative");
  }
  TENFERRO_TRY(const program::ValueType tx, b.type(x));
  const auto rank = static_cast<int64_t>(tx.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  program::Attrs red;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[static_cast<size_t>(i)]) red.dims.push_back(i);
  }
  TENFERRO_TRY(program::Value ax, b.op(OpCode::kAbs, {x}));
  TENFERRO_TRY(const program::ValueType ta, b.type(ax));
  auto scalar = [&](double v, const std::vector<program::Extent>& shape) -> Result<program::Value> {
    Result<program::Literal> lit = ta.dtype == DType::kF32
                                       ? program::Literal::from_values<float>({}, std::array<float, 1>{static_cast<float>(v)})
                                       : program::Literal::from_values<double>({}, std::array<double, 1>{v});
    if (!lit) return lit.error();
    TENFERRO_TRY(program::Value c, b.constant(std::move(*lit)));
    program::Attrs bc;
    bc.shape = shape;
    return b.op(OpCode::kBroadcastInDim, {c}, std::move(bc));
  };
  std::vector<program::Extent> out_shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[static_cast<size_t>(i)]) out_shape.push_back(tx.shape[static_cast<size_t>(i)]);
  }
  // Note [Norm at zero]: the root of a sum that is zero has an infinite derivative, and
  // the chain rule multiplies it by the sum's zero derivative (NaN). A zero sum takes the
  // root of 1 instead and the result is selected back to 0, so the gradient of a norm at
  // the zero vector is 0 for ord >= 1 (a subgradient, as torch gives), and elsewhere
  // unchanged; for ord < 1 each |x_i|^ord has an infinite derivative at 0 of its own.
  auto root = [&](program::Value sum, auto&& take_root) -> Result<program::Value> {
    TENFERRO_TRY(program::Value zero, scalar(0.0, out_shape));
    TENFERRO_TRY(program::Value one, scalar(1.0, out_shape));
    program::Attrs eq;
    eq.direction = program::CompareDirection::kEq;
    TENFERRO_TRY(program::Value is0, b.op(OpCode::kCompare, {sum, zero}, std::move(eq)));
    TENFERRO_TRY(program::Value safe, b.op(OpCode::kSelect, {is0, one, sum}));
    TENFERRO_TRY(program::Value rooted, take_root(safe));
    return b.op(OpCode::kSelect, {is0, zero, rooted});
  };
  program::Value r;
  if (std::isinf(ord)) {
    red.reduce = ord > 0 ? program::ReduceKind::kMax : program::ReduceKind::kMin;
    TENFERRO_TRY(r, b.op(OpCode::kReduce, {ax}, red));
  } else if (ord == 1.0) {
    TENFERRO_TRY(r, b.op(OpCode::kReduce, {ax}, red));
  } else if (ord == 2.0) {
    TENFERRO_TRY(program::Value sq, b.op(OpCode::kMul, {ax, ax}));
    TENFERRO_TRY(program::Value s2, b.op(OpCode::kReduce, {sq}, red));
    TENFERRO_TRY(r, root(s2, [&](program::Value v) { return b.op(OpCode::kSqrt, {v}); }));
  } else {
    TENFERRO_TRY(program::Value p, scalar(ord, ta.shape));
    TENFERRO_TRY(program::Value pw, b.op(OpCode::kPow, {ax, p}));
    TENFERRO_TRY(program::Value sp, b.op(OpCode::kReduce, {pw}, red));
    TENFERRO_TRY(program::Value q, scalar(1.0 / ord, out_shape));
    TENFERRO_TRY(r, root(sp, [&](program::Value v) { return b.op(OpCode::kPow, {v, q}); }));
  }
  if (!keep_dims) return r;
  program::Attrs rs;
  for (int64_t i = 0; i < rank; ++i) {
    rs.shape.push_back(reduced[static_cast<size_t>(i)] ? program::Extent::exact(1) : tx.shape[static_cast<size_t>(i)]);
  }
  return b.op(OpCode::kReshape, {r}, std::move(rs));
}
}  // namespace

Result<EagerTensor> vector_norm(const EagerTensor& x, double ord, std::vector<int64_t> axes, bool keep_dims) {
  TENFERRO_TRY_VOID(defined(x, "vector_norm"));
  const EagerTensor* const ins[1] = {&x};
  TENFERRO_TRY(auto out,
               Context::of(x).run_native(
                   ins, "vector_norm", work_of(x),
                   [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                     TENFERRO_TRY(Tensor y, ops::vector_norm(ctx, x.tensor(), ord, axes, keep_dims, pool));
                     o = {std::move(y)};
                     return ok();
                   },
                   [&]() -> Context::ProgramForm {
                     return [ord, axes, keep_dims](program::ProgramBuilder& b, std::span<const program::Value> v)
                                -> Result<std::vector<program::Value>> {
                       TENFERRO_TRY(program::Value r, emit_vector_norm(b, v[0], ord, axes, keep_dims));
                       return std::vector<program::Value>{r};
                     };
                   }));
  return std::move(out[0]);
}

// Note [Eager truncated SVD derivative]: a truncated SVD that kept rank r is, near its
// input, the thin SVD with every factor sliced to its first r singular triples (the rank
// is locally constant away from ties at the cut), and the discarded weight is
// ||A||_F^2 - sum(S_kept^2). That is the program form the tape records, so the thin SVD
// rule gives the derivative, including the terms that couple kept and discarded vectors
// (the truncated-SVD correction). It holds for the exact method when every batch item
// kept the same rank; a randomized result, or items padded to a common rank, are not
// the sliced thin SVD: their form refuses (typed kUnsupported at backward).
Result<TruncatedSvd> truncated_svd(const Context& c, const EagerTensor& a, const TruncatedSvdOptions& options) {
  int64_t kept = 0;
  std::string refused;  // why the result is not the sliced thin SVD, if it is not
  auto native = [&](CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
    TENFERRO_TRY(ops::TruncatedSvdResult r, ops::truncated_svd(ctx, a.tensor(), options, pool));
    kept = r.s.shape().empty() ? 0 : r.s.shape().back();
    if (r.method_used != ops::TruncatedSvdMethod::kExact) {
      refused = "a randomized truncated SVD has no derivative (use the exact method)";
    } else {
      TENFERRO_TRY(const Tensor ranks, r.rank.reshape({r.rank.numel()}));
      for (int64_t i = 0; i < ranks.numel() && refused.empty(); ++i) {
        TENFERRO_TRY(const c128 item, ranks.get_as_c128({i}));
        if (item.real() != static_cast<double>(kept)) {
          refused = "batch items kept different ranks (zero-padded to the largest): no derivative";
        }
      }
    }
    o = {std::move(r.u), std::move(r.s), std::move(r.vh), std::move(r.discarded_weight), std::move(r.rank)};
    return ok();
  };
  auto form = [&]() -> Context::ProgramForm {
    linalg_ir::Payload p = payload_of(linalg_ir::Kind::kSvd);
    p.svd_mode = ops::SvdMode::kThin;
    p.gauge_fix = options.gauge_fix;
    return [p, kept, refused](program::ProgramBuilder& b,
                              std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
      if (!refused.empty()) return usage_error(ErrorCode::kUnsupported, "truncated_svd", refused);
      TENFERRO_TRY(std::vector<program::Value> usv, linalg_ir::emit_linalg(b, p, v));
      std::vector<program::Value> out;
      for (size_t k = 0; k < 3; ++k) {  // U [.., m, r], S [.., r], Vh [.., r, n]
        TENFERRO_TRY(const program::ValueType t, b.type(usv[k]));
        const size_t rank = t.shape.size();
        const size_t axis = k == 2 ? rank - 2 : rank - 1;
        program::Attrs at;
        for (size_t i = 0; i < rank; ++i) {
          at.start.push_back(0);
          at.limit.push_back(i == axis ? kept : t.shape[i].exact_value());
          at.stride.push_back(1);
        }
        TENFERRO_TRY(program::Value sl, b.op(program::OpCode::kSlice, {usv[k]}, std::move(at)));
        out.push_back(sl);
      }
      // discarded weight = sum |A|^2 over the matrix axes - sum S_kept^2.
      TENFERRO_TRY(const program::ValueType ta, b.type(v[0]));
      const size_t ra = ta.shape.size();
      TENFERRO_TRY(program::Value ca, b.op(program::OpCode::kConj, {v[0]}));
      TENFERRO_TRY(program::Value aa, b.op(program::OpCode::kMul, {ca, v[0]}));
      TENFERRO_TRY(program::Value re, b.op(program::OpCode::kReal, {aa}));
      program::Attrs fro;
      fro.dims = {static_cast<int64_t>(ra - 2), static_cast<int64_t>(ra - 1)};
      TENFERRO_TRY(program::Value total, b.op(program::OpCode::kReduce, {re}, std::move(fro)));
      TENFERRO_TRY(program::Value s2, b.op(program::OpCode::kMul, {out[1], out[1]}));
      program::Attrs last;
      last.dims = {static_cast<int64_t>(ra - 2)};
      TENFERRO_TRY(program::Value kept_sq, b.op(program::OpCode::kReduce, {s2}, std::move(last)));
      TENFERRO_TRY(program::Value dw, b.op(program::OpCode::kSub, {total, kept_sq}));
      out.push_back(dw);
      return out;
    };
  };
  const EagerTensor* const ins[1] = {&a};
  TENFERRO_TRY(auto out, c.run_native(ins, "truncated_svd", work_of(a), native, form));
  return TruncatedSvd{std::move(out[0]), std::move(out[1]), std::move(out[2]), std::move(out[3]), std::move(out[4])};
}
Result<TruncatedSvd> truncated_svd(const EagerTensor& a, const TruncatedSvdOptions& options) {
  TENFERRO_TRY_VOID(defined(a, "truncated_svd"));
  return truncated_svd(Context::of(a), a, options);
}

}  // namespace tenferro::eager::linalg
