// The GEMM kernels themselves (gemm.h's detail:: entry points), called directly at every
// ISA level this machine has, on every register-block remainder, padded and strided
// layouts, alpha and beta; against long-double sums. dot_general_test.cc checks the
// routes that reach them through dot_general, and dot_plan_test.cc which route the
// planner picks for which capabilities.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm.h"
#include "tenferro/cpu/caps.h"

namespace tenferro::cpu {
namespace {

// A value in [-1, 1) from 53 random bits: the operands' entries (cheaper than a normal
// draw, which would take most of these tests' time).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1p-52 - 1.0; }

// The lane kernel itself at every ISA level this machine has (the scalar level's plain
// loops too, which the planner never picks): lanes with a masked last vector, both block
// orders, strided products, depth blocks past one (k > 64), alpha and beta, against a
// plain loop in long double.
TEST(GemmKernels, LaneKernelAtEveryIsaLevel) {
  std::mt19937_64 rng(77);
  const IsaLevel top = CpuCaps::probe().usable_isa();
  auto check_dtype = [&]<class T>() {
    const double eps = std::is_same_v<T, float> ? 1e-5 : 1e-13;
    for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
      if (isa > top) continue;
      for (const auto& [lanes, m, n, k] : {std::array<int64_t, 4>{11, 5, 7, 3}, std::array<int64_t, 4>{17, 9, 2, 130},
                                           std::array<int64_t, 4>{3, 1, 13, 1}}) {
        for (bool cols : {false, true}) {
          // Item w of A (i, p) at w + 17 i + 17 m p (lanes <= 17 apart from the rows);
          // B (p, j) at w + 19 p + 19 k j; C (i, j) at w + 20 i + 20 m j.
          const int64_t rsa = 17, csa = 17 * m, rsb = 19, csb = 19 * k, rsc = 20, csc = 20 * m;
          std::vector<T> a(static_cast<size_t>(csa * k + 17)), b(static_cast<size_t>(csb * n + 19)),
              c(static_cast<size_t>(csc * n + 20));
          for (auto* v : {&a, &b, &c})
            for (T& x : *v) x = static_cast<T>(uniform(rng));
          const std::vector<T> before = c;
          const detail::GemmArgs<T> g{m,        n,   k,   T(-0.5), a.data(), rsa,      csa, false,
                                      b.data(), rsb, csb, false,   T(2),     c.data(), rsc, csc};
          detail::batch_lanes<T>(isa, g, lanes, cols);
          for (int64_t w = 0; w < 20; ++w)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                const size_t at = static_cast<size_t>(w + i * rsc + j * csc);
                if (w >= lanes) {
                  ASSERT_EQ(c[at], before[at]) << "lane " << w << " past the batch was written";
                  continue;
                }
                long double sum = 0, mag = 0;
                for (int64_t p = 0; p < k; ++p) {
                  const long double x = a[static_cast<size_t>(w + i * rsa + p * csa)],
                                    y = b[static_cast<size_t>(w + p * rsb + j * csb)];
                  sum += x * y;
                  mag += std::fabs(x * y);
                }
                const long double want = -0.5L * sum + 2.0L * before[at];
                EXPECT_NEAR(c[at], static_cast<double>(want),
                            eps * static_cast<double>(mag + 2 * std::fabs(before[at]) + 1))
                    << isa_name(isa) << " lanes " << lanes << " m " << m << " n " << n << " k " << k << " w " << w;
              }
        }
      }
    }
  };
  check_dtype.template operator()<double>();
  check_dtype.template operator()<float>();
}

// Note [Matrix-vector products]: the kernel itself at every ISA level this machine has,
// f64 and f32, row form (A's rows contiguous) and column form (columns contiguous), with
// row blocks and register remainders, contractions past the stack chunk of x (strided
// x), y at a stride with padding that must stay untouched, alpha and beta (beta 0 with
// NaN in y: never read); against long-double sums.
TEST(GemmKernels, MatrixVectorKernelAtEveryIsaLevel) {
  std::mt19937_64 rng(1204);
  const IsaLevel top = CpuCaps::probe().usable_isa();
  int64_t checked = 0;
  auto check_dtype = [&]<class T>() {
    const double eps = std::is_same_v<T, float> ? 2e-6 : 1e-14;
    const int64_t chunk = 16384 / static_cast<int64_t>(sizeof(T));  // the row form's stack chunk of x
    const std::array<int64_t, 2> shapes[] = {{1, 1},         {1, 40},     {3, 2},   {4, 33},   {5, 17},
                                             {9, 64},        {17, 100},   {64, 7},  {130, 31}, {1100, 5},
                                             {2, chunk + 9}, {1030, 300}, {8200, 3}};
    for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
      if (isa > top) continue;
      for (const auto& [m, k] : shapes)
        for (bool rows : {false, true})
          for (int64_t incx : {1, 3})
            for (int64_t incy : {1, 2})
              for (bool beta_zero : {false, true})
                for (bool one_run : {false, true}) {
                  // A (i, p) at i * lda + p (rows) or i + p * lda (columns), lda past the extent.
                  const int64_t lda = (rows ? k : m) + 3;
                  std::vector<T> a(static_cast<size_t>(lda * (rows ? m : k))), x(static_cast<size_t>(incx * k)),
                      y(static_cast<size_t>(incy * m + 1));
                  for (auto* v : {&a, &x, &y})
                    for (T& e : *v) e = static_cast<T>(uniform(rng));
                  if (beta_zero) {
                    for (int64_t i = 0; i < m; ++i)
                      y[static_cast<size_t>(i * incy)] = std::numeric_limits<T>::quiet_NaN();
                  }
                  const std::vector<T> before = y;
                  const T alpha = T(-0.75), beta = beta_zero ? T(0) : T(1.5);
                  const detail::GemmArgs<T> g{m,        1,    k, alpha, a.data(), rows ? lda : 1, rows ? 1 : lda, false,
                                              x.data(), incx, 1, false, beta,     y.data(),       incy,           1};
                  detail::matvec<T>(isa, g, one_run);
                  for (size_t e = 0; e < y.size(); ++e) {
                    const auto i = static_cast<int64_t>(e) / incy;
                    if (static_cast<int64_t>(e) % incy != 0 || i >= m) {
                      ASSERT_TRUE(std::memcmp(&y[e], &before[e], sizeof(T)) == 0) << "padding written at " << e;
                      continue;
                    }
                    long double sum = 0, mag = 0;
                    for (int64_t q = 0; q < k; ++q) {
                      const long double av = a[static_cast<size_t>(rows ? i * lda + q : i + q * lda)],
                                        xv = x[static_cast<size_t>(q * incx)];
                      sum += av * xv;
                      mag += std::fabs(av * xv);
                    }
                    const long double old = beta_zero ? 0.0L : static_cast<long double>(before[e]);
                    const long double want = -0.75L * sum + static_cast<long double>(beta) * old;
                    ASSERT_NEAR(y[e], static_cast<double>(want),
                                eps * static_cast<double>(mag + 2 * std::fabs(old) + 1))
                        << isa_name(isa) << (rows ? " rows" : " columns") << " m " << m << " k " << k << " incx "
                        << incx << " incy " << incy << " beta " << beta << " i " << i;
                    ++checked;
                  }
                }
    }
  };
  check_dtype.template operator()<double>();
  check_dtype.template operator()<float>();
  EXPECT_GT(checked, 0);
}

// Note [Few-vector products]: the kernel with X of 2 to 7 columns (passes of up to four
// vectors) at every ISA level this machine has, f64, f32, c128 and c64 (both conj flags),
// row and column forms, X's columns contiguous or interleaved (copied in chunks: k past
// one chunk), Y column-major with padding or row-major, beta 0 over NaN, one run at a
// time or not, every partial row block and vector tail, tiles of the column form (m
// past one tile); against long-double sums, Y's padding untouched.
TEST(GemmKernels, FewVectorKernelAtEveryIsaLevel) {
  std::mt19937_64 rng(1205);
  const IsaLevel top = CpuCaps::probe().usable_isa();
  int64_t checked = 0;
  auto check_dtype = [&]<class T>() {
    using Real = decltype(std::abs(T{}));
    constexpr bool kComplex = !std::is_same_v<T, Real>;
    using L = std::conditional_t<kComplex, std::complex<long double>, long double>;
    const double eps = std::is_same_v<Real, float> ? 4e-6 : 2e-14;
    const int64_t chunk = 65536 / 2 / static_cast<int64_t>(sizeof(T));  // the row form's chunk for two vectors
    const int64_t tile = 32768 / static_cast<int64_t>(sizeof(T));       // the column form's tile rows
    // |v|, or for complex |re| + |im| (at most sqrt(2) |v|): the error scale without a
    // square root per term.
    auto bound = [](const L& v) -> long double {
      if constexpr (kComplex) {
        return std::fabs(v.real()) + std::fabs(v.imag());
      } else {
        return std::fabs(v);
      }
    };
    const std::array<int64_t, 2> shapes[] = {{1, 3},   {3, 9},     {5, 17},        {9, 64},      {17, 100},
                                             {70, 33}, {1030, 20}, {2, chunk + 9}, {tile + 5, 3}};
    auto rnd = [&]() {
      if constexpr (kComplex) {
        return T(static_cast<Real>(uniform(rng)), static_cast<Real>(uniform(rng)));
      } else {
        return static_cast<T>(uniform(rng));
      }
    };
    for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
      if (isa > top) continue;
      for (const auto& [m, k] : shapes)
        for (const int64_t n : {2, 3, 4, 5, 7})
          for (bool rows : {false, true})
            for (bool x_direct : {true, false})
              for (bool y_cols : {true, false})
                for (bool special : {false, true}) {  // beta 0 over NaN, one run at a time
                  const int64_t lda = (rows ? k : m) + 3;
                  const int64_t rsx = x_direct ? 1 : n + 1, csx = x_direct ? k + 2 : 1;
                  const int64_t rsy = y_cols ? 1 : n + 2, csy = y_cols ? m + 1 : 1;
                  std::vector<T> a(static_cast<size_t>(lda * (rows ? m : k))),
                      x(static_cast<size_t>(x_direct ? csx * n : rsx * k)),
                      y(static_cast<size_t>(y_cols ? csy * n : rsy * m));
                  for (auto* v : {&a, &x, &y})
                    for (T& e : *v) e = rnd();
                  if (special) {
                    for (int64_t i = 0; i < m; ++i)
                      for (int64_t j = 0; j < n; ++j)
                        y[static_cast<size_t>(i * rsy + j * csy)] = std::numeric_limits<Real>::quiet_NaN();
                  }
                  const std::vector<T> before = y;
                  const bool conj = kComplex && special;
                  const bool conj_x = kComplex && x_direct != y_cols;
                  const T alpha = T(-0.75), beta = special ? T(0) : T(1.5);
                  const detail::GemmArgs<T> g{m,    n,        k,   alpha, a.data(), rows ? lda : 1, rows ? 1 : lda,
                                              conj, x.data(), rsx, csx,   conj_x,   beta,           y.data(),
                                              rsy,  csy};
                  detail::matvec<T>(isa, g, special);
                  std::vector<char> inside(y.size(), 0);
                  for (int64_t i = 0; i < m; ++i) {
                    for (int64_t j = 0; j < n; ++j) {
                      const auto e = static_cast<size_t>(i * rsy + j * csy);
                      inside[e] = 1;
                      L sum = 0;
                      long double mag = 0;
                      for (int64_t q = 0; q < k; ++q) {
                        L av = static_cast<L>(a[static_cast<size_t>(rows ? i * lda + q : i + q * lda)]);
                        if constexpr (kComplex) {
                          if (conj) av = std::conj(av);
                        }
                        L xv = static_cast<L>(x[static_cast<size_t>(q * rsx + j * csx)]);
                        if constexpr (kComplex) {
                          if (conj_x) xv = std::conj(xv);
                        }
                        sum += av * xv;
                        mag += bound(av) * bound(xv);
                      }
                      const L old = special ? L(0) : static_cast<L>(before[e]);
                      const L want = L(-0.75) * sum + static_cast<L>(beta) * old;
                      ASSERT_LE(static_cast<double>(std::abs(static_cast<L>(y[e]) - want)),
                                eps * static_cast<double>(mag + 2 * std::abs(old) + 1))
                          << isa_name(isa) << (rows ? " rows" : " columns") << " m " << m << " k " << k << " n " << n
                          << " x direct " << x_direct << " y columns " << y_cols << " special " << special << " at ("
                          << i << ", " << j << ")";
                      ++checked;
                    }
                  }
                  for (size_t e = 0; e < y.size(); ++e) {
                    if (!inside[e]) {
                      ASSERT_TRUE(std::memcmp(&y[e], &before[e], sizeof(T)) == 0) << "padding written at " << e;
                    }
                  }
                }
    }
  };
  check_dtype.template operator()<double>();
  check_dtype.template operator()<float>();
  check_dtype.template operator()<c128>();
  check_dtype.template operator()<c64>();
  EXPECT_GT(checked, 0);
}

// Note [Complex matrix-vector products]: the kernel on c128 and c64 at every ISA level
// this machine has, row and column forms, every pair of conj flags, strided x and y,
// complex alpha and beta, one run at a time or not; against long-double sums.
TEST(GemmKernels, ComplexMatrixVectorKernelAtEveryIsaLevel) {
  std::mt19937_64 rng(1206);
  const IsaLevel top = CpuCaps::probe().usable_isa();
  int64_t checked = 0;
  auto check_dtype = [&]<class R>() {
    using C = std::complex<R>;
    using LC = std::complex<long double>;
    const double eps = std::is_same_v<R, float> ? 4e-6 : 2e-14;
    const std::array<int64_t, 2> shapes[] = {{1, 1},    {1, 40},  {3, 9},    {4, 33},   {5, 17},  {9, 64},
                                             {17, 100}, {130, 7}, {2, 1030}, {2100, 3}, {4100, 2}};
    auto cj = [](LC v, bool c) { return c ? std::conj(v) : v; };
    for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
      if (isa > top) continue;
      for (const auto& [m, k] : shapes)
        for (bool rows : {false, true})
          for (int conj = 0; conj < 4; ++conj)
            for (bool one_run : {false, true}) {
              const bool ca = conj % 2 == 1, cb = conj >= 2;
              const int64_t incx = conj == 1 ? 3 : 1, incy = conj == 2 ? 2 : 1;
              const int64_t lda = (rows ? k : m) + 3;
              std::vector<C> a(static_cast<size_t>(lda * (rows ? m : k))), x(static_cast<size_t>(incx * k)),
                  y(static_cast<size_t>(incy * m + 1));
              for (auto* v : {&a, &x, &y})
                for (C& e : *v) e = C(static_cast<R>(uniform(rng)), static_cast<R>(uniform(rng)));
              const std::vector<C> before = y;
              const C alpha(R(-0.75), R(0.5)), beta = one_run ? C(R(1.5), R(-0.25)) : C{};
              detail::GemmArgs<C> g{m,        1,    k, alpha, a.data(), rows ? lda : 1, rows ? 1 : lda, ca,
                                    x.data(), incx, 1, cb,    beta,     y.data(),       incy,           1};
              detail::matvec<C>(isa, g, one_run);
              for (size_t e = 0; e < y.size(); ++e) {
                const auto i = static_cast<int64_t>(e) / incy;
                if (static_cast<int64_t>(e) % incy != 0 || i >= m) {
                  ASSERT_EQ(y[e], before[e]) << "padding written at " << e;
                  continue;
                }
                LC sum = 0;
                long double mag = 0;
                for (int64_t q = 0; q < k; ++q) {
                  const C av = a[static_cast<size_t>(rows ? i * lda + q : i + q * lda)],
                          xv = x[static_cast<size_t>(q * incx)];
                  const LC t = cj(LC(av.real(), av.imag()), ca) * cj(LC(xv.real(), xv.imag()), cb);
                  sum += t;
                  mag += std::abs(t);
                }
                const LC old(before[e].real(), before[e].imag());
                const LC want = LC(alpha.real(), alpha.imag()) * sum + LC(beta.real(), beta.imag()) * old;
                const LC got(y[e].real(), y[e].imag());
                ASSERT_LE(static_cast<double>(std::abs(got - want)),
                          eps * static_cast<double>(mag + 2 * std::abs(old) + 1))
                    << isa_name(isa) << (rows ? " rows" : " columns") << " m " << m << " k " << k << " conj " << ca
                    << cb << " one_run " << one_run << " i " << i;
                ++checked;
              }
            }
    }
  };
  check_dtype.template operator()<double>();
  check_dtype.template operator()<float>();
  EXPECT_GT(checked, 0);
}

// C (m x n, column-major, leading dimension ldc) against alpha A B + beta C0 in long
// double, where a(i, p) and b(p, j) read the operands; the padding rows of C (m..ldc)
// must equal C0's. Adds the elements checked to *checked. Shared by the kernel tests.
template <class AF, class BF>
void expect_kernel_result(int64_t m, int64_t n, int64_t k, double alpha, double beta, AF a, BF b, const double* c,
                          const double* c0, int64_t ldc, const std::string& what, int* checked) {
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      long double acc = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const long double t = static_cast<long double>(a(i, p)) * b(p, j);
        acc += t;
        mag += std::fabs(t);
      }
      const long double want = alpha * acc + beta * static_cast<long double>(c0[i + j * ldc]);
      ASSERT_NEAR(c[i + j * ldc], static_cast<double>(want), 1e-13 * static_cast<double>(mag + 2))
          << what << " m " << m << " n " << n << " k " << k << " at " << i << "," << j;
      ++*checked;
    }
    for (int64_t pad = m; pad < ldc; ++pad) {
      ASSERT_EQ(c[pad + j * ldc], c0[pad + j * ldc]) << what << " padding row " << pad << " column " << j;
    }
  }
}

// Note [Small-kernel loop order] and Note [Small-product prefetch]: the small kernel
// (A and C column-major, k <= kSmallMaxK) on every row remainder (m % 8), every column-block
// remainder (n % 6), both loop orders (few columns: strips outermost; many columns with
// a small A: column blocks outermost), padded leading dimensions, B in either layout or
// strided, alpha/beta, with and without a next-product hint (which must not change
// anything); against long-double sums, padding rows of C untouched.
TEST(GemmKernels, SmallKernelMatchesLongDoubleSums) {
  std::mt19937_64 rng(1130);
  int checked = 0;
  // m covers every strip kind of 8- and 16-row strips (Note [Small blocks on AVX-512]).
  for (const int64_t m : {4, 5, 8, 11, 12, 13, 16, 24, 29, 144}) {
    for (const int64_t n : {1, 2, 3, 4, 5, 6, 7, 12, 13, 40}) {
      for (const int64_t k : {1, 11, 64, 200}) {
        const bool b_rows = rng() % 2, hint = rng() % 2;
        const int64_t lda = m + static_cast<int64_t>(rng() % 3), ldc = m + static_cast<int64_t>(rng() % 3);
        const int64_t bstep = 1 + static_cast<int64_t>(rng() % 2);
        const int64_t rsb = b_rows ? n * bstep : bstep, csb = b_rows ? bstep : k * bstep;
        std::vector<double> a(static_cast<size_t>(k * lda)), b(static_cast<size_t>(k * n * bstep)),
            c(static_cast<size_t>(ldc * n)), next_a(a.size()), next_c(c.size());
        for (auto* v : {&a, &b, &c, &next_a, &next_c})
          for (double& x : *v) x = uniform(rng);
        const std::vector<double> c0 = c, next_c0 = next_c;
        const double alpha = 1.25, beta = rng() % 3 == 0 ? 0.0 : -0.5;
        detail::GemmArgs<double> g{m,        n,   k,   alpha, a.data(), 1,        lda, false,
                                   b.data(), rsb, csb, false, beta,     c.data(), 1,   ldc};
        if (hint) {
          g.next_a = next_a.data();
          g.next_c = next_c.data();
        }
        detail::gemm_naive<double>(kernel_isa(host_caps()), g);
        EXPECT_EQ(next_c, next_c0);  // a hint is only prefetched
        expect_kernel_result(
            m, n, k, alpha, beta, [&](int64_t i, int64_t p) { return a[static_cast<size_t>(i + p * lda)]; },
            [&](int64_t p, int64_t j) { return b[static_cast<size_t>(p * rsb + j * csb)]; }, c.data(), c0.data(), ldc,
            "small", &checked);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GT(checked, 45000);
}

// Note [Streamed-output products]: the kernel itself, both loop orders, every tile
// remainder (m % 128, m % 8, n % 6), contractions up to kOutMaxK, A with a padded
// leading dimension, B in either layout, C columns at every 8-byte alignment (ldc
// padded by 0-3 elements, C offset by one element); against long-double sums, C's
// padding untouched.
TEST(GemmKernels, StreamedOutputKernelMatchesLongDoubleSums) {
  std::mt19937_64 rng(1202);
  int checked = 0;
  for (const int64_t m : {1, 7, 8, 130, 300}) {
    for (const int64_t n : {1, 5, 6, 13}) {
      for (const int64_t k : {int64_t{1}, int64_t{33}, detail::kOutMaxK}) {
        for (const bool columns_outer : {false, true}) {
          const bool b_rows = rng() % 2;
          const int64_t lda = m + static_cast<int64_t>(rng() % 3), ldc = m + static_cast<int64_t>(rng() % 4);
          const int64_t rsb = b_rows ? n : 1, csb = b_rows ? 1 : k;
          std::vector<double> a(static_cast<size_t>(k * lda)), b(static_cast<size_t>(k * n)),
              cbuf(static_cast<size_t>(ldc * n + 1));
          for (auto* v : {&a, &b, &cbuf})
            for (double& x : *v) x = uniform(rng);
          double* c = cbuf.data() + 1;  // columns at 8-byte offsets
          const std::vector<double> c0 = cbuf;
          const double alpha = -0.75;
          const detail::GemmArgs<double> g{m,        n,   k,   alpha, a.data(), 1, lda, false,
                                           b.data(), rsb, csb, false, 0.0,      c, 1,   ldc};
          detail::streamed_out_f64(kernel_isa(host_caps()), g, columns_outer);
          EXPECT_EQ(cbuf[0], c0[0]);
          expect_kernel_result(
              m, n, k, alpha, 0.0, [&](int64_t i, int64_t p) { return a[static_cast<size_t>(i + p * lda)]; },
              [&](int64_t p, int64_t j) { return b[static_cast<size_t>(p * rsb + j * csb)]; }, c, c0.data() + 1, ldc,
              columns_outer ? "columns outer" : "rows outer", &checked);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(checked, 50000);
}

// Note [Streamed tall products]: the kernel itself, A column- or row-major with padded
// leading dimensions, B in either layout or strided, every slice remainder (m % 8),
// contraction remainders (k % 4), chunks of 96 rows, alpha/beta, C column- or row-major;
// against long-double sums, padding of C untouched. Note [Streamed row-major products]:
// with A row-major, B's rows contiguous as given or packed by pack_b_rows when the kernel
// asks for it (every block of rows, one to four vectors per row, full and partial).
TEST(GemmKernels, StreamedKernelMatchesLongDoubleSums) {
  std::mt19937_64 rng(1201);
  int checked = 0;
  // m covers partial 8- and 16-row slices (Note [Streamed slices on AVX-512]) and 96-row chunks.
  for (const int64_t m : {1, 5, 8, 13, 16, 24, 96, 97, 111, 203}) {
    for (const int64_t n : {1, 3, 8, 21, 25, 32}) {
      for (const int64_t k : {1, 3, 4, 7, 64, 130}) {
        const bool row_major = rng() % 2, b_rows = rng() % 2;
        const int64_t lda = (row_major ? k : m) + static_cast<int64_t>(rng() % 3);
        const int64_t bstep = 1 + static_cast<int64_t>(rng() % 2);  // B's elements maybe 2 apart
        const int64_t rsb = b_rows ? n * bstep : bstep, csb = b_rows ? bstep : k * bstep;
        const int64_t ldc = m + static_cast<int64_t>(rng() % 3);
        std::vector<double> a(static_cast<size_t>((row_major ? m : k) * lda)), b(static_cast<size_t>(k * n * bstep)),
            c(static_cast<size_t>(ldc * n));
        for (auto* v : {&a, &b, &c})
          for (double& x : *v) x = uniform(rng);
        const double alpha = 1.25, beta = rng() % 3 == 0 ? 0.0 : -0.5;
        // C row-major in a third of the cases (rows ldr apart: the transposed form's C,
        // Note [Streamed tall products]); checked through its column-major copy, the
        // padding of each row untouched.
        const bool c_rows = rng() % 3 == 0;
        const int64_t ldr = n + static_cast<int64_t>(rng() % 3);
        std::vector<double> cr(static_cast<size_t>(m * ldr));
        for (double& x : cr) x = uniform(rng);
        const std::vector<double> cr0 = cr;
        if (c_rows) {
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[static_cast<size_t>(i + j * ldc)] = cr0[static_cast<size_t>(i * ldr + j)];
        }
        const std::vector<double> c0 = c;
        const detail::GemmArgs<double> g{
            m,        n,   k,   alpha, a.data(), row_major ? lda : 1,           row_major ? 1 : lda, false,
            b.data(), rsb, csb, false, beta,     c_rows ? cr.data() : c.data(), c_rows ? ldr : 1,    c_rows ? 1 : ldc};
        std::vector<double> packed;
        if (detail::streamed_wants_b_rows(kernel_isa(host_caps()), g) && rng() % 2 == 0) {
          packed.assign(static_cast<size_t>(detail::b_rows_elems(k, n)), 0.0);
          detail::streamed_f64(kernel_isa(host_caps()), detail::pack_b_rows(g, packed.data()));
        } else {
          detail::streamed_f64(kernel_isa(host_caps()), g);
        }
        if (c_rows) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) c[static_cast<size_t>(i + j * ldc)] = cr[static_cast<size_t>(i * ldr + j)];
            for (int64_t j = n; j < ldr; ++j) {
              ASSERT_EQ(cr[static_cast<size_t>(i * ldr + j)], cr0[static_cast<size_t>(i * ldr + j)]) << "row padding";
            }
          }
        }
        expect_kernel_result(
            m, n, k, alpha, beta,
            [&](int64_t i, int64_t p) { return a[static_cast<size_t>(row_major ? i * lda + p : i + p * lda)]; },
            [&](int64_t p, int64_t j) { return b[static_cast<size_t>(p * rsb + j * csb)]; }, c.data(), c0.data(), ldc,
            row_major ? "row-major A" : "column-major A", &checked);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GT(checked, 50000);
}

// Note [Blocked AVX-512 GEMM]: the kernel itself on every panel remainder (24-row A
// panels, 8-column B panels), more than one contraction slice (kBlockK), B column block
// (kBlockN) and A row block (kBlockM), A column-major, row-major or strided both ways,
// B in either order or strided, alpha and beta (beta only on the first slice), a C with
// padding rows that must stay untouched; against long-double sums.
TEST(GemmKernels, BlockedKernelMatchesLongDoubleSums) {
  if (!detail::blocked_available(kernel_isa(host_caps()))) GTEST_SKIP() << "no AVX-512 in this build";
  std::mt19937_64 rng(1130);
  int checked = 0;
  const int64_t shapes[][3] = {{1, 1, 1},     {23, 7, 5},    {24, 8, 256},   {25, 9, 257},  {47, 17, 300},
                               {193, 13, 40}, {30, 1030, 9}, {200, 12, 600}, {5, 300, 513}, {1, 1025, 3}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    for (int form = 0; form < 3; ++form) {
      // form 0: A column-major, B column-major; 1: A row-major, B row-major; 2: both strided.
      const int64_t sa = form == 2 ? 2 : 1;
      const int64_t rsa = form == 1 ? k + 1 : sa, csa = form == 1 ? 1 : (m + 1) * sa;
      const int64_t rsb = form == 1 ? n + 2 : (form == 2 ? 3 : 1), csb = form == 1 ? 1 : (form == 2 ? 3 * k + 1 : k);
      const int64_t ldc = m + static_cast<int64_t>(rng() % 3);
      std::vector<double> a(static_cast<size_t>(m * rsa + k * csa + 1)), b(static_cast<size_t>(k * rsb + n * csb + 1)),
          c(static_cast<size_t>(ldc * n));
      for (auto* v : {&a, &b, &c})
        for (double& x : *v) x = uniform(rng);
      const std::vector<double> c0 = c;
      const double alpha = form == 0 ? 1.0 : -0.75, beta = form == 1 ? 0.0 : 1.5;
      const detail::GemmArgs<double> g{m,        n,   k,   alpha, a.data(), rsa,      csa, false,
                                       b.data(), rsb, csb, false, beta,     c.data(), 1,   ldc};
      std::vector<double> work(static_cast<size_t>(detail::blocked_work<double>(m, n, k)));
      ASSERT_TRUE(detail::gemm_blocked(kernel_isa(host_caps()), g, work.data()));
      expect_kernel_result(
          m, n, k, alpha, beta, [&](int64_t i, int64_t p) { return a[static_cast<size_t>(i * rsa + p * csa)]; },
          [&](int64_t p, int64_t j) { return b[static_cast<size_t>(p * rsb + j * csb)]; }, c.data(), c0.data(), ldc,
          "form " + std::to_string(form), &checked);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(checked, 100000);
}

// Note [Blocked AVX-512 GEMM], f32: every remainder of the 48-row and 8-column register
// blocks, several contraction slices and A row blocks, A and B column-major, row-major
// or strided, alpha and beta; against long-double sums.
TEST(GemmKernels, BlockedF32KernelMatchesLongDoubleSums) {
  if (!detail::blocked_available(kernel_isa(host_caps()))) GTEST_SKIP() << "no AVX-512 on this CPU (or capped)";
  std::mt19937_64 rng(1131);
  int64_t checked = 0;
  constexpr int64_t kc = detail::BlockedShape<float>::kK;  // contraction slices: one, two, three
  const int64_t shapes[][3] = {{1, 1, 1},     {47, 7, 5},  {48, 8, kc}, {49, 9, kc + 1}, {97, 17, 2 * kc + 3},
                               {400, 13, 40}, {5, 1030, 9}};
  for (const auto& sh : shapes) {
    const int64_t m = sh[0], n = sh[1], k = sh[2];
    for (int form = 0; form < 3; ++form) {
      const int64_t sa = form == 2 ? 2 : 1;
      const int64_t rsa = form == 1 ? k + 1 : sa, csa = form == 1 ? 1 : (m + 1) * sa;
      const int64_t rsb = form == 1 ? n + 2 : (form == 2 ? 3 : 1), csb = form == 1 ? 1 : (form == 2 ? 3 * k + 1 : k);
      const int64_t ldc = m + static_cast<int64_t>(rng() % 3);
      std::vector<float> a(static_cast<size_t>(m * rsa + k * csa + 1)), b(static_cast<size_t>(k * rsb + n * csb + 1)),
          c(static_cast<size_t>(ldc * n));
      for (auto* v : {&a, &b, &c})
        for (float& x : *v) x = static_cast<float>(uniform(rng));
      const std::vector<float> c0 = c;
      const float alpha = form == 0 ? 1.0f : -0.75f, beta = form == 1 ? 0.0f : 1.5f;
      const detail::GemmArgs<float> g{m,        n,   k,   alpha, a.data(), rsa,      csa, false,
                                      b.data(), rsb, csb, false, beta,     c.data(), 1,   ldc};
      std::vector<float> work(static_cast<size_t>(detail::blocked_work<float>(m, n, k)));
      ASSERT_TRUE(detail::gemm_blocked(kernel_isa(host_caps()), g, work.data()));
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < ldc; ++i) {
          const size_t at = static_cast<size_t>(i + j * ldc);
          if (i >= m) {
            ASSERT_EQ(c[at], c0[at]) << "padding row " << i;  // untouched
            continue;
          }
          long double acc = 0, mag = 0;
          for (int64_t p = 0; p < k; ++p) {
            const long double t = static_cast<long double>(a[static_cast<size_t>(i * rsa + p * csa)]) *
                                  b[static_cast<size_t>(p * rsb + j * csb)];
            acc += t;
            mag += std::fabs(t);
          }
          const long double want = alpha * acc + beta * c0[at];
          ASSERT_NEAR(c[at], static_cast<double>(want),
                      2e-6 * static_cast<double>(std::fabs(alpha) * mag + std::fabs(beta * c0[at]) + 1))
              << "m " << m << " n " << n << " k " << k << " form " << form << " at " << i << "," << j;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 30000);
}

// Note [Short-side products with a strided contraction]: the kernel itself on every
// block remainder (m, n up to 32), one to four contraction loops with scrambled strides,
// alpha/beta and strided destinations, against a long-double sum.
TEST(GemmKernels, ShortSidesKernelWalksNestedContractions) {
  std::mt19937_64 rng(43);
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t m = 1 + static_cast<int64_t>(rng() % 32), n = 1 + static_cast<int64_t>(rng() % 32);
    detail::KLevels k;
    k.count = 1 + static_cast<int>(rng() % detail::kMaxKLevels);
    int64_t kk = 1;
    for (int l = 0; l < k.count; ++l) {
      k.extent[l] = 1 + static_cast<int64_t>(rng() % 6);
      kk *= k.extent[l];
    }
    // A [m, levels...] and B [levels..., n] with the levels in a random memory order
    // each (B's row j contiguous), one level maybe walked backwards.
    std::vector<int> oa(static_cast<size_t>(k.count)), ob(oa.size());
    for (int l = 0; l < k.count; ++l) oa[static_cast<size_t>(l)] = ob[static_cast<size_t>(l)] = l;
    std::shuffle(oa.begin(), oa.end(), rng);
    std::shuffle(ob.begin(), ob.end(), rng);
    const int64_t rsa = 1 + static_cast<int64_t>(rng() % 2);  // A's rows interleaved or not
    int64_t sa = rsa == 1 ? m : 1, sb = n + static_cast<int64_t>(rng() % 3);
    for (int l : oa) {
      k.sa[l] = sa;
      sa *= k.extent[l];
    }
    for (int l : ob) {
      k.sb[l] = sb;
      sb *= k.extent[l];
    }
    if (rsa == 2) {
      for (int l = 0; l < k.count; ++l) k.sa[l] *= 2 * m;  // A's rows 2 apart inside each k
      for (int l = 0; l < k.count; ++l) k.sa[l] /= m;
    }
    std::vector<double> a(static_cast<size_t>(sa * 2 * m + 8)), b(static_cast<size_t>(sb + 8));
    for (auto* v : {&a, &b})
      for (double& x : *v) x = uniform(rng);
    const bool flip = rng() % 2 && k.extent[0] > 1;
    const int64_t base_a = flip ? (k.extent[0] - 1) * k.sa[0] : 0, base_b = flip ? (k.extent[0] - 1) * k.sb[0] : 0;
    detail::KLevels kw = k;
    if (flip) {
      kw.sa[0] = -k.sa[0];
      kw.sb[0] = -k.sb[0];
    }
    const int64_t ldc = m + 2;
    std::vector<double> c(static_cast<size_t>(ldc * n)), c0;
    for (double& x : c) x = uniform(rng);
    c0 = c;
    const double alpha = 0.75, beta = trial % 3 == 0 ? 0.0 : -1.25;
    // Row offsets: plain strides, or the rows in a scrambled order (any offsets work).
    std::vector<int64_t> row_off(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) row_off[static_cast<size_t>(i)] = i * rsa;
    if (trial % 2) std::shuffle(row_off.begin(), row_off.end(), rng);
    detail::short_sides_f64(kernel_isa(host_caps()), m, n, alpha, a.data() + base_a, row_off.data(), b.data() + base_b,
                            kw, beta, c.data(), 1, ldc);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        long double acc = 0, mag = 0;
        for (int64_t p = 0; p < kk; ++p) {
          int64_t rem = p, ao = base_a, bo = base_b;
          for (int l = 0; l < k.count; ++l) {
            const int64_t x = rem % k.extent[l];
            rem /= k.extent[l];
            ao += x * kw.sa[l];
            bo += x * kw.sb[l];
          }
          const long double t = static_cast<long double>(a[static_cast<size_t>(ao + row_off[static_cast<size_t>(i)])]) *
                                b[static_cast<size_t>(bo + j)];
          acc += t;
          mag += std::fabs(t);
        }
        const long double want = alpha * acc + beta * static_cast<long double>(c0[static_cast<size_t>(i + j * ldc)]);
        ASSERT_NEAR(c[static_cast<size_t>(i + j * ldc)], static_cast<double>(want),
                    1e-13 * static_cast<double>(mag + 2))
            << "trial " << trial << " m " << m << " n " << n << " levels " << k.count << " at " << i << "," << j;
      }
      // Padding rows of C are untouched.
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t pad = m; pad < ldc; ++pad) {
          ASSERT_EQ(c[static_cast<size_t>(pad + j * ldc)], c0[static_cast<size_t>(pad + j * ldc)]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tenferro::cpu
