#include "gemm.h"

#include "tenferro/cpu/openblas.h"

#include <dlfcn.h>
#include <algorithm>

#include <complex>
#include <cstring>
#include <mutex>

// OpenBLAS's cblas and BLIS's typed API are both included; BLIS is used only through
// bli_* symbols, OpenBLAS only through cblas_* (BLIS also exports cblas_* and BLAS
// symbols; linking OpenBLAS first makes those resolve to OpenBLAS, checked by test:
// Note [BLAS symbol order] in caps.cc).
#include <cblas.h>

#include <blis.h>

namespace tenferro::cpu::detail {

// Note [OpenBLAS threads]: OpenBLAS controls its thread count only globally
// (openblas_set_num_threads). Every OpenBLAS call of the library runs inside an
// OpenBlasThreads scope: the first scope to begin saves the process's setting, each
// scope sets the count it needs when it differs, and the last scope to end restores the
// saved setting, so nothing outside tenferro (numpy in a Python process, the
// application's own BLAS calls) ever sees the count tenferro chose once no tenferro
// OpenBLAS call is running. While calls run, concurrent callers with different budgets
// would race on that global, so the engine runs OpenBLAS with several threads only in
// kInner mode, never from several outer workers at once (capability "global thread
// control"); outer workers that all run it on one thread (einsum lanes, Note [Einsum
// lanes]) agree on the setting, and OpenBLAS runs a one-thread call on the caller's
// thread. dot_general's automatic routes only make one-thread calls (Note [OpenBLAS
// pieces] in dot_general.cc), so OpenBLAS's own threads run only for products forced to
// provider openblas. The bookkeeping is one short lock per call, never held across it.
// Why not Debian's serial OpenBLAS: it cannot be loaded next to the threaded build that
// numpy and LAPACKE use in the same process (one set of symbols), and a process-wide
// switch to it would leave products forced to provider openblas without threads.

namespace {

struct ThreadState {
  std::mutex mu;      // serializes the global thread setting and the counters below
  int active = 0;     // scopes alive in the process
  int saved = 0;      // the process's own setting, saved by the first scope
};

ThreadState& thread_state() {
  static ThreadState s;  // mirrors OpenBLAS's own process-global setting
  return s;
}

}  // namespace

}  // namespace tenferro::cpu::detail

namespace tenferro::cpu {

OpenBlasThreads::OpenBlasThreads(int threads) {
  detail::ThreadState& st = detail::thread_state();
  std::lock_guard lock(st.mu);
  if (st.active++ == 0) st.saved = openblas_get_num_threads();
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

OpenBlasThreads::~OpenBlasThreads() {
  detail::ThreadState& st = detail::thread_state();
  std::lock_guard lock(st.mu);
  if (--st.active == 0 && openblas_get_num_threads() != st.saved) openblas_set_num_threads(st.saved);
}

void set_openblas_threads(int threads) {
  detail::ThreadState& st = detail::thread_state();
  std::lock_guard lock(st.mu);
  if (st.active > 0) st.saved = threads;  // the setting to come back to
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

}  // namespace tenferro::cpu

namespace tenferro::cpu::detail {

bool blas_form(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool transposed, int64_t* ld) {
  if (!transposed) {
    // element (i, p) at i + p * ld
    if ((rows > 1 && rs != 1) || (cols > 1 && cs < std::max<int64_t>(1, rows))) return false;
    *ld = cols > 1 ? cs : std::max<int64_t>(1, rows);
  } else {
    // element (i, p) at i * ld + p
    if ((cols > 1 && cs != 1) || (rows > 1 && rs < std::max<int64_t>(1, cols))) return false;
    *ld = rows > 1 ? rs : std::max<int64_t>(1, cols);
  }
  return true;
}

namespace {

// cblas form: OpenBLAS's extension CblasConjNoTrans covers conjugation without transpose.
bool as_cblas(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool conj, CBLAS_TRANSPOSE* trans, int64_t* ld) {
  if (blas_form(rows, cols, rs, cs, false, ld)) {
    *trans = conj ? CblasConjNoTrans : CblasNoTrans;
    return true;
  }
  if (blas_form(rows, cols, rs, cs, true, ld)) {
    *trans = conj ? CblasConjTrans : CblasTrans;
    return true;
  }
  return false;
}

// Fortran BLAS form 'N', 'T' or 'C': conjugation exists only with the transpose.
bool as_fortran(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool conj, char* trans, int64_t* ld) {
  if (!conj && blas_form(rows, cols, rs, cs, false, ld)) {
    *trans = 'N';
    return true;
  }
  if (blas_form(rows, cols, rs, cs, true, ld)) {
    *trans = conj ? 'C' : 'T';
    return true;
  }
  return false;
}

}  // namespace

template <class T>
bool openblas_accepts(const GemmArgs<T>& g) {
  int64_t ld = 0;
  const bool c_ok = blas_form(g.m, g.n, g.rsc, g.csc, false, &ld) || blas_form(g.m, g.n, g.rsc, g.csc, true, &ld);
  const bool a_ok = blas_form(g.m, g.k, g.rsa, g.csa, false, &ld) || blas_form(g.m, g.k, g.rsa, g.csa, true, &ld);
  const bool b_ok = blas_form(g.k, g.n, g.rsb, g.csb, false, &ld) || blas_form(g.k, g.n, g.rsb, g.csb, true, &ld);
  return c_ok && a_ok && b_ok;
}

template <class T>
bool fortran_batch_accepts(const GemmArgs<T>& g) {
  constexpr bool kComplex = tenferro::detail::ComplexScalar<T>;
  char t = 0;
  int64_t ld = 0;
  return blas_form(g.m, g.n, g.rsc, g.csc, false, &ld) &&
         as_fortran(g.m, g.k, g.rsa, g.csa, kComplex && g.conj_a, &t, &ld) &&
         as_fortran(g.k, g.n, g.rsb, g.csb, kComplex && g.conj_b, &t, &ld);
}

template <class T>
bool gemm_batch_fortran(const GemmArgs<T>& g, int64_t count, const T* const* a, const T* const* b, T* const* c) {
  constexpr bool kComplex = tenferro::detail::ComplexScalar<T>;
  if (!fortran_batch_accepts(g)) return false;
  char ta = 0, tb = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  as_fortran(g.m, g.k, g.rsa, g.csa, kComplex && g.conj_a, &ta, &lda);
  as_fortran(g.k, g.n, g.rsb, g.csb, kComplex && g.conj_b, &tb, &ldb);
  blas_form(g.m, g.n, g.rsc, g.csc, false, &ldc);
  const auto m = static_cast<f77_int>(g.m), n = static_cast<f77_int>(g.n), k = static_cast<f77_int>(g.k);
  const auto la = static_cast<f77_int>(lda), lb = static_cast<f77_int>(ldb), lc = static_cast<f77_int>(ldc);
  const auto groups = static_cast<f77_int>(1), size = static_cast<f77_int>(count);
  T alpha = g.alpha, beta = g.beta;
  // BLIS declares the pointer arrays without the inner const; it only reads a and b.
  auto in = [](const T* const* p) { return const_cast<const T**>(p); };
  auto* pc = const_cast<T**>(c);
  if constexpr (std::is_same_v<T, float>) {
    sgemm_batch_(&ta, &tb, &m, &n, &k, &alpha, in(a), &la, in(b), &lb, &beta, pc, &lc, &groups, &size);
  } else if constexpr (std::is_same_v<T, double>) {
    dgemm_batch_(&ta, &tb, &m, &n, &k, &alpha, in(a), &la, in(b), &lb, &beta, pc, &lc, &groups, &size);
  } else if constexpr (std::is_same_v<T, c64>) {
    cgemm_batch_(&ta, &tb, &m, &n, &k, reinterpret_cast<const scomplex*>(&alpha),
                 reinterpret_cast<const scomplex**>(in(a)), &la, reinterpret_cast<const scomplex**>(in(b)), &lb,
                 reinterpret_cast<const scomplex*>(&beta), reinterpret_cast<scomplex**>(pc), &lc, &groups, &size);
  } else if constexpr (std::is_same_v<T, c128>) {
    zgemm_batch_(&ta, &tb, &m, &n, &k, reinterpret_cast<const dcomplex*>(&alpha),
                 reinterpret_cast<const dcomplex**>(in(a)), &la, reinterpret_cast<const dcomplex**>(in(b)), &lb,
                 reinterpret_cast<const dcomplex*>(&beta), reinterpret_cast<dcomplex**>(pc), &lc, &groups, &size);
  } else {
    return false;
  }
  return true;
}

template <class T>
bool gemm_openblas(const GemmArgs<T>& g, int threads) {
  GemmArgs<T> x = g;
  // C must be column-major (rs == 1); a row-major C is handled as C^T = B^T A^T.
  int64_t ldc = 0;
  if (!blas_form(x.m, x.n, x.rsc, x.csc, false, &ldc)) {
    if (!blas_form(x.m, x.n, x.rsc, x.csc, true, &ldc)) return false;
    std::swap(x.m, x.n);
    std::swap(x.a, x.b);
    std::swap(x.conj_a, x.conj_b);
    const int64_t rsa = x.rsa, csa = x.csa;
    x.rsa = x.csb;  // (B^T) rows are B's columns
    x.csa = x.rsb;
    x.rsb = csa;
    x.csb = rsa;
    std::swap(x.rsc, x.csc);
  }
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda = 0, ldb = 0;
  if (!as_cblas(x.m, x.k, x.rsa, x.csa, x.conj_a, &ta, &lda)) return false;
  if (!as_cblas(x.k, x.n, x.rsb, x.csb, x.conj_b, &tb, &ldb)) return false;
  if (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (x.conj_a || x.conj_b) {
      // Real types: conjugation is the identity.
      ta = ta == CblasConjNoTrans ? CblasNoTrans : ta == CblasConjTrans ? CblasTrans : ta;
      tb = tb == CblasConjNoTrans ? CblasNoTrans : tb == CblasConjTrans ? CblasTrans : tb;
    }
  }
  const OpenBlasThreads scope(threads);
  const auto m = static_cast<blasint>(x.m), n = static_cast<blasint>(x.n), k = static_cast<blasint>(x.k);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // Note [OpenBLAS matrix-vector calls]: OpenBLAS 0.3.21's ?gemm runs a product with a
    // side of one through its GEMM kernels (packing the long operand); ?gemv reads it
    // once. Real products with one column or one row go to ?gemv (vector strides
    // positive: BLAS reads a negative increment from the other end). `tenferro einsum
    // 'j,nj->n'` with a C-ordered [10^6, 3] operand, one thread, Zen 5, 2026-12-06:
    // 1.8-2.4 -> 0.9-1.0 ms (numpy's P @ v 0.94).
    auto gemv = [&](CBLAS_TRANSPOSE t, blasint rows, blasint cols, const T* mat, int64_t ld, const T* vec, int64_t inc,
                    int64_t inc_y) {
      if constexpr (std::is_same_v<T, float>) {
        cblas_sgemv(CblasColMajor, t, rows, cols, x.alpha, mat, static_cast<blasint>(ld), vec,
                    static_cast<blasint>(inc), x.beta, x.c, static_cast<blasint>(inc_y));
      } else {
        cblas_dgemv(CblasColMajor, t, rows, cols, x.alpha, mat, static_cast<blasint>(ld), vec,
                    static_cast<blasint>(inc), x.beta, x.c, static_cast<blasint>(inc_y));
      }
    };
    if (x.n == 1 && x.m > 1 && x.k > 1 && x.rsb > 0) {  // C's column = alpha op(A) B's column + beta C
      const bool t = ta == CblasTrans;                  // A stored k x m
      gemv(t ? CblasTrans : CblasNoTrans, t ? k : m, t ? m : k, x.a, lda, x.b, x.rsb, 1);
      return true;
    }
    if (x.m == 1 && x.n > 1 && x.k > 1 && x.csa > 0) {  // C's row = alpha op(B)^T A's row + beta C
      const bool t = tb == CblasTrans;                  // B stored n x k
      gemv(t ? CblasNoTrans : CblasTrans, t ? n : k, t ? k : n, x.b, ldb, x.a, x.csa, ldc);
      return true;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasColMajor, ta, tb, m, n, k, x.alpha, x.a, static_cast<blasint>(lda), x.b,
                static_cast<blasint>(ldb), x.beta, x.c, static_cast<blasint>(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasColMajor, ta, tb, m, n, k, x.alpha, x.a, static_cast<blasint>(lda), x.b,
                static_cast<blasint>(ldb), x.beta, x.c, static_cast<blasint>(ldc));
  } else if constexpr (std::is_same_v<T, c64>) {
    cblas_cgemm(CblasColMajor, ta, tb, m, n, k, &x.alpha, x.a, static_cast<blasint>(lda), x.b,
                static_cast<blasint>(ldb), &x.beta, x.c, static_cast<blasint>(ldc));
  } else if constexpr (std::is_same_v<T, c128>) {
    cblas_zgemm(CblasColMajor, ta, tb, m, n, k, &x.alpha, x.a, static_cast<blasint>(lda), x.b,
                static_cast<blasint>(ldb), &x.beta, x.c, static_cast<blasint>(ldc));
  } else {
    return false;
  }
  return true;
}

template <class T>
bool gemm_blis(const GemmArgs<T>& g) {
  // Extent-1 dimensions take any positive stride; BLIS rejects zero and some negative
  // strides, so the caller packs those.
  auto fix = [](int64_t extent, int64_t stride, int64_t other) { return extent <= 1 ? std::max<int64_t>(other, 1) : stride; };
  const int64_t rsa = fix(g.m, g.rsa, g.csa * g.k), csa = fix(g.k, g.csa, g.rsa * g.m);
  const int64_t rsb = fix(g.k, g.rsb, g.csb * g.n), csb = fix(g.n, g.csb, g.rsb * g.k);
  const int64_t rsc = fix(g.m, g.rsc, g.csc * g.n), csc = fix(g.n, g.csc, g.rsc * g.m);
  for (int64_t s : {rsa, csa, rsb, csb, rsc, csc}) {
    if (s <= 0) return false;
  }
  rntm_t rntm;
  bli_rntm_init(&rntm);
  bli_rntm_set_num_threads(1, &rntm);
  const trans_t ta = g.conj_a ? BLIS_CONJ_NO_TRANSPOSE : BLIS_NO_TRANSPOSE;
  const trans_t tb = g.conj_b ? BLIS_CONJ_NO_TRANSPOSE : BLIS_NO_TRANSPOSE;
  T alpha = g.alpha, beta = g.beta;
  auto* a = const_cast<T*>(g.a);
  auto* b = const_cast<T*>(g.b);
  if constexpr (std::is_same_v<T, float>) {
    bli_sgemm_ex(ta, tb, g.m, g.n, g.k, &alpha, a, rsa, csa, b, rsb, csb, &beta, g.c, rsc, csc, nullptr, &rntm);
  } else if constexpr (std::is_same_v<T, double>) {
    bli_dgemm_ex(ta, tb, g.m, g.n, g.k, &alpha, a, rsa, csa, b, rsb, csb, &beta, g.c, rsc, csc, nullptr, &rntm);
  } else if constexpr (std::is_same_v<T, c64>) {
    bli_cgemm_ex(ta, tb, g.m, g.n, g.k, reinterpret_cast<scomplex*>(&alpha), reinterpret_cast<scomplex*>(a), rsa, csa,
                 reinterpret_cast<scomplex*>(b), rsb, csb, reinterpret_cast<scomplex*>(&beta),
                 reinterpret_cast<scomplex*>(g.c), rsc, csc, nullptr, &rntm);
  } else if constexpr (std::is_same_v<T, c128>) {
    bli_zgemm_ex(ta, tb, g.m, g.n, g.k, reinterpret_cast<dcomplex*>(&alpha), reinterpret_cast<dcomplex*>(a), rsa, csa,
                 reinterpret_cast<dcomplex*>(b), rsb, csb, reinterpret_cast<dcomplex*>(&beta),
                 reinterpret_cast<dcomplex*>(g.c), rsc, csc, nullptr, &rntm);
  } else {
    return false;
  }
  return true;
}


// Dispatchers to the per-ISA kernel copies (Note [ISA kernels] in gemm_kernels.cc).
template <class T>
void gemm_naive(IsaLevel isa, const GemmArgs<T>& g) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::gemm_naive<T>(g);
    case IsaLevel::kAvx2: return avx2::gemm_naive<T>(g);
    case IsaLevel::kScalar: break;
  }
  scalar::gemm_naive<T>(g);
}

void short_sides_f64(IsaLevel isa, int64_t m, int64_t n, double alpha, const double* a, const int64_t* row_off,
                     const double* b, const KLevels& k, double beta, double* c, int64_t rsc, int64_t csc) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::short_sides_f64(m, n, alpha, a, row_off, b, k, beta, c, rsc, csc);
    case IsaLevel::kAvx2: return avx2::short_sides_f64(m, n, alpha, a, row_off, b, k, beta, c, rsc, csc);
    case IsaLevel::kScalar: break;
  }
  scalar::short_sides_f64(m, n, alpha, a, row_off, b, k, beta, c, rsc, csc);
}

bool gemm_blocked(IsaLevel isa, const GemmArgs<double>& g, double* work) {
  return isa >= IsaLevel::kAvx512 && avx512::gemm_blocked_f64(g, work);
}

bool gemm_blocked(IsaLevel isa, const GemmArgs<float>& g, float* work) {
  return isa >= IsaLevel::kAvx512 && avx512::gemm_blocked_f32(g, work);
}

bool streamed_wants_b_rows(IsaLevel isa, const GemmArgs<double>& g) {
  return streamed_rows_form(isa, g.rsa, g.csa, g.csb, true) && g.csb != 1 && g.n >= 1 && g.k >= 1;
}

GemmArgs<double> pack_b_rows(const GemmArgs<double>& g, double* dst) {
  const int64_t ld = (g.n + 7) / 8 * 8;
  for (int64_t p = 0; p < g.k; ++p) {
    const double* src = g.b + p * g.rsb;
    double* row = dst + p * ld;
    for (int64_t j = 0; j < g.n; ++j) row[j] = src[j * g.csb];
    for (int64_t j = g.n; j < ld; ++j) row[j] = 0.0;
  }
  GemmArgs<double> r = g;
  r.b = dst;
  r.rsb = ld;
  r.csb = 1;
  return r;
}

void streamed_f64(IsaLevel isa, const GemmArgs<double>& g) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::streamed_f64(g);
    case IsaLevel::kAvx2: return avx2::streamed_f64(g);
    case IsaLevel::kScalar: break;
  }
  scalar::streamed_f64(g);
}

void streamed_out_f64(IsaLevel isa, const GemmArgs<double>& g, bool columns_outer) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::streamed_out_f64(g, columns_outer);
    case IsaLevel::kAvx2: return avx2::streamed_out_f64(g, columns_outer);
    case IsaLevel::kScalar: break;
  }
  scalar::streamed_out_f64(g, columns_outer);
}

template <class T>
void batch_lanes(IsaLevel isa, const GemmArgs<T>& g, int64_t lanes, bool columns_outer) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::batch_lanes<T>(g, lanes, columns_outer);
    case IsaLevel::kAvx2: return avx2::batch_lanes<T>(g, lanes, columns_outer);
    case IsaLevel::kScalar: break;
  }
  scalar::batch_lanes<T>(g, lanes, columns_outer);
}
template void batch_lanes<double>(IsaLevel, const GemmArgs<double>&, int64_t, bool);
template void batch_lanes<float>(IsaLevel, const GemmArgs<float>&, int64_t, bool);

template <class T>
void matvec(IsaLevel isa, const GemmArgs<T>& g, bool one_run) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::matvec<T>(g, one_run);
    case IsaLevel::kAvx2: return avx2::matvec<T>(g, one_run);
    case IsaLevel::kScalar: break;
  }
  scalar::matvec<T>(g, one_run);
}
template void matvec<double>(IsaLevel, const GemmArgs<double>&, bool);
template void matvec<float>(IsaLevel, const GemmArgs<float>&, bool);
template void matvec<c128>(IsaLevel, const GemmArgs<c128>&, bool);
template void matvec<c64>(IsaLevel, const GemmArgs<c64>&, bool);

template <class T>
void complex_short(IsaLevel isa, const GemmArgs<T>& g) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::complex_short<T>(g);
    case IsaLevel::kAvx2: return avx2::complex_short<T>(g);
    case IsaLevel::kScalar: break;
  }
  scalar::complex_short<T>(g);
}
template void complex_short<c128>(IsaLevel, const GemmArgs<c128>&);
template void complex_short<c64>(IsaLevel, const GemmArgs<c64>&);

template <class T>
void narrow(IsaLevel isa, const GemmArgs<T>& g) {
  switch (isa) {
    case IsaLevel::kAvx512: return avx512::narrow<T>(g);
    case IsaLevel::kAvx2: return avx2::narrow<T>(g);
    case IsaLevel::kScalar: break;
  }
  scalar::narrow<T>(g);
}
template void narrow<double>(IsaLevel, const GemmArgs<double>&);
template void narrow<float>(IsaLevel, const GemmArgs<float>&);

#define TENFERRO_GEMM_INSTANTIATE(T)                                  \
  template bool gemm_openblas<T>(const GemmArgs<T>&, int);            \
  template bool gemm_blis<T>(const GemmArgs<T>&);                     \
  template void gemm_naive<T>(IsaLevel, const GemmArgs<T>&);          \
  template bool openblas_accepts<T>(const GemmArgs<T>&);             \
  template bool fortran_batch_accepts<T>(const GemmArgs<T>&);        \
  template bool gemm_batch_fortran<T>(const GemmArgs<T>&, int64_t, const T* const*, const T* const*, T* const*);
TENFERRO_GEMM_INSTANTIATE(float)
TENFERRO_GEMM_INSTANTIATE(double)
TENFERRO_GEMM_INSTANTIATE(c64)
TENFERRO_GEMM_INSTANTIATE(c128)
TENFERRO_GEMM_INSTANTIATE(int32_t)
TENFERRO_GEMM_INSTANTIATE(int64_t)
TENFERRO_GEMM_INSTANTIATE(bool)
#undef TENFERRO_GEMM_INSTANTIATE

std::string library_of(const void* symbol_address) {
  Dl_info info{};
  if (dladdr(symbol_address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}
const void* openblas_symbol() { return reinterpret_cast<const void*>(&cblas_dgemm); }
const void* blis_symbol() { return reinterpret_cast<const void*>(&bli_dgemm_ex); }
const void* blis_batch_symbol() { return reinterpret_cast<const void*>(&dgemm_batch_); }

}  // namespace tenferro::cpu::detail
