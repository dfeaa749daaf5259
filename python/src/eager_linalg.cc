// tenferro.linalg on eager tensors (src/linalg_eager), bound for python/tenferro/linalg.py.

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "eager_internal.h"
#include "engine.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/linalg_eager/linalg_eager.h"

namespace tenferro::python {

// tenferro.linalg on eager tensors (src/linalg_eager): results are eager tensors that
// record for AD. Entry points that take a Context get the call's (no_grad); the others
// record, and under no_grad their results are detached here.
namespace el = tenferro::eager::linalg;

namespace {

EagerTensor done(EagerTensor t) {
  if (tls_no_grad_depth > 0 && !(t.ad_node() && t.ad_node()->traced)) return eg::detach(t);
  return t;
}

}  // namespace

void bind_eager_linalg(py::module_ m) {
  m.def("svd", [](const EagerTensor& a, bool full, bool uv, bool gauge) -> py::object {
    el::SvdOptions o;
    o.mode = !uv ? el::SvdMode::kValuesOnly : full ? el::SvdMode::kFull : el::SvdMode::kThin;
    o.gauge_fix = gauge;
    el::Svd r = nogil([&] { return el::svd(ctx_of(a), a, o); });
    if (!uv) return py::cast(r.s);
    return py::make_tuple(r.u, r.s, r.vh);
  });
  m.def("qr", [](const EagerTensor& a, const std::string& mode) -> py::object {
    const el::QrMode qm = qr_mode_of(mode);
    el::Qr r = nogil([&] { return el::qr(ctx_of(a), a, qm); });
    if (qm == el::QrMode::kR) return py::cast(r.r);
    return py::make_tuple(r.q, r.r);
  });
  m.def("eigh", [](const EagerTensor& a, const std::string& uplo, bool vectors) -> py::object {
    const el::Uplo u = uplo_of(uplo);
    if (!vectors) return py::cast(done(nogil([&] { return el::eigvalsh(a, u); })));
    el::Eigh r = nogil([&] { return el::eigh(ctx_of(a), a, u); });
    return py::make_tuple(r.values, r.vectors);
  });
  m.def("eig", [](const EagerTensor& a, bool vectors) -> py::object {
    if (!vectors) return py::cast(done(nogil([&] { return el::eigvals(a); })));
    el::Eig r = nogil([&] { return el::eig(a); });
    return py::make_tuple(done(r.values), done(r.vectors));
  });
  m.def("cholesky", [](const EagerTensor& a, const std::string& uplo) {
    const el::Uplo u = uplo_of(uplo);
    return nogil([&] { return el::cholesky(ctx_of(a), a, u); });
  });
  m.def("solve",
        [](const EagerTensor& a, const EagerTensor& b) { return nogil([&] { return el::solve(ctx_of(a), a, b); }); });
  m.def("inv", [](const EagerTensor& a) { return done(nogil([&] { return el::inv(a); })); });
  m.def("det", [](const EagerTensor& a) { return done(nogil([&] { return el::det(a); })); });
  m.def("slogdet", [](const EagerTensor& a) {
    el::Slogdet r = nogil([&] { return el::slogdet(a); });
    return py::make_tuple(done(r.sign), done(r.logabsdet));
  });
  m.def("pinv", [](const EagerTensor& a, std::optional<double> rtol) {
    return done(nogil([&] { return el::pinv(a, rtol); }));
  });
  m.def("lstsq", [](const EagerTensor& a, const EagerTensor& b, std::optional<double> rcond) {
    el::Lstsq r = nogil([&] { return el::lstsq(a, b, rcond); });
    return py::make_tuple(done(r.solution), done(r.residuals), done(r.rank), done(r.singular_values));
  });
  m.def("matrix_norm", [](const EagerTensor& a, const std::string& kind) {
    const el::MatrixNorm k = matrix_norm_kind(kind);
    return done(nogil([&] { return el::matrix_norm(a, k); }));
  });
  m.def("vector_norm", [](const EagerTensor& a, double ord, std::vector<int64_t> axes, bool keepdims) {
    return done(nogil([&] { return el::vector_norm(a, ord, axes, keepdims); }));
  });
  m.def("expm", [](const EagerTensor& a) { return nogil([&] { return el::expm(ctx_of(a), a); }); });
  m.def("truncated_svd", [](const EagerTensor& a, std::optional<int64_t> max_rank, double rel_cutoff,
                            const std::string& method, uint64_t seed, bool gauge) {
    const el::TruncatedSvdOptions o = truncated_svd_options(max_rank, rel_cutoff, method, seed, gauge);
    el::TruncatedSvd r = nogil([&] { return el::truncated_svd(ctx_of(a), a, o); });
    return py::make_tuple(r.u, r.s, r.vh, r.discarded_weight, r.rank);
  });
}

}  // namespace tenferro::python
