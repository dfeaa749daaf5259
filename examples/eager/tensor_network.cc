// A small tensor-network contraction with the eager API: the squared norm of a random
// matrix product state (MPS), contracted site by site, checked against the norm of the
// full state vector built from the same tensors.
#include <cmath>
#include <cstdio>
#include <vector>

#include "tenferro/eager/eager.h"

using tenferro::DType;
using tenferro::Tensor;
using tenferro::eager::EagerTensor;

int main() {
  auto rt = tenferro::eager::EagerRuntime::create().value();
  const int sites = 6;
  const int64_t phys = 2, bond = 3;
  // Site tensors A[k] with axes (left bond, physical, right bond); the ends have bond 1.
  std::vector<EagerTensor> mps;
  for (int k = 0; k < sites; ++k) {
    const int64_t left = k == 0 ? 1 : bond, right = k == sites - 1 ? 1 : bond;
    mps.push_back(rt->from_host(Tensor::random_normal(DType::kF64, {left, phys, right}, 100 + k).value()).value());
  }
  // <psi|psi> by transfer matrices: E <- E . A . A, one site at a time.
  EagerTensor env = rt->context().ones({1, 1}).value();
  for (const EagerTensor& a : mps) {
    env = tenferro::eager::einsum("ab,apc,bpd->cd", {env, a, a}).value();
  }
  const double norm2 = tenferro::eager::item(env, {0, 0}).value().real();
  // The full state vector: contract the bonds, then sum the squares of all amplitudes.
  EagerTensor psi = tenferro::eager::reshape(mps[0], {phys, bond}).value();  // (p0, bond)
  for (int k = 1; k < sites; ++k) {
    EagerTensor a = mps[static_cast<size_t>(k)];
    psi = tenferro::eager::einsum("xa,apb->xpb", {psi, a}).value();
    const int64_t right = k == sites - 1 ? 1 : bond;
    psi = tenferro::eager::reshape(psi, {-1, right}).value();
  }
  const double full = tenferro::eager::item(tenferro::eager::sum(psi * psi).value()).value().real();
  std::printf("MPS norm^2: transfer matrices %.12f, full state %.12f\n", norm2, full);
  if (!(std::abs(norm2 - full) <= 1e-10 * std::abs(full)) || psi.numel() != 64) {
    std::printf("mismatch\n");
    return 1;
  }
  return 0;
}
