// The fuzz targets link the fft family's op (payload, text form, type inference,
// StableHLO lowering) but not the FFTW-backed parts in src/fft_ir/fft_rules.cc: this
// stands in for FftOp's one virtual member defined there. The program-text target
// evaluates small programs with the reference interpreter; an fft op there answers this
// typed kUnsupported error (the interpreter's handling of an extension's failure is what
// gets exercised, not the transform).
#include "tenferro/fft_ir/fft_op.h"

namespace tenferro::fft_ir {

Result<std::vector<Tensor>> FftOp::evaluate_reference(std::span<const Tensor>) const {
  return Error(ErrorStage::kCompletion, ErrorCode::kUnsupported, "fft", "not linked into the fuzz targets");
}

}  // namespace tenferro::fft_ir
