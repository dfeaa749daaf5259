#pragma once
// The test extension family "test.scale" (tests only): y = factor * x, optionally also
// returning x itself (a view of the input), optionally with a write effect on an "rng"
// resource, with a core lowering, an optional direct reference evaluation, and output
// pruning. Exercises every part of the ExtensionOp interface.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tenferro/program/extension.h"
#include "tenferro/program/program.h"

namespace tenferro::test_support {

struct ScaleOp final : program::ExtensionOp {
  double factor = 1.0;
  int outputs = 1;         // 1: [factor * x]; 2: [factor * x, x]
  bool effectful = false;  // write effect on rng:gen0
  bool reference = false;  // evaluate_reference implemented (else the interpreter lowers)

  std::string_view family_id() const override { return "test.scale"; }
  uint64_t payload_hash() const override {
    uint64_t bits;
    std::memcpy(&bits, &factor, sizeof(bits));
    return bits * 31 + static_cast<uint64_t>(outputs) * 7 + (effectful ? 3 : 0) + (reference ? 1 : 0);
  }
  bool payload_equal(const ExtensionOp& other) const override {
    const auto& o = static_cast<const ScaleOp&>(other);
    return o.factor == factor && o.outputs == outputs && o.effectful == effectful && o.reference == reference;
  }
  std::string payload_text() const override {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "factor=%.17g;outputs=%d;effect=%d;reference=%d", factor, outputs, effectful ? 1 : 0,
                  reference ? 1 : 0);
    return buf;
  }
  std::vector<program::Effect> effects() const override {
    if (!effectful) return {};
    return {program::Effect{"rng", "gen0", program::EffectAccess::kWrite}};
  }
  std::vector<program::Alias> aliases() const override {
    std::vector<program::Alias> a{program::Alias{}};
    if (outputs == 2) a.push_back(program::Alias{program::AliasKind::kViewOf, 0, {}});
    return a;
  }
  Result<std::vector<program::ValueType>> infer(std::span<const program::ValueType> in,
                                                std::span<const program::SymbolInfo>,
                                                std::vector<program::PendingGuard>&) const override {
    if (in.size() != 1) {
      return Error(ErrorStage::kCompile, ErrorCode::kInvalidArgument, "test.scale", "test.scale_c1: takes one operand");
    }
    if (!is_floating(in[0].dtype)) {
      return Error(ErrorStage::kCompile, ErrorCode::kDTypeMismatch, "test.scale", "test.scale_c2: needs f32 or f64");
    }
    std::vector<program::ValueType> out(static_cast<size_t>(outputs), in[0]);
    return out;
  }
  Result<program::LoweringOutcome> lower_to_core(program::ProgramBuilder& b,
                                                 std::span<const program::Value> in) const override {
    program::LoweringOutcome o;
    TENFERRO_TRY(program::ValueType t, b.type(in[0]));
    for (const auto& e : t.shape) {
      if (!e.is_exact()) {
        o.kind = program::LoweringOutcome::Kind::kNeedsSpecialization;
        o.reason = "test.scale lowers exact shapes only";
        return o;
      }
    }
    program::Literal lit;
    if (t.dtype == DType::kF32) {
      const float f = static_cast<float>(factor);
      TENFERRO_TRY(lit, program::Literal::from_values<float>({}, std::span<const float>(&f, 1)));
    } else {
      TENFERRO_TRY(lit, program::Literal::from_values<double>({}, std::span<const double>(&factor, 1)));
    }
    TENFERRO_TRY(program::Value c, b.constant(lit));
    program::Attrs bc;
    bc.shape = t.shape;
    TENFERRO_TRY(program::Value cb, b.op(program::OpCode::kBroadcastInDim, {c}, bc));
    TENFERRO_TRY(program::Value y, b.op(program::OpCode::kMul, {cb, in[0]}));
    o.kind = program::LoweringOutcome::Kind::kLowered;
    o.values.push_back(y);
    if (outputs == 2) o.values.push_back(in[0]);
    return o;
  }
  Result<std::vector<Tensor>> evaluate_reference(std::span<const Tensor> in) const override {
    if (!reference) return ExtensionOp::evaluate_reference(in);
    TENFERRO_TRY(Tensor x, in[0].to_col_major());
    TENFERRO_TRY(Tensor y, x.to_col_major());
    const int64_t n = y.numel();
    if (y.dtype() == DType::kF32) {
      auto* p = static_cast<float*>(y.storage()->data());
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(factor) * p[i];
    } else {
      auto* p = static_cast<double*>(y.storage()->data());
      for (int64_t i = 0; i < n; ++i) p[i] = factor * p[i];
    }
    std::vector<Tensor> out{y};
    if (outputs == 2) out.push_back(x);
    return out;
  }
  std::shared_ptr<const ExtensionOp> prune_outputs(std::span<const bool> used) const override {
    if (outputs != 2 || used[1] || !used[0]) return nullptr;
    auto p = std::make_shared<ScaleOp>(*this);
    p->outputs = 1;
    return p;
  }
};

inline std::shared_ptr<const ScaleOp> make_scale(double factor, int outputs = 1, bool effectful = false,
                                                 bool reference = false) {
  auto op = std::make_shared<ScaleOp>();
  op->factor = factor;
  op->outputs = outputs;
  op->effectful = effectful;
  op->reference = reference;
  return op;
}

/// A registry with the test.scale family (for parse_program).
inline program::ExtensionRegistry test_registry() {
  program::ExtensionRegistry r;
  (void)r.add("test.scale", [](std::string_view text) -> Result<std::shared_ptr<const program::ExtensionOp>> {
    double factor = 0;
    int outputs = 0, effect = 0, reference = 0;
    const std::string t(text);
    if (std::sscanf(t.c_str(), "factor=%lf;outputs=%d;effect=%d;reference=%d", &factor, &outputs, &effect, &reference) != 4 ||
        (outputs != 1 && outputs != 2)) {
      return Error(ErrorStage::kUsage, ErrorCode::kParse, "test.scale", "bad payload '" + t + "'");
    }
    return std::shared_ptr<const program::ExtensionOp>(make_scale(factor, outputs, effect != 0, reference != 0));
  });
  return r;
}

}  // namespace tenferro::test_support
