#pragma once
/// \file
/// CPU kernels over strided host tensors: layout copy, elementwise and reductions.
/// Every function validates its inputs before writing anything and runs in the given
/// entered context (parallel over its workers for large inputs).

#include <cstdint>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// Copies `src` into `dst` element-wise (any strides on both sides, including negative
/// and zero on the source). Errors: kShapeMismatch, kDTypeMismatch, and those of
/// exclusive mutable access to `dst` (kNotExclusive, kReadOnly, kIncompatibleLayout).
/// Note [Copy kernel] in copy.cc describes the algorithm.
Result<void> copy_into(const CpuExecutionContext& ctx, const Tensor& src, Tensor& dst);

/// Sets every element of `dst` to zero (all bits zero: +0 for floating and complex
/// dtypes, false for bool), any strides. Allocates nothing for ranks <= 8. Errors:
/// kInvalidArgument (null handle) and those of exclusive mutable access to `dst`
/// (kNotExclusive, kReadOnly, kIncompatibleLayout).
Result<void> zero_into(const CpuExecutionContext& ctx, Tensor& dst);

/// A compact column-major copy of `src` (drawn from `pool` when given).
Result<Tensor> materialize(const CpuExecutionContext& ctx, const Tensor& src,
                           const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// `src.permute(perm)` materialized compactly (column-major).
Result<Tensor> permute_copy(const CpuExecutionContext& ctx, const Tensor& src, Dims perm,
                            const std::shared_ptr<HostBufferPool>& pool = nullptr);

namespace detail {
/// Untyped core of copy_into: shapes already checked; `elem` bytes per element.
void copy_strided(const CpuExecutionContext& ctx, const void* src_base, const Layout& src, void* dst_base,
                  const Layout& dst, int64_t elem);
/// Writes the `elem`-byte value at `value` to every element of `dst` (a copy from that
/// one element broadcast over dst's shape); checks done by the caller.
void fill_strided(const CpuExecutionContext& ctx, const void* value, void* dst_base, const Layout& dst, int64_t elem);
}  // namespace detail

}  // namespace tenferro::cpu
