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
#include "eager_internal.h"
#include "einsum_call.h"
#include "engine.h"
#include "tenferro/ad/ad.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/eager/eager.h"
#include "tenferro/fft_ir/fft_op.h"
#include "tenferro/program/text.h"
#include "tenferro/xla/stablehlo.h"

namespace tenferro::python {

thread_local int tls_no_grad_depth = 0;  // Note [Python no_grad] (eager_internal.h)

namespace {
// grad / vjp / jvp differentiate their function even inside a no_grad block (as
// torch.func.grad does): the calling thread's no_grad depth is 0 while f runs and
// restored after, also when f raises. A no_grad block inside f still stops gradients
// there (Note [Constant outputs of the functional transforms] in src/eager).
class TransformScope {
 public:
  TransformScope() : saved_(tls_no_grad_depth) { tls_no_grad_depth = 0; }
  ~TransformScope() { tls_no_grad_depth = saved_; }
  TransformScope(const TransformScope&) = delete;
  TransformScope& operator=(const TransformScope&) = delete;

 private:
  int saved_;
};
}  // namespace
thread_local int tls_trace_depth = 0;    // Note [Python trace]

void refuse_traced_read(const EagerTensor& x, const char* what) {
  if (tls_trace_depth > 0 && x.ad_node() && x.ad_node()->traced) {
    throw py::type_error(std::string("tenferro.trace: ") + what +
                         " of a traced value inside the traced function would freeze it as a constant of the "
                         "program; compute with tenferro operations instead");
  }
}

eg::Context ctx_of(const EagerTensor& t) {
  const eg::Context c = eg::Context::of(t);
  return tls_no_grad_depth > 0 ? c.no_grad() : c;
}

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

// Note [Python operands]: numbers and sequences of numbers are values in the tensor's
// dtype (no implicit promotion), and only values that dtype holds exactly: an integer
// out of an integer dtype's range, a fraction with an integer tensor, an integer other
// than 0 or 1 with a bool tensor or a complex number with a real tensor is a typed error
// naming the value (numpy would promote the tensor, or, for out-of-range integers,
// wrap around or raise OverflowError); floating tensors round numbers as numpy does.
namespace {

[[noreturn]] void refuse_operand(const EagerTensor& like, const py::object& o, ErrorCode code, const char* why) {
  unwrap(Result<EagerTensor>(usage_error(code, "operand",
                                         std::string(py::str(py::repr(o))) + " with a tensor of dtype " +
                                             std::string(dtype_name(like.dtype())) + ": " + why +
                                             " (no implicit promotion; convert the tensor with astype)")));
  throw std::logic_error("unreachable");
}

// `o` holds a value the integer or bool dtype of `like` does not: a fraction (or NaN),
// an integer out of range, or an integer other than 0 or 1 for bool.
[[noreturn]] void refuse_inexact(const EagerTensor& like, const py::object& o, bool integral) {
  const bool flags = like.dtype() == DType::kBool;
  refuse_operand(like, o, integral ? ErrorCode::kOverflow : ErrorCode::kDTypeMismatch,
                 !integral ? "not an integer"
                 : flags   ? "not 0 or 1"
                           : "out of the dtype's range");
}

// Whether a real number is exactly a value of the integer or bool dtype d.
bool holds_exactly(DType d, double v) {
  if (v != std::trunc(v)) return false;  // NaN too
  switch (d) {
    case DType::kBool: return v == 0.0 || v == 1.0;
    case DType::kI32: return v >= -2147483648.0 && v <= 2147483647.0;
    default: return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
  }
}

}  // namespace

std::optional<EagerTensor> try_operand(const EagerTensor& like, const py::object& o) {
  if (py::isinstance<EagerTensor>(o)) return o.cast<EagerTensor>();
  if (py::isinstance<py::array>(o)) {
    return unwrap(like.runtime()->from_host(from_numpy(py::reinterpret_borrow<py::array>(o))));
  }
  const DType d = like.dtype();
  const bool exact = !is_inexact(d);     // integer and bool tensors hold numbers exactly or not at all
  if (exact && PyLong_Check(o.ptr())) {  // the common small integer: exact in a double
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
    if (overflow == 0 && v > -(1LL << 53) && v < (1LL << 53)) {
      if (!holds_exactly(d, static_cast<double>(v))) refuse_inexact(like, o, true);
      return unwrap(ctx_of(like).scalar(c128(static_cast<double>(v), 0.0), d));
    }
  }
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o) || (PyLong_Check(o.ptr()) && exact)) {
    // Nested sequences of numbers are literal values, as scalars; Python integers with an
    // integer tensor convert exactly (past 2^53 too).
    const py::module_ np = py::module_::import("numpy");
    const py::array natural = np.attr("asarray")(o);
    const char kind = natural.dtype().kind();
    if (kind == 'O' || kind == 'U' || kind == 'S') {
      if (PyLong_Check(o.ptr())) refuse_inexact(like, o, true);
      return std::nullopt;  // not numbers: the operator's TypeError
    }
    if (kind == 'c' && !is_complex(d) && py::bool_(np.attr("any")(np.attr("imag")(natural)))) {
      refuse_operand(like, o, ErrorCode::kDTypeMismatch, "a complex value with a real tensor");
    }
    const py::dtype target = numpy_dtype(d);
    py::array a;
    {
      const py::object quiet = np.attr("errstate")(py::arg("all") = "ignore");
      quiet.attr("__enter__")();
      a = (kind == 'c' && !is_complex(d) ? natural.attr("real") : py::object(natural)).attr("astype")(target);
      quiet.attr("__exit__")(py::none(), py::none(), py::none());
    }
    if (exact && !py::bool_(np.attr("array_equal")(a, natural)))
      refuse_inexact(like, o, kind == 'i' || kind == 'u' || kind == 'b');
    return unwrap(like.runtime()->from_host(from_numpy(a)));
  }
  const auto number = [&](double re, double im) {
    if (im != 0.0 && !is_complex(d))
      refuse_operand(like, o, ErrorCode::kDTypeMismatch, "a complex value with a real tensor");
    if (exact && !holds_exactly(d, re)) refuse_inexact(like, o, re == std::trunc(re));
    return unwrap(ctx_of(like).scalar(c128(re, im), d));
  };
  if (PyComplex_Check(o.ptr())) return number(PyComplex_RealAsDouble(o.ptr()), PyComplex_ImagAsDouble(o.ptr()));
  if (PyFloat_Check(o.ptr())) return number(PyFloat_AS_DOUBLE(o.ptr()), 0.0);
  if (PyLong_Check(o.ptr())) {  // bool too; a floating tensor: rounded, as numpy
    const double v = PyLong_AsDouble(o.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();  // too large for a double
    return number(v, 0.0);
  }
  const py::module_ np = py::module_::import("numpy");
  if (py::isinstance(o, np.attr("number")) || py::isinstance(o, np.attr("bool_"))) {
    if (exact && py::isinstance(o, np.attr("integer"))) return try_operand(like, py::int_(o));  // exactly
    const py::object c = py::module_::import("builtins").attr("complex")(o);
    return number(PyComplex_RealAsDouble(c.ptr()), PyComplex_ImagAsDouble(c.ptr()));
  }
  return std::nullopt;
}

EagerTensor operand(const EagerTensor& like, const py::object& o) {
  std::optional<EagerTensor> t = try_operand(like, o);
  if (!t) {
    throw py::type_error("tenferro: expected an EagerTensor, a numpy array or a number, got " +
                         std::string(py::str(py::type::of(o).attr("__name__"))));
  }
  return *t;
}

namespace {

Shape dims_of(const std::vector<int64_t>& v) {
  Shape s;
  for (int64_t x : v) s.push_back(x);
  return s;
}

DType dtype_from(const py::object& dt) { return dtype_of(py::dtype::from_args(dt)); }

using Binary = Result<EagerTensor> (eg::Context::*)(const EagerTensor&, const EagerTensor&) const;
using Unary = Result<EagerTensor> (eg::Context::*)(const EagerTensor&) const;

py::object binary(const EagerTensor& x, const py::object& y, Binary op, bool reflected) {
  if (y.is_none() && (op == &eg::Context::eq || op == &eg::Context::ne)) {
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);  // x == None: Python's identity test
  }
  const std::optional<EagerTensor> maybe = try_operand(x, y);
  if (!maybe) return py::reinterpret_borrow<py::object>(Py_NotImplemented);  // Python raises TypeError
  const EagerTensor& other = *maybe;
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

}  // namespace

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
      // format(x, spec) as numpy's (a 0-d tensor takes number formats, f"{loss:.3e}"); a
      // host read, refused inside a trace.
      .def("__format__",
           [](const EagerTensor& x, const std::string& spec) {
             return py::module_::import("builtins").attr("format")(numpy_of(x), spec);
           })
      .def("__len__",
           [](const EagerTensor& x) {
             if (x.rank() == 0) throw py::type_error("len() of a 0-d tensor");
             return x.shape()[0];
           })
      .def("__getitem__", &basic_index)
      .def(
          "__matmul__",
          [](const EagerTensor& x, const py::object& y) -> py::object {
            const std::optional<EagerTensor> other = try_operand(x, y);  // an array: a constant (no copy)
            if (!other) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
            return py::cast(nogil([&] { return ctx_of(x).matmul(x, *other); }));
          },
          py::is_operator())
      .def(
          "__rmatmul__",
          [](const EagerTensor& x, const py::object& y) -> py::object {
            const std::optional<EagerTensor> other = try_operand(x, y);
            if (!other) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
            return py::cast(nogil([&] { return ctx_of(x).matmul(*other, x); }));
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
             // numpy: negative axes count from the end (out-of-range ones stay for the
             // core's error).
             for (int64_t& v : perm) {
               if (v < 0 && v >= -x.rank()) v += x.rank();
             }
             return nogil([&] { return as_op(ctx_of(x).permute(x, perm), "transpose"); });
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
               auto r = c.reshape(flipped, rs);
               if (!r) {
                 // The core's message names the reversed (column-major) shapes: name the
                 // caller's instead, as numpy does.
                 auto tuple = [](std::span<const int64_t> d) {
                   std::string text = "(";
                   for (size_t i = 0; i < d.size(); ++i) text += (i ? ", " : "") + std::to_string(d[i]);
                   return text + (d.size() == 1 ? ",)" : ")");
                 };
                 const bool overflow = r.error().code() == ErrorCode::kOverflow;
                 return usage_error(r.error().code(), "reshape",
                                    "cannot reshape a tensor of shape " + tuple(x.shape().span()) + " (" +
                                        std::to_string(x.tensor().numel()) + " elements) into shape " +
                                        tuple(s.span()) +
                                        (overflow ? ": its element count does not fit in int64" : ""));
               }
               return c.permute(*r, rev_out);
             });
           })
      // numpy's ravel (a view where the layout allows) and squeeze.
      .def("ravel", &ravel)
      .def("squeeze", &squeeze, py::arg("axis") = py::none())
      .def("take", &take, py::arg("indices"), py::arg("axis") = py::none())
      .def("swapaxes",
           [](const EagerTensor& x, const py::object& axis1, const py::object& axis2) {
             Shape perm;
             for (int64_t d = 0; d < x.rank(); ++d) perm.push_back(d);
             const int64_t a = int_arg(axis1, "axis1"), b = int_arg(axis2, "axis2");
             for (int64_t v : {a, b}) {
               if (v < -x.rank() || v >= x.rank()) {
                 throw py::value_error("tenferro: swapaxes: axis " + std::to_string(v) + " out of range for rank " +
                                       std::to_string(x.rank()));
               }
             }
             std::swap(perm[static_cast<size_t>(a < 0 ? a + x.rank() : a)],
                       perm[static_cast<size_t>(b < 0 ? b + x.rank() : b)]);
             return nogil([&] { return ctx_of(x).permute(x, perm); });
           })
      .def(
          "diagonal",
          [](const EagerTensor& x, int64_t offset, int64_t axis1, int64_t axis2) {
            return diagonal(x, offset, axis1, axis2);
          },
          py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1)
      .def("trace", &trace, py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1)
      .def(
          "var",
          [](const EagerTensor& x, const py::object& axis, int64_t ddof, bool keepdims) {
            return variance(x, axis, ddof, keepdims, false);
          },
          py::arg("axis") = py::none(), py::arg("ddof") = 0, py::arg("keepdims") = false)
      .def(
          "std",
          [](const EagerTensor& x, const py::object& axis, int64_t ddof, bool keepdims) {
            return variance(x, axis, ddof, keepdims, true);
          },
          py::arg("axis") = py::none(), py::arg("ddof") = 0, py::arg("keepdims") = false)
      // A copy that owns its memory (numpy's copy / flatten: later writes to the numpy
      // array the tensor came from do not reach it).
      .def("copy", [](const EagerTensor& x) { return nogil([&] { return ctx_of(x).contiguous(x); }); })
      .def("flatten",
           [](const EagerTensor& x) {
             Shape rev, flat{x.tensor().numel()};
             for (int64_t d = x.rank() - 1; d >= 0; --d) rev.push_back(d);
             return nogil([&]() -> Result<EagerTensor> {
               const eg::Context c = ctx_of(x);
               TENFERRO_TRY(EagerTensor flipped, c.permute(x, rev));
               TENFERRO_TRY(EagerTensor copied, c.contiguous(flipped));
               return c.reshape(copied, flat);
             });
           })
      .def("tolist", [](const EagerTensor& x) { return numpy_of(x).attr("tolist")(); })
      // numpy's clip: min(max(x, lo), hi), NaN propagating; either bound may be None.
      .def(
          "clip",
          [](const EagerTensor& x, const py::object& lo, const py::object& hi) {
            if (lo.is_none() && hi.is_none()) throw py::value_error("tenferro: clip: one of min or max must be given");
            const std::optional<EagerTensor> l = lo.is_none() ? std::nullopt : std::optional(operand(x, lo));
            const std::optional<EagerTensor> h = hi.is_none() ? std::nullopt : std::optional(operand(x, hi));
            return nogil([&]() -> Result<EagerTensor> {
              const eg::Context c = ctx_of(x);
              if (l && h) return as_op(c.clamp(x, *l, *h), "clip");
              return as_op(l ? c.maximum(x, *l) : c.minimum(x, *h), "clip");
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
        [name = name, op = op](const EagerTensor& x, const py::object& axis, bool keepdims) {
          const Shape ax = axes_of(axis);
          // numpy: axis=() reduces nothing (the values themselves); the C++ API's empty
          // axes mean all axes. It is the reduction of an appended axis of extent 1, so
          // the dtype rules (sum of bool, max of complex, mean of integers) and the errors
          // are those of a reduction over any axis.
          // numpy's accumulator dtypes: sums and products of bools and int32 in int64,
          // means of bools and integers in float64 (Note [numpy reduction dtypes]).
          const bool arith = op == &eg::Context::sum || op == &eg::Context::prod;
          const auto operand = [&](const eg::Context& c) -> Result<EagerTensor> {
            if (arith) return numpy_reduction_operand(c, x, NumpyAccumulator::kInt);
            if (op == &eg::Context::mean) return numpy_reduction_operand(c, x, NumpyAccumulator::kFloat);
            return x;
          };
          if (!axis.is_none() && ax.empty()) {
            return nogil([&]() -> Result<EagerTensor> {
              const eg::Context c = ctx_of(x);
              TENFERRO_TRY(const EagerTensor v, operand(c));
              Shape one = v.shape();
              one.push_back(1);
              TENFERRO_TRY(EagerTensor y, c.reshape(v, one));
              return as_op((c.*op)(y, Shape{v.rank()}, false), name);  // max, not amax
            });
          }
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
          return nogil([&]() -> Result<EagerTensor> {
            const eg::Context c = ctx_of(x);
            TENFERRO_TRY(const EagerTensor y, operand(c));
            return as_op((c.*op)(y, ax, keepdims), name);
          });
        },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  }
  // numpy's any / all (eager_numpy.cc).
  for (const bool is_any : {true, false}) {
    t.def(
        is_any ? "any" : "all",
        [is_any](const EagerTensor& x, const py::object& axis, bool keepdims) {
          return any_or_all(x, axis, keepdims, is_any);
        },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  }
  const std::pair<const char*, Unary> unaries[] = {
      {"exp", &eg::Context::exp},   {"log", &eg::Context::log},     {"sin", &eg::Context::sin},
      {"cos", &eg::Context::cos},   {"tanh", &eg::Context::tanh},   {"sqrt", &eg::Context::sqrt},
      {"conj", &eg::Context::conj}, {"expm1", &eg::Context::expm1}, {"log1p", &eg::Context::log1p},
      {"sign", &eg::Context::sign}, {"rsqrt", &eg::Context::rsqrt}};
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
            if (!seed.is_none() && !py::isinstance<EagerTensor>(seed)) {
              throw py::type_error("tenferro: backward: the cotangent must be an EagerTensor, got " +
                                   std::string(py::str(py::type::of(seed).attr("__name__"))));
            }
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
    const TransformScope scope;
    return unwrap(eg::grad(fn, xs));
  });

  // vjp(f, xs, ct) -> (f(xs), grads); jvp(f, xs, vs) -> (f(xs), J vs) (eager autograd.h).
  m.def("eager_vjp", [](const py::function& f, const std::vector<EagerTensor>& xs, const EagerTensor& ct) {
    const eg::EagerFn fn = eager_fn(f);
    const TransformScope scope;
    auto [y, g] = unwrap(eg::vjp(fn, xs, ct));
    py::list grads;
    for (EagerTensor& gi : g) grads.append(gi.defined() ? py::cast(std::move(gi)) : py::none());
    return py::make_tuple(std::move(y), py::tuple(grads));
  });
  m.def("eager_jvp", [](const py::function& f, const std::vector<EagerTensor>& xs, const std::vector<EagerTensor>& vs) {
    const eg::EagerFn fn = eager_fn(f);
    const TransformScope scope;
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
      .def_property_readonly("num_outputs", [](const TracedProgram& p) { return p.graph.program->outputs().size(); })
      .def("run", &run_program, py::arg("args"))
      .def("text", [](const TracedProgram& p) { return program::print_program(*p.graph.program); })
      .def(
          "stablehlo",
          [](const TracedProgram& p, bool inline_bindings) {
            xla::StableHloLowerings lowerings;
            unwrap(fft_ir::register_stablehlo_lowering(lowerings));
            xla::StableHloOptions o;
            o.inline_bindings = inline_bindings;
            o.lowerings = &lowerings;
            return unwrap(xla::lower_to_stablehlo(p.graph, o)).text;
          },
          py::arg("inline_bindings") = true)
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
  bind_eager_fft(m.def_submodule("eager_fft", "tenferro.fft on eager tensors"));

  m.def(
      "eager_einsum",
      [](const std::string& subscripts, const std::vector<EagerTensor>& operands, const py::object& optimize) {
        if (operands.empty()) throw py::value_error("tenferro.einsum: no operands");
        const einsum::PathPolicy policy = path_policy(optimize, operands.size());
        return nogil([&] { return ctx_of(operands[0]).einsum(subscripts, operands, policy); });
      },
      py::arg("subscripts"), py::arg("operands"), py::arg("optimize") = "greedy");
  m.def("eager_matmul", [](const EagerTensor& a, const EagerTensor& b) {
    return nogil([&] { return ctx_of(a).matmul(a, b); });
  });
  // A number, sequence or array as an operand beside `like` (Note [Python operands]).
  m.def("eager_operand", [](const EagerTensor& like, const py::object& value) { return operand(like, value); });
  m.def("eager_where", [](const EagerTensor& p, const EagerTensor& a, const EagerTensor& b) {
    return nogil([&] { return ctx_of(p).where(p, a, b); });
  });
  // numpy's maximum / minimum (NaN propagates); the second operand as the operators take it.
  m.def("eager_maximum",
        [](const EagerTensor& x, const py::object& y) { return binary(x, y, &eg::Context::maximum, false); });
  m.def("eager_minimum",
        [](const EagerTensor& x, const py::object& y) { return binary(x, y, &eg::Context::minimum, false); });
  // numpy's fmod: the core rem (C's fmod: the dividend's sign); `reflected`: y is the dividend.
  m.def("eager_fmod", [](const EagerTensor& x, const py::object& y, bool reflected) {
    return binary(x, y, &eg::Context::rem, reflected);
  });
  // numpy's arctan2 of floating tensors: the core atan2 (`reflected`: y is the first operand).
  m.def("eager_arctan2", [](const EagerTensor& x, const py::object& y, bool reflected) {
    return binary(x, y, &eg::Context::atan2, reflected);
  });
  // numpy's argsort (kind='stable') and sort: the core argsort, sort a gather of its order.
  m.def("eager_argsort",
        [](const EagerTensor& x, int64_t axis) { return nogil([&] { return ctx_of(x).argsort(x, axis); }); });
  m.def("eager_sort",
        [](const EagerTensor& x, int64_t axis) { return nogil([&] { return ctx_of(x).sort(x, axis); }); });
  m.def("eager_concatenate", &concatenate);
  m.def("eager_stack", &stack);
  m.def("eager_tril", [](const EagerTensor& x, int64_t k) { return nogil([&] { return ctx_of(x).tril(x, k); }); });
  m.def("eager_triu", [](const EagerTensor& x, int64_t k) { return nogil([&] { return ctx_of(x).triu(x, k); }); });
  // Shape operations for the numpy functions of tenferro/_indexing.py (arguments checked
  // there; the core's typed errors otherwise).
  m.def("eager_broadcast_to", [](const EagerTensor& x, const std::vector<int64_t>& shape) {
    return nogil([&] { return ctx_of(x).broadcast_to(x, dims_of(shape)); });
  });
  m.def("eager_flip", [](const EagerTensor& x, const std::vector<int64_t>& axes) {
    return nogil([&] { return ctx_of(x).flip(x, dims_of(axes)); });
  });
  m.def("eager_pad", [](const EagerTensor& x, const py::object& value, const std::vector<int64_t>& low,
                        const std::vector<int64_t>& high) {
    const EagerTensor v = operand(x, value);
    return nogil([&] { return ctx_of(x).pad(x, v, dims_of(low), dims_of(high), Shape(low.size(), 0)); });
  });
  m.def("eager_scatter_add",
        [](const EagerTensor& x, const py::array_t<int64_t>& indices, const EagerTensor& updates, int64_t axis) {
          const EagerTensor where = unwrap(x.runtime()->from_host(from_numpy(indices)));
          return nogil([&] { return ctx_of(x).scatter_add(x, where, updates, axis); });
        });
}

}  // namespace tenferro::python
