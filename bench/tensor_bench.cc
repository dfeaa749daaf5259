// View construction and element-count costs for ranks 2, 4 and 8 (metadata only).
// Peer figures for the same operations in numpy: bench/peer_views.py.

#include <benchmark/benchmark.h>

#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro {
namespace {

Tensor make(int64_t rank) {
  Shape shape(static_cast<size_t>(rank), 2);
  shape[0] = 4;
  return Tensor::zeros(DType::kF64, shape).value();
}

std::vector<int64_t> reversed(int64_t rank) {
  std::vector<int64_t> p(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) p[static_cast<size_t>(i)] = rank - 1 - i;
  return p;
}

void BM_Permute(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  const std::vector<int64_t> perm = reversed(state.range(0));
  for (auto _ : state) {
    auto v = t.permute(perm);
    benchmark::DoNotOptimize(v);
  }
}

void BM_Slice(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  for (auto _ : state) {
    auto v = t.slice(0, 3, -1, -2);
    benchmark::DoNotOptimize(v);
  }
}

void BM_Select(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  for (auto _ : state) {
    auto v = t.select(1, 1);
    benchmark::DoNotOptimize(v);
  }
}

void BM_ReshapeFlatten(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  for (auto _ : state) {
    auto v = t.reshape({-1});
    benchmark::DoNotOptimize(v);
  }
}

void BM_BroadcastLeading(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  Shape target = t.shape();
  target.insert(0, 3);
  for (auto _ : state) {
    auto v = t.broadcast_to(target);
    benchmark::DoNotOptimize(v);
  }
}

void BM_HandleCopy(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  for (auto _ : state) {
    Tensor c = t;
    benchmark::DoNotOptimize(c);
  }
}

void BM_ElementCount(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.numel());
    benchmark::ClobberMemory();
  }
}

void BM_CheckedElementCount(benchmark::State& state) {
  const Tensor t = make(state.range(0));
  for (auto _ : state) {
    auto n = checked_element_count(t.shape());
    benchmark::DoNotOptimize(n);
  }
}

#define TENFERRO_RANKS ->Arg(2)->Arg(4)->Arg(8)
BENCHMARK(BM_Permute) TENFERRO_RANKS;
BENCHMARK(BM_Slice) TENFERRO_RANKS;
BENCHMARK(BM_Select) TENFERRO_RANKS;
BENCHMARK(BM_ReshapeFlatten) TENFERRO_RANKS;
BENCHMARK(BM_BroadcastLeading) TENFERRO_RANKS;
BENCHMARK(BM_HandleCopy) TENFERRO_RANKS;
BENCHMARK(BM_ElementCount) TENFERRO_RANKS;
BENCHMARK(BM_CheckedElementCount) TENFERRO_RANKS;

}  // namespace
}  // namespace tenferro

BENCHMARK_MAIN();
