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
  }
  return "unknown";
}

Error::Error(ErrorStage stage, ErrorCode code, std::string op, std::string message)
    : payload_(std::make_shared<const Payload>(
          Payload{stage, code, std::move(op), std::move(message), nullptr})) {}

ErrorStage Error::stage() const noexcept { return payload_->stage; }
ErrorCode Error::code() const noexcept { return payload_->code; }
const std::string& Error::op() const noexcept { return payload_->op; }
const std::string& Error::message() const noexcept { return payload_->message; }
const Error* Error::cause() const noexcept { return payload_->cause.get(); }

Error Error::with_cause(Error cause) const {
  Error copy = *this;
  copy.payload_ = std::make_shared<const Payload>(Payload{payload_->stage, payload_->code, payload_->op,
                                                          payload_->message,
                                                          std::make_shared<const Error>(std::move(cause))});
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
    e = e->cause();
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
