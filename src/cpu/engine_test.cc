#include "tenferro/cpu/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/dot_route.h"
#include "tenferro/cpu/elementwise.h"

namespace tenferro::cpu {
namespace {

// An engine with one unpinned domain (id 0) of `threads` workers on the allowed CPUs.
std::shared_ptr<CpuEngine> unpinned_engine(int threads) {
  CpuTopology t = CpuTopology::discover().value();
  CpuEngineConfig cfg;
  cfg.domains = {CpuDomainConfig{0, t.allowed_cpus, threads, nullptr}};
  cfg.pin_workers = false;
  return CpuEngine::create(cfg, &t).value();
}

CpuTopology fake_topology() {
  CpuTopology t;
  t.allowed_cpus = {0, 1, 2, 3};
  t.numa_nodes = {{0, 1}, {2, 3}};
  return t;
}

TEST(Topology, DiscoversAllowedCpus) {
  CpuTopology t = CpuTopology::discover().value();
  ASSERT_FALSE(t.allowed_cpus.empty());
  ASSERT_FALSE(t.numa_nodes.empty());
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(static_cast<int>(t.allowed_cpus.size()), CPU_COUNT(&set));
  size_t in_nodes = 0;
  for (const auto& n : t.numa_nodes) in_nodes += n.size();
  EXPECT_EQ(in_nodes, t.allowed_cpus.size());
}

TEST(Engine, DefaultDomainsFollowNumaNodes) {
  CpuTopology t = fake_topology();
  CpuEngineConfig cfg;
  cfg.pin_workers = false;  // the fake CPUs may not exist here
  auto e = CpuEngine::create(cfg, &t).value();
  ASSERT_EQ(e->domains().size(), 2u);
  EXPECT_EQ(e->domains()[1].cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(e->domains()[0].threads, 2);
  ASSERT_TRUE(e->providers().dot_general.has_value());
  // The planner's automatic routes run on the engine's workers.
  EXPECT_EQ(e->providers().dot_general->threads, ThreadControl::kPerCall);
  EXPECT_EQ(e->providers().dot_general->placement, WorkerPlacement::kEngineWorkers);
  EXPECT_EQ(e->providers().layout->placement, WorkerPlacement::kEngineWorkers);
}

TEST(Engine, ConfigurationErrorsAreTyped) {
  CpuTopology t = fake_topology();
  auto expect_config_error = [&](CpuEngineConfig cfg, ErrorCode code, const char* needle) {
    cfg.pin_workers = false;
    auto r = CpuEngine::create(cfg, &t);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().stage(), ErrorStage::kConfiguration);
    EXPECT_EQ(r.error().code(), code);
    EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
  };
  CpuEngineConfig empty;
  empty.domains = {CpuDomainConfig{0, {}, 0, nullptr}};
  expect_config_error(empty, ErrorCode::kInvalidArgument, "empty CPU set");
  CpuEngineConfig dup;
  dup.domains = {CpuDomainConfig{1, {0}, 0, nullptr}, CpuDomainConfig{1, {1}, 0, nullptr}};
  expect_config_error(dup, ErrorCode::kInvalidArgument, "declared twice");
  CpuEngineConfig overlap;
  overlap.domains = {CpuDomainConfig{0, {0, 1}, 0, nullptr}, CpuDomainConfig{1, {1, 2}, 0, nullptr}};
  expect_config_error(overlap, ErrorCode::kInvalidArgument, "overlaps");
  CpuEngineConfig outside;
  outside.domains = {CpuDomainConfig{0, {7}, 0, nullptr}};
  expect_config_error(outside, ErrorCode::kInvalidArgument, "outside the allowed set");
  // Strict placement refuses a default provider that runs on its own threads (a
  // threaded OpenBLAS build); the planner's automatic routes and BLIS run on the
  // engine's workers.
  CpuEngineConfig strict;
  strict.strict_placement = true;
  strict.batch.provider = GemmProvider::kOpenBlas;
  if (host_caps().openblas_threaded) expect_config_error(strict, ErrorCode::kUnsupported, "strict placement");
  strict.pin_workers = false;
  strict.batch.provider = GemmProvider::kBlis;
  EXPECT_TRUE(CpuEngine::create(strict, &t).has_value()) << "BLIS runs on engine workers";
  strict.batch.provider = GemmProvider::kAuto;
  EXPECT_TRUE(CpuEngine::create(strict, &t).has_value()) << "automatic routes run on engine workers";
}

// CpuEngineConfig::batch.provider is every context's default GEMM provider (a call's
// DotOptions::provider still wins), and strict placement reaches dot_general: a product
// forced onto OpenBLAS's own threads fails before any write.
TEST(Engine, DefaultProviderAndStrictPlacementReachDotGeneral) {
  CpuTopology t = CpuTopology::discover().value();
  CpuEngineConfig cfg;
  cfg.domains = {CpuDomainConfig{0, t.allowed_cpus, 2, nullptr}};
  cfg.pin_workers = false;
  cfg.strict_placement = true;
  cfg.batch.provider = GemmProvider::kBlis;
  auto e = CpuEngine::create(cfg, &t).value();
  const Tensor a = Tensor::random_normal(DType::kF64, {700, 600}, 1).value();
  const Tensor b = Tensor::random_normal(DType::kF64, {600, 500}, 2).value();
  DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  ASSERT_TRUE(e->run(0, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
    TENFERRO_TRY(DotRoute route, explain_dot_general(ctx, a, b, dims));
    EXPECT_EQ(route.provider, GemmProvider::kBlis) << describe(route);
    DotOptions naive;
    naive.provider = GemmProvider::kNaive;
    TENFERRO_TRY(DotRoute forced, explain_dot_general(ctx, a, b, dims, naive));
    EXPECT_EQ(forced.provider, GemmProvider::kNaive) << describe(forced);
    // Same values through the engine's default and through plain loops.
    TENFERRO_TRY(Tensor via_blis, dot_general(ctx, a, b, dims));
    TENFERRO_TRY(Tensor via_loops, dot_general(ctx, a, b, dims, naive));
    for (int64_t i = 0; i < 700; i += 37)
      for (int64_t j = 0; j < 500; j += 29)
        EXPECT_NEAR(via_blis.get<double>({i, j}).value(), via_loops.get<double>({i, j}).value(), 1e-9);
    if (ctx.threads() > 1) {
      DotOptions own_threads;
      own_threads.provider = GemmProvider::kOpenBlas;
      Tensor out = Tensor::full(DType::kF64, {700, 500}, 7.0).value();
      auto r = dot_general_into(ctx, a, b, dims, own_threads, out);
      EXPECT_FALSE(r.has_value());
      if (!r) {
        EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
      }
      EXPECT_EQ(out.get<double>({3, 4}).value(), 7.0);  // nothing written
    }
    return ok();
  }));
}

TEST(Engine, OneEntryPerOperationOrSession) {
  CpuTopology t = CpuTopology::discover().value();
  CpuEngineConfig cfg;
  cfg.domains = {CpuDomainConfig{5, t.allowed_cpus, 0, nullptr}};
  auto e = CpuEngine::create(cfg, &t).value();
  Tensor a = Tensor::ones(DType::kF64, {100}).value();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(e->run(5, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
      return binary(ctx, BinaryOp::kAdd, a, a).transform([](const Tensor&) {});
    }));
  }
  EXPECT_EQ(e->entry_count(5), 3);
  // A session: many operations, one entry.
  ASSERT_TRUE(e->run(5, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
    for (int i = 0; i < 10; ++i) {
      TENFERRO_TRY(Tensor r, binary(ctx, BinaryOp::kMul, a, a));
      (void)r;
    }
    return ok();
  }));
  EXPECT_EQ(e->entry_count(5), 4);
  EXPECT_EQ(e->run(9, ParallelMode::kInner, [](CpuExecutionContext&) { return ok(); }).error().code(),
            ErrorCode::kOutOfRange);
}

TEST(Engine, ReentryIsATypedErrorNotADeadlock) {
  auto e = unpinned_engine(2);
  Result<void> inner;
  ASSERT_TRUE(e->run(0, ParallelMode::kInner, [&](CpuExecutionContext&) -> Result<void> {
    inner = e->run(0, ParallelMode::kSequential, [](CpuExecutionContext&) { return ok(); });
    return ok();
  }));
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().code(), ErrorCode::kReentered);
  // From a worker inside parallel_for too.
  std::atomic<int> reentered{0};
  ASSERT_TRUE(e->run(0, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
    ctx.parallel_for(64, 1, [&](int64_t, int64_t) {
      auto r = e->run(0, ParallelMode::kSequential, [](CpuExecutionContext&) { return ok(); });
      if (!r && r.error().code() == ErrorCode::kReentered) reentered++;
    });
    return ok();
  }));
  EXPECT_GT(reentered.load(), 0);
  EXPECT_EQ(e->entry_count(0), 2);
  // After leaving, entering works again.
  EXPECT_TRUE(e->run(0, ParallelMode::kSequential, [](CpuExecutionContext&) { return ok(); }));
}

// A caller-owned executor that counts how it is used.
class CountingExecutor final : public CpuDomainExecutor {
 public:
  std::atomic<int> installs{0};
  ExecutorCapabilities capabilities() const override { return {1, false, false, ShutdownOwner::kCaller}; }
  void install(FunctionRef<void()> f) override {
    installs++;
    f();
  }
  void submit(std::function<void()> f) override { f(); }
  void parallel_for(int64_t n, int64_t, FunctionRef<void(int64_t, int64_t)> body) override { body(0, n); }
};

TEST(Engine, ExternalManagedExecutorIsUsedAsIsAndKeptAlive) {
  CpuTopology t = fake_topology();
  auto ext = std::make_shared<CountingExecutor>();
  std::weak_ptr<CountingExecutor> weak = ext;
  CpuEngineConfig cfg;
  cfg.domains = {CpuDomainConfig{3, {}, 0, ext}};
  auto e = CpuEngine::create(cfg, &t).value();
  CountingExecutor* raw = ext.get();
  ext.reset();
  cfg.domains.clear();
  EXPECT_FALSE(weak.expired()) << "the engine keeps the external executor alive";
  EXPECT_TRUE(e->domains()[0].external);
  EXPECT_EQ(e->domains()[0].capabilities.shutdown_owner, ShutdownOwner::kCaller);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(e->run(3, ParallelMode::kSequential, [](CpuExecutionContext&) { return ok(); }));
  }
  EXPECT_EQ(raw->installs.load(), 4) << "the same executor, never rebuilt";
  e.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(BatchPolicy, PrecedenceAndRestoreOnErrorAndUnwind) {
  CpuTopology t = fake_topology();
  CpuEngineConfig cfg;
  cfg.pin_workers = false;
  cfg.batch.policy = BatchPolicy::kSequential;
  cfg.batch.tiny_flops = 7;
  auto e = CpuEngine::create(cfg, &t).value();
  ASSERT_TRUE(e->run(0, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
    EXPECT_EQ(ctx.batch().policy, BatchPolicy::kSequential);  // engine default
    DotOptions none;
    EXPECT_EQ(effective_batch_settings(ctx, none).tiny_flops, 7);
    {
      ScopedBatchOverride scope(ctx, BatchSettings{BatchPolicy::kOuterParallel, 9, 100});
      EXPECT_EQ(effective_batch_settings(ctx, none).policy, BatchPolicy::kOuterParallel);  // scoped
      DotOptions per_op;
      per_op.batch_policy = BatchPolicy::kSequential;
      EXPECT_EQ(effective_batch_settings(ctx, per_op).policy, BatchPolicy::kSequential);  // per-operation
      EXPECT_EQ(effective_batch_settings(ctx, per_op).tiny_flops, 9);
      // An operation failing inside the scope leaves the override in place until the
      // scope ends, and the scope restores it.
      auto bad = dot_general(ctx, Tensor::ones(DType::kF64, {2}).value(), Tensor::ones(DType::kF32, {2}).value(), {});
      EXPECT_FALSE(bad);
    }
    EXPECT_EQ(ctx.batch().policy, BatchPolicy::kSequential);
    EXPECT_EQ(ctx.batch().tiny_flops, 7);
    try {
      ScopedBatchOverride scope(ctx, BatchSettings{BatchPolicy::kOuterParallel, 1, 1});
      throw std::runtime_error("unwind");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(ctx.batch().policy, BatchPolicy::kSequential);
    return ok();
  }));
}

TEST(BatchPolicy, TwoFanOutLevelsAreRejectedBeforeDispatch) {
  auto e = unpinned_engine(2);
  Tensor a = Tensor::ones(DType::kF64, {4, 8, 8}).value();
  DotDims d;
  d.lhs_batch = {0};
  d.rhs_batch = {0};
  d.lhs_contracting = {2};
  d.rhs_contracting = {1};
  Tensor out = Tensor::full(DType::kF64, {4, 8, 8}, c128(3, 0)).value();
  Result<void> r;
  ASSERT_TRUE(e->run(0, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
    DotOptions o;
    o.provider = GemmProvider::kOpenBlas;
    o.batch_policy = BatchPolicy::kOuterParallel;
    r = dot_general_into(ctx, a, a, d, o, out);
    return ok();
  }));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(out.get<double>({3, 7, 7}).value(), 3.0) << "nothing written";
}

}  // namespace
}  // namespace tenferro::cpu

namespace tenferro::cpu {
namespace {

TEST(Engine, OuterSubmissionsRunConcurrentlyAndReportTheirResults) {
  auto e = unpinned_engine(2);
  std::vector<int64_t> sums(8, 0);
  std::vector<CpuCompletion> done;
  for (int i = 0; i < 8; ++i) {
    auto c = e->submit(0, [&sums, i](CpuExecutionContext& ctx) -> Result<void> {
      if (ctx.mode() != ParallelMode::kOuter || ctx.threads() != 1) {
        return usage_error(ErrorCode::kInternal, "test", "outer context expected");
      }
      int64_t s = 0;
      for (int64_t k = 0; k <= 1000 * (i + 1); ++k) s += k;
      sums[static_cast<size_t>(i)] = s;
      if (i == 5) return usage_error(ErrorCode::kInvalidArgument, "job", "job 5 fails");
      return ok();
    });
    ASSERT_TRUE(c.has_value());
    done.push_back(*c);
  }
  for (int i = 0; i < 8; ++i) {
    Result<void> r = done[static_cast<size_t>(i)].wait();
    EXPECT_TRUE(done[static_cast<size_t>(i)].ready());
    if (i == 5) {
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    } else {
      EXPECT_TRUE(r.has_value());
    }
    const int64_t n = 1000 * (i + 1);
    EXPECT_EQ(sums[static_cast<size_t>(i)], n * (n + 1) / 2);
  }
  EXPECT_EQ(e->entry_count(0), 8) << "one executor entry per submission";
  EXPECT_EQ(e->submit(4, [](CpuExecutionContext&) { return ok(); }).error().code(), ErrorCode::kOutOfRange);
}

TEST(Engine, SubmitAndWaitFromInsideAnEnteredContextAreRejected) {
  auto e = unpinned_engine(2);
  CpuCompletion outside = e->submit(0, [](CpuExecutionContext&) { return ok(); }).value();
  ASSERT_TRUE(outside.wait().has_value());
  std::optional<Result<CpuCompletion>> nested;
  ASSERT_TRUE(e->run(0, ParallelMode::kInner, [&](CpuExecutionContext&) -> Result<void> {
    nested = e->submit(0, [](CpuExecutionContext&) { return ok(); });
    return ok();
  }));
  ASSERT_FALSE(nested->has_value());
  EXPECT_EQ(nested->error().code(), ErrorCode::kReentered);
  // A pending submission waited on from inside a context is rejected, not deadlocked.
  std::atomic<bool> release{false};
  CpuCompletion pending = e->submit(0, [&](CpuExecutionContext&) -> Result<void> {
    while (!release.load()) std::this_thread::yield();
    return ok();
  }).value();
  Result<void> waited;
  ASSERT_TRUE(e->run(0, ParallelMode::kSequential, [&](CpuExecutionContext&) -> Result<void> {
    waited = pending.wait();
    return ok();
  }));
  release = true;
  EXPECT_TRUE(!waited.has_value() ? waited.error().code() == ErrorCode::kReentered : pending.ready());
  EXPECT_TRUE(pending.wait().has_value());
}

TEST(Engine, DestructorWaitsForRunningSubmissions) {
  auto e = unpinned_engine(1);
  std::atomic<int> finished{0};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(e->submit(0, [&](CpuExecutionContext&) -> Result<void> {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      finished++;
      return ok();
    }));
  }
  e.reset();
  EXPECT_EQ(finished.load(), 4);
}

// Note [Worker pinning]: the arena's workers run on the domain's CPUs; the thread that
// calls install() keeps its own affinity.
TEST(Executor, PinsWorkersNotTheCaller) {
  CpuTopology t = CpuTopology::discover().value();
  if (t.allowed_cpus.size() < 2) GTEST_SKIP() << "needs two allowed CPUs to tell the sets apart";
  const int pinned_cpu = t.allowed_cpus.back();
  bool can_pin = false;  // a sandbox may refuse affinity changes; the executor then cannot pin
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(pinned_cpu, &one);
    can_pin = sched_setaffinity(0, sizeof(one), &one) == 0;
  }).join();
  if (!can_pin) GTEST_SKIP() << "this process may not change thread affinity";
  auto ex = make_tbb_executor(2, {pinned_cpu}).value();
  auto affinity = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    return set;
  };
  const cpu_set_t before = affinity();
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex mu;
  std::vector<cpu_set_t> worker_sets;
  for (int round = 0; round < 3; ++round) {
    ex->install([&] {
      ex->parallel_for(64, 1, [&](int64_t, int64_t) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (std::this_thread::get_id() == caller) return;
        const cpu_set_t s = affinity();
        std::lock_guard lock(mu);
        worker_sets.push_back(s);
      });
    });
  }
  const cpu_set_t after = affinity();
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "install() changed the calling thread's affinity";
  for (const cpu_set_t& s : worker_sets) {
    EXPECT_EQ(CPU_COUNT(&s), 1);
    EXPECT_TRUE(CPU_ISSET(pinned_cpu, &s));
  }
}

}  // namespace
}  // namespace tenferro::cpu
