#include "tenferro/linalg_eager/linalg_eager.h"

#include "tenferro/eager/autograd.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

namespace tenferro::eager {
namespace {

double max_abs_diff(const EagerTensor& x, const EagerTensor& y) {
  const Tensor a = x.tensor(), b = y.tensor();
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  const int64_t n = a.numel();
  const Tensor fa = a.reshape_copy({n}).value(), fb = b.reshape_copy({n}).value();
  for (int64_t i = 0; i < n; ++i) {
    m = std::max(m, std::abs(fa.get_as_c128({i}).value() - fb.get_as_c128({i}).value()));
  }
  return m;
}

TEST(LinalgEager, SvdReconstructsThroughEagerMatmul) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_host(Tensor::random_normal(DType::kF64, {3, 5, 4}, 1).value()).value();
  const linalg::Svd r = linalg::svd(a).value();
  ASSERT_TRUE(r.u.defined() && r.vh.defined());
  EXPECT_EQ(r.u.shape(), Shape({3, 5, 4}));
  EXPECT_EQ(r.s.shape(), Shape({3, 4}));
  // U diag(S) Vh with eager ops: (U * S[.., None, :]) @ Vh.
  const EagerTensor s3 = reshape(r.s, {3, 1, 4}).value();
  const EagerTensor back = matmul(r.u * s3, r.vh).value();
  EXPECT_LT(max_abs_diff(back, a), 1e-12);
  linalg::SvdOptions vo;
  vo.mode = linalg::SvdMode::kValuesOnly;
  const linalg::Svd v = linalg::svd(a, vo).value();
  EXPECT_FALSE(v.u.defined());
  EXPECT_LT(max_abs_diff(v.s, r.s), 1e-12);
}

TEST(LinalgEager, SolveCholeskyQrAndNorms) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_values<double>({2, 2}, {4, 1, 1, 3}).value();
  const EagerTensor b = rt->from_values<double>({2}, {1, 2}).value();
  const EagerTensor x = linalg::solve(a, b).value();
  // 4x + y = 1, x + 3y = 2 -> x = 1/11, y = 7/11.
  EXPECT_NEAR(x.tensor().get<double>({0}).value(), 1.0 / 11, 1e-14);
  EXPECT_NEAR(x.tensor().get<double>({1}).value(), 7.0 / 11, 1e-14);
  const EagerTensor l = linalg::cholesky(a).value();
  EXPECT_LT(max_abs_diff(matmul(l, transpose(l, 0, 1).value()).value(), a), 1e-14);
  const linalg::Qr q = linalg::qr(a, linalg::QrMode::kR).value();
  EXPECT_FALSE(q.q.defined());
  EXPECT_NEAR(std::abs(q.r.tensor().get<double>({0, 0}).value()), std::sqrt(17.0), 1e-14);
  EXPECT_NEAR(linalg::det(a).value().tensor().get<double>({}).value(), 11.0, 1e-13);
  EXPECT_NEAR(linalg::matrix_norm(a).value().tensor().get<double>({}).value(), std::sqrt(27.0), 1e-14);
  EXPECT_NEAR(linalg::vector_norm(b, 1.0).value().tensor().get<double>({}).value(), 3.0, 1e-15);
  const linalg::Eigh e = linalg::eigh(a).value();
  EXPECT_NEAR(e.values.tensor().get<double>({0}).value(), (7 - std::sqrt(5.0)) / 2, 1e-14);
}

TEST(LinalgEager, TypedErrorsAndRuntimeMismatch) {
  auto rt = EagerRuntime::create().value();
  auto other = EagerRuntime::create().value();
  const EagerTensor a = rt->from_values<double>({2, 2}, {1, 2, 2, 4}).value();
  const EagerTensor b = other->from_values<double>({2}, {1, 2}).value();
  EXPECT_EQ(linalg::solve(a, b).error().code(), ErrorCode::kRuntimeMismatch);
  const EagerTensor b2 = rt->from_values<double>({2}, {1, 2}).value();
  EXPECT_EQ(linalg::solve(a, b2).error().code(), ErrorCode::kSingular);
  EXPECT_EQ(linalg::cholesky(a).error().code(), ErrorCode::kNotPositiveDefinite);
  EXPECT_EQ(linalg::svd(EagerTensor()).error().code(), ErrorCode::kInvalidArgument);
}

TEST(LinalgEager, ResultsLiveInTheChosenDomain) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_host(Tensor::random_normal(DType::kF64, {4, 4}, 2).value()).value();
  const int32_t d = rt->domains().front();
  const linalg::Svd r = linalg::svd(rt->on(CpuPlacement::domain(d)), a).value();
  ASSERT_TRUE(r.s.domain().has_value());
  EXPECT_EQ(*r.s.domain(), d);
  linalg::TruncatedSvdOptions o;
  o.max_rank = 2;
  const linalg::TruncatedSvd t = linalg::truncated_svd(a, o).value();
  EXPECT_EQ(t.s.shape(), Shape({2}));
  EXPECT_EQ(t.rank.tensor().get<int64_t>({}).value(), 2);
}

// Eager AD through linalg entry points: gradients against central differences.
TEST(LinalgEager, GradientsThroughDecompositionsMatchFiniteDifferences) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_host(Tensor::random_normal(DType::kF64, {4, 3}, 7).value()).value();
  const EagerTensor sq = rt->from_host(Tensor::random_normal(DType::kF64, {3, 3}, 8).value()).value();
  const EagerTensor b = rt->from_host(Tensor::random_normal(DType::kF64, {3, 2}, 9).value()).value();
  struct Case {
    const char* name;
    EagerFn f;
    EagerTensor x;
  };
  auto total = [](const EagerTensor& t) { return sum(mul(t, t).value()); };
  const std::vector<Case> cases = {
      {"svd values", [](std::span<const EagerTensor> v) { return sum(linalg::svd(v[0]).value().s); }, a},
      {"svd vectors", [&](std::span<const EagerTensor> v) {
         const linalg::Svd r = linalg::svd(v[0]).value();
         return total(matmul(r.u, r.vh).value());  // sign-invariant
       }, a},
      {"qr", [&](std::span<const EagerTensor> v) { return total(linalg::qr(v[0]).value().r); }, a},
      {"eigh", [&](std::span<const EagerTensor> v) {
         const linalg::Eigh e = linalg::eigh(v[0]).value();
         return add(sum(e.values).value(), total(mul(e.vectors, e.vectors).value()).value());
       }, sq},
      {"solve", [&](std::span<const EagerTensor> v) {
         const EagerTensor m = add(v[0], Context::of(v[0]).full({3, 3}, c128(0.0), DType::kF64).value()).value();
         return total(linalg::solve(add(m, mul(Context::of(m).scalar(c128(4.0)).value(),
                                                   Context::of(m).ones({3, 3}).value()).value()).value(), b).value());
       }, sq},
      {"det", [](std::span<const EagerTensor> v) { return linalg::det(v[0]); }, sq},
      {"vector norms", [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
         EagerTensor t = linalg::vector_norm(v[0]).value();  // 2-norm of everything
         for (double ord : {1.0, 3.0, HUGE_VAL, -HUGE_VAL}) {
           TENFERRO_TRY(EagerTensor n, linalg::vector_norm(v[0], ord, {1}, true));
           TENFERRO_TRY(EagerTensor s, sum(n));
           TENFERRO_TRY(t, add(t, s));
         }
         return t;
       }, a},
      // Note [Eager truncated SVD derivative]: the truncated reconstruction, the kept
      // values and the discarded weight (finite differences of the truncated result).
      {"truncated svd reconstruction", [&](std::span<const EagerTensor> v) {
         linalg::TruncatedSvdOptions o;
         o.max_rank = 2;
         const linalg::TruncatedSvd t = linalg::truncated_svd(v[0], o).value();
         const EagerTensor us = mul(t.u, reshape(t.s, {1, 2}).value()).value();
         return total(add(matmul(us, t.vh).value(), v[0]).value());
       }, a},
      {"truncated svd values and discarded weight", [&](std::span<const EagerTensor> v) {
         linalg::TruncatedSvdOptions o;
         o.max_rank = 2;
         const linalg::TruncatedSvd t = linalg::truncated_svd(v[0], o).value();
         return add(sum(t.s).value(), mul(t.discarded_weight, t.discarded_weight).value());
       }, a},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto g = grad(c.f, std::span<const EagerTensor>(&c.x, 1));
    ASSERT_TRUE(g) << g.error().to_string();
    // Directional derivative along a fixed direction vs central differences.
    const EagerTensor d = rt->from_host(Tensor::random_normal(DType::kF64, c.x.shape(), 11).value()).value();
    const double h = 1e-6;
    Context nc = Context::of(c.x).no_grad();
    auto at = [&](double t) {
      const EagerTensor xt = nc.add(c.x, nc.mul(nc.scalar(c128(t)).value(), d).value()).value();
      return item(c.f(std::span<const EagerTensor>(&xt, 1)).value()).value().real();
    };
    const double fd = (at(h) - at(-h)) / (2 * h);
    const double ad = item(sum(mul((*g)[0], d).value()).value()).value().real();
    EXPECT_NEAR(ad, fd, 1e-6 * (1 + std::abs(fd)));
  }
  // Truncated results that are not the sliced thin SVD are a typed error at backward:
  // batch items that kept different ranks, and the randomized method.
  std::vector<double> items(18, 0.0);  // column-major [2, 3, 3]: item 0 = diag(3, 2, 1), item 1 = e00
  items[0] = 3.0;
  items[8] = 2.0;
  items[16] = 1.0;
  items[1] = 1.0;
  const Tensor batch = Tensor::from_col_major<double>({2, 3, 3}, items).value();
  linalg::TruncatedSvdOptions cut;
  cut.rel_cutoff = 1e-6;
  auto xb = requires_grad(rt->from_host(batch).value()).value();
  auto tb = linalg::truncated_svd(xb, cut).value();
  auto rb = backward(sum(tb.s).value());
  ASSERT_FALSE(rb);
  EXPECT_EQ(rb.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(rb.error().message().find("different ranks"), std::string::npos) << rb.error().message();
  linalg::TruncatedSvdOptions randomized;
  randomized.max_rank = 2;
  randomized.method = tenferro::linalg::TruncatedSvdMethod::kRandomized;
  auto x = requires_grad(a).value();
  auto rr = backward(sum(linalg::truncated_svd(x, randomized).value().s).value());
  ASSERT_FALSE(rr);
  EXPECT_EQ(rr.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(grad_of(x).defined());
}

// Note [Norm at zero]: the gradient of a vector norm (ord >= 1) at the zero vector is 0,
// not NaN; rows that are zero get 0 next to rows that are not.
TEST(LinalgEager, VectorNormGradientAtZeroIsZero) {
  auto rt = EagerRuntime::create().value();
  for (DType dt : {DType::kF64, DType::kC128}) {
    for (double ord : {2.0, 3.0, 1.0, HUGE_VAL}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " ord " + std::to_string(ord));
      const EagerTensor z = rt->from_host(Tensor::zeros(dt, {2, 3}).value()).value();
      const EagerFn f = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
        TENFERRO_TRY(EagerTensor n, linalg::vector_norm(v[0], ord, {1}));
        return sum(n);
      };
      auto g = grad(f, std::span<const EagerTensor>(&z, 1));
      ASSERT_TRUE(g) << g.error().to_string();
      const Tensor t = (*g)[0].tensor();
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(t.get_as_c128({i, j}).value(), c128(0.0)) << i << "," << j;
      }
    }
  }
  // A zero row next to the row (3, 4, 0): the latter's gradient is x / |x| (2-norm).
  const EagerTensor x = rt->from_values<double>({2, 3}, {0.0, 0.0, 0.0, 3.0, 4.0, 0.0}).value();
  auto g = grad([](std::span<const EagerTensor> v) { return sum(linalg::vector_norm(v[0], 2.0, {1}).value()); },
                std::span<const EagerTensor>(&x, 1));
  ASSERT_TRUE(g) << g.error().to_string();
  const Tensor t = (*g)[0].tensor();
  const double want[2][3] = {{0.0, 0.0, 0.0}, {0.6, 0.8, 0.0}};
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_NEAR(t.get<double>({i, j}).value(), want[i][j], 1e-15);
  }
}

// A traced call whose integer result has no program form (truncated_svd's rank) is a
// typed error when a program needs it, not an exception; its other results trace.
TEST(LinalgEager, TracedResultWithoutAProgramFormIsATypedError) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_host(Tensor::random_normal(DType::kF64, {5, 4}, 3).value()).value();
  const EagerTensor x = trace_input(a).value();
  linalg::TruncatedSvdOptions o;
  o.max_rank = 2;
  const linalg::TruncatedSvd t = linalg::truncated_svd(x, o).value();
  const EagerTensor in[] = {x};
  const EagerTensor rank[] = {t.rank};
  auto bad = program_of(rank, in);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(bad.error().message().find("no program form"), std::string::npos) << bad.error().message();
  const EagerTensor s[] = {t.s};
  EXPECT_TRUE(program_of(s, in)) << program_of(s, in).error().to_string();
}

// Note [Eager lstsq derivative]: gradients of lstsq's solution, residuals and singular
// values in A and in B against central differences: tall (residuals), wide
// (minimum-norm), vector B, a batch, complex, and a rank cut by rcond.
TEST(LinalgEager, LstsqGradientsMatchFiniteDifferences) {
  auto rt = EagerRuntime::create().value();
  auto random = [&](DType dt, Shape shape, uint64_t seed) {
    return rt->from_host(Tensor::random_normal(dt, shape, seed).value()).value();
  };
  // 5 x 3 matrices Q1 diag(s) Q2^T with singular values 3, 1 and 0 (rank 2) or 1e-3: rcond
  // 1e-2 drops the last one, so the function is the truncated solution (Note [Eager pinv
  // cut]: the derivative couples kept and dropped vectors when the dropped value is not 0).
  Context nc = Context::of(random(DType::kF64, {1}, 1)).no_grad();
  const EagerTensor q1 = linalg::qr(random(DType::kF64, {5, 3}, 2)).value().q;
  const EagerTensor q2 = linalg::qr(random(DType::kF64, {3, 3}, 3)).value().q;
  const EagerTensor sv = rt->from_values<double>({1, 3}, {3.0, 1.0, 0.0}).value();
  const EagerTensor graded = nc.matmul(nc.mul(q1, sv).value(), nc.transpose(q2).value()).value();
  const EagerTensor sv_cut = rt->from_values<double>({1, 3}, {3.0, 1.0, 1e-3}).value();
  const EagerTensor cut = nc.matmul(nc.mul(q1, sv_cut).value(), nc.transpose(q2).value()).value();
  struct Case {
    const char* name;
    EagerTensor a, b;
    std::optional<double> rcond;
    bool residuals;
  };
  const std::vector<Case> cases = {
      {"tall, matrix B", random(DType::kF64, {5, 3}, 4), random(DType::kF64, {5, 2}, 5), std::nullopt, true},
      {"tall, vector B", random(DType::kF64, {5, 3}, 6), random(DType::kF64, {5}, 7), std::nullopt, true},
      {"wide (minimum norm)", random(DType::kF64, {3, 5}, 8), random(DType::kF64, {3, 2}, 9), std::nullopt, false},
      {"batch, vector B", random(DType::kF64, {2, 5, 3}, 10), random(DType::kF64, {2, 5}, 11), std::nullopt, true},
      {"complex", random(DType::kC128, {4, 2}, 12), random(DType::kC128, {4, 3}, 13), std::nullopt, true},
      {"rank 2 by rcond", graded, random(DType::kF64, {5, 2}, 14), 1e-2, false},
      {"a nonzero value dropped by rcond", cut, random(DType::kF64, {5, 2}, 15), 1e-2, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const EagerFn f = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
      TENFERRO_TRY(linalg::Lstsq r, linalg::lstsq(v[0], v[1], c.rcond));
      EXPECT_EQ(r.residuals.numel() > 0, c.residuals);
      TENFERRO_TRY(EagerTensor xx, mul(r.solution, conj(r.solution).value()));
      TENFERRO_TRY(EagerTensor t, sum(real(xx).value()));
      TENFERRO_TRY(t, add(t, sum(r.residuals).value()));
      return add(t, sum(mul(r.singular_values, r.singular_values).value()).value());
    };
    const EagerTensor xs[] = {c.a, c.b};
    auto g = grad(f, xs);
    ASSERT_TRUE(g) << g.error().to_string();
    for (size_t k = 0; k < 2; ++k) {
      SCOPED_TRACE(k == 0 ? "A" : "B");
      ASSERT_EQ((*g)[k].shape(), xs[k].shape());
      const EagerTensor d = random(xs[k].dtype(), xs[k].shape(), 30 + k);
      const double h = 1e-6;
      auto at = [&](double t) {
        EagerTensor moved[] = {xs[0], xs[1]};
        moved[k] = nc.add(xs[k], nc.mul(nc.scalar(c128(t), d.dtype()).value(), d).value()).value();
        return item(f(moved).value()).value().real();
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      // Re <g, d>: the gradient of a real loss in a complex input is dL/dRe + i dL/dIm.
      const double ad = item(sum(real(mul(conj((*g)[k]).value(), d).value()).value()).value()).value().real();
      EXPECT_NEAR(ad, fd, 1e-5 * (1 + std::abs(fd)));
    }
  }
  // The integer rank has no program form: a typed error when a traced program needs it.
  const EagerTensor x = trace_input(cases[0].a).value();
  const linalg::Lstsq r = linalg::lstsq(x, cases[0].b).value();
  const EagerTensor in[] = {x};
  const EagerTensor rank[] = {r.rank};
  auto bad = program_of(rank, in);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kUnsupported);
  const EagerTensor sol[] = {r.solution};
  EXPECT_TRUE(program_of(sol, in));
}

// Note [Eager pinv cut]: pinv with a cutoff that drops nonzero singular values, per batch
// item (one item drops 1e-3, the other keeps 0.5), real and complex: gradients against
// central differences (the locally-constant-rank rule alone is off by ~1e-3 here).
TEST(LinalgEager, PinvGradientWithANonzeroCutMatchesFiniteDifferences) {
  auto rt = EagerRuntime::create().value();
  Context nc = Context::of(rt->from_values<double>({1}, {0.0}).value()).no_grad();
  auto graded = [&](DType dt, std::vector<double> s, uint64_t seed) {
    const EagerTensor q1 = linalg::qr(rt->from_host(Tensor::random_normal(dt, {5, 3}, seed).value()).value()).value().q;
    const EagerTensor q2 =
        linalg::qr(rt->from_host(Tensor::random_normal(dt, {3, 3}, seed + 1).value()).value()).value().q;
    const EagerTensor sv = nc.astype(rt->from_values<double>({1, 3}, s).value(), dt).value();
    return nc.matmul(nc.mul(q1, sv).value(), nc.conj(nc.transpose(q2).value()).value()).value();
  };
  for (DType dt : {DType::kF64, DType::kC128}) {
    SCOPED_TRACE(dtype_name(dt));
    const EagerTensor a0 = graded(dt, {3.0, 1.0, 1e-3}, 3), a1 = graded(dt, {2.0, 1.0, 0.5}, 5);
    const EagerTensor a =
        nc.concatenate({nc.reshape(a0, {1, 5, 3}).value(), nc.reshape(a1, {1, 5, 3}).value()}, 0).value();
    const EagerTensor w = rt->from_host(Tensor::random_normal(dt, {2, 3, 5}, 9).value()).value();
    const EagerFn f = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
      TENFERRO_TRY(EagerTensor x, linalg::pinv(v[0], 1e-2));
      TENFERRO_TRY(EagerTensor p, mul(x, w));
      return sum(real(p).value());
    };
    auto g = grad(f, std::span<const EagerTensor>(&a, 1));
    ASSERT_TRUE(g) << g.error().to_string();
    const EagerTensor d = rt->from_host(Tensor::random_normal(dt, a.shape(), 11).value()).value();
    const double h = 1e-6;
    auto at = [&](double t) {
      const EagerTensor moved = nc.add(a, nc.mul(nc.scalar(c128(t), dt).value(), d).value()).value();
      return item(f(std::span<const EagerTensor>(&moved, 1)).value()).value().real();
    };
    const double fd = (at(h) - at(-h)) / (2 * h);
    const double ad = item(sum(real(mul(conj((*g)[0]).value(), d).value()).value()).value()).value().real();
    EXPECT_NEAR(ad, fd, 1e-6 * (1 + std::abs(fd)));
  }
}

// Note [Solver program forms]: gradients of solve and triangular_solve where the native
// call broadcasts batch axes or takes a vector B have their inputs' shapes and match
// central differences in A and in B.
TEST(LinalgEager, SolverGradientsWithBroadcastBatchesAndVectorsMatchFiniteDifferences) {
  auto rt = EagerRuntime::create().value();
  // Random matrices [.., n, n] plus 4 on the diagonal (well conditioned), column-major.
  auto matrices = [&](Shape shape, uint64_t seed) {
    const Tensor r = Tensor::random_normal(DType::kF64, shape, seed).value();
    const int64_t n = shape[shape.size() - 1], count = r.numel();
    const Tensor flat = r.reshape_copy({count}).value();
    std::vector<double> v(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t row = (i / r.strides()[shape.size() - 2]) % n, col = (i / r.strides()[shape.size() - 1]) % n;
      v[static_cast<size_t>(i)] = flat.get<double>({i}).value() + (row == col ? 4.0 : 0.0);
    }
    return rt->from_host(Tensor::from_col_major<double>(shape, v).value()).value();
  };
  auto random = [&](Shape shape, uint64_t seed) {
    return rt->from_host(Tensor::random_normal(DType::kF64, shape, seed).value()).value();
  };
  auto total = [](const EagerTensor& t) { return sum(mul(t, t).value()); };
  linalg::TriangularOptions lower;
  lower.uplo = linalg::Uplo::kLower;
  linalg::TriangularOptions right;
  right.left = false;
  struct Case {
    const char* name;
    EagerTensor a, b;
    std::function<Result<EagerTensor>(const EagerTensor&, const EagerTensor&)> op;
  };
  auto solve = [](const EagerTensor& a, const EagerTensor& b) { return linalg::solve(a, b); };
  const std::vector<Case> cases = {
      {"solve, vector B", matrices({3, 3}, 1), random({3}, 2), solve},
      {"solve, batched A, vector B", matrices({2, 3, 3}, 3), random({3}, 4), solve},
      {"solve, A broadcast over B's batch", matrices({3, 3}, 5), random({2, 3, 2}, 6), solve},
      {"solve, B broadcast over A's batch", matrices({2, 3, 3}, 7), random({3, 2}, 8), solve},
      {"solve, both broadcast", matrices({2, 1, 3, 3}, 9), random({4, 3, 1}, 10), solve},
      {"triangular_solve lower, A broadcast", matrices({3, 3}, 11), random({2, 3, 2}, 12),
       [&](const EagerTensor& a, const EagerTensor& b) { return linalg::triangular_solve(a, b, lower); }},
      {"triangular_solve right, B broadcast", matrices({2, 2, 2}, 13), random({3, 2}, 14),
       [&](const EagerTensor& a, const EagerTensor& b) { return linalg::triangular_solve(a, b, right); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const EagerFn f = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
      TENFERRO_TRY(EagerTensor x, c.op(v[0], v[1]));
      return total(x);
    };
    const EagerTensor xs[] = {c.a, c.b};
    auto g = grad(f, xs);
    ASSERT_TRUE(g) << g.error().to_string();
    ASSERT_EQ(g->size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      SCOPED_TRACE(k == 0 ? "A" : "B");
      ASSERT_EQ((*g)[k].shape(), xs[k].shape());
      const EagerTensor d = random(xs[k].shape(), 20 + k);
      const double h = 1e-6;
      Context nc = Context::of(xs[k]).no_grad();
      auto at = [&](double t) {
        EagerTensor moved[] = {xs[0], xs[1]};
        moved[k] = nc.add(xs[k], nc.mul(nc.scalar(c128(t)).value(), d).value()).value();
        return item(f(moved).value()).value().real();
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      const double ad = item(sum(mul((*g)[k], d).value()).value()).value().real();
      EXPECT_NEAR(ad, fd, 1e-6 * (1 + std::abs(fd)));
    }
  }
}

// Note [Matrix exponential]: expm against an independent oracle. A = P D P^-1 with P unit
// upper triangular (random above the diagonal) and D diagonal, so exp(A) = P e^D P^-1,
// computed here in long double with naive loops (P^-1 by back substitution). Norms from
// 1e-3 (degree 3 unscaled) to ~60 (degree 13 with squarings), real and complex, f64 and
// f32, batched (the batch shares one scaling).
TEST(LinalgEager, ExpmMatchesTheEigenOracle) {
  auto rt = EagerRuntime::create().value();
  using CL = std::complex<long double>;
  struct Case {
    DType dtype;
    int64_t n;
    double scale;
    double tol;
  };
  const Case cases[] = {{DType::kF64, 5, 1e-3, 1e-14},  {DType::kF64, 6, 0.2, 1e-14},  {DType::kF64, 4, 1.5, 1e-14},
                        {DType::kF64, 7, 4.0, 1e-13},   {DType::kF64, 8, 20.0, 1e-12}, {DType::kC128, 6, 3.0, 1e-13},
                        {DType::kC128, 5, 60.0, 1e-11}, {DType::kF32, 6, 0.3, 2e-6},   {DType::kF32, 6, 8.0, 2e-5},
                        {DType::kC64, 4, 2.0, 2e-5}};
  uint64_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " n=" + std::to_string(c.n) + " scale=" + std::to_string(c.scale));
    const bool complex = is_complex(c.dtype);
    const int64_t n = c.n, batch = 2;
    std::vector<c128> a_vals(static_cast<size_t>(batch * n * n)), want(a_vals.size());
    std::mt19937_64 gen(seed++);
    std::normal_distribution<double> normal;
    for (int64_t b = 0; b < batch; ++b) {
      // Row-major n x n matrices in long double.
      std::vector<CL> p(static_cast<size_t>(n * n)), pinv(p.size()), d(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const CL r(0.5L * normal(gen), complex ? 0.5L * normal(gen) : 0.0L);
          p[static_cast<size_t>(i * n + j)] = i == j ? CL(1) : i < j ? r : CL(0);
        }
        d[static_cast<size_t>(i)] =
            CL(c.scale * normal(gen) / static_cast<double>(b + 1), complex ? c.scale * normal(gen) : 0.0);
      }
      // P^-1: solve P X = I column by column (back substitution; unit diagonal).
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t i = n - 1; i >= 0; --i) {
          CL v = i == col ? CL(1) : CL(0);
          for (int64_t k = i + 1; k < n; ++k)
            v -= p[static_cast<size_t>(i * n + k)] * pinv[static_cast<size_t>(k * n + col)];
          pinv[static_cast<size_t>(i * n + col)] = v;
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          CL av = 0, ev = 0;
          for (int64_t k = 0; k < n; ++k) {
            const CL pk = p[static_cast<size_t>(i * n + k)] * pinv[static_cast<size_t>(k * n + j)];
            av += pk * d[static_cast<size_t>(k)];
            ev += pk * std::exp(d[static_cast<size_t>(k)]);
          }
          // Stored as [batch, n, n] in row-major order for from_values.
          const size_t at = static_cast<size_t>((b * n + i) * n + j);
          a_vals[at] = c128(static_cast<double>(av.real()), static_cast<double>(av.imag()));
          want[at] = c128(static_cast<double>(ev.real()), static_cast<double>(ev.imag()));
        }
      }
    }
    EagerTensor wide;
    if (complex) {
      wide = rt->from_host(Tensor::from_row_major<c128>({batch, n, n}, a_vals).value()).value();
    } else {
      std::vector<double> re;
      for (const c128& v : a_vals) re.push_back(v.real());
      wide = rt->from_host(Tensor::from_row_major<double>({batch, n, n}, re).value()).value();
    }
    const EagerTensor a = astype(wide, c.dtype).value();
    const EagerTensor e = linalg::expm(a).value();
    ASSERT_EQ(e.shape(), Shape({batch, n, n}));
    ASSERT_EQ(e.dtype(), c.dtype);
    double err = 0, top = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const c128 w = want[static_cast<size_t>((b * n + i) * n + j)];
          err = std::max(err, std::abs(e.tensor().get_as_c128({b, i, j}).value() - w));
          top = std::max(top, std::abs(w));
        }
      }
    }
    EXPECT_LT(err / top, c.tol);
  }
  // Closed forms: a nilpotent matrix (the series stops), a rotation generator.
  const EagerTensor nil = rt->from_values<double>({3, 3}, {0, 1, 2, 0, 0, 3, 0, 0, 0}).value();
  const EagerTensor en = linalg::expm(nil).value();  // I + N + N^2 / 2: N^2 = [[0, 0, 3], 0, 0]
  const double want_nil[3][3] = {{1, 1, 3.5}, {0, 1, 3}, {0, 0, 1}};
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_NEAR(en.tensor().get<double>({i, j}).value(), want_nil[i][j], 1e-15);
  }
  const double t = 7.25;
  const EagerTensor rot = linalg::expm(rt->from_values<double>({2, 2}, {0, -t, t, 0}).value()).value();
  EXPECT_NEAR(rot.tensor().get<double>({0, 0}).value(), std::cos(t), 1e-14);
  EXPECT_NEAR(rot.tensor().get<double>({1, 0}).value(), std::sin(t), 1e-14);
  EXPECT_NEAR(rot.tensor().get<double>({0, 1}).value(), -std::sin(t), 1e-14);
  // Empty batches and matrices.
  EXPECT_EQ(linalg::expm(rt->context().zeros({0, 3, 3}).value()).value().shape(), Shape({0, 3, 3}));
  EXPECT_EQ(linalg::expm(rt->context().zeros({2, 0, 0}).value()).value().shape(), Shape({2, 0, 0}));
}

TEST(LinalgEager, ExpmErrorsAreTyped) {
  auto rt = EagerRuntime::create().value();
  EXPECT_EQ(linalg::expm(EagerTensor()).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(linalg::expm(rt->context().zeros({2, 3}).value()).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(linalg::expm(rt->context().zeros({3}).value()).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(linalg::expm(rt->context().zeros({2, 2}, DType::kI64).value()).error().code(), ErrorCode::kDTypeMismatch);
}

// A traced value runs the kernel's expm and records the linalg expm op: the program
// computes e^A for new inputs (other norms: other degrees and scalings) and
// differentiates through the Fréchet derivative.
TEST(LinalgEager, TracedExpmRecordsTheOp) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a0 = rt->from_values<double>({2, 2}, {0.0, -0.5, 0.5, 0.0}).value();
  const EagerTensor x = trace_input(a0).value();
  const EagerTensor e = linalg::expm(x).value();
  EXPECT_NEAR(e.tensor().get<double>({0, 0}).value(), std::cos(0.5), 1e-14);
  const EagerTensor outs[] = {e}, ins[] = {x};
  const program::CompiledGraph g = program_of(outs, ins).value();
  EXPECT_NE(program::print_program(*g.program).find("\"expm\""), std::string::npos)
      << program::print_program(*g.program);
  // Run the program on a rotation generator of angle 7 (degree 13, squarings).
  const Tensor big = Tensor::from_row_major<double>({2, 2}, {0.0, -7.0, 7.0, 0.0}).value();
  const Tensor args[] = {big};
  const auto r = program::interpret(g, args);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_NEAR((*r)[0].get<double>({0, 0}).value(), std::cos(7.0), 1e-13);
  EXPECT_NEAR((*r)[0].get<double>({1, 0}).value(), std::sin(7.0), 1e-13);
}

// The derivative through expm (the recorded approximant) against central differences,
// small norm (degree 3-9) and large (degree 13, squarings), real and complex, batched;
// and the Fréchet derivative identity exp([[A, E], [0, A]]) = [[e^A, L(A, E)], [0, e^A]]
// for the directional derivative, computed by expm itself on the 2n x 2n block.
TEST(LinalgEager, ExpmGradientsMatchFiniteDifferences) {
  auto rt = EagerRuntime::create().value();
  auto random = [&](DType dt, Shape shape, uint64_t seed) {
    return rt->from_host(Tensor::random_normal(dt, shape, seed).value()).value();
  };
  Context nc = Context::of(random(DType::kF64, {1}, 1)).no_grad();
  struct Case {
    DType dtype;
    Shape shape;
    double scale;
  };
  const Case cases[] = {{DType::kF64, {4, 4}, 0.05},
                        {DType::kF64, {2, 5, 5}, 0.6},
                        {DType::kF64, {3, 3}, 9.0},
                        {DType::kC128, {4, 4}, 0.3},
                        {DType::kC128, {2, 3, 3}, 5.0}};
  uint64_t seed = 50;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " scale=" + std::to_string(c.scale));
    const EagerTensor a = nc.mul(random(c.dtype, c.shape, seed++), nc.scalar(c128(c.scale), c.dtype).value()).value();
    const EagerTensor w = random(c.dtype, c.shape, seed++);
    const EagerFn f = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
      TENFERRO_TRY(EagerTensor e, linalg::expm(v[0]));
      TENFERRO_TRY(EagerTensor p, mul(e, w));
      return sum(real(p).value());
    };
    const EagerTensor xs[] = {a};
    auto g = grad(f, xs);
    ASSERT_TRUE(g) << g.error().to_string();
    const EagerTensor d = random(c.dtype, c.shape, seed++);
    const double h = 1e-6;
    auto at = [&](double t) {
      const EagerTensor moved[] = {nc.add(a, nc.mul(nc.scalar(c128(t), c.dtype).value(), d).value()).value()};
      return item(f(moved).value()).value().real();
    };
    const double fd = (at(h) - at(-h)) / (2 * h);
    const double ad = item(sum(real(mul(conj((*g)[0]).value(), d).value()).value()).value()).value().real();
    EXPECT_NEAR(ad, fd, 1e-6 * (1 + std::abs(fd)));
    if (c.shape.size() == 2) {
      // Re <W, L(A, D)> by the block identity.
      const int64_t n = c.shape[0];
      const EagerTensor zero = rt->context().zeros({n, n}, c.dtype).value();
      const EagerTensor top = nc.concatenate({a, d}, 1).value();
      const EagerTensor bottom = nc.concatenate({zero, a}, 1).value();
      const EagerTensor block = linalg::expm(nc.concatenate({top, bottom}, 0).value()).value();
      const EagerTensor l = nc.slice(nc.slice(block, 0, 0, n).value(), 1, n, 2 * n).value();
      const double exact = item(sum(real(mul(l, w).value()).value()).value()).value().real();
      EXPECT_NEAR(ad, exact, 1e-9 * (1 + std::abs(exact)));
    }
  }
}

}  // namespace
}  // namespace tenferro::eager
