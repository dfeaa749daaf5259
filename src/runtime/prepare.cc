// Preparation (resolution, placement, buffer plan, schedule) and explain().

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

#include "prepared.h"
#include "tenferro/program/interpreter.h"

namespace tenferro::runtime {

// Note [Preparation order]: prepare_uncached follows the seed's order. (1) Pin the
// configuration snapshot and place the program on one engine domain (explicit, else the
// first engine's domain holding most input bytes); ops with an OpPlacement run on
// another engine domain. (2) Check every input's dtype and rank against the
// program and bind the symbols from the concrete shapes, evaluating every shape guard —
// all before any provider is asked. (3) Resolve each op: the engine's native core
// provider or its extension module for the family; on kUnsupported the extension's core
// lowering (a core-only sub-program prepared recursively through the plan cache and run
// inside the same executor entry); then the configured fallback (the reference
// interpreter on a one-op program); else a typed kUnsupported naming every reason. A
// kNeedsSpecialization answer is a provider contract error: every extent is already
// exact, so no request can strictly widen what is known. Transfers are inserted where an
// operand's storage changes engine (Note [Transfers]). (4) The schedule: node order (Note
// [Schedule order]), the event domains a run begins in first-use order, segments (one
// executor entry per contiguous stretch on one engine domain), node leases. (5) The
// buffer plan: each value's last use; a node drops the slots whose last use it is
// (outputs are kept), so dead intermediates return to their pool during the run; the
// peak of live bytes is estimated by simulating that order (views count nothing), in all
// and per engine domain (admission; a plan over a memory budget fails here).

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

namespace {

// The engine whose storage holds `placement`: `preferred` when it does, else the lowest
// engine id that does; -1 when none does.
int32_t holder_of(const RuntimeConfigSnapshot& snap, const Placement& placement, uint32_t preferred) {
  if (snap.engines[preferred]->holds(placement)) return static_cast<int32_t>(preferred);
  for (size_t e = 0; e < snap.engines.size(); ++e) {
    if (snap.engines[e]->holds(placement)) return static_cast<int32_t>(e);
  }
  return -1;
}

bool shares_storage(const EngineBridge& a, const EngineBridge& b) {
  return a.storage_class() == StorageClass::kHost && b.storage_class() == StorageClass::kHost;
}

// Note [Schedule order]: list scheduling over the node DAG. Among the ready nodes, one
// that runs on an asynchronous event domain goes first (its work then overlaps whatever
// the immediate domains compute afterwards), then the lowest original position. With
// only immediate domains this is exactly the original (SSA) order. Deterministic.
std::vector<size_t> schedule_order(const std::vector<PreparedNode>& nodes, size_t values,
                                   const std::vector<bool>& async_engine) {
  const size_t n = nodes.size();
  std::vector<int32_t> producer(values, -1);
  for (size_t i = 0; i < n; ++i) {
    for (int32_t v : nodes[i].outputs) producer[static_cast<size_t>(v)] = static_cast<int32_t>(i);
  }
  std::vector<int32_t> pending(n, 0);
  std::vector<std::vector<size_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (int32_t v : nodes[i].inputs) {
      const int32_t p = producer[static_cast<size_t>(v)];
      if (p >= 0) {
        ++pending[i];
        users[static_cast<size_t>(p)].push_back(i);
      }
    }
  }
  bool any_async = false;
  for (const PreparedNode& node : nodes) any_async = any_async || async_engine[node.engine];
  std::vector<size_t> order;
  order.reserve(n);
  if (!any_async) {
    for (size_t i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  std::vector<bool> done(n, false);
  for (size_t k = 0; k < n; ++k) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (done[i] || pending[i] != 0) continue;
      if (best == n || (async_engine[nodes[i].engine] && !async_engine[nodes[best].engine])) best = i;
    }
    done[best] = true;
    order.push_back(best);
    for (size_t u : users[best]) --pending[u];
  }
  return order;
}

}  // namespace

// Note [Transfers]: every value has an endpoint: an argument's is the engine whose
// storage holds its placement (the program's engine when it does), an op result's is the
// engine the op runs on. When an op runs on an engine that cannot read an operand's
// storage (a different engine, unless both keep host memory), preparation inserts one
// scheduled transfer node for that (value, engine) pair right before its first consumer,
// prepared by the transfer provider registered for the endpoint pair; no provider is a
// kPrepare/kUnsupported error. Transfers are first-class nodes: they appear in explain(),
// take part in the buffer plan and the schedule, and bridge the event domains (the
// scheduler host-waits on source-domain tokens, then launches the copy on the
// destination's run). Nothing else moves data between engines; program outputs are
// returned where they were computed.
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
  const auto check_engine = [&](EngineId e, std::optional<int32_t> d) -> Result<void> {
    if (e.value >= snap.engines.size()) {
      return prep_error(ErrorCode::kInvalidArgument, "engine id " + std::to_string(e.value) + " is not registered (" +
                                                         std::to_string(snap.engines.size()) + " engines)");
    }
    const std::span<const int32_t> ds = snap.engines[e.value]->domains();
    if (d && std::find(ds.begin(), ds.end(), *d) == ds.end()) {
      return prep_error(ErrorCode::kInvalidArgument, "engine '" + std::string(snap.engines[e.value]->name()) +
                                                         "' has no domain " + std::to_string(*d));
    }
    return ok();
  };
  TENFERRO_TRY_VOID(check_engine(engine, options.domain));
  p->engine = engine;
  p->bridge = snap.engines[engine.value];
  const std::span<const int32_t> domains = p->bridge->domains();
  TENFERRO_TRY_VOID(check_options(options, prog, signature.size()));
  const auto ops_count = static_cast<int32_t>(prog.ops().size());
  for (size_t i = 0; i < options.placements.size(); ++i) {
    const OpPlacement& pl = options.placements[i];
    if (pl.op < 0 || pl.op >= ops_count) {
      return prep_error(ErrorCode::kInvalidArgument, "placement of op " + std::to_string(pl.op) +
                                                         ": the program has " + std::to_string(ops_count) + " ops");
    }
    for (size_t j = 0; j < i; ++j) {
      if (options.placements[j].op == pl.op) {
        return prep_error(ErrorCode::kInvalidArgument, "op " + std::to_string(pl.op) + " has two placements");
      }
    }
    TENFERRO_TRY_VOID(check_engine(pl.engine, pl.domain));
  }

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
  const size_t nv = prog.value_count();
  std::vector<uint32_t> value_engine(nv, engine.value);
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
    const int32_t holder = holder_of(snap, got.placement, engine.value);
    if (holder < 0) {
      return prep_error(ErrorCode::kUnsupported, what + " lives at " + got.placement.to_string() +
                                                     ", which no registered engine holds");
    }
    value_engine[static_cast<size_t>(in.value.index())] = static_cast<uint32_t>(holder);
    input_shapes.push_back(got.shape);
    (in.binding ? p->binding_values : p->argument_values).push_back(in.value.index());
    (in.binding ? bi : ai)++;
  }
  p->domain = options.domain ? *options.domain : dominant_domain(full, domains);
  p->signature = std::move(full);
  TENFERRO_TRY(std::vector<int64_t> symbols, prog.bind_shapes(input_shapes));
  p->value_shapes.resize(nv);
  p->value_dtypes.resize(nv);
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

  // (3) resolution, with transfers (Note [Transfers])
  const DeterminismMode det = snap.config.determinism;
  std::vector<DType> in_dt, out_dt;
  std::vector<Shape> in_sh, out_sh;
  std::map<std::pair<int32_t, uint32_t>, int32_t> transferred;  // (value, engine) -> transfer result
  std::vector<int32_t> value_domain(nv, -1);
  int32_t op_index = -1;
  for (const program::Operation& op : prog.ops()) {
    ++op_index;
    PreparedNode node;
    node.op = &op;
    node.op_index = op_index;
    node.engine = engine.value;
    node.domain = p->domain;
    for (const OpPlacement& pl : options.placements) {
      if (pl.op != op_index) continue;
      node.engine = pl.engine.value;
      node.domain = pl.domain.value_or(snap.engines[pl.engine.value]->domains().front());
    }
    const EngineBridge& bridge = *snap.engines[node.engine];
    in_dt.clear(), out_dt.clear(), in_sh.clear(), out_sh.clear();
    for (program::ValueRef v : op.operands()) {
      int32_t value = v.index();
      const uint32_t src = value_engine[static_cast<size_t>(value)];
      if (src != node.engine && !shares_storage(*snap.engines[src], bridge)) {
        const auto key = std::make_pair(value, node.engine);
        if (auto it = transferred.find(key); it != transferred.end()) {
          value = it->second;
        } else {
          const TransferEndpoint from{EngineId{src}, snap.engines[src]->storage_class()};
          const TransferEndpoint to{EngineId{node.engine}, bridge.storage_class()};
          const auto vs = static_cast<size_t>(value);
          const std::string route = "from engine " + std::to_string(src) + " ('" +
                                    std::string(snap.engines[src]->name()) + "', " +
                                    std::string(storage_class_name(from.storage)) + ") to engine " +
                                    std::to_string(node.engine) + " ('" + std::string(bridge.name()) + "', " +
                                    std::string(storage_class_name(to.storage)) + ")";
          const auto pit = snap.transfers.find(std::make_pair(from, to));
          if (pit == snap.transfers.end()) {
            return prep_error(ErrorCode::kUnsupported, "op " + std::to_string(op_index) + " (" + op_label(op) +
                                                           ") needs %" + std::to_string(value) + " moved " + route +
                                                           ", but no transfer provider is registered for that pair");
          }
          const int32_t src_domain = value_domain[vs] >= 0 ? value_domain[vs] : snap.engines[src]->domains().front();
          TransferRequest treq{p->value_dtypes[vs], p->value_shapes[vs], from, to, src_domain, node.domain};
          TENFERRO_TRY(auto cap, pit->second->prepare(treq));
          if (cap.kind() != PrepareCapability<std::shared_ptr<const NodeKernel>>::Kind::kPrepared) {
            return prep_error(ErrorCode::kUnsupported, "transfer provider '" + std::string(pit->second->name()) +
                                                           "' cannot move %" + std::to_string(value) + " " + route +
                                                           ": " + cap.reason());
          }
          PreparedNode t;
          t.kernel = std::move(cap.value());
          t.engine = node.engine;
          t.domain = node.domain;
          t.src_engine = src;
          t.src_domain = src_domain;
          t.inputs.push_back(value);
          const auto tv = static_cast<int32_t>(p->value_shapes.size());
          t.outputs.push_back(tv);
          p->value_shapes.push_back(p->value_shapes[vs]);
          p->value_dtypes.push_back(p->value_dtypes[vs]);
          value_engine.push_back(node.engine);
          value_domain.push_back(node.domain);
          t.output_bytes = bytes_of(p->value_dtypes[vs], p->value_shapes[vs]);
          t.how = "scheduled transfer " + route + " by '" + std::string(pit->second->name()) + "'";
          p->max_inputs = std::max<size_t>(p->max_inputs, 1);
          p->max_outputs = std::max<size_t>(p->max_outputs, 1);
          ++p->transfers;
          transferred.emplace(key, tv);
          p->nodes.push_back(std::move(t));
          value = tv;
        }
      }
      node.inputs.push_back(value);
      in_dt.push_back(p->value_dtypes[static_cast<size_t>(value)]);
      in_sh.push_back(p->value_shapes[static_cast<size_t>(value)]);
    }
    for (program::ValueRef v : op.results()) {
      node.outputs.push_back(v.index());
      value_engine[static_cast<size_t>(v.index())] = node.engine;
      value_domain[static_cast<size_t>(v.index())] = node.domain;
      out_dt.push_back(prog.type(v).dtype);
      out_sh.push_back(p->value_shapes[static_cast<size_t>(v.index())]);
      node.output_bytes = sat_add(node.output_bytes, bytes_of(out_dt.back(), out_sh.back()));
    }
    NodeRequest req{&op, in_dt, in_sh, out_dt, out_sh, node.domain, det};
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
    const std::string engine_name(bridge.name());
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
            TENFERRO_TRY(done, take(bridge.prepare_core(req), "native " + engine_name));
            break;
          }
          if (auto it = snap.modules.find(std::pair<std::string, uint32_t>(std::string(op.extension()->family_id()),
                                                                           node.engine));
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
          for (size_t i = 0; i < in_dt.size(); ++i) {
            sub_sig.push_back(TensorSignature{in_dt[i], in_sh[i], bridge.placement(node.domain)});
          }
          PrepareOptions sub_opt;
          sub_opt.engine = EngineId{node.engine};
          sub_opt.domain = node.domain;
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
          if (bridge.storage_class() != StorageClass::kHost) {
            reasons.push_back("fallback: the reference interpreter reads host memory only");
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

  // (4) the schedule: order (Note [Schedule order]), event-domain runs in first-use
  // order, segments (one executor entry each), node leases
  std::vector<bool> async_engine(snap.engines.size(), false);
  for (size_t e = 0; e < snap.engines.size(); ++e) async_engine[e] = !snap.drivers[e]->immediate();
  {
    const std::vector<size_t> order = schedule_order(p->nodes, p->value_shapes.size(), async_engine);
    std::vector<PreparedNode> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) sorted.push_back(std::move(p->nodes[i]));
    p->nodes = std::move(sorted);
  }
  p->run_of_engine.assign(snap.engines.size(), -1);
  const auto use_engine = [&](uint32_t e) {
    if (p->run_of_engine[e] < 0) {
      p->run_of_engine[e] = static_cast<int32_t>(p->runs.size());
      p->runs.push_back(e);
      p->immediate = p->immediate && !async_engine[e];
    }
    return p->run_of_engine[e];
  };
  for (size_t i = 0; i < p->nodes.size(); ++i) {
    PreparedNode& n = p->nodes[i];
    if (n.op == nullptr) use_engine(n.src_engine);
    n.run = use_engine(n.engine);
    for (const LaunchLimit& l : snap.config.launch_limits) {
      n.leased = n.leased || (l.engine.value == n.engine && l.domain == n.domain) ||
                 (n.op == nullptr && l.engine.value == n.src_engine && l.domain == n.src_domain);
    }
    if (p->segments.empty() || p->segments.back().engine != n.engine || p->segments.back().domain != n.domain) {
      p->segments.push_back(Segment{n.engine, n.domain, static_cast<int32_t>(i), static_cast<int32_t>(i)});
    }
    p->segments.back().end = static_cast<int32_t>(i) + 1;
  }

  // (5) buffer plan
  for (program::ValueRef v : prog.outputs()) p->output_values.push_back(v.index());
  plan_buffers(*p, options.donate_arguments, p->bridge->plans_buffers());
  // Per-domain peaks for admission: the bytes a node writes count in its domain from its
  // launch until the release of the value (views count nothing; arguments are the
  // caller's). Note [Admission] in submit.cc.
  {
    std::vector<int64_t> live;
    std::vector<std::pair<uint32_t, int32_t>> keys;
    std::vector<int32_t> owner_key(p->value_shapes.size(), -1);
    std::vector<int64_t> owned(p->value_shapes.size(), 0);
    const auto key_of = [&](uint32_t e, int32_t d) {
      for (size_t k = 0; k < keys.size(); ++k) {
        if (keys[k] == std::make_pair(e, d)) return static_cast<int32_t>(k);
      }
      keys.emplace_back(e, d);
      live.push_back(0);
      p->domain_peaks.push_back(DomainPeak{e, d, 0});
      return static_cast<int32_t>(keys.size() - 1);
    };
    for (const PreparedNode& n : p->nodes) {
      const int32_t k = key_of(n.engine, n.domain);
      for (int32_t v : n.outputs) {
        const auto u = static_cast<size_t>(v);
        owned[u] = n.view ? 0 : bytes_of(p->value_dtypes[u], p->value_shapes[u]);
        owner_key[u] = k;
        live[static_cast<size_t>(k)] = sat_add(live[static_cast<size_t>(k)], owned[u]);
      }
      for (size_t j = 0; j < keys.size(); ++j) {
        p->domain_peaks[j].bytes = std::max(p->domain_peaks[j].bytes, live[j]);
      }
      for (int32_t v : n.release) {
        const auto u = static_cast<size_t>(v);
        if (owner_key[u] >= 0) {
          int64_t& l = live[static_cast<size_t>(owner_key[u])];
          l = sat_sub_term(l, owned[u]);
        }
        owned[u] = 0;
      }
    }
  }
  for (const MemoryBudget& b : snap.config.memory_budgets) {
    for (const DomainPeak& d : p->domain_peaks) {
      if (d.engine == b.engine.value && d.domain == b.domain && d.bytes > b.bytes) {
        return prep_error(ErrorCode::kResourceExhausted,
                          "the plan needs an estimated " + std::to_string(d.bytes) + " bytes at once in domain " +
                              std::to_string(d.domain) + " of engine " + std::to_string(d.engine) +
                              ", more than its memory budget of " + std::to_string(b.bytes) +
                              " bytes: it could never be admitted");
      }
    }
  }
  const size_t nvals = p->value_shapes.size();
  p->footprint_bytes = static_cast<int64_t>(sizeof(PreparedProgram)) + prog.footprint_bytes() +
                       static_cast<int64_t>(p->nodes.size() * (sizeof(PreparedNode) + 64)) +
                       static_cast<int64_t>(nvals * (sizeof(Shape) + 2 * sizeof(int32_t)));
  return std::shared_ptr<const PreparedProgram>(std::move(p));
}

std::string node_label(const PreparedNode& n) {
  return n.op == nullptr ? std::string("transfer") : op_label(*n.op);
}

std::string Runtime::explain(const PreparedProgram& p) const {
  std::ostringstream o;
  const program::SemanticProgram& prog = *p.program;
  const RuntimeConfigSnapshot& snap = *p.snapshot;
  o << "prepared program " << prog.fingerprint().to_string() << " on engine " << p.engine.value << " ('"
    << p.bridge->name() << "') domain " << p.domain << ", epoch " << p.epoch << "\n";
  o << "  inputs:";
  for (size_t i = 0; i < p.signature.size(); ++i) {
    o << (i ? ", " : " ") << dtype_name(p.signature[i].dtype) << format_dims(p.signature[i].shape);
  }
  o << "\n  nodes: " << p.nodes.size() << ", estimated peak bytes: " << p.peak_bytes << ", workspace buffers: "
    << p.buffer_bytes.size() << " (" << p.workspace_bytes << " bytes per workspace)\n";
  if (p.runs.size() > 1 || p.transfers > 0) {
    o << "  event domains (first-use order):";
    for (uint32_t e : p.runs) {
      o << " " << e << " ('" << snap.engines[e]->name() << "', "
        << (snap.drivers[e]->immediate() ? "immediate" : "asynchronous") << ")";
    }
    o << "; transfers: " << p.transfers << "; executor entries: " << p.segments.size() << "\n";
  }
  for (const DomainPeak& d : p.domain_peaks) {
    for (const MemoryBudget& b : snap.config.memory_budgets) {
      if (b.engine.value == d.engine && b.domain == d.domain) {
        o << "  admission: engine " << d.engine << " domain " << d.domain << " reserves " << d.bytes << " of "
          << b.bytes << " budgeted bytes\n";
      }
    }
  }
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const PreparedNode& n = p.nodes[i];
    o << "  [" << i << "] " << node_label(n) << " ->";
    for (int32_t v : n.outputs) {
      o << " %" << v << " " << dtype_name(p.value_dtypes[static_cast<size_t>(v)])
        << format_dims(p.value_shapes[static_cast<size_t>(v)]);
      const int32_t last = p.last_use[static_cast<size_t>(v)];
      const bool out = std::find(p.output_values.begin(), p.output_values.end(), v) != p.output_values.end();
      o << " (slot " << v << ", live " << i << ".." << (out ? std::string("output") : last < 0 ? std::string("dead") : std::to_string(last)) << ")";
    }
    if (n.op == nullptr) o << " from %" << n.inputs[0];
    if (n.engine != p.engine.value || n.domain != p.domain) {
      o << " on engine " << n.engine << " ('" << snap.engines[n.engine]->name() << "') domain " << n.domain;
    }
    o << "\n      provider " << n.kernel->provider() << (n.view ? " (view, no copy)" : " (writes " + std::to_string(n.output_bytes) + " bytes)")
      << "; " << n.how;
    if (n.leased) o << "; takes a node lease";
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
