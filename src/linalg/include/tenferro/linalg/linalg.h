#pragma once
/// \file
/// Dense linear algebra on the CPU engine: decompositions, solvers, inverses,
/// determinants and norms of matrices stored in the last two axes of a tensor, with any
/// number of leading batch axes and any strides (inputs are never modified).
///
/// Every function takes an entered CpuExecutionContext (one fan-out level: the batch is
/// spread over the context's workers, or each decomposition uses them, never both;
/// Note [Linalg routes]) and draws results and scratch from `pool` when given.
/// Supported dtypes: f32, f64, c64, c128 (other dtypes fail with kDTypeMismatch).
/// Results are new tensors whose matrices are compact column-major, batch outermost
/// (the layout cpu::dot_general_result_layout describes).
///
/// Errors, all before any result is published: kDTypeMismatch, kInvalidShape (rank < 2,
/// a square matrix required), kShapeMismatch (operands disagree), kOverflow (a matrix
/// extent beyond LAPACK's 32-bit integers), kUnsupported (a forced batch policy the
/// route cannot honour), kInvalidArgument for a NaN or an infinity in the input of svd,
/// truncated_svd, pinv, eig, eigvals and lstsq (LAPACK's drivers for these do not accept
/// them; naming the item and element); numerical failures name the first failing batch
/// item ("item 3 of 10 (batch index [1, 0])"): kSingular, kNotPositiveDefinite,
/// kNoConvergence.
///
/// Thread-safety: functions are reentrant; concurrent calls on different contexts are
/// fine. OpenBLAS's thread count is process-global: calls that use several OpenBLAS
/// threads (route kProviderItems) must not run concurrently with calls that need a
/// different count (Note [OpenBLAS threads] in the cpu module).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::linalg {

using cpu::BatchPolicy;
using cpu::CpuExecutionContext;
using PoolPtr = std::shared_ptr<HostBufferPool>;

/// The operations, for route decisions and messages.
enum class Op : uint8_t {
  kSvd,
  kQr,
  kQrPivoted,
  kEigh,
  kEig,
  kCholesky,
  kLu,
  kLuSolve,
  kSolve,
  kTriangularSolve,
  kInv,
  kDet,
  kLstsq,
};
std::string_view op_name(Op op) noexcept;

/// Scratch memory and LAPACK workspace sizes held across calls (Note [Held workspace]
/// in common.h): pass the same Workspace (LinalgOptions::workspace) to repeated calls,
/// as a prepared linalg node does, and warm calls of the same shapes make no LAPACK
/// workspace query and draw no memory. Holds the largest scratch any call needed until
/// clear(); remembers at most kMaxQueries query results (oldest replaced first). A call
/// nested inside another (pinv's SVD) draws from the pool instead of the held scratch.
/// Not thread-safe: one per concurrent caller.
class Workspace {
 public:
  static constexpr int64_t kMaxQueries = 32;
  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  /// Bytes of scratch held now.
  int64_t held_bytes() const noexcept;
  /// Query results held now (<= kMaxQueries).
  int64_t queries() const noexcept;
  /// Query lookups answered from the held results / made by calling LAPACK / results
  /// replaced to make room (since construction).
  int64_t hits() const noexcept;
  int64_t misses() const noexcept;
  int64_t evictions() const noexcept;
  /// Frees the scratch and forgets the query results (the counters stay).
  void clear() noexcept;

  struct Impl;  ///< private (src/linalg/common.h)
  Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Per-operation options. Unset fields inherit the context's BatchSettings (engine
/// default < scoped override < these; Note [Linalg routes]).
struct LinalgOptions {
  /// Scratch and workspace sizes held across calls (not owned; null: queried and drawn
  /// from the pool per call).
  Workspace* workspace = nullptr;
  std::optional<BatchPolicy> batch_policy;
  /// Items whose estimated work (multiply-adds, m * n * min(m, n)) is below this go
  /// outer-parallel under kAuto (default: BatchSettings::outer_parallel_flops).
  std::optional<int64_t> outer_parallel_flops;
  /// Square items of at most this extent use the engine's small-matrix kernels where
  /// the operation has one (default kSmallMaxDim; 0 disables them).
  std::optional<int64_t> small_max_dim;
};

/// Default extent bound of the small-matrix kernels (Note [Small-matrix kernels]).
inline constexpr int64_t kSmallMaxDim = 16;

/// Which kernel family runs the items.
enum class Kernel : uint8_t {
  kLapack,  ///< LAPACK (OpenBLAS) per item, workspace queried once per call
  kSmall,   ///< the engine's small-matrix kernels (registers/L1, no LAPACK call)
  kRecursiveLu,  ///< LU factorizations: the engine's recursive LU, its updates on dot_general
  kStaged,  ///< svd / eigh vectors: LAPACK's reduction and bidiagonal / tridiagonal solver, the
            ///< back-transformation of the vectors on dot_general (Note [Engine back-transformation])
};

/// Smallest min(m, n) whose svd / eigh vectors run the staged route (kStaged).
inline constexpr int64_t kStagedMinDim = 64;
/// Smallest min(m, n) whose staged route (auto policy, one item at a time) runs its
/// LAPACK steps on the context's threads; smaller items run them on one OpenBLAS thread
/// (Note [Engine back-transformation]).
inline constexpr int64_t kStagedThreadedLapackMinDim = 1024;

/// Smallest min(m, n) whose LU factorization (lu, lu_factor, solve, inv, det, slogdet)
/// runs the recursive LU instead of LAPACK's getrf (Note [Recursive LU]).
inline constexpr int64_t kRecursiveLuMinDim = 128;

/// How one call runs: the decision and the reason, from decide_route.
struct Route {
  Kernel kernel = Kernel::kLapack;
  BatchPolicy policy = BatchPolicy::kSequential;  ///< kSequential, kOuterParallel or kProviderItems
  int lanes = 1;                                  ///< concurrent items (outer-parallel lanes)
  int provider_threads = 1;                       ///< threads inside one item (OpenBLAS)
  std::string_view reason;                        ///< a static description of the choice
};

/// Facts decide_route needs (pure data, so tests can ask for any machine's decision).
struct RouteInput {
  Op op = Op::kSvd;
  DType dtype = DType::kF64;
  int64_t m = 0, n = 0;  ///< matrix extents of one item
  int64_t items = 1;     ///< batch items
  int threads = 1;       ///< the context's thread budget
  bool small_kernel_available = false;  ///< the op has a small kernel for this dtype and request
  bool staged_available = false;  ///< svd / eigh: vectors requested from the default driver (kStaged possible)
};

/// The route of one call: a pure function of its input, the context's batch settings and
/// the options (Note [Linalg routes]). Errors: kUnsupported for a forced policy the
/// route cannot honour (kWholeBatchVendor: no vendor batch LAPACK; kOuterParallel with
/// fewer than two threads is honoured as one lane).
Result<Route> decide_route(const RouteInput& in, const cpu::BatchSettings& settings, const LinalgOptions& options);

// ---------------------------------------------------------------------------------------
// Decompositions

enum class SvdMode : uint8_t {
  kThin,        ///< U [.., m, k], Vh [.., k, n], k = min(m, n)
  kFull,        ///< U [.., m, m], Vh [.., n, n]
  kValuesOnly,  ///< singular values only; vectors are never computed
};

/// LAPACK driver for the SVD.
enum class SvdDriver : uint8_t {
  kAuto,    ///< divide and conquer: gesdd, or for vectors of large items gesdd's steps with the
            ///< back-transformation on the engine (kStaged); gesvd if it does not converge (reported)
  kGesdd,   ///< LAPACK's gesdd call itself (no fallback: non-convergence is kNoConvergence)
  kGesvd,   ///< gesvd only
  kJacobi,  ///< the one-sided Jacobi kernel (square items up to kSmallMaxDim; else kUnsupported)
};

struct SvdOptions {
  SvdMode mode = SvdMode::kThin;
  SvdDriver driver = SvdDriver::kAuto;
  /// Gauge-fix the vectors (Note [SVD gauge]): each column of U has its entry of largest
  /// magnitude (the first such on ties) real and positive, with Vh's row adjusted to
  /// keep A = U S Vh. Deterministic for distinct singular values.
  bool gauge_fix = false;
  LinalgOptions linalg;
};

/// A = U diag(S) Vh. S is real (f32 for f32/c64, f64 for f64/c128), descending.
struct SvdResult {
  Tensor u, s, vh;  ///< u and vh are undefined for kValuesOnly
  /// Batch items on which gesdd failed to converge and gesvd was used (kAuto only).
  int64_t gesvd_fallbacks = 0;
  Route route;
};
Result<SvdResult> svd(const CpuExecutionContext& ctx, const Tensor& a, const SvdOptions& options = {},
                      const PoolPtr& pool = nullptr);

enum class QrMode : uint8_t {
  kReduced,   ///< Q [.., m, k], R [.., k, n], k = min(m, n)
  kComplete,  ///< Q [.., m, m], R [.., m, n]
  kR,         ///< R only (Q undefined)
};
struct QrResult {
  Tensor q, r;
  Route route;
};
/// A = Q R with Q orthonormal columns (unitary for kComplete) and R upper triangular.
Result<QrResult> qr(const CpuExecutionContext& ctx, const Tensor& a, QrMode mode = QrMode::kReduced,
                    const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

/// Column-pivoted QR: A[:, perm] = Q R with |R[0,0]| >= |R[1,1]| >= ... (geqp3).
/// perm is i64 [.., n] (0-based). Reduced Q and R.
struct QrPivotedResult {
  Tensor q, r, perm;
  Route route;
};
Result<QrPivotedResult> qr_pivoted(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                                   const PoolPtr& pool = nullptr);

enum class Uplo : uint8_t { kLower, kUpper };

/// Hermitian eigendecomposition A = V diag(w) Vᴴ, reading only the `uplo` triangle.
/// w is real, ascending; V's columns are the eigenvectors.
struct EighResult {
  Tensor values, vectors;  ///< vectors undefined for eigvalsh
  Route route;
};
Result<EighResult> eigh(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo = Uplo::kLower,
                        const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);
Result<Tensor> eigvalsh(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo = Uplo::kLower,
                        const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

/// General eigendecomposition A V = V diag(w) (right eigenvectors, unit 2-norm columns).
/// Values and vectors are complex (c64 for f32/c64 input, c128 for f64/c128), in
/// LAPACK's order (geev).
struct EigResult {
  Tensor values, vectors;  ///< vectors undefined for eigvals
  Route route;
};
Result<EigResult> eig(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                      const PoolPtr& pool = nullptr);
Result<Tensor> eigvals(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                       const PoolPtr& pool = nullptr);

/// Cholesky factor of a Hermitian positive-definite matrix: L with A = L Lᴴ (kLower) or
/// U with A = Uᴴ U (kUpper); the other triangle of the result is zero. Reads only the
/// `uplo` triangle of A. Errors: kNotPositiveDefinite naming the item and the minor.
Result<Tensor> cholesky(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo = Uplo::kLower,
                        const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);
/// cholesky into a caller destination of a's shape and dtype (any non-overlapping
/// layout, exclusive storage). Validation happens before any write; on a numerical
/// error the destination holds unspecified values (never uninitialized memory).
Result<void> cholesky_into(const CpuExecutionContext& ctx, const Tensor& a, Uplo uplo, Tensor& out,
                           const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

/// LU with partial pivoting, any m x n: P A = L U in LAPACK's packed form. `lu` holds
/// L (unit diagonal, strictly lower part) and U (upper part); pivots is i64 [.., k]
/// (0-based: row i was swapped with row pivots[i], in order). Exactly singular U is not
/// an error here (see lu_solve/solve).
struct LuFactorResult {
  Tensor lu, pivots;
  Route route;
};
Result<LuFactorResult> lu_factor(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                                 const PoolPtr& pool = nullptr);

/// The unpacked factors: A = P L U with P [.., m, m] a permutation matrix (dtype of A),
/// L [.., m, k] unit lower, U [.., k, n] upper (k = min(m, n)).
struct LuResult {
  Tensor p, l, u;
  Route route;
};
Result<LuResult> lu(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                    const PoolPtr& pool = nullptr);

/// Solves A X = B from lu_factor's output (square A). B is [.., n, k] (or [.., n] as a
/// vector), batch axes broadcast against the factor's. Errors: kSingular (a zero
/// diagonal of U), kShapeMismatch.
Result<Tensor> lu_solve(const CpuExecutionContext& ctx, const LuFactorResult& factor, const Tensor& b,
                        const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

// ---------------------------------------------------------------------------------------
// Solvers, inverses, determinants

/// Solves A X = B for square A [.., n, n]. B is [.., n, k], or a vector [n] / [.., n]
/// when its rank is 1 (numpy 2 semantics: only a 1-D B is a vector); batch axes
/// broadcast. Errors: kSingular naming the item.
Result<Tensor> solve(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b,
                     const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);
/// solve into a caller destination of the result's shape and dtype.
Result<void> solve_into(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
                        const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

/// What expm computes for a batch whose largest 1-norm is `norm` (Note [Matrix
/// exponential kernel] in expm.cc; the eager expm uses the same choice): the lowest Padé
/// degree whose backward-error bound covers `norm` (3, 5, 7, 9, 13 in double, 3, 5, 7 in
/// single precision), else the largest with `squarings` halvings of A. A NaN or infinite
/// norm gives the largest degree unscaled (the values propagate). Pure.
struct ExpmScaling {
  int degree = 13;
  int squarings = 0;
};
ExpmScaling expm_scaling(double norm, bool single_precision) noexcept;
/// The coefficients c_0 .. c_m of the degree-m diagonal Padé numerator of e^x:
/// c_j = (2m - j)! m! / ((2m)! j! (m - j)!).
std::vector<double> pade_coefficients(int m);

/// The matrix exponential of the square matrices in the last two axes (batched): scaling
/// and squaring with a Padé approximant (Note [Matrix exponential kernel] in expm.cc),
/// backward error within the unit roundoff of the dtype. Errors: kInvalidArgument
/// (undefined), kDTypeMismatch, kInvalidShape (not square matrices).
Result<Tensor> expm(const CpuExecutionContext& ctx, const Tensor& a, const PoolPtr& pool = nullptr);
/// The Fréchet derivative L(A, E) of expm at A in direction E (same shape): the top-right
/// block of expm([[A, E], [0, A]]), batched. Linear in E; its adjoint in E is
/// L(Aᴴ, ·). Errors: those of expm, kDTypeMismatch / kShapeMismatch (E unlike A).
Result<Tensor> expm_frechet(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& e,
                            const PoolPtr& pool = nullptr);

enum class Transpose : uint8_t { kNone, kTranspose, kConjTranspose };
struct TriangularOptions {
  bool left = true;   ///< solve op(A) X = B (true) or X op(A) = B (false)
  Uplo uplo = Uplo::kUpper;
  bool unit_diagonal = false;  ///< the diagonal of A is taken as 1 (never read)
  Transpose transpose = Transpose::kNone;
  LinalgOptions linalg;
};
/// Triangular solve with a matrix right-hand side B [.., m, k] (left: A [.., m, m];
/// right: A [.., k, k]); batch axes broadcast. Reads only A's `uplo` triangle.
/// Errors: kSingular for an exactly zero diagonal (unless unit_diagonal).
Result<Tensor> triangular_solve(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b,
                                const TriangularOptions& options = {}, const PoolPtr& pool = nullptr);

/// Inverse of square matrices. Errors: kSingular naming the item.
Result<Tensor> inv(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                   const PoolPtr& pool = nullptr);
Result<void> inv_into(const CpuExecutionContext& ctx, const Tensor& a, Tensor& out, const LinalgOptions& options = {},
                      const PoolPtr& pool = nullptr);

/// Determinant [..] of square matrices (0 for singular ones; not an error).
Result<Tensor> det(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                   const PoolPtr& pool = nullptr);
/// det = sign * exp(logabsdet): sign has A's dtype (|sign| = 1, or 0 when singular, then
/// logabsdet = -inf); logabsdet is real.
struct SlogdetResult {
  Tensor sign, logabsdet;
};
Result<SlogdetResult> slogdet(const CpuExecutionContext& ctx, const Tensor& a, const LinalgOptions& options = {},
                              const PoolPtr& pool = nullptr);

/// Moore-Penrose pseudo-inverse [.., n, m] through the SVD: singular values at most
/// rtol * max(S) are treated as zero. Default rtol: max(m, n) * machine epsilon.
Result<Tensor> pinv(const CpuExecutionContext& ctx, const Tensor& a, std::optional<double> rtol = std::nullopt,
                    const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

/// Least squares min ||A X - B||_2 (gelsd, minimum-norm solution for rank-deficient A).
/// A [.., m, n], B [.., m, k] (or a vector [m] / [.., m] when 1-D); batch axes of A and
/// B must be equal. Singular values at most rcond * max(S) count as zero (default:
/// machine epsilon * max(m, n)).
struct LstsqResult {
  Tensor solution;          ///< [.., n, k] (or [.., n])
  Tensor residuals;         ///< [.., k] sums of squared residuals when m > n and rank = n; else [.., 0]
  Tensor rank;              ///< i64 [..]
  Tensor singular_values;   ///< real [.., min(m, n)]
};
Result<LstsqResult> lstsq(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& b,
                          std::optional<double> rcond = std::nullopt, const LinalgOptions& options = {},
                          const PoolPtr& pool = nullptr);

// ---------------------------------------------------------------------------------------
// Norms

enum class MatrixNorm : uint8_t {
  kFrobenius,     ///< sqrt(sum |a_ij|^2)
  kNuclear,       ///< sum of singular values
  kSpectral,      ///< largest singular value ("2")
  kOne,           ///< largest column sum of |a_ij|
  kInf,           ///< largest row sum of |a_ij|
  kMinSingular,   ///< smallest singular value ("-2", numpy's; not a norm)
  kMinColumnSum,  ///< smallest column sum of |a_ij| ("-1")
  kMinRowSum,     ///< smallest row sum of |a_ij| ("-inf")
};
/// numpy's name of a matrix norm ord ("fro", "nuc", "2", "1", "inf", "-2", "-1", "-inf"),
/// and the norm a name denotes (nullopt for any other text): one table for the program
/// text and the Python binding.
std::string_view matrix_norm_name(MatrixNorm kind) noexcept;
std::optional<MatrixNorm> parse_matrix_norm(std::string_view name) noexcept;
/// Norm of each matrix [..] (real dtype), numpy's ords 'fro', 'nuc', 2, 1, inf, -2, -1,
/// -inf; a NaN entry gives NaN (the singular-value kinds: kInvalidArgument, Note
/// [Non-finite input]). Empty matrices have norm 0.
Result<Tensor> matrix_norm(const CpuExecutionContext& ctx, const Tensor& a, MatrixNorm kind = MatrixNorm::kFrobenius,
                           const LinalgOptions& options = {}, const PoolPtr& pool = nullptr);

/// Vector p-norm over `axes` (empty = all axes) of |x|, numpy's: ord 2 (default), 1, any
/// other p (sum |x|^p)^(1/p) (negative p too: 0 when an entry is 0), +inf (max), -inf
/// (min), 0 (count of nonzeros); a NaN entry gives NaN, an infinite one (ord > 0) infinity.
/// Real result dtype. Errors: kOutOfRange (axis), kInvalidArgument (repeated axis, NaN ord).
Result<Tensor> vector_norm(const CpuExecutionContext& ctx, const Tensor& x, double ord = 2.0, Dims axes = {},
                           bool keep_dims = false, const PoolPtr& pool = nullptr);

// ---------------------------------------------------------------------------------------
// Truncated SVD (tensor-network staple)

enum class TruncatedSvdMethod : uint8_t {
  kAuto,        ///< randomized when max_rank is small against min(m, n) (Note [Truncated SVD]), else exact
  kExact,       ///< thin SVD, then truncation
  kRandomized,  ///< randomized range finder with power iterations (needs max_rank)
};
struct TruncatedSvdOptions {
  /// Keep at most this many singular triplets (unset: no bound).
  std::optional<int64_t> max_rank;
  /// Relative discarded-weight cutoff: drop the longest tail of singular values whose
  /// weight sum(s_i^2 over dropped) is at most rel_cutoff * sum(s_i^2 over all). 0 keeps
  /// everything up to max_rank (exact zeros included).
  double rel_cutoff = 0.0;
  TruncatedSvdMethod method = TruncatedSvdMethod::kAuto;
  int64_t oversampling = 10;     ///< randomized: extra sample columns
  int64_t power_iterations = 2;  ///< randomized: subspace iterations
  uint64_t seed = 0;             ///< randomized: the test matrix's seed (deterministic)
  bool gauge_fix = false;        ///< as SvdOptions::gauge_fix
  LinalgOptions linalg;
};
/// U [.., m, r], S [.., r], Vh [.., r, n] with r the kept rank (the largest kept rank of
/// the batch; items keeping fewer have zero-padded S and zero vectors beyond their
/// rank). discarded_weight [..] is sum of squares of the dropped singular values,
/// computed as ||A||_F^2 - sum(kept S^2) (exact for kExact; for kRandomized it is the
/// true squared Frobenius error of the returned factors' projection, see the note).
struct TruncatedSvdResult {
  Tensor u, s, vh, discarded_weight;
  Tensor rank;  ///< i64 [..] kept rank per item
  TruncatedSvdMethod method_used = TruncatedSvdMethod::kExact;
};
Result<TruncatedSvdResult> truncated_svd(const CpuExecutionContext& ctx, const Tensor& a,
                                         const TruncatedSvdOptions& options = {}, const PoolPtr& pool = nullptr);

}  // namespace tenferro::linalg
