// Runtime II benchmarks (prints a table; never a test assertion):
//  1. a run whose test-engine work completes asynchronously overlaps CPU work: two
//     independent 50 ms branches, one on each engine (target: <= 60 ms in all);
//  2. submit + wait of a 100-node prepared chain of tiny CPU ops against
//     execute_prepared of the same plan, interleaved (target: <= 1.2 x).
// Usage: runtime_async_bench [--reps N] [--only overlap|chain]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "test_engine.h"

using namespace tenferro;
using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class T>
T must(Result<T> r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", what, r.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(*r);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    if (std::string(argv[i]) == "--only" && i + 1 < argc) only = argv[++i];  // overlap | chain
  }
  cpu::CpuEngineConfig cfg;
  cpu::CpuDomainConfig d;
  d.cpus = {must(cpu::CpuTopology::discover(), "topology").allowed_cpus.front()};
  d.threads = 1;
  cfg.domains = {d};
  auto rt = must(runtime::Runtime::create(), "runtime");
  const runtime::EngineId cpu = must(cpu_runtime::register_cpu_engine(*rt, must(cpu::CpuEngine::create(cfg), "engine")), "register");
  auto dev = test_engine::create();
  const runtime::EngineId mock = must(dev->register_into(*rt, cpu), "register test engine");
  if (!rt->register_extension(cpu, test_engine::cpu_sleep_module())) return 1;

  // 1. Overlap.
  if (only.empty() || only == "overlap") {
    ProgramBuilder b;
    const ValueType t{DType::kF64, {Extent::exact(8)}};
    Value x = must(b.input(t), "input");
    Value y = must(b.input(t), "input");
    auto s = std::make_shared<test_engine::SleepOp>();
    s->ms = 50;
    Value c = must(b.extension(s, std::vector<Value>{y}), "sleep")[0];
    Value g = must(b.extension(s, std::vector<Value>{x}), "sleep")[0];
    const auto graph = must(b.finish({c, g}), "finish");
    runtime::PrepareOptions o;
    o.placements = {runtime::OpPlacement{1, mock, {}}};
    const std::vector<Tensor> in{must(Tensor::random_normal(DType::kF64, {8}, 1), "random"),
                                 must(Tensor::random_normal(DType::kF64, {8}, 2), "random")};
    auto plan = must(rt->prepare_for(graph, runtime::signature_of(in), o), "prepare");
    std::vector<double> exec, sub;
    for (int r = 0; r < std::min(reps, 7); ++r) {
      double t0 = now_us();
      must(rt->execute_prepared(*plan, in), "execute");
      exec.push_back((now_us() - t0) / 1000);
      t0 = now_us();
      must(must(rt->submit(plan, in), "submit").wait(), "wait");
      sub.push_back((now_us() - t0) / 1000);
    }
    std::printf("| two independent 50 ms branches (CPU + test engine), execute_prepared | %.1f ms | target <= 60 ms |\n",
                median(exec));
    std::printf("| the same, submit + wait | %.1f ms | target <= 60 ms |\n", median(sub));
  }

  // 2. submit + wait vs execute_prepared, 100-node chain of tiny ops.
  if (only.empty() || only == "chain") {
    ProgramBuilder b;
    const ValueType t{DType::kF64, {Extent::exact(8)}};
    Value x = must(b.input(t), "input");
    Value y = must(b.input(t), "input");
    Value v = x;
    for (int i = 0; i < 100; ++i) {
      const OpCode code = i % 3 == 0 ? OpCode::kAdd : i % 3 == 1 ? OpCode::kMul : OpCode::kTanh;
      v = must(code == OpCode::kTanh ? b.op(code, {v}) : b.op(code, {v, y}), "op");
    }
    const auto graph = must(b.finish({v}), "finish");
    const std::vector<Tensor> in{must(Tensor::random_normal(DType::kF64, {8}, 1), "random"),
                                 must(Tensor::random_normal(DType::kF64, {8}, 2), "random")};
    auto plan = must(rt->prepare_for(graph, runtime::signature_of(in)), "prepare");
    constexpr int kInner = 2000;
    std::vector<double> exec, sub, ratio;
    for (int r = 0; r < reps; ++r) {
      double t0 = now_us();
      for (int i = 0; i < kInner; ++i) (void)rt->execute_prepared(*plan, in);
      const double e = (now_us() - t0) / kInner;
      t0 = now_us();
      for (int i = 0; i < kInner; ++i) (void)must(rt->submit(plan, in), "submit").wait();
      const double s = (now_us() - t0) / kInner;
      exec.push_back(e);
      sub.push_back(s);
      ratio.push_back(s / e);
    }
    std::sort(ratio.begin(), ratio.end());
    std::printf("| chain 100 f64[8]: submit + wait vs execute_prepared | %.2f us vs %.2f us | ratio %.3f (range %.3f-%.3f over %d interleaved rounds) | target <= 1.2 |\n",
                median(sub), median(exec), median(ratio), ratio.front(), ratio.back(), reps);
  }
  rt->shutdown();
  return 0;
}
