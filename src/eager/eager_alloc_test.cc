// Allocation counts of warm eager calls (a separate executable: it replaces operator new).
#include <gtest/gtest.h>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/eager/eager.h"
#include "tenferro/test_support/alloc_counter.h"

namespace tenferro::eager {
namespace {

// A warm eager `a + b` allocates only its output: 8 elements live inside the storage
// handle's allocation (Note [Inline small storage]), 512 come from the domain's buffer
// pool (no operator new for them, no pool miss); the one allocation per call is the
// output's storage handle. No metadata is allocated on the way.
TEST(EagerAlloc, WarmAddAllocatesOnlyItsOutputHandle) {
  auto rt = EagerRuntime::create().value();
  EagerTensor a = rt->from_host(Tensor::random_normal(DType::kF64, {8}, 1).value()).value();
  EagerTensor b = rt->from_host(Tensor::random_normal(DType::kF64, {8}, 2).value()).value();
  EagerTensor big_a = rt->from_host(Tensor::random_normal(DType::kF64, {512}, 3).value()).value();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(add(a, b));
    ASSERT_TRUE(add(big_a, big_a));
  }
  auto cpu = cpu_runtime::cpu_engine_of(*rt->runtime().engine_bridge(rt->engine()).value());
  ASSERT_NE(cpu, nullptr);
  const int64_t misses = cpu->pool(rt->default_domain())->stats().misses;
  const int64_t before = test_support::allocations();
  constexpr int kCalls = 100;
  for (int i = 0; i < kCalls; ++i) {
    Result<EagerTensor> c = add(a, b);
    ASSERT_TRUE(c);
    Result<EagerTensor> d = add(big_a, big_a);  // 4 KiB of data: still from the pool
    ASSERT_TRUE(d);
  }
  const int64_t per_call = (test_support::allocations() - before) / (2 * kCalls);
  EXPECT_LE(per_call, 1) << "allocations per warm call: " << per_call;
  EXPECT_EQ(cpu->pool(rt->default_domain())->stats().misses, misses) << "output data came from the pool";
}

}  // namespace
}  // namespace tenferro::eager
