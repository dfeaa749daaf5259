#include "tenferro/compiler/compiler.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "tenferro/program/text.h"

namespace tenferro::compiler {

// Note [Compiler pipeline]: compilation is a fixed sequence of rewrites, each one a
// rebuild of the program through a fresh ProgramBuilder (so every intermediate program
// is validated and frozen, and a pass can never leave a half-rewritten program):
//   1. normalize      commutative operands in definition order (helps CSE)
//   2. infer          re-derive every type and shape guard from the ops
//   3. effects        effect/alias analysis: effectful ops are pinned; an in-place
//                     (must_alias) input that is used afterwards is rejected (effects_c1)
//      custom SemanticTransforms, in the order given
//   4. canonicalize   identity removal, transpose/reshape/broadcast/reverse folding and
//                     exact algebraic simplifications (Note [Exact simplifications]);
//      cse            merges pure ops with equal code, attributes and operands
//      dce            drops ops whose results are unused, never effectful ones
//                     (4 repeats until nothing changes, at most 4 rounds)
//   5. prune          extension ops with unused outputs are replaced by their
//                     prune_outputs() form, then dce once more
//   6. validate       the signature (inputs, output types) is unchanged; freeze computes
//                     the fingerprint.
// Every pass is deterministic: it walks ops in program order and uses ordered maps.
//
// Note [Exact simplifications]: a rewrite is applied only when it gives bit-identical
// results for every input, NaN and signed zero included: x*1 and x/1 for real and
// integer x (not complex: (a+bi)(1+0i) computes b*0, which is NaN for infinite b),
// x-(+0) and x+(-0) for floats, x+0 and x-0 for integers, neg(neg x), conj(conj x),
// conj/real of a real value, select(p, x, x). A rewrite also needs the replacement's
// type to equal the result type exactly (symbolic extents included).

using program::Attrs;
using program::Literal;
using program::OpCode;
using program::Operation;
using program::ProgramBuilder;
using program::SemanticProgram;
using program::ValueRef;

namespace {

std::string s(int64_t v) { return std::to_string(v); }

Error compile_error(ErrorCode code, std::string op, std::string msg) {
  return Error(ErrorStage::kCompile, code, std::move(op), std::move(msg));
}

bool effectful(const Operation& op) {
  const ExtensionOp* e = op.extension();
  if (!e) return false;
  if (!e->effects().empty()) return true;
  for (const auto& a : e->aliases()) {
    if (a.kind == program::AliasKind::kMustAlias || a.kind == program::AliasKind::kExternalAlias) return true;
  }
  return false;
}

// Print numbering of a program's values (inputs first, then op results), for messages.
std::unordered_map<ValueRef, int64_t> numbering(const SemanticProgram& p) {
  std::unordered_map<ValueRef, int64_t> num;
  int64_t next = 0;
  for (const auto& in : p.inputs()) num[in.value] = next++;
  for (const Operation& op : p.ops()) {
    for (ValueRef r : op.results()) num[r] = next++;
  }
  return num;
}

std::string op_label(const Operation& op, const std::unordered_map<ValueRef, int64_t>& num) {
  std::string out;
  for (ValueRef r : op.results()) out.append(out.empty() ? "%" : ", %").append(s(num.at(r)));
  out.append(" = ").append(op.extension() ? std::string("extension ").append(op.extension()->family_id())
                                          : std::string(program::op_name(op.code())));
  return out;
}

// Rebuilds a program op by op into a fresh builder (Note [Compiler pipeline]).
class Rewriter {
 public:
  explicit Rewriter(const CompiledGraph& src) : src_(src), p_(*src.program), num_(numbering(p_)) {}

  Result<void> begin() {
    TENFERRO_TRY(program::ReplayedInputs r, program::replay_inputs(b_, src_));
    for (size_t i = 0; i < r.inputs.size(); ++i) map_[p_.inputs()[i].value] = r.inputs[i];
    smap_ = std::move(r.symbols);
    return {};
  }

  const SemanticProgram& source() const { return p_; }
  ProgramBuilder& builder() { return b_; }
  const std::unordered_map<ValueRef, int64_t>& num() const { return num_; }
  std::string label(const Operation& op) const { return op_label(op, num_); }
  std::string ref(ValueRef v) const { return "%" + s(num_.at(v)); }

  ValueType translate(const ValueType& t) const {
    ValueType out{t.dtype, {}};
    for (const Extent& e : t.shape) out.shape.push_back(e.substitute(smap_));
    return out;
  }
  Attrs translate(Attrs a) const {
    for (Extent& e : a.shape) e = e.substitute(smap_);
    return a;
  }
  Value get(ValueRef v) const { return map_.at(v); }
  void set(ValueRef v, Value nv) { map_[v] = nv; }
  std::vector<Value> operands(const Operation& op) const {
    std::vector<Value> out;
    for (ValueRef v : op.operands()) out.push_back(get(v));
    return out;
  }
  ValueType type(Value v) const { return b_.type(v).value(); }

  // Emits a core op with the provenance of `origin`; records its definition.
  Result<Value> emit(const Operation& origin, OpCode code, std::vector<Value> ins, Attrs translated_attrs) {
    b_.set_provenance(origin.provenance());
    TENFERRO_TRY(Value v, b_.op(code, ins, translated_attrs));
    defs_[v] = Def{code, std::move(translated_attrs), std::move(ins)};
    return v;
  }
  // Re-emits `op` unchanged (operands mapped).
  Result<void> copy(const Operation& op) {
    std::vector<Value> ins = operands(op);
    if (op.code() == OpCode::kExtension) {
      b_.set_provenance(op.provenance());
      TENFERRO_TRY(auto outs, b_.extension(op.extension_ptr(), ins));
      for (size_t k = 0; k < outs.size(); ++k) set(op.results()[k], outs[k]);
      return {};
    }
    TENFERRO_TRY(Value v, emit(op, op.code(), std::move(ins), translate(op.attrs())));
    set(op.results()[0], v);
    return {};
  }

  struct Def {
    OpCode code;
    Attrs attrs;
    std::vector<Value> operands;
  };
  const Def* def(Value v) const {
    auto it = defs_.find(v);
    return it == defs_.end() ? nullptr : &it->second;
  }

  Result<CompiledGraph> finish() {
    for (const auto& g : p_.guards()) {
      TENFERRO_TRY_VOID(b_.guard(g.lhs.substitute(smap_), g.rhs.substitute(smap_), g.equality, g.constraint));
    }
    std::vector<Value> outs;
    for (ValueRef v : p_.outputs()) outs.push_back(get(v));
    b_.set_provenance({});
    return b_.finish(outs);
  }

 private:
  const CompiledGraph& src_;
  const SemanticProgram& p_;
  std::unordered_map<ValueRef, int64_t> num_;
  ProgramBuilder b_;
  std::vector<Extent> smap_;
  std::unordered_map<ValueRef, Value> map_;
  std::unordered_map<Value, Def> defs_;
};

// ---- passes -----------------------------------------------------------------------------------

bool commutative(const Operation& op) {
  switch (op.code()) {
    case OpCode::kAdd:
    case OpCode::kMul:
    case OpCode::kMax:
    case OpCode::kMin: return true;
    case OpCode::kCompare:
      return op.attrs().direction == program::CompareDirection::kEq || op.attrs().direction == program::CompareDirection::kNe;
    default: return false;
  }
}

Result<PassResult> pass_normalize(const CompiledGraph& g) {
  // The rebuilt values are numbered like `numbering` (inputs, then op results), so the
  // source numbering tells whether any operands would swap (Note [Unchanged passes]).
  {
    const auto num = numbering(*g.program);
    const auto ops = g.program->ops();
    if (std::none_of(ops.begin(), ops.end(), [&](const Operation& op) {
          return commutative(op) && num.at(op.operands()[1]) < num.at(op.operands()[0]);
        })) {
      return PassResult{g, {}};
    }
  }
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  for (const Operation& op : g.program->ops()) {
    if (commutative(op)) {
      std::vector<Value> ins = rw.operands(op);
      if (ins[1] < ins[0]) {
        std::swap(ins[0], ins[1]);
        res.changes.push_back(rw.label(op) + ": operands put in definition order");
      }
      TENFERRO_TRY(Value v, rw.emit(op, op.code(), std::move(ins), rw.translate(op.attrs())));
      rw.set(op.results()[0], v);
      continue;
    }
    TENFERRO_TRY_VOID(rw.copy(op));
  }
  TENFERRO_TRY(res.graph, rw.finish());
  return res;
}

Result<PassResult> pass_infer(const CompiledGraph& g) {
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  for (const Operation& op : g.program->ops()) TENFERRO_TRY_VOID(rw.copy(op));
  TENFERRO_TRY(res.graph, rw.finish());
  const size_t before = g.program->guards().size(), after = res.graph.program->guards().size();
  if (before != after) res.changes.push_back("guards: " + s(static_cast<int64_t>(before)) + " -> " + s(static_cast<int64_t>(after)));
  return res;
}

Result<PassResult> pass_effects(const CompiledGraph& g) {
  const SemanticProgram& p = *g.program;
  const auto num = numbering(p);
  PassResult res;
  const auto ops = p.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    const ExtensionOp* e = op.extension();
    if (!e) continue;
    for (const auto& eff : e->effects()) {
      res.changes.push_back(op_label(op, num) + ": " + (eff.access == program::EffectAccess::kRead ? "reads " : "writes ") + eff.kind + ":" + eff.name + " (pinned)");
    }
    const auto aliases = e->aliases();
    for (size_t k = 0; k < aliases.size(); ++k) {
      if (aliases[k].kind != program::AliasKind::kMustAlias) continue;
      const ValueRef target = op.operands()[static_cast<size_t>(aliases[k].input)];
      bool used_later = std::find(p.outputs().begin(), p.outputs().end(), target) != p.outputs().end();
      for (size_t j = i + 1; j < ops.size() && !used_later; ++j) {
        used_later = std::find(ops[j].operands().begin(), ops[j].operands().end(), target) != ops[j].operands().end();
      }
      if (used_later) {
        return compile_error(ErrorCode::kUnsupported, "compile",
                             "effects_c1: " + op_label(op, num) + " updates %" + s(num.at(target)) +
                                 " in place (must_alias) but it is used afterwards; functionalize the program first");
      }
      res.changes.push_back(op_label(op, num) + ": result " + s(static_cast<int64_t>(k)) + " updates %" + s(num.at(target)) + " in place (pinned)");
    }
  }
  res.graph = g;
  return res;
}

// The value every element of `v` has, when `v` is a splat constant (a literal with all
// elements equal, possibly broadcast); the literal's first element bytes.
std::optional<Literal> splat(const Rewriter& rw, Value v) {
  for (int depth = 0; depth < 8; ++depth) {
    const Rewriter::Def* d = rw.def(v);
    if (!d) return std::nullopt;
    if (d->code == OpCode::kBroadcastInDim) {
      v = d->operands[0];
      continue;
    }
    if (d->code != OpCode::kConstant || !d->attrs.literal) return std::nullopt;
    const Literal& l = *d->attrs.literal;
    const int64_t n = l.element_count();
    if (n == 0) return std::nullopt;
    const auto es = static_cast<size_t>(dtype_size(l.dtype));
    for (int64_t i = 1; i < n; ++i) {
      if (std::memcmp(l.bytes.data(), l.bytes.data() + static_cast<size_t>(i) * es, es) != 0) return std::nullopt;
    }
    Literal one = l;
    one.shape = {};
    one.bytes.resize(es);
    return one;
  }
  return std::nullopt;
}

// Exact value tests on a one-element literal.
bool is_one(const Literal& l) {
  const c128 v = l.element_as_c128(0);
  return v == c128(1, 0);
}
bool is_zero(const Literal& l, bool negative) {
  switch (l.dtype) {
    case DType::kI32:
    case DType::kI64: return l.element_as_c128(0) == c128(0, 0);
    case DType::kF32: {
      float f;
      std::memcpy(&f, l.bytes.data(), 4);
      return f == 0.0f && std::signbit(f) == negative;
    }
    case DType::kF64: {
      double d;
      std::memcpy(&d, l.bytes.data(), 8);
      return d == 0.0 && std::signbit(d) == negative;
    }
    default: return false;
  }
}

Result<PassResult> pass_canonicalize(const CompiledGraph& g) {
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  for (const Operation& op : g.program->ops()) {
    if (op.code() == OpCode::kExtension) {
      TENFERRO_TRY_VOID(rw.copy(op));
      continue;
    }
    const ValueType out_t = rw.translate(g.program->type(op.results()[0]));
    std::vector<Value> ins = rw.operands(op);
    Attrs a = rw.translate(op.attrs());
    auto replace = [&](Value v, const std::string& why) -> bool {
      if (!(rw.type(v) == out_t)) return false;
      rw.set(op.results()[0], v);
      res.changes.push_back(rw.label(op) + ": " + why);
      return true;
    };
    auto identity = [](const std::vector<int64_t>& dims) {
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] != static_cast<int64_t>(i)) return false;
      }
      return true;
    };
    const Rewriter::Def* d0 = ins.empty() ? nullptr : rw.def(ins[0]);
    bool done = false;
    switch (op.code()) {
      case OpCode::kTranspose:
        if (identity(a.dims)) {
          done = replace(ins[0], "identity permutation removed");
        } else if (d0 && d0->code == OpCode::kTranspose) {
          std::vector<int64_t> q;
          for (int64_t p : a.dims) q.push_back(d0->attrs.dims[static_cast<size_t>(p)]);
          if (identity(q)) {
            done = replace(d0->operands[0], "transpose of a transpose cancels");
          } else {
            TENFERRO_TRY(Value v, rw.emit(op, OpCode::kTranspose, {d0->operands[0]}, Attrs{.dims = q}));
            done = replace(v, "folded into one transpose");
          }
        }
        break;
      case OpCode::kReshape:
        if (rw.type(ins[0]) == out_t) {
          done = replace(ins[0], "reshape to the same shape removed");
        } else if (d0 && d0->code == OpCode::kReshape) {
          if (rw.type(d0->operands[0]) == out_t) {
            done = replace(d0->operands[0], "reshape of a reshape back to the source shape removed");
          } else {
            TENFERRO_TRY(Value v, rw.emit(op, OpCode::kReshape, {d0->operands[0]}, a));
            done = replace(v, "folded into one reshape");
          }
        }
        break;
      case OpCode::kConvert:
        if (rw.type(ins[0]).dtype == a.dtype) done = replace(ins[0], "convert to the same dtype removed");
        break;
      case OpCode::kBroadcastInDim:
        if (identity(a.dims) && rw.type(ins[0]) == out_t) {
          done = replace(ins[0], "identity broadcast removed");
        } else if (d0 && d0->code == OpCode::kBroadcastInDim) {
          std::vector<int64_t> dims;
          for (int64_t dd : d0->attrs.dims) dims.push_back(a.dims[static_cast<size_t>(dd)]);
          TENFERRO_TRY(Value v, rw.emit(op, OpCode::kBroadcastInDim, {d0->operands[0]}, Attrs{.dims = dims, .shape = a.shape}));
          done = replace(v, "folded into one broadcast_in_dim");
        }
        break;
      case OpCode::kReverse:
        if (a.dims.empty()) {
          done = replace(ins[0], "reverse of no axes removed");
        } else if (d0 && d0->code == OpCode::kReverse) {
          auto x = a.dims, y = d0->attrs.dims;
          std::sort(x.begin(), x.end());
          std::sort(y.begin(), y.end());
          if (x == y) done = replace(d0->operands[0], "reverse of a reverse cancels");
        }
        break;
      case OpCode::kSlice: {
        const ValueType t = rw.type(ins[0]);
        bool full = true;
        for (size_t i = 0; i < t.shape.size(); ++i) {
          full = full && a.start[i] == 0 && a.stride[i] == 1 && t.shape[i] == Extent::exact(a.limit[i]);
        }
        if (full) done = replace(ins[0], "full slice removed");
        break;
      }
      case OpCode::kDynamicSlice: {
        const ValueType t = rw.type(ins[0]);
        bool full = true;
        for (size_t i = 0; i < t.shape.size(); ++i) full = full && t.shape[i] == Extent::exact(a.sizes[i]);
        if (full) done = replace(ins[0], "full dynamic_slice removed (starts clamp to 0)");
        break;
      }
      case OpCode::kReduce:
        if (a.dims.empty()) done = replace(ins[0], "reduce over no axes removed");
        break;
      case OpCode::kConcatenate:
        if (ins.size() == 1) done = replace(ins[0], "concatenate of one operand removed");
        break;
      case OpCode::kPad: {
        bool zero = true;
        for (size_t i = 0; i < a.low.size(); ++i) zero = zero && a.low[i] == 0 && a.high[i] == 0 && a.interior[i] == 0;
        if (zero) done = replace(ins[0], "zero padding removed");
        break;
      }
      case OpCode::kNeg:
        if (d0 && d0->code == OpCode::kNeg) done = replace(d0->operands[0], "neg(neg x) = x");
        break;
      case OpCode::kConj:
        if (!is_complex(rw.type(ins[0]).dtype)) {
          done = replace(ins[0], "conj of a real value removed");
        } else if (d0 && d0->code == OpCode::kConj) {
          done = replace(d0->operands[0], "conj(conj x) = x");
        }
        break;
      case OpCode::kReal:
        if (!is_complex(rw.type(ins[0]).dtype)) done = replace(ins[0], "real of a real value removed");
        break;
      case OpCode::kSelect:
        if (ins[1] == ins[2]) done = replace(ins[1], "select between equal values removed");
        break;
      case OpCode::kMul:
      case OpCode::kDiv:
      case OpCode::kAdd:
      case OpCode::kSub: {
        const DType dt = out_t.dtype;
        if (is_complex(dt)) break;
        const auto r = splat(rw, ins[1]);
        const auto l = splat(rw, ins[0]);
        if (op.code() == OpCode::kMul) {
          if (r && is_one(*r)) done = replace(ins[0], "x * 1 = x");
          if (!done && l && is_one(*l)) done = replace(ins[1], "1 * x = x");
        } else if (op.code() == OpCode::kDiv) {
          if (r && is_one(*r)) done = replace(ins[0], "x / 1 = x");
        } else if (op.code() == OpCode::kAdd) {
          const bool neg = is_floating(dt);
          if (r && is_zero(*r, neg)) done = replace(ins[0], neg ? "x + (-0) = x" : "x + 0 = x");
          if (!done && l && is_zero(*l, neg)) done = replace(ins[1], neg ? "(-0) + x = x" : "0 + x = x");
        } else {
          if (r && is_zero(*r, false)) done = replace(ins[0], "x - 0 = x");
        }
        break;
      }
      default: break;
    }
    if (!done) TENFERRO_TRY_VOID(rw.copy(op));
  }
  TENFERRO_TRY(res.graph, rw.finish());
  return res;
}

// Whether two pure ops of one program compute the same thing given equal operands.
bool same_op(const Operation& x, const Operation& y) {
  if (x.code() != y.code()) return false;
  if (x.code() != OpCode::kExtension) return x.attrs() == y.attrs();
  const ExtensionOp* a = x.extension();
  const ExtensionOp* b = y.extension();
  return a->family_id() == b->family_id() && (a == b || (a->payload_hash() == b->payload_hash() && a->payload_equal(*b)));
}

// Note [Unchanged passes]: a pass that would change nothing returns its input as is
// instead of rebuilding it; each such pass first runs a read-only check on the source
// program (for CSE: a duplicate among the unrewritten operands exists iff the rewrite
// would merge something, because nothing is remapped before the first merge).
bool has_duplicate(const SemanticProgram& p) {
  std::map<std::pair<int, std::vector<ValueRef>>, std::vector<const Operation*>> table;
  for (const Operation& op : p.ops()) {
    if (effectful(op)) continue;
    auto& bucket = table[{static_cast<int>(op.code()), std::vector<ValueRef>(op.operands().begin(), op.operands().end())}];
    for (const Operation* o : bucket) {
      if (same_op(op, *o)) return true;
    }
    bucket.push_back(&op);
  }
  return false;
}

Result<PassResult> pass_cse(const CompiledGraph& g) {
  if (!has_duplicate(*g.program)) return PassResult{g, {}};
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  struct Seen {
    const Operation* op;
    std::vector<Value> results;
  };
  std::map<std::pair<int, std::vector<Value>>, std::vector<Seen>> table;
  for (const Operation& op : g.program->ops()) {
    std::vector<Value> ins = rw.operands(op);
    if (!effectful(op)) {
      auto& bucket = table[{static_cast<int>(op.code()), ins}];
      const Seen* hit = nullptr;
      for (const Seen& sn : bucket) {
        if (same_op(op, *sn.op)) {
          hit = &sn;
          break;
        }
      }
      if (hit) {
        for (size_t k = 0; k < op.results().size(); ++k) rw.set(op.results()[k], hit->results[k]);
        res.changes.push_back(rw.label(op) + ": same as " + rw.label(*hit->op));
        continue;
      }
      TENFERRO_TRY_VOID(rw.copy(op));
      Seen sn{&op, {}};
      for (ValueRef r : op.results()) sn.results.push_back(rw.get(r));
      bucket.push_back(std::move(sn));
      continue;
    }
    TENFERRO_TRY_VOID(rw.copy(op));
  }
  TENFERRO_TRY(res.graph, rw.finish());
  return res;
}

// Live values: outputs, and operands of live or effectful ops.
std::unordered_set<ValueRef> live_values(const SemanticProgram& p) {
  std::unordered_set<ValueRef> live(p.outputs().begin(), p.outputs().end());
  const auto ops = p.ops();
  for (size_t i = ops.size(); i-- > 0;) {
    const Operation& op = ops[i];
    bool needed = effectful(op);
    for (ValueRef r : op.results()) needed = needed || live.count(r);
    if (needed) live.insert(op.operands().begin(), op.operands().end());
  }
  return live;
}

// Whether an op must stay: effectful, or one of its results is live.
bool needed_op(const Operation& op, const std::unordered_set<ValueRef>& live) {
  if (effectful(op)) return true;
  for (ValueRef r : op.results()) {
    if (live.count(r)) return true;
  }
  return false;
}

Result<PassResult> pass_dce(const CompiledGraph& g) {
  const auto live = live_values(*g.program);
  const auto ops = g.program->ops();
  if (std::all_of(ops.begin(), ops.end(), [&](const Operation& op) { return needed_op(op, live); })) {
    return PassResult{g, {}};  // Note [Unchanged passes]
  }
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  for (const Operation& op : g.program->ops()) {
    if (!needed_op(op, live)) {
      res.changes.push_back(rw.label(op) + ": unused, removed");
      continue;
    }
    TENFERRO_TRY_VOID(rw.copy(op));
  }
  TENFERRO_TRY(res.graph, rw.finish());
  return res;
}

// The extension ops that have unused outputs (some, not all) and a pruned form.
bool has_prunable(const SemanticProgram& p, const std::unordered_set<ValueRef>& used) {
  for (const Operation& op : p.ops()) {
    const ExtensionOp* e = op.extension();
    if (!e || op.results().size() < 2) continue;
    std::unique_ptr<bool[]> mask(new bool[op.results().size()]);
    size_t n_used = 0;
    for (size_t k = 0; k < op.results().size(); ++k) {
      mask[k] = used.count(op.results()[k]) > 0;
      n_used += mask[k] ? 1 : 0;
    }
    if (n_used > 0 && n_used < op.results().size() &&
        e->prune_outputs(std::span<const bool>(mask.get(), op.results().size())) != nullptr) {
      return true;
    }
  }
  return false;
}

Result<PassResult> pass_prune(const CompiledGraph& g) {
  const SemanticProgram& p = *g.program;
  std::unordered_set<ValueRef> used(p.outputs().begin(), p.outputs().end());
  for (const Operation& op : p.ops()) used.insert(op.operands().begin(), op.operands().end());
  if (!has_prunable(p, used)) return PassResult{g, {}};  // Note [Unchanged passes]
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  for (const Operation& op : p.ops()) {
    const ExtensionOp* e = op.extension();
    if (e && op.results().size() > 1) {
      std::vector<bool> mask;
      size_t n_used = 0;
      for (ValueRef r : op.results()) {
        mask.push_back(used.count(r) > 0);
        n_used += mask.back() ? 1 : 0;
      }
      if (n_used < mask.size() && n_used > 0) {
        std::unique_ptr<bool[]> flags(new bool[mask.size()]);
        for (size_t k = 0; k < mask.size(); ++k) flags[k] = mask[k];
        auto pruned = e->prune_outputs(std::span<const bool>(flags.get(), mask.size()));
        if (pruned) {
          if (pruned->family_id() != e->family_id() || pruned->effects() != e->effects()) {
            return compile_error(ErrorCode::kInvalidArgument, "compile",
                                 "prune_c1: " + rw.label(op) + ": pruned op changed its family or effects");
          }
          rw.builder().set_provenance(op.provenance());
          TENFERRO_TRY(auto outs, rw.builder().extension(pruned, rw.operands(op)));
          if (outs.size() != n_used) {
            return compile_error(ErrorCode::kInvalidArgument, "compile",
                                 "prune_c2: " + rw.label(op) + ": pruned op has " + s(static_cast<int64_t>(outs.size())) + " outputs, expected " + s(static_cast<int64_t>(n_used)));
          }
          size_t next = 0;
          for (size_t k = 0; k < mask.size(); ++k) {
            if (!mask[k]) continue;
            if (!(rw.type(outs[next]) == rw.translate(p.type(op.results()[k])))) {
              return compile_error(ErrorCode::kInvalidArgument, "compile", "prune_c2: " + rw.label(op) + ": pruned output types differ");
            }
            rw.set(op.results()[k], outs[next++]);
          }
          res.changes.push_back(rw.label(op) + ": pruned to " + s(static_cast<int64_t>(n_used)) + " of " + s(static_cast<int64_t>(mask.size())) + " outputs");
          continue;
        }
      }
    }
    TENFERRO_TRY_VOID(rw.copy(op));
  }
  TENFERRO_TRY(res.graph, rw.finish());
  return res;
}

// The signature: input roles and types, output types.
Result<void> same_signature(const SemanticProgram& a, const SemanticProgram& b, const std::string& who) {
  auto fail = [&](const std::string& what) {
    return compile_error(ErrorCode::kInvalidArgument, "compile", who + " changed the program signature: " + what);
  };
  if (a.inputs().size() != b.inputs().size()) return fail("input count");
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    if (a.inputs()[i].binding != b.inputs()[i].binding || !(a.type(a.inputs()[i].value) == b.type(b.inputs()[i].value))) {
      return fail("input " + s(static_cast<int64_t>(i)));
    }
  }
  if (a.outputs().size() != b.outputs().size()) return fail("output count");
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    if (!(a.type(a.outputs()[i]) == b.type(b.outputs()[i]))) return fail("type of output " + s(static_cast<int64_t>(i)));
  }
  return {};
}

Result<PassResult> pass_validate(const CompiledGraph& g) {
  Rewriter rw(g);
  TENFERRO_TRY_VOID(rw.begin());
  PassResult res;
  for (const Operation& op : g.program->ops()) TENFERRO_TRY_VOID(rw.copy(op));
  TENFERRO_TRY(res.graph, rw.finish());
  TENFERRO_TRY_VOID(same_signature(*g.program, *res.graph.program, "validate"));
  return res;
}

}  // namespace

std::string_view pass_name(PassId pass) noexcept {
  switch (pass) {
    case PassId::kNormalize: return "normalize";
    case PassId::kInfer: return "infer";
    case PassId::kEffects: return "effects";
    case PassId::kCanonicalize: return "canonicalize";
    case PassId::kCse: return "cse";
    case PassId::kDce: return "dce";
    case PassId::kPruneExtensions: return "prune";
    case PassId::kValidate: return "validate";
  }
  return "?";
}

Result<PassResult> run_pass(PassId pass, const CompiledGraph& graph) {
  if (!graph.program) return compile_error(ErrorCode::kInvalidArgument, "run_pass", "null program");
  switch (pass) {
    case PassId::kNormalize: return pass_normalize(graph);
    case PassId::kInfer: return pass_infer(graph);
    case PassId::kEffects: return pass_effects(graph);
    case PassId::kCanonicalize: return pass_canonicalize(graph);
    case PassId::kCse: return pass_cse(graph);
    case PassId::kDce: return pass_dce(graph);
    case PassId::kPruneExtensions: return pass_prune(graph);
    case PassId::kValidate: return pass_validate(graph);
  }
  return compile_error(ErrorCode::kInvalidArgument, "run_pass", "unknown pass");
}

std::string CompilerOptions::key() const {
  std::string k = std::string("c").append(canonicalize ? "1" : "0").append(cse ? "1" : "0").append(dce ? "1" : "0").append(prune_extension_outputs ? "1" : "0");
  for (const auto& t : transforms) k.append("|").append(t ? t->id() : "null").append("#").append(t ? s(static_cast<int64_t>(t->config_hash())) : "0");
  return k;
}

// ---- TraceContext -------------------------------------------------------------------------------

Result<Value> TraceContext::constant(const Tensor& tensor, int64_t max_elements) {
  if (!tensor.defined()) return usage_error(ErrorCode::kInvalidArgument, "TraceContext::constant", "null tensor");
  if (tensor.numel() > max_elements) {
    return usage_error(ErrorCode::kInvalidArgument, "TraceContext::constant",
                       s(tensor.numel()) + " elements exceed the constant size policy (" + s(max_elements) + "); capture() it as a binding");
  }
  TENFERRO_TRY(Tensor c, tensor.to_col_major());
  Literal l;
  l.dtype = c.dtype();
  l.shape.assign(c.shape().begin(), c.shape().end());
  const auto* p = static_cast<const uint8_t*>(c.storage()->data()) + c.offset() * c.element_size();
  l.bytes.assign(p, p + c.numel() * c.element_size());
  return builder_.constant(std::move(l));
}

Result<std::vector<Value>> TraceContext::extension(std::shared_ptr<const ExtensionOp> op, std::span<const Value> operands) {
  if (hook_ && op) {
    std::vector<ValueType> types;
    for (Value v : operands) {
      TENFERRO_TRY(ValueType t, builder_.type(v));
      types.push_back(std::move(t));
    }
    TENFERRO_TRY_VOID(hook_(*op, types));
  }
  return builder_.extension(std::move(op), operands);
}

Result<TracedGraph> TraceContext::finish(std::span<const Value> outputs) {
  TENFERRO_TRY(CompiledGraph g, builder_.finish(outputs));
  return TracedGraph(std::move(g));
}

// ---- GraphCompiler --------------------------------------------------------------------------------

Result<CompileReport> GraphCompiler::run_pipeline(const CompiledGraph& graph, const CompilerOptions& options, bool report) const {
  if (!graph.program) return compile_error(ErrorCode::kInvalidArgument, "compile", "null program");
  CompileReport rep;
  CompiledGraph g = graph;
  auto log = [&](std::string_view pass, const std::vector<std::string>& changes) {
    if (!report) return;
    rep.text.append("pass ").append(pass).append(changes.empty() ? ": no changes\n" : ":\n");
    for (const auto& c : changes) rep.text.append("  ").append(c).append("\n");
  };
  auto run = [&](PassId id) -> Result<bool> {
    TENFERRO_TRY(PassResult r, run_pass(id, g));
    log(pass_name(id), r.changes);
    g = std::move(r.graph);
    return !r.changes.empty();
  };
  if (report) {
    rep.text = "traced fingerprint " + graph.program->fingerprint().to_string() + ", " + s(static_cast<int64_t>(graph.program->ops().size())) + " ops; options " + options.key() + "\n";
  }
  TENFERRO_TRY_VOID(run(PassId::kNormalize));
  TENFERRO_TRY_VOID(run(PassId::kInfer));
  TENFERRO_TRY_VOID(run(PassId::kEffects));
  for (const auto& t : options.transforms) {
    if (!t) return compile_error(ErrorCode::kInvalidArgument, "compile", "null transform");
    auto r = t->apply(g);
    if (!r) return r.error().with_cause(compile_error(ErrorCode::kInvalidArgument, "compile", "in transform " + std::string(t->id())));
    if (!r->program) return compile_error(ErrorCode::kInvalidArgument, "compile", "transform " + std::string(t->id()) + " returned no program");
    TENFERRO_TRY_VOID(same_signature(*g.program, *r->program, "transform " + std::string(t->id())));
    log(std::string("transform ").append(t->id()), {"applied"});
    g = std::move(*r);
  }
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    if (options.canonicalize) {
      TENFERRO_TRY(bool c, run(PassId::kCanonicalize));
      changed = changed || c;
    }
    if (options.cse) {
      TENFERRO_TRY(bool c, run(PassId::kCse));
      changed = changed || c;
    }
    if (options.dce) {
      TENFERRO_TRY(bool c, run(PassId::kDce));
      changed = changed || c;
    }
    if (!changed) break;
  }
  if (options.prune_extension_outputs) {
    TENFERRO_TRY(bool c, run(PassId::kPruneExtensions));
    if (c && options.dce) TENFERRO_TRY_VOID(run(PassId::kDce));
  }
  TENFERRO_TRY_VOID(run(PassId::kValidate));
  TENFERRO_TRY_VOID(same_signature(*graph.program, *g.program, "the pipeline"));
  if (report) {
    rep.text.append("compiled fingerprint ").append(g.program->fingerprint().to_string()).append(", ").append(s(static_cast<int64_t>(g.program->ops().size()))).append(" ops\n");
    rep.text.append(program::print_program(*g.program));
  }
  // The result carries the caller's bindings (passes never add or drop inputs).
  g.bindings = graph.bindings;
  rep.graph = std::move(g);
  return rep;
}

program::Fingerprint GraphCompiler::key_fingerprint(const SemanticProgram& p) const {
  return forced_fingerprint_ ? *forced_fingerprint_ : p.fingerprint();
}

Result<CompiledGraph> GraphCompiler::compile(const CompiledGraph& graph, const CompilerOptions& options) {
  if (!graph.program) return compile_error(ErrorCode::kInvalidArgument, "compile", "null program");
  const std::string okey = options.key();
  const program::Fingerprint fp = key_fingerprint(*graph.program);
  {
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->options_key == okey && key_fingerprint(*it->traced) == fp && it->traced->structurally_equal(*graph.program)) {
        lru_.splice(lru_.begin(), lru_, it);
        stats_.hits++;
        return CompiledGraph{lru_.front().compiled, graph.bindings};
      }
    }
    stats_.misses++;
  }
  // Compile outside the lock (a concurrent miss on the same program compiles twice;
  // compilation is deterministic, so both agree).
  TENFERRO_TRY(CompileReport rep, run_pipeline(graph, options, false));
  std::lock_guard lock(mu_);
  lru_.push_front(Entry{graph.program, okey, rep.graph.program});
  stats_.retained_bytes += graph.program->footprint_bytes() + rep.graph.program->footprint_bytes();
  while (lru_.size() > capacity_) {
    stats_.retained_bytes -= lru_.back().traced->footprint_bytes() + lru_.back().compiled->footprint_bytes();
    lru_.pop_back();
    stats_.evictions++;
  }
  stats_.entries = static_cast<int64_t>(lru_.size());
  return std::move(rep.graph);
}

Result<CompiledGraph> GraphCompiler::compile(const TracedGraph& traced, const CompilerOptions& options) {
  return compile(traced.graph(), options);
}

Result<CompileReport> GraphCompiler::explain(const CompiledGraph& graph, const CompilerOptions& options) const {
  return run_pipeline(graph, options, true);
}

Result<CompileReport> GraphCompiler::explain(const TracedGraph& traced, const CompilerOptions& options) const {
  return run_pipeline(traced.graph(), options, true);
}

GraphCompiler::Stats GraphCompiler::stats() const {
  std::lock_guard lock(mu_);
  Stats st = stats_;
  st.capacity = capacity_;
  return st;
}

void GraphCompiler::clear() {
  std::lock_guard lock(mu_);
  lru_.clear();
  stats_.entries = 0;
  stats_.retained_bytes = 0;
}

}  // namespace tenferro::compiler
