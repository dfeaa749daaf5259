#pragma once
// Private: the item-lane kernels for batches of small real matrices (Note [Item lanes] in
// small_lanes.h), one copy per ISA level, and their dispatch.
//
// Note [Lane kernels per ISA]: the lane kernels are loops over eight interleaved items
// that the compiler vectorizes; how wide depends on the instructions it may use. A
// portable build targets the baseline (x86-64-v2: SSE), where those loops run at a
// quarter of their AVX-512 speed (eigh and cholesky of 10^4 8 x 8 items took twice as
// long as in a -march=native build). So lanes_isa.cc is compiled three times
// (tenferro_isa_sources, as the CPU engine's GEMM and copy kernels: Note [ISA kernels]),
// each copy in its own namespace detail::{scalar,avx2,avx512}, and every entry point
// below picks the copy for cpu::kernel_isa(ctx.caps()) — never above what the machine
// runs, and capped by TENFERRO_MAX_ISA / CpuEngineConfig::max_isa like every SIMD kernel.

#include <cstdint>

#include "common.h"
#include "tenferro/core/function_ref.h"
#include "tenferro/cpu/caps.h"

namespace tenferro::linalg::detail {

#define TENFERRO_LANES_DECLARE(ns)                                                                                   \
  namespace ns {                                                                                                     \
  template <class T>                                                                                                 \
  void svd_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool values,            \
                       Tensor& s_out, Tensor* u_out, Tensor* vh_out, Failures& failures);                            \
  template <class T>                                                                                                 \
  void eigh_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool lower,           \
                        Tensor& values_out, Tensor* vectors_out, Failures& failures);                                \
  template <class T>                                                                                                 \
  void qr_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, Tensor* q_out,          \
                      Tensor& r_out);                                                                                \
  template <class T>                                                                                                 \
  void cholesky_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n, bool lower, Tensor& out, \
                      Failures& failures);                                                                           \
  template <class T>                                                                                                 \
  void solve_items_lanes(const Tensor& a, const Tensor* rhs, const Batch& batch, int64_t b, int64_t e, int64_t n,    \
                         int64_t k, Tensor& out, Failures& failures);                                                \
  template <class T>                                                                                                 \
  void det_items_lanes(const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,                         \
                       FunctionRef<void(int64_t item, const T* diag_stride_lanes, bool odd)> emit);                  \
  }
TENFERRO_LANES_DECLARE(scalar)
TENFERRO_LANES_DECLARE(avx2)
TENFERRO_LANES_DECLARE(avx512)
#undef TENFERRO_LANES_DECLARE

// The copy of `fn` for `isa` (Note [Lane kernels per ISA]).
#define TENFERRO_LANES_DISPATCH(isa, fn, ...)               \
  switch (isa) {                                            \
    case cpu::IsaLevel::kAvx512: return avx512::fn(__VA_ARGS__); \
    case cpu::IsaLevel::kAvx2: return avx2::fn(__VA_ARGS__);     \
    case cpu::IsaLevel::kScalar: break;                     \
  }                                                         \
  return scalar::fn(__VA_ARGS__)

template <class T>
void svd_items_lanes(cpu::IsaLevel isa, const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,
                     bool values, Tensor& s_out, Tensor* u_out, Tensor* vh_out, Failures& failures) {
  TENFERRO_LANES_DISPATCH(isa, svd_items_lanes<T>, a, batch, b, e, n, values, s_out, u_out, vh_out, failures);
}
template <class T>
void eigh_items_lanes(cpu::IsaLevel isa, const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,
                      bool lower, Tensor& values_out, Tensor* vectors_out, Failures& failures) {
  TENFERRO_LANES_DISPATCH(isa, eigh_items_lanes<T>, a, batch, b, e, n, lower, values_out, vectors_out, failures);
}
template <class T>
void qr_items_lanes(cpu::IsaLevel isa, const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,
                    Tensor* q_out, Tensor& r_out) {
  TENFERRO_LANES_DISPATCH(isa, qr_items_lanes<T>, a, batch, b, e, n, q_out, r_out);
}
template <class T>
void cholesky_lanes(cpu::IsaLevel isa, const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,
                    bool lower, Tensor& out, Failures& failures) {
  TENFERRO_LANES_DISPATCH(isa, cholesky_lanes<T>, a, batch, b, e, n, lower, out, failures);
}
template <class T>
void solve_items_lanes(cpu::IsaLevel isa, const Tensor& a, const Tensor* rhs, const Batch& batch, int64_t b,
                       int64_t e, int64_t n, int64_t k, Tensor& out, Failures& failures) {
  TENFERRO_LANES_DISPATCH(isa, solve_items_lanes<T>, a, rhs, batch, b, e, n, k, out, failures);
}
template <class T>
void det_items_lanes(cpu::IsaLevel isa, const Tensor& a, const Batch& batch, int64_t b, int64_t e, int64_t n,
                     FunctionRef<void(int64_t item, const T* diag_stride_lanes, bool odd)> emit) {
  TENFERRO_LANES_DISPATCH(isa, det_items_lanes<T>, a, batch, b, e, n, emit);
}
#undef TENFERRO_LANES_DISPATCH

}  // namespace tenferro::linalg::detail
