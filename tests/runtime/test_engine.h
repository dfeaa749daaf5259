#pragma once
// The test engine (tests only, never linked into the library): a second engine with its
// own storage class (kDevice: host memory tagged Placement::gpu_device(id) that the CPU
// engine never reads directly), an asynchronous event-domain driver whose worker thread
// completes enqueued work later, transfer providers to and from host memory, and fault
// injection (begin, enqueue, completion, drain; delayed success and failure; a malformed
// completion token). It proves the runtime's asynchronous machinery without a GPU.
//
// Ops it runs natively: add, sub, mul (f64, same shapes), neg, exp (f64), and the test
// family "test.sleep" (a copy that takes `ms` milliseconds on the worker).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tenferro/program/extension.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::test_engine {

// Fault injection and timing; may be changed between executions (not during one).
struct Faults {
  std::atomic<int64_t> delay_us{0};             // every job waits this long before running
  std::atomic<int64_t> fail_enqueue_at{-1};     // the k-th enqueue of a run (0-based) fails
  std::atomic<int64_t> fail_completion_at{-1};  // the k-th job of a run fails when it completes
  std::atomic<bool> fail_begin{false};          // begin_run fails
  std::atomic<bool> fail_drain{false};          // drain reports a driver failure (after retiring)
  std::atomic<bool> foreign_token{false};       // enqueue returns a token of another domain
  void reset() {
    delay_us = 0;
    fail_enqueue_at = -1;
    fail_completion_at = -1;
    fail_begin = false;
    fail_drain = false;
    foreign_token = false;
  }
};

struct Counters {
  std::atomic<int64_t> runs_begun{0}, runs_drained{0};
  std::atomic<int64_t> enqueued{0}, completed{0}, skipped{0};  // jobs
  std::atomic<int64_t> live_buffers{0};   // device storages alive now
  std::atomic<int64_t> max_pending{0};    // most jobs queued at once
};

class TestEngine;

// Creates a test engine for device `device` (its tensors carry Placement::gpu_device).
std::shared_ptr<TestEngine> create(int32_t device = 7);

class TestEngine : public std::enable_shared_from_this<TestEngine> {
 public:
  virtual ~TestEngine() = default;
  virtual std::shared_ptr<const runtime::EngineBridge> bridge() = 0;
  // Transfers host -> device and device -> host.
  virtual std::shared_ptr<const runtime::TransferProvider> upload_provider() = 0;
  virtual std::shared_ptr<const runtime::TransferProvider> download_provider() = 0;
  // Registers the bridge, both transfer providers (with the CPU engine `cpu`) and the
  // "test.sleep" module into `rt`; returns the engine id.
  virtual Result<runtime::EngineId> register_into(runtime::Runtime& rt, runtime::EngineId cpu) = 0;
  // Explicit, synchronous copies for tests (compact f64 device tensor <-> host tensor).
  virtual Result<Tensor> upload(const Tensor& host) = 0;
  virtual Result<Tensor> download(const Tensor& device) = 0;
  Faults& faults() { return faults_; }
  const Counters& counters() const { return *counters_; }
  // The counters outlive the engine (leak checks after everything was dropped).
  std::shared_ptr<const Counters> counters_handle() const { return counters_; }

 protected:
  Faults faults_;
  std::shared_ptr<Counters> counters_ = std::make_shared<Counters>();
};

// "test.sleep": y = x after `ms` milliseconds (on the engine running it). Reference
// evaluation: a copy.
struct SleepOp final : program::ExtensionOp {
  int64_t ms = 0;
  std::string_view family_id() const override { return "test.sleep"; }
  uint64_t payload_hash() const override { return static_cast<uint64_t>(ms) * 0x9e3779b97f4a7c15ULL; }
  bool payload_equal(const ExtensionOp& o) const override { return static_cast<const SleepOp&>(o).ms == ms; }
  std::string payload_text() const override { return "ms=" + std::to_string(ms); }
  std::vector<program::Effect> effects() const override { return {}; }
  std::vector<program::Alias> aliases() const override { return {program::Alias{}}; }
  Result<std::vector<program::ValueType>> infer(std::span<const program::ValueType> in,
                                                std::span<const program::SymbolInfo>,
                                                std::vector<program::PendingGuard>&) const override {
    if (in.size() != 1) return Error(ErrorStage::kCompile, ErrorCode::kInvalidArgument, "test.sleep", "one operand");
    return std::vector<program::ValueType>{in[0]};
  }
  Result<std::vector<Tensor>> evaluate_reference(std::span<const Tensor> in) const override {
    TENFERRO_TRY(Tensor y, in[0].to_col_major());
    return std::vector<Tensor>{y};
  }
};

// The CPU side of "test.sleep" (sleeps on the calling thread, returns a copy), for
// registration on a CPU engine.
std::shared_ptr<const runtime::ExtensionModule> cpu_sleep_module();

}  // namespace tenferro::test_engine
