// The linalg family's differentiation rules (JVPs as core ops and einsums; transposes of
// the solves used linearly).

#include <cmath>

#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/linalg_ir/linalg_op.h"

namespace tenferro::linalg_ir {

using ad::Emitter;
using ad::MaybeValue;
using program::Attrs;
using program::Extent;
using program::OpCode;
using program::Value;
using program::ValueType;

// Note [Linalg rules]: JVPs of the decompositions in matrix form (batch axes pass
// through), emitted as core ops and einsums, so their transposes come from the core and
// einsum rules; solve and triangular_solve are the only linalg ops a JVP applies to a
// tangent, and their transposes are solves with the adjoint matrix.
// - svd (thin and values-only; full is unsupported): P = Uᴴ dA V, dS = re diag P,
//   dU = U (F ∘ (P S + S Pᴴ)) + (dA V − U P) S⁻¹, dV = V (F ∘ (S P + Pᴴ S)) +
//   (dAᴴ U − V Pᴴ) S⁻¹ with F_ij = 1 / (s_j² − s_i²), F_ii = 0. Complex gauge: V's
//   columns carry no phase change (diag Vᴴ dV = 0) and U's carry i Im(P_ii) / s_i; with
//   gauge_fix the phase change that keeps each U column's largest entry real is added.
// - eigh: P = Vᴴ dA_h V, dw = re diag P, dV = V (F ∘ P), F_ij = 1 / (w_j − w_i); dA_h is
//   the Hermitian matrix the op reads (the uplo triangle mirrored, real diagonal).
// - Degeneracy policy: every 1/x of a spectral gap and S⁻¹ is Lorentzian-broadened,
//   x / (x² + ε) with ε = LinalgAdOptions::broadening (absolute, in units of the
//   squared gap; ε = 0: exact 1/x, 0 where x = 0). Nearly degenerate spectra give
//   finite derivatives; the error is O(ε / gap²) away from degeneracy. Truncating an SVD
//   by slicing its thin results keeps the terms that couple kept and discarded vectors
//   (the truncated-SVD correction), because the rule differentiates all k vectors.
// - qr (reduced, m >= n): X = Qᴴ dA R⁻¹, Ω = tril(X, −1) − tril(X, −1)ᴴ (+ i Im diag X
//   for complex: R keeps a real diagonal), dQ = Q Ω + dA R⁻¹ − Q X, dR = (X − Ω) R.
//   Wide (m < n): A = [X | Y], X square: dQ, dR₁ by the rule above on X, dR₂ = Qᴴ (dY −
//   dQ R₂). The complete QR of a tall matrix is unsupported (Q's extra columns are not
//   unique).
// - cholesky: dL = L Φ(L⁻¹ dA_h L⁻ᴴ), Φ = strict lower part + half the diagonal.
// - lu (square): X = L⁻¹ Pᵀ dA U⁻¹, dL = L tril(X, −1), dU = triu(X) U, P constant.
// - solve: dX = solve(A, dB − dA X); triangular_solve: the same with op(A) and the read
//   triangle; inv: dX = −X dA X; det: det · tr(A⁻¹ dA); slogdet: d log|det| =
//   re tr(A⁻¹ dA), d sign = i im tr(A⁻¹ dA) sign (complex; zero for real).
// - matrix_norm: fro re⟨A, dA⟩ / ‖A‖; nuclear re⟨U Vh, dA⟩; spectral re⟨u₁ vh₁, dA⟩;
//   one / inf: re⟨sign(A), dA⟩ over the maximal column (row), ties averaged.
// - pinv (locally constant rank): dX = −X dA X + X Xᴴ dAᴴ (I − A X) + (I − X A) dAᴴ Xᴴ X.
// - expm: dX = L(A, dA), the Fréchet derivative, an op of its own (expm_frechet: the
//   top-right block of expm([[A, dA], [0, A]])), linear in dA with adjoint L(Aᴴ, ·);
//   its derivative in A is [L(M, diag(dA, dA))]₁₂, M = [[A, E], [0, A]] (frechet_jvp),
//   so second derivatives of expm are expm_frechet ops on doubled matrices.
// - eig: dλ = diag P, P = V⁻¹ dA V; dV = V (F ∘ P) − V diag(c), F_ij = 1 / (λ_j − λ_i)
//   (complex gaps broadened as conj(g) / (|g|² + ε)), c_j chosen so that each column
//   keeps the op's gauge: unit 2-norm and its largest-magnitude entry real (eig_jvp).

namespace {

Error rule_error(ErrorCode code, std::string message) {
  return Error(ErrorStage::kCompile, code, "linalg AD rule", std::move(message));
}

class Helpers {
 public:
  Helpers(Emitter& e, double eps) : e_(e), eps_(eps) {}
  Emitter& e() { return e_; }

  Result<ValueType> type(Value v) { return e_.type(v); }
  Result<int64_t> rank(Value v) {
    TENFERRO_TRY(ValueType t, e_.type(v));
    return t.rank();
  }
  Result<Value> mm(Value a, Value b) {
    return einsum::emit_einsum(e_.builder(), "...ij,...jk->...ik", std::vector<Value>{a, b});
  }
  Result<Value> t(Value a) {
    TENFERRO_TRY(int64_t r, rank(a));
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < r - 2; ++i) perm.push_back(i);
    perm.push_back(r - 1);
    perm.push_back(r - 2);
    return e_.op(OpCode::kTranspose, {a}, Attrs{.dims = perm});
  }
  Result<Value> h(Value a) {
    TENFERRO_TRY(Value x, t(a));
    return e_.conj(x);
  }
  Result<Value> diag(Value a) {
    TENFERRO_TRY(int64_t r, rank(a));
    return e_.op(OpCode::kExtractDiag, {a}, Attrs{.axis = r - 2});
  }
  Result<Value> embed(Value v) {
    TENFERRO_TRY(int64_t r, rank(v));
    return e_.op(OpCode::kEmbedDiag, {v}, Attrs{.axis = r - 1});
  }
  // v [.., k] broadcast to [.., k, k] along the rows (result_ij = v_j) or the columns (v_i).
  Result<Value> along_rows(Value v) { return spread(v, true); }
  Result<Value> along_cols(Value v) { return spread(v, false); }
  // m [.., r, k] with column j scaled by v_j (v [.., k]).
  Result<Value> scale_columns(Value m, Value v) {
    TENFERRO_TRY(ValueType mt, type(m));
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < mt.rank() - 2; ++i) dims.push_back(i);
    dims.push_back(mt.rank() - 1);
    TENFERRO_TRY(Value vb, e_.broadcast(v, mt.shape, dims));
    return e_.mul(m, vb);
  }
  // The real part, kept in a complex dtype when `a` is complex... or the real dtype.
  Result<Value> re(Value a) {
    TENFERRO_TRY(ValueType ty, type(a));
    if (!is_complex(ty.dtype)) return a;
    return e_.op(OpCode::kReal, {a});
  }
  Result<Value> im(Value a) { return e_.op(OpCode::kImag, {a}); }
  Result<Value> to(Value a, DType d) { return e_.convert(a, d); }
  // x / (x² + ε) (ε = 0: 1 / x, 0 where x = 0)
  Result<Value> broadened_inverse(Value x) {
    if (eps_ > 0) {
      TENFERRO_TRY(Value x2, e_.mul(x, x));
      TENFERRO_TRY(Value ep, e_.splat_like(x, eps_));
      TENFERRO_TRY(Value d, e_.add(x2, ep));
      return e_.div(x, d);
    }
    TENFERRO_TRY(Value z, e_.splat_like(x, 0.0));
    TENFERRO_TRY(Value one, e_.splat_like(x, 1.0));
    TENFERRO_TRY(Value is0, e_.op(OpCode::kCompare, {x, z}, Attrs{.direction = program::CompareDirection::kEq}));
    TENFERRO_TRY(Value safe, e_.op(OpCode::kSelect, {is0, one, x}));
    TENFERRO_TRY(Value inv, e_.div(one, safe));
    return e_.op(OpCode::kSelect, {is0, z, inv});
  }
  // F_ij = broadened 1 / (d_j − d_i) for d [.., k], in dtype `dt`.
  Result<Value> gap_inverse(Value d, DType dt) {
    TENFERRO_TRY(Value dj, along_rows(d));
    TENFERRO_TRY(Value di, along_cols(d));
    TENFERRO_TRY(Value gap, e_.sub(dj, di));
    TENFERRO_TRY(Value f, broadened_inverse(gap));
    return to(f, dt);
  }
  // F_ij = broadened 1 / (d_j − d_i) for complex d [.., k]: conj(g) / (|g|² + ε), g the gap
  // (ε = 0: 1 / g, 0 where g = 0).
  Result<Value> complex_gap_inverse(Value d) {
    TENFERRO_TRY(ValueType ty, type(d));
    TENFERRO_TRY(Value dj, along_rows(d));
    TENFERRO_TRY(Value di, along_cols(d));
    TENFERRO_TRY(Value gap, e_.sub(dj, di));
    TENFERRO_TRY(Value gc, e_.conj(gap));
    TENFERRO_TRY(Value g2c, e_.mul(gap, gc));
    TENFERRO_TRY(Value g2, re(g2c));  // |g|², real
    TENFERRO_TRY(Value one, e_.splat_like(g2, 1.0));
    Value denom = g2;
    Value is0;
    if (eps_ > 0) {
      TENFERRO_TRY(Value ep, e_.splat_like(g2, eps_));
      TENFERRO_TRY(denom, e_.add(g2, ep));
    } else {
      TENFERRO_TRY(Value z, e_.splat_like(g2, 0.0));
      TENFERRO_TRY(is0, e_.op(OpCode::kCompare, {g2, z}, Attrs{.direction = program::CompareDirection::kEq}));
      TENFERRO_TRY(denom, e_.op(OpCode::kSelect, {is0, one, g2}));
    }
    TENFERRO_TRY(Value dc, to(denom, ty.dtype));
    TENFERRO_TRY(Value f, e_.div(gc, dc));  // 0 where g = 0 (conj(g) = 0 there)
    return f;
  }
  // tril / triu
  Result<Value> tril(Value a, int64_t k) { return e_.op(OpCode::kTril, {a}, Attrs{.k = k}); }
  Result<Value> triu(Value a, int64_t k) { return e_.op(OpCode::kTriu, {a}, Attrs{.k = k}); }
  // The Hermitian matrix an op reading the `uplo` triangle of A sees, for a tangent dA.
  Result<Value> hermitian_from(Value da, linalg::Uplo uplo) {
    const bool lower = uplo == linalg::Uplo::kLower;
    TENFERRO_TRY(Value strict, lower ? tril(da, -1) : triu(da, 1));
    TENFERRO_TRY(Value mirror, h(strict));
    TENFERRO_TRY(Value off, e_.add(strict, mirror));
    TENFERRO_TRY(Value d, diag(da));
    TENFERRO_TRY(ValueType dt, type(da));
    TENFERRO_TRY(Value dr, re(d));
    TENFERRO_TRY(Value drc, to(dr, dt.dtype));
    TENFERRO_TRY(Value dm, embed(drc));
    return e_.add(off, dm);
  }
  Result<std::vector<Value>> linalg(const Payload& p, std::vector<Value> ins) {
    return emit_linalg(e_.builder(), p, ins);
  }
  Result<Value> inv(Value a) {
    TENFERRO_TRY(std::vector<Value> o, linalg(Payload{.kind = Kind::kInv}, {a}));
    return o[0];
  }
  // sum over the last two axes of conj(a) ∘ b, real part: re⟨a, b⟩ per matrix.
  Result<Value> re_inner(Value a, Value b) {
    TENFERRO_TRY(Value ca, e_.conj(a));
    TENFERRO_TRY(Value p, e_.mul(ca, b));
    TENFERRO_TRY(int64_t r, rank(p));
    TENFERRO_TRY(Value s, e_.sum(p, {r - 2, r - 1}));
    return re(s);
  }
  // tr(a b) per matrix (complex or real).
  Result<Value> trace_of_product(Value a, Value b) {
    TENFERRO_TRY(Value at, t(a));
    TENFERRO_TRY(Value p, e_.mul(at, b));
    TENFERRO_TRY(int64_t r, rank(p));
    return e_.sum(p, {r - 2, r - 1});
  }

 private:
  Result<Value> spread(Value v, bool rows) {
    TENFERRO_TRY(ValueType ty, type(v));
    std::vector<Extent> shape = ty.shape;
    shape.push_back(ty.shape.back());
    std::vector<int64_t> dims;
    const int64_t nb = ty.rank() - 1;
    for (int64_t i = 0; i < nb; ++i) dims.push_back(i);
    dims.push_back(rows ? nb + 1 : nb);
    return e_.broadcast(v, std::move(shape), std::move(dims));
  }
  Emitter& e_;
  double eps_;
};

struct Svd {
  Value u, s, vh;
};

// U, S, Vh of a thin SVD of `a` (the op's own outputs when it has them).
Result<Svd> thin_svd(Helpers& x, const Payload& p, Value a, std::span<const Value> outputs) {
  if (p.kind == Kind::kSvd && p.svd_mode == linalg::SvdMode::kThin && outputs.size() == 3) {
    return Svd{outputs[0], outputs[1], outputs[2]};
  }
  Payload q;
  q.kind = Kind::kSvd;
  q.svd_mode = linalg::SvdMode::kThin;
  TENFERRO_TRY(std::vector<Value> o, x.linalg(q, {a}));
  return Svd{o[0], o[1], o[2]};
}

// θ_j = Im(dM_pj / M_pj) at the largest-magnitude entries p of column j of m (ties
// averaged): the phase change a tangent dM gives each column's largest entry (complex m
// [.., r, k]; θ real [.., k]). Used to keep those entries real (Note [Linalg rules]).
Result<Value> largest_entry_phase(Helpers& x, Value m, Value dm) {
  Emitter& e = x.e();
  TENFERRO_TRY(ValueType mt, x.type(m));
  const int64_t r = mt.rank();
  const DType rdt = real_dtype(mt.dtype);
  TENFERRO_TRY(Value mag, e.op(OpCode::kAbs, {m}));
  TENFERRO_TRY(Value mx, e.op(OpCode::kReduce, {mag}, Attrs{.dims = {r - 2}, .reduce = program::ReduceKind::kMax}));
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < r; ++i) {
    if (i != r - 2) keep.push_back(i);
  }
  ValueType rt = mt;
  rt.dtype = rdt;
  TENFERRO_TRY(Value mxb, e.broadcast(mx, rt.shape, keep));
  TENFERRO_TRY(Value hit, e.op(OpCode::kCompare, {mag, mxb}, Attrs{.direction = program::CompareDirection::kEq}));
  TENFERRO_TRY(Value mask, x.to(hit, rdt));
  TENFERRO_TRY(Value cnt, e.sum(mask, {r - 2}));  // >= 1
  TENFERRO_TRY(Value ones, e.splat_like(m, 1.0));
  TENFERRO_TRY(Value safe, e.op(OpCode::kSelect, {hit, m, ones}));  // maximal entries are nonzero
  TENFERRO_TRY(Value ratio, e.div(dm, safe));
  TENFERRO_TRY(Value ir, x.im(ratio));
  TENFERRO_TRY(Value zero, e.zeros(rt));
  TENFERRO_TRY(Value masked, e.op(OpCode::kSelect, {hit, ir, zero}));
  TENFERRO_TRY(Value tsum, e.sum(masked, {r - 2}));
  return e.div(tsum, cnt);
}

Result<std::vector<MaybeValue>> svd_jvp(Helpers& x, const Payload& p, Value a, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  if (p.svd_mode == linalg::SvdMode::kFull) {
    return rule_error(ErrorCode::kUnsupported, "the derivative of a full SVD is not implemented (use the thin SVD)");
  }
  TENFERRO_TRY(ValueType at, x.type(a));
  const DType dt = at.dtype;
  const bool cplx = is_complex(dt);
  TENFERRO_TRY(Svd d, thin_svd(x, p, a, outputs));
  TENFERRO_TRY(Value v, x.h(d.vh));
  TENFERRO_TRY(Value uh, x.h(d.u));
  TENFERRO_TRY(Value dav, x.mm(da, v));
  TENFERRO_TRY(Value pm, x.mm(uh, dav));  // P = Uᴴ dA V
  TENFERRO_TRY(Value pdiag, x.diag(pm));
  TENFERRO_TRY(Value ds, x.re(pdiag));
  if (p.svd_mode == linalg::SvdMode::kValuesOnly) return std::vector<MaybeValue>{ds};
  TENFERRO_TRY(Value s2, e.mul(d.s, d.s));
  TENFERRO_TRY(Value f, x.gap_inverse(s2, dt));
  TENFERRO_TRY(Value sc, x.to(d.s, dt));
  TENFERRO_TRY(Value s_rows, x.along_rows(sc));  // [.., i, j] = s_j
  TENFERRO_TRY(Value s_cols, x.along_cols(sc));  // [.., i, j] = s_i
  TENFERRO_TRY(Value sinv, x.broadened_inverse(d.s));
  TENFERRO_TRY(Value sinvc, x.to(sinv, dt));
  TENFERRO_TRY(Value ph, x.h(pm));
  // dU = U (F ∘ (P S + S Pᴴ)) + (dA V − U P) S⁻¹
  TENFERRO_TRY(Value ps, e.mul(pm, s_rows));
  TENFERRO_TRY(Value sph, e.mul(s_cols, ph));
  TENFERRO_TRY(Value ju, e.add(ps, sph));
  TENFERRO_TRY(Value fju, e.mul(f, ju));
  TENFERRO_TRY(Value du1, x.mm(d.u, fju));
  TENFERRO_TRY(Value up, x.mm(d.u, pm));
  TENFERRO_TRY(Value rest_u, e.sub(dav, up));
  TENFERRO_TRY(Value du2, x.scale_columns(rest_u, sinvc));
  TENFERRO_TRY(Value du, e.add(du1, du2));
  // dV = V (F ∘ (S P + Pᴴ S)) + (dAᴴ U − V Pᴴ) S⁻¹
  TENFERRO_TRY(Value sp, e.mul(s_cols, pm));
  TENFERRO_TRY(Value phs, e.mul(ph, s_rows));
  TENFERRO_TRY(Value jv, e.add(sp, phs));
  TENFERRO_TRY(Value fjv, e.mul(f, jv));
  TENFERRO_TRY(Value dv1, x.mm(v, fjv));
  TENFERRO_TRY(Value dah, x.h(da));
  TENFERRO_TRY(Value dahu, x.mm(dah, d.u));
  TENFERRO_TRY(Value vph, x.mm(v, ph));
  TENFERRO_TRY(Value rest_v, e.sub(dahu, vph));
  TENFERRO_TRY(Value dv2, x.scale_columns(rest_v, sinvc));
  TENFERRO_TRY(Value dv, e.add(dv1, dv2));
  if (cplx) {
    // U's columns carry the phase change i Im(P_ii) / s_i.
    TENFERRO_TRY(Value ipd, x.im(pdiag));
    TENFERRO_TRY(Value g, e.mul(ipd, sinv));
    TENFERRO_TRY(Value gc, x.to(g, dt));
    TENFERRO_TRY(Value i1, e.splat_like(gc, 0.0, 1.0));
    TENFERRO_TRY(Value ig, e.mul(gc, i1));
    TENFERRO_TRY(Value ug, x.scale_columns(d.u, ig));
    TENFERRO_TRY(du, e.add(du, ug));
    if (p.gauge_fix) {
      // Keep each U column's largest-magnitude entry real: remove the phase change
      // θ_i = Im(dU_pi / U_pi) (p the largest entry, ties averaged) from U's column and
      // give it to Vh's row.
      TENFERRO_TRY(Value theta, largest_entry_phase(x, d.u, du));
      TENFERRO_TRY(Value thc, x.to(theta, dt));
      TENFERRO_TRY(Value ith, e.mul(thc, i1));
      TENFERRO_TRY(Value ucorr, x.scale_columns(d.u, ith));
      TENFERRO_TRY(du, e.sub(du, ucorr));
      // Vh's row i gains +i θ_i: dV (= dVhᴴ) gains −i θ_i on column i.
      TENFERRO_TRY(Value vcorr, x.scale_columns(v, ith));
      TENFERRO_TRY(dv, e.sub(dv, vcorr));
    }
  }
  TENFERRO_TRY(Value dvh, x.h(dv));
  return std::vector<MaybeValue>{du, ds, dvh};
}

Result<std::vector<MaybeValue>> eigh_jvp(Helpers& x, const Payload& p, Value a, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  TENFERRO_TRY(ValueType at, x.type(a));
  const DType dt = at.dtype;
  Value w, v;
  if (p.vectors) {
    w = outputs[0];
    v = outputs[1];
  } else {
    Payload q = p;
    q.vectors = true;
    TENFERRO_TRY(std::vector<Value> o, x.linalg(q, {a}));
    w = o[0];
    v = o[1];
  }
  TENFERRO_TRY(Value dah, x.hermitian_from(da, p.uplo));
  TENFERRO_TRY(Value vh, x.h(v));
  TENFERRO_TRY(Value dav, x.mm(dah, v));
  TENFERRO_TRY(Value pm, x.mm(vh, dav));
  TENFERRO_TRY(Value pd, x.diag(pm));
  TENFERRO_TRY(Value dw, x.re(pd));
  if (!p.vectors) return std::vector<MaybeValue>{dw};
  TENFERRO_TRY(Value f, x.gap_inverse(w, dt));
  TENFERRO_TRY(Value fp, e.mul(f, pm));
  TENFERRO_TRY(Value dv, x.mm(v, fp));
  return std::vector<MaybeValue>{dw, dv};
}

// eig with vectors (Note [Linalg rules]): P = V⁻¹ dA V, dλ = diag P, dV₀ = V (F ∘ P) with
// F_ij = 1 / (λ_j − λ_i), F_ii = 0; then each column gains c_j v_j so that it keeps the
// op's gauge: unit 2-norm (Re c_j = −Re v_jᴴ dv₀_j) and its largest-magnitude entry real
// (Im c_j = −Im(dv₀_pj / v_pj), p that entry, ties averaged).
Result<std::vector<MaybeValue>> eig_jvp(Helpers& x, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  const Value w = outputs[0], v = outputs[1];
  TENFERRO_TRY(ValueType vt, x.type(v));
  const DType dt = vt.dtype;  // complex
  TENFERRO_TRY(Value dac, x.to(da, dt));
  TENFERRO_TRY(Value vinv, x.inv(v));
  TENFERRO_TRY(Value dav, x.mm(dac, v));
  TENFERRO_TRY(Value pm, x.mm(vinv, dav));  // P = V⁻¹ dA V
  TENFERRO_TRY(Value dw, x.diag(pm));
  TENFERRO_TRY(Value f, x.complex_gap_inverse(w));
  TENFERRO_TRY(Value fp, e.mul(f, pm));
  TENFERRO_TRY(Value dv0, x.mm(v, fp));
  TENFERRO_TRY(int64_t r, x.rank(v));
  // Re v_jᴴ dv₀_j
  TENFERRO_TRY(Value cv, e.conj(v));
  TENFERRO_TRY(Value cvd, e.mul(cv, dv0));
  TENFERRO_TRY(Value inner, e.sum(cvd, {r - 2}));
  TENFERRO_TRY(Value norm_part, x.re(inner));
  // Im(dv₀_pj / v_pj) at the largest-magnitude entries p of column j (averaged over ties).
  TENFERRO_TRY(Value theta, largest_entry_phase(x, v, dv0));
  // dV = dV₀ − V diag(Re v_jᴴ dv₀_j + i θ_j)
  TENFERRO_TRY(Value npc, x.to(norm_part, dt));
  TENFERRO_TRY(Value thc, x.to(theta, dt));
  TENFERRO_TRY(Value i1, e.splat_like(thc, 0.0, 1.0));
  TENFERRO_TRY(Value ith, e.mul(thc, i1));
  TENFERRO_TRY(Value c, e.add(npc, ith));
  TENFERRO_TRY(Value corr, x.scale_columns(v, c));
  TENFERRO_TRY(Value dv, e.sub(dv0, corr));
  return std::vector<MaybeValue>{dw, dv};
}

// Columns [lo, hi) of a [.., r, c] value (exact extents).
Result<Value> columns(Helpers& x, Value a, int64_t lo, int64_t hi) {
  TENFERRO_TRY(ValueType t, x.type(a));
  program::Attrs at;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    const bool last = i + 1 == t.shape.size();
    at.start.push_back(last ? lo : 0);
    at.limit.push_back(last ? hi : t.shape[i].exact_value());
    at.stride.push_back(1);
  }
  return x.e().op(OpCode::kSlice, {a}, std::move(at));
}

// [[a, b], [c, d]] from four [.., n, n] values (c may be absent: zeros).
Result<Value> block2(Helpers& x, Value a, Value b, std::optional<Value> c, Value d) {
  Emitter& e = x.e();
  TENFERRO_TRY(ValueType t, x.type(a));
  const int64_t r = t.rank();
  if (!c) {
    TENFERRO_TRY(c, e.zeros(t));
  }
  TENFERRO_TRY(Value top, e.op(OpCode::kConcatenate, {a, b}, program::Attrs{.axis = r - 1}));
  TENFERRO_TRY(Value bottom, e.op(OpCode::kConcatenate, {*c, d}, program::Attrs{.axis = r - 1}));
  return e.op(OpCode::kConcatenate, {top, bottom}, program::Attrs{.axis = r - 2});
}

// The JVP of expm_frechet: L(A, E) is linear in E (dE -> L(A, dE)); in A it is
// [L(M, D)]₁₂ with M = [[A, E], [0, A]] and D = diag(dA, dA) (differentiating the block
// identity L(A, E) = [expm(M)]₁₂ once more), linear in dA through D. Needs exact batch
// extents (the top-right block is a slice).
Result<std::vector<MaybeValue>> frechet_jvp(Helpers& x, std::span<const Value> in, std::span<const MaybeValue> tan) {
  Emitter& e = x.e();
  Payload f;
  f.kind = Kind::kExpmFrechet;
  MaybeValue out;
  if (tan[1]) {
    TENFERRO_TRY(std::vector<Value> o, x.linalg(f, {in[0], *tan[1]}));
    out = o[0];
  }
  if (tan[0]) {
    TENFERRO_TRY(ValueType t, x.type(in[0]));
    for (const Extent& ex : t.shape) {
      if (!ex.is_exact()) {
        return rule_error(ErrorCode::kUnsupported, "expm_frechet's derivative in A needs exact extents");
      }
    }
    const int64_t r = t.rank(), n = t.shape.back().exact_value();
    TENFERRO_TRY(Value m, block2(x, in[0], in[1], std::nullopt, in[0]));
    TENFERRO_TRY(Value zero, e.zeros(t));
    TENFERRO_TRY(Value d, block2(x, *tan[0], zero, zero, *tan[0]));
    TENFERRO_TRY(std::vector<Value> o, x.linalg(f, {m, d}));
    program::Attrs at;
    for (int64_t i = 0; i < r; ++i) {
      const bool row = i == r - 2, col = i == r - 1;
      at.start.push_back(col ? n : 0);
      at.limit.push_back(row ? n : col ? 2 * n : t.shape[static_cast<size_t>(i)].exact_value());
      at.stride.push_back(1);
    }
    TENFERRO_TRY(Value top_right, e.op(OpCode::kSlice, {o[0]}, std::move(at)));
    TENFERRO_TRY(out, e.add(out, MaybeValue(top_right)));
  }
  return std::vector<MaybeValue>{out};
}

// The reduced QR derivative of a matrix with rows >= columns (A = Q R, R square).
Result<std::pair<Value, Value>> qr_tall_jvp(Helpers& x, Value q, Value r, Value da, DType dtype) {
  Emitter& e = x.e();
  TENFERRO_TRY(Value rinv, x.inv(r));
  TENFERRO_TRY(Value qh, x.h(q));
  TENFERRO_TRY(Value dar, x.mm(da, rinv));
  TENFERRO_TRY(Value xm, x.mm(qh, dar));
  TENFERRO_TRY(Value low, x.tril(xm, -1));
  TENFERRO_TRY(Value lowh, x.h(low));
  TENFERRO_TRY(Value om, e.sub(low, lowh));
  if (is_complex(dtype)) {
    TENFERRO_TRY(Value xd, x.diag(xm));
    TENFERRO_TRY(Value ixd, x.im(xd));
    TENFERRO_TRY(Value ixc, x.to(ixd, dtype));
    TENFERRO_TRY(Value i1, e.splat_like(ixc, 0.0, 1.0));
    TENFERRO_TRY(Value iim, e.mul(ixc, i1));
    TENFERRO_TRY(Value dg, x.embed(iim));
    TENFERRO_TRY(om, e.add(om, dg));
  }
  TENFERRO_TRY(Value xmo, e.sub(xm, om));
  TENFERRO_TRY(Value dr, x.mm(xmo, r));
  TENFERRO_TRY(Value qom, x.mm(q, om));
  TENFERRO_TRY(Value qx, x.mm(q, xm));
  TENFERRO_TRY(Value rest, e.sub(dar, qx));
  TENFERRO_TRY(Value dq, e.add(qom, rest));
  return std::pair<Value, Value>{dq, dr};
}

Result<std::vector<MaybeValue>> qr_jvp(Helpers& x, const Payload& p, Value a, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  TENFERRO_TRY(ValueType at, x.type(a));
  const int64_t m = at.shape[at.shape.size() - 2].exact_value(), n = at.shape.back().exact_value();
  if (m > n && p.qr_mode == linalg::QrMode::kComplete) {
    return rule_error(ErrorCode::kUnsupported,
                      "the complete QR of a matrix with more rows than columns has no derivative: the columns of Q "
                      "beyond the column count are not unique (use the reduced QR)");
  }
  Value q, r;
  if (p.qr_mode != linalg::QrMode::kR) {  // reduced, or complete with rows <= columns (the same factors)
    q = outputs[0];
    r = outputs[1];
  } else {
    Payload full = p;
    full.qr_mode = linalg::QrMode::kReduced;
    TENFERRO_TRY(std::vector<Value> o, x.linalg(full, {a}));
    q = o[0];
    r = o[1];
  }
  if (m >= n) {
    TENFERRO_TRY(auto d, qr_tall_jvp(x, q, r, da, at.dtype));
    if (p.qr_mode == linalg::QrMode::kR) return std::vector<MaybeValue>{d.second};
    return std::vector<MaybeValue>{d.first, d.second};
  }
  // Wide: A = [X | Y] with X square: Q, R1 = qr(X) and R2 = Qᴴ Y, so dQ and dR1 follow
  // from the square rule on X, and dR2 = Qᴴ (dY − dQ R2).
  TENFERRO_TRY(Value dx, columns(x, da, 0, m));
  TENFERRO_TRY(Value dy, columns(x, da, m, n));
  TENFERRO_TRY(Value r1, columns(x, r, 0, m));
  TENFERRO_TRY(Value r2, columns(x, r, m, n));
  TENFERRO_TRY(auto d, qr_tall_jvp(x, q, r1, dx, at.dtype));
  TENFERRO_TRY(Value dqr2, x.mm(d.first, r2));
  TENFERRO_TRY(Value diff, e.sub(dy, dqr2));
  TENFERRO_TRY(Value qh, x.h(q));
  TENFERRO_TRY(Value dr2, x.mm(qh, diff));
  program::Attrs cat;
  cat.axis = static_cast<int64_t>(at.shape.size()) - 1;
  TENFERRO_TRY(Value dr, e.op(OpCode::kConcatenate, {d.second, dr2}, std::move(cat)));
  if (p.qr_mode == linalg::QrMode::kR) return std::vector<MaybeValue>{dr};
  return std::vector<MaybeValue>{d.first, dr};
}

Result<std::vector<MaybeValue>> cholesky_jvp(Helpers& x, const Payload& p, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  const bool lower = p.uplo == linalg::Uplo::kLower;
  TENFERRO_TRY(Value dah, x.hermitian_from(da, p.uplo));
  Value l = outputs[0];
  if (!lower) {
    TENFERRO_TRY(l, x.h(outputs[0]));  // A = Uᴴ U = L Lᴴ with L = Uᴴ
  }
  TENFERRO_TRY(Value linv, x.inv(l));
  TENFERRO_TRY(Value linvh, x.h(linv));
  TENFERRO_TRY(Value t1, x.mm(dah, linvh));
  TENFERRO_TRY(Value xm, x.mm(linv, t1));
  TENFERRO_TRY(Value strict, x.tril(xm, -1));
  TENFERRO_TRY(Value d, x.diag(xm));
  TENFERRO_TRY(Value half, e.splat_like(d, 0.5));
  TENFERRO_TRY(Value hd, e.mul(d, half));
  TENFERRO_TRY(Value hdm, x.embed(hd));
  TENFERRO_TRY(Value phi, e.add(strict, hdm));
  TENFERRO_TRY(Value dl, x.mm(l, phi));
  if (lower) return std::vector<MaybeValue>{dl};
  TENFERRO_TRY(Value du, x.h(dl));
  return std::vector<MaybeValue>{du};
}

Result<std::vector<MaybeValue>> lu_jvp(Helpers& x, Value a, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  TENFERRO_TRY(ValueType at, x.type(a));
  if (at.shape[at.shape.size() - 2] != at.shape.back()) {
    return rule_error(ErrorCode::kUnsupported, "the LU derivative is implemented for square matrices");
  }
  const Value pm = outputs[0], l = outputs[1], u = outputs[2];
  TENFERRO_TRY(Value linv, x.inv(l));
  TENFERRO_TRY(Value uinv, x.inv(u));
  TENFERRO_TRY(Value pt, x.h(pm));
  TENFERRO_TRY(Value t1, x.mm(pt, da));
  TENFERRO_TRY(Value t2, x.mm(linv, t1));
  TENFERRO_TRY(Value xm, x.mm(t2, uinv));
  TENFERRO_TRY(Value low, x.tril(xm, -1));
  TENFERRO_TRY(Value up, x.triu(xm, 0));
  TENFERRO_TRY(Value dl, x.mm(l, low));
  TENFERRO_TRY(Value du, x.mm(up, u));
  (void)e;
  return std::vector<MaybeValue>{MaybeValue{}, dl, du};
}

// op(M) for a triangular solve's transpose option.
Result<Value> apply_op(Helpers& x, Value m, linalg::Transpose t) {
  switch (t) {
    case linalg::Transpose::kNone: return m;
    case linalg::Transpose::kTranspose: return x.t(m);
    case linalg::Transpose::kConjTranspose: return x.h(m);
  }
  return m;
}

Result<std::vector<MaybeValue>> solve_jvp(Helpers& x, const Payload& p, std::span<const Value> in,
                                          std::span<const Value> outputs, std::span<const MaybeValue> tan) {
  Emitter& e = x.e();
  const Value xs = outputs[0];
  // rhs = dB − op(dA) X (left) or dB − X op(dA) (right)
  MaybeValue rhs = tan[1];
  if (tan[0]) {
    Value da = *tan[0];
    bool left = true;
    if (p.kind == Kind::kTriangularSolve) {
      const auto& o = p.triangular;
      left = o.left;
      const bool lower = o.uplo == linalg::Uplo::kLower;
      const int64_t k = o.unit_diagonal ? 1 : 0;
      TENFERRO_TRY(da, lower ? x.tril(da, -k) : x.triu(da, k));
      TENFERRO_TRY(da, apply_op(x, da, o.transpose));
    }
    TENFERRO_TRY(Value prod, left ? x.mm(da, xs) : x.mm(xs, da));
    TENFERRO_TRY(Value n, e.neg(prod));
    TENFERRO_TRY(rhs, e.add(rhs, MaybeValue(n)));
  }
  TENFERRO_TRY(std::vector<Value> o, x.linalg(p, {in[0], *rhs}));
  return std::vector<MaybeValue>{o[0]};
}

Result<std::vector<MaybeValue>> norm_jvp(Helpers& x, const Payload& p, Value a, std::span<const Value> outputs, Value da) {
  Emitter& e = x.e();
  TENFERRO_TRY(ValueType at, x.type(a));
  const int64_t r = at.rank();
  switch (p.norm) {
    case linalg::MatrixNorm::kFrobenius: {
      TENFERRO_TRY(Value ip, x.re_inner(a, da));
      TENFERRO_TRY(Value inv, x.broadened_inverse(outputs[0]));
      TENFERRO_TRY(Value d, e.mul(ip, inv));
      return std::vector<MaybeValue>{d};
    }
    case linalg::MatrixNorm::kNuclear:
    case linalg::MatrixNorm::kSpectral:
    case linalg::MatrixNorm::kMinSingular: {
      TENFERRO_TRY(Svd d, thin_svd(x, Payload{}, a, {}));
      Value g;
      if (p.norm == linalg::MatrixNorm::kNuclear) {
        TENFERRO_TRY(g, x.mm(d.u, d.vh));
      } else {
        // u_j vh_j: column j of U times row j of Vh, j the first (largest) or the last
        // (smallest) singular value.
        TENFERRO_TRY(ValueType ut, x.type(d.u));
        TENFERRO_TRY(ValueType vt, x.type(d.vh));
        const int64_t k = ut.shape[static_cast<size_t>(r - 1)].exact_value();
        const int64_t j = p.norm == linalg::MatrixNorm::kSpectral ? 0 : k - 1;
        Attrs su, sv;
        for (int64_t i = 0; i < r; ++i) {
          su.start.push_back(i == r - 1 ? j : 0);
          sv.start.push_back(i == r - 2 ? j : 0);
          su.limit.push_back(i == r - 1 ? j + 1 : ut.shape[static_cast<size_t>(i)].exact_value());
          sv.limit.push_back(i == r - 2 ? j + 1 : vt.shape[static_cast<size_t>(i)].exact_value());
          su.stride.push_back(1);
          sv.stride.push_back(1);
        }
        TENFERRO_TRY(Value u1, e.op(OpCode::kSlice, {d.u}, std::move(su)));
        TENFERRO_TRY(Value v1, e.op(OpCode::kSlice, {d.vh}, std::move(sv)));
        TENFERRO_TRY(g, x.mm(u1, v1));
      }
      TENFERRO_TRY(Value ip, x.re_inner(g, da));
      return std::vector<MaybeValue>{ip};
    }
    case linalg::MatrixNorm::kOne:
    case linalg::MatrixNorm::kInf:
    case linalg::MatrixNorm::kMinColumnSum:
    case linalg::MatrixNorm::kMinRowSum: {
      // The maximal (minimal) column (one) or row (inf) sums of |A|, ties averaged.
      const bool one = p.norm == linalg::MatrixNorm::kOne || p.norm == linalg::MatrixNorm::kMinColumnSum;
      const bool least = p.norm == linalg::MatrixNorm::kMinColumnSum || p.norm == linalg::MatrixNorm::kMinRowSum;
      const int64_t summed = one ? r - 2 : r - 1, line = one ? r - 1 : r - 2;
      TENFERRO_TRY(Value mag, e.op(OpCode::kAbs, {a}));
      TENFERRO_TRY(Value sums, e.sum(mag, {summed}));
      TENFERRO_TRY(Value mx, e.op(OpCode::kReduce, {sums},
                                  Attrs{.dims = {r - 2},
                                        .reduce = least ? program::ReduceKind::kMin : program::ReduceKind::kMax}));
      TENFERRO_TRY(ValueType st, x.type(sums));
      std::vector<int64_t> keep;
      for (int64_t i = 0; i < r - 2; ++i) keep.push_back(i);
      TENFERRO_TRY(Value mxb, e.broadcast(mx, st.shape, keep));
      TENFERRO_TRY(Value hit, e.op(OpCode::kCompare, {sums, mxb}, Attrs{.direction = program::CompareDirection::kEq}));
      TENFERRO_TRY(Value w, x.to(hit, st.dtype));
      TENFERRO_TRY(Value cnt, e.sum(w, {r - 2}));
      TENFERRO_TRY(Value cntb, e.broadcast(cnt, st.shape, keep));
      TENFERRO_TRY(Value wn, e.div(w, cntb));
      std::vector<int64_t> dims;
      for (int64_t i = 0; i < r; ++i) {
        if (i != summed) dims.push_back(i);
      }
      (void)line;
      ValueType full = at;
      full.dtype = st.dtype;
      TENFERRO_TRY(Value wb, e.broadcast(wn, full.shape, dims));
      TENFERRO_TRY(Value sg, e.op(OpCode::kSign, {a}));
      TENFERRO_TRY(Value wc, x.to(wb, at.dtype));
      TENFERRO_TRY(Value g, e.mul(sg, wc));
      TENFERRO_TRY(Value ip, x.re_inner(g, da));
      return std::vector<MaybeValue>{ip};
    }
  }
  return rule_error(ErrorCode::kInternal, "unknown norm");
}

class LinalgRule final : public ad::ExtensionRule {
 public:
  explicit LinalgRule(LinalgAdOptions o) : o_(o) {}
  std::string_view family_id() const override { return kLinalgFamily; }

  Result<std::vector<MaybeValue>> linearize(Emitter& e, const program::ExtensionOp& op, std::span<const Value> in,
                                            std::span<const Value> outputs,
                                            std::span<const MaybeValue> tan) const override {
    const auto* lop = dynamic_cast<const LinalgOp*>(&op);
    if (!lop) return rule_error(ErrorCode::kInternal, "linalg rule given another family's op");
    const Payload& p = lop->payload();
    Helpers x(e, o_.broadening);
    if (p.kind == Kind::kSolve || p.kind == Kind::kTriangularSolve) return solve_jvp(x, p, in, outputs, tan);
    if (p.kind == Kind::kExpmFrechet) return frechet_jvp(x, in, tan);
    if (!tan[0]) return std::vector<MaybeValue>(outputs.size());
    const Value a = in[0], da = *tan[0];
    switch (p.kind) {
      case Kind::kSvd: return svd_jvp(x, p, a, outputs, da);
      case Kind::kEigh: return eigh_jvp(x, p, a, outputs, da);
      case Kind::kQr: return qr_jvp(x, p, a, outputs, da);
      case Kind::kCholesky: return cholesky_jvp(x, p, outputs, da);
      case Kind::kLu: return lu_jvp(x, a, outputs, da);
      case Kind::kInv: {
        TENFERRO_TRY(Value t1, x.mm(da, outputs[0]));
        TENFERRO_TRY(Value t2, x.mm(outputs[0], t1));
        TENFERRO_TRY(Value n, e.neg(t2));
        return std::vector<MaybeValue>{n};
      }
      case Kind::kDet: {
        TENFERRO_TRY(Value ai, x.inv(a));
        TENFERRO_TRY(Value tr, x.trace_of_product(ai, da));
        TENFERRO_TRY(Value d, e.mul(outputs[0], tr));
        return std::vector<MaybeValue>{d};
      }
      case Kind::kSlogdet: {
        TENFERRO_TRY(Value ai, x.inv(a));
        TENFERRO_TRY(Value tr, x.trace_of_product(ai, da));
        TENFERRO_TRY(Value dl, x.re(tr));
        MaybeValue dsign;
        TENFERRO_TRY(ValueType at, x.type(a));
        if (is_complex(at.dtype)) {
          TENFERRO_TRY(Value it, x.im(tr));
          TENFERRO_TRY(Value itc, x.to(it, at.dtype));
          TENFERRO_TRY(Value i1, e.splat_like(itc, 0.0, 1.0));
          TENFERRO_TRY(Value iit, e.mul(itc, i1));
          TENFERRO_TRY(dsign, [&]() -> Result<MaybeValue> {
            TENFERRO_TRY(Value s, e.mul(outputs[0], iit));
            return MaybeValue(s);
          }());
        }
        return std::vector<MaybeValue>{dsign, dl};
      }
      case Kind::kMatrixNorm: return norm_jvp(x, p, a, outputs, da);
      case Kind::kEig: {
        if (p.vectors) return eig_jvp(x, outputs, da);
        Payload q = p;
        q.vectors = true;
        TENFERRO_TRY(std::vector<Value> o, x.linalg(q, {a}));
        TENFERRO_TRY(ValueType vt, x.type(o[1]));
        TENFERRO_TRY(Value dac, x.to(da, vt.dtype));
        TENFERRO_TRY(Value vinv, x.inv(o[1]));
        TENFERRO_TRY(Value t1, x.mm(dac, o[1]));
        TENFERRO_TRY(Value t2, x.mm(vinv, t1));
        TENFERRO_TRY(Value dl, x.diag(t2));
        return std::vector<MaybeValue>{dl};
      }
      case Kind::kPinv: {
        // dX = −X dA X + X Xᴴ dAᴴ (I − A X) + (I − X A) dAᴴ Xᴴ X (constant rank).
        const Value xo = outputs[0];
        TENFERRO_TRY(Value xh, x.h(xo));
        TENFERRO_TRY(Value dah, x.h(da));
        TENFERRO_TRY(Value dax, x.mm(da, xo));
        TENFERRO_TRY(Value t1, x.mm(xo, dax));
        TENFERRO_TRY(Value xxh, x.mm(xo, xh));
        TENFERRO_TRY(Value xxhdah, x.mm(xxh, dah));
        TENFERRO_TRY(Value ax, x.mm(a, xo));
        TENFERRO_TRY(Value t2b, x.mm(xxhdah, ax));
        TENFERRO_TRY(Value t2, e.sub(xxhdah, t2b));
        TENFERRO_TRY(Value xhx, x.mm(xh, xo));
        TENFERRO_TRY(Value dahxhx, x.mm(dah, xhx));
        TENFERRO_TRY(Value xa, x.mm(xo, a));
        TENFERRO_TRY(Value t3b, x.mm(xa, dahxhx));
        TENFERRO_TRY(Value t3, e.sub(dahxhx, t3b));
        TENFERRO_TRY(Value s23, e.add(t2, t3));
        TENFERRO_TRY(Value d, e.sub(s23, t1));
        return std::vector<MaybeValue>{d};
      }
      case Kind::kExpm: {
        // dX = L(A, dA), the Fréchet derivative (Higham's block identity).
        Payload q;
        q.kind = Kind::kExpmFrechet;
        TENFERRO_TRY(std::vector<Value> o, x.linalg(q, {a, da}));
        return std::vector<MaybeValue>{o[0]};
      }
      case Kind::kSolve:
      case Kind::kTriangularSolve:
      case Kind::kExpmFrechet: break;
    }
    return rule_error(ErrorCode::kInternal, "unknown linalg op");
  }

  Result<std::vector<MaybeValue>> transpose(Emitter& e, const program::ExtensionOp& op, std::span<const MaybeValue> in,
                                            std::span<const ValueType>, std::span<const MaybeValue> cts) const override {
    const auto* lop = dynamic_cast<const LinalgOp*>(&op);
    if (!lop) return rule_error(ErrorCode::kInternal, "linalg rule given another family's op");
    Payload p = lop->payload();
    if (p.kind == Kind::kExpmFrechet && in[0] && !in[1]) {
      // L(A, ·)* = L(Aᴴ, ·) under the real inner product.
      std::vector<MaybeValue> out(2);
      if (!cts[0]) return out;
      Helpers x(e, o_.broadening);
      TENFERRO_TRY(Value ah, x.h(*in[0]));
      TENFERRO_TRY(std::vector<Value> o, x.linalg(p, {ah, *cts[0]}));
      out[1] = o[0];
      return out;
    }
    const bool solve = p.kind == Kind::kSolve || p.kind == Kind::kTriangularSolve;
    if (!solve || !in[0] || in[1]) {
      return rule_error(ErrorCode::kInvalidArgument,
                        "linalg " + std::string(kind_name(p.kind)) +
                            " is linear only in the right-hand side of a solve (with a constant matrix)");
    }
    std::vector<MaybeValue> out(2);
    if (!cts[0]) return out;
    Helpers x(e, o_.broadening);
    // ct_B = op(A)⁻ᴴ ct (left) or ct op(A)⁻ᴴ (right): the same solve with op(A)ᴴ.
    Value a = *in[0];
    if (p.kind == Kind::kSolve) {
      TENFERRO_TRY(a, x.h(a));
    } else {
      // op(A)ᴴ = op'(conj A) with op' toggling between none and transpose.
      TENFERRO_TRY(a, e.conj(a));
      auto& t = p.triangular.transpose;
      t = t == linalg::Transpose::kNone ? linalg::Transpose::kTranspose : linalg::Transpose::kNone;
      if (lop->payload().triangular.transpose == linalg::Transpose::kConjTranspose) {
        TENFERRO_TRY(a, e.conj(a));  // (Aᴴ)ᴴ = A: undo the conj, no transpose
        t = linalg::Transpose::kNone;
      }
    }
    TENFERRO_TRY(std::vector<Value> o, x.linalg(p, {a, *cts[0]}));
    out[1] = o[0];
    return out;
  }

 private:
  LinalgAdOptions o_;
};

}  // namespace

std::shared_ptr<const ad::ExtensionRule> linalg_rule(LinalgAdOptions options) {
  return std::make_shared<LinalgRule>(options);
}

}  // namespace tenferro::linalg_ir
