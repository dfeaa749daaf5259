#pragma once
/// \file
/// Eager discrete Fourier transforms with numpy.fft's signatures and semantics:
/// `eager::fft::fft(x)`, `rfftn(x, {64, 64})`, ... on EagerTensors, placed by the eager
/// API's rules (the domain holding the input, or the context's explicit one).
///
/// Semantics (numpy's): `n` / `s` crop or zero-pad the input along each transformed axis
/// before the transform (for irfft/irfftn/hfft the output length, the input then cropped
/// or padded to n/2 + 1 bins); axes may be negative (counted from the end); the default
/// axes are the last one (1-D functions) or all (n-dimensional ones; the last len(s) when
/// s is given). fft/ifft/fftn/ifftn and hfft accept real inputs (converted to the complex
/// dtype of the same precision, as numpy does); rfft/rfftn/ihfft need real inputs.
/// Norms as tenferro::fft::Norm (numpy's "backward", "ortho", "forward"). Results are
/// complex (c64 for f32/c64 inputs, c128 for f64/c128) or real for irfft/irfftn/hfft.
///
/// Every transform records for AD (the fft family's rules: adjoint transforms) and
/// traces into programs as the fft extension op; runs use the runtime's FFTW plan cache
/// (EagerRuntime::fft_plans()).
///
/// Errors: kInvalidArgument (undefined tensor, a repeated axis, len(s) != len(axes), a
/// length < 1), kOutOfRange (an axis outside [-rank, rank)), kDTypeMismatch (integer or
/// bool inputs, a complex input to rfft/rfftn/ihfft), those of tenferro::fft::fft and of
/// the eager API.

#include <optional>
#include <vector>

#include "tenferro/eager/eager.h"
#include "tenferro/fft/fft.h"

namespace tenferro::eager::fft {

using tenferro::fft::Norm;

/// One-dimensional transforms along `axis` (default the last); `n`: the transform length.
Result<EagerTensor> fft(const EagerTensor& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                        Norm norm = Norm::kBackward);
Result<EagerTensor> ifft(const EagerTensor& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                         Norm norm = Norm::kBackward);
Result<EagerTensor> rfft(const EagerTensor& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                         Norm norm = Norm::kBackward);
/// `n`: the output length (default 2 (m - 1) for m input bins).
Result<EagerTensor> irfft(const EagerTensor& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                          Norm norm = Norm::kBackward);
/// The transform of a Hermitian-symmetric signal given by its first half (real
/// spectrum of length n, default 2 (m - 1)), and its inverse (numpy's hfft / ihfft).
Result<EagerTensor> hfft(const EagerTensor& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                         Norm norm = Norm::kBackward);
Result<EagerTensor> ihfft(const EagerTensor& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                          Norm norm = Norm::kBackward);

/// n-dimensional transforms over `axes` (empty: all axes, or the last s.size() when `s`
/// is given) with lengths `s` (empty: the input's; for irfftn the output lengths, the
/// last defaulting to 2 (m - 1)).
Result<EagerTensor> fftn(const EagerTensor& x, std::vector<int64_t> s = {}, std::vector<int64_t> axes = {},
                         Norm norm = Norm::kBackward);
Result<EagerTensor> ifftn(const EagerTensor& x, std::vector<int64_t> s = {}, std::vector<int64_t> axes = {},
                          Norm norm = Norm::kBackward);
Result<EagerTensor> rfftn(const EagerTensor& x, std::vector<int64_t> s = {}, std::vector<int64_t> axes = {},
                          Norm norm = Norm::kBackward);
Result<EagerTensor> irfftn(const EagerTensor& x, std::vector<int64_t> s = {}, std::vector<int64_t> axes = {},
                           Norm norm = Norm::kBackward);

/// The same transforms with an explicit context (placement, session, no_grad).
Result<EagerTensor> fftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                         Norm norm);
Result<EagerTensor> ifftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                          Norm norm);
Result<EagerTensor> rfftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                          Norm norm);
Result<EagerTensor> irfftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                           Norm norm);

/// Sample frequencies of an n-point transform with sample spacing d (numpy's fftfreq:
/// [0, 1, ..., n/2 - 1 or (n-1)/2, -(n/2), ..., -1] / (d n)) and of its real half
/// (rfftfreq: [0, ..., n/2] / (d n)), f64 tensors of `rt`. Errors: kInvalidArgument
/// (n < 1, d = 0 or not finite).
Result<EagerTensor> fftfreq(EagerRuntime& rt, int64_t n, double d = 1.0);
Result<EagerTensor> rfftfreq(EagerRuntime& rt, int64_t n, double d = 1.0);

/// `x` rolled so that the zero-frequency bin is at the centre of each axis in `axes`
/// (empty: all), and the inverse (numpy's fftshift / ifftshift). Views and copies of the
/// eager API: they record for AD.
Result<EagerTensor> fftshift(const EagerTensor& x, std::vector<int64_t> axes = {});
Result<EagerTensor> ifftshift(const EagerTensor& x, std::vector<int64_t> axes = {});

}  // namespace tenferro::eager::fft
