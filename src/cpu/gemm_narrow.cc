// Note [Narrow products]: a small matrix applied to many vectors, C [m, n] = alpha A
// [m, k] B [k, n] + beta C with m within two vectors of rows and a short contraction (a
// rotation applied to points stored point by point, einsum('ij,nj->ni', R, P) on a
// C-ordered P; a gate on a real state's fastest axis). A GEMM packs B for register blocks
// that such an A barely fills, and OpenBLAS zeroes a C far larger than the caches before
// its kernel adds into it (a second pass over C). This kernel holds alpha A's columns in
// registers (vectors of rows, zero past m) and reads each column of B once, in column
// order: column j of C is sum_p a_p b_pj, one broadcast and one multiply-add per step and
// vector of rows, kStep columns side by side (independent chains of multiply-adds).
// - A and B at any strides (A is read once, element by element; B's column steps are
//   broadcasts, so its layout only decides how many streams the prefetchers follow).
// - C's rows contiguous (g.rsc == 1). Columns dense (csc == m: C one run, the point by
//   point layout) with m not a multiple of the vector: blocks of kBlockVectors vectors
//   of C's run go through a stack tile, each column's vectors stored at m apart
//   (overlapping: each store covers the previous column's unused lanes), the tile then
//   copied out in whole vectors with beta applied there; C is written as one stream,
//   without masked stores (slow at AVX2 on AMD). Otherwise each column is stored
//   directly (masked past m).
// - Rows that fit half a vector run on 256-bit vectors at AVX-512 too: the tile's
//   overlapping 64-byte stores split cache lines more often than 32-byte ones, and
//   nothing is gained from the empty half (f64 3 x 10^6 x 3, one thread, Zen 5, CLI,
//   three alternating rounds: 512-bit 2.12-2.14 ms, the AVX2 cap's 256-bit 1.37-1.44). Non-temporal stores for a C
//   beyond the caches were slower (one thread, Zen 5: 3 x 10^6 x 3 f64 1.3-1.5 -> 2.4-2.7 ms): the tile's blocks leave
//   partial lines at their edges.
// One thread; callers split the columns. Complex products have their own form (Note
// [Narrow complex products] in gemm_complex.cc). Figures: docs/benchmarks.md ("Narrow
// products").

#include <algorithm>
#include <cstdint>

#include <immintrin.h>

#include "gemm.h"
#include "tenferro/core/isa_region.h"

TENFERRO_ISA_BEGIN
#include "simd.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

#if TENFERRO_ISA_LEVEL >= 1
namespace {

// Vectors of C's run per tile: a block is the whole columns that fit (at least one); a
// block's run that ends inside a vector is copied out with a masked tail (the tile's lanes
// past the run are read but never stored).
constexpr int64_t kBlockVectors = 16;
// Columns computed side by side.
constexpr int kStep = 4;

template <class S, class T, int NV, int K>
void narrow_columns(const GemmArgs<T>& g) {
  using V = typename S::V;
  constexpr int64_t L = S::kLanes;
  const int64_t m = g.m;
  // alpha A's columns as vectors of rows, zero past m.
  V a[K][NV];
  {
    alignas(64) T col[NV * L];
    for (int p = 0; p < K; ++p) {
      for (int64_t i = 0; i < NV * L; ++i) col[i] = i < m ? g.alpha * g.a[i * g.rsa + p * g.csa] : T{0};
      for (int v = 0; v < NV; ++v) a[p][v] = S::load(col + v * L);
    }
  }
  // Columns [j, j + NC) of alpha A B into acc, the columns' sums interleaved (independent
  // chains of multiply-adds side by side).
  auto columns = [&]<int NC>(int64_t j, V(&acc)[NC][NV]) {
    for (int u = 0; u < NC; ++u)
      for (int v = 0; v < NV; ++v) acc[u][v] = S::zero();
    const T* bj = g.b + j * g.csb;
    for (int p = 0; p < K; ++p) {
      for (int u = 0; u < NC; ++u) {
        const V x = S::set1(bj[p * g.rsb + u * g.csb]);
        for (int v = 0; v < NV; ++v) acc[u][v] = S::fma(a[p][v], x, acc[u][v]);
      }
    }
  };
  const bool read_c = g.beta != T{0};
  const V beta = S::set1(g.beta);
  if (g.csc == m && m % L != 0) {
    // Whole columns per tile: at least one, and as many as fit kBlockVectors vectors.
    const int64_t cols = std::max<int64_t>(1, kBlockVectors * L / m);
    alignas(64) T tile[kBlockVectors * L + 2 * NV * L];
    for (int64_t j0 = 0; j0 < g.n; j0 += cols) {
      const int64_t nc = std::min(cols, g.n - j0);
      // Stored in column order: each column's vectors overwrite the previous one's lanes past m.
      int64_t q = 0;
      for (; q + kStep <= nc; q += kStep) {
        V acc[kStep][NV];
        columns.template operator()<kStep>(j0 + q, acc);
        for (int u = 0; u < kStep; ++u)
          for (int v = 0; v < NV; ++v) S::store(tile + (q + u) * m + v * L, acc[u][v]);
      }
      for (; q < nc; ++q) {
        V acc[1][NV];
        columns.template operator()<1>(j0 + q, acc);
        for (int v = 0; v < NV; ++v) S::store(tile + q * m + v * L, acc[0][v]);
      }
      const int64_t run = nc * m;
      T* c = g.c + j0 * m;
      int64_t t = 0;
      for (; t + L <= run; t += L) {
        V x = S::load(tile + t);
        if (read_c) x = S::fma(S::load(c + t), beta, x);
        S::store(c + t, x);
      }
      if (t < run) {
        const auto mask = S::mask(run - t);
        V x = S::load(tile + t);
        if (read_c) x = S::fma(S::load(c + t, mask), beta, x);
        S::store(c + t, x, mask);
      }
    }
    return;
  }
  typename S::M masks[NV];
  for (int v = 0; v < NV; ++v) masks[v] = S::mask(m - v * L);
  const bool full = m % L == 0;  // whole vectors: plain stores
  auto store = [&]<int NC>(int64_t j, const V(&acc)[NC][NV]) {
    for (int u = 0; u < NC; ++u) {
      T* cj = g.c + (j + u) * g.csc;
      for (int v = 0; v < NV; ++v) {
        V x = acc[u][v];
        if (full) {
          if (read_c) x = S::fma(S::load(cj + v * L), beta, x);
          S::store(cj + v * L, x);
        } else {
          if (read_c) x = S::fma(S::load(cj + v * L, masks[v]), beta, x);
          S::store(cj + v * L, x, masks[v]);
        }
      }
    }
  };
  int64_t j = 0;
  for (; j + kStep <= g.n; j += kStep) {
    V acc[kStep][NV];
    columns.template operator()<kStep>(j, acc);
    store.template operator()<kStep>(j, acc);
  }
  for (; j < g.n; ++j) {
    V acc[1][NV];
    columns.template operator()<1>(j, acc);
    store.template operator()<1>(j, acc);
  }
}

template <class S, class T, int NV>
bool narrow_k(const GemmArgs<T>& g) {
  switch (g.k) {
    case 1: narrow_columns<S, T, NV, 1>(g); return true;
    case 2: narrow_columns<S, T, NV, 2>(g); return true;
    case 3: narrow_columns<S, T, NV, 3>(g); return true;
    case 4: narrow_columns<S, T, NV, 4>(g); return true;
    default: break;
  }
  if constexpr (NV == 1) {
    switch (g.k) {
      case 5: narrow_columns<S, T, NV, 5>(g); return true;
      case 6: narrow_columns<S, T, NV, 6>(g); return true;
      case 7: narrow_columns<S, T, NV, 7>(g); return true;
      case 8: narrow_columns<S, T, NV, 8>(g); return true;
      default: break;
    }
  }
  return false;
}

}  // namespace
#endif

template <class T>
void narrow(const GemmArgs<T>& g) {
#if TENFERRO_ISA_LEVEL >= 1
  constexpr int64_t L = Simd<T>::kLanes;
  if (g.m > 0 && g.n > 0 && g.rsc == 1 && narrow_takes(g.m, g.k, L)) {
    // Rows that fit half a vector run on the 256-bit vectors (Note [Narrow products]).
    if (g.m <= Simd256<T>::kLanes ? narrow_k<Simd256<T>, T, 1>(g)
        : g.m <= L                ? narrow_k<Simd<T>, T, 1>(g)
                                  : narrow_k<Simd<T>, T, 2>(g)) {
      return;
    }
  }
#endif
  // The baseline, and other shapes (not planned: dot_plan.cc requires these).
  gemm_naive<T>(g);
}

template void narrow<double>(const GemmArgs<double>&);
template void narrow<float>(const GemmArgs<float>&);

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS

TENFERRO_ISA_END
