// tenferro.linalg: the linalg module's decompositions and solvers on numpy arrays. numpy's
// names and return conventions live in python/tenferro/linalg.py; this file runs the
// C++ functions inside the engine (GIL released) and hands results back without copies.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "convert.h"
#include "engine.h"
#include "tenferro/linalg/linalg.h"

namespace tenferro::python {
namespace {

namespace la = tenferro::linalg;

// Runs f(ctx, pool) -> Result<R> in the engine's domain with the GIL released.
template <class R, class F>
R run(Engine& e, F&& f) {
  std::optional<Result<R>> out;
  {
    py::gil_scoped_release nogil;
    Result<void> status =
        e.engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
          out.emplace(f(ctx, e.engine->pool(0)));
          return {};
        });
    if (!status) out.emplace(status.error());
  }
  return unwrap(std::move(*out));
}

}  // namespace

void bind_linalg(py::module_& m) {
  using A = const py::array&;
  m.def("svd", [](Engine& e, A a, bool full, bool uv, bool gauge) -> py::object {
    const Tensor t = from_numpy(a);
    la::SvdOptions o;
    o.mode = !uv ? la::SvdMode::kValuesOnly : full ? la::SvdMode::kFull : la::SvdMode::kThin;
    o.gauge_fix = gauge;
    auto r = run<la::SvdResult>(e, [&](auto& ctx, auto& pool) { return la::svd(ctx, t, o, pool); });
    if (!uv) return to_numpy(r.s);
    return py::make_tuple(to_numpy(r.u), to_numpy(r.s), to_numpy(r.vh));
  });
  m.def("qr", [](Engine& e, A a, const std::string& mode) -> py::object {
    const Tensor t = from_numpy(a);
    const la::QrMode qm = qr_mode_of(mode);
    auto r = run<la::QrResult>(e, [&](auto& ctx, auto& pool) { return la::qr(ctx, t, qm, {}, pool); });
    if (qm == la::QrMode::kR) return to_numpy(r.r);
    return py::make_tuple(to_numpy(r.q), to_numpy(r.r));
  });
  m.def("eigh", [](Engine& e, A a, const std::string& uplo, bool vectors) -> py::object {
    const Tensor t = from_numpy(a);
    const la::Uplo u = uplo_of(uplo);
    if (!vectors)
      return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::eigvalsh(ctx, t, u, {}, pool); }));
    auto r = run<la::EighResult>(e, [&](auto& ctx, auto& pool) { return la::eigh(ctx, t, u, {}, pool); });
    return py::make_tuple(to_numpy(r.values), to_numpy(r.vectors));
  });
  m.def("eig", [](Engine& e, A a, bool vectors) -> py::object {
    const Tensor t = from_numpy(a);
    if (!vectors) return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::eigvals(ctx, t, {}, pool); }));
    auto r = run<la::EigResult>(e, [&](auto& ctx, auto& pool) { return la::eig(ctx, t, {}, pool); });
    return py::make_tuple(to_numpy(r.values), to_numpy(r.vectors));
  });
  m.def("cholesky", [](Engine& e, A a, const std::string& uplo) {
    const Tensor t = from_numpy(a);
    const la::Uplo u = uplo_of(uplo);
    return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::cholesky(ctx, t, u, {}, pool); }));
  });
  m.def("solve", [](Engine& e, A a, A b) {
    const Tensor ta = from_numpy(a), tb = from_numpy(b);
    return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::solve(ctx, ta, tb, {}, pool); }));
  });
  m.def("inv", [](Engine& e, A a) {
    const Tensor t = from_numpy(a);
    return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::inv(ctx, t, {}, pool); }));
  });
  m.def("det", [](Engine& e, A a) {
    const Tensor t = from_numpy(a);
    return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::det(ctx, t, {}, pool); }));
  });
  m.def("slogdet", [](Engine& e, A a) {
    const Tensor t = from_numpy(a);
    auto r = run<la::SlogdetResult>(e, [&](auto& ctx, auto& pool) { return la::slogdet(ctx, t, {}, pool); });
    return py::make_tuple(to_numpy(r.sign), to_numpy(r.logabsdet));
  });
  m.def("pinv", [](Engine& e, A a, std::optional<double> rtol) {
    const Tensor t = from_numpy(a);
    return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::pinv(ctx, t, rtol, {}, pool); }));
  });
  m.def("lstsq", [](Engine& e, A a, A b, std::optional<double> rcond) {
    const Tensor ta = from_numpy(a), tb = from_numpy(b);
    auto r = run<la::LstsqResult>(e, [&](auto& ctx, auto& pool) { return la::lstsq(ctx, ta, tb, rcond, {}, pool); });
    return py::make_tuple(to_numpy(r.solution), to_numpy(r.residuals), to_numpy(r.rank), to_numpy(r.singular_values));
  });
  m.def("matrix_norm", [](Engine& e, A a, const std::string& kind) {
    const Tensor t = from_numpy(a);
    const la::MatrixNorm k = matrix_norm_kind(kind);
    return to_numpy(run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::matrix_norm(ctx, t, k, {}, pool); }));
  });
  m.def("vector_norm", [](Engine& e, A a, double ord, std::vector<int64_t> axes, bool keepdims) {
    const Tensor t = from_numpy(a);
    Shape ax;
    for (int64_t v : axes) ax.push_back(v);
    return to_numpy(
        run<Tensor>(e, [&](auto& ctx, auto& pool) { return la::vector_norm(ctx, t, ord, ax, keepdims, pool); }));
  });
  m.def("truncated_svd", [](Engine& e, A a, std::optional<int64_t> max_rank, double rel_cutoff,
                            const std::string& method, uint64_t seed, bool gauge) {
    const Tensor t = from_numpy(a);
    const la::TruncatedSvdOptions o = truncated_svd_options(max_rank, rel_cutoff, method, seed, gauge);
    auto r = run<la::TruncatedSvdResult>(e, [&](auto& ctx, auto& pool) { return la::truncated_svd(ctx, t, o, pool); });
    return py::make_tuple(to_numpy(r.u), to_numpy(r.s), to_numpy(r.vh), to_numpy(r.discarded_weight), to_numpy(r.rank));
  });
}

la::Uplo uplo_of(const std::string& s) {
  if (s == "L" || s == "l") return la::Uplo::kLower;
  if (s == "U" || s == "u") return la::Uplo::kUpper;
  throw py::value_error("tenferro.linalg: UPLO must be 'L' or 'U', got '" + s + "'");
}

la::QrMode qr_mode_of(const std::string& mode) {
  if (mode == "reduced") return la::QrMode::kReduced;
  if (mode == "complete") return la::QrMode::kComplete;
  if (mode == "r") return la::QrMode::kR;
  throw py::value_error("tenferro.linalg.qr: mode must be 'reduced', 'complete' or 'r', got '" + mode + "'");
}

la::MatrixNorm matrix_norm_kind(const std::string& kind) {
  if (const std::optional<la::MatrixNorm> k = la::parse_matrix_norm(kind)) return *k;
  throw py::value_error("tenferro.linalg.matrix_norm: ord must be 'fro', 'nuc', 2, 1, inf, -2, -1 or -inf");
}

la::TruncatedSvdOptions truncated_svd_options(std::optional<int64_t> max_rank, double rel_cutoff,
                                              const std::string& method, uint64_t seed, bool gauge_fix) {
  la::TruncatedSvdOptions o;
  o.max_rank = max_rank;
  o.rel_cutoff = rel_cutoff;
  if (method == "auto") {
    o.method = la::TruncatedSvdMethod::kAuto;
  } else if (method == "exact") {
    o.method = la::TruncatedSvdMethod::kExact;
  } else if (method == "randomized") {
    o.method = la::TruncatedSvdMethod::kRandomized;
  } else {
    throw py::value_error("tenferro.linalg.truncated_svd: method must be 'auto', 'exact' or 'randomized'");
  }
  o.seed = seed;
  o.gauge_fix = gauge_fix;
  return o;
}

}  // namespace tenferro::python
