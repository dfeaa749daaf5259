#pragma once
// Private to the fft module (fft.cc, fft_spec.cc): the op name its errors carry.

#include <string>
#include <utility>

#include "tenferro/core/error.h"

namespace tenferro::fft::detail {

inline constexpr const char* kOp = "fft";

/// A kUsage-stage error of op "fft".
inline Error fft_error(ErrorCode code, std::string msg) { return usage_error(code, kOp, std::move(msg)); }

}  // namespace tenferro::fft::detail
