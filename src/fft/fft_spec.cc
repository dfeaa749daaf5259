// The transform descriptions of tenferro::fft (names, scales, result types): pure
// functions of the spec, without FFTW, so that the text parsers' fuzz targets link them.

#include <algorithm>
#include <cmath>
#include <string>

#include "fft_error.h"
#include "tenferro/fft/fft.h"

namespace tenferro::fft {

using detail::fft_error;
using detail::kOp;

std::string_view kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::kC2C: return "c2c";
    case Kind::kC2CInverse: return "c2c_inverse";
    case Kind::kR2C: return "r2c";
    case Kind::kC2R: return "c2r";
  }
  return "unknown";
}

std::string_view norm_name(Norm norm) noexcept {
  switch (norm) {
    case Norm::kBackward: return "backward";
    case Norm::kOrtho: return "ortho";
    case Norm::kForward: return "forward";
  }
  return "unknown";
}

double scale_of(Kind kind, Norm norm, double n) noexcept {
  const bool inverse = kind == Kind::kC2CInverse || kind == Kind::kC2R;
  switch (norm) {
    case Norm::kBackward: return inverse ? 1.0 / n : 1.0;
    case Norm::kOrtho: return 1.0 / std::sqrt(n);
    case Norm::kForward: return inverse ? 1.0 : 1.0 / n;
  }
  return 1.0;
}

Result<FftResultType> result_type(DType dtype, Dims shape, const FftSpec& spec) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::string kind(kind_name(spec.kind));
  const bool real_in = spec.kind == Kind::kR2C;
  if (real_in ? !is_floating(dtype) : !is_complex(dtype)) {
    std::string hint = real_in ? "f32 or f64" : "c64 or c128";
    if (!real_in && is_floating(dtype)) hint += " (convert with astype, or use a real-input transform)";
    return fft_error(ErrorCode::kDTypeMismatch, kind + " needs " + hint + ", got " + std::string(dtype_name(dtype)));
  }
  if (spec.axes.empty()) return fft_error(ErrorCode::kInvalidArgument, kind + ": no axes to transform");
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    const int64_t a = spec.axes[i];
    if (a < 0 || a >= rank) {
      return fft_error(ErrorCode::kOutOfRange,
                       kind + ": axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    }
    if (std::find(spec.axes.begin(), spec.axes.begin() + static_cast<std::ptrdiff_t>(i), a) !=
        spec.axes.begin() + static_cast<std::ptrdiff_t>(i)) {
      return fft_error(ErrorCode::kInvalidArgument, kind + ": axis " + std::to_string(a) + " is listed twice");
    }
  }
  Shape out(shape);
  const size_t last = static_cast<size_t>(spec.axes.back());
  for (int64_t a : spec.axes) {
    if (shape[static_cast<size_t>(a)] == 0 && !(spec.kind == Kind::kC2R && static_cast<size_t>(a) == last)) {
      return fft_error(ErrorCode::kInvalidShape, kind + ": transformed axis " + std::to_string(a) +
                                                     " has extent 0 (shape " + format_dims(shape) + ")");
    }
  }
  DType out_dtype = dtype;
  if (spec.kind == Kind::kR2C) {
    out_dtype = *complex_dtype(dtype);  // dtype is f32 or f64 here
    out[last] = shape[last] / 2 + 1;
  } else if (spec.kind == Kind::kC2R) {
    out_dtype = real_dtype(dtype);
    if (spec.last_length < 1) {
      return fft_error(ErrorCode::kInvalidArgument,
                       kind + ": output length " + std::to_string(spec.last_length) + " (must be >= 1)");
    }
    if (shape[last] != spec.last_length / 2 + 1) {
      return fft_error(ErrorCode::kShapeMismatch, kind + ": output length " + std::to_string(spec.last_length) +
                                                      " needs " + std::to_string(spec.last_length / 2 + 1) +
                                                      " bins along axis " + std::to_string(last) + ", got " +
                                                      std::to_string(shape[last]));
    }
    out[last] = spec.last_length;
  }
  TENFERRO_TRY_VOID(checked_element_count(out, kOp));
  return FftResultType{out_dtype, std::move(out)};
}

}  // namespace tenferro::fft
