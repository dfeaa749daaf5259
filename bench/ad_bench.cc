// Costs of the AD paths per call: eager forward + backward of a tiny loss (record,
// replay into a program, cached gradient transform, cached prepared plan, run), the
// replay alone, and a cached AdContext::grad lookup.

#include <benchmark/benchmark.h>

#include "tenferro/ad/ad.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/eager/autograd.h"

namespace {

using namespace tenferro;
using namespace tenferro::eager;

void BM_EagerForwardBackwardMatmul2x2(benchmark::State& state) {
  auto rt = EagerRuntime::create().value();
  EagerTensor x = requires_grad(rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value()).value();
  EagerTensor y = requires_grad(rt->from_values<double>({2, 2}, {0.5, -1, 2, 0}).value()).value();
  for (auto _ : state) {
    EagerTensor l = sum(matmul(x, y).value()).value();
    benchmark::DoNotOptimize(backward(l));
  }
}
BENCHMARK(BM_EagerForwardBackwardMatmul2x2);

void BM_EagerForwardOnlyMatmul2x2Recorded(benchmark::State& state) {
  auto rt = EagerRuntime::create().value();
  EagerTensor x = requires_grad(rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value()).value();
  EagerTensor y = requires_grad(rt->from_values<double>({2, 2}, {0.5, -1, 2, 0}).value()).value();
  for (auto _ : state) benchmark::DoNotOptimize(sum(matmul(x, y).value()));
}
BENCHMARK(BM_EagerForwardOnlyMatmul2x2Recorded);

void BM_CachedGradLookup(benchmark::State& state) {
  compiler::TraceContext tc;
  program::ValueType t{DType::kF64, {program::Extent::exact(2), program::Extent::exact(2)}};
  auto x = tc.input(t).value(), y = tc.input(t).value();
  auto m = tc.op(program::OpCode::kDotGeneral, {x, y}, program::Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  auto g = tc.finish({tc.op(program::OpCode::kReduce, {m}, program::Attrs{.dims = {0, 1}}).value()}).value();
  const ad::AdContext ctx = ad::AdContext::with_standard_rules();
  benchmark::DoNotOptimize(ctx.grad(g.graph()));
  for (auto _ : state) benchmark::DoNotOptimize(ctx.grad(g.graph()));
}
BENCHMARK(BM_CachedGradLookup);

}  // namespace

BENCHMARK_MAIN();
