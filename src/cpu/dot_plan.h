#pragma once
// Private: the geometry analysis behind the dot_general planner (dot_geometry.cc,
// dot_plan.cc) and what dot_general's execution takes from it.

#include <optional>
#include <span>

#include "gemm.h"
#include "tenferro/cpu/dot_route.h"

namespace tenferro::cpu::detail {

/// The free axes of each operand and the product sizes of a validated call.
struct DotAxes {
  SmallVector<int64_t, 8> lhs_free, rhs_free;
  int64_t batch = 1, m = 1, n = 1, k = 1;
};

/// Validates `dims` against the shapes. Errors: kOutOfRange, kInvalidArgument,
/// kShapeMismatch (dot_general_shape's).
Result<DotAxes> dot_axes(const Shape& lhs, const Shape& rhs, const DotDims& dims);

/// Validates the operands of a dot_general call: both defined, one dtype, and `dims`
/// (dot_axes). Errors: kInvalidArgument, kDTypeMismatch and dot_axes's.
Result<DotAxes> validate_dot(const Tensor& lhs, const Tensor& rhs, const DotDims& dims);

/// Merges `axes` of `layout` (in the given order) into one (extent, stride) if they are
/// column-major contiguous among themselves; extent-1 axes are ignored.
DotGroup merge_group(const Layout& layout, std::span<const int64_t> axes);

/// The outer labels of a split free group (Note [Split free groups] in dot_geometry.cc).
struct FreeSplit {
  DotGroup op, out;                            // the inner run in the operand and the destination
  SmallVector<int64_t, 8> ext, op_st, out_st;  // the outer labels: extents and strides
  int64_t items = 1;
};

/// Everything dot_general's execution needs besides the route: the problem, the
/// contraction pairs in the order used (Note [Contraction order]), the output's axis
/// groups, the free-group split candidates and the contraction's loop levels.
struct DotAnalysis {
  DotProblem problem;
  DotDims dims;
  DotAxes axes;
  SmallVector<int64_t, 8> out_batch, out_m, out_n;
  std::optional<FreeSplit> lhs_split, rhs_split;
  KLevels klev;
  uint64_t lane_dims = 0;  ///< bit i: batch pair i (i < 64) belongs to the lane run (DotProblem::lane_batch)
};

/// Analyzes a validated call (no allocation beyond inline small vectors).
void analyze_dot(DType dtype, const Layout& lhs, const Layout& rhs, const Layout& out, const DotDims& dims,
                 const DotAxes& axes, const DotOptions& options, DotAnalysis* analysis);

/// Note [Lane-first results] (dot_plan.cc): dot_general's result layout with the
/// operands' lane run (Note [Batch-lane products]) fastest, then the order of
/// dot_general_result_layout; nullopt when lhs and rhs have no lane run.
std::optional<Layout> lane_first_layout(const Layout& lhs, const Layout& rhs, const DotDims& dims, const Shape& shape);

/// The layout of dot_general's own result (Note [Lane-first results] in dot_plan.cc):
/// lane_first_layout when the planner then runs the batch-lane kernel, else
/// dot_general_result_layout. `options` as dot_general runs them (beta = 0).
Layout own_result_layout(const CpuExecutionContext& ctx, DType dtype, const Layout& lhs, const Layout& rhs,
                         const DotDims& dims, const DotOptions& options, const DotAxes& axes, const Shape& shape);

/// Whether a provider can address an r x c operand with strides (rs, cs) under `policy`.
bool operand_ok(BatchPolicy policy, GemmProvider provider, bool output, bool conj_complex, int64_t rows,
                int64_t cols, int64_t rs, int64_t cs);

/// Note [Tiny matrix shortcut] (dot_general.cc): whether a call takes the direct loop
/// before any planning.
bool tiny_matmul_shortcut(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                          const DotOptions& options);

/// Pieces of the split-K BLIS and short-side routes, and of the pieces routes.
inline constexpr int64_t kSplitKMaxOutput = 1024;
inline constexpr int kSplitKMaxParts = 4;

}  // namespace tenferro::cpu::detail
