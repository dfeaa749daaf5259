// Preparation (resolution, placement, buffer plan, schedule) and explain().

#include <algorithm>
#include <limits>
#include <sstream>

#include "prepared.h"
#include "tenferro/program/interpreter.h"

namespace tenferro::runtime {

// Note [Preparation order]: prepare_uncached follows the seed's order. (1) Pin the
// configuration snapshot and place the program on one engine domain (explicit, else the
// first engine's first domain). (2) Check every input's dtype and rank against the
// program and bind the symbols from the concrete shapes, evaluating every shape guard —
// all before any provider is asked. (3) Resolve each op: the engine's native core
// provider or its extension module for the family; on kUnsupported the extension's core
// lowering (a core-only sub-program prepared recursively through the plan cache and run
// inside the same executor entry); then the configured fallback (the reference
// interpreter on a one-op program); else a typed kUnsupported naming every reason. A
// kNeedsSpecialization answer is a provider contract error: every extent is already
// exact, so no request can strictly widen what is known. (4) The buffer plan: each
// value's last use; a node drops the slots whose last use it is (outputs are kept), so
// dead intermediates return to their pool during the run; the peak of live bytes is
// estimated by simulating that order (views count nothing). (5) The schedule is the
// program's SSA order as one segment (one engine domain, one executor entry).

namespace {

Error prep_error(ErrorCode code, std::string msg) {
  return Error(ErrorStage::kPrepare, code, "prepare_for", std::move(msg));
}

std::string op_label(const program::Operation& op) {
  return op.code() == program::OpCode::kExtension ? "extension " + std::string(op.extension()->family_id())
                                                  : std::string(program::op_name(op.code()));
}


// The configured fallback: the reference interpreter on a one-op program of the node's
// concrete input types.
class InterpreterKernel final : public NodeKernel {
 public:
  explicit InterpreterKernel(program::CompiledGraph graph) : graph_(std::move(graph)) {}
  Result<void> run(EngineContext&, std::span<const Tensor> inputs, std::span<Tensor> outputs) const override {
    TENFERRO_TRY(std::vector<Tensor> out, program::interpret(graph_, inputs));
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = std::move(out[i]);
    return ok();
  }
  std::string_view provider() const override { return "reference_interpreter"; }

 private:
  program::CompiledGraph graph_;
};

// An extension op lowered to core ops: its sub-program runs inside the caller's entered
// context (no second executor entry).
class LoweredKernel final : public NodeKernel {
 public:
  explicit LoweredKernel(std::shared_ptr<const PreparedProgram> sub) : sub_(std::move(sub)) {}
  Result<void> run(EngineContext& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs) const override {
    TENFERRO_TRY(std::unique_ptr<Workspace> ws, sub_->acquire());
    for (size_t i = 0; i < inputs.size(); ++i) ws->slots[static_cast<size_t>(sub_->argument_values[i])] = inputs[i];
    const Result<void> r = run_nodes(*sub_, ctx, *ws);
    if (r) {
      for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = ws->slots[static_cast<size_t>(sub_->output_values[i])];
    }
    sub_->give_back(std::move(ws));
    return r;
  }
  std::string_view provider() const override { return "core_lowering"; }
  const PreparedProgram& sub() const { return *sub_; }

 private:
  std::shared_ptr<const PreparedProgram> sub_;
};

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& r : parts) out += (out.empty() ? "" : "; ") + r;
  return out;
}

Result<void> check_options(const PrepareOptions& o, const program::SemanticProgram& prog, size_t arguments) {
  const auto ops = static_cast<int32_t>(prog.ops().size());
  for (size_t i = 0; i < o.overrides.size(); ++i) {
    const int32_t op = o.overrides[i].op;
    if (op < 0 || op >= ops) {
      return prep_error(ErrorCode::kInvalidArgument, "override of op " + std::to_string(op) + ": the program has " +
                                                         std::to_string(ops) + " ops");
    }
    for (size_t j = 0; j < i; ++j) {
      if (o.overrides[j].op == op) {
        return prep_error(ErrorCode::kInvalidArgument, "op " + std::to_string(op) + " has two overrides");
      }
    }
  }
  for (size_t i = 0; i < o.donate_arguments.size(); ++i) {
    const int32_t a = o.donate_arguments[i];
    if (a < 0 || static_cast<size_t>(a) >= arguments) {
      return prep_error(ErrorCode::kInvalidArgument, "donated argument " + std::to_string(a) + ": the program has " +
                                                         std::to_string(arguments) + " arguments");
    }
    if (std::find(o.donate_arguments.begin(), o.donate_arguments.begin() + static_cast<std::ptrdiff_t>(i), a) !=
        o.donate_arguments.begin() + static_cast<std::ptrdiff_t>(i)) {
      return prep_error(ErrorCode::kInvalidArgument, "argument " + std::to_string(a) + " is donated twice");
    }
  }
  return ok();
}

// The engine domain holding the most input bytes (ties: the lower id); inputs not placed
// in one of the engine's CPU domains do not count; none: the engine's first domain.
int32_t dominant_domain(std::span<const TensorSignature> inputs, std::span<const int32_t> domains) {
  int32_t best = domains.front();
  int64_t best_bytes = 0;
  for (int32_t d : domains) {
    int64_t bytes = 0;
    for (const TensorSignature& t : inputs) {
      if (t.placement == Placement::cpu_domain(d)) bytes = sat_add(bytes, bytes_of(t.dtype, t.shape));
    }
    if (bytes > best_bytes || (bytes == best_bytes && bytes > 0 && d < best)) {
      best = d;
      best_bytes = bytes;
    }
  }
  return best;
}

std::vector<program::Extent> exact_extents(const Shape& s) {
  std::vector<program::Extent> out;
  out.reserve(s.size());
  for (int64_t e : s) out.push_back(program::Extent::exact(e));
  return out;
}

// A program with one input per operand (concrete types) and the op applied to them.
// `lower`: emit the extension's core lowering instead of the op itself.
Result<std::optional<program::CompiledGraph>> one_op_graph(const program::Operation& op, std::span<const DType> dtypes,
                                                          std::span<const Shape> shapes, bool lower,
                                                          std::string* reason) {
  program::ProgramBuilder b;
  std::vector<program::Value> ins;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    TENFERRO_TRY(program::Value v, b.input(program::ValueType{dtypes[i], exact_extents(shapes[i])}));
    ins.push_back(v);
  }
  std::vector<program::Value> outs;
  if (lower) {
    b.set_core_only(true);
    TENFERRO_TRY(program::LoweringOutcome lo, op.extension()->lower_to_core(b, ins));
    if (lo.kind != program::LoweringOutcome::Kind::kLowered) {
      *reason = lo.reason.empty() ? "no core lowering" : lo.reason;
      return std::optional<program::CompiledGraph>();
    }
    outs = std::move(lo.values);
  } else if (op.code() == program::OpCode::kExtension) {
    TENFERRO_TRY(outs, b.extension(op.extension_ptr(), ins));
  } else {
    TENFERRO_TRY(program::Value v, b.op(op.code(), ins, op.attrs()));
    outs.push_back(v);
  }
  TENFERRO_TRY(program::CompiledGraph g, b.finish(outs));
  return std::optional<program::CompiledGraph>(std::move(g));
}

}  // namespace

Result<std::shared_ptr<const PreparedProgram>> Runtime::prepare_uncached(const program::CompiledGraph& graph,
                                                                        std::span<const TensorSignature> signature,
                                                                        const PrepareOptions& options) {
  const program::SemanticProgram& prog = *graph.program;
  auto p = std::make_shared<PreparedProgram>();
  p->snapshot = snapshot_();
  const RuntimeConfigSnapshot& snap = *p->snapshot;
  p->runtime = id_;
  p->epoch = snap.epoch;
  p->program = graph.program;
  p->bindings = graph.bindings;

  // (1) placement
  if (snap.engines.empty()) return prep_error(ErrorCode::kUnsupported, "no engine is registered in this runtime");
  const EngineId engine = options.engine.value_or(EngineId{0});
  if (engine.value >= snap.engines.size()) {
    return prep_error(ErrorCode::kInvalidArgument, "engine id " + std::to_string(engine.value) +
                                                       " is not registered (" + std::to_string(snap.engines.size()) +
                                                       " engines)");
  }
  p->engine = engine;
  p->bridge = snap.engines[engine.value];
  const std::span<const int32_t> domains = p->bridge->domains();
  if (std::find(domains.begin(), domains.end(), options.domain.value_or(domains.front())) == domains.end()) {
    return prep_error(ErrorCode::kInvalidArgument, "engine '" + std::string(p->bridge->name()) + "' has no domain " +
                                                       std::to_string(*options.domain));
  }
  TENFERRO_TRY_VOID(check_options(options, prog, signature.size()));

  // (2) signature and shape guards, before any provider call
  std::vector<Shape> input_shapes;
  size_t args = 0, binds = 0;
  for (const program::InputInfo& in : prog.inputs()) (in.binding ? binds : args)++;
  if (signature.size() != args) {
    return prep_error(ErrorCode::kInvalidArgument, "the program has " + std::to_string(args) +
                                                       " arguments; the signature lists " +
                                                       std::to_string(signature.size()) + " tensors");
  }
  if (graph.bindings.tensors.size() != binds) {
    return prep_error(ErrorCode::kInvalidArgument, "the program declares " + std::to_string(binds) +
                                                       " bindings; the graph holds " +
                                                       std::to_string(graph.bindings.tensors.size()));
  }
  std::vector<TensorSignature> full(signature.begin(), signature.end());
  for (const Tensor& t : graph.bindings.tensors) {
    if (!t.defined()) return prep_error(ErrorCode::kInvalidArgument, "a binding of the graph is null");
    full.push_back(TensorSignature{t.dtype(), t.shape(), t.placement()});
  }
  size_t ai = 0, bi = 0;
  for (const program::InputInfo& in : prog.inputs()) {
    const size_t pos = in.binding ? args + bi : ai;
    const program::ValueType& want = prog.type(in.value);
    const TensorSignature& got = full[pos];
    const std::string what = in.binding ? "binding " + std::to_string(bi) : "argument " + std::to_string(ai);
    if (got.dtype != want.dtype) {
      return prep_error(ErrorCode::kDTypeMismatch, what + " has dtype " + std::string(dtype_name(got.dtype)) +
                                                       ", the program declares " + std::string(dtype_name(want.dtype)));
    }
    if (static_cast<int64_t>(got.shape.size()) != want.rank()) {
      return prep_error(ErrorCode::kShapeMismatch, what + " has shape " + format_dims(got.shape) +
                                                       ", the program declares rank " + std::to_string(want.rank()));
    }
    input_shapes.push_back(got.shape);
    (in.binding ? p->binding_values : p->argument_values).push_back(in.value.index());
    (in.binding ? bi : ai)++;
  }
  p->domain = options.domain ? *options.domain : dominant_domain(full, domains);
  p->signature = std::move(full);
  TENFERRO_TRY(std::vector<int64_t> symbols, prog.bind_shapes(input_shapes));
  p->value_shapes.resize(prog.value_count());
  p->value_dtypes.resize(prog.value_count());
  for (const program::InputInfo& in : prog.inputs()) {
    TENFERRO_TRY(p->value_shapes[static_cast<size_t>(in.value.index())], prog.concrete_shape(in.value, symbols));
    p->value_dtypes[static_cast<size_t>(in.value.index())] = prog.type(in.value).dtype;
  }
  for (const program::Operation& op : prog.ops()) {
    for (program::ValueRef r : op.results()) {
      TENFERRO_TRY(p->value_shapes[static_cast<size_t>(r.index())], prog.concrete_shape(r, symbols));
      p->value_dtypes[static_cast<size_t>(r.index())] = prog.type(r).dtype;
    }
  }

  // (3) resolution
  const DeterminismMode det = snap.config.determinism;
  std::vector<DType> in_dt, out_dt;
  std::vector<Shape> in_sh, out_sh;
  for (const program::Operation& op : prog.ops()) {
    PreparedNode node;
    node.op = &op;
    in_dt.clear(), out_dt.clear(), in_sh.clear(), out_sh.clear();
    for (program::ValueRef v : op.operands()) {
      node.inputs.push_back(v.index());
      in_dt.push_back(prog.type(v).dtype);
      in_sh.push_back(p->value_shapes[static_cast<size_t>(v.index())]);
    }
    for (program::ValueRef v : op.results()) {
      node.outputs.push_back(v.index());
      out_dt.push_back(prog.type(v).dtype);
      out_sh.push_back(p->value_shapes[static_cast<size_t>(v.index())]);
      node.output_bytes = sat_add(node.output_bytes, bytes_of(out_dt.back(), out_sh.back()));
    }
    NodeRequest req{&op, in_dt, in_sh, out_dt, out_sh, p->domain, det};
    std::vector<std::string> reasons;
    const auto take = [&](Result<PrepareCapability<std::shared_ptr<const NodeKernel>>> cap,
                          const std::string& who) -> Result<bool> {
      if (!cap) return cap.error();
      switch (cap->kind()) {
        case PrepareCapability<std::shared_ptr<const NodeKernel>>::Kind::kPrepared:
          node.kernel = std::move(cap->value());
          node.how = who;
          return true;
        case PrepareCapability<std::shared_ptr<const NodeKernel>>::Kind::kNeedsSpecialization:
          return Error(ErrorStage::kPrepare, ErrorCode::kProviderContract, "prepare_for",
                       who + " asked for the specialization '" + cap->reason() + "' of " + op_label(op) +
                           ", but every extent is already exact (a request must strictly widen what is known)");
        case PrepareCapability<std::shared_ptr<const NodeKernel>>::Kind::kUnsupported:
          reasons.push_back(who + ": " + cap->reason());
          return false;
      }
      return false;
    };
    const std::string engine_name(p->bridge->name());
    const int32_t op_index = static_cast<int32_t>(p->nodes.size());
    ProviderKind order[3] = {ProviderKind::kNative, ProviderKind::kLowering, ProviderKind::kFallback};
    size_t candidates = 3;
    const ProviderOverride* forced = nullptr;
    for (const ProviderOverride& o : options.overrides) forced = o.op == op_index ? &o : forced;
    if (forced != nullptr) {
      order[0] = forced->kind;
      candidates = 1;
    } else if (op.code() == program::OpCode::kExtension) {
      for (const FamilyPreference& f : snap.config.family_preferences) {
        if (f.family != op.extension()->family_id()) continue;
        // The preferred kind first, then the rest of the default order.
        ProviderKind rest[3] = {ProviderKind::kNative, ProviderKind::kLowering, ProviderKind::kFallback};
        order[0] = f.first;
        size_t k = 1;
        for (ProviderKind r : rest) {
          if (r != f.first) order[k++] = r;
        }
      }
    }
    bool done = false;
    for (size_t c = 0; c < candidates && !done; ++c) {
      switch (order[c]) {
        case ProviderKind::kNative:
          if (op.code() != program::OpCode::kExtension) {
            TENFERRO_TRY(done, take(p->bridge->prepare_core(req), "native " + engine_name));
            break;
          }
          if (auto it = snap.modules.find(std::pair<std::string, uint32_t>(std::string(op.extension()->family_id()),
                                                                           engine.value));
              it != snap.modules.end()) {
            TENFERRO_TRY(done, take(it->second->prepare(req), "native " + engine_name + " module"));
          } else {
            reasons.push_back("no " + std::string(op.extension()->family_id()) + " module on engine '" + engine_name + "'");
          }
          break;
        case ProviderKind::kLowering: {
          if (op.code() != program::OpCode::kExtension) {
            reasons.push_back("core lowering: a core op has none");
            break;
          }
          std::string why;
          TENFERRO_TRY(std::optional<program::CompiledGraph> lowered, one_op_graph(op, in_dt, in_sh, true, &why));
          if (!lowered) {
            reasons.push_back("core lowering: " + why);
            break;
          }
          std::vector<TensorSignature> sub_sig;
          for (size_t i = 0; i < in_dt.size(); ++i) sub_sig.push_back(TensorSignature{in_dt[i], in_sh[i]});
          PrepareOptions sub_opt;
          sub_opt.engine = engine;
          sub_opt.domain = p->domain;
          TENFERRO_TRY(std::shared_ptr<const PreparedProgram> sub, prepare_for(*lowered, sub_sig, sub_opt));
          node.kernel = std::make_shared<LoweredKernel>(std::move(sub));
          node.how = "core lowering" + (reasons.empty() ? std::string() : " (" + join(reasons) + ")");
          done = true;
          break;
        }
        case ProviderKind::kFallback: {
          if (snap.config.fallback != Fallback::kReferenceInterpreter) {
            reasons.push_back("fallback: none is configured");
            break;
          }
          std::string unused;
          TENFERRO_TRY(std::optional<program::CompiledGraph> g, one_op_graph(op, in_dt, in_sh, false, &unused));
          node.kernel = std::make_shared<InterpreterKernel>(std::move(*g));
          node.how = "configured fallback" + (reasons.empty() ? std::string() : " (" + join(reasons) + ")");
          done = true;
          break;
        }
      }
    }
    if (done && forced != nullptr) node.how += " [override of op " + std::to_string(op_index) + "]";
    if (!done) {
      return prep_error(ErrorCode::kUnsupported,
                        "no provider for " + op_label(op) + " (op " + std::to_string(op_index) + ") on engine '" +
                            engine_name + "'" +
                            (forced != nullptr ? " with its override to " + std::string(provider_kind_name(forced->kind))
                                               : std::string()) +
                            ": " + join(reasons));
    }
    node.view = node.kernel->is_view();
    p->max_inputs = std::max(p->max_inputs, node.inputs.size());
    p->max_outputs = std::max(p->max_outputs, node.outputs.size());
    p->nodes.push_back(std::move(node));
  }

  // (4) buffer plan
  for (program::ValueRef v : prog.outputs()) p->output_values.push_back(v.index());
  plan_buffers(*p, options.donate_arguments, p->bridge->plans_buffers());
  const size_t nv = prog.value_count();
  p->footprint_bytes = static_cast<int64_t>(sizeof(PreparedProgram)) + prog.footprint_bytes() +
                       static_cast<int64_t>(p->nodes.size() * (sizeof(PreparedNode) + 64)) +
                       static_cast<int64_t>(nv * (sizeof(Shape) + 2 * sizeof(int32_t)));
  return std::shared_ptr<const PreparedProgram>(std::move(p));
}

std::string Runtime::explain(const PreparedProgram& p) const {
  std::ostringstream o;
  const program::SemanticProgram& prog = *p.program;
  o << "prepared program " << prog.fingerprint().to_string() << " on engine " << p.engine.value << " ('"
    << p.bridge->name() << "') domain " << p.domain << ", epoch " << p.epoch << "\n";
  o << "  inputs:";
  for (size_t i = 0; i < p.signature.size(); ++i) {
    o << (i ? ", " : " ") << dtype_name(p.signature[i].dtype) << format_dims(p.signature[i].shape);
  }
  o << "\n  nodes: " << p.nodes.size() << ", estimated peak bytes: " << p.peak_bytes << ", workspace buffers: "
    << p.buffer_bytes.size() << " (" << p.workspace_bytes << " bytes per workspace)\n";
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const PreparedNode& n = p.nodes[i];
    o << "  [" << i << "] " << op_label(*n.op) << " ->";
    for (int32_t v : n.outputs) {
      o << " %" << v << " " << dtype_name(prog.type(n.op->results()[0]).dtype)
        << format_dims(p.value_shapes[static_cast<size_t>(v)]);
      const int32_t last = p.last_use[static_cast<size_t>(v)];
      const bool out = std::find(p.output_values.begin(), p.output_values.end(), v) != p.output_values.end();
      o << " (slot " << v << ", live " << i << ".." << (out ? std::string("output") : last < 0 ? std::string("dead") : std::to_string(last)) << ")";
    }
    o << "\n      provider " << n.kernel->provider() << (n.view ? " (view, no copy)" : " (writes " + std::to_string(n.output_bytes) + " bytes)")
      << "; " << n.how;
    if (const std::string planned = n.kernel->describe(); !planned.empty()) o << "\n      planned: " << planned;
    if (n.dest_buffer >= 0) {
      o << "; into buffer b" << n.dest_buffer;
      if (n.in_place_of >= 0) o << " in place of %" << n.in_place_of;
    } else if (n.donate_argument >= 0) {
      o << "; in place of argument " << n.donate_argument << " when it is donated";
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace tenferro::runtime
