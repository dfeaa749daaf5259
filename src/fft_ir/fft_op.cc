#include "tenferro/fft_ir/fft_op.h"

#include <charconv>
#include <functional>

#include "tenferro/cpu_runtime/cpu_runtime.h"

namespace tenferro::fft_ir {

using ad::Emitter;
using ad::MaybeValue;
using fft::FftSpec;
using fft::Kind;
using fft::Norm;
using program::Attrs;
using program::Extent;
using program::OpCode;
using program::Value;
using program::ValueType;

namespace {

Error compile_error(ErrorCode code, std::string msg) {
  return Error(ErrorStage::kCompile, code, "fft", std::move(msg));
}
Error parse_error(std::string msg) { return usage_error(ErrorCode::kParse, "fft", std::move(msg)); }

constexpr Kind kKinds[] = {Kind::kC2C, Kind::kC2CInverse, Kind::kR2C, Kind::kC2R};
constexpr Norm kNorms[] = {Norm::kBackward, Norm::kOrtho, Norm::kForward};

}  // namespace

std::shared_ptr<const FftOp> FftOp::make(FftSpec spec) {
  return std::shared_ptr<const FftOp>(new FftOp(std::move(spec)));
}

uint64_t FftOp::payload_hash() const { return std::hash<std::string>()(payload_text()); }

bool FftOp::payload_equal(const ExtensionOp& other) const { return static_cast<const FftOp&>(other).spec_ == spec_; }

std::string FftOp::payload_text() const {
  std::string s(fft::kind_name(spec_.kind));
  s += ";norm=";
  s += fft::norm_name(spec_.norm);
  s += ";axes=";
  for (size_t i = 0; i < spec_.axes.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(spec_.axes[i]);
  }
  if (spec_.kind == Kind::kC2R) s += ";n=" + std::to_string(spec_.last_length);
  return s;
}

Result<std::vector<ValueType>> FftOp::infer(std::span<const ValueType> in, std::span<const program::SymbolInfo>,
                                            std::vector<program::PendingGuard>&) const {
  if (in.size() != 1) {
    return compile_error(ErrorCode::kInvalidArgument,
                         "a transform takes one operand, got " + std::to_string(in.size()));
  }
  const ValueType& x = in[0];
  // fft::result_type decides on a concrete shape: symbolic axes (never transformed) as 1.
  Shape probe;
  for (size_t a = 0; a < x.shape.size(); ++a) {
    const bool transformed =
        std::find(spec_.axes.begin(), spec_.axes.end(), static_cast<int64_t>(a)) != spec_.axes.end();
    if (!x.shape[a].is_exact()) {
      if (transformed) {
        return compile_error(ErrorCode::kUnsupported, std::string(fft::kind_name(spec_.kind)) + ": transformed axis " +
                                                          std::to_string(a) +
                                                          " needs an exact extent (other axes may be symbolic)");
      }
      probe.push_back(1);
    } else {
      probe.push_back(x.shape[a].exact_value());
    }
  }
  auto rt = fft::result_type(x.dtype, probe, spec_);
  if (!rt) return compile_error(rt.error().code(), rt.error().message());
  ValueType out{rt->dtype, x.shape};
  const size_t last = static_cast<size_t>(spec_.axes.back());
  out.shape[last] = Extent::exact(rt->shape[last]);
  return std::vector<ValueType>{std::move(out)};
}

Result<std::vector<Tensor>> FftOp::evaluate_reference(std::span<const Tensor> inputs) const {
  if (inputs.size() != 1) {
    return Error(ErrorStage::kCompletion, ErrorCode::kInvalidArgument, "fft", "a transform takes one operand");
  }
  TENFERRO_TRY(Tensor y, fft::fft(cpu::CpuExecutionContext::sequential(), inputs[0], spec_));
  return std::vector<Tensor>{std::move(y)};
}

Result<std::shared_ptr<const FftOp>> parse_fft_payload(std::string_view payload) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t semi = payload.find(';', start);
    parts.push_back(payload.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start));
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  FftSpec spec;
  bool found = false;
  for (Kind k : kKinds) {
    if (fft::kind_name(k) == parts[0]) {
      spec.kind = k;
      found = true;
    }
  }
  if (!found) return parse_error("unknown transform '" + std::string(parts[0]) + "'");
  bool have_norm = false, have_axes = false, have_n = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) return parse_error("option '" + std::string(parts[i]) + "' lacks '='");
    const std::string_view key = parts[i].substr(0, eq), val = parts[i].substr(eq + 1);
    auto bad = [&] { return parse_error("bad option '" + std::string(parts[i]) + "'"); };
    auto number = [&](std::string_view text, int64_t* dst) {
      const auto r = std::from_chars(text.data(), text.data() + text.size(), *dst);
      return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
    };
    if (key == "norm" && !have_norm) {
      have_norm = true;
      bool ok_norm = false;
      for (Norm n : kNorms) {
        if (fft::norm_name(n) == val) {
          spec.norm = n;
          ok_norm = true;
        }
      }
      if (!ok_norm) return bad();
    } else if (key == "axes" && !have_axes) {
      have_axes = true;
      size_t s = 0;
      while (true) {
        const size_t comma = val.find(',', s);
        int64_t a = 0;
        if (!number(val.substr(s, comma == std::string_view::npos ? std::string_view::npos : comma - s), &a)) {
          return bad();
        }
        spec.axes.push_back(a);
        if (comma == std::string_view::npos) break;
        s = comma + 1;
      }
    } else if (key == "n" && !have_n && spec.kind == Kind::kC2R) {
      have_n = true;
      if (!number(val, &spec.last_length)) return bad();
    } else {
      return bad();
    }
  }
  if (!have_axes) return parse_error("no axes given ('axes=0,1')");
  if (spec.kind == Kind::kC2R && !have_n) return parse_error("c2r needs its output length ('n=8')");
  return FftOp::make(std::move(spec));
}

Result<void> register_fft_family(program::ExtensionRegistry& registry) {
  return registry.add(std::string(kFftFamily),
                      [](std::string_view payload) -> Result<std::shared_ptr<const program::ExtensionOp>> {
                        TENFERRO_TRY(std::shared_ptr<const FftOp> op, parse_fft_payload(payload));
                        return std::shared_ptr<const program::ExtensionOp>(std::move(op));
                      });
}

Result<Value> emit_fft(program::ProgramBuilder& builder, const FftSpec& spec, Value operand) {
  const Value in[] = {operand};
  TENFERRO_TRY(std::vector<Value> out, builder.extension(FftOp::make(spec), in));
  return out.at(0);
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
