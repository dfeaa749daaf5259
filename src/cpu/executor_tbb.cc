#include <sched.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <atomic>
#include <memory>
#include <vector>

#include "tenferro/cpu/context.h"

namespace tenferro::cpu {

std::string_view parallel_mode_name(ParallelMode mode) noexcept {
  switch (mode) {
    case ParallelMode::kSequential: return "sequential";
    case ParallelMode::kInner: return "inner";
    case ParallelMode::kOuter: return "outer";
  }
  return "unknown";
}

std::string_view batch_policy_name(BatchPolicy policy) noexcept {
  switch (policy) {
    case BatchPolicy::kAuto: return "auto";
    case BatchPolicy::kSequential: return "sequential";
    case BatchPolicy::kOuterParallel: return "outer-parallel";
    case BatchPolicy::kProviderItems: return "provider-items";
    case BatchPolicy::kWholeBatchVendor: return "whole-batch-vendor";
  }
  return "unknown";
}

namespace {

// Note [Worker pinning]: pins the arena's worker threads to the domain's CPU set. The
// thread that calls install() is the user's and keeps its affinity (it only runs the
// arena's work while it is inside). oneTBB calls on_scheduler_entry every time a thread
// joins the arena (for a worker: after each idle period), so each thread remembers the
// observer it was last pinned for (a per-observer serial, never reused) and makes the
// system call only when that changes: once per worker and domain, not once per run.
class PinningObserver : public tbb::task_scheduler_observer {
 public:
  PinningObserver(tbb::task_arena& arena, std::vector<int> cpus)
      : tbb::task_scheduler_observer(arena), cpus_(std::move(cpus)), serial_(next_serial()) {
    observe(true);
  }
  ~PinningObserver() override { observe(false); }
  void on_scheduler_entry(bool is_worker) override {
    if (!is_worker || tls_pinned_for == serial_) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus_) CPU_SET(c, &set);
    (void)sched_setaffinity(0, sizeof(set), &set);
    tls_pinned_for = serial_;
  }

 private:
  static uint64_t next_serial() {
    static std::atomic<uint64_t> counter{1};
    return counter.fetch_add(1, std::memory_order_relaxed);
  }
  static thread_local uint64_t tls_pinned_for;
  std::vector<int> cpus_;
  uint64_t serial_;
};

thread_local uint64_t PinningObserver::tls_pinned_for = 0;

class TbbExecutor final : public CpuDomainExecutor {
 public:
  TbbExecutor(int threads, std::vector<int> cpus) : threads_(threads), arena_(threads) {
    arena_.initialize();
    if (!cpus.empty()) observer_ = std::make_unique<PinningObserver>(arena_, std::move(cpus));
  }
  ~TbbExecutor() override {
    observer_.reset();
    arena_.terminate();
  }
  ExecutorCapabilities capabilities() const override {
    return ExecutorCapabilities{threads_, false, observer_ != nullptr, ShutdownOwner::kEngine};
  }
  void install(FunctionRef<void()> f) override {
    arena_.execute([&] { f(); });
  }
  void submit(std::function<void()> f) override { arena_.enqueue(std::move(f)); }
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body) override {
    // Called from inside install(): runs on this arena's workers.
    // Note [Visible completion]: oneTBB's own completion barrier happens-before the
    // return, but it lives in the (uninstrumented) library; the release/acquire pair on
    // `done` states the same ordering in our code, so ThreadSanitizer sees it too. One
    // atomic add per chunk.
    std::atomic<int64_t> done{0};
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, static_cast<size_t>(grain > 0 ? grain : 1)),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        body(r.begin(), r.end());
                        done.fetch_add(1, std::memory_order_release);
                      });
    (void)done.load(std::memory_order_acquire);
  }

 private:
  int threads_;
  tbb::task_arena arena_;
  std::unique_ptr<PinningObserver> observer_;
};

}  // namespace

Result<std::shared_ptr<CpuDomainExecutor>> make_tbb_executor(int threads, std::vector<int> cpus) {
  if (threads < 1) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kInvalidArgument, "make_tbb_executor",
                 "thread budget " + std::to_string(threads) + " must be at least 1");
  }
  return std::shared_ptr<CpuDomainExecutor>(std::make_shared<TbbExecutor>(threads, std::move(cpus)));
}

}  // namespace tenferro::cpu
