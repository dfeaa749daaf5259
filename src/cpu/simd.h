// Private: the f64 and f32 vectors of one ISA level, for the per-ISA kernel files of the
// CPU engine (Note [ISA kernels] in gemm_kernels.cc). Included inside a file's ISA
// region (after TENFERRO_ISA_BEGIN and every shared header), once per level:
// everything here lives in namespace detail::TENFERRO_ISA_NS and is compiled with the
// level's target attributes (the file includes <immintrin.h> and <cstdint> before its
// region, so no shared header is compiled for the level). Simd<T> has the vector type
// V, the lane mask M, kLanes and the operations the kernels use (sum: the lanes added;
// swap: lanes 2i and 2i + 1 exchanged; pair(e, o): e in the even lanes, o in the odd
// ones, for interleaved complex data); AVX-512: 8 f64 / 16 f32 lanes with native masks;
// AVX2: 4 / 8 lanes, masks as integer vectors (Simd512 and Simd256; Simd<T> is the
// level's full vector, and AVX-512 files may use Simd256 for half-width work). Nothing at
// the scalar level. `vec` is Simd<double>; transpose4 transposes a 4 x 4 block of
// doubles in 256-bit registers.
#pragma once

#if !defined(TENFERRO_ISA_LEVEL) || !defined(TENFERRO_ISA_NS)
#error "simd.h belongs inside a per-ISA kernel file's ISA region"
#endif

#if TENFERRO_ISA_LEVEL >= 1
namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

template <class T>
struct Simd512;  // AVX-512 (level 2 only)
template <class T>
struct Simd256;  // AVX2 (both levels)

#if TENFERRO_ISA_LEVEL >= 2
// GCC 12's 512-bit lane-shuffle intrinsics expand through an undefined merge operand,
// which -W(maybe-)uninitialized reports wherever sum() is inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
template <>
struct Simd512<double> {
  static constexpr int64_t kLanes = 8;
  using V = __m512d;
  using M = __mmask8;
  static V zero() { return _mm512_setzero_pd(); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static V load(const double* p, M m) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static void store(double* p, V v, M m) { _mm512_mask_storeu_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V swap(V a) { return _mm512_permute_pd(a, 0x55); }  // lanes 2i and 2i+1 exchanged
  static V pair(double e, double o) { return _mm512_setr_pd(e, o, e, o, e, o, e, o); }
  static double sum(V v) {
    V t = _mm512_add_pd(v, _mm512_shuffle_f64x2(v, v, 0x4e));
    t = _mm512_add_pd(t, _mm512_shuffle_f64x2(t, t, 0xb1));
    return _mm512_cvtsd_f64(_mm512_add_pd(t, _mm512_permute_pd(t, 0x55)));
  }
  // Lanes below n set.
  static M mask(int64_t n) { return static_cast<M>(n <= 0 ? 0u : n >= 8 ? 0xffu : (1u << n) - 1u); }
};
template <>
struct Simd512<float> {
  static constexpr int64_t kLanes = 16;
  using V = __m512;
  using M = __mmask16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, V v, M m) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V swap(V a) { return _mm512_permute_ps(a, 0xb1); }
  static V pair(float e, float o) { return _mm512_setr_ps(e, o, e, o, e, o, e, o, e, o, e, o, e, o, e, o); }
  static float sum(V v) {
    V t = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e));
    t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, 0xb1));
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4e));
    return _mm512_cvtss_f32(_mm512_add_ps(t, _mm512_permute_ps(t, 0xb1)));
  }
  static M mask(int64_t n) { return static_cast<M>(n <= 0 ? 0u : n >= 16 ? 0xffffu : (1u << n) - 1u); }
};
#pragma GCC diagnostic pop
#endif
template <>
struct Simd256<double> {
  static constexpr int64_t kLanes = 4;
  using V = __m256d;
  using M = __m256i;
  static V zero() { return _mm256_setzero_pd(); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V load(const double* p, M m) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static void store(double* p, V v, M m) { _mm256_maskstore_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V swap(V a) { return _mm256_permute_pd(a, 0x5); }
  static V pair(double e, double o) { return _mm256_setr_pd(e, o, e, o); }
  static double sum(V v) {
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
  // Lanes below n set.
  static M mask(int64_t n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_set_epi64x(3, 2, 1, 0)); }
};
template <>
struct Simd256<float> {
  static constexpr int64_t kLanes = 8;
  using V = __m256;
  using M = __m256i;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p, M m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, V v, M m) { _mm256_maskstore_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V swap(V a) { return _mm256_permute_ps(a, 0xb1); }
  static V pair(float e, float o) { return _mm256_setr_ps(e, o, e, o, e, o, e, o); }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static M mask(int64_t n) {
    const int32_t k = n <= 0 ? 0 : n >= 8 ? 8 : static_cast<int32_t>(n);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
  }
};

/// The level's full vectors.
#if TENFERRO_ISA_LEVEL >= 2
template <class T>
using Simd = Simd512<T>;
#else
template <class T>
using Simd = Simd256<T>;
#endif

/// The f64 vector of the level (the GEMM kernels' name for it).
using vec = Simd<double>;

/// Transposes the 4 x 4 block of doubles held in four 256-bit registers in place (row r
/// of the block in r<r>), for the thin and streamed GEMM kernels at either level.
inline void transpose4(__m256d& r0, __m256d& r1, __m256d& r2, __m256d& r3) {
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  r0 = _mm256_permute2f128_pd(t0, t2, 0x20);
  r1 = _mm256_permute2f128_pd(t1, t3, 0x20);
  r2 = _mm256_permute2f128_pd(t0, t2, 0x31);
  r3 = _mm256_permute2f128_pd(t1, t3, 0x31);
}

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
#endif
