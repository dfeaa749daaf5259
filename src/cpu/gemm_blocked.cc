// The blocked AVX-512 GEMM of the CPU engine (Note [ISA kernels] in gemm_kernels.cc):
// compiled once per ISA level like the other kernel files; below AVX-512 its entry
// points answer false.
#include <algorithm>
#include <cstdint>

#include <immintrin.h>

#include "gemm.h"
#include "tenferro/core/isa_region.h"

TENFERRO_ISA_BEGIN
#include "simd.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

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
  using X = Simd<T>;  // 512-bit vectors (simd.h)
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
  using X = Simd<T>;  // 512-bit vectors (simd.h)
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

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
TENFERRO_ISA_END
