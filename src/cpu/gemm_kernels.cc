// Note [ISA kernels]: the hand-written SIMD kernels of the plain-loop GEMM (small,
// thin, dot-product, short-side, streamed, streamed-output and blocked forms) live in
// this file, which is compiled once per ISA level (CMake: tenferro_isa_sources). Each
// copy defines its kernels in namespace detail::<level> (scalar, avx2, avx512), with
// TENFERRO_ISA_LEVEL (0, 1, 2) selecting the code and TENFERRO_ISA_BEGIN applying the
// level's target attributes to the functions of this file only: the headers are
// included before it, so inline functions and templates from headers are compiled for
// the library's baseline in every copy, and the linker can never pick an AVX-512 copy
// of a shared inline function for a machine without AVX-512. gemm.cc's dispatchers call
// the copy for the engine's usable ISA level (CpuCaps::usable_isa(), capped by
// TENFERRO_MAX_ISA), so every level is reachable and testable on one machine.

#include <algorithm>
#include <array>
#include <complex>
#include <cstring>
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

inline void transpose4(__m256d& r0, __m256d& r1, __m256d& r2, __m256d& r3) {
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  r0 = _mm256_permute2f128_pd(t0, t2, 0x20);
  r1 = _mm256_permute2f128_pd(t1, t3, 0x20);
  r2 = _mm256_permute2f128_pd(t0, t2, 0x31);
  r3 = _mm256_permute2f128_pd(t1, t3, 0x31);
}

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
void stream_slice_f64(int64_t n, const double* a, int64_t lda, const double* b, int64_t rsb, int64_t csb,
                      double* tile, int64_t ldt, int64_t rows, __m256i m0, __m256i m1, bool prefetch) {
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
void stream_slice_f64(int64_t n, const double* a, int64_t lda, const double* b, int64_t rsb, int64_t csb,
                      double* tile, int64_t ldt, int64_t rows, vec::M m0, vec::M m1, bool prefetch) {
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

// Note [Blocked AVX-512 GEMM]: OpenBLAS 0.3.21 runs its Haswell (256-bit) kernels on
// CPUs it does not know (AMD family 0x1A, Zen 5), about half of what the core's two
// 512-bit FMA pipes do. At ISA level AVX-512, large f64 and f32 products run this
// blocked GEMM instead: the contraction in kK slices; per slice B in blocks of kN
// columns packed into kNR-column panels (L3), A in blocks of kM rows packed into
// kMR-row panels (L2); a kMR x 8 register block (three vectors by eight broadcasts, 24
// accumulators; 24 rows of f64, 48 of f32) runs over a panel pair from L1/L2, a last
// partial panel with only the vectors that hold rows. C must
// be column-major or row-major (then C^T = B^T A^T); A and B any strides (packing reads
// them once per block). Complex products run as four real ones on planar copies (Note
// [Complex products on the blocked kernel] in dot_general.cc). Figures:
// docs/benchmarks.md ("dot_general against the peers at their best").
#if TENFERRO_ISA_LEVEL >= 2
namespace {

// The 512-bit vector operations of the blocked kernel, per element type.
template <class T>
struct Vec512;
template <>
struct Vec512<double> {
  using V = __m512d;
  using M = __mmask8;
  static V zero() { return _mm512_setzero_pd(); }
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static V load(const double* p, M m) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static void store(double* p, V v, M m) { _mm512_mask_storeu_pd(p, m, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static M mask(int64_t n) { return static_cast<M>(n <= 0 ? 0u : n >= 8 ? 0xffu : (1u << n) - 1u); }
};
template <>
struct Vec512<float> {
  using V = __m512;
  using M = __mmask16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, V v, M m) { _mm512_mask_storeu_ps(p, m, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static M mask(int64_t n) { return static_cast<M>(n <= 0 ? 0u : n >= 16 ? 0xffffu : (1u << n) - 1u); }
};

// Note [Packing column-major B]: a column-major B (the usual operand) packs into
// row-contiguous panels by a transpose, and so does a row-major A into column-contiguous
// ones. Eight columns by eight rows go through registers: f64 as
// one 8 x 8 block of 512-bit vectors (unpack, then two rounds of 128-bit lane
// shuffles), f32 as an 8 x 8 block of 256-bit vectors (unpack, shuffle, lane permute).
// dst[q * dld + j] = src[q + j * ld] for q, j < 8.
// GCC 12's 512-bit unpack and lane-shuffle intrinsics expand through an undefined
// merge operand, which -W(maybe-)uninitialized reports at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
inline void transpose_8x8(const double* src, int64_t ld, double* dst, int64_t dld) {
  __m512d r[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm512_loadu_pd(src + j * ld);
  __m512d t[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm512_unpacklo_pd(r[j], r[j + 1]);      // q = 0, 2, 4, 6 of columns j, j + 1
    t[j + 1] = _mm512_unpackhi_pd(r[j], r[j + 1]);  // q = 1, 3, 5, 7
  }
  // u: q pairs {0, 4}, {2, 6} of columns 0-3 (from t0, t2) and 4-7 (t4, t6); {1, 5}, {3, 7}
  // from the odd t's.
  const __m512d u0 = _mm512_shuffle_f64x2(t[0], t[2], 0x88), u1 = _mm512_shuffle_f64x2(t[0], t[2], 0xDD);
  const __m512d u2 = _mm512_shuffle_f64x2(t[1], t[3], 0x88), u3 = _mm512_shuffle_f64x2(t[1], t[3], 0xDD);
  const __m512d u4 = _mm512_shuffle_f64x2(t[4], t[6], 0x88), u5 = _mm512_shuffle_f64x2(t[4], t[6], 0xDD);
  const __m512d u6 = _mm512_shuffle_f64x2(t[5], t[7], 0x88), u7 = _mm512_shuffle_f64x2(t[5], t[7], 0xDD);
  _mm512_storeu_pd(dst + 0 * dld, _mm512_shuffle_f64x2(u0, u4, 0x88));
  _mm512_storeu_pd(dst + 4 * dld, _mm512_shuffle_f64x2(u0, u4, 0xDD));
  _mm512_storeu_pd(dst + 2 * dld, _mm512_shuffle_f64x2(u1, u5, 0x88));
  _mm512_storeu_pd(dst + 6 * dld, _mm512_shuffle_f64x2(u1, u5, 0xDD));
  _mm512_storeu_pd(dst + 1 * dld, _mm512_shuffle_f64x2(u2, u6, 0x88));
  _mm512_storeu_pd(dst + 5 * dld, _mm512_shuffle_f64x2(u2, u6, 0xDD));
  _mm512_storeu_pd(dst + 3 * dld, _mm512_shuffle_f64x2(u3, u7, 0x88));
  _mm512_storeu_pd(dst + 7 * dld, _mm512_shuffle_f64x2(u3, u7, 0xDD));
}
#pragma GCC diagnostic pop
inline void transpose_8x8(const float* src, int64_t ld, float* dst, int64_t dld) {
  __m256 r[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * ld);
  __m256 t[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);      // q = 0, 1 | 4, 5 of columns j, j + 1
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);  // q = 2, 3 | 6, 7
  }
  __m256 s[8];
  for (int h = 0; h < 8; h += 4) {  // columns h .. h + 3, q = 0 | 4, 1 | 5, 2 | 6, 3 | 7
    s[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    s[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    s[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    s[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(dst + q * dld, _mm256_permute2f128_ps(s[q], s[q + 4], 0x20));
    _mm256_storeu_ps(dst + (q + 4) * dld, _mm256_permute2f128_ps(s[q], s[q + 4], 0x31));
  }
}

// Packs rows [i0, i0 + mc) x contraction [p0, p0 + kc) of A into kMR-row panels
// (zero-padded rows), each panel kc x kMR with the rows contiguous.
template <class T>
void pack_a_block(const GemmArgs<T>& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) {
  using S = BlockedShape<T>;
  using X = Vec512<T>;
  constexpr int64_t L = S::kLanes;
  for (int64_t ip = 0; ip < mc; ip += S::kMR) {
    const int64_t rows = std::min(S::kMR, mc - ip);
    const T* src = g.a + (i0 + ip) * g.rsa + p0 * g.csa;
    if (g.rsa == 1 && rows == S::kMR) {
      for (int64_t p = 0; p < kc; ++p) {
        const T* col = src + p * g.csa;
        for (int v = 0; v < S::kVecs; ++v) X::store(dst + p * S::kMR + v * L, X::load(col + v * L));
      }
    } else if (g.rsa == 1) {
      // A last partial panel: masked loads read the rows and zero the padding (an
      // element-wise zero fill compiled to byte stores, a twentieth of an f32 n = 256
      // product).
      for (int64_t p = 0; p < kc; ++p) {
        const T* col = src + p * g.csa;
        for (int v = 0; v < S::kVecs; ++v) {
          X::store(dst + p * S::kMR + v * L, X::load(col + v * L, X::mask(rows - v * L)));
        }
      }
    } else if (g.csa == 1 && rows == S::kMR) {
      // Rows contiguous along the contraction (a row-major A): 8 x 8 register transposes
      // (Note [Packing column-major B]).
      int64_t p = 0;
      for (; p + 8 <= kc; p += 8) {
        for (int64_t r = 0; r < S::kMR; r += 8) transpose_8x8(src + r * g.rsa + p, g.rsa, dst + p * S::kMR + r, S::kMR);
      }
      for (; p < kc; ++p) {
        for (int64_t r = 0; r < S::kMR; ++r) dst[p * S::kMR + r] = src[r * g.rsa + p];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        T* d = dst + p * S::kMR;
        for (int v = 0; v < S::kVecs; ++v) X::store(d + v * L, X::zero());
        for (int64_t r = 0; r < rows; ++r) d[r] = src[r * g.rsa + p * g.csa];
      }
    }
    dst += kc * S::kMR;
  }
}

// Packs contraction [p0, p0 + kc) x columns [j0, j0 + nc) of B into kNR-column panels
// (zero-padded columns), each kc x kNR with a row's elements contiguous.
template <class T>
void pack_b_block(const GemmArgs<T>& g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) {
  using S = BlockedShape<T>;
  constexpr int64_t NR = S::kNR;
  for (int64_t jp = 0; jp < nc; jp += NR) {
    const int64_t cols = std::min(NR, nc - jp);
    const T* src = g.b + p0 * g.rsb + (j0 + jp) * g.csb;
    if (g.csb == 1 && cols == NR) {
      for (int64_t p = 0; p < kc; ++p) std::copy(src + p * g.rsb, src + p * g.rsb + NR, dst + p * NR);
    } else if (g.rsb == 1 && cols == NR) {
      // Columns contiguous: eight column runs, eight rows at a time by register
      // transposes (Note [Packing column-major B]).
      int64_t p = 0;
      for (; p + 8 <= kc; p += 8) transpose_8x8(src + p, g.csb, dst + p * NR, NR);
      for (; p < kc; ++p) {
        for (int64_t j = 0; j < NR; ++j) dst[p * NR + j] = src[p + j * g.csb];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        T* d = dst + p * NR;
        for (int64_t j = 0; j < cols; ++j) d[j] = src[p * g.rsb + j * g.csb];
        for (int64_t j = cols; j < NR; ++j) d[j] = T(0);
      }
    }
    dst += kc * NR;
  }
}

// acc (NV vectors x kNR) = sum over kc of A panel x B panel, reading the first NV
// vectors of each kMR-row step (a last panel of at most NV * kLanes rows skips the
// vectors that hold only padding); then C (rows x cols, column-major, leading dimension
// ldc) = alpha acc + beta C (`beta` 0: C not read).
template <class T, int NV>
void block_kernel(int64_t kc, const T* __restrict ap, const T* __restrict bp, T* c, int64_t ldc, int64_t rows,
                  int64_t cols, T alpha, T beta) {
  using S = BlockedShape<T>;
  using X = Vec512<T>;
  using V = typename X::V;
  constexpr int64_t L = S::kLanes, NR = S::kNR;
  static_assert(NV >= 1 && NV <= 3 && NR == 8);
  V acc[NV][NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) acc[v][j] = X::zero();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const V x0 = X::load(ap);
    const V x1 = NV > 1 ? X::load(ap + L) : x0;
    const V x2 = NV > 2 ? X::load(ap + 2 * L) : x0;
    _mm_prefetch(reinterpret_cast<const char*>(ap + 8 * S::kMR), _MM_HINT_T0);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const V y = X::set1(bp[j]);
      acc[0][j] = X::fma(x0, y, acc[0][j]);
      if constexpr (NV > 1) acc[1][j] = X::fma(x1, y, acc[1][j]);
      if constexpr (NV > 2) acc[2][j] = X::fma(x2, y, acc[2][j]);
    }
    ap += S::kMR;
    bp += NR;
  }
  const V av = X::set1(alpha), bv = X::set1(beta);
  if (rows == NV * L && cols == NR) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      T* cj = c + j * ldc;
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) {
        V r = X::mul(av, acc[v][j]);
        if (beta != T(0)) r = X::fma(bv, X::load(cj + L * v), r);
        X::store(cj + L * v, r);
      }
    }
    return;
  }
  for (int64_t j = 0; j < cols; ++j) {
    T* cj = c + j * ldc;
    for (int v = 0; v < NV; ++v) {
      const int64_t left = rows - L * v;
      if (left <= 0) break;
      const auto m = X::mask(left);
      V r = X::mul(av, acc[v][j]);
      if (beta != T(0)) r = X::fma(bv, X::load(cj + L * v, m), r);
      X::store(cj + L * v, r, m);
    }
  }
}

// The block kernel for a panel of `rows` rows: only the vectors that hold rows.
template <class T>
void block_kernel_rows(int64_t kc, const T* ap, const T* bp, T* c, int64_t ldc, int64_t rows, int64_t cols, T alpha,
                       T beta) {
  constexpr int64_t L = BlockedShape<T>::kLanes;
  if (rows > 2 * L) {
    block_kernel<T, 3>(kc, ap, bp, c, ldc, rows, cols, alpha, beta);
  } else if (rows > L) {
    block_kernel<T, 2>(kc, ap, bp, c, ldc, rows, cols, alpha, beta);
  } else {
    block_kernel<T, 1>(kc, ap, bp, c, ldc, rows, cols, alpha, beta);
  }
}

template <class T>
bool gemm_blocked_any(const GemmArgs<T>& g_in, T* work) {
  using S = BlockedShape<T>;
  const GemmArgs<T> g = g_in.rsc == 1 ? g_in : transposed(g_in);
  if (g.rsc != 1 && g.n > 1) return false;
  const int64_t ldc = g.n > 1 ? g.csc : std::max<int64_t>(1, g.m);
  T* const apack = work;
  T* const bpack = work + std::min(S::kK, g.k) * blocked_rows<T>(g.m);
  for (int64_t p0 = 0; p0 < g.k; p0 += S::kK) {
    const int64_t kc = std::min(S::kK, g.k - p0);
    const T beta = p0 == 0 ? g.beta : T(1);
    for (int64_t j0 = 0; j0 < g.n; j0 += S::kN) {
      const int64_t nc = std::min(S::kN, g.n - j0);
      pack_b_block(g, p0, kc, j0, nc, bpack);
      for (int64_t i0 = 0; i0 < g.m; i0 += S::kM) {
        const int64_t mc = std::min(S::kM, g.m - i0);
        pack_a_block(g, i0, mc, p0, kc, apack);
        for (int64_t jr = 0; jr < nc; jr += S::kNR) {
          const T* bp = bpack + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += S::kMR) {
            block_kernel_rows<T>(kc, apack + ir * kc, bp, g.c + (i0 + ir) + (j0 + jr) * ldc, ldc,
                                 std::min(S::kMR, mc - ir), std::min(S::kNR, nc - jr), g.alpha, beta);
          }
        }
      }
    }
  }
  return true;
}

}  // namespace
#endif

bool gemm_blocked_f64(const GemmArgs<double>& g, double* work) {
#if TENFERRO_ISA_LEVEL >= 2
  return gemm_blocked_any<double>(g, work);
#else
  (void)g;
  (void)work;
  return false;
#endif
}

bool gemm_blocked_f32(const GemmArgs<float>& g, float* work) {
#if TENFERRO_ISA_LEVEL >= 2
  return gemm_blocked_any<float>(g, work);
#else
  (void)g;
  (void)work;
  return false;
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
