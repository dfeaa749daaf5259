#pragma once
/// \file
/// Reductions over any set of axes.

#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

enum class ReduceOp : uint8_t { kSum, kProd, kMax, kMin };
std::string_view reduce_op_name(ReduceOp op) noexcept;

/// Reduces `x` over `axes` (distinct, any order; empty = no reduction, a copy). The
/// result drops the reduced axes, or keeps them with extent 1 when `keep_dims`.
/// Supported: sum/prod for every dtype but bool (integers wrap); max/min for real dtypes
/// and bool (max = any, min = all), propagating NaN. Reducing an empty axis gives the
/// identity (0, 1, lowest, highest). Floating sums use pairwise summation over
/// contiguous runs (Note [Reduction order]). Errors: kOutOfRange, kInvalidArgument
/// (repeated axis), kDTypeMismatch.
Result<Tensor> reduce(const CpuExecutionContext& ctx, ReduceOp op, const Tensor& x, Dims axes, bool keep_dims = false,
                      const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// reduce() into a caller-provided destination: `out` must have x's dtype and exactly
/// the shape reduce(x, axes, keep_dims) would return, in any layout whose elements do
/// not overlap, with exclusive storage (it is overwritten, never read). Allocates
/// nothing for ranks <= 8 and full reductions of up to 2^22 elements. Errors: those of
/// reduce(), kInvalidArgument (null destination), kDTypeMismatch, kShapeMismatch, and
/// those of exclusive mutable access (kNotExclusive, kReadOnly, kIncompatibleLayout);
/// every check happens before the first write.
Result<void> reduce_into(const CpuExecutionContext& ctx, ReduceOp op, const Tensor& x, Dims axes, bool keep_dims,
                         Tensor& out);

}  // namespace tenferro::cpu
