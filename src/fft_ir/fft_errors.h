#pragma once
// Private to the fft_ir module (fft_op.cc, fft_rules.cc): the family's compile errors.

#include <string>
#include <utility>

#include "tenferro/core/error.h"

namespace tenferro::fft_ir::detail {

/// A kCompile-stage error of op "fft".
inline Error compile_error(ErrorCode code, std::string msg) {
  return Error(ErrorStage::kCompile, code, "fft", std::move(msg));
}

}  // namespace tenferro::fft_ir::detail
