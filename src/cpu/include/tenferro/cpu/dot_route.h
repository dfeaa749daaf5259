#pragma once
/// \file
/// The dot_general planner (Note [dot_general planner] in dot_plan.cc): one pure function
/// decides how a contraction runs (batch policy, provider, kernel, how the work is split
/// over threads, which operands are packed) from the problem's geometry, the CPU's
/// capabilities and the settings, and says why. dot_general executes its answer;
/// `explain_dot_general` returns it without computing anything.

#include <cstdint>
#include <string>
#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/cpu/caps.h"
#include "tenferro/cpu/dot_general.h"

namespace tenferro::cpu {

/// The kernel that computes each product (item of the batch).
enum class DotKernel : uint8_t {
  kNone,            ///< the output is empty: nothing runs
  kElementwise,     ///< every dimension is a batch dimension: an elementwise product
  kScaleOutput,     ///< empty contraction (K = 0): out = beta out
  kOuter,           ///< K = 1: an outer product written by tenferro (Note [Outer products])
  kPlainLoops,      ///< tenferro's plain loops (integers, bool, tiny products, provider naive)
  kSmall,           ///< tenferro's register-blocked small f64 kernel (Note [Tiny products])
  kThin,            ///< tenferro's thin f64 kernel (Note [Thin transposed products])
  kWide,            ///< small kernel, column blocks outermost (Note [Short-contraction products])
  kShortSides,      ///< tenferro's short-side kernel on a strided contraction (no packing)
  kStreamed,        ///< tenferro's streamed tall-product kernel (Note [Streamed tall products])
  kStreamedOutput,  ///< tenferro's streamed-output kernel (Note [Streamed-output products])
  kBlocked,         ///< tenferro's blocked AVX-512 f64 GEMM (Note [Blocked AVX-512 GEMM])
  kBatchLanes,      ///< tenferro's f64 / f32 kernel with batch items as vector lanes (Note [Batch-lane products])
  kMatVec,          ///< tenferro's matrix-vector kernel, real and complex (Note [Matrix-vector products])
  kComplexShort,    ///< tenferro's complex kernel for a short contraction or side (Note [Short complex products])
  kNarrow,          ///< tenferro's f64 / f32 kernel for a small A held in registers (Note [Narrow products])
  kOpenBlas,        ///< cblas_?gemm of OpenBLAS
  kBlis,            ///< bli_?gemm_ex of BLIS (one thread per call)
  kVendorBatch,     ///< one BLIS ?gemm_batch_ call for the whole batch
};

/// How the work is spread over the context's threads.
enum class DotSplit : uint8_t {
  kNone,             ///< one thread per product (products run one after another)
  kOuterBatch,       ///< batch items over the workers, one thread each
  kPieces,           ///< each product's longer side in `pieces` pieces over the workers
  kSplitK,           ///< each product's contraction in `pieces` parts, partial sums added
  kProviderThreads,  ///< the provider's own threads (a product forced to provider openblas)
};

std::string_view dot_kernel_name(DotKernel k) noexcept;
std::string_view dot_split_name(DotSplit s) noexcept;

/// One operand group (rows, columns or contraction of an operand viewed as a matrix):
/// its total extent, and its one stride when its dimensions merge.
struct DotGroup {
  int64_t extent = 1;
  int64_t stride = 0;
  bool mergeable = true;
  friend bool operator==(const DotGroup&, const DotGroup&) = default;
};

/// A free group that does not merge, split into an inner run that merges (in the
/// operand and the destination) and outer labels that become batch dimensions (Note
/// [Split free groups]). `valid` false: no such split exists.
struct DotFreeSplit {
  bool valid = false;
  DotGroup op, out;        ///< the inner run in the operand and in the destination
  int64_t items = 1;       ///< product of the outer labels' extents
  bool providers_take = false;  ///< OpenBLAS and BLIS both address the inner run in place
};

/// The facts the planner decides from: a pure description of one dot_general call,
/// built from layouts by `dot_problem` (or written by hand to ask "what if").
struct DotProblem {
  DType dtype = DType::kF64;
  int64_t batch = 1, m = 1, n = 1, k = 1;  ///< products, and each product's sizes
  int64_t lhs_elements = 0, rhs_elements = 0;
  DotGroup lm, lk, rk, rn, om, on;  ///< lhs rows/contraction, rhs contraction/columns, out rows/columns
  bool lhs_batch_unit = false;  ///< some batch dimension of the operand has stride 1
  bool rhs_batch_unit = false;
  bool out_batch_unit = false;
  /// Items of the lane run: a batch dimension with stride 1 in lhs, rhs and out, times
  /// the batch dimensions that continue it in all three (0: none; Note [Batch-lane
  /// products]).
  int64_t lane_batch = 0;
  DotFreeSplit lhs_split, rhs_split;  ///< candidate splits of non-merging free groups
  int64_t lhs_first_free = 1;   ///< extent of the lhs's first non-trivial free axis
  int64_t lhs_k_unit_run = 1;   ///< elements of the lhs contraction's unit-stride run
  int64_t rhs_first_k = 1;      ///< extent of the rhs's first non-trivial contracting axis
  int64_t rhs_n_unit_run = 1;   ///< elements of the rhs free group's unit-stride run
  bool k_levels = false;        ///< the contraction walks as at most 4 nested loops
  /// With k_levels: the innermost loop's extent and its lhs and rhs strides.
  int64_t k_inner = 0, k_inner_lhs = 0, k_inner_rhs = 0;
  bool conj_lhs = false, conj_rhs = false;  ///< (complex dtypes only)
  bool beta_zero = true;        ///< the destination is not read
};

/// Settings the planner reads besides the problem and the capabilities.
struct DotSettings {
  BatchSettings batch;  ///< effective_batch_settings(ctx, options): policy, provider, thresholds
  int threads = 1;      ///< the context's threads
};

/// The planner's answer. `reason` is static text (never freed, never allocated).
struct DotRoute {
  BatchPolicy policy = BatchPolicy::kAuto;  ///< resolved: never kAuto
  /// Resolved: never kAuto; kNaive is tenferro's own code (plain loops or the vector
  /// kernel `kernel` names), printed by describe() as "provider tenferro".
  GemmProvider provider = GemmProvider::kAuto;
  DotKernel kernel = DotKernel::kNone;
  DotSplit split = DotSplit::kNone;
  int threads = 1;       ///< threads per product (1 under an outer-parallel batch)
  int64_t pieces = 1;    ///< kPieces / kSplitK: how many
  bool pack_lhs = false, pack_rhs = false, pack_out = false;  ///< compact copies made
  bool lhs_k_first = false;  ///< a packed lhs is [contraction, free] (else [free, contraction])
  bool rhs_n_first = false;  ///< a packed rhs is [free, contraction] (else [contraction, free])
  bool split_lhs_free = false, split_rhs_free = false;  ///< Note [Split free groups] applied
  bool transposed =
      false;  ///< kShortSides / kStreamed / kMatVec / kWide / kComplexShort / kNarrow compute C^T = B^T A^T
  bool columns_outer = false;       ///< kStreamedOutput, kBatchLanes: column blocks outermost (A stays in cache)
  int64_t m = 1, n = 1, batch = 1;  ///< product sizes after any free-group split
  int64_t lanes = 0;                ///< kBatchLanes: items of the lane run (the rest are walked one by one)
  int64_t lane_parts = 1;           ///< kBatchLanes: parts of each vector's rows (columns) over the workers
  bool one_run = false;             ///< kMatVec: A's short rows (columns) read one at a time (beyond the caches)
  bool split_columns = false;       ///< kPieces of kOpenBlas / kBlis / kBlocked: blocks of C's columns (else rows)
  bool k_walk = false;              ///< kMatVec: the contraction's outer loops walked around the kernel
  const char* reason = "";
};

/// Decides the route of `problem` on a CPU with `caps` under `settings`: a pure
/// function (same inputs, same answer, on any machine), no allocation. Errors
/// (kUnsupported): the whole-batch vendor policy with a provider or dtype that has no
/// batch entry point; provider openblas under an outer-parallel batch on several threads;
/// under strict placement, a product forced onto OpenBLAS's own threads.
Result<DotRoute> plan_dot(const DotProblem& problem, const CpuCaps& caps, const DotSettings& settings);

/// The problem of dot_general(lhs, rhs, dims) into a destination of layout `out`
/// (dot_general's own result: dot_general_result_layout). Pure; errors as
/// dot_general_shape, plus kShapeMismatch when `out` has the wrong shape.
Result<DotProblem> dot_problem(DType dtype, const Layout& lhs, const Layout& rhs, const Layout& out,
                               const DotDims& dims, const DotOptions& options = {});

/// The route dot_general would take for these operands on `ctx` (its capabilities,
/// threads and batch settings), into a destination of layout `*out` (dot_general_into)
/// or, when null, into dot_general's own result layout; computes nothing. Errors as
/// dot_general (and kShapeMismatch for an `out` of the wrong shape).
Result<DotRoute> explain_dot_general(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs,
                                     const DotDims& dims, const DotOptions& options = {},
                                     const Layout* out = nullptr);

/// One line: "kernel small, provider tenferro, split none, 1 thread, pack lhs: <reason>".
std::string describe(const DotRoute& route);

}  // namespace tenferro::cpu
