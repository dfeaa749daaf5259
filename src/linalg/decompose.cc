// Decompositions: svd, qr (plain and column-pivoted), eigh, eig, cholesky, lu.
//
// Every operation follows the same sequence (spec 001 D11): validate -> decide the
// route -> query LAPACK's workspace once -> allocate the results and one scratch block
// per lane -> run the items -> on a numerical failure return the typed error of the
// first failing item (the results are dropped, never published).

#include <atomic>

#include "common.h"
#include "small.h"
#include "lanes.h"

namespace tenferro::linalg {

using detail::Batch;
using detail::Carver;
using detail::Failures;
using detail::gather;
using detail::item_mat;
using detail::item_vec;
using detail::Lapack;
using detail::lint;
using detail::Mat;
using detail::Real;
using detail::scatter;
using detail::Scratch;

namespace {

constexpr char uplo_char(Uplo u) { return u == Uplo::kLower ? 'L' : 'U'; }

template <class T>
void set_identity(Mat<T> x, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) x(i, j) = i == j ? T(1) : T(0);
}

template <class T>
Result<SvdResult> svd_t(const CpuExecutionContext& ctx, const Tensor& a, const SvdOptions& o, const PoolPtr& pool) {
  const char* op = "svd";
  const int64_t r = a.rank(), m = a.dim(r - 2), n = a.dim(r - 1), k = std::min(m, n);
  const Batch batch(detail::batch_dims(a));
  const bool values = o.mode == SvdMode::kValuesOnly, full = o.mode == SvdMode::kFull;
  const bool small_ok = detail::small_svd_supported<T>() && m == n && o.driver != SvdDriver::kGesdd &&
                        o.driver != SvdDriver::kGesvd;
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kSvd, a.dtype(), m, n, batch.count, small_ok, o.linalg,
                                              !values && o.driver == SvdDriver::kAuto));
  if (o.driver == SvdDriver::kJacobi && route.kernel != Kernel::kSmall) {
    return usage_error(ErrorCode::kUnsupported, op,
                       "the Jacobi driver takes square items of extent <= small_max_dim, got " + format_dims(a.shape()));
  }
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  SvdResult res;
  TENFERRO_TRY(res.s, detail::alloc_items(detail::real_dtype(a.dtype()), batch.shape, k, -1, pool));
  if (!values) {
    TENFERRO_TRY(res.u, detail::alloc_items(a.dtype(), batch.shape, m, ucols, pool));
    TENFERRO_TRY(res.vh, detail::alloc_items(a.dtype(), batch.shape, vrows, n, pool));
  }
  res.route = route;
  if (batch.count == 0) return res;
  if (k == 0) {
    for (int64_t it = 0; it < batch.count && !values; ++it) {
      set_identity(item_mat<T>(res.u, batch, it), m, ucols);
      set_identity(item_mat<T>(res.vh, batch, it), vrows, n);
    }
    return res;
  }
  Failures failures;
  std::atomic<int64_t> fallbacks{0};
  if (route.kernel == Kernel::kSmall) {
    if constexpr (!detail::kIsComplex<T>) {
      detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int) {
        detail::svd_items_lanes<T>(cpu::kernel_isa(ctx.caps()), a, batch, b, e, n, values, res.s, values ? nullptr : &res.u,
                                   values ? nullptr : &res.vh, failures);
      });
    }
  } else {
    const char jobz = values ? 'N' : (full ? 'A' : 'S');
    const lint lm = static_cast<lint>(m), ln = static_cast<lint>(n), ldu = static_cast<lint>(std::max<int64_t>(1, m)),
               ldvt = static_cast<lint>(std::max<int64_t>(1, vrows));
    // Workspace queries (Note [LAPACK workspace], Note [Held workspace]).
    T dummy{};
    const bool may_fallback = o.driver == SvdDriver::kAuto || o.driver == SvdDriver::kGesvd;
    const char jv = values ? 'N' : (full ? 'A' : 'S');
    // The staged route (Note [Engine back-transformation]) calls no gesdd: its lane
    // scratch below serves only the gesvd fallback.
    const bool staged = route.kernel == Kernel::kStaged;
    const detail::QueryKey key{detail::Query::kSvd, a.dtype(), {m, n, jobz, may_fallback ? 1 : 0, staged ? 1 : 0}};
    const lint lwork = detail::cached_query(o.linalg.workspace, key, [&] {
      T wq{}, d{};
      Real<T> rd{};
      lint id = 0;
      lint lw = 1;
      if (!staged) {
        Lapack<T>::gesdd(jobz, lm, ln, &d, lm, &rd, &d, ldu, &d, ldvt, &wq, -1, &rd, &id);
        lw = detail::query_size(wq);
      }
      if (may_fallback) {
        Lapack<T>::gesvd(jv, jv, lm, ln, &d, lm, &rd, &d, ldu, &d, ldvt, &wq, -1, &rd);
        lw = std::max(lw, detail::query_size(wq));
      }
      return detail::QueryValue{lw, 0, 0};
    })[0];
    const int64_t rwork_n = !detail::kIsComplex<T> ? 1
                            : values ? std::max<int64_t>(7 * k, 5 * k)
                                     : std::max<int64_t>(k * std::max(5 * k + 7, 2 * std::max(m, n) + 2 * k + 1),
                                                         5 * k);
    auto carve = [&](std::byte* base, T** acopy, T** work, Real<T>** rwork, lint** iwork) {
      Carver c(base);
      *acopy = c.take<T>(m * n);
      *work = c.take<T>(lwork);
      *rwork = c.take<Real<T>>(rwork_n);
      *iwork = c.take<lint>(8 * k);
      return c.used();
    };
    T *ac, *wk;
    Real<T>* rw;
    lint* iw;
    // The staged route shares the lane's scratch with the gesvd fallback.
    const auto plan = staged ? detail::StagedSvd<T>::plan(m, n, full, o.linalg.workspace) : detail::StagedSvd<T>{};
    const int64_t per_lane =
        std::max(carve(nullptr, &ac, &wk, &rw, &iw), staged ? plan.carve(nullptr, nullptr) : int64_t{0});
    TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, o.linalg.workspace));
    detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
      T *acopy, *work;
      Real<T>* rwork;
      lint* iwork;
      std::byte* base = scratch.data() + lane * per_lane;
      carve(base, &acopy, &work, &rwork, &iwork);
      for (int64_t it = b; it < e; ++it) {
        const Mat<T> src = item_mat<T>(a, batch, it);
        Real<T>* s = item_vec<Real<T>>(res.s, batch, it).p;
        T* u = values ? &dummy : item_mat<T>(res.u, batch, it).p;
        T* vt = values ? &dummy : item_mat<T>(res.vh, batch, it).p;
        lint info;
        if (staged) {
          auto ran = detail::with_item_context(ctx, route, [&](const CpuExecutionContext& item_ctx) {
            return plan.run(item_ctx, Mat<const T>{src.p, src.rs, src.cs}, s, u, vt, base);
          });
          if (!ran) {
            failures.fail(std::move(ran).error());
            continue;
          }
          info = *ran;
          if (info > 0) {  // bdsdc did not converge: gesvd (kAuto), reported
            gather(acopy, m, src, m, n);
            info = Lapack<T>::gesvd(jv, jv, lm, ln, acopy, lm, s, u, ldu, vt, ldvt, work, lwork, rwork);
            if (info == 0) fallbacks.fetch_add(1, std::memory_order_relaxed);
          }
          if (info != 0) failures.record(it, info);
          continue;
        }
        gather(acopy, m, src, m, n);
        if (o.driver == SvdDriver::kGesvd) {
          info = Lapack<T>::gesvd(jv, jv, lm, ln, acopy, lm, s, u, ldu, vt, ldvt, work, lwork, rwork);
        } else {
          info = Lapack<T>::gesdd(jobz, lm, ln, acopy, lm, s, u, ldu, vt, ldvt, work, lwork, rwork, iwork);
          if (info > 0 && o.driver == SvdDriver::kAuto) {
            gather(acopy, m, src, m, n);
            info = Lapack<T>::gesvd(jv, jv, lm, ln, acopy, lm, s, u, ldu, vt, ldvt, work, lwork, rwork);
            if (info == 0) fallbacks.fetch_add(1, std::memory_order_relaxed);
          }
        }
        if (info != 0) failures.record(it, info);
      }
    });
  }
  if (failures.error()) return *failures.error();
  if (failures.any()) {
    if (failures.info() < 0) {
      return usage_error(ErrorCode::kInternal, op, "LAPACK rejected argument " + std::to_string(-failures.info()));
    }
    return detail::item_error(ErrorCode::kNoConvergence, op, batch, failures.item(),
                              "the SVD did not converge (" + std::to_string(failures.info()) +
                                  " superdiagonals; the input may contain NaN or Inf)");
  }
  res.gesvd_fallbacks = fallbacks.load();
  if (o.gauge_fix && !values) {
    for (int64_t it = 0; it < batch.count; ++it) {
      detail::gauge_fix_item(item_mat<T>(res.u, batch, it), m, ucols, item_mat<T>(res.vh, batch, it), vrows, n, k);
    }
  }
  return res;
}

template <class T>
Result<void> qr_t(const CpuExecutionContext& ctx, const Tensor& a, QrMode mode, bool pivoted, const LinalgOptions& lo,
                  const PoolPtr& pool, Tensor* q_out, Tensor* r_out, Tensor* perm_out, Route* route_out) {
  const char* op = pivoted ? "qr_pivoted" : "qr";
  const int64_t r = a.rank(), m = a.dim(r - 2), n = a.dim(r - 1), k = std::min(m, n);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, pivoted ? Op::kQrPivoted : Op::kQr, a.dtype(), m, n, batch.count,
                                              !pivoted && detail::small_qr_supported<T>(), lo));
  *route_out = route;
  const bool want_q = mode != QrMode::kR;
  const int64_t qcols = mode == QrMode::kComplete ? m : k, rrows = mode == QrMode::kComplete ? m : k;
  if (want_q) {
    TENFERRO_TRY(*q_out, detail::alloc_items(a.dtype(), batch.shape, m, qcols, pool));
  }
  TENFERRO_TRY(*r_out, detail::alloc_items(a.dtype(), batch.shape, rrows, n, pool));
  if (pivoted) {
    TENFERRO_TRY(*perm_out, detail::alloc_items(DType::kI64, batch.shape, n, -1, pool));
  }
  if (batch.count == 0) return ok();
  if (route.kernel == Kernel::kSmall) {
    detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int) {
      if constexpr (detail::kIsComplex<T>) {
        for (int64_t it = b; it < e; ++it) {
          detail::small_qr<T>(item_mat<T>(a, batch, it), n,
                              want_q ? item_mat<T>(*q_out, batch, it) : Mat<T>{nullptr, 0, 0},
                              item_mat<T>(*r_out, batch, it));
        }
      } else {
        detail::qr_items_lanes<T>(cpu::kernel_isa(ctx.caps()), a, batch, b, e, n, want_q ? q_out : nullptr, *r_out);
      }
    });
    return ok();
  }
  const lint lm = static_cast<lint>(m), ln = static_cast<lint>(n), lk = static_cast<lint>(k),
             lda = static_cast<lint>(std::max<int64_t>(1, m));
  const detail::QueryKey key{detail::Query::kQr, a.dtype(), {m, n, qcols, pivoted ? 1 : 0, want_q ? 1 : 0}};
  const lint lwork = detail::cached_query(lo.workspace, key, [&] {
    T wq{}, d{};
    Real<T> rd{};
    lint id = 0;
    if (pivoted) {
      Lapack<T>::geqp3(lm, ln, &d, lda, &id, &d, &wq, -1, &rd);
    } else {
      Lapack<T>::geqrf(lm, ln, &d, lda, &d, &wq, -1);
    }
    lint lw = detail::query_size(wq);
    if (want_q && m > 0) {
      Lapack<T>::ungqr(lm, static_cast<lint>(qcols), lk, &d, lda, &d, &wq, -1);
      lw = std::max(lw, detail::query_size(wq));
    }
    return detail::QueryValue{lw, 0, 0};
  })[0];
  const int64_t qbuf_cols = std::max(n, qcols);
  auto carve = [&](std::byte* base, T** acopy, T** tau, T** work, Real<T>** rwork, lint** jpvt) {
    Carver c(base);
    *acopy = c.take<T>(m * qbuf_cols);
    *tau = c.take<T>(k);
    *work = c.take<T>(lwork);
    *rwork = c.take<Real<T>>(2 * n);
    *jpvt = c.take<lint>(n);
    return c.used();
  };
  T *x1, *x2, *x3;
  Real<T>* x4;
  lint* x5;
  const int64_t per_lane = carve(nullptr, &x1, &x2, &x3, &x4, &x5);
  TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
  Failures failures;
  detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
    T *acopy, *tau, *work;
    Real<T>* rwork;
    lint* jpvt;
    carve(scratch.data() + lane * per_lane, &acopy, &tau, &work, &rwork, &jpvt);
    for (int64_t it = b; it < e; ++it) {
      gather(acopy, lda, item_mat<T>(a, batch, it), m, n);
      lint info;
      if (pivoted) {
        std::fill(jpvt, jpvt + n, lint{0});
        info = Lapack<T>::geqp3(lm, ln, acopy, lda, jpvt, tau, work, lwork, rwork);
        Mat<int64_t> perm = item_vec<int64_t>(*perm_out, batch, it);
        for (int64_t j = 0; j < n; ++j) perm(j, 0) = jpvt[j] - 1;
      } else {
        info = m > 0 && n > 0 ? Lapack<T>::geqrf(lm, ln, acopy, lda, tau, work, lwork) : 0;
      }
      if (info != 0) {
        failures.record(it, info);
        continue;
      }
      const Mat<T> rr = item_mat<T>(*r_out, batch, it);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < rrows; ++i) rr(i, j) = i <= j && i < m ? acopy[i + j * lda] : T(0);
      if (want_q && m > 0) {
        // Columns k.. of a complete Q start as anything: ungqr sets them from the
        // identity. Reflectors occupy the first k columns already.
        info = Lapack<T>::ungqr(lm, static_cast<lint>(qcols), lk, acopy, lda, tau, work, lwork);
        if (info != 0) {
          failures.record(it, info);
          continue;
        }
        scatter(item_mat<T>(*q_out, batch, it), acopy, lda, m, qcols);
      }
    }
  });
  if (failures.any()) {
    return usage_error(ErrorCode::kInternal, op, "LAPACK returned " + std::to_string(failures.info()));
  }
  return ok();
}

template <class T>
Result<EighResult> eigh_t(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, bool vectors,
                          const LinalgOptions& lo, const PoolPtr& pool) {
  const char* op = vectors ? "eigh" : "eigvalsh";
  const int64_t n = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kEigh, a.dtype(), n, n, batch.count,
                                              detail::small_eigh_supported<T>(), lo, vectors));
  EighResult res;
  res.route = route;
  TENFERRO_TRY(res.values, detail::alloc_items(detail::real_dtype(a.dtype()), batch.shape, n, -1, pool));
  if (vectors) {
    TENFERRO_TRY(res.vectors, detail::alloc_items(a.dtype(), batch.shape, n, n, pool));
  }
  if (batch.count == 0 || n == 0) return res;
  Failures failures;
  if (route.kernel == Kernel::kSmall) {
    if constexpr (!detail::kIsComplex<T>) {
      detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int) {
        detail::eigh_items_lanes<T>(cpu::kernel_isa(ctx.caps()), a, batch, b, e, n, uplo == Uplo::kLower, res.values,
                                    vectors ? &res.vectors : nullptr, failures);
      });
    }
  } else if (route.kernel == Kernel::kStaged) {
    const auto plan = detail::StagedEigh<T>::plan(n, lo.workspace);
    const int64_t per_lane = plan.carve(nullptr, nullptr);
    TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
    detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
      for (int64_t it = b; it < e; ++it) {
        const Mat<T> src = item_mat<T>(a, batch, it);
        auto r = detail::with_item_context(ctx, route, [&](const CpuExecutionContext& item_ctx) {
          return plan.run(item_ctx, Mat<const T>{src.p, src.rs, src.cs}, uplo == Uplo::kLower,
                          item_vec<Real<T>>(res.values, batch, it).p, item_mat<T>(res.vectors, batch, it).p,
                          scratch.data() + lane * per_lane);
        });
        if (!r) {
          failures.fail(std::move(r).error());
        } else if (*r != 0) {
          failures.record(it, *r);
        }
      }
    });
  } else {
    const char jobz = vectors ? 'V' : 'N', ul = uplo_char(uplo);
    const lint ln = static_cast<lint>(n);
    const detail::QueryKey key{detail::Query::kEigh, a.dtype(), {n, jobz, ul, 0, 0}};
    const detail::QueryValue sizes = detail::cached_query(lo.workspace, key, [&] {
      T wq{}, d{};
      Real<T> rq{}, rd{};
      lint iq = 0;
      Lapack<T>::heevd(jobz, ul, ln, &d, ln, &rd, &wq, -1, &rq, -1, &iq, -1);
      return detail::QueryValue{detail::query_size(wq), detail::kIsComplex<T> ? detail::query_size(rq) : 1,
                                std::max<lint>(1, iq)};
    });
    const lint lwork = sizes[0], lrwork = sizes[1], liwork = sizes[2];
    auto carve = [&](std::byte* base, T** acopy, T** work, Real<T>** rwork, lint** iwork) {
      Carver c(base);
      *acopy = c.take<T>(n * n);
      *work = c.take<T>(lwork);
      *rwork = c.take<Real<T>>(lrwork);
      *iwork = c.take<lint>(liwork);
      return c.used();
    };
    T *x1, *x2;
    Real<T>* x3;
    lint* x4;
    const int64_t per_lane = carve(nullptr, &x1, &x2, &x3, &x4);
    TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
    detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
      T *acopy, *work;
      Real<T>* rwork;
      lint* iwork;
      carve(scratch.data() + lane * per_lane, &acopy, &work, &rwork, &iwork);
      for (int64_t it = b; it < e; ++it) {
        gather(acopy, n, item_mat<T>(a, batch, it), n, n);
        Real<T>* w = item_vec<Real<T>>(res.values, batch, it).p;
        const lint info = Lapack<T>::heevd(jobz, ul, ln, acopy, ln, w, work, lwork, rwork, lrwork, iwork, liwork);
        if (info != 0) {
          failures.record(it, info);
          continue;
        }
        if (vectors) scatter(item_mat<T>(res.vectors, batch, it), acopy, n, n, n);
      }
    });
  }
  if (failures.error()) return *failures.error();
  if (failures.any()) {
    return detail::item_error(ErrorCode::kNoConvergence, op, batch, failures.item(),
                              "the eigensolver did not converge (info " + std::to_string(failures.info()) +
                                  "; the input may contain NaN or Inf)");
  }
  return res;
}

template <class T>
Result<EigResult> eig_t(const CpuExecutionContext& ctx, const Tensor& a, bool vectors, const LinalgOptions& lo,
                        const PoolPtr& pool) {
  using C = std::complex<Real<T>>;
  const char* op = vectors ? "eig" : "eigvals";
  const int64_t n = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kEig, a.dtype(), n, n, batch.count, false, lo));
  EigResult res;
  res.route = route;
  const DType cdt = detail::complex_dtype(a.dtype());
  TENFERRO_TRY(res.values, detail::alloc_items(cdt, batch.shape, n, -1, pool));
  if (vectors) {
    TENFERRO_TRY(res.vectors, detail::alloc_items(cdt, batch.shape, n, n, pool));
  }
  if (batch.count == 0 || n == 0) return res;
  const char jr = vectors ? 'V' : 'N';
  const lint ln = static_cast<lint>(n);
  T dummy{};
  const detail::QueryKey key{detail::Query::kEig, a.dtype(), {n, jr, 0, 0, 0}};
  const lint lwork = detail::cached_query(lo.workspace, key, [&] {
    T wq{}, d{};
    Real<T> rd{};
    if constexpr (detail::kIsComplex<T>) {
      Lapack<T>::geev('N', jr, ln, &d, ln, &d, &d, 1, &d, ln, &wq, -1, &rd);
    } else {
      Lapack<T>::geev('N', jr, ln, &d, ln, &d, &d, &d, 1, &d, ln, &wq, -1);
    }
    return detail::QueryValue{detail::query_size(wq), 0, 0};
  })[0];
  auto carve = [&](std::byte* base, T** acopy, T** vr, T** w1, T** w2, T** work, Real<T>** rwork) {
    Carver c(base);
    *acopy = c.take<T>(n * n);
    *vr = c.take<T>(vectors ? n * n : 1);
    *w1 = c.take<T>(n);
    *w2 = c.take<T>(n);
    *work = c.take<T>(lwork);
    *rwork = c.take<Real<T>>(2 * n);
    return c.used();
  };
  T *x1, *x2, *x3, *x4, *x5;
  Real<T>* x6;
  const int64_t per_lane = carve(nullptr, &x1, &x2, &x3, &x4, &x5, &x6);
  TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
  Failures failures;
  detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
    T *acopy, *vr, *w1, *w2, *work;
    Real<T>* rwork;
    carve(scratch.data() + lane * per_lane, &acopy, &vr, &w1, &w2, &work, &rwork);
    for (int64_t it = b; it < e; ++it) {
      gather(acopy, n, item_mat<T>(a, batch, it), n, n);
      lint info;
      if constexpr (detail::kIsComplex<T>) {
        info = Lapack<T>::geev('N', jr, ln, acopy, ln, w1, &dummy, 1, vr, ln, work, lwork, rwork);
      } else {
        info = Lapack<T>::geev('N', jr, ln, acopy, ln, w1, w2, &dummy, 1, vr, ln, work, lwork);
      }
      if (info != 0) {
        failures.record(it, info);
        continue;
      }
      const Mat<C> w = item_vec<C>(res.values, batch, it);
      const Mat<C> v = vectors ? item_mat<C>(res.vectors, batch, it) : Mat<C>{nullptr, 0, 0};
      if constexpr (detail::kIsComplex<T>) {
        for (int64_t j = 0; j < n; ++j) w(j, 0) = w1[j];
        if (vectors) scatter(v, vr, n, n, n);
      } else {
        // Real geev: a complex pair (j, j+1) has wi[j] > 0 and vectors vr[:, j] +- i vr[:, j+1].
        for (int64_t j = 0; j < n; ++j) w(j, 0) = C(w1[j], w2[j]);
        for (int64_t j = 0; j < n && vectors; ++j) {
          if (w2[j] != 0 && j + 1 < n) {
            for (int64_t i = 0; i < n; ++i) {
              v(i, j) = C(vr[i + j * n], vr[i + (j + 1) * n]);
              v(i, j + 1) = C(vr[i + j * n], -vr[i + (j + 1) * n]);
            }
            ++j;
          } else {
            for (int64_t i = 0; i < n; ++i) v(i, j) = C(vr[i + j * n], 0);
          }
        }
      }
    }
  });
  if (failures.any()) {
    return detail::item_error(ErrorCode::kNoConvergence, op, batch, failures.item(),
                              "the QR algorithm did not converge (info " + std::to_string(failures.info()) +
                                  "; the input may contain NaN or Inf)");
  }
  return res;
}

template <class T>
Result<void> cholesky_t(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, Tensor& out,
                        const LinalgOptions& lo, const PoolPtr& pool) {
  const char* op = "cholesky";
  const int64_t n = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kCholesky, a.dtype(), n, n, batch.count,
                                              detail::small_cholesky_supported<T>(), lo));
  if (batch.count == 0 || n == 0) return ok();
  const bool lower = uplo == Uplo::kLower;
  Failures failures;
  if (route.kernel == Kernel::kSmall) {
    detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int) {
      if constexpr (detail::kIsComplex<T>) {
        for (int64_t it = b; it < e; ++it) {
          const int info = detail::small_cholesky<T>(item_mat<T>(a, batch, it), n, lower, item_mat<T>(out, batch, it));
          if (info != 0) failures.record(it, info);
        }
      } else {
        detail::cholesky_lanes<T>(cpu::kernel_isa(ctx.caps()), a, batch, b, e, n, lower, out, failures);
      }
    });
  } else {
    const bool direct = detail::item_mat<T>(out, batch, 0).lapack_ready(n) && !out.shares_storage_with(a);
    const int64_t lane_bytes = direct ? 0 : (n * n * int64_t(sizeof(T)) + 63) / 64 * 64;
    TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * lane_bytes, pool, lo.workspace));
    const lint ln = static_cast<lint>(n);
    detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
      T* buf = direct ? nullptr : reinterpret_cast<T*>(scratch.data() + lane * lane_bytes);
      for (int64_t it = b; it < e; ++it) {
        const Mat<T> dst = item_mat<T>(out, batch, it);
        T* x = direct ? dst.p : buf;
        const int64_t ld = direct ? dst.cs : n;
        gather(x, ld, item_mat<T>(a, batch, it), n, n);
        const lint info = Lapack<T>::potrf(lower ? 'L' : 'U', ln, x, static_cast<lint>(ld));
        if (info != 0) {
          failures.record(it, info);
          continue;
        }
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < n; ++i)
            if (lower ? i < j : i > j) x[i + j * ld] = T(0);
        if (!direct) scatter(dst, buf, n, n, n);
      }
    });
  }
  if (failures.any()) {
    if (failures.info() < 0) {
      return usage_error(ErrorCode::kInternal, op, "LAPACK rejected argument " + std::to_string(-failures.info()));
    }
    return detail::item_error(ErrorCode::kNotPositiveDefinite, op, batch, failures.item(),
                              "the leading minor of order " + std::to_string(failures.info()) +
                                  " is not positive definite");
  }
  return ok();
}

template <class T>
Result<LuFactorResult> lu_factor_t(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& lo,
                                   const PoolPtr& pool) {
  const int64_t r = a.rank(), m = a.dim(r - 2), n = a.dim(r - 1), k = std::min(m, n);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kLu, a.dtype(), m, n, batch.count, false, lo));
  LuFactorResult res;
  res.route = route;
  TENFERRO_TRY(res.lu, detail::alloc_items(a.dtype(), batch.shape, m, n, pool));
  TENFERRO_TRY(res.pivots, detail::alloc_items(DType::kI64, batch.shape, k, -1, pool));
  if (batch.count == 0 || k == 0) {
    for (int64_t it = 0; it < batch.count && m * n > 0; ++it) {
      gather(item_mat<T>(res.lu, batch, it).p, m, item_mat<T>(a, batch, it), m, n);
    }
    return res;
  }
  const int64_t lane_bytes = (k * int64_t(sizeof(lint)) + 63) / 64 * 64;
  TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * lane_bytes, pool, lo.workspace));
  Failures failures;
  detail::run_items(ctx, route, batch.count, [&](int64_t b, int64_t e, int lane) {
    auto* ipiv = reinterpret_cast<lint*>(scratch.data() + lane * lane_bytes);
    for (int64_t it = b; it < e; ++it) {
      const Mat<T> lu = item_mat<T>(res.lu, batch, it);
      gather(lu.p, m, item_mat<T>(a, batch, it), m, n);
      auto factored = detail::factor_lu<T>(ctx, route, m, n, lu.p, m, ipiv);
      if (!factored) {
        failures.fail(factored.error());
        continue;
      }
      const Mat<int64_t> piv = item_vec<int64_t>(res.pivots, batch, it);
      for (int64_t i = 0; i < k; ++i) piv(i, 0) = ipiv[i] - 1;
    }
  });
  if (failures.error()) return *failures.error();
  return res;
}

template <class T>
Result<LuResult> lu_t(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& lo, const PoolPtr& pool) {
  const int64_t r = a.rank(), m = a.dim(r - 2), n = a.dim(r - 1), k = std::min(m, n);
  TENFERRO_TRY(LuFactorResult f, lu_factor_t<T>(ctx, a, lo, pool));
  const Batch batch(detail::batch_dims(a));
  LuResult res;
  res.route = f.route;
  TENFERRO_TRY(res.p, detail::alloc_items(a.dtype(), batch.shape, m, m, pool));
  TENFERRO_TRY(res.l, detail::alloc_items(a.dtype(), batch.shape, m, k, pool));
  TENFERRO_TRY(res.u, detail::alloc_items(a.dtype(), batch.shape, k, n, pool));
  SmallVector<int64_t, 16> perm(static_cast<size_t>(m), 0);
  for (int64_t it = 0; it < batch.count; ++it) {
    const Mat<T> lu = item_mat<T>(f.lu, batch, it), p = item_mat<T>(res.p, batch, it), l = item_mat<T>(res.l, batch, it),
                 u = item_mat<T>(res.u, batch, it);
    const Mat<int64_t> piv = item_vec<int64_t>(f.pivots, batch, it);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < m; ++i) l(i, j) = i > j ? lu(i, j) : (i == j ? T(1) : T(0));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i) u(i, j) = i <= j ? lu(i, j) : T(0);
    // Row i of P^T A is row perm[i] of A (the swaps applied in order); A = P L U.
    for (int64_t i = 0; i < m; ++i) perm[static_cast<size_t>(i)] = i;
    for (int64_t i = 0; i < k; ++i) std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(piv(i, 0))]);
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < m; ++i) p(i, j) = T(0);
    for (int64_t i = 0; i < m; ++i) p(perm[static_cast<size_t>(i)], i) = T(1);
  }
  return res;
}

// eigh and eigvalsh: the referenced triangle checked (Note [Non-finite input]) and
// scaled into the safe range (Note [Safe-range scaling]).
Result<EighResult> eigh_scaled(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, bool vectors,
                               const LinalgOptions& options, const PoolPtr& pool) {
  const char* op = vectors ? "eigh" : "eigvalsh";
  const detail::Part part = uplo == Uplo::kLower ? detail::Part::kLower : detail::Part::kUpper;
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, part, pool, op));
  TENFERRO_TRY(EighResult res, detail::dispatch(a.dtype(), op, [&](auto t) {
                 return eigh_t<decltype(t)>(ctx, range.input(a), uplo, vectors, options, pool);
               }));
  detail::unscale_items(res.values, range, 1, 1);
  return res;
}

}  // namespace

Result<SvdResult> svd(const CpuExecutionContext& ctx, const Tensor& a, const SvdOptions& options, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "svd", false));
  // Note [Non-finite input], Note [Safe-range scaling]: one read.
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool, "svd"));
  TENFERRO_TRY(SvdResult res, detail::dispatch(a.dtype(), "svd", [&](auto t) {
                 return svd_t<decltype(t)>(ctx, range.input(a), options, pool);
               }));
  detail::unscale_items(res.s, range, 1, 1);  // Note [Safe-range scaling]
  return res;
}

Result<QrResult> qr(const CpuExecutionContext& ctx, const Tensor& a, QrMode mode, const LinalgOptions& options,
                    const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "qr", false));
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool));
  QrResult res;
  TENFERRO_TRY_VOID(detail::dispatch(a.dtype(), "qr", [&](auto t) {
    return qr_t<decltype(t)>(ctx, range.input(a), mode, false, options, pool, &res.q, &res.r, nullptr, &res.route);
  }));
  detail::unscale_items(res.r, range, 2, 1);  // Note [Safe-range scaling]
  return res;
}

Result<QrPivotedResult> qr_pivoted(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                                   const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "qr_pivoted", false));
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool));
  QrPivotedResult res;
  TENFERRO_TRY_VOID(detail::dispatch(a.dtype(), "qr_pivoted", [&](auto t) {
    return qr_t<decltype(t)>(ctx, range.input(a), QrMode::kReduced, true, options, pool, &res.q, &res.r, &res.perm,
                             &res.route);
  }));
  detail::unscale_items(res.r, range, 2, 1);  // Note [Safe-range scaling]
  return res;
}

Result<EighResult> eigh(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, const LinalgOptions& options,
                        const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "eigh", true));
  return eigh_scaled(ctx, a, uplo, true, options, pool);
}

Result<Tensor> eigvalsh(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, const LinalgOptions& options,
                        const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "eigvalsh", true));
  TENFERRO_TRY(EighResult r, eigh_scaled(ctx, a, uplo, false, options, pool));
  return std::move(r.values);
}

Result<EigResult> eig(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                      const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "eig", true));
  TENFERRO_TRY_VOID(detail::check_finite(a, "eig", "A"));  // Note [Non-finite input]
  return detail::dispatch(a.dtype(), "eig", [&](auto t) { return eig_t<decltype(t)>(ctx, a, true, options, pool); });
}

Result<Tensor> eigvals(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                       const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "eigvals", true));
  TENFERRO_TRY_VOID(detail::check_finite(a, "eigvals", "A"));  // Note [Non-finite input]
  TENFERRO_TRY(EigResult r, detail::dispatch(a.dtype(), "eigvals", [&](auto t) {
                 return eig_t<decltype(t)>(ctx, a, false, options, pool);
               }));
  return std::move(r.values);
}

Result<Tensor> cholesky(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, const LinalgOptions& options,
                        const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "cholesky", true));
  const int64_t n = a.dim(a.rank() - 1);
  return detail::dispatch(a.dtype(), "cholesky", [&](auto t) -> Result<Tensor> {
    TENFERRO_TRY(Tensor out, detail::alloc_items(a.dtype(), detail::batch_dims(a), n, n, pool));
    TENFERRO_TRY_VOID(cholesky_t<decltype(t)>(ctx, a, uplo, out, options, pool));
    return out;
  });
}

Result<void> cholesky_into(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, Tensor& out,
                           const LinalgOptions& options, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "cholesky_into", true));
  TENFERRO_TRY_VOID(detail::check_destination(out, a.dtype(), a.shape(), "cholesky_into"));
  return detail::dispatch(a.dtype(), "cholesky_into",
                          [&](auto t) { return cholesky_t<decltype(t)>(ctx, a, uplo, out, options, pool); });
}

Result<LuFactorResult> lu_factor(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                                 const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "lu_factor", false));
  return detail::dispatch(a.dtype(), "lu_factor",
                          [&](auto t) { return lu_factor_t<decltype(t)>(ctx, a, options, pool); });
}

Result<LuResult> lu(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                    const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "lu", false));
  return detail::dispatch(a.dtype(), "lu", [&](auto t) { return lu_t<decltype(t)>(ctx, a, options, pool); });
}

}  // namespace tenferro::linalg
