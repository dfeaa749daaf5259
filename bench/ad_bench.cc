// Costs of the AD paths per call: eager forward + backward of a tiny loss (the direct
// rules; for einsum too), an eager einsum's fixed cost, a cached AdContext::grad lookup,
// and a gradient program run through the runtime.

#include <benchmark/benchmark.h>

#include "tenferro/ad/ad.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/eager/autograd.h"

namespace {

using namespace tenferro;
using namespace tenferro::eager;

struct Leaves {
  std::shared_ptr<EagerRuntime> rt = EagerRuntime::create().value();
  EagerTensor x = requires_grad(rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value()).value();
  EagerTensor y = requires_grad(rt->from_values<double>({2, 2}, {0.5, -1, 2, 0}).value()).value();
};

void BM_EagerForwardBackwardMatmul2x2(benchmark::State& state) {
  Leaves l2;
  const EagerTensor &x = l2.x, &y = l2.y;
  for (auto _ : state) {
    EagerTensor l = sum(matmul(x, y).value()).value();
    benchmark::DoNotOptimize(backward(l));
  }
}
BENCHMARK(BM_EagerForwardBackwardMatmul2x2);

void BM_EagerForwardOnlyMatmul2x2Recorded(benchmark::State& state) {
  Leaves l2;
  for (auto _ : state) benchmark::DoNotOptimize(sum(matmul(l2.x, l2.y).value()));
}
BENCHMARK(BM_EagerForwardOnlyMatmul2x2Recorded);

// Eager exp and add of 8 f64 per call (the single-operation fixed cost).
void BM_EagerExp8(benchmark::State& state) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_values<double>({8}, {1, 2, 3, 4, 5, 6, 7, 8}).value();
  for (auto _ : state) benchmark::DoNotOptimize(exp(a));
}
BENCHMARK(BM_EagerExp8);
void BM_EagerAdd8(benchmark::State& state) {
  auto rt = EagerRuntime::create().value();
  const EagerTensor a = rt->from_values<double>({8}, {1, 2, 3, 4, 5, 6, 7, 8}).value();
  for (auto _ : state) benchmark::DoNotOptimize(add(a, a));
}
BENCHMARK(BM_EagerAdd8);

// An eager 2 x 2 einsum per call (a warm plan): the einsum plan's fixed cost.
void BM_EagerEinsum2x2(benchmark::State& state) {
  Leaves l2;
  const EagerTensor x = detach(l2.x), y = detach(l2.y);
  const EagerTensor ops[2] = {x, y};
  const Context c = Context::of(x);
  for (auto _ : state) benchmark::DoNotOptimize(c.einsum("ij,jk->ik", ops));
}
BENCHMARK(BM_EagerEinsum2x2);

// Eager forward + backward of sum(einsum("ij,jk->ik", x, y)) 2 x 2 (the einsum direct rule).
void BM_EagerForwardBackwardEinsum2x2(benchmark::State& state) {
  Leaves l2;
  const EagerTensor ops[2] = {l2.x, l2.y};
  const Context c = Context::of(l2.x);
  for (auto _ : state) {
    EagerTensor l = sum(c.einsum("ij,jk->ik", ops).value()).value();
    benchmark::DoNotOptimize(backward(l));
  }
}
BENCHMARK(BM_EagerForwardBackwardEinsum2x2);

// sum(x y) for 2 x 2 inputs as a program.
program::CompiledGraph matmul_sum_graph() {
  compiler::TraceContext tc;
  program::ValueType t{DType::kF64, {program::Extent::exact(2), program::Extent::exact(2)}};
  auto x = tc.input(t).value(), y = tc.input(t).value();
  auto m = tc.op(program::OpCode::kDotGeneral, {x, y}, program::Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  return tc.finish({tc.op(program::OpCode::kReduce, {m}, program::Attrs{.dims = {0, 1}}).value()}).value().graph();
}

void BM_CachedGradLookup(benchmark::State& state) {
  const program::CompiledGraph g = matmul_sum_graph();
  const ad::AdContext ctx = ad::AdContext::with_standard_rules();
  benchmark::DoNotOptimize(ctx.grad(g));
  for (auto _ : state) benchmark::DoNotOptimize(ctx.grad(g));
}
BENCHMARK(BM_CachedGradLookup);

// The gradient program of sum(matmul(x, y)) 2x2 run through the runtime's plan cache
// alone (what backward runs after the replay and the cached transform).
void BM_GradProgramRun(benchmark::State& state) {
  const ad::AdContext ctx = ad::AdContext::with_standard_rules();
  auto gp = ctx.grad(matmul_sum_graph()).value();
  auto rt = EagerRuntime::create().value();
  std::vector<Tensor> args = {Tensor::from_col_major<double>({2, 2}, std::vector<double>{1, 2, 3, 4}).value(),
                              Tensor::from_col_major<double>({2, 2}, std::vector<double>{1, 0, 2, 1}).value()};
  if (state.range(0) == 0) {
    for (auto _ : state) benchmark::DoNotOptimize(rt->runtime().run(gp, args));
  } else {
    auto plan = rt->runtime().prepare_for(gp, runtime::signature_of(args)).value();
    for (auto _ : state) benchmark::DoNotOptimize(rt->runtime().execute_prepared(*plan, args));
  }
}
BENCHMARK(BM_GradProgramRun)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
