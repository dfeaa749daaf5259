// Eager reverse mode: tape gradients against analytic values, central finite
// differences and the program transforms (random programs run eagerly op by op).

#include "tenferro/eager/autograd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tenferro/ad/ad.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/test_support/index.h"
#include "tenferro/test_support/random_program.h"
#include "tenferro/test_support/strided.h"

namespace tenferro::eager {
namespace {

std::shared_ptr<EagerRuntime> runtime() {
  static std::shared_ptr<EagerRuntime> rt = EagerRuntime::create().value();
  return rt;
}

std::vector<c128> values(const Tensor& t) {
  std::vector<c128> out;
  test_support::for_each_index(t.shape(), [&](const test_support::Index& i) {
    out.push_back(t.get_as_c128(Dims(std::span<const int64_t>(i))).value());
  });
  return out;
}
std::vector<c128> values(const EagerTensor& t) { return values(t.tensor()); }

EagerTensor random(std::mt19937_64& rng, DType d, const Shape& s, double lo = -1.0, double hi = 1.0) {
  return runtime()->from_host(test_support::strided_random(rng, d, s, lo, hi)).value();
}

// x + h v, eagerly without recording.
EagerTensor axpy(const EagerTensor& x, double h, const EagerTensor& v) {
  Context c = Context::of(x).no_grad();
  EagerTensor hv = c.mul(c.scalar(c128(h, 0.0), x.dtype()).value(), v).value();
  return c.add(x, hv).value();
}

double inner(const std::vector<c128>& a, const std::vector<c128>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (std::conj(a[i]) * b[i]).real();
  return s;
}

double scalar_value(const EagerTensor& t) { return values(t)[0].real(); }

// grad(f) at xs against central differences along random directions.
void check_grad_fd(const EagerFn& f, const std::vector<EagerTensor>& xs, uint64_t seed, const std::string& what,
                   double tol = 1e-6) {
  SCOPED_TRACE(what);
  auto g = grad(f, xs);
  ASSERT_TRUE(g) << g.error().to_string();
  std::mt19937_64 rng(seed);
  std::vector<EagerTensor> vs, xp, xm;
  double predicted = 0;
  const double h = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    EagerTensor v = random(rng, xs[i].dtype(), xs[i].shape());
    vs.push_back(v);
    predicted += inner(values((*g)[i]), values(v));
    xp.push_back(axpy(xs[i], h, v));
    xm.push_back(axpy(xs[i], -h, v));
  }
  const double fd = (scalar_value(f(xp).value()) - scalar_value(f(xm).value())) / (2 * h);
  EXPECT_NEAR(predicted, fd, tol * (1 + std::abs(fd)));
}

TEST(Autograd, SumOfMatmulMatchesTheAnalyticGradient) {
  auto rt = runtime();
  EagerTensor x = requires_grad(rt->from_values<double>({2, 3}, {1, 2, 3, 4, 5, 6}).value()).value();
  EagerTensor y = requires_grad(rt->from_values<double>({3, 2}, {1, -1, 2, 0, 0.5, 3}).value()).value();
  EagerTensor loss = sum(matmul(x, y).value()).value();
  ASSERT_TRUE(backward(loss));
  // d/dx sum(x y) = ones(2,2) y^T; d/dy = x^T ones(2,2)
  const std::vector<c128> gx = values(grad_of(x)), gy = values(grad_of(y));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 3; ++k) {
      double want = 0;
      for (int64_t j = 0; j < 2; ++j) want += item(y, {k, j}).value().real();
      EXPECT_DOUBLE_EQ(grad_of(x).tensor().get_as_c128({i, k}).value().real(), want);
    }
  }
  for (int64_t k = 0; k < 3; ++k) {
    for (int64_t j = 0; j < 2; ++j) {
      double want = 0;
      for (int64_t i = 0; i < 2; ++i) want += item(x, {i, k}).value().real();
      EXPECT_DOUBLE_EQ(grad_of(y).tensor().get_as_c128({k, j}).value().real(), want);
    }
  }
  (void)gx;
  (void)gy;
}

TEST(Autograd, GradientsAccumulateAndSavedValuesOutliveTheirHandles) {
  auto rt = runtime();
  EagerTensor x = requires_grad(rt->from_values<double>({3}, {1, 2, 3}).value()).value();
  EagerTensor loss;
  {
    EagerTensor sq = x * x;        // dropped at scope end; the record keeps it
    EagerTensor e = exp(sq).value();
    loss = sum(e).value();
  }
  ASSERT_TRUE(backward(loss));
  ASSERT_TRUE(backward(loss));
  const std::vector<c128> g = values(grad_of(x));
  for (int i = 0; i < 3; ++i) {
    const double xi = i + 1.0;
    EXPECT_NEAR(g[static_cast<size_t>(i)].real(), 2 * 2 * xi * std::exp(xi * xi), 1e-9 * std::exp(xi * xi));
  }
  zero_grad(x);
  EXPECT_FALSE(grad_of(x).defined());
}

// Note [Tape teardown]: a chain of 300 000 records (a long loop) is freed without one
// nested destructor call per record (which overflowed the stack), and a record another
// handle still holds survives the teardown with its operands and its gradient path.
TEST(Autograd, LongChainsAreFreedWithoutRecursion) {
  auto rt = runtime();
  EagerTensor x = requires_grad(rt->from_values<double>({2}, {1, 2}).value()).value();
  EagerTensor kept;
  {
    EagerTensor y = x;
    for (int i = 0; i < 300000; ++i) {
      y = y * 1.0;
      if (i == 10) kept = y;
    }
    ASSERT_TRUE(backward(sum(y).value()));
  }  // the chain's end is dropped here; the first 11 records stay with `kept`
  const std::vector<c128> g = values(grad_of(x));
  EXPECT_EQ(g[0].real(), 1.0);
  EXPECT_EQ(g[1].real(), 1.0);
  zero_grad(x);
  ASSERT_TRUE(backward(sum(kept * kept).value()));  // d/dx sum(x^2) = 2 x through the kept records
  const std::vector<c128> g2 = values(grad_of(x));
  EXPECT_EQ(g2[0].real(), 2.0);
  EXPECT_EQ(g2[1].real(), 4.0);
}

// Note [Gradient accumulation]: an accumulator nobody else holds grows in place; one a
// caller holds is never written (the caller's tensor keeps its values).
TEST(Autograd, AccumulationNeverWritesAHeldGradient) {
  auto rt = runtime();
  EagerTensor x = requires_grad(rt->from_values<double>({2}, {1, 2}).value()).value();
  auto step = [&] { ASSERT_TRUE(backward(sum(mul(x, x).value()).value())); };  // d/dx = 2x = [2, 4]
  step();
  const void* first = grad_of(x).tensor().storage()->data();
  step();  // in place: nothing holds the buffer
  EXPECT_EQ(grad_of(x).tensor().storage()->data(), first);
  EXPECT_EQ(values(grad_of(x)), (std::vector<c128>{4, 8}));
  const EagerTensor held = grad_of(x);
  step();  // `held` shares the buffer: a new one
  EXPECT_EQ(values(held), (std::vector<c128>{4, 8}));
  EXPECT_EQ(values(grad_of(x)), (std::vector<c128>{6, 12}));
  EXPECT_NE(grad_of(x).tensor().storage().get(), held.tensor().storage().get());
  for (BackwardRoute route : {BackwardRoute::kReplay, BackwardRoute::kDirect}) {
    ASSERT_TRUE(backward(sum(mul(x, x).value()).value(), {}, route));
  }
  EXPECT_EQ(values(grad_of(x)), (std::vector<c128>{10, 20}));
}

TEST(Autograd, UntracedAndNoGradCallsRecordNothing) {
  auto rt = runtime();
  EagerTensor a = rt->from_values<double>({2}, {1, 2}).value();
  EXPECT_FALSE(requires_grad_of(a + a));
  EagerTensor x = requires_grad(a).value();
  EXPECT_TRUE(requires_grad_of(x + a));
  EXPECT_FALSE(requires_grad_of(Context::of(x).no_grad().add(x, a).value()));
  EXPECT_FALSE(requires_grad_of(detach(x) + a));
  EXPECT_FALSE(requires_grad_of(lt(x, a).value()));  // bool results never record
}

TEST(Autograd, BinaryAndNaryEinsumGiveTheSameGradients) {
  std::mt19937_64 rng(11);
  std::vector<EagerTensor> xs = {random(rng, DType::kF64, {2, 3}), random(rng, DType::kF64, {3, 4}),
                                 random(rng, DType::kF64, {4, 2})};
  EagerFn nary = [](std::span<const EagerTensor> v) { return einsum("ij,jk,ki->", {v[0], v[1], v[2]}); };
  EagerFn binary = [](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    TENFERRO_TRY(EagerTensor ab, einsum("ij,jk->ik", {v[0], v[1]}));
    return einsum("ik,ki->", {ab, v[2]});
  };
  auto g1 = grad(nary, xs).value(), g2 = grad(binary, xs).value();
  for (size_t i = 0; i < 3; ++i) {
    const auto a = values(g1[i]), b = values(g2[i]);
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k].real(), b[k].real(), 1e-12);
  }
  check_grad_fd(nary, xs, 5, "nary einsum");
}

TEST(Autograd, ViewsBroadcastingReductionsAndComplex) {
  std::mt19937_64 rng(21);
  uint64_t seed = 100;
  auto x = random(rng, DType::kF64, {3, 4});
  auto y = random(rng, DType::kF64, {4});
  auto z = random(rng, DType::kC128, {3, 3});
  auto w = random(rng, DType::kF64, {3});
  auto sq = [](const EagerTensor& t) -> Result<EagerTensor> { return sum(mul(t, t).value()); };
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(permute(v[0], {1, 0}).value() * v[1]); }, {x, w},
                seed++, "permute broadcast mul");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(reshape(v[0], {2, 6}).value()); }, {x}, seed++, "reshape");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(slice(v[0], 1, 3, 0, -2).value()); }, {x}, seed++,
                "negative-step slice");
  // Steps at the int64 limits take one element (no overflow forming the recorded slice).
  check_grad_fd(
      [&](std::span<const EagerTensor> v) {
        return sq(slice(v[0], 1, 3, -1, std::numeric_limits<int64_t>::min()).value());
      },
      {x}, seed++, "INT64_MIN-step slice");
  check_grad_fd(
      [&](std::span<const EagerTensor> v) {
        return sq(slice(v[0], 0, 1, 3, std::numeric_limits<int64_t>::max()).value());
      },
      {x}, seed++, "INT64_MAX-step slice");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(diagonal(v[0]).value()); }, {x}, seed++, "diagonal");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(flip(v[0], {0}).value() + 1.0); }, {x}, seed++, "flip");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(broadcast_to(v[0], {3, 4}).value()); }, {y}, seed++,
                "broadcast_to");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(amax(v[0], {1}, true).value()); }, {x}, seed++, "amax");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(mean(v[0], {0}).value()); }, {x}, seed++, "mean");
  check_grad_fd([&](std::span<const EagerTensor> v) { return sq(tanh(matmul(v[0], v[1]).value()).value()); }, {x, y},
                seed++, "matrix-vector matmul");
  check_grad_fd(
      [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
        TENFERRO_TRY(EagerTensor p, matmul(v[0], conj(v[0]).value()));
        TENFERRO_TRY(EagerTensor r, real(p));
        TENFERRO_TRY(EagerTensor i, imag(p));
        return sum(add(mul(r, r).value(), mul(i, i).value()).value());
      },
      {z}, seed++, "complex matmul, real and imag views");
  check_grad_fd(
      [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
        EagerTensor zero = Context::of(v[0]).zeros({3, 4}).value();
        EagerTensor sel = where(gt(v[0], zero).value(), v[0], exp(v[0]).value()).value();
        return sq(contiguous(sel).value());
      },
      {x}, seed++, "where");
}

// Note [Eager direct backward]: every op with a direct rule, real and complex, with
// broadcasting and strided inputs: the direct route equals the replay route and finite
// differences, and the default takes the direct route.
TEST(Autograd, DirectRulesEqualReplayAndFiniteDifferences) {
  std::mt19937_64 rng(41);
  uint64_t seed = 500;
  for (DType d : {DType::kF64, DType::kC128}) {
    SCOPED_TRACE(dtype_name(d));
    auto a = random(rng, d, {3, 4});
    auto b = random(rng, d, {4});
    auto m = random(rng, d, {4, 2});
    auto p = random(rng, d, {3, 1}, 0.5, 2.0);  // positive real part (log, sqrt, division)
    // A real loss of a complex tensor: sum |t|^2 through real and imag views.
    auto sq = [](const EagerTensor& t) -> Result<EagerTensor> {
      TENFERRO_TRY(EagerTensor r, real(t));
      TENFERRO_TRY(EagerTensor i, imag(t));
      TENFERRO_TRY(EagerTensor s, add(mul(r, r).value(), mul(i, i).value()));
      return sum(s);
    };
    const std::vector<std::pair<std::string, EagerFn>> cases = {
        {"add sub broadcast", [&](std::span<const EagerTensor> v) { return sq(sub(add(v[0], v[1]).value(), v[2]).value()); }},
        {"mul div broadcast", [&](std::span<const EagerTensor> v) { return sq(div(mul(v[0], v[1]).value(), v[2]).value()); }},
        {"neg conj exp", [&](std::span<const EagerTensor> v) { return sq(exp(conj(neg(v[0]).value()).value()).value()); }},
        {"log sqrt", [&](std::span<const EagerTensor> v) { return sq(mul(log(v[2]).value(), sqrt(v[2]).value()).value()); }},
        {"sin cos tanh", [&](std::span<const EagerTensor> v) {
           return sq(add(sin(v[0]).value(), mul(cos(v[0]).value(), tanh(v[1]).value()).value()).value());
         }},
        {"matmul permute", [&](std::span<const EagerTensor> v) {
           return sq(matmul(permute(v[3], {1, 0}).value(), permute(v[0], {1, 0}).value()).value());
         }},
        {"sum axes keep, mean, reshape", [&](std::span<const EagerTensor> v) {
           EagerTensor s = sum(v[0], {1}, true).value();
           EagerTensor t = mean(reshape(v[0], {2, 6}).value(), {0}).value();
           return add(sq(mul(s, v[2]).value()).value(), sq(t).value());
         }},
        {"broadcast_to, astype", [&](std::span<const EagerTensor> v) {
           return sq(astype(broadcast_to(v[1], {3, 4}).value(), v[1].dtype()).value() * v[0]);
         }},
        {"repeated operand", [&](std::span<const EagerTensor> v) { return sq(mul(v[0], v[0]).value() + v[0]); }},
        {"einsum", [&](std::span<const EagerTensor> v) {
           const EagerTensor ops[3] = {v[0], v[3], v[2]};
           return sq(Context::of(v[0]).einsum("ij,jk,il->ikl", ops).value());
         }},
        {"einsum with ellipsis and a shared operand", [&](std::span<const EagerTensor> v) {
           const EagerTensor ops[2] = {v[0], v[0]};
           return sq(Context::of(v[0]).einsum("i...,k...->ik...", ops).value());
         }},
    };
    const std::vector<EagerTensor> xs = {a, b, p, m};
    for (const auto& [what, f] : cases) {
      SCOPED_TRACE(what);
      std::vector<EagerTensor> leaves;
      for (const EagerTensor& x : xs) leaves.push_back(requires_grad(x).value());
      auto route = explain_backward(f(leaves).value());
      ASSERT_TRUE(route) << route.error().to_string();
      EXPECT_EQ(route->route, BackwardRoute::kDirect) << route->reason;
      auto direct = grad(f, xs, BackwardRoute::kDirect);
      auto replayed = grad(f, xs, BackwardRoute::kReplay);
      ASSERT_TRUE(direct) << direct.error().to_string();
      ASSERT_TRUE(replayed) << replayed.error().to_string();
      for (size_t i = 0; i < xs.size(); ++i) {
        EXPECT_TRUE((*direct)[i].tensor().is_contiguous());
        const auto u = values((*direct)[i]), w = values((*replayed)[i]);
        ASSERT_EQ(u.size(), w.size());
        for (size_t k = 0; k < u.size(); ++k) {
          EXPECT_NEAR(std::abs(u[k] - w[k]), 0.0, 1e-12 * (1 + std::abs(w[k]))) << "input " << i << " element " << k;
        }
      }
      check_grad_fd(f, xs, seed++, "finite differences");
    }
  }
}

// atan2 has no direct rule: its gradient replays the program rule, (x dy - y dx) / r^2,
// with broadcasting, against finite differences and the analytic derivative.
TEST(Autograd, Atan2GradientsMatchTheAnalyticDerivative) {
  std::mt19937_64 rng(43);
  auto y = random(rng, DType::kF64, {3, 4});
  auto x = random(rng, DType::kF64, {4}, -2.0, -0.5);  // x < 0: both sides of the cut in y
  const EagerFn f = [](std::span<const EagerTensor> v) { return sum(atan2(v[0], v[1]).value()); };
  const std::vector<EagerTensor> xs = {y, x};
  check_grad_fd(f, xs, 600, "atan2");
  auto g = grad(f, xs);
  ASSERT_TRUE(g) << g.error().to_string();
  const auto yv = values(y), xv = values(x), gy = values((*g)[0]), gx = values((*g)[1]);
  std::vector<c128> want_gx(4, c128(0, 0));
  for (size_t k = 0; k < yv.size(); ++k) {  // column-major: the column is k / 3
    const double yk = yv[k].real(), xk = xv[k / 3].real(), r2 = xk * xk + yk * yk;
    EXPECT_NEAR(gy[k].real(), xk / r2, 1e-13);
    want_gx[k / 3] += -yk / r2;
  }
  for (size_t j = 0; j < 4; ++j) EXPECT_NEAR(gx[j].real(), want_gx[j].real(), 1e-13);
}

// sort's gradient is the cotangent sent back to where each element came from (a gather's
// adjoint), against finite differences and that scatter.
TEST(Autograd, SortGradientsReturnToTheSortedPositions) {
  std::mt19937_64 rng(47);
  auto x = random(rng, DType::kF64, {4, 6});
  auto w = random(rng, DType::kF64, {4, 6});
  for (int64_t axis : {0, 1}) {
    const EagerFn f = [&](std::span<const EagerTensor> v) { return sum(mul(sort(v[0], axis).value(), w).value()); };
    const std::vector<EagerTensor> xs = {x};
    check_grad_fd(f, xs, 700 + static_cast<uint64_t>(axis), "sort");
    auto g = grad(f, xs);
    ASSERT_TRUE(g) << g.error().to_string();
    const Tensor order = argsort(x, axis).value().tensor();
    test_support::for_each_index(Shape{4, 6}, [&](const test_support::Index& i) {
      test_support::Index from = i;
      from[static_cast<size_t>(axis)] = order.get<int64_t>(i).value();
      EXPECT_NEAR((*g)[0].tensor().get_as_c128(from).value().real(), w.tensor().get_as_c128(i).value().real(), 1e-15);
    });
  }
}

// Einsums outside the direct rule's conditions (a label summed within one operand, a
// repeated label, a broadcast operand) replay, with the same gradients as the program
// transforms and finite differences.
TEST(Autograd, EinsumsWithoutADirectRuleReplay) {
  std::mt19937_64 rng(43);
  uint64_t seed = 700;
  auto a = random(rng, DType::kC128, {3, 3});
  auto b = random(rng, DType::kC128, {3, 1});
  auto sq = [](const EagerTensor& t) -> Result<EagerTensor> {
    TENFERRO_TRY(EagerTensor m, mul(conj(t).value(), t));
    return sum(real(m).value());
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ij,jk->k", "summed within one operand"}, {"ii,ik->k", "repeated label"}, {"ij,ij->ij", "broadcast operand"}};
  for (const auto& [sub, what] : cases) {
    SCOPED_TRACE(what);
    EagerFn f = [&, sub = sub](std::span<const EagerTensor> v) {
      const EagerTensor ops[2] = {v[0], v[1]};
      return sq(Context::of(v[0]).einsum(sub, ops).value());
    };
    const std::vector<EagerTensor> xs = {a, b};
    std::vector<EagerTensor> leaves = {requires_grad(a).value(), requires_grad(b).value()};
    EXPECT_EQ(explain_backward(f(leaves).value()).value().route, BackwardRoute::kReplay);
    check_grad_fd(f, xs, seed++, "finite differences");
  }
}

TEST(Autograd, BackwardRouteDecision) {
  EXPECT_EQ(decide_backward_route(BackwardRoute::kAuto, nullptr).route, BackwardRoute::kDirect);
  const BackwardDecision replay = decide_backward_route(BackwardRoute::kAuto, "slice");
  EXPECT_EQ(replay.route, BackwardRoute::kReplay);
  EXPECT_NE(replay.reason.find("slice"), std::string::npos);
  EXPECT_EQ(decide_backward_route(BackwardRoute::kReplay, nullptr).route, BackwardRoute::kReplay);
  EXPECT_EQ(decide_backward_route(BackwardRoute::kDirect, nullptr).route, BackwardRoute::kDirect);
  EXPECT_EQ(decide_backward_route(BackwardRoute::kDirect, "slice").route, BackwardRoute::kReplay);
  // A tape with a record without a direct rule: auto replays, a direct request is a typed error
  // that accumulates nothing; backward by either route accumulates the same gradient.
  auto rt = runtime();
  EagerTensor x = requires_grad(rt->from_values<double>({4}, {1, -2, 3, 0.5}).value()).value();
  EagerTensor loss = sum(mul(slice(x, 0, 0, 4, 2).value(), slice(x, 0, 1, 4, 2).value()).value()).value();
  EXPECT_EQ(explain_backward(loss).value().route, BackwardRoute::kReplay);
  auto refused = backward(loss, {}, BackwardRoute::kDirect);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.error().message().find("slice"), std::string::npos) << refused.error().message();
  EXPECT_FALSE(grad_of(x).defined());
  ASSERT_TRUE(backward(loss));
  EXPECT_EQ(values(grad_of(x)), (std::vector<c128>{-2, 1, 0.5, 3}));
  // The direct route on a direct-only tape accumulates onto it.
  EagerTensor loss2 = sum(mul(x, x).value()).value();
  ASSERT_TRUE(backward(loss2, {}, BackwardRoute::kDirect));
  EXPECT_EQ(values(grad_of(x)), (std::vector<c128>{0, -3, 6.5, 4}));
}

// Note [Eager trace]: a function recorded from trace inputs becomes a program that gives
// the function's values on other inputs, including the parts that pass through bool and
// integer values and no_grad calls; tensors without a record are constants.
TEST(Autograd, ProgramOfATracedFunctionRunsOnNewInputs) {
  auto rt = runtime();
  std::mt19937_64 rng(61);
  const EagerTensor w = random(rng, DType::kF64, {3, 2});  // a constant of the function
  auto f = [&](const EagerTensor& x, const EagerTensor& k) -> std::vector<EagerTensor> {
    Context c = Context::of(x);
    EagerTensor mask = gt(x, c.zeros(x.shape()).value()).value();  // bool, from the input
    EagerTensor relu = where(mask, x, c.zeros(x.shape()).value()).value();
    EagerTensor n = c.no_grad().sum(relu, {1}, true).value();  // recorded while tracing
    EagerTensor scaled = mul(relu, add(n, c.scalar(c128(1.0)).value()).value()).value();
    EagerTensor counted = astype(k, DType::kF64).value();  // an integer input
    return {matmul(scaled, w).value(), sum(mul(counted, x).value()).value(), astype(mask, DType::kI64).value()};
  };
  const EagerTensor x0 = random(rng, DType::kF64, {4, 3});
  const EagerTensor k0 = rt->from_values<int64_t>({4, 3}, std::vector<int64_t>(12, 2)).value();
  const std::vector<EagerTensor> leaves = {trace_input(x0).value(), trace_input(k0).value()};
  const std::vector<EagerTensor> traced = f(leaves[0], leaves[1]);
  auto g = program_of(traced, leaves);
  ASSERT_TRUE(g) << g.error().to_string();
  int64_t arguments = 0;  // x and k; w and the zeros and ones are captured constants
  for (const auto& in : g->program->inputs()) arguments += in.binding ? 0 : 1;
  EXPECT_EQ(arguments, 2);
  for (uint64_t trial = 0; trial < 3; ++trial) {
    const EagerTensor x1 = random(rng, DType::kF64, {4, 3});
    std::vector<int64_t> ks(12);
    for (int64_t i = 0; i < 12; ++i) ks[static_cast<size_t>(i)] = static_cast<int64_t>((i * 7 + trial) % 5) - 2;
    const EagerTensor k1 = rt->from_values<int64_t>({4, 3}, ks).value();
    const std::vector<EagerTensor> expected = f(x1, k1);
    const std::vector<Tensor> args = {x1.tensor(), k1.tensor()};
    auto got = rt->runtime().run(*g, args);
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_EQ(got->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ((*got)[i].dtype(), expected[i].dtype());
      const auto a = values((*got)[i]), b = values(expected[i]);
      ASSERT_EQ(a.size(), b.size());
      for (size_t e = 0; e < a.size(); ++e) EXPECT_NEAR(std::abs(a[e] - b[e]), 0.0, 1e-12) << i << " " << e;
    }
  }
  // Outputs without a record are constants; inputs must be distinct leaves.
  const EagerTensor outs[1] = {w};
  auto constant = program_of(outs, leaves);
  ASSERT_TRUE(constant) << constant.error().to_string();
  EXPECT_EQ(constant->program->outputs().size(), 1u);
  const EagerTensor twice[2] = {leaves[0], leaves[0]};
  EXPECT_EQ(program_of(traced, twice).error().code(), ErrorCode::kInvalidArgument);
  const EagerTensor not_leaf[1] = {traced[0]};
  EXPECT_EQ(program_of(traced, not_leaf).error().code(), ErrorCode::kInvalidArgument);
  // A plain AD leaf: bool results still record nothing (Note [Eager tape]).
  EagerTensor x = requires_grad(x0).value();
  EXPECT_FALSE(requires_grad_of(gt(x, x0).value()));
}

// A traced contiguous copy (of a transposed view) records a program whose value is the
// copy's; it recursed without end before (its untraced form was asked for through a
// no_grad context, which still records a traced input).
TEST(Autograd, TracedContiguousCopyIsAProgramOfItsInput) {
  std::mt19937_64 rng(67);
  const EagerTensor x0 = random(rng, DType::kF64, {3, 4});
  const EagerTensor leaf = trace_input(x0).value();
  const Context c = Context::of(leaf);
  const EagerTensor copied = c.contiguous(c.permute(leaf, {1, 0}).value()).value();
  const EagerTensor outs[] = {mul(copied, copied).value()};
  auto g = program_of(outs, std::span<const EagerTensor>(&leaf, 1));
  ASSERT_TRUE(g) << g.error().to_string();
  const EagerTensor x1 = random(rng, DType::kF64, {3, 4});
  const Tensor args[] = {x1.tensor()};
  auto ran = program::interpret(*g, args);
  ASSERT_TRUE(ran) << ran.error().to_string();
  ASSERT_EQ((*ran)[0].shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const double v = x1.tensor().get<double>({i, j}).value();
      EXPECT_NEAR((*ran)[0].get<double>({j, i}).value(), v * v, 1e-15) << i << " " << j;
    }
  }
  // The tape through contiguous: d sum(copy(x^T) * w) / dx = w^T.
  const EagerTensor x = requires_grad(x0).value();
  const EagerTensor w = random(rng, DType::kF64, {4, 3});
  const Context cx = Context::of(x);
  ASSERT_TRUE(backward(sum(mul(cx.contiguous(cx.permute(x, {1, 0}).value()).value(), w).value()).value()));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_NEAR(grad_of(x).tensor().get<double>({i, j}).value(), w.tensor().get<double>({j, i}).value(), 1e-15);
    }
  }
}

// Runs `p` eagerly op by op (core ops through Context::core, einsum through einsum).
Result<std::vector<EagerTensor>> run_eagerly(const program::CompiledGraph& g, std::span<const EagerTensor> args) {
  const auto& p = *g.program;
  std::vector<EagerTensor> val(p.value_count());
  size_t a = 0, nb = 0;
  for (const auto& in : p.inputs()) {
    if (in.binding) {
      TENFERRO_TRY(val[static_cast<size_t>(in.value.index())], runtime()->from_host(g.bindings.tensors[nb++]));
    } else {
      val[static_cast<size_t>(in.value.index())] = args[a++];
    }
  }
  Context c = runtime()->context();
  for (const auto& op : p.ops()) {
    std::vector<EagerTensor> ins;
    for (auto v : op.operands()) ins.push_back(val[static_cast<size_t>(v.index())]);
    EagerTensor out;
    if (op.code() == program::OpCode::kConstant) {
      const program::Literal& l = *op.attrs().literal;
      std::vector<c128> xs;
      for (int64_t i = 0; i < l.element_count(); ++i) xs.push_back(l.element_as_c128(i));
      TENFERRO_TRY(out, c.full(Dims(std::span<const int64_t>(l.shape)), xs.empty() ? c128() : xs[0], l.dtype));
      if (xs.size() > 1) {  // integer index tensors of the generator
        std::vector<int64_t> ints;
        for (const c128& z : xs) ints.push_back(static_cast<int64_t>(z.real()));
        TENFERRO_TRY(Tensor t, Tensor::from_col_major<int64_t>(Dims(std::span<const int64_t>(l.shape)), ints));
        TENFERRO_TRY(out, runtime()->from_host(std::move(t)));
      }
    } else if (op.code() == program::OpCode::kExtension) {
      const auto* e = dynamic_cast<const einsum::EinsumOp*>(op.extension());
      if (!e) return usage_error(ErrorCode::kUnsupported, "run_eagerly", "extension");
      TENFERRO_TRY(out, c.einsum(e->subscripts(), ins));
    } else {
      TENFERRO_TRY(out, c.core(op.code(), ins, op.attrs()));
    }
    val[static_cast<size_t>(op.results()[0].index())] = out;
  }
  std::vector<EagerTensor> outs;
  for (auto v : p.outputs()) outs.push_back(val[static_cast<size_t>(v.index())]);
  return outs;
}

TEST(Autograd, RandomProgramsEagerTapeEqualsProgramTransform) {
  const ad::AdContext ctx = ad::AdContext::with_standard_rules();
  int direct_programs = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    test_support::RandomProgram rp = test_support::random_program(seed);
    const auto& p = *rp.graph.program;
    std::mt19937_64 rng(seed * 7);
    std::vector<EagerTensor> xs;
    for (const Tensor& t : rp.inputs) xs.push_back(runtime()->from_host(t).value());
    std::vector<Tensor> us;
    for (auto v : p.outputs()) {
      Shape s;
      for (const auto& e : p.type(v).shape) s.push_back(e.exact_value());
      us.push_back(test_support::strided_random(rng, p.type(v).dtype, s, -1.0, 1.0));
    }
    // Eager: loss = sum_k Re <u_k, y_k>, backward through the tape.
    EagerFn loss = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
      TENFERRO_TRY(std::vector<EagerTensor> ys, run_eagerly(rp.graph, v));
      EagerTensor total;
      for (size_t k = 0; k < ys.size(); ++k) {
        TENFERRO_TRY(EagerTensor u, runtime()->from_host(us[k]));
        TENFERRO_TRY(EagerTensor cu, conj(u));
        TENFERRO_TRY(EagerTensor prod, mul(cu, ys[k]));
        TENFERRO_TRY(EagerTensor re, real(prod));
        TENFERRO_TRY(EagerTensor s, sum(re));
        if (total.defined()) {
          TENFERRO_TRY(total, add(total, s));
        } else {
          total = s;
        }
      }
      return total;
    };
    auto eager_grads = grad(loss, xs);
    ASSERT_TRUE(eager_grads) << eager_grads.error().to_string() << "\n" << program::print_program(p);
    {  // which route the default took (both routes are checked below)
      std::vector<EagerTensor> leaves;
      for (const EagerTensor& x : xs) leaves.push_back(is_inexact(x.dtype()) ? requires_grad(x).value() : x);
      auto route = explain_backward(loss(leaves).value());
      ASSERT_TRUE(route) << route.error().to_string();
      direct_programs += route->route == BackwardRoute::kDirect ? 1 : 0;
    }
    auto replayed = grad(loss, xs, BackwardRoute::kReplay);
    ASSERT_TRUE(replayed) << replayed.error().to_string();
    // Program: vjp with cotangents u.
    std::vector<Tensor> args = rp.inputs;
    args.insert(args.end(), us.begin(), us.end());
    auto v = program::interpret(ctx.vjp(rp.graph).value(), args);
    ASSERT_TRUE(v) << v.error().to_string();
    for (size_t i = 0; i < xs.size(); ++i) {
      const auto a = values((*eager_grads)[i]), r = values((*replayed)[i]), b = values((*v)[p.outputs().size() + i]);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_EQ(r.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        EXPECT_NEAR(std::abs(a[k] - b[k]), 0.0, 1e-10 * (1 + std::abs(b[k]))) << "input " << i << " element " << k;
        EXPECT_NEAR(std::abs(r[k] - b[k]), 0.0, 1e-10 * (1 + std::abs(b[k]))) << "replayed, input " << i;
      }
    }
    check_grad_fd(loss, xs, seed, "finite differences");
    if (HasFailure()) break;
  }
  // Programs of direct-rule ops only (elementwise arithmetic) take the direct route.
  EXPECT_GT(direct_programs, 10);
}

TEST(Autograd, FunctionalVjpAndJvp) {
  std::mt19937_64 rng(31);
  EagerTensor x = random(rng, DType::kF64, {3});
  EagerFn f = [](std::span<const EagerTensor> v) { return mul(v[0], sin(v[0]).value()); };
  EagerTensor ct = random(rng, DType::kF64, {3});
  auto [y, g] = vjp(f, std::span<const EagerTensor>(&x, 1), ct).value();
  auto [y2, dy] = jvp(f, std::span<const EagerTensor>(&x, 1), std::span<const EagerTensor>(&ct, 1)).value();
  const auto xv = values(x), cv = values(ct), gv = values(g[0]), dv = values(dy);
  for (size_t i = 0; i < 3; ++i) {
    const double d = std::sin(xv[i].real()) + xv[i].real() * std::cos(xv[i].real());
    EXPECT_NEAR(gv[i].real(), cv[i].real() * d, 1e-12);
    EXPECT_NEAR(dv[i].real(), cv[i].real() * d, 1e-12);
  }
  EXPECT_EQ(values(y), values(y2));
}

// Note [Nested functional transforms]: the results of grad / vjp / jvp whose inputs are
// recorded (an enclosing grad, a trace, a tensor that requires grad, a closure over one)
// are recorded too, so they differentiate again: second and third derivatives, mixed
// partials through a closure, Hessian-vector products, against the analytic values.
TEST(Autograd, NestedFunctionalTransformsGiveHigherDerivatives) {
  std::mt19937_64 rng(41);
  const EagerTensor x = random(rng, DType::kF64, {3});
  const EagerTensor w = random(rng, DType::kF64, {3});
  const auto xv = values(x), wv = values(w);
  auto one = [](std::span<const EagerTensor> v) { return std::span<const EagerTensor>(v.data(), 1); };
  const EagerFn cube = [](std::span<const EagerTensor> v) { return sum(mul(v[0], mul(v[0], v[0]).value()).value()); };
  // d/dx sum(3 x^2) = 6 x; a third derivative: d/dx sum(6 x) = 6.
  const EagerFn first = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    TENFERRO_TRY(std::vector<EagerTensor> g, grad(cube, one(v)));
    return sum(g[0]);
  };
  const auto second = values(grad(first, std::span<const EagerTensor>(&x, 1)).value()[0]);
  const EagerFn second_sum = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    TENFERRO_TRY(std::vector<EagerTensor> g, grad(first, one(v)));
    return sum(g[0]);
  };
  const auto third = values(grad(second_sum, std::span<const EagerTensor>(&x, 1)).value()[0]);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(second[i].real(), 6 * xv[i].real(), 1e-12);
    EXPECT_NEAR(third[i].real(), 6.0, 1e-12);
  }
  // Mixed partial through a closure: d/dw sum_i d/dx_i sum(x^2 w) = 2 x; by vjp and jvp too.
  const EagerFn mixed = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    const EagerFn f = [&](std::span<const EagerTensor> u) { return sum(mul(mul(u[0], u[0]).value(), v[0]).value()); };
    TENFERRO_TRY(std::vector<EagerTensor> g, grad(f, std::span<const EagerTensor>(&x, 1)));
    return sum(g[0]);
  };
  const EagerFn mixed_vjp = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    const EagerFn f = [&](std::span<const EagerTensor> u) { return mul(mul(u[0], u[0]).value(), v[0]); };
    TENFERRO_TRY(auto r, vjp(f, std::span<const EagerTensor>(&x, 1), Context::of(x).ones({3}).value()));
    return sum(r.second[0]);
  };
  const EagerFn mixed_jvp = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    const EagerFn f = [&](std::span<const EagerTensor> u) { return sum(mul(mul(u[0], u[0]).value(), v[0]).value()); };
    const EagerTensor ones = Context::of(x).ones({3}).value();
    TENFERRO_TRY(auto r, jvp(f, std::span<const EagerTensor>(&x, 1), std::span<const EagerTensor>(&ones, 1)));
    return r.second;
  };
  for (const EagerFn* f : {&mixed, &mixed_vjp, &mixed_jvp}) {
    auto g = grad(*f, std::span<const EagerTensor>(&w, 1));
    ASSERT_TRUE(g) << g.error().to_string();
    const auto gv = values((*g)[0]);
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(gv[i].real(), 2 * xv[i].real(), 1e-12);
  }
  // A Hessian-vector product as jvp of grad: H = diag(6 x), so H e0 = (6 x0, 0, 0).
  const EagerFn gradient = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    TENFERRO_TRY(std::vector<EagerTensor> g, grad(cube, one(v)));
    return g[0];
  };
  const EagerTensor e0 = runtime()->from_values<double>({3}, {1.0, 0.0, 0.0}).value();
  auto hv = jvp(gradient, std::span<const EagerTensor>(&x, 1), std::span<const EagerTensor>(&e0, 1));
  ASSERT_TRUE(hv) << hv.error().to_string();
  const auto hvv = values(hv->second);
  EXPECT_NEAR(hvv[0].real(), 6 * xv[0].real(), 1e-12);
  EXPECT_NEAR(hvv[1].real(), 0.0, 1e-12);
  // backward() through a gradient of an input that requires grad; a traced gradient is a
  // program of its input (3 x^2 at new values, not the example's frozen).
  const EagerTensor xr = requires_grad(x).value();
  ASSERT_TRUE(backward(sum(grad(cube, std::span<const EagerTensor>(&xr, 1)).value()[0]).value()));
  const auto bv = values(grad_of(xr));
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(bv[i].real(), 6 * xv[i].real(), 1e-12);
  const EagerTensor leaf = trace_input(x).value();
  const EagerTensor traced[] = {grad(cube, std::span<const EagerTensor>(&leaf, 1)).value()[0]};
  auto prog = program_of(traced, std::span<const EagerTensor>(&leaf, 1));
  ASSERT_TRUE(prog) << prog.error().to_string();
  const Tensor at = Tensor::from_col_major<double>({3}, std::vector<double>{1.0, 2.0, -3.0}).value();
  const Tensor args[] = {at};
  auto ran = program::interpret(*prog, args);
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_NEAR((*ran)[0].get<double>({2}).value(), 27.0, 1e-12);
  (void)wv;
}

// jvp of a function that closes over a tensor requiring grad: that tensor is a constant
// of the jvp (a zero tangent); it read past the inputs before.
TEST(Autograd, JvpOfAClosureOverARecordedTensor) {
  std::mt19937_64 rng(43);
  const EagerTensor x = random(rng, DType::kF64, {3});
  const EagerTensor w = requires_grad(random(rng, DType::kF64, {3})).value();
  const EagerFn f = [&](std::span<const EagerTensor> u) { return sum(mul(mul(u[0], u[0]).value(), w).value()); };
  const EagerTensor ones = Context::of(x).ones({3}).value();
  auto r = jvp(f, std::span<const EagerTensor>(&x, 1), std::span<const EagerTensor>(&ones, 1));
  ASSERT_TRUE(r) << r.error().to_string();
  const auto xv = values(x), wv = values(w);
  double want = 0;
  for (size_t i = 0; i < 3; ++i) want += 2 * xv[i].real() * wv[i].real();
  EXPECT_NEAR(values(r->second)[0].real(), want, 1e-12);
}

// Note [Constant outputs of the functional transforms]: an output that depends on no
// input (a constant, a value computed without grad inside f) has zero derivatives.
TEST(Autograd, FunctionalTransformsOfAConstantOutputGiveZeros) {
  std::mt19937_64 rng(37);
  EagerTensor x = random(rng, DType::kF64, {2, 3});
  EagerTensor z = random(rng, DType::kC128, {2});
  const std::vector<EagerTensor> xs{x, z};
  // sum(x) computed without recording, plus a constant: a real scalar through which no
  // derivative flows (as a stop-gradient).
  EagerFn constant = [](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    Context c = Context::of(v[0]).no_grad();
    TENFERRO_TRY(EagerTensor s, c.sum(v[0]));
    return c.add(s, c.scalar(c128(2.0, 0.0), DType::kF64).value());
  };
  auto g = grad(constant, xs);
  ASSERT_TRUE(g) << g.error().to_string();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ(values((*g)[0]), std::vector<c128>(6, c128(0, 0)));
  EXPECT_EQ((*g)[0].shape(), x.shape());
  EXPECT_EQ((*g)[1].dtype(), DType::kC128);
  EXPECT_EQ(values((*g)[1]), std::vector<c128>(2, c128(0, 0)));
  // A truly constant f (matrix_power(x, 0) summed): zeros agree with finite differences.
  EagerTensor w = random(rng, DType::kF64, {3});
  EagerFn fixed = [w](std::span<const EagerTensor>) { return sum(w); };
  check_grad_fd(fixed, xs, 3, "constant");
  // vjp and jvp: zeros, the value itself unchanged.
  EagerTensor one = runtime()->from_values<double>({}, {1.5}).value();
  auto [y, vg] = vjp(constant, xs, one).value();
  EXPECT_NEAR(scalar_value(y), std::real(values(sum(x).value())[0]) + 2.0, 1e-12);
  EXPECT_EQ(values(vg[0]), std::vector<c128>(6, c128(0, 0)));
  const std::vector<EagerTensor> tangents{random(rng, DType::kF64, {2, 3}), random(rng, DType::kC128, {2})};
  auto [y2, dy] = jvp(constant, xs, tangents).value();
  EXPECT_EQ(dy.shape(), y2.shape());
  EXPECT_EQ(values(dy), std::vector<c128>(1, c128(0, 0)));
  // The output and cotangent are still checked: a non-scalar constant needs a cotangent,
  // the cotangent must match, and so must the tangents.
  EagerFn vector_constant = [](std::span<const EagerTensor> v) { return Context::of(v[0]).no_grad().exp(v[0]); };
  auto vec = grad(vector_constant, xs);
  ASSERT_FALSE(vec);
  EXPECT_EQ(vec.error().code(), ErrorCode::kShapeMismatch);
  auto wrong_ct = vjp(vector_constant, xs, one);
  ASSERT_FALSE(wrong_ct);
  EXPECT_EQ(wrong_ct.error().code(), ErrorCode::kInvalidArgument);
  const std::vector<EagerTensor> bad_tangents{one, tangents[1]};
  auto wrong_tangent = jvp(constant, xs, bad_tangents);
  ASSERT_FALSE(wrong_tangent);
  EXPECT_EQ(wrong_tangent.error().code(), ErrorCode::kInvalidArgument);
  // backward() names the tensor to differentiate: one that does not require grad is an error.
  auto no = backward(constant(xs).value());
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().code(), ErrorCode::kInvalidArgument);
}

TEST(Autograd, TypedErrors) {
  auto rt = runtime();
  EagerTensor a = rt->from_values<double>({2}, {1, 2}).value();
  auto no = backward(sum(a).value());
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().code(), ErrorCode::kInvalidArgument);
  EagerTensor x = requires_grad(a).value();
  auto vec = backward(x * x);
  ASSERT_FALSE(vec);
  EXPECT_EQ(vec.error().code(), ErrorCode::kShapeMismatch);  // not a scalar
  EagerTensor z = requires_grad(rt->from_values<c128>({2}, {c128(1, 1), c128(0, 2)}).value()).value();
  auto complex_root = backward(sum(z * z).value());
  ASSERT_FALSE(complex_root);
  EXPECT_EQ(complex_root.error().code(), ErrorCode::kDTypeMismatch);  // a complex scalar: no implicit seed
  EXPECT_TRUE(backward(x * x, a));  // with a cotangent
  EXPECT_EQ(values(grad_of(x)), (std::vector<c128>{2.0, 8.0}));
  auto ints = requires_grad(rt->from_values<int64_t>({2}, {1, 2}).value());
  ASSERT_FALSE(ints);
  EXPECT_EQ(ints.error().code(), ErrorCode::kDTypeMismatch);
  // An op without a program form (a native family entry) is a typed error at backward.
  const EagerTensor* ins[1] = {&x};
  auto native = Context::of(x).run_native(ins, "test.native", 1,
                                          [&](cpu::CpuExecutionContext&, const std::shared_ptr<HostBufferPool>&,
                                              std::vector<Tensor>& outs) -> Result<void> {
                                            outs.push_back(x.tensor());
                                            return ok();
                                          });
  ASSERT_TRUE(native);
  auto through = backward(sum((*native)[0]).value());
  ASSERT_FALSE(through);
  EXPECT_EQ(through.error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace tenferro::eager
