#pragma once
/// \file
/// The runtime: a user-owned object that engines register into, which prepares compiled
/// graphs for an engine (resolution, placement, buffer plan, schedule), caches the
/// prepared programs in a bounded single-flight plan cache, and executes them
/// (ARCHITECTURE §5 "Graph"; spec 000 "Runtime plan compilation", "Prepared Graphs and
/// Common Execution"). No global runtime exists: two runtimes never share state.

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/core/function_ref.h"
#include "tenferro/core/result.h"
#include "tenferro/program/program.h"
#include "tenferro/runtime/engine.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

/// What resolution may do when no provider supports an op (ARCHITECTURE §3.1: fallback
/// exists only when configured).
enum class Fallback : uint8_t {
  kNone,                  ///< a typed kUnsupported prepare error
  kReferenceInterpreter,  ///< run the op with program::interpret (slow, exact semantics)
};

/// A provider kind resolution can pick for an op (Note [Preparation order]).
enum class ProviderKind : uint8_t {
  kNative,    ///< the engine's core provider or its extension module for the family
  kLowering,  ///< the extension's core lowering, prepared as a sub-program
  kFallback,  ///< the configured fallback (Fallback::kReferenceInterpreter)
};
std::string_view provider_kind_name(ProviderKind kind) noexcept;

/// A runtime-wide preference for one extension family: `first` is tried before the
/// default order (native, lowering, fallback); if it answers kUnsupported, resolution
/// continues with the rest of the default order.
struct FamilyPreference {
  std::string family;
  ProviderKind first = ProviderKind::kNative;
  friend bool operator==(const FamilyPreference&, const FamilyPreference&) = default;
};

/// The memory one engine domain may hold for runs at once (Note [Admission] in
/// submit.cc): a run reserves its plan's estimated peak bytes in every budgeted domain it
/// uses before its first launch and releases them after its drain.
struct MemoryBudget {
  EngineId engine;
  int32_t domain = 0;
  int64_t bytes = 0;  ///< >= 0
  friend bool operator==(const MemoryBudget&, const MemoryBudget&) = default;
};

/// At most `nodes` launches may be in progress at once on one engine domain, across all
/// executions of the runtime (a node lease; Note [Node leases] in execute.cc).
struct LaunchLimit {
  EngineId engine;
  int32_t domain = 0;
  int32_t nodes = 1;  ///< >= 1
  friend bool operator==(const LaunchLimit&, const LaunchLimit&) = default;
};

/// Runtime configuration. Validated as a whole; published as an immutable snapshot.
struct RuntimeConfig {
  /// Prepared programs the plan cache keeps (>= 1). Entries being prepared never count
  /// against it being evicted.
  int64_t plan_cache_capacity = 64;
  DeterminismMode determinism = DeterminismMode::kDefault;
  Fallback fallback = Fallback::kNone;
  /// At most one preference per family (a duplicate is a kConfiguration error).
  std::vector<FamilyPreference> family_preferences{};
  /// Memory budgets (at most one per engine domain). A plan whose peak in a budgeted
  /// domain exceeds the budget can never run: a kPrepare/kResourceExhausted error.
  std::vector<MemoryBudget> memory_budgets{};
  /// Launch limits (at most one per engine domain).
  std::vector<LaunchLimit> launch_limits{};
};

/// One element type and exact shape of a program input (argument or binding), and where
/// its storage lives (used to place the program: the domain holding most input bytes).
struct TensorSignature {
  DType dtype = DType::kF64;
  Shape shape;
  Placement placement = Placement::cpu_default();
  friend bool operator==(const TensorSignature&, const TensorSignature&) = default;
};
/// The signature of `tensors` (null handles are rejected by prepare).
std::vector<TensorSignature> signature_of(std::span<const Tensor> tensors);

/// An operation-local override: op `op` (its index in program order) must be provided by
/// `kind`; if that provider answers kUnsupported, preparation fails with kUnsupported (no
/// other candidate is tried).
struct ProviderOverride {
  int32_t op = 0;
  ProviderKind kind = ProviderKind::kNative;
  friend bool operator==(const ProviderOverride&, const ProviderOverride&) = default;
};

/// An operation-local placement: op `op` (program order) runs on `engine`, in `domain`
/// (empty: the engine's first domain). Its inputs held elsewhere reach it through
/// scheduled transfers (Note [Transfers] in prepare.cc).
struct OpPlacement {
  int32_t op = 0;
  EngineId engine;
  std::optional<int32_t> domain{};
  friend bool operator==(const OpPlacement&, const OpPlacement&) = default;
};

/// Options of one preparation (part of the plan cache key).
struct PrepareOptions {
  /// The engine to run on; empty: the first registered engine.
  std::optional<EngineId> engine{};
  /// The domain of that engine; empty: the domain of that engine holding the most input
  /// bytes (inputs placed in a CPU domain the engine has; ties go to the lower domain
  /// id; none: the engine's first domain).
  std::optional<int32_t> domain{};
  /// Operation-local provider overrides (at most one per op).
  std::vector<ProviderOverride> overrides{};
  /// Arguments (by index) whose storage an execution may overwrite: an element-wise op
  /// whose result has the argument's dtype and shape may be computed in place of it at
  /// its last use (Note [Buffer plan]). After an execution, a donated argument's
  /// contents are unspecified. Donation happens only when, at that execution, the passed
  /// handle is the only one to its storage, writable and compact.
  std::vector<int32_t> donate_arguments{};
  /// Ops placed on another engine or domain than the program's (at most one per op).
  std::vector<OpPlacement> placements{};
  friend bool operator==(const PrepareOptions&, const PrepareOptions&) = default;
};

/// Counters of the plan cache (ARCHITECTURE §3.5).
struct PlanCacheStats {
  int64_t hits = 0, misses = 0, waits = 0, negative_hits = 0, preparations = 0, evictions = 0;
  int64_t entries = 0, retained_bytes = 0, capacity = 0;
};

/// Time spent by the runtime, in nanoseconds, and counts.
struct ExecutionMetrics {
  int64_t preparations = 0, prepare_ns = 0;
  int64_t lookups = 0, lookup_ns = 0;
  int64_t executions = 0, execute_ns = 0;
  int64_t donated_arguments = 0;  ///< arguments written in place (declared and eligible)
  int64_t submissions = 0;        ///< runs submitted (Runtime::submit)
  int64_t admission_waits = 0;    ///< runs that waited for memory before their first launch
  int64_t lease_waits = 0;        ///< launches that waited for a node lease
  int64_t transfers = 0;          ///< scheduled transfer launches
  int64_t detached_errors = 0;    ///< failed runs whose handle was dropped before wait
  int64_t reserved_bytes_peak = 0;  ///< highest total bytes reserved at once (all budgets)
};

/// A run handed to the runtime by Runtime::submit. Move-only. Dropping it detaches: the
/// run still completes (its error, if any, goes to Runtime::detached_errors) and the
/// destructor never blocks. Not thread-safe (one owner), but the run it observes may
/// complete on any thread.
class ExecutionHandle {
 public:
  ExecutionHandle() = default;
  ExecutionHandle(ExecutionHandle&&) noexcept = default;
  ExecutionHandle& operator=(ExecutionHandle&& other) noexcept;
  ExecutionHandle(const ExecutionHandle&) = delete;
  ExecutionHandle& operator=(const ExecutionHandle&) = delete;
  ~ExecutionHandle();

  /// Whether the handle observes a run (not default-constructed, moved from or waited).
  bool valid() const noexcept { return run_ != nullptr; }
  /// Blocks until the run finished (launched, drained) and returns its outputs or its
  /// primary error (drain failures attached as suppressed errors). Consumes the handle.
  /// Errors: the run's; kCancelled after cancel(); kShutDown when the runtime stopped
  /// before admitting it; kInvalidArgument on an invalid handle.
  Result<std::vector<Tensor>> wait();
  /// Best effort: cancels the run if it has not been launched yet (still waiting for
  /// admission) and returns true; false once it was launched (it then runs to the end).
  bool cancel();
  /// True once wait() would not block.
  bool ready() const;

  struct Run;  // internal

 private:
  friend class Runtime;
  explicit ExecutionHandle(std::shared_ptr<Run> run) : run_(std::move(run)) {}
  void detach() noexcept;
  std::shared_ptr<Run> run_;
};

/// A program prepared for one engine domain and one input signature: resolved kernels,
/// placement, buffer plan and schedule. Immutable; shared by the plan cache and its
/// holders; executing it concurrently from several threads is allowed.
class PreparedProgram;

class Runtime;
/// The immutable configuration snapshot a preparation pins (config + registrations).
struct RuntimeConfigSnapshot;
/// The runtime's state shared with its in-flight runs (admission, diagnostics).
struct RuntimeShared;
class Session;

/// A user-owned runtime. Thread-safe. Create with Runtime::create; engines register
/// through their own helpers (e.g. cpu_runtime::register_cpu_engine).
class Runtime : public std::enable_shared_from_this<Runtime> {
 public:
  /// Validates `config` and creates a runtime with no engine. Errors (kConfiguration):
  /// kInvalidArgument for a capacity below 1.
  static Result<std::shared_ptr<Runtime>> create(RuntimeConfig config = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  RuntimeId id() const noexcept { return id_; }
  /// The current configuration epoch (incremented by every reconfiguration and
  /// registration).
  uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }
  RuntimeConfig config() const;

  /// Replaces the whole configuration after validating it; publishes it atomically with
  /// a new epoch. On error nothing changes. Prepared programs of the old epoch become
  /// stale (execute_prepared rejects them; run() re-prepares). The plan cache capacity
  /// applies from now on (excess ready entries are evicted).
  Result<void> reconfigure(RuntimeConfig config);

  /// Registers an engine bridge; returns its id. Errors (kConfiguration):
  /// kInvalidArgument for a null bridge or one without domains.
  Result<EngineId> register_engine(std::shared_ptr<const EngineBridge> engine);

  enum class Registration : uint8_t { kAdd, kReplace };
  /// Registers `module` for (module->family_id(), engine). The same module again is a
  /// no-op; a different module for a registered key is a kConfiguration/kInvalidArgument
  /// error unless `mode` is kReplace. Errors: kOutOfRange (unknown engine).
  Result<void> register_extension(EngineId engine, std::shared_ptr<const ExtensionModule> module,
                                  Registration mode = Registration::kAdd);

  /// Registers `provider` for transfers from `src` to `dst` (both registered engines whose
  /// storage classes match). The same provider again is a no-op; another one for the
  /// pair is a kConfiguration/kInvalidArgument error unless `mode` is kReplace. Errors:
  /// kOutOfRange (unknown engine), kInvalidArgument (null provider, storage class that is
  /// not the engine's, src == dst).
  Result<void> register_transfer(TransferEndpoint src, TransferEndpoint dst,
                                 std::shared_ptr<const TransferProvider> provider,
                                 Registration mode = Registration::kAdd);
  /// The endpoint of a registered engine (its id and storage class). Errors: kOutOfRange.
  Result<TransferEndpoint> endpoint(EngineId engine) const;

  /// The bridge registered as `engine` in the current snapshot. Registration-time
  /// lookup (for callers that resolve slots once per epoch, e.g. the eager API).
  /// Errors: kOutOfRange (unknown engine).
  Result<std::shared_ptr<const EngineBridge>> engine_bridge(EngineId engine) const;
  /// The extension module registered for (`family`, `engine`) in the current snapshot,
  /// or nullptr. A string-keyed lookup: resolve once per epoch, not per call.
  std::shared_ptr<const ExtensionModule> extension_module(std::string_view family, EngineId engine) const;
  /// The ids of the registered engines, in registration order.
  std::vector<EngineId> engines() const;

  /// Prepares `graph` for arguments of `signature` (one per argument input, in input
  /// order); the bindings' signatures are those of `graph.bindings` (executions may pass
  /// other bindings of the same dtypes and shapes). Checks the signature against the
  /// program's inputs and shape
  /// guards before any provider is asked. Resolution per op: native core provider or
  /// extension module of the placed engine, then the extension's core lowering, then the
  /// configured fallback; only a typed kUnsupported moves on. Errors (kPrepare stage):
  /// kInvalidArgument (counts, unknown engine/domain), kDTypeMismatch / kShapeMismatch
  /// (signature or guards), kUnsupported (no provider), kProviderContract,
  /// kDeterminismUnsupported, kPreparationCycle.
  Result<std::shared_ptr<const PreparedProgram>> prepare_for(const program::CompiledGraph& graph,
                                                              std::span<const TensorSignature> signature,
                                                              const PrepareOptions& options = {});

  /// Runs a prepared program with `arguments` (and the bindings of the graph it was
  /// prepared from, or `bindings`) and blocks until it finished. Checks runtime identity
  /// (kRuntimeMismatch), epoch (kStalePreparedGraph) and every input's dtype, shape and
  /// placement before anything runs; waits for admission when memory budgets apply
  /// (Note [Admission]); begins one event-domain run per engine used, enters each engine
  /// domain once per segment, and drains every run before returning (Note [Event
  /// domains]). The first failing launch stops the run; no output is returned then (the
  /// error names the node, carries the provider's error as cause and its event-domain
  /// operation; drain failures after it are suppressed errors). Outputs may be views
  /// sharing storage with inputs or with each other; outputs computed on a device engine
  /// are returned there.
  Result<std::vector<Tensor>> execute_prepared(const PreparedProgram& prepared, std::span<const Tensor> arguments,
                                               const program::ProgramBindings& bindings);
  Result<std::vector<Tensor>> execute_prepared(const PreparedProgram& prepared, std::span<const Tensor> arguments);

  /// Submits one execution of `prepared` and returns at once with a handle (spec 000
  /// "Asynchronous Execution and Events"). Checks runtime, epoch and the inputs as
  /// execute_prepared does (those errors are returned here, nothing is submitted). When
  /// the run is admitted at once (Note [Admission]: memory budgets, in submission order)
  /// its nodes are launched on the calling thread — immediate domains (CPU) compute
  /// during the launch, asynchronous ones complete later — else it waits in order and the
  /// runtime's dispatcher thread launches it. The handle's wait() drains and returns
  /// the outputs. The run holds the prepared program, its workspace and every tensor it
  /// touches until it finished; never the Runtime itself or a handle. Errors (kEnqueue):
  /// kShutDown after shutdown(); kRuntimeMismatch, kStalePreparedGraph, kInvalidArgument,
  /// kDTypeMismatch, kShapeMismatch as execute_prepared.
  Result<ExecutionHandle> submit(std::shared_ptr<const PreparedProgram> prepared, std::span<const Tensor> arguments);
  Result<ExecutionHandle> submit(std::shared_ptr<const PreparedProgram> prepared, std::span<const Tensor> arguments,
                                 const program::ProgramBindings& bindings);

  /// Stops admitting new submissions (they fail with kShutDown), cancels runs still
  /// waiting for admission (their wait returns kShutDown), and blocks until every
  /// launched run finished (draining those no one waits for). Idempotent.
  void shutdown();

  /// Errors of runs that failed after their handle was dropped (the most recent 64).
  std::vector<Error> detached_errors() const;

  /// Enters `domain` of `engine` once and calls `f` with a session through which many
  /// executions run without entering that domain again (ARCHITECTURE §5 "CPU executor
  /// entry"). Errors before `f` runs: kReentered (this thread already holds a session of
  /// this runtime), kContended (another thread holds a session of that domain),
  /// kExecutor (the engine refused the entry; its error is the cause), kOutOfRange
  /// (unknown engine or domain). Otherwise `f`'s result. An exception thrown by `f`
  /// propagates after the session is released.
  Result<void> with_session(EngineId engine, int32_t domain, FunctionRef<Result<void>(Session&)> f);

  /// The cached convenience path: looks up (or prepares) the plan for the graph and the
  /// arguments' signature, then executes it. A stale plan is never used.
  Result<std::vector<Tensor>> run(const program::CompiledGraph& graph, std::span<const Tensor> arguments,
                                  const PrepareOptions& options = {});

  /// Human-readable plan: each node's provider and why, placement, buffer slot and
  /// lifetime, views vs copies, peak bytes.
  std::string explain(const PreparedProgram& prepared) const;

  PlanCacheStats plan_cache_stats() const;
  /// Drops every ready entry (holders keep theirs valid).
  void clear_plan_cache();
  ExecutionMetrics metrics() const;

  /// Test hook: called at the start of every preparation with the program's fingerprint
  /// (e.g. to hold one preparation and prove others proceed). Not for production use.
  void set_prepare_hook(std::function<void(const program::Fingerprint&)> hook);

 private:
  struct Impl;
  explicit Runtime(RuntimeConfig config);
  Result<std::shared_ptr<const PreparedProgram>> prepare_uncached(const program::CompiledGraph& graph,
                                                                  std::span<const TensorSignature> signature,
                                                                  const PrepareOptions& options);
  std::shared_ptr<const RuntimeConfigSnapshot> snapshot_() const;
  // Publishes `next` (a validated copy of the current snapshot with one change) with the
  // next epoch. Caller holds the configuration mutex.
  void publish_locked(std::shared_ptr<RuntimeConfigSnapshot> next);
  Result<void> check_execution(const PreparedProgram& p, std::span<const Tensor> arguments,
                               const program::ProgramBindings& bindings, const char* op) const;
  Result<std::vector<Tensor>> execute_checked(const PreparedProgram& p, std::span<const Tensor> arguments,
                                              const program::ProgramBindings& bindings, Session* session);
  friend class Session;
  RuntimeId id_;
  std::atomic<uint64_t> epoch_{1};
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<RuntimeShared> shared_;
};

/// A session of one engine domain (Runtime::with_session): executions through it run
/// their segments on that domain inside the session's entry. Valid during the callback
/// only; used by the callback's thread only.
class Session {
 public:
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /// Runtime::execute_prepared inside the session (same checks and errors).
  Result<std::vector<Tensor>> execute_prepared(const PreparedProgram& prepared, std::span<const Tensor> arguments);
  EngineId engine() const noexcept { return engine_; }
  int32_t domain() const noexcept { return domain_; }
  /// Executions run through this session so far.
  int64_t executions() const noexcept { return executions_; }

 private:
  friend class Runtime;
  Session(Runtime& rt, EngineId engine, int32_t domain, EngineContext& ctx) noexcept
      : rt_(rt), engine_(engine), domain_(domain), ctx_(ctx) {}
  Runtime& rt_;
  EngineId engine_;
  int32_t domain_;
  EngineContext& ctx_;
  int64_t executions_ = 0;
};

/// Read-only facts about a prepared program.
struct PreparedInfo {
  RuntimeId runtime;
  uint64_t epoch = 0;
  EngineId engine;
  int32_t domain = 0;
  int64_t nodes = 0;
  int64_t view_nodes = 0;
  int64_t peak_bytes = 0;  ///< estimated peak of live intermediate and output bytes
  int64_t planned_buffers = 0;   ///< workspace buffers of the buffer plan
  int64_t workspace_bytes = 0;   ///< their bytes, held by each cached workspace
  int64_t in_place_nodes = 0;    ///< nodes writing in place of a dead internal value
  int64_t donating_nodes = 0;    ///< nodes writing in place of a donated argument
  int64_t transfers = 0;         ///< scheduled transfer nodes
  int64_t event_domains = 0;     ///< event domains a run begins (one per engine used)
  int64_t segments = 0;          ///< executor entries per execution (same-domain runs of nodes)
};
PreparedInfo prepared_info(const PreparedProgram& prepared);

}  // namespace tenferro::runtime
