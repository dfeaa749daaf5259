#pragma once
// Private: the engine's small-matrix kernels (square items of extent <= 16).
//
// Note [Small-matrix kernels]: a LAPACK call has a fixed cost (argument checks,
// workspace logic, blocked code paths meant for large matrices) that dominates a 4 x 4
// or 8 x 8 item; batches of 10^4 such items are what tensor-network codes produce. These
// kernels copy one item into a local column-major array (it fits in L1), factor it with
// the textbook unblocked algorithm, and write the results: Cholesky (right-looking),
// Householder QR (LAPACK's reflector convention, so R's diagonal signs match geqrf),
// LU with partial pivoting plus the triangular solves, cyclic Jacobi for the symmetric
// eigenproblem and one-sided (Hestenes) Jacobi for the SVD. Real items run kLanes at a
// time (small_lanes.h, Note [Item lanes]); complex items one at a time with the kernels
// below, and the Jacobi methods exist for real dtypes only (complex eigh and SVD items
// use LAPACK). Accuracy: the Jacobi methods are at least
// as accurate as the QR-based LAPACK drivers (relative accuracy for singular values of
// well-scaled columns); they sweep until every off-diagonal pair is below n * epsilon
// relative to its diagonal, at most kMaxSweeps times (else kNoConvergence). The
// measurement that justifies them is in docs/benchmarks.md ("Linear algebra").

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>

#include "common.h"

namespace tenferro::linalg::detail {

inline constexpr int64_t kSmallCap = 16;

// Note [Jacobi rounds]: the Jacobi kernels (svd_lanes, eigh_lanes) visit the pairs in
// round-robin order and handle each round's disjoint pairs together: their couplings and
// rotations read entries no other pair of the round writes, so the square roots and
// divisions of one pair overlap with the others' instead of waiting on them (the cyclic
// order chains every pair to the one before). With the rotation's lane loop branch-free
// as well (so it vectorizes), 10^4 8 x 8 items at one thread: SVD 30.6 -> 13.9 ms, eigh
// 15.3 -> 11.4 ms (docs/benchmarks.md "Linear algebra").
// round_robin_pairs gives the pairs (p < r) of round `round` (0 <= round < m - 1, m = n
// rounded up to even) of the circle method: column m - 1 meets `round`, and round + i
// meets round - i (mod m - 1); pairs with the dummy column n (n odd) are left out. The
// m - 1 rounds meet every pair once; the pairs of one round are disjoint.
inline int round_robin_pairs(int64_t n, int64_t round, int64_t* ps, int64_t* rs) noexcept {
  const int64_t m = n + (n & 1);
  int pairs = 0;
  for (int64_t i = 0; i < m / 2; ++i) {
    const int64_t a = i == 0 ? m - 1 : (round + i) % (m - 1);
    const int64_t b = i == 0 ? round : (round - i + m - 1) % (m - 1);
    if (a >= n || b >= n) continue;
    ps[pairs] = std::min(a, b);
    rs[pairs] = std::max(a, b);
    ++pairs;
  }
  return pairs;
}

inline constexpr int kMaxSweeps = 40;

template <class T>
constexpr bool small_cholesky_supported() {
  return true;
}
template <class T>
constexpr bool small_qr_supported() {
  return true;
}
template <class T>
constexpr bool small_lu_supported() {
  return true;
}
template <class T>
constexpr bool small_eigh_supported() {
  return !kIsComplex<T>;
}
template <class T>
constexpr bool small_svd_supported() {
  return !kIsComplex<T>;
}

/// L (lower) or U (upper) with the other triangle zero; reads only the `lower`/upper
/// triangle of a. Returns 0 or the order of the first non-positive leading minor.
template <class T>
int small_cholesky(Mat<T> a, int64_t n, bool lower, Mat<T> out) {
  T l[kSmallCap * kSmallCap];
  // l holds the lower factor of A (read from either triangle).
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = j; i < n; ++i) l[i + j * n] = lower ? a(i, j) : conj_of(a(j, i));
  }
  for (int64_t j = 0; j < n; ++j) {
    Real<T> d;
    if constexpr (kIsComplex<T>) {
      d = l[j + j * n].real();
    } else {
      d = l[j + j * n];
    }
    for (int64_t k = 0; k < j; ++k) d -= abs2(l[j + k * n]);
    if (!(d > 0)) return static_cast<int>(j + 1);
    const Real<T> djj = std::sqrt(d);
    l[j + j * n] = T(djj);
    const Real<T> inv = Real<T>(1) / djj;
    for (int64_t i = j + 1; i < n; ++i) {
      T s = l[i + j * n];
      for (int64_t k = 0; k < j; ++k) s -= l[i + k * n] * conj_of(l[j + k * n]);
      l[i + j * n] = s * inv;
    }
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) {
      if (lower) {
        out(i, j) = i >= j ? l[i + j * n] : T(0);
      } else {
        out(i, j) = i <= j ? conj_of(l[j + i * n]) : T(0);
      }
    }
  return 0;
}

/// Householder QR of a square item: R (n x n upper) and, when q.p is set, Q (n x n).
template <class T>
void small_qr(Mat<T> a, int64_t n, Mat<T> q, Mat<T> r) {
  T x[kSmallCap * kSmallCap], tau[kSmallCap];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) x[i + j * n] = a(i, j);
  for (int64_t j = 0; j < n; ++j) {
    // Reflector H = I - tau v v^H with v = [1; x[j+1:, j]] mapping x[j:, j] to beta e1
    // (LAPACK's larfg: beta = -sign(Re alpha) * ||x||).
    const T alpha = x[j + j * n];
    Real<T> xnorm2 = 0;
    for (int64_t i = j + 1; i < n; ++i) xnorm2 += abs2(x[i + j * n]);
    Real<T> alpha_im = 0;
    if constexpr (kIsComplex<T>) alpha_im = alpha.imag();
    if (xnorm2 == 0 && alpha_im == 0) {
      tau[j] = T(0);
      continue;
    }
    Real<T> alpha_re;
    if constexpr (kIsComplex<T>) {
      alpha_re = alpha.real();
    } else {
      alpha_re = alpha;
    }
    const Real<T> norm = std::sqrt(abs2(alpha) + xnorm2);
    const Real<T> beta = alpha_re >= 0 ? -norm : norm;
    tau[j] = (T(beta) - alpha) / T(beta);
    const T scale = T(1) / (alpha - T(beta));
    for (int64_t i = j + 1; i < n; ++i) x[i + j * n] *= scale;
    x[j + j * n] = T(beta);
    // Apply H^H = I - conj(tau) v v^H to the remaining columns.
    for (int64_t c = j + 1; c < n; ++c) {
      T s = x[j + c * n];
      for (int64_t i = j + 1; i < n; ++i) s += conj_of(x[i + j * n]) * x[i + c * n];
      s *= conj_of(tau[j]);
      x[j + c * n] -= s;
      for (int64_t i = j + 1; i < n; ++i) x[i + c * n] -= s * x[i + j * n];
    }
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) r(i, j) = i <= j ? x[i + j * n] : T(0);
  if (q.p == nullptr) return;
  // Q = H_0 H_1 ... H_{n-1} applied to the identity, last reflector first.
  T qq[kSmallCap * kSmallCap];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) qq[i + j * n] = i == j ? T(1) : T(0);
  for (int64_t j = n - 1; j >= 0; --j) {
    if (tau[j] == T(0)) continue;
    for (int64_t c = j; c < n; ++c) {
      T s = qq[j + c * n];
      for (int64_t i = j + 1; i < n; ++i) s += conj_of(x[i + j * n]) * qq[i + c * n];
      s *= tau[j];
      qq[j + c * n] -= s;
      for (int64_t i = j + 1; i < n; ++i) qq[i + c * n] -= s * x[i + j * n];
    }
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) q(i, j) = qq[i + j * n];
}

/// LU with partial pivoting of a square item in place (col-major, ld n); piv[i] is the
/// row swapped with row i. Returns 0 or 1 + the first zero pivot's index.
template <class T>
int small_lu(T* x, int64_t n, int64_t* piv) {
  int info = 0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t p = j;
    Real<T> best = std::abs(x[j + j * n]);
    for (int64_t i = j + 1; i < n; ++i) {
      const Real<T> v = std::abs(x[i + j * n]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    piv[j] = p;
    if (p != j) {
      for (int64_t c = 0; c < n; ++c) std::swap(x[j + c * n], x[p + c * n]);
    }
    if (x[j + j * n] == T(0)) {
      if (info == 0) info = static_cast<int>(j + 1);
      continue;
    }
    const T inv = T(1) / x[j + j * n];
    for (int64_t i = j + 1; i < n; ++i) x[i + j * n] *= inv;
    for (int64_t c = j + 1; c < n; ++c) {
      const T f = x[j + c * n];
      if (f == T(0)) continue;
      for (int64_t i = j + 1; i < n; ++i) x[i + c * n] -= x[i + j * n] * f;
    }
  }
  return info;
}

/// Solves (P L U) X = B in place for B (n x k, col-major ld n) from small_lu's output.
template <class T>
void small_lu_solve(const T* x, int64_t n, const int64_t* piv, T* b, int64_t k) {
  for (int64_t c = 0; c < k; ++c) {
    T* bc = b + c * n;
    for (int64_t i = 0; i < n; ++i)
      if (piv[i] != i) std::swap(bc[i], bc[piv[i]]);
    for (int64_t j = 0; j < n; ++j) {
      const T v = bc[j];
      for (int64_t i = j + 1; i < n; ++i) bc[i] -= x[i + j * n] * v;
    }
    for (int64_t j = n - 1; j >= 0; --j) {
      bc[j] /= x[j + j * n];
      const T v = bc[j];
      for (int64_t i = 0; i < j; ++i) bc[i] -= x[i + j * n] * v;
    }
  }
}

}  // namespace tenferro::linalg::detail
