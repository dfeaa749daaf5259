#pragma once
/// \file
/// The CPU engine's registration into a Runtime: a bridge that runs every core op of
/// the program vocabulary on the CPU kernels (Note [CPU bridge] in cpu_bridge.cc).

#include <memory>

#include "tenferro/core/result.h"
#include "tenferro/cpu/engine.h"
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

}  // namespace tenferro::cpu_runtime
