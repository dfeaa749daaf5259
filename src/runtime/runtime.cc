#include "tenferro/runtime/runtime.h"

#include <chrono>
#include <condition_variable>
#include <list>
#include <thread>
#include <unordered_map>

#include "runtime_state.h"

namespace tenferro::runtime {

// Note [Engine bridge]: the runtime knows engines only through EngineBridge: a bridge
// prepares one node at a time for concrete types (returning a NodeKernel, or a typed
// kUnsupported) and enters one of its domains once per schedule segment. Everything a
// kernel needs to run is resolved at prepare time, so execution is a walk over
// PreparedNode with no registry, string or map lookup. Registrations are part of the
// configuration snapshot: registering an engine or module publishes a new snapshot with
// a new epoch, so a prepared program pins exactly the registrations it was resolved
// against.
//
// Note [Plan cache]: keys are (fingerprint, epoch, engine, domain, signature) with the
// program's exact structural equality inside a hash bucket. One mutex guards the map and
// the LRU list only; preparation runs outside it. The first caller of a key inserts a
// kPreparing entry and prepares; later callers of that key wait on the condition
// variable (counted as waits), callers of other keys proceed. A caller that finds its
// own thread preparing the key is in a cycle (kPreparationCycle). Deterministic failures
// (every prepare-stage error except allocation failure) stay cached as negative entries
// for the epoch (the key contains it); transient ones are dropped. Eviction takes the
// least recently used entry that is not being prepared; holders of an evicted plan keep
// it (shared ownership).

namespace {

std::atomic<uint64_t> g_next_runtime_id{1};  // identity source only (not configuration)

Error config_error(ErrorCode code, std::string op, std::string msg) {
  return Error(ErrorStage::kConfiguration, code, std::move(op), std::move(msg));
}

Result<void> validate(const RuntimeConfig& c) {
  if (c.plan_cache_capacity < 1) {
    return config_error(ErrorCode::kInvalidArgument, "runtime_config",
                        "plan_cache_capacity must be at least 1, got " + std::to_string(c.plan_cache_capacity));
  }
  for (size_t i = 0; i < c.family_preferences.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (c.family_preferences[j].family == c.family_preferences[i].family) {
        return config_error(ErrorCode::kInvalidArgument, "runtime_config",
                            "two preferences for family '" + c.family_preferences[i].family + "'");
      }
    }
  }
  for (size_t i = 0; i < c.memory_budgets.size(); ++i) {
    const MemoryBudget& b = c.memory_budgets[i];
    if (b.bytes < 0) {
      return config_error(ErrorCode::kInvalidArgument, "runtime_config",
                          "memory budget of engine " + std::to_string(b.engine.value) + " domain " +
                              std::to_string(b.domain) + " is negative (" + std::to_string(b.bytes) + ")");
    }
    for (size_t j = 0; j < i; ++j) {
      if (c.memory_budgets[j].engine == b.engine && c.memory_budgets[j].domain == b.domain) {
        return config_error(ErrorCode::kInvalidArgument, "runtime_config",
                            "two memory budgets for engine " + std::to_string(b.engine.value) + " domain " +
                                std::to_string(b.domain));
      }
    }
  }
  for (size_t i = 0; i < c.launch_limits.size(); ++i) {
    const LaunchLimit& l = c.launch_limits[i];
    if (l.nodes < 1) {
      return config_error(ErrorCode::kInvalidArgument, "runtime_config",
                          "launch limit of engine " + std::to_string(l.engine.value) + " domain " +
                              std::to_string(l.domain) + " must be at least 1, got " + std::to_string(l.nodes));
    }
    for (size_t j = 0; j < i; ++j) {
      if (c.launch_limits[j].engine == l.engine && c.launch_limits[j].domain == l.domain) {
        return config_error(ErrorCode::kInvalidArgument, "runtime_config",
                            "two launch limits for engine " + std::to_string(l.engine.value) + " domain " +
                                std::to_string(l.domain));
      }
    }
  }
  return ok();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct PlanKey {
  program::Fingerprint fingerprint;
  uint64_t epoch = 0;
  PrepareOptions options;
  std::vector<TensorSignature> signature;
  std::shared_ptr<const program::SemanticProgram> program;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const noexcept {
    uint64_t h = k.fingerprint.low ^ (k.fingerprint.high * 0x9e3779b97f4a7c15ULL) ^ (k.epoch * 0xff51afd7ed558ccdULL);
    for (const TensorSignature& s : k.signature) {
      h = (h ^ static_cast<uint64_t>(s.dtype)) * 0x100000001b3ULL;
      for (int64_t e : s.shape) h = (h ^ static_cast<uint64_t>(e)) * 0x100000001b3ULL;
      h = (h ^ (static_cast<uint64_t>(s.placement.kind()) << 32 ^ static_cast<uint32_t>(s.placement.id()))) *
          0x100000001b3ULL;
    }
    if (k.options.engine) h ^= (static_cast<uint64_t>(k.options.engine->value) + 1) << 40;
    if (k.options.domain) h ^= (static_cast<uint64_t>(*k.options.domain) + 1) << 20;
    for (int32_t a : k.options.donate_arguments) h = (h ^ static_cast<uint64_t>(a + 7)) * 0x100000001b3ULL;
    for (const ProviderOverride& o : k.options.overrides) {
      h = (h ^ (static_cast<uint64_t>(o.op) << 2 | static_cast<uint64_t>(o.kind))) * 0x100000001b3ULL;
    }
    return static_cast<size_t>(h);
  }
};
struct PlanKeyEq {
  bool operator()(const PlanKey& a, const PlanKey& b) const {
    if (!(a.fingerprint == b.fingerprint) || a.epoch != b.epoch || !(a.options == b.options) ||
        a.signature != b.signature) {
      return false;
    }
    return a.program == b.program || a.program->structurally_equal(*b.program);
  }
};

}  // namespace

std::string_view provider_kind_name(ProviderKind kind) noexcept {
  switch (kind) {
    case ProviderKind::kNative: return "native";
    case ProviderKind::kLowering: return "lowering";
    case ProviderKind::kFallback: return "fallback";
  }
  return "?";
}

std::vector<TensorSignature> signature_of(std::span<const Tensor> tensors) {
  std::vector<TensorSignature> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(TensorSignature{t.dtype(), t.shape(), t.placement()});
  return out;
}

// ---- prepared program workspaces

Result<std::unique_ptr<Workspace>> PreparedProgram::acquire() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<Workspace> ws = std::move(free_.back());
      free_.pop_back();
      return ws;
    }
  }
  auto ws = std::make_unique<Workspace>();
  ws->slots.resize(value_shapes.size());
  ws->tokens.resize(value_shapes.size());
  ws->runs.resize(runs.size());
  ws->retired.resize(runs.size());
  ws->deps.reserve(max_inputs);
  ws->in.resize(max_inputs);
  ws->out.resize(max_outputs);
  ws->donated.assign(argument_values.size(), 0);
  if (!buffer_bytes.empty()) {
    ws->dest.resize(value_shapes.size());
    for (int64_t bytes : buffer_bytes) {
      TENFERRO_TRY(std::shared_ptr<Storage> st, bridge->allocate(domain, bytes));
      ws->buffers.push_back(std::move(st));
    }
    for (size_t v = 0; v < value_buffer.size(); ++v) {
      if (value_buffer[v] < 0) continue;
      TENFERRO_TRY(ws->dest[v], Tensor::from_storage(value_dtypes[v], ws->buffers[static_cast<size_t>(value_buffer[v])],
                                                     Layout::col_major(value_shapes[v])));
    }
  }
  return ws;
}

void PreparedProgram::give_back(std::unique_ptr<Workspace> ws) const {
  for (Tensor& t : ws->slots) t = Tensor();
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.size() < 8) {
    if (free_.capacity() < 8) free_.reserve(8);
    free_.push_back(std::move(ws));
  }
}

Result<void> run_nodes(const PreparedProgram& p, EngineContext& ctx, Workspace& ws) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const PreparedNode& n = p.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) ws.in[k] = ws.slots[static_cast<size_t>(n.inputs[k])];
    if (n.dest_buffer >= 0) {
      ws.out[0] = ws.dest[static_cast<size_t>(n.outputs[0])];
    } else if (n.donate_argument >= 0 && ws.donated[static_cast<size_t>(n.donate_argument)] != 0) {
      ws.out[0] = ws.slots[static_cast<size_t>(p.argument_values[static_cast<size_t>(n.donate_argument)])];
    }
    const Result<void> r = n.kernel->run(ctx, std::span<const Tensor>(ws.in.data(), n.inputs.size()),
                                         std::span<Tensor>(ws.out.data(), n.outputs.size()));
    for (size_t k = 0; k < n.inputs.size(); ++k) ws.in[k] = Tensor();
    if (!r) {
      for (size_t k = 0; k < n.outputs.size(); ++k) ws.out[k] = Tensor();
      return node_error(p, i, r.error());
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) ws.slots[static_cast<size_t>(n.outputs[k])] = std::move(ws.out[k]);
    for (int32_t v : n.release) ws.slots[static_cast<size_t>(v)] = Tensor();
  }
  return ok();
}

Error node_error(const PreparedProgram& p, size_t i, const Error& cause) {
  const PreparedNode& n = p.nodes[i];
  return Error(cause.stage() == ErrorStage::kUsage ? ErrorStage::kCompletion : cause.stage(), cause.code(),
               "execute_prepared",
               "node " + std::to_string(i) + " (" + node_label(n) + ", provider " + std::string(n.kernel->provider()) +
                   ", engine " + std::to_string(n.engine) + ") failed")
      .with_cause(cause)
      .with_event_operation(cause.event_operation());
}

PreparedInfo prepared_info(const PreparedProgram& p) {
  PreparedInfo info;
  info.runtime = p.runtime;
  info.epoch = p.epoch;
  info.engine = p.engine;
  info.domain = p.domain;
  info.nodes = static_cast<int64_t>(p.nodes.size());
  for (const PreparedNode& n : p.nodes) info.view_nodes += n.view ? 1 : 0;
  info.peak_bytes = p.peak_bytes;
  info.planned_buffers = static_cast<int64_t>(p.buffer_bytes.size());
  info.workspace_bytes = p.workspace_bytes;
  for (const PreparedNode& n : p.nodes) {
    info.in_place_nodes += n.in_place_of >= 0 ? 1 : 0;
    info.donating_nodes += n.donate_argument >= 0 ? 1 : 0;
  }
  info.transfers = p.transfers;
  info.event_domains = static_cast<int64_t>(p.runs.size());
  info.segments = static_cast<int64_t>(p.segments.size());
  return info;
}

// ---- the runtime

struct Runtime::Impl {
  mutable std::mutex config_mu;
  std::shared_ptr<const RuntimeConfigSnapshot> snapshot;

  struct Entry {
    enum class State : uint8_t { kPreparing, kReady, kFailed, kDropped };
    State state = State::kPreparing;
    std::thread::id owner;
    std::shared_ptr<const PreparedProgram> plan;
    std::optional<Error> error;
    std::list<const PlanKey*>::iterator lru;
    int64_t bytes = 0;
  };
  mutable std::mutex cache_mu;
  std::condition_variable cache_cv;
  std::unordered_map<PlanKey, std::shared_ptr<Entry>, PlanKeyHash, PlanKeyEq> entries;
  std::list<const PlanKey*> lru;  // front = most recent; ready and failed entries only
  PlanCacheStats stats;

  std::atomic<int64_t> preparations{0}, prepare_ns{0}, lookups{0}, lookup_ns{0};
  std::function<void(const program::Fingerprint&)> hook;

  void evict_locked(int64_t capacity) {
    while (static_cast<int64_t>(lru.size()) > capacity) {
      const PlanKey* key = lru.back();
      lru.pop_back();
      auto it = entries.find(*key);
      stats.retained_bytes -= it->second->bytes;
      entries.erase(it);
      ++stats.evictions;
    }
  }
};

Runtime::Runtime(RuntimeConfig config)
    : id_{g_next_runtime_id.fetch_add(1)}, impl_(std::make_unique<Impl>()), shared_(std::make_shared<RuntimeShared>()) {
  auto snap = std::make_shared<RuntimeConfigSnapshot>();
  snap->config = config;
  snap->epoch = 1;
  impl_->snapshot = std::move(snap);
}

Runtime::~Runtime() {
  // Never blocks (Note [Run ownership]): runs still queued or pending are finished by the
  // dispatcher thread, which exits once idle.
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->closing = true;
  }
  shared_->cv.notify_all();
}

Result<std::shared_ptr<Runtime>> Runtime::create(RuntimeConfig config) {
  TENFERRO_TRY_VOID(validate(config));
  return std::shared_ptr<Runtime>(new Runtime(config));
}

Result<std::shared_ptr<const EngineBridge>> Runtime::engine_bridge(EngineId engine) const {
  const auto snap = snapshot_();
  if (engine.value >= snap->engines.size()) {
    return usage_error(ErrorCode::kOutOfRange, "Runtime::engine_bridge",
                       "no engine " + std::to_string(engine.value) + " (" + std::to_string(snap->engines.size()) +
                           " registered)");
  }
  return snap->engines[engine.value];
}

std::shared_ptr<const ExtensionModule> Runtime::extension_module(std::string_view family, EngineId engine) const {
  const auto snap = snapshot_();
  const auto it = snap->modules.find(std::pair<std::string, uint32_t>(std::string(family), engine.value));
  return it == snap->modules.end() ? nullptr : it->second;
}

std::vector<EngineId> Runtime::engines() const {
  const auto snap = snapshot_();
  std::vector<EngineId> ids;
  for (size_t i = 0; i < snap->engines.size(); ++i) ids.push_back(EngineId{static_cast<uint32_t>(i)});
  return ids;
}

std::shared_ptr<const RuntimeConfigSnapshot> Runtime::snapshot_() const {
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  return impl_->snapshot;
}

RuntimeConfig Runtime::config() const {
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  return impl_->snapshot->config;
}

Result<void> Runtime::reconfigure(RuntimeConfig config) {
  TENFERRO_TRY_VOID(validate(config));
  {
    std::lock_guard<std::mutex> lock(impl_->config_mu);
    auto snap = std::make_shared<RuntimeConfigSnapshot>(*impl_->snapshot);
    snap->config = config;
    publish_locked(std::move(snap));
  }
  std::lock_guard<std::mutex> lock(impl_->cache_mu);
  impl_->evict_locked(config.plan_cache_capacity);
  return ok();
}

void Runtime::publish_locked(std::shared_ptr<RuntimeConfigSnapshot> next) {
  const uint64_t epoch = impl_->snapshot->epoch + 1;
  next->epoch = epoch;
  impl_->snapshot = std::move(next);
  epoch_.store(epoch, std::memory_order_release);
}

Result<EngineId> Runtime::register_engine(std::shared_ptr<const EngineBridge> engine) {
  if (engine == nullptr) return config_error(ErrorCode::kInvalidArgument, "register_engine", "null engine bridge");
  if (engine->domains().empty()) {
    return config_error(ErrorCode::kInvalidArgument, "register_engine",
                        "engine '" + std::string(engine->name()) + "' has no domain");
  }
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  auto snap = std::make_shared<RuntimeConfigSnapshot>(*impl_->snapshot);
  const EngineId id{static_cast<uint32_t>(snap->engines.size())};
  std::shared_ptr<const EventDomainDriver> driver = engine->event_driver();
  if (driver == nullptr) {
    return config_error(ErrorCode::kInvalidArgument, "register_engine",
                        "engine '" + std::string(engine->name()) + "' has no event-domain driver");
  }
  snap->drivers.push_back(std::move(driver));
  snap->engines.push_back(std::move(engine));
  publish_locked(std::move(snap));
  return id;
}

Result<void> Runtime::register_extension(EngineId engine, std::shared_ptr<const ExtensionModule> module,
                                         Registration mode) {
  if (module == nullptr) return config_error(ErrorCode::kInvalidArgument, "register_extension", "null module");
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  const RuntimeConfigSnapshot& cur = *impl_->snapshot;
  if (engine.value >= cur.engines.size()) {
    return config_error(ErrorCode::kOutOfRange, "register_extension",
                        "engine id " + std::to_string(engine.value) + " is not registered (" +
                            std::to_string(cur.engines.size()) + " engines)");
  }
  std::pair<std::string, uint32_t> key{std::string(module->family_id()), engine.value};
  auto it = cur.modules.find(key);
  if (it != cur.modules.end()) {
    if (it->second == module) return ok();  // the same registration again: a no-op
    if (mode != Registration::kReplace) {
      return config_error(ErrorCode::kInvalidArgument, "register_extension",
                          "family '" + key.first + "' already has a different module on engine " +
                              std::to_string(engine.value) + " (pass Registration::kReplace to replace it)");
    }
  }
  auto snap = std::make_shared<RuntimeConfigSnapshot>(cur);
  snap->modules[key] = std::move(module);
  publish_locked(std::move(snap));
  return ok();
}

Result<void> Runtime::register_transfer(TransferEndpoint src, TransferEndpoint dst,
                                        std::shared_ptr<const TransferProvider> provider, Registration mode) {
  const char* op = "register_transfer";
  if (provider == nullptr) return config_error(ErrorCode::kInvalidArgument, op, "null transfer provider");
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  const RuntimeConfigSnapshot& cur = *impl_->snapshot;
  for (const TransferEndpoint& e : {src, dst}) {
    if (e.engine.value >= cur.engines.size()) {
      return config_error(ErrorCode::kOutOfRange, op,
                          "engine id " + std::to_string(e.engine.value) + " is not registered (" +
                              std::to_string(cur.engines.size()) + " engines)");
    }
    if (cur.engines[e.engine.value]->storage_class() != e.storage) {
      return config_error(ErrorCode::kInvalidArgument, op,
                          "engine " + std::to_string(e.engine.value) + " ('" +
                              std::string(cur.engines[e.engine.value]->name()) + "') keeps " +
                              std::string(storage_class_name(cur.engines[e.engine.value]->storage_class())) +
                              " storage, not " + std::string(storage_class_name(e.storage)));
    }
  }
  if (src == dst) return config_error(ErrorCode::kInvalidArgument, op, "a transfer needs two different endpoints");
  const auto key = std::make_pair(src, dst);
  if (auto it = cur.transfers.find(key); it != cur.transfers.end()) {
    if (it->second == provider) return ok();
    if (mode != Registration::kReplace) {
      return config_error(ErrorCode::kInvalidArgument, op,
                          "engines " + std::to_string(src.engine.value) + " -> " + std::to_string(dst.engine.value) +
                              " already have a transfer provider (pass Registration::kReplace to replace it)");
    }
  }
  auto snap = std::make_shared<RuntimeConfigSnapshot>(cur);
  snap->transfers[key] = std::move(provider);
  publish_locked(std::move(snap));
  return ok();
}

Result<TransferEndpoint> Runtime::endpoint(EngineId engine) const {
  const auto snap = snapshot_();
  if (engine.value >= snap->engines.size()) {
    return usage_error(ErrorCode::kOutOfRange, "Runtime::endpoint",
                       "no engine " + std::to_string(engine.value) + " (" + std::to_string(snap->engines.size()) +
                           " registered)");
  }
  return TransferEndpoint{engine, snap->engines[engine.value]->storage_class()};
}

void Runtime::set_prepare_hook(std::function<void(const program::Fingerprint&)> hook) {
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  impl_->hook = std::move(hook);
}

Result<std::shared_ptr<const PreparedProgram>> Runtime::prepare_for(const program::CompiledGraph& graph,
                                                                     std::span<const TensorSignature> signature,
                                                                     const PrepareOptions& options) {
  if (graph.program == nullptr) {
    return Error(ErrorStage::kPrepare, ErrorCode::kInvalidArgument, "prepare_for", "the graph has no program");
  }
  const int64_t t0 = now_ns();
  PlanKey key{graph.program->fingerprint(), epoch(), options,
              std::vector<TensorSignature>(signature.begin(), signature.end()), graph.program};
  Impl& m = *impl_;
  std::shared_ptr<Impl::Entry> entry;
  {
    std::unique_lock<std::mutex> lock(m.cache_mu);
    auto it = m.entries.find(key);
    if (it != m.entries.end()) {
      entry = it->second;
      if (entry->state == Impl::Entry::State::kPreparing) {
        if (entry->owner == std::this_thread::get_id()) {
          return Error(ErrorStage::kPrepare, ErrorCode::kPreparationCycle, "prepare_for",
                       "program " + key.fingerprint.to_string() + " needs itself while it is being prepared");
        }
        ++m.stats.waits;
        m.cache_cv.wait(lock, [&] { return entry->state != Impl::Entry::State::kPreparing; });
      } else {
        m.lru.splice(m.lru.begin(), m.lru, entry->lru);
      }
      m.lookups.fetch_add(1, std::memory_order_relaxed);
      m.lookup_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      if (entry->state == Impl::Entry::State::kReady) {
        ++m.stats.hits;
        return entry->plan;
      }
      if (entry->state == Impl::Entry::State::kFailed) {
        ++m.stats.negative_hits;
        return *entry->error;
      }
      // A transient failure of the preparer removed the entry: prepare again below.
      lock.unlock();
      return prepare_for(graph, signature, options);
    }
    ++m.stats.misses;
    entry = std::make_shared<Impl::Entry>();
    entry->owner = std::this_thread::get_id();
    m.entries.emplace(key, entry);
  }
  std::function<void(const program::Fingerprint&)> hook;
  {
    std::lock_guard<std::mutex> lock(m.config_mu);
    hook = m.hook;
  }
  if (hook) hook(key.fingerprint);
  const int64_t p0 = now_ns();
  Result<std::shared_ptr<const PreparedProgram>> result = prepare_uncached(graph, signature, options);
  m.preparations.fetch_add(1, std::memory_order_relaxed);
  m.prepare_ns.fetch_add(now_ns() - p0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(m.cache_mu);
    ++m.stats.preparations;
    auto it = m.entries.find(key);
    const PlanKey* stored = &it->first;
    if (result) {
      entry->plan = *result;
      entry->bytes = (*result)->footprint_bytes;
      entry->state = Impl::Entry::State::kReady;
    } else if (result.error().code() != ErrorCode::kAllocationFailed) {
      entry->error = result.error();
      entry->state = Impl::Entry::State::kFailed;
    } else {
      entry->state = Impl::Entry::State::kDropped;  // transient: waiters prepare again
      m.entries.erase(it);
      stored = nullptr;
    }
    if (stored != nullptr) {
      m.lru.push_front(stored);
      entry->lru = m.lru.begin();
      m.stats.retained_bytes += entry->bytes;
      m.evict_locked(config().plan_cache_capacity);
    }
  }
  m.cache_cv.notify_all();
  return result;
}

PlanCacheStats Runtime::plan_cache_stats() const {
  std::lock_guard<std::mutex> lock(impl_->cache_mu);
  PlanCacheStats s = impl_->stats;
  s.entries = static_cast<int64_t>(impl_->lru.size());
  s.capacity = config().plan_cache_capacity;
  return s;
}

void Runtime::clear_plan_cache() {
  std::lock_guard<std::mutex> lock(impl_->cache_mu);
  impl_->evict_locked(0);
}

ExecutionMetrics Runtime::metrics() const {
  const Impl& m = *impl_;
  ExecutionMetrics r;
  r.preparations = m.preparations.load();
  r.prepare_ns = m.prepare_ns.load();
  r.lookups = m.lookups.load();
  r.lookup_ns = m.lookup_ns.load();
  const RuntimeShared& s = *shared_;
  r.executions = s.executions.load();
  r.execute_ns = s.execute_ns.load();
  r.donated_arguments = s.donated.load();
  r.submissions = s.submissions.load();
  r.admission_waits = s.admission_waits.load();
  r.lease_waits = s.lease_waits.load();
  r.transfers = s.transfers.load();
  r.detached_errors = s.detached_errors.load();
  r.reserved_bytes_peak = s.reserved_peak.load();
  return r;
}

Result<std::vector<Tensor>> Runtime::run(const program::CompiledGraph& graph, std::span<const Tensor> arguments,
                                         const PrepareOptions& options) {
  std::vector<TensorSignature> sig;
  sig.reserve(arguments.size());
  for (const Tensor& t : arguments) {
    if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "run", "an argument is null");
    sig.push_back(TensorSignature{t.dtype(), t.shape(), t.placement()});
  }
  TENFERRO_TRY(std::shared_ptr<const PreparedProgram> plan, prepare_for(graph, sig, options));
  Result<std::vector<Tensor>> out = execute_prepared(*plan, arguments, graph.bindings);
  if (!out && out.error().code() == ErrorCode::kStalePreparedGraph) {
    // Reconfigured between lookup and execution: prepare for the new epoch once more.
    TENFERRO_TRY(std::shared_ptr<const PreparedProgram> again, prepare_for(graph, sig, options));
    return execute_prepared(*again, arguments, graph.bindings);
  }
  return out;
}

}  // namespace tenferro::runtime
