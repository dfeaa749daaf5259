// Costs of the semantic IR and the graph compiler: builder cost per op, freeze
// (canonical encoding + XXH3-128 fingerprint), exact structural equality, text
// print/parse, and compiling a 1000-op program.

#include <benchmark/benchmark.h>

#include "tenferro/compiler/compiler.h"
#include "tenferro/program/program.h"
#include "tenferro/program/text.h"

namespace {

using namespace tenferro;
using namespace tenferro::program;

ValueType f64(std::vector<int64_t> shape) {
  ValueType t{DType::kF64, {}};
  for (int64_t e : shape) t.shape.push_back(Extent::exact(e));
  return t;
}

// A program of `n` ops that looks like traced model code: elementwise chains,
// contractions, transposes (some cancelling), duplicates and dead values.
void build_mixed(ProgramBuilder& b, int n, std::vector<Value>* outs) {
  Value x = b.input(f64({64, 64}), "x").value();
  Value w = b.input(f64({64, 64}), "w").value();
  std::vector<Value> pool{x, w};
  for (int i = 0; static_cast<int>(pool.size()) - 2 < n; ++i) {
    const Value a = pool[pool.size() - 1];
    const Value c = pool[static_cast<size_t>(i * 7) % pool.size()];
    switch (i % 6) {
      case 0: pool.push_back(b.op(OpCode::kAdd, {a, c}).value()); break;
      case 1: pool.push_back(b.op(OpCode::kDotGeneral, {a, c}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value()); break;
      case 2: pool.push_back(b.op(OpCode::kTranspose, {a}, Attrs{.dims = {1, 0}}).value()); break;
      case 3: pool.push_back(b.op(OpCode::kTanh, {a}).value()); break;
      case 4: pool.push_back(b.op(OpCode::kTanh, {pool[pool.size() - 2]}).value()); break;  // often a duplicate
      default: pool.push_back(b.op(OpCode::kMul, {a, c}).value()); break;
    }
  }
  outs->push_back(pool.back());
}

void BM_BuilderOp(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ProgramBuilder b;
    std::vector<Value> outs;
    build_mixed(b, n, &outs);
    benchmark::DoNotOptimize(outs.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel("items = ops emitted (validated + inferred)");
}
BENCHMARK(BM_BuilderOp)->Arg(1000);

void BM_FreezeAndFingerprint(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    auto b = std::make_unique<ProgramBuilder>();
    std::vector<Value> outs;
    build_mixed(*b, n, &outs);
    state.ResumeTiming();
    auto g = b->finish(outs);
    benchmark::DoNotOptimize(g->program->fingerprint());
    state.PauseTiming();
    b.reset();
    g = Error(ErrorStage::kUsage, ErrorCode::kInternal, "", "");
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_FreezeAndFingerprint)->Arg(1000);

CompiledGraph mixed(int n) {
  ProgramBuilder b;
  std::vector<Value> outs;
  build_mixed(b, n, &outs);
  return b.finish(outs).value();
}

void BM_StructuralEquality(benchmark::State& state) {
  const auto a = mixed(static_cast<int>(state.range(0)));
  const auto c = mixed(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(a.program->structurally_equal(*c.program));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_StructuralEquality)->Arg(1000);

void BM_PrintParse(benchmark::State& state) {
  const auto a = mixed(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const std::string text = print_program(*a.program);
    auto p = parse_program(text);
    benchmark::DoNotOptimize(p->program->fingerprint());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PrintParse)->Arg(1000);

void BM_Compile(benchmark::State& state) {
  const auto a = mixed(static_cast<int>(state.range(0)));
  compiler::GraphCompiler c;
  size_t ops_after = 0;
  for (auto _ : state) {
    c.clear();  // measure compilation, not the cache
    auto r = c.compile(a);
    ops_after = r->program->ops().size();
  }
  state.counters["ops_after"] = static_cast<double>(ops_after);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Compile)->Arg(1000);

void BM_CompileCacheHit(benchmark::State& state) {
  const auto a = mixed(static_cast<int>(state.range(0)));
  const auto same = mixed(static_cast<int>(state.range(0)));  // equal structure, other object
  compiler::GraphCompiler c;
  (void)c.compile(a);
  for (auto _ : state) benchmark::DoNotOptimize(c.compile(same)->program.get());
}
BENCHMARK(BM_CompileCacheHit)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
