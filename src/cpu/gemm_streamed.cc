// The streamed kernels of the plain-loop GEMM (Note [ISA kernels] in gemm_kernels.cc):
// tall products against a narrow B, A read once in its own order; compiled once per ISA
// level like the other kernel files.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include <immintrin.h>

#include "gemm.h"
#include "tenferro/core/isa_region.h"

TENFERRO_ISA_BEGIN
#include "simd.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

#if TENFERRO_ISA_LEVEL >= 2
constexpr int64_t kStreamSlice = 16;
#else
constexpr int64_t kStreamSlice = 8;
#endif

// Note [Streamed tall products]: C (m x n, rows at any stride) = A B with A tall (m long;
// column-major, or row-major below), B narrow (n <= 32) and a long contraction - the
// matrix chain's steps [465 x 396] x [396 x 21], where A is read once from memory and
// nothing else is large. BLIS's unpacked kernels (and the register-blocked kernels
// above) walk A as strips of 6-16 rows across all of k: one or two cache lines per
// column, K lines apart, which left the hardware prefetchers behind (cold: 13-19
// GFLOP/s against 27-29 warm). Here A is read in its own order: a chunk of kStreamRows
// rows keeps its C block as a stack tile in L1 (kStreamRows x n), and the contraction
// advances four columns at a time; each 8-row slice loads its 8 x 4 piece of A once
// into registers and sweeps every column j of the tile (two tile vectors loaded, four
// broadcasts of B, eight FMAs, two stores). Each slice prefetches its next four
// columns. A row-major A (contraction contiguous) is read as four-element runs of 8
// rows, transposed in registers, and prefetched a line ahead per row. A standalone
// chain of 100 column-major products (66 MB of A, one thread, 2026-11-30): best of 30
// interleaved runs 11.6-14.5 ms against BLIS's 16.5-24.5 ms (medians 14-20 against
// 20-30 ms); warm (A in L2) 22 GFLOP/s against BLIS's 27; row-major A on par with BLIS.
// In the matrix-chain instance (half its products each way), time inside dot_general,
// median of 8 runs: 18.6 -> 17.9 ms at one thread, 13.4 -> 10.0 ms at two. The tile is
// written to C once per row chunk, at C's row stride: a C whose narrow side is fastest
// (the transposed form's C^T of a column-major narrow-by-tall C) costs no packing.
constexpr int64_t kStreamRows = 96;

#if TENFERRO_ISA_LEVEL >= 1
namespace {
// One 8-row slice (`rows` < 8 when kPartial) and four contraction steps. Column-major A
// (element (r, q) at a[r + q * lda]): two vectors per step. Row-major A (a[r * lda +
// q]): a four-element run per row, transposed in registers.
#if TENFERRO_ISA_LEVEL < 2
template <bool kPartial, bool kRowMajor>
void stream_slice_f64(int64_t n, const double* a, int64_t lda, const double* b, int64_t rsb, int64_t csb, double* tile,
                      int64_t ldt, int64_t rows, __m256i m0, __m256i m1, bool prefetch) {
  __m256d lo[4], hi[4];
  if constexpr (kRowMajor) {
    const __m256d zero = _mm256_setzero_pd();
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      lo[r] = !kPartial || r < rows ? _mm256_loadu_pd(a + r * lda) : zero;
      hi[r] = !kPartial || r + 4 < rows ? _mm256_loadu_pd(a + (r + 4) * lda) : zero;
    }
    transpose4(lo[0], lo[1], lo[2], lo[3]);  // lo[q]: rows 0..3 at step q
    transpose4(hi[0], hi[1], hi[2], hi[3]);  // hi[q]: rows 4..7 at step q
    if (prefetch) {
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        if (!kPartial || r < rows) _mm_prefetch(reinterpret_cast<const char*>(a + r * lda + 8), _MM_HINT_T0);
      }
    }
  } else {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      lo[q] = kPartial ? _mm256_maskload_pd(a + q * lda, m0) : _mm256_loadu_pd(a + q * lda);
      hi[q] = kPartial ? _mm256_maskload_pd(a + q * lda + 4, m1) : _mm256_loadu_pd(a + q * lda + 4);
    }
    if (prefetch) {
#pragma GCC unroll 4
      for (int q = 4; q < 8; ++q) {
        _mm_prefetch(reinterpret_cast<const char*>(a + q * lda), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(a + q * lda + 7), _MM_HINT_T0);
      }
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    double* t = tile + j * ldt;
    __m256d c0 = _mm256_load_pd(t), c1 = _mm256_load_pd(t + 4);
    const double* bj = b + j * csb;
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m256d y = _mm256_broadcast_sd(bj + q * rsb);
      c0 = _mm256_fmadd_pd(lo[q], y, c0);
      c1 = _mm256_fmadd_pd(hi[q], y, c1);
    }
    _mm256_store_pd(t, c0);
    _mm256_store_pd(t + 4, c1);
  }
}
#endif

#if TENFERRO_ISA_LEVEL >= 2
// Note [Streamed slices on AVX-512]: with 512-bit vectors a slice is 16 rows (two
// vectors per contraction step, masked loads for a partial slice), so each sweep over
// the tile does the same loads, broadcasts and stores as the 8-row AVX2 slice for twice
// the arithmetic. Zen 5 (2026-11-30; 107 GFLOP/s of independent 512-bit FMAs on one
// core against 55 with 256-bit ones), matrix chain, medians of interleaved runs against
// the 8-row slices: 8.52 -> 5.27 ms at one thread (4 pairs), 4.82 -> 3.87 ms at two (3).

// One 16-row slice (`rows` < 16 when kPartial) and four contraction steps; lo holds rows
// 0..7, hi rows 8..15 (masks m0, m1 for a partial slice).
template <bool kPartial, bool kRowMajor>
void stream_slice_f64(int64_t n, const double* a, int64_t lda, const double* b, int64_t rsb, int64_t csb, double* tile,
                      int64_t ldt, int64_t rows, vec::M m0, vec::M m1, bool prefetch) {
  __m512d lo[4], hi[4];
  if constexpr (kRowMajor) {
    // Four-element runs of 16 rows, transposed four rows at a time and joined in pairs.
    const __m256d zero = _mm256_setzero_pd();
    __m256d t[4][4];
#pragma GCC unroll 4
    for (int g4 = 0; g4 < 4; ++g4) {
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const int row = 4 * g4 + r;
        t[g4][r] = !kPartial || row < rows ? _mm256_loadu_pd(a + row * lda) : zero;
      }
      transpose4(t[g4][0], t[g4][1], t[g4][2], t[g4][3]);  // t[g4][q]: rows 4 g4..4 g4 + 3 at step q
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      // (two masked broadcasts: GCC 12 warns on the undefined upper
      // half that _mm512_castpd256_pd512, _mm512_zextpd256_pd512 and _mm512_insertf64x4 use)
      lo[q] = _mm512_mask_broadcast_f64x4(_mm512_maskz_broadcast_f64x4(0x0f, t[0][q]), 0xf0, t[1][q]);
      hi[q] = _mm512_mask_broadcast_f64x4(_mm512_maskz_broadcast_f64x4(0x0f, t[2][q]), 0xf0, t[3][q]);
    }
    if (prefetch) {
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r) {
        if (!kPartial || r < rows) _mm_prefetch(reinterpret_cast<const char*>(a + r * lda + 8), _MM_HINT_T0);
      }
    }
  } else {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      lo[q] = kPartial ? _mm512_maskz_loadu_pd(m0, a + q * lda) : _mm512_loadu_pd(a + q * lda);
      hi[q] = kPartial ? _mm512_maskz_loadu_pd(m1, a + q * lda + 8) : _mm512_loadu_pd(a + q * lda + 8);
    }
    if (prefetch) {
#pragma GCC unroll 4
      for (int q = 4; q < 8; ++q) {
        _mm_prefetch(reinterpret_cast<const char*>(a + q * lda), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(a + q * lda + 8), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(a + q * lda + 15), _MM_HINT_T0);
      }
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    double* tj = tile + j * ldt;
    __m512d c0 = _mm512_load_pd(tj), c1 = _mm512_load_pd(tj + 8);
    const double* bj = b + j * csb;
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m512d y = _mm512_set1_pd(bj[q * rsb]);
      c0 = _mm512_fmadd_pd(lo[q], y, c0);
      c1 = _mm512_fmadd_pd(hi[q], y, c1);
    }
    _mm512_store_pd(tj, c0);
    _mm512_store_pd(tj + 8, c1);
  }
}
#else
#endif

template <bool kRowMajor>
void streamed_any_f64(const GemmArgs<double>& g) {
  constexpr int64_t kSlice = kStreamSlice;
  alignas(64) double tile[kStreamRows * kStreamMaxN];
  const int64_t n = g.n, k = g.k, lda = kRowMajor ? g.rsa : g.csa;
  const int64_t row_step = kRowMajor ? lda : 1, col_step = kRowMajor ? 1 : lda;
  for (int64_t i0 = 0; i0 < g.m; i0 += kStreamRows) {
    const int64_t rows = std::min(kStreamRows, g.m - i0);
    const int64_t full = rows / kSlice, rem = rows % kSlice, ldt = (rows + kSlice - 1) / kSlice * kSlice;
    const vec::M m0 = vec::mask(rem), m1 = vec::mask(rem - kSlice / 2);
    std::fill(tile, tile + ldt * n, 0.0);
    const double* a = g.a + i0 * row_step;
    int64_t p = 0;
    for (; p + 4 <= k; p += 4) {
      const bool prefetch = p + 8 <= k;
      const double* ap = a + p * col_step;
      const double* bp = g.b + p * g.rsb;
      for (int64_t s = 0; s < full; ++s) {
        stream_slice_f64<false, kRowMajor>(n, ap + kSlice * s * row_step, lda, bp, g.rsb, g.csb, tile + kSlice * s, ldt,
                                           kSlice, m0, m1, prefetch);
      }
      if (rem != 0) {
        stream_slice_f64<true, kRowMajor>(n, ap + kSlice * full * row_step, lda, bp, g.rsb, g.csb, tile + kSlice * full,
                                          ldt, rem, m0, m1, prefetch);
      }
    }
    for (; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) {
        const double y = g.b[p * g.rsb + j * g.csb];
        for (int64_t r = 0; r < rows; ++r) tile[r + j * ldt] += a[r * row_step + p * col_step] * y;
      }
    }
    // C's rows at any stride: a row-major C is the transposed form's column-major one
    // (Note [Streamed tall products]).
    const int64_t rsc = g.rsc;
    for (int64_t j = 0; j < n; ++j) {
      double* c = g.c + i0 * rsc + j * g.csc;
      const double* t = tile + j * ldt;
      if (g.beta == 0.0) {
        for (int64_t r = 0; r < rows; ++r) c[r * rsc] = g.alpha * t[r];
      } else {
        for (int64_t r = 0; r < rows; ++r) c[r * rsc] = g.alpha * t[r] + g.beta * c[r * rsc];
      }
    }
  }
}
}  // namespace
#endif

#if TENFERRO_ISA_LEVEL >= 2
namespace {
// Note [Streamed row-major products]: with A row-major (its rows contiguous along the
// contraction: the tall operand of C^T = B^T A^T when it was the rhs, or a C-order
// array) and B's rows contiguous (csb == 1), R rows of C are held in registers whole (n
// <= 32: NV = ceil(n / 8) vectors per row, R x NV <= 24 accumulators) for the whole
// contraction: each step loads B's row p (NV vectors) and broadcasts A's R elements of
// column p, then does R x NV FMAs; C is read and written once. A is read as R rows
// front to back, and the next R rows are prefetched meanwhile, one line per row every
// eight steps (the rows of consecutive blocks are consecutive in memory, so A is read
// nearly in order). A B whose rows are not contiguous is packed by the caller
// (streamed_wants_b_rows, pack_b_rows in gemm.h): dot_general does it once per product,
// before its pieces. Against the tile kernel's row-major form (four-element runs of 16
// rows transposed in registers, 96 rows in flight, the C tile loaded and stored every
// four steps), 505 x 21 x 462 standalone, Zen 5, 2026-12-03: 84-87 against 63 GFLOP/s
// with A from memory, 93 against 84 with A in cache; the matrix chain's row-major steps
// had run at 53-72 GFLOP/s against 80-95 for its column-major ones. Processing the
// contraction in slices (B packed per 128 or 256 steps on the stack) gave 62-73 GFLOP/s
// cold: A read as row segments. A dot-product form (R rows x C columns of accumulators,
// lanes summed at the end) was slower still (30-54): it streams all of B from L2 for
// every few rows of A.
template <int R, int NV>
void rows_block_f64(const double* a, int64_t lda, const double* b, int64_t ldb, int64_t k, double* c, int64_t rsc,
                    int64_t csc, int64_t n, double alpha, double beta) {
  __m512d acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_pd();
  }
  const vec::M last = vec::mask(n - 8 * (NV - 1));
  auto step = [&](int64_t p) {
    __m512d y[NV];
#pragma GCC unroll 4
    for (int v = 0; v + 1 < NV; ++v) y[v] = _mm512_loadu_pd(b + p * ldb + 8 * v);
    y[NV - 1] = _mm512_maskz_loadu_pd(last, b + p * ldb + 8 * (NV - 1));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512d x = _mm512_set1_pd(a[r * lda + p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_pd(x, y[v], acc[r][v]);
    }
  };
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(a + (R + r) * lda + p), _MM_HINT_T0);
#pragma GCC unroll 8
    for (int64_t q = 0; q < 8; ++q) step(p + q);
  }
  for (; p < k; ++p) step(p);
  const __m512d va = _mm512_set1_pd(alpha), vb = _mm512_set1_pd(beta);
  if (csc == 1) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const vec::M m = v + 1 < NV ? vec::mask(8) : last;
        double* out = c + r * rsc + 8 * v;
        __m512d z = _mm512_mul_pd(va, acc[r][v]);
        if (beta != 0.0) z = _mm512_fmadd_pd(vb, _mm512_maskz_loadu_pd(m, out), z);
        _mm512_mask_storeu_pd(out, m, z);
      }
    }
  } else {
    alignas(64) double t[R][8 * NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) _mm512_store_pd(&t[r][8 * v], acc[r][v]);
    }
    for (int r = 0; r < R; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double& out = c[r * rsc + j * csc];
        out = beta == 0.0 ? alpha * t[r][j] : alpha * t[r][j] + beta * out;
      }
    }
  }
}

using RowsBlockFn = void (*)(const double*, int64_t, const double*, int64_t, int64_t, double*, int64_t, int64_t,
                             int64_t, double, double);
// Rows per block for NV vectors per row: at most 24 accumulators.
constexpr int rows_for(int nv) { return nv <= 3 ? 8 : 6; }
template <int NV, int... Rs>
constexpr std::array<RowsBlockFn, 8> rows_row(std::integer_sequence<int, Rs...>) {
  return {(Rs + 1 <= rows_for(NV) ? &rows_block_f64<(Rs + 1 <= rows_for(NV) ? Rs + 1 : 1), NV> : nullptr)...};
}
// kRowsBlocks[NV - 1][R - 1]: the block of R rows with NV vectors per row.
constexpr std::array<std::array<RowsBlockFn, 8>, 4> kRowsBlocks = {
    rows_row<1>(std::make_integer_sequence<int, 8>()), rows_row<2>(std::make_integer_sequence<int, 8>()),
    rows_row<3>(std::make_integer_sequence<int, 8>()), rows_row<4>(std::make_integer_sequence<int, 8>())};

// C = alpha A B + beta C with A row-major (csa == 1) and B's rows contiguous (csb == 1),
// 1 <= n <= kStreamMaxN, any C strides.
void streamed_rows_f64(const GemmArgs<double>& g) {
  const int nv = static_cast<int>((g.n + 7) / 8);
  const int64_t rmax = rows_for(nv);
  for (int64_t i0 = 0; i0 < g.m; i0 += rmax) {
    const int64_t rows = std::min(rmax, g.m - i0);
    kRowsBlocks[static_cast<size_t>(nv - 1)][static_cast<size_t>(rows - 1)](
        g.a + i0 * g.rsa, g.rsa, g.b, g.rsb, g.k, g.c + i0 * g.rsc, g.rsc, g.csc, g.n, g.alpha, g.beta);
  }
}
}  // namespace
#endif

void streamed_f64(const GemmArgs<double>& g) {
#if TENFERRO_ISA_LEVEL >= 1
  if (g.rsa == 1) {
    streamed_any_f64<false>(g);
#if TENFERRO_ISA_LEVEL >= 2
  } else if (streamed_rows_form(IsaLevel::kAvx512, g.rsa, g.csa, g.csb, false) && g.n >= 1) {
    streamed_rows_f64(g);  // Note [Streamed row-major products]
#endif
  } else {
    streamed_any_f64<true>(g);
  }
#else
  gemm_naive<double>(g);
#endif
}

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
TENFERRO_ISA_END
