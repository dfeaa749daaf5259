// The fft family's parts that run transforms: reference evaluation for the interpreter,
// the differentiation rules and the CPU engine's native module (FFTW through
// tenferro::fft). fft_op.cc holds the op itself (payload, text form, type inference).

#include "fft_errors.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/fft_ir/fft_op.h"

namespace tenferro::fft_ir {

using ad::Emitter;
using ad::MaybeValue;
using detail::compile_error;
using fft::FftSpec;
using fft::Kind;
using fft::Norm;
using program::Attrs;
using program::Extent;
using program::OpCode;
using program::Value;
using program::ValueType;

Result<std::vector<Tensor>> FftOp::evaluate_reference(std::span<const Tensor> inputs) const {
  if (inputs.size() != 1) {
    return Error(ErrorStage::kCompletion, ErrorCode::kInvalidArgument, "fft", "a transform takes one operand");
  }
  TENFERRO_TRY(Tensor y, fft::fft(cpu::CpuExecutionContext::sequential(), inputs[0], spec_));
  return std::vector<Tensor>{std::move(y)};
}

// ---- differentiation ----

// Note [FFT rules]: every transform is linear in its operand, so its tangent is the same
// transform of the input's tangent. The transposes are adjoints under the real inner
// product (Note [Complex cotangents] in the ad module). With s the transform's scale and
// F the unnormalized DFT (symmetric, conj(F) = the unnormalized inverse):
// - c2c: y = s F x, so x̄ = s conj(F) ȳ: the inverse transform with the same scale, i.e.
//   the other direction with norm backward <-> forward swapped (ortho stays);
// - r2c (real x, half spectrum y): x̄_j = Re sum_{k in half} conj(F_kj) ȳ_k, which is
//   the c2r transform (swapped norm, output length n) of ȳ with the bins that stand for
//   two (all but bin 0 and, for even n, bin n/2) halved: c2r counts them twice and reads
//   only the real part of the others;
// - c2r: the adjoint of the Hermitian extension plus inverse transform is the r2c
//   transform (swapped norm) of x̄ with the bins that stand for two doubled.
// Verified against central differences and <vjp(u), v> = <u, jvp(v)> in fft_ir_test.

namespace {

Norm swapped(Norm n) { return n == Norm::kBackward ? Norm::kForward : n == Norm::kForward ? Norm::kBackward : n; }

// `v` times the weights of the half-spectrum bins along `axis` of a length-n transform:
// 1 at bin 0 (and n/2 for even n), `middle` elsewhere.
Result<Value> weight_bins(Emitter& e, Value v, int64_t axis, int64_t n, double middle) {
  TENFERRO_TRY(ValueType t, e.type(v));
  Attrs ia;
  ia.shape = t.shape;
  ia.axis = axis;
  ia.dtype = DType::kI64;
  TENFERRO_TRY(Value k, e.op(OpCode::kIota, std::span<const Value>{}, ia));
  Attrs eq;
  eq.direction = program::CompareDirection::kEq;
  TENFERRO_TRY(Value zero, e.splat_like(k, 0));
  TENFERRO_TRY(Value edge, e.op(OpCode::kCompare, {k, zero}, eq));
  if (n % 2 == 0 && n > 1) {
    TENFERRO_TRY(Value half, e.splat_like(k, static_cast<double>(n / 2)));
    TENFERRO_TRY(Value nyquist, e.op(OpCode::kCompare, {k, half}, eq));
    TENFERRO_TRY(edge, e.op(OpCode::kSelect, {edge, edge, nyquist}));
  }
  TENFERRO_TRY(Value one, e.splat_like(v, 1.0));
  TENFERRO_TRY(Value mid, e.splat_like(v, middle));
  TENFERRO_TRY(Value w, e.op(OpCode::kSelect, {edge, one, mid}));
  return e.mul(v, w);
}

class FftRule final : public ad::ExtensionRule {
 public:
  std::string_view family_id() const override { return kFftFamily; }

  Result<std::vector<MaybeValue>> linearize(Emitter& e, const program::ExtensionOp& op, std::span<const Value>,
                                            std::span<const Value>, std::span<const MaybeValue> tan) const override {
    const auto* f = dynamic_cast<const FftOp*>(&op);
    if (!f) return compile_error(ErrorCode::kInternal, "fft rule given another family's op");
    if (!tan[0]) return std::vector<MaybeValue>(1);
    TENFERRO_TRY(Value dy, emit_fft(e.builder(), f->spec(), *tan[0]));
    return std::vector<MaybeValue>{dy};
  }

  Result<std::vector<MaybeValue>> transpose(Emitter& e, const program::ExtensionOp& op,
                                            std::span<const MaybeValue> inputs, std::span<const ValueType> input_types,
                                            std::span<const MaybeValue> cot) const override {
    const auto* f = dynamic_cast<const FftOp*>(&op);
    if (!f) return compile_error(ErrorCode::kInternal, "fft rule given another family's op");
    if (inputs.size() != 1 || inputs[0]) {
      return compile_error(ErrorCode::kInvalidArgument, "fft transpose: the operand must be the linear input");
    }
    if (!cot[0]) return std::vector<MaybeValue>(1);
    const FftSpec& s = f->spec();
    FftSpec t = s;
    t.norm = swapped(s.norm);
    const int64_t last = s.axes.back();
    switch (s.kind) {
      case Kind::kC2C:
      case Kind::kC2CInverse: {
        t.kind = s.kind == Kind::kC2C ? Kind::kC2CInverse : Kind::kC2C;
        TENFERRO_TRY(Value x, emit_fft(e.builder(), t, *cot[0]));
        return std::vector<MaybeValue>{x};
      }
      case Kind::kR2C: {
        const Extent& len = input_types[0].shape[static_cast<size_t>(last)];
        if (!len.is_exact()) return compile_error(ErrorCode::kUnsupported, "r2c transpose needs an exact length");
        const int64_t n = len.exact_value();
        t.kind = Kind::kC2R;
        t.last_length = n;
        TENFERRO_TRY(Value w, weight_bins(e, *cot[0], last, n, 0.5));
        TENFERRO_TRY(Value x, emit_fft(e.builder(), t, w));
        return std::vector<MaybeValue>{x};
      }
      case Kind::kC2R: {
        t.kind = Kind::kR2C;
        t.last_length = -1;
        TENFERRO_TRY(Value y, emit_fft(e.builder(), t, *cot[0]));
        TENFERRO_TRY(Value w, weight_bins(e, y, last, s.last_length, 2.0));
        return std::vector<MaybeValue>{w};
      }
    }
    return compile_error(ErrorCode::kInternal, "fft transpose: unknown kind");
  }
};

// Note [FFT CPU module]: a prepared fft node runs tenferro::fft on the context the CPU
// bridge entered (batch chunks on its workers) and the domain's pool, with the node's own
// plan cache (Note [FFT plan cache]: a node runs one layout per input layout, so a few
// plans). In Reproducible mode it runs on a sequential context: the chunks' plans may
// differ with the chunk start's alignment, and FFTW does not promise equal bits from
// different plans.
class FftKernel final : public runtime::NodeKernel {
 public:
  FftKernel(std::shared_ptr<const FftOp> op, bool sequential, std::string plan)
      : op_(std::move(op)), sequential_(sequential), plan_(std::move(plan)) {}
  Result<void> run(runtime::EngineContext& engine_ctx, std::span<const Tensor> in,
                   std::span<Tensor> out) const override {
    const cpu_runtime::CpuEntered entered = cpu_runtime::cpu_entered(engine_ctx);
    if (entered.ctx == nullptr) {
      return Error(ErrorStage::kCompletion, ErrorCode::kInternal, "fft", "not entered by the CPU bridge");
    }
    if (in.size() != 1 || out.size() != 1) {
      return Error(ErrorStage::kCompletion, ErrorCode::kInternal, "fft", "one input and one output expected");
    }
    const cpu::CpuExecutionContext seq = cpu::CpuExecutionContext::sequential();
    const cpu::CpuExecutionContext& ctx = sequential_ ? seq : *entered.ctx;
    TENFERRO_TRY(out[0], fft::fft(ctx, in[0], op_->spec(), *entered.pool, &plans_));
    return ok();
  }
  std::string_view provider() const override { return sequential_ ? "cpu.fft (sequential)" : "cpu.fft"; }
  std::string describe() const override { return plan_; }

 private:
  std::shared_ptr<const FftOp> op_;
  bool sequential_;
  std::string plan_;  // fft::plan_fft's passes for a compact column-major operand
  mutable fft::PlanCache plans_{8};
};

class FftModule final : public runtime::ExtensionModule {
 public:
  std::string_view family_id() const override { return kFftFamily; }
  Result<runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>> prepare(
      const runtime::NodeRequest& req) const override {
    using Cap = runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>;
    const auto* op = dynamic_cast<const FftOp*>(req.op->extension());
    if (op == nullptr) return Cap::unsupported("not a tenferro fft op");
    // What the kernel will do for a compact column-major operand (the runtime's usual
    // one; another layout may take other routes, which fft::plan_fft decides per call).
    std::string plan;
    if (req.input_dtypes.size() == 1 && req.input_shapes.size() == 1) {
      auto p = fft::plan_fft(req.input_dtypes[0], Layout::col_major(req.input_shapes[0]), op->spec());
      if (p) plan = "for a column-major operand: " + p->describe();
    }
    return Cap::prepared(std::make_shared<FftKernel>(
        FftOp::make(op->spec()), req.determinism == runtime::DeterminismMode::kReproducible, std::move(plan)));
  }
};

}  // namespace

std::shared_ptr<const ad::ExtensionRule> fft_rule() {
  static const std::shared_ptr<const ad::ExtensionRule> rule = std::make_shared<FftRule>();
  return rule;
}

std::shared_ptr<const runtime::ExtensionModule> cpu_fft_module() {
  // Immutable registration metadata: one instance per process.
  static const std::shared_ptr<const runtime::ExtensionModule> module = std::make_shared<FftModule>();
  return module;
}

}  // namespace tenferro::fft_ir
