#pragma once
// Private: small-matrix kernels that factor kLanes real items at once.
//
// Note [Item lanes]: the batched small-matrix case (10^4 items of 4 x 4 or 8 x 8) is
// bound by the sequential dependency chain inside one factorization (each Jacobi
// rotation or elimination step waits for the previous one), not by arithmetic. These
// kernels interleave kLanes items element by element (x[(i + j n) * kLanes + w] is
// element (i, j) of item w), so every scalar step of the textbook algorithm becomes one
// vector operation over the lanes: the compiler vectorizes the innermost lane loops
// (AVX-512, AVX2 or SSE, whatever the build targets), and the lanes' independent chains
// overlap. Decisions that differ per item (pivot rows, skipped rotations, convergence)
// become per-lane selects: a rotation a lane does not need is the identity (c = 1,
// s = 0), so all lanes run the same instruction stream, and Jacobi sweeps continue until
// every lane has converged. A short last group is padded with identity items, whose
// results are never written. Real dtypes only; complex items use the per-item kernels
// of small.h.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common.h"
#include "small.h"

namespace tenferro::linalg::detail {

inline constexpr int kLanes = 8;

// Loads items [b, b + count) of a (n x n each) into lane layout; missing lanes get I.
template <class T>
void load_lanes(const Tensor& a, const Batch& batch, int64_t b, int count, int64_t n, T* x) {
  for (int w = 0; w < kLanes; ++w) {
    if (w < count) {
      const Mat<T> m = item_mat<T>(a, batch, b + w);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) x[(i + j * n) * kLanes + w] = m(i, j);
    } else {
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) x[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
    }
  }
}

template <class T>
void store_lane(const T* x, int64_t rows, int64_t cols, int w, Mat<T> dst) {
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) dst(i, j) = x[(i + j * rows) * kLanes + w];
}

/// Cholesky of items [b, e): L (lower) or U = L^T (upper) into out.
template <class T>
void cholesky_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool lower, Tensor& out,
                    Failures& failures) {
  alignas(64) T x[kSmallCap * kSmallCap * kLanes];
  for (int64_t g = b; g < e; g += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, e - g));
    // Lower triangle of A in x (from the upper triangle when asked).
    for (int w = 0; w < kLanes; ++w) {
      if (w < count) {
        const Mat<T> m = item_mat<T>(a, batch, g + w);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = j; i < n; ++i) x[(i + j * n) * kLanes + w] = lower ? m(i, j) : m(j, i);
      } else {
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = j; i < n; ++i) x[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
      }
    }
    int bad[kLanes] = {};
    for (int64_t j = 0; j < n; ++j) {
      T* xjj = x + (j + j * n) * kLanes;
      alignas(64) T inv[kLanes];
      for (int64_t k = 0; k < j; ++k) {
        const T* ljk = x + (j + k * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) xjj[w] -= ljk[w] * ljk[w];
      }
      for (int w = 0; w < kLanes; ++w) {
        const T d = xjj[w];
        const bool ok_lane = d > T(0);
        if (!ok_lane && bad[w] == 0) bad[w] = static_cast<int>(j + 1);
        const T r = std::sqrt(ok_lane ? d : T(1));
        xjj[w] = r;
        inv[w] = T(1) / r;
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
    for (int w = 0; w < count; ++w) {
      if (bad[w] != 0) {
        failures.record(g + w, bad[w]);
        continue;
      }
      const Mat<T> o = item_mat<T>(out, batch, g + w);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) {
          const T l = lower ? (i >= j ? x[(i + j * n) * kLanes + w] : T(0)) : (i <= j ? x[(j + i * n) * kLanes + w] : T(0));
          o(i, j) = l;
        }
    }
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
    for (int w = 0; w < kLanes; ++w) {
      piv[j * kLanes + w] = p[w];
      if (p[w] != j) {
        for (int64_t c = 0; c < n; ++c) std::swap(x[(j + c * n) * kLanes + w], x[(p[w] + c * n) * kLanes + w]);
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
        const int64_t p = piv[i * kLanes + w];
        if (p != i) std::swap(bc[i * kLanes + w], bc[p * kLanes + w]);
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
    for (int64_t c = j + 1; c < n; ++c) {
      alignas(64) T s[kLanes];
      T* xjc = x + (j + c * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) s[w] = xjc[w];
      for (int64_t i = j + 1; i < n; ++i) {
        const T* v = x + (i + j * n) * kLanes;
        const T* xic = x + (i + c * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) s[w] += v[w] * xic[w];
      }
      for (int w = 0; w < kLanes; ++w) {
        s[w] *= tj[w];
        xjc[w] -= s[w];
      }
      for (int64_t i = j + 1; i < n; ++i) {
        const T* v = x + (i + j * n) * kLanes;
        T* xic = x + (i + c * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) xic[w] -= s[w] * v[w];
      }
    }
  }
  if (q == nullptr) return;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      for (int w = 0; w < kLanes; ++w) q[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
  for (int64_t j = n - 1; j >= 0; --j) {
    const T* tj = tau + j * kLanes;
    for (int64_t c = j; c < n; ++c) {
      alignas(64) T s[kLanes];
      T* qjc = q + (j + c * n) * kLanes;
      for (int w = 0; w < kLanes; ++w) s[w] = qjc[w];
      for (int64_t i = j + 1; i < n; ++i) {
        const T* v = x + (i + j * n) * kLanes;
        const T* qic = q + (i + c * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) s[w] += v[w] * qic[w];
      }
      for (int w = 0; w < kLanes; ++w) {
        s[w] *= tj[w];
        qjc[w] -= s[w];
      }
      for (int64_t i = j + 1; i < n; ++i) {
        const T* v = x + (i + j * n) * kLanes;
        T* qic = q + (i + c * n) * kLanes;
        for (int w = 0; w < kLanes; ++w) qic[w] -= s[w] * v[w];
      }
    }
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

/// Cyclic Jacobi for kLanes symmetric items (x holds the full matrices, v gets the
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
    for (int64_t p = 0; p < n - 1; ++p) {
      for (int64_t r = p + 1; r < n; ++r) {
        alignas(64) T c[kLanes], s[kLanes], t[kLanes];
        T* xpr = x + (p + r * n) * kLanes;
        const T* xpp = x + (p + p * n) * kLanes;
        const T* xrr = x + (r + r * n) * kLanes;
        // Branch-free over the lanes (vectorized): inactive lanes get the identity.
        for (int w = 0; w < kLanes; ++w) {
          const T apr = xpr[w];
          const bool active = std::abs(apr) > eps * std::sqrt(std::abs(xpp[w])) * std::sqrt(std::abs(xrr[w])) &&
                              std::abs(apr) > std::numeric_limits<T>::min();
          jacobi_rotation(xpp[w], xrr[w], apr, active, &c[w], &s[w], &t[w]);
        }
        T moved = 0;
        for (int w = 0; w < kLanes; ++w) moved += std::abs(s[w]);
        if (moved == T(0)) continue;
        any = true;
        // Columns p and r, then rows p and r (x <- J^T x J).
        for (int64_t k = 0; k < n; ++k) {
          T* xkp = x + (k + p * n) * kLanes;
          T* xkr = x + (k + r * n) * kLanes;
          for (int w = 0; w < kLanes; ++w) {
            const T a0 = xkp[w], a1 = xkr[w];
            xkp[w] = c[w] * a0 - s[w] * a1;
            xkr[w] = s[w] * a0 + c[w] * a1;
          }
        }
        for (int64_t k = 0; k < n; ++k) {
          T* xpk = x + (p + k * n) * kLanes;
          T* xrk = x + (r + k * n) * kLanes;
          for (int w = 0; w < kLanes; ++w) {
            const T a0 = xpk[w], a1 = xrk[w];
            xpk[w] = c[w] * a0 - s[w] * a1;
            xrk[w] = s[w] * a0 + c[w] * a1;
          }
        }
        for (int w = 0; w < kLanes; ++w) {
          if (s[w] != T(0)) {
            xpr[w] = T(0);
            x[(r + p * n) * kLanes + w] = T(0);
          }
        }
        if (v != nullptr) {
          for (int64_t k = 0; k < n; ++k) {
            T* vkp = v + (k + p * n) * kLanes;
            T* vkr = v + (k + r * n) * kLanes;
            for (int w = 0; w < kLanes; ++w) {
              const T a0 = vkp[w], a1 = vkr[w];
              vkp[w] = c[w] * a0 - s[w] * a1;
              vkr[w] = s[w] * a0 + c[w] * a1;
            }
          }
        }
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
    for (int64_t p = 0; p < n - 1; ++p) {
      for (int64_t r = p + 1; r < n; ++r) {
        alignas(64) T g[kLanes] = {}, c[kLanes], s[kLanes], t[kLanes];
        for (int64_t i = 0; i < n; ++i) {
          const T* xp = x + (i + p * n) * kLanes;
          const T* xr = x + (i + r * n) * kLanes;
          for (int w = 0; w < kLanes; ++w) g[w] += xp[w] * xr[w];
        }
        T* np = norm2 + p * kLanes;
        T* nr = norm2 + r * kLanes;
        for (int w = 0; w < kLanes; ++w) {
          const bool active = np[w] > floor[w] && nr[w] > floor[w] && g[w] != T(0) &&
                              std::abs(g[w]) > eps * std::sqrt(np[w]) * std::sqrt(nr[w]);
          jacobi_rotation(np[w], nr[w], g[w], active, &c[w], &s[w], &t[w]);
        }
        T moved = 0;
        for (int w = 0; w < kLanes; ++w) moved += std::abs(s[w]);
        if (moved == T(0)) continue;
        any = true;
        for (int64_t i = 0; i < n; ++i) {
          T* xp = x + (i + p * n) * kLanes;
          T* xr = x + (i + r * n) * kLanes;
          for (int w = 0; w < kLanes; ++w) {
            const T a0 = xp[w], a1 = xr[w];
            xp[w] = c[w] * a0 - s[w] * a1;
            xr[w] = s[w] * a0 + c[w] * a1;
          }
        }
        for (int w = 0; w < kLanes; ++w) {
          np[w] -= t[w] * g[w];
          nr[w] += t[w] * g[w];
        }
        if (v != nullptr) {
          for (int64_t i = 0; i < n; ++i) {
            T* vp = v + (i + p * n) * kLanes;
            T* vr = v + (i + r * n) * kLanes;
            for (int w = 0; w < kLanes; ++w) {
              const T a0 = vp[w], a1 = vr[w];
              vp[w] = c[w] * a0 - s[w] * a1;
              vr[w] = s[w] * a0 + c[w] * a1;
            }
          }
        }
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
    for (int w = 0; w < kLanes; ++w) {
      if (w < count) {
        const Mat<T> m = item_mat<T>(a, batch, g + w);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < n; ++i) {
            const bool stored = lower ? i >= j : i <= j;
            x[(i + j * n) * kLanes + w] = stored ? m(i, j) : m(j, i);
          }
      } else {
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < n; ++i) x[(i + j * n) * kLanes + w] = i == j ? T(1) : T(0);
      }
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
    for (int w = 0; w < count; ++w) {
      const Mat<T> r = item_mat<T>(r_out, batch, g + w);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) r(i, j) = i <= j ? x[(i + j * n) * kLanes + w] : T(0);
      if (q_out != nullptr) store_lane(q, n, n, w, item_mat<T>(*q_out, batch, g + w));
    }
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
    for (int64_t c = 0; c < k; ++c) {
      for (int w = 0; w < kLanes; ++w) {
        if (w < count && rhs != nullptr) {
          const Mat<T> bm = item_mat<T>(*rhs, batch, g + w);
          for (int64_t i = 0; i < n; ++i) col[i * kLanes + w] = bm(i, c);
        } else {
          for (int64_t i = 0; i < n; ++i) col[i * kLanes + w] = i == c ? T(1) : T(0);
        }
      }
      lu_solve_lanes(x, n, piv, col, 1);
      for (int w = 0; w < count; ++w) {
        if (info[w] != 0) continue;
        const Mat<T> o = item_mat<T>(out, batch, g + w);
        for (int64_t i = 0; i < n; ++i) o(i, c) = col[i * kLanes + w];
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

}  // namespace tenferro::linalg::detail
