#include "trg.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "tenferro/compiler/compiler.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/linalg_ir/linalg_op.h"

namespace tenferro::examples {

using compiler::TraceContext;
using program::Attrs;
using program::Extent;
using program::OpCode;
using program::Value;

namespace {

std::vector<Extent> ex(std::initializer_list<int64_t> s) {
  std::vector<Extent> out;
  for (int64_t e : s) out.push_back(Extent::exact(e));
  return out;
}

struct Builder {
  TraceContext tc;
  Result<Value> op(OpCode c, std::initializer_list<Value> in, Attrs a = {}) { return tc.op(c, in, std::move(a)); }
  Result<Value> scalar(double v) {
    TENFERRO_TRY(Tensor t, Tensor::from_col_major<double>({}, std::vector<double>{v}));
    return tc.constant(t);
  }
  Result<Value> einsum(const char* s, std::vector<Value> in) {
    TENFERRO_TRY(std::vector<Value> o, tc.extension(einsum::EinsumOp::make(s).value(), in));
    return o[0];
  }
  Result<Value> reshape(Value v, std::vector<Extent> shape) { return tc.op(OpCode::kReshape, {v}, Attrs{.shape = shape}); }
  Result<Value> slice(Value v, std::vector<int64_t> limit) {
    Attrs a;
    a.start.assign(limit.size(), 0);
    a.limit = limit;
    a.stride.assign(limit.size(), 1);
    return tc.op(OpCode::kSlice, {v}, std::move(a));
  }
  // sqrt(sum x²): the Frobenius norm of a real tensor.
  Result<Value> norm(Value t) {
    TENFERRO_TRY(Value s, einsum("abcd,abcd->", {t, t}));
    return tc.op(OpCode::kSqrt, {s});
  }
  // (U √S, √S Vh) of the rank-`keep` truncated SVD of m [rows, cols].
  Result<std::pair<Value, Value>> split(Value m, int64_t rows, int64_t cols, int64_t keep) {
    linalg_ir::Payload p;
    p.kind = linalg_ir::Kind::kSvd;
    TENFERRO_TRY(std::vector<Value> usv, tc.extension(linalg_ir::LinalgOp::make(p), std::vector<Value>{m}));
    TENFERRO_TRY(Value u, slice(usv[0], {rows, keep}));
    TENFERRO_TRY(Value s, slice(usv[1], {keep}));
    TENFERRO_TRY(Value vh, slice(usv[2], {keep, cols}));
    // s = (s / g) g with g = √(s + δ): Note [TRG program].
    TENFERRO_TRY(Value delta, scalar(1e-10));
    TENFERRO_TRY(Value delta_v, tc.op(OpCode::kBroadcastInDim, {delta}, Attrs{.shape = {Extent::exact(keep)}}));
    TENFERRO_TRY(Value shifted, tc.op(OpCode::kAdd, {s, delta_v}));
    TENFERRO_TRY(Value g, tc.op(OpCode::kSqrt, {shifted}));
    TENFERRO_TRY(Value sg, tc.op(OpCode::kDiv, {s, g}));
    TENFERRO_TRY(Value left, einsum("ia,a->ia", {u, sg}));
    TENFERRO_TRY(Value right, einsum("a,aj->aj", {g, vh}));
    return std::pair<Value, Value>{left, right};
  }
};

}  // namespace

// Note [TRG program]: T[l, u, r, d] (legs left, up, right, down) starts as
// Σ_s W_as W_bs W_cs W_ds with W = [[√cosh β, √cosh β], [√sinh β, −√sinh β]] (the bond
// weight e^{β s s'} = Σ_a W_as W_as'). One step splits T twice by truncated SVDs,
// T[(l,u),(r,d)] = S1[l,u,a] S3[a,r,d] and T[(u,r),(d,l)] = S2[u,r,a] S4[a,d,l], and
// contracts the four pieces around a plaquette into the tensor of the 45°-rotated
// lattice with half as many sites: T'[a,b,c,d] = S3[a,x,y] S4[b,z,x] S1[w,z,c] S2[y,w,d]
// (legs towards the plaquette's top-left, top-right, bottom-right and bottom-left
// corners: the new left, up, right and down). Every tensor is divided by its norm n_k;
// ln Z / N = ln n_0 + Σ_k ln(n_k) / 2^k + ln(tr T_K) / 2^K on a periodic lattice of 2^K
// sites. Reshapes are column-major: T[(l,u),(r,d)] has row l + χ u.
//
// The split gives each side s / g and g with g = √(s + δ), δ = 1e-10 (the tensors are
// normalized, so s <= 1), not √s and √s: the product is s exactly, the two sides stay
// balanced (≈ √s) for every singular value that matters, and both are smooth at s = 0.
// Early steps keep all χ² values of rank-deficient matrices, whose zero singular values
// would give √s infinite derivatives (of every order) whose products with zero
// cotangents are NaN; with the shifted split the first and second derivatives stay
// finite and exact up to rounding of terms of size 1/δ.
Result<program::CompiledGraph> trg_program(const TrgOptions& o) {
  if (o.chi < 2 || o.chi > kMaxTrgChi || o.steps < 1 || o.steps > kMaxTrgSteps) {
    return usage_error(ErrorCode::kInvalidArgument, "trg_program",
                       "needs chi in [2, " + std::to_string(kMaxTrgChi) + "] and steps in [1, " +
                           std::to_string(kMaxTrgSteps) + "], got chi " + std::to_string(o.chi) + " and steps " +
                           std::to_string(o.steps));
  }
  Builder b;
  TENFERRO_TRY(Value beta, b.tc.input(program::ValueType{DType::kF64, {}}, "beta"));
  TENFERRO_TRY(Value e, b.op(OpCode::kExp, {beta}));
  TENFERRO_TRY(Value nb, b.op(OpCode::kNeg, {beta}));
  TENFERRO_TRY(Value em, b.op(OpCode::kExp, {nb}));
  TENFERRO_TRY(Value half, b.scalar(0.5));
  TENFERRO_TRY(Value sum, b.op(OpCode::kAdd, {e, em}));
  TENFERRO_TRY(Value diff, b.op(OpCode::kSub, {e, em}));
  TENFERRO_TRY(Value ch, b.op(OpCode::kMul, {sum, half}));
  TENFERRO_TRY(Value sh, b.op(OpCode::kMul, {diff, half}));
  TENFERRO_TRY(Value rc, b.op(OpCode::kSqrt, {ch}));
  TENFERRO_TRY(Value rs, b.op(OpCode::kSqrt, {sh}));
  // W = rc * [[1, 1], [0, 0]] + rs * [[0, 0], [1, -1]] (column-major literals).
  TENFERRO_TRY(Tensor m1, Tensor::from_col_major<double>({2, 2}, std::vector<double>{1, 0, 1, 0}));
  TENFERRO_TRY(Tensor m2, Tensor::from_col_major<double>({2, 2}, std::vector<double>{0, 1, 0, -1}));
  TENFERRO_TRY(Value c1, b.tc.constant(m1));
  TENFERRO_TRY(Value c2, b.tc.constant(m2));
  TENFERRO_TRY(Value w1, b.einsum(",ij->ij", {rc, c1}));
  TENFERRO_TRY(Value w2, b.einsum(",ij->ij", {rs, c2}));
  TENFERRO_TRY(Value w, b.op(OpCode::kAdd, {w1, w2}));
  TENFERRO_TRY(Value t, b.einsum("as,bs,cs,ds->abcd", {w, w, w, w}));
  TENFERRO_TRY(Value one, b.scalar(1.0));
  TENFERRO_TRY(Value n0, b.norm(t));
  TENFERRO_TRY(Value inv0, b.op(OpCode::kDiv, {one, n0}));
  TENFERRO_TRY(t, b.einsum("abcd,->abcd", {t, inv0}));
  TENFERRO_TRY(Value log_z, b.op(OpCode::kLog, {n0}));
  int64_t chi = 2;
  double weight = 1.0;
  for (int k = 1; k <= o.steps; ++k) {
    const int64_t sq = chi * chi, keep = std::min(o.chi, sq);
    TENFERRO_TRY(Value m1v, b.reshape(t, ex({sq, sq})));
    TENFERRO_TRY(auto p1, b.split(m1v, sq, sq, keep));
    TENFERRO_TRY(Value s1, b.reshape(p1.first, ex({chi, chi, keep})));    // [l, u, a]
    TENFERRO_TRY(Value s3, b.reshape(p1.second, ex({keep, chi, chi})));   // [a, r, d]
    TENFERRO_TRY(Value t2, b.op(OpCode::kTranspose, {t}, Attrs{.dims = {1, 2, 3, 0}}));  // [u, r, d, l]
    TENFERRO_TRY(Value m2v, b.reshape(t2, ex({sq, sq})));
    TENFERRO_TRY(auto p2, b.split(m2v, sq, sq, keep));
    TENFERRO_TRY(Value s2, b.reshape(p2.first, ex({chi, chi, keep})));    // [u, r, a]
    TENFERRO_TRY(Value s4, b.reshape(p2.second, ex({keep, chi, chi})));   // [a, d, l]
    TENFERRO_TRY(Value tk, b.einsum("axy,bzx,wzc,ywd->abcd", {s3, s4, s1, s2}));
    TENFERRO_TRY(Value nk, b.norm(tk));
    TENFERRO_TRY(Value inv, b.op(OpCode::kDiv, {one, nk}));
    TENFERRO_TRY(t, b.einsum("abcd,->abcd", {tk, inv}));
    weight *= 0.5;
    TENFERRO_TRY(Value ln, b.op(OpCode::kLog, {nk}));
    TENFERRO_TRY(Value wv, b.scalar(weight));
    TENFERRO_TRY(Value term, b.op(OpCode::kMul, {ln, wv}));
    TENFERRO_TRY(log_z, b.op(OpCode::kAdd, {log_z, term}));
    chi = keep;
  }
  TENFERRO_TRY(Value tr, b.einsum("abab->", {t}));
  TENFERRO_TRY(Value lt, b.op(OpCode::kLog, {tr}));
  TENFERRO_TRY(Value wv, b.scalar(weight));
  TENFERRO_TRY(Value term, b.op(OpCode::kMul, {lt, wv}));
  TENFERRO_TRY(log_z, b.op(OpCode::kAdd, {log_z, term}));
  TENFERRO_TRY(compiler::TracedGraph traced, b.tc.finish({log_z}));
  compiler::GraphCompiler gc;
  return gc.compile(traced);
}

Result<std::unique_ptr<TrgSolver>> TrgSolver::create(const TrgOptions& o) {
  std::unique_ptr<TrgSolver> s(new TrgSolver());
  cpu::CpuEngineConfig cfg;
  if (o.threads > 0) {
    TENFERRO_TRY(cpu::CpuTopology topo, cpu::CpuTopology::discover());
    cpu::CpuDomainConfig d;
    const auto n = std::min<size_t>(static_cast<size_t>(o.threads), topo.allowed_cpus.size());
    d.cpus.assign(topo.allowed_cpus.begin(), topo.allowed_cpus.begin() + static_cast<std::ptrdiff_t>(n));
    d.threads = o.threads;
    cfg.domains = {d};
  }
  TENFERRO_TRY(std::shared_ptr<cpu::CpuEngine> engine, cpu::CpuEngine::create(cfg));
  TENFERRO_TRY(s->rt_, runtime::Runtime::create());
  TENFERRO_TRY(runtime::EngineId id, cpu_runtime::register_cpu_engine(*s->rt_, engine));
  TENFERRO_TRY_VOID(s->rt_->register_extension(id, linalg_ir::cpu_linalg_module()));
  ad::AdContext ad = ad::AdContext::with_standard_rules();
  TENFERRO_TRY_VOID(ad.install(linalg_ir::linalg_rule({.broadening = o.broadening})));
  TENFERRO_TRY(s->f_, trg_program(o));
  TENFERRO_TRY(s->grad_, ad.grad(s->f_));
  TENFERRO_TRY(s->hvp_, ad.hvp(s->f_));
  return s;
}

Result<std::vector<Tensor>> TrgSolver::run(const program::CompiledGraph& g, double beta) {
  TENFERRO_TRY(Tensor b, Tensor::from_col_major<double>({}, std::vector<double>{beta}));
  std::vector<Tensor> args{std::move(b)};
  if (g.program == hvp_.program) {
    TENFERRO_TRY(Tensor v, Tensor::from_col_major<double>({}, std::vector<double>{1.0}));
    args.push_back(std::move(v));
  }
  return rt_->run(g, args);
}

namespace {
Result<double> scalar_of(const Tensor& t) { return t.get<double>({}); }
}  // namespace

Result<double> TrgSolver::log_z(double beta) {
  TENFERRO_TRY(std::vector<Tensor> out, run(f_, beta));
  return scalar_of(out[0]);
}

Result<std::pair<double, double>> TrgSolver::log_z_and_derivative(double beta) {
  TENFERRO_TRY(std::vector<Tensor> out, run(grad_, beta));
  TENFERRO_TRY(double f, scalar_of(out[0]));
  TENFERRO_TRY(double g, scalar_of(out[1]));
  return std::pair<double, double>{f, g};
}

Result<TrgResult> TrgSolver::solve(double beta) {
  if (!(beta > 0) || !std::isfinite(beta)) {
    return usage_error(ErrorCode::kInvalidArgument, "trg", "beta must be finite and > 0, got " + std::to_string(beta));
  }
  TENFERRO_TRY(std::vector<Tensor> out, run(hvp_, beta));  // ln Z/N, d/dβ, d²/dβ² (direction 1)
  TrgResult r;
  r.beta = beta;
  TENFERRO_TRY(r.log_z, scalar_of(out[0]));
  TENFERRO_TRY(double d1, scalar_of(out[1]));
  TENFERRO_TRY(double d2, scalar_of(out[2]));
  r.free_energy = -r.log_z / beta;
  r.energy = -d1;
  r.specific_heat = beta * beta * d2;
  r.exact_free_energy = -onsager_log_z(beta) / beta;
  r.exact_energy = onsager_energy(beta);
  r.exact_specific_heat = onsager_specific_heat(beta);
  return r;
}

// ln Z / N = ln(2 cosh 2β) + (1/2π) ∫_0^π ln[(1 + sqrt(1 − κ² sin² θ)) / 2] dθ,
// κ = 2 sinh 2β / cosh² 2β (Onsager), by composite Simpson quadrature.
double onsager_log_z(double beta) {
  const double c = std::cosh(2 * beta), k = 2 * std::sinh(2 * beta) / (c * c);
  constexpr int n = 20000;
  const double h = std::numbers::pi / n;
  double s = 0;
  for (int i = 0; i <= n; ++i) {
    const double th = i * h, st = std::sin(th);
    const double f = std::log((1 + std::sqrt(std::max(0.0, 1 - k * k * st * st))) / 2);
    s += (i == 0 || i == n ? 1 : i % 2 ? 4 : 2) * f;
  }
  return std::log(2 * c) + s * h / 3 / (2 * std::numbers::pi);
}

double onsager_energy(double beta) {
  const double h = 1e-5;
  return -(onsager_log_z(beta + h) - onsager_log_z(beta - h)) / (2 * h);
}

double onsager_specific_heat(double beta) {
  const double h = 1e-4;
  return beta * beta * (onsager_log_z(beta + h) - 2 * onsager_log_z(beta) + onsager_log_z(beta - h)) / (h * h);
}

}  // namespace tenferro::examples
