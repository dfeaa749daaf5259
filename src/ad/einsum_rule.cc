// The einsum family's differentiation rules.

#include <algorithm>
#include <map>

#include "rules.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/einsum_ir/einsum_op.h"

namespace tenferro::ad {

using einsum::EinsumOp;
using einsum::Label;
using program::Attrs;
using program::Extent;

// Note [Einsum rules]: an einsum is multilinear in its operands.
// - JVP: the product rule as einsums of the same subscripts, one per operand with a
//   tangent (that operand replaced by its tangent), summed.
// - Transpose for the one linear operand L: an einsum of the cotangent (labels of the
//   output) with the conjugated other operands, whose output is L's axes. L's axes that
//   this einsum cannot produce directly get helper operands: a repeated label (a
//   diagonal) gets a fresh label tied to the first by an identity matrix; an axis of
//   exact extent 1 that broadcast against a longer one gets a fresh label with a ones
//   vector of extent 1 (the einsum sums the broadcast away); a label no other operand
//   carries at L's extent (it occurs only in L, or elsewhere only as a broadcast 1)
//   gets a ones vector of L's extent. An einsum with two or more linear operands is not
//   linear (a typed error).

namespace {

const EinsumOp* as_einsum(const program::ExtensionOp& op) { return dynamic_cast<const EinsumOp*>(&op); }

void append_utf8(std::string& s, char32_t c) {
  if (c < 0x80) {
    s.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (c >> 6)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xE0 | (c >> 12)));
    s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// Text labels for integer labels: a-z, A-Z, then CJK code points (never '.', ',', '-').
class LabelText {
 public:
  std::string term(const std::vector<Label>& labels) {
    std::string s;
    for (Label l : labels) append_utf8(s, code(l));
    return s;
  }

 private:
  char32_t code(Label l) {
    auto [it, fresh] = map_.emplace(l, 0);
    if (fresh) {
      const auto k = static_cast<char32_t>(map_.size() - 1);
      it->second = k < 26 ? U'a' + k : k < 52 ? U'A' + (k - 26) : U'\u4E00' + (k - 52);
    }
    return it->second;
  }
  std::map<Label, char32_t> map_;
};

bool is_one(const Extent& e) { return e.is_exact() && e.exact_value() == 1; }

class EinsumRule final : public ExtensionRule {
 public:
  std::string_view family_id() const override { return einsum::kEinsumFamily; }

  Result<std::vector<MaybeValue>> linearize(Emitter& e, const program::ExtensionOp& op, std::span<const Value> inputs,
                                            std::span<const Value>, std::span<const MaybeValue> tangents) const override {
    const EinsumOp* es = as_einsum(op);
    if (!es) return detail::ad_error(ErrorCode::kInternal, "jvp", "einsum rule given another family's op");
    MaybeValue sum;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!tangents[i]) continue;
      std::vector<Value> ops(inputs.begin(), inputs.end());
      ops[i] = *tangents[i];
      // The same operands' structure: an explicit path applies as it is.
      TENFERRO_TRY(Value term, einsum::emit_einsum(e.builder(), es->subscripts(), ops, es->policy()));
      TENFERRO_TRY(sum, e.add(sum, MaybeValue(term)));
    }
    return std::vector<MaybeValue>{sum};
  }

  Result<std::vector<MaybeValue>> transpose(Emitter& e, const program::ExtensionOp& op, std::span<const MaybeValue> inputs,
                                            std::span<const ValueType> types,
                                            std::span<const MaybeValue> cotangents) const override {
    const EinsumOp* es = as_einsum(op);
    if (!es) return detail::ad_error(ErrorCode::kInternal, "transpose", "einsum rule given another family's op");
    std::vector<MaybeValue> out(inputs.size());
    size_t lin = inputs.size();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]) continue;
      if (lin != inputs.size()) {
        return detail::ad_error(ErrorCode::kInvalidArgument, "transpose",
                                "einsum '" + es->subscripts() + "' has two linear operands (" + std::to_string(lin) +
                                    " and " + std::to_string(i) + "): it is not linear in them");
      }
      lin = i;
    }
    if (lin == inputs.size() || !cotangents[0]) return out;
    // Labels per axis (extents from a stand-in resolve, as in EinsumOp::infer).
    TENFERRO_TRY(einsum::Subscripts parsed, einsum::parse_subscripts(es->subscripts()));
    std::vector<Shape> stand_in;
    for (const ValueType& t : types) {
      Shape s;
      for (const Extent& x : t.shape) s.push_back(x.is_exact() ? x.exact_value() : 1);
      stand_in.push_back(std::move(s));
    }
    TENFERRO_TRY(einsum::EinsumSpec spec, einsum::resolve(parsed, stand_in));
    TENFERRO_TRY(ValueType out_type, e.type(*cotangents[0]));
    const DType dt = types[lin].dtype;

    std::vector<std::vector<Label>> terms{spec.output};
    std::vector<Value> ops{*cotangents[0]};
    // Does some operand of the transposed einsum carry label l at an extent other than 1?
    std::vector<std::pair<Label, bool>> carried;
    auto mark = [&](Label l, const Extent& x) {
      auto it = std::find_if(carried.begin(), carried.end(), [&](const auto& p) { return p.first == l; });
      if (it == carried.end()) {
        carried.emplace_back(l, !is_one(x));
      } else {
        it->second = it->second || !is_one(x);
      }
    };
    for (size_t a = 0; a < spec.output.size(); ++a) mark(spec.output[a], out_type.shape[a]);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i == lin) continue;
      TENFERRO_TRY(Value c, e.conj(*inputs[i]));
      ops.push_back(c);
      terms.push_back(spec.inputs[i]);
      for (size_t a = 0; a < spec.inputs[i].size(); ++a) mark(spec.inputs[i][a], types[i].shape[a]);
    }
    Label fresh = 0;
    for (const auto& t : spec.inputs) {
      for (Label l : t) fresh = std::max(fresh, l + 1);
    }
    for (Label l : spec.output) fresh = std::max(fresh, l + 1);
    auto ones = [&](Label l, const Extent& x) -> Result<void> {
      TENFERRO_TRY(Value v, e.full(ValueType{dt, {x}}, 1.0));
      ops.push_back(v);
      terms.push_back({l});
      return {};
    };
    std::vector<Label> result;
    const std::vector<Label>& lt = spec.inputs[lin];
    for (size_t a = 0; a < lt.size(); ++a) {
      const Label l = lt[a];
      const Extent& x = types[lin].shape[a];
      auto it = std::find_if(carried.begin(), carried.end(), [&](const auto& p) { return p.first == l; });
      const bool elsewhere = it != carried.end();
      const bool elsewhere_long = elsewhere && it->second;
      if (is_one(x) && elsewhere_long) {  // broadcast axis: summed away, a fresh extent-1 axis
        const Label f = fresh++;
        TENFERRO_TRY_VOID(ones(f, x));
        result.push_back(f);
      } else if (std::find(result.begin(), result.end(), l) != result.end()) {  // a diagonal
        const Label f = fresh++;
        TENFERRO_TRY(Value i0, e.op(OpCode::kIota, {}, Attrs{.shape = {x, x}, .axis = 0, .dtype = DType::kI64}));
        TENFERRO_TRY(Value i1, e.op(OpCode::kIota, {}, Attrs{.shape = {x, x}, .axis = 1, .dtype = DType::kI64}));
        TENFERRO_TRY(Value eq, e.op(OpCode::kCompare, {i0, i1}, Attrs{.direction = program::CompareDirection::kEq}));
        TENFERRO_TRY(Value eye, e.convert(eq, dt));
        ops.push_back(eye);
        terms.push_back({l, f});
        result.push_back(f);
      } else {
        if (!elsewhere_long && !is_one(x)) {
          TENFERRO_TRY_VOID(ones(l, x));
          mark(l, x);
        } else if (!elsewhere) {
          TENFERRO_TRY_VOID(ones(l, x));
          mark(l, x);
        }
        result.push_back(l);
      }
    }
    LabelText text;
    std::string sub;
    for (size_t i = 0; i < terms.size(); ++i) sub += (i ? "," : "") + text.term(terms[i]);
    sub += "->" + text.term(result);
    // Other operands and subscripts: an explicit path does not carry over (greedy then).
    const einsum::PathAlgorithm algorithm =
        es->algorithm() == einsum::PathAlgorithm::kExplicit ? einsum::PathAlgorithm::kGreedy : es->algorithm();
    TENFERRO_TRY(Value ct, einsum::emit_einsum(e.builder(), sub, ops, algorithm));
    out[lin] = ct;
    return out;
  }
};

}  // namespace

std::shared_ptr<const ExtensionRule> einsum_rule() { return std::make_shared<EinsumRule>(); }

}  // namespace tenferro::ad
