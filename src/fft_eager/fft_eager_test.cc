#include "tenferro/fft_eager/fft_eager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "tenferro/eager/autograd.h"
#include "tenferro/fft/fft.h"

namespace tenferro::eager {
namespace {

using cl = std::complex<long double>;

std::vector<c128> flat(const EagerTensor& x) {
  const Tensor t = x.tensor();
  std::vector<c128> v;
  const int64_t n = t.numel();
  const Tensor f = t.to_col_major().value().reshape({n}).value();
  for (int64_t i = 0; i < n; ++i) v.push_back(f.get_as_c128({i}).value());
  return v;
}

// Row-major values of a 2-D tensor.
std::vector<std::vector<c128>> rows(const EagerTensor& x) {
  std::vector<std::vector<c128>> r(static_cast<size_t>(x.shape()[0]));
  for (int64_t i = 0; i < x.shape()[0]; ++i)
    for (int64_t j = 0; j < x.shape()[1]; ++j)
      r[static_cast<size_t>(i)].push_back(x.tensor().get_as_c128({i, j}).value());
  return r;
}

// The naive 1-D DFT of `x` (cropped or zero-padded to n), sign -1 or +1, unnormalized.
std::vector<c128> dft(std::vector<c128> x, int64_t n, int sign) {
  x.resize(static_cast<size_t>(n));
  std::vector<c128> y(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    cl s = 0;
    for (int64_t j = 0; j < n; ++j) {
      const long double a = sign * 2 * std::numbers::pi_v<long double> * static_cast<long double>((j * k) % n) /
                            static_cast<long double>(n);
      s += cl(x[static_cast<size_t>(j)].real(), x[static_cast<size_t>(j)].imag()) * cl(std::cos(a), std::sin(a));
    }
    y[static_cast<size_t>(k)] = c128(static_cast<double>(s.real()), static_cast<double>(s.imag()));
  }
  return y;
}

void expect_near(const std::vector<c128>& got, const std::vector<c128>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(std::abs(got[i] - want[i]), tol) << what << " at " << i;
}

TEST(FftEager, OneDimensionalTransformsFollowNumpy) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kF64, {3, 10}, 1).value()).value();
  const auto xr = rows(x);
  // fft of a real input (converted), cropped and padded along the last axis.
  for (std::optional<int64_t> n : {std::optional<int64_t>{}, std::optional<int64_t>{6}, std::optional<int64_t>{13}}) {
    const int64_t len = n.value_or(10);
    const EagerTensor y = fft::fft(x, n).value();
    EXPECT_EQ(y.dtype(), DType::kC128);
    const auto yr = rows(y);
    for (size_t i = 0; i < 3; ++i) expect_near(yr[i], dft(xr[i], len, -1), 1e-12, "fft n=" + std::to_string(len));
    // rfft: the first len/2 + 1 bins; irfft back to len points.
    const EagerTensor h = fft::rfft(x, n).value();
    const auto hr = rows(h);
    for (size_t i = 0; i < 3; ++i) {
      std::vector<c128> want = dft(xr[i], len, -1);
      want.resize(static_cast<size_t>(len / 2 + 1));
      expect_near(hr[i], want, 1e-12, "rfft n=" + std::to_string(len));
    }
    const EagerTensor back = fft::irfft(h, len).value();
    EXPECT_EQ(back.dtype(), DType::kF64);
    std::vector<std::vector<c128>> want_back = xr;
    for (auto& r : want_back) r.resize(static_cast<size_t>(len));
    const auto br = rows(back);
    for (size_t i = 0; i < 3; ++i) expect_near(br[i], want_back[i], 1e-12, "irfft(rfft) n=" + std::to_string(len));
  }
  // ifft along axis 0 (negative axis -2), ortho: (1/sqrt 3) sum exp(+...).
  const EagerTensor z = fft::ifft(x, std::nullopt, -2, fft::Norm::kOrtho).value();
  for (int64_t j = 0; j < 10; ++j) {
    std::vector<c128> col;
    for (size_t i = 0; i < 3; ++i) col.push_back(xr[i][static_cast<size_t>(j)]);
    std::vector<c128> want = dft(col, 3, +1);
    for (c128& w : want) w /= std::sqrt(3.0);
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_LT(std::abs(z.tensor().get_as_c128({i, j}).value() - want[static_cast<size_t>(i)]), 1e-12);
  }
  // irfft's default length is 2 (m - 1).
  EXPECT_EQ(fft::irfft(fft::rfft(x).value()).value().shape(), Shape({3, 10}));
}

TEST(FftEager, HermitianTransformsMatchTheirDefinitions) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_host(Tensor::random_normal(DType::kC128, {6}, 2).value()).value();
  // hfft(a, n) = n * irfft(conj(a), n) for the backward norm (the spectrum of the signal
  // whose first half is a).
  const EagerTensor h = fft::hfft(a, 10).value();
  const EagerTensor want = fft::irfft(conj(a).value(), 10).value() * 10.0;
  expect_near(flat(h), flat(want), 1e-12, "hfft");
  // ihfft(x) = conj(rfft(x)) / n.
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kF64, {9}, 3).value()).value();
  const EagerTensor ih = fft::ihfft(x).value();
  const EagerTensor want2 = conj(fft::rfft(x).value()).value() * (1.0 / 9.0);
  expect_near(flat(ih), flat(want2), 1e-12, "ihfft");
}

TEST(FftEager, NDimensionalTransformsComposeTheOneDimensionalOnes) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kC64, {4, 5, 6}, 4).value()).value();
  // fftn over all axes = fft over each axis in turn.
  const EagerTensor all = fft::fftn(x).value();
  const EagerTensor seq = fft::fft(fft::fft(fft::fft(x, {}, 0).value(), {}, 1).value(), {}, 2).value();
  expect_near(flat(all), flat(seq), 2e-4, "fftn");
  // s given without axes: the last len(s) axes, cropped / padded.
  const EagerTensor part = fft::fftn(x, {3, 8}).value();
  EXPECT_EQ(part.shape(), Shape({4, 3, 8}));
  const EagerTensor part_seq = fft::fft(fft::fft(x, 3, 1).value(), 8, 2).value();
  expect_near(flat(part), flat(part_seq), 2e-4, "fftn s");
  // rfftn then irfftn with the lengths restores a real input.
  const EagerTensor r = rt->from_host(Tensor::random_normal(DType::kF64, {4, 5, 7}, 5).value()).value();
  const EagerTensor spec = fft::rfftn(r, {}, {0, 2}).value();
  EXPECT_EQ(spec.shape(), Shape({4, 5, 4}));
  const EagerTensor back = fft::irfftn(spec, {4, 7}, {0, 2}).value();
  expect_near(flat(back), flat(r), 1e-12, "irfftn(rfftn)");
  // ifftn inverts fftn for each norm.
  for (fft::Norm norm : {fft::Norm::kBackward, fft::Norm::kOrtho, fft::Norm::kForward}) {
    const EagerTensor y = fft::ifftn(fft::fftn(x, {}, {2, 0}, norm).value(), {}, {2, 0}, norm).value();
    expect_near(flat(y), flat(x), 2e-5, "ifftn(fftn) " + std::string(tenferro::fft::norm_name(norm)));
  }
}

TEST(FftEager, FrequenciesAndShiftsFollowNumpy) {
  auto rt = EagerRuntime::create().value();
  // numpy.fft.fftfreq(5, 0.5) = [0, 0.4, 0.8, -0.8, -0.4]; fftfreq(4) = [0, .25, -.5, -.25].
  expect_near(flat(fft::fftfreq(*rt, 5, 0.5).value()), {0, 0.4, 0.8, -0.8, -0.4}, 1e-15, "fftfreq 5");
  expect_near(flat(fft::fftfreq(*rt, 4).value()), {0, 0.25, -0.5, -0.25}, 1e-15, "fftfreq 4");
  expect_near(flat(fft::rfftfreq(*rt, 5, 0.5).value()), {0, 0.4, 0.8}, 1e-15, "rfftfreq 5");
  expect_near(flat(fft::rfftfreq(*rt, 4).value()), {0, 0.25, 0.5}, 1e-15, "rfftfreq 4");
  EXPECT_EQ(fft::fftfreq(*rt, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fft::rfftfreq(*rt, 3, 0.0).error().code(), ErrorCode::kInvalidArgument);
  // fftshift of fftfreq puts the frequencies in increasing order; ifftshift undoes it.
  for (int64_t n : {4, 5}) {
    const EagerTensor f = fft::fftfreq(*rt, n).value();
    const auto s = flat(fft::fftshift(f).value());
    for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1].real(), s[i].real()) << "n=" << n;
    expect_near(flat(fft::ifftshift(fft::fftshift(f).value()).value()), flat(f), 0.0, "ifftshift");
  }
  // Over chosen axes of a 2-D tensor: [[0,1,2],[3,4,5]] shifted on axis 1 -> [[2,0,1],[5,3,4]].
  const EagerTensor m = rt->from_values<double>({2, 3}, {0, 1, 2, 3, 4, 5}).value();
  const auto sh = rows(fft::fftshift(m, {1}).value());
  expect_near(sh[0], {2, 0, 1}, 0.0, "fftshift row 0");
  expect_near(sh[1], {5, 3, 4}, 0.0, "fftshift row 1");
}

TEST(FftEager, GradientsMatchFiniteDifferences) {
  auto rt = EagerRuntime::create().value();
  Context nc = rt->context().no_grad();
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kF64, {3, 12}, 6).value()).value();
  const EagerTensor w = rt->from_host(Tensor::random_normal(DType::kF64, {3, 7}, 7).value()).value();
  // A power spectrum weighted per bin, through a padded rfft and a shifted irfft.
  const EagerFn f = [&](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    TENFERRO_TRY(EagerTensor y, fft::rfft(v[0], 12, -1, fft::Norm::kOrtho));
    TENFERRO_TRY(EagerTensor p, mul(y, conj(y).value()));
    TENFERRO_TRY(EagerTensor q, mul(real(p).value(), w));
    TENFERRO_TRY(EagerTensor back, fft::irfft(fft::fftshift(y, {1}).value(), 9));
    TENFERRO_TRY(EagerTensor s1, sum(q));
    TENFERRO_TRY(EagerTensor s2, sum(mul(back, back).value()));
    return add(s1, s2);
  };
  const EagerTensor xs[] = {x};
  auto g = grad(f, xs);
  ASSERT_TRUE(g) << g.error().to_string();
  const EagerTensor d = rt->from_host(Tensor::random_normal(DType::kF64, {3, 12}, 8).value()).value();
  const double h = 1e-6;
  auto at = [&](double t) {
    const EagerTensor moved[] = {nc.add(x, nc.mul(nc.scalar(c128(t)).value(), d).value()).value()};
    return item(f(moved).value()).value().real();
  };
  const double fd = (at(h) - at(-h)) / (2 * h);
  const double ad = item(sum(mul((*g)[0], d).value()).value()).value().real();
  EXPECT_NEAR(ad, fd, 1e-6 * (1 + std::abs(fd)));
}

TEST(FftEager, RepeatedCallsReuseThePlans) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kC128, {8, 64}, 9).value()).value();
  const auto before = rt->fft_plans().stats();
  for (int i = 0; i < 3; ++i) (void)fft::fft(x).value();
  const auto after = rt->fft_plans().stats();
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.hits - before.hits, 2);
}

TEST(FftEager, ThePlanCacheCapacityIsConfigured) {
  EagerConfig bad;
  bad.fft_plan_capacity = 0;
  EXPECT_EQ(EagerRuntime::create(bad).error().code(), ErrorCode::kInvalidArgument);
  EagerConfig one;
  one.fft_plan_capacity = 1;
  auto rt = EagerRuntime::create(one).value();
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kC128, {4, 32}, 12).value()).value();
  const EagerTensor a = fft::fft(x).value(), b = fft::fft(x, std::nullopt, 0).value(), c = fft::fft(x).value();
  expect_near(flat(a), flat(c), 1e-12, "the same transform after an eviction");
  EXPECT_EQ(rt->fft_plans().stats().capacity, 1);
  EXPECT_EQ(rt->fft_plans().stats().entries, 1);
  EXPECT_GE(rt->fft_plans().stats().evictions, 2);
  (void)b;
}

TEST(FftEager, ErrorsAreTyped) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor x = rt->from_host(Tensor::random_normal(DType::kF64, {3, 4}, 10).value()).value();
  const EagerTensor z = rt->from_host(Tensor::random_normal(DType::kC128, {3, 4}, 11).value()).value();
  const EagerTensor i = rt->from_host(Tensor::zeros(DType::kI64, {3, 4}).value()).value();
  EXPECT_EQ(fft::fft(EagerTensor()).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fft::fft(i).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(fft::rfft(z).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(fft::fft(x, std::nullopt, 2).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(fft::fft(x, std::nullopt, -3).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(fft::fft(x, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fft::irfft(z, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fft::irfft(z, std::nullopt, 0).value().shape(), Shape({4, 4}));
  EXPECT_EQ(fft::fftn(x, {4, 4}, {0}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fft::fftn(x, {}, {1, 1}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fft::fftn(x, {2, 2, 2}).error().code(), ErrorCode::kInvalidArgument);
  const EagerTensor s = rt->context().scalar(1.0).value();
  EXPECT_EQ(fft::fftn(s).error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::eager
