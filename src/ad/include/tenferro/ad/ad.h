#pragma once
/// \file
/// Automatic differentiation as program transforms (ARCHITECTURE §2 `ad`): `linearize`
/// (JVP) and `transpose` on frozen programs, VJP = linearize then transpose, and `grad`,
/// `jvp`, `hvp` by composition. Results are ordinary compiled graphs: cached, prepared
/// and run like any other, and differentiable again. Extension families bring their
/// rules through an explicitly installed rule set (AdContext); there is no global
/// registry. Conventions (Note [Complex cotangents], Note [Tangent encoding]) are in
/// docs/design/0009-ad.md.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/compiler/compiler.h"
#include "tenferro/core/result.h"
#include "tenferro/program/program.h"

namespace tenferro::ad {

using program::CompiledGraph;
using program::ExtensionOp;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

/// A tangent or cotangent that may be absent: nullopt means an exact zero (nothing was
/// emitted for it).
using MaybeValue = std::optional<Value>;

/// The builder of one transformed program plus the small helpers rules need. Every
/// helper validates through the builder (typed kCompile errors). Not thread-safe.
class Emitter {
 public:
  explicit Emitter(ProgramBuilder& builder) : b_(builder) {}
  ProgramBuilder& builder() noexcept { return b_; }
  Result<ValueType> type(Value v) const { return b_.type(v); }
  Result<Value> op(OpCode code, std::span<const Value> operands, program::Attrs attrs = {});
  Result<Value> op(OpCode code, std::initializer_list<Value> operands, program::Attrs attrs = {}) {
    return op(code, std::span<const Value>(operands.begin(), operands.size()), std::move(attrs));
  }
  /// A rank-0 constant `re + i*im` of `dtype` (im must be 0 for non-complex dtypes).
  Result<Value> scalar(DType dtype, double re, double im = 0.0);
  /// `t`-shaped tensor filled with `re + i*im` (a broadcast scalar).
  Result<Value> full(const ValueType& t, double re, double im = 0.0);
  Result<Value> zeros(const ValueType& t) { return full(t, 0.0); }
  /// `scalar` broadcast to the shape of `like`.
  Result<Value> splat_like(Value like, double re, double im = 0.0);
  Result<Value> add(Value a, Value b) { return op(OpCode::kAdd, {a, b}); }
  Result<Value> sub(Value a, Value b) { return op(OpCode::kSub, {a, b}); }
  Result<Value> mul(Value a, Value b) { return op(OpCode::kMul, {a, b}); }
  Result<Value> div(Value a, Value b) { return op(OpCode::kDiv, {a, b}); }
  Result<Value> neg(Value a) { return op(OpCode::kNeg, {a}); }
  /// Complex conjugate; `a` itself for a real dtype (nothing emitted).
  Result<Value> conj(Value a);
  /// `a + b` where either may be absent (zero).
  Result<MaybeValue> add(MaybeValue a, MaybeValue b);
  /// Sum over `dims` (removed); `a` itself when `dims` is empty.
  Result<Value> sum(Value a, std::vector<int64_t> dims);
  /// `a` broadcast to `shape`, operand axis i to result axis dims[i].
  Result<Value> broadcast(Value a, std::vector<program::Extent> shape, std::vector<int64_t> dims);
  /// `a` converted to `dtype` (nothing emitted when it already has it).
  Result<Value> convert(Value a, DType dtype);

 private:
  ProgramBuilder& b_;
};

/// Differentiation rules of one extension family (ARCHITECTURE `ad`: the linearize and
/// linear-transpose roles of spec 000 "Verified semantic transforms and AD"). Immutable
/// and thread-safe.
class ExtensionRule {
 public:
  virtual ~ExtensionRule() = default;
  /// The family id this rule set serves ("einsum").
  virtual std::string_view family_id() const = 0;
  /// Emits the tangents of `op`'s outputs: `inputs` and `outputs` are the primal values
  /// (already emitted), `tangents[i]` the tangent of input i (nullopt: zero). Returns
  /// one entry per output (nullopt: zero). Each tangent must be linear in the input
  /// tangents (the transpose transform rejects anything else).
  virtual Result<std::vector<MaybeValue>> linearize(Emitter& e, const ExtensionOp& op, std::span<const Value> inputs,
                                                    std::span<const Value> outputs,
                                                    std::span<const MaybeValue> tangents) const = 0;
  /// Emits the cotangents of the linear inputs of `op` used linearly: `inputs[i]` is the
  /// value of a non-linear input and nullopt for a linear one, `input_types` covers all,
  /// `cotangents[k]` is the cotangent of output k (nullopt: zero). Returns one entry per
  /// input (nullopt for non-linear inputs or a zero cotangent). Errors: kInvalidArgument
  /// naming the op when it is not linear in its linear inputs.
  virtual Result<std::vector<MaybeValue>> transpose(Emitter& e, const ExtensionOp& op,
                                                    std::span<const MaybeValue> inputs,
                                                    std::span<const ValueType> input_types,
                                                    std::span<const MaybeValue> cotangents) const = 0;
};

/// The einsum family's rules: the N-ary product rule as einsums, and its transpose as an
/// einsum of the cotangent with the other (conjugated) operands (Note [Einsum rules]).
std::shared_ptr<const ExtensionRule> einsum_rule();

/// Policies of the transforms; part of every cache key.
struct AdOptions {
  /// Differentiate an extension without an installed rule through its core lowering
  /// (an explicit fallback; never an effectful extension). Off: such an extension is a
  /// kUnsupported error.
  bool differentiate_lowerings = false;
  /// Run the fixed compiler pipeline (DCE, CSE, canonicalization) on every result.
  bool compile_results = true;
};

/// Which inputs a transform differentiates with respect to: one flag per *argument*
/// input (binding inputs are constants), or empty for every argument of an inexact dtype.
using ActiveMask = std::vector<bool>;

/// Holds explicitly installed rule sets, options, and a cache of transformed programs
/// keyed by program fingerprint (exact structural equality within a bucket), transform,
/// masks, options and rule-set identity. Thread-safe after setup: install() and
/// set_options() must not race with transforms. Move-only.
///
/// Transforms (Note [Tangent encoding] gives input/output order):
/// - jvp(P, active): inputs = P's inputs, then one tangent per active argument (same
///   type); outputs = P's outputs, then one tangent per output of an inexact dtype.
/// - transpose(L, linear_inputs, linear_outputs): L must be linear in the marked
///   argument inputs along the marked outputs. Inputs = L's unmarked inputs, then one
///   cotangent per marked output; outputs = L's unmarked outputs, then one cotangent per
///   marked input.
/// - vjp(P, active) = transpose(jvp(P, active)): inputs = P's inputs, then one cotangent
///   per output of an inexact dtype; outputs = P's outputs, then one cotangent per active
///   argument.
/// - grad(P, output, active): output `output` must be a real rank-0 value; inputs = P's
///   inputs; outputs = P's outputs, then d output / d x per active argument.
/// - hvp(P, output, active) = jvp(grad): inputs = P's inputs, then one direction per
///   active argument; outputs = P's outputs, the gradients, then the Hessian-vector
///   products.
/// Errors (kCompile stage, op = the transform): kInvalidArgument (mask lengths, a
/// non-differentiable op applied to a linear value, an output that is not linear),
/// kDTypeMismatch (an active integer or bool input, a grad output that is not a real
/// scalar), kUnsupported (an extension without a rule when the fallback is off; an
/// effectful extension; a transpose that needs an exact extent where it is symbolic).
class AdContext {
 public:
  /// No extension rules installed.
  AdContext();
  ~AdContext();
  AdContext(AdContext&&) noexcept;
  AdContext& operator=(AdContext&&) noexcept;
  /// A context with the library's own families installed (einsum).
  static AdContext with_standard_rules();

  /// Installs `rule` for its family. Errors: kInvalidArgument when the family already
  /// has a rule and `replace` is false, or `rule` is null. Clears the cache.
  Result<void> install(std::shared_ptr<const ExtensionRule> rule, bool replace = false);
  /// The installed rule of a family, or nullptr.
  const ExtensionRule* find(std::string_view family_id) const;
  void set_options(AdOptions options);
  const AdOptions& options() const noexcept;
  /// Identity of the installed rule set (changes on every install).
  uint64_t rule_set_id() const noexcept;

  Result<CompiledGraph> jvp(const CompiledGraph& graph, const ActiveMask& active = {}) const;
  Result<CompiledGraph> transpose(const CompiledGraph& graph, const std::vector<bool>& linear_inputs,
                                  const std::vector<bool>& linear_outputs) const;
  Result<CompiledGraph> vjp(const CompiledGraph& graph, const ActiveMask& active = {}) const;
  Result<CompiledGraph> grad(const CompiledGraph& graph, int64_t output = 0, const ActiveMask& active = {}) const;
  Result<CompiledGraph> hvp(const CompiledGraph& graph, int64_t output = 0, const ActiveMask& active = {}) const;

  struct Stats {
    int64_t hits = 0, misses = 0, entries = 0;
  };
  Stats cache_stats() const;

 private:
  struct State;
  enum class Kind : uint8_t { kJvp, kTranspose, kVjp, kGrad, kHvp };
  Result<CompiledGraph> cached(Kind kind, const CompiledGraph& graph, std::vector<int64_t> key_args,
                               const std::function<Result<CompiledGraph>()>& make) const;
  Result<CompiledGraph> finish(Result<CompiledGraph> raw) const;
  std::unique_ptr<State> state_;
};

}  // namespace tenferro::ad
