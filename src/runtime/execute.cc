// The scheduled executor: event-domain runs, launches segment by segment, fail-fast and
// drain; execute_prepared and sessions on top of it.

#include <algorithm>
#include <chrono>

#include "runtime_state.h"

namespace tenferro::runtime {

// Note [Event domains]: every engine registers an event-domain driver (CPU engines: the
// immediate driver). One execution of a prepared program
//  1. begins one EventDomainRun per event domain its nodes use, in first-use order, and
//     checks each reports the domain it was begun for (kBeginRun) before anything is
//     launched; a failed begin drains the runs already begun;
//  2. walks the schedule segment by segment (one executor entry per contiguous stretch
//     of nodes on one engine domain). Each node's dependency tokens are those of its
//     inputs' producers: an operation node admits only tokens of its own domain (the
//     preparation put a transfer wherever the domain changes); a transfer host-waits on
//     each source-domain token (kTransferBridge), then launches on the destination run.
//     The run's domain is checked again right before every enqueue (kEnqueue), and the
//     token enqueue returns must come from that domain (kValidateCompletion) before it is
//     recorded or any later node may use the outputs;
//  3. stops launching at the first error (fail-fast): nothing more is enqueued;
//  4. drains every begun run in first-use order, also after success; a drain failure
//     becomes the primary error if there is none, else it is kept as a suppressed error
//     of the primary one; outputs are collected only after the drain.
// No lock is held while a driver enqueues, waits or drains. The workspace (and, for a
// submitted run, the run record) holds every tensor a launch touches until the drain,
// and an asynchronous driver copies the handles its pending work needs, so buffers
// outlive the work that reads or writes them.
//
// Note [Node leases]: a launch limit caps the launches in progress at once on one engine
// domain across every execution of the runtime. A node on a limited domain (a transfer:
// also its source domain) takes one atomic lease of all of them before its enqueue —
// granted whole, or the node waits holding nothing — and returns it when the enqueue
// returned. A run holds at most one lease at a time, so leases cannot deadlock; the
// memory a run's buffers need is the admission's business (Note [Admission]), held from
// before the first launch until after the drain.

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Error event_error(ErrorStage stage, EventDomainOperation op, std::string msg) {
  return Error(stage, ErrorCode::kEventDomain, "execute_prepared", std::move(msg)).with_event_operation(op);
}

class ImmediateRun final : public EventDomainRun {
 public:
  explicit ImmediateRun(EventDomainId id) : id_(id) {}
  EventDomainId domain() const override { return id_; }
  Result<CompletionToken> enqueue(const Launch& l) override {
    for (const CompletionToken& t : l.deps) {
      if (!(t.origin == id_)) {
        return Error(ErrorStage::kEnqueue, ErrorCode::kEventDomain, "immediate_event_driver",
                     "a token of event domain " + std::to_string(t.origin.value) + " was passed to domain " +
                         std::to_string(id_.value))
            .with_event_operation(EventDomainOperation::kEnqueue);
      }
    }
    TENFERRO_TRY_VOID(l.kernel->run(*l.context, l.inputs, l.outputs));
    return CompletionToken{id_, 0};
  }
  Result<void> host_wait(CompletionToken t) override {
    if (!(t.origin == id_)) {
      return Error(ErrorStage::kEnqueue, ErrorCode::kEventDomain, "immediate_event_driver",
                   "cannot wait for a token of event domain " + std::to_string(t.origin.value))
          .with_event_operation(EventDomainOperation::kTransferBridge);
    }
    return ok();
  }
  Result<void> drain() override { return ok(); }

 private:
  EventDomainId id_;
};

class ImmediateDriver final : public EventDomainDriver {
 public:
  bool immediate() const override { return true; }
  Result<std::unique_ptr<EventDomainRun>> begin_run(EventDomainId id,
                                                    std::unique_ptr<EventDomainRun> recycled) const override {
    if (auto* r = dynamic_cast<ImmediateRun*>(recycled.get()); r != nullptr && r->domain() == id) return recycled;
    return std::unique_ptr<EventDomainRun>(std::make_unique<ImmediateRun>(id));
  }
};

// Node leases (Note [Node leases]).
struct LeaseKey {
  uint32_t engine = 0;
  int32_t domain = 0;
  int32_t limit = 0;
};

int32_t limit_of(const RuntimeConfig& c, uint32_t engine, int32_t domain) {
  for (const LaunchLimit& l : c.launch_limits) {
    if (l.engine.value == engine && l.domain == domain) return l.nodes;
  }
  return 0;
}

int64_t& lease_count(RuntimeShared& s, uint32_t engine, int32_t domain) {
  for (RuntimeShared::Used& u : s.leased) {
    if (u.engine == engine && u.domain == domain) return u.bytes;
  }
  s.leased.push_back(RuntimeShared::Used{engine, domain, 0});
  return s.leased.back().bytes;
}

void acquire_lease(RuntimeShared& s, const LeaseKey* keys, size_t n) {
  std::unique_lock<std::mutex> lock(s.lease_mu);
  const auto free_now = [&] {
    for (size_t i = 0; i < n; ++i) {
      if (keys[i].limit > 0 && lease_count(s, keys[i].engine, keys[i].domain) >= keys[i].limit) return false;
    }
    return true;
  };
  if (!free_now()) {
    s.lease_waits.fetch_add(1, std::memory_order_relaxed);
    s.lease_cv.wait(lock, free_now);
  }
  for (size_t i = 0; i < n; ++i) {
    if (keys[i].limit > 0) ++lease_count(s, keys[i].engine, keys[i].domain);
  }
}

void release_lease(RuntimeShared& s, const LeaseKey* keys, size_t n) {
  {
    std::lock_guard<std::mutex> lock(s.lease_mu);
    for (size_t i = 0; i < n; ++i) {
      if (keys[i].limit > 0) --lease_count(s, keys[i].engine, keys[i].domain);
    }
  }
  s.lease_cv.notify_all();
}

Result<void> launch_node(const PreparedProgram& p, size_t i, Workspace& ws, EngineContext& ctx, RuntimeShared& shared) {
  const PreparedNode& n = p.nodes[i];
  EventDomainRun& run = *ws.runs[static_cast<size_t>(n.run)];
  const EventDomainId want{n.engine};
  const auto clear = [&] {
    for (size_t k = 0; k < n.inputs.size(); ++k) ws.in[k] = Tensor();
    for (size_t k = 0; k < n.outputs.size(); ++k) ws.out[k] = Tensor();
  };
  ws.deps.clear();
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const auto v = static_cast<size_t>(n.inputs[k]);
    ws.in[k] = ws.slots[v];
    const CompletionToken t = ws.tokens[v];
    if (t.sequence == 0) continue;
    if (t.origin == want) {
      ws.deps.push_back(t);
      continue;
    }
    if (n.op != nullptr) {
      clear();
      return node_error(p, i,
                        event_error(ErrorStage::kEnqueue, EventDomainOperation::kEnqueue,
                                    "an operation node admits only tokens of its own event domain " +
                                        std::to_string(want.value) + ", got one of domain " +
                                        std::to_string(t.origin.value)));
    }
    // A transfer bridges the domains: wait on the host for the source's completion.
    const int32_t src = t.origin.value < p.run_of_engine.size() ? p.run_of_engine[t.origin.value] : -1;
    if (src < 0 || !(ws.runs[static_cast<size_t>(src)]->domain() == t.origin)) {
      clear();
      return node_error(p, i,
                        event_error(ErrorStage::kEnqueue, EventDomainOperation::kTransferBridge,
                                    "no begun run of event domain " + std::to_string(t.origin.value) +
                                        " holds the source token"));
    }
    if (Result<void> w = ws.runs[static_cast<size_t>(src)]->host_wait(t); !w) {
      clear();
      return node_error(p, i,
                        Error(ErrorStage::kCompletion, w.error().code(), "execute_prepared",
                              "the source of the transfer failed in event domain " + std::to_string(t.origin.value))
                            .with_cause(w.error())
                            .with_event_operation(EventDomainOperation::kTransferBridge));
    }
  }
  if (n.dest_buffer >= 0) {
    ws.out[0] = ws.dest[static_cast<size_t>(n.outputs[0])];
  } else if (n.donate_argument >= 0 && ws.donated[static_cast<size_t>(n.donate_argument)] != 0) {
    ws.out[0] = ws.slots[static_cast<size_t>(p.argument_values[static_cast<size_t>(n.donate_argument)])];
  }
  if (!(run.domain() == want)) {
    clear();
    return node_error(p, i,
                      event_error(ErrorStage::kEnqueue, EventDomainOperation::kEnqueue,
                                  "the run of event domain " + std::to_string(want.value) + " reports domain " +
                                      std::to_string(run.domain().value)));
  }
  LeaseKey keys[2];
  size_t nkeys = 0;
  if (n.leased) {
    const RuntimeConfig& cfg = p.snapshot->config;
    keys[nkeys++] = LeaseKey{n.engine, n.domain, limit_of(cfg, n.engine, n.domain)};
    if (n.op == nullptr) {
      keys[nkeys++] = LeaseKey{n.src_engine, n.src_domain, limit_of(cfg, n.src_engine, n.src_domain)};
      // Canonical order (engine, domain): every multi-key lease is taken the same way.
      if (std::make_pair(keys[1].engine, keys[1].domain) < std::make_pair(keys[0].engine, keys[0].domain)) {
        std::swap(keys[0], keys[1]);
      }
    }
  }
  if (nkeys > 0) acquire_lease(shared, keys, nkeys);
  const Launch launch{n.kernel.get(), &ctx, std::span<const Tensor>(ws.in.data(), n.inputs.size()),
                      std::span<Tensor>(ws.out.data(), n.outputs.size()),
                      std::span<const CompletionToken>(ws.deps.data(), ws.deps.size())};
  Result<CompletionToken> tok = run.enqueue(launch);
  if (nkeys > 0) release_lease(shared, keys, nkeys);
  if (!tok) {
    clear();
    const EventDomainOperation op = tok.error().event_operation() == EventDomainOperation::kNone
                                        ? EventDomainOperation::kEnqueue
                                        : tok.error().event_operation();
    return node_error(p, i, tok.error().with_event_operation(op));
  }
  if (!(tok->origin == want)) {
    clear();
    return node_error(p, i,
                      event_error(ErrorStage::kCompletion, EventDomainOperation::kValidateCompletion,
                                  "the run of event domain " + std::to_string(want.value) +
                                      " returned a completion of domain " + std::to_string(tok->origin.value)));
  }
  for (size_t k = 0; k < n.inputs.size(); ++k) ws.in[k] = Tensor();
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const auto o = static_cast<size_t>(n.outputs[k]);
    ws.slots[o] = std::move(ws.out[k]);
    ws.tokens[o] = *tok;
  }
  for (int32_t v : n.release) {
    ws.slots[static_cast<size_t>(v)] = Tensor();
    ws.tokens[static_cast<size_t>(v)] = CompletionToken{};
  }
  if (n.op == nullptr) shared.transfers.fetch_add(1, std::memory_order_relaxed);
  return ok();
}

}  // namespace

std::shared_ptr<const EventDomainDriver> immediate_event_driver() {
  // Immutable metadata (ARCHITECTURE §3.3): one stateless instance per process.
  static const std::shared_ptr<const EventDomainDriver> driver = std::make_shared<ImmediateDriver>();
  return driver;
}

std::string_view storage_class_name(StorageClass c) noexcept {
  switch (c) {
    case StorageClass::kHost: return "host";
    case StorageClass::kDevice: return "device";
  }
  return "?";
}

Result<void> begin_runs(const PreparedProgram& p, Workspace& ws) {
  for (size_t k = 0; k < p.runs.size(); ++k) {
    const EventDomainId id{p.runs[k]};
    Result<std::unique_ptr<EventDomainRun>> r =
        p.snapshot->drivers[p.runs[k]]->begin_run(id, std::move(ws.retired[k]));
    std::optional<Error> err;
    if (!r) {
      err = Error(ErrorStage::kEnqueue, r.error().code(), "execute_prepared",
                  "event domain " + std::to_string(id.value) + " ('" +
                      std::string(p.snapshot->engines[p.runs[k]]->name()) + "') could not begin a run")
                .with_cause(r.error())
                .with_event_operation(EventDomainOperation::kBeginRun);
    } else if (*r == nullptr || !((*r)->domain() == id)) {
      err = event_error(ErrorStage::kEnqueue, EventDomainOperation::kBeginRun,
                        "the driver of event domain " + std::to_string(id.value) + " returned " +
                            (*r == nullptr ? std::string("no run")
                                           : "a run of domain " + std::to_string((*r)->domain().value)));
      if (*r != nullptr) ws.runs[k] = std::move(*r);  // still drained below
    } else {
      ws.runs[k] = std::move(*r);
      continue;
    }
    Result<void> drained = drain_runs(p, ws, *err);
    return drained.error();
  }
  return ok();
}

Result<void> launch_nodes(const PreparedProgram& p, Workspace& ws, RuntimeShared& shared, const SessionEntry* session) {
  for (const Segment& seg : p.segments) {
    const auto body = [&](EngineContext& ctx) -> Result<void> {
      for (auto i = static_cast<size_t>(seg.begin); i < static_cast<size_t>(seg.end); ++i) {
        TENFERRO_TRY_VOID(launch_node(p, i, ws, ctx, shared));
      }
      return ok();
    };
    if (session != nullptr && session->engine == seg.engine && session->domain == seg.domain) {
      TENFERRO_TRY_VOID(body(*session->ctx));
    } else {
      TENFERRO_TRY_VOID(p.snapshot->engines[seg.engine]->enter(seg.domain, body));
    }
  }
  return ok();
}

Result<void> drain_runs(const PreparedProgram& p, Workspace& ws, std::optional<Error> primary) {
  std::vector<Error> suppressed;
  for (size_t k = 0; k < ws.runs.size(); ++k) {
    if (ws.runs[k] == nullptr) continue;
    Result<void> r = ws.runs[k]->drain();
    ws.retired[k] = std::move(ws.runs[k]);
    if (r) continue;
    Error e = Error(r.error().stage() == ErrorStage::kUsage ? ErrorStage::kCompletion : r.error().stage(),
                    r.error().code(), "execute_prepared",
                    "event domain " + std::to_string(p.runs[k]) + " ('" +
                        std::string(p.snapshot->engines[p.runs[k]]->name()) + "') reported a failure when drained")
                  .with_cause(r.error())
                  .with_event_operation(EventDomainOperation::kDrain);
    if (!primary) {
      primary = std::move(e);
    } else {
      suppressed.push_back(std::move(e));
    }
  }
  if (!primary) return ok();
  if (!suppressed.empty()) {
    std::vector<Error> all = primary->suppressed();
    for (Error& e : suppressed) all.push_back(std::move(e));
    return primary->with_suppressed(std::move(all));
  }
  return *primary;
}

int64_t load_inputs(const PreparedProgram& p, Workspace& ws, std::span<const Tensor> arguments,
                    std::span<const Tensor> bindings, bool allow_donation) {
  int64_t donated = 0;
  for (size_t i = 0; i < arguments.size(); ++i) {
    // Donation (Note [Buffer plan]): only a declared argument, passed as the only handle
    // to writable storage in the compact layout the plan writes.
    const Tensor& a = arguments[i];
    const bool give = allow_donation && p.donatable[i] != 0 && a.storage_use_count() == 1 &&
                      a.storage()->writable() && a.offset() == 0 && a.is_contiguous();
    ws.donated[i] = give ? 1 : 0;
    donated += give ? 1 : 0;
    ws.slots[static_cast<size_t>(p.argument_values[i])] = a;
  }
  for (size_t i = 0; i < bindings.size(); ++i) ws.slots[static_cast<size_t>(p.binding_values[i])] = bindings[i];
  return donated;
}

std::vector<Tensor> collect_outputs(const PreparedProgram& p, Workspace& ws) {
  std::vector<Tensor> outputs;
  outputs.reserve(p.output_values.size());
  for (int32_t v : p.output_values) outputs.push_back(ws.slots[static_cast<size_t>(v)]);
  return outputs;
}

Result<void> Runtime::check_execution(const PreparedProgram& p, std::span<const Tensor> arguments,
                                      const program::ProgramBindings& bindings, const char* op) const {
  if (!(p.runtime == id_)) {
    return Error(ErrorStage::kUsage, ErrorCode::kRuntimeMismatch, op,
                 "the program was prepared by runtime " + std::to_string(p.runtime.value) + ", not by runtime " +
                     std::to_string(id_.value));
  }
  const uint64_t now_epoch = epoch();
  if (p.epoch != now_epoch) {
    return Error(ErrorStage::kUsage, ErrorCode::kStalePreparedGraph, op,
                 "the program was prepared at configuration epoch " + std::to_string(p.epoch) +
                     "; the runtime is at epoch " + std::to_string(now_epoch) + " (prepare it again or use run())");
  }
  if (arguments.size() != p.argument_values.size() || bindings.tensors.size() != p.binding_values.size()) {
    return usage_error(ErrorCode::kInvalidArgument, op,
                       "expected " + std::to_string(p.argument_values.size()) + " arguments and " +
                           std::to_string(p.binding_values.size()) + " bindings, got " +
                           std::to_string(arguments.size()) + " and " + std::to_string(bindings.tensors.size()));
  }
  const auto check = [&](const Tensor& t, const TensorSignature& want, size_t i, const char* what) -> Result<void> {
    if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, op, std::string(what) + " " + std::to_string(i) + " is null");
    if (t.dtype() != want.dtype) {
      return usage_error(ErrorCode::kDTypeMismatch, op,
                         std::string(what) + " " + std::to_string(i) + " has dtype " + std::string(dtype_name(t.dtype())) +
                             ", the program was prepared for " + std::string(dtype_name(want.dtype)));
    }
    if (t.shape() != want.shape) {
      return usage_error(ErrorCode::kShapeMismatch, op,
                         std::string(what) + " " + std::to_string(i) + " has shape " + format_dims(t.shape()) +
                             ", the program was prepared for " + format_dims(want.shape) + " (use run() to re-prepare)");
    }
    if (t.placement() != want.placement && !(t.placement().is_host() && want.placement.is_host())) {
      return usage_error(ErrorCode::kInvalidArgument, op,
                         std::string(what) + " " + std::to_string(i) + " lives at " + t.placement().to_string() +
                             ", the program was prepared for " + want.placement.to_string() +
                             " (no implicit transfer: prepare for this placement)");
    }
    return ok();
  };
  for (size_t i = 0; i < arguments.size(); ++i) TENFERRO_TRY_VOID(check(arguments[i], p.signature[i], i, "argument"));
  for (size_t i = 0; i < bindings.tensors.size(); ++i) {
    TENFERRO_TRY_VOID(check(bindings.tensors[i], p.signature[arguments.size() + i], i, "binding"));
  }
  return ok();
}

Result<std::vector<Tensor>> Runtime::execute_prepared(const PreparedProgram& p, std::span<const Tensor> arguments) {
  return execute_prepared(p, arguments, p.bindings);
}

Result<std::vector<Tensor>> Runtime::execute_prepared(const PreparedProgram& p, std::span<const Tensor> arguments,
                                                      const program::ProgramBindings& bindings) {
  TENFERRO_TRY_VOID(check_execution(p, arguments, bindings, "execute_prepared"));
  return execute_checked(p, arguments, bindings, nullptr);
}

Result<std::vector<Tensor>> Runtime::execute_checked(const PreparedProgram& p, std::span<const Tensor> arguments,
                                                     const program::ProgramBindings& bindings, Session* session) {
  const int64_t t0 = now_ns();
  RuntimeShared& s = *shared_;
  // Admission (Note [Admission]): a synchronous execution waits in the same order as
  // submitted runs.
  const Reservation reservation = reservation_for(p);
  if (!reservation.parts.empty()) {
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.stopping) {
      return Error(ErrorStage::kEnqueue, ErrorCode::kShutDown, "execute_prepared", "the runtime was shut down");
    }
    if (s.queue.empty() && s.fits_locked(reservation)) {
      s.reserve_locked(reservation);
    } else {
      bool granted = false;
      s.admission_waits.fetch_add(1, std::memory_order_relaxed);
      s.queue.push_back(RuntimeShared::Waiter{nullptr, &reservation, &granted});
      s.cv.wait(lock, [&] { return granted; });
    }
  }
  const auto release = [&] {
    if (!reservation.parts.empty()) s.release(reservation);
  };
  Result<std::unique_ptr<Workspace>> acquired = p.acquire();
  if (!acquired) {
    release();
    return acquired.error();
  }
  std::unique_ptr<Workspace> ws = std::move(*acquired);
  const int64_t donated = load_inputs(p, *ws, arguments, bindings.tensors, true);
  SessionEntry entry;
  if (session != nullptr) entry = SessionEntry{session->engine_.value, session->domain_, &session->ctx_};
  Result<void> r = begin_runs(p, *ws);
  if (r) {
    Result<void> launched = launch_nodes(p, *ws, s, session != nullptr ? &entry : nullptr);
    r = drain_runs(p, *ws, launched ? std::nullopt : std::optional<Error>(launched.error()));
  }
  std::vector<Tensor> outputs;
  if (r) outputs = collect_outputs(p, *ws);
  for (CompletionToken& t : ws->tokens) t = CompletionToken{};
  p.give_back(std::move(ws));
  release();
  if (!r) return r.error();
  s.executions.fetch_add(1, std::memory_order_relaxed);
  if (donated > 0) s.donated.fetch_add(donated, std::memory_order_relaxed);
  s.execute_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  return outputs;
}

// ---- sessions

Result<void> Runtime::with_session(EngineId engine, int32_t domain, FunctionRef<Result<void>(Session&)> f) {
  const char* op = "with_session";
  const auto snap = snapshot_();
  if (engine.value >= snap->engines.size()) {
    return usage_error(ErrorCode::kOutOfRange, op, "no engine " + std::to_string(engine.value));
  }
  const std::shared_ptr<const EngineBridge>& bridge = snap->engines[engine.value];
  const std::span<const int32_t> ds = bridge->domains();
  if (std::find(ds.begin(), ds.end(), domain) == ds.end()) {
    return usage_error(ErrorCode::kOutOfRange, op,
                       "engine '" + std::string(bridge->name()) + "' has no domain " + std::to_string(domain));
  }
  RuntimeShared& s = *shared_;
  const std::thread::id me = std::this_thread::get_id();
  {
    std::lock_guard<std::mutex> lock(s.session_mu);
    for (const RuntimeShared::SessionOwner& o : s.sessions) {
      if (o.thread == me) {
        return usage_error(ErrorCode::kReentered, op,
                           "this thread already holds a session of this runtime (engine " + std::to_string(o.engine) +
                               " domain " + std::to_string(o.domain) + "); use that session");
      }
    }
    for (const RuntimeShared::SessionOwner& o : s.sessions) {
      if (o.engine == engine.value && o.domain == domain) {
        return usage_error(ErrorCode::kContended, op,
                           "engine " + std::to_string(engine.value) + " domain " + std::to_string(domain) +
                               " is held by another thread's session");
      }
    }
    s.sessions.push_back(RuntimeShared::SessionOwner{engine.value, domain, me});
  }
  struct Release {
    RuntimeShared& s;
    std::thread::id me;
    ~Release() {
      std::lock_guard<std::mutex> lock(s.session_mu);
      s.sessions.erase(std::remove_if(s.sessions.begin(), s.sessions.end(),
                                      [&](const RuntimeShared::SessionOwner& o) { return o.thread == me; }),
                       s.sessions.end());
    }
  } release{s, me};
  bool entered = false;
  Result<void> r = bridge->enter(domain, [&](EngineContext& ctx) -> Result<void> {
    entered = true;
    Session session(*this, engine, domain, ctx);
    return f(session);
  });
  if (!r && !entered) {
    return usage_error(ErrorCode::kExecutor, op,
                       "engine '" + std::string(bridge->name()) + "' refused to enter domain " + std::to_string(domain))
        .with_cause(r.error());
  }
  return r;
}

Result<std::vector<Tensor>> Session::execute_prepared(const PreparedProgram& prepared, std::span<const Tensor> arguments) {
  TENFERRO_TRY_VOID(rt_.check_execution(prepared, arguments, prepared.bindings, "Session::execute_prepared"));
  ++executions_;
  return rt_.execute_checked(prepared, arguments, prepared.bindings, this);
}

}  // namespace tenferro::runtime
