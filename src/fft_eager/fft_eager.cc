#include "tenferro/fft_eager/fft_eager.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tenferro/fft_ir/fft_op.h"

namespace tenferro::eager::fft {

namespace tf = tenferro::fft;
using PoolPtr = std::shared_ptr<HostBufferPool>;

namespace {

Error arg_error(ErrorCode code, const char* op, std::string msg) { return usage_error(code, op, std::move(msg)); }

Result<void> defined(const EagerTensor& x, const char* op) {
  if (!x.defined()) return arg_error(ErrorCode::kInvalidArgument, op, "undefined tensor");
  return ok();
}

// `x` as the dtype the transform reads: complex (real inputs converted, numpy's rule) or
// real (complex refused).
Result<EagerTensor> as_input(const Context& c, const EagerTensor& x, bool real, const char* op) {
  const DType d = x.dtype();
  if (!is_inexact(d)) {
    return arg_error(
        ErrorCode::kDTypeMismatch, op,
        "needs a floating or complex tensor, got " + std::string(dtype_name(d)) + " (convert with astype)");
  }
  if (real) {
    if (is_complex(d)) {
      return arg_error(ErrorCode::kDTypeMismatch, op,
                       "needs a real tensor, got " + std::string(dtype_name(d)) + " (use fft for complex input)");
    }
    return x;
  }
  if (is_complex(d)) return x;
  return c.astype(x, *complex_dtype(d));  // d is f32 or f64 here
}

// Axes normalized into [0, rank): `axes` (negative counted from the end) or the default
// (the last `count` axes). Errors: kOutOfRange, kInvalidArgument (repeated axis).
Result<std::vector<int64_t>> normalize_axes(std::vector<int64_t> axes, int64_t rank, int64_t count, const char* op) {
  if (axes.empty()) {
    if (count > rank) {
      return arg_error(ErrorCode::kInvalidArgument, op,
                       std::to_string(count) + " lengths given for a tensor of rank " + std::to_string(rank));
    }
    for (int64_t a = rank - count; a < rank; ++a) axes.push_back(a);
    return axes;
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return arg_error(ErrorCode::kOutOfRange, op,
                       "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    }
    if (a < 0) a += rank;
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (std::find(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(i), axes[i]) !=
        axes.begin() + static_cast<std::ptrdiff_t>(i)) {
      return arg_error(ErrorCode::kInvalidArgument, op, "axis " + std::to_string(axes[i]) + " is listed twice");
    }
  }
  return axes;
}

// `x` cropped or zero-padded to `lengths[i]` along `axes[i]` (nothing done where equal).
Result<EagerTensor> resize(const Context& c, const EagerTensor& x, const std::vector<int64_t>& axes,
                           const std::vector<int64_t>& lengths, const char* op) {
  std::vector<int64_t> low(static_cast<size_t>(x.rank()), 0), high = low, interior = low;
  bool any = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (lengths[i] < 1) {
      return arg_error(
          ErrorCode::kInvalidArgument, op,
          "invalid number of data points (" + std::to_string(lengths[i]) + ") along axis " + std::to_string(axes[i]));
    }
    const int64_t have = x.shape()[static_cast<size_t>(axes[i])];
    high[static_cast<size_t>(axes[i])] = lengths[i] - have;
    any = any || lengths[i] != have;
  }
  if (!any) return x;
  TENFERRO_TRY(EagerTensor zero, c.scalar(0.0, x.dtype()));
  return c.pad(x, zero, low, high, interior);
}

// Estimated work of a transform (elements times log2 of the transform size): chooses
// inline vs entered.
int64_t work_of(const EagerTensor& x, const std::vector<int64_t>& axes) {
  double n = 1;
  for (int64_t a : axes) n *= static_cast<double>(std::max<int64_t>(1, x.shape()[static_cast<size_t>(a)]));
  return static_cast<int64_t>(static_cast<double>(std::max<int64_t>(1, x.numel())) * std::max(1.0, std::log2(n)));
}

// Runs one transform of the kernel (x already of the kernel's dtype and lengths).
Result<EagerTensor> run(const Context& c, const EagerTensor& x, const tf::FftSpec& spec, const char* op) {
  tf::PlanCache* plans = &x.runtime()->fft_plans();
  const EagerTensor* ins[] = {&x};
  TENFERRO_TRY(std::vector<EagerTensor> out,
               c.run_native(
                   ins, op, work_of(x, spec.axes),
                   [&](cpu::CpuExecutionContext& ctx, const PoolPtr& pool, std::vector<Tensor>& o) -> Result<void> {
                     TENFERRO_TRY(Tensor y, tf::fft(ctx, x.tensor(), spec, pool, plans));
                     o = {std::move(y)};
                     return ok();
                   },
                   [&]() -> Context::ProgramForm {
                     return [spec](program::ProgramBuilder& b,
                                   std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
                       TENFERRO_TRY(program::Value y, fft_ir::emit_fft(b, spec, v[0]));
                       return std::vector<program::Value>{y};
                     };
                   }));
  return out.at(0);
}

enum class Family : uint8_t { kFft, kIfft, kRfft, kIrfft };

Result<EagerTensor> transform_n(const Context& c, const EagerTensor& x0, std::vector<int64_t> s,
                                std::vector<int64_t> axes_in, Norm norm, Family f, const char* op) {
  TENFERRO_TRY_VOID(defined(x0, op));
  if (!axes_in.empty() && !s.empty() && s.size() != axes_in.size()) {
    return arg_error(ErrorCode::kInvalidArgument, op,
                     "s has " + std::to_string(s.size()) + " lengths for " + std::to_string(axes_in.size()) + " axes");
  }
  const int64_t rank = x0.rank();
  const int64_t count = axes_in.empty() ? (s.empty() ? rank : static_cast<int64_t>(s.size())) : 0;
  TENFERRO_TRY(std::vector<int64_t> axes, normalize_axes(std::move(axes_in), rank, count, op));
  if (axes.empty()) return arg_error(ErrorCode::kInvalidArgument, op, "no axes to transform (a 0-d tensor)");
  TENFERRO_TRY(EagerTensor x, as_input(c, x0, f == Family::kRfft, op));
  tf::FftSpec spec;
  spec.norm = norm;
  spec.axes = axes;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < axes.size(); ++i) {
    lengths.push_back(s.empty() ? x.shape()[static_cast<size_t>(axes[i])] : s[i]);
  }
  switch (f) {
    case Family::kFft: spec.kind = tf::Kind::kC2C; break;
    case Family::kIfft: spec.kind = tf::Kind::kC2CInverse; break;
    case Family::kRfft: spec.kind = tf::Kind::kR2C; break;
    case Family::kIrfft: {
      spec.kind = tf::Kind::kC2R;
      const int64_t m = x.shape()[static_cast<size_t>(axes.back())];
      const int64_t n = s.empty() ? 2 * (m - 1) : s.back();
      if (n < 1) {
        return arg_error(
            ErrorCode::kInvalidArgument, op,
            "invalid number of data points (" + std::to_string(n) + ") along axis " + std::to_string(axes.back()));
      }
      spec.last_length = n;
      lengths.back() = n / 2 + 1;
      break;
    }
  }
  TENFERRO_TRY(x, resize(c, x, axes, lengths, op));
  return run(c, x, spec, op);
}

Result<EagerTensor> transform_1(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm, Family f,
                                const char* op) {
  TENFERRO_TRY_VOID(defined(x, op));
  std::vector<int64_t> s;
  if (n) s.push_back(*n);
  return transform_n(Context::of(x), x, std::move(s), {axis}, norm, f, op);
}

Norm swapped(Norm n) { return n == Norm::kBackward ? Norm::kForward : n == Norm::kForward ? Norm::kBackward : n; }

Result<EagerTensor> roll_axes(const EagerTensor& x, std::vector<int64_t> axes, bool inverse, const char* op) {
  TENFERRO_TRY_VOID(defined(x, op));
  const Context c = Context::of(x);
  const int64_t rank = x.rank();
  const int64_t count = axes.empty() ? rank : 0;
  TENFERRO_TRY(axes, normalize_axes(std::move(axes), rank, count, op));
  EagerTensor r = x;
  for (int64_t a : axes) {
    const int64_t n = x.shape()[static_cast<size_t>(a)];
    if (n < 2) continue;
    // fftshift moves element j to (j + n/2) mod n; ifftshift undoes it.
    const int64_t shift = inverse ? n - n / 2 : n / 2;
    const int64_t cut = n - shift;  // the tail [cut, n) comes first
    TENFERRO_TRY(EagerTensor tail, c.slice(r, a, cut, n));
    TENFERRO_TRY(EagerTensor head, c.slice(r, a, 0, cut));
    TENFERRO_TRY(r, c.concatenate({tail, head}, a));
  }
  return r;
}

Result<EagerTensor> frequencies(EagerRuntime& rt, int64_t n, double d, bool half, const char* op) {
  if (n < 1 || d == 0.0 || !std::isfinite(d)) {
    return arg_error(ErrorCode::kInvalidArgument, op,
                     "needs n >= 1 and a finite nonzero spacing d (got n = " + std::to_string(n) +
                         ", d = " + std::to_string(d) + ")");
  }
  const int64_t count = half ? n / 2 + 1 : n;
  std::vector<double> v(static_cast<size_t>(count));
  const double scale = 1.0 / (d * static_cast<double>(n));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t f = half || k <= (n - 1) / 2 ? k : k - n;
    v[static_cast<size_t>(k)] = static_cast<double>(f) * scale;
  }
  return rt.from_values<double>({count}, std::span<const double>(v));
}

}  // namespace

Result<EagerTensor> fft(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm) {
  return transform_1(x, n, axis, norm, Family::kFft, "fft");
}
Result<EagerTensor> ifft(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm) {
  return transform_1(x, n, axis, norm, Family::kIfft, "ifft");
}
Result<EagerTensor> rfft(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm) {
  return transform_1(x, n, axis, norm, Family::kRfft, "rfft");
}
Result<EagerTensor> irfft(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm) {
  return transform_1(x, n, axis, norm, Family::kIrfft, "irfft");
}

// numpy: hfft(a, n, norm) = irfft(conj(a), n, norm swapped); ihfft(a, n, norm) =
// conj(rfft(a, n, norm swapped)).
Result<EagerTensor> hfft(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm) {
  TENFERRO_TRY_VOID(defined(x, "hfft"));
  const Context c = Context::of(x);
  TENFERRO_TRY(EagerTensor z, as_input(c, x, false, "hfft"));
  TENFERRO_TRY(z, c.conj(z));
  return transform_1(z, n, axis, swapped(norm), Family::kIrfft, "hfft");
}
Result<EagerTensor> ihfft(const EagerTensor& x, std::optional<int64_t> n, int64_t axis, Norm norm) {
  TENFERRO_TRY(EagerTensor y, transform_1(x, n, axis, swapped(norm), Family::kRfft, "ihfft"));
  return Context::of(y).conj(y);
}

Result<EagerTensor> fftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                         Norm norm) {
  return transform_n(c, x, std::move(s), std::move(axes), norm, Family::kFft, "fftn");
}
Result<EagerTensor> ifftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                          Norm norm) {
  return transform_n(c, x, std::move(s), std::move(axes), norm, Family::kIfft, "ifftn");
}
Result<EagerTensor> rfftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                          Norm norm) {
  return transform_n(c, x, std::move(s), std::move(axes), norm, Family::kRfft, "rfftn");
}
Result<EagerTensor> irfftn(const Context& c, const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes,
                           Norm norm) {
  return transform_n(c, x, std::move(s), std::move(axes), norm, Family::kIrfft, "irfftn");
}

#define TENFERRO_FFT_DEFAULT_CONTEXT(name)                                                                       \
  Result<EagerTensor> name(const EagerTensor& x, std::vector<int64_t> s, std::vector<int64_t> axes, Norm norm) { \
    TENFERRO_TRY_VOID(defined(x, #name));                                                                        \
    return name(Context::of(x), x, std::move(s), std::move(axes), norm);                                         \
  }
TENFERRO_FFT_DEFAULT_CONTEXT(fftn)
TENFERRO_FFT_DEFAULT_CONTEXT(ifftn)
TENFERRO_FFT_DEFAULT_CONTEXT(rfftn)
TENFERRO_FFT_DEFAULT_CONTEXT(irfftn)
#undef TENFERRO_FFT_DEFAULT_CONTEXT

Result<EagerTensor> fftfreq(EagerRuntime& rt, int64_t n, double d) { return frequencies(rt, n, d, false, "fftfreq"); }
Result<EagerTensor> rfftfreq(EagerRuntime& rt, int64_t n, double d) { return frequencies(rt, n, d, true, "rfftfreq"); }

Result<EagerTensor> fftshift(const EagerTensor& x, std::vector<int64_t> axes) {
  return roll_axes(x, std::move(axes), false, "fftshift");
}
Result<EagerTensor> ifftshift(const EagerTensor& x, std::vector<int64_t> axes) {
  return roll_axes(x, std::move(axes), true, "ifftshift");
}

}  // namespace tenferro::eager::fft
