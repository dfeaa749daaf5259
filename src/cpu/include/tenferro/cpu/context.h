#pragma once
/// \file
/// CPU execution: parallel modes, domain executors and the entered execution context
/// (spec 000 "CPU Resource Model", ARCHITECTURE §3.7 "one fan-out level").

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tenferro/cpu/caps.h"
#include "tenferro/core/function_ref.h"
#include "tenferro/core/result.h"

namespace tenferro::cpu {

/// How one operation uses the workers of its domain. Chosen once by the engine before a
/// provider runs; providers never start their own pool or re-enter the executor.
enum class ParallelMode : uint8_t {
  kSequential,  ///< the calling worker only
  kInner,       ///< the operation fans out over the domain's workers (parallel_for)
  kOuter,       ///< independent operations run concurrently, each sequential inside
};
std::string_view parallel_mode_name(ParallelMode mode) noexcept;

using tenferro::FunctionRef;

/// Who created an executor's workers and who shuts them down.
enum class ShutdownOwner : uint8_t { kEngine, kCaller };

/// What an executor offers (reported once; used to choose modes).
struct ExecutorCapabilities {
  int workers = 1;              ///< concurrency (thread budget)
  bool reentrant = false;       ///< whether install() may be nested (never relied on)
  bool pinned = false;          ///< workers are bound to the domain's CPU set
  ShutdownOwner shutdown_owner = ShutdownOwner::kEngine;
};

/// The workers of one CPU resource domain.
///
/// `install(f)` runs `f` synchronously inside the executor (on its workers' arena) and
/// returns when it and everything it forked are done; `parallel_for` may only be called
/// from inside an installed function. `submit(f)` runs `f` later (outer submission) and
/// returns at once. Implementations are thread-safe.
class CpuDomainExecutor {
 public:
  virtual ~CpuDomainExecutor() = default;
  virtual ExecutorCapabilities capabilities() const = 0;
  virtual void install(FunctionRef<void()> f) = 0;
  virtual void submit(std::function<void()> f) = 0;
  /// Splits [0, n) into chunks of at least `grain` and runs `body(begin, end)` on the
  /// executor's workers; returns when all chunks are done.
  virtual void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body) = 0;
};

/// A oneTBB task_arena with `threads` workers (Managed mode). When `cpus` is non-empty,
/// every worker entering the arena is pinned to that CPU set.
Result<std::shared_ptr<CpuDomainExecutor>> make_tbb_executor(int threads, std::vector<int> cpus = {});

/// How a batch of matrix products is spread over the workers (spec 001 D9). A forced
/// policy overrides the heuristic, never a safety rule: a combination the provider cannot
/// honour is a typed error before any write (Note [Batch policies] in dot_plan.cc).
enum class BatchPolicy : uint8_t {
  kAuto,              ///< outer-parallel for small products, provider items otherwise
  kSequential,        ///< one product after another, each on one thread
  kOuterParallel,     ///< products split over the context's workers, each on one thread
  kProviderItems,     ///< one product after another, each using the provider's threads
  kWholeBatchVendor,  ///< one vendor batch call for the whole batch (BLIS ?gemm_batch_)
};
std::string_view batch_policy_name(BatchPolicy policy) noexcept;

/// Batch policy and thresholds. Precedence: engine default < scoped override
/// (ScopedBatchOverride) < per-operation options (Note [Batch policy thresholds]).
/// GEMM implementation for dot_general's matrix products.
enum class GemmProvider : uint8_t {
  kAuto,      ///< the planner chooses (Note [dot_general planner], Note [Default GEMM provider])
  kOpenBlas,  ///< cblas (external workers, global thread control)
  kBlis,      ///< BLIS typed API, general strides, sequential on engine workers
  kNaive,     ///< plain loops (every dtype; integers always use it)
};

struct BatchSettings {
  BatchPolicy policy = BatchPolicy::kAuto;
  /// Below this many multiply-adds per product, plain loops replace OpenBLAS calls
  /// (measured: Note [Tiny products] in dot_plan.cc).
  int64_t tiny_flops = 256;
  /// At most this many multiply-adds, a plain matrix product with default options is
  /// computed by a direct loop before any planning (measured: Note [Tiny matrix
  /// shortcut] in dot_general.cc).
  int64_t shortcut_flops = 2744;
  /// Below this many multiply-adds per product, kAuto batches go outer-parallel.
  int64_t outer_parallel_flops = int64_t{1} << 21;
  /// Below this many multiply-adds per product, plain loops replace BLIS calls (a BLIS
  /// call has a larger fixed cost than an OpenBLAS call).
  int64_t tiny_flops_blis = 16384;
  /// Below this many real multiply-adds (a complex one counts four), a product uses one
  /// thread even when the context has more (provider items and single products).
  int64_t parallel_min_flops = int64_t{1} << 19;
  /// Provider of dot_general calls whose DotOptions::provider is kAuto (engine default:
  /// CpuEngineConfig::batch). kAuto lets the planner choose.
  GemmProvider provider = GemmProvider::kAuto;
  /// Refuse routes that run a provider on its own threads (OpenBLAS's, with only global
  /// thread control): set from CpuEngineConfig::strict_placement.
  bool strict_placement = false;
};

namespace detail {
/// Depth of entered contexts on this thread (Note [Re-entry detection] in engine.cc).
extern thread_local int tls_entered_depth;
/// Marks the current thread as inside an entered context for its lifetime.
struct EnteredMark {
  EnteredMark() noexcept { ++tls_entered_depth; }
  ~EnteredMark() { --tls_entered_depth; }
  EnteredMark(const EnteredMark&) = delete;
  EnteredMark& operator=(const EnteredMark&) = delete;
};
}  // namespace detail

/// An entered execution context: one executor entry, one parallel mode, one thread budget.
///
/// Kernels receive it by reference and call `parallel_for`; with kSequential (or a
/// budget of one) that runs inline. Not copyable; valid only during the call that
/// created it.
class CpuExecutionContext {
 public:
  /// `caps` (borrowed; must outlive the context) are the capabilities planners read;
  /// null means host_caps(). Engines pass their own (CpuEngine::caps()).
  CpuExecutionContext(CpuDomainExecutor* executor, ParallelMode mode, int threads,
                      BatchSettings batch = {}, const CpuCaps* caps = nullptr) noexcept
      : executor_(executor), mode_(mode), threads_(threads), batch_(batch), caps_(caps) {}
  CpuExecutionContext(const CpuExecutionContext&) = delete;
  CpuExecutionContext& operator=(const CpuExecutionContext&) = delete;

  /// A sequential context that needs no executor (tests, tiny work).
  static CpuExecutionContext sequential() noexcept { return CpuExecutionContext(nullptr, ParallelMode::kSequential, 1); }

  ParallelMode mode() const noexcept { return mode_; }
  /// Threads this operation may use (1 unless mode is kInner).
  int threads() const noexcept { return mode_ == ParallelMode::kInner ? threads_ : 1; }

  /// Runs body over [0, n) in chunks of at least `grain`, in parallel when the mode is
  /// kInner and n is large enough; otherwise inline as one chunk.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body) const {
    if (n <= 0) return;
    if (threads() <= 1 || executor_ == nullptr || n <= grain) {
      body(0, n);
      return;
    }
    executor_->parallel_for(n, grain, [&](int64_t b, int64_t e) {
      detail::EnteredMark mark;  // workers running chunks are inside the context too
      body(b, e);
    });
  }

  /// Current batch settings (engine default or a scoped override).
  const BatchSettings& batch() const noexcept { return batch_; }
  /// The capabilities planners decide with (Note [CPU capabilities] in caps.cc).
  const CpuCaps& caps() const { return caps_ != nullptr ? *caps_ : host_caps(); }

 private:
  friend class ScopedBatchOverride;
  CpuDomainExecutor* executor_;
  ParallelMode mode_;
  int threads_;
  BatchSettings batch_;
  const CpuCaps* caps_;
};

/// Overrides a context's batch settings for a scope; restores them on destruction,
/// including during unwinding or after an error return.
class ScopedBatchOverride {
 public:
  ScopedBatchOverride(CpuExecutionContext& ctx, BatchSettings settings) noexcept : ctx_(ctx), saved_(ctx.batch_) {
    ctx_.batch_ = settings;
  }
  ~ScopedBatchOverride() { ctx_.batch_ = saved_; }
  ScopedBatchOverride(const ScopedBatchOverride&) = delete;
  ScopedBatchOverride& operator=(const ScopedBatchOverride&) = delete;

 private:
  CpuExecutionContext& ctx_;
  BatchSettings saved_;
};

}  // namespace tenferro::cpu
