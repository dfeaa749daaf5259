#pragma once
// Private: single-matrix GEMM providers with general strides.
//
// C[m, n] = alpha * sum_k op(A)[m, k] * op(B)[k, n] + beta * C[m, n], where op conjugates
// when asked. Strides are in elements; A is M x K, B is K x N, C is M x N. Each provider
// reports whether it can take the given strides (kUnsupported-like false) so the
// caller packs instead; none of them allocates.

#include <cstdint>

#include "tenferro/cpu/dot_general.h"

namespace tenferro::cpu::detail {

template <class T>
struct GemmArgs {
  int64_t m, n, k;
  T alpha;
  const T* a;
  int64_t rsa, csa;
  bool conj_a;
  const T* b;
  int64_t rsb, csb;
  bool conj_b;
  T beta;
  T* c;
  int64_t rsc, csc;
};

/// OpenBLAS (cblas): needs a unit stride in one dimension of every operand. Runs on
/// OpenBLAS's own threads (count set from `threads`; Note [OpenBLAS threads]).
template <class T>
bool gemm_openblas(const GemmArgs<T>& g, int threads);

/// BLIS typed API with general row/column strides (positive strides only), one thread
/// per call (the engine's workers provide the parallelism).
template <class T>
bool gemm_blis(const GemmArgs<T>& g);

/// Plain loops for every dtype (integers, tiny products, and the test oracle's peer).
template <class T>
void gemm_naive(const GemmArgs<T>& g);

/// Library path of the shared object that defines `symbol_address` (tests check that
/// each provider really calls its library).
std::string library_of(const void* symbol_address);
const void* openblas_symbol();
const void* blis_symbol();

}  // namespace tenferro::cpu::detail
