#pragma once
// Private: typed LAPACK (through LAPACKE's column-major _work entry points, which call
// the Fortran routines directly and allocate nothing) and the cblas triangular solve,
// behind one interface per scalar type. Real types ignore the complex-only `rwork`
// arguments, so callers write one generic sequence per operation.

#include <complex>
#include <cstdint>

// LAPACK's headers take the complex types from these macros (lapack.h ignores
// LAPACK_COMPLEX_CPP); std::complex has the Fortran layout.
#define LAPACK_COMPLEX_CUSTOM
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <cblas.h>

namespace tenferro::linalg::detail {

using lint = lapack_int;

template <class T>
struct RealOf {
  using type = T;
};
template <class R>
struct RealOf<std::complex<R>> {
  using type = R;
};
template <class T>
using Real = typename RealOf<T>::type;
template <class T>
inline constexpr bool kIsComplex = !std::is_same_v<T, Real<T>>;

template <class T>
struct Lapack;

// Note [LAPACK workspace]: every routine is called with lwork = -1 to learn the optimal
// workspace (once per call, or once per shape with a held Workspace: Note [Held
// workspace] in common.h), then once per item with the workspace carved per lane. Real
// routines have no rwork; the generic code passes null for it.

#define TENFERRO_LAPACK_REAL(T, p)                                                                                  \
  template <>                                                                                                       \
  struct Lapack<T> {                                                                                                \
    static lint gesdd(char jobz, lint m, lint n, T* a, lint lda, T* s, T* u, lint ldu, T* vt, lint ldvt, T* work,    \
                      lint lwork, T* /*rwork*/, lint* iwork) {                                                      \
      return LAPACKE_##p##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork); \
    }                                                                                                               \
    static lint gebrd(lint m, lint n, T* a, lint lda, T* d, T* e, T* tauq, T* taup, T* work, lint lwork) {          \
      return LAPACKE_##p##gebrd_work(LAPACK_COL_MAJOR, m, n, a, lda, d, e, tauq, taup, work, lwork);                 \
    }                                                                                                               \
    static lint hetrd(char uplo, lint n, T* a, lint lda, T* d, T* e, T* tau, T* work, lint lwork) {                  \
      return LAPACKE_##p##sytrd_work(LAPACK_COL_MAJOR, uplo, n, a, lda, d, e, tau, work, lwork);                     \
    }                                                                                                               \
    static lint larft(lint n, lint k, const T* v, lint ldv, const T* tau, T* t, lint ldt) {                         \
      return LAPACKE_##p##larft_work(LAPACK_COL_MAJOR, 'F', 'C', n, k, v, ldv, tau, t, ldt);                        \
    }                                                                                                               \
    /* the real bidiagonal / tridiagonal solvers (compq = compz = 'I'), used by every dtype */                      \
    static lint bdsdc(char uplo, lint n, T* d, T* e, T* u, lint ldu, T* vt, lint ldvt, T* work, lint* iwork) {       \
      return LAPACKE_##p##bdsdc_work(LAPACK_COL_MAJOR, uplo, 'I', n, d, e, u, ldu, vt, ldvt, nullptr, nullptr, work, \
                                     iwork);                                                                        \
    }                                                                                                               \
    static lint stedc(lint n, T* d, T* e, T* z, lint ldz, T* work, lint lwork, lint* iwork, lint liwork) {          \
      return LAPACKE_##p##stedc_work(LAPACK_COL_MAJOR, 'I', n, d, e, z, ldz, work, lwork, iwork, liwork);           \
    }                                                                                                               \
    static lint gesvd(char ju, char jv, lint m, lint n, T* a, lint lda, T* s, T* u, lint ldu, T* vt, lint ldvt,      \
                      T* work, lint lwork, T* /*rwork*/) {                                                          \
      return LAPACKE_##p##gesvd_work(LAPACK_COL_MAJOR, ju, jv, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork);      \
    }                                                                                                               \
    static lint geqrf(lint m, lint n, T* a, lint lda, T* tau, T* work, lint lwork) {                                \
      return LAPACKE_##p##geqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);                             \
    }                                                                                                               \
    static lint ungqr(lint m, lint n, lint k, T* a, lint lda, const T* tau, T* work, lint lwork) {                  \
      return LAPACKE_##p##orgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);                          \
    }                                                                                                               \
    static lint geqp3(lint m, lint n, T* a, lint lda, lint* jpvt, T* tau, T* work, lint lwork, T* /*rwork*/) {      \
      return LAPACKE_##p##geqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, work, lwork);                       \
    }                                                                                                               \
    static lint heevd(char jobz, char uplo, lint n, T* a, lint lda, T* w, T* work, lint lwork, T* /*rwork*/,        \
                      lint /*lrwork*/, lint* iwork, lint liwork) {                                                  \
      return LAPACKE_##p##syevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork);       \
    }                                                                                                               \
    static lint potrf(char uplo, lint n, T* a, lint lda) {                                                          \
      return LAPACKE_##p##potrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);                                            \
    }                                                                                                               \
    static lint getrf(lint m, lint n, T* a, lint lda, lint* ipiv) {                                                 \
      return LAPACKE_##p##getrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);                                         \
    }                                                                                                               \
    static lint getrs(char trans, lint n, lint nrhs, const T* a, lint lda, const lint* ipiv, T* b, lint ldb) {      \
      return LAPACKE_##p##getrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb);                       \
    }                                                                                                               \
    static lint gelsd(lint m, lint n, lint nrhs, T* a, lint lda, T* b, lint ldb, T* s, T rcond, lint* rank,         \
                      T* work, lint lwork, T* /*rwork*/, lint* iwork) {                                             \
      return LAPACKE_##p##gelsd_work(LAPACK_COL_MAJOR, m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork,     \
                                     iwork);                                                                        \
    }                                                                                                               \
    static lint geev(char jl, char jr, lint n, T* a, lint lda, T* wr, T* wi, T* vl, lint ldvl, T* vr, lint ldvr,     \
                     T* work, lint lwork) {                                                                         \
      return LAPACKE_##p##geev_work(LAPACK_COL_MAJOR, jl, jr, n, a, lda, wr, wi, vl, ldvl, vr, ldvr, work, lwork);  \
    }                                                                                                               \
    static void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, lint m, lint n,      \
                     const T* a, lint lda, T* b, lint ldb) {                                                        \
      cblas_##p##trsm(CblasColMajor, side, uplo, trans, diag, m, n, T(1), a, lda, b, ldb);                          \
    }                                                                                                               \
    static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, lint m, lint n, lint k, const T* a, lint lda,        \
                     const T* b, lint ldb, T* c, lint ldc) {                                                        \
      cblas_##p##gemm(CblasColMajor, ta, tb, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc);                          \
    }                                                                                                               \
  };

#define TENFERRO_LAPACK_COMPLEX(T, R, p, rp)                                                                         \
  template <>                                                                                                       \
  struct Lapack<T> {                                                                                                \
    static lint gesdd(char jobz, lint m, lint n, T* a, lint lda, R* s, T* u, lint ldu, T* vt, lint ldvt, T* work,    \
                      lint lwork, R* rwork, lint* iwork) {                                                          \
      return LAPACKE_##p##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork,  \
                                     iwork);                                                                        \
    }                                                                                                               \
    static lint gebrd(lint m, lint n, T* a, lint lda, R* d, R* e, T* tauq, T* taup, T* work, lint lwork) {          \
      return LAPACKE_##p##gebrd_work(LAPACK_COL_MAJOR, m, n, a, lda, d, e, tauq, taup, work, lwork);                 \
    }                                                                                                               \
    static lint hetrd(char uplo, lint n, T* a, lint lda, R* d, R* e, T* tau, T* work, lint lwork) {                  \
      return LAPACKE_##p##hetrd_work(LAPACK_COL_MAJOR, uplo, n, a, lda, d, e, tau, work, lwork);                     \
    }                                                                                                               \
    static lint larft(lint n, lint k, const T* v, lint ldv, const T* tau, T* t, lint ldt) {                         \
      return LAPACKE_##p##larft_work(LAPACK_COL_MAJOR, 'F', 'C', n, k, v, ldv, tau, t, ldt);                        \
    }                                                                                                               \
    static lint gesvd(char ju, char jv, lint m, lint n, T* a, lint lda, R* s, T* u, lint ldu, T* vt, lint ldvt,      \
                      T* work, lint lwork, R* rwork) {                                                              \
      return LAPACKE_##p##gesvd_work(LAPACK_COL_MAJOR, ju, jv, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork,      \
                                     rwork);                                                                        \
    }                                                                                                               \
    static lint geqrf(lint m, lint n, T* a, lint lda, T* tau, T* work, lint lwork) {                                \
      return LAPACKE_##p##geqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);                             \
    }                                                                                                               \
    static lint ungqr(lint m, lint n, lint k, T* a, lint lda, const T* tau, T* work, lint lwork) {                  \
      return LAPACKE_##p##ungqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);                          \
    }                                                                                                               \
    static lint geqp3(lint m, lint n, T* a, lint lda, lint* jpvt, T* tau, T* work, lint lwork, R* rwork) {          \
      return LAPACKE_##p##geqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, work, lwork, rwork);                \
    }                                                                                                               \
    static lint heevd(char jobz, char uplo, lint n, T* a, lint lda, R* w, T* work, lint lwork, R* rwork,            \
                      lint lrwork, lint* iwork, lint liwork) {                                                      \
      return LAPACKE_##p##heevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, \
                                     liwork);                                                                       \
    }                                                                                                               \
    static lint potrf(char uplo, lint n, T* a, lint lda) {                                                          \
      return LAPACKE_##p##potrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);                                            \
    }                                                                                                               \
    static lint getrf(lint m, lint n, T* a, lint lda, lint* ipiv) {                                                 \
      return LAPACKE_##p##getrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);                                         \
    }                                                                                                               \
    static lint getrs(char trans, lint n, lint nrhs, const T* a, lint lda, const lint* ipiv, T* b, lint ldb) {      \
      return LAPACKE_##p##getrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb);                       \
    }                                                                                                               \
    static lint gelsd(lint m, lint n, lint nrhs, T* a, lint lda, T* b, lint ldb, R* s, R rcond, lint* rank,         \
                      T* work, lint lwork, R* rwork, lint* iwork) {                                                 \
      return LAPACKE_##p##gelsd_work(LAPACK_COL_MAJOR, m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork,     \
                                     rwork, iwork);                                                                 \
    }                                                                                                               \
    static lint geev(char jl, char jr, lint n, T* a, lint lda, T* w, T* vl, lint ldvl, T* vr, lint ldvr, T* work,   \
                     lint lwork, R* rwork) {                                                                        \
      return LAPACKE_##p##geev_work(LAPACK_COL_MAJOR, jl, jr, n, a, lda, w, vl, ldvl, vr, ldvr, work, lwork, rwork); \
    }                                                                                                               \
    static void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, lint m, lint n,      \
                     const T* a, lint lda, T* b, lint ldb) {                                                        \
      const T one(1);                                                                                               \
      cblas_##p##trsm(CblasColMajor, side, uplo, trans, diag, m, n, &one, a, lda, b, ldb);                          \
    }                                                                                                               \
    static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, lint m, lint n, lint k, const T* a, lint lda,        \
                     const T* b, lint ldb, T* c, lint ldc) {                                                        \
      const T one(1), zero(0);                                                                                      \
      cblas_##p##gemm(CblasColMajor, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);                         \
    }                                                                                                               \
  };

TENFERRO_LAPACK_REAL(float, s)
TENFERRO_LAPACK_REAL(double, d)
TENFERRO_LAPACK_COMPLEX(std::complex<float>, float, c, s)
TENFERRO_LAPACK_COMPLEX(std::complex<double>, double, z, d)

#undef TENFERRO_LAPACK_REAL
#undef TENFERRO_LAPACK_COMPLEX

/// The optimal lwork a query returned in work[0] (rounded up; at least 1).
template <class T>
lint query_size(const T& w) {
  double v;
  if constexpr (kIsComplex<T>) {
    v = static_cast<double>(w.real());
  } else {
    v = static_cast<double>(w);
  }
  const auto n = static_cast<lint>(v + 0.5);
  return n < 1 ? 1 : n;
}

}  // namespace tenferro::linalg::detail
