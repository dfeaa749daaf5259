#pragma once
/// \file
/// Typed, staged errors with a cause chain (ARCHITECTURE §3.2).

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tenferro {

/// The stage of work at which an error was detected.
enum class ErrorStage : uint8_t {
  kUsage,          ///< invalid arguments to a library call (shapes, indices, layouts, ...)
  kConfiguration,  ///< invalid runtime/engine configuration
  kCompile,        ///< graph tracing and compilation
  kPrepare,        ///< preparation of a compiled graph for an engine
  kEnqueue,        ///< submission of prepared work
  kCompletion,     ///< failure reported when work completes
};

/// What went wrong, independent of the stage.
enum class ErrorCode : uint16_t {
  kInvalidArgument,     ///< an argument is malformed (generic)
  kInvalidShape,        ///< negative extent, wrong rank, data length vs shape, ...
  kOverflow,            ///< an element, byte or offset count does not fit in int64_t
  kOutOfRange,          ///< an index, axis or slice bound is outside its range
  kInvalidPermutation,  ///< not a permutation of 0..rank-1
  kInvalidLayout,       ///< strides/offset reach outside the storage
  kIncompatibleLayout,  ///< the request needs a copy (e.g. reshape of a non-mergeable view)
  kDTypeMismatch,       ///< wrong element type for the operation
  kShapeMismatch,       ///< shapes of two operands disagree
  kNotExclusive,        ///< mutable access to storage that is shared
  kReadOnly,            ///< write to storage that was wrapped read-only
  kUnsupported,         ///< a capability is not available
  kAllocationFailed,    ///< memory could not be obtained
  kReentered,           ///< an entered execution context was entered again
  kParse,               ///< malformed text input
  kIo,                  ///< file-system failure
  kInternal,            ///< a broken invariant inside the library (a bug)
  kRuntimeMismatch,     ///< a prepared program or tensor of another runtime
  kStalePreparedGraph,  ///< a prepared program of an older configuration epoch
  kPreparationCycle,    ///< a preparation that (recursively) needs itself
  kProviderContract,    ///< a provider broke its contract (e.g. a non-widening specialization)
  kDeterminismUnsupported,  ///< Reproducible mode asked of a provider that cannot promise it
  kContended,               ///< a resource held by another caller that this call does not wait for
  kSingular,                ///< a matrix is exactly singular where an inverse is needed
  kNotPositiveDefinite,     ///< a matrix that must be Hermitian positive definite is not
  kNoConvergence,           ///< an iterative numerical method did not converge
  kCancelled,               ///< submitted work was cancelled before it was enqueued
  kShutDown,                ///< the runtime was shut down (or dropped) before the work was admitted
  kResourceExhausted,       ///< a resource requirement exceeds a configured capacity
  kEventDomain,             ///< an event-domain driver failed (see Error::event_operation)
  kExecutor,                ///< an engine's executor could not be entered
};

/// The event-domain operation an error comes from (spec 000 "Asynchronous Execution and
/// Events"): a closed set, so callers can tell a launch failure from a retirement one.
enum class EventDomainOperation : uint8_t {
  kNone,                ///< not an event-domain error
  kBeginRun,            ///< starting a per-execution run of a domain
  kEnqueue,             ///< launching a node on a run
  kDrain,               ///< retiring a run (waiting for its work, collecting completion errors)
  kTransferBridge,      ///< host-waiting on a source-domain token before a transfer
  kValidateCompletion,  ///< checking the origin of a completion a run returned
};
std::string_view event_domain_operation_name(EventDomainOperation op) noexcept;

/// Stable lowercase name ("usage", "compile", ...).
std::string_view error_stage_name(ErrorStage stage) noexcept;
/// Stable lowercase name ("out_of_range", "not_exclusive", ...).
std::string_view error_code_name(ErrorCode code) noexcept;

/// An immutable error value: stage, code, the operation that failed, a message that
/// names the offending values, and an optional cause.
///
/// Error is a cheap-to-copy handle (one shared pointer); copies share the same
/// immutable payload and may be used from any thread. Constructing one allocates, which
/// is fine because errors are off the hot path.
class Error {
 public:
  /// Builds an error. `op` names the failing operation ("permute", "from_col_major"),
  /// `message` says what was wrong with which values.
  Error(ErrorStage stage, ErrorCode code, std::string op, std::string message);

  ErrorStage stage() const noexcept;
  ErrorCode code() const noexcept;
  const std::string& op() const noexcept;
  const std::string& message() const noexcept;
  /// The error that caused this one, or nullptr.
  const Error* cause() const noexcept;

  /// Returns a copy of this error whose cause is `cause` (replacing any previous cause).
  Error with_cause(Error cause) const;

  /// The event-domain operation this error comes from (kNone for other errors).
  EventDomainOperation event_operation() const noexcept;
  /// Returns a copy tagged with the event-domain operation `op`.
  Error with_event_operation(EventDomainOperation op) const;
  /// Errors that happened while cleaning up after this one (e.g. drain failures after a
  /// launch failure), in the order they occurred. This error stays the primary one.
  const std::vector<Error>& suppressed() const noexcept;
  /// Returns a copy whose suppressed errors are `suppressed` (replacing any previous).
  Error with_suppressed(std::vector<Error> suppressed) const;

  /// "usage/out_of_range in slice: ..." followed by "\n  caused by: ..." per cause and
  /// "\n  suppressed: ..." per suppressed error.
  std::string to_string() const;

 private:
  struct Payload;
  std::shared_ptr<const Payload> payload_;
};

/// Shorthand constructors for the common stage.
Error usage_error(ErrorCode code, std::string op, std::string message);

/// Exception thrown by the eager convenience layer and by Result::value() on an error.
/// Library internals never throw it across a worker thread boundary.
class Exception : public std::exception {
 public:
  explicit Exception(Error error);
  const Error& error() const noexcept { return error_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  Error error_;
  std::string what_;
};

}  // namespace tenferro
