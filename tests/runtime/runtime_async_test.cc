// Runtime II against the CPU engine and the test engine (tests/runtime/test_engine.h):
// graphs mixing engines with scheduled transfers, event-domain fault injection at every
// node position, submit/ExecutionHandle (detach, cancel, shutdown, dropped runtimes),
// ownership (weak sentinels), admission under memory budgets with 16 submitting
// threads, node leases and sessions.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/program/interpreter.h"
#include "test_engine.h"

namespace tenferro {
namespace {

using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;
using runtime::EngineId;
using runtime::OpPlacement;
using runtime::PrepareOptions;
using runtime::Runtime;

constexpr int64_t kN = 6;

ValueType vec() { return ValueType{DType::kF64, {Extent::exact(kN)}}; }

std::shared_ptr<cpu::CpuEngine> cpu_engine() {
  cpu::CpuEngineConfig cfg;
  cpu::CpuDomainConfig d;
  d.cpus = {cpu::CpuTopology::discover().value().allowed_cpus.front()};
  d.threads = 1;
  cfg.domains = {d};
  cfg.pin_workers = false;
  return cpu::CpuEngine::create(cfg).value();
}

struct Fixture {
  std::shared_ptr<Runtime> rt;
  std::shared_ptr<test_engine::TestEngine> dev;
  EngineId cpu, mock;
};

Fixture make(runtime::RuntimeConfig config = {}) {
  Fixture f;
  f.rt = Runtime::create(config).value();
  f.cpu = cpu_runtime::register_cpu_engine(*f.rt, cpu_engine()).value();
  f.dev = test_engine::create();
  f.mock = f.dev->register_into(*f.rt, f.cpu).value();
  EXPECT_TRUE(f.rt->register_extension(f.cpu, test_engine::cpu_sleep_module()));
  return f;
}

// The values of a (host or device) f64 tensor.
std::vector<double> values(test_engine::TestEngine& dev, const Tensor& t) {
  Tensor h = t.placement().is_host() ? t.to_col_major().value() : dev.download(t).value();
  const auto* p = static_cast<const double*>(h.storage()->data());
  return std::vector<double>(p, p + h.numel());
}

std::vector<Tensor> host_inputs(int count, uint64_t seed = 1) {
  std::vector<Tensor> in;
  for (int i = 0; i < count; ++i) in.push_back(Tensor::random_normal(DType::kF64, {kN}, seed + static_cast<uint64_t>(i)).value());
  return in;
}

// x, y on the host. a = x + y (cpu); b = a * y (device); c = -b (device); d = c - x (cpu).
// Outputs: d (host) and c (device). Transfers: a, y to the device; c back to the host.
struct Mixed {
  program::CompiledGraph graph;
  PrepareOptions options;
};
Mixed mixed_graph(EngineId mock) {
  ProgramBuilder b;
  Value x = b.input(vec()).value();
  Value y = b.input(vec()).value();
  Value a = b.op(OpCode::kAdd, {x, y}).value();
  Value bb = b.op(OpCode::kMul, {a, y}).value();
  Value c = b.op(OpCode::kNeg, {bb}).value();
  Value d = b.op(OpCode::kSub, {c, x}).value();
  Mixed m{b.finish({d, c}).value(), {}};
  m.options.placements = {OpPlacement{1, mock, {}}, OpPlacement{2, mock, {}}};
  return m;
}

// A chain on the device: x (host) -> upload -> k device ops -> download -> output.
Mixed device_chain(EngineId mock, int k) {
  ProgramBuilder b;
  Value x = b.input(vec()).value();
  Value v = x;
  Mixed m;
  for (int i = 0; i < k; ++i) {
    v = b.op(i % 2 == 0 ? OpCode::kNeg : OpCode::kAdd, i % 2 == 0 ? std::vector<Value>{v} : std::vector<Value>{v, v}).value();
    m.options.placements.push_back(OpPlacement{i, mock, {}});
  }
  Value out = b.op(OpCode::kAdd, {v, x}).value();  // on the CPU: downloads v
  m.graph = b.finish({out}).value();
  return m;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << i;
}

template <class Pred>
bool eventually(Pred pred, int ms = 5000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

TEST(RuntimeAsync, MixedGraphMatchesTheReferenceInterpreter) {
  Fixture f = make();
  const Mixed m = mixed_graph(f.mock);
  const auto in = host_inputs(2);
  const auto want = program::interpret(m.graph, in).value();
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in), m.options).value();
  const runtime::PreparedInfo info = runtime::prepared_info(*plan);
  EXPECT_EQ(info.transfers, 3);
  EXPECT_EQ(info.event_domains, 2);
  for (int rep = 0; rep < 3; ++rep) {
    f.dev->faults().delay_us = rep == 0 ? 0 : 2000;  // delayed completions: same results
    auto out = f.rt->execute_prepared(*plan, in);
    ASSERT_TRUE(out) << out.error().to_string();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_TRUE((*out)[0].placement().is_host());
    EXPECT_EQ((*out)[1].placement(), Placement::gpu_device(7));  // returned where computed
    expect_near(values(*f.dev, (*out)[0]), values(*f.dev, want[0]));
    expect_near(values(*f.dev, (*out)[1]), values(*f.dev, want[1]));
    auto h = f.rt->submit(plan, in).value();
    auto sub = h.wait();
    ASSERT_TRUE(sub) << sub.error().to_string();
    expect_near(values(*f.dev, (*sub)[0]), values(*f.dev, want[0]));
  }
  EXPECT_EQ(f.dev->counters().runs_begun.load(), f.dev->counters().runs_drained.load());
  EXPECT_EQ(f.rt->metrics().transfers, 6 * 3);
  // Transfers appear in explain, with their routes.
  const std::string text = f.rt->explain(*plan);
  EXPECT_NE(text.find("transfer"), std::string::npos) << text;
  EXPECT_NE(text.find("test_engine.upload"), std::string::npos) << text;
  EXPECT_NE(text.find("test_engine.download"), std::string::npos) << text;
  EXPECT_NE(text.find("asynchronous"), std::string::npos) << text;
}

TEST(RuntimeAsync, CpuOnlyProgramsHaveNoTransfers) {
  Fixture f = make();
  const Mixed m = mixed_graph(f.mock);
  const auto in = host_inputs(2);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in)).value();  // no placements: all on the CPU
  EXPECT_EQ(runtime::prepared_info(*plan).transfers, 0);
  EXPECT_EQ(runtime::prepared_info(*plan).event_domains, 1);
  EXPECT_EQ(f.rt->explain(*plan).find("transfer"), std::string::npos);
  const auto want = program::interpret(m.graph, in).value();
  auto out = f.rt->execute_prepared(*plan, in).value();
  expect_near(values(*f.dev, out[1]), values(*f.dev, want[1]));
}

TEST(RuntimeAsync, DeviceResidentArgumentsNeedNoUpload) {
  Fixture f = make();
  ProgramBuilder b;
  Value x = b.input(vec()).value();
  Value y = b.op(OpCode::kExp, {x}).value();
  const auto g = b.finish({y}).value();
  const auto host = host_inputs(1);
  const Tensor dx = f.dev->upload(host[0]).value();
  PrepareOptions o;
  o.engine = f.mock;
  auto plan = f.rt->prepare_for(g, runtime::signature_of(std::vector<Tensor>{dx}), o).value();
  EXPECT_EQ(runtime::prepared_info(*plan).transfers, 0);
  auto out = f.rt->execute_prepared(*plan, std::vector<Tensor>{dx}).value();
  const auto want = program::interpret(g, host).value();
  expect_near(values(*f.dev, out[0]), values(*f.dev, want[0]));
  // A host tensor passed for a plan prepared for device memory: no implicit transfer.
  auto wrong = f.rt->execute_prepared(*plan, host);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), ErrorCode::kInvalidArgument);
}

TEST(RuntimeAsync, MissingTransferProviderFailsAtPrepare) {
  auto rt = Runtime::create().value();
  const EngineId cpu = cpu_runtime::register_cpu_engine(*rt, cpu_engine()).value();
  auto dev = test_engine::create();
  const EngineId mock = rt->register_engine(dev->bridge()).value();
  const Mixed m = mixed_graph(mock);
  const auto in = host_inputs(2);
  auto plan = rt->prepare_for(m.graph, runtime::signature_of(in), m.options);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().stage(), ErrorStage::kPrepare);
  EXPECT_EQ(plan.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(plan.error().message().find("no transfer provider"), std::string::npos) << plan.error().to_string();
  // The endpoints engines registered with.
  EXPECT_EQ(rt->endpoint(cpu).value(), (runtime::TransferEndpoint{cpu, runtime::StorageClass::kHost}));
  EXPECT_EQ(rt->endpoint(mock).value(), (runtime::TransferEndpoint{mock, runtime::StorageClass::kDevice}));
  EXPECT_EQ(rt->endpoint(EngineId{9}).error().code(), ErrorCode::kOutOfRange);
  // Registration errors.
  EXPECT_EQ(rt->register_transfer({cpu, runtime::StorageClass::kDevice}, {mock, runtime::StorageClass::kDevice},
                                  dev->upload_provider())
                .error()
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt->register_transfer({cpu, runtime::StorageClass::kHost}, {EngineId{9}, runtime::StorageClass::kDevice},
                                  dev->upload_provider())
                .error()
                .code(),
            ErrorCode::kOutOfRange);
  // A placement no engine holds.
  Tensor stray = dev->upload(in[0]).value();
  auto other = test_engine::create(3);
  Tensor foreign = other->upload(in[0]).value();
  ProgramBuilder b;
  Value x = b.input(vec()).value();
  const auto g = b.finish({b.op(OpCode::kNeg, {x}).value()}).value();
  auto bad = rt->prepare_for(g, runtime::signature_of(std::vector<Tensor>{foreign}));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kUnsupported);
}

enum class Fault { kBegin, kEnqueue, kCompletion, kDelayedCompletion, kDrain, kEnqueueAndDrain, kForeignToken };

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::kBegin: return "begin";
    case Fault::kEnqueue: return "enqueue";
    case Fault::kCompletion: return "completion";
    case Fault::kDelayedCompletion: return "delayed completion";
    case Fault::kDrain: return "drain";
    case Fault::kEnqueueAndDrain: return "enqueue + drain";
    case Fault::kForeignToken: return "foreign token";
  }
  return "?";
}

// Every fault kind at every position of a device chain (upload, 4 device ops), through
// execute_prepared and through submit: the primary error is returned with its
// event-domain operation, every begun run is drained, no output is returned, and no
// device buffer outlives the run.
TEST(RuntimeAsync, FaultInjectionAtEveryNodePosition) {
  Fixture f = make();
  constexpr int kDeviceOps = 4;
  const Mixed m = device_chain(f.mock, kDeviceOps);
  const auto in = host_inputs(1);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in), m.options).value();
  const int jobs = kDeviceOps + 1;  // the upload, then the ops
  const std::vector<Fault> kinds{Fault::kBegin,  Fault::kEnqueue,         Fault::kCompletion,   Fault::kDelayedCompletion,
                                 Fault::kDrain, Fault::kEnqueueAndDrain, Fault::kForeignToken};
  for (Fault kind : kinds) {
    const bool positional = kind == Fault::kEnqueue || kind == Fault::kCompletion ||
                            kind == Fault::kDelayedCompletion || kind == Fault::kEnqueueAndDrain;
    for (int pos = 0; pos < (positional ? jobs : 1); ++pos) {
      for (int submitted = 0; submitted < 2; ++submitted) {
        SCOPED_TRACE(std::string(fault_name(kind)) + " at " + std::to_string(pos) + (submitted ? " (submit)" : ""));
        test_engine::Faults& fx = f.dev->faults();
        fx.reset();
        switch (kind) {
          case Fault::kBegin: fx.fail_begin = true; break;
          case Fault::kEnqueue: fx.fail_enqueue_at = pos; break;
          case Fault::kCompletion: fx.fail_completion_at = pos; break;
          case Fault::kDelayedCompletion:
            fx.fail_completion_at = pos;
            fx.delay_us = 1000;
            break;
          case Fault::kDrain: fx.fail_drain = true; break;
          case Fault::kEnqueueAndDrain:
            fx.fail_enqueue_at = pos;
            fx.fail_drain = true;
            break;
          case Fault::kForeignToken: fx.foreign_token = true; break;
        }
        const int64_t begun0 = f.dev->counters().runs_begun.load();
        const int64_t enq0 = f.dev->counters().enqueued.load();
        Result<std::vector<Tensor>> out = submitted ? f.rt->submit(plan, in).value().wait() : f.rt->execute_prepared(*plan, in);
        ASSERT_FALSE(out);
        const Error& e = out.error();
        EXPECT_EQ(f.dev->counters().runs_begun.load(), f.dev->counters().runs_drained.load());
        switch (kind) {
          case Fault::kBegin:
            EXPECT_EQ(e.event_operation(), EventDomainOperation::kBeginRun) << e.to_string();
            EXPECT_EQ(f.dev->counters().runs_begun.load(), begun0);
            EXPECT_EQ(f.dev->counters().enqueued.load(), enq0);  // nothing launched
            break;
          case Fault::kEnqueue:
            EXPECT_EQ(e.event_operation(), EventDomainOperation::kEnqueue) << e.to_string();
            EXPECT_EQ(f.dev->counters().enqueued.load() - enq0, pos);  // fail-fast: nothing after
            EXPECT_TRUE(e.suppressed().empty());
            break;
          case Fault::kCompletion:
          case Fault::kDelayedCompletion:
            // Seen when the download host-waits for the chain's end.
            EXPECT_EQ(e.event_operation(), EventDomainOperation::kTransferBridge) << e.to_string();
            EXPECT_EQ(e.stage(), ErrorStage::kCompletion);
            EXPECT_NE(e.to_string().find("injected completion failure"), std::string::npos) << e.to_string();
            break;
          case Fault::kDrain:
            EXPECT_EQ(e.event_operation(), EventDomainOperation::kDrain) << e.to_string();
            break;
          case Fault::kEnqueueAndDrain:
            EXPECT_EQ(e.event_operation(), EventDomainOperation::kEnqueue) << e.to_string();
            ASSERT_EQ(e.suppressed().size(), 1u) << e.to_string();
            EXPECT_EQ(e.suppressed()[0].event_operation(), EventDomainOperation::kDrain);
            break;
          case Fault::kForeignToken:
            EXPECT_EQ(e.event_operation(), EventDomainOperation::kValidateCompletion) << e.to_string();
            EXPECT_EQ(f.dev->counters().enqueued.load() - enq0, 1);  // nothing after the malformed completion
            break;
        }
        EXPECT_EQ(f.dev->counters().live_buffers.load(), 0);
      }
    }
  }
  f.dev->faults().reset();
  auto good = f.rt->execute_prepared(*plan, in);
  ASSERT_TRUE(good) << good.error().to_string();
  expect_near(values(*f.dev, (*good)[0]), values(*f.dev, program::interpret(m.graph, in).value()[0]));
}

TEST(RuntimeAsync, DroppedHandlesNeverBlockAndDetachedErrorsStayVisible) {
  Fixture f = make();
  const Mixed m = device_chain(f.mock, 2);
  const auto in = host_inputs(1);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in), m.options).value();
  // 3 jobs x 100 ms: a call that waited for the device would take 300 ms; the bound
  // below leaves a loaded (sanitized, 2-core) machine 150 ms for a non-blocking call.
  f.dev->faults().delay_us = 100000;
  // Delayed success: submit enqueues the device work, then the handle is dropped.
  {
    const auto t0 = std::chrono::steady_clock::now();
    { auto h = f.rt->submit(plan, in).value(); }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));
  }
  // Delayed failure (faults are read at enqueue: let the first run finish first).
  ASSERT_TRUE(eventually([&] { return f.dev->counters().runs_drained.load() == 1; }));
  f.dev->faults().fail_completion_at = 1;
  {
    const auto t0 = std::chrono::steady_clock::now();
    { auto h = f.rt->submit(plan, in).value(); }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));
  }
  ASSERT_TRUE(eventually([&] { return f.rt->detached_errors().size() == 1; }));
  EXPECT_NE(f.rt->detached_errors()[0].to_string().find("injected completion failure"), std::string::npos);
  EXPECT_EQ(f.rt->metrics().detached_errors, 1);
  EXPECT_TRUE(eventually([&] { return f.dev->counters().runs_begun.load() == f.dev->counters().runs_drained.load(); }));
  EXPECT_TRUE(eventually([&] { return f.dev->counters().live_buffers.load() == 0; }));
  f.rt->shutdown();
}

TEST(RuntimeAsync, DroppingTheRuntimeNeverBlocksNorLeaks) {
  std::weak_ptr<Runtime> weak_rt;
  std::weak_ptr<Storage> weak_input;
  std::shared_ptr<const test_engine::Counters> counters;
  {
    Fixture f = make();
    counters = f.dev->counters_handle();
    const Mixed m = device_chain(f.mock, 2);
    auto in = host_inputs(1);
    weak_input = in[0].storage();
    auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in), m.options).value();
    f.dev->faults().delay_us = 100000;  // 300 ms of device work in flight
    auto h = f.rt->submit(plan, in).value();
    in.clear();
    plan.reset();
    weak_rt = f.rt;
    const auto t0 = std::chrono::steady_clock::now();
    f.rt.reset();  // the runtime goes; its in-flight run does not hold it
    EXPECT_TRUE(weak_rt.expired());
    { runtime::ExecutionHandle dropped = std::move(h); }
    f.dev.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));
  }
  // The run finishes on its own and releases everything it held.
  EXPECT_TRUE(eventually([&] { return weak_input.expired(); }));
  EXPECT_TRUE(eventually([&] { return counters->runs_begun.load() == counters->runs_drained.load(); }));
  EXPECT_TRUE(eventually([&] { return counters->live_buffers.load() == 0; }));
}

// Weak sentinels on an input's storage: no run keeps it after it finished — completed,
// failed, cancelled, or dropped.
TEST(RuntimeAsync, FinishedRunsHoldNoTensor) {
  Fixture f = make();
  const Mixed m = device_chain(f.mock, 2);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(host_inputs(1)), m.options).value();
  for (int mode = 0; mode < 4; ++mode) {
    SCOPED_TRACE(mode);
    std::weak_ptr<Storage> sentinel;
    {
      auto in = host_inputs(1, 40 + static_cast<uint64_t>(mode));
      sentinel = in[0].storage();
      f.dev->faults().reset();
      if (mode == 1) f.dev->faults().fail_completion_at = 1;
      if (mode == 3) f.dev->faults().delay_us = 5000;
      auto h = f.rt->submit(plan, in).value();
      if (mode == 2) {
        EXPECT_FALSE(h.cancel());  // already launched: runs to the end
      }
      if (mode != 3) (void)h.wait();
    }
    EXPECT_TRUE(eventually([&] { return sentinel.expired(); }));
  }
  EXPECT_TRUE(eventually([&] { return f.dev->counters().live_buffers.load() == 0; }));
  f.dev->faults().reset();
}

// A tight budget: the first run (asynchronous, holds its reservation until waited) makes
// the second wait for admission; it can then be cancelled before its launch. Also:
// shutdown cancels queued runs and refuses new ones.
TEST(RuntimeAsync, CancelBeforeLaunchAndShutdown) {
  const Mixed probe = device_chain(EngineId{1}, 2);
  const auto in = host_inputs(1);
  // The device holds at most two 48-byte values of one run at once (upload, op 0, op 1:
  // each dies at the next node), so a 144-byte budget admits one run, not two.
  const int64_t device_peak = 3 * kN * 8;
  runtime::RuntimeConfig cfg;
  cfg.memory_budgets = {runtime::MemoryBudget{EngineId{1}, 0, device_peak}};
  Fixture f = make(cfg);
  auto plan = f.rt->prepare_for(probe.graph, runtime::signature_of(in), probe.options);
  ASSERT_TRUE(plan) << plan.error().to_string();
  EXPECT_NE(f.rt->explain(**plan).find("admission"), std::string::npos);
  f.dev->faults().delay_us = 10000;
  auto first = f.rt->submit(*plan, in).value();
  auto second = f.rt->submit(*plan, in).value();  // waits for the first's reservation
  EXPECT_FALSE(second.ready());
  EXPECT_TRUE(second.cancel());
  auto cancelled = second.wait();
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().code(), ErrorCode::kCancelled);
  auto third = f.rt->submit(*plan, in).value();  // queued behind the first
  auto r1 = first.wait();
  ASSERT_TRUE(r1) << r1.error().to_string();
  auto r3 = third.wait();  // admitted once the first released: launched by the dispatcher
  ASSERT_TRUE(r3) << r3.error().to_string();
  expect_near(values(*f.dev, (*r3)[0]), values(*f.dev, (*r1)[0]));
  EXPECT_GE(f.rt->metrics().admission_waits, 2);
  EXPECT_LE(f.rt->metrics().reserved_bytes_peak, device_peak);
  // Shutdown: a queued run is cancelled with kShutDown, new submissions are refused.
  auto a = f.rt->submit(*plan, in).value();
  auto b = f.rt->submit(*plan, in).value();
  std::thread stopper([&] { f.rt->shutdown(); });
  auto ra = a.wait();
  stopper.join();
  auto rb = b.wait();
  EXPECT_TRUE(ra) << ra.error().to_string();
  if (!rb) {
    EXPECT_EQ(rb.error().code(), ErrorCode::kShutDown);
  }
  auto refused = f.rt->submit(*plan, in);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kShutDown);
}

// shutdown() right after submitting asynchronous runs whose handles are kept but not
// waited for: it drains them itself (also one the dispatcher launches after shutdown
// began) and returns; the handles then find the runs finished.
TEST(RuntimeAsync, ShutdownDrainsLaunchedRunsNobodyWaitsFor) {
  Fixture f = make();
  const Mixed m = device_chain(f.mock, 2);
  const auto in = host_inputs(1);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in), m.options).value();
  const auto want = program::interpret(m.graph, in).value();
  f.dev->faults().delay_us = 2000;
  std::vector<runtime::ExecutionHandle> handles;
  for (int i = 0; i < 4; ++i) handles.push_back(f.rt->submit(plan, in).value());
  f.rt->shutdown();
  for (runtime::ExecutionHandle& h : handles) {
    EXPECT_TRUE(h.ready());
    auto out = h.wait();
    ASSERT_TRUE(out) << out.error().to_string();
    expect_near(values(*f.dev, (*out)[0]), values(*f.dev, want[0]));
  }
  EXPECT_EQ(f.dev->counters().runs_begun.load(), f.dev->counters().runs_drained.load());
}

TEST(RuntimeAsync, PlansThatCanNeverFitFailAtPrepare) {
  runtime::RuntimeConfig cfg;
  cfg.memory_budgets = {runtime::MemoryBudget{EngineId{0}, 0, 60}};
  Fixture f = make(cfg);
  const Mixed m = mixed_graph(f.mock);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(host_inputs(2)));  // all CPU: two 48-byte values live at once
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().stage(), ErrorStage::kPrepare);
  EXPECT_EQ(plan.error().code(), ErrorCode::kResourceExhausted);
  runtime::RuntimeConfig bad;
  bad.memory_budgets = {runtime::MemoryBudget{EngineId{0}, 0, -1}};
  EXPECT_EQ(Runtime::create(bad).error().code(), ErrorCode::kInvalidArgument);
  runtime::RuntimeConfig twice;
  twice.launch_limits = {runtime::LaunchLimit{EngineId{0}, 0, 1}, runtime::LaunchLimit{EngineId{0}, 0, 2}};
  EXPECT_EQ(Runtime::create(twice).error().code(), ErrorCode::kInvalidArgument);
}

// 16 threads submitting concurrently under a budget that admits two runs at a time, CPU
// and mixed plans, with launch limits on both engines: every result is right, the
// reserved bytes never exceed the budgets, nothing deadlocks.
TEST(RuntimeAsync, SixteenThreadsUnderATightBudget) {
  const auto in = host_inputs(2, 7);
  const auto want = program::interpret(mixed_graph(EngineId{1}).graph, in).value();
  // Budgets: twice the per-run peak in each domain (the plan's own estimate).
  runtime::RuntimeConfig cfg;
  const int64_t cpu_peak = 4 * kN * 8, dev_peak = 4 * kN * 8;
  cfg.memory_budgets = {runtime::MemoryBudget{EngineId{0}, 0, 2 * cpu_peak},
                        runtime::MemoryBudget{EngineId{1}, 0, 2 * dev_peak}};
  cfg.launch_limits = {runtime::LaunchLimit{EngineId{0}, 0, 1}, runtime::LaunchLimit{EngineId{1}, 0, 2}};
  Fixture f = make(cfg);
  const Mixed m = mixed_graph(f.mock);
  auto mixed = f.rt->prepare_for(m.graph, runtime::signature_of(in), m.options);
  ASSERT_TRUE(mixed) << mixed.error().to_string();
  auto cpu_only = f.rt->prepare_for(m.graph, runtime::signature_of(in));
  ASSERT_TRUE(cpu_only) << cpu_only.error().to_string();
  f.dev->faults().delay_us = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const auto& plan = (t + i) % 2 == 0 ? *mixed : *cpu_only;
        Result<std::vector<Tensor>> out = i % 3 == 2 ? f.rt->execute_prepared(*plan, in) : f.rt->submit(plan, in).value().wait();
        if (!out) {
          failures.fetch_add(1);
          continue;
        }
        const std::vector<double> got = values(*f.dev, (*out)[0]);
        const std::vector<double> ref = values(*f.dev, want[0]);
        for (size_t k = 0; k < got.size(); ++k) {
          if (std::abs(got[k] - ref[k]) > 1e-12 * (1 + std::abs(ref[k]))) failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(f.rt->metrics().reserved_bytes_peak, 2 * cpu_peak + 2 * dev_peak);
  EXPECT_EQ(f.dev->counters().runs_begun.load(), f.dev->counters().runs_drained.load());
  f.rt->shutdown();
  EXPECT_TRUE(eventually([&] { return f.dev->counters().live_buffers.load() == 0; }));
}

// The schedule launches asynchronous work first, so independent CPU work overlaps it
// (Note [Schedule order]); the timing is a benchmark (runtime_async_bench), the order
// is tested here.
TEST(RuntimeAsync, AsynchronousBranchesAreLaunchedFirst) {
  Fixture f = make();
  ProgramBuilder b;
  Value x = b.input(vec()).value();
  Value y = b.input(vec()).value();
  auto cpu_sleep = std::make_shared<test_engine::SleepOp>();
  cpu_sleep->ms = 1;
  auto dev_sleep = std::make_shared<test_engine::SleepOp>();
  dev_sleep->ms = 1;
  Value c = b.extension(cpu_sleep, std::vector<Value>{y}).value()[0];  // op 0: CPU
  Value d = b.extension(dev_sleep, std::vector<Value>{x}).value()[0];  // op 1: device
  const auto g = b.finish({c, d}).value();
  PrepareOptions o;
  o.placements = {OpPlacement{1, f.mock, {}}};
  const auto in = host_inputs(2);
  auto plan = f.rt->prepare_for(g, runtime::signature_of(in), o).value();
  const std::string text = f.rt->explain(*plan);
  const size_t upload = text.find("test_engine.upload"), dev = text.find("test_engine.sleep"),
               cpu = text.find("test_engine.cpu_sleep");
  ASSERT_NE(cpu, std::string::npos) << text;
  EXPECT_LT(upload, cpu) << text;
  EXPECT_LT(dev, cpu) << text;
  auto out = f.rt->execute_prepared(*plan, in).value();
  expect_near(values(*f.dev, out[0]), values(*f.dev, in[1]));
  expect_near(values(*f.dev, out[1]), values(*f.dev, in[0]));
}

TEST(RuntimeAsync, SessionsEnterOnceAndReportEntryErrors) {
  Fixture f = make();
  const Mixed m = mixed_graph(f.mock);
  const auto in = host_inputs(2);
  auto plan = f.rt->prepare_for(m.graph, runtime::signature_of(in)).value();
  auto engine = cpu_runtime::cpu_engine_of(*f.rt->engine_bridge(f.cpu).value());
  const int64_t entries0 = engine->entry_count(0);
  const auto want = program::interpret(m.graph, in).value();
  ASSERT_TRUE(f.rt->with_session(f.cpu, 0, [&](runtime::Session& s) -> Result<void> {
    for (int i = 0; i < 5; ++i) {
      TENFERRO_TRY(std::vector<Tensor> out, s.execute_prepared(*plan, in));
      expect_near(values(*f.dev, out[0]), values(*f.dev, want[0]));
    }
    // Nested: typed kReentered before the callback.
    auto nested = f.rt->with_session(f.cpu, 0, [&](runtime::Session&) -> Result<void> {
      ADD_FAILURE() << "nested session callback ran";
      return ok();
    });
    EXPECT_EQ(nested.error().code(), ErrorCode::kReentered);
    // Another thread: kContended.
    std::thread other([&] {
      auto r = f.rt->with_session(f.cpu, 0, [&](runtime::Session&) -> Result<void> {
        ADD_FAILURE() << "contended session callback ran";
        return ok();
      });
      EXPECT_EQ(r.error().code(), ErrorCode::kContended);
    });
    other.join();
    EXPECT_EQ(s.executions(), 5);
    return ok();
  }));
  EXPECT_EQ(engine->entry_count(0) - entries0, 1);  // one executor entry for five executions
  // The engine refuses the entry (entered from inside an entered CPU context): kExecutor.
  ASSERT_TRUE(engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext&) -> Result<void> {
    auto r = f.rt->with_session(f.cpu, 0, [&](runtime::Session&) -> Result<void> {
      ADD_FAILURE() << "callback ran";
      return ok();
    });
    EXPECT_EQ(r.error().code(), ErrorCode::kExecutor);
    EXPECT_NE(r.error().cause(), nullptr);
    return ok();
  }));
  EXPECT_EQ(f.rt->with_session(f.cpu, 5, [](runtime::Session&) -> Result<void> { return ok(); }).error().code(),
            ErrorCode::kOutOfRange);
  // An exception in the callback releases the session.
  EXPECT_THROW((void)f.rt->with_session(f.cpu, 0, [](runtime::Session&) -> Result<void> { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_TRUE(f.rt->with_session(f.cpu, 0, [](runtime::Session&) -> Result<void> { return ok(); }));
}

}  // namespace
}  // namespace tenferro
