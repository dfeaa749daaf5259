// A warm prepared einsum allocates no metadata per step (Note [Einsum workspace]).
// This executable replaces the global operator new to count heap allocations.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tenferro/cpu/context.h"
#include "tenferro/einsum_cpu/einsum.h"

#include "tenferro/test_support/alloc_counter.h"

namespace tenferro::einsum {
namespace {

using test_support::allocations;

struct Net {
  const char* text;
  std::vector<Shape> shapes;
};

std::vector<Tensor> operands(const Net& net) {
  std::vector<Tensor> ops;
  uint64_t seed = 1;
  for (const Shape& s : net.shapes) ops.push_back(Tensor::random_normal(DType::kF64, s, seed++).value());
  return ops;
}

// Allocations of one warm execute_into (after two warm-up runs), averaged over 4 runs.
int64_t warm_into_allocations(const Net& net, int64_t* steps) {
  auto plan = EinsumPlan::prepare(net.text, net.shapes, DType::kF64).value();
  *steps = static_cast<int64_t>(plan->tree().steps.size());
  const std::vector<Tensor> ops = operands(net);
  Tensor out = Tensor::zeros(DType::kF64, plan->output_shape()).value();
  auto pool = HostBufferPool::create();
  EinsumWorkspace ws = plan->make_workspace();
  auto ctx = cpu::CpuExecutionContext::sequential();
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(plan->execute_into(ctx, ops, out, ws, pool));
  const int64_t before = allocations();
  test_support::g_trap_allocations = std::getenv("TENFERRO_ALLOC_TRAP") != nullptr;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(plan->execute_into(ctx, ops, out, ws, pool));
  test_support::g_trap_allocations = false;
  const int64_t made = allocations() - before;
  // The result is right after the reuse: compare with a fresh execution.
  Tensor fresh = plan->execute(ctx, ops).value().to_col_major().value();
  Tensor got = out.to_col_major().value();
  const auto* f = static_cast<const double*>(fresh.storage()->data());
  const auto* g = static_cast<const double*>(got.storage()->data());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(g[i], f[i], 1e-12 * (1 + std::abs(f[i]))) << net.text;
  return made / 4;
}

TEST(EinsumAllocations, WarmExecuteIntoAllocatesNothing) {
  const Net nets[] = {
      {"ij,jk,kl,lm->im", {{6, 7}, {7, 8}, {8, 9}, {9, 5}}},
      {"bij,bjk,bkl->bil", {{3, 4, 5}, {3, 5, 6}, {3, 6, 2}}},
      {"abc,cde,efa,bdf->", {{3, 4, 5}, {5, 2, 3}, {3, 4, 3}, {4, 2, 4}}},
      {"ab,bc,cd,de,ef,fg,gh,hi->ai", {{4, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 7}, {7, 6}, {6, 5}, {5, 4}}},
      // A label of one operand only (summed before the steps), a diagonal summed away,
      // and a repeated output label (a zero-filled destination).
      {"ijk,jl,lm->im", {{4, 5, 6}, {5, 7}, {7, 3}}},
      {"aab,bc,cd->d", {{3, 3, 4}, {4, 5}, {5, 2}}},
      {"ij,jk,kl->iil", {{4, 5}, {5, 6}, {6, 3}}},
      // A tensor-train step pair: the second step's site tensor has its free label
      // between the contracted ones (the short-side kernel, no pack).
      {"acs,ab,bds->cd", {{19, 19, 12}, {19, 19}, {19, 19, 12}}},
  };
  for (const Net& net : nets) {
    int64_t steps = 0;
    EXPECT_EQ(warm_into_allocations(net, &steps), 0) << net.text << " (" << steps << " steps)";
    EXPECT_GE(steps, 2);
  }
}

TEST(EinsumAllocations, AllocatingExecuteCostsDoNotGrowWithSteps) {
  // A warm execute allocates its result and nothing per step: a 2-step and a 7-step
  // chain make the same number of allocations.
  auto count = [](const Net& net) {
    auto plan = EinsumPlan::prepare(net.text, net.shapes, DType::kF64).value();
    const std::vector<Tensor> ops = operands(net);
    auto pool = HostBufferPool::create();
    EinsumWorkspace ws = plan->make_workspace();
    auto ctx = cpu::CpuExecutionContext::sequential();
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(plan->execute(ctx, ops, ws, pool));
    const int64_t before = allocations();
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(plan->execute(ctx, ops, ws, pool));
    return (allocations() - before) / 4;
  };
  const int64_t short_chain = count({"ij,jk,kl->il", {{4, 5}, {5, 6}, {6, 4}}});
  const int64_t long_chain = count({"ab,bc,cd,de,ef,fg,gh,hi->ai", {{4, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 7}, {7, 6}, {6, 5}, {5, 4}}});
  EXPECT_EQ(short_chain, long_chain);
  // The result only: its storage object, plus the pool's free-list node when the
  // previous result's buffer returns to the pool.
  EXPECT_LE(long_chain, 4);
}

TEST(EinsumAllocations, WorkspaceKeepsOperandSumsUntilReleased) {
  // Operand 0's label k is summed first, into a 4 x 5 f64 buffer the workspace keeps.
  auto plan = EinsumPlan::prepare("ijk,jl->il", std::vector<Shape>{{4, 5, 6}, {5, 7}}, DType::kF64).value();
  const std::vector<Tensor> ops = operands({"", {{4, 5, 6}, {5, 7}}});
  EinsumWorkspace ws = plan->make_workspace();
  auto ctx = cpu::CpuExecutionContext::sequential();
  EXPECT_EQ(ws.retained_bytes(), 0);
  Tensor r = plan->execute(ctx, ops, ws).value();
  EXPECT_GE(ws.retained_bytes(), 4 * 5 * 8);
  ws.release();
  EXPECT_EQ(ws.retained_bytes(), 0);
  // Still correct after the release: element (1, 2) against the naive sum.
  double want = 0;
  for (int64_t j = 0; j < 5; ++j)
    for (int64_t k = 0; k < 6; ++k) want += ops[0].get<double>({1, j, k}).value() * ops[1].get<double>({j, 2}).value();
  Tensor again = plan->execute(ctx, ops, ws).value();
  EXPECT_NEAR(again.get<double>({1, 2}).value(), want, 1e-12 * (1 + std::abs(want)));
  EXPECT_NEAR(r.get<double>({1, 2}).value(), want, 1e-12 * (1 + std::abs(want)));
}

TEST(EinsumAllocations, WorkspaceOfAnotherPlanIsRejected) {
  auto a = EinsumPlan::prepare("ij,jk->ik", std::vector<Shape>{{2, 3}, {3, 4}}, DType::kF64).value();
  auto b = EinsumPlan::prepare("ij,jk->ik", std::vector<Shape>{{2, 3}, {3, 4}}, DType::kF64).value();
  EinsumWorkspace ws = a->make_workspace();
  auto ctx = cpu::CpuExecutionContext::sequential();
  const std::vector<Tensor> ops = operands({"", {{2, 3}, {3, 4}}});
  auto r = b->execute(ctx, ops, ws);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(a->execute(ctx, ops, ws));
}

}  // namespace
}  // namespace tenferro::einsum
