#include "tenferro/fft/fft.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <numbers>
#include <thread>
#include <vector>

#include "tenferro/cpu/engine.h"

namespace tenferro::fft {
namespace {

using cl = std::complex<long double>;

// ---- the oracle: naive DFTs in long double, one axis at a time ----

// A dense row-major copy of a tensor.
struct Arr {
  std::vector<int64_t> shape;
  std::vector<cl> v;
  int64_t stride(size_t axis) const {
    int64_t s = 1;
    for (size_t a = axis + 1; a < shape.size(); ++a) s *= shape[a];
    return s;
  }
  int64_t size() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
  }
};

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  return idx;
}

Arr dense(const Tensor& t) {
  Arr r;
  r.shape.assign(t.shape().begin(), t.shape().end());
  r.v.resize(static_cast<size_t>(r.size()));
  for (int64_t f = 0; f < r.size(); ++f) {
    const c128 z = t.get_as_c128(unravel(f, r.shape)).value();
    r.v[static_cast<size_t>(f)] = cl(z.real(), z.imag());
  }
  return r;
}

// y_k = sum_{j < used} x_j exp(sign 2 pi i j k / n), k < out_len, along `axis`.
Arr dft_axis(const Arr& x, size_t axis, int sign, int64_t n, int64_t out_len) {
  Arr y;
  y.shape = x.shape;
  y.shape[axis] = out_len;
  y.v.assign(static_cast<size_t>(y.size()), cl(0));
  const int64_t used = std::min(n, x.shape[axis]);
  const long double two_pi = 2 * std::numbers::pi_v<long double>;
  for (int64_t f = 0; f < y.size(); ++f) {
    std::vector<int64_t> idx = unravel(f, y.shape);
    const int64_t k = idx[axis];
    cl s = 0;
    for (int64_t j = 0; j < used; ++j) {
      idx[axis] = j;
      int64_t src = 0;
      for (size_t a = 0; a < idx.size(); ++a) src += idx[a] * x.stride(a);
      const long double ang = sign * two_pi * static_cast<long double>((j * k) % n) / static_cast<long double>(n);
      s += x.v[static_cast<size_t>(src)] * cl(std::cos(ang), std::sin(ang));
    }
    y.v[static_cast<size_t>(f)] = s;
  }
  return y;
}

// The Hermitian extension along `axis` of m = n/2 + 1 bins to n (Re only at 0 and n/2).
Arr hermitian_extend(const Arr& x, size_t axis, int64_t n) {
  Arr y;
  y.shape = x.shape;
  y.shape[axis] = n;
  y.v.resize(static_cast<size_t>(y.size()));
  for (int64_t f = 0; f < y.size(); ++f) {
    std::vector<int64_t> idx = unravel(f, y.shape);
    const int64_t k = idx[axis];
    const bool mirrored = k > n / 2;
    idx[axis] = mirrored ? n - k : k;
    int64_t src = 0;
    for (size_t a = 0; a < idx.size(); ++a) src += idx[a] * x.stride(a);
    cl z = x.v[static_cast<size_t>(src)];
    if (k == 0 || (n % 2 == 0 && k == n / 2)) z = cl(z.real(), 0);
    y.v[static_cast<size_t>(f)] = mirrored ? std::conj(z) : z;
  }
  return y;
}

Arr oracle(const Tensor& x, const FftSpec& spec) {
  Arr a = dense(x);
  long double n_total = 1;
  const auto& axes = spec.axes;
  switch (spec.kind) {
    case Kind::kC2C:
    case Kind::kC2CInverse: {
      const int sign = spec.kind == Kind::kC2C ? -1 : 1;
      for (int64_t ax : axes) {
        const int64_t n = a.shape[static_cast<size_t>(ax)];
        n_total *= n;
        a = dft_axis(a, static_cast<size_t>(ax), sign, n, n);
      }
      break;
    }
    case Kind::kR2C: {
      const size_t last = static_cast<size_t>(axes.back());
      const int64_t n = a.shape[last];
      n_total *= n;
      a = dft_axis(a, last, -1, n, n / 2 + 1);
      for (size_t i = 0; i + 1 < axes.size(); ++i) {
        const int64_t m = a.shape[static_cast<size_t>(axes[i])];
        n_total *= m;
        a = dft_axis(a, static_cast<size_t>(axes[i]), -1, m, m);
      }
      break;
    }
    case Kind::kC2R: {
      for (size_t i = 0; i + 1 < axes.size(); ++i) {
        const int64_t m = a.shape[static_cast<size_t>(axes[i])];
        n_total *= m;
        a = dft_axis(a, static_cast<size_t>(axes[i]), 1, m, m);
      }
      const size_t last = static_cast<size_t>(axes.back());
      const int64_t n = spec.last_length;
      n_total *= n;
      a = dft_axis(hermitian_extend(a, last, n), last, 1, n, n);
      for (cl& z : a.v) z = cl(z.real(), 0);
      break;
    }
  }
  const long double s = static_cast<long double>(scale_of(spec.kind, spec.norm, static_cast<double>(n_total)));
  for (cl& z : a.v) z *= s;
  return a;
}

void expect_matches(const Tensor& got, const Arr& want, double tol, const std::string& what) {
  ASSERT_EQ(std::vector<int64_t>(got.shape().begin(), got.shape().end()), want.shape) << what;
  long double scale = 1;
  for (const cl& z : want.v) scale = std::max(scale, std::abs(z));
  const Arr g = dense(got);
  for (size_t i = 0; i < want.v.size(); ++i) {
    ASSERT_LE(static_cast<double>(std::abs(g.v[i] - want.v[i]) / scale), tol)
        << what << " at flat index " << i << ": got " << static_cast<double>(g.v[i].real()) << "+"
        << static_cast<double>(g.v[i].imag()) << "i, want " << static_cast<double>(want.v[i].real()) << "+"
        << static_cast<double>(want.v[i].imag()) << "i";
  }
}

double tol_of(DType d) { return d == DType::kF32 || d == DType::kC64 ? 2e-6 : 1e-13; }

std::string describe(const FftSpec& s, const Tensor& x) {
  std::string r(kind_name(s.kind));
  r += ' ';
  r += norm_name(s.norm);
  r += " axes";
  for (int64_t a : s.axes) r += ' ' + std::to_string(a);
  r += " of ";
  r += dtype_name(x.dtype());
  r += format_dims(x.shape());
  r += " strides ";
  r += format_dims(x.strides());
  return r;
}

// Inputs as stored and as strided views of a larger tensor: permuted, every other
// element, reversed.
std::vector<Tensor> layouts_of(DType dt, std::vector<int64_t> shape, uint64_t seed) {
  std::vector<Tensor> out;
  out.push_back(Tensor::random_normal(dt, shape, seed).value());
  // Permuted: a tensor of the reversed shape, axes reversed back.
  std::vector<int64_t> rev(shape.rbegin(), shape.rend()), perm;
  for (int64_t a = static_cast<int64_t>(shape.size()); a-- > 0;) perm.push_back(a);
  out.push_back(Tensor::random_normal(dt, rev, seed + 1).value().permute(perm).value());
  // Every other element of axis 0, and the last axis reversed.
  std::vector<int64_t> wide = shape;
  wide[0] = 2 * shape[0];
  Tensor w = Tensor::random_normal(dt, wide, seed + 2).value();
  out.push_back(w.slice(0, 0, wide[0], 2).value().flip(static_cast<int64_t>(shape.size()) - 1).value());
  return out;
}

TEST(Fft, ComplexTransformsMatchTheNaiveDft) {
  const std::vector<std::vector<int64_t>> axes_sets = {{0}, {1}, {2}, {0, 2}, {2, 0, 1}};
  for (DType dt : {DType::kC128, DType::kC64}) {
    for (const Tensor& x : layouts_of(dt, {5, 6, 3}, 11)) {
      for (const auto& axes : axes_sets) {
        for (Kind kind : {Kind::kC2C, Kind::kC2CInverse}) {
          for (Norm norm : {Norm::kBackward, Norm::kOrtho, Norm::kForward}) {
            const FftSpec spec{kind, norm, axes};
            const Tensor y = fft(CpuExecutionContext::sequential(), x, spec).value();
            expect_matches(y, oracle(x, spec), tol_of(dt), describe(spec, x));
          }
        }
      }
    }
  }
}

TEST(Fft, RealTransformsMatchTheNaiveDft) {
  // Even and odd lengths of the halved axis, one and several axes.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{4, 8}, {1}}, {{4, 7}, {1}}, {{6, 5}, {0}}, {{3, 4, 6}, {0, 2}}, {{3, 5, 4}, {2, 1}}, {{2, 3, 5}, {1, 2, 0}}};
  for (DType dt : {DType::kF64, DType::kF32}) {
    for (const auto& [shape, axes] : cases) {
      for (const Tensor& x : layouts_of(dt, shape, 21)) {
        for (Norm norm : {Norm::kBackward, Norm::kOrtho, Norm::kForward}) {
          const FftSpec spec{Kind::kR2C, norm, axes};
          const Tensor y = fft(CpuExecutionContext::sequential(), x, spec).value();
          EXPECT_EQ(y.dtype(), dt == DType::kF64 ? DType::kC128 : DType::kC64);
          expect_matches(y, oracle(x, spec), tol_of(dt), describe(spec, x));
        }
      }
    }
  }
}

TEST(Fft, ComplexToRealMatchesTheHermitianExtension) {
  // Inputs are not Hermitian: the imaginary parts of bin 0 (and n/2) must be ignored
  // exactly as numpy's irfftn does, after the other axes' transforms.
  const std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, int64_t>> cases = {
      {{3, 5}, {1}, 8}, {{3, 4}, {1}, 7}, {{3, 4}, {0}, 5}, {{3, 4, 4}, {0, 2}, 6}, {{3, 3, 4}, {2, 0}, 4}};
  for (DType dt : {DType::kC128, DType::kC64}) {
    for (const auto& [shape, axes, n] : cases) {
      for (const Tensor& x : layouts_of(dt, shape, 31)) {
        for (Norm norm : {Norm::kBackward, Norm::kOrtho, Norm::kForward}) {
          FftSpec spec{Kind::kC2R, norm, axes};
          spec.last_length = n;
          const Tensor before = x.clone().value();
          const Tensor y = fft(CpuExecutionContext::sequential(), x, spec).value();
          EXPECT_EQ(y.dtype(), dt == DType::kC128 ? DType::kF64 : DType::kF32);
          expect_matches(y, oracle(x, spec), tol_of(dt), describe(spec, x));
          expect_matches(x, dense(before), 0.0, "input left as it was");
        }
      }
    }
  }
}

TEST(Fft, RealRoundTripRestoresTheInput) {
  for (int64_t n : {1, 2, 9, 16, 125}) {
    const Tensor x = Tensor::random_normal(DType::kF64, {3, n}, 41).value();
    const Tensor y = fft(CpuExecutionContext::sequential(), x, {Kind::kR2C, Norm::kOrtho, {1}}).value();
    FftSpec back{Kind::kC2R, Norm::kOrtho, {1}};
    back.last_length = n;
    const Tensor z = fft(CpuExecutionContext::sequential(), y, back).value();
    expect_matches(z, dense(x), 1e-14, "irfft(rfft(x)) n = " + std::to_string(n));
  }
}

TEST(Fft, ChunksOnTwoWorkersGiveTheSequentialResult) {
  cpu::CpuTopology t = cpu::CpuTopology::discover().value();
  cpu::CpuEngineConfig cfg;
  cfg.domains = {cpu::CpuDomainConfig{0, t.allowed_cpus, 2, nullptr}};
  cfg.pin_workers = false;
  auto engine = cpu::CpuEngine::create(cfg, &t).value();
  // Batches of odd extent (chunks of unequal length) and transforms of odd length in
  // single precision (chunk starts of differing alignment), over 2^15 elements.
  struct Case {
    DType dt;
    std::vector<int64_t> shape;
    FftSpec spec;
  };
  FftSpec c2r{Kind::kC2R, Norm::kBackward, {0, 1}};
  c2r.last_length = 30;
  const std::vector<Case> cases = {
      {DType::kC64, {3, 11001}, {Kind::kC2C, Norm::kOrtho, {0}}},
      {DType::kC128, {64, 515}, {Kind::kC2CInverse, Norm::kBackward, {0}}},
      {DType::kF32, {33, 1001}, {Kind::kR2C, Norm::kForward, {0}}},
      {DType::kF64, {12, 9, 401}, {Kind::kR2C, Norm::kBackward, {1, 0}}},
      {DType::kC128, {7, 16, 2001}, c2r},
  };
  for (const Case& c : cases) {
    PlanCache plans;
    const Tensor x = Tensor::random_normal(c.dt, c.shape, 51).value();
    const Tensor seq = fft(CpuExecutionContext::sequential(), x, c.spec).value();
    Tensor par;
    ASSERT_TRUE(engine
                    ->run(0, cpu::ParallelMode::kInner,
                          [&](CpuExecutionContext& ctx) -> Result<void> {
                            TENFERRO_TRY(par, fft(ctx, x, c.spec, nullptr, &plans));
                            return ok();
                          })
                    .has_value());
    expect_matches(par, dense(seq), 1e-6, describe(c.spec, x) + " on two workers");
  }
}

TEST(Fft, PlanCacheReusesAndBoundsItsPlans) {
  PlanCache plans(2);
  const CpuExecutionContext seq = CpuExecutionContext::sequential();
  const Tensor x = Tensor::random_normal(DType::kC128, {4, 16}, 61).value();
  const FftSpec spec{Kind::kC2C, Norm::kBackward, {1}};
  const Tensor first = fft(seq, x, spec, nullptr, &plans).value();
  EXPECT_EQ(plans.stats().misses, 1);
  EXPECT_EQ(plans.stats().entries, 1);
  EXPECT_GT(plans.stats().estimated_bytes, 0);
  const Tensor again = fft(seq, x, spec, nullptr, &plans).value();
  EXPECT_EQ(plans.stats().hits, 1);
  expect_matches(again, dense(first), 0.0, "cached plan");
  // Two more layouts: the least recently used plan goes.
  (void)fft(seq, x, {Kind::kC2C, Norm::kBackward, {0}}, nullptr, &plans).value();
  (void)fft(seq, x, {Kind::kC2CInverse, Norm::kBackward, {1}}, nullptr, &plans).value();
  EXPECT_EQ(plans.stats().entries, 2);
  EXPECT_EQ(plans.stats().evictions, 1);
  plans.clear();
  EXPECT_EQ(plans.stats().entries, 0);
  EXPECT_EQ(plans.stats().estimated_bytes, 0);
  const Tensor after = fft(seq, x, spec, nullptr, &plans).value();
  expect_matches(after, oracle(x, spec), 1e-13, "after clear");
}

TEST(Fft, ResultsKeepTheInputsAxisOrder) {
  // A row-major input (strides [12, 4, 1]) gives a row-major result; a column-major one
  // a column-major result; the halved axis changes the extents, not the order.
  const Tensor row = Tensor::random_normal(DType::kF64, {6, 3, 2}, 71).value().permute({2, 1, 0}).value();
  const Tensor y = fft(CpuExecutionContext::sequential(), row, {Kind::kR2C, Norm::kBackward, {2}}).value();
  EXPECT_EQ(y.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(y.strides(), Strides({12, 4, 1}));
  const Tensor col = Tensor::random_normal(DType::kC128, {2, 3, 6}, 72).value();
  EXPECT_TRUE(fft(CpuExecutionContext::sequential(), col, {Kind::kC2C, Norm::kBackward, {2}}).value().is_contiguous());
}

Layout layout(std::vector<int64_t> shape, std::vector<int64_t> strides) {
  Layout l;
  l.shape = Shape(std::span<const int64_t>(shape));
  l.strides = Strides(std::span<const int64_t>(strides));
  return l;
}

TEST(FftPlan, PassesAndRoutesFollowTheStrides) {
  const Layout row = layout({256, 1024}, {1024, 1});
  // Along the contiguous axis: one direct pass; the result keeps the row-major order.
  FftPlan p = plan_fft(DType::kC128, row, {Kind::kC2C, Norm::kBackward, {1}}).value();
  ASSERT_EQ(p.passes.size(), 1u);
  EXPECT_EQ(p.passes[0].route, PassRoute::kDirect);
  EXPECT_EQ(p.result_strides, Strides({1024, 1}));
  EXPECT_FALSE(p.scratch);
  // Along the strided axis: buffered.
  p = plan_fft(DType::kC128, row, {Kind::kC2C, Norm::kOrtho, {0}}).value();
  ASSERT_EQ(p.passes.size(), 1u);
  EXPECT_EQ(p.passes[0].route, PassRoute::kBuffered);
  EXPECT_NE(p.passes[0].reason().find("stride 1024"), std::string::npos) << p.passes[0].reason();
  EXPECT_DOUBLE_EQ(p.scale, 1.0 / 16.0);
  // Both axes: the contiguous one first (input -> result), the other in place.
  p = plan_fft(DType::kC128, row, {Kind::kC2CInverse, Norm::kBackward, {0, 1}}).value();
  ASSERT_EQ(p.passes.size(), 2u);
  EXPECT_EQ(p.passes[0].axis, 1);
  EXPECT_EQ(p.passes[0].from, Buffer::kInput);
  EXPECT_EQ(p.passes[1].axis, 0);
  EXPECT_EQ(p.passes[1].from, Buffer::kResult);
  EXPECT_EQ(p.passes[1].to, Buffer::kResult);
  EXPECT_EQ(p.passes[1].route, PassRoute::kBuffered);
  EXPECT_DOUBLE_EQ(p.scale, 1.0 / (256.0 * 1024.0));
  // r2c: the real pass first, then the complex ones on the result.
  p = plan_fft(DType::kF64, layout({6, 8}, {1, 6}), {Kind::kR2C, Norm::kForward, {1, 0}}).value();
  ASSERT_EQ(p.passes.size(), 2u);
  EXPECT_EQ(p.passes[0].kind, Kind::kR2C);
  EXPECT_EQ(p.passes[0].axis, 0);
  EXPECT_EQ(p.passes[0].route, PassRoute::kDirect);
  EXPECT_EQ(p.passes[1].kind, Kind::kC2C);
  EXPECT_EQ(p.passes[1].route, PassRoute::kBuffered);
  EXPECT_EQ(p.result.shape, Shape({4, 8}));
  EXPECT_DOUBLE_EQ(p.scale, 1.0 / 48.0);
}

TEST(FftPlan, ComplexToRealNeverOverwritesTheInput) {
  FftSpec c2r{Kind::kC2R, Norm::kBackward, {0}};
  c2r.last_length = 8;
  // Contiguous: a direct pass, which overwrites what it reads: it reads a copy.
  FftPlan p = plan_fft(DType::kC128, layout({5, 3}, {1, 5}), c2r).value();
  EXPECT_TRUE(p.scratch && p.scratch_copy);
  ASSERT_EQ(p.passes.size(), 1u);
  EXPECT_EQ(p.passes[0].from, Buffer::kScratch);
  EXPECT_EQ(p.passes[0].route, PassRoute::kDirect);
  // Strided (reversed): buffered straight from the input, no scratch.
  p = plan_fft(DType::kC128, layout({5, 3}, {-1, 5}), c2r).value();
  EXPECT_FALSE(p.scratch);
  ASSERT_EQ(p.passes.size(), 1u);
  EXPECT_EQ(p.passes[0].from, Buffer::kInput);
  EXPECT_EQ(p.passes[0].route, PassRoute::kBuffered);
  // Two axes: the inverse complex pass fills the scratch, the last pass reads it.
  c2r.axes = {1, 0};
  p = plan_fft(DType::kC64, layout({5, 3}, {1, 5}), c2r).value();
  EXPECT_TRUE(p.scratch);
  EXPECT_FALSE(p.scratch_copy);
  ASSERT_EQ(p.passes.size(), 2u);
  EXPECT_EQ(p.passes[0].kind, Kind::kC2CInverse);
  EXPECT_EQ(p.passes[0].to, Buffer::kScratch);
  EXPECT_EQ(p.passes[1].kind, Kind::kC2R);
  EXPECT_EQ(p.passes[1].from, Buffer::kScratch);
  const std::string text = p.describe();
  EXPECT_NE(text.find("pass 2: c2r axis 0, scratch -> result, direct"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_NE(text.find("scale 0.041666666666666664"), std::string::npos) << text;
  // The planner's errors are result_type's.
  c2r.last_length = 0;
  EXPECT_EQ(plan_fft(DType::kC64, layout({5, 3}, {1, 5}), c2r).error().code(), ErrorCode::kInvalidArgument);
}

TEST(Fft, ConcurrentCallsShareABoundedPlanCache) {
  // Four threads transform three layouts through one cache of two plans: plans are
  // evicted while other calls run them; every result equals the one computed alone.
  PlanCache plans(2);
  const CpuExecutionContext seq = CpuExecutionContext::sequential();
  const std::vector<Tensor> inputs = {Tensor::random_normal(DType::kC128, {8, 64}, 81).value(),
                                      Tensor::random_normal(DType::kC128, {8, 48}, 82).value(),
                                      Tensor::random_normal(DType::kC64, {5, 30}, 83).value()};
  const FftSpec spec{Kind::kC2C, Norm::kOrtho, {1}};
  std::vector<Arr> want;
  for (const Tensor& x : inputs) want.push_back(dense(fft(seq, x, spec).value()));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        const size_t which = static_cast<size_t>((i + t) % 3);
        auto y = fft(seq, inputs[which], spec, nullptr, &plans);
        if (!y) {
          ++mismatches;
          continue;
        }
        const Arr got = dense(*y);
        const long double tol = which == 2 ? 1e-5L : 1e-12L;  // plans may differ with the buffers' alignment
        for (size_t j = 0; j < got.v.size(); ++j) {
          if (std::abs(got.v[j] - want[which].v[j]) > tol * (1 + std::abs(want[which].v[j]))) {
            ++mismatches;
            break;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_LE(plans.stats().entries, 2);
  EXPECT_GT(plans.stats().evictions, 0);
}

TEST(Fft, EmptyBatchesGiveEmptyResults) {
  const Tensor x = Tensor::zeros(DType::kF64, {0, 6}).value();
  const Tensor y = fft(CpuExecutionContext::sequential(), x, {Kind::kR2C, Norm::kBackward, {1}}).value();
  EXPECT_EQ(y.shape(), Shape({0, 4}));
}

TEST(Fft, ErrorsAreTyped) {
  const CpuExecutionContext seq = CpuExecutionContext::sequential();
  const Tensor r = Tensor::zeros(DType::kF64, {3, 4}).value();
  const Tensor z = Tensor::zeros(DType::kC128, {3, 4}).value();
  const Tensor i = Tensor::zeros(DType::kI64, {3, 4}).value();
  auto code = [&](const Tensor& x, FftSpec s) { return fft(seq, x, s).error().code(); };
  EXPECT_EQ(code(r, {Kind::kC2C, Norm::kBackward, {0}}), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code(z, {Kind::kR2C, Norm::kBackward, {0}}), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code(i, {Kind::kR2C, Norm::kBackward, {0}}), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code(z, {Kind::kC2C, Norm::kBackward, {2}}), ErrorCode::kOutOfRange);
  EXPECT_EQ(code(z, {Kind::kC2C, Norm::kBackward, {-1}}), ErrorCode::kOutOfRange);
  EXPECT_EQ(code(z, {Kind::kC2C, Norm::kBackward, {1, 1}}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(z, {Kind::kC2C, Norm::kBackward, {}}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(Tensor::zeros(DType::kC128, {0, 4}).value(), {Kind::kC2C, Norm::kBackward, {0}}),
            ErrorCode::kInvalidShape);
  FftSpec c2r{Kind::kC2R, Norm::kBackward, {1}};
  c2r.last_length = 8;  // needs 5 bins, z has 4
  EXPECT_EQ(code(z, c2r), ErrorCode::kShapeMismatch);
  c2r.last_length = 0;
  EXPECT_EQ(code(z, c2r), ErrorCode::kInvalidArgument);
  c2r.last_length = 6;  // 4 bins: fine
  EXPECT_TRUE(fft(seq, z, c2r).has_value());
  EXPECT_EQ(fft(seq, Tensor(), {Kind::kC2C, Norm::kBackward, {0}}).error().code(), ErrorCode::kInvalidArgument);
  const Error e = fft(seq, r, {Kind::kC2C, Norm::kBackward, {0}}).error();
  EXPECT_NE(e.message().find("f64"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace tenferro::fft
