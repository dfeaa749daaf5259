// The fft family in StableHLO (Note [FFT in StableHLO]).

#include <algorithm>
#include <cmath>

#include "tenferro/fft_ir/fft_op.h"

namespace tenferro::fft_ir {

// Note [FFT in StableHLO]: stablehlo.fft transforms the trailing 1 to 3 axes of its
// operand (fft_length), with XLA's scaling: FFT and RFFT unscaled, IFFT and IRFFT
// scaled by 1/N. A transform over any axes therefore becomes groups of at most three
// axes, each moved to the end by a transpose, transformed and moved back:
// - c2c (either direction): the axes in groups of three (the transforms of different
//   axes commute);
// - r2c: RFFT over the last (at most) three listed axes, the halved one last, then FFT
//   over the rest (numpy's rfftn: the real transform first);
// - c2r: IFFT over every axis but the last listed, then a one-axis IRFFT of the
//   requested length over that one (numpy's irfftn: the real transform last), after
//   setting the imaginary parts of its bins 0 and n/2 to zero. That is the core op's
//   exact meaning (FFTW's c2r ignores those parts) on any consumer: StableHLO does not
//   say what IRFFT does with a spectrum that is not Hermitian, and the fft family's AD
//   rules feed c2r such spectra; with those parts zero, and one axis, every half
//   spectrum is the half of a Hermitian one.
// The norm is then one multiplication by scale_of(kind, norm, N) / XLA's own scale (none
// for the backward norm of every kind).

namespace {

using xla::HloValue;
using xla::TensorType;

// stablehlo.fft of type `type` over the axes `axes` of `x` (moved to the end in this
// order), `lengths` the fft_length (the transform lengths; IRFFT: the output's), `out_last`
// the transformed last axis's result extent.
HloValue fft_group(xla::Emitter& em, const HloValue& x, std::span<const int64_t> axes, const char* type,
                   std::span<const int64_t> lengths, DType out_dtype, int64_t out_last) {
  const auto rank = static_cast<int64_t>(x.type.shape.size());
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) perm.push_back(d);
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  const HloValue t = em.transpose(x, perm);
  TensorType rt{out_dtype, t.type.shape};
  rt.shape.back() = out_last;
  const HloValue f =
      em.op("fft", {t},
            "fft_type = #stablehlo<fft_type " + std::string(type) + ">, fft_length = " + xla::i64_array(lengths), rt);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return em.transpose(f, inverse);
}

// `x` with the imaginary parts of its bins 0 and, for an even output length n, n/2 along
// `axis` set to zero (the parts a c2r transform ignores; Note [FFT in StableHLO]).
HloValue real_edge_bins(xla::Emitter& em, const HloValue& x, int64_t axis, int64_t n) {
  const TensorType part{real_dtype(x.type.dtype), x.type.shape};
  const TensorType idx{DType::kI64, x.type.shape}, mask_type{DType::kBool, x.type.shape};
  const HloValue bin = em.op("iota", {}, "iota_dimension = " + std::to_string(axis) + " : i64", idx);
  const char* eq = "comparison_direction = #stablehlo<comparison_direction EQ>";
  HloValue edge = em.op("compare", {bin, em.splat(idx, c128{})}, eq, mask_type);
  if (n % 2 == 0) {
    const HloValue nyquist =
        em.op("compare", {bin, em.splat(idx, c128(static_cast<double>(n / 2), 0.0))}, eq, mask_type);
    edge = em.op("or", {edge, nyquist}, "", mask_type);
  }
  const HloValue re = em.op("real", {x}, "", part);
  const HloValue im = em.op("imag", {x}, "", part);
  const HloValue kept = em.op("select", {edge, em.splat(part, c128{}), im}, "", part);
  return em.op("complex", {re, kept}, "", x.type);
}

Result<std::vector<HloValue>> lower_fft(xla::Emitter& em, const program::ExtensionOp& op, std::span<const HloValue> in,
                                        std::span<const TensorType> out) {
  const auto* fop = dynamic_cast<const FftOp*>(&op);
  if (fop == nullptr || in.size() != 1 || out.size() != 1) {
    return Error(ErrorStage::kCompile, ErrorCode::kUnsupported, "fft", "not an fft op of one operand");
  }
  const fft::FftSpec& spec = fop->spec();
  const std::vector<int64_t>& axes = spec.axes;
  HloValue v = in[0];
  const std::vector<int64_t>& xs = in[0].type.shape;
  const std::vector<int64_t>& ys = out[0].shape;
  const size_t k = axes.size(), split = k > 3 ? k - 3 : 0;  // r2c's real transform: axes[split..k)
  double n = 1;
  const std::vector<int64_t>& logical = spec.kind == fft::Kind::kC2R ? ys : xs;  // the real side's lengths
  for (int64_t a : axes) n *= static_cast<double>(logical[static_cast<size_t>(a)]);
  auto extents = [&](std::span<const int64_t> group, const std::vector<int64_t>& shape) {
    std::vector<int64_t> e;
    for (int64_t a : group) e.push_back(shape[static_cast<size_t>(a)]);
    return e;
  };
  auto c2c = [&](std::span<const int64_t> group, const char* type) {
    for (size_t g = 0; g < group.size(); g += 3) {
      const auto part = group.subspan(g, std::min<size_t>(3, group.size() - g));
      const auto len = extents(part, v.type.shape);
      v = fft_group(em, v, part, type, len, v.type.dtype, len.back());
    }
  };
  const std::span<const int64_t> all(axes);
  bool inverse = false;
  switch (spec.kind) {
    case fft::Kind::kC2C: c2c(all, "FFT"); break;
    case fft::Kind::kC2CInverse:
      c2c(all, "IFFT");
      inverse = true;
      break;
    case fft::Kind::kR2C: {
      const auto group = all.subspan(split);
      const auto len = extents(group, xs);
      v = fft_group(em, v, group, "RFFT", len, out[0].dtype, len.back() / 2 + 1);
      c2c(all.first(split), "FFT");
      break;
    }
    case fft::Kind::kC2R: {
      c2c(all.first(k - 1), "IFFT");
      const int64_t last = axes.back(), n_out = ys[static_cast<size_t>(last)];
      v = real_edge_bins(em, v, last, n_out);
      const std::vector<int64_t> len{n_out};
      v = fft_group(em, v, all.last(1), "IRFFT", len, out[0].dtype, n_out);
      inverse = true;
      break;
    }
  }
  const double factor = fft::scale_of(spec.kind, spec.norm, n) * (inverse ? n : 1.0);
  if (factor != 1.0) v = em.op("multiply", {v, em.splat(v.type, c128(factor, 0.0))}, "", v.type);
  return std::vector<HloValue>{v};
}

}  // namespace

Result<void> register_stablehlo_lowering(xla::StableHloLowerings& lowerings) {
  return lowerings.add(std::string(kFftFamily), lower_fft);
}

}  // namespace tenferro::fft_ir
