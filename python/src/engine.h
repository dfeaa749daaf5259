#pragma once
// The Python package's engine object: a CPU engine, its einsum plan cache and a pool of
// einsum workspaces (Note [Python fast path] in module.cc).

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "tenferro/cpu/engine.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/fft/fft.h"
#include "tenferro/linalg/linalg.h"

namespace tenferro::python {

// Workspaces of recently run plans (Note [Python fast path]): an execution takes one of
// its plan's idle workspaces out of the list (or makes one) and puts it back afterwards,
// so concurrent calls never share one, and repeated calls reuse their intermediate and
// packing buffers (fresh memory is slow to touch). Each entry pins its plan; at most
// kWorkspaces idle entries are kept (the oldest go first).
class WorkspacePool {
 public:
  struct Entry {
    std::shared_ptr<const einsum::EinsumPlan> plan;
    einsum::EinsumWorkspace workspace;
  };
  Entry take(const std::shared_ptr<const einsum::EinsumPlan>& plan) {
    {
      std::lock_guard lock(mu_);
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (it->plan == plan) {
          Entry e = std::move(*it);
          idle_.erase(it);
          return e;
        }
      }
    }
    return Entry{plan, plan->make_workspace()};
  }
  void give_back(Entry e) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(e));
    while (idle_.size() > kWorkspaces) idle_.erase(idle_.begin());
  }
  void clear() {
    std::lock_guard lock(mu_);
    idle_.clear();
  }
  int64_t retained_bytes() const {
    std::lock_guard lock(mu_);
    int64_t n = 0;
    for (const Entry& e : idle_) n += e.workspace.retained_bytes();
    return n;
  }

 private:
  static constexpr size_t kWorkspaces = 32;
  mutable std::mutex mu_;
  std::vector<Entry> idle_;
};

/// Recently seen inline einsum calls of one engine (Note [Python call cache] in
/// einsum_call.cc). Internally synchronised.
class CallCache;
std::shared_ptr<CallCache> make_call_cache();
/// Drops every cached call (now, or when the call in progress ends).
void clear_call_cache(CallCache& cache);
/// Entries held and calls served from them since the engine was made.
struct CallCacheStats {
  int64_t entries = 0, served = 0;
};
CallCacheStats call_cache_stats(CallCache& cache);

// A CPU engine with one domain of `threads` workers, its einsum plan cache, its
// workspaces and its call cache. Owned by Python objects (no global engine); thread-safe,
// so several Python threads may call it.
struct Engine {
  std::shared_ptr<cpu::CpuEngine> engine;
  std::shared_ptr<einsum::PlanCache> plans;
  std::shared_ptr<WorkspacePool> workspaces = std::make_shared<WorkspacePool>();
  std::shared_ptr<CallCache> calls = make_call_cache();
  /// FFTW plans of tenferro.fft's array calls (bounded; fft::PlanCache).
  std::shared_ptr<fft::PlanCache> fft_plans = std::make_shared<fft::PlanCache>();
  int threads = 1;
};

/// Engine configuration for `threads` workers (default: every CPU the process may use) in
/// one domain on the first allowed CPUs, pinned when there are enough CPUs (as the CLI's
/// engines). `threads`: None or an integer; `what` names the caller in the ValueError for
/// a count outside [1, 1024] (a TypeError for a non-integer).
cpu::CpuEngineConfig engine_config(const pybind11::object& threads, const cpu::CpuTopology& topo, const char* what);

/// tenferro.linalg's UPLO, mode, ord and method arguments (ValueError for others).
linalg::Uplo uplo_of(const std::string& s);
linalg::QrMode qr_mode_of(const std::string& mode);
linalg::MatrixNorm matrix_norm_kind(const std::string& kind);
linalg::TruncatedSvdOptions truncated_svd_options(std::optional<int64_t> max_rank, double rel_cutoff,
                                                  const std::string& method, uint64_t seed, bool gauge_fix);

void bind_linalg(pybind11::module_& m);
void bind_eager(pybind11::module_& m);
void bind_fft(pybind11::module_& m);

}  // namespace tenferro::python
