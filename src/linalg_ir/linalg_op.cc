#include "tenferro/linalg_ir/linalg_op.h"

#include <charconv>
#include <cstdio>
#include <functional>
#include <mutex>

#include "tenferro/cpu_runtime/cpu_runtime.h"

namespace tenferro::linalg_ir {

using program::Extent;
using program::ValueType;

namespace {

Error compile_error(ErrorCode code, std::string msg) {
  return Error(ErrorStage::kCompile, code, "linalg", std::move(msg));
}
Error parse_error(std::string msg) { return usage_error(ErrorCode::kParse, "linalg", std::move(msg)); }

constexpr Kind kKinds[] = {Kind::kSvd,        Kind::kQr,   Kind::kEigh,       Kind::kEig,
                           Kind::kCholesky,   Kind::kLu,   Kind::kSolve,      Kind::kTriangularSolve,
                           Kind::kInv,        Kind::kDet,  Kind::kSlogdet,    Kind::kPinv,
                           Kind::kMatrixNorm, Kind::kExpm, Kind::kExpmFrechet};

std::string_view svd_mode_text(linalg::SvdMode m) {
  return m == linalg::SvdMode::kThin ? "thin" : m == linalg::SvdMode::kFull ? "full" : "values";
}
std::string_view qr_mode_text(linalg::QrMode m) {
  return m == linalg::QrMode::kReduced ? "reduced" : m == linalg::QrMode::kComplete ? "complete" : "r";
}
std::string_view uplo_text(linalg::Uplo u) { return u == linalg::Uplo::kLower ? "lower" : "upper"; }
std::string_view transpose_text(linalg::Transpose t) {
  return t == linalg::Transpose::kNone ? "n" : t == linalg::Transpose::kTranspose ? "t" : "c";
}

bool is_float(DType d) { return d == DType::kF32 || d == DType::kF64 || d == DType::kC64 || d == DType::kC128; }
DType real_of(DType d) { return d == DType::kC64 ? DType::kF32 : d == DType::kC128 ? DType::kF64 : d; }
DType complex_of(DType d) { return d == DType::kF32 ? DType::kC64 : d == DType::kF64 ? DType::kC128 : d; }

// [batch.., tail..] with exact tail extents.
ValueType with_tail(DType dt, std::span<const Extent> batch, std::initializer_list<int64_t> tail) {
  ValueType t{dt, std::vector<Extent>(batch.begin(), batch.end())};
  for (int64_t e : tail) t.shape.push_back(Extent::exact(e));
  return t;
}

}  // namespace

std::string_view kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::kSvd: return "svd";
    case Kind::kQr: return "qr";
    case Kind::kEigh: return "eigh";
    case Kind::kEig: return "eig";
    case Kind::kCholesky: return "cholesky";
    case Kind::kLu: return "lu";
    case Kind::kSolve: return "solve";
    case Kind::kTriangularSolve: return "triangular_solve";
    case Kind::kInv: return "inv";
    case Kind::kDet: return "det";
    case Kind::kSlogdet: return "slogdet";
    case Kind::kPinv: return "pinv";
    case Kind::kMatrixNorm: return "matrix_norm";
    case Kind::kExpm: return "expm";
    case Kind::kExpmFrechet: return "expm_frechet";
  }
  return "unknown";
}

bool operator==(const Payload& a, const Payload& b) noexcept {
  return a.kind == b.kind && a.svd_mode == b.svd_mode && a.gauge_fix == b.gauge_fix && a.qr_mode == b.qr_mode &&
         a.uplo == b.uplo && a.vectors == b.vectors && a.triangular.left == b.triangular.left &&
         a.triangular.uplo == b.triangular.uplo && a.triangular.unit_diagonal == b.triangular.unit_diagonal &&
         a.triangular.transpose == b.triangular.transpose && a.rtol == b.rtol && a.norm == b.norm;
}

std::shared_ptr<const LinalgOp> LinalgOp::make(Payload payload) {
  return std::shared_ptr<const LinalgOp>(new LinalgOp(payload));
}

int LinalgOp::inputs() const noexcept {
  return p_.kind == Kind::kSolve || p_.kind == Kind::kTriangularSolve || p_.kind == Kind::kExpmFrechet ? 2 : 1;
}

uint64_t LinalgOp::payload_hash() const { return std::hash<std::string>()(payload_text()); }

bool LinalgOp::payload_equal(const ExtensionOp& other) const {
  return static_cast<const LinalgOp&>(other).p_ == p_;
}

// The text form names only the options that apply to the kind (the others stay at their
// defaults, so a parsed payload is equal to the printed one).
std::string LinalgOp::payload_text() const {
  std::string s(kind_name(p_.kind));
  switch (p_.kind) {
    case Kind::kSvd:
      s += ";mode=" + std::string(svd_mode_text(p_.svd_mode)) + ";gauge=" + (p_.gauge_fix ? "1" : "0");
      break;
    case Kind::kQr: s += ";mode=" + std::string(qr_mode_text(p_.qr_mode)); break;
    case Kind::kEigh: s += ";uplo=" + std::string(uplo_text(p_.uplo)) + ";vectors=" + (p_.vectors ? "1" : "0"); break;
    case Kind::kEig: s += std::string(";vectors=") + (p_.vectors ? "1" : "0"); break;
    case Kind::kCholesky: s += ";uplo=" + std::string(uplo_text(p_.uplo)); break;
    case Kind::kTriangularSolve:
      s += std::string(";side=") + (p_.triangular.left ? "left" : "right") + ";uplo=" +
           std::string(uplo_text(p_.triangular.uplo)) + ";unit=" + (p_.triangular.unit_diagonal ? "1" : "0") +
           ";trans=" + std::string(transpose_text(p_.triangular.transpose));
      break;
    case Kind::kPinv:
      if (p_.rtol) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", *p_.rtol);
        s += std::string(";rtol=") + buf;
      }
      break;
    case Kind::kMatrixNorm: s += ";ord=" + std::string(linalg::matrix_norm_name(p_.norm)); break;
    default: break;
  }
  return s;
}

std::vector<program::Alias> LinalgOp::aliases() const {
  size_t outs = 1;
  switch (p_.kind) {
    case Kind::kSvd: outs = p_.svd_mode == linalg::SvdMode::kValuesOnly ? 1 : 3; break;
    case Kind::kQr: outs = p_.qr_mode == linalg::QrMode::kR ? 1 : 2; break;
    case Kind::kEigh:
    case Kind::kEig: outs = p_.vectors ? 2 : 1; break;
    case Kind::kLu: outs = 3; break;
    case Kind::kSlogdet: outs = 2; break;
    default: break;
  }
  return std::vector<program::Alias>(outs);
}

Result<std::vector<ValueType>> LinalgOp::infer(std::span<const ValueType> in, std::span<const program::SymbolInfo>,
                                               std::vector<program::PendingGuard>&) const {
  const std::string name(kind_name(p_.kind));
  if (static_cast<int>(in.size()) != inputs()) {
    return compile_error(ErrorCode::kInvalidArgument, name + " takes " + std::to_string(inputs()) + " operand(s), got " +
                                                          std::to_string(in.size()));
  }
  for (const ValueType& t : in) {
    if (!is_float(t.dtype)) {
      return compile_error(ErrorCode::kDTypeMismatch,
                           name + " needs f32, f64, c64 or c128 operands, got " + std::string(dtype_name(t.dtype)));
    }
    if (t.rank() < 2) {
      return compile_error(ErrorCode::kInvalidShape, name + " needs matrices in the last two axes (rank >= 2)");
    }
    if (!t.shape[t.shape.size() - 1].is_exact() || !t.shape[t.shape.size() - 2].is_exact()) {
      return compile_error(ErrorCode::kUnsupported, name + " needs exact matrix extents (batch axes may be symbolic)");
    }
  }
  const ValueType& a = in[0];
  const DType dt = a.dtype;
  const int64_t m = a.shape[a.shape.size() - 2].exact_value(), n = a.shape[a.shape.size() - 1].exact_value();
  const int64_t k = std::min(m, n);
  const std::span<const Extent> batch(a.shape.data(), a.shape.size() - 2);
  const bool square_needed = p_.kind != Kind::kSvd && p_.kind != Kind::kQr && p_.kind != Kind::kLu &&
                             p_.kind != Kind::kPinv && p_.kind != Kind::kMatrixNorm;
  if (square_needed && m != n) {
    return compile_error(ErrorCode::kInvalidShape, name + " needs square matrices, got " + std::to_string(m) + " x " +
                                                          std::to_string(n));
  }
  std::vector<ValueType> out;
  switch (p_.kind) {
    case Kind::kSvd: {
      const bool full = p_.svd_mode == linalg::SvdMode::kFull;
      if (p_.svd_mode != linalg::SvdMode::kValuesOnly) out.push_back(with_tail(dt, batch, {m, full ? m : k}));
      out.push_back(with_tail(real_of(dt), batch, {k}));
      if (p_.svd_mode != linalg::SvdMode::kValuesOnly) out.push_back(with_tail(dt, batch, {full ? n : k, n}));
      break;
    }
    case Kind::kQr: {
      const bool complete = p_.qr_mode == linalg::QrMode::kComplete;
      if (p_.qr_mode != linalg::QrMode::kR) out.push_back(with_tail(dt, batch, {m, complete ? m : k}));
      out.push_back(with_tail(dt, batch, {complete ? m : k, n}));
      break;
    }
    case Kind::kEigh:
      out.push_back(with_tail(real_of(dt), batch, {n}));
      if (p_.vectors) out.push_back(with_tail(dt, batch, {n, n}));
      break;
    case Kind::kEig:
      out.push_back(with_tail(complex_of(dt), batch, {n}));
      if (p_.vectors) out.push_back(with_tail(complex_of(dt), batch, {n, n}));
      break;
    case Kind::kCholesky:
    case Kind::kExpm:
    case Kind::kInv: out.push_back(with_tail(dt, batch, {n, n})); break;
    case Kind::kExpmFrechet: {
      const ValueType& e = in[1];
      if (e.dtype != dt) {
        return compile_error(ErrorCode::kDTypeMismatch, name + " operands have dtypes " + std::string(dtype_name(dt)) +
                                                            " and " + std::string(dtype_name(e.dtype)));
      }
      if (e.shape != a.shape) return compile_error(ErrorCode::kShapeMismatch, name + " needs E of A's shape");
      out.push_back(with_tail(dt, batch, {n, n}));
      break;
    }
    case Kind::kLu:
      out.push_back(with_tail(dt, batch, {m, m}));
      out.push_back(with_tail(dt, batch, {m, k}));
      out.push_back(with_tail(dt, batch, {k, n}));
      break;
    case Kind::kSolve:
    case Kind::kTriangularSolve: {
      const ValueType& b = in[1];
      if (b.dtype != dt) {
        return compile_error(ErrorCode::kDTypeMismatch, name + " operands have dtypes " + std::string(dtype_name(dt)) +
                                                            " and " + std::string(dtype_name(b.dtype)));
      }
      if (b.rank() != a.rank() || !std::equal(batch.begin(), batch.end(), b.shape.begin())) {
        return compile_error(ErrorCode::kShapeMismatch, name + " needs B with A's batch axes ([.., rows, k])");
      }
      const int64_t bm = b.shape[b.shape.size() - 2].exact_value(), bk = b.shape[b.shape.size() - 1].exact_value();
      const bool left = p_.kind == Kind::kSolve || p_.triangular.left;
      if ((left ? bm : bk) != n) {
        return compile_error(ErrorCode::kShapeMismatch,
                             name + ": A is " + std::to_string(n) + " x " + std::to_string(n) + ", B is " +
                                 std::to_string(bm) + " x " + std::to_string(bk));
      }
      out.push_back(with_tail(dt, batch, {bm, bk}));
      break;
    }
    case Kind::kDet: out.push_back(ValueType{dt, std::vector<Extent>(batch.begin(), batch.end())}); break;
    case Kind::kSlogdet:
      out.push_back(ValueType{dt, std::vector<Extent>(batch.begin(), batch.end())});
      out.push_back(ValueType{real_of(dt), std::vector<Extent>(batch.begin(), batch.end())});
      break;
    case Kind::kPinv: out.push_back(with_tail(dt, batch, {n, m})); break;
    case Kind::kMatrixNorm: out.push_back(ValueType{real_of(dt), std::vector<Extent>(batch.begin(), batch.end())}); break;
  }
  return out;
}

Result<std::vector<Tensor>> LinalgOp::compute(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> in,
                                              const std::shared_ptr<HostBufferPool>& pool,
                                              linalg::Workspace* workspace) const {
  std::vector<Tensor> out;
  linalg::LinalgOptions lo;
  lo.workspace = workspace;
  switch (p_.kind) {
    case Kind::kSvd: {
      linalg::SvdOptions o;
      o.mode = p_.svd_mode;
      o.gauge_fix = p_.gauge_fix;
      o.linalg = lo;
      TENFERRO_TRY(linalg::SvdResult r, linalg::svd(ctx, in[0], o, pool));
      if (r.u.defined()) out.push_back(std::move(r.u));
      out.push_back(std::move(r.s));
      if (r.vh.defined()) out.push_back(std::move(r.vh));
      break;
    }
    case Kind::kQr: {
      TENFERRO_TRY(linalg::QrResult r, linalg::qr(ctx, in[0], p_.qr_mode, lo, pool));
      if (r.q.defined()) out.push_back(std::move(r.q));
      out.push_back(std::move(r.r));
      break;
    }
    case Kind::kEigh: {
      if (!p_.vectors) {
        TENFERRO_TRY(Tensor w, linalg::eigvalsh(ctx, in[0], p_.uplo, lo, pool));
        out.push_back(std::move(w));
        break;
      }
      TENFERRO_TRY(linalg::EighResult r, linalg::eigh(ctx, in[0], p_.uplo, lo, pool));
      out.push_back(std::move(r.values));
      out.push_back(std::move(r.vectors));
      break;
    }
    case Kind::kEig: {
      if (!p_.vectors) {
        TENFERRO_TRY(Tensor w, linalg::eigvals(ctx, in[0], lo, pool));
        out.push_back(std::move(w));
        break;
      }
      TENFERRO_TRY(linalg::EigResult r, linalg::eig(ctx, in[0], lo, pool));
      out.push_back(std::move(r.values));
      out.push_back(std::move(r.vectors));
      break;
    }
    case Kind::kCholesky: {
      TENFERRO_TRY(Tensor l, linalg::cholesky(ctx, in[0], p_.uplo, lo, pool));
      out.push_back(std::move(l));
      break;
    }
    case Kind::kLu: {
      TENFERRO_TRY(linalg::LuResult r, linalg::lu(ctx, in[0], lo, pool));
      out.push_back(std::move(r.p));
      out.push_back(std::move(r.l));
      out.push_back(std::move(r.u));
      break;
    }
    case Kind::kSolve: {
      TENFERRO_TRY(Tensor x, linalg::solve(ctx, in[0], in[1], lo, pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kTriangularSolve: {
      TENFERRO_TRY(Tensor x, linalg::triangular_solve(ctx, in[0], in[1], p_.triangular, pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kInv: {
      TENFERRO_TRY(Tensor x, linalg::inv(ctx, in[0], lo, pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kDet: {
      TENFERRO_TRY(Tensor x, linalg::det(ctx, in[0], lo, pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kSlogdet: {
      TENFERRO_TRY(linalg::SlogdetResult r, linalg::slogdet(ctx, in[0], lo, pool));
      out.push_back(std::move(r.sign));
      out.push_back(std::move(r.logabsdet));
      break;
    }
    case Kind::kPinv: {
      TENFERRO_TRY(Tensor x, linalg::pinv(ctx, in[0], p_.rtol, lo, pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kMatrixNorm: {
      TENFERRO_TRY(Tensor x, linalg::matrix_norm(ctx, in[0], p_.norm, lo, pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kExpm: {
      TENFERRO_TRY(Tensor x, linalg::expm(ctx, in[0], pool));
      out.push_back(std::move(x));
      break;
    }
    case Kind::kExpmFrechet: {
      TENFERRO_TRY(Tensor x, linalg::expm_frechet(ctx, in[0], in[1], pool));
      out.push_back(std::move(x));
      break;
    }
  }
  return out;
}

Result<std::vector<Tensor>> LinalgOp::evaluate_reference(std::span<const Tensor> inputs) const {
  const cpu::CpuExecutionContext seq = cpu::CpuExecutionContext::sequential();
  return compute(seq, inputs, nullptr);
}

Result<std::shared_ptr<const LinalgOp>> parse_linalg_payload(std::string_view payload) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= payload.size()) {
    const size_t semi = payload.find(';', start);
    const size_t end = semi == std::string_view::npos ? payload.size() : semi;
    parts.push_back(payload.substr(start, end - start));
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  Payload p;
  bool found = false;
  for (Kind k : kKinds) {
    if (kind_name(k) == parts[0]) {
      p.kind = k;
      found = true;
    }
  }
  if (!found) return parse_error("unknown linalg operation '" + std::string(parts[0]) + "'");
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) return parse_error("option '" + std::string(parts[i]) + "' lacks '='");
    const std::string_view key = parts[i].substr(0, eq), val = parts[i].substr(eq + 1);
    auto bad = [&] {
      return parse_error("bad option '" + std::string(parts[i]) + "' for " + std::string(kind_name(p.kind)));
    };
    auto flag = [&](bool* dst) -> bool {
      if (val != "0" && val != "1") return false;
      *dst = val == "1";
      return true;
    };
    auto uplo = [&](linalg::Uplo* dst) -> bool {
      if (val != "lower" && val != "upper") return false;
      *dst = val == "lower" ? linalg::Uplo::kLower : linalg::Uplo::kUpper;
      return true;
    };
    bool ok_opt = false;
    switch (p.kind) {
      case Kind::kSvd:
        if (key == "mode") {
          ok_opt = val == "thin" || val == "full" || val == "values";
          p.svd_mode = val == "full" ? linalg::SvdMode::kFull
                       : val == "values" ? linalg::SvdMode::kValuesOnly
                                         : linalg::SvdMode::kThin;
        } else if (key == "gauge") {
          ok_opt = flag(&p.gauge_fix);
        }
        break;
      case Kind::kQr:
        if (key == "mode") {
          ok_opt = val == "reduced" || val == "complete" || val == "r";
          p.qr_mode = val == "complete" ? linalg::QrMode::kComplete
                      : val == "r"      ? linalg::QrMode::kR
                                        : linalg::QrMode::kReduced;
        }
        break;
      case Kind::kEigh:
        if (key == "uplo") ok_opt = uplo(&p.uplo);
        if (key == "vectors") ok_opt = flag(&p.vectors);
        break;
      case Kind::kEig:
        if (key == "vectors") ok_opt = flag(&p.vectors);
        break;
      case Kind::kCholesky:
        if (key == "uplo") ok_opt = uplo(&p.uplo);
        break;
      case Kind::kTriangularSolve:
        if (key == "side") {
          ok_opt = val == "left" || val == "right";
          p.triangular.left = val == "left";
        } else if (key == "uplo") {
          ok_opt = uplo(&p.triangular.uplo);
        } else if (key == "unit") {
          ok_opt = flag(&p.triangular.unit_diagonal);
        } else if (key == "trans") {
          ok_opt = val == "n" || val == "t" || val == "c";
          p.triangular.transpose = val == "t"   ? linalg::Transpose::kTranspose
                                   : val == "c" ? linalg::Transpose::kConjTranspose
                                                : linalg::Transpose::kNone;
        }
        break;
      case Kind::kPinv:
        if (key == "rtol") {
          double v = 0;
          const auto r = std::from_chars(val.data(), val.data() + val.size(), v);
          ok_opt = r.ec == std::errc() && r.ptr == val.data() + val.size() && v >= 0;
          p.rtol = v;
        }
        break;
      case Kind::kMatrixNorm:
        if (key == "ord") {
          const std::optional<linalg::MatrixNorm> norm = linalg::parse_matrix_norm(val);
          ok_opt = norm.has_value();
          if (norm) p.norm = *norm;
        }
        break;
      default: break;
    }
    if (!ok_opt) return bad();
  }
  return LinalgOp::make(p);
}

Result<void> register_linalg_family(program::ExtensionRegistry& registry) {
  return registry.add(std::string(kLinalgFamily),
                      [](std::string_view payload) -> Result<std::shared_ptr<const program::ExtensionOp>> {
                        TENFERRO_TRY(std::shared_ptr<const LinalgOp> op, parse_linalg_payload(payload));
                        return std::shared_ptr<const program::ExtensionOp>(std::move(op));
                      });
}

Result<std::vector<program::Value>> emit_linalg(program::ProgramBuilder& builder, const Payload& payload,
                                                std::span<const program::Value> operands) {
  return builder.extension(LinalgOp::make(payload), operands);
}

namespace {

// Note [Linalg CPU module]: a prepared linalg node holds its op and runs the kernels of
// tenferro::linalg on the context the CPU bridge entered (routes decided per call by
// decide_route with that context's threads and batch settings) and the domain's pool.
// In Reproducible mode it runs them on a sequential context: the kernels then use one
// thread (LAPACK's and the small kernels' results are bitwise the same for any batch
// split, but LAPACK's own threading is not promised to be).
class LinalgKernel final : public runtime::NodeKernel {
 public:
  LinalgKernel(std::shared_ptr<const LinalgOp> op, bool sequential) : op_(std::move(op)), sequential_(sequential) {}
  // The node's held workspace (Note [Held workspace] in linalg): LAPACK's workspace sizes
  // queried once per shape and one scratch block, lent to one run at a time (a run
  // that finds it busy queries and draws from the pool).
  Result<void> run(runtime::EngineContext& engine_ctx, std::span<const Tensor> in, std::span<Tensor> out) const override {
    const cpu_runtime::CpuEntered entered = cpu_runtime::cpu_entered(engine_ctx);
    if (entered.ctx == nullptr) {
      return Error(ErrorStage::kCompletion, ErrorCode::kInternal, "linalg", "not entered by the CPU bridge");
    }
    std::vector<Tensor> r;
    std::unique_lock held(workspace_mutex_, std::try_to_lock);
    linalg::Workspace* ws = held.owns_lock() ? &workspace_ : nullptr;
    if (sequential_) {
      const cpu::CpuExecutionContext seq = cpu::CpuExecutionContext::sequential();
      TENFERRO_TRY(r, op_->compute(seq, in, *entered.pool, ws));
    } else {
      TENFERRO_TRY(r, op_->compute(*entered.ctx, in, *entered.pool, ws));
    }
    if (r.size() != out.size()) {
      return Error(ErrorStage::kCompletion, ErrorCode::kInternal, "linalg", "output count differs from inference");
    }
    for (size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
    return ok();
  }
  std::string_view provider() const override { return sequential_ ? "cpu.linalg (sequential)" : "cpu.linalg"; }

 private:
  std::shared_ptr<const LinalgOp> op_;
  bool sequential_;
  mutable std::mutex workspace_mutex_;
  mutable linalg::Workspace workspace_;
};

class LinalgModule final : public runtime::ExtensionModule {
 public:
  std::string_view family_id() const override { return kLinalgFamily; }
  Result<runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>> prepare(
      const runtime::NodeRequest& req) const override {
    using Cap = runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>;
    const auto* op = dynamic_cast<const LinalgOp*>(req.op->extension());
    if (op == nullptr) return Cap::unsupported("not a tenferro linalg op");
    // The kernel keeps its own op with the same payload (the request lends the
    // program's op only for the call).
    auto shared = LinalgOp::make(op->payload());
    return Cap::prepared(
        std::make_shared<LinalgKernel>(std::move(shared), req.determinism == runtime::DeterminismMode::kReproducible));
  }
};

}  // namespace

std::shared_ptr<const runtime::ExtensionModule> cpu_linalg_module() {
  // Immutable registration metadata: one instance per process, so registering it again
  // is the runtime's same-module no-op.
  static const std::shared_ptr<const runtime::ExtensionModule> module = std::make_shared<LinalgModule>();
  return module;
}

}  // namespace tenferro::linalg_ir
