// Note [Short complex products]: a complex product with a short contraction or a short
// side (a gate applied to a state, 'ijk,kl->ijl' with small k and l, a tensor-train step
// with a narrow bond) moves its operands far more than it multiplies them. The blocked
// kernel's planar copies cost more than they save there (Note [Planar complex
// thresholds] in dot_plan.cc), and a GEMM call packs A once more. This kernel reads A
// and writes C once each, in their own (interleaved) layout, and keeps the sums in
// registers across the whole contraction:
// - A and C column-major (rows contiguous: g.rsa == 1, g.rsc == 1), columns at any
//   stride; B any strides (it is small: copied per block, below).
// - B' = alpha op(B) is copied per block of kCols columns and kKChunk contraction steps
//   to the stack as the two factors of each complex multiply: the real part of b as a
//   scalar (a broadcast) and the vector pair(-im b, im b). Then a b = a re(b) + swap(a)
//   pair(-im b, im b) (swap exchanges each element's two parts): two multiply-adds per
//   vector of A and column, one accumulator.
// - A block of kRowVectors vectors of A's rows (AVX-512 c128: 4 x 4 = 16 rows) times
//   the block's columns: kRowVectors x kCols accumulators (16 at AVX-512, 8 at AVX2) and
//   the row vectors and their swaps in registers. op(A) conjugated: each vector of A
//   times pair(1, -1).
// - Rows in panels whose contraction chunk stays within kPanelBytes (L2), columns in
//   blocks inside each panel: A's panel is read from cache once per column block, C
//   written once per contraction chunk (beta applied on the first, later chunks add).
// - Tails: masked loads and stores (nothing past A's or C's rows is touched).
// One thread; callers split the rows. Figures: docs/benchmarks.md ("Skinny products").

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

constexpr int kRowVectors = TENFERRO_ISA_LEVEL >= 2 ? 4 : 2;
constexpr int kCols = 4;
constexpr int64_t kKChunk = 128;
constexpr int64_t kPanelBytes = 256 << 10;
// Note [Narrow complex products]: A of at most this many vectors of rows; columns of a C
// with strided rows written in blocks of this many.
constexpr int64_t kNarrowVectors = 2;
constexpr int64_t kStridedBlock = 16;

template <class R>
struct Packed {
  using V = typename Simd<R>::V;
  alignas(64) R re[kKChunk * kCols];
  alignas(64) V im[kKChunk * kCols];
};

// B' rows [p0, p0 + kc) x columns [j0, j0 + NC) into `pk` (step p, column j at p * NC + j).
template <class R, int NC>
void pack_b(const GemmArgs<std::complex<R>>& g, int64_t p0, int64_t kc, int64_t j0, Packed<R>* pk) {
  using S = Simd<R>;
  const std::complex<R> alpha = g.alpha;
  for (int64_t p = 0; p < kc; ++p) {
    for (int j = 0; j < NC; ++j) {
      std::complex<R> b = g.b[(p0 + p) * g.rsb + (j0 + j) * g.csb];
      if (g.conj_b) b = std::conj(b);
      const std::complex<R> v = alpha * b;
      pk->re[p * NC + j] = v.real();
      pk->im[p * NC + j] = S::pair(-v.imag(), v.imag());
    }
  }
}

// C block (rows of kRowVectors vectors from `a`/`c`, NC columns) over kc steps.
// `lda`/`ldc`: column strides in R units. kTail: `masks` bound each row vector.
template <class R, int NC, bool kTail>
void block(const R* a, int64_t lda, int64_t kc, const Packed<R>& pk, R* c, int64_t ldc,
           const typename Simd<R>::M* masks, bool conj, bool read_c, typename Simd<R>::V beta_re,
           typename Simd<R>::V beta_im) {
  using S = Simd<R>;
  using V = typename S::V;
  constexpr int RV = kRowVectors;
  constexpr int64_t L = S::kLanes;
  V acc[RV][NC];
  for (int v = 0; v < RV; ++v)
    for (int j = 0; j < NC; ++j) acc[v][j] = S::zero();
  const V conj_sign = S::pair(R(1), R(-1));
  for (int64_t p = 0; p < kc; ++p) {
    const R* ap = a + p * lda;
    V x[RV], s[RV];
    for (int v = 0; v < RV; ++v) {
      if constexpr (kTail) {
        x[v] = S::load(ap + v * L, masks[v]);
      } else {
        x[v] = S::load(ap + v * L);
      }
      if (conj) x[v] = S::mul(x[v], conj_sign);
      s[v] = S::swap(x[v]);
    }
    const R* br = pk.re + p * NC;
    const V* bi = pk.im + p * NC;
    for (int j = 0; j < NC; ++j) {
      const V r = S::set1(br[j]);
      const V i = bi[j];
      for (int v = 0; v < RV; ++v) {
        acc[v][j] = S::fma(x[v], r, acc[v][j]);
        acc[v][j] = S::fma(s[v], i, acc[v][j]);
      }
    }
  }
  for (int j = 0; j < NC; ++j) {
    R* cj = c + j * ldc;
    for (int v = 0; v < RV; ++v) {
      V out = acc[v][j];
      if (read_c) {
        // out + beta c: c re(beta) + swap(c) pair(-im beta, im beta).
        const V old = kTail ? S::load(cj + v * L, masks[v]) : S::load(cj + v * L);
        out = S::fma(old, beta_re, out);
        out = S::fma(S::swap(old), beta_im, out);
      }
      if constexpr (kTail) {
        S::store(cj + v * L, out, masks[v]);
      } else {
        S::store(cj + v * L, out);
      }
    }
  }
}

template <class R, int NC>
void column_block(const GemmArgs<std::complex<R>>& g, int64_t i0, int64_t mp, int64_t p0, int64_t kc, int64_t j0,
                  bool read_c, std::complex<R> beta, Packed<R>* pk) {
  using S = Simd<R>;
  constexpr int64_t L = S::kLanes;
  constexpr int64_t kRowsPerVector = L / 2;
  constexpr int64_t kBlockRows = kRowVectors * kRowsPerVector;
  pack_b<R, NC>(g, p0, kc, j0, pk);
  const R* a = reinterpret_cast<const R*>(g.a + i0 + p0 * g.csa);
  R* c = reinterpret_cast<R*>(g.c + i0 + j0 * g.csc);
  const int64_t lda = 2 * g.csa, ldc = 2 * g.csc;
  const typename S::V beta_re = S::set1(beta.real()), beta_im = S::pair(-beta.imag(), beta.imag());
  int64_t i = 0;
  for (; i + kBlockRows <= mp; i += kBlockRows) {
    block<R, NC, false>(a + 2 * i, lda, kc, *pk, c + 2 * i, ldc, nullptr, g.conj_a, read_c, beta_re, beta_im);
  }
  if (i < mp) {
    typename S::M masks[kRowVectors];
    for (int v = 0; v < kRowVectors; ++v) masks[v] = S::mask(2 * (mp - i) - v * L);
    block<R, NC, true>(a + 2 * i, lda, kc, *pk, c + 2 * i, ldc, masks, g.conj_a, read_c, beta_re, beta_im);
  }
}

template <class R>
void short_product(const GemmArgs<std::complex<R>>& g) {
  using T = std::complex<R>;
  Packed<R> pk;
  // Rows per panel: the panel's contraction chunk within kPanelBytes, whole blocks.
  constexpr int64_t kBlockRows = kRowVectors * (Simd<R>::kLanes / 2);
  for (int64_t p0 = 0; p0 < g.k; p0 += kKChunk) {
    const int64_t kc = std::min(kKChunk, g.k - p0);
    const bool first = p0 == 0;
    const bool read_c = !first || g.beta != T{};
    const T beta = first ? g.beta : T{1};
    const int64_t panel =
        std::max<int64_t>(kBlockRows, kPanelBytes / (kc * static_cast<int64_t>(sizeof(T))) / kBlockRows * kBlockRows);
    for (int64_t i0 = 0; i0 < g.m; i0 += panel) {
      const int64_t mp = std::min(panel, g.m - i0);
      int64_t j0 = 0;
      for (; j0 + kCols <= g.n; j0 += kCols) column_block<R, kCols>(g, i0, mp, p0, kc, j0, read_c, beta, &pk);
      switch (g.n - j0) {
        case 1: column_block<R, 1>(g, i0, mp, p0, kc, j0, read_c, beta, &pk); break;
        case 2: column_block<R, 2>(g, i0, mp, p0, kc, j0, read_c, beta, &pk); break;
        case 3: column_block<R, 3>(g, i0, mp, p0, kc, j0, read_c, beta, &pk); break;
        default: break;
      }
    }
  }
}

// Note [Narrow complex products]: an A of at most kNarrowVectors vectors of rows and a
// contraction of at most kNarrowMaxK (NV K <= kNarrowMaxK) against a long B (a gate on
// a state's fastest axis: C [2, 2^n] = G [2, 2] S [2, 2^n]) stays in registers as alpha
// op(A)'s vectors a_p and s_p = swap(a_p) pair(-1, 1) (negated for a conjugated B);
// each column of C is then sum_p a_p re(b_pj) + s_p im(b_pj), two broadcasts and two
// multiply-adds per step and vector, C's column stored masked. B is read once in
// column order. C's rows may also lie apart (kStrided: a column-major C computed as
// C^T = B^T A^T, a gate against a state whose contraction is contiguous): blocks of
// kStridedBlock columns of C then go through a stack tile and out row by row, each row
// a run along C's columns (one write stream per row of C).
template <class R, int NV, int K, bool kStrided = false>
void narrow_complex(const GemmArgs<std::complex<R>>& g) {
  using S = Simd<R>;
  using V = typename S::V;
  using T = std::complex<R>;
  constexpr int64_t L = S::kLanes;
  typename S::M masks[NV];
  for (int v = 0; v < NV; ++v) masks[v] = S::mask(2 * g.m - v * L);
  const V sign = S::pair(R(-1), R(1));
  const V alpha_re = S::set1(g.alpha.real()), alpha_im = S::pair(-g.alpha.imag(), g.alpha.imag());
  V a[K][NV], sw[K][NV];
  for (int p = 0; p < K; ++p) {
    const R* ap = reinterpret_cast<const R*>(g.a + p * g.csa);
    for (int v = 0; v < NV; ++v) {
      V x = S::load(ap + v * L, masks[v]);
      if (g.conj_a) x = S::mul(x, S::pair(R(1), R(-1)));
      x = S::fma(S::swap(x), alpha_im, S::mul(x, alpha_re));  // alpha x
      a[p][v] = x;
      sw[p][v] = S::mul(S::swap(x), sign);
      if (g.conj_b) sw[p][v] = S::mul(sw[p][v], S::set1(R(-1)));
    }
  }
  const bool read_c = g.beta != T{};
  const V beta_re = S::set1(g.beta.real()), beta_im = S::pair(-g.beta.imag(), g.beta.imag());
  // kStrided: columns in blocks of kStridedBlock, each block's columns in a stack tile
  // (one vector row per column), written out row by row as runs along C's columns.
  constexpr int64_t kBlock = kStrided ? kStridedBlock : 1;
  constexpr int64_t kColElems = NV * L / 2;  // complex elements of one column vector row
  alignas(64) T tile[kStrided ? kBlock * kColElems : 1];
  for (int64_t j = 0; j < g.n; ++j) {
    const R* bj = reinterpret_cast<const R*>(g.b + j * g.csb);
    V acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = S::zero();
    for (int p = 0; p < K; ++p) {
      const V re = S::set1(bj[2 * p * g.rsb]), im = S::set1(bj[2 * p * g.rsb + 1]);
      for (int v = 0; v < NV; ++v) {
        acc[v] = S::fma(a[p][v], re, acc[v]);
        acc[v] = S::fma(sw[p][v], im, acc[v]);
      }
    }
    if constexpr (kStrided) {
      const int64_t q = j % kBlock;
      R* cv = reinterpret_cast<R*>(tile + q * kColElems);
      for (int v = 0; v < NV; ++v) S::store(cv + v * L, acc[v]);
      if (q + 1 == kBlock || j + 1 == g.n) {
        const int64_t j0 = j - q, cols = q + 1;
        for (int64_t i = 0; i < g.m; ++i) {
          T* ci = g.c + i * g.rsc + j0 * g.csc;
          if (read_c) {
            for (int64_t u = 0; u < cols; ++u) ci[u * g.csc] = tile[u * kColElems + i] + g.beta * ci[u * g.csc];
          } else {
            for (int64_t u = 0; u < cols; ++u) ci[u * g.csc] = tile[u * kColElems + i];
          }
        }
      }
    } else {
      R* cj = reinterpret_cast<R*>(g.c + j * g.csc);
      for (int v = 0; v < NV; ++v) {
        V out = acc[v];
        if (read_c) {
          const V old = S::load(cj + v * L, masks[v]);
          out = S::fma(old, beta_re, out);
          out = S::fma(S::swap(old), beta_im, out);
        }
        S::store(cj + v * L, out, masks[v]);
      }
    }
  }
}

// The narrow form's instance for g.m rows and g.k steps (C's rows strided or not);
// false where it has none.
template <class R, bool kStrided>
bool narrow_product(const GemmArgs<std::complex<R>>& g) {
  constexpr int64_t kRowsPerVector = Simd<R>::kLanes / 2;
  const int64_t nv = (g.m + kRowsPerVector - 1) / kRowsPerVector;
  if (nv == 1) {
    switch (g.k) {
      case 1: narrow_complex<R, 1, 1, kStrided>(g); return true;
      case 2: narrow_complex<R, 1, 2, kStrided>(g); return true;
      case 3: narrow_complex<R, 1, 3, kStrided>(g); return true;
      case 4: narrow_complex<R, 1, 4, kStrided>(g); return true;
      case 5: narrow_complex<R, 1, 5, kStrided>(g); return true;
      case 6: narrow_complex<R, 1, 6, kStrided>(g); return true;
      case 7: narrow_complex<R, 1, 7, kStrided>(g); return true;
      case 8: narrow_complex<R, 1, 8, kStrided>(g); return true;
      default: return false;
    }
  }
  if (nv == 2) {
    switch (g.k) {
      case 1: narrow_complex<R, 2, 1, kStrided>(g); return true;
      case 2: narrow_complex<R, 2, 2, kStrided>(g); return true;
      case 3: narrow_complex<R, 2, 3, kStrided>(g); return true;
      case 4: narrow_complex<R, 2, 4, kStrided>(g); return true;
      default: return false;
    }
  }
  return false;
}

}  // namespace
#endif

template <class T>
void complex_short(const GemmArgs<T>& g) {
#if TENFERRO_ISA_LEVEL >= 1
  using R = typename T::value_type;
  if (g.rsa == 1 && g.m > 0 && g.n > 0 && g.k > 0 && g.m <= kNarrowVectors * (Simd<R>::kLanes / 2)) {
    if (g.rsc == 1 ? narrow_product<R, false>(g) : narrow_product<R, true>(g)) return;
  }
  if (g.rsa == 1 && g.rsc == 1 && g.m > 0 && g.n > 0) {
    if (g.k == 0) {
      gemm_naive<T>(g);  // C = beta C
      return;
    }
    short_product<R>(g);
    return;
  }
#endif
  // The baseline, and other strides (not planned: dot_plan.cc requires these).
  gemm_naive<T>(g);
}

template void complex_short<c128>(const GemmArgs<c128>&);
template void complex_short<c64>(const GemmArgs<c64>&);

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS

TENFERRO_ISA_END
