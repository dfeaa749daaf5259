#pragma once
// Private: what every linalg operation shares: dtype dispatch, operand checks, batch
// items (offsets, broadcasting), strided matrix copies, per-lane scratch, the lane
// driver that executes a Route, and item-failure collection.

#include <algorithm>
#include <array>
#include <climits>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lapack.h"
#include "tenferro/core/small_vector.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/openblas.h"
#include "tenferro/linalg/linalg.h"
#include "tenferro/tensor/buffer_pool.h"

namespace tenferro::linalg::detail {

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kC64;
  return DType::kC128;
}

/// The real dtype of a floating dtype (f32 for c64, f64 for c128).
DType real_dtype(DType dt) noexcept;
/// The complex dtype of the same precision.
DType complex_dtype(DType dt) noexcept;

/// Calls f(T{}) for the four floating dtypes; kDTypeMismatch otherwise.
template <class F>
auto dispatch(DType dt, const char* op, F&& f) -> decltype(f(double{})) {
  switch (dt) {
    case DType::kF32: return f(float{});
    case DType::kF64: return f(double{});
    case DType::kC64: return f(std::complex<float>{});
    case DType::kC128: return f(std::complex<double>{});
    default: break;
  }
  return usage_error(ErrorCode::kDTypeMismatch, op,
                     std::string("linear algebra needs f32, f64, c64 or c128, got ") + std::string(dtype_name(dt)));
}

/// Checks a LAPACK dtype (f32, f64, c64, c128), rank >= 2 (and square when asked) and
/// that extents fit LAPACK's integers; errors name `op`.
Result<void> check_matrix(const Tensor& a, const char* op, bool square);

/// The entries of an item an operation reads: all of them, or (Hermitian eigenproblems)
/// one triangle with the diagonal.
enum class Part { kAll, kLower, kUpper };

/// Note [Non-finite input]: LAPACK's SVD, eigenvalue and least-squares drivers scale
/// their input by its norm, and a NaN norm makes the scaling routine report an illegal
/// argument through xerbla (which prints on stderr, or, where a process has replaced
/// xerbla, as numpy does, raises an error behind the caller's back), while geev's
/// balancing hands its QR iteration an invalid range; the small kernels returned numbers
/// for a matrix holding a NaN (eigh of 8 x 8). svd, truncated_svd, pinv, eig, eigvals,
/// eigh, eigvalsh and lstsq therefore reject a NaN or an infinity in the entries they
/// read before anything runs, on every route (small items too, so the answer does not
/// depend on the size), as numpy's eig and torch's svd do; the scan reads each input once.
/// kInvalidArgument naming the first batch item of `a` (rank >= 2, a LAPACK dtype) that
/// holds a NaN or an infinity among the entries `part` names (Note [Non-finite input]);
/// `what` names the operand.
Result<void> check_finite(const Tensor& a, const char* op, const char* what, Part part = Part::kAll);

/// Note [Safe-range scaling]: the small kernels (Jacobi SVD and eigh, Householder QR of
/// small items) and the staged SVD and eigh (gebrd + bdsdc, hetrd + stedc) assume entries
/// whose squares and norms neither overflow nor underflow: with entries near 2^1021 the
/// small SVD returned infinities, the small QR NaNs and the staged eigh's vectors NaNs,
/// bdsdc reported an illegal argument through xerbla or did not return, and subnormal
/// entries lost most digits (eigh 4 x 4: 0.66 relative error); the randomized truncated
/// SVD's projection overflowed ("did not converge"), pinv of subnormal matrices was NaN
/// (reciprocals of subnormal singular values overflow) and so was slogdet (LU pivots).
/// LAPACK's drivers (gesdd, heevd) scale such a matrix into the safe range first; svd,
/// truncated_svd, eigh, eigvalsh, qr, qr_pivoted, pinv, det and slogdet do the same on
/// every route: an item whose largest magnitude lies outside [sqrt(safe min) / eps, its
/// reciprocal] is multiplied by the power of two that brings it to about 1 (ldexp: exact,
/// subnormal entries included), and the results are scaled back by their power of the
/// input's scale (singular values, eigenvalues and R by 2^-e, the pseudo-inverse by 2^e,
/// the determinant by 2^(-n e), log|det| shifted by -n e log 2), to zero or infinity where
/// the exact result leaves the range, as LAPACK's do; U, V, Q and eigenvectors do not
/// change. Items in range (every item, in practice) cost one read of the input.
struct SafeRange {
  std::vector<int> exponent;  // per item: the power of two it was multiplied by (0: in range); empty when every item is
  Tensor scaled;              // a compact copy of the input, scaled; undefined when no item was
  /// The tensor to compute on: the scaled copy, or `a` itself when every item is in range.
  const Tensor& input(const Tensor& a) const { return scaled.defined() ? scaled : a; }
};
/// Scans the items of `a` (rank >= 2, a LAPACK dtype; only the entries `part` names) and
/// scales the out-of-range ones (Note [Safe-range scaling]), in the same read as
/// check_finite's when `op` is given: a non-finite entry is then check_finite's error
/// (`what` names the operand); without `op`, items with a non-finite entry keep exponent
/// 0, as all-zero items do. Errors: those, allocation of the copy.
Result<SafeRange> scale_to_safe_range(const Tensor& a, Part part, const PoolPtr& pool, const char* op = nullptr,
                                      const char* what = "A");
/// Multiplies item `it` of `t` by 2^(-power * exponent[it]), undoing scale_to_safe_range on
/// a result that scales with the input's `power`-th power (1: singular values,
/// eigenvalues, R; -1: the pseudo-inverse; n: the determinant). Items are the trailing
/// `item_rank` axes of `t` (0: one scalar per item, 1: vectors, 2: matrices).
void unscale_items(const Tensor& t, const SafeRange& r, int item_rank, int64_t power);
/// Checks that x and y have the same dtype.
Result<void> check_same_dtype(const Tensor& x, const Tensor& y, const char* op);

/// The leading batch axes of a rank >= 2 tensor.
inline Dims batch_dims(const Tensor& a) {
  return Dims(std::span<const int64_t>(a.shape().data(), static_cast<size_t>(a.rank() - 2)));
}
Shape with_matrix(Dims batch, int64_t rows, int64_t cols);
Shape with_vector(Dims batch, int64_t len);

/// A new tensor of shape [batch.., rows, cols] (or [batch.., len] with cols < 0) whose
/// items are compact column-major, batch outermost.
Result<Tensor> alloc_items(DType dt, Dims batch, int64_t rows, int64_t cols, const PoolPtr& pool);

/// Batch items of an operation: items enumerate the batch multi-index in column-major
/// order (the memory order of alloc_items' results).
struct Batch {
  Shape shape;
  int64_t count = 1;
  explicit Batch(Dims dims) : shape(dims.span()), count(element_count(dims)) {}
  /// Element offset of item `item` in a tensor whose leading axes are this batch.
  int64_t offset(int64_t item, const Tensor& t) const noexcept {
    int64_t off = t.offset();
    for (size_t j = 0; j < shape.size(); ++j) {
      const int64_t e = shape[j];
      off += (item % e) * t.strides()[j];
      item /= e;
    }
    return off;
  }
  /// "[i0, i1, ...]" of an item (for error messages).
  std::string index(int64_t item) const;
};

/// A strided matrix (element (i, j) at p[i * rs + j * cs]).
template <class T>
struct Mat {
  T* p;
  int64_t rs, cs;
  T& operator()(int64_t i, int64_t j) const noexcept { return p[i * rs + j * cs]; }
  /// Column-major with a leading dimension LAPACK accepts.
  bool lapack_ready(int64_t rows) const noexcept { return rs == 1 && cs >= std::max<int64_t>(1, rows); }
};

/// The matrix of item `item` of a rank >= 2 tensor (strides of the last two axes).
template <class T>
Mat<T> item_mat(const Tensor& t, const Batch& b, int64_t item) {
  auto* base = static_cast<T*>(t.storage()->data());
  const int64_t r = t.rank();
  return Mat<T>{base + b.offset(item, t), t.strides()[static_cast<size_t>(r - 2)],
                t.strides()[static_cast<size_t>(r - 1)]};
}
/// The vector of item `item` of a rank >= 1 tensor (stride of the last axis).
template <class T>
Mat<T> item_vec(const Tensor& t, const Batch& b, int64_t item) {
  auto* base = static_cast<T*>(t.storage()->data());
  return Mat<T>{base + b.offset(item, t), t.strides()[static_cast<size_t>(t.rank() - 1)], 0};
}

/// dst (col-major, leading dimension ld) = src[rows, cols].
template <class T>
void gather(T* dst, int64_t ld, Mat<const T> src, int64_t rows, int64_t cols) {
  if (src.rs == 1) {
    for (int64_t j = 0; j < cols; ++j) std::memcpy(dst + j * ld, src.p + j * src.cs, sizeof(T) * rows);
    return;
  }
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) dst[i + j * ld] = src(i, j);
}
template <class T>
void gather(T* dst, int64_t ld, Mat<T> src, int64_t rows, int64_t cols) {
  gather(dst, ld, Mat<const T>{src.p, src.rs, src.cs}, rows, cols);
}
/// dst[rows, cols] = src (col-major, leading dimension ld).
template <class T>
void scatter(Mat<T> dst, const T* src, int64_t ld, int64_t rows, int64_t cols) {
  if (dst.rs == 1) {
    for (int64_t j = 0; j < cols; ++j) std::memcpy(dst.p + j * dst.cs, src + j * ld, sizeof(T) * rows);
    return;
  }
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) dst(i, j) = src[i + j * ld];
}

/// Note [Held workspace]: spec 001 D11 asks for LAPACK workspace queried once and held
/// by the prepared op. A Workspace holds both halves of that: the results of the
/// lwork = -1 queries (keyed by routine, dtype and the arguments that size them) and one
/// scratch block that grows to the largest need. Without one, every call queries and
/// draws its scratch from the domain's pool (recycled, so no allocation in steady
/// state either). The scratch is lent to one call at a time: a call nested inside
/// another with the same options finds it lent and uses the pool.

/// Which workspace query (part of the key of a held result).
enum class Query : uint8_t { kSvd, kQr, kEigh, kEig, kLstsq, kTruncatedSvd, kStagedSvd, kStagedEigh };
struct QueryKey {
  Query query;
  DType dtype;
  std::array<int64_t, 5> args;
  bool operator==(const QueryKey&) const = default;
};
using QueryValue = std::array<lint, 3>;

}  // namespace tenferro::linalg::detail

namespace tenferro::linalg {
struct Workspace::Impl {
  std::unique_ptr<std::byte[]> buffer;
  std::byte* data = nullptr;  // 64-byte aligned inside buffer
  int64_t bytes = 0;
  bool lent = false;
  struct Entry {
    detail::QueryKey key;
    detail::QueryValue value;
  };
  std::vector<Entry> entries;
  size_t next = 0;  // the entry replaced next once full
  int64_t hits = 0, misses = 0, evictions = 0;
};
}  // namespace tenferro::linalg

namespace tenferro::linalg::detail {

/// The query's result: held by `ws` when it has this key, else `query()` (then held).
template <class F>
QueryValue cached_query(Workspace* ws, const QueryKey& key, F&& query) {
  if (ws == nullptr) return query();
  Workspace::Impl& w = ws->impl();
  for (const auto& e : w.entries) {
    if (e.key == key) {
      ++w.hits;
      return e.value;
    }
  }
  ++w.misses;
  const QueryValue v = query();
  if (static_cast<int64_t>(w.entries.size()) < Workspace::kMaxQueries) {
    w.entries.push_back({key, v});
  } else {
    w.entries[w.next] = {key, v};
    w.next = (w.next + 1) % w.entries.size();
    ++w.evictions;
  }
  return v;
}

/// Uninitialized scratch, 64-byte aligned: the Workspace's held block when one is given
/// and not lent (grown to `bytes`), else from the pool when given, else the heap.
class Scratch {
 public:
  static Result<Scratch> make(int64_t bytes, const PoolPtr& pool, Workspace* ws = nullptr);
  std::byte* data() const noexcept { return data_; }
  Scratch() = default;
  Scratch(Scratch&& o) noexcept
      : lease_(std::move(o.lease_)), own_(std::move(o.own_)), data_(o.data_), lent_(std::exchange(o.lent_, nullptr)) {}
  Scratch& operator=(Scratch&&) = delete;
  ~Scratch() {
    if (lent_ != nullptr) lent_->lent = false;
  }

 private:
  PooledBuffer lease_;
  std::unique_ptr<std::byte[]> own_;
  std::byte* data_ = nullptr;
  Workspace::Impl* lent_ = nullptr;
};

/// Carves typed arrays out of a byte range (each 64-byte aligned). Measure with a null
/// base, then carve the real buffer with the same calls.
class Carver {
 public:
  explicit Carver(std::byte* base) noexcept : base_(base) {}
  template <class U>
  U* take(int64_t count) noexcept {
    used_ = (used_ + 63) / 64 * 64;
    U* p = base_ != nullptr ? reinterpret_cast<U*>(base_ + used_) : nullptr;
    used_ += std::max<int64_t>(count, 1) * static_cast<int64_t>(sizeof(U));
    return p;
  }
  int64_t used() const noexcept { return (used_ + 63) / 64 * 64; }

 private:
  std::byte* base_;
  int64_t used_ = 0;
};

/// The first failing item (lowest index) and its status. Thread-safe; locks only when
/// an item fails.
class Failures {
 public:
  void record(int64_t item, int64_t info) {
    std::lock_guard lock(m_);
    if (item_ < 0 || item < item_) {
      item_ = item;
      info_ = info;
    }
  }
  bool any() const {
    std::lock_guard lock(m_);
    return item_ >= 0;
  }
  int64_t item() const { return item_; }
  int64_t info() const { return info_; }
  /// An error that is not a numerical failure (a product's workspace could not be
  /// drawn); the first one is kept and returned after the items ran.
  void fail(Error e) {
    std::lock_guard lock(m_);
    if (!error_) error_ = std::move(e);
  }
  const std::optional<Error>& error() const { return error_; }

 private:
  mutable std::mutex m_;
  int64_t item_ = -1;
  int64_t info_ = 0;
  std::optional<Error> error_;
};

/// An error naming the failing item: "<what> at batch item <k> (index [..])".
Error item_error(ErrorCode code, const char* op, const Batch& batch, int64_t item, const std::string& what);

/// Executes a route: f(begin, end, lane) over contiguous item ranges, one range per
/// lane (outer-parallel) or the whole batch on the calling worker. OpenBLAS's thread
/// count is held for the run (1 for lanes, provider_threads otherwise) and given back
/// afterwards (cpu::OpenBlasThreads).
template <class F>
void run_items(const CpuExecutionContext& ctx, const Route& route, int64_t items, F&& f) {
  if (items <= 0) return;
  if (route.policy == BatchPolicy::kOuterParallel && route.lanes > 1) {
    const cpu::OpenBlasThreads scope(1);  // the lanes' OpenBLAS calls run on their own thread
    const int64_t lanes = route.lanes;
    ctx.parallel_for(lanes, 1, [&](int64_t b, int64_t e) {
      for (int64_t lane = b; lane < e; ++lane) {
        f(items * lane / lanes, items * (lane + 1) / lanes, static_cast<int>(lane));
      }
    });
    return;
  }
  std::optional<cpu::OpenBlasThreads> scope;
  if (route.kernel != Kernel::kSmall) scope.emplace(std::max(1, route.provider_threads));
  f(0, items, 0);
}

/// Runs f(item context): `ctx` itself, or inside an outer-parallel lane a sequential
/// one-thread context (one fan-out level: the lane's products never fan out again).
template <class F>
auto with_item_context(const CpuExecutionContext& ctx, const Route& route, F&& f) {
  if (route.policy == BatchPolicy::kOuterParallel && route.lanes > 1) {
    const CpuExecutionContext lane(nullptr, cpu::ParallelMode::kSequential, 1, ctx.batch(), &ctx.caps());
    return f(lane);
  }
  return f(ctx);
}

/// Note [Recursive LU]: LAPACK's getrf (OpenBLAS) spends most of a large factorization
/// in its own GEMM, which on CPUs whose OpenBLAS runs 256-bit kernels is up to twice as
/// slow as the engine's (docs/benchmarks.md "CPU kernels"). The recursive LU splits the
/// columns in halves: factor the left half, swap and solve the right half's top rows
/// with L, update the rest with one product, factor it. The triangular solves are
/// halved the same way, so nearly all the work is in dot_general calls (the context's
/// threads, or one thread in an outer-parallel lane); panels of at most 64 columns go to
/// LAPACK's getrf and triangles of at most 64 rows to its trsm, on one OpenBLAS thread
/// (on the context's OpenBLAS threads they ran slower: OpenBLAS's spinning threads and
/// the engine's workers shared the cores). Pivoting is LAPACK's own (in its panels), and
/// ipiv/info follow LAPACK's conventions (1-based rows; info = first exactly zero pivot,
/// factorization completed). decide_route chooses it for items with min(m, n) >=
/// kRecursiveLuMinDim.
template <class T>
Result<lint> recursive_lu(const cpu::CpuExecutionContext& ctx, int64_t m, int64_t n, T* a, int64_t lda, lint* ipiv);

/// The LU factorization of one item (m x n, column-major, leading dimension lda) by the
/// route's kernel: the recursive LU (its products on `ctx`'s threads, or on one thread
/// inside an outer-parallel lane) or LAPACK's getrf. LAPACK's ipiv/info conventions.
template <class T>
Result<lint> factor_lu(const CpuExecutionContext& ctx, const Route& route, int64_t m, int64_t n, T* a, int64_t lda,
                       lint* ipiv) {
  if (route.kernel == Kernel::kRecursiveLu) {
    return with_item_context(ctx, route,
                             [&](const CpuExecutionContext& c) { return recursive_lu<T>(c, m, n, a, lda, ipiv); });
  }
  return Lapack<T>::getrf(static_cast<lint>(m), static_cast<lint>(n), a, static_cast<lint>(lda), ipiv);
}

/// Note [Engine back-transformation]: LAPACK's divide-and-conquer SVD (gesdd) and
/// Hermitian eigensolver (heevd) reduce the matrix to bidiagonal / tridiagonal form
/// (gebrd / hetrd), solve that (bdsdc / stedc, real), and multiply the small problem's
/// vectors by the reduction's Householder reflectors (ormbr / ormtr). That last step is
/// a third to nearly half of the time at n = 256..1024, and LAPACK runs it as rank-32
/// updates through its BLAS's 256-bit kernels at a fraction of the GEMM rate
/// (docs/benchmarks.md "Linear algebra"). The staged route calls the same LAPACK
/// routines for the first two steps and applies the reflectors itself: per block of
/// 32 (SVD) or 64 (eigh) reflectors, V materialized (unit diagonal, zeros above), T from
/// LAPACK's larft, then C -= V (T (V^H C)) as three dot_general calls (the engine's
/// GEMM on the item context's threads). Same algorithm, same vectors up to rounding;
/// the singular values / eigenvalues are bdsdc's / stedc's. decide_route chooses it
/// for vectors of items with min(m, n) >= kStagedMinDim. Items at least 11/6 as tall as
/// wide are reduced after a QR as gesdd does (geqrf; R's SVD staged; U = Q_r [U_R 0; 0
/// I] by the same reflector products); items that wide take the SVD of A^H that way
/// (gesdd's LQ-first path mirrored) and transpose the vectors back.

/// Householder reflectors H(i) = I - tau[i] v_i v_i^H, i < count: v_i is 0 above row
/// i + shift, 1 there, and tails(r, i) (conjugated when conj_tails) for r > i + shift.
template <class T>
struct Reflectors {
  Mat<const T> tails;
  const T* tau;
  int64_t count;
  int64_t shift;
  bool conj_tails;
};

/// The widest block of reflectors apply_reflectors takes.
inline constexpr int64_t kMaxReflectorBlock = 64;

/// Elements of T apply_reflectors needs as scratch for a rows x cols C.
int64_t reflector_scratch(int64_t rows, int64_t cols) noexcept;

/// C := H(0) H(1) ... H(count-1) C for the rows x cols strided C (count + shift <=
/// rows), by blocks of `block` reflectors (at most kMaxReflectorBlock) on dot_general
/// with `ctx`'s threads. Errors: dot_general's (workspace).
template <class T>
Result<void> apply_reflectors(const CpuExecutionContext& ctx, const Reflectors<T>& h, Mat<T> c, int64_t rows,
                              int64_t cols, int64_t block, T* scratch);

/// The staged SVD of m x n items with vectors (Note [Engine back-transformation]):
/// plan once per call (workspace query), carve one scratch block per lane, run per item.
template <class T>
struct StagedSvd {
  int64_t m = 0, n = 0, k = 0, ucols = 0, vrows = 0;
  bool qr_first = false;    ///< m >= 11/6 n: the R of a QR is reduced (gesdd's rule)
  bool transposed = false;  ///< n >= 11/6 m: the SVD of A^H (m, n, ucols, vrows are its)
  lint lwork = 1;
  struct Parts {
    T *a, *tauq, *taup, *work, *apply, *r, *ur, *tau, *uo, *vto;
    Real<T>*d, *e, *ub, *vtb, *rwork;
    lint* iwork;
  };
  /// Sizes (gebrd's workspace query, held by `ws` when given).
  static StagedSvd plan(int64_t m, int64_t n, bool full, Workspace* ws);
  /// Bytes of one lane's scratch (base null), or carves base into parts.
  int64_t carve(std::byte* base, Parts* parts) const;
  /// s (k), u (m x ucols, leading dimension m), vt (vrows x n, leading dimension
  /// vrows) of src; returns LAPACK's info (> 0: bdsdc did not converge; nothing of u/vt
  /// is meaningful then).
  Result<lint> run(const CpuExecutionContext& ctx, Mat<const T> src, Real<T>* s, T* u, T* vt, std::byte* scratch) const;

 private:
  // The SVD of the m x n matrix gathered in x.a (overwritten): s, u (m x ucols), vt
  // (vrows x n), a QR first when qr_first.
  Result<lint> reduce(const CpuExecutionContext& ctx, const Parts& x, Real<T>* s, T* u, T* vt) const;
  // The SVD of the am x n matrix at a (leading dimension am, overwritten): s, u (am x
  // ucol, leading dimension am), vt (vrows x n).
  Result<lint> bidiagonal(const CpuExecutionContext& ctx, const Parts& x, T* a, int64_t am, Real<T>* s, T* u,
                          int64_t ucol, T* vt) const;
};

/// The staged Hermitian eigendecomposition of n x n items (Note [Engine
/// back-transformation]); reads the lower or the upper triangle of src.
template <class T>
struct StagedEigh {
  int64_t n = 0;
  lint lwork = 1, lrwork = 1, liwork = 1;
  struct Parts {
    T *a, *tau, *work, *apply;
    Real<T>*d, *e, *z, *rwork;
    lint* iwork;
  };
  static StagedEigh plan(int64_t n, Workspace* ws);
  int64_t carve(std::byte* base, Parts* parts) const;
  /// w (n, ascending) and z (n x n, leading dimension n); returns LAPACK's info.
  Result<lint> run(const CpuExecutionContext& ctx, Mat<const T> src, bool lower, Real<T>* w, T* z,
                   std::byte* scratch) const;
};

/// decide_route for an operation on items of m x n.
Result<Route> route_for(const CpuExecutionContext& ctx, Op op, DType dt, int64_t m, int64_t n, int64_t items,
                        bool small_available, const LinalgOptions& options, bool staged_available = false);

/// Conjugate for complex types, identity for real ones.
template <class T>
T conj_of(const T& x) noexcept {
  if constexpr (kIsComplex<T>) {
    return std::conj(x);
  } else {
    return x;
  }
}
template <class T>
Real<T> abs2(const T& x) noexcept {
  if constexpr (kIsComplex<T>) {
    return x.real() * x.real() + x.imag() * x.imag();
  } else {
    return x * x;
  }
}

// Note [SVD gauge]: singular vectors are unique only up to a phase per singular triplet
// (a sign for real dtypes): (u_j, v_j) and (u_j e^{i t}, v_j e^{i t}) give the same A.
// gauge_fix picks, per column j of U, the entry of largest magnitude (the first one on
// exact ties) and rotates the column so that entry is real and positive, applying the
// conjugate rotation to row j of Vh so U S Vh is unchanged. Columns of a full U beyond
// min(m, n) and rows of a full Vh beyond it multiply no singular value and are fixed
// independently by the same rule. The result is deterministic whenever the singular
// values are distinct (degenerate subspaces stay a LAPACK choice).
template <class T>
T unit_phase(Mat<T> col, int64_t rows) {
  int64_t best = -1;
  Real<T> best_abs = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const Real<T> v = std::abs(col(i, 0));
    if (v > best_abs) {
      best_abs = v;
      best = i;
    }
  }
  if (best < 0) return T(1);
  return col(best, 0) / best_abs;
}

template <class T>
void gauge_fix_item(Mat<T> u, int64_t m, int64_t ucols, Mat<T> vh, int64_t vrows, int64_t n, int64_t k) {
  for (int64_t j = 0; j < ucols; ++j) {
    const T ph = unit_phase(Mat<T>{&u(0, j), u.rs, 0}, m);
    const T cph = conj_of(ph);
    for (int64_t i = 0; i < m; ++i) u(i, j) *= cph;
    if (j < k) {
      for (int64_t c = 0; c < n; ++c) vh(j, c) *= ph;
    }
  }
  for (int64_t j = k; j < vrows; ++j) {
    // Row j of Vh: fix its largest entry (as a column of Vh^T).
    const T ph = unit_phase(Mat<T>{&vh(j, 0), vh.cs, 0}, n);
    const T cph = conj_of(ph);
    for (int64_t c = 0; c < n; ++c) vh(j, c) *= cph;
  }
}

/// Checks a caller destination: defined, dtype, exact shape, exclusive writable storage,
/// no overlapping elements (before any write).
Result<void> check_destination(const Tensor& out, DType dt, Dims shape, const char* op);

/// Broadcasts the batch axes of two rank >= 2 operands against each other; returns the
/// common batch shape and views with it.
Result<Shape> broadcast_batches(Tensor& a, Tensor& b, const char* op);

}  // namespace tenferro::linalg::detail
