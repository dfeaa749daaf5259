// Power iteration with the eager API: the largest eigenvalue of the 1-D Laplacian
// tridiag(-1, 2, -1) of size n, whose eigenvalues are 2 - 2 cos(k pi / (n + 1)).
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "tenferro/eager/eager.h"

using tenferro::eager::EagerTensor;

int main() {
  auto rt = tenferro::eager::EagerRuntime::create().value();
  const int64_t n = 8;
  std::vector<double> a(static_cast<size_t>(n * n), 0.0);  // row-major
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i * n + i)] = 2.0;
    if (i + 1 < n) a[static_cast<size_t>(i * n + i + 1)] = a[static_cast<size_t>((i + 1) * n + i)] = -1.0;
  }
  EagerTensor A = rt->from_values<double>({n, n}, std::span<const double>(a)).value();
  EagerTensor x = rt->context().ones({n}).value();
  x = x + tenferro::eager::astype(rt->context().iota({n}, 0).value(), tenferro::DType::kF64).value() * 0.1;
  double lambda = 0;
  for (int it = 0; it < 400; ++it) {
    EagerTensor y = tenferro::eager::matmul(A, x).value();
    lambda = tenferro::eager::item(tenferro::eager::sum(x * y).value()).value().real() /
             tenferro::eager::item(tenferro::eager::sum(x * x).value()).value().real();  // Rayleigh quotient
    EagerTensor norm = tenferro::eager::sqrt(tenferro::eager::sum(y * y).value()).value();
    x = y / norm;
  }
  const double exact = 2.0 - 2.0 * std::cos(static_cast<double>(n) * std::numbers::pi / static_cast<double>(n + 1));
  std::printf("largest eigenvalue: power iteration %.12f, exact %.12f\n", lambda, exact);
  return std::abs(lambda - exact) <= 1e-9 ? 0 : 1;
}
