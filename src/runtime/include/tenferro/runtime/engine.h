#pragma once
/// \file
/// What an engine registers into a Runtime (Note [Engine bridge] in runtime.cc): a
/// bridge that prepares one node at a time for concrete types and enters an engine
/// domain once per schedule segment, the prepared node kernels it returns, and
/// extension modules keyed by (family id, engine id). The runtime never links an
/// engine; engines link the runtime (ARCHITECTURE §2).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "tenferro/core/function_ref.h"
#include "tenferro/core/result.h"
#include "tenferro/program/program.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

/// Identity of a Runtime (unique within the process, never reused).
struct RuntimeId {
  uint64_t value = 0;
  friend bool operator==(const RuntimeId&, const RuntimeId&) = default;
};

/// Identity of an engine registered in one runtime (its registration index).
struct EngineId {
  uint32_t value = 0;
  friend bool operator==(const EngineId&, const EngineId&) = default;
  friend auto operator<=>(const EngineId&, const EngineId&) = default;
};

/// How reductions may be ordered. kDefault: deterministic planning (ARCHITECTURE §3.8)
/// but floating results may depend on the thread count; kReproducible: bitwise the same
/// results for any thread count, or DeterminismUnsupported at prepare.
enum class DeterminismMode : uint8_t { kDefault, kReproducible };

/// Outcome of asking a provider to prepare a node (ARCHITECTURE §4): prepared, a request
/// for a narrower specialization (must strictly widen what is known), or unsupported
/// (the only outcome that lets resolution try the next candidate).
template <class T>
class PrepareCapability {
 public:
  enum class Kind : uint8_t { kPrepared, kNeedsSpecialization, kUnsupported };
  static PrepareCapability prepared(T value) { return PrepareCapability(Kind::kPrepared, std::move(value), {}); }
  static PrepareCapability needs_specialization(std::string request) {
    return PrepareCapability(Kind::kNeedsSpecialization, T{}, std::move(request));
  }
  static PrepareCapability unsupported(std::string reason) {
    return PrepareCapability(Kind::kUnsupported, T{}, std::move(reason));
  }
  Kind kind() const noexcept { return kind_; }
  T& value() noexcept { return value_; }
  /// Why unsupported, or what specialization is needed.
  const std::string& reason() const noexcept { return reason_; }

 private:
  PrepareCapability(Kind k, T v, std::string r) : kind_(k), value_(std::move(v)), reason_(std::move(r)) {}
  Kind kind_;
  T value_;
  std::string reason_;
};

/// The engine-specific state of one entered domain (a CPU engine's is its entered
/// execution context). Node kernels of an engine downcast it to their engine's type.
class EngineContext {
 public:
  virtual ~EngineContext() = default;
};

/// One prepared node: runs an operation on concrete inputs. Immutable after
/// preparation; `run` may be called concurrently from several executions.
class NodeKernel {
 public:
  virtual ~NodeKernel() = default;
  /// Computes the node's outputs from `inputs` (any layouts) into `outputs` (one empty
  /// handle per result, assigned by the kernel). Must not write to any input. Errors
  /// are completion-stage errors (e.g. integer division by zero).
  virtual Result<void> run(EngineContext& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs) const = 0;
  /// The provider's name, e.g. "cpu.elementwise".
  virtual std::string_view provider() const = 0;
  /// True when the outputs are views sharing the first input's storage (no copy).
  virtual bool is_view() const { return false; }
  /// How the kernel will compute the node, as the provider planned it at prepare (e.g.
  /// dot_general's route and its reason for compact operands); empty when there is
  /// nothing beyond provider(). Shown by Runtime::explain().
  virtual std::string describe() const { return {}; }
  /// True when the kernel has one output that it can write into a destination the
  /// runtime passes in `outputs[0]` (Note [Buffer plan] in prepare.cc): on entry that
  /// handle is either empty (allocate as usual) or exactly the result's dtype and shape,
  /// compact column-major, in storage the runtime's plan reserves for this output (no
  /// other reader observes it while the kernel runs; use Destination::kPlanned-style
  /// checks, not a handle count). Such a kernel's output never shares storage with its
  /// inputs, except in place (below). Kernels answering false may return outputs that
  /// alias their inputs; the plan treats them so.
  virtual bool writes_into() const { return false; }
  /// For a writes_into() kernel: true when the destination may be the storage of input
  /// `input` itself (same dtype, shape, compact layout), i.e. an element-wise map that
  /// reads each element before writing the same position.
  virtual bool in_place_ok(size_t input) const {
    (void)input;
    return false;
  }
};

/// What a provider is asked to prepare: one operation with concrete input and output
/// types. The spans stay valid only during the call.
struct NodeRequest {
  const program::Operation* op = nullptr;
  std::span<const DType> input_dtypes;
  std::span<const Shape> input_shapes;
  std::span<const DType> output_dtypes;
  std::span<const Shape> output_shapes;
  int32_t domain = 0;
  DeterminismMode determinism = DeterminismMode::kDefault;
};

// ---- event domains (Note [Event domains] in execute.cc)

/// Identity of an event domain within one runtime: the runtime assigns one per
/// registered engine (its engine id's value).
struct EventDomainId {
  uint32_t value = 0;
  friend bool operator==(const EventDomainId&, const EventDomainId&) = default;
};

/// A completion token: which domain's run produced it and its position there. Sequence 0
/// means "complete when it was returned" (an immediate domain's tokens).
struct CompletionToken {
  EventDomainId origin;
  uint64_t sequence = 0;
  friend bool operator==(const CompletionToken&, const CompletionToken&) = default;
};

/// One launch of a prepared node on an event-domain run. Spans are valid during enqueue
/// only: a run that completes later copies the tensor handles it needs (which retains
/// their buffers until the work completes).
struct Launch {
  const NodeKernel* kernel = nullptr;
  EngineContext* context = nullptr;  ///< the entered context of the node's engine domain
  std::span<const Tensor> inputs;
  /// On entry: empty handles, or planned destinations (NodeKernel::writes_into); on a
  /// successful return: the results, which may still be being written until the returned
  /// token completes (only launches on this run, ordered after the token, may read them).
  std::span<Tensor> outputs;
  /// Tokens of this run's domain that must complete before the work starts.
  std::span<const CompletionToken> deps;
};

/// One execution's use of an event domain (begun before the first launch, drained
/// exactly once). Used by one thread at a time.
class EventDomainRun {
 public:
  virtual ~EventDomainRun() = default;
  /// The domain this run belongs to (checked by the scheduler before every enqueue).
  virtual EventDomainId domain() const = 0;
  /// Launches `launch` after its deps and returns the token of its completion. An error
  /// means the work was not launched (nothing of it runs).
  virtual Result<CompletionToken> enqueue(const Launch& launch) = 0;
  /// Blocks the calling host thread until `token` (of this domain) completed; its
  /// completion error if it failed.
  virtual Result<void> host_wait(CompletionToken token) = 0;
  /// Retirement boundary: returns once no launched work can touch its buffers any more,
  /// with the run's first completion error (or the driver's own drain error). Must not
  /// depend on another run being drained first.
  virtual Result<void> drain() = 0;
};

/// An engine's event-domain driver. Thread-safe.
class EventDomainDriver {
 public:
  virtual ~EventDomainDriver() = default;
  /// True when enqueue completes the work before it returns (the CPU's driver): such
  /// runs need no drain wait, and a run using only immediate domains finishes at launch.
  virtual bool immediate() const = 0;
  /// Begins one execution's run of domain `id`. `recycled` is a run this driver returned
  /// earlier for the same domain and that was drained (or null): the driver may reuse it
  /// so a warm execution allocates nothing. Errors: the driver's (run allocation, a lost
  /// device, ...); the scheduler checks the run reports `id`.
  virtual Result<std::unique_ptr<EventDomainRun>> begin_run(EventDomainId id,
                                                            std::unique_ptr<EventDomainRun> recycled) const = 0;
};

/// The immediate driver (CPU engines): enqueue runs the kernel in the launch's context
/// before returning and returns a complete token; a kernel error is the enqueue's error.
/// Rejects dependency tokens of another domain. One immutable instance per process.
std::shared_ptr<const EventDomainDriver> immediate_event_driver();

// ---- transfers

/// The kind of memory an engine's tensors live in.
enum class StorageClass : uint8_t { kHost, kDevice };
std::string_view storage_class_name(StorageClass c) noexcept;

/// One end of a transfer: an engine and its storage class (spec 000: a transfer endpoint
/// is the immutable logical pair (EngineId, StorageClass)).
struct TransferEndpoint {
  EngineId engine;
  StorageClass storage = StorageClass::kHost;
  friend bool operator==(const TransferEndpoint&, const TransferEndpoint&) = default;
  friend auto operator<=>(const TransferEndpoint&, const TransferEndpoint&) = default;
};

/// What a transfer provider is asked to prepare: moving one value of `dtype`/`shape`
/// from `src` (domain `src_domain`) to `dst` (domain `dst_domain`).
struct TransferRequest {
  DType dtype = DType::kF64;
  Shape shape;
  TransferEndpoint src, dst;
  int32_t src_domain = 0, dst_domain = 0;
};

/// Copies tensors between two endpoints. The kernel it prepares runs as a scheduled
/// transfer node on the destination engine (launched on the destination's event-domain
/// run inside its entered context) with one input (the source tensor, complete: the
/// scheduler host-waits on source-domain tokens first) and one output in the
/// destination's storage. Thread-safe.
class TransferProvider {
 public:
  virtual ~TransferProvider() = default;
  virtual std::string_view name() const = 0;
  virtual Result<PrepareCapability<std::shared_ptr<const NodeKernel>>> prepare(const TransferRequest& request) const = 0;
};

/// An engine's bridge into a runtime (metadata + executable entry). Thread-safe.
class EngineBridge {
 public:
  virtual ~EngineBridge() = default;
  /// A short name for explain() and errors ("cpu").
  virtual std::string_view name() const = 0;
  /// The engine's domains (ids usable as placements).
  virtual std::span<const int32_t> domains() const = 0;
  /// Prepares a core op (request.op->code() != kExtension). Return kUnsupported for ops
  /// or dtypes the engine does not run natively; errors are prepare-stage errors.
  virtual Result<PrepareCapability<std::shared_ptr<const NodeKernel>>> prepare_core(const NodeRequest& request) const = 0;
  /// Enters `domain` once and calls `body` with the entered context (one executor entry
  /// per call). Errors: the engine's entry errors (kReentered, kOutOfRange) or `body`'s.
  virtual Result<void> enter(int32_t domain, FunctionRef<Result<void>(EngineContext&)> body) const = 0;
  /// True when allocate() provides workspace buffers; the runtime then plans buffers
  /// for writes_into() kernels (Note [Buffer plan] in buffer_plan.cc). Default: false,
  /// every node allocates its own outputs.
  virtual bool plans_buffers() const { return false; }
  /// Memory of `domain` for one planned workspace buffer of `bytes` bytes (aligned for
  /// every dtype), held by a prepared program's workspace across executions. Called only
  /// when plans_buffers(). Errors (kEnqueue stage): kAllocationFailed, kUnsupported.
  virtual Result<std::shared_ptr<Storage>> allocate(int32_t domain, int64_t bytes) const {
    (void)domain;
    (void)bytes;
    return Error(ErrorStage::kEnqueue, ErrorCode::kUnsupported, "allocate", std::string(name()) + " plans no buffers");
  }
  /// The engine's event-domain driver. Default: the immediate driver (work completes
  /// inside enqueue, as on a CPU engine).
  virtual std::shared_ptr<const EventDomainDriver> event_driver() const { return immediate_event_driver(); }
  /// The kind of memory the engine's kernels read and write. Default: host memory.
  virtual StorageClass storage_class() const { return StorageClass::kHost; }
  /// Whether tensors at `placement` live in this engine's storage (its kernels may read
  /// them without a transfer). Default: host placements.
  virtual bool holds(const Placement& placement) const { return placement.is_host(); }
  /// The placement of tensors the engine produces in `domain` (one it holds()).
  /// Default: the CPU domain `domain`.
  virtual Placement placement(int32_t domain) const { return Placement::cpu_domain(domain); }
};

/// An engine's native implementation of one extension family. Thread-safe.
class ExtensionModule {
 public:
  virtual ~ExtensionModule() = default;
  /// The family this module implements ("einsum").
  virtual std::string_view family_id() const = 0;
  /// Prepares one extension op of the family (request.op->extension() is set).
  virtual Result<PrepareCapability<std::shared_ptr<const NodeKernel>>> prepare(const NodeRequest& request) const = 0;
};

}  // namespace tenferro::runtime
