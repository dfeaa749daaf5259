#pragma once
// Internal: the layout of a prepared program, shared by preparation, execution and
// explain (not installed).

#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tenferro/runtime/runtime.h"

namespace tenferro::runtime {

struct RuntimeConfigSnapshot {
  RuntimeConfig config;
  uint64_t epoch = 1;
  std::vector<std::shared_ptr<const EngineBridge>> engines;
  std::map<std::pair<std::string, uint32_t>, std::shared_ptr<const ExtensionModule>, std::less<>> modules;
  std::map<std::pair<TransferEndpoint, TransferEndpoint>, std::shared_ptr<const TransferProvider>> transfers;
  std::vector<std::shared_ptr<const EventDomainDriver>> drivers;  // per engine
};

// One scheduled node: a resolved kernel over value slots. An operation node runs a
// program op; a transfer node (op == nullptr) moves one value to another engine's
// storage (Note [Transfers] in prepare.cc).
struct PreparedNode {
  const program::Operation* op = nullptr;  // nullptr: a transfer
  uint32_t engine = 0;                     // the engine the node runs on (transfers: the destination)
  int32_t domain = 0;
  uint32_t src_engine = 0;                 // transfers: the source engine
  int32_t src_domain = 0;                  // transfers: the source domain
  int32_t run = 0;                         // index into PreparedProgram::runs
  bool leased = false;                     // takes a node lease (a launch limit covers its domain)
  int32_t op_index = -1;                   // program order of op (-1: transfer)
  std::shared_ptr<const NodeKernel> kernel;
  std::vector<int32_t> inputs, outputs;  // value indices of the program
  std::vector<int32_t> release;          // slots dropped once the node has run
  std::string how;                       // resolution: "native", "lowered", "fallback", with the reason
  int64_t output_bytes = 0;
  bool view = false;
  // Note [Buffer plan]: where outputs[0] is written when the kernel writes_into().
  int32_t dest_buffer = -1;       // a workspace buffer (-1: the kernel allocates)
  int32_t in_place_of = -1;       // the value whose buffer dest_buffer continues (explain)
  int32_t donate_argument = -1;   // in place of this donatable argument when donated at run
};

// A contiguous stretch of the schedule on one engine domain: one executor entry.
struct Segment {
  uint32_t engine = 0;
  int32_t domain = 0;
  int32_t begin = 0, end = 0;  // node range
};

// The estimated peak bytes a run holds in one engine domain (for admission).
struct DomainPeak {
  uint32_t engine = 0;
  int32_t domain = 0;
  int64_t bytes = 0;
};

// Per-execution slots and planned buffers (reused across runs: no allocation once warm).
struct Workspace {
  std::vector<CompletionToken> tokens;  // per value: the completion of its producer
  std::vector<std::unique_ptr<EventDomainRun>> runs;     // per PreparedProgram::runs entry: begun
  std::vector<std::unique_ptr<EventDomainRun>> retired;  // drained, offered back to the driver
  std::vector<CompletionToken> deps;    // scratch for one launch
  std::vector<Tensor> slots;  // one per program value
  std::vector<Tensor> in, out;
  std::vector<std::shared_ptr<Storage>> buffers;  // one per planned buffer
  std::vector<Tensor> dest;   // per value: its planned destination over its buffer (or empty)
  std::vector<uint8_t> donated;  // per argument: donated in this execution
};

class PreparedProgram {
 public:
  RuntimeId runtime;
  uint64_t epoch = 0;
  EngineId engine;
  int32_t domain = 0;
  std::shared_ptr<const RuntimeConfigSnapshot> snapshot;  // pinned configuration
  std::shared_ptr<const EngineBridge> bridge;
  std::shared_ptr<const program::SemanticProgram> program;
  program::ProgramBindings bindings;        // the bindings of the graph it was prepared from
  std::vector<TensorSignature> signature;   // arguments, then bindings
  std::vector<int32_t> argument_values;     // value index of each argument
  std::vector<int32_t> binding_values;      // value index of each binding
  std::vector<int32_t> output_values;
  std::vector<PreparedNode> nodes;         // in schedule order
  std::vector<uint32_t> runs;              // engines whose event domains a run uses, in first-use order
  std::vector<int32_t> run_of_engine;      // per engine id: index into runs (-1: unused)
  std::vector<Segment> segments;
  std::vector<DomainPeak> domain_peaks;    // per engine domain the nodes use
  bool immediate = true;                   // every event domain used completes at enqueue
  int64_t transfers = 0;
  std::vector<Shape> value_shapes;         // program values, then transfer results
  std::vector<DType> value_dtypes;
  std::vector<int32_t> value_buffer;         // planned buffer per value (-1: none)
  std::vector<int64_t> buffer_bytes;         // capacity of each planned buffer
  int64_t workspace_bytes = 0;               // sum of buffer_bytes (per workspace)
  std::vector<uint8_t> donatable;            // per argument: declared donatable and planned
  std::vector<int32_t> defined_at, last_use;  // node index per value (-1: input / never)
  int64_t peak_bytes = 0;
  int64_t footprint_bytes = 0;
  size_t max_inputs = 0, max_outputs = 0;

  // A workspace with its planned buffers (allocated from the engine on first use).
  // Errors: the engine's allocation errors.
  Result<std::unique_ptr<Workspace>> acquire() const;
  void give_back(std::unique_ptr<Workspace> ws) const;

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Workspace>> free_;
};

// Bytes of a compact tensor, saturating at INT64_MAX (an estimate for plans and explain;
// the kernels check real sizes), and a saturating sum.
inline int64_t bytes_of(DType d, const Shape& s) {
  int64_t n = dtype_size(d);
  for (int64_t e : s) {
    if (__builtin_mul_overflow(n, e, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
// A running total `a` of saturating sums less one of its terms `b`: a saturated total
// stays saturated (which terms it held is no longer known; its peak is already the max).
inline int64_t sat_sub_term(int64_t a, int64_t b) { return a == std::numeric_limits<int64_t>::max() ? a : a - b; }

// Runs the nodes of a single-engine program `p` (a lowered sub-program) inside the
// caller's entered context, inputs already in ws.slots; no event-domain runs (the nodes
// are part of the caller's launch).
Result<void> run_nodes(const PreparedProgram& p, EngineContext& ctx, Workspace& ws);

// The error of node `i` failing with `cause` (names the node, its provider and engine;
// keeps the cause's event-domain operation).
Error node_error(const PreparedProgram& p, size_t i, const Error& cause);

// A label for node `n` in errors and explain ("add", "extension einsum", "transfer").
std::string node_label(const PreparedNode& n);

// Step (4) of preparation: liveness, release lists, planned buffers with reuse and
// in-place donation, peak bytes (Note [Buffer plan] in buffer_plan.cc).
void plan_buffers(PreparedProgram& p, std::span<const int32_t> donate_arguments, bool engine_plans_buffers);

}  // namespace tenferro::runtime
