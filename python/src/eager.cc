// tenferro.Runtime / tenferro.EagerTensor: the eager API (src/eager) for Python. Every
// operation is one call of the C++ eager API with the GIL released; tensors share memory
// with the numpy arrays they come from and go to (Note [Zero-copy interop]).

#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "engine.h"
#include "tenferro/ad/ad.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/eager/eager.h"
#include "tenferro/linalg_eager/linalg_eager.h"
#include "tenferro/program/text.h"

namespace tenferro::python {
namespace {

namespace eg = tenferro::eager;
using eg::EagerTensor;

// Note [Python no_grad]: `with tenferro.no_grad():` turns AD recording off for the eager
// calls the current Python thread makes inside the block (as torch.no_grad does). The
// C++ core keeps no such state (an op records when its Context has grad enabled;
// Context::no_grad() is the C++ scope); the binding keeps a per-thread depth and derives
// each call's Context from it, so other threads and runtimes are unaffected.
thread_local int tls_no_grad_depth = 0;
// Note [Python trace]: while tenferro.trace runs the user's function (per thread), a
// value computed from the trace inputs must not be read back to the host: it would
// enter the program as a constant of this one trace. Such reads raise.
thread_local int tls_trace_depth = 0;

void refuse_traced_read(const EagerTensor& x, const char* what) {
  if (tls_trace_depth > 0 && x.ad_node() && x.ad_node()->traced) {
    throw py::type_error(std::string("tenferro.trace: ") + what +
                         " of a traced value inside the traced function would freeze it as a constant of the "
                         "program; compute with tenferro operations instead");
  }
}

// The context of a call on `t` (its runtime's default placement policy).
eg::Context ctx_of(const EagerTensor& t) {
  const eg::Context c = eg::Context::of(t);
  return tls_no_grad_depth > 0 ? c.no_grad() : c;
}

// Runs `f` (no Python objects inside) with the GIL released and unwraps its result.
template <class F>
auto nogil(F&& f) {
  std::optional<decltype(f())> r;
  {
    py::gil_scoped_release release;
    r.emplace(f());
  }
  return unwrap(std::move(*r));
}

Shape dims_of(const std::vector<int64_t>& v) {
  Shape s;
  for (int64_t x : v) s.push_back(x);
  return s;
}

// Axes argument: None (all), an int, or a sequence; negative axes count from the end
// (the eager ops normalize them and name the axis as given in errors).
Shape axes_of(const py::object& axis) {
  Shape out;
  if (axis.is_none()) return out;
  if (is_integer(axis)) {
    out.push_back(int_arg(axis, "axis"));
  } else {
    for (const py::handle a : axis) out.push_back(int_arg(a, "axis"));
  }
  return out;
}

DType dtype_from(const py::object& dt) { return dtype_of(py::dtype::from_args(dt)); }

// An operand of a binary operation: a tensor, or a Python/numpy scalar in the tensor's
// dtype (scalars never change the result dtype; arrays must be converted explicitly).
EagerTensor operand(const EagerTensor& like, const py::object& o) {
  if (py::isinstance<EagerTensor>(o)) return o.cast<EagerTensor>();
  if (py::isinstance<py::array>(o)) {
    return unwrap(like.runtime()->from_host(from_numpy(py::reinterpret_borrow<py::array>(o))));
  }
  c128 v;
  if (PyComplex_Check(o.ptr())) {
    v = c128(PyComplex_RealAsDouble(o.ptr()), PyComplex_ImagAsDouble(o.ptr()));
  } else {
    v = c128(o.cast<double>(), 0.0);
  }
  return unwrap(ctx_of(like).scalar(v, like.dtype()));
}

using Binary = Result<EagerTensor> (eg::Context::*)(const EagerTensor&, const EagerTensor&) const;
using Unary = Result<EagerTensor> (eg::Context::*)(const EagerTensor&) const;

py::object binary(const EagerTensor& x, const py::object& y, Binary op, bool reflected) {
  if (y.is_none() && (op == &eg::Context::eq || op == &eg::Context::ne)) {
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);  // x == None: Python's identity test
  }
  const EagerTensor other = operand(x, y);
  const EagerTensor& lhs = reflected ? other : x;
  const EagerTensor& rhs = reflected ? x : other;
  return py::cast(nogil([&]() -> Result<EagerTensor> {
    // Python's / is true division; the core div of integers truncates (C's), which numpy
    // users would take for a bug: refuse it.
    if (op == &eg::Context::div && !is_inexact(x.dtype())) {
      return usage_error(ErrorCode::kDTypeMismatch, "div",
                         "/ of " + std::string(dtype_name(x.dtype())) +
                             " tensors: Python's true division needs floating tensors (convert with astype)");
    }
    return (ctx_of(lhs).*op)(lhs, rhs);
  }));
}

// Note [Floor division]: Python's `%`, `//` and divmod() on tensors are numpy's mod and
// floor_divide (the remainder takes the divisor's sign, the quotient rounds toward -inf),
// composed from the core ops, whose rem and integer div truncate (C's, XLA's): r = rem(a,
// b) moves by b where it is nonzero and its sign differs from b's, and the quotient by
// -1 there. Integers: a zero divisor gives 0 for both (numpy's value; it also warns;
// the runtime's integer division by zero is an error, so such divisors are replaced first).
// Floats follow numpy's npy_divmod: the quotient is (a - rem(a, b)) / b, so adjusted,
// rounded to the integer it approximates (|q| < 2^52, or 2^23 for f32, by adding and
// subtracting that power; larger floats are integers already); a zero quotient or
// remainder takes the sign of a / b or of b; a zero divisor gives a / b and NaN. The
// pieces are differentiable ops, so gradients are numpy/torch's: d(a % b)/da = 1,
// d(a % b)/db = -floor(a / b), and zero through the quotient. Complex and bool tensors
// are refused by rem (kDTypeMismatch), as numpy refuses them.
Result<std::pair<EagerTensor, EagerTensor>> floor_divmod(const EagerTensor& a, const EagerTensor& b) {
  const eg::Context c = ctx_of(a);
  const DType d = a.dtype();
  TENFERRO_TRY(EagerTensor zero, c.scalar(0, d));
  TENFERRO_TRY(EagerTensor one, c.scalar(1, d));
  TENFERRO_TRY(EagerTensor b_zero, c.eq(b, zero));
  // Integer division by zero is an error of the runtime: such divisors become 1 (their
  // results are replaced below).
  EagerTensor divisor = b;
  if (!is_floating(d) && !is_complex(d)) {
    TENFERRO_TRY(divisor, c.where(b_zero, one, b));
  }
  TENFERRO_TRY(EagerTensor r, c.rem(a, divisor));
  TENFERRO_TRY(EagerTensor r_neg, c.lt(r, zero));
  TENFERRO_TRY(EagerTensor b_neg, c.lt(b, zero));
  TENFERRO_TRY(EagerTensor r_nonzero, c.ne(r, zero));
  TENFERRO_TRY(EagerTensor signs_differ, c.ne(r_neg, b_neg));
  TENFERRO_TRY(EagerTensor fix, c.where(r_nonzero, signs_differ, r_nonzero));  // r != 0 and signs differ
  TENFERRO_TRY(EagerTensor r_plus_b, c.add(r, b));
  TENFERRO_TRY(EagerTensor mod, c.where(fix, r_plus_b, r));
  if (!is_floating(d)) {
    TENFERRO_TRY(EagerTensor q, c.div(a, divisor));
    TENFERRO_TRY(EagerTensor q_minus_one, c.sub(q, one));
    TENFERRO_TRY(q, c.where(fix, q_minus_one, q));
    TENFERRO_TRY(q, c.where(b_zero, zero, q));
    TENFERRO_TRY(mod, c.where(b_zero, zero, mod));
    return std::pair{q, mod};
  }
  // Floats: the quotient (a - r) / b, less one where the remainder moved, rounded.
  TENFERRO_TRY(EagerTensor a_minus_r, c.sub(a, r));
  TENFERRO_TRY(EagerTensor t, c.div(a_minus_r, b));
  TENFERRO_TRY(EagerTensor t_minus_one, c.sub(t, one));
  TENFERRO_TRY(t, c.where(fix, t_minus_one, t));
  TENFERRO_TRY(EagerTensor magnitude, c.abs(t));
  TENFERRO_TRY(EagerTensor big, c.scalar(d == DType::kF32 ? 8388608.0 : 4503599627370496.0, d));  // 2^23, 2^52
  TENFERRO_TRY(EagerTensor shifted, c.add(magnitude, big));
  TENFERRO_TRY(EagerTensor rounded, c.sub(shifted, big));
  TENFERRO_TRY(EagerTensor t_sign, c.sign(t));
  TENFERRO_TRY(rounded, c.mul(t_sign, rounded));
  TENFERRO_TRY(EagerTensor small, c.lt(magnitude, big));
  TENFERRO_TRY(EagerTensor q, c.where(small, rounded, t));
  TENFERRO_TRY(EagerTensor ratio, c.div(a, b));
  TENFERRO_TRY(EagerTensor q_is_zero, c.eq(q, zero));
  TENFERRO_TRY(EagerTensor signed_zero_q, c.mul(zero, ratio));  // copysign(0, a / b)
  TENFERRO_TRY(q, c.where(q_is_zero, signed_zero_q, q));
  TENFERRO_TRY(q, c.where(b_zero, ratio, q));
  TENFERRO_TRY(EagerTensor mod_is_zero, c.eq(mod, zero));
  TENFERRO_TRY(EagerTensor b_sign, c.sign(b));
  TENFERRO_TRY(EagerTensor signed_zero_mod, c.mul(zero, b_sign));  // copysign(0, b)
  TENFERRO_TRY(mod, c.where(mod_is_zero, signed_zero_mod, mod));
  return std::pair{q, mod};
}

// x // y, x % y, divmod(x, y) and their reflections (Note [Floor division]).
enum class FloorPart { kQuotient, kRemainder, kBoth };
py::object floor_op(const EagerTensor& x, const py::object& y, FloorPart part, bool reflected) {
  const EagerTensor other = operand(x, y);
  const EagerTensor& lhs = reflected ? other : x;
  const EagerTensor& rhs = reflected ? x : other;
  auto qr = nogil([&] { return floor_divmod(lhs, rhs); });
  if (part == FloorPart::kQuotient) return py::cast(qr.first);
  if (part == FloorPart::kRemainder) return py::cast(qr.second);
  return py::make_tuple(qr.first, qr.second);
}

EagerTensor unary(const EagerTensor& x, Unary op) {
  return nogil([&] { return (ctx_of(x).*op)(x); });
}

py::array numpy_of(const EagerTensor& t) {
  refuse_traced_read(t, "reading the values");
  return to_numpy(unwrap(eg::to_host(t)));
}

// A Python function of eager tensors as an EagerFn (for grad/vjp/jvp). Python exceptions
// propagate as they are.
eg::EagerFn eager_fn(const py::function& f) {
  return [&f](std::span<const EagerTensor> v) -> Result<EagerTensor> {
    py::list args;
    for (const EagerTensor& x : v) args.append(py::cast(x));
    return f(*args).cast<EagerTensor>();
  };
}

// A program traced from a Python function (tenferro.trace), run on its runtime.
struct TracedProgram {
  program::CompiledGraph graph;
  std::shared_ptr<eg::EagerRuntime> rt;
};

TracedProgram traced_program(program::CompiledGraph g, const std::shared_ptr<eg::EagerRuntime>& rt) {
  return TracedProgram{std::move(g), rt};
}

py::list run_program(const TracedProgram& p, const py::sequence& args) {
  std::vector<Tensor> ins;
  for (const py::handle a : args) {
    if (py::isinstance<EagerTensor>(a)) {
      ins.push_back(a.cast<EagerTensor>().tensor());
    } else {
      ins.push_back(from_numpy(py::array::ensure(a)));
    }
  }
  runtime::PrepareOptions opts;
  opts.engine = p.rt->engine();
  std::vector<Tensor> outs = nogil([&] { return p.rt->runtime().run(p.graph, ins, opts); });
  py::list r;
  for (const Tensor& t : outs) r.append(to_numpy(t));
  return r;
}

// Basic indexing: ints and slices (any step), one per leading axis.
// numpy's basic indexing: integers, slices (negative steps too: a flip, then a forward
// slice), one Ellipsis, None (a new axis of extent 1). A view where the slice allows.
EagerTensor index(const EagerTensor& x, const py::object& key) {
  py::tuple k = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  // Items that consume an axis (integers, slices), and where the Ellipsis is.
  int64_t consuming = 0, ellipsis = -1;
  for (size_t i = 0; i < k.size(); ++i) {
    if (py::isinstance<py::ellipsis>(k[i])) {
      if (ellipsis >= 0) throw py::index_error("tenferro: an index can only have a single ellipsis ('...')");
      ellipsis = static_cast<int64_t>(i);
    } else if (!k[i].is_none()) {
      ++consuming;
    }
  }
  if (consuming > x.rank()) throw py::index_error("tenferro: too many indices");
  Shape start, limit, stride, flips, out_shape;
  bool reshaped = false;
  int64_t d = 0;
  auto full_axis = [&] {
    const int64_t n = x.shape()[static_cast<size_t>(d)];
    start.push_back(0), limit.push_back(n), stride.push_back(1), out_shape.push_back(n);
    ++d;
  };
  for (size_t i = 0; i < k.size(); ++i) {
    py::handle item = k[i];
    if (static_cast<int64_t>(i) == ellipsis) {
      for (int64_t e = 0; e < x.rank() - consuming; ++e) full_axis();
      continue;
    }
    if (item.is_none()) {
      out_shape.push_back(1);
      reshaped = true;
      continue;
    }
    if (py::isinstance<py::array>(item) && item.cast<py::array>().ndim() > 0) {
      throw py::index_error("tenferro: advanced (array) indexing is not supported; use gather or numpy");
    }
    const int64_t n = x.shape()[static_cast<size_t>(d)];
    if (py::isinstance<py::slice>(item)) {
      py::ssize_t b = 0, e = 0, st = 0, len = 0;
      if (!item.cast<py::slice>().compute(static_cast<py::ssize_t>(n), &b, &e, &st, &len))
        throw py::error_already_set();
      if (st < 0) {  // elements b, b + st, ...: in the flipped axis n - 1 - b onwards, step -st
        flips.push_back(d);
        b = len == 0 ? 0 : n - 1 - b;
        st = -st;
      }
      start.push_back(b), limit.push_back(len == 0 ? b : b + (len - 1) * st + 1), stride.push_back(st);
      out_shape.push_back(len);
    } else if (is_integer(item)) {
      const auto out_of_bounds = [&] {
        return py::index_error("tenferro: index " + std::string(py::str(item)) + " is out of bounds for axis " +
                               std::to_string(d) + " with size " + std::to_string(n));
      };
      const std::optional<int64_t> index = int64_of(item, "index");
      if (!index) throw out_of_bounds();
      int64_t i2 = *index;
      if (i2 < 0) i2 += n;
      if (i2 < 0 || i2 >= n) throw out_of_bounds();
      start.push_back(i2), limit.push_back(i2 + 1), stride.push_back(1);
      reshaped = true;
    } else {
      throw py::index_error(std::string("tenferro: only integers, slices, ... and None are valid indices, got ") +
                            std::string(py::str(py::type::of(item).attr("__name__"))));
    }
    ++d;
  }
  while (d < x.rank()) full_axis();
  return nogil([&]() -> Result<EagerTensor> {
    const eg::Context c = ctx_of(x);
    EagerTensor r = x;
    if (!flips.empty()) {
      TENFERRO_TRY(r, c.flip(r, flips));
    }
    TENFERRO_TRY(r, c.slice(r, start, limit, stride));
    if (!reshaped) return r;
    return c.reshape(r, out_shape);  // unit axes only: no element moves
  });
}

}  // namespace

// tenferro.linalg on eager tensors (src/linalg_eager): results are eager tensors that
// record for AD. Entry points that take a Context get the call's (no_grad); the others
// record, and under no_grad their results are detached here.
namespace el = tenferro::eager::linalg;

EagerTensor done(EagerTensor t) {
  if (tls_no_grad_depth > 0 && !(t.ad_node() && t.ad_node()->traced)) return eg::detach(t);
  return t;
}

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
  m.def("solve", [](const EagerTensor& a, const EagerTensor& b) {
    return nogil([&] { return el::solve(ctx_of(a), a, b); });
  });
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
  m.def("truncated_svd", [](const EagerTensor& a, std::optional<int64_t> max_rank, double rel_cutoff,
                            const std::string& method, uint64_t seed, bool gauge) {
    const el::TruncatedSvdOptions o = truncated_svd_options(max_rank, rel_cutoff, method, seed, gauge);
    el::TruncatedSvd r = nogil([&] { return el::truncated_svd(ctx_of(a), a, o); });
    return py::make_tuple(r.u, r.s, r.vh, r.discarded_weight, r.rank);
  });
}

void bind_eager(py::module_& m) {
  py::class_<eg::EagerRuntime, std::shared_ptr<eg::EagerRuntime>>(m, "Runtime")
      .def(py::init([](const py::object& threads) {
             eg::EagerConfig cfg;
             if (!threads.is_none()) {
               const auto topo = unwrap(cpu::CpuTopology::discover());
               cfg.engine = engine_config(threads, topo, "tenferro.Runtime");
             }
             cfg.engine.pin_workers = false;  // unchanged: the eager runtime's workers are not pinned
             return unwrap(eg::EagerRuntime::create(cfg));
           }),
           py::arg("threads") = py::none())
      .def(
          "tensor",
          [](eg::EagerRuntime& rt, const py::object& a) {
            // Any array-like, as numpy.asarray reads it (lists, scalars); no copy of an ndarray.
            const py::array arr = py::module_::import("numpy").attr("asarray")(a);
            return unwrap(rt.from_host(from_numpy(arr)));
          },
          py::arg("array"))
      .def(
          "zeros",
          [](eg::EagerRuntime& rt, std::vector<int64_t> shape, const py::object& dt) {
            return unwrap(rt.context().zeros(dims_of(shape), dtype_from(dt)));
          },
          py::arg("shape"), py::arg("dtype") = py::str("float64"))
      .def(
          "ones",
          [](eg::EagerRuntime& rt, std::vector<int64_t> shape, const py::object& dt) {
            return unwrap(rt.context().ones(dims_of(shape), dtype_from(dt)));
          },
          py::arg("shape"), py::arg("dtype") = py::str("float64"))
      .def("metrics", [](const eg::EagerRuntime& rt) {
        const eg::EagerMetrics mt = rt.metrics();
        py::dict d;
        d["fast_inline"] = mt.fast_inline;
        d["fast_entered"] = mt.fast_entered;
        d["fast_session"] = mt.fast_session;
        d["views"] = mt.views;
        d["promoted"] = mt.promoted;
        return d;
      });

  auto t = py::class_<EagerTensor>(m, "EagerTensor");
  t.def_property_readonly("shape",
                          [](const EagerTensor& x) {
                            return py::tuple(py::cast(std::vector<int64_t>(x.shape().begin(), x.shape().end())));
                          })
      .def_property_readonly("ndim", &EagerTensor::rank)
      .def_property_readonly("runtime", [](const EagerTensor& x) { return x.runtime()->shared_from_this(); })
      .def_property_readonly("size", &EagerTensor::numel)
      .def_property_readonly("dtype", [](const EagerTensor& x) { return numpy_dtype(x.dtype()); })
      .def("numpy", &numpy_of)
      .def(
          "__dlpack__",
          [](const EagerTensor& x, const py::object&) {
            refuse_traced_read(x, "exporting");
            return to_dlpack(unwrap(eg::to_host(x)));
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const EagerTensor&) { return py::make_tuple(1, 0); })
      .def(
          "__array__",
          [](const EagerTensor& x, const py::object& dtype, const py::object&) {
            py::array a = numpy_of(x);
            return dtype.is_none() ? py::object(a) : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__repr__",
           [](const EagerTensor& x) -> std::string {
             if (tls_trace_depth > 0 && x.ad_node() && x.ad_node()->traced) {
               return "tenferro.EagerTensor(traced, shape=" + std::string(py::repr(py::cast(std::vector<int64_t>(
                                                                  x.shape().begin(), x.shape().end())))) +
                      ", dtype=" + std::string(dtype_name(x.dtype())) + ")";
             }
             return "tenferro.EagerTensor(" + std::string(py::repr(numpy_of(x))) + ")";
           })
      .def("__len__",
           [](const EagerTensor& x) {
             if (x.rank() == 0) throw py::type_error("len() of a 0-d tensor");
             return x.shape()[0];
           })
      .def("__getitem__", &index)
      .def(
          "__matmul__",
          [](const EagerTensor& x, const py::object& y) {
            const EagerTensor other = operand(x, y);  // a numpy array: a constant tensor (no copy)
            return nogil([&] { return ctx_of(x).matmul(x, other); });
          },
          py::is_operator())
      .def(
          "__rmatmul__",
          [](const EagerTensor& x, const py::object& y) {
            const EagerTensor other = operand(x, y);
            return nogil([&] { return ctx_of(x).matmul(other, x); });
          },
          py::is_operator())
      .def("__neg__", [](const EagerTensor& x) { return unary(x, &eg::Context::neg); })
      .def("__abs__", [](const EagerTensor& x) { return unary(x, &eg::Context::abs); })
      .def_property_readonly("real", [](const EagerTensor& x) { return unary(x, &eg::Context::real); })
      .def_property_readonly("imag", [](const EagerTensor& x) { return unary(x, &eg::Context::imag); })
      .def_property_readonly("T",
                             [](const EagerTensor& x) {
                               Shape perm;
                               for (int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
                               return nogil([&] { return ctx_of(x).permute(x, perm); });
                             })
      .def("transpose",
           [](const EagerTensor& x, py::args axes) {
             Shape perm;
             if (axes.size() == 1 && !is_integer(axes[0])) {
               for (const py::handle a : axes[0]) perm.push_back(int_arg(a, "axis"));
             } else if (axes.size() == 0) {
               for (int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
             } else {
               for (const py::handle a : axes) perm.push_back(int_arg(a, "axis"));
             }
             return nogil([&] { return ctx_of(x).permute(x, perm); });
           })
      .def("reshape",
           [](const EagerTensor& x, py::args shape) {
             Shape s;
             if (shape.size() == 1 && !is_integer(shape[0])) {
               for (const py::handle a : shape[0]) s.push_back(int_arg(a, "extent"));
             } else {
               for (const py::handle a : shape) s.push_back(int_arg(a, "extent"));
             }
             // numpy's (row-major) reshape: reverse the axes, reshape column-major to the
             // reversed shape, reverse back; views where the layout allows, as numpy.
             Shape rs, rev_in, rev_out;
             for (size_t i = s.size(); i-- > 0;) rs.push_back(s[i]);
             for (int64_t d = x.rank() - 1; d >= 0; --d) rev_in.push_back(d);
             for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) rev_out.push_back(d);
             return nogil([&]() -> Result<EagerTensor> {
               const eg::Context c = ctx_of(x);
               TENFERRO_TRY(EagerTensor flipped, c.permute(x, rev_in));
               TENFERRO_TRY(EagerTensor r, c.reshape(flipped, rs));
               return c.permute(r, rev_out);
             });
           })
      // numpy's ravel (a view where the layout allows) and squeeze.
      .def("ravel",
           [](const EagerTensor& x) {
             Shape rev, flat{x.tensor().numel()};
             for (int64_t d = x.rank() - 1; d >= 0; --d) rev.push_back(d);
             return nogil([&]() -> Result<EagerTensor> {
               const eg::Context c = ctx_of(x);
               TENFERRO_TRY(EagerTensor flipped, c.permute(x, rev));  // row-major order, as numpy
               return c.reshape(flipped, flat);
             });
           })
      .def(
          "squeeze",
          [](const EagerTensor& x, const py::object& axis) {
            const Shape ax = axes_of(axis);
            std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
            for (int64_t a : ax) {
              const int64_t d = a < 0 ? a + x.rank() : a;
              if (d < 0 || d >= x.rank()) {
                throw py::value_error("tenferro: squeeze: axis " + std::to_string(a) + " out of range for rank " +
                                      std::to_string(x.rank()));
              }
              if (x.shape()[static_cast<size_t>(d)] != 1) {
                throw py::value_error("tenferro: squeeze: axis " + std::to_string(a) + " has extent " +
                                      std::to_string(x.shape()[static_cast<size_t>(d)]) + ", not 1");
              }
              drop[static_cast<size_t>(d)] = true;
            }
            Shape kept;
            for (int64_t d = 0; d < x.rank(); ++d) {
              const bool one = x.shape()[static_cast<size_t>(d)] == 1;
              if (!(axis.is_none() ? one : drop[static_cast<size_t>(d)]))
                kept.push_back(x.shape()[static_cast<size_t>(d)]);
            }
            // Dropping extent-1 axes keeps the order of the others: a column-major reshape
            // does it, a view.
            return nogil([&] { return ctx_of(x).reshape(x, kept); });
          },
          py::arg("axis") = py::none())
      // numpy's clip: min(max(x, lo), hi), NaN propagating; either bound may be None.
      .def(
          "clip",
          [](const EagerTensor& x, const py::object& lo, const py::object& hi) {
            if (lo.is_none() && hi.is_none()) throw py::value_error("tenferro: clip: one of min or max must be given");
            const std::optional<EagerTensor> l = lo.is_none() ? std::nullopt : std::optional(operand(x, lo));
            const std::optional<EagerTensor> h = hi.is_none() ? std::nullopt : std::optional(operand(x, hi));
            return nogil([&]() -> Result<EagerTensor> {
              const eg::Context c = ctx_of(x);
              if (l && h) return c.clamp(x, *l, *h);
              return l ? c.maximum(x, *l) : c.minimum(x, *h);
            });
          },
          py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("astype",
           [](const EagerTensor& x, const py::object& dt) {
             const DType d = dtype_from(dt);
             return nogil([&] { return ctx_of(x).astype(x, d); });
           })
      .def("item",
           [](const EagerTensor& x) -> py::object {
             if (x.numel() != 1) throw py::value_error("tenferro: item() needs a tensor with one element");
             return numpy_of(x).attr("item")();
           })
      // Truth and number conversions with numpy's rules: one element converts (a host
      // read, refused inside a trace); more than one is ambiguous (ValueError), never
      // the silent `len(x) != 0` that Python would fall back to.
      .def("__bool__",
           [](const EagerTensor& x) {
             if (x.numel() != 1) {
               throw py::value_error("tenferro: the truth value of a tensor with " + std::to_string(x.numel()) +
                                     " elements is ambiguous (use .any() / .all() style reductions)");
             }
             return py::bool_(numpy_of(x).attr("item")());
           })
      .def("__float__",
           [](const EagerTensor& x) {
             if (x.numel() != 1) throw py::type_error("tenferro: only one-element tensors convert to float");
             return py::float_(numpy_of(x).attr("item")());
           })
      .def("__int__", [](const EagerTensor& x) {
        if (x.numel() != 1) throw py::type_error("tenferro: only one-element tensors convert to int");
        return py::int_(numpy_of(x).attr("item")());
      });
  t.attr("__hash__") = py::none();
  // Arithmetic and comparison operators; "__r*__" forms swap the operands.
  struct BinaryOperator {
    const char* name;
    Binary op;
    bool reflected;
  };
  const BinaryOperator binaries[] = {
      {"__add__", &eg::Context::add, false},     {"__radd__", &eg::Context::add, true},
      {"__sub__", &eg::Context::sub, false},     {"__rsub__", &eg::Context::sub, true},
      {"__mul__", &eg::Context::mul, false},     {"__rmul__", &eg::Context::mul, true},
      {"__truediv__", &eg::Context::div, false}, {"__rtruediv__", &eg::Context::div, true},
      {"__pow__", &eg::Context::pow, false},     {"__rpow__", &eg::Context::pow, true},
      {"__lt__", &eg::Context::lt, false},       {"__le__", &eg::Context::le, false},
      {"__gt__", &eg::Context::gt, false},       {"__ge__", &eg::Context::ge, false},
      {"__eq__", &eg::Context::eq, false},       {"__ne__", &eg::Context::ne, false}};
  for (const BinaryOperator& b : binaries) {
    t.def(
        b.name,
        [op = b.op, reflected = b.reflected](const EagerTensor& x, const py::object& y) {
          return binary(x, y, op, reflected);
        },
        py::is_operator());
  }
  const std::tuple<const char*, FloorPart, bool> floors[] = {
      {"__floordiv__", FloorPart::kQuotient, false}, {"__rfloordiv__", FloorPart::kQuotient, true},
      {"__mod__", FloorPart::kRemainder, false},     {"__rmod__", FloorPart::kRemainder, true},
      {"__divmod__", FloorPart::kBoth, false},       {"__rdivmod__", FloorPart::kBoth, true}};
  for (const auto& [name, part, reflected] : floors) {
    t.def(
        name,
        [part = part, reflected = reflected](const EagerTensor& x, const py::object& y) {
          return floor_op(x, y, part, reflected);
        },
        py::is_operator());
  }
  // Reductions over `axis` (None, an int or a sequence) with numpy's keepdims.
  using Reduce = Result<EagerTensor> (eg::Context::*)(const EagerTensor&, Dims, bool) const;
  const std::pair<const char*, Reduce> reductions[] = {{"sum", &eg::Context::sum},
                                                       {"prod", &eg::Context::prod},
                                                       {"max", &eg::Context::amax},
                                                       {"min", &eg::Context::amin},
                                                       {"mean", &eg::Context::mean}};
  for (const auto& [name, op] : reductions) {
    t.def(
        name,
        [op = op](const EagerTensor& x, const py::object& axis, bool keepdims) {
          const Shape ax = axes_of(axis);
          // numpy: axis=() reduces nothing (the values themselves); the C++ API's empty
          // axes mean all axes. mean still checks its dtype.
          if (!axis.is_none() && ax.empty() && (op != &eg::Context::mean || is_inexact(x.dtype()))) return x;
          // numpy: max and min over an empty axis have no identity (the C++ API gives -inf
          // / +inf, the identity).
          if (op == &eg::Context::amax || op == &eg::Context::amin) {
            bool empty = ax.empty() && x.tensor().numel() == 0;
            for (int64_t a : ax) {
              const int64_t d = a < 0 ? a + x.rank() : a;
              empty = empty || (d >= 0 && d < x.rank() && x.shape()[static_cast<size_t>(d)] == 0);
            }
            if (empty) {
              throw py::value_error(std::string("tenferro: zero-size array to reduction operation ") +
                                    (op == &eg::Context::amax ? "max" : "min") + ", which has no identity");
            }
          }
          return nogil([&] { return (ctx_of(x).*op)(x, ax, keepdims); });
        },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  }
  // numpy's any / all: elements are true where nonzero (NaN included), then OR / AND over
  // `axis` (max / min of bools); over no elements any is false and all is true.
  for (const bool is_any : {true, false}) {
    t.def(
        is_any ? "any" : "all",
        [is_any](const EagerTensor& x, const py::object& axis, bool keepdims) {
          const Shape ax = axes_of(axis);
          return nogil([&]() -> Result<EagerTensor> {
            const char* op = is_any ? "any" : "all";
            for (size_t i = 0; i < ax.size(); ++i) {  // errors name any / all, not the max / min below
              const int64_t d = ax[i] < 0 ? ax[i] + x.rank() : ax[i];
              if (d < 0 || d >= x.rank()) {
                return usage_error(
                    ErrorCode::kInvalidArgument, op,
                    "axis " + std::to_string(ax[i]) + " out of range for rank " + std::to_string(x.rank()));
              }
              for (size_t j = 0; j < i; ++j) {
                if ((ax[j] < 0 ? ax[j] + x.rank() : ax[j]) == d) {
                  return usage_error(ErrorCode::kInvalidArgument, op, "axis " + std::to_string(ax[i]) + " repeated");
                }
              }
            }
            const eg::Context c = ctx_of(x);
            EagerTensor truth = x;
            if (x.dtype() != DType::kBool) {
              TENFERRO_TRY(EagerTensor zero, c.scalar(0, x.dtype()));
              TENFERRO_TRY(truth, c.ne(x, zero));
            }
            if (!axis.is_none() && ax.empty()) return truth;  // axis=(): no reduction
            return is_any ? c.amax(truth, ax, keepdims) : c.amin(truth, ax, keepdims);
          });
        },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  }
  const std::pair<const char*, Unary> unaries[] = {{"exp", &eg::Context::exp},   {"log", &eg::Context::log},
                                                   {"sin", &eg::Context::sin},   {"cos", &eg::Context::cos},
                                                   {"tanh", &eg::Context::tanh}, {"sqrt", &eg::Context::sqrt},
                                                   {"conj", &eg::Context::conj}};
  for (const auto& [name, op] : unaries) {
    t.def(name, [op = op](const EagerTensor& x) { return unary(x, op); });
  }

  // Reverse-mode AD (src/eager autograd.h): leaves, backward, accumulated gradients.
  t.def_property_readonly("requires_grad", [](const EagerTensor& x) { return eg::requires_grad_of(x); })
      .def(
          "requires_grad_",
          [](EagerTensor& x) -> EagerTensor& {
            EagerTensor leaf = unwrap(eg::requires_grad(x));
            x.set_ad_node(leaf.ad_node());
            return x;
          },
          py::return_value_policy::reference_internal)
      .def_property_readonly("grad",
                             [](const EagerTensor& x) -> py::object {
                               EagerTensor g = eg::grad_of(x);
                               return g.defined() ? py::cast(g) : py::none();
                             })
      .def("zero_grad", [](const EagerTensor& x) { eg::zero_grad(x); })
      .def("detach",
           [](const EagerTensor& x) {
             refuse_traced_read(x, "detach");
             return eg::detach(x);
           })
      .def(
          "backward",
          [](const EagerTensor& x, const py::object& seed) {
            const EagerTensor s = seed.is_none() ? EagerTensor() : seed.cast<EagerTensor>();
            nogil([&] { return eg::backward(x, s); });
          },
          py::arg("cotangent") = py::none());
  m.def("_no_grad_enter", [] { ++tls_no_grad_depth; });
  m.def("_no_grad_exit", [] {
    if (tls_no_grad_depth > 0) --tls_no_grad_depth;
  });
  m.def("is_grad_enabled", [] { return tls_no_grad_depth == 0; },
        "False inside a `with tenferro.no_grad():` block of the calling thread.");
  // grad(f, xs): d f / d xs for a Python function of eager tensors returning a real scalar.
  m.def("eager_grad", [](const py::function& f, const std::vector<EagerTensor>& xs) {
    const eg::EagerFn fn = eager_fn(f);
    return unwrap(eg::grad(fn, xs));
  });

  // vjp(f, xs, ct) -> (f(xs), grads); jvp(f, xs, vs) -> (f(xs), J vs) (eager autograd.h).
  m.def("eager_vjp", [](const py::function& f, const std::vector<EagerTensor>& xs, const EagerTensor& ct) {
    const eg::EagerFn fn = eager_fn(f);
    auto [y, g] = unwrap(eg::vjp(fn, xs, ct));
    py::list grads;
    for (EagerTensor& gi : g) grads.append(gi.defined() ? py::cast(std::move(gi)) : py::none());
    return py::make_tuple(std::move(y), py::tuple(grads));
  });
  m.def("eager_jvp", [](const py::function& f, const std::vector<EagerTensor>& xs, const std::vector<EagerTensor>& vs) {
    const eg::EagerFn fn = eager_fn(f);
    auto [y, dy] = unwrap(eg::jvp(fn, xs, vs));
    return py::make_tuple(std::move(y), std::move(dy));
  });

  // Tracing (Note [Python trace]; eager trace_input/program_of).
  m.def("_trace_enter", [] { ++tls_trace_depth; });
  m.def("_trace_exit", [] {
    if (tls_trace_depth > 0) --tls_trace_depth;
  });
  m.def("trace_input", [](const EagerTensor& x) { return unwrap(eg::trace_input(x)); });
  py::class_<TracedProgram>(m, "Program")
      .def_property_readonly("num_inputs",
                             [](const TracedProgram& p) {
                               int64_t n = 0;
                               for (const auto& in : p.graph.program->inputs()) n += in.binding ? 0 : 1;
                               return n;
                             })
      .def_property_readonly("num_outputs",
                             [](const TracedProgram& p) { return p.graph.program->outputs().size(); })
      .def("run", &run_program, py::arg("args"))
      .def("text", [](const TracedProgram& p) { return program::print_program(*p.graph.program); })
      .def(
          "grad",
          [](const TracedProgram& p, int64_t output) {
            return traced_program(unwrap(p.rt->ad_context().grad(p.graph, output)), p.rt);
          },
          py::arg("output") = 0)
      .def("vjp", [](const TracedProgram& p) { return traced_program(unwrap(p.rt->ad_context().vjp(p.graph)), p.rt); })
      .def("jvp", [](const TracedProgram& p) { return traced_program(unwrap(p.rt->ad_context().jvp(p.graph)), p.rt); });
  m.def("program_of", [](const std::vector<EagerTensor>& outputs, const std::vector<EagerTensor>& inputs,
                         const std::shared_ptr<eg::EagerRuntime>& rt) {
    return traced_program(unwrap(eg::program_of(outputs, inputs)), rt);
  });

  bind_eager_linalg(m.def_submodule("eager_linalg", "tenferro.linalg on eager tensors"));

  m.def("eager_einsum", [](const std::string& subscripts, const std::vector<EagerTensor>& operands) {
    if (operands.empty()) throw py::value_error("tenferro.einsum: no operands");
    return nogil([&] { return ctx_of(operands[0]).einsum(subscripts, operands); });
  });
  m.def("eager_matmul", [](const EagerTensor& a, const EagerTensor& b) {
    return nogil([&] { return ctx_of(a).matmul(a, b); });
  });
  m.def("eager_where", [](const EagerTensor& p, const EagerTensor& a, const EagerTensor& b) {
    return nogil([&] { return ctx_of(p).where(p, a, b); });
  });
}

}  // namespace tenferro::python
