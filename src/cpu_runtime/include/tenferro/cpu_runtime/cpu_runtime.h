#pragma once
/// \file
/// The CPU engine's registration into a Runtime: a bridge that runs every core op of
/// the program vocabulary on the CPU kernels (Note [CPU bridge] in cpu_bridge.cc).

#include <memory>
#include <span>

#include "tenferro/core/result.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/program/ops.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::cpu_runtime {

/// What register_cpu_engine registers besides the engine.
struct CpuRegistration {
  /// The CPU's native einsum module (einsum_cpu's planned executor) for the "einsum"
  /// family; without it einsum ops run through their core lowering.
  bool einsum_module = true;
};

/// Registers `engine` (shared: the runtime keeps it alive) into `runtime`, with the
/// extension modules `what` asks for, and returns its engine id. Every domain of the
/// engine becomes a placement. Prepared programs run with one executor entry
/// (ParallelMode::kInner) per execution. Errors: those of Runtime::register_engine and
/// register_extension; kInvalidArgument for a null engine.
Result<runtime::EngineId> register_cpu_engine(runtime::Runtime& runtime, std::shared_ptr<cpu::CpuEngine> engine,
                                              CpuRegistration what = {});

/// The CPU's native einsum module (one immutable instance per process, so registering
/// it again for the same engine is a no-op). Register it with
/// Runtime::register_extension(engine_id, cpu_einsum_module()) for a CPU engine
/// registered without it.
std::shared_ptr<const runtime::ExtensionModule> cpu_einsum_module();
/// Whether `module` is the CPU's native einsum module.
bool is_cpu_einsum_module(const runtime::ExtensionModule* module) noexcept;

/// The CPU engine behind `bridge` when it is the bridge register_cpu_engine registered,
/// else nullptr. Lets callers (the eager API) select CPU providers from the runtime's
/// registered target engine instead of from build options (spec 004).
std::shared_ptr<cpu::CpuEngine> cpu_engine_of(const runtime::EngineBridge& bridge) noexcept;

/// The entered CPU execution context and the domain's pool inside an EngineContext the
/// CPU bridge entered (both null when `c` is another engine's): what native modules of
/// other extension families (linalg_ir's) run their kernels on. Valid during the node
/// kernel's run only.
struct CpuEntered {
  cpu::CpuExecutionContext* ctx = nullptr;
  const std::shared_ptr<HostBufferPool>* pool = nullptr;
};
CpuEntered cpu_entered(runtime::EngineContext& c) noexcept;

/// Runs one core op (not constant, not an extension) on the CPU kernels with the
/// program's semantics (Note [CPU bridge]: the same code prepared nodes run), inside an
/// entered context `ctx`, outputs from `pool`. `out_dtype`/`out_shape` are the op's
/// inferred result type (program::infer_core). Preconditions: `inputs` match the op's
/// operand count and were validated by inference. Errors: kDTypeMismatch (bool
/// arithmetic), the kernels' errors, completion errors (integer division by zero, ...).
Result<Tensor> run_core_op(cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool,
                           program::OpCode code, const program::Attrs& attrs, std::span<const Tensor> inputs,
                           DType out_dtype, const Shape& out_shape);

}  // namespace tenferro::cpu_runtime
