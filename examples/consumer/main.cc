// Builds against the installed tenferro package and checks a few values.
#include <cstdio>

#include "tenferro/tensor/tensor.h"

int main() {
  using tenferro::Tensor;
  auto m = Tensor::from_row_major<double>({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  if (!m) {
    std::fprintf(stderr, "%s\n", m.error().to_string().c_str());
    return 1;
  }
  auto t = m->transpose();
  auto v = t.value().get<double>({2, 1});  // m[1, 2] = 6
  if (!v || *v != 6.0) {
    std::fprintf(stderr, "consumer: wrong value\n");
    return 1;
  }
  std::printf("consumer: tenferro package works (m^T[2,1] = %g)\n", *v);
  return 0;
}
