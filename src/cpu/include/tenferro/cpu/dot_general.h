#pragma once
/// \file
/// dot_general: batched tensor contraction with StableHLO dimension semantics, computed
/// by GEMM providers on strided operands (engine-owned composite).

#include <cstdint>
#include <optional>
#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/core/small_vector.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// Which dimensions pair up. lhs_batch[i] pairs with rhs_batch[i] and
/// lhs_contracting[i] with rhs_contracting[i]; every other dimension is free.
struct DotDims {
  SmallVector<int64_t, 8> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
};

std::string_view gemm_provider_name(GemmProvider p) noexcept;

/// Per-operation options. Unset batch fields inherit the context's BatchSettings
/// (engine default or scoped override).
struct DotOptions {
  bool conj_lhs = false;
  bool conj_rhs = false;
  c128 alpha = 1.0;  ///< converted to the dtype (imaginary part must be 0 for real dtypes)
  c128 beta = 0.0;   ///< only with dot_general_into; 0 means the destination is not read
  GemmProvider provider = GemmProvider::kAuto;
  std::optional<BatchPolicy> batch_policy;
  std::optional<int64_t> tiny_flops;
  std::optional<int64_t> shortcut_flops;
  std::optional<int64_t> outer_parallel_flops;
  std::optional<int64_t> tiny_flops_blis;
  std::optional<int64_t> parallel_min_flops;
};

/// The batch settings an operation uses: per-operation values over the context's.
BatchSettings effective_batch_settings(const CpuExecutionContext& ctx, const DotOptions& options);

/// Result shape: batch dims (lhs order), then lhs free dims, then rhs free dims.
/// Errors: kOutOfRange (axis), kInvalidArgument (repeated axis, mismatched list
/// lengths), kShapeMismatch (paired extents differ).
Result<Shape> dot_general_shape(const Shape& lhs, const Shape& rhs, const DotDims& dims);

/// Buffers dot_general_into keeps between calls for the operands it packs and for its
/// output scratch (Note [Dot scratch]): pass the same DotScratch to repeated calls of the
/// same shapes and warm calls allocate nothing. Holds storage (memory stays retained
/// until reset or destruction). Not thread-safe: one per concurrent caller.
struct DotScratch {
  std::shared_ptr<Storage> lhs, rhs, out;
  std::shared_ptr<Storage> work;  ///< the blocked GEMM's packed panels, one set per worker
  void reset() noexcept {
    lhs.reset();
    rhs.reset();
    out.reset();
    work.reset();
  }
};

/// The layout dot_general gives its result of logical shape `shape` (from
/// dot_general_shape) with `batch_dims` leading batch dims: compact memory in the order
/// [lhs free, rhs free, batch] (column-major), viewed in logical order. Callers that
/// supply their own buffer (dot_general_into) use it to get the same memory order.
Layout dot_general_result_layout(const Shape& shape, size_t batch_dims);

/// The layout dot_general(ctx, lhs, rhs, dims, options) gives its result: usually
/// dot_general_result_layout, but the operands' batch items first in memory where lhs
/// and rhs hold them one element apart and the engine computes them as vector lanes
/// (Note [Lane-first results]). Callers that supply their own buffer (dot_general_into)
/// use it to get dot_general's own memory order. Computes nothing; allocates nothing for
/// ranks up to 8. Errors: those of dot_general before it computes.
Result<Layout> dot_general_own_layout(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs,
                                      const DotDims& dims, const DotOptions& options = {});

/// out = alpha * dot(lhs, rhs). The result is a new tensor with the logical shape above;
/// its memory is compact with the batch dimensions outermost, so every batch is one
/// column-major matrix (dot_general_result_layout: a permuted compact layout, not
/// column-major over the logical dims) — except where lhs and rhs hold their batch items
/// one element apart and the engine computes them as vector lanes: then those batch
/// dimensions come first in memory, as in the operands (Note [Lane-first results]). Every dtype; on bool it is the
/// boolean semiring (numpy's dot on bool: an OR of ANDs; alpha and beta must be 0 or 1). The result and any packed
/// operand come from `pool` when given. Errors: those of dot_general_shape, kDTypeMismatch, and kInvalidArgument for an
/// alpha or beta the dtype cannot represent.
Result<Tensor> dot_general(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                           const DotOptions& options = {}, const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// out = alpha * dot(lhs, rhs) + beta * out, into a caller destination of the result
/// shape (any layout, exclusive storage). Invalid input fails before any write. Packed
/// operands and a scratch destination are drawn from `pool` when given.
/// With `scratch`, packed operands and the output scratch reuse its buffers (taken when
/// large enough and not shared, else drawn from `pool`; handed back afterwards).
Result<void> dot_general_into(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs,
                              const DotDims& dims, const DotOptions& options, Tensor& out,
                              const std::shared_ptr<HostBufferPool>& pool = nullptr, DotScratch* scratch = nullptr);

}  // namespace tenferro::cpu
