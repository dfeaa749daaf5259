// The SVD and the Hermitian eigendecomposition with the back-transformation of their
// vectors on the engine's GEMM (Note [Engine back-transformation] in common.h).

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <utility>

#include "common.h"
#include "tenferro/cpu/dot_general.h"

namespace tenferro::linalg::detail {

namespace {
// Reflectors per block (Note [Engine back-transformation]): measured at n = 256..1024 f64
// (docs/benchmarks.md "Linear algebra"): eigh 64 (9 % faster than 32 from n = 512 on,
// equal at 256); the SVD 32 (64 was up to 3 % slower for P's products, which read and
// write the transposed Vh, and no faster for Q's).
constexpr int64_t kSvdReflectorBlock = 32;
constexpr int64_t kEighReflectorBlock = 64;

// A handle over the strided rows x cols matrix at p, on borrowed storage (positive
// strides; the views of one call never overlap where they are written).
template <class T>
Result<Tensor> borrow(T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t elems = (rows - 1) * rs + (cols - 1) * cs + 1;
  auto storage = ExternalStorage::foreign(p, elems * static_cast<int64_t>(sizeof(T)), nullptr, true);
  Layout layout{Shape{rows, cols}, Strides{rs, cs}, 0};
  return Tensor::from_storage(kDTypeOf<T>, std::move(storage), std::move(layout));
}

template <class T>
void conj_in_place(T* p, int64_t count) noexcept {
  if constexpr (kIsComplex<T>) {
    for (int64_t i = 0; i < count; ++i) p[i] = std::conj(p[i]);
  }
}

// dst (rows x cols, col-major, leading dimension ld) = [src 0; 0 I]: the k x k real
// matrix src (leading dimension k) in the top-left corner, ones on the rest of the
// diagonal, zeros elsewhere.
template <class T>
void embed_real(T* dst, int64_t ld, int64_t rows, int64_t cols, const Real<T>* src, int64_t k) noexcept {
  for (int64_t j = 0; j < cols; ++j) {
    T* col = dst + j * ld;
    for (int64_t i = 0; i < rows; ++i) col[i] = (i < k && j < k) ? T(src[i + j * k]) : T(i == j ? 1 : 0);
  }
}

}  // namespace

int64_t reflector_scratch(int64_t rows, int64_t cols) noexcept {
  const int64_t nb = kMaxReflectorBlock;
  return rows * nb + nb * nb + 2 * nb * cols;
}

template <class T>
Result<void> apply_reflectors(const CpuExecutionContext& ctx, const Reflectors<T>& h, Mat<T> c, int64_t rows,
                              int64_t cols, int64_t block, T* scratch) {
  if (h.count <= 0 || rows <= 0 || cols <= 0) return ok();
  const int64_t nb = std::clamp<int64_t>(block, 1, kMaxReflectorBlock);
  T* v = scratch;
  T* t = v + rows * nb;
  T* w = t + nb * nb;
  T* tw = w + nb * cols;
  cpu::DotDims left;  // lhs^H rhs over their rows
  left.lhs_contracting = {0};
  left.rhs_contracting = {0};
  cpu::DotDims plain;  // lhs rhs
  plain.lhs_contracting = {1};
  plain.rhs_contracting = {0};
  cpu::DotOptions adjoint;
  adjoint.conj_lhs = kIsComplex<T>;
  cpu::DotOptions product;
  cpu::DotOptions update;
  update.alpha = -1.0;
  update.beta = 1.0;
  // Q C = B_0 (B_1 (... (B_last C))): the blocks from the last to the first.
  for (int64_t j0 = (h.count - 1) / nb * nb; j0 >= 0; j0 -= nb) {
    const int64_t kb = std::min(nb, h.count - j0), r0 = j0 + h.shift, mb = rows - r0;
    // V: the block's reflectors with their unit entries and zeros above them.
    for (int64_t j = 0; j < kb; ++j) {
      T* col = v + j * mb;
      for (int64_t i = 0; i < mb; ++i) {
        if (i < j) {
          col[i] = T(0);
        } else if (i == j) {
          col[i] = T(1);
        } else {
          const T x = h.tails(r0 + i, j0 + j);
          col[i] = h.conj_tails ? conj_of(x) : x;
        }
      }
    }
    // T is upper triangular; larft leaves its strictly lower part alone, and the product
    // below reads all of it.
    std::fill(t, t + kb * kb, T(0));
    Lapack<T>::larft(static_cast<lint>(mb), static_cast<lint>(kb), v, static_cast<lint>(mb), h.tau + j0, t,
                     static_cast<lint>(kb));
    TENFERRO_TRY(Tensor vt, borrow(v, mb, kb, 1, mb));
    TENFERRO_TRY(Tensor tt, borrow(t, kb, kb, 1, kb));
    TENFERRO_TRY(Tensor wt, borrow(w, kb, cols, 1, kb));
    TENFERRO_TRY(Tensor twt, borrow(tw, kb, cols, 1, kb));
    TENFERRO_TRY(Tensor ct, borrow(&c(r0, 0), mb, cols, c.rs, c.cs));
    // C := (I - V T V^H) C = C - V (T (V^H C)).
    TENFERRO_TRY_VOID(cpu::dot_general_into(ctx, vt, ct, left, adjoint, wt));
    TENFERRO_TRY_VOID(cpu::dot_general_into(ctx, tt, wt, plain, product, twt));
    TENFERRO_TRY_VOID(cpu::dot_general_into(ctx, vt, twt, plain, update, ct));
  }
  return ok();
}

template <class T>
StagedSvd<T> StagedSvd<T>::plan(int64_t m, int64_t n, bool full, Workspace* ws) {
  StagedSvd<T> p;
  // Items at least 11/6 as wide as tall: the SVD of A^H (tall), outputs transposed back.
  p.transposed = 6 * n >= 11 * m;
  if (p.transposed) std::swap(m, n);
  p.m = m;
  p.n = n;
  p.k = std::min(m, n);
  p.ucols = full ? m : p.k;
  p.vrows = full ? n : p.k;
  // gesdd's rule: items at least 11/6 as tall as wide are reduced after a QR.
  p.qr_first = 6 * m >= 11 * n;
  p.lwork = cached_query(ws, QueryKey{Query::kStagedSvd, kDTypeOf<T>, {m, n, 0, 0, 0}}, [&] {
    T wq{}, dummy{};
    Real<T> rdummy{};
    const int64_t bm = p.qr_first ? n : m;  // the matrix gebrd reduces: R or A
    Lapack<T>::gebrd(static_cast<lint>(bm), static_cast<lint>(n), &dummy, static_cast<lint>(std::max<int64_t>(1, bm)),
                     &rdummy, &rdummy, &dummy, &dummy, &wq, -1);
    lint lw = query_size(wq);
    if (p.qr_first) {
      Lapack<T>::geqrf(static_cast<lint>(m), static_cast<lint>(n), &dummy, static_cast<lint>(m), &dummy, &wq, -1);
      lw = std::max(lw, query_size(wq));
    }
    return QueryValue{lw, 0, 0};
  })[0];
  return p;
}

template <class T>
int64_t StagedSvd<T>::carve(std::byte* base, Parts* parts) const {
  Carver c(base);
  Parts x;
  x.a = c.take<T>(m * n);
  x.d = c.take<Real<T>>(k);
  x.e = c.take<Real<T>>(k);
  x.tauq = c.take<T>(k);
  x.taup = c.take<T>(k);
  x.work = c.take<T>(lwork);
  x.ub = c.take<Real<T>>(k * k);
  x.vtb = c.take<Real<T>>(k * k);
  x.rwork = c.take<Real<T>>(3 * k * k + 4 * k);
  x.iwork = c.take<lint>(8 * k);
  x.apply = c.take<T>(std::max(reflector_scratch(m, ucols), reflector_scratch(n, vrows)));
  x.r = qr_first ? c.take<T>(n * n) : nullptr;
  x.ur = qr_first ? c.take<T>(n * n) : nullptr;
  x.tau = qr_first ? c.take<T>(n) : nullptr;
  x.uo = transposed ? c.take<T>(m * ucols) : nullptr;
  x.vto = transposed ? c.take<T>(vrows * n) : nullptr;
  if (parts != nullptr) *parts = x;
  return c.used();
}

template <class T>
Result<lint> StagedSvd<T>::bidiagonal(const CpuExecutionContext& ctx, const Parts& x, T* a, int64_t am, Real<T>* s,
                                      T* u, int64_t ucol, T* vt) const {
  const bool upper = am >= n;
  const int64_t kk = std::min(am, n);
  const lint lm = static_cast<lint>(am), ln = static_cast<lint>(n), lk = static_cast<lint>(kk);
  lint info = Lapack<T>::gebrd(lm, ln, a, lm, x.d, x.e, x.tauq, x.taup, x.work, lwork);
  if (info != 0) return info;
  info = Lapack<Real<T>>::bdsdc(upper ? 'U' : 'L', lk, x.d, x.e, x.ub, lk, x.vtb, lk, x.rwork, x.iwork);
  if (info != 0) return info;
  std::copy(x.d, x.d + kk, s);
  embed_real(u, am, am, ucol, x.ub, kk);
  embed_real(vt, vrows, vrows, n, x.vtb, kk);
  // A = Q B P^H (gebrd), B = Ub S VTb: U = Q [Ub 0; 0 I], Vh = [VTb 0; 0 I] P^H, so
  // Vh^H = P [VTb 0; 0 I]^H: P applied from the left to the conjugate transpose of Vh.
  const Reflectors<T> q{Mat<const T>{a, 1, am}, x.tauq, upper ? n : am - 1, upper ? 0 : 1, false};
  TENFERRO_TRY_VOID(apply_reflectors(ctx, q, Mat<T>{u, 1, am}, am, ucol, kSvdReflectorBlock, x.apply));
  // gebrd keeps P's vectors conjugated in the rows of A (complex dtypes).
  const Reflectors<T> p{Mat<const T>{a, am, 1}, x.taup, upper ? n - 1 : am, upper ? 1 : 0, kIsComplex<T>};
  conj_in_place(vt, vrows * n);
  TENFERRO_TRY_VOID(apply_reflectors(ctx, p, Mat<T>{vt, vrows, 1}, n, vrows, kSvdReflectorBlock, x.apply));
  conj_in_place(vt, vrows * n);
  return lint{0};
}

template <class T>
Result<lint> StagedSvd<T>::run(const CpuExecutionContext& ctx, Mat<const T> src, Real<T>* s, T* u, T* vt,
                               std::byte* scratch) const {
  Parts x;
  carve(scratch, &x);
  if (transposed) {
    // A^H = U' S V'^H: U = V' (n x n here, the conjugate transpose of V'^H) and
    // Vh = U'^H (ucols x m).
    gather(x.a, m, Mat<const T>{src.p, src.cs, src.rs}, m, n);
    conj_in_place(x.a, m * n);
    TENFERRO_TRY(const lint info, reduce(ctx, x, s, x.uo, x.vto));
    if (info != 0) return info;
    for (int64_t c = 0; c < n; ++c)
      for (int64_t r = 0; r < n; ++r) u[r + c * n] = conj_of(x.vto[c + r * vrows]);
    for (int64_t c = 0; c < m; ++c)
      for (int64_t r = 0; r < ucols; ++r) vt[r + c * ucols] = conj_of(x.uo[c + r * m]);
    return lint{0};
  }
  gather(x.a, m, src, m, n);
  return reduce(ctx, x, s, u, vt);
}

template <class T>
Result<lint> StagedSvd<T>::reduce(const CpuExecutionContext& ctx, const Parts& x, Real<T>* s, T* u, T* vt) const {
  if (!qr_first) return bidiagonal(ctx, x, x.a, m, s, u, ucols, vt);
  // A = Q_r R (geqrf), R = U_R S Vh: U = Q_r [U_R 0; 0 I] (vrows = n here).
  const lint info =
      Lapack<T>::geqrf(static_cast<lint>(m), static_cast<lint>(n), x.a, static_cast<lint>(m), x.tau, x.work, lwork);
  if (info != 0) return info;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) x.r[i + j * n] = i <= j ? x.a[i + j * m] : T(0);
  TENFERRO_TRY(const lint binfo, bidiagonal(ctx, x, x.r, n, s, x.ur, n, vt));
  if (binfo != 0) return binfo;
  for (int64_t j = 0; j < ucols; ++j) {
    T* col = u + j * m;
    for (int64_t i = 0; i < m; ++i) col[i] = (i < n && j < n) ? x.ur[i + j * n] : T(i == j ? 1 : 0);
  }
  const Reflectors<T> q{Mat<const T>{x.a, 1, m}, x.tau, n, 0, false};
  TENFERRO_TRY_VOID(apply_reflectors(ctx, q, Mat<T>{u, 1, m}, m, ucols, kSvdReflectorBlock, x.apply));
  return lint{0};
}

template <class T>
StagedEigh<T> StagedEigh<T>::plan(int64_t n, Workspace* ws) {
  StagedEigh<T> p;
  p.n = n;
  const QueryValue sizes = cached_query(ws, QueryKey{Query::kStagedEigh, kDTypeOf<T>, {n, 0, 0, 0, 0}}, [&] {
    const lint ln = static_cast<lint>(std::max<int64_t>(1, n));
    T wq{}, dummy{};
    Real<T> rq{}, rdummy{};
    lint iq = 0;
    Lapack<T>::hetrd('L', static_cast<lint>(n), &dummy, ln, &rdummy, &rdummy, &dummy, &wq, -1);
    const lint lwork = query_size(wq);
    Lapack<Real<T>>::stedc(static_cast<lint>(n), &rdummy, &rdummy, &rdummy, ln, &rq, -1, &iq, -1);
    return QueryValue{lwork, query_size(rq), std::max<lint>(1, iq)};
  });
  p.lwork = sizes[0];
  p.lrwork = sizes[1];
  p.liwork = sizes[2];
  return p;
}

template <class T>
int64_t StagedEigh<T>::carve(std::byte* base, Parts* parts) const {
  Carver c(base);
  Parts x;
  x.a = c.take<T>(n * n);
  x.d = c.take<Real<T>>(n);
  x.e = c.take<Real<T>>(n);
  x.tau = c.take<T>(n);
  x.work = c.take<T>(lwork);
  x.z = c.take<Real<T>>(n * n);
  x.rwork = c.take<Real<T>>(lrwork);
  x.iwork = c.take<lint>(liwork);
  x.apply = c.take<T>(reflector_scratch(n, n));
  if (parts != nullptr) *parts = x;
  return c.used();
}

template <class T>
Result<lint> StagedEigh<T>::run(const CpuExecutionContext& ctx, Mat<const T> src, bool lower, Real<T>* w, T* z,
                                std::byte* scratch) const {
  Parts x;
  carve(scratch, &x);
  // The referenced triangle as the lower one: an upper triangle is read through the
  // conjugate transpose (same Hermitian matrix).
  if (lower) {
    gather(x.a, n, src, n, n);
  } else {
    gather(x.a, n, Mat<const T>{src.p, src.cs, src.rs}, n, n);
    conj_in_place(x.a, n * n);
  }
  const lint ln = static_cast<lint>(n);
  lint info = Lapack<T>::hetrd('L', ln, x.a, ln, x.d, x.e, x.tau, x.work, lwork);
  if (info != 0) return info;
  info = Lapack<Real<T>>::stedc(ln, x.d, x.e, x.z, ln, x.rwork, lrwork, x.iwork, liwork);
  if (info != 0) return info;
  std::copy(x.d, x.d + n, w);
  embed_real(z, n, n, n, x.z, n);
  // A = Q T Q^H with Q = H(0) ... H(n-2) (hetrd, lower): reflector i has its unit at row
  // i + 1 and its tail below it in column i.
  const Reflectors<T> q{Mat<const T>{x.a, 1, n}, x.tau, n - 1, 1, false};
  TENFERRO_TRY_VOID(apply_reflectors(ctx, q, Mat<T>{z, 1, n}, n, n, kEighReflectorBlock, x.apply));
  return lint{0};
}

#define TENFERRO_STAGED(T)                                                                                     \
  template Result<void> apply_reflectors<T>(const CpuExecutionContext&, const Reflectors<T>&, Mat<T>, int64_t, \
                                            int64_t, int64_t, T*);                                             \
  template struct StagedSvd<T>;                                                                                \
  template struct StagedEigh<T>;
TENFERRO_STAGED(float)
TENFERRO_STAGED(double)
TENFERRO_STAGED(c64)
TENFERRO_STAGED(c128)
#undef TENFERRO_STAGED

}  // namespace tenferro::linalg::detail
