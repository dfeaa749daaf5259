// Solvers, inverses, determinants, pseudo-inverse, least squares and norms.

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

// A rank >= 1 tensor viewed with one more trailing axis of extent 1 (a vector as an
// n x 1 matrix; the new axis' stride only has to satisfy LAPACK's leading dimension).
Result<Tensor> as_column(const Tensor& v) {
  Layout l = v.layout();
  const int64_t n = v.dim(v.rank() - 1), rs = v.strides()[static_cast<size_t>(v.rank() - 1)];
  l.shape.push_back(1);
  l.strides.push_back(std::max<int64_t>(1, n * (rs < 0 ? -rs : rs)));
  return Tensor::from_storage(v.dtype(), v.storage(), std::move(l), v.placement());
}

// How each item's right-hand side is produced.
enum class Rhs : uint8_t { kGather, kIdentity };

// X = A^-1 B per item for square A [.., n, n] (a and b already broadcast to one batch;
// b is ignored for kIdentity) into out [.., n, k].
template <class T>
Result<void> solve_items(const CpuExecutionContext& ctx, Op op, const char* name, const Tensor& a, const Tensor& b,
                         Rhs rhs, Tensor& out, int64_t k, const LinalgOptions& lo, const PoolPtr& pool) {
  const int64_t n = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route,
               detail::route_for(ctx, op, a.dtype(), n, n, batch.count, detail::small_lu_supported<T>(), lo));
  if (batch.count == 0 || n == 0 || k == 0) return ok();
  const bool small = route.kernel == Kernel::kSmall;
  Failures failures;
  if constexpr (!detail::kIsComplex<T>) {
    if (small) {
      detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int) {
        detail::solve_items_lanes<T>(cpu::kernel_isa(ctx.caps()), a, rhs == Rhs::kGather ? &b : nullptr, batch, bgn, end, n, k, out, failures);
      });
      if (failures.any()) {
        return detail::item_error(ErrorCode::kSingular, name, batch, failures.item(),
                                  "the matrix is singular (U[" + std::to_string(failures.info() - 1) + ", " +
                                      std::to_string(failures.info() - 1) +
                                      "] of its LU factorization is exactly zero)");
      }
      return ok();
    }
  }
  const bool direct = item_mat<T>(out, batch, 0).lapack_ready(n) || (k == 1 && item_mat<T>(out, batch, 0).rs == 1);
  auto carve = [&](std::byte* base, T** acopy, T** bbuf, lint** ipiv, int64_t** spiv) {
    Carver c(base);
    *acopy = c.take<T>(n * n);
    *bbuf = c.take<T>(direct ? 1 : n * k);
    *ipiv = c.take<lint>(n);
    *spiv = c.take<int64_t>(n);
    return c.used();
  };
  T *x1, *x2;
  lint* x3;
  int64_t* x4;
  const int64_t per_lane = carve(nullptr, &x1, &x2, &x3, &x4);
  TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
  const lint ln = static_cast<lint>(n);
  detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int lane) {
    T *acopy, *bbuf;
    lint* ipiv;
    int64_t* spiv;
    carve(scratch.data() + lane * per_lane, &acopy, &bbuf, &ipiv, &spiv);
    for (int64_t it = bgn; it < end; ++it) {
      const Mat<T> dst = item_mat<T>(out, batch, it);
      T* x = direct ? dst.p : bbuf;
      const int64_t ldx = direct ? (k == 1 ? std::max<int64_t>(1, n) : dst.cs) : n;
      if (rhs == Rhs::kIdentity) {
        for (int64_t j = 0; j < k; ++j)
          for (int64_t i = 0; i < n; ++i) x[i + j * ldx] = i == j ? T(1) : T(0);
      } else {
        gather(x, ldx, item_mat<T>(b, batch, it), n, k);
      }
      gather(acopy, n, item_mat<T>(a, batch, it), n, n);
      if (small) {
        const int info = detail::small_lu<T>(acopy, n, spiv);
        if (info != 0) {
          failures.record(it, info);
          continue;
        }
        if (ldx == n) {
          detail::small_lu_solve<T>(acopy, n, spiv, x, k);
        } else {
          for (int64_t j = 0; j < k; ++j) detail::small_lu_solve<T>(acopy, n, spiv, x + j * ldx, 1);
        }
      } else {
        auto factored = detail::factor_lu<T>(ctx, route, n, n, acopy, n, ipiv);
        if (!factored) {
          failures.fail(factored.error());
          continue;
        }
        const lint info = *factored;
        if (info != 0) {
          failures.record(it, info);
          continue;
        }
        const cpu::OpenBlasThreads scope(std::max(1, route.provider_threads));  // after a recursive LU's panels
        Lapack<T>::getrs('N', ln, static_cast<lint>(k), acopy, ln, ipiv, x, static_cast<lint>(ldx));
      }
      if (!direct) scatter(dst, bbuf, n, n, k);
    }
  });
  if (failures.error()) return *failures.error();
  if (failures.any()) {
    return detail::item_error(ErrorCode::kSingular, name, batch, failures.item(),
                              "the matrix is singular (U[" + std::to_string(failures.info() - 1) + ", " +
                                  std::to_string(failures.info() - 1) + "] of its LU factorization is exactly zero)");
  }
  return ok();
}

// Validated operands of solve: a and b broadcast to one batch, b as a matrix, and the
// result's shape.
struct SolvePlan {
  Tensor a, b;
  Shape out_shape;
  bool vector = false;
  int64_t k = 1;
};

Result<SolvePlan> plan_solve(const Tensor& a, const Tensor& b, const char* op) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, op, true));
  if (!b.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined right-hand side");
  TENFERRO_TRY_VOID(detail::check_same_dtype(a, b, op));
  const int64_t n = a.dim(a.rank() - 1);
  SolvePlan p;
  p.a = a;
  p.vector = b.rank() == 1;
  if (b.rank() == 0) return usage_error(ErrorCode::kInvalidShape, op, "the right-hand side is 0-d");
  if (p.vector) {
    TENFERRO_TRY(p.b, as_column(b));
  } else {
    p.b = b;
  }
  if (p.b.dim(p.b.rank() - 2) != n) {
    return usage_error(ErrorCode::kShapeMismatch, op,
                       "A is " + format_dims(a.shape()) + " but B is " + format_dims(b.shape()) +
                           " (B needs " + std::to_string(n) + " rows)");
  }
  p.k = p.b.dim(p.b.rank() - 1);
  TENFERRO_TRY(Shape batch, detail::broadcast_batches(p.a, p.b, op));
  p.out_shape = p.vector ? detail::with_vector(batch, n) : detail::with_matrix(batch, n, p.k);
  return p;
}

template <class T>
Result<SlogdetResult> slogdet_t(const CpuExecutionContext& ctx, const Tensor& a, bool want_log,
                                const LinalgOptions& lo, const PoolPtr& pool, Tensor* det_out) {
  const int64_t n = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route,
               detail::route_for(ctx, Op::kDet, a.dtype(), n, n, batch.count, detail::small_lu_supported<T>(), lo));
  SlogdetResult res;
  if (want_log) {
    TENFERRO_TRY(res.sign, Tensor::uninitialized(a.dtype(), batch.shape, pool));
    TENFERRO_TRY(res.logabsdet, Tensor::uninitialized(detail::real_dtype(a.dtype()), batch.shape, pool));
  } else {
    TENFERRO_TRY(*det_out, Tensor::uninitialized(a.dtype(), batch.shape, pool));
  }
  if (batch.count == 0) return res;
  auto carve = [&](std::byte* base, T** acopy, lint** ipiv, int64_t** spiv) {
    Carver c(base);
    *acopy = c.take<T>(n * n);
    *ipiv = c.take<lint>(n);
    *spiv = c.take<int64_t>(n);
    return c.used();
  };
  T* x1;
  lint* x2;
  int64_t* x3;
  const int64_t per_lane = carve(nullptr, &x1, &x2, &x3);
  TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
  T* sign = want_log ? static_cast<T*>(res.sign.storage()->data()) : static_cast<T*>(det_out->storage()->data());
  Real<T>* logabs = want_log ? static_cast<Real<T>*>(res.logabsdet.storage()->data()) : nullptr;
  // det = (-1)^swaps * prod(U_ii); item `it` is element `it` of the compact scalar result.
  auto emit = [&](int64_t it, const T* diag, int64_t stride, bool odd) {
    T sg = odd ? T(-1) : T(1);
    Real<T> la = 0;
    T prod = sg;
    for (int64_t i = 0; i < n; ++i) {
      const T d = diag[i * stride];
      prod *= d;
      const Real<T> ad = std::abs(d);
      if (ad == 0) {  // exactly singular: det 0 even where the product so far overflowed
        sg = T(0);
        prod = T(0);
        la = -std::numeric_limits<Real<T>>::infinity();
        break;
      }
      sg *= d / ad;
      la += std::log(ad);
    }
    if (want_log) {
      sign[it] = sg;
      logabs[it] = la;
    } else {
      sign[it] = prod;
    }
  };
  if constexpr (!detail::kIsComplex<T>) {
    if (route.kernel == Kernel::kSmall) {
      detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int) {
        detail::det_items_lanes<T>(cpu::kernel_isa(ctx.caps()), a, batch, bgn, end, n,
                                   [&](int64_t it, const T* diag, bool odd) { emit(it, diag, 1, odd); });
      });
      return res;
    }
  }
  Failures failures;
  detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int lane) {
    T* acopy;
    lint* ipiv;
    int64_t* spiv;
    carve(scratch.data() + lane * per_lane, &acopy, &ipiv, &spiv);
    for (int64_t it = bgn; it < end; ++it) {
      gather(acopy, n, item_mat<T>(a, batch, it), n, n);
      bool odd = false;
      if (route.kernel == Kernel::kSmall) {
        detail::small_lu<T>(acopy, n, spiv);
        for (int64_t i = 0; i < n; ++i) odd ^= spiv[i] != i;
      } else if (n > 0) {
        auto factored = detail::factor_lu<T>(ctx, route, n, n, acopy, n, ipiv);
        if (!factored) {
          failures.fail(factored.error());
          continue;
        }
        for (int64_t i = 0; i < n; ++i) odd ^= ipiv[i] - 1 != i;
      }
      emit(it, acopy, n + 1, odd);
    }
  });
  if (failures.error()) return *failures.error();
  return res;
}

template <class T>
Result<Tensor> triangular_t(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b,
                            const TriangularOptions& o, const PoolPtr& pool) {
  const char* op = "triangular_solve";
  const int64_t m = b.dim(b.rank() - 2), k = b.dim(b.rank() - 1), na = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kTriangularSolve, a.dtype(), na, na, batch.count, false,
                                              o.linalg));
  TENFERRO_TRY(Tensor out, detail::alloc_items(a.dtype(), batch.shape, m, k, pool));
  if (batch.count == 0 || m == 0 || k == 0) return out;
  // Exactly zero diagonals are rejected before anything runs (trsm would divide by them).
  if (!o.unit_diagonal) {
    for (int64_t it = 0; it < batch.count; ++it) {
      const Mat<T> ai = item_mat<T>(a, batch, it);
      for (int64_t i = 0; i < na; ++i) {
        if (ai(i, i) == T(0)) {
          return detail::item_error(ErrorCode::kSingular, op, batch, it,
                                    "the triangular matrix has a zero diagonal entry at " + std::to_string(i));
        }
      }
    }
  }
  const int64_t lane_bytes = (na * na * int64_t(sizeof(T)) + 63) / 64 * 64;
  TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * lane_bytes, pool, o.linalg.workspace));
  const CBLAS_SIDE side = o.left ? CblasLeft : CblasRight;
  const CBLAS_UPLO ul = o.uplo == Uplo::kLower ? CblasLower : CblasUpper;
  const CBLAS_TRANSPOSE tr = o.transpose == Transpose::kNone        ? CblasNoTrans
                             : o.transpose == Transpose::kTranspose ? CblasTrans
                                                                    : CblasConjTrans;
  const CBLAS_DIAG dg = o.unit_diagonal ? CblasUnit : CblasNonUnit;
  detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int lane) {
    T* acopy = reinterpret_cast<T*>(scratch.data() + lane * lane_bytes);
    for (int64_t it = bgn; it < end; ++it) {
      const Mat<T> x = item_mat<T>(out, batch, it);
      gather(x.p, m, item_mat<T>(b, batch, it), m, k);
      gather(acopy, na, item_mat<T>(a, batch, it), na, na);
      Lapack<T>::trsm(side, ul, tr, dg, static_cast<lint>(m), static_cast<lint>(k), acopy, static_cast<lint>(na),
                      x.p, static_cast<lint>(m));
    }
  });
  return out;
}

template <class T>
Result<Tensor> pinv_t(const CpuExecutionContext& ctx, const Tensor& a, std::optional<double> rtol,
                      const LinalgOptions& lo, const PoolPtr& pool) {
  const int64_t m = a.dim(a.rank() - 2), n = a.dim(a.rank() - 1), k = std::min(m, n);
  SvdOptions so;
  so.linalg = lo;
  TENFERRO_TRY(SvdResult sv, svd(ctx, a, so, pool));
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Tensor out, detail::alloc_items(a.dtype(), batch.shape, n, m, pool));
  if (batch.count == 0 || m == 0 || n == 0) {
    for (int64_t it = 0; it < batch.count; ++it) {
      const Mat<T> x = item_mat<T>(out, batch, it);
      for (int64_t j = 0; j < m; ++j)
        for (int64_t i = 0; i < n; ++i) x(i, j) = T(0);
    }
    return out;
  }
  const double tol = rtol.value_or(static_cast<double>(std::max(m, n)) * std::numeric_limits<Real<T>>::epsilon());
  const int64_t lane_bytes = (m * k * int64_t(sizeof(T)) + 63) / 64 * 64;
  TENFERRO_TRY(Scratch scratch, Scratch::make(sv.route.lanes * lane_bytes, pool, lo.workspace));
  detail::run_items(ctx, sv.route, batch.count, [&](int64_t bgn, int64_t end, int lane) {
    T* w = reinterpret_cast<T*>(scratch.data() + lane * lane_bytes);
    for (int64_t it = bgn; it < end; ++it) {
      const Mat<T> u = item_mat<T>(sv.u, batch, it), vh = item_mat<T>(sv.vh, batch, it), x = item_mat<T>(out, batch, it);
      const Mat<Real<T>> s = item_vec<Real<T>>(sv.s, batch, it);
      const Real<T> cut = static_cast<Real<T>>(tol) * s(0, 0);
      for (int64_t l = 0; l < k; ++l) {
        const Real<T> sl = s(l, 0);
        const Real<T> inv = sl > cut && sl > 0 ? Real<T>(1) / sl : Real<T>(0);
        for (int64_t i = 0; i < m; ++i) w[i + l * m] = u(i, l) * inv;
      }
      // X (n x m) = Vh^H (n x k) * W^H (k x m).
      const CBLAS_TRANSPOSE ct = detail::kIsComplex<T> ? CblasConjTrans : CblasTrans;
      Lapack<T>::gemm(ct, ct, static_cast<lint>(n), static_cast<lint>(m), static_cast<lint>(k), vh.p,
                      static_cast<lint>(vh.cs), w, static_cast<lint>(m), x.p, static_cast<lint>(x.cs));
    }
  });
  return out;
}

template <class T>
Result<LstsqResult> lstsq_t(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b, bool vector,
                            std::optional<double> rcond, const LinalgOptions& lo, const PoolPtr& pool) {
  const int64_t m = a.dim(a.rank() - 2), n = a.dim(a.rank() - 1), k = std::min(m, n), nrhs = b.dim(b.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kLstsq, a.dtype(), m, n, batch.count, false, lo));
  LstsqResult res;
  const DType rdt = detail::real_dtype(a.dtype());
  TENFERRO_TRY(Tensor sol, detail::alloc_items(a.dtype(), batch.shape, n, nrhs, pool));
  TENFERRO_TRY(Tensor resid, detail::alloc_items(rdt, batch.shape, nrhs, -1, pool));
  TENFERRO_TRY(res.rank, Tensor::uninitialized(DType::kI64, batch.shape, pool));
  TENFERRO_TRY(res.singular_values, detail::alloc_items(rdt, batch.shape, k, -1, pool));
  const Real<T> rc =
      static_cast<Real<T>>(rcond.value_or(std::numeric_limits<Real<T>>::epsilon() * static_cast<double>(std::max(m, n))));
  auto* ranks = static_cast<int64_t*>(res.rank.storage()->data());
  bool all_full = true;
  if (batch.count > 0) {
    const int64_t ldb = std::max<int64_t>({1, m, n});
    const lint lm = static_cast<lint>(m), ln = static_cast<lint>(n), lr = static_cast<lint>(nrhs);
    const detail::QueryKey key{detail::Query::kLstsq, a.dtype(), {m, n, nrhs, 0, 0}};
    const detail::QueryValue sizes = detail::cached_query(lo.workspace, key, [&] {
      T wq{}, d{};
      Real<T> rq{}, rd{};
      lint iq = 0, rank_dummy = 0;
      Lapack<T>::gelsd(lm, ln, lr, &d, std::max<lint>(1, lm), &d, static_cast<lint>(ldb), &rd, rc, &rank_dummy, &wq,
                       -1, &rq, &iq);
      return detail::QueryValue{detail::query_size(wq),
                                detail::kIsComplex<T> ? std::max<lint>(1, static_cast<lint>(rq)) : 1,
                                std::max<lint>(1, iq)};
    });
    const lint lwork = sizes[0];
    const int64_t lrwork = sizes[1], liwork = sizes[2];
    auto carve = [&](std::byte* base, T** acopy, T** bcopy, T** work, Real<T>** rwork, lint** iwork) {
      Carver c(base);
      *acopy = c.take<T>(m * n);
      *bcopy = c.take<T>(ldb * nrhs);
      *work = c.take<T>(lwork);
      *rwork = c.take<Real<T>>(lrwork);
      *iwork = c.take<lint>(liwork);
      return c.used();
    };
    T *x1, *x2, *x3;
    Real<T>* x4;
    lint* x5;
    const int64_t per_lane = carve(nullptr, &x1, &x2, &x3, &x4, &x5);
    TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, lo.workspace));
    Failures failures;
    detail::run_items(ctx, route, batch.count, [&](int64_t bgn, int64_t end, int lane) {
      T *acopy, *bcopy, *work;
      Real<T>* rwork;
      lint* iwork;
      carve(scratch.data() + lane * per_lane, &acopy, &bcopy, &work, &rwork, &iwork);
      for (int64_t it = bgn; it < end; ++it) {
        gather(acopy, std::max<int64_t>(1, m), item_mat<T>(a, batch, it), m, n);
        for (int64_t j = 0; j < nrhs; ++j)
          for (int64_t i = 0; i < ldb; ++i) bcopy[i + j * ldb] = T(0);
        gather(bcopy, ldb, item_mat<T>(b, batch, it), m, nrhs);
        lint rank = 0;
        Real<T>* s = item_vec<Real<T>>(res.singular_values, batch, it).p;
        lint info = 0;
        if (m > 0 && n > 0) {
          info = Lapack<T>::gelsd(lm, ln, lr, acopy, std::max<lint>(1, lm), bcopy, static_cast<lint>(ldb), s, rc, &rank,
                                  work, lwork, rwork, iwork);
        }
        if (info != 0) {
          failures.record(it, info);
          continue;
        }
        ranks[it] = rank;
        scatter(item_mat<T>(sol, batch, it), bcopy, ldb, n, nrhs);
        const Mat<Real<T>> rv = item_vec<Real<T>>(resid, batch, it);
        for (int64_t j = 0; j < nrhs; ++j) {
          Real<T> acc = 0;
          for (int64_t i = n; i < m; ++i) acc += detail::abs2(bcopy[i + j * ldb]);
          rv(j, 0) = acc;
        }
      }
    });
    if (failures.any()) {
      return detail::item_error(ErrorCode::kNoConvergence, "lstsq", batch, failures.item(),
                                "the SVD inside gelsd did not converge (info " + std::to_string(failures.info()) + ")");
    }
    for (int64_t it = 0; it < batch.count; ++it) all_full = all_full && ranks[it] == n;
  }
  if (vector) {
    TENFERRO_TRY(res.solution, sol.reshape(detail::with_vector(batch.shape, n)));
  } else {
    res.solution = std::move(sol);
  }
  if (m > n && all_full) {
    res.residuals = std::move(resid);
  } else {
    TENFERRO_TRY(res.residuals, Tensor::zeros(rdt, detail::with_vector(batch.shape, 0)));
  }
  return res;
}

// sqrt(sum v^2) of magnitudes v >= 0 as a scale and a scaled sum of squares, so that no
// representable norm overflows or underflows on the way; numpy's special values: a NaN
// entry makes NaN, else an infinite one infinity (scaling by it would make inf / inf).
// The Frobenius norm and the vector 2-norm.
template <class R>
struct SumOfSquares {
  R scale = 0, ssq = 1;
  bool nan = false, inf = false;
  void add(R v) {
    if (!(v <= std::numeric_limits<R>::max())) {  // NaN or infinity
      nan = nan || std::isnan(v);
      inf = true;
      return;
    }
    if (v == 0) return;
    if (scale < v) {
      ssq = 1 + ssq * (scale / v) * (scale / v);
      scale = v;
    } else {
      ssq += (v / scale) * (v / scale);
    }
  }
  R norm() const {
    return nan   ? std::numeric_limits<R>::quiet_NaN()
           : inf ? std::numeric_limits<R>::infinity()
                 : scale * std::sqrt(ssq);
  }
};

template <class T>
Result<Tensor> elementwise_norm_t(const Tensor& a, MatrixNorm kind, const PoolPtr& pool) {
  const int64_t m = a.dim(a.rank() - 2), n = a.dim(a.rank() - 1);
  const Batch batch(detail::batch_dims(a));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(detail::real_dtype(a.dtype()), batch.shape, pool));
  auto* o = static_cast<Real<T>*>(out.storage()->data());
  for (int64_t it = 0; it < batch.count; ++it) {
    const Mat<T> x = item_mat<T>(a, batch, it);
    Real<T> result = 0;
    if (kind == MatrixNorm::kFrobenius) {
      SumOfSquares<Real<T>> sum;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
          const T v = x(i, j);
          if constexpr (detail::kIsComplex<T>) {
            sum.add(std::abs(v.real()));
            sum.add(std::abs(v.imag()));
          } else {
            sum.add(std::abs(v));
          }
        }
      result = sum.norm();
    } else {
      // The largest (kOne, kInf) or smallest (kMinColumnSum, kMinRowSum) column or row sum
      // of |a_ij|; a NaN sum wins (std::max dropped it).
      const bool cols = kind == MatrixNorm::kOne || kind == MatrixNorm::kMinColumnSum;
      const bool least = kind == MatrixNorm::kMinColumnSum || kind == MatrixNorm::kMinRowSum;
      const int64_t lines = cols ? n : m;
      for (int64_t l = 0; l < lines && !std::isnan(result); ++l) {
        Real<T> s = 0;
        for (int64_t q = 0; q < (cols ? m : n); ++q) s += std::abs(cols ? x(q, l) : x(l, q));
        if (std::isnan(s) || l == 0 || (least ? s < result : s > result)) result = s;
      }
    }
    o[it] = result;
  }
  return out;
}

template <class T>
Result<Tensor> vector_norm_t(const Tensor& x, double ord, Dims axes, bool keep_dims, const PoolPtr& pool) {
  using R = Real<T>;
  const int64_t r = x.rank();
  SmallVector<bool, 8> reduced(static_cast<size_t>(r), axes.size() == 0);
  for (int64_t ax : axes) {
    const int64_t a = ax < 0 ? ax + r : ax;
    if (a < 0 || a >= r) {
      return usage_error(ErrorCode::kOutOfRange, "vector_norm",
                         "axis " + std::to_string(ax) + " out of range for rank " + std::to_string(r));
    }
    if (reduced[static_cast<size_t>(a)]) {
      return usage_error(ErrorCode::kInvalidArgument, "vector_norm", "axis " + std::to_string(ax) + " repeated");
    }
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape out_shape;
  for (int64_t i = 0; i < r; ++i) {
    if (!reduced[static_cast<size_t>(i)]) {
      out_shape.push_back(x.dim(i));
    } else if (keep_dims) {
      out_shape.push_back(1);
    }
  }
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(detail::real_dtype(x.dtype()), out_shape, pool));
  const Strides out_strides = col_major_strides(out_shape);
  const int64_t count = element_count(out_shape);
  auto* o = static_cast<R*>(out.storage()->data());
  // Accumulators: SumOfSquares for p = 2, plain sums for other p, extremes for +-inf.
  const bool inf = std::isinf(ord), two = ord == 2.0, zero = ord == 0.0, one = ord == 1.0;
  std::vector<R> acc(two ? 0 : static_cast<size_t>(count), R(0));
  std::vector<SumOfSquares<R>> sums(two ? static_cast<size_t>(count) : 0);
  if (inf && ord < 0) std::fill(acc.begin(), acc.end(), std::numeric_limits<R>::infinity());
  const T* base = static_cast<const T*>(x.storage()->data());
  const int64_t total = x.numel();
  SmallVector<int64_t, 8> idx(static_cast<size_t>(r), 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t src = x.offset(), dst = 0;
    for (int64_t i = 0, k = 0; i < r; ++i) {
      src += idx[static_cast<size_t>(i)] * x.strides()[static_cast<size_t>(i)];
      if (!reduced[static_cast<size_t>(i)]) {
        dst += idx[static_cast<size_t>(i)] * out_strides[static_cast<size_t>(k)];
        ++k;
      } else if (keep_dims) {
        ++k;
      }
    }
    const R v = std::abs(base[src]);
    R* a = two ? nullptr : &acc[static_cast<size_t>(dst)];
    if (two) {
      sums[static_cast<size_t>(dst)].add(v);
    } else if (!zero && (std::isnan(v) || std::isnan(*a))) {
      *a = v + *a;  // NaN propagates, as numpy's norms do (max and min would drop it)
    } else if (inf) {
      *a = ord > 0 ? std::max(*a, v) : std::min(*a, v);
    } else if (zero) {
      *a += v != 0 ? R(1) : R(0);
    } else if (one) {
      *a += v;
    } else {
      *a += std::pow(v, static_cast<R>(ord));
    }
    for (int64_t i = 0; i < r; ++i) {
      if (++idx[static_cast<size_t>(i)] < x.dim(i)) break;
      idx[static_cast<size_t>(i)] = 0;
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    if (two) {
      o[i] = sums[static_cast<size_t>(i)].norm();
      continue;
    }
    const R a = acc[static_cast<size_t>(i)];
    if (inf || zero || one) {
      o[i] = a;
    } else {
      o[i] = std::pow(a, static_cast<R>(1.0 / ord));
    }
  }
  if (total == 0 && inf && ord < 0) {
    for (int64_t i = 0; i < count; ++i) o[i] = std::numeric_limits<R>::infinity();
  }
  return out;
}

}  // namespace

Result<Tensor> solve(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b, const LinalgOptions& options,
                     const PoolPtr& pool) {
  TENFERRO_TRY(SolvePlan p, plan_solve(a, b, "solve"));
  const int64_t n = a.dim(a.rank() - 1);
  const Shape batch(detail::batch_dims(p.a).span());
  return detail::dispatch(a.dtype(), "solve", [&](auto t) -> Result<Tensor> {
    TENFERRO_TRY(Tensor out, detail::alloc_items(a.dtype(), batch, n, p.k, pool));
    TENFERRO_TRY_VOID(solve_items<decltype(t)>(ctx, Op::kSolve, "solve", p.a, p.b, Rhs::kGather, out, p.k, options, pool));
    if (p.vector) return out.reshape(p.out_shape);
    return out;
  });
}

Result<void> solve_into(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
                        const LinalgOptions& options, const PoolPtr& pool) {
  TENFERRO_TRY(SolvePlan p, plan_solve(a, b, "solve_into"));
  TENFERRO_TRY_VOID(detail::check_destination(out, a.dtype(), p.out_shape, "solve_into"));
  Tensor dst = out;
  if (p.vector) {
    TENFERRO_TRY(dst, as_column(out));
  }
  return detail::dispatch(a.dtype(), "solve_into", [&](auto t) {
    return solve_items<decltype(t)>(ctx, Op::kSolve, "solve_into", p.a, p.b, Rhs::kGather, dst, p.k, options, pool);
  });
}

Result<Tensor> lu_solve(const CpuExecutionContext& ctx, const LuFactorResult& factor, const Tensor& b,
                        const LinalgOptions& options, const PoolPtr& pool) {
  const char* op = "lu_solve";
  TENFERRO_TRY_VOID(detail::check_matrix(factor.lu, op, true));
  if (!factor.pivots.defined() || factor.pivots.dtype() != DType::kI64 ||
      factor.pivots.rank() != factor.lu.rank() - 1) {
    return usage_error(ErrorCode::kInvalidArgument, op, "pivots must be lu_factor's i64 [.., n] output");
  }
  TENFERRO_TRY(SolvePlan p, plan_solve(factor.lu, b, op));
  const int64_t n = factor.lu.dim(factor.lu.rank() - 1);
  const Shape batch(detail::batch_dims(p.a).span());
  // The pivots broadcast with the factor.
  TENFERRO_TRY(Tensor piv, factor.pivots.broadcast_to(detail::with_vector(batch, n)));
  const Batch bt(batch);
  for (int64_t it = 0; it < bt.count; ++it) {
    const Mat<int64_t> pv = item_vec<int64_t>(piv, bt, it);
    for (int64_t i = 0; i < n; ++i) {
      if (pv(i, 0) < i || pv(i, 0) >= n) {
        return detail::item_error(ErrorCode::kInvalidArgument, op, bt, it,
                                  "pivot " + std::to_string(i) + " is " + std::to_string(pv(i, 0)) + " (must be in [" +
                                      std::to_string(i) + ", " + std::to_string(n) + "))");
      }
    }
  }
  return detail::dispatch(p.a.dtype(), op, [&](auto t) -> Result<Tensor> {
    using T = decltype(t);
    TENFERRO_TRY(Route route, detail::route_for(ctx, Op::kLuSolve, p.a.dtype(), n, n, bt.count, false, options));
    TENFERRO_TRY(Tensor out, detail::alloc_items(p.a.dtype(), batch, n, p.k, pool));
    if (bt.count > 0 && n > 0 && p.k > 0) {
      // Exactly zero diagonals of U: typed error before any solve.
      for (int64_t it = 0; it < bt.count; ++it) {
        const Mat<T> f = item_mat<T>(p.a, bt, it);
        for (int64_t i = 0; i < n; ++i) {
          if (f(i, i) == T(0)) {
            return detail::item_error(ErrorCode::kSingular, op, bt, it,
                                      "U[" + std::to_string(i) + ", " + std::to_string(i) + "] is exactly zero");
          }
        }
      }
      const int64_t per_lane = (n * n * int64_t(sizeof(T)) + 63) / 64 * 64 + (n * int64_t(sizeof(lint)) + 63) / 64 * 64;
      TENFERRO_TRY(Scratch scratch, Scratch::make(route.lanes * per_lane, pool, options.workspace));
      detail::run_items(ctx, route, bt.count, [&](int64_t bgn, int64_t end, int lane) {
        std::byte* base = scratch.data() + lane * per_lane;
        T* acopy = reinterpret_cast<T*>(base);
        lint* ipiv = reinterpret_cast<lint*>(base + (n * n * int64_t(sizeof(T)) + 63) / 64 * 64);
        for (int64_t it = bgn; it < end; ++it) {
          const Mat<T> x = item_mat<T>(out, bt, it);
          gather(x.p, n, item_mat<T>(p.b, bt, it), n, p.k);
          gather(acopy, n, item_mat<T>(p.a, bt, it), n, n);
          const Mat<int64_t> pv = item_vec<int64_t>(piv, bt, it);
          for (int64_t i = 0; i < n; ++i) ipiv[i] = static_cast<lint>(pv(i, 0) + 1);
          Lapack<T>::getrs('N', static_cast<lint>(n), static_cast<lint>(p.k), acopy, static_cast<lint>(n), ipiv, x.p,
                           static_cast<lint>(n));
        }
      });
    }
    if (p.vector) return out.reshape(p.out_shape);
    return out;
  });
}

Result<Tensor> triangular_solve(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b,
                                const TriangularOptions& options, const PoolPtr& pool) {
  const char* op = "triangular_solve";
  TENFERRO_TRY_VOID(detail::check_matrix(a, op, true));
  TENFERRO_TRY_VOID(detail::check_matrix(b, op, false));
  TENFERRO_TRY_VOID(detail::check_same_dtype(a, b, op));
  const int64_t na = a.dim(a.rank() - 1), m = b.dim(b.rank() - 2), k = b.dim(b.rank() - 1);
  if ((options.left ? m : k) != na) {
    return usage_error(ErrorCode::kShapeMismatch, op,
                       std::string(options.left ? "left" : "right") + " solve with A " + format_dims(a.shape()) +
                           " and B " + format_dims(b.shape()));
  }
  Tensor va = a, vb = b;
  TENFERRO_TRY_VOID(detail::broadcast_batches(va, vb, op));
  return detail::dispatch(a.dtype(), op, [&](auto t) { return triangular_t<decltype(t)>(ctx, va, vb, options, pool); });
}

Result<Tensor> inv(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                   const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "inv", true));
  const int64_t n = a.dim(a.rank() - 1);
  return detail::dispatch(a.dtype(), "inv", [&](auto t) -> Result<Tensor> {
    TENFERRO_TRY(Tensor out, detail::alloc_items(a.dtype(), detail::batch_dims(a), n, n, pool));
    TENFERRO_TRY_VOID(solve_items<decltype(t)>(ctx, Op::kInv, "inv", a, a, Rhs::kIdentity, out, n, options, pool));
    return out;
  });
}

Result<void> inv_into(const CpuExecutionContext& ctx, const Tensor& a, Tensor& out, const LinalgOptions& options,
                      const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "inv_into", true));
  TENFERRO_TRY_VOID(detail::check_destination(out, a.dtype(), a.shape(), "inv_into"));
  const int64_t n = a.dim(a.rank() - 1);
  return detail::dispatch(a.dtype(), "inv_into", [&](auto t) {
    return solve_items<decltype(t)>(ctx, Op::kInv, "inv_into", a, a, Rhs::kIdentity, out, n, options, pool);
  });
}

Result<Tensor> det(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "det", true));
  // det(A) = det(2^e A) 2^(-n e) (Note [Safe-range scaling]): subnormal entries made the
  // LU's pivots overflow their reciprocals.
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool));
  Tensor out;
  const Result<void> r = detail::dispatch(a.dtype(), "det", [&](auto t) -> Result<void> {
    TENFERRO_TRY_VOID(slogdet_t<decltype(t)>(ctx, range.input(a), false, options, pool, &out));
    return ok();
  });
  if (!r.has_value()) return r.error();
  detail::unscale_items(out, range, 0, a.dim(a.rank() - 1));
  return out;
}

Result<SlogdetResult> slogdet(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options,
                              const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "slogdet", true));
  // log|det A| = log|det(2^e A)| - n e log 2 (Note [Safe-range scaling]).
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool));
  TENFERRO_TRY(SlogdetResult res, detail::dispatch(a.dtype(), "slogdet", [&](auto t) {
                 return slogdet_t<decltype(t)>(ctx, range.input(a), true, options, pool, nullptr);
               }));
  if (range.scaled.defined()) {
    const int64_t n = a.dim(a.rank() - 1);
    TENFERRO_TRY_VOID(detail::dispatch(res.logabsdet.dtype(), "slogdet", [&](auto t) -> Result<void> {
      using R = decltype(t);
      if constexpr (!detail::kIsComplex<R>) {                         // logabsdet is real
        auto* la = static_cast<R*>(res.logabsdet.storage()->data());  // compact, item order
        for (size_t it = 0; it < range.exponent.size(); ++it) {
          const double shift = static_cast<double>(n) * range.exponent[it] * std::log(2.0);
          la[it] = static_cast<R>(static_cast<double>(la[it]) - shift);
        }
      }
      return ok();
    }));
  }
  return res;
}

Result<Tensor> pinv(const CpuExecutionContext& ctx, const Tensor& a, std::optional<double> rtol,
                    const LinalgOptions& options, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "pinv", false));
  if (rtol && !(*rtol >= 0)) {
    return usage_error(ErrorCode::kInvalidArgument, "pinv", "rtol must be >= 0, got " + std::to_string(*rtol));
  }
  // pinv(A) = 2^e pinv(2^e A) (Note [Safe-range scaling]): subnormal singular values made
  // their reciprocals overflow and the product NaN. The same read checks finiteness (Note
  // [Non-finite input]).
  TENFERRO_TRY(const detail::SafeRange range, detail::scale_to_safe_range(a, detail::Part::kAll, pool, "pinv"));
  TENFERRO_TRY(Tensor out, detail::dispatch(a.dtype(), "pinv", [&](auto t) {
                 return pinv_t<decltype(t)>(ctx, range.input(a), rtol, options, pool);
               }));
  detail::unscale_items(out, range, 2, -1);
  return out;
}

Result<LstsqResult> lstsq(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b, std::optional<double> rcond,
                          const LinalgOptions& options, const PoolPtr& pool) {
  const char* op = "lstsq";
  TENFERRO_TRY_VOID(detail::check_matrix(a, op, false));
  if (!b.defined() || b.rank() == 0) return usage_error(ErrorCode::kInvalidArgument, op, "B must be a vector or matrix");
  TENFERRO_TRY_VOID(detail::check_same_dtype(a, b, op));
  const bool vector = b.rank() == a.rank() - 1;
  Tensor bm = b;
  if (vector) {
    TENFERRO_TRY(bm, as_column(b));
  }
  if (bm.rank() != a.rank() || !std::equal(a.shape().begin(), a.shape().end() - 1, bm.shape().begin())) {
    return usage_error(ErrorCode::kShapeMismatch, op,
                       "A " + format_dims(a.shape()) + " needs B [.., m, k] or [.., m] with the same batch and m, got " +
                           format_dims(b.shape()));
  }
  TENFERRO_TRY_VOID(detail::check_finite(a, op, "A"));  // Note [Non-finite input]
  TENFERRO_TRY_VOID(detail::check_finite(bm, op, "B"));
  return detail::dispatch(a.dtype(), op,
                          [&](auto t) { return lstsq_t<decltype(t)>(ctx, a, bm, vector, rcond, options, pool); });
}

namespace {
constexpr std::pair<MatrixNorm, std::string_view> kMatrixNormNames[] = {
    {MatrixNorm::kFrobenius, "fro"},   {MatrixNorm::kNuclear, "nuc"},    {MatrixNorm::kSpectral, "2"},
    {MatrixNorm::kOne, "1"},           {MatrixNorm::kInf, "inf"},        {MatrixNorm::kMinSingular, "-2"},
    {MatrixNorm::kMinColumnSum, "-1"}, {MatrixNorm::kMinRowSum, "-inf"},
};
}  // namespace

std::string_view matrix_norm_name(MatrixNorm kind) noexcept {
  for (const auto& [k, name] : kMatrixNormNames) {
    if (k == kind) return name;
  }
  return "fro";
}

std::optional<MatrixNorm> parse_matrix_norm(std::string_view name) noexcept {
  for (const auto& [k, n] : kMatrixNormNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

Result<Tensor> matrix_norm(const CpuExecutionContext& ctx, const Tensor& a, MatrixNorm kind,
                           const LinalgOptions& options, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(detail::check_matrix(a, "matrix_norm", false));
  if (kind == MatrixNorm::kNuclear || kind == MatrixNorm::kSpectral || kind == MatrixNorm::kMinSingular) {
    SvdOptions so;
    so.mode = SvdMode::kValuesOnly;
    so.linalg = options;
    TENFERRO_TRY(SvdResult sv, svd(ctx, a, so, pool));
    const int64_t k = std::min(a.dim(a.rank() - 2), a.dim(a.rank() - 1));
    const Batch batch(detail::batch_dims(a));
    return detail::dispatch(a.dtype(), "matrix_norm", [&](auto t) -> Result<Tensor> {
      using R = Real<decltype(t)>;
      TENFERRO_TRY(Tensor out, Tensor::uninitialized(detail::real_dtype(a.dtype()), batch.shape, pool));
      auto* o = static_cast<R*>(out.storage()->data());
      for (int64_t it = 0; it < batch.count; ++it) {
        const Mat<R> s = item_vec<R>(sv.s, batch, it);
        R acc = 0;
        if (kind == MatrixNorm::kSpectral) {
          acc = k > 0 ? s(0, 0) : R(0);
        } else if (kind == MatrixNorm::kMinSingular) {
          acc = k > 0 ? s(k - 1, 0) : R(0);
        } else {
          for (int64_t i = 0; i < k; ++i) acc += s(i, 0);
        }
        o[it] = acc;
      }
      return out;
    });
  }
  return detail::dispatch(a.dtype(), "matrix_norm",
                          [&](auto t) { return elementwise_norm_t<decltype(t)>(a, kind, pool); });
}

Result<Tensor> vector_norm(const CpuExecutionContext& /*ctx*/, const Tensor& x, double ord, Dims axes, bool keep_dims,
                           const PoolPtr& pool) {
  if (!x.defined()) return usage_error(ErrorCode::kInvalidArgument, "vector_norm", "undefined tensor");
  if (std::isnan(ord)) return usage_error(ErrorCode::kInvalidArgument, "vector_norm", "ord is NaN");
  return detail::dispatch(x.dtype(), "vector_norm",
                          [&](auto t) { return vector_norm_t<decltype(t)>(x, ord, axes, keep_dims, pool); });
}

}  // namespace tenferro::linalg
