#include "test_engine.h"

#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tenferro::test_engine {
namespace {

using runtime::CompletionToken;
using runtime::EventDomainId;
using runtime::Launch;
using Cap = runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>;

Error injected(ErrorStage stage, const std::string& what) {
  return Error(stage, ErrorCode::kInternal, "test_engine", "injected " + what + " failure");
}

// A run's completion state, shared by the run object and the jobs it enqueued.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t issued = 0, done = 0;  // jobs: sequence numbers 1..issued; 1..done finished
  std::optional<Error> error;     // the first job failure
  uint64_t error_seq = 0;
};

struct Job {
  std::shared_ptr<RunState> run;
  uint64_t seq = 0;
  bool fail = false;
  std::function<Result<void>()> work;
};

// A device kernel: allocates its outputs at enqueue, computes on the worker.
class DeviceKernel : public runtime::NodeKernel {
 public:
  DeviceKernel(std::vector<DType> dtypes, std::vector<Shape> shapes) : dtypes_(std::move(dtypes)), shapes_(std::move(shapes)) {}
  virtual Result<void> compute(std::span<const Tensor> in, std::span<Tensor> out) const = 0;
  Result<void> run(runtime::EngineContext&, std::span<const Tensor>, std::span<Tensor>) const override {
    return Error(ErrorStage::kEnqueue, ErrorCode::kProviderContract, "test_engine",
                 "device kernels run only through the test engine's event-domain runs");
  }
  const std::vector<DType>& dtypes() const { return dtypes_; }
  const std::vector<Shape>& shapes() const { return shapes_; }

 private:
  std::vector<DType> dtypes_;
  std::vector<Shape> shapes_;
};

const double* cdata(const Tensor& t) { return static_cast<const double*>(t.storage()->data()) + t.offset(); }
double* mdata(const Tensor& t) { return static_cast<double*>(t.storage()->data()) + t.offset(); }

class ElementwiseKernel final : public DeviceKernel {
 public:
  ElementwiseKernel(program::OpCode code, Shape shape) : DeviceKernel({DType::kF64}, {shape}), code_(code) {}
  Result<void> compute(std::span<const Tensor> in, std::span<Tensor> out) const override {
    const int64_t n = out[0].numel();
    double* y = mdata(out[0]);
    const double* a = cdata(in[0]);
    const double* b = in.size() > 1 ? cdata(in[1]) : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      switch (code_) {
        case program::OpCode::kAdd: y[i] = a[i] + b[i]; break;
        case program::OpCode::kSub: y[i] = a[i] - b[i]; break;
        case program::OpCode::kMul: y[i] = a[i] * b[i]; break;
        case program::OpCode::kNeg: y[i] = -a[i]; break;
        default: y[i] = std::exp(a[i]); break;
      }
    }
    return ok();
  }
  std::string_view provider() const override { return "test_engine.elementwise"; }

 private:
  program::OpCode code_;
};

class SleepKernel final : public DeviceKernel {
 public:
  SleepKernel(DType d, Shape s, int64_t ms) : DeviceKernel({d}, {s}), ms_(ms) {}
  Result<void> compute(std::span<const Tensor> in, std::span<Tensor> out) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    std::memcpy(out[0].storage()->data(), in[0].storage()->data(),
                static_cast<size_t>(out[0].numel()) * static_cast<size_t>(dtype_size(out[0].dtype())));
    return ok();
  }
  std::string_view provider() const override { return "test_engine.sleep"; }

 private:
  int64_t ms_;
};

// Host -> device: runs on the device's worker (the source is host memory, complete).
class UploadKernel final : public DeviceKernel {
 public:
  UploadKernel(DType d, Shape s) : DeviceKernel({d}, {s}) {}
  Result<void> compute(std::span<const Tensor> in, std::span<Tensor> out) const override {
    TENFERRO_TRY(Tensor c, in[0].contiguous());
    std::memcpy(out[0].storage()->data(), static_cast<const char*>(c.storage()->data()) + c.offset() * dtype_size(c.dtype()),
                static_cast<size_t>(c.numel()) * static_cast<size_t>(dtype_size(c.dtype())));
    return ok();
  }
  std::string_view provider() const override { return "test_engine.upload"; }
};

// Device -> host: runs on the CPU's immediate run after the scheduler host-waited for
// the source's completion.
class DownloadKernel final : public runtime::NodeKernel {
 public:
  DownloadKernel(DType d, Shape s) : dtype_(d), shape_(std::move(s)) {}
  Result<void> run(runtime::EngineContext&, std::span<const Tensor> in, std::span<Tensor> out) const override {
    if (in[0].placement().kind() != Placement::Kind::kGpuDevice) {
      return Error(ErrorStage::kCompletion, ErrorCode::kProviderContract, "test_engine.download", "source is not device memory");
    }
    TENFERRO_TRY(out[0], Tensor::uninitialized(dtype_, shape_));
    std::memcpy(out[0].storage()->data(), in[0].storage()->data(),
                static_cast<size_t>(out[0].numel()) * static_cast<size_t>(dtype_size(dtype_)));
    return ok();
  }
  std::string_view provider() const override { return "test_engine.download"; }

 private:
  DType dtype_;
  Shape shape_;
};

class Engine;

class DeviceRun final : public runtime::EventDomainRun {
 public:
  DeviceRun(std::shared_ptr<Engine> engine, EventDomainId id) : engine_(std::move(engine)), id_(id) {}
  EventDomainId domain() const override { return id_; }
  Result<CompletionToken> enqueue(const Launch& l) override;
  Result<void> host_wait(CompletionToken t) override {
    if (!(t.origin == id_)) {
      return Error(ErrorStage::kEnqueue, ErrorCode::kEventDomain, "test_engine", "foreign token")
          .with_event_operation(EventDomainOperation::kTransferBridge);
    }
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->done >= t.sequence; });
    if (state_->error && state_->error_seq <= t.sequence) return *state_->error;
    return ok();
  }
  Result<void> drain() override;

 private:
  std::shared_ptr<Engine> engine_;
  EventDomainId id_;
  std::shared_ptr<RunState> state_ = std::make_shared<RunState>();
  int64_t enqueues_ = 0;
};

class Driver final : public runtime::EventDomainDriver {
 public:
  explicit Driver(std::weak_ptr<Engine> e) : engine_(std::move(e)) {}
  bool immediate() const override { return false; }
  Result<std::unique_ptr<runtime::EventDomainRun>> begin_run(EventDomainId id,
                                                             std::unique_ptr<runtime::EventDomainRun>) const override;

 private:
  std::weak_ptr<Engine> engine_;
};

class DeviceContext final : public runtime::EngineContext {};

class Bridge final : public runtime::EngineBridge {
 public:
  Bridge(std::weak_ptr<Engine> e, int32_t device) : engine_(std::move(e)), device_(device), driver_(std::make_shared<Driver>(engine_)) {}
  std::string_view name() const override { return "test_engine"; }
  std::span<const int32_t> domains() const override { return std::span<const int32_t>(&kDomain, 1); }
  Result<Cap> prepare_core(const runtime::NodeRequest& r) const override {
    using program::OpCode;
    const OpCode c = r.op->code();
    const bool binary = c == OpCode::kAdd || c == OpCode::kSub || c == OpCode::kMul;
    const bool unary = c == OpCode::kNeg || c == OpCode::kExp;
    if (!binary && !unary) return Cap::unsupported("the test engine runs add, sub, mul, neg, exp only");
    for (DType d : r.input_dtypes) {
      if (d != DType::kF64) return Cap::unsupported("the test engine computes f64 only");
    }
    for (const Shape& s : r.input_shapes) {
      if (s != r.output_shapes[0]) return Cap::unsupported("the test engine does not broadcast");
    }
    return Cap::prepared(std::make_shared<ElementwiseKernel>(c, r.output_shapes[0]));
  }
  Result<void> enter(int32_t, FunctionRef<Result<void>(runtime::EngineContext&)> body) const override {
    DeviceContext ctx;
    return body(ctx);
  }
  std::shared_ptr<const runtime::EventDomainDriver> event_driver() const override { return driver_; }
  runtime::StorageClass storage_class() const override { return runtime::StorageClass::kDevice; }
  bool holds(const Placement& p) const override { return p == Placement::gpu_device(device_); }
  Placement placement(int32_t) const override { return Placement::gpu_device(device_); }

 private:
  static constexpr int32_t kDomain = 0;
  std::weak_ptr<Engine> engine_;
  int32_t device_;
  std::shared_ptr<const Driver> driver_;
};

class Transfer final : public runtime::TransferProvider {
 public:
  explicit Transfer(bool upload) : upload_(upload) {}
  std::string_view name() const override { return upload_ ? "test_engine.upload" : "test_engine.download"; }
  Result<Cap> prepare(const runtime::TransferRequest& r) const override {
    if (upload_) return Cap::prepared(std::make_shared<UploadKernel>(r.dtype, r.shape));
    return Cap::prepared(std::make_shared<DownloadKernel>(r.dtype, r.shape));
  }

 private:
  bool upload_;
};

class SleepModule final : public runtime::ExtensionModule {
 public:
  explicit SleepModule(bool device) : device_(device) {}
  std::string_view family_id() const override { return "test.sleep"; }
  Result<Cap> prepare(const runtime::NodeRequest& r) const override {
    const auto* op = static_cast<const SleepOp*>(r.op->extension());
    if (device_) return Cap::prepared(std::make_shared<SleepKernel>(r.output_dtypes[0], r.output_shapes[0], op->ms));
    struct CpuSleep final : runtime::NodeKernel {
      int64_t ms = 0;
      Result<void> run(runtime::EngineContext&, std::span<const Tensor> in, std::span<Tensor> out) const override {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < until) {
        }
        TENFERRO_TRY(out[0], in[0].to_col_major());
        return ok();
      }
      std::string_view provider() const override { return "test_engine.cpu_sleep"; }
    };
    auto k = std::make_shared<CpuSleep>();
    k->ms = op->ms;
    return Cap::prepared(std::move(k));
  }

 private:
  bool device_;
};

class Engine final : public TestEngine {
 public:
  explicit Engine(int32_t device) : device_(device) {}
  ~Engine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }
  void start() {
    bridge_ = std::make_shared<Bridge>(std::static_pointer_cast<Engine>(shared_from_this()), device_);
    worker_ = std::thread([this] { loop(); });
  }
  std::shared_ptr<const runtime::EngineBridge> bridge() override { return bridge_; }
  std::shared_ptr<const runtime::TransferProvider> upload_provider() override { return upload_; }
  std::shared_ptr<const runtime::TransferProvider> download_provider() override { return download_; }
  Result<runtime::EngineId> register_into(runtime::Runtime& rt, runtime::EngineId cpu) override {
    TENFERRO_TRY(runtime::EngineId id, rt.register_engine(bridge_));
    const runtime::TransferEndpoint host{cpu, runtime::StorageClass::kHost};
    const runtime::TransferEndpoint dev{id, runtime::StorageClass::kDevice};
    TENFERRO_TRY_VOID(rt.register_transfer(host, dev, upload_));
    TENFERRO_TRY_VOID(rt.register_transfer(dev, host, download_));
    TENFERRO_TRY_VOID(rt.register_extension(id, std::make_shared<SleepModule>(true)));
    return id;
  }
  Result<Tensor> upload(const Tensor& host) override {
    TENFERRO_TRY(Tensor out, allocate(host.dtype(), host.shape()));
    TENFERRO_TRY_VOID(UploadKernel(host.dtype(), host.shape()).compute(std::span<const Tensor>(&host, 1), std::span<Tensor>(&out, 1)));
    return out;
  }
  Result<Tensor> download(const Tensor& dev) override {
    Tensor out;
    DeviceContext ctx;
    TENFERRO_TRY_VOID(DownloadKernel(dev.dtype(), dev.shape()).run(ctx, std::span<const Tensor>(&dev, 1), std::span<Tensor>(&out, 1)));
    return out;
  }

  Result<Tensor> allocate(DType d, const Shape& s) {
    int64_t n = 1;
    for (int64_t e : s) n *= e;
    const int64_t bytes = std::max<int64_t>(n * dtype_size(d), 8);
    void* mem = std::malloc(static_cast<size_t>(bytes));
    if (mem == nullptr) return Error(ErrorStage::kEnqueue, ErrorCode::kAllocationFailed, "test_engine", "malloc");
    counters_->live_buffers.fetch_add(1);
    auto storage = ExternalStorage::managed(mem, bytes, [c = counters_](void* p) {
      std::free(p);
      c->live_buffers.fetch_sub(1);
    });
    return Tensor::from_storage(d, std::move(storage), Layout::col_major(s), Placement::gpu_device(device_));
  }

  void post(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(job));
      int64_t pending = static_cast<int64_t>(queue_.size());
      int64_t seen = counters_->max_pending.load();
      while (pending > seen && !counters_->max_pending.compare_exchange_weak(seen, pending)) {
      }
    }
    cv_.notify_all();
  }
  Counters& counters() { return *counters_; }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left: every posted job ran
      Job job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      const int64_t delay = faults_.delay_us.load();
      if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
      RunState& st = *job.run;
      bool failed_before;
      {
        std::lock_guard<std::mutex> g(st.mu);
        failed_before = st.error.has_value();
      }
      Result<void> r = ok();
      if (failed_before) {
        counters_->skipped.fetch_add(1);  // fail-fast inside the device: later work of a failed run is skipped
      } else if (job.fail) {
        r = injected(ErrorStage::kCompletion, "completion");
      } else {
        r = job.work();
      }
      job.work = nullptr;  // drop the handles this job retained before signalling completion
      {
        std::lock_guard<std::mutex> g(st.mu);
        if (!r && !st.error) {
          st.error = r.error();
          st.error_seq = job.seq;
        }
        st.done = job.seq;
      }
      counters_->completed.fetch_add(1);
      st.cv.notify_all();
      job.run.reset();
      lock.lock();
    }
  }

  int32_t device_;
  std::shared_ptr<const runtime::EngineBridge> bridge_;
  std::shared_ptr<const runtime::TransferProvider> upload_ = std::make_shared<Transfer>(true);
  std::shared_ptr<const runtime::TransferProvider> download_ = std::make_shared<Transfer>(false);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::thread worker_;
  friend class DeviceRun;
  friend class Driver;
};

Result<std::unique_ptr<runtime::EventDomainRun>> Driver::begin_run(EventDomainId id,
                                                                   std::unique_ptr<runtime::EventDomainRun>) const {
  std::shared_ptr<Engine> e = engine_.lock();
  if (e == nullptr) return Error(ErrorStage::kEnqueue, ErrorCode::kShutDown, "test_engine", "the engine is gone");
  if (e->faults().fail_begin.load()) return injected(ErrorStage::kEnqueue, "begin_run");
  e->counters().runs_begun.fetch_add(1);
  return std::unique_ptr<runtime::EventDomainRun>(std::make_unique<DeviceRun>(e, id));
}

Result<CompletionToken> DeviceRun::enqueue(const Launch& l) {
  const int64_t k = enqueues_++;
  if (engine_->faults().fail_enqueue_at.load() == k) return injected(ErrorStage::kEnqueue, "enqueue");
  for (const CompletionToken& t : l.deps) {
    if (!(t.origin == id_)) {
      return Error(ErrorStage::kEnqueue, ErrorCode::kEventDomain, "test_engine",
                   "a token of domain " + std::to_string(t.origin.value) + " passed to domain " + std::to_string(id_.value));
    }
  }
  const auto* kernel = dynamic_cast<const DeviceKernel*>(l.kernel);
  if (kernel == nullptr) {
    return Error(ErrorStage::kEnqueue, ErrorCode::kProviderContract, "test_engine", "not a test-engine kernel");
  }
  std::vector<Tensor> in(l.inputs.begin(), l.inputs.end());
  std::vector<Tensor> out;
  for (size_t i = 0; i < kernel->dtypes().size(); ++i) {
    TENFERRO_TRY(Tensor t, engine_->allocate(kernel->dtypes()[i], kernel->shapes()[i]));
    out.push_back(t);
    l.outputs[i] = t;
  }
  uint64_t seq;
  {
    std::lock_guard<std::mutex> g(state_->mu);
    seq = ++state_->issued;
  }
  Job job;
  job.run = state_;
  job.seq = seq;
  job.fail = engine_->faults().fail_completion_at.load() == static_cast<int64_t>(seq - 1);
  job.work = [kernel, in = std::move(in), out = std::move(out)]() mutable {
    return kernel->compute(in, std::span<Tensor>(out));
  };
  engine_->counters().enqueued.fetch_add(1);
  engine_->post(std::move(job));
  if (engine_->faults().foreign_token.load()) return CompletionToken{EventDomainId{id_.value + 100}, seq};
  return CompletionToken{id_, seq};
}

Result<void> DeviceRun::drain() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->done >= state_->issued; });
  engine_->counters().runs_drained.fetch_add(1);
  if (engine_->faults().fail_drain.load()) return injected(ErrorStage::kCompletion, "drain");
  if (state_->error) return *state_->error;
  return ok();
}

}  // namespace

std::shared_ptr<TestEngine> create(int32_t device) {
  auto e = std::make_shared<Engine>(device);
  e->start();
  return e;
}

std::shared_ptr<const runtime::ExtensionModule> cpu_sleep_module() {
  static const std::shared_ptr<const runtime::ExtensionModule> m = std::make_shared<SleepModule>(false);
  return m;
}

}  // namespace tenferro::test_engine
