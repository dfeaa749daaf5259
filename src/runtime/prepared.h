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
};

// One scheduled node: a resolved kernel over value slots.
struct PreparedNode {
  const program::Operation* op = nullptr;
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

// Per-execution slots and planned buffers (reused across runs: no allocation once warm).
struct Workspace {
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
  std::vector<PreparedNode> nodes;
  std::vector<Shape> value_shapes;
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

// Runs the nodes of `p` inside an entered context, inputs already in ws.slots.
Result<void> run_nodes(const PreparedProgram& p, EngineContext& ctx, Workspace& ws);

// Step (4) of preparation: liveness, release lists, planned buffers with reuse and
// in-place donation, peak bytes (Note [Buffer plan] in buffer_plan.cc).
void plan_buffers(PreparedProgram& p, std::span<const int32_t> donate_arguments, bool engine_plans_buffers);

}  // namespace tenferro::runtime
