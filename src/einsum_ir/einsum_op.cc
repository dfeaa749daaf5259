#include "tenferro/einsum_ir/einsum_op.h"

#include <algorithm>
#include <map>

#include "tenferro/einsum/subscripts.h"

namespace tenferro::einsum {

// Note [Einsum lowering]: with exact shapes, lower_to_core resolves the subscripts
// (labels per axis, broadcast extents), searches the op's path, and emits per operand:
// broadcast_in_dim for axes of extent 1 whose label is longer elsewhere, then
// transpose + extract_diag for each repeated label (diagonals need equal extents, so
// broadcasting comes first). Before each binary step every label that neither the other
// operand, any operand still waiting, nor the output carries is summed out (reduce).
// A step is one dot_general: labels shared and still needed later are batch axes,
// labels shared and not needed are contracted; the result's labels are [batch, lhs
// free, rhs free] in operand order. The last value is reduced to the output's labels
// and transposed into their order; an output that repeats a label gets embed_diag for
// each repeat (zeros off the diagonal, as the native executor writes). Bool einsum (numpy: OR of ANDs) runs on i64 counts
// that are tested for nonzero at the end. The lowering is what the reference
// interpreter evaluates, so the native engine is checked against it.

namespace {

using program::Attrs;
using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

Error compile_error(ErrorCode code, std::string msg) {
  return Error(ErrorStage::kCompile, code, "einsum", std::move(msg));
}

std::string_view algorithm_text(PathAlgorithm a) {
  switch (a) {
    case PathAlgorithm::kGreedy: return "greedy";
    case PathAlgorithm::kOptimal: return "optimal";
    case PathAlgorithm::kLeftToRight: return "left_to_right";
    default: return "unsupported";
  }
}

// One value of the lowering with the label of each axis.
struct Node {
  Value value;
  std::vector<Label> labels;
};

Result<Node> apply(ProgramBuilder& b, OpCode code, const Node& n, Attrs attrs, std::vector<Label> labels) {
  TENFERRO_TRY(Value v, b.op(code, {n.value}, std::move(attrs)));
  return Node{v, std::move(labels)};
}

// Sums out every label of `n` that `keep` does not contain.
Result<Node> sum_out(ProgramBuilder& b, const Node& n, const std::vector<Label>& keep) {
  Attrs a;
  a.reduce = program::ReduceKind::kSum;
  std::vector<Label> rest;
  for (size_t i = 0; i < n.labels.size(); ++i) {
    if (std::find(keep.begin(), keep.end(), n.labels[i]) == keep.end()) {
      a.dims.push_back(static_cast<int64_t>(i));
    } else {
      rest.push_back(n.labels[i]);
    }
  }
  if (a.dims.empty()) return n;
  return apply(b, OpCode::kReduce, n, std::move(a), std::move(rest));
}

}  // namespace

Result<std::shared_ptr<const EinsumOp>> EinsumOp::make(std::string subscripts, PathAlgorithm algorithm) {
  if (algorithm != PathAlgorithm::kGreedy && algorithm != PathAlgorithm::kOptimal &&
      algorithm != PathAlgorithm::kLeftToRight) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum",
                       "path algorithm " + std::string(path_algorithm_name(algorithm)) +
                           " cannot be an einsum op's payload (greedy, optimal or left_to_right)");
  }
  TENFERRO_TRY_VOID(parse_subscripts(subscripts));
  return std::shared_ptr<const EinsumOp>(new EinsumOp(std::move(subscripts), algorithm, ContractionTree{}));
}

Result<std::shared_ptr<const EinsumOp>> EinsumOp::make_explicit(std::string subscripts, ContractionTree tree) {
  TENFERRO_TRY(Subscripts parsed, parse_subscripts(subscripts));
  TENFERRO_TRY_VOID(check_tree(static_cast<int32_t>(std::min<size_t>(parsed.inputs.size(), size_t{1} << 30)), tree));
  return std::shared_ptr<const EinsumOp>(
      new EinsumOp(std::move(subscripts), PathAlgorithm::kExplicit, std::move(tree)));
}

PathPolicy EinsumOp::policy() const {
  PathPolicy p;
  p.algorithm = algorithm_;
  if (algorithm_ == PathAlgorithm::kExplicit) p.explicit_tree = tree_;
  return p;
}

uint64_t EinsumOp::payload_hash() const {
  uint64_t h = std::hash<std::string>()(subscripts_) * 31 + static_cast<uint64_t>(algorithm_);
  for (const auto& [x, y] : tree_.steps)
    h = (h * 1000003u) ^ (static_cast<uint64_t>(x) << 32 | static_cast<uint32_t>(y));
  return h;
}

bool EinsumOp::payload_equal(const ExtensionOp& other) const {
  const auto& o = static_cast<const EinsumOp&>(other);
  return o.subscripts_ == subscripts_ && o.algorithm_ == algorithm_ && o.tree_.leaves == tree_.leaves &&
         o.tree_.steps == tree_.steps;
}

std::string EinsumOp::payload_text() const {
  if (algorithm_ != PathAlgorithm::kExplicit) return subscripts_ + ";" + std::string(algorithm_text(algorithm_));
  std::string t = subscripts_ + ";explicit:";
  for (size_t k = 0; k < tree_.steps.size(); ++k) {
    if (k > 0) t += ',';
    t += std::to_string(tree_.steps[k].first) + "-" + std::to_string(tree_.steps[k].second);
  }
  return t;
}

Result<std::shared_ptr<const EinsumOp>> parse_einsum_payload(std::string_view payload) {
  const size_t semi = payload.rfind(';');
  if (semi == std::string_view::npos) {
    return usage_error(ErrorCode::kParse, "einsum", "payload '" + std::string(payload) + "' lacks ';ALGORITHM'");
  }
  const std::string_view alg = payload.substr(semi + 1);
  constexpr std::string_view kExplicitTag = "explicit:";
  if (alg.substr(0, kExplicitTag.size()) == kExplicitTag) {
    // Steps "A-B" separated by ','; node ids are decimal and below 2^30 (checked before
    // they can overflow), the tree's fit is make_explicit's check.
    std::string subscripts(payload.substr(0, semi));
    TENFERRO_TRY(Subscripts parsed, parse_subscripts(subscripts));
    ContractionTree tree;
    tree.leaves = static_cast<int32_t>(std::min<size_t>(parsed.inputs.size(), size_t{1} << 30));
    const std::string_view steps = alg.substr(kExplicitTag.size());
    size_t i = 0;
    auto number = [&](int32_t* out) -> bool {
      int64_t v = 0;
      const size_t start = i;
      while (i < steps.size() && steps[i] >= '0' && steps[i] <= '9') {
        v = v * 10 + (steps[i] - '0');
        if (v >= (int64_t{1} << 30)) return false;
        ++i;
      }
      *out = static_cast<int32_t>(v);
      return i > start;
    };
    while (i < steps.size()) {
      int32_t x = 0, y = 0;
      if (!number(&x) || i >= steps.size() || steps[i] != '-' || (++i, !number(&y)) ||
          (i < steps.size() && steps[i] != ',') || (i < steps.size() && i + 1 == steps.size())) {
        return usage_error(ErrorCode::kParse, "einsum",
                           "explicit path '" + std::string(steps) + "': expected steps A-B separated by ',' (byte " +
                               std::to_string(i) + ")");
      }
      if (i < steps.size()) ++i;  // the ','
      tree.steps.emplace_back(x, y);
    }
    return EinsumOp::make_explicit(std::move(subscripts), std::move(tree));
  }
  PathAlgorithm a;
  if (alg == "greedy") {
    a = PathAlgorithm::kGreedy;
  } else if (alg == "optimal") {
    a = PathAlgorithm::kOptimal;
  } else if (alg == "left_to_right") {
    a = PathAlgorithm::kLeftToRight;
  } else {
    return usage_error(ErrorCode::kParse, "einsum",
                       "unknown path algorithm '" + std::string(alg) + "' (greedy, optimal or left_to_right)");
  }
  return EinsumOp::make(std::string(payload.substr(0, semi)), a);
}

Result<void> register_einsum_family(program::ExtensionRegistry& registry) {
  return registry.add(std::string(kEinsumFamily),
                      [](std::string_view payload) -> Result<std::shared_ptr<const program::ExtensionOp>> {
                        TENFERRO_TRY(std::shared_ptr<const EinsumOp> op, parse_einsum_payload(payload));
                        return std::shared_ptr<const program::ExtensionOp>(std::move(op));
                      });
}

Result<Value> emit_einsum(ProgramBuilder& builder, std::string subscripts, std::span<const Value> operands,
                          PathAlgorithm algorithm) {
  TENFERRO_TRY(std::shared_ptr<const EinsumOp> op, EinsumOp::make(std::move(subscripts), algorithm));
  TENFERRO_TRY(std::vector<Value> out, builder.extension(std::move(op), operands));
  return out[0];
}

Result<Value> emit_einsum(ProgramBuilder& builder, std::string subscripts, std::span<const Value> operands,
                          const PathPolicy& policy) {
  if (policy.algorithm != PathAlgorithm::kExplicit) {
    return emit_einsum(builder, std::move(subscripts), operands, policy.algorithm);
  }
  TENFERRO_TRY(std::shared_ptr<const EinsumOp> op,
               EinsumOp::make_explicit(std::move(subscripts), policy.explicit_tree));
  TENFERRO_TRY(std::vector<Value> out, builder.extension(std::move(op), operands));
  return out[0];
}

Result<std::vector<ValueType>> EinsumOp::infer(std::span<const ValueType> inputs, std::span<const program::SymbolInfo>,
                                               std::vector<program::PendingGuard>& guards) const {
  if (inputs.empty()) return compile_error(ErrorCode::kInvalidArgument, "einsum needs at least one operand");
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].dtype != inputs[0].dtype) {
      return compile_error(ErrorCode::kDTypeMismatch,
                           "operand " + std::to_string(i) + " has dtype " + std::string(dtype_name(inputs[i].dtype)) +
                               ", operand 0 has " + std::string(dtype_name(inputs[0].dtype)) + " (no implicit promotion)");
    }
  }
  // Labels per axis from a stand-in resolve (symbolic extents as 1, which broadcasts
  // anywhere); the extents themselves are decided below.
  TENFERRO_TRY(Subscripts parsed, parse_subscripts(subscripts_));
  std::vector<Shape> stand_in;
  bool all_exact = true;
  for (const ValueType& t : inputs) {
    Shape s;
    for (const Extent& e : t.shape) {
      s.push_back(e.is_exact() ? e.exact_value() : 1);
      all_exact = all_exact && e.is_exact();
    }
    stand_in.push_back(std::move(s));
  }
  Result<EinsumSpec> spec = resolve(parsed, stand_in);
  if (!spec) return compile_error(spec.error().code(), spec.error().message());
  std::map<Label, Extent> extent;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t a = 0; a < spec->inputs[i].size(); ++a) {
      const Label l = spec->inputs[i][a];
      const Extent& e = inputs[i].shape[a];
      auto [it, fresh] = extent.emplace(l, e);
      if (fresh || it->second == e || (e.is_exact() && e.exact_value() == 1)) continue;
      if (it->second.is_exact() && it->second.exact_value() == 1) {
        it->second = e;
      } else if (all_exact || (it->second.is_exact() && e.is_exact())) {
        return compile_error(ErrorCode::kShapeMismatch, "label '" + format_label(l) + "' has extent " +
                                                            std::to_string(it->second.exact_value()) +
                                                            " in one place and " + std::to_string(e.exact_value()) +
                                                            " in operand " + std::to_string(i) + " (axis " +
                                                            std::to_string(a) + ")");
      } else {
        guards.push_back(program::PendingGuard{it->second, e, true, "einsum_c1"});
      }
    }
  }
  ValueType out{inputs[0].dtype, {}};
  for (Label l : spec->output) out.shape.push_back(extent.at(l));
  return std::vector<ValueType>{out};
}

Result<program::LoweringOutcome> EinsumOp::lower_to_core(ProgramBuilder& b, std::span<const Value> inputs) const {
  program::LoweringOutcome outcome;
  std::vector<Shape> shapes;
  DType dtype = DType::kF64;
  for (Value v : inputs) {
    TENFERRO_TRY(ValueType t, b.type(v));
    dtype = t.dtype;
    Shape s;
    for (const Extent& e : t.shape) {
      if (!e.is_exact()) {
        outcome.kind = program::LoweringOutcome::Kind::kNeedsSpecialization;
        outcome.reason = "einsum lowers exact extents only";
        return outcome;
      }
      s.push_back(e.exact_value());
    }
    shapes.push_back(std::move(s));
  }
  TENFERRO_TRY(Subscripts parsed, parse_subscripts(subscripts_));
  TENFERRO_TRY(EinsumSpec spec, resolve(parsed, shapes));
  // An output that repeats a label is computed with each label once, then the repeats
  // are embedded as diagonals (zeros elsewhere) at the end.
  std::vector<Label> unique_out;
  for (Label l : spec.output) {
    if (std::find(unique_out.begin(), unique_out.end(), l) == unique_out.end()) unique_out.push_back(l);
  }
  const DType work = dtype == DType::kBool ? DType::kI64 : dtype;

  // Leaves: convert (bool), broadcast, diagonals.
  std::vector<std::optional<Node>> live;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node n{inputs[i], spec.inputs[i]};
    if (dtype == DType::kBool) {
      TENFERRO_TRY(n, apply(b, OpCode::kConvert, n, Attrs{.dtype = work}, n.labels));
    }
    const Shape& s = shapes[i];
    bool broadcast = false;
    Attrs bc;
    for (size_t a = 0; a < s.size(); ++a) {
      bc.dims.push_back(static_cast<int64_t>(a));
      bc.shape.push_back(Extent::exact(spec.extent(n.labels[a])));
      broadcast = broadcast || s[a] != spec.extent(n.labels[a]);
    }
    if (broadcast) {
      TENFERRO_TRY(n, apply(b, OpCode::kBroadcastInDim, n, std::move(bc), n.labels));
    }
    for (bool again = true; again;) {
      again = false;
      for (size_t x = 0; x < n.labels.size() && !again; ++x) {
        for (size_t y = x + 1; y < n.labels.size() && !again; ++y) {
          if (n.labels[x] != n.labels[y]) continue;
          again = true;
          if (y != x + 1) {  // move axis y next to x
            Attrs t;
            std::vector<Label> moved;
            for (size_t k = 0; k < n.labels.size(); ++k) {
              if (k == y) continue;
              t.dims.push_back(static_cast<int64_t>(k));
              moved.push_back(n.labels[k]);
              if (k == x) {
                t.dims.push_back(static_cast<int64_t>(y));
                moved.push_back(n.labels[y]);
              }
            }
            TENFERRO_TRY(n, apply(b, OpCode::kTranspose, n, std::move(t), moved));
          }
          std::vector<Label> rest = n.labels;
          rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(x) + 1);
          TENFERRO_TRY(n, apply(b, OpCode::kExtractDiag, n, Attrs{.axis = static_cast<int64_t>(x)}, rest));
        }
      }
    }
    live.push_back(std::move(n));
  }

  // Labels needed beyond a set of excluded nodes: the output's and every other live node's.
  const auto needed = [&](std::initializer_list<size_t> excluded) {
    std::vector<Label> keep = unique_out;
    for (size_t k = 0; k < live.size(); ++k) {
      if (!live[k] || std::find(excluded.begin(), excluded.end(), k) != excluded.end()) continue;
      keep.insert(keep.end(), live[k]->labels.begin(), live[k]->labels.end());
    }
    return keep;
  };
  TENFERRO_TRY(ContractionTree tree, search_path(make_network(spec), policy()));
  for (const auto& [x, y] : tree.steps) {
    const auto ux = static_cast<size_t>(x), uy = static_cast<size_t>(y);
    std::vector<Label> keep_x = needed({ux});
    TENFERRO_TRY(Node lhs, sum_out(b, *live[ux], keep_x));
    live[ux] = lhs;
    TENFERRO_TRY(Node rhs, sum_out(b, *live[uy], needed({uy})));
    live[uy] = rhs;
    const std::vector<Label> later = needed({ux, uy});
    Attrs d;
    std::vector<Label> result, lhs_free, rhs_free;
    for (size_t i = 0; i < lhs.labels.size(); ++i) {
      const Label l = lhs.labels[i];
      const auto j = std::find(rhs.labels.begin(), rhs.labels.end(), l);
      if (j == rhs.labels.end()) {
        lhs_free.push_back(l);
      } else if (std::find(later.begin(), later.end(), l) != later.end()) {
        d.lhs_batch.push_back(static_cast<int64_t>(i));
        d.rhs_batch.push_back(j - rhs.labels.begin());
        result.push_back(l);
      } else {
        d.lhs_contract.push_back(static_cast<int64_t>(i));
        d.rhs_contract.push_back(j - rhs.labels.begin());
      }
    }
    for (Label l : rhs.labels) {
      if (std::find(lhs.labels.begin(), lhs.labels.end(), l) == lhs.labels.end()) rhs_free.push_back(l);
    }
    result.insert(result.end(), lhs_free.begin(), lhs_free.end());
    result.insert(result.end(), rhs_free.begin(), rhs_free.end());
    TENFERRO_TRY(Value v, b.op(OpCode::kDotGeneral, {lhs.value, rhs.value}, std::move(d)));
    live[ux].reset();
    live[uy].reset();
    live.push_back(Node{v, std::move(result)});
  }
  // The root: sum what the output lacks, transpose into the output's order.
  Node root = *live.back();
  TENFERRO_TRY(root, sum_out(b, root, unique_out));
  if (unique_out.size() < spec.output.size()) {
    // Each further occurrence of a label: embed_diag doubles one of its axes.
    std::vector<Label> seen;
    for (Label l : spec.output) {
      if (std::find(seen.begin(), seen.end(), l) == seen.end()) {
        seen.push_back(l);
        continue;
      }
      const auto at = std::find(root.labels.begin(), root.labels.end(), l) - root.labels.begin();
      std::vector<Label> doubled = root.labels;
      doubled.insert(doubled.begin() + at, l);
      TENFERRO_TRY(root, apply(b, OpCode::kEmbedDiag, root, Attrs{.axis = static_cast<int64_t>(at)}, doubled));
    }
  }
  // Into the output's order (the axes of a repeated label are interchangeable).
  Attrs perm;
  bool identity = true;
  std::vector<bool> used(root.labels.size(), false);
  for (size_t i = 0; i < spec.output.size(); ++i) {
    size_t at = 0;
    while (root.labels[at] != spec.output[i] || used[at]) ++at;
    used[at] = true;
    perm.dims.push_back(static_cast<int64_t>(at));
    identity = identity && at == i;
  }
  if (!identity) {
    TENFERRO_TRY(root, apply(b, OpCode::kTranspose, root, std::move(perm), spec.output));
  }
  if (dtype == DType::kBool) {
    const int64_t zero = 0;
    TENFERRO_TRY(program::Literal lit, program::Literal::from_values<int64_t>({}, std::span<const int64_t>(&zero, 1)));
    TENFERRO_TRY(Value z, b.constant(lit));
    Attrs bc;
    for (Label l : spec.output) bc.shape.push_back(Extent::exact(spec.extent(l)));
    TENFERRO_TRY(Value zb, b.op(OpCode::kBroadcastInDim, {z}, std::move(bc)));
    TENFERRO_TRY(Value nz, b.op(OpCode::kCompare, {root.value, zb}, Attrs{.direction = program::CompareDirection::kNe}));
    root.value = nz;
  }
  outcome.kind = program::LoweringOutcome::Kind::kLowered;
  outcome.values.push_back(root.value);
  return outcome;
}

}  // namespace tenferro::einsum
