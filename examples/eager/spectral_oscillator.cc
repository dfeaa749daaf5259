// The quantum harmonic oscillator H = -1/2 d^2/dx^2 + 1/2 x^2 on a periodic grid, with
// the Fourier transforms of the eager API: the ground state by imaginary-time
// split-operator steps (kinetic factor applied in momentum space with rfft / irfft),
// its energy against the exact 1/2, and the gradient of the Rayleigh quotient by AD
// (through the transforms) against the spectral formula 2 (H psi - E psi) / <psi|psi>.
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "tenferro/eager/autograd.h"
#include "tenferro/fft_eager/fft_eager.h"

namespace eg = tenferro::eager;
namespace fft = tenferro::eager::fft;
using eg::EagerTensor;
using tenferro::DType;

int main() {
  auto rt = eg::EagerRuntime::create().value();
  const int64_t n = 256;
  const double length = 20.0, dx = length / static_cast<double>(n), tau = 0.005;
  std::vector<double> xs(n), psi0(n);
  for (int64_t i = 0; i < n; ++i) {
    xs[static_cast<size_t>(i)] = -length / 2 + dx * static_cast<double>(i);
    psi0[static_cast<size_t>(i)] = std::exp(-(xs[static_cast<size_t>(i)] - 1.0) * (xs[static_cast<size_t>(i)] - 1.0));
  }
  const EagerTensor x = rt->from_values<double>({n}, std::span<const double>(xs)).value();
  const EagerTensor v = 0.5 * x * x;
  // Angular wave numbers of the full and of the half (rfft) spectrum.
  const EagerTensor k = fft::fftfreq(*rt, n, dx).value() * (2 * std::numbers::pi);
  const EagerTensor kh = fft::rfftfreq(*rt, n, dx).value() * (2 * std::numbers::pi);
  const EagerTensor half_potential = eg::exp(v * (-tau / 2)).value();
  const EagerTensor kinetic = eg::astype(eg::exp(kh * kh * (-tau / 2)).value(), DType::kC128).value();

  // Imaginary time: psi <- e^{-tau V/2} F^-1 e^{-tau k^2/2} F e^{-tau V/2} psi, normalized.
  EagerTensor psi = rt->from_values<double>({n}, std::span<const double>(psi0)).value();
  for (int step = 0; step < 4000; ++step) {
    EagerTensor spectrum = fft::rfft(psi * half_potential, std::nullopt, -1, fft::Norm::kOrtho).value() * kinetic;
    psi = fft::irfft(spectrum, n, -1, fft::Norm::kOrtho).value() * half_potential;
    psi = psi / eg::sqrt(eg::sum(psi * psi).value() * dx).value();
  }

  // The Rayleigh quotient <psi|H|psi> / <psi|psi>, kinetic part in momentum space
  // (Parseval with the orthonormal transform).
  const EagerTensor half_k2 = eg::astype(0.5 * k * k, DType::kF64).value();
  const eg::EagerFn energy = [&](std::span<const EagerTensor> in) -> tenferro::Result<EagerTensor> {
    const EagerTensor p = in[0];
    TENFERRO_TRY(EagerTensor pc, eg::astype(p, DType::kC128));
    TENFERRO_TRY(EagerTensor ph, fft::fft(pc, std::nullopt, -1, fft::Norm::kOrtho));
    TENFERRO_TRY(EagerTensor power, eg::real(ph * eg::conj(ph).value()));
    TENFERRO_TRY(EagerTensor kinetic_e, eg::sum(power * half_k2));
    TENFERRO_TRY(EagerTensor potential_e, eg::sum(p * p * v));
    TENFERRO_TRY(EagerTensor norm, eg::sum(p * p));
    return (kinetic_e + potential_e) / norm;
  };
  const EagerTensor args[] = {psi};
  const double e0 = eg::item(energy(args).value()).value().real();

  // The gradient by AD against the formula 2 (H p - R p) / <p|p>, H p by the spectral
  // Laplacian: at the ground state (where it nearly vanishes) and at the initial state.
  const EagerTensor h_k2 = eg::astype(half_k2, DType::kC128).value();
  double diff = 0, scale = 0;
  for (const EagerTensor& p : {psi, rt->from_values<double>({n}, std::span<const double>(psi0)).value()}) {
    const EagerTensor at[] = {p};
    const double r = eg::item(energy(at).value()).value().real();
    const EagerTensor grad = eg::grad(energy, at).value()[0];
    const EagerTensor lap = fft::ifft(fft::fft(eg::astype(p, DType::kC128).value()).value() * h_k2).value();
    const EagerTensor h_p = eg::real(lap).value() + v * p;
    const EagerTensor formula = 2.0 * (h_p - r * p) / eg::sum(p * p).value();
    for (int64_t i = 0; i < n; ++i) {
      const double g = grad.tensor().get<double>({i}).value(), f = formula.tensor().get<double>({i}).value();
      diff = std::max(diff, std::abs(g - f));
      scale = std::max(scale, std::abs(f));
    }
  }
  std::printf(
      "ground-state energy %.12f (exact 0.5); gradient of <H> by AD vs 2 (H - R) p / <p|p>: %.3g (scale %.3g)\n", e0,
      diff, scale);
  return std::abs(e0 - 0.5) <= 1e-8 && diff <= 1e-10 * scale ? 0 : 1;
}
