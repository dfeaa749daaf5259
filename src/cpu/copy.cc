#include <cstring>

#include "strided_loop.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

namespace detail {

// The per-ISA copies of the kernel (copy_kernel.cc).
namespace scalar {
void copy_strided(const CpuExecutionContext&, const void*, const Layout&, void*, const Layout&, int64_t);
}
namespace avx2 {
void copy_strided(const CpuExecutionContext&, const void*, const Layout&, void*, const Layout&, int64_t);
}
namespace avx512 {
void copy_strided(const CpuExecutionContext&, const void*, const Layout&, void*, const Layout&, int64_t);
}

void copy_strided(const CpuExecutionContext& ctx, const void* src_base, const Layout& src, void* dst_base,
                  const Layout& dst, int64_t elem) {
  switch (kernel_isa(ctx.caps())) {
    case IsaLevel::kAvx512: return avx512::copy_strided(ctx, src_base, src, dst_base, dst, elem);
    case IsaLevel::kAvx2: return avx2::copy_strided(ctx, src_base, src, dst_base, dst, elem);
    case IsaLevel::kScalar: break;
  }
  scalar::copy_strided(ctx, src_base, src, dst_base, dst, elem);
}

}  // namespace detail

Result<void> copy_into(const CpuExecutionContext& ctx, const Tensor& src, Tensor& dst) {
  if (!src.defined() || !dst.defined()) {
    return usage_error(ErrorCode::kInvalidArgument, "copy_into", "tensor handle is null");
  }
  if (src.dtype() != dst.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, "copy_into",
                       "source dtype " + std::string(dtype_name(src.dtype())) + " differs from destination dtype " +
                           std::string(dtype_name(dst.dtype())));
  }
  if (!(src.shape() == dst.shape())) {
    return usage_error(ErrorCode::kShapeMismatch, "copy_into",
                       "source shape " + format_dims(src.shape()) + " differs from destination shape " +
                           format_dims(dst.shape()));
  }
  TENFERRO_TRY_VOID(tenferro::detail::check_mutable(dst.storage(), dst.layout(), "copy_into"));
  detail::copy_strided(ctx, src.storage()->data(), src.layout(), dst.storage()->data(), dst.layout(),
                       src.element_size());
  return ok();
}

Result<void> zero_into(const CpuExecutionContext& ctx, Tensor& dst) {
  if (!dst.defined()) return usage_error(ErrorCode::kInvalidArgument, "zero_into", "tensor handle is null");
  TENFERRO_TRY_VOID(tenferro::detail::check_mutable(dst.storage(), dst.layout(), "zero_into"));
  alignas(16) static constexpr unsigned char kZero[16] = {};
  static_assert(sizeof(c128) <= sizeof(kZero));
  detail::fill_strided(ctx, kZero, dst.storage()->data(), dst.layout(), dst.element_size());
  return ok();
}

namespace detail {
void fill_strided(const CpuExecutionContext& ctx, const void* value, void* dst_base, const Layout& dst, int64_t elem) {
  // Stride 0 on every axis: each destination element reads the one value.
  const Layout src{dst.shape, Strides(dst.shape.size(), 0), 0};
  copy_strided(ctx, value, src, dst_base, dst, elem);
}
}  // namespace detail

Result<Tensor> materialize(const CpuExecutionContext& ctx, const Tensor& src,
                           const std::shared_ptr<HostBufferPool>& pool) {
  if (!src.defined()) return usage_error(ErrorCode::kInvalidArgument, "materialize", "tensor handle is null");
  // The copy is the first write (Note [First touch] in engine.h).
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(src.dtype(), src.shape(), pool));
  detail::copy_strided(ctx, src.storage()->data(), src.layout(), out.storage()->data(), out.layout(),
                       src.element_size());
  return out;
}

Result<Tensor> permute_copy(const CpuExecutionContext& ctx, const Tensor& src, Dims perm,
                            const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY(Tensor view, src.permute(perm));
  return materialize(ctx, view, pool);
}

}  // namespace tenferro::cpu
