// Note [ISA kernels]: the hand-written SIMD kernels of the CPU engine live in files
// compiled once per ISA level (CMake: tenferro_isa_sources): the plain-loop GEMM's
// small, thin, dot-product, short-side and streamed-output forms here, its streamed
// forms in gemm_streamed.cc, the blocked AVX-512 GEMM in gemm_blocked.cc, batch lanes
// and matrix-vector products in gemm_lanes.cc and gemm_matvec.cc, the copy kernels in
// copy_kernel.cc, copy_transpose.cc and copy_blocked.cc. Each
// copy defines its kernels in namespace detail::<level> (scalar, avx2, avx512), with
// TENFERRO_ISA_LEVEL (0, 1, 2) selecting the code and TENFERRO_ISA_BEGIN applying the
// level's target attributes to the functions of its file only: the headers are
// included before it, so inline functions and templates from headers are compiled for
// the library's baseline in every copy, and the linker can never pick an AVX-512 copy
// of a shared inline function for a machine without AVX-512. gemm.cc's dispatchers call
// the copy for the engine's usable ISA level (CpuCaps::usable_isa(), capped by
// TENFERRO_MAX_ISA), so every level is reachable and testable on one machine.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "gemm.h"
#include "tenferro/core/isa_region.h"

TENFERRO_ISA_BEGIN
#include "simd.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

// Note [Plain-loop GEMM]: the loop order follows the strides so that the innermost loop
// is unit-stride and vectorizes: with column-major A and C (unit row strides) each
// column of C accumulates scaled columns of A (axpy form); with A's rows and B's
// columns contiguous each element is a dot product; otherwise plain triple loops.
// It has no packing and no per-call setup, which is what small products need.
#if TENFERRO_ISA_LEVEL >= 1
namespace {
// Dot-product form for f64 with A's rows and B's columns contiguous along k: 2 x 2
// blocks of C, four vector accumulators sharing each load (Note [Plain-loop GEMM]).
double hsum(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
void dot_form_f64(const GemmArgs<double>& g) {
  const int64_t k4 = g.k / 4 * 4;
  auto store = [&](int64_t i, int64_t j, double acc) {
    double& c = g.c[i * g.rsc + j * g.csc];
    c = g.beta == 0.0 ? g.alpha * acc : g.alpha * acc + g.beta * c;
  };
  int64_t j = 0;
  for (; j + 2 <= g.n; j += 2) {
    const double* b0 = g.b + j * g.csb;
    const double* b1 = b0 + g.csb;
    int64_t i = 0;
    for (; i + 2 <= g.m; i += 2) {
      const double* a0 = g.a + i * g.rsa;
      const double* a1 = a0 + g.rsa;
      __m256d s00 = _mm256_setzero_pd(), s01 = s00, s10 = s00, s11 = s00;
      for (int64_t p = 0; p < k4; p += 4) {
        const __m256d x0 = _mm256_loadu_pd(a0 + p), x1 = _mm256_loadu_pd(a1 + p);
        const __m256d y0 = _mm256_loadu_pd(b0 + p), y1 = _mm256_loadu_pd(b1 + p);
        s00 = _mm256_fmadd_pd(x0, y0, s00);
        s01 = _mm256_fmadd_pd(x0, y1, s01);
        s10 = _mm256_fmadd_pd(x1, y0, s10);
        s11 = _mm256_fmadd_pd(x1, y1, s11);
      }
      double r00 = hsum(s00), r01 = hsum(s01), r10 = hsum(s10), r11 = hsum(s11);
      for (int64_t p = k4; p < g.k; ++p) {
        r00 += a0[p] * b0[p];
        r01 += a0[p] * b1[p];
        r10 += a1[p] * b0[p];
        r11 += a1[p] * b1[p];
      }
      store(i, j, r00);
      store(i, j + 1, r01);
      store(i + 1, j, r10);
      store(i + 1, j + 1, r11);
    }
    for (; i < g.m; ++i) {
      const double* a0 = g.a + i * g.rsa;
      __m256d s0 = _mm256_setzero_pd(), s1 = s0;
      for (int64_t p = 0; p < k4; p += 4) {
        const __m256d x0 = _mm256_loadu_pd(a0 + p);
        s0 = _mm256_fmadd_pd(x0, _mm256_loadu_pd(b0 + p), s0);
        s1 = _mm256_fmadd_pd(x0, _mm256_loadu_pd(b1 + p), s1);
      }
      double r0 = hsum(s0), r1 = hsum(s1);
      for (int64_t p = k4; p < g.k; ++p) {
        r0 += a0[p] * b0[p];
        r1 += a0[p] * b1[p];
      }
      store(i, j, r0);
      store(i, j + 1, r1);
    }
  }
  for (; j < g.n; ++j) {
    const double* b0 = g.b + j * g.csb;
    for (int64_t i = 0; i < g.m; ++i) {
      const double* a0 = g.a + i * g.rsa;
      __m256d s0 = _mm256_setzero_pd();
      for (int64_t p = 0; p < k4; p += 4) s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a0 + p), _mm256_loadu_pd(b0 + p), s0);
      double r0 = hsum(s0);
      for (int64_t p = k4; p < g.k; ++p) r0 += a0[p] * b0[p];
      store(i, j, r0);
    }
  }
}
// Small f64 products with A and C column-major (unit row strides), B any strides:
// 8 x JW register blocks of C accumulate over p (Note [Plain-loop GEMM]). Meant for
// short contractions (k <= kSmallMaxK), where A's strip (8 x k) stays in L1 across the
// column blocks.
// Blocks are 8 x 6 (12 accumulators, the most that fit with A's two vectors and B's
// broadcast in 16 registers). A strip's rows decide the block's vectors (SmallRows): a
// strip of 4 or fewer rows uses one vector (half the work of a masked pair), and only a
// partial vector is masked (masked loads are slower). alpha and beta are read once into
// locals, since C's stores could alias the arguments and would force reloads; alpha = 1
// skips its multiply.
// Note [Small blocks on AVX-512]: with 512-bit vectors (AVX-512F) the same blocks are 16
// rows by 6 columns: twice the arithmetic per load, broadcast and store of the 8-row
// block, and masked loads and stores are native (measured on Zen 5, 2026-11-30: lm
// sentence_4 0.87x, brackets 0.91x, sentence_3 0.94x the 8-row blocks' time at one
// thread).
// The vector type of the level: simd.h (vec = Simd<double>).

// Rows of a small-kernel strip: two vectors.
constexpr int64_t kSmallStripRows = 2 * vec::kLanes;

// A strip's rows decide the block's vectors: a full strip (two vectors), exactly half
// (one), up to half (one, masked), more than half (two, the second masked).
enum class SmallRows { kFull, kHalf, kUpToHalf, kOverHalf };
template <int JW, SmallRows R>
void small_block_f64(const GemmArgs<double>& g, int64_t i0, int64_t j0) {
  constexpr int64_t L = vec::kLanes;
  constexpr int NV = R == SmallRows::kHalf || R == SmallRows::kUpToHalf ? 1 : 2;
  constexpr bool kMaskLast = R == SmallRows::kUpToHalf || R == SmallRows::kOverHalf;
  const int64_t rows = std::min<int64_t>(kSmallStripRows, g.m - i0);
  const vec::M mask = vec::mask(NV == 1 ? rows : rows - L);
  const double* __restrict a = g.a + i0;
  const double* __restrict b = g.b + j0 * g.csb;
  const int64_t k = g.k, sa = g.csa, rb = g.rsb, cb = g.csb, ldc = g.csc;
  const double alpha = g.alpha, beta = g.beta;
  double* const c0 = g.c + i0 + j0 * ldc;
  auto load = [&](const double* x, int v) {
    return kMaskLast && v == NV - 1 ? vec::load(x + L * v, mask) : vec::load(x + L * v);
  };
  vec::V acc[NV][JW];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v)
#pragma GCC unroll 6
    for (int t = 0; t < JW; ++t) acc[v][t] = vec::zero();
  for (int64_t p = 0; p < k; ++p) {
    vec::V x[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) x[v] = load(a + p * sa, v);
    const double* bp = b + p * rb;
#pragma GCC unroll 6
    for (int t = 0; t < JW; ++t) {
      const vec::V y = vec::set1(bp[t * cb]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[v][t] = vec::fma(x[v], y, acc[v][t]);
    }
  }
  const vec::V av = vec::set1(alpha), bv = vec::set1(beta);
#pragma GCC unroll 6
  for (int t = 0; t < JW; ++t) {
    double* c = c0 + t * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      vec::V r = alpha == 1.0 ? acc[v][t] : vec::mul(av, acc[v][t]);
      if (beta != 0.0) r = vec::fma(bv, load(c, v), r);
      if (kMaskLast && v == NV - 1) {
        vec::store(c + L * v, r, mask);
      } else {
        vec::store(c + L * v, r);
      }
    }
  }
}

template <int JW>
void small_block_any_f64(const GemmArgs<double>& g, int64_t i0, int64_t j0) {
  constexpr int64_t L = vec::kLanes;
  const int64_t rows = g.m - i0;
  if (rows >= 2 * L) {
    small_block_f64<JW, SmallRows::kFull>(g, i0, j0);
  } else if (rows == L) {
    small_block_f64<JW, SmallRows::kHalf>(g, i0, j0);
  } else if (rows < L) {
    small_block_f64<JW, SmallRows::kUpToHalf>(g, i0, j0);
  } else {
    small_block_f64<JW, SmallRows::kOverHalf>(g, i0, j0);
  }
}

// Note [Small-product prefetch]: a batch of small products that streams from memory
// (lm sentence_3: 1100 products of 144 x 12 x 12, 15 MB of A in and 15 MB of C out)
// waits on memory at every 8-row strip, whose A and C lines lie in k + n different
// columns: the hardware prefetcher does not run ahead across those streams (11 ms for
// the batch, against 2.4 ms for a 15 MB memcpy). When the caller names the next
// product (GemmArgs::next_a / next_b / next_c), every register block prefetches an
// equal share of the next product's lines in address order, so the whole next product
// arrives while this one computes: 3.6 ms for the same batch (standalone, 1 thread,
// 2026-11-30). Prefetching strips of the current product a few strips ahead reached
// only 5-7 ms.
// Operands under 4 KB are left to the hardware prefetcher (consecutive small products
// lie one after another): issuing their prefetches cost more than it saved (1900
// products of 16 x 16 x 16: 0.87 ms without hints, 1.54 ms with them).
class LinePrefetch {
 public:
  static constexpr int64_t kMinBytes = 4096;
  // Columns of `rows` doubles, `ld` elements apart; null `base` or fewer than
  // kMinBytes: nothing to prefetch.
  LinePrefetch(const double* base, int64_t rows, int64_t cols, int64_t ld)
      : base_(reinterpret_cast<uintptr_t>(base)), bytes_(rows * 8), ld_bytes_(ld * 8),
        cols_(base != nullptr && rows * cols * 8 >= kMinBytes ? cols : 0) {
    lines_per_col_ = cols_ > 0 ? (bytes_ + 126) / 64 : 0;  // a column may straddle one extra line
  }
  int64_t lines() const { return cols_ * lines_per_col_; }
  // Issues up to `count` prefetches, continuing where the previous call stopped.
  void issue(int64_t count) {
    for (; count > 0 && col_ < cols_; --count) {
      const uintptr_t start = base_ + static_cast<uintptr_t>(col_ * ld_bytes_);
      const uintptr_t line = (start & ~uintptr_t{63}) + static_cast<uintptr_t>(64 * line_);
      _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
      if (++line_ == lines_per_col_ || line + 64 >= start + static_cast<uintptr_t>(bytes_)) {
        line_ = 0;
        ++col_;
      }
    }
  }

 private:
  uintptr_t base_;
  int64_t bytes_, ld_bytes_, cols_, lines_per_col_ = 0, col_ = 0, line_ = 0;
};

// Note [Small-kernel loop order]: with few column blocks the 8-row strips are
// outermost: a strip of A (8 x k) stays in L1 while it meets every column block of B,
// so A is read from memory once. With many columns and an A that fits in L2 (at most
// kSmallColumnsMaxA elements) the 6-column blocks are outermost instead: B's block stays
// in L1 and C is written down six columns in address order, where the strip order
// would touch one line in every column of C per strip (lm sentence_3's 1584 x 1100 x 11,
// a 14 MB C). Either way the other operand is read once per block from cache.
void small_f64(const GemmArgs<double>& g) {
  // B is prefetched along whichever of its dimensions is contiguous (none: not at all).
  const bool b_cols = g.rsb == 1;
  LinePrefetch pa(g.next_a, g.m, g.k, g.csa), pc(g.next_c, g.m, g.n, g.csc),
      pb(b_cols || g.csb == 1 ? g.next_b : nullptr, b_cols ? g.k : g.n, b_cols ? g.n : g.k, b_cols ? g.csb : g.rsb);
  const int64_t strips = (g.m + kSmallStripRows - 1) / kSmallStripRows, col_blocks = (g.n + kSmallCols - 1) / kSmallCols;
  // Each block's share of the prefetches (no divisions without a hint: tiny products
  // take a few hundred cycles).
  int64_t qa = 0, qb = 0, qc = 0;
  if (pa.lines() + pb.lines() + pc.lines() > 0) {
    const int64_t blocks = strips * col_blocks;
    qa = (pa.lines() + blocks - 1) / blocks;
    qb = (pb.lines() + blocks - 1) / blocks;
    qc = (pc.lines() + blocks - 1) / blocks;
  }
  auto block = [&](int64_t i0, int64_t j0) {
    pa.issue(qa);
    pb.issue(qb);
    pc.issue(qc);
    switch (std::min<int64_t>(kSmallCols, g.n - j0)) {
      case 6: small_block_any_f64<6>(g, i0, j0); break;
      case 5: small_block_any_f64<5>(g, i0, j0); break;
      case 4: small_block_any_f64<4>(g, i0, j0); break;
      case 3: small_block_any_f64<3>(g, i0, j0); break;
      case 2: small_block_any_f64<2>(g, i0, j0); break;
      default: small_block_any_f64<1>(g, i0, j0); break;
    }
  };
  if (col_blocks > 2 && g.m * g.k <= kSmallColumnsMaxA) {
    for (int64_t j0 = 0; j0 < g.n; j0 += kSmallCols)
      for (int64_t i0 = 0; i0 < g.m; i0 += kSmallStripRows) block(i0, j0);
  } else {
    for (int64_t i0 = 0; i0 < g.m; i0 += kSmallStripRows)
      for (int64_t j0 = 0; j0 < g.n; j0 += kSmallCols) block(i0, j0);
  }
}

// Note [Streamed-output products]: a product whose C is far larger than the caches
// (MERA's 177147 x 243 x 50 and 1026 x 33048 x 40: 270-345 MB) with a short
// contraction is bound by writing C. OpenBLAS first zeroes C (beta = 0) and then reads
// and writes it again; BLIS and the small kernel write it once, but each ordinary store
// first reads the line (write-allocate). Here C is computed in 128 x 6 tiles in an L1
// stack buffer by the small kernel's blocks and each tile column is written with
// non-temporal stores (32-byte aligned runs; a column's unaligned head and tail with
// ordinary stores), so C's lines are written once and never read. Whichever of A
// (m x k) and B (k x n) fits in L2 stays there: with A small the column blocks are
// outermost, otherwise the row chunks.
void stream_one(double* c, double v) {
  long long bits;
  std::memcpy(&bits, &v, sizeof bits);
  _mm_stream_si64(reinterpret_cast<long long*>(c), bits);
}
void tile_to_c(const double* tile, int64_t rows, double* c) {
  int64_t r = 0;
  for (; r < rows && (reinterpret_cast<uintptr_t>(c + r) & 31) != 0; ++r) stream_one(c + r, tile[r]);
  for (; r + 4 <= rows; r += 4) _mm256_stream_pd(c + r, _mm256_loadu_pd(tile + r));
  for (; r < rows; ++r) stream_one(c + r, tile[r]);
}
void out_tile_f64(const GemmArgs<double>& g, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  alignas(64) double tile[kOutTileRows * kSmallCols];
  GemmArgs<double> t = g;
  t.m = rows;
  t.n = cols;
  t.a = g.a + i0;
  t.b = g.b + j0 * g.csb;
  t.beta = 0.0;
  t.c = tile;
  t.rsc = 1;
  t.csc = kOutTileRows;
  for (int64_t r = 0; r < rows; r += kSmallStripRows) {
    switch (cols) {
      case 6: small_block_any_f64<6>(t, r, 0); break;
      case 5: small_block_any_f64<5>(t, r, 0); break;
      case 4: small_block_any_f64<4>(t, r, 0); break;
      case 3: small_block_any_f64<3>(t, r, 0); break;
      case 2: small_block_any_f64<2>(t, r, 0); break;
      default: small_block_any_f64<1>(t, r, 0); break;
    }
  }
  for (int64_t q = 0; q < cols; ++q) tile_to_c(tile + q * kOutTileRows, rows, g.c + i0 + (j0 + q) * g.csc);
}

// Note [Thin transposed products]: C (m x n, unit row stride) = A B with a short
// contraction and a narrow B (k, n <= 32) but A not column-major (k runs along A's
// rows: tensor-train steps [19 x 2300] x [19 x 19] with the 19 contiguous). It is
// computed as C^T = B^T A^T: B^T is packed once onto the stack, column-major and
// zero-padded to 8-row blocks, so 8 x 4 register blocks of C^T (8 columns j of C by
// 4 rows i) load it plainly and broadcast A's elements; each block is transposed in
// registers (two 4 x 4 transposes) into four-element runs of C's columns. Row quads of
// A are the outer loop, so A streams from memory once and every quad meets all of B^T
// in L1. OpenBLAS spent a third of such a product zeroing C and packing A; MPS steps
// 1748 x 19 x 19 and 2147 x 19 x 19 went from 0.12 / 0.14 ms to 0.08 / 0.11 ms, and the
// whole MPS instance (1 thread, 4 interleaved pairs of runs) ran faster in every pair
// (best of each run 19.2-24.8 ms before, 17.5-22.6 ms after; 2026-11-29).
constexpr int64_t kThinMax = 32;

// One block: columns j0..j0+7 of C (rows of the packed B^T, ld = ldb) by rows
// i0..i0+3 (kFull) or i0..i0+iw-1.
template <bool kFull>
void thin_block_f64(const GemmArgs<double>& g, const double* bt, int64_t ldb, int64_t i0, int64_t iw, int64_t j0) {
  __m256d lo[4], hi[4];
  for (int t = 0; t < 4; ++t) lo[t] = hi[t] = _mm256_setzero_pd();
  const double* a = g.a + i0 * g.rsa;
  const int64_t ra = g.rsa, ca = g.csa;
  for (int64_t p = 0; p < g.k; ++p) {
    __m256d x0 = _mm256_load_pd(bt + j0 + p * ldb);
    __m256d x1 = _mm256_load_pd(bt + j0 + 4 + p * ldb);
    // Keep the two B^T vectors in registers: folded into each FMA they would be
    // loaded four times each (12 loads per step instead of 6).
    asm("" : "+x"(x0), "+x"(x1));
    const double* ap = a + p * ca;
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      if (!kFull && t >= iw) break;
      const __m256d y = _mm256_broadcast_sd(ap + t * ra);
      lo[t] = _mm256_fmadd_pd(x0, y, lo[t]);
      hi[t] = _mm256_fmadd_pd(x1, y, hi[t]);
    }
  }
  transpose4(lo[0], lo[1], lo[2], lo[3]);  // lo[r]: C(i0..i0+3, j0 + r)
  transpose4(hi[0], hi[1], hi[2], hi[3]);  // hi[r]: C(i0..i0+3, j0 + 4 + r)
  const __m256i mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(iw), _mm256_set_epi64x(3, 2, 1, 0));
  const __m256d av = _mm256_set1_pd(g.alpha), bv = _mm256_set1_pd(g.beta);
  const int64_t rows = std::min<int64_t>(8, g.n - j0);
  for (int64_t r = 0; r < rows; ++r) {
    double* c = g.c + i0 + (j0 + r) * g.csc;
    __m256d v = _mm256_mul_pd(av, r < 4 ? lo[r] : hi[r - 4]);
    if (g.beta != 0.0) v = _mm256_fmadd_pd(bv, kFull ? _mm256_loadu_pd(c) : _mm256_maskload_pd(c, mask), v);
    if (kFull) {
      _mm256_storeu_pd(c, v);
    } else {
      _mm256_maskstore_pd(c, mask, v);
    }
  }
}

// Note [Short-side products with a strided contraction]: C (m x n, both <= 32) = A B
// with a long contraction whose labels do not merge into one stride in A or B - the
// tensor-train step E'[r, c] = sum_{l,s} L[l, r, s] T[c, s, l], where the site tensor L
// has its free label r between the contracted l and s. dot_general packed L (a cold
// read, a write and a re-read) and BLIS then spent a third of its 6 x 8 tiles on edges of
// the 19 x 19 output. Here the contraction is walked in place as nested loops (KLevels)
// and C^T is accumulated in 8 x 4 register blocks: two vectors of B's contiguous row
// (8 columns j) times four broadcast elements of A (rows i), as in Note [Thin
// transposed products]. The outer contraction loops are outermost: each inner run's
// rows of A and B come from memory once and meet every block while in L1 (the blocks'
// accumulators live in a C^T tile on the stack between runs); the innermost loop is the
// one with the smallest stride. A's rows come from a table of offsets, so A's free
// labels need not merge either (lm's batched 16 x 16 x 16 products whose lhs interleaves
// free and contracted labels: [k2, f1, k1, f2]). When A and B fit in L1 (k (m + n) <=
// 4096 elements) each block instead runs the whole contraction in registers. dot_general
// takes this route for m, n <= 32, k >= 8 when it would otherwise pack at least 4096
// elements (kShortSideMinPacked); lm sentence_4's two such steps (1900 products) went
// from 2.9-3.9 to 2.0-2.6 ms at 1 thread and 2.2 to 1.2 ms at 2 (best of 3 runs each).
// Tensor-train steps 19 x 19 x 1748-2413: 0.17-0.19 ms (pack + BLIS) -> 0.07-0.09 ms;
// the MPS instance, 3 interleaved pairs of runs, best of each: 1 thread 17.7-23.6 ->
// 11.8-15.4 ms, 2 threads 17.5-18.5 -> 11.7-12.1 ms (2026-11-29). With the innermost
// loop chosen by B's stride instead, the same instance ran 26-27 ms.
//
// One inner contraction run of a block of C^T (8 columns j by IW rows i) held in lo/hi:
// += B's row vectors x A's elements over the run's e0 steps; rows[t] + oa is row t's
// start. B's two vectors stay in registers (folded into each FMA they would be loaded IW
// times).
template <int IW, bool kMask>
[[gnu::always_inline]] inline void short_inner(const double* const* rows, int64_t oa, int64_t sa0, const double* b,
                                               int64_t sb0, int64_t e0, __m256i m0, __m256i m1, __m256d (&lo)[4],
                                               __m256d (&hi)[4]) {
  const double* r[4];
  for (int t = 0; t < IW; ++t) r[t] = rows[t] + oa;
  for (int64_t p = 0; p < e0; ++p) {
    __m256d x0 = kMask ? _mm256_maskload_pd(b + p * sb0, m0) : _mm256_loadu_pd(b + p * sb0);
    __m256d x1 = kMask ? _mm256_maskload_pd(b + p * sb0 + 4, m1) : _mm256_loadu_pd(b + p * sb0 + 4);
    asm("" : "+x"(x0), "+x"(x1));
#pragma GCC unroll 4
    for (int t = 0; t < IW; ++t) {
      const __m256d y = _mm256_broadcast_sd(r[t] + p * sa0);
      lo[t] = _mm256_fmadd_pd(x0, y, lo[t]);
      hi[t] = _mm256_fmadd_pd(x1, y, hi[t]);
    }
  }
}

// Advances the outer contraction loops (levels 1..) to the next inner run, moving the
// run's offsets in A and B; false after the last run.
inline bool next_run(const KLevels& k, int64_t* idx, int64_t& oa, int64_t& ob) {
  for (int l = 1; l < k.count; ++l) {
    oa += k.sa[l];
    ob += k.sb[l];
    if (++idx[l] < k.extent[l]) return true;
    oa -= k.sa[l] * k.extent[l];
    ob -= k.sb[l] * k.extent[l];
    idx[l] = 0;
  }
  return false;
}

// Tile mode: one run for the block whose accumulators live at `acc` (8 x IW, leading
// dimension 8) between runs.
template <int IW, bool kMask>
void short_run_f64(const double* const* rows, int64_t oa, int64_t sa0, const double* b, int64_t sb0, int64_t e0,
                   __m256i m0, __m256i m1, double* acc) {
  __m256d lo[4], hi[4];
  for (int t = 0; t < IW; ++t) {
    lo[t] = _mm256_load_pd(acc + 8 * t);
    hi[t] = _mm256_load_pd(acc + 8 * t + 4);
  }
  short_inner<IW, kMask>(rows, oa, sa0, b, sb0, e0, m0, m1, lo, hi);
  for (int t = 0; t < IW; ++t) {
    _mm256_store_pd(acc + 8 * t, lo[t]);
    _mm256_store_pd(acc + 8 * t + 4, hi[t]);
  }
}

// Register mode: the whole contraction for one block, accumulators in registers.
template <int IW, bool kMask>
void short_block_f64(const double* const* rows, const double* b, const KLevels& k, __m256i m0, __m256i m1,
                     double* acc) {
  __m256d lo[4], hi[4];
  for (int t = 0; t < 4; ++t) lo[t] = hi[t] = _mm256_setzero_pd();
  int64_t idx[kMaxKLevels] = {0, 0, 0, 0};
  int64_t oa = 0, ob = 0;
  for (;;) {
    short_inner<IW, kMask>(rows, oa, k.sa[0], b + ob, k.sb[0], k.extent[0], m0, m1, lo, hi);
    if (!next_run(k, idx, oa, ob)) break;
  }
  for (int t = 0; t < IW; ++t) {
    _mm256_store_pd(acc + 8 * t, lo[t]);
    _mm256_store_pd(acc + 8 * t + 4, hi[t]);
  }
}

bool small_form_f64(const GemmArgs<double>& g) { return g.rsa == 1 && g.rsc == 1 && g.m >= 4 && g.k <= kSmallMaxK; }
bool thin_form_f64(const GemmArgs<double>& g) { return g.rsc == 1 && g.m >= 4 && g.n <= kThinMax && g.k <= kThinMax; }

// Requires thin_form_f64(g) (Note [Thin transposed products]).
void thin_f64(const GemmArgs<double>& g) {
  alignas(32) double bt[kThinMax * kThinMax];
  const int64_t ldb = (g.n + 7) / 8 * 8;
  for (int64_t p = 0; p < g.k; ++p) {
    for (int64_t j = 0; j < ldb; ++j) bt[j + p * ldb] = j < g.n ? g.b[p * g.rsb + j * g.csb] : 0.0;
  }
  int64_t i0 = 0;
  for (; i0 + 4 <= g.m; i0 += 4) {
    for (int64_t j0 = 0; j0 < g.n; j0 += 8) thin_block_f64<true>(g, bt, ldb, i0, 4, j0);
  }
  if (i0 < g.m) {
    for (int64_t j0 = 0; j0 < g.n; j0 += 8) thin_block_f64<false>(g, bt, ldb, i0, g.m - i0, j0);
  }
}
}  // namespace
#endif

namespace {
// Plain loops for the arithmetic dtypes (Note [Plain-loop GEMM]).
template <class T>
void gemm_naive_arith(const GemmArgs<T>& g) {
  auto cj = [](T v, bool c) {
    if constexpr (tenferro::detail::ComplexScalar<T>) {
      return c ? std::conj(v) : v;
    } else {
      (void)c;
      return v;
    }
  };
  const bool zero_beta = g.beta == T{};
#if TENFERRO_ISA_LEVEL >= 1
  if constexpr (std::is_same_v<T, double>) {
    if (small_form_f64(g)) {
      small_f64(g);
      return;
    }
    if (g.rsc != 1 && g.csc == 1 && small_form_f64(transposed(g))) {
      small_f64(transposed(g));  // C row-major, B's rows contiguous: C^T = B^T A^T
      return;
    }
    if (thin_form_f64(g)) {
      thin_f64(g);  // Note [Thin transposed products]
      return;
    }
  }
#endif
  if (g.m == 1 && g.csb == 1 && g.csc == 1) {
    // A row times row-major B: C's row accumulates scaled rows of B (unit stride, vectorized).
    T* c = g.c;
    if (zero_beta) {
      for (int64_t j = 0; j < g.n; ++j) c[j] = T{};
    } else if (g.beta != T{1}) {
      for (int64_t j = 0; j < g.n; ++j) c[j] *= g.beta;
    }
    for (int64_t p = 0; p < g.k; ++p) {
      const T ap = g.alpha * cj(g.a[p * g.csa], g.conj_a);
      const T* b = g.b + p * g.rsb;
      if (tenferro::detail::ComplexScalar<T> && g.conj_b) {
        for (int64_t j = 0; j < g.n; ++j) c[j] += ap * cj(b[j], true);
      } else {
        for (int64_t j = 0; j < g.n; ++j) c[j] += ap * b[j];
      }
    }
    return;
  }
  if ((g.m == 1 || (g.rsa == 1 && g.rsc == 1)) && !(tenferro::detail::ComplexScalar<T> && g.conj_a)) {
    for (int64_t j = 0; j < g.n; ++j) {
      T* c = g.c + j * g.csc;
      if (g.m == 1) {
        // A row times B: one dot product per column.
        T acc{};
        for (int64_t p = 0; p < g.k; ++p) acc += g.a[p * g.csa] * cj(g.b[p * g.rsb + j * g.csb], g.conj_b);
        *c = zero_beta ? g.alpha * acc : g.alpha * acc + g.beta * *c;
        continue;
      }
      if (zero_beta) {
        for (int64_t i = 0; i < g.m; ++i) c[i] = T{};
      } else if (g.beta != T{1}) {
        for (int64_t i = 0; i < g.m; ++i) c[i] *= g.beta;
      }
      for (int64_t p = 0; p < g.k; ++p) {
        const T bp = g.alpha * cj(g.b[p * g.rsb + j * g.csb], g.conj_b);
        const T* a = g.a + p * g.csa;
        for (int64_t i = 0; i < g.m; ++i) c[i] += a[i] * bp;
      }
    }
    return;
  }
  if (g.csa == 1 && g.rsb == 1 && !(tenferro::detail::ComplexScalar<T> && (g.conj_a || g.conj_b))) {
#if TENFERRO_ISA_LEVEL >= 1
    if constexpr (std::is_same_v<T, double>) {
      dot_form_f64(g);
      return;
    }
#endif
    for (int64_t j = 0; j < g.n; ++j) {
      const T* b = g.b + j * g.csb;
      for (int64_t i = 0; i < g.m; ++i) {
        const T* a = g.a + i * g.rsa;
        T acc{};
        for (int64_t p = 0; p < g.k; ++p) acc += a[p] * b[p];
        T& c = g.c[i * g.rsc + j * g.csc];
        c = zero_beta ? g.alpha * acc : g.alpha * acc + g.beta * c;
      }
    }
    return;
  }
  for (int64_t j = 0; j < g.n; ++j) {
    for (int64_t i = 0; i < g.m; ++i) {
      T acc{};
      for (int64_t p = 0; p < g.k; ++p) {
        acc += cj(g.a[i * g.rsa + p * g.csa], g.conj_a) * cj(g.b[p * g.rsb + j * g.csb], g.conj_b);
      }
      T& c = g.c[i * g.rsc + j * g.csc];
      c = zero_beta ? g.alpha * acc : g.alpha * acc + g.beta * c;
    }
  }
}

// The boolean semiring (numpy's dot on bool): c = (alpha and OR_p a[i,p] and b[p,j]) or
// (beta and c); each OR stops at its first true term.
void gemm_naive_bool(const GemmArgs<bool>& g) {
  for (int64_t j = 0; j < g.n; ++j) {
    for (int64_t i = 0; i < g.m; ++i) {
      bool acc = false;
      for (int64_t p = 0; p < g.k && !acc; ++p) acc = g.a[i * g.rsa + p * g.csa] && g.b[p * g.rsb + j * g.csb];
      bool& c = g.c[i * g.rsc + j * g.csc];
      c = (g.alpha && acc) || (g.beta && c);
    }
  }
}
}  // namespace

template <class T>
void gemm_naive(const GemmArgs<T>& g) {
  if constexpr (std::is_same_v<T, bool>) {
    gemm_naive_bool(g);
  } else {
    gemm_naive_arith(g);
  }
}

void short_sides_f64(int64_t m, int64_t n, double alpha, const double* a, const int64_t* row_off, const double* b,
                     const KLevels& k, double beta, double* c, int64_t rsc, int64_t csc) {
  auto put = [&](int64_t i, int64_t j, double v) {
    double& x = c[i * rsc + j * csc];
    x = beta == 0.0 ? alpha * v : alpha * v + beta * x;
  };
#if TENFERRO_ISA_LEVEL >= 1
  const int64_t jb = (n + 7) / 8, ib = (m + 3) / 4;
  const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0);
  const __m256i mask0 = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n - 8 * (jb - 1)), lane);
  const __m256i mask1 = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n - 8 * (jb - 1) - 4), lane);
  const __m256i full = _mm256_set1_epi64x(-1);
  int64_t ktotal = 1;
  for (int l = 0; l < k.count; ++l) ktotal *= k.extent[l];
  auto dispatch = [&](auto run, int64_t iw, bool last) {
    // Calls run(IW, kMask) with compile-time constants.
    auto with_iw = [&](auto mask) {
      switch (iw) {
        case 4: run(std::integral_constant<int, 4>{}, mask); break;
        case 3: run(std::integral_constant<int, 3>{}, mask); break;
        case 2: run(std::integral_constant<int, 2>{}, mask); break;
        default: run(std::integral_constant<int, 1>{}, mask); break;
      }
    };
    if (last) {
      with_iw(std::true_type{});
    } else {
      with_iw(std::false_type{});
    }
  };
  const double* rows[4];
  auto set_rows = [&](int64_t iq, int64_t iw) {
    for (int64_t t = 0; t < 4; ++t) rows[t] = a + row_off[4 * iq + std::min(t, iw - 1)];
  };
  if (ktotal * (m + n) <= 4096) {
    // Register mode: A and B (at most 32 KiB) stay in L1 across the blocks; each block
    // runs the whole contraction in registers.
    alignas(32) double acc[32];
    for (int64_t jq = 0; jq < jb; ++jq) {
      const bool last = jq + 1 == jb && n % 8 != 0;
      const __m256i m0 = last ? mask0 : full, m1 = last ? mask1 : full;
      for (int64_t iq = 0; iq < ib; ++iq) {
        const int64_t iw = std::min<int64_t>(4, m - 4 * iq);
        set_rows(iq, iw);
        dispatch([&](auto iwc, auto maskc) {
          short_block_f64<decltype(iwc)::value, decltype(maskc)::value>(rows, b + 8 * jq, k, m0, m1, acc);
        }, iw, last);
        for (int64_t t = 0; t < iw; ++t)
          for (int64_t j = 0; j < std::min<int64_t>(8, n - 8 * jq); ++j) put(4 * iq + t, 8 * jq + j, acc[8 * t + j]);
      }
    }
    return;
  }
  // Tile mode: C^T tiles, 8 x 4 per block, for m, n <= 32: 4 x 8 blocks of 32 doubles.
  // The outer contraction levels are outermost: each inner run's data (a few rows of A
  // and B) is read from memory once and meets every block while in L1.
  alignas(32) double tile[kShortSideMax * kShortSideMax];
  for (int64_t x = 0; x < jb * ib * 32; ++x) tile[x] = 0.0;
  int64_t idx[kMaxKLevels] = {0, 0, 0, 0};
  int64_t oa = 0, ob = 0;
  for (;;) {
    for (int64_t jq = 0; jq < jb; ++jq) {
      const bool last = jq + 1 == jb && n % 8 != 0;
      const __m256i m0 = last ? mask0 : full, m1 = last ? mask1 : full;
      for (int64_t iq = 0; iq < ib; ++iq) {
        const int64_t iw = std::min<int64_t>(4, m - 4 * iq);
        double* acc = tile + (jq * ib + iq) * 32;
        set_rows(iq, iw);
        dispatch([&](auto iwc, auto maskc) {
          short_run_f64<decltype(iwc)::value, decltype(maskc)::value>(rows, oa, k.sa[0], b + ob + 8 * jq, k.sb[0],
                                                                     k.extent[0], m0, m1, acc);
        }, iw, last);
      }
    }
    if (!next_run(k, idx, oa, ob)) break;
  }
  for (int64_t jq = 0; jq < jb; ++jq) {
    for (int64_t iq = 0; iq < ib; ++iq) {
      const double* acc = tile + (jq * ib + iq) * 32;
      for (int64_t t = 0; t < std::min<int64_t>(4, m - 4 * iq); ++t)
        for (int64_t j = 0; j < std::min<int64_t>(8, n - 8 * jq); ++j) put(4 * iq + t, 8 * jq + j, acc[8 * t + j]);
    }
  }
#else
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      double v = 0;
      int64_t idx[kMaxKLevels] = {0, 0, 0, 0};
      for (;;) {
        int64_t oa = 0, ob = 0;
        for (int l = 0; l < k.count; ++l) {
          oa += idx[l] * k.sa[l];
          ob += idx[l] * k.sb[l];
        }
        v += a[row_off[i] + oa] * b[ob + j];
        int l = 0;
        while (l < k.count && ++idx[l] == k.extent[l]) idx[l++] = 0;
        if (l == k.count) break;
      }
      put(i, j, v);
    }
  }
#endif
}

void streamed_out_f64(const GemmArgs<double>& g, bool columns_outer) {
#if TENFERRO_ISA_LEVEL >= 1
  auto tile = [&](const GemmArgs<double>& src, int64_t i0, int64_t j0) {
    out_tile_f64(src, i0, std::min(kOutTileRows, g.m - i0), j0, std::min<int64_t>(kSmallCols, g.n - j0));
  };
  if (columns_outer) {
    for (int64_t j0 = 0; j0 < g.n; j0 += kSmallCols)
      for (int64_t i0 = 0; i0 < g.m; i0 += kOutTileRows) tile(g, i0, j0);
  } else {
    // The row chunk of A (kOutTileRows x k) is copied once into a compact buffer, so the
    // tiles' strips read it from L1/L2 instead of k columns a whole column apart.
    alignas(64) double apack[kOutTileRows * kOutMaxK];
    for (int64_t i0 = 0; i0 < g.m; i0 += kOutTileRows) {
      const int64_t rows = std::min(kOutTileRows, g.m - i0);
      for (int64_t p = 0; p < g.k; ++p) {
        const double* src = g.a + i0 + p * g.csa;
        std::copy(src, src + rows, apack + p * kOutTileRows);
      }
      GemmArgs<double> packed = g;
      packed.a = apack - i0;  // out_tile_f64 adds i0 back
      packed.csa = kOutTileRows;
      for (int64_t j0 = 0; j0 < g.n; j0 += kSmallCols) tile(packed, i0, j0);
    }
  }
  _mm_sfence();  // the non-temporal stores are visible before the caller joins
#else
  (void)columns_outer;
  gemm_naive<double>(g);
#endif
}

#define TENFERRO_GEMM_KERNELS_INSTANTIATE(T) template void gemm_naive<T>(const GemmArgs<T>&);
TENFERRO_GEMM_KERNELS_INSTANTIATE(float)
TENFERRO_GEMM_KERNELS_INSTANTIATE(double)
TENFERRO_GEMM_KERNELS_INSTANTIATE(c64)
TENFERRO_GEMM_KERNELS_INSTANTIATE(c128)
TENFERRO_GEMM_KERNELS_INSTANTIATE(int32_t)
TENFERRO_GEMM_KERNELS_INSTANTIATE(int64_t)
TENFERRO_GEMM_KERNELS_INSTANTIATE(bool)
#undef TENFERRO_GEMM_KERNELS_INSTANTIATE

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
TENFERRO_ISA_END
