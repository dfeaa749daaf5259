#include "tenferro/cpu/engine.h"

#include <cblas.h>
#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>

namespace tenferro::cpu {

// Note [Re-entry detection]: a thread inside an entered context (the thread running
// run()'s function, or a worker running one of its parallel_for chunks) carries a
// thread-local marker. run() on such a thread fails with kReentered instead of
// entering an executor from inside itself (which could deadlock a bounded arena).
// The marker is per-thread execution state, not configuration; nothing else reads it.
namespace detail {
thread_local int tls_entered_depth = 0;
}  // namespace detail

namespace {

Error config_error(ErrorCode code, std::string message) {
  return Error(ErrorStage::kConfiguration, code, "CpuEngine::create", std::move(message));
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s = "{";
  for (size_t i = 0; i < cpus.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(cpus[i]));
  }
  s.push_back('}');
  return s;
}

std::vector<int> affinity_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Result<CpuTopology> CpuTopology::discover() {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kUnsupported, "CpuTopology::discover", "hwloc_topology_init failed");
  }
  struct Guard {
    hwloc_topology_t t;
    ~Guard() { hwloc_topology_destroy(t); }
  } guard{topo};
  // Restrict to the CPUs this process is bound to; disallowed (cgroup) CPUs are excluded
  // by default.
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING);
  if (hwloc_topology_load(topo) != 0) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kUnsupported, "CpuTopology::discover", "hwloc_topology_load failed");
  }
  const std::vector<int> affinity = affinity_cpus();
  auto allowed = [&](int os) { return std::binary_search(affinity.begin(), affinity.end(), os); };
  CpuTopology t;
  hwloc_const_cpuset_t all = hwloc_topology_get_allowed_cpuset(topo);
  int id = -1;
  hwloc_bitmap_foreach_begin(id, all) {
    if (allowed(id)) t.allowed_cpus.push_back(id);
  }
  hwloc_bitmap_foreach_end();
  const int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int n = 0; n < nodes; ++n) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
    std::vector<int> cpus;
    int c = -1;
    hwloc_bitmap_foreach_begin(c, node->cpuset) {
      if (std::binary_search(t.allowed_cpus.begin(), t.allowed_cpus.end(), c)) cpus.push_back(c);
    }
    hwloc_bitmap_foreach_end();
    if (!cpus.empty()) t.numa_nodes.push_back(std::move(cpus));
  }
  if (t.numa_nodes.empty() && !t.allowed_cpus.empty()) t.numa_nodes.push_back(t.allowed_cpus);
  return t;
}

struct CpuEngine::Domain {
  CpuDomainInfo info;
  std::shared_ptr<CpuDomainExecutor> executor;
  std::shared_ptr<HostBufferPool> pool;
  std::atomic<int64_t> entries{0};
  // Submissions not yet finished; the engine's destructor waits for zero.
  std::mutex mu;
  std::condition_variable idle;
  int64_t outstanding = 0;
};

struct CpuCompletion::State {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  Result<void> result;
  const CpuEngine* engine = nullptr;
  int32_t domain = 0;
};

Result<void> CpuCompletion::wait() const {
  if (!state_) return usage_error(ErrorCode::kInvalidArgument, "CpuCompletion::wait", "empty completion handle");
  std::unique_lock lock(state_->mu);
  if (!state_->done && detail::tls_entered_depth > 0) {
    return usage_error(ErrorCode::kReentered, "CpuCompletion::wait",
                       "waiting for a submission of domain " + std::to_string(state_->domain) +
                           " from inside an entered context could wait for its own worker");
  }
  state_->done_cv.wait(lock, [&] { return state_->done; });
  return state_->result;
}

bool CpuCompletion::ready() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  return state_->done;
}

CpuEngine::~CpuEngine() {
  for (auto& d : slots_) {
    std::unique_lock lock(d->mu);
    d->idle.wait(lock, [&] { return d->outstanding == 0; });
  }
}

Result<std::shared_ptr<CpuEngine>> CpuEngine::create(CpuEngineConfig config, const CpuTopology* topology) {
  CpuTopology discovered;
  if (topology == nullptr) {
    TENFERRO_TRY(discovered, CpuTopology::discover());
    topology = &discovered;
  }
  // Providers and placement policy.
  ProviderBundle bundle;
  bundle.elementwise = ProviderInfo{"tenferro-elementwise", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
  bundle.reduction = ProviderInfo{"tenferro-reduction", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
  bundle.indexing = ProviderInfo{"tenferro-indexing", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
  bundle.layout = ProviderInfo{"tenferro-layout", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
  switch (config.batch.provider) {
    case GemmProvider::kOpenBlas: {
      // Probe: a sequential OpenBLAS build runs on the calling thread; a threaded one on
      // its own workers with a process-global thread count.
      const bool sequential_build = openblas_get_parallel() == 0;
      bundle.dot_general =
          sequential_build ? ProviderInfo{"openblas", ThreadControl::kSequential, WorkerPlacement::kCallingThread}
                           : ProviderInfo{"openblas", ThreadControl::kGlobal, WorkerPlacement::kExternalWorkers};
      break;
    }
    case GemmProvider::kBlis:
      bundle.dot_general = ProviderInfo{"blis", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
      break;
    case GemmProvider::kNaive:
      bundle.dot_general = ProviderInfo{"tenferro-plain-loops", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
      break;
    case GemmProvider::kAuto:
      // The planner's automatic routes run every provider on the engine's workers
      // (one-thread OpenBLAS and BLIS calls, tenferro's kernels; Note [OpenBLAS pieces]).
      bundle.dot_general = ProviderInfo{"tenferro-dot-planner", ThreadControl::kPerCall, WorkerPlacement::kEngineWorkers};
      break;
  }
  config.batch.strict_placement = config.strict_placement;
  if (config.strict_placement) {
    for (const auto* slot : {&bundle.elementwise, &bundle.reduction, &bundle.indexing, &bundle.dot_general, &bundle.layout}) {
      if (*slot && (*slot)->threads == ThreadControl::kGlobal && (*slot)->placement == WorkerPlacement::kExternalWorkers) {
        return config_error(ErrorCode::kUnsupported,
                            "strict placement: provider '" + (*slot)->name +
                                "' runs multi-threaded on its own workers with only global thread control");
      }
    }
  }
  // Domains: default one per NUMA node.
  if (config.domains.empty()) {
    int32_t id = 0;
    for (const auto& node : topology->numa_nodes) {
      CpuDomainConfig d;
      d.id = id++;
      d.cpus = node;
      config.domains.push_back(d);
    }
  }
  std::set<int32_t> ids;
  std::set<int> taken;
  for (const CpuDomainConfig& d : config.domains) {
    if (!ids.insert(d.id).second) {
      return config_error(ErrorCode::kInvalidArgument, "domain id " + std::to_string(d.id) + " is declared twice");
    }
    if (d.threads < 0) {
      return config_error(ErrorCode::kInvalidArgument,
                          "domain " + std::to_string(d.id) + " has a negative thread count " + std::to_string(d.threads));
    }
    if (d.external) continue;
    if (d.cpus.empty()) {
      return config_error(ErrorCode::kInvalidArgument, "domain " + std::to_string(d.id) + " has an empty CPU set");
    }
    for (int c : d.cpus) {
      if (!std::binary_search(topology->allowed_cpus.begin(), topology->allowed_cpus.end(), c)) {
        return config_error(ErrorCode::kInvalidArgument,
                            "domain " + std::to_string(d.id) + " uses CPU " + std::to_string(c) +
                                " outside the allowed set " + cpu_list(topology->allowed_cpus));
      }
      if (!taken.insert(c).second) {
        return config_error(ErrorCode::kInvalidArgument,
                            "domain " + std::to_string(d.id) + " overlaps another domain on CPU " + std::to_string(c));
      }
    }
  }
  auto engine = std::shared_ptr<CpuEngine>(new CpuEngine());
  for (const CpuDomainConfig& d : config.domains) {
    auto slot = std::make_unique<Domain>();
    slot->info.id = d.id;
    slot->info.cpus = d.cpus;
    if (d.external) {
      slot->executor = d.external;
      slot->info.external = true;
    } else {
      const int threads = d.threads > 0 ? d.threads : static_cast<int>(d.cpus.size());
      TENFERRO_TRY(slot->executor, make_tbb_executor(threads, config.pin_workers ? d.cpus : std::vector<int>{}));
    }
    slot->info.capabilities = slot->executor->capabilities();
    slot->info.threads = slot->info.capabilities.workers;
    slot->pool = HostBufferPool::create(config.pool);
    engine->domains_.push_back(slot->info);
    engine->slots_.push_back(std::move(slot));
  }
  engine->providers_ = bundle;
  engine->caps_ = config.caps ? *config.caps : host_caps();
  if (config.max_isa) {
    engine->caps_.max_isa = *config.max_isa;
  } else {
    TENFERRO_TRY(std::optional<IsaLevel> env_cap, isa_cap_from_env());
    if (env_cap) engine->caps_.max_isa = *env_cap;
  }
  engine->config_ = std::move(config);
  return engine;
}

CpuEngine::Domain* CpuEngine::find(int32_t id) const {
  for (const auto& s : slots_) {
    if (s->info.id == id) return s.get();
  }
  return nullptr;
}

Result<void> CpuEngine::run(int32_t domain_id, ParallelMode mode, FunctionRef<Result<void>(CpuExecutionContext&)> f) {
  Domain* d = find(domain_id);
  if (d == nullptr) {
    return usage_error(ErrorCode::kOutOfRange, "CpuEngine::run", "no domain with id " + std::to_string(domain_id));
  }
  if (detail::tls_entered_depth > 0) {
    return usage_error(ErrorCode::kReentered, "CpuEngine::run",
                       "called from inside an entered execution context (domain " + std::to_string(domain_id) +
                           "); pass the existing context instead");
  }
  d->entries.fetch_add(1, std::memory_order_relaxed);
  Result<void> result;
  d->executor->install([&] {
    detail::EnteredMark mark;
    CpuExecutionContext ctx(d->executor.get(), mode, d->info.threads, config_.batch, &caps_);
    result = f(ctx);
  });
  return result;
}

Result<CpuCompletion> CpuEngine::submit(int32_t domain_id, std::function<Result<void>(CpuExecutionContext&)> f) {
  Domain* d = find(domain_id);
  if (d == nullptr) {
    return usage_error(ErrorCode::kOutOfRange, "CpuEngine::submit", "no domain with id " + std::to_string(domain_id));
  }
  if (detail::tls_entered_depth > 0) {
    return usage_error(ErrorCode::kReentered, "CpuEngine::submit",
                       "called from inside an entered execution context (domain " + std::to_string(domain_id) +
                           "): that would be a second fan-out level");
  }
  CpuCompletion c;
  c.state_ = std::make_shared<CpuCompletion::State>();
  c.state_->domain = domain_id;
  {
    std::lock_guard lock(d->mu);
    d->outstanding++;
  }
  d->entries.fetch_add(1, std::memory_order_relaxed);
  // The engine outlives its submissions (its destructor waits), so &caps_ stays valid.
  d->executor->submit([d, state = c.state_, fn = std::move(f), batch = config_.batch, caps = &caps_]() {
    Result<void> r;
    {
      detail::EnteredMark mark;
      CpuExecutionContext ctx(d->executor.get(), ParallelMode::kOuter, 1, batch, caps);
      try {
        r = fn(ctx);
      } catch (const std::exception& e) {
        r = Error(ErrorStage::kCompletion, ErrorCode::kInternal, "CpuEngine::submit",
                  std::string("submitted function threw: ") + e.what());
      }
    }
    {
      std::lock_guard lock(state->mu);
      state->result = std::move(r);
      state->done = true;
    }
    state->done_cv.notify_all();
    // Last touch of the domain: the engine's destructor may proceed once this unlocks.
    std::lock_guard lock(d->mu);
    d->outstanding--;
    d->idle.notify_all();
  });
  return c;
}

int64_t CpuEngine::entry_count(int32_t domain_id) const {
  Domain* d = find(domain_id);
  return d ? d->entries.load(std::memory_order_relaxed) : 0;
}

const std::shared_ptr<HostBufferPool>& CpuEngine::pool(int32_t domain_id) const {
  static const std::shared_ptr<HostBufferPool> kNone;  // immutable empty handle
  Domain* d = find(domain_id);
  return d ? d->pool : kNone;
}

}  // namespace tenferro::cpu
