#include "tenferro/linalg/linalg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "small.h"
#include "tenferro/cpu/engine.h"

namespace tenferro::linalg {
namespace {

using c128 = std::complex<double>;

// ---- independent oracles: everything is checked in c128 with naive loops ----

// A dense copy of one matrix of a tensor: M[i][j] for the item at `batch` (leading
// indices).
struct Dense {
  int64_t rows = 0, cols = 0;
  std::vector<c128> v;
  c128& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  c128 at(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

Dense item(const Tensor& t, std::vector<int64_t> batch) {
  // A matrix item when two axes remain after the batch index, else a column vector.
  Dense d;
  const int64_t r = t.rank();
  const bool vec = static_cast<int64_t>(batch.size()) == r - 1;
  d.rows = vec ? t.dim(r - 1) : t.dim(r - 2);
  d.cols = vec ? 1 : t.dim(r - 1);
  d.v.resize(static_cast<size_t>(d.rows * d.cols));
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.cols; ++j) {
      std::vector<int64_t> idx = batch;
      idx.push_back(i);
      if (!vec) idx.push_back(j);
      d.at(i, j) = t.get_as_c128(idx).value();
    }
  return d;
}

Dense matmul(const Dense& a, const Dense& b) {
  Dense c{a.rows, b.cols, std::vector<c128>(static_cast<size_t>(a.rows * b.cols))};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j) {
      c128 s = 0;
      for (int64_t k = 0; k < a.cols; ++k) s += a.at(i, k) * b.at(k, j);
      c.at(i, j) = s;
    }
  return c;
}

Dense adjoint(const Dense& a) {
  Dense c{a.cols, a.rows, std::vector<c128>(a.v.size())};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) c.at(j, i) = std::conj(a.at(i, j));
  return c;
}

Dense diag(const Dense& s, int64_t rows, int64_t cols) {
  Dense d{rows, cols, std::vector<c128>(static_cast<size_t>(rows * cols))};
  for (int64_t i = 0; i < std::min(rows, cols) && i < s.rows; ++i) d.at(i, i) = s.at(i, 0);
  return d;
}

double max_diff(const Dense& a, const Dense& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  double m = 0;
  for (size_t i = 0; i < a.v.size() && i < b.v.size(); ++i) m = std::max(m, std::abs(a.v[i] - b.v[i]));
  return m;
}

Dense identity(int64_t n) { return diag(Dense{n, 1, std::vector<c128>(static_cast<size_t>(n), 1.0)}, n, n); }

double tol(DType dt) { return dt == DType::kF32 || dt == DType::kC64 ? 2e-4 : 1e-10; }

class LinalgTest : public ::testing::TestWithParam<DType> {
 protected:
  CpuExecutionContext ctx_ = CpuExecutionContext::sequential();
  DType dt() const { return GetParam(); }
  Tensor rand(std::vector<int64_t> shape, uint64_t seed) const {
    return Tensor::random_normal(dt(), shape, seed).value();
  }
  // A Hermitian positive-definite batch: A A^H + n I, built with the oracle.
  Tensor spd(int64_t batch, int64_t n, uint64_t seed) const {
    Tensor a = rand({batch, n, n}, seed);
    std::vector<c128> out(static_cast<size_t>(batch * n * n));
    for (int64_t b = 0; b < batch; ++b) {
      Dense x = item(a, {b});
      Dense p = matmul(x, adjoint(x));
      for (int64_t i = 0; i < n; ++i) p.at(i, i) += static_cast<double>(n);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>((b * n + i) * n + j)] = p.at(i, j);
    }
    return from_c128({batch, n, n}, out);
  }
  Tensor from_c128(std::vector<int64_t> shape, const std::vector<c128>& rm) const {
    switch (dt()) {
      case DType::kF32: {
        std::vector<float> v;
        for (c128 x : rm) v.push_back(static_cast<float>(x.real()));
        return Tensor::from_row_major<float>(shape, v).value();
      }
      case DType::kF64: {
        std::vector<double> v;
        for (c128 x : rm) v.push_back(x.real());
        return Tensor::from_row_major<double>(shape, v).value();
      }
      case DType::kC64: {
        std::vector<std::complex<float>> v;
        for (c128 x : rm) v.emplace_back(static_cast<float>(x.real()), static_cast<float>(x.imag()));
        return Tensor::from_row_major<std::complex<float>>(shape, v).value();
      }
      default: return Tensor::from_row_major<c128>(shape, rm).value();
    }
  }
  bool complex() const { return dt() == DType::kC64 || dt() == DType::kC128; }
};

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(dtype_name(info.param));
}

// Checks U S Vh = A, orthonormal columns of U and rows of Vh, descending S >= 0.
void check_svd(const Tensor& a, const SvdResult& r, std::vector<int64_t> b, bool full, double t) {
  const Dense x = item(a, b), s = item(r.s, b), u = item(r.u, b), vh = item(r.vh, b);
  const int64_t m = x.rows, n = x.cols, k = std::min(m, n);
  for (int64_t i = 0; i < k; ++i) {
    EXPECT_GE(s.at(i, 0).real(), 0.0);
    if (i > 0) {
      EXPECT_GE(s.at(i - 1, 0).real(), s.at(i, 0).real());
    }
  }
  EXPECT_EQ(u.cols, full ? m : k);
  EXPECT_EQ(vh.rows, full ? n : k);
  const Dense us = matmul(u, diag(s, u.cols, vh.rows));
  EXPECT_LT(max_diff(matmul(us, vh), x), t * (1 + s.at(0, 0).real())) << "U S Vh = A";
  EXPECT_LT(max_diff(matmul(adjoint(u), u), identity(u.cols)), t) << "U^H U = I";
  EXPECT_LT(max_diff(matmul(vh, adjoint(vh)), identity(vh.rows)), t) << "Vh Vh^H = I";
}

TEST_P(LinalgTest, SvdThinFullAndValuesReconstructBatchedStridedInput) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 3}, {3, 5}, {4, 4}, {1, 1}, {7, 2}}) {
    const Tensor a = rand({2, 3, m, n}, 1 + m * 10 + n);
    for (SvdMode mode : {SvdMode::kThin, SvdMode::kFull}) {
      SvdOptions o;
      o.mode = mode;
      const SvdResult r = svd(ctx_, a, o).value();
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j) check_svd(a, r, {i, j}, mode == SvdMode::kFull, tol(dt()) * 10);
    }
    SvdOptions vo;
    vo.mode = SvdMode::kValuesOnly;
    const SvdResult v = svd(ctx_, a, vo).value();
    EXPECT_FALSE(v.u.defined());
    const SvdResult thin = svd(ctx_, a).value();
    EXPECT_LT(max_diff(item(v.s, {1, 2}), item(thin.s, {1, 2})), tol(dt()) * 10);
  }
  // Transposed (strided) and negatively strided views of the same matrix.
  const Tensor base = rand({6, 4}, 77);
  const Tensor tv = base.transpose().value();            // 4 x 6, row-major strides
  const Tensor fv = base.flip(0).value();                // negative stride
  for (const Tensor& x : {tv, fv}) {
    const SvdResult r = svd(ctx_, x).value();
    check_svd(x, r, {}, false, tol(dt()) * 10);
  }
}

TEST_P(LinalgTest, SvdSmallKernelAgreesWithLapack) {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 13, 16}) {  // odd n: a dummy column in the Jacobi rounds
    const Tensor a = rand({9, n, n}, 100 + n);
    const SvdResult small = svd(ctx_, a).value();
    SvdOptions lapack;
    lapack.linalg.small_max_dim = 0;
    const SvdResult ref = svd(ctx_, a, lapack).value();
    EXPECT_EQ(ref.route.kernel, Kernel::kLapack);
    for (int64_t b = 0; b < 9; ++b) {
      check_svd(a, small, {b}, true, tol(dt()) * 10);
      EXPECT_LT(max_diff(item(small.s, {b}), item(ref.s, {b})), tol(dt()) * 10 * static_cast<double>((1 + n)));
    }
  }
}

TEST_P(LinalgTest, SvdRankDeficientAndZeroSize) {
  // Rank-1 outer product: one nonzero singular value, vectors still orthonormal.
  std::vector<c128> v;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) v.push_back(c128(i + 1) * c128(j - 1.5));
  const Tensor a = from_c128({4, 4}, v);
  for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
    SvdOptions o;
    o.mode = SvdMode::kFull;
    o.linalg.small_max_dim = small;
    const SvdResult r = svd(ctx_, a, o).value();
    check_svd(a, r, {}, true, tol(dt()) * 100);
    EXPECT_LT(std::abs(r.s.get_as_c128({1}).value()), tol(dt()) * 100);
  }
  const SvdResult z = svd(ctx_, rand({3, 0, 4}, 5)).value();
  EXPECT_EQ(z.s.shape(), Shape({3, 0}));
  EXPECT_EQ(z.u.shape(), Shape({3, 0, 0}));
  EXPECT_EQ(z.vh.shape(), Shape({3, 0, 4}));
  SvdOptions full;
  full.mode = SvdMode::kFull;
  const SvdResult zf = svd(ctx_, rand({0, 4}, 5), full).value();
  EXPECT_LT(max_diff(item(zf.vh, {}), identity(4)), 1e-12) << "a full Vh of a 0 x 4 matrix is unitary";
  const SvdResult e = svd(ctx_, rand({0, 3, 3}, 5)).value();
  EXPECT_EQ(e.s.shape(), Shape({0, 3}));
}

TEST_P(LinalgTest, SvdGaugeFixIsDeterministicAndKeepsA) {
  const Tensor a = rand({3, 6, 4}, 11);
  SvdOptions o;
  o.gauge_fix = true;
  for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
    o.linalg.small_max_dim = small;
    const SvdResult r = svd(ctx_, a, o).value();
    for (int64_t b = 0; b < 3; ++b) {
      check_svd(a, r, {b}, false, tol(dt()) * 10);
      const Dense u = item(r.u, {b});
      for (int64_t j = 0; j < u.cols; ++j) {
        int64_t best = 0;
        for (int64_t i = 1; i < u.rows; ++i)
          if (std::abs(u.at(i, j)) > std::abs(u.at(best, j))) best = i;
        EXPECT_GT(u.at(best, j).real(), 0.0);
        EXPECT_NEAR(u.at(best, j).imag(), 0.0, tol(dt()));
      }
    }
  }
  // Same input through different drivers: the gauge-fixed vectors agree.
  SvdOptions g1, g2;
  g1.gauge_fix = g2.gauge_fix = true;
  g1.driver = SvdDriver::kGesdd;
  g2.driver = SvdDriver::kGesvd;
  const SvdResult r1 = svd(ctx_, a, g1).value(), r2 = svd(ctx_, a, g2).value();
  EXPECT_LT(max_diff(item(r1.u, {1}), item(r2.u, {1})), tol(dt()) * 100);
  EXPECT_LT(max_diff(item(r1.vh, {1}), item(r2.vh, {1})), tol(dt()) * 100);
}

TEST_P(LinalgTest, QrModesAndPivoting) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{6, 4}, {4, 6}, {5, 5}, {3, 3}}) {
    const Tensor a = rand({11, m, n}, 200 + m + n);
    for (QrMode mode : {QrMode::kReduced, QrMode::kComplete}) {
      const QrResult r = qr(ctx_, a, mode).value();
      for (int64_t b = 0; b < 11; ++b) {
        const Dense q = item(r.q, {b}), rr = item(r.r, {b}), x = item(a, {b});
        EXPECT_LT(max_diff(matmul(q, rr), x), tol(dt()) * 20);
        EXPECT_LT(max_diff(matmul(adjoint(q), q), identity(q.cols)), tol(dt()) * 20);
        for (int64_t i = 0; i < rr.rows; ++i)
          for (int64_t j = 0; j < std::min(i, rr.cols); ++j) EXPECT_EQ(rr.at(i, j), c128(0));
      }
    }
    const QrResult ronly = qr(ctx_, a, QrMode::kR).value();
    EXPECT_FALSE(ronly.q.defined());
    const QrPivotedResult p = qr_pivoted(ctx_, a).value();
    for (int64_t b = 0; b < 2; ++b) {
      const Dense q = item(p.q, {b}), rr = item(p.r, {b}), x = item(a, {b});
      Dense xp = x;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t src = p.perm.get<int64_t>({b, j}).value();
        for (int64_t i = 0; i < m; ++i) xp.at(i, j) = x.at(i, src);
      }
      EXPECT_LT(max_diff(matmul(q, rr), xp), tol(dt()) * 20);
      for (int64_t i = 1; i < std::min(m, n); ++i) EXPECT_GE(std::abs(rr.at(i - 1, i - 1)), std::abs(rr.at(i, i)) - 1e-6);
    }
  }
}

TEST_P(LinalgTest, EighBothTrianglesAndSmallKernel) {
  for (int64_t n : {1, 3, 7, 8, 16, 20}) {
    const Tensor s = spd(11, n, 300 + n);
    for (Uplo ul : {Uplo::kLower, Uplo::kUpper}) {
      for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
        LinalgOptions o;
        o.small_max_dim = small;
        const EighResult r = eigh(ctx_, s, ul, o).value();
        for (int64_t b = 0; b < 11; ++b) {
          const Dense a = item(s, {b}), v = item(r.vectors, {b}), w = item(r.values, {b});
          for (int64_t i = 1; i < n; ++i) EXPECT_LE(w.at(i - 1, 0).real(), w.at(i, 0).real());
          EXPECT_LT(max_diff(matmul(a, v), matmul(v, diag(w, n, n))), tol(dt()) * 100 * static_cast<double>(n)) << "A V = V L";
          EXPECT_LT(max_diff(matmul(adjoint(v), v), identity(n)), tol(dt()) * 10 * static_cast<double>(n));
        }
        const Tensor vals = eigvalsh(ctx_, s, ul, o).value();
        EXPECT_LT(max_diff(item(vals, {2}), item(r.values, {2})), tol(dt()) * 100 * static_cast<double>(n));
      }
    }
  }
}

TEST_P(LinalgTest, EighZeroAndRankDeficient) {
  // A zero matrix and a rank-1 v v^H: eigenvalues 0 (and |v|^2), vectors orthonormal.
  std::vector<c128> z(16, 0.0), r1;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) r1.push_back(c128(i + 1) * c128(j + 1));
  for (const auto& v : {z, r1}) {
    const Tensor a = from_c128({4, 4}, v);
    for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
      LinalgOptions o;
      o.small_max_dim = small;
      const EighResult r = eigh(ctx_, a, Uplo::kLower, o).value();
      const Dense x = item(a, {}), vec = item(r.vectors, {}), w = item(r.values, {});
      EXPECT_LT(max_diff(matmul(x, vec), matmul(vec, diag(w, 4, 4))), tol(dt()) * 100);
      EXPECT_LT(max_diff(matmul(adjoint(vec), vec), identity(4)), tol(dt()) * 10);
      EXPECT_NEAR(w.at(3, 0).real(), v == z ? 0.0 : 30.0, tol(dt()) * 1e4);
    }
  }
}

TEST_P(LinalgTest, EigRightVectors) {
  for (int64_t n : {1, 4, 9}) {
    const Tensor a = rand({3, n, n}, 400 + n);
    const EigResult r = eig(ctx_, a).value();
    EXPECT_EQ(r.values.dtype(), complex() || true ? (dt() == DType::kF32 || dt() == DType::kC64 ? DType::kC64 : DType::kC128)
                                                  : dt());
    for (int64_t b = 0; b < 3; ++b) {
      const Dense x = item(a, {b}), v = item(r.vectors, {b}), w = item(r.values, {b});
      EXPECT_LT(max_diff(matmul(x, v), matmul(v, diag(w, n, n))), tol(dt()) * 100 * static_cast<double>(n));
    }
    const Tensor w = eigvals(ctx_, a).value();
    EXPECT_LT(max_diff(item(w, {1}), item(r.values, {1})), tol(dt()) * 100 * static_cast<double>(n));
  }
}

TEST_P(LinalgTest, CholeskyFactorsAndRejectsNonSpdNamingTheItem) {
  for (int64_t n : {1, 4, 8, 17}) {
    const Tensor s = spd(11, n, 500 + n);  // a full group of item lanes and a tail
    for (Uplo ul : {Uplo::kLower, Uplo::kUpper}) {
      for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
        LinalgOptions o;
        o.small_max_dim = small;
        const Tensor l = cholesky(ctx_, s, ul, o).value();
        for (int64_t b = 0; b < 11; ++b) {
          const Dense f = item(l, {b}), a = item(s, {b});
          const Dense prod = ul == Uplo::kLower ? matmul(f, adjoint(f)) : matmul(adjoint(f), f);
          EXPECT_LT(max_diff(prod, a), tol(dt()) * 10 * static_cast<double>(n * n));
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
              if (ul == Uplo::kLower ? j > i : j < i) {
                EXPECT_EQ(f.at(i, j), c128(0));
              }
        }
      }
    }
  }
  // Item 2 of 3 is indefinite.
  std::vector<c128> v;
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) v.push_back(i == j ? (b == 2 && i == 1 ? -1.0 : 2.0) : 0.0);
  for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
    LinalgOptions o;
    o.small_max_dim = small;
    const auto r = cholesky(ctx_, from_c128({3, 3, 3}, v), Uplo::kLower, o);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), ErrorCode::kNotPositiveDefinite);
    EXPECT_NE(r.error().message().find("batch item 2 of 3"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("order 2"), std::string::npos) << r.error().message();
  }
}

TEST_P(LinalgTest, CholeskyIntoStridedDestination) {
  const Tensor s = spd(2, 5, 600);
  // Destination: a transposed view of a fresh buffer (row-major items).
  Tensor buf = Tensor::zeros(dt(), {2, 5, 5}).value();
  Tensor dst = buf.permute({0, 2, 1}).value();
  buf = Tensor();
  ASSERT_TRUE(cholesky_into(ctx_, s, Uplo::kLower, dst).has_value());
  const Tensor ref = cholesky(ctx_, s).value();
  EXPECT_LT(max_diff(item(dst, {1}), item(ref, {1})), tol(dt()));
  Tensor wrong = Tensor::zeros(dt(), {2, 5, 4}).value();
  EXPECT_EQ(cholesky_into(ctx_, s, Uplo::kLower, wrong).error().code(), ErrorCode::kShapeMismatch);
}

TEST_P(LinalgTest, LuReconstructsAndSolves) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 5}, {6, 3}, {3, 6}}) {
    const Tensor a = rand({2, m, n}, 700 + m * n);
    const LuResult r = lu(ctx_, a).value();
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_LT(max_diff(matmul(matmul(item(r.p, {b}), item(r.l, {b})), item(r.u, {b})), item(a, {b})),
                tol(dt()) * 20);
    }
  }
  const Tensor a = rand({3, 6, 6}, 710), bm = rand({3, 6, 2}, 711);
  const LuFactorResult f = lu_factor(ctx_, a).value();
  const Tensor x = lu_solve(ctx_, f, bm).value();
  for (int64_t b = 0; b < 3; ++b) EXPECT_LT(max_diff(matmul(item(a, {b}), item(x, {b})), item(bm, {b})), tol(dt()) * 100);
}

// Note [Recursive LU]: items with min(m, n) >= kRecursiveLuMinDim, square, tall and wide,
// odd extents (uneven halves, partial 64-column panels): P L U = A, multipliers of
// magnitude at most 1 (partial pivoting, LAPACK's |re| + |im|), solve and slogdet
// against independent oracles, and an exactly zero pivot reported as LAPACK does (det
// exactly 0, also where the product of the other pivots overflows f32).
TEST_P(LinalgTest, RecursiveLuFactorsLargeItems) {
  const double t = tol(dt());
  for (auto [m, n] : {std::pair<int64_t, int64_t>{kRecursiveLuMinDim, kRecursiveLuMinDim}, {203, 203}, {190, 131}, {131, 190}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
    const Tensor a = rand({m, n}, 1200 + m + n);
    const LuResult r = lu(ctx_, a).value();
    // |l| <= 1 (real); complex pivots maximize |re| + |im|, so |l| <= sqrt(2).
    const Dense l = item(r.l, {});
    const double bound = complex() ? std::sqrt(2.0) : 1.0;
    for (const c128& x : l.v) EXPECT_LE(std::abs(x), bound * (1 + 1e-6));
    const double scale = static_cast<double>(std::max(m, n));
    EXPECT_LT(max_diff(matmul(matmul(item(r.p, {}), l), item(r.u, {})), item(a, {})), t * 10 * scale);
  }
  const int64_t n = 203;
  const Tensor a = rand({n, n}, 1300), bm = rand({n, 2}, 1301);
  const Tensor x = solve(ctx_, a, bm).value();
  EXPECT_LT(max_diff(matmul(item(a, {}), item(x, {})), item(bm, {})), t * 1000 * static_cast<double>(n));
  // log|det| against the eigenvalues (eig: an independent LAPACK path).
  const SlogdetResult sl = slogdet(ctx_, a).value();
  const EigResult e = eig(ctx_, a).value();
  double want = 0;
  for (int64_t i = 0; i < n; ++i) want += std::log(std::abs(e.values.get_as_c128({i}).value()));
  EXPECT_NEAR(sl.logabsdet.get_as_c128({}).value().real(), want, t * 100 * static_cast<double>(n));
  // Column 70 exactly zero: U[70, 70] is the first zero pivot; solve names it, det is 0.
  std::vector<c128> v(static_cast<size_t>(n * n));
  const Dense d = item(a, {});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(i * n + j)] = j == 70 ? 0.0 : d.at(i, j);
  const Tensor sing = from_c128({n, n}, v);
  const auto sr = solve(ctx_, sing, bm);
  ASSERT_FALSE(sr.has_value());
  EXPECT_EQ(sr.error().code(), ErrorCode::kSingular);
  EXPECT_NE(sr.error().message().find("U[70, 70]"), std::string::npos) << sr.error().message();
  EXPECT_EQ(std::abs(det(ctx_, sing).value().get_as_c128({}).value()), 0.0);
}

// Note [Engine back-transformation]: svd and eigh vectors of items with min(m, n) >=
// kStagedMinDim run the staged route (LAPACK's reduction and bidiagonal / tridiagonal
// solver, the reflectors applied by blocks on dot_general): square, tall and wide items
// (both bidiagonal forms), partial reflector blocks, thin and full U / Vh, strided and
// negatively strided inputs, both triangles for eigh; identities against the oracle and
// values against LAPACK's own drivers (gesdd, heevd values only).
TEST_P(LinalgTest, StagedSvdAndEighMatchIdentities) {
  const double t = tol(dt());
  // 101 x 70 and 70 x 101: both bidiagonal forms; 150 x 70, 300 x 64: QR first; 70 x
  // 150, 64 x 300: the SVD of A^H.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{kStagedMinDim, kStagedMinDim}, {101, 70}, {70, 101}, {131, 131},
                      {150, 70}, {300, kStagedMinDim}, {70, 150}, {kStagedMinDim, 300}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
    const Tensor a = rand({2, m, n}, 1400 + m + n);
    const double scale = static_cast<double>(std::max(m, n));
    SvdOptions lapack;
    lapack.driver = SvdDriver::kGesdd;
    lapack.mode = SvdMode::kValuesOnly;
    const SvdResult want = svd(ctx_, a, lapack).value();
    for (SvdMode mode : {SvdMode::kThin, SvdMode::kFull}) {
      SvdOptions o;
      o.mode = mode;
      const SvdResult r = svd(ctx_, a, o).value();
      EXPECT_EQ(r.route.kernel, Kernel::kStaged);
      for (int64_t b = 0; b < 2; ++b) {
        check_svd(a, r, {b}, mode == SvdMode::kFull, t * scale);
        EXPECT_LT(max_diff(item(r.s, {b}), item(want.s, {b})), t * scale);
      }
    }
  }
  const Tensor base = rand({90, 70}, 1500);
  for (const Tensor& x : {base.transpose().value(), base.flip(0).value()}) {
    const SvdResult r = svd(ctx_, x).value();
    EXPECT_EQ(r.route.kernel, Kernel::kStaged);
    check_svd(x, r, {}, false, t * 90);
  }
  for (int64_t n : {kStagedMinDim, int64_t{101}}) {
    SCOPED_TRACE(n);
    const Tensor s = spd(2, n, 1600 + n);
    const double scale = static_cast<double>(n);
    for (Uplo ul : {Uplo::kLower, Uplo::kUpper}) {
      const EighResult r = eigh(ctx_, s, ul).value();
      EXPECT_EQ(r.route.kernel, Kernel::kStaged);
      const Tensor vals = eigvalsh(ctx_, s, ul).value();
      for (int64_t b = 0; b < 2; ++b) {
        const Dense x = item(s, {b}), v = item(r.vectors, {b}), w = item(r.values, {b});
        for (int64_t i = 1; i < n; ++i) EXPECT_LE(w.at(i - 1, 0).real(), w.at(i, 0).real());
        EXPECT_LT(max_diff(matmul(x, v), matmul(v, diag(w, n, n))), t * 100 * scale * scale) << "A V = V L";
        EXPECT_LT(max_diff(matmul(adjoint(v), v), identity(n)), t * 10 * scale);
        EXPECT_LT(max_diff(item(vals, {b}), w), t * 100 * scale * scale);
      }
    }
    // Only the named triangle is read: garbage in the other one changes nothing.
    Dense d = item(s, {0});
    std::vector<c128> lower_only(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) lower_only[static_cast<size_t>(i * n + j)] = i >= j ? d.at(i, j) : c128(1e3, 7);
    const EighResult lo = eigh(ctx_, from_c128({n, n}, lower_only), Uplo::kLower).value();
    const EighResult full = eigh(ctx_, s, Uplo::kLower).value();
    EXPECT_LT(max_diff(item(lo.values, {}), item(full.values, {0})), t * 100 * scale * scale);
  }
  // A NaN in the second item: svd and eigh reject it up front naming the item (Note
  // [Non-finite input]).
  {
    const int64_t n = kStagedMinDim;
    std::vector<c128> v(static_cast<size_t>(2 * n * n), 0.5);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + i)] = static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(n * n + i * n + i)] = static_cast<double>(n);
    v[static_cast<size_t>(n * n + 3 * n + 3)] = std::nan("");
    const Tensor bad = from_c128({2, n, n}, v);
    const auto sv = svd(ctx_, bad);
    ASSERT_FALSE(sv.has_value());
    EXPECT_EQ(sv.error().code(), ErrorCode::kInvalidArgument) << sv.error().message();
    EXPECT_NE(sv.error().message().find("batch item 1"), std::string::npos) << sv.error().message();
    const auto ev = eigh(ctx_, bad, Uplo::kLower);
    ASSERT_FALSE(ev.has_value());
    EXPECT_EQ(ev.error().code(), ErrorCode::kInvalidArgument) << ev.error().message();
    EXPECT_NE(ev.error().message().find("batch item 1"), std::string::npos) << ev.error().message();
  }
}

// Note [Held workspace]: repeated calls with one Workspace query LAPACK once per shape,
// reuse one scratch block, and give the results calls without it give; a nested call
// (pinv's SVD) does not share the lent block; the query cache is bounded.
TEST_P(LinalgTest, HeldWorkspaceIsReusedAndChangesNothing) {
  Workspace ws;
  LinalgOptions lo;
  lo.workspace = &ws;
  SvdOptions so;
  so.linalg = lo;
  const Tensor a = rand({2, 100, 90}, 1700), sq = spd(2, 70, 1701), bm = rand({2, 100, 3}, 1702);
  auto same = [&](const Tensor& x, const Tensor& y) {
    ASSERT_EQ(x.shape(), y.shape());
    const int64_t count = x.numel();
    for (int64_t i = 0; i < count; ++i) {
      std::vector<int64_t> idx(static_cast<size_t>(x.rank()));
      int64_t rest = i;
      for (int64_t d = 0; d < x.rank(); ++d) {
        idx[static_cast<size_t>(d)] = rest % x.dim(d);
        rest /= x.dim(d);
      }
      ASSERT_EQ(x.get_as_c128(idx).value(), y.get_as_c128(idx).value());
    }
  };
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    const int64_t misses = ws.misses();
    same(svd(ctx_, a, so).value().u, svd(ctx_, a).value().u);
    same(qr(ctx_, a, QrMode::kReduced, lo).value().r, qr(ctx_, a).value().r);
    same(eigh(ctx_, sq, Uplo::kLower, lo).value().vectors, eigh(ctx_, sq, Uplo::kLower).value().vectors);
    same(eigvalsh(ctx_, sq, Uplo::kUpper, lo).value(), eigvalsh(ctx_, sq, Uplo::kUpper).value());
    same(eig(ctx_, sq, lo).value().values, eig(ctx_, sq).value().values);
    same(lstsq(ctx_, a, bm, std::nullopt, lo).value().solution, lstsq(ctx_, a, bm).value().solution);
    same(pinv(ctx_, a, std::nullopt, lo).value(), pinv(ctx_, a).value());
    if (round == 1) {
      EXPECT_EQ(ws.misses(), misses) << "warm calls query nothing";
      EXPECT_GT(ws.hits(), 0);
    }
  }
  EXPECT_GT(ws.held_bytes(), 0);
  EXPECT_GT(ws.queries(), 0);
  const int64_t held = ws.held_bytes();
  (void)svd(ctx_, a, so).value();
  EXPECT_EQ(ws.held_bytes(), held) << "the held block is reused, not grown";
  ws.clear();
  EXPECT_EQ(ws.held_bytes(), 0);
  EXPECT_EQ(ws.queries(), 0);
  // Bounded: more shapes than kMaxQueries replace the oldest results.
  for (int64_t n = 1; n <= Workspace::kMaxQueries + 4; ++n) (void)qr(ctx_, rand({n + 16, n}, 1800), QrMode::kReduced, lo).value();
  EXPECT_EQ(ws.queries(), Workspace::kMaxQueries);
  EXPECT_EQ(ws.evictions(), 4);
}

TEST_P(LinalgTest, SolveVectorMatrixBroadcastAndSingular) {
  for (int64_t n : {1, 3, 8, 24}) {
    const Tensor a = rand({11, n, n}, 800 + n);
    const Tensor bm = rand({n, 3}, 801 + n);  // broadcast over A's batch
    for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
      LinalgOptions o;
      o.small_max_dim = small;
      const Tensor x = solve(ctx_, a, bm, o).value();
      EXPECT_EQ(x.shape(), Shape({11, n, 3}));
      for (int64_t b = 0; b < 11; ++b)
        EXPECT_LT(max_diff(matmul(item(a, {b}), item(x, {b})), item(bm, {})), tol(dt()) * 1000 * static_cast<double>(n));
      const Tensor bv = rand({n}, 802 + n);
      const Tensor xv = solve(ctx_, a, bv, o).value();
      EXPECT_EQ(xv.shape(), Shape({11, n}));
      for (int64_t b = 0; b < 11; ++b) {
        Dense col = item(xv, {b});
        EXPECT_LT(max_diff(matmul(item(a, {b}), col), item(bv, {})), tol(dt()) * 1000 * static_cast<double>(n));
      }
    }
  }
  // Item 1 is singular (a zero matrix).
  std::vector<c128> v(2 * 3 * 3, 0.0);
  for (int i = 0; i < 3; ++i) v[static_cast<size_t>(i * 3 + i)] = 1.0;
  for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
    LinalgOptions o;
    o.small_max_dim = small;
    const auto r = solve(ctx_, from_c128({2, 3, 3}, v), rand({2, 3, 1}, 3), o);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), ErrorCode::kSingular);
    EXPECT_NE(r.error().message().find("batch item 1 of 2 (batch index [1])"), std::string::npos)
        << r.error().message();
  }
  EXPECT_EQ(solve(ctx_, rand({3, 3}, 1), rand({4, 2}, 2)).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(solve(ctx_, rand({3, 4}, 1), rand({3, 2}, 2)).error().code(), ErrorCode::kInvalidShape);
}

TEST_P(LinalgTest, SolveIntoAndInvInto) {
  const Tensor a = rand({2, 4, 4}, 900), b = rand({2, 4, 3}, 901);
  Tensor buf = Tensor::zeros(dt(), {2, 3, 4}).value();
  Tensor dst = buf.permute({0, 2, 1}).value();
  buf = Tensor();
  ASSERT_TRUE(solve_into(ctx_, a, b, dst).has_value());
  EXPECT_LT(max_diff(item(dst, {1}), item(solve(ctx_, a, b).value(), {1})), tol(dt()) * 10);
  Tensor idst = Tensor::zeros(dt(), {2, 4, 4}).value();
  ASSERT_TRUE(inv_into(ctx_, a, idst).has_value());
  EXPECT_LT(max_diff(matmul(item(a, {0}), item(idst, {0})), identity(4)), tol(dt()) * 100);
}

TEST_P(LinalgTest, TriangularSolveAllForms) {
  const int64_t m = 5, k = 3;
  Tensor base = rand({m, m}, 1000);
  std::vector<c128> t;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) t.push_back(item(base, {}).at(i, j) + (i == j ? c128(4.0) : c128(0)));
  const Tensor a = from_c128({m, m}, t);
  for (bool left : {true, false})
    for (Uplo ul : {Uplo::kLower, Uplo::kUpper})
      for (bool unit : {false, true})
        for (Transpose tr : {Transpose::kNone, Transpose::kTranspose, Transpose::kConjTranspose}) {
          TriangularOptions o;
          o.left = left;
          o.uplo = ul;
          o.unit_diagonal = unit;
          o.transpose = tr;
          const Tensor b = left ? rand({m, k}, 1001) : rand({k, m}, 1001);
          const Tensor x = triangular_solve(ctx_, a, b, o).value();
          // The triangle actually used, with op applied.
          Dense tri = item(a, {});
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < m; ++j) {
              if (ul == Uplo::kLower ? j > i : j < i) tri.at(i, j) = 0;
              if (unit && i == j) tri.at(i, j) = 1;
            }
          Dense op = tri;
          if (tr != Transpose::kNone) {
            op = adjoint(tri);
            if (tr == Transpose::kTranspose)
              for (c128& z : op.v) z = std::conj(z);
          }
          const Dense lhs = left ? matmul(op, item(x, {})) : matmul(item(x, {}), op);
          EXPECT_LT(max_diff(lhs, item(b, {})), tol(dt()) * 100) << left << int(ul) << unit << int(tr);
        }
  std::vector<c128> z(9, 1.0);
  z[4] = 0.0;
  EXPECT_EQ(triangular_solve(ctx_, from_c128({3, 3}, z), rand({3, 1}, 2)).error().code(), ErrorCode::kSingular);
}

TEST_P(LinalgTest, InvDetSlogdet) {
  for (int64_t n : {1, 2, 3, 7, 20}) {
    const Tensor a = rand({10, n, n}, 1100 + n);
    for (int64_t small : {int64_t{0}, kSmallMaxDim}) {
      LinalgOptions o;
      o.small_max_dim = small;
      const Tensor x = inv(ctx_, a, o).value();
      const Tensor d = det(ctx_, a, o).value();
      const SlogdetResult sl = slogdet(ctx_, a, o).value();
      const EigResult e = eig(ctx_, a).value();
      for (int64_t b = 0; b < 10; ++b) {
        EXPECT_LT(max_diff(matmul(item(a, {b}), item(x, {b})), identity(n)), tol(dt()) * 1000 * static_cast<double>(n));
        // det oracle: product of the eigenvalues (complex, from eig).
        c128 p = 1;
        for (int64_t i = 0; i < n; ++i) p *= e.values.get_as_c128({b, i}).value();
        const c128 got = d.get_as_c128({b}).value();
        EXPECT_LT(std::abs(got - p), tol(dt()) * 1000 * (1 + std::abs(p))) << n;
        const c128 viaslog = sl.sign.get_as_c128({b}).value() * std::exp(sl.logabsdet.get_as_c128({b}).value().real());
        EXPECT_LT(std::abs(viaslog - got), tol(dt()) * 100 * (1 + std::abs(got)));
      }
    }
  }
  std::vector<c128> z(4, 1.0);
  const Tensor sing = from_c128({2, 2}, z);
  EXPECT_EQ(std::abs(det(ctx_, sing).value().get_as_c128({}).value()), 0.0);
  const SlogdetResult s0 = slogdet(ctx_, sing).value();
  EXPECT_EQ(std::abs(s0.sign.get_as_c128({}).value()), 0.0);
  EXPECT_TRUE(std::isinf(s0.logabsdet.get_as_c128({}).value().real()));
  EXPECT_EQ(inv(ctx_, sing).error().code(), ErrorCode::kSingular);
  EXPECT_EQ(det(ctx_, Tensor::zeros(dt(), {0, 0}).value()).value().get_as_c128({}).value(), c128(1.0));
}

TEST_P(LinalgTest, PinvAndLstsq) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{7, 4}, {4, 7}, {5, 5}}) {
    const Tensor a = rand({2, m, n}, 1200 + m);
    const Tensor p = pinv(ctx_, a).value();
    for (int64_t b = 0; b < 2; ++b) {
      const Dense x = item(a, {b}), px = item(p, {b});
      EXPECT_LT(max_diff(matmul(matmul(x, px), x), x), tol(dt()) * 100) << "A A+ A = A";
      EXPECT_LT(max_diff(matmul(matmul(px, x), px), px), tol(dt()) * 100) << "A+ A A+ = A+";
    }
    const Tensor bm = rand({2, m, 2}, 1300 + m);
    const LstsqResult l = lstsq(ctx_, a, bm).value();
    for (int64_t b = 0; b < 2; ++b) {
      // Normal equations A^H (A x - b) = 0 and x = A+ b (minimum norm).
      const Dense x = item(a, {b}), sol = item(l.solution, {b});
      Dense r = matmul(x, sol);
      const Dense bb = item(bm, {b});
      for (size_t i = 0; i < r.v.size(); ++i) r.v[i] -= bb.v[i];
      EXPECT_LT(max_diff(matmul(adjoint(x), r), Dense{n, 2, std::vector<c128>(static_cast<size_t>(n * 2))}),
                tol(dt()) * 1000);
      EXPECT_LT(max_diff(sol, matmul(item(p, {b}), bb)), tol(dt()) * 1000);
      EXPECT_EQ(l.rank.get<int64_t>({b}).value(), std::min(m, n));
      if (m > n) {
        for (int64_t j = 0; j < 2; ++j) {
          double ss = 0;
          for (int64_t i = 0; i < m; ++i) ss += std::norm(r.at(i, j));
          EXPECT_NEAR(l.residuals.get_as_c128({b, j}).value().real(), ss, tol(dt()) * 1000 * (1 + ss));
        }
      } else {
        EXPECT_EQ(l.residuals.numel(), 0);
      }
    }
  }
  // Rank-deficient: the rank is reported and the residuals are empty.
  std::vector<c128> v;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j) v.push_back(c128(i + 1) * c128(j + 1));
  const LstsqResult rd = lstsq(ctx_, from_c128({6, 3}, v), rand({6}, 5)).value();
  EXPECT_EQ(rd.rank.get<int64_t>({}).value(), 1);
  EXPECT_EQ(rd.solution.shape(), Shape({3}));
  EXPECT_EQ(rd.residuals.numel(), 0);
}

TEST_P(LinalgTest, Norms) {
  const Tensor a = rand({2, 4, 3}, 1400);
  for (MatrixNorm kind :
       {MatrixNorm::kFrobenius, MatrixNorm::kNuclear, MatrixNorm::kSpectral, MatrixNorm::kOne, MatrixNorm::kInf,
        MatrixNorm::kMinSingular, MatrixNorm::kMinColumnSum, MatrixNorm::kMinRowSum}) {
    const Tensor nrm = matrix_norm(ctx_, a, kind).value();
    for (int64_t b = 0; b < 2; ++b) {
      const Dense x = item(a, {b});
      const Dense s = item(svd(ctx_, a).value().s, {b});
      double want = 0;
      if (kind == MatrixNorm::kFrobenius) {
        for (c128 z : x.v) want += std::norm(z);
        want = std::sqrt(want);
      } else if (kind == MatrixNorm::kNuclear) {
        for (c128 z : s.v) want += z.real();
      } else if (kind == MatrixNorm::kSpectral) {
        want = s.at(0, 0).real();
      } else if (kind == MatrixNorm::kMinSingular) {
        want = s.at(2, 0).real();
      } else if (kind == MatrixNorm::kOne || kind == MatrixNorm::kMinColumnSum) {
        const bool least = kind == MatrixNorm::kMinColumnSum;
        want = least ? INFINITY : 0;
        for (int64_t j = 0; j < 3; ++j) {
          double c = 0;
          for (int64_t i = 0; i < 4; ++i) c += std::abs(x.at(i, j));
          want = least ? std::min(want, c) : std::max(want, c);
        }
      } else {
        const bool least = kind == MatrixNorm::kMinRowSum;
        want = least ? INFINITY : 0;
        for (int64_t i = 0; i < 4; ++i) {
          double c = 0;
          for (int64_t j = 0; j < 3; ++j) c += std::abs(x.at(i, j));
          want = least ? std::min(want, c) : std::max(want, c);
        }
      }
      EXPECT_NEAR(nrm.get_as_c128({b}).value().real(), want, tol(dt()) * 10 * (1 + want)) << int(kind);
    }
  }
  for (double ord : std::vector<double>{2.0, 1.0, 3.0, 0.0, INFINITY, -INFINITY}) {
    const Tensor n1 = vector_norm(ctx_, a, ord, {1}).value();
    EXPECT_EQ(n1.shape(), Shape({2, 3}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < 3; ++j) {
        std::vector<double> col;
        for (int64_t i = 0; i < 4; ++i) col.push_back(std::abs(a.get_as_c128({b, i, j}).value()));
        double want = 0;
        if (std::isinf(ord)) {
          want = ord > 0 ? *std::max_element(col.begin(), col.end()) : *std::min_element(col.begin(), col.end());
        } else if (ord == 0) {
          for (double c : col) want += c != 0;
        } else {
          for (double c : col) want += std::pow(c, ord);
          want = std::pow(want, 1 / ord);
        }
        EXPECT_NEAR(n1.get_as_c128({b, j}).value().real(), want, tol(dt()) * 10 * (1 + want));
      }
  }
  const Tensor all = vector_norm(ctx_, a, 2.0, {}, true).value();
  EXPECT_EQ(all.shape(), Shape({1, 1, 1}));
  EXPECT_NEAR(all.get_as_c128({0, 0, 0}).value().real(),
              std::sqrt(std::pow(matrix_norm(ctx_, a).value().get_as_c128({0}).value().real(), 2) +
                        std::pow(matrix_norm(ctx_, a).value().get_as_c128({1}).value().real(), 2)),
              tol(dt()) * 10);
  EXPECT_EQ(vector_norm(ctx_, a, std::nan("")).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(vector_norm(ctx_, a, 2.0, {1, -2}).error().code(), ErrorCode::kInvalidArgument);
}

// numpy's vector and entry-wise matrix norms on special values: NaN propagates through
// every ord but 0 (max and min dropped it), an infinite entry makes the 2-norm and the
// Frobenius norm infinite (both made NaN), negative ords are (sum |x|^p)^(1/p) (0 once an
// entry is 0). Expected values by hand.
TEST_P(LinalgTest, NormSpecialValuesFollowNumpy) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  auto norm = [&](std::vector<c128> v, double ord) {
    return vector_norm(ctx_, from_c128({static_cast<int64_t>(v.size())}, v), ord)
        .value()
        .get_as_c128({})
        .value()
        .real();
  };
  for (double ord : {2.0, 1.0, 3.0, 0.5, -1.0, inf, -inf}) {
    EXPECT_TRUE(std::isnan(norm({1, nan, 2}, ord))) << ord;
    EXPECT_TRUE(std::isnan(norm({nan, 1}, ord))) << ord;
  }
  EXPECT_EQ(norm({1, nan, 0}, 0.0), 2);  // a count of nonzeros: NaN is nonzero
  for (double ord : {2.0, 1.0, 3.0, inf}) {
    EXPECT_EQ(norm({inf, 1}, ord), inf) << ord;
    EXPECT_EQ(norm({1, -inf, inf, 2}, ord), inf) << ord;
  }
  EXPECT_TRUE(std::isnan(norm({inf, nan}, 2.0)));
  EXPECT_NEAR(norm({3, -4}, -1.0), 1 / (1.0 / 3 + 1.0 / 4), 1e-6);
  EXPECT_NEAR(norm({3, -4}, -2.0), 1 / std::sqrt(1.0 / 9 + 1.0 / 16), 1e-6);
  EXPECT_EQ(norm({3, 0, -4}, -1.0), 0);
  EXPECT_EQ(norm({inf, 2}, -1.0), 2);
  // Matrix norms of the entry-wise kinds alike (2 x 2, row-major values).
  auto mnorm = [&](std::vector<c128> v, MatrixNorm kind) {
    return matrix_norm(ctx_, from_c128({2, 2}, v), kind).value().get_as_c128({}).value().real();
  };
  for (MatrixNorm kind : {MatrixNorm::kFrobenius, MatrixNorm::kOne, MatrixNorm::kInf, MatrixNorm::kMinColumnSum,
                          MatrixNorm::kMinRowSum}) {
    EXPECT_TRUE(std::isnan(mnorm({nan, 1, 1, 1}, kind))) << int(kind);
    EXPECT_TRUE(std::isnan(mnorm({1, 1, 1, nan}, kind))) << int(kind);
  }
  for (MatrixNorm kind : {MatrixNorm::kFrobenius, MatrixNorm::kOne, MatrixNorm::kInf, MatrixNorm::kMinRowSum}) {
    EXPECT_EQ(mnorm({inf, 1, inf, 1}, kind), inf) << int(kind);  // both rows hold an infinity
  }
  EXPECT_EQ(mnorm({inf, 1, inf, 1}, MatrixNorm::kMinColumnSum), 2);
  EXPECT_TRUE(std::isnan(mnorm({inf, 1, 1, nan}, MatrixNorm::kFrobenius)));
}

TEST_P(LinalgTest, TruncatedSvdExactDiscardedWeightAndCutoff) {
  const Tensor a = rand({2, 9, 6}, 1500);
  const SvdResult full = svd(ctx_, a).value();
  TruncatedSvdOptions o;
  o.max_rank = 3;
  const TruncatedSvdResult t = truncated_svd(ctx_, a, o).value();
  EXPECT_EQ(t.method_used, TruncatedSvdMethod::kExact);
  EXPECT_EQ(t.s.shape(), Shape({2, 3}));
  for (int64_t b = 0; b < 2; ++b) {
    double tail = 0;
    for (int64_t i = 3; i < 6; ++i) tail += std::norm(full.s.get_as_c128({b, i}).value());
    EXPECT_NEAR(t.discarded_weight.get_as_c128({b}).value().real(), tail, tol(dt()) * 100 * (1 + tail));
    // ||A - U S Vh||_F^2 equals the discarded weight.
    const Dense x = item(a, {b});
    const Dense approx = matmul(matmul(item(t.u, {b}), diag(item(t.s, {b}), 3, 3)), item(t.vh, {b}));
    double err = 0;
    for (size_t i = 0; i < x.v.size(); ++i) err += std::norm(x.v[i] - approx.v[i]);
    EXPECT_NEAR(err, tail, tol(dt()) * 1000 * (1 + tail));
  }
  // A cutoff keeps the shortest prefix whose tail weight is within rel_cutoff.
  TruncatedSvdOptions c;
  c.rel_cutoff = 0.2;
  const TruncatedSvdResult tc = truncated_svd(ctx_, a, c).value();
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t r = tc.rank.get<int64_t>({b}).value();
    double total = 0, tail = 0, tail_prev = 0;
    for (int64_t i = 0; i < 6; ++i) total += std::norm(full.s.get_as_c128({b, i}).value());
    for (int64_t i = r; i < 6; ++i) tail += std::norm(full.s.get_as_c128({b, i}).value());
    for (int64_t i = r - 1; i < 6; ++i) tail_prev += std::norm(full.s.get_as_c128({b, i}).value());
    EXPECT_LE(tail, 0.2 * total * (1 + 1e-6));
    if (r > 1) {
      EXPECT_GT(tail_prev, 0.2 * total);
    }
  }
  TruncatedSvdOptions bad;
  bad.rel_cutoff = 2.0;
  EXPECT_EQ(truncated_svd(ctx_, a, bad).error().code(), ErrorCode::kInvalidArgument);
}

TEST_P(LinalgTest, TruncatedSvdRandomizedMatchesExactOnDecayingSpectrum) {
  // A = U diag(2^-i) V^H (+ structure beyond rank 8), 120 x 100, keep 8.
  const int64_t m = 120, n = 100, r = 8;
  const QrResult qu = qr(ctx_, rand({m, n}, 1600)).value();
  const QrResult qv = qr(ctx_, rand({n, n}, 1601)).value();
  std::vector<c128> sv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sv[static_cast<size_t>(i)] = std::pow(0.5, static_cast<double>(i));
  const Dense s{n, 1, sv};
  const Dense ad = matmul(matmul(item(qu.q, {}), diag(s, n, n)), adjoint(item(qv.q, {})));
  std::vector<c128> rm = ad.v;
  const Tensor a = from_c128({m, n}, rm);
  TruncatedSvdOptions o;
  o.max_rank = r;
  o.method = TruncatedSvdMethod::kRandomized;
  o.gauge_fix = true;
  const TruncatedSvdResult t = truncated_svd(ctx_, a, o).value();
  EXPECT_EQ(t.method_used, TruncatedSvdMethod::kRandomized);
  double tail = 0;
  for (int64_t i = r; i < n; ++i) tail += std::norm(sv[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < r; ++i) {
    EXPECT_NEAR(t.s.get_as_c128({i}).value().real(), sv[static_cast<size_t>(i)].real(), 1e-4);
  }
  EXPECT_NEAR(t.discarded_weight.get_as_c128({}).value().real(), tail, 1e-4);
  const Dense approx = matmul(matmul(item(t.u, {}), diag(item(t.s, {}), r, r)), item(t.vh, {}));
  double err = 0;
  for (size_t i = 0; i < ad.v.size(); ++i) err += std::norm(ad.v[i] - approx.v[i]);
  EXPECT_LT(err, tail * 1.5 + 1e-6);
  // Deterministic: the same seed gives the same factors.
  const TruncatedSvdResult t2 = truncated_svd(ctx_, a, o).value();
  EXPECT_EQ(max_diff(item(t.u, {}), item(t2.u, {})), 0.0);
  TruncatedSvdOptions no_rank;
  no_rank.method = TruncatedSvdMethod::kRandomized;
  EXPECT_EQ(truncated_svd(ctx_, a, no_rank).error().code(), ErrorCode::kInvalidArgument);
}

TEST_P(LinalgTest, DTypeAndShapeErrors) {
  const Tensor ints = Tensor::zeros(DType::kI64, {3, 3}).value();
  EXPECT_EQ(svd(ctx_, ints).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(cholesky(ctx_, rand({3}, 1)).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(eigh(ctx_, rand({3, 4}, 1)).error().code(), ErrorCode::kInvalidShape);
  const DType other = dt() == DType::kF64 ? DType::kF32 : DType::kF64;
  EXPECT_EQ(solve(ctx_, rand({3, 3}, 1), Tensor::zeros(other, {3}).value()).error().code(), ErrorCode::kDTypeMismatch);
  // A dtype LAPACK has no routine for is an error naming the function called (the scans
  // before the decomposition named themselves "linalg").
  const std::pair<Result<void>, const char*> named[] = {
      {svd(ctx_, ints).transform([](auto&&) {}), "svd"},           {qr(ctx_, ints).transform([](auto&&) {}), "qr"},
      {eigh(ctx_, ints).transform([](auto&&) {}), "eigh"},         {det(ctx_, ints).transform([](auto&&) {}), "det"},
      {slogdet(ctx_, ints).transform([](auto&&) {}), "slogdet"},   {pinv(ctx_, ints).transform([](auto&&) {}), "pinv"},
      {cholesky(ctx_, ints).transform([](auto&&) {}), "cholesky"}, {inv(ctx_, ints).transform([](auto&&) {}), "inv"}};
  for (const auto& [r, op] : named) {
    ASSERT_FALSE(r) << op;
    EXPECT_EQ(r.error().code(), ErrorCode::kDTypeMismatch) << op;
    EXPECT_EQ(r.error().op(), op);
  }
}

// Note [Safe-range scaling]: matrices with entries near the overflow threshold (the small
// SVD gave infinities, the small QR NaNs, the staged eigh NaN vectors; bdsdc reported an
// illegal argument or did not return) and with subnormal entries (the small eigh lost
// most digits) give the results of the unscaled matrix times the scale (powers of two:
// the exact answer scales exactly; infinite where that exceeds the largest value): the
// singular values (svd and truncated_svd), the eigenvalues (eigh and eigvalsh, both
// triangles), |R| of QR, the pseudo-inverse (times the inverse scale), log|det| (plus n e
// log 2, same sign), and eigenvectors and |Q| unchanged, on every route (small kernels, LAPACK, staged; square,
// QR first and transposed SVDs).
TEST_P(LinalgTest, ExtremeMagnitudesScaleExactly) {
  const bool single = dt() == DType::kF32 || dt() == DType::kC64;
  struct Case {
    int64_t m, n, small_max_dim;
  };
  for (const Case c :
       {Case{5, 5, kSmallMaxDim}, Case{16, 16, kSmallMaxDim}, Case{8, 8, 0},
        Case{kStagedMinDim, kStagedMinDim, kSmallMaxDim}, Case{150, 70, kSmallMaxDim}, Case{70, 150, kSmallMaxDim}}) {
    const int64_t m = c.m, n = c.n, k = std::min(m, n);
    LinalgOptions lo;
    lo.small_max_dim = c.small_max_dim;
    SvdOptions so;
    so.linalg = lo;
    const Tensor a = rand({m, n}, 2100 + m + c.small_max_dim);
    const Dense d = item(a, {});
    // A Hermitian matrix of the same entries: A + A^H (square cases).
    std::vector<c128> hv;
    for (int64_t i = 0; i < m && m == n; ++i)
      for (int64_t j = 0; j < n; ++j) hv.push_back(d.at(i, j) + std::conj(d.at(j, i)));
    const SvdResult want_svd = svd(ctx_, a, so).value();
    const QrResult want_qr = qr(ctx_, a, QrMode::kReduced, lo).value();
    const Tensor want_pinv = pinv(ctx_, a, std::nullopt, lo).value();
    TruncatedSvdOptions to;  // randomized from 100 x 100 on (auto)
    to.max_rank = 3;
    to.linalg = lo;
    const TruncatedSvdResult want_tsvd = truncated_svd(ctx_, a, to).value();
    const EighResult want_eigh = m == n ? eigh(ctx_, from_c128({n, n}, hv), Uplo::kLower, lo).value() : EighResult{};
    for (const int e : single ? std::vector<int>{125, -140} : std::vector<int>{1021, -1060}) {
      SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " (small_max_dim " +
                   std::to_string(c.small_max_dim) + "), scale 2^" + std::to_string(e));
      auto scaled = [&](const std::vector<c128>& v) {
        std::vector<c128> out(v.size());
        for (size_t i = 0; i < v.size(); ++i) out[i] = c128(std::ldexp(v[i].real(), e), std::ldexp(v[i].imag(), e));
        return out;
      };
      // Compares |got| with |want| 2^shift elementwise: infinite where that overflows the
      // dtype, else within a tolerance relative to the largest finite entry (subnormal
      // inputs keep fewer significant bits: a looser bound there).
      auto expect_scaled = [&](const Tensor& got, const Tensor& want, int shift, const char* what) {
        const Dense g = item(got, {}), w = item(want, {});
        ASSERT_EQ(g.v.size(), w.v.size()) << what;
        std::vector<double> ws(w.v.size());
        double top = 0;
        for (size_t i = 0; i < w.v.size(); ++i) {
          const double x = std::ldexp(std::abs(w.v[i]), shift);
          ws[i] = single ? static_cast<double>(static_cast<float>(x)) : x;  // inf past the dtype's range
          if (std::isfinite(ws[i])) top = std::max(top, ws[i]);
        }
        // Subnormal results are also rounded to the subnormal grid, a few steps of the
        // smallest subnormal off (the input's rounding, summed over a column).
        const double step =
            single ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
        const double bound =
            e < 0 ? 1e-3 * top + 2 * std::sqrt(static_cast<double>(m * n)) * step : tol(dt()) * 100 * top;
        for (size_t i = 0; i < w.v.size(); ++i) {
          const double gi = std::abs(g.v[i]);
          if (std::isinf(ws[i])) {
            EXPECT_TRUE(std::isinf(gi)) << what << "[" << i << "] = " << gi;
          } else {
            EXPECT_LE(std::abs(gi - ws[i]), bound) << what << "[" << i << "]";
          }
        }
      };
      const Tensor as = from_c128({m, n}, scaled(d.v));
      const auto s = svd(ctx_, as, so);
      ASSERT_TRUE(s.has_value()) << s.error().to_string();
      EXPECT_EQ(s->route.kernel, want_svd.route.kernel);
      expect_scaled(s->s, want_svd.s, e, "s");
      if (e > 0) {
        expect_scaled(s->u, want_svd.u, 0, "|U|");
        expect_scaled(s->vh, want_svd.vh, 0, "|Vh|");
      }
      const auto q = qr(ctx_, as, QrMode::kReduced, lo);
      ASSERT_TRUE(q.has_value()) << q.error().to_string();
      expect_scaled(q->r, want_qr.r, e, "|R|");
      if (e > 0) expect_scaled(q->q, want_qr.q, 0, "|Q|");
      // pinv(2^e A) = 2^-e pinv(A). Subnormal inputs keep a few bits only, which moves
      // the small singular values and so the pseudo-inverse by more than any bound: there
      // the result must be free of NaN (before, the reciprocals of subnormal singular
      // values overflowed and their products made NaN).
      const auto pi = pinv(ctx_, as, std::nullopt, lo);
      ASSERT_TRUE(pi.has_value()) << pi.error().to_string();
      if (e > 0) {
        expect_scaled(*pi, want_pinv, -e, "|pinv|");
      } else {
        const Dense p = item(*pi, {});
        for (size_t i = 0; i < p.v.size(); ++i) ASSERT_FALSE(std::isnan(std::abs(p.v[i]))) << "pinv[" << i << "]";
      }
      const auto ts = truncated_svd(ctx_, as, to);
      ASSERT_TRUE(ts.has_value()) << ts.error().to_string();
      EXPECT_EQ(ts->method_used, want_tsvd.method_used);
      expect_scaled(ts->s, want_tsvd.s, e, "truncated s");
      (void)k;
      if (m != n) continue;
      // log|det(2^e A)| = log|det A| + n e log 2 (subnormal pivots gave NaN), same sign.
      const SlogdetResult want_ld = slogdet(ctx_, a, lo).value();
      const auto ld = slogdet(ctx_, as, lo);
      ASSERT_TRUE(ld.has_value()) << ld.error().to_string();
      const double la_want =
          std::real(want_ld.logabsdet.get_as_c128({}).value()) + static_cast<double>(n * e) * std::log(2.0);
      EXPECT_NEAR(std::real(ld->logabsdet.get_as_c128({}).value()), la_want,
                  (e < 0 ? 1e-3 : tol(dt())) * std::abs(la_want));
      // (A complex sign is a phase, which the subnormal input's rounding moves a little.)
      EXPECT_LT(std::abs(ld->sign.get_as_c128({}).value() - want_ld.sign.get_as_c128({}).value()), e < 0 ? 0.1 : 1e-3);
      const Tensor hs = from_c128({n, n}, scaled(hv));
      for (const Uplo ul : {Uplo::kLower, Uplo::kUpper}) {
        const auto h = eigh(ctx_, hs, ul, lo);
        ASSERT_TRUE(h.has_value()) << h.error().to_string();
        EXPECT_EQ(h->route.kernel, want_eigh.route.kernel);
        expect_scaled(h->values, want_eigh.values, e, "eigh w");
        if (e > 0) expect_scaled(h->vectors, want_eigh.vectors, 0, "|V|");
        const auto w = eigvalsh(ctx_, hs, ul, lo);
        ASSERT_TRUE(w.has_value()) << w.error().to_string();
        expect_scaled(*w, want_eigh.values, e, "eigvalsh w");
      }
    }
  }
}

// Note [Non-finite input]: a NaN or an infinity in item 2 of 3 at (1, 2) (in a transposed
// view too, in B for lstsq, and in the triangle eigh reads) is kInvalidArgument naming the item and the element, for
// small items and for items that go to LAPACK alike, and nothing is printed or raised
// from inside LAPACK; the same batch without it computes.
TEST_P(LinalgTest, NonFiniteInputsAreRejectedUpFront) {
  const double inf = std::numeric_limits<double>::infinity();
  const bool complex = dt() == DType::kC64 || dt() == DType::kC128;
  std::vector<c128> bads{c128(std::nan(""), 0), c128(inf, 0), c128(-inf, 0)};
  if (complex) bads.push_back(c128(1, std::nan("")));
  for (const int64_t n : {int64_t{3}, int64_t{48}}) {
    std::vector<c128> good(static_cast<size_t>(3 * n * n));
    for (size_t i = 0; i < good.size(); ++i) good[i] = c128(std::sin(0.37 * static_cast<double>(i)), 0.1);
    const Tensor fine = from_c128({3, n, n}, good);
    ASSERT_TRUE(svd(ctx_, fine));
    ASSERT_TRUE(lstsq(ctx_, fine, fine));
    for (const c128 bad : bads) {
      std::vector<c128> v = good;
      v[static_cast<size_t>(2 * n * n + 1 * n + 2)] = bad;  // item 2, row 1, column 2 (row-major)
      const Tensor a = from_c128({3, n, n}, v);
      std::vector<c128> vt = good;
      vt[static_cast<size_t>(2 * n * n + 2 * n + 1)] = bad;  // (2, 1): (1, 2) of the transposed view
      const Tensor at = from_c128({3, n, n}, vt).permute({0, 2, 1}).value();
      const std::string where = "at row 1, column 2) at batch item 2";
      auto expect = [&](const Error& e, const char* what) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what << ": " << e.message();
        EXPECT_NE(e.message().find(where), std::string::npos) << what << ": " << e.message();
      };
      for (const Tensor& x : {a, at}) {
        expect(svd(ctx_, x).error(), "svd");
        TruncatedSvdOptions to;
        to.max_rank = 2;
        expect(truncated_svd(ctx_, x, to).error(), "truncated_svd");
        expect(pinv(ctx_, x).error(), "pinv");
        expect(eig(ctx_, x).error(), "eig");
        expect(eigvals(ctx_, x).error(), "eigvals");
        // eigh reads one triangle: (1, 2) is in the upper one.
        expect(eigh(ctx_, x, Uplo::kUpper).error(), "eigh");
        expect(eigvalsh(ctx_, x, Uplo::kUpper).error(), "eigvalsh");
        EXPECT_TRUE(eigvalsh(ctx_, x, Uplo::kLower).has_value());
        expect(lstsq(ctx_, x, fine).error(), "lstsq A");
        const auto b = lstsq(ctx_, fine, x);
        ASSERT_FALSE(b.has_value());
        expect(b.error(), "lstsq B");
        EXPECT_NE(b.error().message().find("B holds"), std::string::npos) << b.error().message();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFloat, LinalgTest,
                         ::testing::Values(DType::kF32, DType::kF64, DType::kC64, DType::kC128), dtype_param_name);

// Note [Jacobi rounds]: every pair of columns meets exactly once per sweep, and the pairs
// of one round are disjoint (each column at most once).
TEST(LinalgKernels, JacobiRoundsMeetEveryPairOnce) {
  for (int64_t n = 1; n <= detail::kSmallCap; ++n) {
    std::vector<int> met(static_cast<size_t>(n * n), 0);
    const int64_t rounds = n + (n & 1) - 1;
    for (int64_t round = 0; round < rounds; ++round) {
      int64_t ps[detail::kSmallCap / 2 + 1], rs[detail::kSmallCap / 2 + 1];
      const int pairs = detail::round_robin_pairs(n, round, ps, rs);
      EXPECT_EQ(pairs, n / 2) << "n " << n;
      std::vector<int> used(static_cast<size_t>(n), 0);
      for (int k = 0; k < pairs; ++k) {
        ASSERT_LT(ps[k], rs[k]);
        ASSERT_LT(rs[k], n);
        ++met[static_cast<size_t>(ps[k] * n + rs[k])];
        EXPECT_EQ(used[static_cast<size_t>(ps[k])]++, 0);
        EXPECT_EQ(used[static_cast<size_t>(rs[k])]++, 0);
      }
    }
    for (int64_t p = 0; p < n; ++p)
      for (int64_t r = p + 1; r < n; ++r) EXPECT_EQ(met[static_cast<size_t>(p * n + r)], 1) << n << ": " << p << "," << r;
  }
}

// ---- routes: decided from explicit facts, never from this machine ----

TEST(LinalgRoute, AutoPicksOuterLanesForSmallItemsAndProviderThreadsForLargeOnes) {
  cpu::BatchSettings s;
  RouteInput in;
  in.op = Op::kSvd;
  in.m = in.n = 8;
  in.items = 10000;
  in.threads = 4;
  in.small_kernel_available = true;
  Route r = decide_route(in, s, {}).value();
  EXPECT_EQ(r.kernel, Kernel::kSmall);
  EXPECT_EQ(r.policy, BatchPolicy::kOuterParallel);
  EXPECT_EQ(r.lanes, 4);
  in.m = in.n = 1024;
  in.items = 1;
  r = decide_route(in, s, {}).value();
  EXPECT_EQ(r.kernel, Kernel::kLapack);
  EXPECT_EQ(r.policy, BatchPolicy::kProviderItems);
  EXPECT_EQ(r.provider_threads, 4);
  in.items = 3;
  r = decide_route(in, s, {}).value();
  EXPECT_EQ(r.policy, BatchPolicy::kProviderItems) << "large items: one fan-out level, inside each item";
  in.m = in.n = 40;
  r = decide_route(in, s, {}).value();
  EXPECT_EQ(r.policy, BatchPolicy::kOuterParallel) << "below outer_parallel_flops";
  in.threads = 1;
  r = decide_route(in, s, {}).value();
  EXPECT_EQ(r.policy, BatchPolicy::kSequential);
}

TEST(LinalgRoute, LargeLuFactorizationsRunTheRecursiveLu) {
  cpu::BatchSettings s;
  RouteInput in;
  in.threads = 2;
  for (Op op : {Op::kLu, Op::kSolve, Op::kInv, Op::kDet}) {
    in.op = op;
    in.m = in.n = kRecursiveLuMinDim;
    EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kRecursiveLu) << op_name(op);
    in.m = in.n = kRecursiveLuMinDim - 1;
    EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack) << op_name(op);
  }
  in.op = Op::kLu;  // min(m, n) decides
  in.m = kRecursiveLuMinDim;
  in.n = 4 * kRecursiveLuMinDim;
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kRecursiveLu);
  in.m = kRecursiveLuMinDim - 1;
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack);
  for (Op op : {Op::kQr, Op::kSvd, Op::kEigh, Op::kCholesky, Op::kLuSolve}) {
    in.op = op;
    in.m = in.n = 1024;
    EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack) << op_name(op);
  }
  in.op = Op::kSolve;
  LinalgOptions o;
  o.batch_policy = BatchPolicy::kProviderItems;
  EXPECT_EQ(decide_route(in, s, o).value().kernel, Kernel::kRecursiveLu);
}

TEST(LinalgRoute, LargeSvdAndEighVectorsRunTheStagedRoute) {
  cpu::BatchSettings s;
  RouteInput in;
  in.threads = 2;
  for (Op op : {Op::kSvd, Op::kEigh}) {
    in.op = op;
    in.m = in.n = kStagedMinDim;
    in.staged_available = true;
    const Route staged = decide_route(in, s, {}).value();
    EXPECT_EQ(staged.kernel, Kernel::kStaged) << op_name(op);
    EXPECT_EQ(staged.policy, BatchPolicy::kProviderItems);
    EXPECT_EQ(staged.provider_threads, 1) << "LAPACK's steps on one thread below kStagedThreadedLapackMinDim";
    in.m = in.n = kStagedThreadedLapackMinDim;
    EXPECT_EQ(decide_route(in, s, {}).value().provider_threads, 2);
    in.m = in.n = kStagedMinDim;
    in.staged_available = false;  // values only, or a forced LAPACK driver
    EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack) << op_name(op);
    in.staged_available = true;
    in.m = in.n = kStagedMinDim - 1;
    EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack) << op_name(op);
  }
  // Any aspect: tall items take a QR first, wide ones the SVD of A^H (min(m, n) decides).
  in.op = Op::kSvd;
  in.m = 600;
  in.n = 327;
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kStaged);
  std::swap(in.m, in.n);
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kStaged);
  in.m = 4000;
  in.n = kStagedMinDim;
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kStaged);
  in.n = kStagedMinDim - 1;
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack);
  in.op = Op::kQr;
  in.m = in.n = 512;
  EXPECT_EQ(decide_route(in, s, {}).value().kernel, Kernel::kLapack);
  in.op = Op::kEigh;
  LinalgOptions o;
  o.batch_policy = BatchPolicy::kProviderItems;
  EXPECT_EQ(decide_route(in, s, o).value().kernel, Kernel::kStaged);
}

TEST(LinalgRoute, PrecedenceAndForcedPolicies) {
  cpu::BatchSettings s;
  s.policy = BatchPolicy::kSequential;  // scoped/engine setting
  RouteInput in;
  in.m = in.n = 4;
  in.items = 100;
  in.threads = 2;
  in.small_kernel_available = true;
  EXPECT_EQ(decide_route(in, s, {}).value().policy, BatchPolicy::kSequential);
  LinalgOptions o;
  o.batch_policy = BatchPolicy::kOuterParallel;  // per-operation wins
  EXPECT_EQ(decide_route(in, s, o).value().policy, BatchPolicy::kOuterParallel);
  o.batch_policy = BatchPolicy::kProviderItems;
  const Route p = decide_route(in, s, o).value();
  EXPECT_EQ(p.kernel, Kernel::kLapack);
  EXPECT_EQ(p.provider_threads, 2);
  o.batch_policy = BatchPolicy::kWholeBatchVendor;
  EXPECT_EQ(decide_route(in, s, o).error().code(), ErrorCode::kUnsupported);
  o.batch_policy.reset();
  o.small_max_dim = 2;
  EXPECT_EQ(decide_route(in, cpu::BatchSettings{}, o).value().kernel, Kernel::kLapack);
  cpu::BatchSettings tight;
  tight.outer_parallel_flops = 10;
  in.small_kernel_available = false;
  in.m = in.n = 30;
  EXPECT_EQ(decide_route(in, tight, {}).value().policy, BatchPolicy::kProviderItems);
}

// A tensor of `dt` from column-major values.
Tensor col_major_of(DType dt, const Shape& shape, const std::vector<c128>& v) {
  switch (dt) {
    case DType::kF32: {
      std::vector<float> f;
      for (c128 x : v) f.push_back(static_cast<float>(x.real()));
      return Tensor::from_col_major<float>(shape, f).value();
    }
    case DType::kF64: {
      std::vector<double> f;
      for (c128 x : v) f.push_back(x.real());
      return Tensor::from_col_major<double>(shape, f).value();
    }
    case DType::kC64: {
      std::vector<std::complex<float>> f;
      for (c128 x : v) f.emplace_back(static_cast<float>(x.real()), static_cast<float>(x.imag()));
      return Tensor::from_col_major<std::complex<float>>(shape, f).value();
    }
    default: return Tensor::from_col_major<c128>(shape, v).value();
  }
}

// Column-major values of `t`.
std::vector<c128> col_major_values(const Tensor& t) {
  const Tensor f = t.to_col_major().value().reshape({t.numel()}).value();
  std::vector<c128> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(f.get_as_c128({i}).value());
  return v;
}

// exp(A) by its Taylor series in long double with scaling and squaring (norm / 2^s <
// 1/2, 40 terms): an oracle independent of the Padé kernel.
std::vector<std::complex<long double>> expm_oracle(const Tensor& a, std::vector<int64_t> at) {
  using cl = std::complex<long double>;
  const Dense d = item(a, std::move(at));
  const int64_t n = d.rows;
  long double norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    long double col = 0;
    for (int64_t i = 0; i < n; ++i) col += std::abs(cl(d.at(i, j).real(), d.at(i, j).imag()));
    norm = std::max(norm, col);
  }
  int s = 0;
  while (norm / std::ldexp(1.0L, s) > 0.5L) ++s;
  std::vector<cl> x(static_cast<size_t>(n * n)), term(x.size()), sum(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      x[static_cast<size_t>(i * n + j)] = cl(d.at(i, j).real(), d.at(i, j).imag()) / std::ldexp(1.0L, s);
  auto mul = [&](const std::vector<cl>& p, const std::vector<cl>& q) {
    std::vector<cl> r(p.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        cl acc = 0;
        for (int64_t k = 0; k < n; ++k) acc += p[static_cast<size_t>(i * n + k)] * q[static_cast<size_t>(k * n + j)];
        r[static_cast<size_t>(i * n + j)] = acc;
      }
    return r;
  };
  for (int64_t i = 0; i < n; ++i) term[static_cast<size_t>(i * n + i)] = sum[static_cast<size_t>(i * n + i)] = 1;
  for (int k = 1; k < 40; ++k) {
    term = mul(term, x);
    for (cl& t : term) t /= static_cast<long double>(k);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += term[i];
  }
  for (int k = 0; k < s; ++k) sum = mul(sum, sum);
  return sum;
}

TEST(LinalgExpm, KernelMatchesTheTaylorOracle) {
  const CpuExecutionContext seq = CpuExecutionContext::sequential();
  struct Case {
    DType dt;
    std::vector<int64_t> shape;
    double scale;
  };
  const Case cases[] = {{DType::kF64, {5, 5}, 1e-3},    {DType::kF64, {3, 6, 6}, 0.2}, {DType::kF64, {4, 4}, 3.0},
                        {DType::kF64, {2, 7, 7}, 30.0}, {DType::kC128, {5, 5}, 2.0},   {DType::kC128, {2, 4, 4}, 60.0},
                        {DType::kF32, {6, 6}, 1.5},     {DType::kC64, {3, 3}, 8.0}};
  uint64_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dt)) + " scale " + std::to_string(c.scale));
    const Tensor r = Tensor::random_normal(c.dt, c.shape, seed++).value();
    std::vector<c128> v = col_major_values(r);
    for (c128& z : v) z *= c.scale;
    const Tensor x = col_major_of(c.dt, r.shape(), v);
    const Tensor e = expm(seq, x).value();
    ASSERT_EQ(e.shape(), x.shape());
    const bool single = c.dt == DType::kF32 || c.dt == DType::kC64;
    const int64_t items = x.numel() / (c.shape.back() * c.shape.back());
    for (int64_t it = 0; it < items; ++it) {
      std::vector<int64_t> at;
      if (c.shape.size() == 3) at.push_back(it);
      const auto want = expm_oracle(x, at);
      long double big = 0;
      for (const auto& w : want) big = std::max(big, std::abs(w));
      const Dense got = item(e, at);
      const int64_t n = got.rows;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const auto w = want[static_cast<size_t>(i * n + j)];
          const double err =
              std::abs(got.at(i, j) - c128(static_cast<double>(w.real()), static_cast<double>(w.imag())));
          EXPECT_LE(err, (single ? 2e-5 : 2e-12) * static_cast<double>(big)) << i << "," << j;
        }
    }
  }
  EXPECT_EQ(expm(seq, Tensor::zeros(DType::kF64, {2, 3}).value()).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(expm(seq, Tensor::zeros(DType::kI64, {2, 2}).value()).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(expm(seq, Tensor()).error().code(), ErrorCode::kInvalidArgument);
}

TEST(LinalgExpm, ScalingFollowsHighamsThresholds) {
  EXPECT_EQ(expm_scaling(0.0, false).degree, 3);
  EXPECT_EQ(expm_scaling(0.01, false).degree, 3);
  EXPECT_EQ(expm_scaling(0.02, false).degree, 5);
  EXPECT_EQ(expm_scaling(2.0, false).degree, 9);
  EXPECT_EQ(expm_scaling(5.3, false).degree, 13);
  EXPECT_EQ(expm_scaling(5.3, false).squarings, 0);
  // Past theta_13 = 5.37: A / 2^s with t / 2^s <= theta_13.
  const ExpmScaling big = expm_scaling(100.0, false);
  EXPECT_EQ(big.degree, 13);
  EXPECT_EQ(big.squarings, 5);  // 100 / 32 = 3.1 <= 5.37 < 100 / 16
  EXPECT_EQ(expm_scaling(1.0, true).degree, 5);
  EXPECT_EQ(expm_scaling(10.0, true).degree, 7);
  EXPECT_EQ(expm_scaling(10.0, true).squarings, 2);
  EXPECT_EQ(expm_scaling(std::numeric_limits<double>::quiet_NaN(), false).squarings, 0);
  EXPECT_EQ(expm_scaling(std::numeric_limits<double>::infinity(), false).degree, 13);
  // The Padé numerator's coefficients: degree 3 is 1, 1/2, 1/10, 1/120.
  const std::vector<double> c = pade_coefficients(3);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_DOUBLE_EQ(c[1], 0.5);
  EXPECT_DOUBLE_EQ(c[2], 0.1);
  EXPECT_DOUBLE_EQ(c[3], 1.0 / 120.0);
}

TEST(LinalgExpm, FrechetDerivativeMatchesDifferences) {
  const CpuExecutionContext seq = CpuExecutionContext::sequential();
  for (DType dt : {DType::kF64, DType::kC128}) {
    const Tensor a = Tensor::random_normal(dt, {2, 5, 5}, 41).value();
    const Tensor d = Tensor::random_normal(dt, {2, 5, 5}, 42).value();
    const Tensor l = expm_frechet(seq, a, d).value();
    const double h = 1e-6;
    auto moved = [&](double t) {
      const std::vector<c128> va = col_major_values(a), vd = col_major_values(d);
      std::vector<c128> v;
      for (size_t i = 0; i < va.size(); ++i) v.push_back(va[i] + t * vd[i]);
      return expm(seq, col_major_of(dt, a.shape(), v)).value();
    };
    const Tensor p = moved(h), m = moved(-h);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          const c128 fd = (p.get_as_c128({b, i, j}).value() - m.get_as_c128({b, i, j}).value()) / (2 * h);
          EXPECT_LT(std::abs(l.get_as_c128({b, i, j}).value() - fd), 1e-6 * (1 + std::abs(fd)));
        }
  }
  const Tensor a = Tensor::zeros(DType::kF64, {3, 3}).value();
  EXPECT_EQ(expm_frechet(seq, a, Tensor::zeros(DType::kF64, {3, 2}).value()).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(expm_frechet(seq, a, Tensor::zeros(DType::kC128, {3, 3}).value()).error().code(),
            ErrorCode::kDTypeMismatch);
}

TEST(LinalgThreads, OneAndTwoThreadsGiveEqualResults) {
  cpu::CpuTopology t = cpu::CpuTopology::discover().value();
  cpu::CpuEngineConfig cfg;
  cfg.domains = {cpu::CpuDomainConfig{0, t.allowed_cpus, 2, nullptr}};
  cfg.pin_workers = false;
  auto engine = cpu::CpuEngine::create(cfg, &t).value();
  const Tensor a = Tensor::random_normal(DType::kF64, {64, 6, 6}, 3).value();
  const Tensor big = Tensor::random_normal(DType::kF64, {3, 40, 40}, 4).value();
  // Note [Recursive LU]: its products on two workers, one item and three (outer lanes).
  const Tensor lu_a = Tensor::random_normal(DType::kF64, {3, 300, 300}, 5).value();
  const Tensor lu_b = Tensor::random_normal(DType::kF64, {3, 300, 2}, 6).value();
  // Note [Engine back-transformation]: the reflectors' products on two workers (one
  // item) and in outer lanes (three items).
  const Tensor st = Tensor::random_normal(DType::kF64, {3, 120, 100}, 7).value();
  CpuExecutionContext seq = CpuExecutionContext::sequential();
  const SvdResult st1 = svd(seq, st).value();
  const SvdResult r1 = svd(seq, a).value();
  const SvdResult b1 = svd(seq, big).value();
  const Tensor x1 = solve(seq, lu_a, lu_b).value();
  SvdResult r2, b2, st2, st2one;
  Tensor x2, x2one;
  ASSERT_TRUE(engine
                  ->run(0, cpu::ParallelMode::kInner,
                        [&](CpuExecutionContext& ctx) -> Result<void> {
                          TENFERRO_TRY(r2, svd(ctx, a));
                          TENFERRO_TRY(b2, svd(ctx, big));
                          TENFERRO_TRY(x2, solve(ctx, lu_a, lu_b));
                          TENFERRO_TRY(Tensor first, lu_a.slice(0, 0, 1));
                          TENFERRO_TRY(Tensor first_b, lu_b.slice(0, 0, 1));
                          TENFERRO_TRY(x2one, solve(ctx, first, first_b));
                          TENFERRO_TRY(st2, svd(ctx, st));
                          TENFERRO_TRY(Tensor st_first, st.slice(0, 0, 1));
                          TENFERRO_TRY(st2one, svd(ctx, st_first));
                          return ok();
                        })
                  .has_value());
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 300; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const double want = x1.get<double>({b, i, j}).value();
        EXPECT_NEAR(x2.get<double>({b, i, j}).value(), want, 1e-9 * (1 + std::abs(want)));
        if (b == 0) {
          EXPECT_NEAR(x2one.get<double>({0, i, j}).value(), want, 1e-9 * (1 + std::abs(want)));
        }
      }
  EXPECT_EQ(st2.route.kernel, Kernel::kStaged);
  EXPECT_EQ(st2.route.policy, BatchPolicy::kOuterParallel);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 120; ++i)
      for (int64_t j = 0; j < 100; ++j) {
        const double want = st1.u.get<double>({b, i, j}).value();
        EXPECT_NEAR(st2.u.get<double>({b, i, j}).value(), want, 1e-9);
        if (b == 0) {
          EXPECT_NEAR(st2one.u.get<double>({0, i, j}).value(), want, 1e-9);
        }
      }
  for (int64_t b = 0; b < 64; ++b)
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(r1.s.get<double>({b, i}).value(), r2.s.get<double>({b, i}).value());
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 40; ++i) EXPECT_NEAR(b1.s.get<double>({b, i}).value(), b2.s.get<double>({b, i}).value(), 1e-12);
}

TEST(LinalgLinking, LapackRunsOnOpenBlasBlas) {
  // This module links LAPACKE, OpenBLAS and (through cpu) BLIS, which also exports the
  // BLAS symbols: OpenBLAS's LAPACK must find OpenBLAS's dgemm_ (Note [BLAS symbol
  // order] in caps.cc); a link line with BLIS first ran its SVDs on BLIS's threads.
  EXPECT_EQ(cpu::CpuCaps::probe().blas_symbols_elsewhere, "");
}

TEST(MatrixNormNames, RoundTripNumpysOrds) {
  const std::pair<MatrixNorm, const char*> names[] = {
      {MatrixNorm::kFrobenius, "fro"},   {MatrixNorm::kNuclear, "nuc"},   {MatrixNorm::kSpectral, "2"},
      {MatrixNorm::kOne, "1"},           {MatrixNorm::kInf, "inf"},       {MatrixNorm::kMinSingular, "-2"},
      {MatrixNorm::kMinColumnSum, "-1"}, {MatrixNorm::kMinRowSum, "-inf"}};
  for (const auto& [kind, name] : names) {
    EXPECT_EQ(matrix_norm_name(kind), name);
    EXPECT_EQ(parse_matrix_norm(name), kind);
  }
  EXPECT_FALSE(parse_matrix_norm("frob"));
  EXPECT_FALSE(parse_matrix_norm(""));
}

}  // namespace
}  // namespace tenferro::linalg
