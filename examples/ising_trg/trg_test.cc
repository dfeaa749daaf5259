// The TRG example against Onsager's exact solution, and its second derivative by AD
// against a finite difference of its first derivative by AD.

#include "trg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>

namespace tenferro::examples {
namespace {

// Note [TRG test size]: the free energy at the size (C = 24, 24 steps: 2^24
// sites, so the ordered phase's two-fold degeneracy shifts f by ln 2 / (N β) < 1e-7)
// through the forward program; the derivatives (gradient and second-derivative
// programs, whose SVD rules cost many χ² × χ² products per step) at C = 12, 14 steps,
// where they are checked against Onsager within that size's accuracy and against each
// other by finite differences.

TEST(Trg, FreeEnergyMatchesOnsager) {
  TrgOptions o;
  o.chi = 24;
  o.steps = 24;
  auto solver = TrgSolver::create(o);
  ASSERT_TRUE(solver) << solver.error().to_string();
  for (double beta : {0.3, 0.6}) {
    auto lz = (*solver)->log_z(beta);
    ASSERT_TRUE(lz) << lz.error().to_string();
    const double f = -*lz / beta, exact = -onsager_log_z(beta) / beta;
    EXPECT_LT(std::abs(f / exact - 1), 1e-6) << "beta " << beta << ": " << f << " vs " << exact;
  }
}

TEST(Trg, DerivativesByAdMatchOnsagerAndEachOther) {
  TrgOptions o;
  o.chi = 12;
  o.steps = 14;
  auto solver = TrgSolver::create(o);
  ASSERT_TRUE(solver) << solver.error().to_string();
  for (double beta : {0.3, 0.6}) {
    auto r = (*solver)->solve(beta);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_NEAR(r->energy, r->exact_energy, 1e-4) << beta;
    EXPECT_NEAR(r->specific_heat, r->exact_specific_heat, 1e-3) << beta;
  }
  // The second derivative by AD against a difference of the first derivative by AD, and
  // the first against a difference of ln Z.
  const double beta = 0.6, h = 1e-4;
  auto r = (*solver)->solve(beta);
  auto up = (*solver)->log_z_and_derivative(beta + h);
  auto down = (*solver)->log_z_and_derivative(beta - h);
  ASSERT_TRUE(r && up && down);
  const double c_fd = beta * beta * (up->second - down->second) / (2 * h);
  EXPECT_NEAR(r->specific_heat, c_fd, 1e-5 * (1 + std::abs(c_fd)));
  const double u_fd = -(up->first - down->first) / (2 * h);
  EXPECT_NEAR(r->energy, u_fd, 1e-6);
}

// Options out of range and non-finite β are typed errors before anything runs.
TEST(Trg, BadOptionsAreTypedErrors) {
  for (const auto& [chi, steps] : {std::pair<int64_t, int>{1, 4}, {kMaxTrgChi + 1, 4}, {4, 0}, {4, kMaxTrgSteps + 1}}) {
    TrgOptions o;
    o.chi = chi;
    o.steps = steps;
    auto p = trg_program(o);
    ASSERT_FALSE(p) << chi << " " << steps;
    EXPECT_EQ(p.error().code(), ErrorCode::kInvalidArgument);
  }
  TrgOptions o;
  o.chi = 4;
  o.steps = 2;
  auto solver = TrgSolver::create(o);
  ASSERT_TRUE(solver) << solver.error().to_string();
  for (double beta : {0.0, -1.0, std::nan(""), double{INFINITY}}) {
    auto r = (*solver)->solve(beta);
    ASSERT_FALSE(r) << beta;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE((*solver)->solve(0.4));
}

}  // namespace
}  // namespace tenferro::examples
