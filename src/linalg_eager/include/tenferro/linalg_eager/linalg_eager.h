#pragma once
/// \file
/// Eager entry points of the linear-algebra family: `eager::linalg::svd(a)` and friends
/// on EagerTensors, with the eager API's placement rules (the domain holding most input
/// bytes, or the context's explicit one; outputs live there, inputs never move).
///
/// Targeted dispatch (spec 004): each call resolves the runtime's target engine once per
/// configuration epoch; on a CPU engine it runs the CPU kernels of tenferro::linalg
/// directly (no graph is built). The family has no program op yet, so a target without a
/// direct CPU provider is a typed kUnsupported, never a silent fallback elsewhere.
/// Options, semantics, parallelism and errors are those of tenferro/linalg/linalg.h;
/// errors also include the eager ones (kRuntimeMismatch for tensors of two runtimes).
/// Each function has an overload taking the Context (explicit placement or session).

#include "tenferro/eager/eager.h"
#include "tenferro/linalg/linalg.h"

namespace tenferro::eager::linalg {

using tenferro::linalg::LinalgOptions;
using tenferro::linalg::MatrixNorm;
using tenferro::linalg::QrMode;
using tenferro::linalg::SvdMode;
using tenferro::linalg::SvdOptions;
using tenferro::linalg::TriangularOptions;
using tenferro::linalg::TruncatedSvdOptions;
using tenferro::linalg::Uplo;

struct Svd {
  EagerTensor u, s, vh;  ///< u and vh undefined for SvdMode::kValuesOnly
};
Result<Svd> svd(const Context& c, const EagerTensor& a, const SvdOptions& options = {});
Result<Svd> svd(const EagerTensor& a, const SvdOptions& options = {});

struct Qr {
  EagerTensor q, r;
};
Result<Qr> qr(const Context& c, const EagerTensor& a, QrMode mode = QrMode::kReduced);
Result<Qr> qr(const EagerTensor& a, QrMode mode = QrMode::kReduced);

struct Eigh {
  EagerTensor values, vectors;
};
Result<Eigh> eigh(const Context& c, const EagerTensor& a, Uplo uplo = Uplo::kLower);
Result<Eigh> eigh(const EagerTensor& a, Uplo uplo = Uplo::kLower);
Result<EagerTensor> eigvalsh(const EagerTensor& a, Uplo uplo = Uplo::kLower);

struct Eig {
  EagerTensor values, vectors;  ///< complex
};
Result<Eig> eig(const EagerTensor& a);
Result<EagerTensor> eigvals(const EagerTensor& a);

Result<EagerTensor> cholesky(const Context& c, const EagerTensor& a, Uplo uplo = Uplo::kLower);
Result<EagerTensor> cholesky(const EagerTensor& a, Uplo uplo = Uplo::kLower);

struct Lu {
  EagerTensor p, l, u;
};
Result<Lu> lu(const EagerTensor& a);

Result<EagerTensor> solve(const Context& c, const EagerTensor& a, const EagerTensor& b);
Result<EagerTensor> solve(const EagerTensor& a, const EagerTensor& b);
Result<EagerTensor> triangular_solve(const EagerTensor& a, const EagerTensor& b, const TriangularOptions& options = {});
Result<EagerTensor> inv(const EagerTensor& a);
Result<EagerTensor> det(const EagerTensor& a);

struct Slogdet {
  EagerTensor sign, logabsdet;
};
Result<Slogdet> slogdet(const EagerTensor& a);
Result<EagerTensor> pinv(const EagerTensor& a, std::optional<double> rtol = std::nullopt);

struct Lstsq {
  EagerTensor solution, residuals, rank, singular_values;
};
Result<Lstsq> lstsq(const EagerTensor& a, const EagerTensor& b, std::optional<double> rcond = std::nullopt);

Result<EagerTensor> matrix_norm(const EagerTensor& a, MatrixNorm kind = MatrixNorm::kFrobenius);
Result<EagerTensor> vector_norm(const EagerTensor& x, double ord = 2.0, std::vector<int64_t> axes = {},
                                bool keep_dims = false);

struct TruncatedSvd {
  EagerTensor u, s, vh, discarded_weight, rank;
};
/// Records for AD as the thin SVD sliced to the kept rank (Note [Eager truncated SVD
/// derivative]): differentiable for the exact method when every batch item kept the same
/// rank; otherwise backward through it is a typed kUnsupported. lstsq records no program
/// form (backward through it is kUnsupported); vector_norm records core ops over |x|
/// (ord 0 refuses at backward).
Result<TruncatedSvd> truncated_svd(const Context& c, const EagerTensor& a, const TruncatedSvdOptions& options);
Result<TruncatedSvd> truncated_svd(const EagerTensor& a, const TruncatedSvdOptions& options);

/// The matrix exponential of the square matrices in the last two axes (batched), by
/// scaling and squaring with a Padé approximant (Note [Matrix exponential] in expm.cc):
/// backward error within the unit roundoff of the dtype. Composed of eager operations
/// that record for AD (the derivative of the approximant computed); a traced value (jit,
/// trace) runs tenferro::linalg::expm and records the linalg family's expm op (degree and
/// scaling chosen per run; its derivative is the exact Fréchet derivative). f32, f64,
/// c64, c128. Errors: kInvalidArgument (undefined), kInvalidShape (not square matrices),
/// kDTypeMismatch (integer or bool), the eager operations' errors.
Result<EagerTensor> expm(const Context& c, const EagerTensor& a);
Result<EagerTensor> expm(const EagerTensor& a);

}  // namespace tenferro::eager::linalg
