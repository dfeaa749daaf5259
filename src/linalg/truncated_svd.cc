// Truncated SVD: exact (thin SVD, then truncation) or randomized (range finder with
// power iterations).
//
// Note [Truncated SVD]: keeping r triplets of an m x n matrix, the exact method pays for
// the whole SVD (O(m n min(m, n))). The randomized method (Halko, Martinsson and Tropp,
// "Finding structure with randomness", SIAM Review 2011, algorithms 4.4 and 5.1) samples
// the range with l = r + oversampling Gaussian vectors, Y = (A A^H)^q A Omega, with every
// product re-orthonormalized by QR (subspace iteration), takes Q = orth(Y), and computes
// the small SVD of B = Q^H A (l x n): A ~ (Q U_B) S V^H, O(m n l (2q + 2)) work. Its
// error bound (their theorem 10.6 with q power iterations): E||A - Q Q^H A|| <=
// [(1 + sqrt(r / (p - 1))) sigma_{r+1}^{2q+1} + e sqrt(l) / p * (sum_{j>r} sigma_j^2)^{(2q+1)/2}]^{1/(2q+1)}
// with p the oversampling: with the defaults (p = 10, q = 2) the captured singular
// values are accurate to a few units of sigma_{r+1} relative error, and tests check the
// reconstruction against the exact discarded weight. The discarded weight is computed
// as ||A||_F^2 - sum(kept S^2), which for the randomized method is exactly the squared
// Frobenius norm of A - U U^H A (U orthonormal), i.e. the true error of the projection.
// kAuto uses the randomized method when max_rank is given, min(m, n) >= 100 and
// l <= min(m, n) / 4 (where its O(m n l) cost is clearly below the full SVD), else exact.
// The Gaussian test matrix is drawn from a fixed generator seeded by `seed` and the
// batch item, so results are deterministic.

#include <random>

#include "common.h"

namespace tenferro::linalg {

using detail::Batch;
using detail::Carver;
using detail::gather;
using detail::item_mat;
using detail::item_vec;
using detail::Lapack;
using detail::lint;
using detail::Mat;
using detail::Real;
using detail::Scratch;

namespace {

// The rank to keep from descending singular values s[0..k) given the total weight.
template <class R>
int64_t choose_rank(const R* s, int64_t k, int64_t max_rank, double rel_cutoff, R total) {
  const int64_t kmax = std::min(k, max_rank);
  if (rel_cutoff <= 0) return kmax;
  R kept = 0;
  const R allowed = static_cast<R>(rel_cutoff) * total;
  for (int64_t r = 0; r < kmax; ++r) {
    // Keep r values when the weight beyond them is within the allowed tail.
    if (r >= 1 && total - kept <= allowed) return r;
    kept += s[r] * s[r];
  }
  return kmax;
}

template <class T>
Real<T> frob2(Mat<T> a, int64_t m, int64_t n) {
  Real<T> acc = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) acc += detail::abs2(a(i, j));
  return acc;
}

// Orthonormalizes the columns of y (rows x l, ld rows) in place (geqrf + ungqr).
template <class T>
void orthonormalize(T* y, int64_t rows, int64_t l, T* tau, T* work, lint lwork) {
  Lapack<T>::geqrf(static_cast<lint>(rows), static_cast<lint>(l), y, static_cast<lint>(rows), tau, work, lwork);
  Lapack<T>::ungqr(static_cast<lint>(rows), static_cast<lint>(l), static_cast<lint>(l), y, static_cast<lint>(rows), tau,
                   work, lwork);
}

template <class T>
Result<TruncatedSvdResult> randomized_t(const CpuExecutionContext& ctx, const Tensor& a, const TruncatedSvdOptions& o,
                                        const PoolPtr& pool) {
  using R = Real<T>;
  const int64_t m = a.dim(a.rank() - 2), n = a.dim(a.rank() - 1), k = std::min(m, n);
  const Batch batch(detail::batch_dims(a));
  const int64_t l = std::min(k, std::min(k, *o.max_rank) + std::max<int64_t>(0, o.oversampling));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kSvd, a.dtype(), m, n, batch.count, false, o.linalg));
  const CBLAS_TRANSPOSE ct = detail::kIsComplex<T> ? CblasConjTrans : CblasTrans;
  // Workspace: QR of m x l and n x l, SVD of l x n.
  const lint lm = static_cast<lint>(m), ln = static_cast<lint>(n), ll = static_cast<lint>(l);
  const detail::QueryKey key{detail::Query::kTruncatedSvd, a.dtype(), {m, n, l, 0, 0}};
  const lint lwork = detail::cached_query(o.linalg.workspace, key, [&] {
    T wq{}, d{};
    R rd{};
    lint id = 0, lw = 1;
    for (lint rows : {lm, ln}) {
      Lapack<T>::geqrf(rows, ll, &d, rows, &d, &wq, -1);
      lw = std::max(lw, detail::query_size(wq));
      Lapack<T>::ungqr(rows, ll, ll, &d, rows, &d, &wq, -1);
      lw = std::max(lw, detail::query_size(wq));
    }
    Lapack<T>::gesdd('S', ll, ln, &d, ll, &rd, &d, ll, &d, ll, &wq, -1, &rd, &id);
    return detail::QueryValue{std::max(lw, detail::query_size(wq)), 0, 0};
  })[0];
  const int64_t rwork_n = detail::kIsComplex<T> ? l * std::max(5 * l + 7, 2 * std::max(l, n) + 2 * l + 1) : 1;
  auto carve = [&](std::byte* base, T** ac, T** om, T** y, T** bm, T** ub, T** vh, T** tau, T** work, R** s, R** rwork,
                   lint** iwork) {
    Carver c(base);
    *ac = c.take<T>(m * n);
    *om = c.take<T>(n * l);
    *y = c.take<T>(m * l);
    *bm = c.take<T>(l * n);
    *ub = c.take<T>(l * l);
    *vh = c.take<T>(l * n);
    *tau = c.take<T>(l);
    *work = c.take<T>(lwork);
    *s = c.take<R>(l);
    *rwork = c.take<R>(rwork_n);
    *iwork = c.take<lint>(8 * l);
    return c.used();
  };
  T *p1, *p2, *p3, *p4, *p5, *p6, *p7, *p8;
  R *p9, *p10;
  lint* p11;
  const int64_t per_lane = carve(nullptr, &p1, &p2, &p3, &p4, &p5, &p6, &p7, &p8, &p9, &p10, &p11);
  TENFERRO_TRY(Scratch scratch, Scratch::make(std::max<int64_t>(1, route.lanes) * per_lane, pool, o.linalg.workspace));
  // Per item: the l candidate triplets are kept in result buffers of width l, then cut.
  TENFERRO_TRY(Tensor u_all, detail::alloc_items(a.dtype(), batch.shape, m, l, pool));
  TENFERRO_TRY(Tensor s_all, detail::alloc_items(detail::real_dtype(a.dtype()), batch.shape, l, -1, pool));
  TENFERRO_TRY(Tensor vh_all, detail::alloc_items(a.dtype(), batch.shape, l, n, pool));
  detail::Failures failures;
  detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int lane) {
    T *ac, *om, *y, *bm, *ub, *vh, *tau, *work;
    R *s, *rwork;
    lint* iwork;
    carve(scratch.data() + lane * per_lane, &ac, &om, &y, &bm, &ub, &vh, &tau, &work, &s, &rwork, &iwork);
    for (int64_t it = bgn; it < end; ++it) {
      const Mat<T> src = item_mat<T>(a, batch, it);
      gather(ac, m, src, m, n);
      std::mt19937_64 gen(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(it));
      std::normal_distribution<R> normal(0, 1);
      for (int64_t i = 0; i < n * l; ++i) {
        if constexpr (detail::kIsComplex<T>) {
          const R re = normal(gen);
          om[i] = T(re, normal(gen));
        } else {
          om[i] = normal(gen);
        }
      }
      // Y = A Omega, orthonormalized; then q rounds of Z = A^H Q, Y = A orth(Z).
      Lapack<T>::gemm(CblasNoTrans, CblasNoTrans, lm, ll, ln, ac, lm, om, ln, y, lm);
      orthonormalize(y, m, l, tau, work, lwork);
      for (int64_t q = 0; q < o.power_iterations; ++q) {
        Lapack<T>::gemm(ct, CblasNoTrans, ln, ll, lm, ac, lm, y, lm, om, ln);
        orthonormalize(om, n, l, tau, work, lwork);
        Lapack<T>::gemm(CblasNoTrans, CblasNoTrans, lm, ll, ln, ac, lm, om, ln, y, lm);
        orthonormalize(y, m, l, tau, work, lwork);
      }
      // B = Q^H A (l x n); B = U_B S Vh; U = Q U_B.
      Lapack<T>::gemm(ct, CblasNoTrans, ll, ln, lm, y, lm, ac, lm, bm, ll);
      const lint info = Lapack<T>::gesdd('S', ll, ln, bm, ll, s, ub, ll, vh, ll, work, lwork, rwork, iwork);
      if (info != 0) {
        failures.record(it, info);
        continue;
      }
      const Mat<T> uo = item_mat<T>(u_all, batch, it);
      Lapack<T>::gemm(CblasNoTrans, CblasNoTrans, lm, ll, ll, y, lm, ub, ll, uo.p, static_cast<lint>(uo.cs));
      detail::scatter(item_mat<T>(vh_all, batch, it), vh, l, l, n);
      const Mat<R> so = item_vec<R>(s_all, batch, it);
      for (int64_t i = 0; i < l; ++i) so(i, 0) = s[i];
    }
  });
  if (failures.any()) {
    return detail::item_error(ErrorCode::kNoConvergence, "truncated_svd", batch, failures.item(),
                              "the SVD of the projected matrix did not converge");
  }
  TruncatedSvdResult res;
  res.method_used = TruncatedSvdMethod::kRandomized;
  res.u = std::move(u_all);
  res.s = std::move(s_all);
  res.vh = std::move(vh_all);
  return res;
}

// Cuts full-width factors (u [.., m, w], s [.., w], vh [.., w, n]) to each item's rank.
template <class T>
Result<void> cut(TruncatedSvdResult& res, const Tensor& total, bool exact, const TruncatedSvdOptions& o, int64_t m,
                 int64_t n, const Batch& batch, const PoolPtr& pool) {
  using R = Real<T>;
  const int64_t w = res.s.dim(res.s.rank() - 1);
  const int64_t max_rank = o.max_rank.value_or(w);
  TENFERRO_TRY(res.rank, Tensor::uninitialized(DType::kI64, batch.shape, pool));
  TENFERRO_TRY(res.discarded_weight, Tensor::uninitialized(detail::real_dtype(detail::dtype_of<T>()), batch.shape, pool));
  auto* ranks = static_cast<int64_t*>(res.rank.storage()->data());
  auto* disc = static_cast<R*>(res.discarded_weight.storage()->data());
  const auto* tot = static_cast<const R*>(total.storage()->data());
  int64_t r_all = 0;
  SmallVector<R, 64> sv(static_cast<size_t>(w), R(0));
  for (int64_t it = 0; it < batch.count; ++it) {
    const Mat<R> s = item_vec<R>(res.s, batch, it);
    for (int64_t i = 0; i < w; ++i) sv[static_cast<size_t>(i)] = s(i, 0);
    const int64_t r = choose_rank<R>(sv.data(), w, max_rank, o.rel_cutoff, tot[it]);
    ranks[it] = r;
    r_all = std::max(r_all, r);
    R kept = 0, tail = 0;
    for (int64_t i = 0; i < r; ++i) kept += sv[static_cast<size_t>(i)] * sv[static_cast<size_t>(i)];
    for (int64_t i = r; i < w; ++i) tail += sv[static_cast<size_t>(i)] * sv[static_cast<size_t>(i)];
    disc[it] = exact ? tail : std::max(R(0), tot[it] - kept);
  }
  TENFERRO_TRY(Tensor u, detail::alloc_items(res.u.dtype(), batch.shape, m, r_all, pool));
  TENFERRO_TRY(Tensor s, detail::alloc_items(res.s.dtype(), batch.shape, r_all, -1, pool));
  TENFERRO_TRY(Tensor vh, detail::alloc_items(res.vh.dtype(), batch.shape, r_all, n, pool));
  for (int64_t it = 0; it < batch.count; ++it) {
    const int64_t r = ranks[it];
    const Mat<T> ui = item_mat<T>(res.u, batch, it), uo = item_mat<T>(u, batch, it);
    const Mat<T> vi = item_mat<T>(res.vh, batch, it), vo = item_mat<T>(vh, batch, it);
    const Mat<R> si = item_vec<R>(res.s, batch, it), so = item_vec<R>(s, batch, it);
    for (int64_t j = 0; j < r_all; ++j) {
      const bool keep = j < r;
      so(j, 0) = keep ? si(j, 0) : R(0);
      for (int64_t i = 0; i < m; ++i) uo(i, j) = keep ? ui(i, j) : T(0);
      for (int64_t c = 0; c < n; ++c) vo(j, c) = keep ? vi(j, c) : T(0);
    }
  }
  res.u = std::move(u);
  res.s = std::move(s);
  res.vh = std::move(vh);
  return ok();
}

}  // namespace

Result<TruncatedSvdResult> truncated_svd(const CpuExecutionContext& ctx, const Tensor& a,
                                         const TruncatedSvdOptions& options, const PoolPtr& pool) {
  const char* op = "truncated_svd";
  TENFERRO_TRY_VOID(detail::check_matrix(a, op, false));
  if (options.max_rank && *options.max_rank < 0) {
    return usage_error(ErrorCode::kInvalidArgument, op, "max_rank must be >= 0, got " + std::to_string(*options.max_rank));
  }
  if (!(options.rel_cutoff >= 0 && options.rel_cutoff <= 1)) {
    return usage_error(ErrorCode::kInvalidArgument, op,
                       "rel_cutoff must be in [0, 1], got " + std::to_string(options.rel_cutoff));
  }
  if (options.oversampling < 0 || options.power_iterations < 0) {
    return usage_error(ErrorCode::kInvalidArgument, op, "oversampling and power_iterations must be >= 0");
  }
  const int64_t m = a.dim(a.rank() - 2), n = a.dim(a.rank() - 1), k = std::min(m, n);
  TruncatedSvdMethod method = options.method;
  if (method == TruncatedSvdMethod::kRandomized && !options.max_rank) {
    return usage_error(ErrorCode::kInvalidArgument, op, "the randomized method needs max_rank");
  }
  if (method == TruncatedSvdMethod::kAuto) {
    const bool randomized = options.max_rank && k >= 100 && (*options.max_rank + options.oversampling) * 4 <= k;
    method = randomized ? TruncatedSvdMethod::kRandomized : TruncatedSvdMethod::kExact;
  }
  const Batch batch(detail::batch_dims(a));
  // The singular values of 2^e A are 2^e times A's (Note [Safe-range scaling]): entries
  // near the overflow threshold made the random projection overflow.
  // The same read checks finiteness (Note [Non-finite input]).
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool, op));
  const Tensor& x = range.input(a);
  TENFERRO_TRY(TruncatedSvdResult out, detail::dispatch(a.dtype(), op, [&](auto t) -> Result<TruncatedSvdResult> {
                 using T = decltype(t);
                 using R = Real<T>;
                 TruncatedSvdResult res;
                 Tensor total;
                 if (method == TruncatedSvdMethod::kRandomized && k > 0) {
                   TENFERRO_TRY(res, randomized_t<T>(ctx, x, options, pool));
                 } else {
                   SvdOptions so;
                   so.linalg = options.linalg;
                   TENFERRO_TRY(SvdResult sv, svd(ctx, x, so, pool));
                   res.u = std::move(sv.u);
                   res.s = std::move(sv.s);
                   res.vh = std::move(sv.vh);
                   res.method_used = TruncatedSvdMethod::kExact;
                 }
                 TENFERRO_TRY(total, Tensor::uninitialized(detail::real_dtype(a.dtype()), batch.shape, pool));
                 auto* tot = static_cast<R*>(total.storage()->data());
                 for (int64_t it = 0; it < batch.count; ++it) tot[it] = frob2(item_mat<T>(x, batch, it), m, n);
                 TENFERRO_TRY_VOID(
                     cut<T>(res, total, res.method_used == TruncatedSvdMethod::kExact, options, m, n, batch, pool));
                 if (options.gauge_fix) {
                   const int64_t r = res.s.dim(res.s.rank() - 1);
                   for (int64_t it = 0; it < batch.count; ++it) {
                     detail::gauge_fix_item(item_mat<T>(res.u, batch, it), m, r, item_mat<T>(res.vh, batch, it), r, n,
                                            r);
                   }
                 }
                 return res;
               }));
  detail::unscale_items(out.s, range, 1, 1);
  return out;
}

}  // namespace tenferro::linalg
