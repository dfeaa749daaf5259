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
