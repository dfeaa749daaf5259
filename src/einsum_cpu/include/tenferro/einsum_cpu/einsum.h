#pragma once
/// \file
/// The CPU native einsum engine: a whole N-ary einsum as one prepared operation
/// (spec 000 "Einsum execution identity"), and a bounded plan cache.

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/cpu/dot_route.h"
#include "tenferro/cpu/context.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/einsum/path.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::einsum {

/// Timing of one binary step (EinsumPlan::execute with a profile): the dot_general
/// sizes (batch, rows, columns, contraction), the wall time of the step, and whether
/// dot_general had to pack an operand or compute into a scratch output (known when the
/// step used a DotScratch, i.e. with a workspace).
struct StepProfile {
  int64_t step = 0;  ///< position in the plan's step list
  int64_t batch = 1, m = 1, n = 1, k = 1;
  double seconds = 0;
  /// How dot_general ran the step (kernel, provider, split, packing) and why (Note
  /// [dot_general planner]).
  cpu::DotRoute route;
  /// The lane that ran the step (Note [Einsum lanes] in einsum.cc), -1 when it ran with
  /// all of the context's threads.
  int32_t lane = -1;
};

class EinsumPlan;

/// The memory order an einsum plan is laid out for (Note [Row-major operands] in
/// einsum.cc). kColumnMajor: the library's convention; the planner takes each operand's
/// first axis as its fastest and lays out intermediates and the result in dot_general's
/// order. kRowMajor: the plan is made for the mirrored einsum (every term's labels and its
/// operand's axes reversed, the same sum), so C-ordered operands are read in the order the
/// planner assumes, and the result is laid out as the mirror of the column-major plan's
/// (C order where that one's is column-major). Either plan takes operands of any layout
/// and gives the same values; the order only decides what is read in place.
enum class OperandOrder : uint8_t { kColumnMajor, kRowMajor };

/// "column-major" / "row-major".
std::string_view operand_order_name(OperandOrder order) noexcept;

/// The order einsum plans for over `operands` (Note [Row-major operands]): kRowMajor when
/// the problem is not tiny and operands whose axes run slowest-first in memory hold more
/// elements than operands whose axes run fastest-first; else kColumnMajor. Pure, never
/// fails (null handles count as neither), allocates nothing.
OperandOrder preferred_operand_order(std::span<const Tensor> operands) noexcept;

/// Reusable execution state of one plan: the operand/intermediate slots and the
/// intermediate buffers (storage objects included) that earlier executions released
/// (Note [Einsum workspace]). With a workspace, repeated executions allocate no metadata
/// and no intermediate buffers once warm. Owns its buffers (memory stays retained until
/// release() or destruction). Not thread-safe: use one workspace per concurrent
/// execution. Move-only.
class EinsumWorkspace {
 public:
  EinsumWorkspace() = default;
  EinsumWorkspace(EinsumWorkspace&&) = default;
  EinsumWorkspace& operator=(EinsumWorkspace&&) = default;
  /// Drops the retained intermediate buffers.
  void release() noexcept {
    free_.clear();
    for (auto& l : leaf_) l.reset();
    for (auto& d : dot_) d.reset();
  }
  /// Bytes of intermediate buffers retained for the next execution.
  int64_t retained_bytes() const noexcept;

 private:
  friend class EinsumPlan;
  const EinsumPlan* plan_ = nullptr;
  std::vector<Tensor> slots_;                    // operands then one per step
  std::vector<std::shared_ptr<Storage>> free_;   // released intermediate storage, capacity reserved
  std::vector<cpu::DotScratch> dot_;             // one per step: packed operands and output scratch
  std::vector<std::shared_ptr<Storage>> leaf_;   // one per operand: its summed labels' result
};

/// A prepared einsum for fixed subscripts, operand shapes, dtype and path policy:
/// the contraction tree, the single-operand preprocessing, and per binary step the
/// operand axis orders and dot_general dimensions. Immutable and thread-safe; execute it
/// any number of times (Note [Einsum plan] in einsum.cc). With several threads,
/// independent subtrees of the contraction tree may run concurrently, each on one
/// thread (Note [Einsum lanes]); the lane schedule for a thread count is planned on the
/// first execution with that count and kept.
class EinsumPlan {
 public:
  /// Parses, resolves and plans. Every dtype; bool sums are ORs of ANDs (numpy's einsum
  /// on bool, Note [Boolean einsum]). Errors: those of parse_subscripts, resolve and
  /// search_path.
  /// `order`: the memory order to plan for (OperandOrder; preferred_operand_order
  /// chooses it from the operands).
  static Result<std::shared_ptr<const EinsumPlan>> prepare(std::string_view subscripts, std::span<const Shape> shapes,
                                                           DType dtype, const PathPolicy& policy = {},
                                                           OperandOrder order = OperandOrder::kColumnMajor);
  /// Plans a resolved spec (integer-label API).
  static Result<std::shared_ptr<const EinsumPlan>> prepare(const EinsumSpec& spec, std::span<const Shape> shapes,
                                                           DType dtype, const PathPolicy& policy = {},
                                                           OperandOrder order = OperandOrder::kColumnMajor);

  const EinsumSpec& spec() const noexcept { return spec_; }
  DType dtype() const noexcept { return dtype_; }
  const Shape& output_shape() const noexcept { return out_shape_; }
  /// The memory order the plan was made for (spec(), the shapes, the tree and the
  /// operands passed to execute are the caller's either way; a kRowMajor plan's steps,
  /// as a profile reports them, are those of the mirrored einsum).
  OperandOrder operand_order() const noexcept { return order_; }
  const ContractionTree& tree() const noexcept { return tree_; }
  /// Cost of the tree under the path cost model (opt_einsum flop convention).
  const PathCost& cost() const noexcept { return cost_; }
  /// Seconds spent in path search while preparing.
  double search_seconds() const noexcept { return search_seconds_; }
  /// The steps that run concurrently on `threads` threads (Note [Einsum lanes]): one
  /// list of step positions per lane, heaviest first; empty when every step runs with
  /// all threads. Plans the schedule on first use for that count (thread-safe).
  std::vector<std::vector<int32_t>> lanes(int threads) const;
  /// Bytes of plan metadata (for the cache's retained-byte statistics).
  int64_t footprint_bytes() const noexcept;

  /// Runs the einsum on `operands` (shapes and dtype as prepared; any layouts) inside an
  /// entered context. Intermediates come from `pool` when given and return to it as soon
  /// as their last consumer ran. The result is a new tensor in dot_general's memory order
  /// (a permuted compact layout; reversed for a kRowMajor plan) unless the output repeats
  /// a label. Errors:
  /// kInvalidArgument (operand count, null handle), kShapeMismatch, kDTypeMismatch.
  /// `dot` sets the provider and batch policy of every step (its alpha, beta and conj
  /// fields are ignored). `profile`, when given, receives one entry per binary step.
  Result<Tensor> execute(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands,
                         const std::shared_ptr<HostBufferPool>& pool = nullptr, const cpu::DotOptions& dot = {},
                         std::vector<StepProfile>* profile = nullptr) const;
  /// Writes the einsum into `out` (output shape and dtype, any injective layout,
  /// exclusive storage); the last contraction writes into it directly. Invalid input
  /// fails before any write.
  Result<void> execute_into(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands, Tensor& out,
                            const std::shared_ptr<HostBufferPool>& pool = nullptr, const cpu::DotOptions& dot = {},
                            std::vector<StepProfile>* profile = nullptr) const;

  /// A workspace for this plan (allocates its slot and buffer tables once).
  EinsumWorkspace make_workspace() const;
  /// execute / execute_into with a workspace: intermediates reuse the workspace's
  /// buffers, so a warm execute_into allocates nothing for intermediates of rank <= 8
  /// (Note [Einsum workspace] lists what still allocates). Errors: as above, plus
  /// kInvalidArgument when `workspace` was made by another plan.
  Result<Tensor> execute(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands,
                         EinsumWorkspace& workspace, const std::shared_ptr<HostBufferPool>& pool = nullptr,
                         const cpu::DotOptions& dot = {}, std::vector<StepProfile>* profile = nullptr) const;
  Result<void> execute_into(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands, Tensor& out,
                            EinsumWorkspace& workspace, const std::shared_ptr<HostBufferPool>& pool = nullptr,
                            const cpu::DotOptions& dot = {}, std::vector<StepProfile>* profile = nullptr) const;

  struct Leaf;
  struct Step;
  struct Lanes;

 private:
  EinsumPlan() = default;
  Result<void> check_operands(std::span<const Tensor> operands) const;
  Result<Tensor> run(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands, Tensor* out,
                     EinsumWorkspace& ws, const std::shared_ptr<HostBufferPool>& pool, const cpu::DotOptions& dot,
                     std::vector<StepProfile>* profile) const;
  Result<void> check_workspace(const EinsumWorkspace& ws) const;
  const Lanes& lanes_for(int threads) const;
  std::shared_ptr<const Lanes> plan_lanes(int threads) const;

  static Result<std::shared_ptr<EinsumPlan>> plan_spec(const EinsumSpec& spec, std::span<const Shape> shapes,
                                                       DType dtype, const PathPolicy& policy);

  EinsumSpec spec_;  // the caller's (a kRowMajor plan's steps are planned on its mirror)
  DType dtype_ = DType::kF64;
  OperandOrder order_ = OperandOrder::kColumnMajor;
  std::vector<Shape> in_shapes_;
  Shape out_shape_;
  ContractionTree tree_;
  PathCost cost_;
  double search_seconds_ = 0;
  std::vector<std::shared_ptr<const Leaf>> leaves_;
  std::vector<std::shared_ptr<const Step>> steps_;
  std::vector<Label> root_labels_;                  // logical order of the last node
  std::vector<SmallVector<int64_t, 8>> out_diags_;  // diagonals taken of the output (repeated labels)
  SmallVector<int64_t, 8> root_to_out_;             // permutation of the (diagonal) output view to root order
  bool repeated_output_ = false;
  // How a step's time shrinks with the context's threads (Note [Einsum lanes]).
  enum class StepScaling : uint8_t { kOneThread, kThin, kWide };
  std::vector<double> step_cost_;  // estimated one-thread cost of each step (Note [Einsum lanes])
  std::vector<StepScaling> step_scaling_;
  static constexpr int kMaxLaneThreads = 64;
  mutable std::mutex lanes_mu_;
  mutable std::vector<std::shared_ptr<const Lanes>> lanes_;  // by thread count, planned on first use
};

/// A bounded LRU cache of prepared plans keyed by (subscripts, shapes, dtype, path
/// policy, operand order). Thread-safe. Planning happens on a miss, before any executor
/// entry.
class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 256) : capacity_(capacity) {}
  struct Stats {
    int64_t hits = 0, misses = 0, evictions = 0, entries = 0, retained_bytes = 0;
  };
  Result<std::shared_ptr<const EinsumPlan>> get(std::string_view subscripts, std::span<const Shape> shapes, DType dtype,
                                                const PathPolicy& policy = {},
                                                OperandOrder order = OperandOrder::kColumnMajor);
  /// The cached plan for this key, or null on a miss; never plans (a caller that must
  /// not block, e.g. one holding a language lock, tries this first). A hit counts as one.
  std::shared_ptr<const EinsumPlan> find(std::string_view subscripts, std::span<const Shape> shapes, DType dtype,
                                         const PathPolicy& policy = {},
                                         OperandOrder order = OperandOrder::kColumnMajor);
  Stats stats() const;
  void clear();

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const EinsumPlan>>;
  mutable std::mutex mu_;
  size_t capacity_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  Stats stats_;
};

/// One-call einsum: plans for preferred_operand_order(operands) (through `cache` when
/// given) and executes.
Result<Tensor> einsum(const cpu::CpuExecutionContext& ctx, std::string_view subscripts,
                      std::span<const Tensor> operands, const PathPolicy& policy = {}, PlanCache* cache = nullptr,
                      const std::shared_ptr<HostBufferPool>& pool = nullptr);

}  // namespace tenferro::einsum
