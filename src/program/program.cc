#include "tenferro/program/program.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>

// Note [xxhash warnings]: with -march=native on an AVX-512 machine GCC 12 reports a
// false -W(maybe-)uninitialized inside its own avx512fintrin.h, inlined through xxhash's
// AVX-512 accumulate loop; the warning is silenced for the header only.
#define XXH_INLINE_ALL
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <xxhash.h>
#pragma GCC diagnostic pop

namespace tenferro::program {

// Note [Builder atomicity]: every builder mutation validates first and then appends.
// The two multi-step mutations, import and finish, run against a copy of the builder
// state (import) or build the frozen program aside (finish) and commit with a move
// that cannot fail, so an error at any step (the test hook injects one at each step in
// turn) leaves the builder exactly as it was.
//
// Note [Program identity]: the fingerprint is XXH3-128 over a canonical encoding of the
// semantic content: symbol bounds (not names), value types, input roles (not names),
// ops with their used attributes, extension family id, payload hash, effects and
// aliases, outputs and guards. Provenance and bindings are excluded. Exact equality
// compares the same encoding (kept from freeze, so a cache lookup encodes nothing) and,
// for extension ops, payload_equal, so a fingerprint collision never merges different
// programs.

namespace {

std::string s(int64_t v) { return std::to_string(v); }

Error builder_error(ErrorCode code, const char* op, std::string msg) {
  return Error(ErrorStage::kCompile, code, op, std::move(msg));
}

uint64_t next_builder_id() {
  // Identity only (like an allocator's address), never semantic state.
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

void put(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_list(std::vector<uint8_t>& out, std::span<const int64_t> v) {
  put(out, v.size());
  for (int64_t x : v) put(out, static_cast<uint64_t>(x));
}
void put_str(std::vector<uint8_t>& out, std::string_view str) {
  put(out, str.size());
  out.insert(out.end(), str.begin(), str.end());
}
void put_shape(std::vector<uint8_t>& out, std::span<const Extent> sh) {
  put(out, sh.size());
  for (const Extent& e : sh) e.encode(out);
}

void encode_attrs(OpCode code, const Attrs& a, std::vector<uint8_t>& out) {
  for (AttrKey k : op_schema(code).keys) {
    out.push_back(static_cast<uint8_t>(k));
    std::visit(
        [&](const auto* f) {
          using F = std::remove_cvref_t<decltype(*f)>;
          if constexpr (std::is_same_v<F, std::vector<int64_t>>) {
            put_list(out, *f);
          } else if constexpr (std::is_same_v<F, std::vector<Extent>>) {
            put_shape(out, *f);
          } else if constexpr (std::is_same_v<F, int64_t>) {
            put(out, static_cast<uint64_t>(*f));
          } else if constexpr (std::is_same_v<F, std::optional<Literal>>) {
            if (*f) {
              out.push_back(static_cast<uint8_t>((*f)->dtype));
              put_list(out, (*f)->shape);
              put(out, (*f)->bytes.size());
              out.insert(out.end(), (*f)->bytes.begin(), (*f)->bytes.end());
            }
          } else {
            out.push_back(static_cast<uint8_t>(*f));  // dtype, direction, reduce kind
          }
        },
        attr_field(a, k));
  }
}

// Keeps only the attribute fields the op's schema uses, so equal semantics give equal
// Attrs (Note [Program identity]).
Attrs canonical_attrs(OpCode code, const Attrs& a) {
  Attrs c;
  for (AttrKey k : op_schema(code).keys) {
    std::visit(
        [&](auto* dst) {
          using F = std::remove_pointer_t<decltype(dst)>;
          *dst = *std::get<const F*>(attr_field(a, k));
        },
        attr_field(c, k));
  }
  return c;
}

bool guard_holds(const Extent& lhs, const Extent& rhs, bool equality) {
  const Extent d = rhs - lhs;
  return d.is_exact() && (equality ? d.exact_value() == 0 : d.exact_value() >= 0);
}
bool guard_refuted(const Extent& lhs, const Extent& rhs, bool equality) {
  const Extent d = rhs - lhs;
  return d.is_exact() && (equality ? d.exact_value() != 0 : d.exact_value() < 0);
}

// Appends a guard unless the same relation is already guarded (the first constraint id
// that asked for it is kept).
void add_guard(std::vector<ShapeGuard>& guards, PendingGuard g) {
  if (g.equality) {
    // Equalities are symmetric: the canonically smaller side goes left, so n == m and
    // m == n are one guard.
    std::vector<uint8_t> el, er;
    g.lhs.encode(el);
    g.rhs.encode(er);
    if (er < el) std::swap(g.lhs, g.rhs);
  }
  for (const ShapeGuard& have : guards) {
    if (have.equality == g.equality && have.lhs == g.lhs && have.rhs == g.rhs) return;
  }
  guards.push_back({std::move(g.lhs), std::move(g.rhs), g.equality, std::move(g.constraint)});
}

}  // namespace

std::string_view alias_kind_name(AliasKind k) noexcept {
  switch (k) {
    case AliasKind::kFresh: return "fresh";
    case AliasKind::kViewOf: return "view_of";
    case AliasKind::kMustAlias: return "must_alias";
    case AliasKind::kExternalAlias: return "external";
  }
  return "?";
}

Result<LoweringOutcome> ExtensionOp::lower_to_core(ProgramBuilder&, std::span<const Value>) const {
  LoweringOutcome o;
  o.kind = LoweringOutcome::Kind::kUnsupported;
  o.reason = std::string("family ").append(family_id()).append(" has no core lowering");
  return o;
}

Result<std::vector<Tensor>> ExtensionOp::evaluate_reference(std::span<const Tensor>) const {
  return Error(ErrorStage::kPrepare, ErrorCode::kUnsupported, std::string(family_id()),
               "no reference evaluation for this extension family");
}

std::shared_ptr<const ExtensionOp> ExtensionOp::prune_outputs(std::span<const bool>) const { return nullptr; }

Result<void> ExtensionRegistry::add(std::string family_id, Parser parser) {
  if (parsers_.count(family_id)) {
    return usage_error(ErrorCode::kInvalidArgument, "ExtensionRegistry::add", "family " + family_id + " is already registered");
  }
  parsers_.emplace(std::move(family_id), std::move(parser));
  return {};
}

const ExtensionRegistry::Parser* ExtensionRegistry::find(std::string_view family_id) const {
  auto it = parsers_.find(family_id);
  return it == parsers_.end() ? nullptr : &it->second;
}

std::string Fingerprint::to_string() const {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buf;
}

// ---- SemanticProgram ---------------------------------------------------------------------------

std::vector<uint8_t> SemanticProgram::encode() const {
  // Canonical value numbering (Note [Program identity]): inputs in input order, then op
  // results in op order, so the builder's interleaving of inputs and ops and the text
  // printer's order give the same encoding.
  std::vector<uint64_t> num(types_.size(), 0);
  uint64_t next = 0;
  for (const InputInfo& in : inputs_) num[static_cast<size_t>(in.value.index_)] = next++;
  for (const Operation& op : ops_) {
    for (ValueRef v : op.results_) num[static_cast<size_t>(v.index_)] = next++;
  }
  auto put_type = [&](std::vector<uint8_t>& out, const ValueType& t) {
    out.push_back(static_cast<uint8_t>(t.dtype));
    put_shape(out, t.shape);
  };
  std::vector<uint8_t> out;
  put(out, symbols_.size());
  for (const SymbolInfo& sym : symbols_) {
    put(out, sym.upper_bound ? static_cast<uint64_t>(*sym.upper_bound) + 1 : 0);
    out.push_back(sym.max0_of ? 1 : 0);
    if (sym.max0_of) sym.max0_of->encode(out);
  }
  put(out, inputs_.size());
  for (const InputInfo& in : inputs_) {
    put_type(out, type(in.value));
    out.push_back(in.binding ? 1 : 0);
  }
  put(out, ops_.size());
  for (const Operation& op : ops_) {
    out.push_back(static_cast<uint8_t>(op.code_));
    if (op.extension_) {
      put_str(out, op.extension_->family_id());
      put(out, op.extension_->payload_hash());
      const auto effects = op.extension_->effects();
      put(out, effects.size());
      for (const Effect& e : effects) {
        put_str(out, e.kind);
        put_str(out, e.name);
        out.push_back(static_cast<uint8_t>(e.access));
      }
      const auto aliases = op.extension_->aliases();
      put(out, aliases.size());
      for (const Alias& a : aliases) {
        out.push_back(static_cast<uint8_t>(a.kind));
        put(out, static_cast<uint64_t>(a.input));
        put_str(out, a.external);
      }
    } else {
      encode_attrs(op.code_, op.attrs_, out);
    }
    put(out, op.operands_.size());
    for (ValueRef v : op.operands_) put(out, num[static_cast<size_t>(v.index_)]);
    put(out, op.results_.size());
    for (ValueRef v : op.results_) put_type(out, type(v));
  }
  put(out, outputs_.size());
  for (ValueRef v : outputs_) put(out, num[static_cast<size_t>(v.index_)]);
  put(out, guards_.size());
  for (const ShapeGuard& g : guards_) {
    g.lhs.encode(out);
    g.rhs.encode(out);
    out.push_back(g.equality ? 1 : 0);
  }
  return out;
}

bool SemanticProgram::structurally_equal(const SemanticProgram& other) const {
  if (this == &other) return true;
  if (ops_.size() != other.ops_.size() || encoding_ != other.encoding_) return false;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const auto& a = ops_[i].extension_;
    const auto& b = other.ops_[i].extension_;
    if (a && b && a != b && !a->payload_equal(*b)) return false;
  }
  return true;
}

Result<std::vector<int64_t>> SemanticProgram::bind_shapes(std::span<const Shape> shapes) const {
  const char* op = "bind_shapes";
  auto fail = [&](ErrorCode code, std::string msg) { return Error(ErrorStage::kPrepare, code, op, std::move(msg)); };
  if (shapes.size() != inputs_.size()) {
    return fail(ErrorCode::kInvalidArgument,
                "program has " + s(static_cast<int64_t>(inputs_.size())) + " inputs, got " + s(static_cast<int64_t>(shapes.size())) + " shapes");
  }
  std::vector<int64_t> values(symbols_.size(), -1);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const ValueType& t = type(inputs_[i].value);
    const Shape& sh = shapes[i];
    if (static_cast<int64_t>(sh.size()) != t.rank()) {
      return fail(ErrorCode::kShapeMismatch, "input " + s(static_cast<int64_t>(i)) + " has rank " + s(static_cast<int64_t>(sh.size())) + ", expected " + s(t.rank()));
    }
    for (size_t d = 0; d < sh.size(); ++d) {
      const Extent& e = t.shape[d];
      if (e.is_exact()) {
        if (e.exact_value() != sh[d]) {
          return fail(ErrorCode::kShapeMismatch, "input " + s(static_cast<int64_t>(i)) + " axis " + s(static_cast<int64_t>(d)) + " is " + s(sh[d]) + ", expected " + s(e.exact_value()));
        }
        continue;
      }
      const int32_t sym = *e.as_symbol();
      int64_t& slot = values[static_cast<size_t>(sym)];
      const SymbolInfo& info = symbols_[static_cast<size_t>(sym)];
      if (slot >= 0 && slot != sh[d]) {
        return fail(ErrorCode::kShapeMismatch, "symbol " + info.name + " is " + s(slot) + " but input " + s(static_cast<int64_t>(i)) + " axis " + s(static_cast<int64_t>(d)) + " is " + s(sh[d]));
      }
      if (info.upper_bound && sh[d] > *info.upper_bound) {
        return fail(ErrorCode::kOutOfRange, "symbol " + info.name + " = " + s(sh[d]) + " exceeds its bound " + s(*info.upper_bound));
      }
      slot = sh[d];
    }
  }
  // Derived symbols, in table order: each mentions earlier symbols only (Note [Derived
  // symbols]).
  for (size_t j = 0; j < symbols_.size(); ++j) {
    if (!symbols_[j].max0_of) continue;
    const auto v = symbols_[j].max0_of->evaluate(values);
    if (!v) {
      return fail(ErrorCode::kOverflow, "derived symbol " + symbols_[j].name + " = max(0, " + symbols_[j].max0_of->to_string(symbols_) + ") overflows int64");
    }
    values[j] = std::max<int64_t>(*v, 0);
  }
  for (const ShapeGuard& g : guards_) {
    const auto l = g.lhs.evaluate(values);
    const auto r = g.rhs.evaluate(values);
    if (!l || !r || (g.equality ? *l != *r : *l > *r)) {
      return fail(ErrorCode::kShapeMismatch,
                  "shape guard " + g.constraint + " failed: " + g.lhs.to_string(symbols_) + (g.equality ? " == " : " <= ") +
                      g.rhs.to_string(symbols_) + " with " + (l ? s(*l) : std::string("overflow")) + " vs " + (r ? s(*r) : std::string("overflow")));
    }
  }
  return values;
}

Result<Shape> SemanticProgram::concrete_shape(ValueRef v, std::span<const int64_t> symbol_values) const {
  Shape out;
  for (const Extent& e : type(v).shape) {
    const auto x = e.evaluate(symbol_values);
    if (!x || *x < 0) return Error(ErrorStage::kPrepare, ErrorCode::kInvalidShape, "concrete_shape", "extent " + e.to_string(symbols_) + " does not evaluate to a valid size");
    out.push_back(*x);
  }
  return out;
}

// ---- ProgramBuilder ----------------------------------------------------------------------------

struct ProgramBuilder::State {
  std::vector<SymbolInfo> symbols;
  std::vector<ValueType> types;
  std::vector<InputInfo> inputs;
  std::vector<Operation> ops;
  std::vector<ShapeGuard> guards;
  std::vector<Tensor> bindings;
  std::string provenance;
  bool core_only = false;
  bool finished = false;
};

ProgramBuilder::ProgramBuilder() : id_(next_builder_id()), state_(std::make_unique<State>()) {}
ProgramBuilder::~ProgramBuilder() = default;

Result<void> ProgramBuilder::check_usable(const char* op) const {
  if (state_->finished) return builder_error(ErrorCode::kInvalidArgument, op, "the builder is finished (finish() consumed it)");
  return {};
}

Result<int32_t> ProgramBuilder::resolve(Value v, const char* op) const {
  if (!v.valid()) return builder_error(ErrorCode::kInvalidArgument, op, "null value token");
  if (v.builder_ != id_) return builder_error(ErrorCode::kInvalidArgument, op, "foreign value: the token belongs to another builder");
  if (static_cast<size_t>(v.index_) >= state_->types.size()) {
    return builder_error(ErrorCode::kInvalidArgument, op, "stale value token (its import was rolled back)");
  }
  return v.index_;
}

Result<void> ProgramBuilder::resolve_operands(std::span<const Value> operands, const char* op, std::vector<ValueRef>& refs,
                                              std::vector<ValueType>& types) const {
  for (Value v : operands) {
    TENFERRO_TRY(int32_t i, resolve(v, op));
    refs.push_back(ValueRef(i));
    types.push_back(state_->types[static_cast<size_t>(i)]);
  }
  return {};
}

Result<void> ProgramBuilder::step(const char* where) {
  if (inject_failure_at_ >= 0 && steps_++ == inject_failure_at_) {
    inject_failure_at_ = -1;
    return builder_error(ErrorCode::kInternal, where, "injected failure (test hook)");
  }
  return {};
}

std::span<const SymbolInfo> ProgramBuilder::symbols() const noexcept { return state_->symbols; }
void ProgramBuilder::set_provenance(std::string provenance) { state_->provenance = std::move(provenance); }
void ProgramBuilder::set_core_only(bool core_only) noexcept { state_->core_only = core_only; }

namespace {
bool is_identifier(const std::string& name) {
  auto valid_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !name.empty() && std::all_of(name.begin(), name.end(), valid_char) && !std::isdigit(static_cast<unsigned char>(name[0]));
}
}  // namespace

Result<Extent> ProgramBuilder::symbol(std::string name, std::optional<int64_t> upper_bound) {
  TENFERRO_TRY_VOID(check_usable("symbol"));
  if (!is_identifier(name)) {
    return builder_error(ErrorCode::kInvalidArgument, "symbol", "symbol name '" + name + "' must be an identifier");
  }
  for (const SymbolInfo& sym : state_->symbols) {
    if (sym.name == name) return builder_error(ErrorCode::kInvalidArgument, "symbol", "symbol " + name + " is already declared");
  }
  if (upper_bound && *upper_bound < 0) {
    return builder_error(ErrorCode::kInvalidArgument, "symbol", "bound " + s(*upper_bound) + " of " + name + " is negative");
  }
  state_->symbols.push_back({std::move(name), upper_bound});
  return Extent::symbol(static_cast<int32_t>(state_->symbols.size() - 1), id_);
}

namespace {
Result<void> check_extent_owner(const Extent& e, uint64_t id, size_t symbol_count, const char* op) {
  if (e.owner() != 0 && e.owner() != id) return builder_error(ErrorCode::kInvalidArgument, op, "extent uses symbols of another builder");
  for (int32_t sym : e.symbols()) {
    if (sym < 0 || static_cast<size_t>(sym) >= symbol_count) return builder_error(ErrorCode::kInvalidArgument, op, "extent uses an undeclared symbol");
  }
  if (e.overflowed()) return builder_error(ErrorCode::kOverflow, op, "extent overflows int64 or exceeds the size cap of shape polynomials");
  return {};
}
}  // namespace

Result<Extent> ProgramBuilder::max0(const Extent& p, std::string name) {
  TENFERRO_TRY_VOID(check_usable("max0"));
  TENFERRO_TRY_VOID(check_extent_owner(p, id_, state_->symbols.size(), "max0"));
  if (!name.empty() && !is_identifier(name)) {
    return builder_error(ErrorCode::kInvalidArgument, "max0", "symbol name '" + name + "' must be an identifier");
  }
  return program::max0(p, state_->symbols, name);
}

Result<Value> ProgramBuilder::input(ValueType type, std::string name) {
  TENFERRO_TRY_VOID(check_usable("input"));
  for (size_t d = 0; d < type.shape.size(); ++d) {
    const Extent& e = type.shape[d];
    TENFERRO_TRY_VOID(check_extent_owner(e, id_, state_->symbols.size(), "input"));
    const auto sym = e.as_symbol();
    if (e.is_exact() ? e.exact_value() < 0 : (!sym || state_->symbols[static_cast<size_t>(*sym)].max0_of)) {
      return builder_error(ErrorCode::kInvalidShape, "input",
                           "input_c1: axis " + s(static_cast<int64_t>(d)) + " extent " + e.to_string(state_->symbols) +
                               " must be an exact size >= 0 or a single (not derived) symbol");
    }
  }
  state_->types.push_back(std::move(type));
  const auto idx = static_cast<int32_t>(state_->types.size() - 1);
  state_->inputs.push_back({ValueRef(idx), std::move(name), false});
  return token(idx);
}

Result<Value> ProgramBuilder::capture(Tensor tensor, std::string name) {
  TENFERRO_TRY_VOID(check_usable("capture"));
  if (!tensor.defined()) return builder_error(ErrorCode::kInvalidArgument, "capture", "null tensor");
  ValueType t{tensor.dtype(), {}};
  for (int64_t e : tensor.shape()) t.shape.push_back(Extent::exact(e));
  state_->types.push_back(std::move(t));
  const auto idx = static_cast<int32_t>(state_->types.size() - 1);
  state_->inputs.push_back({ValueRef(idx), std::move(name), true});
  state_->bindings.push_back(std::move(tensor));
  return token(idx);
}

Result<Value> ProgramBuilder::op(OpCode code, std::span<const Value> operands, Attrs attrs) {
  const char* name = "op";
  TENFERRO_TRY_VOID(check_usable(name));
  if (code == OpCode::kExtension) return builder_error(ErrorCode::kInvalidArgument, name, "use extension() for extension ops");
  std::vector<ValueRef> refs;
  std::vector<ValueType> types;
  TENFERRO_TRY_VOID(resolve_operands(operands, name, refs, types));
  for (const Extent& e : attrs.shape) TENFERRO_TRY_VOID(check_extent_owner(e, id_, state_->symbols.size(), name));
  Attrs canon = canonical_attrs(code, attrs);
  std::vector<PendingGuard> pending;
  TENFERRO_TRY(ValueType result, infer_core(code, canon, types, state_->symbols, pending));
  State& st = *state_;
  for (PendingGuard& g : pending) add_guard(st.guards, std::move(g));
  st.types.push_back(std::move(result));
  const auto idx = static_cast<int32_t>(st.types.size() - 1);
  Operation o;
  o.code_ = code;
  o.attrs_ = std::move(canon);
  o.operands_ = std::move(refs);
  o.results_ = {ValueRef(idx)};
  o.provenance_ = st.provenance;
  st.ops.push_back(std::move(o));
  return token(idx);
}

Result<Value> ProgramBuilder::constant(Literal literal) {
  Attrs a;
  a.literal = std::move(literal);
  return op(OpCode::kConstant, std::span<const Value>(), std::move(a));
}

Result<std::vector<Value>> ProgramBuilder::extension(std::shared_ptr<const ExtensionOp> ext, std::span<const Value> operands) {
  const char* name = "extension";
  TENFERRO_TRY_VOID(check_usable(name));
  if (state_->core_only) return builder_error(ErrorCode::kInvalidArgument, name, "lowering may emit core ops only");
  if (!ext) return builder_error(ErrorCode::kInvalidArgument, name, "null extension op");
  const std::string fam(ext->family_id());
  if (fam.empty()) return builder_error(ErrorCode::kInvalidArgument, name, "extension_c1: empty family id");
  std::vector<ValueRef> refs;
  std::vector<ValueType> types;
  TENFERRO_TRY_VOID(resolve_operands(operands, name, refs, types));
  std::vector<PendingGuard> pending;
  TENFERRO_TRY(auto outs, ext->infer(types, state_->symbols, pending));
  const auto aliases = ext->aliases();
  if (aliases.size() != outs.size()) {
    return builder_error(ErrorCode::kInvalidArgument, name,
                         "extension_c2: " + fam + " declares " + s(static_cast<int64_t>(aliases.size())) + " aliases for " + s(static_cast<int64_t>(outs.size())) + " outputs");
  }
  for (const Alias& a : aliases) {
    const bool needs_input = a.kind == AliasKind::kViewOf || a.kind == AliasKind::kMustAlias;
    if (needs_input && (a.input < 0 || static_cast<size_t>(a.input) >= operands.size())) {
      return builder_error(ErrorCode::kInvalidArgument, name, "extension_c3: " + fam + " alias refers to input " + s(a.input) + " of " + s(static_cast<int64_t>(operands.size())));
    }
    if (a.kind == AliasKind::kExternalAlias && a.external.empty()) {
      return builder_error(ErrorCode::kInvalidArgument, name, "extension_c3: " + fam + " external alias without a name");
    }
  }
  for (const Effect& e : ext->effects()) {
    if (e.kind.empty() || e.name.empty()) {
      return builder_error(ErrorCode::kInvalidArgument, name, "extension_c4: " + fam + " declares an effect without a resource kind or name");
    }
  }
  for (const ValueType& t : outs) {
    for (const Extent& e : t.shape) {
      TENFERRO_TRY_VOID(check_extent_owner(e, id_, state_->symbols.size(), name));
      if (e.is_exact() && e.exact_value() < 0) return builder_error(ErrorCode::kInvalidShape, name, "extension_c5: " + fam + " inferred a negative extent");
    }
  }
  State& st = *state_;
  for (PendingGuard& g : pending) add_guard(st.guards, std::move(g));
  Operation o;
  o.code_ = OpCode::kExtension;
  o.extension_ = std::move(ext);
  o.operands_ = std::move(refs);
  std::vector<Value> result;
  for (ValueType& t : outs) {
    st.types.push_back(std::move(t));
    const auto idx = static_cast<int32_t>(st.types.size() - 1);
    o.results_.push_back(ValueRef(idx));
    result.push_back(token(idx));
  }
  o.provenance_ = st.provenance;
  st.ops.push_back(std::move(o));
  return result;
}

Result<void> ProgramBuilder::guard(const Extent& lhs, const Extent& rhs, bool equality, std::string constraint) {
  TENFERRO_TRY_VOID(check_usable("guard"));
  TENFERRO_TRY_VOID(check_extent_owner(lhs, id_, state_->symbols.size(), "guard"));
  TENFERRO_TRY_VOID(check_extent_owner(rhs, id_, state_->symbols.size(), "guard"));
  if (guard_refuted(lhs, rhs, equality)) {
    return builder_error(ErrorCode::kShapeMismatch, "guard", "guard " + constraint + " can never hold: " + lhs.to_string(state_->symbols) + (equality ? " == " : " <= ") + rhs.to_string(state_->symbols));
  }
  if (!guard_holds(lhs, rhs, equality)) add_guard(state_->guards, PendingGuard{lhs, rhs, equality, std::move(constraint)});
  return {};
}

Result<ValueType> ProgramBuilder::type(Value v) const {
  TENFERRO_TRY(int32_t i, resolve(v, "type"));
  return state_->types[static_cast<size_t>(i)];
}


Result<std::vector<Value>> ProgramBuilder::import(const CompiledGraph& graph, std::span<const Value> arguments) {
  const char* name = "import";
  TENFERRO_TRY_VOID(check_usable(name));
  if (!graph.program) return builder_error(ErrorCode::kInvalidArgument, name, "null program");
  const SemanticProgram& p = *graph.program;
  size_t n_args = 0, n_bind = 0;
  for (const InputInfo& in : p.inputs()) (in.binding ? n_bind : n_args)++;
  if (arguments.size() != n_args) {
    return builder_error(ErrorCode::kInvalidArgument, name, "program has " + s(static_cast<int64_t>(n_args)) + " argument inputs, got " + s(static_cast<int64_t>(arguments.size())));
  }
  if (graph.bindings.tensors.size() != n_bind) {
    return builder_error(ErrorCode::kInvalidArgument, name, "program has " + s(static_cast<int64_t>(n_bind)) + " binding inputs but the graph carries " + s(static_cast<int64_t>(graph.bindings.tensors.size())) + " tensors");
  }
  std::vector<int32_t> arg_index;
  for (Value v : arguments) {
    TENFERRO_TRY(int32_t i, resolve(v, name));
    arg_index.push_back(i);
  }
  // Note [Builder atomicity]: work on a copy, commit by move.
  auto staged = std::make_unique<State>(*state_);
  std::swap(staged, state_);  // state_ is the copy; staged holds the original
  auto rollback = [&](Error e) -> Result<std::vector<Value>> {
    std::swap(staged, state_);
    return e;
  };
  // Symbols of the imported program map to extents of this builder, bound by the inputs.
  std::vector<std::optional<Extent>> sym_map(p.symbols().size());
  std::vector<int32_t> value_map(p.value_count(), -1);
  size_t next_arg = 0, next_bind = 0;
  for (const InputInfo& in : p.inputs()) {
    if (auto r = step(name); !r) return rollback(r.error());
    const ValueType& t = p.type(in.value);
    int32_t mine;
    if (in.binding) {
      auto c = capture(graph.bindings.tensors[next_bind++], in.name);
      if (!c) return rollback(c.error());
      mine = c->index_;
    } else {
      mine = arg_index[next_arg++];
    }
    const ValueType& have = state_->types[static_cast<size_t>(mine)];
    if (have.dtype != t.dtype || have.rank() != t.rank()) {
      return rollback(builder_error(ErrorCode::kShapeMismatch, name, "import_c1: argument for input '" + in.name + "' has dtype/rank " + std::string(dtype_name(have.dtype)) + "/" + s(have.rank()) + ", expected " + std::string(dtype_name(t.dtype)) + "/" + s(t.rank())));
    }
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const Extent& want = t.shape[d];
      Extent target;
      if (auto sym = want.as_symbol()) {
        auto& slot = sym_map[static_cast<size_t>(*sym)];
        if (!slot) {
          slot = have.shape[d];
          const auto& bound = p.symbols()[static_cast<size_t>(*sym)].upper_bound;
          if (bound) {
            if (auto r = guard(have.shape[d], Extent::exact(*bound), false, "import_c2"); !r) return rollback(r.error());
          }
          continue;
        }
        target = *slot;
      } else {
        target = want;
      }
      if (auto r = guard(have.shape[d], target, true, "import_c1"); !r) return rollback(r.error());
    }
    value_map[static_cast<size_t>(in.value.index_)] = mine;
  }
  std::vector<Extent> smap;
  for (size_t j = 0; j < sym_map.size(); ++j) {
    const auto& def = p.symbols()[j].max0_of;
    if (!def) {
      smap.push_back(sym_map[j] ? *sym_map[j] : Extent::exact(0));
      continue;
    }
    auto z = max0(def->substitute(smap));  // mentions earlier symbols only
    if (!z) return rollback(z.error());
    smap.push_back(std::move(*z));
  }
  for (const ShapeGuard& g : p.guards()) {
    if (auto r = guard(g.lhs.substitute(smap), g.rhs.substitute(smap), g.equality, g.constraint); !r) return rollback(r.error());
  }
  for (const Operation& o : p.ops()) {
    if (auto r = step(name); !r) return rollback(r.error());
    std::vector<Value> ins;
    for (ValueRef v : o.operands()) ins.push_back(token(value_map[static_cast<size_t>(v.index_)]));
    const std::string saved = state_->provenance;
    state_->provenance = o.provenance();
    if (o.code() == OpCode::kExtension) {
      auto r = extension(o.extension_ptr(), ins);
      state_->provenance = saved;
      if (!r) return rollback(r.error());
      for (size_t k = 0; k < r->size(); ++k) value_map[static_cast<size_t>(o.results()[k].index_)] = (*r)[k].index_;
    } else {
      Attrs a = o.attrs();
      for (Extent& e : a.shape) e = e.substitute(smap);
      auto r = op(o.code(), ins, std::move(a));
      state_->provenance = saved;
      if (!r) return rollback(r.error());
      value_map[static_cast<size_t>(o.results()[0].index_)] = r->index_;
    }
  }
  std::vector<Value> outs;
  for (ValueRef v : p.outputs()) outs.push_back(token(value_map[static_cast<size_t>(v.index_)]));
  if (auto r = step(name); !r) return rollback(r.error());
  return outs;  // commit: state_ keeps the staged copy, the original is dropped
}

Result<CompiledGraph> ProgramBuilder::finish(std::span<const Value> outputs) {
  const char* name = "finish";
  TENFERRO_TRY_VOID(check_usable(name));
  if (outputs.empty()) return builder_error(ErrorCode::kInvalidArgument, name, "program_c2: a program needs at least one output");
  std::vector<ValueRef> outs;
  for (Value v : outputs) {
    TENFERRO_TRY(int32_t i, resolve(v, name));
    outs.push_back(ValueRef(i));
  }
  TENFERRO_TRY_VOID(step(name));
  // program_c1: every symbol is bound by an input extent.
  const State& st = *state_;
  std::vector<bool> bound(st.symbols.size(), false);
  for (size_t i = 0; i < bound.size(); ++i) bound[i] = st.symbols[i].max0_of.has_value();
  for (const InputInfo& in : st.inputs) {
    for (const Extent& e : st.types[static_cast<size_t>(in.value.index_)].shape) {
      if (auto sym = e.as_symbol()) bound[static_cast<size_t>(*sym)] = true;
    }
  }
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i]) return builder_error(ErrorCode::kInvalidArgument, name, "program_c1: symbol " + st.symbols[i].name + " is not the extent of any input axis");
  }
  // Note [Builder atomicity]: the state moves into the program (no copy); if a later
  // step fails it moves back, so the builder is unchanged.
  auto prog = std::shared_ptr<SemanticProgram>(new SemanticProgram());
  State& ms = *state_;
  auto move_in = [&] {
    prog->symbols_ = std::move(ms.symbols);
    prog->types_ = std::move(ms.types);
    prog->inputs_ = std::move(ms.inputs);
    prog->ops_ = std::move(ms.ops);
    prog->guards_ = std::move(ms.guards);
  };
  auto move_back = [&](Error e) -> Result<CompiledGraph> {
    ms.symbols = std::move(prog->symbols_);
    ms.types = std::move(prog->types_);
    ms.inputs = std::move(prog->inputs_);
    ms.ops = std::move(prog->ops_);
    ms.guards = std::move(prog->guards_);
    return e;
  };
  move_in();
  prog->outputs_ = std::move(outs);
  if (auto r = step(name); !r) return move_back(r.error());
  prog->encoding_ = prog->encode();
  const std::vector<uint8_t>& bytes = prog->encoding_;
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  prog->fingerprint_ = Fingerprint{h.high64, h.low64};
  prog->footprint_ = static_cast<int64_t>(sizeof(SemanticProgram) + bytes.size() +
                                          prog->ops_.size() * sizeof(Operation) + prog->types_.size() * sizeof(ValueType));
  if (auto r = step(name); !r) return move_back(r.error());
  CompiledGraph g;
  g.bindings.tensors = std::move(ms.bindings);
  g.program = std::move(prog);
  ms.finished = true;
  return g;
}

ValueType ReplayedInputs::translate(const ValueType& t) const {
  ValueType out{t.dtype, {}};
  out.shape.reserve(t.shape.size());
  for (const Extent& e : t.shape) out.shape.push_back(e.substitute(symbols));
  return out;
}

Result<ReplayedInputs> replay_inputs(ProgramBuilder& builder, const CompiledGraph& graph, const std::vector<bool>& omit) {
  const SemanticProgram& p = *graph.program;
  ReplayedInputs r;
  for (const SymbolInfo& sym : p.symbols()) {  // derived ones mention earlier symbols only
    TENFERRO_TRY(Extent e, sym.max0_of ? builder.max0(sym.max0_of->substitute(r.symbols), sym.name)
                                       : builder.symbol(sym.name, sym.upper_bound));
    r.symbols.push_back(std::move(e));
  }
  size_t nb = 0;
  for (size_t i = 0; i < p.inputs().size(); ++i) {
    const InputInfo& in = p.inputs()[i];
    Value v;
    if (i < omit.size() && omit[i]) {
      nb += in.binding ? 1 : 0;
    } else if (in.binding) {
      if (nb >= graph.bindings.tensors.size()) {
        return Error(ErrorStage::kCompile, ErrorCode::kInvalidArgument, "replay_inputs",
                     "graph has " + std::to_string(graph.bindings.tensors.size()) +
                         " binding tensors, fewer than its binding inputs");
      }
      TENFERRO_TRY(v, builder.capture(graph.bindings.tensors[nb++], in.name));
    } else {
      TENFERRO_TRY(v, builder.input(r.translate(p.type(in.value)), in.name));
    }
    r.inputs.push_back(v);
  }
  return r;
}

}  // namespace tenferro::program
