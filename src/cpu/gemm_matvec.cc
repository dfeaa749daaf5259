// Note [Matrix-vector products]: a product with one side of extent 1 (y = A x: numpy's
// 'ijk,jk->i', 'ij,j->i', a vector contracted into a tensor of a network) reads each
// element of A once for one multiply-add, so it runs at the speed A streams from
// memory or cache. A GEMM call spends that time packing: cblas_dgemm with n = 1 took
// 1.5-4x as long as cblas_dgemv on the same A (docs/benchmarks.md "Matrix-vector
// products"). This kernel (f64 and f32 here; c128 and c64 in Note [Complex
// matrix-vector products]) reads A once in its own memory order and packs nothing:
// - Row form (A's rows contiguous, csa == 1): each element of y is a dot product of a
//   row of A with x; four rows at a time share each vector of x, with two vector
//   accumulators per row, summed across lanes at the end. An x with a stride is copied
//   in chunks of kXChunk elements to the stack (y then accumulates chunk by chunk).
// - Column form (A's columns contiguous, rsa == 1): y accumulates scaled columns of A
//   (four per pass) in a stack tile of kTileRows rows (L1 / L2), written to y
//   once per tile at y's stride.
// - `one_run`: A's rows (columns) read one at a time, a single stream through A. Four
//   short runs read side by side from beyond the caches were slow: 65536 x 256 with
//   rows contiguous (2 KiB rows) at 10.7 GB/s against 19-21 one row at a time
//   (cblas_dgemv 10.6-13.5), columns of 64-256 rows (128 MB) 2x faster one at a time;
//   but in L2 (1 MB) four at a time were 1.3-3x faster, and with rows of 16 KiB four at
//   a time were faster from memory too (x stays in registers across them: 8192 x 2048
//   7.2-7.7 ms against 9.2-9.9; Zen 4, 2026-12-04). The planner chooses (Note
//   [Matrix-vector thresholds]).
// Tails are masked (nothing past A's rows or columns is read). y takes any stride;
// beta == 0 never reads y. One thread; callers split the rows.
//
// Note [Few-vector products]: Y = A X with X of 2 to kMatVecMaxVectors columns (several
// right-hand sides, a block of vectors) is the same stream through A with a few
// multiply-adds per element; a GEMM call packs A for them (cblas_dgemm 2048^2 with 2-7
// columns took 4.5-5.7 ms, about four times one read of A). Real types take up to four
// vectors per pass over A (more: passes of up to four): the row form keeps R rows x NV
// vector accumulators (R = 4 for one or two vectors, else 2: 16 registers at AVX2) with
// X's columns copied in chunks unless contiguous along the contraction; the column form
// adds QP columns of A at a time (QP = 4 for two vectors, else 2: QP x NV broadcasts)
// into NV tiles of Y of 32 KiB each. Complex types the same way (Note [Complex
// few-vector products]); the planner gives them fewer vectors (dot_plan.cc).
//
// Note [Complex few-vector products]: up to four vectors per pass as for real types, in
// the arithmetic of Note [Complex matrix-vector products] with one change: the lane
// swap is applied to A's vector (once, shared by the NV vectors) instead of to x (once
// per vector), so the second accumulator holds ai xr, ar xi and im = sum(Q * pair(s_a,
// s_x)). Row form: RR rows (2, or 1 for three and four vectors at AVX2: 16 registers)
// x NV vectors x two accumulators; column form: QP columns of A (2, or 1 likewise), each
// and its swap shared by the NV tiles, two FMAs per tile and column.

#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "gemm.h"
#include "tenferro/core/isa_region.h"

TENFERRO_ISA_BEGIN
#include "simd.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

#if TENFERRO_ISA_LEVEL >= 1
namespace {

// 16 KiB of x (row form) and 32 KiB of y (column form) on the stack. A tile of y of 8
// KiB read A's columns as 8 KiB segments 32 KiB apart: 4096^2 from memory 7.0-7.8 ms,
// against 5.1-5.4 with 32 KiB (whole columns; cblas_dgemv 6.8-7.3, one thread, Zen 4).
template <class T>
constexpr int64_t kXChunk = 16384 / static_cast<int64_t>(sizeof(T));
template <class T>
constexpr int64_t kTileRows = 32768 / static_cast<int64_t>(sizeof(T));
// A few vectors (Note [Few-vector products]): 64 KiB of X's columns (row form), so
// each vector's chunk covers 16 KiB or more of A's rows; 32 KiB of Y per vector
// (column form), whole columns of the one-vector tile's length.
template <class T>
constexpr int64_t kXChunkAll = 65536 / static_cast<int64_t>(sizeof(T));

// Walks the row form's contraction in chunks: calls body(x, ldx, p0, kc) for steps
// [p0, p0 + kc) with X's NV columns contiguous along the contraction, ldx elements
// apart: X itself when it is so, else a stack copy of kCap elements at most (all NV
// columns together; kXChunk for one vector, kXChunkAll for several, Note [Few-vector
// products]). k = 0 makes one call with kc = 0 (Y = beta Y).
template <class T, int NV, int64_t kCap, class Body>
void for_x_chunks(const GemmArgs<T>& g, Body&& body) {
  alignas(64) T xbuf[kCap];
  const bool direct = g.rsb == 1;
  const int64_t chunk = direct ? g.k : kCap / NV;
  for (int64_t p0 = 0; p0 < g.k || p0 == 0; p0 += chunk) {
    const int64_t kc = std::min(chunk, g.k - p0);
    const T* x = g.b + p0 * g.rsb;
    int64_t ldx = g.csb;
    if (!direct) {
      for (int j = 0; j < NV; ++j)
        for (int64_t p = 0; p < kc; ++p) xbuf[j * chunk + p] = x[p * g.rsb + j * g.csb];
      x = xbuf;
      ldx = chunk;
    }
    body(x, ldx, p0, kc);
    if (g.k == 0) break;
  }
}

// y[r * incy] = alpha * t[r] (+ beta * y[r * incy] unless beta == 0, which never reads
// y) for r < rows: a column form's tile written to Y.
template <class T>
void write_tile(const T* t, int64_t rows, T alpha, T beta, T* y, int64_t incy) {
  if (beta == T{}) {
    for (int64_t r = 0; r < rows; ++r) y[r * incy] = alpha * t[r];
  } else {
    for (int64_t r = 0; r < rows; ++r) y[r * incy] = alpha * t[r] + beta * y[r * incy];
  }
}

// y[r] (r < R) = alpha * (A's row r) . x + (first ? beta y[r] : y[r]) over kc steps; U
// vector accumulators per row.
template <class T, int R, int U>
void dot_rows(const T* a, int64_t lda, const T* x, int64_t kc, T alpha, T beta, bool first, T* y, int64_t incy) {
  using S = Simd<T>;
  constexpr int64_t L = S::kLanes;
  typename S::V acc[R][U];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[r][u] = S::zero();
  int64_t p = 0;
  for (; p + U * L <= kc; p += U * L) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const typename S::V xv = S::load(x + p + u * L);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][u] = S::fma(S::load(a + r * lda + p + u * L), xv, acc[r][u]);
    }
  }
  for (; p < kc; p += L) {
    const typename S::M m = S::mask(kc - p);
    const typename S::V xv = S::load(x + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = S::fma(S::load(a + r * lda + p, m), xv, acc[r][0]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int u = 1; u < U; ++u) acc[r][0] = S::add(acc[r][0], acc[r][u]);
    const T s = alpha * S::sum(acc[r][0]);
    T& c = y[r * incy];
    c = first ? (beta == T{} ? s : s + beta * c) : s + c;
  }
}

template <class T>
void row_form(const GemmArgs<T>& g, bool single) {
  for_x_chunks<T, 1, kXChunk<T>>(g, [&](const T* x, int64_t, int64_t p0, int64_t kc) {
    const T* a = g.a + p0;
    const bool first = p0 == 0;
    int64_t i = 0;
    if (!single) {
      for (; i + 4 <= g.m; i += 4) {
        dot_rows<T, 4, 2>(a + i * g.rsa, g.rsa, x, kc, g.alpha, g.beta, first, g.c + i * g.rsc, g.rsc);
      }
    }
    for (; i < g.m; ++i) dot_rows<T, 1, 4>(a + i * g.rsa, g.rsa, x, kc, g.alpha, g.beta, first, g.c + i * g.rsc, g.rsc);
  });
}

template <class T>
void column_form(const GemmArgs<T>& g, bool single) {
  using S = Simd<T>;
  constexpr int64_t L = S::kLanes;
  alignas(64) T tile[kTileRows<T>];
  const int64_t lda = g.csa;
  for (int64_t i0 = 0; i0 < g.m; i0 += kTileRows<T>) {
    const int64_t rows = std::min(kTileRows<T>, g.m - i0);
    const int64_t full = rows / L * L;
    const typename S::M tail = S::mask(rows - full);
    for (int64_t r = 0; r < rows; r += L) S::store(tile + r, S::zero());
    const T* a = g.a + i0;
    int64_t p = 0;
    const int64_t grouped = single ? 0 : g.k;  // one column per pass when single
    for (; p + 4 <= grouped; p += 4) {
      const T* a0 = a + p * lda;
      const T* a1 = a0 + lda;
      const T* a2 = a1 + lda;
      const T* a3 = a2 + lda;
      const typename S::V x0 = S::set1(g.b[p * g.rsb]), x1 = S::set1(g.b[(p + 1) * g.rsb]),
                          x2 = S::set1(g.b[(p + 2) * g.rsb]), x3 = S::set1(g.b[(p + 3) * g.rsb]);
      int64_t r = 0;
      for (; r < full; r += L) {
        typename S::V t = S::fma(S::load(a0 + r), x0, S::load(tile + r));
        typename S::V u = S::mul(S::load(a1 + r), x1);
        t = S::fma(S::load(a2 + r), x2, t);
        u = S::fma(S::load(a3 + r), x3, u);
        S::store(tile + r, S::add(t, u));
      }
      if (r < rows) {
        typename S::V t = S::fma(S::load(a0 + r, tail), x0, S::load(tile + r));
        typename S::V u = S::mul(S::load(a1 + r, tail), x1);
        t = S::fma(S::load(a2 + r, tail), x2, t);
        u = S::fma(S::load(a3 + r, tail), x3, u);
        S::store(tile + r, S::add(t, u));
      }
    }
    for (; p < g.k; ++p) {
      const T* a0 = a + p * lda;
      const typename S::V x0 = S::set1(g.b[p * g.rsb]);
      for (int64_t r = 0; r < rows; r += L) {
        const typename S::V v = r < full ? S::load(a0 + r) : S::load(a0 + r, tail);
        S::store(tile + r, S::fma(v, x0, S::load(tile + r)));
      }
    }
    write_tile(tile, rows, g.alpha, g.beta, g.c + i0 * g.rsc, g.rsc);
  }
}

// Y[r, j] (r < R, j < NV) = alpha * (A's row r) . X[:, j] + (first ? beta Y[r, j] :
// Y[r, j]) over kc steps; X's column j at x + j * ldx, contiguous; U accumulators per
// pair (Note [Few-vector products]).
template <class T, int R, int NV, int U>
void dot_rows_nv(const T* a, int64_t lda, const T* x, int64_t ldx, int64_t kc, T alpha, T beta, bool first, T* y,
                 int64_t incy, int64_t ldy) {
  using S = Simd<T>;
  constexpr int64_t L = S::kLanes;
  typename S::V acc[R][NV][U];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
#pragma GCC unroll 2
      for (int u = 0; u < U; ++u) acc[r][j][u] = S::zero();
  int64_t p = 0;
  for (; p + U * L <= kc; p += U * L) {
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) {
      typename S::V xv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) xv[j] = S::load(x + j * ldx + p + u * L);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const typename S::V av = S::load(a + r * lda + p + u * L);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[r][j][u] = S::fma(av, xv[j], acc[r][j][u]);
      }
    }
  }
  for (; p < kc; p += L) {
    const typename S::M m = S::mask(kc - p);
    typename S::V xv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) xv[j] = S::load(x + j * ldx + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const typename S::V av = S::load(a + r * lda + p, m);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j][0] = S::fma(av, xv[j], acc[r][j][0]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
#pragma GCC unroll 2
      for (int u = 1; u < U; ++u) acc[r][j][0] = S::add(acc[r][j][0], acc[r][j][u]);
      const T s = alpha * S::sum(acc[r][j][0]);
      T& c = y[r * incy + j * ldy];
      c = first ? (beta == T{} ? s : s + beta * c) : s + c;
    }
  }
}

// The row form for NV vectors (g.n == NV, Note [Few-vector products]).
template <class T, int NV>
void row_form_nv(const GemmArgs<T>& g, bool single) {
  for_x_chunks<T, NV, kXChunkAll<T>>(g, [&](const T* x, int64_t ldx, int64_t p0, int64_t kc) {
    const T* a = g.a + p0;
    const bool first = p0 == 0;
    int64_t i = 0;
    if (!single) {
      constexpr int R = NV <= 2 || TENFERRO_ISA_LEVEL >= 2 ? 4 : 2;
      for (; i + R <= g.m; i += R) {
        dot_rows_nv<T, R, NV, 1>(a + i * g.rsa, g.rsa, x, ldx, kc, g.alpha, g.beta, first, g.c + i * g.rsc, g.rsc,
                                 g.csc);
      }
    }
    for (; i < g.m; ++i) {
      dot_rows_nv<T, 1, NV, (NV <= 2 ? 2 : 1)>(a + i * g.rsa, g.rsa, x, ldx, kc, g.alpha, g.beta, first,
                                               g.c + i * g.rsc, g.rsc, g.csc);
    }
  });
}

// The column form for NV vectors (g.n == NV, Note [Few-vector products]): QP columns of A
// per pass into NV tiles of kRows rows.
template <class T, int NV>
void column_form_nv(const GemmArgs<T>& g, bool single) {
  using S = Simd<T>;
  using V = typename S::V;
  constexpr int64_t L = S::kLanes;
  constexpr int QP = NV <= 2 || TENFERRO_ISA_LEVEL >= 2 ? 4 : 2;
  constexpr int64_t kRows = kTileRows<T>;
  alignas(64) T tile[kTileRows<T> * NV];
  const int64_t lda = g.csa;
  for (int64_t i0 = 0; i0 < g.m; i0 += kRows) {
    const int64_t rows = std::min(kRows, g.m - i0);
    const int64_t full = rows / L * L;
    const typename S::M tail = S::mask(rows - full);
    for (int j = 0; j < NV; ++j)
      for (int64_t r = 0; r < rows; r += L) S::store(tile + j * kRows + r, S::zero());
    const T* a = g.a + i0;
    auto ld = [&](const T* q, int64_t r) { return r < full ? S::load(q + r) : S::load(q + r, tail); };
    int64_t p = 0;
    const int64_t grouped = single ? 0 : g.k;  // one column per pass when single
    for (; p + QP <= grouped; p += QP) {
      V xs[QP][NV];
#pragma GCC unroll 4
      for (int q = 0; q < QP; ++q)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) xs[q][j] = S::set1(g.b[(p + q) * g.rsb + j * g.csb]);
      const T* ap = a + p * lda;
      for (int64_t r = 0; r < rows; r += L) {
        V av[QP];
#pragma GCC unroll 4
        for (int q = 0; q < QP; ++q) av[q] = ld(ap + q * lda, r);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
          V t = S::load(tile + j * kRows + r);
#pragma GCC unroll 4
          for (int q = 0; q < QP; ++q) t = S::fma(av[q], xs[q][j], t);
          S::store(tile + j * kRows + r, t);
        }
      }
    }
    for (; p < g.k; ++p) {
      V xs[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) xs[j] = S::set1(g.b[p * g.rsb + j * g.csb]);
      const T* ap = a + p * lda;
      for (int64_t r = 0; r < rows; r += L) {
        const V av = ld(ap, r);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) S::store(tile + j * kRows + r, S::fma(av, xs[j], S::load(tile + j * kRows + r)));
      }
    }
    for (int j = 0; j < NV; ++j)
      write_tile(tile + j * kRows, rows, g.alpha, g.beta, g.c + i0 * g.rsc + j * g.csc, g.rsc);
  }
}

// Note [Complex matrix-vector products]: complex A and x are read as interleaved real
// vectors (re, im, re, im, ...). With s_a = -1 when A is conjugated and s_x = -1 when
// x is (else +1), one product a x contributes re = ar xr - s_a s_x ai xi and im =
// s_x ar xi + s_a ai xr.
// - Row form: per row two accumulators, P += a * x and Q += a * swap(x) lane by lane
//   (P holds ar xr, ai xi; Q holds ar xi, ai xr); at the end re = sum(P * pair(1, -s_a
//   s_x)) and im = sum(Q * pair(s_x, s_a)).
// - Column form: the tile of y += a * pair(xr, s_a xr) + swap(a) * pair(-s_a s_x xi, s_x
//   xi), two FMAs per vector of A.
// Both forms keep the real kernel's structure (rows four at a time, columns four per
// pass, one run at a time, stack chunks of x, masked tails over the 2n reals).
template <class R, int RR>
void cdot_rows(const R* a, int64_t lda, const R* x, int64_t n, typename Simd<R>::V sre, typename Simd<R>::V sim,
               std::complex<R> alpha, std::complex<R> beta, bool first, std::complex<R>* y, int64_t incy) {
  using S = Simd<R>;
  constexpr int64_t L = S::kLanes;
  constexpr int U = RR == 1 ? 2 : 1;
  typename S::V pa[RR][U], qa[RR][U];
#pragma GCC unroll 4
  for (int r = 0; r < RR; ++r)
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) pa[r][u] = qa[r][u] = S::zero();
  int64_t p = 0;  // reals
  for (; p + U * L <= n; p += U * L) {
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) {
      const typename S::V xv = S::load(x + p + u * L), xs = S::swap(xv);
#pragma GCC unroll 4
      for (int r = 0; r < RR; ++r) {
        const typename S::V av = S::load(a + r * lda + p + u * L);
        pa[r][u] = S::fma(av, xv, pa[r][u]);
        qa[r][u] = S::fma(av, xs, qa[r][u]);
      }
    }
  }
  for (; p < n; p += L) {
    const typename S::M m = S::mask(n - p);
    const typename S::V xv = S::load(x + p, m), xs = S::swap(xv);
#pragma GCC unroll 4
    for (int r = 0; r < RR; ++r) {
      const typename S::V av = S::load(a + r * lda + p, m);
      pa[r][0] = S::fma(av, xv, pa[r][0]);
      qa[r][0] = S::fma(av, xs, qa[r][0]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < RR; ++r) {
    if constexpr (U > 1) {
      pa[r][0] = S::add(pa[r][0], pa[r][1]);
      qa[r][0] = S::add(qa[r][0], qa[r][1]);
    }
    const std::complex<R> v = alpha * std::complex<R>(S::sum(S::mul(pa[r][0], sre)), S::sum(S::mul(qa[r][0], sim)));
    std::complex<R>& c = y[r * incy];
    c = first ? (beta == std::complex<R>{} ? v : v + beta * c) : v + c;
  }
}

template <class R>
void complex_row_form(const GemmArgs<std::complex<R>>& g, bool single) {
  using C = std::complex<R>;
  using S = Simd<R>;
  const R sa = g.conj_a ? R(-1) : R(1), sx = g.conj_b ? R(-1) : R(1);
  const typename S::V sre = S::pair(R(1), -sa * sx), sim = S::pair(sx, sa);
  for_x_chunks<C, 1, kXChunk<C>>(g, [&](const C* x, int64_t, int64_t p0, int64_t kc) {
    const R* xr = reinterpret_cast<const R*>(x);
    const R* a = reinterpret_cast<const R*>(g.a + p0);
    const int64_t lda = 2 * g.rsa;
    const bool first = p0 == 0;
    int64_t i = 0;
    if (!single) {
      for (; i + 4 <= g.m; i += 4) {
        cdot_rows<R, 4>(a + i * lda, lda, xr, 2 * kc, sre, sim, g.alpha, g.beta, first, g.c + i * g.rsc, g.rsc);
      }
    }
    for (; i < g.m; ++i)
      cdot_rows<R, 1>(a + i * lda, lda, xr, 2 * kc, sre, sim, g.alpha, g.beta, first, g.c + i * g.rsc, g.rsc);
  });
}

template <class R>
void complex_column_form(const GemmArgs<std::complex<R>>& g, bool single) {
  using C = std::complex<R>;
  using S = Simd<R>;
  constexpr int64_t L = S::kLanes;
  const R sa = g.conj_a ? R(-1) : R(1), sx = g.conj_b ? R(-1) : R(1);
  alignas(64) C tile_c[kTileRows<C>];
  R* tile = reinterpret_cast<R*>(tile_c);
  const int64_t lda = 2 * g.csa;
  // The two multipliers of column q (Note [Complex matrix-vector products]).
  auto v1 = [&](int64_t q) { return S::pair(g.b[q * g.rsb].real(), sa * g.b[q * g.rsb].real()); };
  auto v2 = [&](int64_t q) { return S::pair(-sa * sx * g.b[q * g.rsb].imag(), sx * g.b[q * g.rsb].imag()); };
  for (int64_t i0 = 0; i0 < g.m; i0 += kTileRows<C>) {
    const int64_t rows = std::min(kTileRows<C>, g.m - i0), n = 2 * rows;
    const int64_t full = n / L * L;
    const typename S::M tail = S::mask(n - full);
    for (int64_t r = 0; r < n; r += L) S::store(tile + r, S::zero());
    const R* a = reinterpret_cast<const R*>(g.a + i0);
    int64_t p = 0;
    const int64_t grouped = single ? 0 : g.k;
    for (; p + 4 <= grouped; p += 4) {
      const R* a0 = a + p * lda;
      const typename S::V m0 = v1(p), m1 = v1(p + 1), m2 = v1(p + 2), m3 = v1(p + 3);
      const typename S::V s0 = v2(p), s1 = v2(p + 1), s2 = v2(p + 2), s3 = v2(p + 3);
      for (int64_t r = 0; r < n; r += L) {
        const bool whole = r < full;
        auto ld = [&](const R* q) { return whole ? S::load(q + r) : S::load(q + r, tail); };
        const typename S::V c0 = ld(a0), c1 = ld(a0 + lda), c2 = ld(a0 + 2 * lda), c3 = ld(a0 + 3 * lda);
        typename S::V t = S::fma(c0, m0, S::load(tile + r));
        typename S::V u = S::mul(S::swap(c0), s0);
        t = S::fma(c1, m1, t);
        u = S::fma(S::swap(c1), s1, u);
        t = S::fma(c2, m2, t);
        u = S::fma(S::swap(c2), s2, u);
        t = S::fma(c3, m3, t);
        u = S::fma(S::swap(c3), s3, u);
        S::store(tile + r, S::add(t, u));
      }
    }
    for (; p < g.k; ++p) {
      const R* a0 = a + p * lda;
      const typename S::V m0 = v1(p), s0 = v2(p);
      for (int64_t r = 0; r < n; r += L) {
        const typename S::V c0 = r < full ? S::load(a0 + r) : S::load(a0 + r, tail);
        S::store(tile + r, S::fma(S::swap(c0), s0, S::fma(c0, m0, S::load(tile + r))));
      }
    }
    write_tile(tile_c, rows, g.alpha, g.beta, g.c + i0 * g.rsc, g.rsc);
  }
}

// Y[r, j] (r < RR rows, j < NV vectors) for complex A and X (Note [Complex few-vector
// products]): P[r][j] += a * x_j and Q[r][j] += swap(a) * x_j lane by lane; re = sum(P
// * pair(1, -s_a s_x)), im = sum(Q * pair(s_a, s_x)). X's column j at x + j * ldx reals.
template <class R, int RR, int NV>
void cdot_rows_nv(const R* a, int64_t lda, const R* x, int64_t ldx, int64_t n, typename Simd<R>::V sre,
                  typename Simd<R>::V sim, std::complex<R> alpha, std::complex<R> beta, bool first, std::complex<R>* y,
                  int64_t incy, int64_t ldy) {
  using S = Simd<R>;
  using V = typename S::V;
  constexpr int64_t L = S::kLanes;
  V pa[RR][NV], qa[RR][NV];
#pragma GCC unroll 4
  for (int r = 0; r < RR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) pa[r][j] = qa[r][j] = S::zero();
  int64_t p = 0;  // reals
  for (; p + L <= n; p += L) {
    V xv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) xv[j] = S::load(x + j * ldx + p);
#pragma GCC unroll 4
    for (int r = 0; r < RR; ++r) {
      const V av = S::load(a + r * lda + p), as = S::swap(av);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        pa[r][j] = S::fma(av, xv[j], pa[r][j]);
        qa[r][j] = S::fma(as, xv[j], qa[r][j]);
      }
    }
  }
  if (p < n) {
    const typename S::M m = S::mask(n - p);
    V xv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) xv[j] = S::load(x + j * ldx + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < RR; ++r) {
      const V av = S::load(a + r * lda + p, m), as = S::swap(av);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        pa[r][j] = S::fma(av, xv[j], pa[r][j]);
        qa[r][j] = S::fma(as, xv[j], qa[r][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < RR; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const std::complex<R> v = alpha * std::complex<R>(S::sum(S::mul(pa[r][j], sre)), S::sum(S::mul(qa[r][j], sim)));
      std::complex<R>& c = y[r * incy + j * ldy];
      c = first ? (beta == std::complex<R>{} ? v : v + beta * c) : v + c;
    }
  }
}

// The complex row form for NV vectors (g.n == NV).
template <class R, int NV>
void complex_row_form_nv(const GemmArgs<std::complex<R>>& g, bool single) {
  using C = std::complex<R>;
  using S = Simd<R>;
  const R sa = g.conj_a ? R(-1) : R(1), sx = g.conj_b ? R(-1) : R(1);
  const typename S::V sre = S::pair(R(1), -sa * sx), sim = S::pair(sa, sx);
  for_x_chunks<C, NV, kXChunkAll<C>>(g, [&](const C* x, int64_t ldx, int64_t p0, int64_t kc) {
    const R* xr = reinterpret_cast<const R*>(x);
    const R* a = reinterpret_cast<const R*>(g.a + p0);
    const int64_t lda = 2 * g.rsa;
    const bool first = p0 == 0;
    int64_t i = 0;
    if (!single) {
      constexpr int RR = NV <= 2 || TENFERRO_ISA_LEVEL >= 2 ? 2 : 1;
      for (; i + RR <= g.m; i += RR) {
        cdot_rows_nv<R, RR, NV>(a + i * lda, lda, xr, 2 * ldx, 2 * kc, sre, sim, g.alpha, g.beta, first,
                                g.c + i * g.rsc, g.rsc, g.csc);
      }
    }
    for (; i < g.m; ++i) {
      cdot_rows_nv<R, 1, NV>(a + i * lda, lda, xr, 2 * ldx, 2 * kc, sre, sim, g.alpha, g.beta, first, g.c + i * g.rsc,
                             g.rsc, g.csc);
    }
  });
}

// The complex column form for NV vectors (g.n == NV): QP columns of A per pass, each
// column and its swap shared by the NV tiles of Y; tile j += a * pair(xr, s_a xr) +
// swap(a) * pair(-s_a s_x xi, s_x xi) with x = X[q, j].
template <class R, int NV>
void complex_column_form_nv(const GemmArgs<std::complex<R>>& g, bool single) {
  using C = std::complex<R>;
  using S = Simd<R>;
  using V = typename S::V;
  constexpr int64_t L = S::kLanes;
  constexpr int QP = NV <= 2 || TENFERRO_ISA_LEVEL >= 2 ? 2 : 1;
  constexpr int64_t kRows = kTileRows<C>, kReals = 2 * kRows;
  const R sa = g.conj_a ? R(-1) : R(1), sx = g.conj_b ? R(-1) : R(1);
  alignas(64) C tile_c[kTileRows<C> * NV];
  R* tile = reinterpret_cast<R*>(tile_c);
  const int64_t lda = 2 * g.csa;
  auto m1 = [&](int64_t q, int j) {
    const C b = g.b[q * g.rsb + j * g.csb];
    return S::pair(b.real(), sa * b.real());
  };
  auto m2 = [&](int64_t q, int j) {
    const C b = g.b[q * g.rsb + j * g.csb];
    return S::pair(-sa * sx * b.imag(), sx * b.imag());
  };
  for (int64_t i0 = 0; i0 < g.m; i0 += kRows) {
    const int64_t rows = std::min(kRows, g.m - i0), n = 2 * rows;
    const int64_t full = n / L * L;
    const typename S::M tail = S::mask(n - full);
    for (int j = 0; j < NV; ++j)
      for (int64_t r = 0; r < n; r += L) S::store(tile + j * kReals + r, S::zero());
    const R* a = reinterpret_cast<const R*>(g.a + i0);
    auto ld = [&](const R* q, int64_t r) { return r < full ? S::load(q + r) : S::load(q + r, tail); };
    int64_t p = 0;
    const int64_t grouped = single ? 0 : g.k;  // one column per pass when single
    for (; p + QP <= grouped; p += QP) {
      V mr[QP][NV], mi[QP][NV];
#pragma GCC unroll 4
      for (int q = 0; q < QP; ++q)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
          mr[q][j] = m1(p + q, j);
          mi[q][j] = m2(p + q, j);
        }
      const R* ap = a + p * lda;
      for (int64_t r = 0; r < n; r += L) {
        V av[QP], as[QP];
#pragma GCC unroll 4
        for (int q = 0; q < QP; ++q) {
          av[q] = ld(ap + q * lda, r);
          as[q] = S::swap(av[q]);
        }
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
          V t = S::load(tile + j * kReals + r);
#pragma GCC unroll 4
          for (int q = 0; q < QP; ++q) t = S::fma(as[q], mi[q][j], S::fma(av[q], mr[q][j], t));
          S::store(tile + j * kReals + r, t);
        }
      }
    }
    for (; p < g.k; ++p) {
      V mr[NV], mi[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        mr[j] = m1(p, j);
        mi[j] = m2(p, j);
      }
      const R* ap = a + p * lda;
      for (int64_t r = 0; r < n; r += L) {
        const V av = ld(ap, r), as = S::swap(av);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
          S::store(tile + j * kReals + r, S::fma(as, mi[j], S::fma(av, mr[j], S::load(tile + j * kReals + r))));
        }
      }
    }
    for (int j = 0; j < NV; ++j) {
      write_tile(tile_c + j * kRows, rows, g.alpha, g.beta, g.c + i0 * g.rsc + j * g.csc, g.rsc);
    }
  }
}

}  // namespace
#endif

template <class T>
void matvec(const GemmArgs<T>& g, bool one_run) {
#if TENFERRO_ISA_LEVEL >= 1
  constexpr bool kComplex = std::is_same_v<T, c128> || std::is_same_v<T, c64>;
  const bool rows = g.csa == 1 && !(g.rsa == 1 && g.m > 1);
  if (rows || g.rsa == 1) {
    // Passes of up to four vectors over A (Note [Few-vector products]).
    constexpr int64_t kPass = 4;
    for (int64_t j0 = 0; j0 < g.n; j0 += kPass) {
      GemmArgs<T> v = g;
      v.n = std::min(kPass, g.n - j0);
      v.b = g.b + j0 * g.csb;
      v.c = g.c + j0 * g.csc;
      if constexpr (kComplex) {
        using R = typename T::value_type;
        switch (v.n) {
          case 1: rows ? complex_row_form<R>(v, one_run) : complex_column_form<R>(v, one_run); break;
          case 2: rows ? complex_row_form_nv<R, 2>(v, one_run) : complex_column_form_nv<R, 2>(v, one_run); break;
          case 3: rows ? complex_row_form_nv<R, 3>(v, one_run) : complex_column_form_nv<R, 3>(v, one_run); break;
          default: rows ? complex_row_form_nv<R, 4>(v, one_run) : complex_column_form_nv<R, 4>(v, one_run); break;
        }
      } else {
        switch (v.n) {
          case 1: rows ? row_form<T>(v, one_run) : column_form<T>(v, one_run); break;
          case 2: rows ? row_form_nv<T, 2>(v, one_run) : column_form_nv<T, 2>(v, one_run); break;
          case 3: rows ? row_form_nv<T, 3>(v, one_run) : column_form_nv<T, 3>(v, one_run); break;
          default: rows ? row_form_nv<T, 4>(v, one_run) : column_form_nv<T, 4>(v, one_run); break;
        }
      }
    }
    return;
  }
#else
  (void)one_run;
#endif
  // The baseline, and an A with neither form (not planned: dot_plan.cc takes one of
  // the two): the plain-loop GEMM of this level.
  gemm_naive<T>(g);
}

template void matvec<double>(const GemmArgs<double>&, bool);
template void matvec<float>(const GemmArgs<float>&, bool);
template void matvec<c128>(const GemmArgs<c128>&, bool);
template void matvec<c64>(const GemmArgs<c64>&, bool);

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS

TENFERRO_ISA_END
