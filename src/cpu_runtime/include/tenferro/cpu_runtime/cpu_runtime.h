#pragma once
/// \file
/// The CPU engine's registration into a Runtime: a bridge that runs every core op of
/// the program vocabulary on the CPU kernels (Note [CPU bridge] in cpu_bridge.cc).

#include <memory>

#include "tenferro/core/result.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::cpu_runtime {

/// Registers `engine` (shared: the runtime keeps it alive) into `runtime` and returns its
/// engine id. Every domain of the engine becomes a placement. Prepared programs run with
/// one executor entry (ParallelMode::kInner) per execution. Errors: those of
/// Runtime::register_engine; kInvalidArgument for a null engine.
Result<runtime::EngineId> register_cpu_engine(runtime::Runtime& runtime, std::shared_ptr<cpu::CpuEngine> engine);

}  // namespace tenferro::cpu_runtime
