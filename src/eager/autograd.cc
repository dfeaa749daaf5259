// Eager reverse-mode AD: the tape, backward by direct rules or by program replay.

#include "tenferro/eager/autograd.h"

#include <unordered_map>

#include "detail.h"
#include "tenferro/ad/ad.h"
#include "tenferro/cpu/elementwise.h"

namespace tenferro::eager {

// Note [Eager tape]: a call records only when its context has grad enabled and an input
// carries a record (Detail::tracing: a few pointer loads, nothing built otherwise). The
// record (AdNode) owns the op's program form (a closure over exact shapes and
// attributes) and its operands as EagerTensors, so the values it needs survive the
// caller dropping them, and the graph of records is a DAG kept alive by its results.
//
// A reverse pass takes one of two routes (decide_backward_route): the direct rules
// (Note [Eager direct backward]) when every record on the path has one, else the replay.
// The replay turns the DAG reachable from `loss` into one program: leaves become
// argument inputs (first reached first), operands without a record become binding
// inputs (captured, never copied), every record re-emits its op. The runtime's
// AdContext takes the gradient (grad: linearize then transpose, the rules of the
// program path; cached by program fingerprint, so a training loop that records the same
// computation each step transforms once), and the runtime runs it through its prepared
// plan cache. The replay recomputes the forward values the derivative needs inside the
// gradient program (rematerialization) instead of keeping every intermediate result.
// Gradients are computed in full before any accumulator changes. Ops without a program
// form (linalg entry points that run natively) mark their results unsupported: backward
// through them is a typed kUnsupported error, never a silently wrong gradient.

// Note [Tape teardown]: records own their operands, whose records own theirs, so the
// last handle to the end of a long chain (a loop of a hundred thousand steps) used to free
// it through as many nested destructor calls and overflow the stack. A record's
// destructor instead takes the records of its operands that nothing else holds into a
// work list and frees them one at a time, taking theirs in turn before each dies: every
// nested destructor finds its operands already detached, so the depth stays one. Records
// still held elsewhere (by a tensor the caller keeps, or by another record) are only
// released, as before.
AdNode::~AdNode() {
  std::vector<std::shared_ptr<AdNode>> pending;
  const auto take = [&pending](std::vector<EagerTensor>& operands) {
    for (EagerTensor& t : operands) {
      std::shared_ptr<AdNode> n = t.ad_node();
      if (!n) continue;
      t.set_ad_node(nullptr);
      if (n.use_count() == 1) pending.push_back(std::move(n));  // else: only released here
    }
  };
  take(inputs);
  while (!pending.empty()) {
    std::shared_ptr<AdNode> n = std::move(pending.back());
    pending.pop_back();
    take(n->inputs);
  }  // each n dies at the end of its iteration, its operands already taken
}

namespace {
bool any_traced(std::span<const EagerTensor* const> inputs) noexcept {
  for (const EagerTensor* t : inputs) {
    if (t->ad_node() && t->ad_node()->traced) return true;
  }
  return false;
}
}  // namespace

Result<EagerTensor> Detail::record(Result<EagerTensor> r, std::span<const EagerTensor* const> inputs, const char* op,
                                   AdNode::Build build, AdNode::Vjp vjp) {
  if (!r) return r;
  const bool traced = any_traced(inputs);
  if (!is_inexact(r->dtype()) && !traced) return r;
  auto node = std::make_shared<AdNode>();
  node->traced = traced;
  node->build = std::move(build);
  node->vjp = std::move(vjp);
  node->op = op;
  node->inputs.reserve(inputs.size());
  for (const EagerTensor* t : inputs) node->inputs.push_back(*t);
  r->ad_ = std::move(node);
  return r;
}

void Detail::record_outputs(std::vector<EagerTensor>& results, std::span<const EagerTensor* const> inputs,
                            const char* op, Context::ProgramForm form) {
  // One shared form; each output's record emits it and takes its output (the replayed
  // program holds one op per used output, merged by the compiler's CSE).
  auto shared = std::make_shared<const Context::ProgramForm>(std::move(form));
  const bool traced = any_traced(inputs);
  for (size_t k = 0; k < results.size(); ++k) {
    EagerTensor& t = results[k];
    if (!t.defined() || (!is_inexact(t.dtype()) && !traced)) continue;
    auto node = std::make_shared<AdNode>();
    node->traced = traced;
    node->op = op;
    node->build = [shared, k, op](program::ProgramBuilder& b,
                                  std::span<const program::Value> v) -> Result<program::Value> {
      TENFERRO_TRY(std::vector<program::Value> outs, (*shared)(b, v));
      if (k >= outs.size() || !outs[k].valid()) {  // e.g. an integer result the form does not express
        return usage_error(ErrorCode::kUnsupported, op,
                           "result " + std::to_string(k) + " has no program form (the form gives " +
                               std::to_string(outs.size()) + " of the call's results)");
      }
      return outs[k];
    };
    for (const EagerTensor* in : inputs) node->inputs.push_back(*in);
    t.ad_ = std::move(node);
  }
}

void Detail::record_unsupported(std::vector<EagerTensor>& results, std::span<const EagerTensor* const> inputs,
                                const char* op, std::string why) {
  const bool traced = any_traced(inputs);
  for (EagerTensor& t : results) {
    if (!t.defined() || (!is_inexact(t.dtype()) && !traced)) continue;
    auto node = std::make_shared<AdNode>();
    node->traced = traced;
    node->op = op;
    node->unsupported =
        why.empty() ? std::string(op) + " has no AD rule yet (it runs natively, without a program form)" : why;
    for (const EagerTensor* in : inputs) node->inputs.push_back(*in);
    t.ad_ = std::move(node);
  }
}

Result<EagerTensor> requires_grad(const EagerTensor& x) {
  if (!x.defined()) return usage_error(ErrorCode::kInvalidArgument, "requires_grad", "undefined tensor");
  if (!is_inexact(x.dtype())) {
    return usage_error(ErrorCode::kDTypeMismatch, "requires_grad",
                       "only f32, f64, c64 and c128 tensors can require grad, not " + std::string(dtype_name(x.dtype())));
  }
  EagerTensor leaf = x;
  leaf.set_ad_node(std::make_shared<AdNode>());
  return leaf;
}

Result<EagerTensor> trace_input(const EagerTensor& x) {
  if (!x.defined()) return usage_error(ErrorCode::kInvalidArgument, "trace_input", "undefined tensor");
  EagerTensor leaf = x;
  auto node = std::make_shared<AdNode>();
  node->traced = true;
  leaf.set_ad_node(std::move(node));
  return leaf;
}

EagerTensor detach(const EagerTensor& x) {
  EagerTensor d = x;
  d.set_ad_node(nullptr);
  return d;
}

EagerTensor grad_of(const EagerTensor& leaf) {
  const auto& node = leaf.ad_node();
  if (!node) return {};
  std::lock_guard lock(node->mu);
  return node->grad;
}

void zero_grad(const EagerTensor& leaf) {
  const auto& node = leaf.ad_node();
  if (!node) return;
  std::lock_guard lock(node->mu);
  node->grad = EagerTensor();
}

namespace {

struct Replay {
  program::CompiledGraph graph;
  std::vector<std::shared_ptr<AdNode>> leaves;  // argument inputs, in order
  std::vector<Tensor> leaf_values;
  std::vector<EagerTensor> other_leaves;  // the argument inputs after the bound ones
};

program::ValueType type_of(const EagerTensor& t) {
  program::ValueType v{t.dtype(), {}};
  for (int64_t e : t.shape()) v.shape.push_back(program::Extent::exact(e));
  return v;
}

// The program of the records reachable from `roots` (Note [Eager tape]), iteratively
// (long chains of records do not grow the call stack). `bound` leaves become the first
// argument inputs, in order; other leaves reached become argument inputs as they are
// first reached (`capture_other_leaves` false: the AD replay) or captured bindings
// (true: program_of). Roots without a record are captured.
Result<Replay> replay(std::span<const EagerTensor* const> roots, std::span<const EagerTensor> bound,
                      bool capture_other_leaves, const char* op) {
  Replay out;
  program::ProgramBuilder b;
  std::unordered_map<const AdNode*, program::Value> done;
  for (const EagerTensor& leaf : bound) {
    TENFERRO_TRY(program::Value v, b.input(type_of(leaf)));
    done.emplace(leaf.ad_node().get(), v);
    out.leaves.push_back(leaf.ad_node());
    out.leaf_values.push_back(leaf.tensor());
  }
  struct Frame {
    const EagerTensor* t;
    size_t next;
  };
  std::vector<program::Value> outputs;
  for (const EagerTensor* root : roots) {
    if (!root->ad_node()) {
      TENFERRO_TRY(program::Value c, b.capture(root->tensor()));
      outputs.push_back(c);
      continue;
    }
    std::vector<Frame> stack{{root, 0}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const AdNode* node = f.t->ad_node().get();
      if (done.count(node)) {
        stack.pop_back();
        continue;
      }
      if (!node->unsupported.empty()) return usage_error(ErrorCode::kUnsupported, op, node->unsupported);
      if (node->leaf()) {
        program::Value v;
        if (capture_other_leaves) {
          TENFERRO_TRY(v, b.capture(f.t->tensor()));
        } else {
          TENFERRO_TRY(v, b.input(type_of(*f.t)));
          out.leaves.push_back(f.t->ad_node());
          out.leaf_values.push_back(f.t->tensor());
          out.other_leaves.push_back(*f.t);
        }
        done.emplace(node, v);
        stack.pop_back();
        continue;
      }
      if (f.next < node->inputs.size()) {
        const EagerTensor& in = node->inputs[f.next++];
        if (in.ad_node() && !done.count(in.ad_node().get())) stack.push_back(Frame{&in, 0});  // invalidates f
        continue;
      }
      std::vector<program::Value> operands;
      operands.reserve(node->inputs.size());
      for (const EagerTensor& in : node->inputs) {
        if (in.ad_node()) {
          operands.push_back(done.at(in.ad_node().get()));
        } else {
          TENFERRO_TRY(program::Value c, b.capture(in.tensor()));
          operands.push_back(c);
        }
      }
      b.set_provenance(node->op);
      TENFERRO_TRY(program::Value v, node->build(b, operands));
      done.emplace(node, v);
      stack.pop_back();
    }
    outputs.push_back(done.at(root->ad_node().get()));
  }
  TENFERRO_TRY(out.graph, b.finish(outputs));
  return out;
}

Result<Replay> replay(const EagerTensor& root, const char* op) {
  const EagerTensor* const roots[1] = {&root};
  return replay(roots, {}, false, op);
}

// Runs a transformed graph on the root's runtime; arguments are the replay's leaves plus
// `extra`.
Result<std::vector<Tensor>> run(const EagerTensor& root, const program::CompiledGraph& g, const Replay& r,
                                std::span<const Tensor> extra) {
  EagerRuntime& rt = *root.runtime();
  std::vector<Tensor> args = r.leaf_values;
  args.insert(args.end(), extra.begin(), extra.end());
  runtime::PrepareOptions opts;
  opts.engine = rt.engine();
  if (root.domain()) opts.domain = *root.domain();
  return rt.runtime().run(g, args, opts);
}

Result<void> check_root(const EagerTensor& t, const char* op) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined tensor");
  if (!t.ad_node()) {
    return usage_error(ErrorCode::kInvalidArgument, op,
                       "the tensor does not require grad (no input of its computation was made with requires_grad, "
                       "or it was computed with grad disabled)");
  }
  return ok();
}

Result<void> check_seed(const EagerTensor& root, const EagerTensor& seed, const char* op) {
  if (seed.dtype() != root.dtype() || seed.shape() != root.shape()) {
    return usage_error(ErrorCode::kInvalidArgument, op,
                       "the cotangent must have the output's dtype " + std::string(dtype_name(root.dtype())) +
                           " and shape");
  }
  return ok();
}

// The records reachable from `root` in post-order (every input before its users, the
// root last), iteratively; and the first record without a direct rule.
// Node -> position maps of a walk: a flat list searched linearly while the tape is
// small (most eager backward calls), a hash map past kFlatNodes.
class NodeIndex {
 public:
  static constexpr size_t kFlatNodes = 32;
  // Inserts (node, value) unless present; true when inserted.
  bool insert(const AdNode* node, size_t value) {
    if (map_.empty()) {
      for (const auto& [n, v] : flat_) {
        if (n == node) return false;
      }
      if (flat_.size() < kFlatNodes) {
        flat_.emplace_back(node, value);
        return true;
      }
      for (const auto& [n, v] : flat_) map_.emplace(n, v);
    }
    return map_.emplace(node, value).second;
  }
  size_t at(const AdNode* node) const {
    if (map_.empty()) {
      for (const auto& [n, v] : flat_) {
        if (n == node) return v;
      }
    }
    return map_.at(node);
  }
  void set(const AdNode* node, size_t value) {
    if (map_.empty()) {
      for (auto& [n, v] : flat_) {
        if (n == node) v = value;
      }
      return;
    }
    map_[node] = value;
  }

 private:
  std::vector<std::pair<const AdNode*, size_t>> flat_;
  std::unordered_map<const AdNode*, size_t> map_;
};

struct TapeWalk {
  std::vector<const EagerTensor*> order;
  NodeIndex index;  // node -> position in `order`
  const AdNode* without_direct = nullptr;
};

Result<TapeWalk> walk(const EagerTensor& root, const char* op) {
  TapeWalk w;
  struct Frame {
    const EagerTensor* t;
    size_t next;
  };
  std::vector<Frame> stack{{&root, 0}};
  // A node is in `w.index` once pushed (the walk meets a DAG); its position is set when
  // it is finished.
  w.index.insert(root.ad_node().get(), 0);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const AdNode* node = f.t->ad_node().get();
    if (!node->unsupported.empty()) return usage_error(ErrorCode::kUnsupported, op, node->unsupported);
    if (!node->leaf() && f.next < node->inputs.size()) {
      const EagerTensor& in = node->inputs[f.next++];
      if (in.ad_node() && w.index.insert(in.ad_node().get(), 0)) stack.push_back(Frame{&in, 0});
      continue;
    }
    if (!node->leaf() && !node->vjp && w.without_direct == nullptr) w.without_direct = node;
    w.index.set(node, w.order.size());
    w.order.push_back(f.t);
    stack.pop_back();
  }
  return w;
}

// The gradients of one reverse pass: per leaf reached, its cotangent (undefined: zero).
struct Gradients {
  std::vector<std::shared_ptr<AdNode>> leaves;
  std::vector<EagerTensor> grads;
};

// Note [Eager direct backward]: the direct route walks the records from the root to the
// leaves in reverse post-order, calls each record's direct rule (vjp.cc) on its
// accumulated cotangent and adds the results into its inputs' cotangents, all with
// eager operations under the loss's context with grad disabled: no program is built,
// compiled or looked up, which is what makes a small backward cheap (the replay pays
// for building and fingerprinting the tape's program on every call). The direct rules
// are the program path's rules written with eager operations (same formulas, same
// complex convention), and the tests compare both routes on every op that has one.
// decide_backward_route is the one place that chooses.
Result<Gradients> direct_reverse(const EagerTensor& root, const EagerTensor& seed, const TapeWalk& w, const char* op) {
  const Context c = Context::of(root).no_grad();
  std::vector<EagerTensor> cts(w.order.size());
  if (seed.defined()) {
    cts.back() = seed;
  } else {
    TENFERRO_TRY(cts.back(), c.full({}, c128(1.0, 0.0), root.dtype()));
  }
  std::vector<EagerTensor> in_cts;
  for (size_t i = w.order.size(); i-- > 0;) {
    const AdNode& node = *w.order[i]->ad_node();
    if (node.leaf() || !cts[i].defined()) continue;
    in_cts.assign(node.inputs.size(), EagerTensor());
    TENFERRO_TRY_VOID(node.vjp(c, node, cts[i], in_cts));
    cts[i] = EagerTensor();  // released as soon as it is used
    for (size_t j = 0; j < in_cts.size(); ++j) {
      const EagerTensor& in = node.inputs[j];
      if (!in_cts[j].defined() || !in.ad_node()) continue;
      if (in_cts[j].dtype() != in.dtype() || in_cts[j].shape() != in.shape()) {
        return Error(ErrorStage::kUsage, ErrorCode::kInternal, op,
                     "the direct rule of " + node.op + " gave a cotangent of the wrong type for operand " +
                         std::to_string(j));
      }
      EagerTensor& acc = cts[w.index.at(in.ad_node().get())];
      if (acc.defined()) {
        TENFERRO_TRY(acc, c.add(acc, in_cts[j]));
      } else {
        acc = std::move(in_cts[j]);
      }
    }
  }
  Gradients g;
  for (size_t i = 0; i < w.order.size(); ++i) {
    if (!w.order[i]->ad_node()->leaf()) continue;
    g.leaves.push_back(w.order[i]->ad_node());
    if (!cts[i].defined()) {  // reached only through constant parts (imag of a real tensor)
      TENFERRO_TRY(cts[i], c.zeros(w.order[i]->shape(), w.order[i]->dtype()));
    }
    g.grads.push_back(std::move(cts[i]));
  }
  return g;
}

// Gradients of `root` by the replay's leaves: grad for a real scalar without seed, vjp
// with it.
Result<Gradients> replay_reverse(const EagerTensor& root, const EagerTensor& seed, const char* op) {
  TENFERRO_TRY(Replay r, replay(root, op));
  ad::AdContext& ad = root.runtime()->ad_context();
  std::vector<Tensor> outs;
  if (seed.defined()) {
    TENFERRO_TRY(program::CompiledGraph g, ad.vjp(r.graph));
    const Tensor extra[1] = {seed.tensor()};
    TENFERRO_TRY(outs, run(root, g, r, extra));
  } else {
    TENFERRO_TRY(program::CompiledGraph g, ad.grad(r.graph));
    TENFERRO_TRY(outs, run(root, g, r, {}));
  }
  Gradients g;
  g.leaves = std::move(r.leaves);
  EagerRuntime& rt = *root.runtime();
  const std::optional<CpuPlacement> where =
      root.domain() ? std::optional(CpuPlacement::domain(*root.domain())) : std::nullopt;
  for (size_t i = 1; i < outs.size(); ++i) {  // outs[0]: the primal output
    TENFERRO_TRY(EagerTensor w, rt.from_host(std::move(outs[i]), where));
    g.grads.push_back(std::move(w));
  }
  return g;
}

// The output and seed a reverse pass takes: a real scalar without seed, else a seed of
// the output's dtype and shape.
Result<void> check_output_and_seed(const EagerTensor& root, const EagerTensor& seed, const char* op) {
  const bool scalar = root.rank() == 0 && is_floating(root.dtype());
  if (!seed.defined() && !scalar) {
    // A shape error for a tensor of rank > 0, a dtype error for a complex (or integer)
    // scalar: which of the two the implicit seed 1 needs.
    return usage_error(root.rank() != 0 ? ErrorCode::kShapeMismatch : ErrorCode::kDTypeMismatch, op,
                       "the output is not a real scalar (dtype " + std::string(dtype_name(root.dtype())) + ", rank " +
                           std::to_string(root.rank()) + "): pass a cotangent");
  }
  if (seed.defined()) TENFERRO_TRY_VOID(check_seed(root, seed, op));
  return ok();
}

Result<Gradients> reverse(const EagerTensor& root, const EagerTensor& seed, BackwardRoute requested, const char* op) {
  TENFERRO_TRY_VOID(check_root(root, op));
  TENFERRO_TRY_VOID(check_output_and_seed(root, seed, op));
  TENFERRO_TRY(TapeWalk w, walk(root, op));
  const BackwardDecision d =
      decide_backward_route(requested, w.without_direct ? w.without_direct->op.c_str() : nullptr);
  if (d.route == BackwardRoute::kDirect) return direct_reverse(root, seed, w, op);
  if (requested == BackwardRoute::kDirect) return usage_error(ErrorCode::kUnsupported, op, d.reason);
  return replay_reverse(root, seed, op);
}

}  // namespace

BackwardDecision decide_backward_route(BackwardRoute requested, const char* op_without_direct_rule) {
  const std::string missing = op_without_direct_rule == nullptr ? std::string() : std::string(op_without_direct_rule);
  switch (requested) {
    case BackwardRoute::kReplay: return {BackwardRoute::kReplay, "replay was requested"};
    case BackwardRoute::kDirect:
      if (!missing.empty()) return {BackwardRoute::kReplay, "direct was requested but " + missing + " has no direct rule"};
      return {BackwardRoute::kDirect, "direct was requested"};
    case BackwardRoute::kAuto: break;
  }
  if (!missing.empty()) {
    return {BackwardRoute::kReplay, missing + " has no direct rule: the tape replays as a program (its gradient "
                                              "transform is cached by program fingerprint)"};
  }
  return {BackwardRoute::kDirect,
          "every record on the path has a direct rule: eager rules run without building a program"};
}

// Note [Eager trace]: a leaf made by trace_input marks every record computed from it
// `traced`; such records are made for integer and bool results too, and under no_grad,
// so that the records from the trace inputs to the outputs are the whole computation
// (nothing that depends on an input is frozen as a constant). program_of replays them
// with the given leaves as the program's inputs, exactly as backward's replay does;
// tensors without a record are constants of the program (captured bindings). What a
// traced function reads back to the host (to_host, item) and turns into new tensors is
// a constant: the Python binding refuses such reads while it traces.
Result<program::CompiledGraph> program_of(std::span<const EagerTensor> outputs, std::span<const EagerTensor> inputs) {
  const char* op = "program_of";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EagerTensor& x = inputs[i];
    if (!x.defined() || !x.ad_node() || !x.ad_node()->leaf()) {
      return usage_error(ErrorCode::kInvalidArgument, op,
                         "input " + std::to_string(i) + " is not a leaf (make it with trace_input or requires_grad)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (inputs[j].ad_node() == x.ad_node()) {
        return usage_error(ErrorCode::kInvalidArgument, op,
                           "inputs " + std::to_string(j) + " and " + std::to_string(i) + " are the same leaf");
      }
    }
  }
  std::vector<const EagerTensor*> roots;
  for (const EagerTensor& y : outputs) {
    if (!y.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined output");
    roots.push_back(&y);
  }
  TENFERRO_TRY(Replay r, replay(roots, inputs, true, op));
  return std::move(r.graph);
}

Result<BackwardDecision> explain_backward(const EagerTensor& loss, BackwardRoute requested) {
  TENFERRO_TRY_VOID(check_root(loss, "explain_backward"));
  TENFERRO_TRY(TapeWalk w, walk(loss, "explain_backward"));
  return decide_backward_route(requested, w.without_direct ? w.without_direct->op.c_str() : nullptr);
}

namespace {
// Note [Gradient accumulation]: a leaf's gradient buffer that nothing but the leaf holds
// (no grad_of handle alive) is added to in place, as torch accumulates into .grad: no
// allocation per step. A buffer someone else holds is never written (tensors are
// immutable to their holders); the sum then goes to a new buffer.
bool exclusive_accumulator(const EagerTensor& acc, const EagerTensor& d) {
  const Tensor& t = Detail::physical(acc);
  return acc.defined() && t.storage().use_count() == 1 && t.is_contiguous() && acc.dtype() == d.dtype() &&
         acc.shape() == d.shape();
}

// acc += d in acc's buffer (precondition: exclusive_accumulator, the leaf's mutex held);
// false when the target has no direct CPU provider (the caller then makes a new sum).
Result<bool> add_in_place(const Context& c, EagerTensor& acc, const EagerTensor& d) {
  TENFERRO_TRY(Call call, Detail::begin(c, {&acc, &d}, "backward"));
  if (call.slots->cpu == nullptr) return false;
  Tensor& dst = Detail::physical_mut(acc);
  const Tensor& src = Detail::physical(d);
  TENFERRO_TRY(Tensor unused,
               Detail::execute(
                   call, true, dst.numel(),
                   [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>&) -> Result<Tensor> {
                     TENFERRO_TRY_VOID(cpu::binary_into(ctx, cpu::BinaryOp::kAdd, dst, src, dst));
                     return Tensor();
                   },
                   {}, [](program::ProgramBuilder&, std::span<const program::Value>) -> Result<program::Value> {
                     return usage_error(ErrorCode::kInternal, "backward", "in-place accumulation has no program form");
                   },
                   "backward"));
  (void)unused;
  return true;
}
}  // namespace

Result<void> backward(const EagerTensor& loss, const EagerTensor& seed, BackwardRoute route) {
  TENFERRO_TRY(Gradients g, reverse(loss, seed, route, "backward"));
  const Context nograd = Context::of(loss).no_grad();
  // Every sum that needs a new buffer is computed before any accumulator changes; then
  // the in-place adds (which do not fail for equal-typed buffers) and the assignments.
  // Stored gradients are contiguous (a direct rule may give a broadcast or permuted view).
  const size_t n = g.leaves.size();
  std::vector<EagerTensor> next(n);
  std::vector<bool> in_place(n, false);
  auto new_sum = [&](const EagerTensor& prev, const EagerTensor& d) -> Result<EagerTensor> {
    if (prev.defined()) return nograd.add(prev, d);
    if (d.tensor().is_contiguous()) return d;
    return nograd.contiguous(d);
  };
  for (size_t i = 0; i < n; ++i) {
    if (!g.grads[i].defined()) continue;
    EagerTensor prev;
    {
      std::lock_guard lock(g.leaves[i]->mu);
      if (exclusive_accumulator(g.leaves[i]->grad, g.grads[i])) {
        in_place[i] = true;
        continue;
      }
      prev = g.leaves[i]->grad;
    }
    TENFERRO_TRY(next[i], new_sum(prev, g.grads[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    if (!g.grads[i].defined()) continue;
    AdNode& leaf = *g.leaves[i];
    std::lock_guard lock(leaf.mu);
    if (in_place[i]) {
      if (exclusive_accumulator(leaf.grad, g.grads[i])) {  // still nobody else's
        TENFERRO_TRY(const bool done, add_in_place(nograd, leaf.grad, g.grads[i]));
        if (done) continue;
      }
      TENFERRO_TRY(next[i], new_sum(leaf.grad, g.grads[i]));
    }
    leaf.grad = std::move(next[i]);
  }
  return ok();
}

namespace {
// Fresh leaves sharing the storage of `xs` (inexact ones), the rest as they are.
Result<std::vector<EagerTensor>> fresh_leaves(std::span<const EagerTensor> xs) {
  std::vector<EagerTensor> leaves;
  for (const EagerTensor& x : xs) {
    if (x.defined() && is_inexact(x.dtype())) {
      TENFERRO_TRY(EagerTensor l, requires_grad(detach(x)));
      leaves.push_back(std::move(l));
    } else {
      leaves.push_back(detach(x));
    }
  }
  return leaves;
}

// Per entry of `leaves`: its gradient, zeros where f did not reach it (or reached it
// only through a zero cotangent), undefined for non-differentiable entries.
Result<std::vector<EagerTensor>> scatter_grads(const std::vector<EagerTensor>& leaves, Gradients& g) {
  std::vector<EagerTensor> out;
  for (const EagerTensor& l : leaves) {
    if (!l.ad_node()) {
      out.emplace_back();
      continue;
    }
    size_t k = 0;
    while (k < g.leaves.size() && g.leaves[k] != l.ad_node()) ++k;
    if (k == g.leaves.size() || !g.grads[k].defined()) {
      TENFERRO_TRY(EagerTensor z, Context::of(l).no_grad().zeros(l.shape(), l.dtype()));
      out.push_back(std::move(z));
    } else if (g.grads[k].tensor().is_contiguous()) {
      out.push_back(std::move(g.grads[k]));
    } else {
      TENFERRO_TRY(EagerTensor d, Context::of(l).no_grad().contiguous(g.grads[k]));
      out.push_back(std::move(d));
    }
  }
  return out;
}
}  // namespace

namespace {

// Note [Nested functional transforms]: grad, vjp and jvp differentiate f at fresh leaves
// detached from the inputs and run the transformed program, so their results (the
// gradients, f's value, the tangents) have no record of the inputs by themselves. When an
// input is itself being recorded (an enclosing grad, a tensor that requires grad,
// tenferro.trace), the results are recorded as outputs of the transformed program over
// the inputs (imported into the enclosing program when it is replayed): f's replay is
// transformed once more with the fresh leaves as its first arguments, and the leaves f
// reached beyond them (tensors of an enclosing computation that f uses) as further
// arguments, so derivatives of the results with respect to those are kept as well. So a
// grad of a grad is the second derivative (a Hessian's rows, mixed partials). Where that
// form cannot be built (f reached a record without a program form), the results are
// marked instead: differentiating them again is a typed kUnsupported, never a silent zero.
enum class Transform : uint8_t { kGrad, kVjp, kJvp };

void mark_nested(std::vector<EagerTensor>& results, std::span<const EagerTensor* const> ins, const char* op,
                 const Error& why) {
  Detail::record_unsupported(results, ins, op,
                             std::string(op) + "'s results cannot be differentiated again: " + why.message());
}

// `results`: grad: the gradients of the active inputs; vjp: f's value, then those
// gradients; jvp: f's value, then its tangent. `extra`: vjp's cotangent, or jvp's tangents
// (one per input).
void record_nested(std::vector<EagerTensor>& results, std::span<const EagerTensor> xs,
                   const std::vector<EagerTensor>& leaves, const EagerTensor& y, std::span<const EagerTensor> extra,
                   Transform transform, const char* op) {
  std::vector<const EagerTensor*> ins;
  std::vector<EagerTensor> bound;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (leaves[i].ad_node()) {
      ins.push_back(&xs[i]);
      bound.push_back(leaves[i]);
    }
  }
  if (!y.ad_node()) return;  // f's value depends on no input: its results are constants
  const bool inputs_recorded = !ins.empty() && Detail::tracing(Context::of(*ins.front()), ins);
  if (!inputs_recorded) {
    // f may still use recorded tensors of an enclosing computation (a closure): its tape
    // then reaches leaves other than the fresh ones.
    Result<TapeWalk> w = walk(y, op);
    bool other = false;
    for (size_t k = 0; w && k < w->order.size() && !other; ++k) {
      const auto& node = w->order[k]->ad_node();
      if (!node->leaf()) continue;
      other = true;
      for (const EagerTensor& l : bound) other = other && l.ad_node() != node;
    }
    if (!other) return;
  }
  const EagerTensor* const roots[1] = {&y};
  Result<Replay> r = replay(roots, bound, false, op);
  if (!r) return mark_nested(results, ins, op, r.error());
  const size_t n_bound = bound.size(), n_args = n_bound + r->other_leaves.size();
  ad::ActiveMask active(n_args, false);
  for (size_t i = 0; i < n_bound; ++i) active[i] = true;
  ad::AdContext& ad = y.runtime()->ad_context();
  Result<program::CompiledGraph> g = transform == Transform::kGrad  ? ad.grad(r->graph, 0, active)
                                     : transform == Transform::kVjp ? ad.vjp(r->graph, active)
                                                                    : ad.jvp(r->graph, active);
  if (!g) return mark_nested(results, ins, op, g.error());
  // The record's inputs: the recorded inputs (for the bound leaves), the other leaves,
  // then vjp's cotangent or jvp's tangents of the active inputs.
  std::vector<EagerTensor> others = std::move(r->other_leaves);
  for (const EagerTensor& t : others) ins.push_back(&t);
  if (transform == Transform::kVjp) ins.push_back(&extra[0]);
  if (transform == Transform::kJvp) {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (leaves[i].ad_node()) ins.push_back(&extra[i]);
    }
  }
  // Transformed outputs: grad: f's value, then the gradients; vjp the same; jvp: f's
  // value, then its tangent. grad's results start at the gradients.
  const size_t first = transform == Transform::kGrad ? 1 : 0;
  auto graph = std::make_shared<const program::CompiledGraph>(std::move(*g));
  Detail::record_outputs(results, ins, op,
                         [graph, first](program::ProgramBuilder& b,
                                        std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
                           TENFERRO_TRY(std::vector<program::Value> outs, b.import(*graph, v));
                           return std::vector<program::Value>(outs.begin() + static_cast<std::ptrdiff_t>(first),
                                                              outs.end());
                         });
}

}  // namespace

// Note [Constant outputs of the functional transforms]: grad, vjp and jvp differentiate
// the function f, so an output that depends on none of the inputs (matrix_power(x, 0),
// a constant, a value computed under no_grad inside f) has zero derivatives, as in JAX
// and torch.func; only backward(), which names a tensor to differentiate, refuses a
// tensor that does not require grad. The output and the cotangent are still checked.
Result<std::vector<EagerTensor>> grad(const EagerFn& f, std::span<const EagerTensor> xs, BackwardRoute route) {
  TENFERRO_TRY(std::vector<EagerTensor> leaves, fresh_leaves(xs));
  TENFERRO_TRY(EagerTensor y, f(leaves));
  Gradients g;
  if (y.defined() && !y.ad_node()) {
    TENFERRO_TRY_VOID(check_output_and_seed(y, {}, "grad"));
  } else {
    TENFERRO_TRY(g, reverse(y, {}, route, "grad"));
  }
  TENFERRO_TRY(std::vector<EagerTensor> out, scatter_grads(leaves, g));
  std::vector<EagerTensor> active;  // the gradients of the inexact inputs
  for (size_t i = 0; i < out.size(); ++i) {
    if (leaves[i].ad_node()) active.push_back(out[i]);
  }
  record_nested(active, xs, leaves, y, {}, Transform::kGrad, "grad");  // Note [Nested functional transforms]
  for (size_t i = 0, k = 0; i < out.size(); ++i) {
    if (leaves[i].ad_node()) out[i] = std::move(active[k++]);
  }
  return out;
}

Result<std::pair<EagerTensor, std::vector<EagerTensor>>> vjp(const EagerFn& f, std::span<const EagerTensor> xs,
                                                             const EagerTensor& ct, BackwardRoute route) {
  TENFERRO_TRY(std::vector<EagerTensor> leaves, fresh_leaves(xs));
  TENFERRO_TRY(EagerTensor y, f(leaves));
  if (!ct.defined()) return usage_error(ErrorCode::kInvalidArgument, "vjp", "undefined cotangent");
  Gradients g;
  if (y.defined() && !y.ad_node()) {  // Note [Constant outputs of the functional transforms]
    TENFERRO_TRY_VOID(check_output_and_seed(y, ct, "vjp"));
  } else {
    TENFERRO_TRY(g, reverse(y, ct, route, "vjp"));
  }
  TENFERRO_TRY(std::vector<EagerTensor> out, scatter_grads(leaves, g));
  std::vector<EagerTensor> recorded{detach(y)};  // f's value, then the inexact inputs' gradients
  for (size_t i = 0; i < out.size(); ++i) {
    if (leaves[i].ad_node()) recorded.push_back(out[i]);
  }
  const EagerTensor cts[1] = {ct};
  record_nested(recorded, xs, leaves, y, cts, Transform::kVjp, "vjp");  // Note [Nested functional transforms]
  for (size_t i = 0, k = 1; i < out.size(); ++i) {
    if (leaves[i].ad_node()) out[i] = std::move(recorded[k++]);
  }
  return std::pair<EagerTensor, std::vector<EagerTensor>>{std::move(recorded[0]), std::move(out)};
}

namespace {
// jvp's (value, tangent), recorded as Note [Nested functional transforms] says.
std::pair<EagerTensor, EagerTensor> nested_pair(const EagerTensor& y, EagerTensor dy, std::span<const EagerTensor> xs,
                                                const std::vector<EagerTensor>& leaves,
                                                std::span<const EagerTensor> vs) {
  std::vector<EagerTensor> both{detach(y), std::move(dy)};
  record_nested(both, xs, leaves, y, vs, Transform::kJvp, "jvp");
  return {std::move(both[0]), std::move(both[1])};
}
}  // namespace

Result<std::pair<EagerTensor, EagerTensor>> jvp(const EagerFn& f, std::span<const EagerTensor> xs,
                                                std::span<const EagerTensor> vs) {
  if (vs.size() != xs.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "jvp",
                       std::to_string(xs.size()) + " inputs but " + std::to_string(vs.size()) + " tangents");
  }
  TENFERRO_TRY(std::vector<EagerTensor> leaves, fresh_leaves(xs));
  TENFERRO_TRY(EagerTensor y, f(leaves));
  if (y.defined() && !y.ad_node()) {  // Note [Constant outputs of the functional transforms]
    for (size_t i = 0; i < xs.size(); ++i) {
      if (leaves[i].ad_node() &&
          (!vs[i].defined() || vs[i].dtype() != leaves[i].dtype() || vs[i].shape() != leaves[i].shape())) {
        return usage_error(
            ErrorCode::kInvalidArgument, "jvp",
            "tangent " + std::to_string(i) + " must have the dtype and shape of input " + std::to_string(i));
      }
    }
    TENFERRO_TRY(EagerTensor dy, Context::of(y).no_grad().zeros(y.shape(), y.dtype()));
    return nested_pair(y, std::move(dy), xs, leaves, vs);
  }
  TENFERRO_TRY_VOID(check_root(y, "jvp"));
  TENFERRO_TRY(Replay r, replay(y, "jvp"));
  // Tangents in the order of the replay's leaves; leaves f did not reach have none, and
  // leaves of an enclosing computation that f reached (a closure over a tensor that
  // requires grad) are constants here: zero tangents.
  std::vector<Tensor> tangents;
  for (size_t k = 0; k < r.leaves.size(); ++k) {
    const auto& node = r.leaves[k];
    size_t i = 0;
    while (i < leaves.size() && leaves[i].ad_node() != node) ++i;
    if (i == leaves.size()) {
      TENFERRO_TRY(Tensor z, Tensor::zeros(r.leaf_values[k].dtype(), r.leaf_values[k].shape()));
      tangents.push_back(std::move(z));
      continue;
    }
    if (!vs[i].defined() || vs[i].dtype() != leaves[i].dtype() || vs[i].shape() != leaves[i].shape()) {
      return usage_error(ErrorCode::kInvalidArgument, "jvp",
                         "tangent " + std::to_string(i) + " must have the dtype and shape of input " + std::to_string(i));
    }
    tangents.push_back(vs[i].tensor());
  }
  TENFERRO_TRY(program::CompiledGraph g, y.runtime()->ad_context().jvp(r.graph));
  TENFERRO_TRY(std::vector<Tensor> outs, run(y, g, r, tangents));
  TENFERRO_TRY(EagerTensor dy, y.runtime()->from_host(std::move(outs[1])));
  return nested_pair(y, std::move(dy), xs, leaves, vs);
}

}  // namespace tenferro::eager
