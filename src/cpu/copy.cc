#include <cstring>

#include "strided_loop.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

// Note [Copy kernel]: the copy runs on the merged axes of Note [Strided loop plan]
// (operand 0 = destination, 1 = source). If the source's fastest axis is also the
// destination's fastest, the inner loop walks both together (memcpy when both are unit
// stride). Otherwise the two fastest axes (one per side) form a 2-D transpose done in
// square tiles that fit in L1, so both sides touch whole cache lines; the remaining
// axes are an odometer split across threads.

namespace {

template <int S>
struct Bytes {
  unsigned char b[S];
};
template <int S>
using Word = std::conditional_t<S == 1, uint8_t,
                                std::conditional_t<S == 2, uint16_t,
                                                   std::conditional_t<S == 4, uint32_t,
                                                                      std::conditional_t<S == 8, uint64_t, Bytes<S>>>>>;

template <class W>
void copy_typed(const CpuExecutionContext& ctx, const char* src_base, const Layout& src, char* dst_base,
                const Layout& dst) {
  constexpr int64_t kElem = sizeof(W);
  detail::StridedLoop<2> loop({&dst, &src}, {kElem, kElem});
  if (loop.empty()) return;
  std::array<char*, 2> bases{dst_base, const_cast<char*>(src_base)};
  const size_t src_fast = loop.fastest_axis(1);
  if (src_fast == 0 || loop.rank() == 1 || std::llabs(loop.axis(src_fast).stride[1]) >= std::llabs(loop.axis(0).stride[1])) {
    const int64_t n = loop.axis(0).extent;
    const int64_t ds = loop.axis(0).stride[0];
    const int64_t ss = loop.axis(0).stride[1];
    loop.run(ctx, bases, 1, n, [&](const std::array<char*, 2>& p) {
      if (ds == kElem && ss == kElem) {
        std::memcpy(p[0], p[1], static_cast<size_t>(n * kElem));
        return;
      }
      char* d = p[0];
      const char* s = p[1];
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<W*>(d + i * ds) = *reinterpret_cast<const W*>(s + i * ss);
      }
    });
    return;
  }
  // 2-D tiled transpose over (axis 0 = destination-fastest, axis 1 = source-fastest).
  loop.move_axis(src_fast, 1);
  const int64_t n0 = loop.axis(0).extent;
  const int64_t n1 = loop.axis(1).extent;
  const int64_t d0 = loop.axis(0).stride[0], s0 = loop.axis(0).stride[1];
  const int64_t d1 = loop.axis(1).stride[0], s1 = loop.axis(1).stride[1];
  constexpr int64_t kTile = kElem >= 16 ? 8 : kElem >= 8 ? 16 : 32;
  loop.run(ctx, bases, 2, n0 * n1, [&](const std::array<char*, 2>& p) {
    char* dbase = p[0];
    const char* sbase = p[1];
    for (int64_t j0 = 0; j0 < n1; j0 += kTile) {
      const int64_t j1 = std::min(n1, j0 + kTile);
      for (int64_t i0 = 0; i0 < n0; i0 += kTile) {
        const int64_t i1 = std::min(n0, i0 + kTile);
        for (int64_t j = j0; j < j1; ++j) {
          char* d = dbase + j * d1;
          const char* s = sbase + j * s1;
          for (int64_t i = i0; i < i1; ++i) {
            *reinterpret_cast<W*>(d + i * d0) = *reinterpret_cast<const W*>(s + i * s0);
          }
        }
      }
    }
  });
}

}  // namespace

namespace detail {

void copy_strided(const CpuExecutionContext& ctx, const void* src_base, const Layout& src, void* dst_base,
                  const Layout& dst, int64_t elem) {
  const char* s = static_cast<const char*>(src_base);
  char* d = static_cast<char*>(dst_base);
  switch (elem) {
    case 1: return copy_typed<Word<1>>(ctx, s, src, d, dst);
    case 2: return copy_typed<Word<2>>(ctx, s, src, d, dst);
    case 4: return copy_typed<Word<4>>(ctx, s, src, d, dst);
    case 8: return copy_typed<Word<8>>(ctx, s, src, d, dst);
    default: return copy_typed<Word<16>>(ctx, s, src, d, dst);
  }
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

Result<Tensor> materialize(const CpuExecutionContext& ctx, const Tensor& src,
                           const std::shared_ptr<HostBufferPool>& pool) {
  if (!src.defined()) return usage_error(ErrorCode::kInvalidArgument, "materialize", "tensor handle is null");
  // Note: zeros() touches the memory once; an uninitialized pooled lease would avoid
  // that (kept for the buffer-lease work of the engine).
  TENFERRO_TRY(Tensor out, Tensor::zeros(src.dtype(), src.shape(), pool));
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
