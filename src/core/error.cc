#include "tenferro/core/error.h"

#include <utility>

#include "tenferro/core/result.h"

namespace tenferro {

struct Error::Payload {
  ErrorStage stage;
  ErrorCode code;
  std::string op;
  std::string message;
  std::shared_ptr<const Error> cause;
  EventDomainOperation event_op = EventDomainOperation::kNone;
  std::vector<Error> suppressed;
};

std::string_view error_stage_name(ErrorStage stage) noexcept {
  switch (stage) {
    case ErrorStage::kUsage: return "usage";
    case ErrorStage::kConfiguration: return "configuration";
    case ErrorStage::kCompile: return "compile";
    case ErrorStage::kPrepare: return "prepare";
    case ErrorStage::kEnqueue: return "enqueue";
    case ErrorStage::kCompletion: return "completion";
  }
  return "unknown";
}

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kInvalidShape: return "invalid_shape";
    case ErrorCode::kOverflow: return "overflow";
    case ErrorCode::kOutOfRange: return "out_of_range";
    case ErrorCode::kInvalidPermutation: return "invalid_permutation";
    case ErrorCode::kInvalidLayout: return "invalid_layout";
    case ErrorCode::kIncompatibleLayout: return "incompatible_layout";
    case ErrorCode::kDTypeMismatch: return "dtype_mismatch";
    case ErrorCode::kShapeMismatch: return "shape_mismatch";
    case ErrorCode::kNotExclusive: return "not_exclusive";
    case ErrorCode::kReadOnly: return "read_only";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kAllocationFailed: return "allocation_failed";
    case ErrorCode::kReentered: return "reentered";
    case ErrorCode::kParse: return "parse";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kRuntimeMismatch: return "runtime_mismatch";
    case ErrorCode::kStalePreparedGraph: return "stale_prepared_graph";
    case ErrorCode::kPreparationCycle: return "preparation_cycle";
    case ErrorCode::kProviderContract: return "provider_contract";
    case ErrorCode::kDeterminismUnsupported: return "determinism_unsupported";
    case ErrorCode::kContended: return "contended";
    case ErrorCode::kSingular: return "singular";
    case ErrorCode::kNotPositiveDefinite: return "not_positive_definite";
    case ErrorCode::kNoConvergence: return "no_convergence";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kShutDown: return "shut_down";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kEventDomain: return "event_domain";
    case ErrorCode::kExecutor: return "executor";
  }
  return "unknown";
}

std::string_view event_domain_operation_name(EventDomainOperation op) noexcept {
  switch (op) {
    case EventDomainOperation::kNone: return "none";
    case EventDomainOperation::kBeginRun: return "begin_run";
    case EventDomainOperation::kEnqueue: return "enqueue";
    case EventDomainOperation::kDrain: return "drain";
    case EventDomainOperation::kTransferBridge: return "transfer_bridge";
    case EventDomainOperation::kValidateCompletion: return "validate_completion";
  }
  return "unknown";
}

Error::Error(ErrorStage stage, ErrorCode code, std::string op, std::string message)
    : payload_(std::make_shared<const Payload>(
          Payload{stage, code, std::move(op), std::move(message), nullptr, EventDomainOperation::kNone, {}})) {}

ErrorStage Error::stage() const noexcept { return payload_->stage; }
ErrorCode Error::code() const noexcept { return payload_->code; }
const std::string& Error::op() const noexcept { return payload_->op; }
const std::string& Error::message() const noexcept { return payload_->message; }
const Error* Error::cause() const noexcept { return payload_->cause.get(); }

Error Error::with_cause(Error cause) const {
  Error copy = *this;
  Payload p = *payload_;
  p.cause = std::make_shared<const Error>(std::move(cause));
  copy.payload_ = std::make_shared<const Payload>(std::move(p));
  return copy;
}

EventDomainOperation Error::event_operation() const noexcept { return payload_->event_op; }

Error Error::with_event_operation(EventDomainOperation op) const {
  Error copy = *this;
  Payload p = *payload_;
  p.event_op = op;
  copy.payload_ = std::make_shared<const Payload>(std::move(p));
  return copy;
}

const std::vector<Error>& Error::suppressed() const noexcept { return payload_->suppressed; }

Error Error::with_suppressed(std::vector<Error> suppressed) const {
  Error copy = *this;
  Payload p = *payload_;
  p.suppressed = std::move(suppressed);
  copy.payload_ = std::make_shared<const Payload>(std::move(p));
  return copy;
}

std::string Error::to_string() const {
  std::string out;
  const Error* e = this;
  bool first = true;
  while (e != nullptr) {
    if (!first) out += "\n  caused by: ";
    first = false;
    out += error_stage_name(e->stage());
    out += '/';
    out += error_code_name(e->code());
    out += " in ";
    out += e->op();
    out += ": ";
    out += e->message();
    if (e->event_operation() != EventDomainOperation::kNone) {
      out += " [event domain: ";
      out += event_domain_operation_name(e->event_operation());
      out += ']';
    }
    e = e->cause();
  }
  for (const Error& s : suppressed()) {
    std::string inner = s.to_string();
    for (size_t pos = 0; (pos = inner.find('\n', pos)) != std::string::npos; pos += 3) inner.insert(pos + 1, "  ");
    out += "\n  suppressed: " + inner;
  }
  return out;
}

Error usage_error(ErrorCode code, std::string op, std::string message) {
  return Error(ErrorStage::kUsage, code, std::move(op), std::move(message));
}

Exception::Exception(Error error) : error_(std::move(error)), what_(error_.to_string()) {}

namespace detail {
void throw_error(const Error& error) { throw Exception(error); }
}  // namespace detail

}  // namespace tenferro
