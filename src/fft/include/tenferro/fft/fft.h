#pragma once
/// \file
/// Discrete Fourier transforms on the CPU engine (FFTW3): complex-to-complex, real-to-
/// complex (the non-negative half of the spectrum) and complex-to-real, over any set of
/// axes of a tensor with any strides (inputs are never modified), batched over the
/// other axes, with numpy's normalizations. Note [FFT kernels] in fft.cc says how.
///
/// Definitions (numpy.fft's): the forward transform of x along one axis of length n is
/// y_k = s * sum_j x_j exp(-2 pi i j k / n), the inverse uses exp(+2 pi i j k / n); over
/// several axes the transforms compose. The scale s depends on the norm and on N, the
/// product of the transformed lengths (for kC2R the output lengths):
///
///   norm       forward (kC2C, kR2C)   inverse (kC2CInverse, kC2R)
///   backward   1                      1/N
///   ortho      1/sqrt(N)              1/sqrt(N)
///   forward    1/N                    1
///
/// kR2C keeps bins 0 .. n/2 of the last listed axis (n/2 + 1 of them; the rest follow by
/// Hermitian symmetry); the other listed axes are full complex transforms. kC2R is its
/// inverse: complex transforms over the other listed axes, then a complex-to-real
/// transform of the last one, whose input must hold n/2 + 1 bins for the output length n
/// (`last_length`); the imaginary parts of bin 0 and, for even n, of bin n/2 are ignored
/// there (numpy's irfftn). Results are new compact tensors whose axes are laid out in the
/// order of the input's strides (column-major for a column-major input, row-major for a
/// row-major one), so a transformed axis contiguous in the input is contiguous in the
/// result.
///
/// Parallelism: the batch (the axes not transformed) is spread over the context's
/// workers in contiguous chunks; one transform is never split (FFTW's own threads are
/// not used: one fan-out level, ARCHITECTURE §3.7).
///
/// Thread-safety: functions are reentrant. FFTW's planner is process-wide and not
/// thread-safe; every plan is created and destroyed under one lock inside this module
/// (Note [FFTW planner lock]): other code in the process that calls FFTW's planner
/// directly must not run concurrently with tenferro's transforms.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::fft {

using cpu::CpuExecutionContext;
using PoolPtr = std::shared_ptr<HostBufferPool>;

/// The FFT library the kernels run on, as it names itself (FFTW's version string, e.g.
/// "fftw-3.3.10-sse2-avx"). Immutable.
std::string_view library_version() noexcept;

/// Which transform.
enum class Kind : uint8_t {
  kC2C,         ///< complex -> complex, forward (numpy fftn); c64 / c128
  kC2CInverse,  ///< complex -> complex, inverse (numpy ifftn); c64 / c128
  kR2C,         ///< real -> half-spectrum complex (numpy rfftn); f32 -> c64, f64 -> c128
  kC2R,         ///< half-spectrum complex -> real (numpy irfftn); c64 -> f32, c128 -> f64
};
std::string_view kind_name(Kind kind) noexcept;

/// numpy's normalization modes (see the table above).
enum class Norm : uint8_t { kBackward, kOrtho, kForward };
std::string_view norm_name(Norm norm) noexcept;

/// A transform: its kind, normalization and axes.
struct FftSpec {
  Kind kind = Kind::kC2C;
  Norm norm = Norm::kBackward;
  /// Distinct axes in [0, rank), at least one. For kR2C and kC2R the last one is the
  /// halved axis.
  std::vector<int64_t> axes;
  /// kC2R: the output length n of the last listed axis (>= 1; the input holds n/2 + 1
  /// bins there). Ignored by the other kinds.
  int64_t last_length = -1;
  friend bool operator==(const FftSpec&, const FftSpec&) = default;
};

/// The scale s of the table above for a transform whose lengths multiply to `n`.
double scale_of(Kind kind, Norm norm, double n) noexcept;

/// The dtype and shape of the result of `spec` on an input of `dtype` and `shape`, after
/// the checks `fft` makes. Errors (kUsage stage, op "fft"): kDTypeMismatch (a real input
/// to a complex transform and the reverse, integer or bool), kOutOfRange (an axis outside
/// [0, rank)), kInvalidArgument (no axes, a repeated axis, kC2R with last_length < 1),
/// kInvalidShape (a transformed axis of extent 0), kShapeMismatch (kC2R: the last axis
/// does not hold last_length/2 + 1 bins).
struct FftResultType {
  DType dtype;
  Shape shape;
};
Result<FftResultType> result_type(DType dtype, Dims shape, const FftSpec& spec);

/// How one pass of a transform runs (Note [FFT passes] in fft.cc).
enum class PassRoute : uint8_t {
  kDirect,    ///< FFTW reads and writes the tensors' own strides (unit stride on both sides)
  kBuffered,  ///< groups of lines gathered into a contiguous buffer, transformed, scattered
};
std::string_view pass_route_name(PassRoute route) noexcept;

/// Where a pass reads or writes: the input, kC2R's scratch tensor, or the result.
enum class Buffer : uint8_t { kInput, kScratch, kResult };

/// One pass: a rank-1 transform of `axis` over every line of the other axes.
struct FftPass {
  int64_t axis = 0;
  Kind kind = Kind::kC2C;  ///< this pass's transform (kC2R: to FftSpec::last_length points)
  Buffer from = Buffer::kInput, to = Buffer::kResult;
  PassRoute route = PassRoute::kDirect;
  int64_t in_stride = 0, out_stride = 0;  ///< of `axis` in `from` and in `to`
  /// Why this route, naming the strides (built on request: planning builds no strings).
  std::string reason() const;
};

/// Everything `fft` decides for one input layout, decided by plan_fft alone (Note [FFT
/// kernels]): the result's dtype, shape and strides (Note [FFT result layout]), whether
/// kC2R uses a scratch tensor (compact, the input's shape and axis order) and whether it
/// starts as a copy of the input, the passes in order, and the scale.
struct FftPlan {
  FftResultType result;
  Strides result_strides;
  bool scratch = false, scratch_copy = false;
  std::vector<FftPass> passes;
  double scale = 1.0;
  /// "pass 1: r2c axis 1, input -> result, direct (...)", one line per pass, then the scale.
  std::string describe() const;
};

/// The plan of `spec` on an input of `dtype` laid out as `input` (pure; deterministic).
/// Errors: those of result_type.
Result<FftPlan> plan_fft(DType dtype, const Layout& input, const FftSpec& spec);

/// Plans FFTW made, kept for reuse (Note [FFT plan cache] in fft.cc): FFTW's planner costs
/// as much as a mid-sized transform, so repeated calls of one layout reuse its plans.
/// Bounded: at most `capacity` plans, least recently used replaced first. Thread-safe;
/// plans in use by a call outlive their eviction. Owned by whoever repeats calls (an
/// eager runtime, a prepared node).
class PlanCache {
 public:
  static constexpr int64_t kDefaultCapacity = 64;
  /// Errors: none (capacity < 1 is taken as 1).
  explicit PlanCache(int64_t capacity = kDefaultCapacity);
  ~PlanCache();
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  struct Stats {
    int64_t entries = 0, capacity = 0, hits = 0, misses = 0, evictions = 0;
    /// An estimate: FFTW does not report a plan's size; 16 bytes per point of each
    /// planned transform length (its twiddle factors).
    int64_t estimated_bytes = 0;
  };
  Stats stats() const;
  /// Drops every plan (calls running with one keep theirs until they finish).
  void clear();

  struct Impl;
  Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Transforms `x` as `spec` says; the result comes from `pool` when given. `plans`
/// (optional, not owned) holds plans between calls. Errors: those of result_type, all
/// before anything is computed; kOverflow (an extent beyond FFTW's), kAllocationFailed;
/// kInternal if FFTW returns no plan.
Result<Tensor> fft(const CpuExecutionContext& ctx, const Tensor& x, const FftSpec& spec, const PoolPtr& pool = nullptr,
                   PlanCache* plans = nullptr);

}  // namespace tenferro::fft
