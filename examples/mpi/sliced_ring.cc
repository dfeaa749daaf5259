// Distributed tensor-network contraction with MPI: one tenferro runtime per rank (no
// global state to share or to collide on) and the application's own communication
// (ARCHITECTURE §6 "distributed").
//
// The squared norm of a periodic matrix product state — a ring of `sites` tensors
// A_k[a_k, p_k, a_{k+1}] with a_sites = a_0 — is contracted with its closing ket bond a_0
// sliced over the ranks (index slicing, as tensor-network simulators do to split work
// and memory): rank r contracts the ring for a_0 = r, r + P, ... site by site with eager
// einsum, the first and last tensors viewed at that a_0 (metadata-only slices), and the
// partial norms are summed with MPI_Allreduce. Rank 0 checks the sum against the norm of
// the full state vector built amplitude by amplitude (each a trace of a product of
// matrices), an independent computation. Exits nonzero on a mismatch on any rank.
//
//   mpiexec -n 2 examples/mpi/mpi_example_sliced_ring [SITES] [BOND]
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tenferro/eager/eager.h"

namespace {

using tenferro::DType;
using tenferro::Tensor;
using tenferro::eager::EagerRuntime;
using tenferro::eager::EagerTensor;

constexpr int64_t kPhys = 2;

// The ring's contribution for ket bond a_0 = a0: sum over every other index.
double sliced_norm(const std::vector<EagerTensor>& ring, int64_t a0) {
  namespace eg = tenferro::eager;
  const auto n = ring.size();
  const EagerTensor first = eg::slice(ring[0], 0, a0, a0 + 1).value();     // [1, p, a1]
  const EagerTensor last = eg::slice(ring[n - 1], 2, a0, a0 + 1).value();  // [a_{n-1}, p, 1]
  // env[a_k, b_0, b_k]: ket bond a_k, the bra's open first bond b_0 and its bond b_k.
  EagerTensor env = eg::einsum("xpy,bpc->ybc", {first, ring[0]}).value();
  for (size_t k = 1; k + 1 < n; ++k) env = eg::einsum("xbc,xpy,cpz->ybz", {env, ring[k], ring[k]}).value();
  // Close the ring: the ket's last bond is a_0 (fixed), the bra's is b_0 (traced).
  const EagerTensor z = eg::einsum("xbc,xpy,cpb->", {env, last, ring[n - 1]}).value();
  return eg::item(z).value().real();
}

// <psi|psi> from the full state: psi(p_0 .. p_{n-1}) = Tr(A_0[:, p_0, :] ... A_{n-1}[:, p_{n-1}, :]).
double full_state_norm(const std::vector<Tensor>& ring, int64_t bond) {
  const auto n = static_cast<int64_t>(ring.size());
  auto at = [&](int64_t k, int64_t a, int64_t p, int64_t b) {
    return ring[static_cast<size_t>(k)].get_as_c128({a, p, b}).value().real();
  };
  double norm = 0;
  std::vector<double> m(static_cast<size_t>(bond * bond)), t(m.size());
  for (int64_t config = 0; config < (int64_t{1} << n); ++config) {
    for (int64_t a = 0; a < bond; ++a) {
      for (int64_t b = 0; b < bond; ++b) m[static_cast<size_t>(a * bond + b)] = at(0, a, config & 1, b);
    }
    for (int64_t k = 1; k < n; ++k) {
      const int64_t p = (config >> k) & 1;
      for (int64_t a = 0; a < bond; ++a) {
        for (int64_t b = 0; b < bond; ++b) {
          double s = 0;
          for (int64_t c = 0; c < bond; ++c) s += m[static_cast<size_t>(a * bond + c)] * at(k, c, p, b);
          t[static_cast<size_t>(a * bond + b)] = s;
        }
      }
      m.swap(t);
    }
    double amp = 0;
    for (int64_t a = 0; a < bond; ++a) amp += m[static_cast<size_t>(a * bond + a)];
    norm += amp * amp;
  }
  return norm;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t sites = argc > 1 ? std::atoll(argv[1]) : 10;
  const int64_t bond = argc > 2 ? std::atoll(argv[2]) : 5;
  if (sites < 2 || sites > 20 || bond < 1 || bond > 64) {
    if (rank == 0) std::fprintf(stderr, "usage: sliced_ring [SITES 2..20] [BOND 1..64]\n");
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  {
    // This rank's runtime: one CPU domain of one worker (the ranks share the machine).
    tenferro::eager::EagerConfig config;
    auto topo = tenferro::cpu::CpuTopology::discover().value();
    config.engine.domains = {tenferro::cpu::CpuDomainConfig{0, topo.allowed_cpus, 1, nullptr}};
    auto rt = EagerRuntime::create(config).value();
    // The same ring on every rank (same seeds); a real application would load its part.
    std::vector<Tensor> host;
    std::vector<EagerTensor> ring;
    for (int64_t k = 0; k < sites; ++k) {
      host.push_back(Tensor::random_normal(DType::kF64, {bond, kPhys, bond}, 7 + static_cast<uint64_t>(k)).value());
      ring.push_back(rt->from_host(host.back()).value());
    }
    double mine = 0;
    for (int64_t a0 = rank; a0 < bond; a0 += size) mine += sliced_norm(ring, a0);
    double total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
      const double want = full_state_norm(host, bond);
      std::printf("periodic MPS, %lld sites, bond %lld, %d ranks: sliced %.12e, full state %.12e\n",
                  static_cast<long long>(sites), static_cast<long long>(bond), size, total, want);
      if (!(std::abs(total - want) <= 1e-10 * std::abs(want))) {
        std::printf("mismatch\n");
        status = 1;
      }
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
