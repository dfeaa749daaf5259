// Asynchronous submission: ExecutionHandle, run admission against memory budgets, the
// runtime's dispatcher thread, shutdown and detached-run diagnostics.

#include <algorithm>
#include <chrono>

#include "runtime_state.h"

namespace tenferro::runtime {

// Note [Admission]: a memory budget caps the bytes runs may hold at once in one engine
// domain. A prepared program knows its estimated peak per engine domain (the live bytes
// of the values its nodes write there, simulated in schedule order); a plan whose peak
// exceeds a budget can never run and fails at prepare (kResourceExhausted). Before its
// first launch a run reserves its peaks in every budgeted domain at once — all or
// nothing — and releases them after its drain. Runs are admitted strictly in order:
// when the queue is empty and the reservation fits, the run is admitted at once;
// otherwise it joins the end of the queue, and every release admits waiters from the
// head while they fit. A synchronous execute_prepared waits in the same queue on its own
// thread. An admitted submitted run that uses only immediate domains is launched on the
// submitting thread (the launch is the whole run and cannot wait on a device); any
// other is launched by the runtime's dispatcher thread, so submit never blocks on
// device work. No run holds memory while it waits, and the head always fits once earlier
// runs finished, so no run waits forever for one that waits.
//
// Note [Run ownership]: a submitted run (ExecutionHandle::Run) owns its prepared program
// (which pins the configuration snapshot and the kernels), its workspace, its argument
// handles and, through the workspace and the drivers' pending work, every buffer a
// launch touches, until it finished (drained, outputs collected). It refers to the
// runtime's shared state only weakly and never to the Runtime or a handle: the handle
// owns the run, the runtime's queues own runs only while they wait to be launched or
// drained, and the dispatcher thread owns the shared state only while it runs. Dropping
// a handle detaches it: an admitted run whose work is still pending is drained by the
// dispatcher; a failure of a run no one waits for is kept in detached_errors(). Dropping
// the Runtime stops nothing: the dispatcher finishes the runs it owns, then exits.

namespace {

Error shut_down_error(const char* op) {
  return Error(ErrorStage::kEnqueue, ErrorCode::kShutDown, op, "the runtime was shut down before the run was admitted");
}

// Drains a launched run, collects its outputs, releases what it holds and publishes the
// result. Called exactly once per launched run, by whoever claimed it.
void finish(Run& run) {
  const PreparedProgram& p = *run.plan;
  Result<void> r = ok();
  if (run.ws != nullptr) {
    r = drain_runs(p, *run.ws, run.launch_error);
  } else if (run.launch_error.has_value()) {
    r = *run.launch_error;
  }
  std::vector<Tensor> outputs;
  if (run.ws != nullptr) {
    if (r) outputs = collect_outputs(p, *run.ws);
    for (CompletionToken& t : run.ws->tokens) t = CompletionToken{};
    p.give_back(std::move(run.ws));
  }
  std::shared_ptr<RuntimeShared> shared = run.shared.lock();
  if (shared != nullptr && run.reserved) shared->release(run.reservation);
  run.reserved = false;
  bool record = false, wake = false;
  {
    std::lock_guard<std::mutex> lock(run.mu);
    if (r) {
      run.outputs = std::move(outputs);
    } else {
      run.error = r.error();
      record = run.detached;
    }
    run.state = Run::State::kFinished;
    wake = run.waiters > 0;
  }
  if (wake) run.cv.notify_all();
  if (shared != nullptr) {
    if (record) shared->record_detached(r.error());
    if (r) shared->executions.fetch_add(1, std::memory_order_relaxed);
    bool idle_wake;
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      --shared->in_flight;
      idle_wake = shared->idle_waiters > 0;
    }
    if (idle_wake) shared->idle_cv.notify_all();
  }
}

// Begins the event-domain runs and launches every node (the reservation is held). The
// run is then kLaunched (or, when every domain is immediate, finished right here).
// Returns true when the caller must finish it (it was not claimed elsewhere).
void launch(const std::shared_ptr<Run>& run, RuntimeShared& shared) {
  const PreparedProgram& p = *run->plan;
  Result<std::unique_ptr<Workspace>> ws = p.acquire();
  if (!ws) {
    run->launch_error = ws.error();
  } else {
    run->ws = std::move(*ws);
    load_inputs(p, *run->ws, run->arguments, run->bindings.tensors, false);
    Result<void> r = begin_runs(p, *run->ws);
    if (r) r = launch_nodes(p, *run->ws, shared, nullptr);  // (a failed begin drained what it began)
    if (!r) run->launch_error = r.error();
  }
  run->arguments.clear();
  run->bindings.tensors.clear();
  bool finish_here = false, hand_over = false, wake = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    run->state = Run::State::kLaunched;
    wake = run->waiters > 0;
    // With only immediate domains the drain cannot block: finish here. Otherwise the
    // waiter (or, for a dropped handle, the dispatcher) drains.
    finish_here = p.immediate;
    if (!finish_here && run->detached && !run->claimed) hand_over = true;
    if (finish_here || hand_over) run->claimed = true;
  }
  if (wake) run->cv.notify_all();
  if (finish_here) {
    finish(*run);
  } else if (hand_over) {
    std::lock_guard<std::mutex> lock(shared.mu);
    shared.to_finish.push_back(run);
    shared.cv.notify_all();
  }
}

void dispatcher_loop(std::shared_ptr<RuntimeShared> self) {
  RuntimeShared& s = *self;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (!s.to_launch.empty()) {
      std::shared_ptr<Run> run = std::move(s.to_launch.front());
      s.to_launch.pop_front();
      lock.unlock();
      launch(run, s);
      run.reset();
      lock.lock();
      continue;
    }
    if (!s.to_finish.empty()) {
      std::shared_ptr<Run> run = std::move(s.to_finish.front());
      s.to_finish.pop_front();
      lock.unlock();
      finish(*run);
      run.reset();
      lock.lock();
      continue;
    }
    if ((s.closing || s.stopping) && s.queue.empty()) break;
    s.cv.wait(lock);
  }
  s.dispatcher_running = false;
  s.idle_cv.notify_all();
}

}  // namespace

Reservation reservation_for(const PreparedProgram& p) {
  Reservation r;
  for (const MemoryBudget& b : p.snapshot->config.memory_budgets) {
    for (const DomainPeak& d : p.domain_peaks) {
      if (d.engine == b.engine.value && d.domain == b.domain && d.bytes > 0) {
        r.parts.push_back(Reservation::Part{d.engine, d.domain, d.bytes, b.bytes});
      }
    }
  }
  return r;
}

bool RuntimeShared::fits_locked(const Reservation& r) const {
  for (const Reservation::Part& part : r.parts) {
    int64_t used = 0;
    for (const Used& u : reserved) {
      if (u.engine == part.engine && u.domain == part.domain) used = u.bytes;
    }
    if (used + part.bytes > part.budget) return false;
  }
  return true;
}

void RuntimeShared::reserve_locked(const Reservation& r) {
  for (const Reservation::Part& part : r.parts) {
    auto it = std::find_if(reserved.begin(), reserved.end(),
                           [&](const Used& u) { return u.engine == part.engine && u.domain == part.domain; });
    if (it == reserved.end()) it = reserved.insert(reserved.end(), Used{part.engine, part.domain, 0});
    it->bytes += part.bytes;
    reserved_total += part.bytes;
  }
  int64_t peak = reserved_peak.load(std::memory_order_relaxed);
  while (reserved_total > peak && !reserved_peak.compare_exchange_weak(peak, reserved_total)) {
  }
}

void RuntimeShared::release(const Reservation& r) {
  if (r.parts.empty()) return;
  bool waiters;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Reservation::Part& part : r.parts) {
      for (Used& u : reserved) {
        if (u.engine == part.engine && u.domain == part.domain) u.bytes -= part.bytes;
      }
      reserved_total -= part.bytes;
    }
    waiters = !queue.empty();
    if (waiters) grant_locked();
  }
  if (waiters) cv.notify_all();  // granted runs for the dispatcher, granted synchronous waiters
}

void RuntimeShared::grant_locked() {
  while (!queue.empty()) {
    Waiter& w = queue.front();
    if (w.run != nullptr) {
      bool cancelled;
      {
        std::lock_guard<std::mutex> lock(w.run->mu);
        cancelled = w.run->state == Run::State::kFinished;
      }
      if (cancelled) {
        queue.pop_front();
        continue;
      }
      if (!fits_locked(w.run->reservation)) return;
      reserve_locked(w.run->reservation);
      w.run->reserved = true;
      to_launch.push_back(std::move(w.run));
    } else {
      if (!fits_locked(*w.sync)) return;
      reserve_locked(*w.sync);
      *w.granted = true;
    }
    queue.pop_front();
  }
}

void RuntimeShared::ensure_dispatcher_locked(const std::shared_ptr<RuntimeShared>& self) {
  if (dispatcher_running) return;
  dispatcher_running = true;
  // Detached: it owns the shared state while it runs and exits once idle after the
  // runtime closed or stopped (shutdown waits for that; dropping the Runtime does not).
  std::thread(dispatcher_loop, self).detach();
}

void RuntimeShared::record_detached(const Error& e) {
  detached_errors.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu);
  detached.push_back(e);
  while (detached.size() > 64) detached.pop_front();
}

// ---- ExecutionHandle

ExecutionHandle& ExecutionHandle::operator=(ExecutionHandle&& other) noexcept {
  if (this != &other) {
    detach();
    run_ = std::move(other.run_);
  }
  return *this;
}

ExecutionHandle::~ExecutionHandle() { detach(); }

void ExecutionHandle::detach() noexcept {
  if (run_ == nullptr) return;
  std::shared_ptr<Run> run = std::move(run_);
  bool hand_over = false, record = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    run->detached = true;
    if (run->state == Run::State::kLaunched && !run->claimed) {
      run->claimed = true;
      hand_over = true;
    }
    record = run->state == Run::State::kFinished && run->error.has_value() && !run->observed &&
             run->error->code() != ErrorCode::kCancelled;
  }
  std::shared_ptr<RuntimeShared> shared = run->shared.lock();
  if (record && shared != nullptr) shared->record_detached(*run->error);
  if (hand_over) {
    if (shared == nullptr) {
      // The runtime is gone and its dispatcher with it: drain on a thread of the run's
      // own, so dropping the handle still never blocks.
      std::thread([run] { finish(*run); }).detach();
      return;
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->to_finish.push_back(std::move(run));
    shared->ensure_dispatcher_locked(shared);
    shared->cv.notify_all();
  }
}

Result<std::vector<Tensor>> ExecutionHandle::wait() {
  if (run_ == nullptr) {
    return usage_error(ErrorCode::kInvalidArgument, "ExecutionHandle::wait", "the handle observes no run");
  }
  std::shared_ptr<Run> run = std::move(run_);
  bool finish_here = false;
  {
    std::unique_lock<std::mutex> lock(run->mu);
    ++run->waiters;
    run->cv.wait(lock, [&] { return run->state != Run::State::kQueued; });
    --run->waiters;
    if (run->state == Run::State::kLaunched && !run->claimed) {
      run->claimed = true;
      finish_here = true;
    }
  }
  if (finish_here) finish(*run);
  std::unique_lock<std::mutex> lock(run->mu);
  ++run->waiters;
  run->cv.wait(lock, [&] { return run->state == Run::State::kFinished; });
  --run->waiters;
  run->observed = true;
  if (run->error) return *run->error;
  return std::move(run->outputs);
}

bool ExecutionHandle::cancel() {
  if (run_ == nullptr) return false;
  std::shared_ptr<RuntimeShared> shared = run_->shared.lock();
  if (shared == nullptr) return false;
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> slock(shared->mu);
    std::lock_guard<std::mutex> lock(run_->mu);
    if (run_->state == Run::State::kQueued && !run_->reserved) {
      run_->state = Run::State::kFinished;
      run_->error = Error(ErrorStage::kEnqueue, ErrorCode::kCancelled, "ExecutionHandle::cancel",
                          "the run was cancelled before it was launched");
      run_->arguments.clear();
      run_->bindings.tensors.clear();
      auto it = std::find_if(shared->queue.begin(), shared->queue.end(),
                             [&](const RuntimeShared::Waiter& w) { return w.run == run_; });
      if (it != shared->queue.end()) shared->queue.erase(it);
      --shared->in_flight;
      cancelled = true;
    }
  }
  if (cancelled) {
    run_->cv.notify_all();
    shared->idle_cv.notify_all();
    // The head may have changed: admit what fits now.
    {
      std::lock_guard<std::mutex> slock(shared->mu);
      shared->grant_locked();
    }
    shared->cv.notify_all();
  }
  return cancelled;
}

bool ExecutionHandle::ready() const {
  if (run_ == nullptr) return false;
  std::lock_guard<std::mutex> lock(run_->mu);
  return run_->state == Run::State::kFinished;
}

// ---- Runtime

Result<ExecutionHandle> Runtime::submit(std::shared_ptr<const PreparedProgram> prepared, std::span<const Tensor> arguments) {
  if (prepared == nullptr) return usage_error(ErrorCode::kInvalidArgument, "submit", "null prepared program");
  const program::ProgramBindings& b = prepared->bindings;
  return submit(std::move(prepared), arguments, b);
}

Result<ExecutionHandle> Runtime::submit(std::shared_ptr<const PreparedProgram> prepared, std::span<const Tensor> arguments,
                                        const program::ProgramBindings& bindings) {
  if (prepared == nullptr) return usage_error(ErrorCode::kInvalidArgument, "submit", "null prepared program");
  TENFERRO_TRY_VOID(check_execution(*prepared, arguments, bindings, "submit"));
  RuntimeShared& s = *shared_;
  auto run = std::make_shared<Run>();
  run->plan = std::move(prepared);
  run->arguments.assign(arguments.begin(), arguments.end());
  run->bindings = bindings;
  run->shared = shared_;
  run->reservation = reservation_for(*run->plan);
  bool now = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopping) return shut_down_error("submit");
    ++s.in_flight;
    s.active.erase(std::remove_if(s.active.begin(), s.active.end(), [](const std::weak_ptr<Run>& w) { return w.expired(); }),
                   s.active.end());
    s.active.push_back(run);
    if (s.queue.empty() && s.fits_locked(run->reservation)) {
      s.reserve_locked(run->reservation);
      run->reserved = true;
      // Only immediate domains: launching is the whole run and never waits on a
      // device, so it happens right here. A run with asynchronous domains may host-wait
      // at a transfer: the dispatcher launches it and submit returns at once.
      now = run->plan->immediate;
      if (!now) {
        s.to_launch.push_back(run);
        s.ensure_dispatcher_locked(shared_);
        s.cv.notify_all();
      }
    } else {
      s.admission_waits.fetch_add(1, std::memory_order_relaxed);
      s.queue.push_back(RuntimeShared::Waiter{run, nullptr, nullptr});
      s.ensure_dispatcher_locked(shared_);
    }
  }
  s.submissions.fetch_add(1, std::memory_order_relaxed);
  if (now) launch(run, s);
  return ExecutionHandle(std::move(run));
}

void Runtime::shutdown() {
  RuntimeShared& s = *shared_;
  std::vector<std::shared_ptr<Run>> cancelled;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
    for (RuntimeShared::Waiter& w : s.queue) {
      if (w.run != nullptr) cancelled.push_back(w.run);
    }
    s.queue.erase(std::remove_if(s.queue.begin(), s.queue.end(), [](const RuntimeShared::Waiter& w) { return w.run != nullptr; }),
                  s.queue.end());
  }
  for (const std::shared_ptr<Run>& run : cancelled) {
    {
      std::lock_guard<std::mutex> lock(run->mu);
      if (run->state != Run::State::kQueued) continue;
      run->state = Run::State::kFinished;
      run->error = shut_down_error("shutdown");
      run->arguments.clear();
      run->bindings.tensors.clear();
    }
    run->cv.notify_all();
    std::lock_guard<std::mutex> lock(s.mu);
    --s.in_flight;
  }
  // Launched runs no one drains yet are drained here (their handles then find them
  // finished). The dispatcher may launch a run it had already admitted after a sweep, so
  // sweep again until nothing is in flight.
  for (;;) {
    std::vector<std::shared_ptr<Run>> unclaimed;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.in_flight == 0 && !s.dispatcher_running) break;
      for (const std::weak_ptr<Run>& w : s.active) {
        if (std::shared_ptr<Run> r = w.lock()) unclaimed.push_back(std::move(r));
      }
    }
    for (const std::shared_ptr<Run>& run : unclaimed) {
      bool mine = false;
      {
        std::lock_guard<std::mutex> lock(run->mu);
        if (run->state == Run::State::kLaunched && !run->claimed) mine = run->claimed = true;
      }
      if (mine) finish(*run);
    }
    unclaimed.clear();
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.notify_all();
    ++s.idle_waiters;
    s.idle_cv.wait_for(lock, std::chrono::milliseconds(10),
                       [&] { return s.in_flight == 0 && !s.dispatcher_running; });
    --s.idle_waiters;
  }
}

std::vector<Error> Runtime::detached_errors() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return std::vector<Error>(shared_->detached.begin(), shared_->detached.end());
}

}  // namespace tenferro::runtime
