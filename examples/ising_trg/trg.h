#pragma once
/// \file
/// The 2D Ising model (J = 1, zero field, square lattice) by Levin–Nave tensor
/// renormalization group as one differentiable program: ln Z / N as a function of the
/// inverse temperature β, its first derivative (internal energy) and second derivative
/// (specific heat) by the AD transforms, next to Onsager's exact solution.

#include <cstdint>
#include <memory>

#include "tenferro/ad/ad.h"
#include "tenferro/core/result.h"
#include "tenferro/program/program.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::examples {

/// The largest bond dimension and number of steps trg_program accepts (larger values are
/// no computation anyone can run: the tensors have chi^2 x chi^2 unfoldings, the program
/// grows with the steps, and 2^1000 sites are the thermodynamic limit to double precision).
inline constexpr int64_t kMaxTrgChi = int64_t{1} << 20;
inline constexpr int kMaxTrgSteps = 1000;

struct TrgOptions {
  int64_t chi = 24;           ///< bond dimension kept by each truncated SVD
  int steps = 20;             ///< TRG steps (the lattice has 2^steps sites)
  double broadening = 1e-12;  ///< SVD derivative broadening (LinalgAdOptions)
  int threads = 0;            ///< CPU engine threads (0: every allowed CPU)
};

/// The program: one f64 rank-0 input β, one f64 rank-0 output ln Z / N. Errors: those of
/// program building (kInvalidArgument for chi outside [2, kMaxTrgChi] or steps outside
/// [1, kMaxTrgSteps]).
Result<program::CompiledGraph> trg_program(const TrgOptions& options);

/// Per-site values at one β.
struct TrgResult {
  double beta = 0;
  double log_z = 0;          ///< ln Z / N
  double free_energy = 0;    ///< f = −ln Z / (N β)
  double energy = 0;         ///< u = −∂(ln Z / N)/∂β (first derivative by AD)
  double specific_heat = 0;  ///< c = β² ∂²(ln Z / N)/∂β² (second derivative by AD)
  double exact_free_energy = 0, exact_energy = 0, exact_specific_heat = 0;  ///< Onsager
};

/// Builds the programs once (value, gradient, second derivative), prepares them on a
/// CPU runtime with the einsum and linalg modules, and evaluates them per β. Not
/// thread-safe.
class TrgSolver {
 public:
  static Result<std::unique_ptr<TrgSolver>> create(const TrgOptions& options);
  /// Every field of TrgResult at `beta` (> 0). One run of the second-derivative program.
  Result<TrgResult> solve(double beta);
  /// ln Z / N alone (the forward program).
  Result<double> log_z(double beta);
  /// (ln Z / N, its β derivative) from the gradient program.
  Result<std::pair<double, double>> log_z_and_derivative(double beta);

 private:
  TrgSolver() = default;
  Result<std::vector<Tensor>> run(const program::CompiledGraph& g, double beta);
  std::shared_ptr<runtime::Runtime> rt_;
  program::CompiledGraph f_, grad_, hvp_;
};

/// Onsager's exact ln Z / N, −∂/∂β of it and β² ∂²/∂β² of it (numerical quadrature and
/// differences of the quadrature; accurate to ~1e-10 away from the critical point).
double onsager_log_z(double beta);
double onsager_energy(double beta);
double onsager_specific_heat(double beta);

}  // namespace tenferro::examples
