#pragma once
// Internal: the runtime state its in-flight runs share (admission, node leases,
// diagnostics, counters, the dispatcher thread) and the record of one submitted run
// (not installed). Note [Run ownership] in submit.cc says who holds what.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "prepared.h"

namespace tenferro::runtime {

// One run's claim on memory budgets: bytes per budgeted (engine, domain).
struct Reservation {
  struct Part {
    uint32_t engine = 0;
    int32_t domain = 0;
    int64_t bytes = 0;
    int64_t budget = 0;
  };
  std::vector<Part> parts;  // empty: the run needs no admission
};

// The bytes `p` must reserve under its snapshot's budgets (empty when none applies).
Reservation reservation_for(const PreparedProgram& p);

struct ExecutionHandle::Run {
  enum class State : uint8_t { kQueued, kLaunched, kFinished };
  std::shared_ptr<const PreparedProgram> plan;
  std::vector<Tensor> arguments;  // held until the launch
  program::ProgramBindings bindings;
  std::weak_ptr<RuntimeShared> shared;  // never the Runtime: Note [Run ownership]
  Reservation reservation;
  bool reserved = false;

  std::unique_ptr<Workspace> ws;        // between launch and finish
  std::optional<Error> launch_error;    // the primary error of the launch, if any

  std::mutex mu;
  std::condition_variable cv;
  State state = State::kQueued;
  bool claimed = false;    // a thread is finishing it (drain + collect)
  bool detached = false;   // the handle was dropped
  bool observed = false;   // wait() took the result
  int waiters = 0;         // threads blocked on cv (notify only when > 0)
  std::optional<Error> error;
  std::vector<Tensor> outputs;
};
using Run = ExecutionHandle::Run;

struct RuntimeShared {
  // Counters (ExecutionMetrics).
  std::atomic<int64_t> executions{0}, execute_ns{0}, donated{0}, submissions{0}, admission_waits{0},
      lease_waits{0}, transfers{0}, detached_errors{0}, reserved_peak{0};

  // Admission (Note [Admission]) and the dispatcher. One mutex for both.
  std::mutex mu;
  std::condition_variable cv;         // the dispatcher and synchronous waiters
  std::condition_variable idle_cv;    // shutdown: in-flight runs finished
  struct Used {
    uint32_t engine = 0;
    int32_t domain = 0;
    int64_t bytes = 0;
  };
  std::vector<Used> reserved;
  int64_t reserved_total = 0;
  struct Waiter {
    std::shared_ptr<Run> run;          // a submitted run, or
    const Reservation* sync = nullptr; // a synchronous execution waiting on its thread
    bool* granted = nullptr;
  };
  std::deque<Waiter> queue;            // in submission order
  std::deque<std::shared_ptr<Run>> to_launch;  // admitted runs for the dispatcher
  std::deque<std::shared_ptr<Run>> to_finish;  // detached launched runs to drain
  std::vector<std::weak_ptr<Run>> active;      // submitted runs not yet finished
  int64_t in_flight = 0;
  int idle_waiters = 0;    // shutdown() calls blocked on idle_cv
  bool stopping = false;   // shutdown(): no new submissions
  bool closing = false;    // the Runtime is gone: the dispatcher exits when idle
  bool dispatcher_running = false;  // a detached dispatcher thread is running
  std::deque<Error> detached;  // the most recent errors of detached runs

  // Node leases (Note [Node leases]).
  std::mutex lease_mu;
  std::condition_variable lease_cv;
  std::vector<Used> leased;  // `bytes` counts launches in progress

  // Sessions: which thread holds a session of which (engine, domain).
  std::mutex session_mu;
  struct SessionOwner {
    uint32_t engine = 0;
    int32_t domain = 0;
    std::thread::id thread;
  };
  std::vector<SessionOwner> sessions;

  // Admission. fits_locked: `r` fits next to what is reserved now.
  bool fits_locked(const Reservation& r) const;
  void reserve_locked(const Reservation& r);
  // Releases `r` and admits waiters at the head of the queue that fit now.
  void release(const Reservation& r);
  void grant_locked();
  // Starts the dispatcher thread if it is not running (mu held).
  void ensure_dispatcher_locked(const std::shared_ptr<RuntimeShared>& self);
  void record_detached(const Error& e);
};

// Launches every node of a run (begun event-domain runs, fail-fast) and drains them:
// the whole of one execution. `session`: the entered context of one engine domain that
// segments on it use instead of entering again (null: every segment enters).
struct SessionEntry {
  uint32_t engine = 0;
  int32_t domain = 0;
  EngineContext* ctx = nullptr;
};
// Begins one run per event domain of `p` (first-use order) and checks their ids.
Result<void> begin_runs(const PreparedProgram& p, Workspace& ws);
// Launches the nodes segment by segment; stops at the first error (returned).
Result<void> launch_nodes(const PreparedProgram& p, Workspace& ws, RuntimeShared& shared, const SessionEntry* session);
// Drains every begun run in first-use order; returns `primary` (with drain failures as
// suppressed errors) or the first drain failure.
Result<void> drain_runs(const PreparedProgram& p, Workspace& ws, std::optional<Error> primary);
// Puts arguments and bindings into the workspace slots (donation as Note [Buffer plan]);
// returns the number of donated arguments.
int64_t load_inputs(const PreparedProgram& p, Workspace& ws, std::span<const Tensor> arguments,
                    std::span<const Tensor> bindings, bool allow_donation);
// Resets tokens and takes the program outputs out of the slots.
std::vector<Tensor> collect_outputs(const PreparedProgram& p, Workspace& ws);

}  // namespace tenferro::runtime
