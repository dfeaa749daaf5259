// The 2D Ising model by tensor renormalization group, with the internal energy and the
// specific heat from first and second derivatives by AD, next to Onsager's solution.
//
//   ising_trg [--chi C] [--steps S] [--check] [BETA...]
//
// --check exits nonzero when a free energy is further than 1e-4 (relative) from
// Onsager's (a smoke test for small C; `tenferro demo trg` is the full-size command).

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "trg.h"

namespace {
// The whole of `text` as a number of type T, or false (junk, overflow, empty).
template <class T>
bool parse(const std::string& text, T& out) {
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, out);
  return r.ec == std::errc{} && r.ptr == end && !text.empty();
}
}  // namespace

int main(int argc, char** argv) {
  tenferro::examples::TrgOptions o;
  bool check = false;
  std::vector<double> betas;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    double beta = 0;
    bool ok = true;
    if (a == "--chi" && i + 1 < argc) {
      ok = parse(argv[++i], o.chi);
    } else if (a == "--steps" && i + 1 < argc) {
      ok = parse(argv[++i], o.steps);
    } else if (a == "--check") {
      check = true;
    } else if ((ok = parse(a, beta))) {
      betas.push_back(beta);
    }
    if (!ok) {
      std::fprintf(stderr, "usage: ising_trg [--chi C] [--steps S] [--check] [BETA...]\n");
      return 2;
    }
  }
  if (betas.empty()) betas = {0.3, 0.4, 0.5, 0.6};
  auto solver = tenferro::examples::TrgSolver::create(o);
  if (!solver) {
    std::fprintf(stderr, "%s\n", solver.error().to_string().c_str());
    return 1;
  }
  std::printf("2D Ising, TRG chi = %lld, %d steps (2^%d sites)\n", static_cast<long long>(o.chi), o.steps, o.steps);
  std::printf("%6s  %14s %14s  %12s %12s  %10s %10s\n", "beta", "f (TRG)", "f (Onsager)", "u (AD)", "u (exact)",
              "c (AD)", "c (exact)");
  int bad = 0;
  for (double b : betas) {
    auto r = (*solver)->solve(b);
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
      return 1;
    }
    std::printf("%6.3f  %14.10f %14.10f  %12.8f %12.8f  %10.6f %10.6f\n", b, r->free_energy, r->exact_free_energy,
                r->energy, r->exact_energy, r->specific_heat, r->exact_specific_heat);
    if (std::abs(r->free_energy - r->exact_free_energy) > 1e-4 * std::abs(r->exact_free_energy)) ++bad;
  }
  return check && bad > 0 ? 1 : 0;
}
