// Private: small-matrix kernels that factor kLanes real items at once. Included only by
// lanes_isa.cc, inside its ISA region, once per ISA level (Note [Lane kernels per ISA] in
// lanes.h): everything here lives in namespace detail::TENFERRO_ISA_NS.
//
// Note [Item lanes]: the batched small-matrix case (10^4 items of 4 x 4 or 8 x 8) is
// bound by the sequential dependency chain inside one factorization (each Jacobi
// rotation or elimination step waits for the previous one), not by arithmetic. These
// kernels interleave kLanes items element by element (x[(i + j n) * kLanes + w] is
// element (i, j) of item w), so every scalar step of the textbook algorithm becomes one
// vector operation over the lanes: the compiler vectorizes the innermost lane loops
// (AVX-512, AVX2 or the baseline's SSE: one copy per level), and the lanes' independent chains
// overlap. Decisions that differ per item (pivot rows, skipped rotations, convergence)
// become per-lane selects: a rotation a lane does not need is the identity (c = 1,
// s = 0), so all lanes run the same instruction stream, and Jacobi sweeps continue until
// every lane has converged. A short last group is padded with identity items, whose
// results are never written. Real dtypes only; complex items use the per-item kernels
// of small.h.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <limits>

#include "common.h"
#include "small.h"

#ifndef TENFERRO_ISA_NS
#error "small_lanes.h is compiled through lanes_isa.cc (one copy per ISA level)"
#endif

namespace tenferro::linalg::detail::TENFERRO_ISA_NS {

inline constexpr int kLanes = 8;

// Element offsets of items [g, g + count) of t, one per lane; lanes past `count` repeat
// the last item (a valid matrix whose results are computed and never written).
template <class T>
const T* lane_offsets(const Tensor& t, const Batch& batch, int64_t g, int count, int64_t* off) {
  for (int w = 0; w < kLanes; ++w) off[w] = batch.offset(g + std::min(w, count - 1), t);
  return static_cast<const T*>(t.storage()->data());
}

// Note [Lane transposes]: moving eight items into lane layout and back is an 8 x len
// transpose. When every item is one contiguous column-major block (the common case:
// compact batches, and every result this module allocates), it runs as 8 x 8 block
// transposes in vector registers (GCC vector extensions: three rounds of two-source
// shuffles, lowered to whatever the build's ISA has); other layouts use the per-element
// loops.
template <class T>
struct Vec8;
// V: eight elements in registers; U: the same, read from or written to memory of any
// element alignment as one vector access (a copy through the stack would split it into
// narrower stores that the wide load cannot forward from).
template <>
struct Vec8<double> {
  typedef double V __attribute__((vector_size(64)));
  typedef double U __attribute__((vector_size(64), aligned(8), may_alias));
  typedef int64_t M __attribute__((vector_size(64)));
};
template <>
struct Vec8<float> {
  typedef float V __attribute__((vector_size(32)));
  typedef float U __attribute__((vector_size(32), aligned(4), may_alias));
  typedef int32_t M __attribute__((vector_size(32)));
};

template <class T>
inline void transpose8x8(const T* const* rows, T* const* cols) {
  using V = typename Vec8<T>::V;
  using U = typename Vec8<T>::U;
  using M = typename Vec8<T>::M;
  V r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = *reinterpret_cast<const U*>(rows[k]);
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shuffle(r[k], r[k + 1], M{0, 8, 2, 10, 4, 12, 6, 14});
    t[k + 1] = __builtin_shuffle(r[k], r[k + 1], M{1, 9, 3, 11, 5, 13, 7, 15});
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = __builtin_shuffle(t[k], t[k + 2], M{0, 1, 8, 9, 4, 5, 12, 13});
    u[k + 1] = __builtin_shuffle(t[k + 1], t[k + 3], M{0, 1, 8, 9, 4, 5, 12, 13});
    u[k + 2] = __builtin_shuffle(t[k], t[k + 2], M{2, 3, 10, 11, 6, 7, 14, 15});
    u[k + 3] = __builtin_shuffle(t[k + 1], t[k + 3], M{2, 3, 10, 11, 6, 7, 14, 15});
  }
  for (int k = 0; k < 4; ++k) {
    const V lo = __builtin_shuffle(u[k], u[k + 4], M{0, 1, 2, 3, 8, 9, 10, 11});
    const V hi = __builtin_shuffle(u[k], u[k + 4], M{4, 5, 6, 7, 12, 13, 14, 15});
    *reinterpret_cast<U*>(cols[k]) = lo;
    *reinterpret_cast<U*>(cols[k + 4]) = hi;
  }
}

// x[e * kLanes + w] = src[off[w] + e] for e in [0, len).
template <class T>
void gather_items(const T* src, const int64_t* off, int64_t len, T* x) {
  static_assert(kLanes == 8, "8 x 8 block transposes");
  int64_t e = 0;
  for (; e + 8 <= len; e += 8) {
    const T* rows[8];
    T* cols[8];
    for (int k = 0; k < 8; ++k) {
      rows[k] = src + off[k] + e;
      cols[k] = x + (e + k) * kLanes;
    }
    transpose8x8(rows, cols);
  }
  for (; e < len; ++e)
    for (int w = 0; w < kLanes; ++w) x[e * kLanes + w] = src[off[w] + e];
}

// dst[off[w] + e] = x[e * kLanes + w] for e in [0, len), all kLanes lanes.
template <class T>
void scatter_items(const T* x, int64_t len, T* dst, const int64_t* off) {
  int64_t e = 0;
  for (; e + 8 <= len; e += 8) {
    const T* rows[8];
    T* cols[8];
    for (int k = 0; k < 8; ++k) {
      rows[k] = x + (e + k) * kLanes;
      cols[k] = dst + off[k] + e;
    }
    transpose8x8(rows, cols);
  }
  for (; e < len; ++e)
    for (int w = 0; w < kLanes; ++w) dst[off[w] + e] = x[e * kLanes + w];
}

// x (rows x cols per lane) = the items' last two axes, or their transposes when
// `transpose` (then rows/cols refer to the transposed matrices). The inner loop runs over
// the lanes (a gather where the target has one).
template <class T>
void load_lanes(const Tensor& a, const Batch& batch, int64_t g, int count, int64_t rows, int64_t cols, bool transpose,
                T* x) {
  int64_t off[kLanes];
  const T* base = lane_offsets<T>(a, batch, g, count, off);
  const int64_t r = a.rank();
  int64_t rs = a.strides()[static_cast<size_t>(r - 2)], cs = a.strides()[static_cast<size_t>(r - 1)];
  if (transpose) std::swap(rs, cs);
  if ((rs == 1 || rows == 1) && (cs == rows || cols == 1)) {
    gather_items(base, off, rows * cols, x);  // Note [Lane transposes]
    return;
  }
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t e = i * rs + j * cs;
      T* xe = x + (i + j * rows) * kLanes;
      for (int w = 0; w < kLanes; ++w) xe[w] = base[off[w] + e];
    }
}
template <class T>
void load_lanes(const Tensor& a, const Batch& batch, int64_t g, int count, int64_t n, T* x) {
  load_lanes(a, batch, g, count, n, n, false, x);
}

// The items' matrices (or their transposes) = x, for the first `count` lanes.
template <class T>
void store_lanes(const T* x, int64_t rows, int64_t cols, Tensor& out, const Batch& batch, int64_t g, int count,
                 bool transpose) {
  int64_t off[kLanes];
  T* base = const_cast<T*>(lane_offsets<T>(out, batch, g, count, off));
  const int64_t r = out.rank();
  int64_t rs = out.strides()[static_cast<size_t>(r - 2)], cs = out.strides()[static_cast<size_t>(r - 1)];
  if (transpose) std::swap(rs, cs);
  if (count == kLanes && (rs == 1 || rows == 1) && (cs == rows || cols == 1)) {
    scatter_items(x, rows * cols, base, off);  // Note [Lane transposes]
    return;
  }
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t e = i * rs + j * cs;
      const T* xe = x + (i + j * rows) * kLanes;
      if (count == kLanes) {
        for (int w = 0; w < kLanes; ++w) base[off[w] + e] = xe[w];
      } else {
        for (int w = 0; w < count; ++w) base[off[w] + e] = xe[w];
      }
    }
}

// A Cholesky pivot d: its square root r and 1 / r when d > 0, else -1 (the marker
// cholesky_lanes records) and 0. Computed unconditionally and selected, like
// jacobi_rotation, so the loop over the lanes vectorizes.
template <class T>
inline void cholesky_pivot(T d, T* r_out, T* inv_out) {
  const bool pos = d > T(0);
  const T dd = pos ? d : T(1);
  const T r = std::sqrt(dd);
  const T q = T(1) / r;
  *r_out = pos ? r : -T(1);
  *inv_out = pos ? q : T(0);
}

/// Cholesky of items [b, e): L (lower) or U = L^T (upper) into out.
template <class T>
void cholesky_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool lower, Tensor& out,
                    Failures& failures) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes];
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    // The lower triangle of A (of A^T when the upper one is given: real items).
    load_lanes(a, batch, g, count, n, n, !lower, x);
    int bad[kLanes] = {};
    for (int64_t j = 0; j < n; ++j) {
      T* xjj = x + (j + j * n) * kLanes;
      alignas(64) T inv[kLanes];
      for (int64_t k = 0; k < j; ++k) {
        const T* ljk = x + (j + k * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) xjj[w] -= ljk[w] * ljk[w];
      }
      // Not positive (or NaN): recorded below; 1 keeps the lane's arithmetic finite.
      // (Kept a loop, not unrolled first, so the loop vectorizer takes it.)
#pragma GCC unroll 1
      for (int w = 0; w < kLanes; ++w) cholesky_pivot(xjj[w], &xjj[w], &inv[w]);
      for (int w = 0; w < kLanes; ++w) {
        if (xjj[w] < T(0) && bad[w] == 0) bad[w] = static_cast<int>(j + 1);
      }
      for (int64_t i = j + 1; i < n; ++i) {
        T* xij = x + (i + j * n) * kLanes;
        for (int64_t k = 0; k < j; ++k) {
          const T* lik = x + (i + k * n) * kLanes;
          const T* ljk = x + (j + k * n) * kLanes;
          for (int w = 0; w < kLanes; ++w) xij[w] -= lik[w] * ljk[w];
        }
        for (int w = 0; w < kLanes; ++w) xij[w] *= inv[w];
      }
    }
    bool any_bad = false;
    for (int w = 0; w < count; ++w) {
      if (bad[w] != 0) {
        failures.record(g + w, bad[w]);
        any_bad = true;
      }
    }
    if (any_bad) continue;  // the call fails: nothing is published
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < j; ++i) {
        T* xe = x + (i + j * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) xe[w] = T(0);
      }
    // U = L^T: the transposed store.
    store_lanes(x, n, n, out, batch, g, count, !lower);
  }
}

/// LU with partial pivoting of kLanes items in place; piv[j * kLanes + w]. Returns per
/// lane 0 or 1 + the first zero pivot (zero pivots are replaced by 1 to keep the other
/// lanes' arithmetic finite; such items are reported, never published).
template <class T>
void lu_lanes(T* x, int64_t n, int64_t* piv, int* info) {
  for (int w = 0; w < kLanes; ++w) info[w] = 0;
  for (int64_t j = 0; j < n; ++j) {
    alignas(64) T best[kLanes];
    int64_t p[kLanes];
    for (int w = 0; w < kLanes; ++w) {
      best[w] = std::abs(x[(j + j * n) * kLanes + w]);
      p[w] = j;
    }
    for (int64_t i = j + 1; i < n; ++i) {
      const T* xi = x + (i + j * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) {
        const T v = std::abs(xi[w]);
        const bool gt = v > best[w];
        best[w] = gt ? v : best[w];
        p[w] = gt ? i : p[w];
      }
    }
    // Row swaps per lane, unconditional (a lane whose pivot is row j swaps it with
    // itself): no data-dependent branches.
    for (int w = 0; w < kLanes; ++w) piv[j * kLanes + w] = p[w];
    for (int64_t c = 0; c < n; ++c) {
      T* xc = x + c * n * kLanes;
      for (int w = 0; w < kLanes; ++w) {
        T* a = xc + j * kLanes + w;
        T* b = xc + p[w] * kLanes + w;
        const T t = *a;
        *a = *b;
        *b = t;
      }
    }
    T* xjj = x + (j + j * n) * kLanes;
    alignas(64) T inv[kLanes];
    for (int w = 0; w < kLanes; ++w) {
      if (xjj[w] == T(0)) {
        if (info[w] == 0) info[w] = static_cast<int>(j + 1);
        xjj[w] = T(1);
      }
      inv[w] = T(1) / xjj[w];
    }
    for (int64_t i = j + 1; i < n; ++i) {
      T* xij = x + (i + j * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) xij[w] *= inv[w];
    }
    for (int64_t c = j + 1; c < n; ++c) {
      const T* xjc = x + (j + c * n) * kLanes;
      for (int64_t i = j + 1; i < n; ++i) {
        T* xic = x + (i + c * n) * kLanes;
        const T* xij = x + (i + j * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) xic[w] -= xij[w] * xjc[w];
      }
    }
  }
}

/// Solves (P L U) X = B for kLanes items: B is n x k in lane layout (in place).
template <class T>
void lu_solve_lanes(const T* x, int64_t n, const int64_t* piv, T* bx, int64_t k) {
  for (int64_t c = 0; c < k; ++c) {
    T* bc = bx + c * n * kLanes;
    for (int64_t i = 0; i < n; ++i)
      for (int w = 0; w < kLanes; ++w) {
        T* a = bc + i * kLanes + w;
        T* b = bc + piv[i * kLanes + w] * kLanes + w;
        const T t = *a;
        *a = *b;
        *b = t;
      }
    for (int64_t j = 0; j < n; ++j) {
      const T* vj = bc + j * kLanes;
      for (int64_t i = j + 1; i < n; ++i) {
        const T* lij = x + (i + j * n) * kLanes;
        T* bi = bc + i * kLanes;
        for (int w = 0; w < kLanes; ++w) bi[w] -= lij[w] * vj[w];
      }
    }
    for (int64_t j = n - 1; j >= 0; --j) {
      T* vj = bc + j * kLanes;
      const T* ujj = x + (j + j * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) vj[w] /= ujj[w];
      for (int64_t i = 0; i < j; ++i) {
        const T* uij = x + (i + j * n) * kLanes;
        T* bi = bc + i * kLanes;
        for (int w = 0; w < kLanes; ++w) bi[w] -= uij[w] * vj[w];
      }
    }
  }
}

// col[j..n) -= tau v (v^T col[j..n)) per lane, with v = [1; x[j+1.., j]] the j-th
// reflector stored below the diagonal of x (real lanes: H = H^T).
template <class T>
inline void apply_reflector_lanes(const T* x, int64_t n, int64_t j, const T* tj, T* col) {
  alignas(64) T s[kLanes];
  T* cj = col + j * kLanes;
  for (int w = 0; w < kLanes; ++w) s[w] = cj[w];
  for (int64_t i = j + 1; i < n; ++i) {
    const T* v = x + (i + j * n) * kLanes;
    const T* ci = col + i * kLanes;
    for (int w = 0; w < kLanes; ++w) s[w] += v[w] * ci[w];
  }
  for (int w = 0; w < kLanes; ++w) {
    s[w] *= tj[w];
    cj[w] -= s[w];
  }
  for (int64_t i = j + 1; i < n; ++i) {
    const T* v = x + (i + j * n) * kLanes;
    T* ci = col + i * kLanes;
    for (int w = 0; w < kLanes; ++w) ci[w] -= s[w] * v[w];
  }
}

// (a_k, b_k) <- (c a_k - s b_k, s a_k + c b_k) per lane for k < count, element k of a
// at a + k * stride * kLanes (a column: stride 1; a row: stride n).
template <class T>
inline void rotate_lanes(T* a, T* b, int64_t count, int64_t stride, const T* c, const T* s) {
  for (int64_t k = 0; k < count; ++k) {
    T* ak = a + k * stride * kLanes;
    T* bk = b + k * stride * kLanes;
    for (int w = 0; w < kLanes; ++w) {
      const T a0 = ak[w], a1 = bk[w];
      ak[w] = c[w] * a0 - s[w] * a1;
      bk[w] = s[w] * a0 + c[w] * a1;
    }
  }
}

/// Householder QR of kLanes square items in place (R in the upper triangle, reflectors
/// below, LAPACK's convention); tau[j * kLanes + w]. Then Q into q when asked.
template <class T>
void qr_lanes(T* x, int64_t n, T* tau, T* q) {
  for (int64_t j = 0; j < n; ++j) {
    alignas(64) T xnorm2[kLanes] = {}, scale[kLanes];
    for (int64_t i = j + 1; i < n; ++i) {
      const T* xi = x + (i + j * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) xnorm2[w] += xi[w] * xi[w];
    }
    T* xjj = x + (j + j * n) * kLanes;
    T* tj = tau + j * kLanes;
    for (int w = 0; w < kLanes; ++w) {
      const T alpha = xjj[w];
      const bool skip = xnorm2[w] == T(0);
      const T norm = std::sqrt(alpha * alpha + xnorm2[w]);
      const T beta = alpha >= T(0) ? -norm : norm;
      const T denom = skip ? T(1) : alpha - beta;
      tj[w] = skip ? T(0) : (beta - alpha) / beta;
      scale[w] = skip ? T(0) : T(1) / denom;
      xjj[w] = skip ? alpha : beta;
    }
    for (int64_t i = j + 1; i < n; ++i) {
      T* xi = x + (i + j * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) xi[w] = xnorm2[w] == T(0) ? xi[w] : xi[w] * scale[w];
    }
    for (int64_t c = j + 1; c < n; ++c) apply_reflector_lanes(x, n, j, tj, x + c * n * kLanes);
  }
  if (q == nullptr) return;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      for (int w = 0; w < kLanes; ++w) q[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
  for (int64_t j = n - 1; j >= 0; --j) {
    const T* tj = tau + j * kLanes;
    for (int64_t c = j; c < n; ++c) apply_reflector_lanes(x, n, j, tj, q + c * n * kLanes);
  }
}

// The Jacobi rotation (c, s) that annihilates the coupling g between two directions of
// weights alpha and beta (Rutishauser's formulas; t is the smaller root); lanes that are
// converged or skipped get the identity.
template <class T>
inline void jacobi_rotation(T alpha, T beta, T g, bool active, T* c, T* s, T* t_out) {
  const T gg = active ? g : T(1);
  const T zeta = (beta - alpha) / (T(2) * gg);
  const T t = (zeta >= T(0) ? T(1) : T(-1)) / (std::abs(zeta) + std::sqrt(zeta * zeta + T(1)));
  const T cc = T(1) / std::sqrt(t * t + T(1));
  *c = active ? cc : T(1);
  *s = active ? t * cc : T(0);
  *t_out = active ? t : T(0);
}

/// Jacobi for kLanes symmetric items (x holds the full matrices, v gets the
/// eigenvectors when non-null). Returns false when some lane did not converge.
template <class T>
bool eigh_lanes(T* x, int64_t n, T* v) {
  const T eps = std::numeric_limits<T>::epsilon();
  if (v != nullptr) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i)
        for (int w = 0; w < kLanes; ++w) v[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
  }
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool any = false;
    // Note [Jacobi rounds] (small.h): a round's disjoint pairs read entries no other
    // pair of the round writes, so their rotations are computed together first.
    const int64_t m = n + (n & 1);
    for (int64_t round = 0; round + 1 < m; ++round) {
      int64_t ps[kSmallCap / 2 + 1], rs[kSmallCap / 2 + 1];
      const int pairs = round_robin_pairs(n, round, ps, rs);
      alignas(64) T c[kSmallCap / 2 + 1][kLanes], s[kSmallCap / 2 + 1][kLanes], t[kSmallCap / 2 + 1][kLanes];
      for (int k = 0; k < pairs; ++k) {
        const int64_t p = ps[k], r = rs[k];
        const T* xpr = x + (p + r * n) * kLanes;
        const T* xpp = x + (p + p * n) * kLanes;
        const T* xrr = x + (r + r * n) * kLanes;
        // Branch-free over the lanes (vectorized): inactive lanes get the identity.
        for (int w = 0; w < kLanes; ++w) {
          const T apr = xpr[w];
          const bool active = std::abs(apr) > eps * std::sqrt(std::abs(xpp[w])) * std::sqrt(std::abs(xrr[w])) &&
                              std::abs(apr) > std::numeric_limits<T>::min();
          jacobi_rotation(xpp[w], xrr[w], apr, active, &c[k][w], &s[k][w], &t[k][w]);
        }
      }
      for (int k = 0; k < pairs; ++k) {
        const int64_t p = ps[k], r = rs[k];
        T moved = 0;
        for (int w = 0; w < kLanes; ++w) moved += std::abs(s[k][w]);
        if (moved == T(0)) continue;
        any = true;
        // Columns p and r, then rows p and r (x <- J^T x J).
        rotate_lanes(x + p * n * kLanes, x + r * n * kLanes, n, 1, c[k], s[k]);
        rotate_lanes(x + p * kLanes, x + r * kLanes, n, n, c[k], s[k]);
        T* xpr = x + (p + r * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) {
          if (s[k][w] != T(0)) {
            xpr[w] = T(0);
            x[(r + p * n) * kLanes + w] = T(0);
          }
        }
        if (v != nullptr) rotate_lanes(v + p * n * kLanes, v + r * n * kLanes, n, 1, c[k], s[k]);
      }
    }
    if (!any) return true;
  }
  return n <= 1;
}

/// One-sided Jacobi on kLanes items: x's columns become U S, v accumulates V (when
/// non-null); norm2 gets the squared column norms. Returns false when some lane did not
/// converge.
template <class T>
bool svd_lanes(T* x, int64_t n, T* v, T* norm2) {
  const T eps = std::numeric_limits<T>::epsilon();
  if (v != nullptr) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i)
        for (int w = 0; w < kLanes; ++w) v[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
  }
  auto refresh = [&] {
    for (int64_t j = 0; j < n; ++j) {
      T* nj = norm2 + j * kLanes;
      for (int w = 0; w < kLanes; ++w) nj[w] = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* xij = x + (i + j * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) nj[w] += xij[w] * xij[w];
      }
    }
  };
  refresh();
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    alignas(64) T floor[kLanes] = {};
    for (int64_t j = 0; j < n; ++j)
      for (int w = 0; w < kLanes; ++w) floor[w] = std::max(floor[w], norm2[j * kLanes + w]);
    for (int w = 0; w < kLanes; ++w) floor[w] *= eps * eps;
    bool any = false;
    // Note [Jacobi rounds] (small.h): each round's disjoint pairs together.
    const int64_t m = n + (n & 1);  // a dummy column when n is odd
    for (int64_t round = 0; round + 1 < m; ++round) {
      int64_t ps[kSmallCap / 2 + 1], rs[kSmallCap / 2 + 1];
      const int pairs = round_robin_pairs(n, round, ps, rs);
      alignas(64) T g[kSmallCap / 2 + 1][kLanes] = {}, c[kSmallCap / 2 + 1][kLanes], s[kSmallCap / 2 + 1][kLanes],
          t[kSmallCap / 2 + 1][kLanes];
      for (int k = 0; k < pairs; ++k) {
        const int64_t p = ps[k], r = rs[k];
        for (int64_t i = 0; i < n; ++i) {
          const T* xp = x + (i + p * n) * kLanes;
          const T* xr = x + (i + r * n) * kLanes;
          for (int w = 0; w < kLanes; ++w) g[k][w] += xp[w] * xr[w];
        }
        const T* np = norm2 + p * kLanes;
        const T* nr = norm2 + r * kLanes;
        // Branch-free (bitwise &, no short circuit), so the lanes' square roots and
        // divisions vectorize (Note [Jacobi rounds]).
        for (int w = 0; w < kLanes; ++w) {
          const bool active = (np[w] > floor[w]) & (nr[w] > floor[w]) & (g[k][w] != T(0)) &
                              (std::abs(g[k][w]) > eps * std::sqrt(np[w]) * std::sqrt(nr[w]));
          jacobi_rotation(np[w], nr[w], g[k][w], active, &c[k][w], &s[k][w], &t[k][w]);
        }
      }
      for (int k = 0; k < pairs; ++k) {
        T moved = 0;
        for (int w = 0; w < kLanes; ++w) moved += std::abs(s[k][w]);
        if (moved == T(0)) continue;
        any = true;
        const int64_t p = ps[k], r = rs[k];
        rotate_lanes(x + p * n * kLanes, x + r * n * kLanes, n, 1, c[k], s[k]);
        T* np = norm2 + p * kLanes;
        T* nr = norm2 + r * kLanes;
        for (int w = 0; w < kLanes; ++w) {
          np[w] -= t[k][w] * g[k][w];
          nr[w] += t[k][w] * g[k][w];
        }
        if (v != nullptr) rotate_lanes(v + p * n * kLanes, v + r * n * kLanes, n, 1, c[k], s[k]);
      }
    }
    refresh();
    if (!any) return true;
  }
  return n <= 1;
}


// ---- item drivers: items [b, e) of a batch, kLanes at a time ----

/// SVD of square real items: s (descending), and U, Vh unless `values`.
template <class T>
void svd_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool values, Tensor& s_out,
                     Tensor* u_out, Tensor* vh_out, Failures& failures) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes], v[kSmallCap * kSmallCap * kLanes], norm2[kSmallCap * kLanes];
  const T eps = std::numeric_limits<T>::epsilon();
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    load_lanes(a, batch, g, count, n, x);
    const bool ok_all = svd_lanes(x, n, values ? nullptr : v, norm2);
    for (int w = 0; w < count; ++w) {
      const int64_t it = g + w;
      if (!ok_all) {
        failures.record(it, 1);
        continue;
      }
      int64_t order[kSmallCap];
      T sv[kSmallCap] = {};
      for (int64_t j = 0; j < n; ++j) {
        order[j] = j;
        sv[j] = std::sqrt(norm2[j * kLanes + w]);
      }
      std::sort(order, order + n, [&](int64_t i, int64_t j) { return sv[i] > sv[j] || (sv[i] == sv[j] && i < j); });
      const Mat<T> so = item_vec<T>(s_out, batch, it);
      for (int64_t j = 0; j < n; ++j) so(j, 0) = sv[order[j]];
      if (values) continue;
      const Mat<T> u = item_mat<T>(*u_out, batch, it), vh = item_mat<T>(*vh_out, batch, it);
      // U's column j = x[:, order[j]] / s_j; columns of numerically zero singular values
      // are completed to an orthonormal basis by Gram-Schmidt against unit vectors.
      const T tiny = sv[order[0]] * eps * static_cast<T>(n);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t c = order[j];
        if (sv[c] > tiny && sv[c] > std::numeric_limits<T>::min()) {
          const T inv = T(1) / sv[c];
          for (int64_t i = 0; i < n; ++i) u(i, j) = x[(i + c * n) * kLanes + w] * inv;
        } else {
          for (int64_t unit = 0; unit < n; ++unit) {
            T col[kSmallCap];
            for (int64_t i = 0; i < n; ++i) col[i] = i == unit ? T(1) : T(0);
            for (int pass = 0; pass < 2; ++pass) {
              for (int64_t q = 0; q < j; ++q) {
                T d = 0;
                for (int64_t i = 0; i < n; ++i) d += u(i, q) * col[i];
                for (int64_t i = 0; i < n; ++i) col[i] -= d * u(i, q);
              }
            }
            T nn = 0;
            for (int64_t i = 0; i < n; ++i) nn += col[i] * col[i];
            if (nn > T(0.25)) {
              const T inv = T(1) / std::sqrt(nn);
              for (int64_t i = 0; i < n; ++i) u(i, j) = col[i] * inv;
              break;
            }
          }
        }
        for (int64_t i = 0; i < n; ++i) vh(j, i) = v[(i + c * n) * kLanes + w];
      }
    }
  }
}

/// Symmetric eigendecomposition of real items (reading the `lower` or upper triangle):
/// ascending values, vectors when `vectors_out` is non-null.
template <class T>
void eigh_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool lower,
                      Tensor& values_out, Tensor* vectors_out, Failures& failures) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes], v[kSmallCap * kSmallCap * kLanes];
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    // The stored triangle, mirrored (read transposed when it is the upper one).
    load_lanes(a, batch, g, count, n, n, !lower, x);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < j; ++i) {
        T* up = x + (i + j * n) * kLanes;
        const T* lo = x + (j + i * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) up[w] = lo[w];
      }
    const bool ok_all = eigh_lanes(x, n, vectors_out != nullptr ? v : nullptr);
    for (int w = 0; w < count; ++w) {
      const int64_t it = g + w;
      if (!ok_all) {
        failures.record(it, 1);
        continue;
      }
      int64_t order[kSmallCap];
      for (int64_t i = 0; i < n; ++i) order[i] = i;
      auto d = [&](int64_t i) { return x[(i + i * n) * kLanes + w]; };
      std::sort(order, order + n, [&](int64_t i, int64_t j) { return d(i) < d(j) || (d(i) == d(j) && i < j); });
      const Mat<T> wo = item_vec<T>(values_out, batch, it);
      for (int64_t j = 0; j < n; ++j) wo(j, 0) = d(order[j]);
      if (vectors_out == nullptr) continue;
      const Mat<T> vo = item_mat<T>(*vectors_out, batch, it);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) vo(i, j) = v[(i + order[j] * n) * kLanes + w];
    }
  }
}

/// QR of square real items: R, and Q when `q_out` is non-null.
template <class T>
void qr_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, Tensor* q_out, Tensor& r_out) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes], q[kSmallCap * kSmallCap * kLanes], tau[kSmallCap * kLanes];
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    load_lanes(a, batch, g, count, n, x);
    qr_lanes(x, n, tau, q_out != nullptr ? q : nullptr);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = j + 1; i < n; ++i) {
        T* xe = x + (i + j * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) xe[w] = T(0);
      }
    store_lanes(x, n, n, r_out, batch, g, count, false);
    if (q_out != nullptr) store_lanes(q, n, n, *q_out, batch, g, count, false);
  }
}

/// X = A^-1 B for square real items; B [n x k] from `rhs` (or the identity when null).
template <class T>
void solve_items_lanes(const Tensor& a, const Tensor* rhs, const Batch& batch, int64_t b, int64_t e, int64_t n,
                       int64_t k, Tensor& out, Failures& failures) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes];
  int64_t piv[kSmallCap * kLanes];
  int info[kLanes];
  T col[kSmallCap * kLanes];
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    load_lanes(a, batch, g, count, n, x);
    lu_lanes(x, n, piv, info);
    for (int w = 0; w < count; ++w) {
      if (info[w] != 0) failures.record(g + w, info[w]);
    }
    // One right-hand side column at a time (k may exceed the stack budget).
    int64_t boff[kLanes], ooff[kLanes];
    const T* bbase = rhs != nullptr ? lane_offsets<T>(*rhs, batch, g, count, boff) : nullptr;
    T* obase = const_cast<T*>(lane_offsets<T>(out, batch, g, count, ooff));
    const int64_t ro = out.rank();
    const int64_t ors = out.strides()[static_cast<size_t>(ro - 2)], ocs = out.strides()[static_cast<size_t>(ro - 1)];
    const int64_t brs = rhs != nullptr ? rhs->strides()[static_cast<size_t>(rhs->rank() - 2)] : 0;
    const int64_t bcs = rhs != nullptr ? rhs->strides()[static_cast<size_t>(rhs->rank() - 1)] : 0;
    bool any_bad = false;
    for (int w = 0; w < count; ++w) any_bad |= info[w] != 0;
    if (any_bad) continue;  // the call fails: nothing is published
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t i = 0; i < n; ++i) {
        T* ci = col + i * kLanes;
        if (bbase != nullptr) {
          for (int w = 0; w < kLanes; ++w) ci[w] = bbase[boff[w] + i * brs + c * bcs];
        } else {
          for (int w = 0; w < kLanes; ++w) ci[w] = i == c ? T(1) : T(0);
        }
      }
      lu_solve_lanes(x, n, piv, col, 1);
      for (int64_t i = 0; i < n; ++i) {
        const T* ci = col + i * kLanes;
        for (int w = 0; w < count; ++w) obase[ooff[w] + i * ors + c * ocs] = ci[w];
      }
    }
  }
}

/// LU of square real items for determinants: the U diagonal and the permutation parity.
template <class T>
void det_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,
                     FunctionRef<void(int64_t item, const T* diag_stride_lanes, bool odd)> emit) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes];
  int64_t piv[kSmallCap * kLanes];
  int info[kLanes];
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    load_lanes(a, batch, g, count, n, x);
    lu_lanes(x, n, piv, info);
    for (int w = 0; w < count; ++w) {
      T d[kSmallCap];
      bool odd = false;
      for (int64_t i = 0; i < n; ++i) {
        d[i] = x[(i + i * n) * kLanes + w];
        odd ^= piv[i * kLanes + w] != i;
      }
      // A zero pivot was replaced by 1 inside lu_lanes: restore it.
      if (info[w] != 0) d[info[w] - 1] = T(0);
      emit(g + w, d, odd);
    }
  }
}

}  // namespace tenferro::linalg::detail::TENFERRO_ISA_NS
