// The program transforms (linearize, transpose and their compositions) and AdContext.

#include <algorithm>
#include <list>
#include <map>

#include "rules.h"
#include "tenferro/ad/ad.h"

namespace tenferro::ad {

using detail::ad_error;
using program::Attrs;
using program::Extent;
using program::Operation;
using program::SemanticProgram;
using program::ValueRef;

// Note [Tangent encoding]: a transform's result is an ordinary program. Tangents and
// cotangents are extra argument inputs appended after the source program's inputs (in
// the order of the inputs they belong to), and extra outputs appended after the kept
// outputs; a value of an integer or bool dtype never has a tangent, and a zero tangent
// is never an input: inside a transform an absent tangent is "exact zero" and nothing
// is emitted for it; a zero that must be an output is emitted as a broadcast 0. Binding
// inputs (captured tensors) are constants: never active, kept in order, so a cached
// transform serves every graph with the same program and its own bindings.

// Note [Complex cotangents]: complex values are pairs of reals, and the transpose is the
// adjoint under the real inner product <u, v> = Re(sum conj(u) v): the transpose of
// x -> a * x is c -> conj(a) * c, of conj is conj, of real(z) is c -> c + 0i, of imag(z)
// is c -> i c. For a real loss L of complex z the gradient is dL/dx + i dL/dy (x, y the
// real and imaginary parts, = 2 dL/d conj(z) in Wirtinger terms): the direction of
// steepest ascent, as PyTorch reports it; `<vjp(u), v> = <u, jvp(v)>` holds with this
// inner product.

namespace {

Attrs translate(const program::ReplayedInputs& r, Attrs a) {
  for (Extent& e : a.shape) e = r.translate(e);
  return a;
}

bool literal_is_zero(const program::Literal& l) {
  return std::all_of(l.bytes.begin(), l.bytes.end(), [](uint8_t b) { return b == 0; });
}

std::string where(const Operation& op) {
  std::string s = op.code() == OpCode::kExtension ? std::string(op.extension()->family_id()) + " extension"
                                                   : std::string(program::op_name(op.code()));
  if (!op.provenance().empty()) s += " (" + op.provenance() + ")";
  return s;
}

// A rule's error, said where it happened.
Error in_op(const Error& inner, std::string_view transform, const Operation& op) {
  return ad_error(inner.code(), transform, "in " + where(op) + ": " + inner.message());
}

// Extensions without an installed rule replaced by their core lowering (the explicit
// fallback of AdOptions::differentiate_lowerings), or `g` itself when there are none.
Result<CompiledGraph> lower_unruled(const AdContext& ctx, const CompiledGraph& g, std::string_view transform) {
  const SemanticProgram& p = *g.program;
  const bool any = std::any_of(p.ops().begin(), p.ops().end(), [&](const Operation& op) {
    return op.code() == OpCode::kExtension && !ctx.find(op.extension()->family_id());
  });
  if (!any) return g;
  if (!ctx.options().differentiate_lowerings) {
    for (const Operation& op : p.ops()) {
      if (op.code() == OpCode::kExtension && !ctx.find(op.extension()->family_id())) {
        return ad_error(ErrorCode::kUnsupported, transform,
                        "no rule installed for the " + std::string(op.extension()->family_id()) +
                            " family (install one in the AdContext, or allow differentiating its lowering "
                            "with AdOptions::differentiate_lowerings)");
      }
    }
  }
  ProgramBuilder b;
  TENFERRO_TRY(program::ReplayedInputs r, program::replay_inputs(b, g));
  std::vector<Value> map(p.value_count());
  for (size_t i = 0; i < r.inputs.size(); ++i) map[static_cast<size_t>(p.inputs()[i].value.index())] = r.inputs[i];
  for (const Operation& op : p.ops()) {
    std::vector<Value> ins;
    for (ValueRef v : op.operands()) ins.push_back(map[static_cast<size_t>(v.index())]);
    b.set_provenance(op.provenance());
    std::vector<Value> outs;
    if (op.code() != OpCode::kExtension) {
      TENFERRO_TRY(Value v, b.op(op.code(), ins, translate(r, op.attrs())));
      outs.push_back(v);
    } else if (ctx.find(op.extension()->family_id())) {
      TENFERRO_TRY(outs, b.extension(op.extension_ptr(), ins));
    } else {
      if (!op.extension()->effects().empty()) {
        return ad_error(ErrorCode::kUnsupported, transform,
                        "the " + std::string(op.extension()->family_id()) +
                            " extension has effects and no rule: effectful operations are differentiated only by "
                            "an installed rule, never through their lowering");
      }
      b.set_core_only(true);
      Result<program::LoweringOutcome> lo = op.extension()->lower_to_core(b, ins);
      b.set_core_only(false);
      if (!lo) return lo.error();
      if (lo->kind != program::LoweringOutcome::Kind::kLowered) {
        return ad_error(ErrorCode::kUnsupported, transform,
                        "the " + std::string(op.extension()->family_id()) +
                            " extension has no rule and its lowering is unavailable: " + lo->reason);
      }
      outs = std::move(lo->values);
    }
    for (size_t k = 0; k < outs.size(); ++k) map[static_cast<size_t>(op.results()[k].index())] = outs[k];
  }
  std::vector<Value> outs;
  for (ValueRef v : p.outputs()) outs.push_back(map[static_cast<size_t>(v.index())]);
  return b.finish(outs);
}

// JVP: inputs = g's inputs + one tangent per `active` input; outputs = g's outputs + one
// tangent per `tangent_outputs` output.
Result<CompiledGraph> linearize(const AdContext& ctx, const CompiledGraph& src, const std::vector<bool>& active,
                                const std::vector<bool>& tangent_outputs) {
  TENFERRO_TRY(CompiledGraph g, lower_unruled(ctx, src, "jvp"));
  const SemanticProgram& p = *g.program;
  ProgramBuilder b;
  Emitter e(b);
  TENFERRO_TRY(program::ReplayedInputs r, program::replay_inputs(b, g));
  const size_t nv = p.value_count();
  std::vector<Value> prim(nv);
  std::vector<MaybeValue> tan(nv);
  auto idx = [](ValueRef v) { return static_cast<size_t>(v.index()); };
  for (size_t i = 0; i < r.inputs.size(); ++i) prim[idx(p.inputs()[i].value)] = r.inputs[i];
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (!active[i]) continue;
    const program::InputInfo& in = p.inputs()[i];
    TENFERRO_TRY(Value t, b.input(r.translate(p.type(in.value)), in.name.empty() ? "" : "d" + in.name));
    tan[idx(in.value)] = t;
  }
  for (const Operation& op : p.ops()) {
    std::vector<Value> ins;
    std::vector<ValueType> types;
    std::vector<MaybeValue> tins;
    bool any = false;
    for (ValueRef v : op.operands()) {
      ins.push_back(prim[idx(v)]);
      types.push_back(r.translate(p.type(v)));
      tins.push_back(tan[idx(v)]);
      any = any || tan[idx(v)].has_value();
    }
    b.set_provenance(op.provenance());
    if (op.code() != OpCode::kExtension) {
      const Attrs a = translate(r, op.attrs());
      TENFERRO_TRY(Value y, b.op(op.code(), ins, a));
      prim[idx(op.results()[0])] = y;
      if (!any) continue;
      b.set_provenance(op.provenance().empty() ? "jvp" : "jvp of " + op.provenance());
      Result<MaybeValue> t = detail::jvp_core(e, op.code(), a, ins, types, y, tins);
      if (!t) return in_op(t.error(), "jvp", op);
      tan[idx(op.results()[0])] = *t;
      continue;
    }
    TENFERRO_TRY(std::vector<Value> ys, b.extension(op.extension_ptr(), ins));
    for (size_t k = 0; k < ys.size(); ++k) prim[idx(op.results()[k])] = ys[k];
    if (!any) continue;
    const ExtensionRule* rule = ctx.find(op.extension()->family_id());
    if (!rule) return ad_error(ErrorCode::kInternal, "jvp", "no rule for " + where(op));
    b.set_provenance(op.provenance().empty() ? "jvp" : "jvp of " + op.provenance());
    TENFERRO_TRY(std::vector<MaybeValue> ts, rule->linearize(e, *op.extension(), ins, ys, tins));
    if (ts.size() != ys.size()) {
      return ad_error(ErrorCode::kProviderContract, "jvp",
                      "the " + std::string(op.extension()->family_id()) + " rule returned " + std::to_string(ts.size()) +
                          " tangents for " + std::to_string(ys.size()) + " outputs");
    }
    for (size_t k = 0; k < ts.size(); ++k) tan[idx(op.results()[k])] = ts[k];
  }
  std::vector<Value> outs;
  for (ValueRef v : p.outputs()) outs.push_back(prim[idx(v)]);
  b.set_provenance("jvp");
  for (size_t k = 0; k < p.outputs().size(); ++k) {
    if (!tangent_outputs[k]) continue;
    const ValueRef v = p.outputs()[k];
    if (tan[idx(v)]) {
      outs.push_back(*tan[idx(v)]);
    } else {
      TENFERRO_TRY(Value z, e.zeros(r.translate(p.type(v))));
      outs.push_back(z);
    }
  }
  return b.finish(outs);
}

// Transpose of `g` linear in the `linear_in` inputs along the `linear_out` outputs.
// Inputs = the other inputs + one cotangent per linear output (or ones when
// `seed_ones`); outputs = the other outputs + one cotangent per linear input.
Result<CompiledGraph> transpose_program(const AdContext& ctx, const CompiledGraph& src, const std::vector<bool>& linear_in,
                                        const std::vector<bool>& linear_out, bool seed_ones) {
  constexpr std::string_view kOp = "transpose";
  TENFERRO_TRY(CompiledGraph g, lower_unruled(ctx, src, kOp));
  const SemanticProgram& p = *g.program;
  const size_t nv = p.value_count();
  auto idx = [](ValueRef v) { return static_cast<size_t>(v.index()); };
  std::vector<bool> linear(nv, false), zero(nv, false);
  for (size_t i = 0; i < p.inputs().size(); ++i) linear[idx(p.inputs()[i].value)] = linear_in[i];
  // Classify every value and check that linear values are used linearly.
  for (const Operation& op : p.ops()) {
    const auto ins = op.operands();
    bool any = false;
    for (ValueRef v : ins) any = any || linear[idx(v)];
    if (!any) {
      if (op.code() == OpCode::kConstant) zero[idx(op.results()[0])] = literal_is_zero(*op.attrs().literal);
      if (op.code() == OpCode::kBroadcastInDim || op.code() == OpCode::kReshape || op.code() == OpCode::kTranspose ||
          op.code() == OpCode::kConvert) {
        zero[idx(op.results()[0])] = zero[idx(ins[0])];
      }
      continue;
    }
    for (ValueRef v : op.results()) linear[idx(v)] = true;
    if (op.code() == OpCode::kExtension) {
      if (!ctx.find(op.extension()->family_id())) {
        return ad_error(ErrorCode::kInternal, kOp, "no rule for " + where(op));
      }
      if (!op.extension()->effects().empty()) {
        return ad_error(ErrorCode::kUnsupported, kOp, where(op) + " has effects and cannot be used linearly");
      }
      continue;
    }
    std::vector<ValueType> types;
    for (ValueRef v : ins) types.push_back(p.type(v));
    const detail::LinearSlots slots = detail::linear_slots(op.code(), op.attrs(), types, p.type(op.results()[0]));
    const std::string not_linear = where(op) + " is not linear in the linear inputs";
    switch (slots.kind) {
      case detail::Linearity::kNotLinear: return ad_error(ErrorCode::kInvalidArgument, kOp, not_linear);
      case detail::Linearity::kOneFactor: {
        int n = 0;
        for (ValueRef v : ins) n += linear[idx(v)] ? 1 : 0;
        if (n != 1) return ad_error(ErrorCode::kInvalidArgument, kOp, not_linear + " (a product of two linear values)");
        break;
      }
      case detail::Linearity::kAdditive:
        for (size_t i = 0; i < ins.size(); ++i) {
          const bool lin = linear[idx(ins[i])];
          if (lin && !slots.slots[i]) {
            return ad_error(ErrorCode::kInvalidArgument, kOp,
                            not_linear + " (operand " + std::to_string(i) + " may not be linear)");
          }
          if (!lin && slots.slots[i] && !zero[idx(ins[i])]) {
            return ad_error(ErrorCode::kInvalidArgument, kOp,
                            not_linear + " (operand " + std::to_string(i) + " is a non-zero constant: affine)");
          }
        }
        break;
    }
  }
  for (size_t k = 0; k < p.outputs().size(); ++k) {
    const size_t v = idx(p.outputs()[k]);
    if (linear_out[k] && !linear[v] && !zero[v]) {
      return ad_error(ErrorCode::kInvalidArgument, kOp,
                      "output " + std::to_string(k) + " is marked linear but does not depend on the linear inputs");
    }
    if (!linear_out[k] && linear[v]) {
      return ad_error(ErrorCode::kInvalidArgument, kOp,
                      "output " + std::to_string(k) + " depends on the linear inputs but is not marked linear");
    }
  }

  ProgramBuilder b;
  Emitter e(b);
  TENFERRO_TRY(program::ReplayedInputs r, program::replay_inputs(b, g, linear_in));
  std::vector<Value> prim(nv);
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (!linear_in[i]) prim[idx(p.inputs()[i].value)] = r.inputs[i];
  }
  std::vector<MaybeValue> ct(nv);
  for (size_t k = 0; k < p.outputs().size(); ++k) {
    if (!linear_out[k]) continue;
    const ValueRef v = p.outputs()[k];
    const ValueType t = r.translate(p.type(v));
    Value c;
    if (seed_ones) {
      b.set_provenance("seed");
      TENFERRO_TRY(c, e.full(t, 1.0));
    } else {
      TENFERRO_TRY(c, b.input(t, "ct" + std::to_string(k)));
    }
    if (linear[idx(v)]) {
      TENFERRO_TRY(ct[idx(v)], e.add(ct[idx(v)], MaybeValue(c)));
    }
  }
  // The non-linear part, forward.
  for (const Operation& op : p.ops()) {
    if (linear[idx(op.results()[0])]) continue;
    std::vector<Value> ins;
    for (ValueRef v : op.operands()) ins.push_back(prim[idx(v)]);
    b.set_provenance(op.provenance());
    if (op.code() != OpCode::kExtension) {
      TENFERRO_TRY(prim[idx(op.results()[0])], b.op(op.code(), ins, translate(r, op.attrs())));
    } else {
      TENFERRO_TRY(std::vector<Value> ys, b.extension(op.extension_ptr(), ins));
      for (size_t k = 0; k < ys.size(); ++k) prim[idx(op.results()[k])] = ys[k];
    }
  }
  // The linear part, backward.
  const auto ops = p.ops();
  for (size_t n = ops.size(); n-- > 0;) {
    const Operation& op = ops[n];
    if (!linear[idx(op.results()[0])]) continue;
    std::vector<MaybeValue> cts;
    bool any = false;
    for (ValueRef v : op.results()) {
      cts.push_back(ct[idx(v)]);
      any = any || ct[idx(v)].has_value();
    }
    if (!any) continue;
    std::vector<MaybeValue> ins;
    std::vector<ValueType> types;
    std::vector<bool> lin;
    for (ValueRef v : op.operands()) {
      lin.push_back(linear[idx(v)]);
      ins.push_back(linear[idx(v)] ? MaybeValue{} : MaybeValue(prim[idx(v)]));
      types.push_back(r.translate(p.type(v)));
    }
    b.set_provenance(op.provenance().empty() ? "transpose" : "transpose of " + op.provenance());
    Result<std::vector<MaybeValue>> got = [&]() -> Result<std::vector<MaybeValue>> {
      if (op.code() == OpCode::kExtension) {
        return ctx.find(op.extension()->family_id())->transpose(e, *op.extension(), ins, types, cts);
      }
      return detail::transpose_core(e, op.code(), translate(r, op.attrs()), ins, types, lin,
                                    r.translate(p.type(op.results()[0])), *cts[0]);
    }();
    if (!got) return in_op(got.error(), kOp, op);
    if (got->size() != ins.size()) {
      return ad_error(ErrorCode::kProviderContract, kOp, where(op) + ": the rule returned a wrong number of cotangents");
    }
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!lin[i] || !(*got)[i]) continue;
      const size_t v = idx(op.operands()[i]);
      TENFERRO_TRY(ct[v], e.add(ct[v], (*got)[i]));
    }
  }
  std::vector<Value> outs;
  for (size_t k = 0; k < p.outputs().size(); ++k) {
    if (!linear_out[k]) outs.push_back(prim[idx(p.outputs()[k])]);
  }
  b.set_provenance("transpose");
  for (size_t i = 0; i < p.inputs().size(); ++i) {
    if (!linear_in[i]) continue;
    const ValueRef v = p.inputs()[i].value;
    if (ct[idx(v)]) {
      outs.push_back(*ct[idx(v)]);
    } else {
      TENFERRO_TRY(Value z, e.zeros(r.translate(p.type(v))));
      outs.push_back(z);
    }
  }
  return b.finish(outs);
}

// Per-input flags from a mask over argument inputs (empty: every inexact argument).
Result<std::vector<bool>> input_mask(const SemanticProgram& p, const ActiveMask& active, std::string_view op) {
  size_t nargs = 0;
  for (const auto& in : p.inputs()) nargs += in.binding ? 0 : 1;
  if (!active.empty() && active.size() != nargs) {
    return ad_error(ErrorCode::kInvalidArgument, op,
                    "the mask has " + std::to_string(active.size()) + " flags; the program has " + std::to_string(nargs) +
                        " argument inputs");
  }
  std::vector<bool> out;
  size_t a = 0;
  for (const auto& in : p.inputs()) {
    if (in.binding) {
      out.push_back(false);
      continue;
    }
    const DType d = p.type(in.value).dtype;
    const bool want = active.empty() ? is_inexact(d) : active[a];
    if (want && !is_inexact(d)) {
      return ad_error(ErrorCode::kDTypeMismatch, op,
                      "argument " + std::to_string(a) + " has dtype " + std::string(dtype_name(d)) +
                          ", which has no tangent (only f32, f64, c64, c128 can be active)");
    }
    out.push_back(want);
    ++a;
  }
  return out;
}

std::vector<bool> inexact_outputs(const SemanticProgram& p) {
  std::vector<bool> out;
  for (ValueRef v : p.outputs()) out.push_back(is_inexact(p.type(v).dtype));
  return out;
}

Result<void> check_scalar_output(const SemanticProgram& p, int64_t output, std::string_view op) {
  if (output < 0 || output >= static_cast<int64_t>(p.outputs().size())) {
    return ad_error(ErrorCode::kOutOfRange, op,
                    "output " + std::to_string(output) + " of a program with " + std::to_string(p.outputs().size()) +
                        " outputs");
  }
  const ValueType& t = p.type(p.outputs()[static_cast<size_t>(output)]);
  if (!is_floating(t.dtype) || t.rank() != 0) {
    // A shape error for rank > 0, a dtype error for a complex or integer scalar.
    return ad_error(
        t.rank() != 0 ? ErrorCode::kShapeMismatch : ErrorCode::kDTypeMismatch, op,
        "output " + std::to_string(output) + " must be a real scalar (f32 or f64, rank 0) to take a gradient");
  }
  return {};
}

Result<CompiledGraph> grad_raw(const AdContext& ctx, const CompiledGraph& g, int64_t output, const std::vector<bool>& act) {
  const SemanticProgram& p = *g.program;
  TENFERRO_TRY_VOID(check_scalar_output(p, output, "grad"));
  std::vector<bool> tout(p.outputs().size(), false);
  tout[static_cast<size_t>(output)] = true;
  TENFERRO_TRY(CompiledGraph l, linearize(ctx, g, act, tout));
  std::vector<bool> lin_in(p.inputs().size(), false), lin_out(p.outputs().size(), false);
  for (bool a : act) {
    if (a) lin_in.push_back(true);
  }
  lin_out.push_back(true);
  return transpose_program(ctx, l, lin_in, lin_out, true);
}

}  // namespace

// ---- AdContext -------------------------------------------------------------------------------------

struct AdContext::State {
  std::map<std::string, std::shared_ptr<const ExtensionRule>, std::less<>> rules;
  AdOptions options;
  uint64_t rule_set_id = 0;
  compiler::GraphCompiler compiler{256};
  struct Entry {
    Kind kind;
    std::vector<int64_t> args;
    std::shared_ptr<const SemanticProgram> source;
    std::shared_ptr<const SemanticProgram> result;
  };
  mutable std::mutex mu;
  std::list<Entry> lru;
  Stats stats;
  static constexpr size_t kCapacity = 128;
};

AdContext::AdContext() : state_(std::make_unique<State>()) {}
AdContext::~AdContext() = default;
AdContext::AdContext(AdContext&&) noexcept = default;
AdContext& AdContext::operator=(AdContext&&) noexcept = default;

AdContext AdContext::with_standard_rules() {
  AdContext c;
  (void)c.install(einsum_rule());
  return c;
}

Result<void> AdContext::install(std::shared_ptr<const ExtensionRule> rule, bool replace) {
  if (!rule) return usage_error(ErrorCode::kInvalidArgument, "AdContext::install", "null rule");
  const std::string family(rule->family_id());
  auto it = state_->rules.find(family);
  if (it != state_->rules.end() && !replace) {
    return usage_error(ErrorCode::kInvalidArgument, "AdContext::install",
                       "the " + family + " family already has a rule (pass replace = true to replace it)");
  }
  state_->rules[family] = std::move(rule);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& [name, r] : state_->rules) {
    for (char ch : name) h = (h ^ static_cast<uint8_t>(ch)) * 0x100000001b3ULL;
    h = (h ^ reinterpret_cast<uintptr_t>(r.get())) * 0x100000001b3ULL;
  }
  state_->rule_set_id = h;
  std::lock_guard lock(state_->mu);
  state_->lru.clear();
  state_->stats.entries = 0;
  return {};
}

const ExtensionRule* AdContext::find(std::string_view family_id) const {
  auto it = state_->rules.find(family_id);
  return it == state_->rules.end() ? nullptr : it->second.get();
}

void AdContext::set_options(AdOptions options) {
  state_->options = options;
  std::lock_guard lock(state_->mu);
  state_->lru.clear();
  state_->stats.entries = 0;
}
const AdOptions& AdContext::options() const noexcept { return state_->options; }
uint64_t AdContext::rule_set_id() const noexcept { return state_->rule_set_id; }

AdContext::Stats AdContext::cache_stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

Result<CompiledGraph> AdContext::finish(Result<CompiledGraph> raw) const {
  if (!raw || !state_->options.compile_results) return raw;
  return state_->compiler.compile(*raw);
}

Result<CompiledGraph> AdContext::cached(Kind kind, const CompiledGraph& graph, std::vector<int64_t> args,
                                        const std::function<Result<CompiledGraph>()>& make) const {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "ad", "graph without a program");
  State& s = *state_;
  {
    std::lock_guard lock(s.mu);
    for (auto it = s.lru.begin(); it != s.lru.end(); ++it) {
      if (it->kind == kind && it->args == args && it->source->fingerprint() == graph.program->fingerprint() &&
          it->source->structurally_equal(*graph.program)) {
        s.lru.splice(s.lru.begin(), s.lru, it);
        ++s.stats.hits;
        return CompiledGraph{s.lru.front().result, graph.bindings};
      }
    }
    ++s.stats.misses;
  }
  TENFERRO_TRY(CompiledGraph out, finish(make()));
  std::lock_guard lock(s.mu);
  s.lru.push_front(State::Entry{kind, std::move(args), graph.program, out.program});
  if (s.lru.size() > State::kCapacity) s.lru.pop_back();
  s.stats.entries = static_cast<int64_t>(s.lru.size());
  return CompiledGraph{out.program, graph.bindings};
}

namespace {
std::vector<int64_t> key(const std::vector<bool>& a, std::initializer_list<int64_t> extra = {}) {
  std::vector<int64_t> k(extra);
  k.push_back(-1);
  for (bool x : a) k.push_back(x ? 1 : 0);
  return k;
}
}  // namespace

Result<CompiledGraph> AdContext::jvp(const CompiledGraph& graph, const ActiveMask& active) const {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "jvp", "graph without a program");
  TENFERRO_TRY(std::vector<bool> act, input_mask(*graph.program, active, "jvp"));
  return cached(Kind::kJvp, graph, key(act), [&] { return linearize(*this, graph, act, inexact_outputs(*graph.program)); });
}

Result<CompiledGraph> AdContext::transpose(const CompiledGraph& graph, const std::vector<bool>& linear_inputs,
                                           const std::vector<bool>& linear_outputs) const {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "transpose", "graph without a program");
  const SemanticProgram& p = *graph.program;
  if (linear_inputs.empty()) {
    return ad_error(ErrorCode::kInvalidArgument, "transpose", "the linear-input mask is empty");
  }
  TENFERRO_TRY(std::vector<bool> lin, input_mask(p, linear_inputs, "transpose"));
  if (linear_outputs.size() != p.outputs().size()) {
    return ad_error(ErrorCode::kInvalidArgument, "transpose",
                    "the linear-output mask has " + std::to_string(linear_outputs.size()) + " flags; the program has " +
                        std::to_string(p.outputs().size()) + " outputs");
  }
  const std::vector<bool>& lout = linear_outputs;
  std::vector<int64_t> k = key(lin);
  for (bool x : lout) k.push_back(x ? 1 : 0);
  return cached(Kind::kTranspose, graph, std::move(k), [&] { return transpose_program(*this, graph, lin, lout, false); });
}

Result<CompiledGraph> AdContext::vjp(const CompiledGraph& graph, const ActiveMask& active) const {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "vjp", "graph without a program");
  const SemanticProgram& p = *graph.program;
  TENFERRO_TRY(std::vector<bool> act, input_mask(p, active, "vjp"));
  return cached(Kind::kVjp, graph, key(act), [&]() -> Result<CompiledGraph> {
    const std::vector<bool> tout = inexact_outputs(p);
    TENFERRO_TRY(CompiledGraph l, linearize(*this, graph, act, tout));
    std::vector<bool> lin_in(p.inputs().size(), false), lin_out(p.outputs().size(), false);
    for (bool a : act) {
      if (a) lin_in.push_back(true);
    }
    for (bool t : tout) {
      if (t) lin_out.push_back(true);
    }
    return transpose_program(*this, l, lin_in, lin_out, false);
  });
}

Result<CompiledGraph> AdContext::grad(const CompiledGraph& graph, int64_t output, const ActiveMask& active) const {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "grad", "graph without a program");
  TENFERRO_TRY(std::vector<bool> act, input_mask(*graph.program, active, "grad"));
  TENFERRO_TRY_VOID(check_scalar_output(*graph.program, output, "grad"));
  return cached(Kind::kGrad, graph, key(act, {output}), [&] { return grad_raw(*this, graph, output, act); });
}

Result<CompiledGraph> AdContext::hvp(const CompiledGraph& graph, int64_t output, const ActiveMask& active) const {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "hvp", "graph without a program");
  const SemanticProgram& p = *graph.program;
  TENFERRO_TRY(std::vector<bool> act, input_mask(p, active, "hvp"));
  TENFERRO_TRY_VOID(check_scalar_output(p, output, "hvp"));
  return cached(Kind::kHvp, graph, key(act, {output}), [&]() -> Result<CompiledGraph> {
    TENFERRO_TRY(CompiledGraph gr, grad_raw(*this, graph, output, act));
    // forward-over-reverse: tangents of the gradient outputs only.
    std::vector<bool> tout(gr.program->outputs().size(), false);
    for (size_t k = p.outputs().size(); k < tout.size(); ++k) tout[k] = true;
    return linearize(*this, gr, act, tout);
  });
}

}  // namespace tenferro::ad
