#pragma once
/// \file
/// The linalg extension family in programs: one extension op per decomposition or
/// solver (payload: the operation and its options), its type inference (batch axes may
/// be symbolic; matrix extents must be exact), its text form, reference evaluation for
/// the interpreter (the CPU kernels of tenferro::linalg on one thread) and the CPU
/// engine's native module (the same kernels on the entered context, in parallel).
///
/// Not in programs: lstsq and truncated_svd (their result shapes depend on values).

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/ad/ad.h"
#include "tenferro/core/result.h"
#include "tenferro/linalg/linalg.h"
#include "tenferro/program/extension.h"
#include "tenferro/program/program.h"
#include "tenferro/runtime/engine.h"

namespace tenferro::linalg_ir {

/// The family id of linalg extension ops.
inline constexpr std::string_view kLinalgFamily = "linalg";

/// Which operation an op computes, and its outputs in order.
enum class Kind : uint8_t {
  kSvd,              ///< [U, S, Vh], or [S] for values only
  kQr,               ///< [Q, R], or [R] for QrMode::kR
  kEigh,             ///< [values, vectors], or [values] (eigvalsh)
  kEig,              ///< [values, vectors], or [values] (eigvals); complex
  kCholesky,         ///< [L or U]
  kLu,               ///< [P, L, U]
  kSolve,            ///< [X] (inputs A, B; B a matrix [.., n, k] with A's batch axes)
  kTriangularSolve,  ///< [X] (inputs A, B)
  kInv,              ///< [X]
  kDet,              ///< [det]
  kSlogdet,          ///< [sign, logabsdet]
  kPinv,             ///< [X]
  kMatrixNorm,       ///< [norm]
  kExpm,             ///< [expm(A)]
  kExpmFrechet,      ///< [L(A, E)] (inputs A, E): the Fréchet derivative of expm, linear in E
};
std::string_view kind_name(Kind kind) noexcept;

/// The payload: the operation and the options that apply to it (others stay default and
/// take part in equality and hashing as they are).
struct Payload {
  Kind kind = Kind::kSvd;
  linalg::SvdMode svd_mode = linalg::SvdMode::kThin;
  bool gauge_fix = false;
  linalg::QrMode qr_mode = linalg::QrMode::kReduced;
  linalg::Uplo uplo = linalg::Uplo::kLower;
  bool vectors = true;                        ///< eigh / eig
  linalg::TriangularOptions triangular{};     ///< left, uplo, unit_diagonal, transpose
  std::optional<double> rtol{};               ///< pinv
  linalg::MatrixNorm norm = linalg::MatrixNorm::kFrobenius;
  friend bool operator==(const Payload& a, const Payload& b) noexcept;
};

/// One linalg op. Immutable.
class LinalgOp final : public program::ExtensionOp {
 public:
  static std::shared_ptr<const LinalgOp> make(Payload payload);
  const Payload& payload() const noexcept { return p_; }
  /// Number of operands (2 for solve, triangular_solve and expm_frechet, else 1).
  int inputs() const noexcept;

  std::string_view family_id() const override { return kLinalgFamily; }
  uint64_t payload_hash() const override;
  bool payload_equal(const ExtensionOp& other) const override;
  /// "KIND[;key=value...]", e.g. "svd;mode=full;gauge=1", "cholesky;uplo=upper".
  std::string payload_text() const override;
  std::vector<program::Effect> effects() const override { return {}; }
  std::vector<program::Alias> aliases() const override;
  /// Operands of one floating dtype, rank >= 2, exact matrix extents (square where the
  /// operation needs it); batch axes pass through (solve and triangular_solve: equal
  /// batch axes). Errors (kCompile): kInvalidArgument (operand count), kDTypeMismatch,
  /// kInvalidShape, kShapeMismatch, kUnsupported (symbolic matrix extents).
  Result<std::vector<program::ValueType>> infer(std::span<const program::ValueType> inputs,
                                                std::span<const program::SymbolInfo> symbols,
                                                std::vector<program::PendingGuard>& guards) const override;
  /// The CPU kernels on one thread (sequential context, no pool).
  Result<std::vector<Tensor>> evaluate_reference(std::span<const Tensor> inputs) const override;

  /// Runs the op with the linalg kernels on `ctx` (the reference evaluation and the CPU
  /// module share this); `workspace` (optional, not owned) holds LAPACK's workspace
  /// between runs (a prepared node's).
  Result<std::vector<Tensor>> compute(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> inputs,
                                      const std::shared_ptr<HostBufferPool>& pool,
                                      linalg::Workspace* workspace = nullptr) const;

 private:
  explicit LinalgOp(Payload p) : p_(p) {}
  Payload p_;
};

/// Parses a linalg payload ("svd;mode=full"). Errors: kParse naming the bad part.
Result<std::shared_ptr<const LinalgOp>> parse_linalg_payload(std::string_view payload);

/// Adds the linalg family to a text-format registry. Errors: kInvalidArgument when the
/// registry already has it.
Result<void> register_linalg_family(program::ExtensionRegistry& registry);

/// Emits one linalg op over `operands` into `builder`; returns its outputs.
Result<std::vector<program::Value>> emit_linalg(program::ProgramBuilder& builder, const Payload& payload,
                                                std::span<const program::Value> operands);

/// Options of the family's AD rules (Note [Linalg rules] in linalg_rule.cc).
struct LinalgAdOptions {
  /// Lorentzian broadening ε: every 1/x of a spectral gap (SVD: s_j² − s_i²; eigh:
  /// w_j − w_i) and every 1/s becomes x / (x² + ε). 0: exact, with 0 where x = 0.
  double broadening = 1e-12;
};
/// The linalg family's differentiation rules, for AdContext::install. JVPs of svd (thin,
/// values-only), eigh/eigvalsh, qr (reduced or R-only, rows >= columns), cholesky, lu
/// (square), solve, triangular_solve, inv, det, slogdet, pinv, matrix_norm, eigvals and
/// expm (dX = expm_frechet(A, dA)) and expm_frechet (in E: L(A, dE); in A: the block
/// identity once more, so expm differentiates to any order; exact extents needed); the
/// transposes of solve and triangular_solve in their right-hand side and of expm_frechet
/// in E (L(Aᴴ, ·)). Other cases (full
/// SVD, complete QR, eig vectors) are kUnsupported at transform time.
std::shared_ptr<const ad::ExtensionRule> linalg_rule(LinalgAdOptions options = {});

/// The CPU engine's native module for the family (one immutable instance per process).
/// Register it with Runtime::register_extension(cpu_engine_id, cpu_linalg_module()).
/// Prepared nodes run the kernels on the entered context and the domain's pool.
std::shared_ptr<const runtime::ExtensionModule> cpu_linalg_module();

}  // namespace tenferro::linalg_ir
