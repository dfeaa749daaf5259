// Private: the f64 vector of one ISA level, for the per-ISA kernel files of the CPU
// engine (Note [ISA kernels] in gemm_kernels.cc). Included inside a file's ISA region
// (after TENFERRO_ISA_BEGIN and every shared header), once per level: everything here
// lives in namespace detail::TENFERRO_ISA_NS::vec and is compiled with the level's
// target attributes (the file includes <immintrin.h> and <cstdint> before its region,
// so no shared header is compiled for the level). AVX-512: 8 lanes with native masks;
// AVX2: 4 lanes, masks as integer vectors. Nothing at the scalar level.
#pragma once

#if !defined(TENFERRO_ISA_LEVEL) || !defined(TENFERRO_ISA_NS)
#error "simd_f64.h belongs inside a per-ISA kernel file's ISA region"
#endif

#if TENFERRO_ISA_LEVEL >= 1
namespace tenferro::cpu::detail::TENFERRO_ISA_NS::vec {
#if TENFERRO_ISA_LEVEL >= 2
constexpr int64_t kLanes = 8;
using V = __m512d;
using M = __mmask8;
inline V zero() { return _mm512_setzero_pd(); }
inline V set1(double x) { return _mm512_set1_pd(x); }
inline V load(const double* p) { return _mm512_loadu_pd(p); }
inline V load(const double* p, M m) { return _mm512_maskz_loadu_pd(m, p); }
inline void store(double* p, V v) { _mm512_storeu_pd(p, v); }
inline void store(double* p, V v, M m) { _mm512_mask_storeu_pd(p, m, v); }
inline V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
inline V mul(V a, V b) { return _mm512_mul_pd(a, b); }
// Lanes below n set.
inline M mask(int64_t n) { return static_cast<M>(n <= 0 ? 0u : n >= 8 ? 0xffu : (1u << n) - 1u); }
#else
constexpr int64_t kLanes = 4;
using V = __m256d;
using M = __m256i;
inline V zero() { return _mm256_setzero_pd(); }
inline V set1(double x) { return _mm256_set1_pd(x); }
inline V load(const double* p) { return _mm256_loadu_pd(p); }
inline V load(const double* p, M m) { return _mm256_maskload_pd(p, m); }
inline void store(double* p, V v) { _mm256_storeu_pd(p, v); }
inline void store(double* p, V v, M m) { _mm256_maskstore_pd(p, m, v); }
inline V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
inline V mul(V a, V b) { return _mm256_mul_pd(a, b); }
// Lanes below n set.
inline M mask(int64_t n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_set_epi64x(3, 2, 1, 0)); }
#endif
}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS::vec
#endif
