#include <algorithm>
#include <cstring>
#include <ostream>

#include "detail.h"
#include "tenferro/ad/ad.h"
#include "tenferro/cpu/kernels.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/fft_ir/fft_op.h"
#include "tenferro/linalg_ir/linalg_op.h"
#include "tenferro/tensor/npy.h"

namespace tenferro::eager {

// Note [Eager slots]: what a call needs from the runtime's registrations (is the target
// engine a CPU engine with a direct provider; is the CPU einsum module registered for
// it) is resolved once per configuration epoch, not per call: the string-keyed module
// lookup happens at refresh only. Every call compares the runtime's epoch (one atomic
// load) with the slots' epoch and refreshes after a reconfiguration or registration, so a
// long-lived context never runs with an obsolete registration. Slots of old epochs stay
// alive with the EagerRuntime (calls in flight may still read them; one small object per
// reconfiguration).
//
// Note [Eager placement]: the CPU domain of a call (spec 000 "Placement-bound eager
// API"): a session's domain; else an explicit runtime.on(CpuPlacement::domain(d)); else
// the affinity policy over the inputs: the domain holding the most logical input bytes
// (numel * element size; views count their logical size), ties to the smaller domain id,
// inputs of unknown affinity not counted, no counted input -> the runtime's default
// domain. kRequireSingleDomain rejects inputs of two different known domains. CPU domains
// share one address space, so inputs are read where they are (never moved); outputs are
// allocated and first touched in the chosen domain. Views keep their input's affinity.
//
// Note [Eager entry]: decide_entry is the one decision of how a call runs. A target
// without a direct provider (an engine other than this build's CPU engine), or an op that
// is more than one operation there (einsum without a native module), is promoted to a
// one-node prepared graph. Inside a session the session's context runs it. Otherwise an
// op with less work than `inline_work` (elements or multiply-adds) runs inline on the
// calling thread with a sequential context: no executor entry at all, since entering an
// executor costs more than such an op (spec 000 "Eager single-operation cost contract":
// at most one executor entry, none below the parallel threshold). Larger ops make one
// executor entry (ParallelMode::kInner) and may fan out inside it.
//
// Note [Eager promotion]: a promoted call builds a program of the op over its inputs
// (ProgramBuilder: exact shapes), and runs it with Runtime::run on the target engine and
// chosen domain: the runtime's plan cache, resolution (native, lowering, configured
// fallback), buffer plan and schedule apply, and the promotion shows in EagerMetrics
// (promoted, programs_built) and in the runtime's metrics and plan-cache statistics.
// Semantics are the program's, the same as the direct path's (tests compare both with the
// reference interpreter). A promoted call inside a session would enter the executor a
// second time: kReentered.

EntryDecision decide_entry(bool direct, bool in_session, int64_t work, int64_t inline_work) noexcept {
  if (!direct) return {Entry::kPromote, "no direct provider on the target engine for this op: one-node prepared graph"};
  if (in_session) return {Entry::kSession, "inside a session: its executor entry"};
  if (work < inline_work) return {Entry::kInline, "below the inline threshold: calling thread, no executor entry"};
  return {Entry::kEnter, "at or above the inline threshold: one executor entry"};
}

Result<int32_t> choose_domain(std::span<const InputAffinity> inputs, CpuAffinityPolicy policy, int32_t default_domain,
                              int32_t explicit_domain) {
  if (explicit_domain >= 0) return explicit_domain;
  // At most a few distinct domains: a small linear table, no allocation.
  SmallVector<InputAffinity, 8> score;  // (domain, summed bytes)
  for (const InputAffinity& in : inputs) {
    if (in.domain < 0) continue;
    auto it = std::find_if(score.begin(), score.end(), [&](const InputAffinity& p) { return p.domain == in.domain; });
    if (it == score.end()) {
      score.push_back(in);
    } else {
      it->bytes += in.bytes;
    }
  }
  if (score.empty()) return default_domain;
  if (policy == CpuAffinityPolicy::kRequireSingleDomain && score.size() > 1) {
    return usage_error(ErrorCode::kInvalidArgument, "eager placement",
                       "inputs live in CPU domains " + std::to_string(score[0].domain) + " and " +
                           std::to_string(score[1].domain) +
                           " (policy RequireSingleDomain); use runtime.on(CpuPlacement::domain(d)) or import them");
  }
  InputAffinity best = score[0];
  for (const InputAffinity& p : score) {
    if (p.bytes > best.bytes || (p.bytes == best.bytes && p.domain < best.domain)) best = p;
  }
  return best.domain;
}

// ---- EagerRuntime ----

EagerRuntime::EagerRuntime()
    : counters_(std::make_unique<Counters>()),
      ad_(std::make_unique<ad::AdContext>(ad::AdContext::with_standard_rules())) {
  (void)ad_->install(linalg_ir::linalg_rule());  // a fresh context: no conflict possible
  (void)ad_->install(fft_ir::fft_rule());
}
EagerRuntime::~EagerRuntime() = default;

Result<std::shared_ptr<EagerRuntime>> EagerRuntime::create(EagerConfig config) {
  TENFERRO_TRY(std::shared_ptr<cpu::CpuEngine> engine, cpu::CpuEngine::create(std::move(config.engine)));
  TENFERRO_TRY(std::shared_ptr<runtime::Runtime> rt, runtime::Runtime::create(config.runtime));
  TENFERRO_TRY(runtime::EngineId id,
               cpu_runtime::register_cpu_engine(*rt, std::move(engine), {.einsum_module = config.einsum_module}));
  if (config.linalg_module) {
    TENFERRO_TRY_VOID(rt->register_extension(id, linalg_ir::cpu_linalg_module()));
  }
  if (config.fft_module) {
    TENFERRO_TRY_VOID(rt->register_extension(id, fft_ir::cpu_fft_module()));
  }
  return adopt(std::move(rt), id,
               AdoptOptions{.affinity = config.affinity,
                            .default_domain = config.default_domain,
                            .inline_work = config.inline_work,
                            .einsum_plan_capacity = config.einsum_plan_capacity,
                            .fft_plan_capacity = config.fft_plan_capacity});
}

Result<std::shared_ptr<EagerRuntime>> EagerRuntime::adopt(std::shared_ptr<runtime::Runtime> rt,
                                                          runtime::EngineId engine, AdoptOptions options) {
  if (rt == nullptr) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kInvalidArgument, "EagerRuntime::adopt", "null runtime");
  }
  if (options.einsum_plan_capacity < 1 || options.fft_plan_capacity < 1 || options.inline_work < 0) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kInvalidArgument, "EagerRuntime::adopt",
                 "einsum_plan_capacity and fft_plan_capacity must be >= 1 and inline_work >= 0 (got " +
                     std::to_string(options.einsum_plan_capacity) + ", " + std::to_string(options.fft_plan_capacity) +
                     ", " + std::to_string(options.inline_work) + ")");
  }
  TENFERRO_TRY(std::shared_ptr<const runtime::EngineBridge> bridge, rt->engine_bridge(engine));
  std::shared_ptr<EagerRuntime> e(new EagerRuntime());
  e->runtime_ = std::move(rt);
  e->engine_ = engine;
  e->domains_.assign(bridge->domains().begin(), bridge->domains().end());
  e->affinity_ = options.affinity;
  e->inline_work_ = options.inline_work;
  e->default_domain_ = options.default_domain.value_or(e->domains_.front());
  if (std::find(e->domains_.begin(), e->domains_.end(), e->default_domain_) == e->domains_.end()) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kOutOfRange, "EagerRuntime",
                 "default domain " + std::to_string(e->default_domain_) + " is not a domain of engine '" +
                     std::string(bridge->name()) + "'");
  }
  e->einsum_plans_ = std::make_unique<einsum::PlanCache>(static_cast<size_t>(options.einsum_plan_capacity));
  e->fft_plans_ = std::make_unique<fft::PlanCache>(options.fft_plan_capacity);
  e->counters_->session_busy = std::make_unique<std::atomic<bool>[]>(e->domains_.size());
  return e;
}

const EagerRuntime::Slots& EagerRuntime::slots() {
  const Slots* s = slots_.load(std::memory_order_acquire);
  const uint64_t epoch = runtime_->epoch();
  if (s != nullptr && s->epoch == epoch) return *s;
  std::lock_guard lock(slots_mu_);
  s = slots_.load(std::memory_order_acquire);
  if (s != nullptr && s->epoch == epoch) return *s;
  auto fresh = std::make_unique<Slots>();
  fresh->epoch = epoch;  // read before the registrations: a later change refreshes again
  auto bridge = runtime_->engine_bridge(engine_);
  if (bridge) {
    fresh->cpu = cpu_runtime::cpu_engine_of(**bridge);
    fresh->einsum_native =
        fresh->cpu != nullptr &&
        cpu_runtime::is_cpu_einsum_module(runtime_->extension_module(einsum::kEinsumFamily, engine_).get());
  }
  const Slots* raw = fresh.get();
  all_slots_.push_back(std::move(fresh));
  slots_.store(raw, std::memory_order_release);
  return *raw;
}

Context EagerRuntime::on(CpuPlacement p) {
  Context c(this, p.id < 0 ? INT32_MIN : p.id);
  c.keep_ = shared_from_this();
  return c;
}

Context EagerRuntime::context() {
  Context c(this, -1);
  c.keep_ = shared_from_this();
  return c;
}

Result<void> EagerRuntime::with_session(FunctionRef<Result<void>(Context&)> f) { return context().with_session(f); }

Result<EagerTensor> EagerRuntime::from_host(Tensor tensor, std::optional<CpuPlacement> placement) {
  if (tensor.storage() == nullptr) {
    return usage_error(ErrorCode::kInvalidArgument, "from_host", "null tensor handle");
  }
  if (!tensor.placement().is_host()) {
    return usage_error(ErrorCode::kUnsupported, "from_host",
                       "tensor lives on " + tensor.placement().to_string() + ", not in host memory");
  }
  int32_t domain = -1;
  if (placement) {
    if (std::find(domains_.begin(), domains_.end(), placement->id) == domains_.end()) {
      return usage_error(ErrorCode::kOutOfRange, "from_host", "no CPU domain " + std::to_string(placement->id));
    }
    domain = placement->id;
  } else if (tensor.placement().kind() == Placement::Kind::kCpuDomain &&
             std::find(domains_.begin(), domains_.end(), tensor.placement().id()) != domains_.end()) {
    domain = tensor.placement().id();
  }
  return EagerTensor(std::move(tensor), shared_from_this(), domain);
}

Result<EagerTensor> EagerRuntime::read_npy(const std::string& path) {
  TENFERRO_TRY(Tensor t, tenferro::read_npy(path));
  return from_host(std::move(t));
}

Result<EagerTensor> EagerRuntime::import(const EagerTensor& t, ImportMode mode) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "import", "undefined tensor");
  if (t.rt_.get() == this && mode == ImportMode::kShare) return t;
  if (mode == ImportMode::kShare) {
    const bool known = std::find(domains_.begin(), domains_.end(), t.domain_) != domains_.end();
    return EagerTensor(t.t_, shared_from_this(), known ? t.domain_ : -1);
  }
  const Slots& s = slots();
  std::shared_ptr<HostBufferPool> pool = s.cpu != nullptr ? s.cpu->pool(default_domain_) : nullptr;
  TENFERRO_TRY(Tensor copy, t.t_.to_col_major(pool));
  return EagerTensor(std::move(copy), shared_from_this(), default_domain_);
}

EagerMetrics EagerRuntime::metrics() const {
  const Counters& c = *counters_;
  const auto r = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
  return EagerMetrics{.fast_inline = r(c.fast_inline),
                      .fast_entered = r(c.fast_entered),
                      .fast_session = r(c.fast_session),
                      .views = r(c.views),
                      .promoted = r(c.promoted),
                      .programs_built = r(c.programs_built),
                      .sessions = r(c.sessions)};
}

EagerRuntime::EinsumCacheStats EagerRuntime::einsum_cache_stats() const {
  const einsum::PlanCache::Stats s = einsum_plans_->stats();
  return {s.hits, s.misses, s.evictions, s.entries, s.retained_bytes};
}

void EagerRuntime::clear_einsum_cache() { einsum_plans_->clear(); }

// ---- sessions ----

Result<void> Context::with_session(FunctionRef<Result<void>(Context&)> f) const {
  if (session_ != nullptr || cpu::detail::tls_entered_depth > 0) {
    return usage_error(ErrorCode::kReentered, "with_session",
                       "called inside a session or an entered execution context; use the session's context");
  }
  TENFERRO_TRY(Call call, Detail::begin(*this, std::span<const EagerTensor* const>{}, "with_session"));
  if (call.slots->cpu == nullptr) {
    return usage_error(ErrorCode::kUnsupported, "with_session",
                       "the target engine has no direct CPU provider (sessions run on CPU engines)");
  }
  const auto index = static_cast<size_t>(std::find(rt_->domains_.begin(), rt_->domains_.end(), call.domain) -
                                         rt_->domains_.begin());
  std::atomic<bool>& busy = rt_->counters_->session_busy[index];
  if (busy.exchange(true, std::memory_order_acq_rel)) {
    return usage_error(ErrorCode::kContended, "with_session",
                       "CPU domain " + std::to_string(call.domain) + " is held by another session");
  }
  // Released however the callback ends (an exception thrown by `f` included).
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy.store(false, std::memory_order_release); }
  } release{busy};
  rt_->counters_->sessions.fetch_add(1, std::memory_order_relaxed);
  return call.slots->cpu->run(call.domain, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
    Context s = Detail::session_context(*this, call.domain, &ctx);
    return f(s);
  });
}

// ---- call helpers ----

Context Context::of(const EagerTensor& t) noexcept { return Context(t.rt_.get(), -1); }

Result<Call> Detail::begin(const Context& c, std::span<const EagerTensor* const> inputs, const char* op) {
  EagerRuntime* rt = c.rt_;
  if (rt == nullptr) return usage_error(ErrorCode::kInvalidArgument, op, "context of an undefined tensor");
  Call call;
  call.rt = rt;
  call.session = c.session_;
  call.owner = c.keep_ != nullptr ? &c.keep_ : nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EagerTensor& t = *inputs[i];
    if (!t.defined()) {
      return usage_error(ErrorCode::kInvalidArgument, op, "operand " + std::to_string(i) + " is an undefined tensor");
    }
    if (t.rt_.get() != rt) {
      return usage_error(ErrorCode::kRuntimeMismatch, op,
                         "operand " + std::to_string(i) +
                             " belongs to another eager runtime; import it first (EagerRuntime::import; in Python, "
                             "Runtime.tensor(x))");
    }
    if (call.owner == nullptr) call.owner = &t.rt_;
  }
  call.slots = &rt->slots();
  if (c.session_ != nullptr) {
    call.domain = c.domain_;
  } else if (c.domain_ != -1) {
    if (std::find(rt->domains_.begin(), rt->domains_.end(), c.domain_) == rt->domains_.end()) {
      return usage_error(ErrorCode::kOutOfRange, op,
                         "placement CPU domain " + (c.domain_ == INT32_MIN ? std::string("< 0") : std::to_string(c.domain_)) +
                             " is not a domain of the runtime's engine");
    }
    call.domain = c.domain_;
  } else if (rt->domains_.size() == 1) {
    call.domain = rt->domains_.front();  // one domain: nothing to choose
  } else {
    SmallVector<InputAffinity, 8> aff;  // only where there is a domain to choose
    for (const EagerTensor* t : inputs) aff.push_back({t->domain_, t->numel() * t->t_.element_size()});
    TENFERRO_TRY(call.domain, choose_domain(aff, rt->affinity_, rt->default_domain_));
  }
  return call;
}

Result<Tensor> Detail::execute(const Call& call, bool native, int64_t work, DirectFn f, std::span<const Tensor> inputs,
                               Builder build, const char* op) {
  const EntryDecision d =
      decide_entry(native && call.slots->cpu != nullptr, call.session != nullptr, work, call.rt->inline_work_);
  if (d.entry == Entry::kPromote) return promote(call, inputs, build, op);
  cpu::CpuEngine& engine = *call.slots->cpu;
  EagerRuntime::Counters& n = *call.rt->counters_;
  const std::shared_ptr<HostBufferPool>& pool = engine.pool(call.domain);
  switch (d.entry) {
    case Entry::kSession:
      n.fast_session.fetch_add(1, std::memory_order_relaxed);
      return f(*call.session, pool);
    case Entry::kInline: {
      n.fast_inline.fetch_add(1, std::memory_order_relaxed);
      cpu::CpuExecutionContext ctx(nullptr, cpu::ParallelMode::kSequential, 1, engine.config().batch, &engine.caps());
      return f(ctx, pool);
    }
    default: {
      n.fast_entered.fetch_add(1, std::memory_order_relaxed);
      Tensor out;
      TENFERRO_TRY_VOID(engine.run(call.domain, cpu::ParallelMode::kInner,
                                   [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                                     TENFERRO_TRY(out, f(ctx, pool));
                                     return ok();
                                   }));
      return out;
    }
  }
}

Result<std::vector<EagerTensor>> Context::run_native(std::span<const EagerTensor* const> inputs, const char* op,
                                                     int64_t work, NativeFn f) const {
  TENFERRO_TRY(Call call, Detail::begin(*this, inputs, op));
  if (call.slots->cpu == nullptr) {
    return usage_error(ErrorCode::kUnsupported, op,
                       "the runtime's target engine has no direct CPU provider for this operation (no program op "
                       "exists to promote it to)");
  }
  std::vector<Tensor> outs;
  auto one = [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) -> Result<Tensor> {
    TENFERRO_TRY_VOID(f(ctx, pool, outs));
    return Tensor();
  };
  // Never promoted (the direct provider exists): the builder is unreachable.
  auto no_program = [&](program::ProgramBuilder&, std::span<const program::Value>) -> Result<program::Value> {
    return usage_error(ErrorCode::kInternal, op, "no program op to promote to");
  };
  TENFERRO_TRY_VOID(Detail::execute(call, true, work, one, {}, no_program, op));
  std::vector<EagerTensor> res;
  res.reserve(outs.size());
  for (Tensor& t : outs) res.push_back(t.defined() ? Detail::wrap(call, std::move(t)) : EagerTensor());
  if (Detail::tracing(*this, inputs)) Detail::record_unsupported(res, inputs, op);
  return res;
}

Result<std::vector<EagerTensor>> Context::run_native(std::span<const EagerTensor* const> inputs, const char* op,
                                                     int64_t work, NativeFn f, FunctionRef<ProgramForm()> form) const {
  TENFERRO_TRY(std::vector<EagerTensor> res, no_grad().run_native(inputs, op, work, f));
  if (Detail::tracing(*this, inputs)) Detail::record_outputs(res, inputs, op, form());
  return res;
}

Result<Tensor> Detail::promote(const Call& call, std::span<const Tensor> inputs, Builder build, const char* op) {
  if (call.session != nullptr) {
    return usage_error(ErrorCode::kReentered, op,
                       "this call needs a prepared graph (no direct provider), which cannot run inside a session");
  }
  EagerRuntime& rt = *call.rt;
  program::ProgramBuilder b;
  SmallVector<program::Value, 8> vals;
  for (const Tensor& t : inputs) {
    program::ValueType type{t.dtype(), {}};
    for (int64_t e : t.shape()) type.shape.push_back(program::Extent::exact(e));
    TENFERRO_TRY(program::Value v, b.input(std::move(type)));
    vals.push_back(v);
  }
  TENFERRO_TRY(program::Value out, build(b, std::span<const program::Value>(vals.data(), vals.size())));
  TENFERRO_TRY(program::CompiledGraph graph, b.finish({out}));
  rt.counters_->programs_built.fetch_add(1, std::memory_order_relaxed);
  rt.counters_->promoted.fetch_add(1, std::memory_order_relaxed);
  TENFERRO_TRY(std::vector<Tensor> outs, rt.runtime_->run(graph, inputs, {.engine = rt.engine_, .domain = call.domain}));
  return std::move(outs.front());
}

// ---- host data ----

Result<void> write_npy(const std::string& path, const EagerTensor& t) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "write_npy", "undefined tensor");
  return tenferro::write_npy(path, t.tensor());
}

Result<Tensor> to_host(const EagerTensor& t) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "to_host", "undefined tensor");
  if (!t.tensor().placement().is_host()) {
    return usage_error(ErrorCode::kUnsupported, "to_host", "tensor is not in host memory; transfer it explicitly");
  }
  return t.tensor();
}

Result<c128> item(const EagerTensor& t, Dims index) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "item", "undefined tensor");
  const Tensor& x = t.tensor();
  if (static_cast<int64_t>(index.size()) != x.rank()) {
    return usage_error(ErrorCode::kOutOfRange, "item",
                       "index of rank " + std::to_string(index.size()) + " for a tensor of rank " +
                           std::to_string(x.rank()));
  }
  int64_t off = x.offset();
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= x.shape()[i]) {
      return usage_error(ErrorCode::kOutOfRange, "item",
                         "index " + std::to_string(index[i]) + " on axis " + std::to_string(i) + " of extent " +
                             std::to_string(x.shape()[i]));
    }
    off += index[i] * x.strides()[i];
  }
  const auto* p = static_cast<const uint8_t*>(x.storage()->data()) + off * x.element_size();
  c128 v;
  visit_dtype(x.dtype(), [&]<class T>() {
    T e;
    std::memcpy(&e, p, sizeof(T));
    if constexpr (std::is_same_v<T, c64>) {
      v = c128(e.real(), e.imag());
    } else if constexpr (std::is_same_v<T, c128>) {
      v = e;
    } else {
      v = c128(static_cast<double>(e), 0.0);
    }
  });
  return v;
}

std::string EagerTensor::to_string() const { return defined() ? t_.to_string() : std::string("EagerTensor(undefined)"); }

std::ostream& operator<<(std::ostream& os, const EagerTensor& t) { return os << t.to_string(); }

}  // namespace tenferro::eager
