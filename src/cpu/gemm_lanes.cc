// Note [Batch-lane products]: a batch of f64 or f32 products whose batch dimension has
// unit stride in A, B and C (the column-major layout of numpy's 'bij,bjk->bik': the
// batch label is written first, so it is the fastest axis) makes every row and column
// of each product strided. BLAS needs a unit stride in each matrix, so the other routes
// pack the whole batch of both operands and compute into a scratch that is copied back
// (three transposing copies of the data), and every product is then a separate small
// GEMM. Here the batch itself is the vector: lane w of a vector is item w of the batch,
// so C[w, i, j] += A[w, i, p] B[w, p, j] is one FMA of a vector of A by a vector of B,
// with no broadcast, no packing of the batch and no scratch. Register blocks of
// kLaneRows x kLaneCols vectors of C (4 x 6 with 512-bit vectors, 3 x 4 with 256-bit
// ones) load kLaneRows + kLaneCols vectors per step of the contraction, with AVX-512
// each one whole cache line (8 f64 or 16 f32 items) of one row or column of the lane
// block; the planner takes the kernel at AVX-512 only (Note [Batch-lane thresholds] in
// dot_plan.cc). A lane block is kLanes items; a short last block is masked (its loads
// too: the lanes past the batch may lie past the buffer). Row blocks outermost re-read
// B's lane slice (k x n vectors) once per row block and keep A's rows in L1; with
// `columns_outer` the roles swap (the same loop on C^T = B^T A^T). The planner picks
// the order that re-reads the smaller slice and sends this kernel nothing larger than
// its measured limit.

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

#if TENFERRO_ISA_LEVEL >= 2
constexpr int kLaneRows = 4, kLaneCols = 6;  // 24 accumulators, 4 + 1 operand registers of 32
#else
constexpr int kLaneRows = 3, kLaneCols = 4;  // 12 accumulators, 3 + 1 operand registers of 16
#endif
// Contraction steps per packed block: 4 rows x 64 steps of 64-byte vectors are 16 KiB,
// half of L1, next to the other operand's stream.
constexpr int64_t kLaneDepth = 64;

// One register block of C for one vector of lanes.
template <class T>
struct LaneTile {
  int64_t rows, cols, kc;  // RI, RJ (the template's) and the contraction steps
  const T* x;              // X's vector (r, p) at x + r * xr + p * xp
  int64_t xr, xp;
  const T* y;  // Y's vector (t, p) at y + t * yc + p * yp
  int64_t yc, yp;
  T* c;  // C's vector (r, t) at c + r * rsc + t * csc
  int64_t rsc, csc;
  T alpha, beta;
  typename Simd<T>::M mask;
};

// C = alpha X Y + beta C for one RI x RJ block; X is the packed block (whole vectors,
// lanes past the batch zero). kMasked: Y (in the caller's arrays) and C are read and
// written with the lane mask.
template <class T, int RI, int RJ, bool kMasked>
void lane_block(const LaneTile<T>& tl) {
  using S = Simd<T>;
  typename S::V acc[RI][RJ];
#pragma GCC unroll 4
  for (int r = 0; r < RI; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < RJ; ++t) acc[r][t] = S::zero();
  const T* x = tl.x;
  const T* y = tl.y;
  const int64_t xr = tl.xr, xp = tl.xp, yc = tl.yc, yp = tl.yp;
  const typename S::M mask = tl.mask;
  for (int64_t p = 0; p < tl.kc; ++p, x += xp, y += yp) {
    typename S::V xv[RI];
#pragma GCC unroll 4
    for (int r = 0; r < RI; ++r) xv[r] = S::load(x + r * xr);
#pragma GCC unroll 6
    for (int t = 0; t < RJ; ++t) {
      const typename S::V yv = kMasked ? S::load(y + t * yc, mask) : S::load(y + t * yc);
#pragma GCC unroll 4
      for (int r = 0; r < RI; ++r) acc[r][t] = S::fma(xv[r], yv, acc[r][t]);
    }
  }
  const T alpha = tl.alpha, beta = tl.beta;
  const typename S::V av = S::set1(alpha), bv = S::set1(beta);
#pragma GCC unroll 4
  for (int r = 0; r < RI; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < RJ; ++t) {
      T* dst = tl.c + r * tl.rsc + t * tl.csc;
      typename S::V v = alpha == T{1} ? acc[r][t] : S::mul(av, acc[r][t]);
      if (beta != T{}) v = S::fma(bv, kMasked ? S::load(dst, mask) : S::load(dst), v);
      if (kMasked) {
        S::store(dst, v, mask);
      } else {
        S::store(dst, v);
      }
    }
}

template <class T, int RI, bool kMasked>
void lane_cols(const LaneTile<T>& t) {
  switch (t.cols) {
    case 6: return lane_block<T, RI, 6, kMasked>(t);
    case 5: return lane_block<T, RI, 5, kMasked>(t);
    case 4: return lane_block<T, RI, 4, kMasked>(t);
    case 3: return lane_block<T, RI, 3, kMasked>(t);
    case 2: return lane_block<T, RI, 2, kMasked>(t);
    default: return lane_block<T, RI, 1, kMasked>(t);
  }
}

template <class T, bool kMasked>
void lane_tile(const LaneTile<T>& t) {
  switch (t.rows) {
    case 4: return lane_cols<T, 4, kMasked>(t);
    case 3: return lane_cols<T, 3, kMasked>(t);
    case 2: return lane_cols<T, 2, kMasked>(t);
    default: return lane_cols<T, 1, kMasked>(t);
  }
}

// Copies `count` x kc vectors (vector (r, p) at src + r * rs + p * ps, lanes past the
// mask read as zero) to dst, vector (r, p) at dst + (p * count + r) * kLanes.
template <class T>
void pack_lanes(const T* src, int64_t count, int64_t kc, int64_t rs, int64_t ps, bool masked, typename Simd<T>::M mask,
                T* dst) {
  using S = Simd<T>;
  for (int64_t p = 0; p < kc; ++p, src += ps) {
    for (int64_t r = 0; r < count; ++r, dst += S::kLanes) {
      S::store(dst, masked ? S::load(src + r * rs, mask) : S::load(src + r * rs));
    }
  }
}

}  // namespace
#endif

// Note [Batch-lane packing]: the operand kept in L1 (A's row block; B's column block
// with columns outermost) is copied, kLaneDepth steps at a time, into a contiguous
// stack block before the register blocks use it: in the caller's arrays its vectors lie
// one contraction stride apart, and with power-of-two extents that stride maps every
// vector of a row to the same L1 set (bin_batched_matmul's A: 16 KiB apart), so the
// block never stayed in L1. The other operand streams from L2 in place.
template <class T>
void batch_lanes(const GemmArgs<T>& g, int64_t lanes, bool columns_outer) {
#if TENFERRO_ISA_LEVEL >= 1
  using S = Simd<T>;
  // Column blocks outermost are row blocks outermost of C^T = B^T A^T.
  const GemmArgs<T> h = columns_outer ? transposed(g) : g;
  constexpr int64_t L = S::kLanes;
  alignas(64) T held[kLaneRows * kLaneDepth * L];
  for (int64_t w0 = 0; w0 < lanes; w0 += L) {
    const bool masked = lanes - w0 < L;
    const typename S::M mask = S::mask(lanes - w0);
    for (int64_t p0 = 0; p0 < h.k; p0 += kLaneDepth) {
      const int64_t kc = std::min(kLaneDepth, h.k - p0);
      // Later depth blocks add to what the first wrote.
      const T beta = p0 == 0 ? h.beta : T{1};
      const T* a = h.a + w0 + p0 * h.csa;
      const T* b = h.b + w0 + p0 * h.rsb;
      T* c = h.c + w0;
      for (int64_t i0 = 0; i0 < h.m; i0 += kLaneRows) {
        const int64_t rows = std::min<int64_t>(kLaneRows, h.m - i0);
        pack_lanes<T>(a + i0 * h.rsa, rows, kc, h.rsa, h.csa, masked, mask, held);
        for (int64_t j0 = 0; j0 < h.n; j0 += kLaneCols) {
          const LaneTile<T> t{rows,
                              std::min<int64_t>(kLaneCols, h.n - j0),
                              kc,
                              held,
                              L,
                              rows * L,
                              b + j0 * h.csb,
                              h.csb,
                              h.rsb,
                              c + i0 * h.rsc + j0 * h.csc,
                              h.rsc,
                              h.csc,
                              h.alpha,
                              beta,
                              mask};
          masked ? lane_tile<T, true>(t) : lane_tile<T, false>(t);
        }
      }
    }
  }
#else
  // The baseline: lanes innermost, which the compiler vectorizes for the baseline ISA.
  (void)columns_outer;
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t i = 0; i < g.m; ++i) {
      T* c = g.c + i * g.rsc + j * g.csc;
      for (int64_t w = 0; w < lanes; ++w) c[w] = g.beta == T{} ? T{} : g.beta * c[w];
      for (int64_t p = 0; p < g.k; ++p) {
        const T* a = g.a + i * g.rsa + p * g.csa;
        const T* b = g.b + p * g.rsb + j * g.csb;
        for (int64_t w = 0; w < lanes; ++w) c[w] += g.alpha * (a[w] * b[w]);
      }
    }
#endif
}

template void batch_lanes<double>(const GemmArgs<double>&, int64_t, bool);
template void batch_lanes<float>(const GemmArgs<float>&, int64_t, bool);

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS

TENFERRO_ISA_END
