#pragma once
/// \file
/// The fft extension family in programs: one extension op per transform (payload: the
/// fft::FftSpec), its type inference (axes not transformed may be symbolic; transformed
/// extents must be exact), its text form, reference evaluation for the interpreter (the
/// FFTW kernels of tenferro::fft on one thread), its differentiation rules and the CPU
/// engine's native module (the same kernels on the entered context, with a plan cache
/// per prepared node).

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/ad/ad.h"
#include "tenferro/core/result.h"
#include "tenferro/fft/fft.h"
#include "tenferro/program/extension.h"
#include "tenferro/program/program.h"
#include "tenferro/runtime/engine.h"
#include "tenferro/xla/stablehlo.h"

namespace tenferro::fft_ir {

/// The family id of fft extension ops.
inline constexpr std::string_view kFftFamily = "fft";

/// One transform. Immutable. One operand, one result.
class FftOp final : public program::ExtensionOp {
 public:
  static std::shared_ptr<const FftOp> make(fft::FftSpec spec);
  const fft::FftSpec& spec() const noexcept { return spec_; }

  std::string_view family_id() const override { return kFftFamily; }
  uint64_t payload_hash() const override;
  bool payload_equal(const ExtensionOp& other) const override;
  /// "KIND;norm=NORM;axes=A,B[;n=N]", e.g. "c2c;norm=ortho;axes=0,2", "c2r;norm=backward;axes=1;n=8".
  std::string payload_text() const override;
  std::vector<program::Effect> effects() const override { return {}; }
  std::vector<program::Alias> aliases() const override { return std::vector<program::Alias>(1); }
  /// fft::result_type's checks on one operand; transformed axes must have exact extents
  /// (the others may be symbolic and pass through). Errors (kCompile): those of
  /// fft::result_type, kInvalidArgument (operand count), kUnsupported (a symbolic
  /// transformed extent).
  Result<std::vector<program::ValueType>> infer(std::span<const program::ValueType> inputs,
                                                std::span<const program::SymbolInfo> symbols,
                                                std::vector<program::PendingGuard>& guards) const override;
  /// The FFTW kernels on one thread (sequential context, no pool).
  Result<std::vector<Tensor>> evaluate_reference(std::span<const Tensor> inputs) const override;

 private:
  explicit FftOp(fft::FftSpec spec) : spec_(std::move(spec)) {}
  fft::FftSpec spec_;
};

/// Parses a payload ("c2c;norm=ortho;axes=0,2"). Errors: kParse naming the bad part.
Result<std::shared_ptr<const FftOp>> parse_fft_payload(std::string_view payload);

/// Adds the fft family to a text-format registry. Errors: kInvalidArgument when the
/// registry already has it.
Result<void> register_fft_family(program::ExtensionRegistry& registry);

/// Emits one transform of `operand` into `builder`; returns its result.
Result<program::Value> emit_fft(program::ProgramBuilder& builder, const fft::FftSpec& spec, program::Value operand);

/// The family's differentiation rules (Note [FFT rules] in fft_rules.cc): every transform is
/// linear; its transpose is the transform of the other direction with the swapped norm,
/// with the half-spectrum bins weighted for the real transforms.
std::shared_ptr<const ad::ExtensionRule> fft_rule();

/// Adds the family's StableHLO lowering (Note [FFT in StableHLO] in fft_stablehlo.cc:
/// stablehlo.fft over groups of at most three axes moved to the end, then the norm's
/// scale). Errors: kInvalidArgument when `lowerings` already has the family.
Result<void> register_stablehlo_lowering(xla::StableHloLowerings& lowerings);

/// The CPU engine's native module for the family (one immutable instance per process).
/// Register it with Runtime::register_extension(cpu_engine_id, cpu_fft_module()).
std::shared_ptr<const runtime::ExtensionModule> cpu_fft_module();

}  // namespace tenferro::fft_ir
