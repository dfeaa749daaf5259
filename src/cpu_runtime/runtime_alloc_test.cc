// Allocation counts of warm prepared executions (a separate executable: it replaces
// operator new).
#include <gtest/gtest.h>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/test_support/alloc_counter.h"

namespace tenferro {
namespace {

using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

// A warm execute_prepared of a 100-node program (add/mul/tanh on 8 f64) allocates only
// what it returns: the output vector and the output's storage handle. Intermediates live
// in the workspace's planned buffer (Note [Buffer plan]); no metadata is allocated.
TEST(RuntimeAlloc, WarmExecutionOfA100NodeProgramAllocatesOnlyItsOutputs) {
  auto rt = runtime::Runtime::create().value();
  cpu::CpuEngineConfig cfg;
  cpu::CpuDomainConfig domain;
  domain.cpus = {cpu::CpuTopology::discover().value().allowed_cpus.front()};
  domain.threads = 1;
  cfg.domains = {domain};
  cfg.pin_workers = false;
  ASSERT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value()));
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(8)}}).value();
  Value y = b.input(ValueType{DType::kF64, {Extent::exact(8)}}).value();
  Value v = x;
  for (int i = 0; i < 100; ++i) {
    const OpCode code = i % 3 == 0 ? OpCode::kAdd : i % 3 == 1 ? OpCode::kMul : OpCode::kTanh;
    v = code == OpCode::kTanh ? b.op(code, {v}).value() : b.op(code, {v, y}).value();
  }
  const auto g = b.finish({v}).value();
  const std::vector<Tensor> in{Tensor::random_normal(DType::kF64, {8}, 1).value(),
                               Tensor::random_normal(DType::kF64, {8}, 2).value()};
  auto plan = rt->prepare_for(g, runtime::signature_of(in)).value();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(rt->execute_prepared(*plan, in));
  constexpr int kRuns = 50;
  const int64_t before = test_support::allocations();
  for (int i = 0; i < kRuns; ++i) {
    auto out = rt->execute_prepared(*plan, in);
    ASSERT_TRUE(out);
  }
  const int64_t per_run = (test_support::allocations() - before) / kRuns;
  EXPECT_LE(per_run, 2) << "allocations per warm execution of 100 nodes: " << per_run;
}

}  // namespace
}  // namespace tenferro
