#pragma once
/// \file
/// Indexing and structural kernels. Results are new compact column-major tensors; all
/// arguments are validated before anything is written.

#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// StableHLO slice: elements start[k], start[k]+strides[k], ... below limit[k] on every
/// axis. Needs 0 <= start <= limit <= extent and strides >= 1. Errors: kInvalidShape
/// (list lengths), kOutOfRange, kInvalidArgument.
Result<Tensor> slice(const CpuExecutionContext& ctx, const Tensor& x, Dims start, Dims limit, Dims strides);

/// StableHLO dynamic_slice: a window of `sizes` at `start`, where each start is clamped
/// to [0, extent - size] (the StableHLO rule). Errors: kInvalidShape, kOutOfRange (size
/// larger than the extent).
Result<Tensor> dynamic_slice(const CpuExecutionContext& ctx, const Tensor& x, Dims start, Dims sizes);

/// StableHLO dynamic_update_slice: a copy of `x` with `update` written at `start`
/// (clamped like dynamic_slice). Errors: kDTypeMismatch, kInvalidShape, kOutOfRange.
Result<Tensor> dynamic_update_slice(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& update, Dims start);

/// numpy `take`: result shape x.shape[:axis] + indices.shape + x.shape[axis+1:], with
/// `indices` of dtype i32 or i64. Indices must lie in [0, extent): an out-of-range
/// index is a kOutOfRange error naming it (checked before writing).
Result<Tensor> gather(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& indices, int64_t axis);

/// The adjoint of gather: a copy of `x` with `updates` (shape as gather's result) added
/// at the indexed positions; repeated indices accumulate. Errors as gather, plus
/// kShapeMismatch and kDTypeMismatch for `updates`.
Result<Tensor> scatter_add(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& indices, const Tensor& updates,
                           int64_t axis);

/// numpy's argsort with kind='stable' along `axis`: int64 positions that sort each line
/// ascending, equal values in their order, NaN last (-0 equals 0); complex values in
/// numpy's lexicographic order (numpy_less, tenferro/core/order.h). The result and the
/// sort's scratch come from `pool` when given. Errors: kOutOfRange (axis),
/// kAllocationFailed.
Result<Tensor> argsort(const CpuExecutionContext& ctx, const Tensor& x, int64_t axis,
                       const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// Joins tensors of equal dtype and equal extents except on `axis`. Errors:
/// kInvalidArgument (empty list), kDTypeMismatch, kShapeMismatch, kOutOfRange.
Result<Tensor> concatenate(const CpuExecutionContext& ctx, const std::vector<Tensor>& parts, int64_t axis);

/// StableHLO pad: edge padding `low`/`high` (negative values crop) and `interior` padding
/// between elements, filled with `value` (a rank-0 tensor of x's dtype). Nothing larger
/// than the result is allocated. Errors: kInvalidShape (a cropped extent below zero, a
/// count mismatch), kInvalidArgument (negative interior), kOverflow (an extent past
/// int64), kDTypeMismatch.
Result<Tensor> pad(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& value, Dims low, Dims high,
                   Dims interior);

/// Reverses the listed axes. Errors: kOutOfRange, kInvalidArgument (repeated axis).
Result<Tensor> reverse(const CpuExecutionContext& ctx, const Tensor& x, Dims axes);

/// Lower (tril) or upper (triu) triangle of the matrices formed by axes 0 (rows) and 1
/// (columns), batched over the remaining axes: element (i, j) is kept when j - i <= k
/// (tril) or j - i >= k (triu), otherwise zero. Errors: kInvalidShape (rank < 2).
Result<Tensor> tril(const CpuExecutionContext& ctx, const Tensor& x, int64_t k = 0);
Result<Tensor> triu(const CpuExecutionContext& ctx, const Tensor& x, int64_t k = 0);

/// The diagonal over two or more equal-extent axes, materialized (see
/// TensorBase::diagonal for the axis order).
Result<Tensor> extract_diag(const CpuExecutionContext& ctx, const Tensor& x, Dims axes);

/// The inverse of extract_diag for two axes: a tensor whose axis `axis` of `v` becomes
/// the pair (axis, axis + 1) with `v` on the diagonal and zeros elsewhere.
/// Errors: kOutOfRange.
Result<Tensor> embed_diag(const CpuExecutionContext& ctx, const Tensor& v, int64_t axis);

}  // namespace tenferro::cpu
