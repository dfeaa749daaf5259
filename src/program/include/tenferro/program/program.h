#pragma once
/// \file
/// The backend-neutral semantic IR: ProgramBuilder (opaque value tokens), the frozen
/// SemanticProgram (immutable, read-only views, structural fingerprint), program
/// bindings and CompiledGraph.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"
#include "tenferro/program/extension.h"
#include "tenferro/program/ops.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

/// A value token issued by one ProgramBuilder. Opaque: it exposes no raw id; using it
/// with another builder is a typed error (kInvalidArgument, "foreign value").
class Value {
 public:
  Value() = default;
  bool valid() const noexcept { return index_ >= 0; }
  friend bool operator==(const Value&, const Value&) = default;
  /// Ordering and hashing (for maps in frontends and passes); not an id.
  friend auto operator<=>(const Value&, const Value&) = default;
  size_t hash() const noexcept { return std::hash<int64_t>()((static_cast<int64_t>(builder_) << 32) ^ index_); }

 private:
  friend class ProgramBuilder;
  Value(uint64_t builder, int32_t index) : builder_(builder), index_(index) {}
  uint64_t builder_ = 0;
  int32_t index_ = -1;
};

/// A value of a frozen program (read-only reference; comparable and hashable).
class ValueRef {
 public:
  ValueRef() = default;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
  friend auto operator<=>(const ValueRef&, const ValueRef&) = default;
  size_t hash() const noexcept { return std::hash<int32_t>()(index_); }
  /// Dense position of the value in its program (0 .. value_count() - 1), for per-value
  /// tables in consumers such as runtimes; -1 for a default-constructed reference.
  int32_t index() const noexcept { return index_; }

 private:
  friend class SemanticProgram;
  friend class ProgramBuilder;
  friend struct ProgramAccess;
  explicit ValueRef(int32_t index) : index_(index) {}
  int32_t index_ = -1;
};

/// One operation of a frozen program (read-only view).
class Operation {
 public:
  OpCode code() const noexcept { return code_; }
  const Attrs& attrs() const noexcept { return attrs_; }
  /// The extension (code() == kExtension), else nullptr.
  const ExtensionOp* extension() const noexcept { return extension_.get(); }
  const std::shared_ptr<const ExtensionOp>& extension_ptr() const noexcept { return extension_; }
  std::span<const ValueRef> operands() const noexcept { return operands_; }
  std::span<const ValueRef> results() const noexcept { return results_; }
  /// Free-form origin (frontend location, pass that created it); not semantic.
  const std::string& provenance() const noexcept { return provenance_; }

 private:
  friend class ProgramBuilder;
  friend class SemanticProgram;
  friend struct ProgramAccess;
  OpCode code_ = OpCode::kConstant;
  Attrs attrs_;
  std::shared_ptr<const ExtensionOp> extension_;
  std::vector<ValueRef> operands_;
  std::vector<ValueRef> results_;
  std::string provenance_;
};

/// A shape guard: `lhs == rhs` (equality) or `lhs <= rhs`, checked before execution.
struct ShapeGuard {
  Extent lhs, rhs;
  bool equality = true;
  std::string constraint;  ///< the constraint id that created it, e.g. "add_c2"
};

/// A program input: an argument supplied per run, or a binding (a captured tensor or
/// default held in ProgramBindings, never in the program).
struct InputInfo {
  ValueRef value;
  std::string name;  ///< not semantic
  bool binding = false;
};

/// 128-bit structural fingerprint (XXH3-128). Process-local: no stability across
/// versions is promised.
struct Fingerprint {
  uint64_t high = 0, low = 0;
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
  std::string to_string() const;  ///< 32 lowercase hex digits
};

/// A frozen semantic program: ops in SSA order over typed values, inputs, outputs,
/// symbols, guards. Immutable after ProgramBuilder::finish; thread-safe to share.
class SemanticProgram {
 public:
  std::span<const InputInfo> inputs() const noexcept { return inputs_; }
  std::span<const ValueRef> outputs() const noexcept { return outputs_; }
  std::span<const Operation> ops() const noexcept { return ops_; }
  std::span<const SymbolInfo> symbols() const noexcept { return symbols_; }
  std::span<const ShapeGuard> guards() const noexcept { return guards_; }
  /// Type of a value of this program (precondition: `v` came from this program).
  const ValueType& type(ValueRef v) const noexcept { return types_[static_cast<size_t>(v.index_)]; }
  size_t value_count() const noexcept { return types_.size(); }
  /// Computed once at freeze.
  const Fingerprint& fingerprint() const noexcept { return fingerprint_; }
  /// Approximate bytes held by this program (for cache statistics).
  int64_t footprint_bytes() const noexcept { return footprint_; }
  /// Exact structural equality: the same semantics (ops, attributes, extension payloads,
  /// effects, aliases, types, symbol bounds, guards, input roles, output order), ignoring
  /// provenance, input and symbol names. Used inside a fingerprint collision bucket.
  bool structurally_equal(const SemanticProgram& other) const;

  /// Binds the symbols from concrete input shapes (arguments and bindings in input
  /// order) and evaluates every shape guard. Returns the symbol values. Errors
  /// (kPrepare stage): kInvalidArgument (count), kShapeMismatch (an input or guard),
  /// kOutOfRange (a bound).
  Result<std::vector<int64_t>> bind_shapes(std::span<const Shape> input_shapes) const;
  /// Concrete shape of a value under bound symbol values.
  Result<Shape> concrete_shape(ValueRef v, std::span<const int64_t> symbol_values) const;

 private:
  friend class ProgramBuilder;
  friend struct ProgramAccess;
  SemanticProgram() = default;
  std::vector<uint8_t> encode() const;

  std::vector<SymbolInfo> symbols_;
  std::vector<ValueType> types_;
  std::vector<InputInfo> inputs_;
  std::vector<Operation> ops_;
  std::vector<ValueRef> outputs_;
  std::vector<ShapeGuard> guards_;
  std::vector<uint8_t> encoding_;  // encode() at freeze: the fingerprint's bytes, kept for equality
  Fingerprint fingerprint_;
  int64_t footprint_ = 0;
};

/// Tensors of a program's binding inputs, in binding-input order. Process-local; never
/// part of the program or its fingerprint.
struct ProgramBindings {
  std::vector<Tensor> tensors;
};

/// A frozen program plus its bindings (what GraphCompiler produces and runtimes consume).
struct CompiledGraph {
  std::shared_ptr<const SemanticProgram> program;
  ProgramBindings bindings;
};

/// Builds a SemanticProgram. Each builder issues its own value tokens and symbols.
/// Every method validates before it changes anything: a failed call leaves the builder
/// as it was (import and finish included). After a successful finish the builder is
/// spent (kInvalidArgument "finished" on further use). Not thread-safe.
class ProgramBuilder {
 public:
  ProgramBuilder();
  ~ProgramBuilder();
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  /// Declares a symbol (unknown extent, or bounded by `upper_bound`). Errors:
  /// kInvalidArgument (empty or duplicate name, negative bound).
  Result<Extent> symbol(std::string name, std::optional<int64_t> upper_bound = std::nullopt);
  /// max(0, p) as an extent of this builder: exact, p itself, or a derived symbol
  /// (Note [Derived symbols]; reused for an equal definition; a new one is called `name`
  /// when that is a free identifier, else `_z<k>`). Used by the text parser and rebuilds;
  /// inference derives its own. Errors: kInvalidArgument (foreign or undeclared symbols,
  /// `name` not an identifier), kOverflow.
  Result<Extent> max0(const Extent& p, std::string name = {});
  /// Declares an argument input. Each extent is exact (>= 0) or one non-derived symbol
  /// of this builder (constraint input_c1).
  Result<Value> input(ValueType type, std::string name = {});
  /// Declares a binding input holding `tensor` (exact shape; host tensor).
  Result<Value> capture(Tensor tensor, std::string name = {});
  /// Emits a core op (validated by infer_core); returns its result.
  Result<Value> op(OpCode code, std::span<const Value> operands, Attrs attrs = {});
  Result<Value> op(OpCode code, std::initializer_list<Value> operands, Attrs attrs = {}) {
    return op(code, std::span<const Value>(operands.begin(), operands.size()), std::move(attrs));
  }
  /// Emits a scalar or small constant.
  Result<Value> constant(Literal literal);
  /// Emits an extension op; validates its declarations (one alias per output, alias
  /// inputs in range, effect names non-empty) and infers its outputs.
  Result<std::vector<Value>> extension(std::shared_ptr<const ExtensionOp> op, std::span<const Value> operands);
  /// Adds an explicit guard `lhs == rhs` or `lhs <= rhs` (refuted exact guards fail).
  Result<void> guard(const Extent& lhs, const Extent& rhs, bool equality, std::string constraint = "user");
  /// Type of a value of this builder.
  Result<ValueType> type(Value v) const;
  /// Symbols declared so far (for printing extents).
  std::span<const SymbolInfo> symbols() const noexcept;
  /// Provenance attached to ops emitted from now on.
  void set_provenance(std::string provenance);
  /// Inlines `graph` with its argument inputs fed by `arguments` (bindings come along);
  /// returns its outputs. Atomic. Errors: argument count/type mismatch, foreign values.
  Result<std::vector<Value>> import(const CompiledGraph& graph, std::span<const Value> arguments);
  /// Freezes: validates outputs (non-empty list of this builder's values, duplicates
  /// allowed), checks every symbol is bound by an input (program_c1), computes the
  /// fingerprint. Atomic: on error the builder is unchanged and usable.
  Result<CompiledGraph> finish(std::span<const Value> outputs);
  Result<CompiledGraph> finish(std::initializer_list<Value> outputs) {
    return finish(std::span<const Value>(outputs.begin(), outputs.size()));
  }

  /// Lowering mode (ExtensionOp::lower_to_core): extension() is rejected.
  void set_core_only(bool core_only) noexcept;

 private:
  friend struct ProgramBuilderTestHook;
  struct State;
  Result<void> check_usable(const char* op) const;
  Result<int32_t> resolve(Value v, const char* op) const;
  Result<void> resolve_operands(std::span<const Value> operands, const char* op, std::vector<ValueRef>& refs,
                                std::vector<ValueType>& types) const;
  Result<void> step(const char* where);  // failure injection point (tests)
  Value token(int32_t index) const { return Value(id_, index); }

  uint64_t id_;
  std::unique_ptr<State> state_;
  int inject_failure_at_ = -1;  // tests: fail the n-th step of the next import/finish
  int steps_ = 0;
};

/// The symbols and inputs of one graph declared again in another builder (the start of
/// every program-to-program rewrite: compiler passes, AD transforms).
struct ReplayedInputs {
  std::vector<Extent> symbols;  ///< source symbol index -> the target builder's extent
  std::vector<Value> inputs;    ///< one per source input, in input order (invalid if omitted)
  /// `t` with its extents moved into the target builder.
  ValueType translate(const ValueType& t) const;
  /// `e` moved into the target builder.
  Extent translate(const Extent& e) const { return e.substitute(symbols); }
};
/// Declares in `builder` the symbols of `graph` (names, bounds, derived definitions, in
/// order) and its inputs (types, names and roles; binding inputs captured from
/// `graph.bindings`), except the inputs with `omit[i]` (an empty `omit` omits none; a
/// symbol bound only by an omitted input must be bound by a later input of the target
/// builder, else its finish fails with program_c1). Not atomic: on error the builder may hold part of the declarations
/// and should be discarded. Errors: kInvalidArgument (fewer binding tensors than binding
/// inputs), those of ProgramBuilder::symbol/max0/input/capture.
Result<ReplayedInputs> replay_inputs(ProgramBuilder& builder, const CompiledGraph& graph,
                                     const std::vector<bool>& omit = {});

/// Test-only access: make the `n`-th internal step of the next import or finish fail
/// with kInternal, to prove atomicity.
struct ProgramBuilderTestHook {
  static void fail_at_step(ProgramBuilder& b, int n) {
    b.inject_failure_at_ = n;
    b.steps_ = 0;
  }
};

}  // namespace tenferro::program

template <>
struct std::hash<tenferro::program::Value> {
  size_t operator()(const tenferro::program::Value& v) const noexcept { return v.hash(); }
};
template <>
struct std::hash<tenferro::program::ValueRef> {
  size_t operator()(const tenferro::program::ValueRef& v) const noexcept { return v.hash(); }
};
