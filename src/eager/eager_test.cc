#include "tenferro/eager/eager.h"

#include <gtest/gtest.h>

namespace tenferro::eager {
namespace {

TEST(Eager, Smoke) {
  auto rt = EagerRuntime::create().value();
  EagerTensor a = rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  EagerTensor b = rt->from_values<double>({2, 2}, {5, 6, 7, 8}).value();
  EagerTensor c = a + b;
  EXPECT_EQ(item(c, {0, 1}).value(), c128(8, 0));
  EagerTensor m = matmul(a, b).value();
  EXPECT_EQ(item(m, {0, 0}).value(), c128(19, 0));
  EagerTensor e = einsum("ij,jk->ik", {a, b}).value();
  EXPECT_EQ(item(e, {1, 1}).value(), c128(50, 0));
}

}  // namespace
}  // namespace tenferro::eager
