#pragma once
// Private: single-matrix GEMM providers with general strides.
//
// C[m, n] = alpha * sum_k op(A)[m, k] * op(B)[k, n] + beta * C[m, n], where op conjugates
// when asked. Strides are in elements; A is M x K, B is K x N, C is M x N. Each provider
// reports whether it can take the given strides (kUnsupported-like false) so the
// caller packs instead; none of them allocates.

#include <cstdint>
#include <string>

#include "tenferro/cpu/caps.h"
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
  /// Optional hint: A, B and C of the product that runs next on this thread (same sizes
  /// and strides). The small f64 kernel prefetches them while it computes this one (Note
  /// [Small-product prefetch] in gemm_kernels.cc); every other provider ignores them. Never
  /// dereferenced, so a stale or null pointer is harmless.
  const T* next_a = nullptr;
  const T* next_b = nullptr;
  const T* next_c = nullptr;
};

/// The same product as C^T = B^T A^T (m and n, A and B, and C's strides swapped).
template <class T>
GemmArgs<T> transposed(const GemmArgs<T>& g) {
  GemmArgs<T> t{g.n, g.m, g.k, g.alpha, g.b, g.csb, g.rsb, g.conj_b, g.a, g.csa, g.rsa, g.conj_a, g.beta, g.c, g.csc, g.rsc};
  t.next_a = g.next_b;
  t.next_b = g.next_a;
  t.next_c = g.next_c;
  return t;
}

/// OpenBLAS (cblas): needs a unit stride in one dimension of every operand. Runs on
/// OpenBLAS's own threads (count set from `threads`; Note [OpenBLAS threads]).
template <class T>
bool gemm_openblas(const GemmArgs<T>& g, int threads);

/// BLIS typed API with general row/column strides (positive strides only), one thread
/// per call (the engine's workers provide the parallelism).
template <class T>
bool gemm_blis(const GemmArgs<T>& g);

/// Whether an r x c operand with element strides (rs, cs) has the column-major BLAS form
/// 'N' (`transposed` false: element (i, p) at i + p * ld) or 'T' (element at i * ld + p);
/// sets the leading dimension. Extent-1 dimensions accept any stride.
bool blas_form(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool transposed, int64_t* ld);

/// Whether gemm_openblas takes these strides (every operand in some BLAS form; a
/// transposed C is computed as C^T = B^T A^T).
template <class T>
bool openblas_accepts(const GemmArgs<T>& g);

/// Whether gemm_batch_fortran takes these strides: C in 'N' form, and a conjugated
/// complex operand in 'T' form (Fortran BLAS has no conjugate-without-transpose).
template <class T>
bool fortran_batch_accepts(const GemmArgs<T>& g);

/// One whole-batch vendor call (BLIS's BLAS-compatible ?gemm_batch_, one group of `count`
/// products sharing the sizes, strides, flags and scalars of `g`; the pointers of item i
/// are a[i], b[i], c[i]). Threads: the vendor's global setting (BLIS_NUM_THREADS; one by
/// default); no tenferro fan-out encloses it. False when !fortran_batch_accepts(g) or
/// for integer dtypes.
template <class T>
bool gemm_batch_fortran(const GemmArgs<T>& g, int64_t count, const T* const* a, const T* const* b, T* const* c);

/// Columns per register block of the small f64 kernel (a worker's share of a product
/// split over columns is a multiple of it).
inline constexpr int64_t kSmallCols = 6;
/// Largest A (elements) for which the small f64 kernel runs its column blocks outermost
/// (A stays in L2 while C is written column block by column block).
inline constexpr int64_t kSmallColumnsMaxA = 32768;
/// Longest contraction gemm_naive gives the small f64 kernel (Note [Tiny products] in
/// dot_general.cc).
inline constexpr int64_t kSmallMaxK = 256;

/// Plain loops for every dtype (integers, tiny products, and the test oracle's peer),
/// with the f64 small, thin and dot-product kernels of the ISA level `isa` (Note [ISA
/// kernels] in gemm_kernels.cc).
template <class T>
void gemm_naive(IsaLevel isa, const GemmArgs<T>& g);

/// A contraction walked as up to kMaxKLevels nested loops, innermost first: level l has
/// `extent[l]` steps of `sa[l]` elements in A and `sb[l]` in B (Note [Short-side
/// products with a strided contraction] in gemm.cc).
inline constexpr int kMaxKLevels = 4;
struct KLevels {
  int count = 0;
  int64_t extent[kMaxKLevels] = {};
  int64_t sa[kMaxKLevels] = {};
  int64_t sb[kMaxKLevels] = {};
};

/// Largest m and n short_sides_f64 takes.
inline constexpr int64_t kShortSideMax = 32;

/// C = alpha A B + beta C for f64 with m, n <= kShortSideMax: A's element (i, k) at
/// a[row_off[i] + ka] (m row offsets: A's rows need not share a stride), B's element
/// (k, j) at b[kb + j] (B's rows contiguous), where ka and kb walk `k`'s levels; C any
/// strides. No packing, no allocation. The vector kernel exists at kAvx2 and above
/// (`short_sides_available`); below, plain loops.
void short_sides_f64(IsaLevel isa, int64_t m, int64_t n, double alpha, const double* a, const int64_t* row_off,
                     const double* b, const KLevels& k, double beta, double* c, int64_t rsc, int64_t csc);
inline bool short_sides_available(IsaLevel isa) { return isa >= IsaLevel::kAvx2; }

/// Blocks of the blocked GEMM (Note [Blocked AVX-512 GEMM] in gemm_blocked.cc), per
/// element type: 512-bit vectors of kLanes elements; register blocks of kMR rows (kVecs
/// = 3 vectors: 24 rows of f64, 48 of f32) by kNR = 8 columns (24 accumulators);
/// contraction slices of kK, A row blocks of kM (multiples of kMR), B column blocks of
/// kN. kK is 2 KiB of contraction for either type (256 f64, 512 f32): a B micro-panel
/// (kNR x kK) then takes 16 KiB of L1 for both, and each f32 register block loads and
/// stores its C tile half as often as with 256 (f32 n = 2048 at one thread 2-4 %
/// faster, docs/benchmarks.md "dot_general against the peers at their best").
template <class T>
struct BlockedShape {
  static constexpr int64_t kLanes = 64 / static_cast<int64_t>(sizeof(T));
  static constexpr int kVecs = 3;
  static constexpr int64_t kMR = kVecs * kLanes, kNR = 8;
  static constexpr int64_t kK = sizeof(T) == 4 ? 512 : 256, kM = 8 * kMR, kN = 1024 / kNR * kNR;  // whole panels
};
/// Rows of a packed A block and columns of a packed B block for an m x n product.
template <class T>
int64_t blocked_rows(int64_t m) {
  using S = BlockedShape<T>;
  return m < S::kM ? (m + S::kMR - 1) / S::kMR * S::kMR : S::kM;
}
template <class T>
int64_t blocked_cols(int64_t n) {
  using S = BlockedShape<T>;
  return n < S::kN ? (n + S::kNR - 1) / S::kNR * S::kNR : S::kN;
}
/// Elements of workspace one gemm_blocked call on an m x n x k product (or any part of
/// it) needs: a packed B block and a packed A block (either orientation: a row-major C
/// runs as C^T = B^T A^T).
template <class T>
int64_t blocked_work(int64_t m, int64_t n, int64_t k) {
  const int64_t kc = k < BlockedShape<T>::kK ? k : BlockedShape<T>::kK;
  const int64_t a = blocked_rows<T>(m) + blocked_cols<T>(n), b = blocked_rows<T>(n) + blocked_cols<T>(m);
  return kc * (a > b ? a : b);
}

/// Whether the blocked GEMM has its AVX-512 kernel at ISA level `isa`.
inline bool blocked_available(IsaLevel isa) { return isa >= IsaLevel::kAvx512; }

/// C = alpha A B + beta C for f64 / f32 with C column-major (g.rsc == 1) or row-major
/// (g.csc == 1), A and B any strides; one thread; `work` holds blocked_work<T>(m, n, k)
/// elements (64-byte aligned) owned by the caller. Returns false (nothing written)
/// below kAvx512 or where C has neither form.
bool gemm_blocked(IsaLevel isa, const GemmArgs<double>& g, double* work);
bool gemm_blocked(IsaLevel isa, const GemmArgs<float>& g, float* work);

/// Largest n streamed_f64 takes.
inline constexpr int64_t kStreamMaxN = 32;
/// Rows of streamed_f64's register slices (callers split m in multiples): 16 with
/// AVX-512 (Note [Streamed slices on AVX-512]), else 8.
inline int64_t stream_slice_rows(IsaLevel isa) { return isa >= IsaLevel::kAvx512 ? 16 : 8; }

/// C = alpha A B + beta C for f64 with C at any strides (fastest column-major), A column-major
/// (g.rsa == 1) or row-major (g.csa == 1), B any strides and g.n <= kStreamMaxN: a tall
/// product against a narrow B, A read once in memory order (Note [Streamed tall
/// products] in gemm_streamed.cc). No packing, no allocation (a stack tile); one thread
/// (callers split m). With A row-major and B's rows contiguous, on AVX-512, C's rows stay
/// in registers instead (Note [Streamed row-major products]; see streamed_wants_b_rows).
/// Below kAvx2, plain loops.
void streamed_f64(IsaLevel isa, const GemmArgs<double>& g);

/// Whether streamed_f64 keeps C's rows in registers (Note [Streamed row-major products]
/// in gemm_streamed.cc) for A's strides (rsa, csa) and B's column stride csb: on AVX-512,
/// A row-major, and B's rows contiguous or packed by the caller (`b_packable`). The one
/// test behind the kernel's form, the caller's packing and the planner's reason.
inline bool streamed_rows_form(IsaLevel isa, int64_t rsa, int64_t csa, int64_t csb, bool b_packable) {
  return isa >= IsaLevel::kAvx512 && rsa != 1 && csa == 1 && (csb == 1 || b_packable);
}
/// Whether streamed_f64 runs `g` faster with B's rows contiguous (csb == 1) than as it
/// is: the rows form once B is packed, B's rows not contiguous yet. Callers then pack B
/// with pack_b_rows.
bool streamed_wants_b_rows(IsaLevel isa, const GemmArgs<double>& g);
/// Elements pack_b_rows writes for a k x n B.
inline int64_t b_rows_elems(int64_t k, int64_t n) { return k * ((n + 7) / 8 * 8); }
/// Copies B (g.k x g.n at rsb, csb) to `dst` as rows of n rounded up to 8 (zero-padded)
/// and returns g reading B from there (rsb = that width, csb = 1). `dst` holds
/// b_rows_elems(g.k, g.n) elements. One thread.
GemmArgs<double> pack_b_rows(const GemmArgs<double>& g, double* dst);

/// Rows of the streamed-output kernel's tiles (a worker's share of rows is a multiple).
inline constexpr int64_t kOutTileRows = 128;
/// Longest contraction streamed_out_f64 takes (its stack copy of A's row chunk).
inline constexpr int64_t kOutMaxK = 64;

/// C = alpha A B for f64 with A and C column-major (g.rsa == 1, g.rsc == 1), B any
/// strides, g.k <= kOutMaxK; beta is ignored (C is overwritten). C is written once with
/// non-temporal stores (Note [Streamed-output products] in gemm_kernels.cc); `columns_outer`
/// when A is the operand that stays in cache. No allocation (a stack tile); one thread
/// (callers split m or n in multiples of kOutTileRows / kSmallCols).
void streamed_out_f64(IsaLevel isa, const GemmArgs<double>& g, bool columns_outer);

/// Vector lanes of batch_lanes<T> at ISA level `isa` (a worker's share of the lanes is
/// a multiple of it): 64 bytes of T with AVX-512 and at the scalar level, 32 with AVX2.
template <class T>
inline int64_t lane_width(IsaLevel isa) {
  return (isa == IsaLevel::kAvx2 ? 32 : 64) / static_cast<int64_t>(sizeof(T));
}

/// A batch of `lanes` products whose items lie one element apart in A, B and C (item w
/// of the batch: A at g.a + w, B at g.b + w, C at g.c + w; the strides of g are those of
/// one product): C_w = alpha A_w B_w + beta C_w for every w, T = double or float, any
/// strides for the products' rows, columns and contraction (Note [Batch-lane products]
/// in gemm_lanes.cc). `columns_outer`: column blocks outermost (A's lane slice re-read
/// from cache), else row blocks outermost (B's). No allocation (a stack block); one
/// thread (callers split the lanes in multiples of lane_width). Below kAvx2, plain loops.
template <class T>
void batch_lanes(IsaLevel isa, const GemmArgs<T>& g, int64_t lanes, bool columns_outer);

/// Y = alpha op(A) op(X) + beta Y for f64, f32, c128 and c64 (op: the conj flags), X = B with g.n columns (one vector,
/// or a few: Note [Few-vector products]; B and C at any strides), A with rows contiguous (g.csa == 1: dot products,
/// four rows at a time) or columns contiguous (g.rsa == 1: scaled columns into a stack tile of y), read once in memory
/// order (Note [Matrix-vector products] in gemm_matvec.cc). `one_run`: A's rows (columns) are read one at a time (the
/// planner's choice for short runs of an A beyond the caches). No packing, no allocation (stack buffers); one thread
/// (callers split the rows). Other strides, and levels below kAvx2: plain loops.
template <class T>
void matvec(IsaLevel isa, const GemmArgs<T>& g, bool one_run);
/// Rows (row form) or columns (column form) of A of at most this many bytes that
/// matvec reads one at a time when A lies beyond the caches (Note [Matrix-vector
/// products]).
inline constexpr int64_t kMatVecShortRunBytes = 2048;
/// The most vectors (columns of X) a matvec product is planned with (Note [Few-vector products]).
inline constexpr int64_t kMatVecMaxVectors = 7;
/// Whether matvec has its vector forms at ISA level `isa`.
inline bool matvec_available(IsaLevel isa) { return isa >= IsaLevel::kAvx2; }

/// C = alpha op(A) op(B) + beta C for c128 and c64 with A and C column-major (g.rsa == 1,
/// g.rsc == 1; columns at any stride), B any strides: the sums kept in registers over the
/// contraction, A and C read and written in their interleaved layout (Note [Short complex
/// products] in gemm_complex.cc); an A of at most two vectors of rows and a short
/// contraction held in registers (Note [Narrow complex products]), there also with C's rows
/// at any stride. No allocation (stack blocks of B); one thread (callers split the rows).
/// Other strides, and levels below kAvx2: plain loops.
template <class T>
void complex_short(IsaLevel isa, const GemmArgs<T>& g);
/// Whether complex_short has its vector form at ISA level `isa`.
inline bool complex_short_available(IsaLevel isa) { return isa >= IsaLevel::kAvx2; }
/// Whether an A of m rows and k columns is held in registers by the narrow kernels
/// (narrow, and complex_short's Note [Narrow complex products]): at most two vectors of
/// rows (`rows_per_vector` elements each) and 8 vector-steps.
inline bool narrow_takes(int64_t m, int64_t k, int64_t rows_per_vector) {
  const int64_t nv = (m + rows_per_vector - 1) / rows_per_vector;
  return (nv == 1 && k <= 8) || (nv == 2 && k <= 4);
}
/// Rows of C per vector in the narrow kernel for T at ISA level `isa` (64 bytes of T at
/// AVX-512, 32 at AVX2).
template <class T>
inline int64_t narrow_rows_per_vector(IsaLevel isa) {
  return (isa >= IsaLevel::kAvx512 ? 64 : 32) / static_cast<int64_t>(sizeof(T));
}
/// C = alpha A B + beta C for f64 and f32 with C's rows contiguous (g.rsc == 1) and A
/// small (narrow_takes(g.m, g.k, narrow_rows_per_vector<T>(isa))), A and B at any
/// strides: alpha A held in registers, B's columns read once in order (Note [Narrow
/// products] in gemm_narrow.cc). No allocation (a stack tile); one thread (callers split
/// the columns). Other shapes, and levels below kAvx2: plain loops.
template <class T>
void narrow(IsaLevel isa, const GemmArgs<T>& g);
/// Whether narrow has its vector form at ISA level `isa`.
inline bool narrow_available(IsaLevel isa) { return isa >= IsaLevel::kAvx2; }

// The per-ISA copies of the kernels above (gemm_kernels.cc, gemm_streamed.cc,
// gemm_blocked.cc, gemm_lanes.cc, gemm_matvec.cc, gemm_complex.cc, gemm_narrow.cc); callers use the dispatching
// functions, which take the level.
#define TENFERRO_DECLARE_GEMM_KERNELS(ns)                                                                            \
  namespace ns {                                                                                                     \
  template <class T>                                                                                                 \
  void gemm_naive(const GemmArgs<T>& g);                                                                             \
  void short_sides_f64(int64_t m, int64_t n, double alpha, const double* a, const int64_t* row_off, const double* b, \
                       const KLevels& k, double beta, double* c, int64_t rsc, int64_t csc);                          \
  bool gemm_blocked_f64(const GemmArgs<double>& g, double* work);                                                    \
  bool gemm_blocked_f32(const GemmArgs<float>& g, float* work);                                                      \
  void streamed_f64(const GemmArgs<double>& g);                                                                      \
  void streamed_out_f64(const GemmArgs<double>& g, bool columns_outer);                                              \
  template <class T>                                                                                                 \
  void batch_lanes(const GemmArgs<T>& g, int64_t lanes, bool columns_outer);                                         \
  template <class T>                                                                                                 \
  void matvec(const GemmArgs<T>& g, bool one_run);                                                                   \
  template <class T>                                                                                                 \
  void complex_short(const GemmArgs<T>& g);                                                                          \
  template <class T>                                                                                                 \
  void narrow(const GemmArgs<T>& g);                                                                                 \
  }
TENFERRO_DECLARE_GEMM_KERNELS(scalar)
TENFERRO_DECLARE_GEMM_KERNELS(avx2)
TENFERRO_DECLARE_GEMM_KERNELS(avx512)
#undef TENFERRO_DECLARE_GEMM_KERNELS

/// Library path of the shared object that defines `symbol_address` (tests check that
/// each provider really calls its library).
std::string library_of(const void* symbol_address);
const void* openblas_symbol();
const void* blis_symbol();
const void* blis_batch_symbol();

}  // namespace tenferro::cpu::detail
