#pragma once
/// \file
/// The CPU engine: topology, resource domains, executors (Managed and ExternalManaged),
/// executor entry and the provider bundle (spec 000 "CPU Resource Model",
/// "Provider Bundles and Dispatch"; spec 001 D6, D8).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/buffer_pool.h"

namespace tenferro::cpu {

/// The CPUs this process may use, grouped by NUMA node.
struct CpuTopology {
  std::vector<int> allowed_cpus;             ///< sorted OS indices (affinity mask and cgroup cpuset)
  std::vector<std::vector<int>> numa_nodes;  ///< allowed CPUs of each NUMA node that has any

  /// Discovers the topology with hwloc, restricted to the CPUs the process may run on.
  /// Errors: kConfiguration/kUnsupported when hwloc cannot load the topology.
  static Result<CpuTopology> discover();
};

/// How a provider controls its thread count (capability axis 1).
enum class ThreadControl : uint8_t { kPerCall, kClampToOne, kGlobal, kSequential };
/// Where a provider's work runs (capability axis 2).
enum class WorkerPlacement : uint8_t { kEngineWorkers, kCallingThread, kExternalWorkers };

/// A provider and its probed capabilities.
struct ProviderInfo {
  std::string name;
  ThreadControl threads = ThreadControl::kSequential;
  WorkerPlacement placement = WorkerPlacement::kEngineWorkers;
};

/// Typed provider slots (direct fields, no maps). Filled once at engine construction;
/// OpenBLAS's threading model is probed then (openblas_get_parallel).
struct ProviderBundle {
  std::optional<ProviderInfo> elementwise, reduction, indexing, dot_general, layout;
};

/// One resource domain to create.
struct CpuDomainConfig {
  int32_t id = 0;
  /// CPUs of the domain (OS indices, all within the allowed set). Required for Managed
  /// domains; ignored (may be empty) for ExternalManaged ones.
  std::vector<int> cpus;
  /// Worker count; 0 means one per CPU.
  int threads = 0;
  /// ExternalManaged: the caller's executor. It is used as given (never rebuilt or
  /// repinned) and kept alive by the engine for as long as the engine lives.
  std::shared_ptr<CpuDomainExecutor> external;
};

/// Engine configuration (immutable after create).
struct CpuEngineConfig {
  /// Domains; empty means one Managed domain per NUMA node of the allowed CPUs.
  std::vector<CpuDomainConfig> domains;
  /// Pin Managed workers to their domain's CPUs.
  bool pin_workers = true;
  /// Reject providers whose threads the engine cannot place (OpenBLAS's own workers,
  /// global thread control): a default provider that would run them fails create, and
  /// a dot_general forced onto them fails with kUnsupported before any write.
  bool strict_placement = false;
  /// Default batch policy, thresholds and GEMM provider of every context this engine
  /// creates (`batch.provider`: kAuto lets the dot_general planner choose; kOpenBlas,
  /// kBlis or kNaive force that provider for every product that does not name one).
  BatchSettings batch;
  /// Limits of each domain's buffer pool (retained bytes and buffers).
  HostBufferPoolConfig pool;
  /// Capabilities to plan with; unset: probed once at create (CpuCaps::probe). Setting
  /// them plans as if on another machine (e.g. a BLAS treated as untuned); kernels
  /// still run on this one.
  std::optional<CpuCaps> caps{};
  /// Cap on the SIMD kernels' ISA level (CpuCaps::max_isa); unset: the environment's
  /// TENFERRO_MAX_ISA, else no cap. An invalid TENFERRO_MAX_ISA fails create.
  std::optional<IsaLevel> max_isa{};
};

/// Facts about one created domain.
struct CpuDomainInfo {
  int32_t id = 0;
  std::vector<int> cpus;
  int threads = 1;
  bool external = false;
  ExecutorCapabilities capabilities;
};

/// Completion of one submitted operation (CpuEngine::submit). Copyable handle to shared
/// state; thread-safe.
class CpuCompletion {
 public:
  /// Blocks until the operation finished; returns its result (every call returns the
  /// same result). Must not be called from inside an entered context of the same
  /// domain (the worker it waits for may be the caller): that is kReentered.
  Result<void> wait() const;
  /// Whether the operation has finished (never blocks).
  bool ready() const;

 private:
  friend class CpuEngine;
  struct State;
  std::shared_ptr<State> state_;
};

/// A CPU engine. Owned by the user (no global instance); thread-safe.
///
/// `run(domain, mode, f)` enters the domain's executor once and calls `f` with an
/// entered CpuExecutionContext: one executor entry per standalone operation, or per
/// session when `f` performs many operations. Entering again from inside an entered
/// context fails with kReentered (Note [Re-entry detection]).
class CpuEngine {
 public:
  /// Validates the configuration against `topology` (discovered when null) and creates
  /// the domains. Errors (stage kConfiguration): kInvalidArgument for an empty CPU set,
  /// a duplicate id, overlapping domains, CPUs outside the allowed set, a bad thread
  /// count or an unknown provider; kUnsupported for strict placement with an
  /// uncontrolled multi-threaded provider.
  static Result<std::shared_ptr<CpuEngine>> create(CpuEngineConfig config = {}, const CpuTopology* topology = nullptr);
  ~CpuEngine();

  const std::vector<CpuDomainInfo>& domains() const noexcept { return domains_; }
  const ProviderBundle& providers() const noexcept { return providers_; }
  const CpuEngineConfig& config() const noexcept { return config_; }
  /// The capabilities this engine plans with (probed at create or configured); every
  /// context it enters carries them. Immutable.
  const CpuCaps& caps() const noexcept { return caps_; }

  /// Runs `f` inside domain `domain_id` with one executor entry. Errors: kOutOfRange
  /// (unknown domain), kReentered; otherwise whatever `f` returns.
  Result<void> run(int32_t domain_id, ParallelMode mode, FunctionRef<Result<void>(CpuExecutionContext&)> f);

  /// Outer submission (ParallelMode::kOuter): queues `f` on the domain's executor and
  /// returns at once. `f` later runs on one worker with its own entered one-thread
  /// context (one executor entry per submission); independent submissions run
  /// concurrently. The engine's destructor waits for submissions still running.
  /// Errors: kOutOfRange (unknown domain), kReentered (called from inside an entered
  /// context: that would be a second fan-out level); `f`'s error comes back from wait().
  Result<CpuCompletion> submit(int32_t domain_id, std::function<Result<void>(CpuExecutionContext&)> f);

  /// Number of executor entries made into the domain so far.
  int64_t entry_count(int32_t domain_id) const;

  /// The domain's buffer pool (Note [First touch]).
  //
  // Note [First touch]: kernel outputs are allocated uninitialized
  // (Tensor::uninitialized), so their pages are first written by the kernel itself,
  // which runs on the domain's workers (in parallel for large outputs). Under Linux's
  // first-touch policy the pages land on the NUMA node of the domain that computes
  // them, not on the thread that asked for the tensor. Pool buffers keep their placement
  // when reused by the same domain.
  const std::shared_ptr<HostBufferPool>& pool(int32_t domain_id) const;

 private:
  struct Domain;
  CpuEngine() = default;
  Domain* find(int32_t id) const;

  CpuEngineConfig config_;
  CpuCaps caps_;
  std::vector<CpuDomainInfo> domains_;
  std::vector<std::unique_ptr<Domain>> slots_;
  ProviderBundle providers_;
};

}  // namespace tenferro::cpu
