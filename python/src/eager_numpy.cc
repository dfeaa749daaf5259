// numpy semantics on eager tensors composed from the core ops (eager_internal.h): floor
// division and modulo, basic indexing, take, any / all, ravel, squeeze, diagonal / trace,
// var / std, concatenate / stack.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "eager_internal.h"
#include "tenferro/eager/autograd.h"

namespace tenferro::python {
namespace {

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
// are refused (kDTypeMismatch): numpy refuses complex ones, and bool tensors have no
// arithmetic here (as for +, -, *).
// `op` names the caller's operation in errors ("floor_divide", "remainder", "divmod"):
// the operands are checked here, before any of the composed ops could name itself.
Result<std::pair<EagerTensor, EagerTensor>> floor_divmod(const EagerTensor& a, const EagerTensor& b, const char* op) {
  const eg::Context c = ctx_of(a);
  const DType d = a.dtype();
  if (b.dtype() != d) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "dtypes " + std::string(dtype_name(d)) + " and " + std::string(dtype_name(b.dtype())) +
                           " differ (no implicit promotion; convert with astype)");
  }
  if (d == DType::kBool || is_complex(d)) {
    return usage_error(
        ErrorCode::kDTypeMismatch, op,
        "not defined for dtype " + std::string(dtype_name(d)) + (d == DType::kBool ? " (convert with astype)" : ""));
  }
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

}  // namespace

py::object floor_op(const EagerTensor& x, const py::object& y, FloorPart part, bool reflected) {
  const std::optional<EagerTensor> maybe = try_operand(x, y);
  if (!maybe) return py::reinterpret_borrow<py::object>(Py_NotImplemented);  // Python raises TypeError
  const EagerTensor& other = *maybe;
  const EagerTensor& lhs = reflected ? other : x;
  const EagerTensor& rhs = reflected ? x : other;
  const char* op = part == FloorPart::kQuotient    ? "floor_divide"
                   : part == FloorPart::kRemainder ? "remainder"
                                                   : "divmod";
  auto qr = nogil([&] { return floor_divmod(lhs, rhs, op); });
  if (part == FloorPart::kQuotient) return py::cast(qr.first);
  if (part == FloorPart::kRemainder) return py::cast(qr.second);
  return py::make_tuple(qr.first, qr.second);
}

// numpy's basic indexing: integers, slices (negative steps too: a flip, then a forward
// slice), one Ellipsis, None (a new axis of extent 1). A view where the slice allows.
EagerTensor basic_index(const EagerTensor& x, const py::object& key) {
  // x[indices] with one integer list or array (not a tuple): numpy's take along axis 0
  // (its bounds check names axis 0 as numpy does); masks and mixed keys go to Python.
  if (x.rank() > 0 && (py::isinstance<py::list>(key) || py::isinstance<py::array>(key))) {
    const py::array a = py::module_::import("numpy").attr("asarray")(key);
    const char kind = a.dtype().kind();
    if (a.ndim() > 0 && (kind == 'i' || kind == 'u')) return take(x, a, py::int_(0));
  }
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
    const bool array_item = py::isinstance<py::array>(item) &&
                            (item.cast<py::array>().ndim() > 0 || item.cast<py::array>().dtype().kind() == 'b');
    if (array_item || py::isinstance<py::list>(item) || py::isinstance<EagerTensor>(item) || PyBool_Check(item.ptr()) ||
        std::strcmp(Py_TYPE(item.ptr())->tp_name, "numpy.bool_") == 0 ||
        std::strcmp(Py_TYPE(item.ptr())->tp_name, "numpy.bool") == 0) {
      // Advanced (array) indexing: numpy's rules, composed in Python from this function and
      // take (tenferro/_indexing.py).
      return py::module_::import("tenferro._indexing").attr("advanced_index")(x, key).cast<EagerTensor>();
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

EagerTensor any_or_all(const EagerTensor& x, const py::object& axis, bool keepdims, bool is_any) {
  // Elements are true where nonzero (NaN included), then OR / AND over `axis` (max / min
  // of bools); over no elements any is false and all is true.
  const Shape ax = axes_of(axis);
  return nogil([&]() -> Result<EagerTensor> {
    const char* op = is_any ? "any" : "all";
    for (size_t i = 0; i < ax.size(); ++i) {  // errors name any / all, not the max / min below
      const int64_t d = ax[i] < 0 ? ax[i] + x.rank() : ax[i];
      if (d < 0 || d >= x.rank()) {
        return usage_error(ErrorCode::kInvalidArgument, op,
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
}

EagerTensor ravel(const EagerTensor& x) {
  Shape rev, flat{x.tensor().numel()};
  for (int64_t d = x.rank() - 1; d >= 0; --d) rev.push_back(d);
  return nogil([&]() -> Result<EagerTensor> {
    const eg::Context c = ctx_of(x);
    TENFERRO_TRY(EagerTensor flipped, c.permute(x, rev));  // row-major order, as numpy
    return c.reshape(flipped, flat);
  });
}

EagerTensor squeeze(const EagerTensor& x, const py::object& axis) {
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
    if (!(axis.is_none() ? one : drop[static_cast<size_t>(d)])) kept.push_back(x.shape()[static_cast<size_t>(d)]);
  }
  // Dropping extent-1 axes keeps the order of the others: a column-major reshape does
  // it, a view.
  return nogil([&] { return ctx_of(x).reshape(x, kept); });
}

namespace {

// An axis argument in [-rank, rank) as an axis, else a ValueError (numpy's AxisError is
// one).
int64_t axis_in(const EagerTensor& x, int64_t a, const char* op) {
  const int64_t d = a < 0 ? a + x.rank() : a;
  if (d < 0 || d >= x.rank()) {
    throw py::value_error(std::string("tenferro: ") + op + ": axis " + std::to_string(a) + " out of range for rank " +
                          std::to_string(x.rank()));
  }
  return d;
}

}  // namespace

EagerTensor diagonal(const EagerTensor& x, int64_t offset, int64_t axis1, int64_t axis2, const char* op) {
  const int64_t a = axis_in(x, axis1, op), b = axis_in(x, axis2, op);
  if (a == b) throw py::value_error(std::string("tenferro: ") + op + ": axis1 and axis2 cannot be the same");
  // An offset k > 0 starts the diagonal at column k of axis2, k < 0 at row -k of axis1:
  // a slice first (empty when past the end), then the main diagonal.
  const int64_t along = offset >= 0 ? b : a;
  const int64_t n = x.shape()[static_cast<size_t>(along)];
  // min(n, |offset|), without negating an offset of INT64_MIN.
  const int64_t start = offset >= 0 ? std::min(n, offset) : (offset < -n ? n : -offset);
  return nogil([&]() -> Result<EagerTensor> {
    const eg::Context c = ctx_of(x);
    TENFERRO_TRY(EagerTensor shifted, c.slice(x, along, start, n));
    return as_op(c.diagonal(shifted, a, b), op);
  });
}

EagerTensor trace(const EagerTensor& x, int64_t offset, int64_t axis1, int64_t axis2) {
  const EagerTensor d = diagonal(x, offset, axis1, axis2, "trace");
  const Shape last{d.rank() - 1};
  return nogil([&] { return as_op(ctx_of(d).sum(d, last), "trace"); });
}

// Note [numpy reduction dtypes]: numpy sums and multiplies bools and integers narrower
// than int64 in int64, and takes means and variances of bools and integers in float64;
// the Python reductions (sum, prod, mean, var, std, cumsum, cumprod) convert so first
// (the astype the C++ API asks its users to write). Mixed-dtype operands stay an error:
// that is promotion, which tenferro does not do.
Result<EagerTensor> numpy_reduction_operand(const eg::Context& c, const EagerTensor& x, NumpyAccumulator acc) {
  const DType d = x.dtype();
  if (acc == NumpyAccumulator::kFloat) return is_inexact(d) ? Result<EagerTensor>(x) : c.astype(x, DType::kF64);
  return d == DType::kBool || d == DType::kI32 ? c.astype(x, DType::kI64) : Result<EagerTensor>(x);
}

EagerTensor variance(const EagerTensor& x_in, const py::object& axis, int64_t ddof, bool keepdims, bool root) {
  const char* op = root ? "std" : "var";
  const Shape ax = axes_of(axis);
  int64_t n = 1;
  if (axis.is_none()) {
    n = x_in.tensor().numel();
  } else {
    for (int64_t a : ax) n *= x_in.shape()[static_cast<size_t>(axis_in(x_in, a, op))];
  }
  // axis=(): each element is its own sample (numpy: zeros, or NaN for ddof >= 1), taken as
  // the moments over an appended axis of extent 1 (n = 1): the same checks and pieces.
  const bool none = !axis.is_none() && ax.empty();
  return nogil([&]() -> Result<EagerTensor> {
    const eg::Context c = ctx_of(x_in);
    TENFERRO_TRY(const EagerTensor x, numpy_reduction_operand(c, x_in, NumpyAccumulator::kFloat));
    EagerTensor samples = x;
    Shape axes = ax;
    if (none) {
      Shape one = x.shape();
      one.push_back(1);
      TENFERRO_TRY(samples, c.reshape(x, one));
      axes = Shape{x.rank()};
    }
    TENFERRO_TRY(EagerTensor mu, c.mean(samples, axes, true));
    TENFERRO_TRY(EagerTensor centered, c.sub(samples, mu));
    TENFERRO_TRY(EagerTensor magnitude, c.abs(centered));  // real for complex x
    TENFERRO_TRY(EagerTensor squares, c.mul(magnitude, magnitude));
    TENFERRO_TRY(EagerTensor total, c.sum(squares, axes, keepdims && !none));
    // numpy divides by max(n - ddof, 0): NaN or inf past the degrees of freedom.
    TENFERRO_TRY(EagerTensor denominator, c.scalar(static_cast<double>(std::max<int64_t>(n - ddof, 0)), total.dtype()));
    TENFERRO_TRY(EagerTensor v, c.div(total, denominator));
    return root ? c.sqrt(v) : v;
  });
}

EagerTensor take(const EagerTensor& x, const py::object& indices, const py::object& axis) {
  const py::module_ np = py::module_::import("numpy");
  py::object host = indices;
  if (py::isinstance<EagerTensor>(indices)) {
    const EagerTensor& t = indices.cast<const EagerTensor&>();
    refuse_traced_read(t, "take's indices");  // they are read on the host
    host = to_numpy(unwrap(eg::to_host(t)));
  }
  py::array idx = np.attr("asarray")(host);
  const char kind = idx.dtype().kind();
  if (idx.size() > 0 && kind != 'i' && kind != 'u') {
    throw py::type_error("tenferro: take: indices must be integers, got dtype " + std::string(py::str(idx.dtype())));
  }
  const EagerTensor src = axis.is_none() ? ravel(x) : x;
  int64_t a = axis.is_none() ? 0 : int_arg(axis, "axis");
  if (a < -src.rank() || a >= src.rank()) {
    throw py::value_error("tenferro: take: axis " + std::to_string(a) + " out of range for rank " +
                          std::to_string(src.rank()));
  }
  if (a < 0) a += src.rank();
  const int64_t n = src.shape()[static_cast<size_t>(a)];
  // mode 'raise': every index in [-n, n), negative ones counted from the end (the
  // program's gather would clamp them instead).
  py::array_t<int64_t> fixed = np.attr("array")(idx, "int64");
  int64_t* v = fixed.mutable_data();
  for (py::ssize_t k = 0; k < fixed.size(); ++k) {
    if (v[k] < -n || v[k] >= n) {
      throw py::index_error("tenferro: take: index " + std::to_string(v[k]) + " is out of bounds for axis " +
                            std::to_string(a) + " with size " + std::to_string(n));
    }
    if (v[k] < 0) v[k] += n;
  }
  const EagerTensor where = unwrap(src.runtime()->from_host(from_numpy(fixed)));
  return nogil([&] { return ctx_of(src).gather(src, where, a); });
}

EagerTensor concatenate(const std::vector<EagerTensor>& parts, const py::object& axis) {
  if (parts.empty()) throw py::value_error("tenferro: concatenate: need at least one tensor");
  std::vector<EagerTensor> flat;
  int64_t a = 0;
  if (axis.is_none()) {  // numpy: the tensors flattened (row-major), joined
    for (const EagerTensor& p : parts) flat.push_back(ravel(p));
  } else {
    a = int_arg(axis, "axis");
    const int64_t rank = parts[0].rank();
    if (a < -rank || a >= rank) {
      throw py::value_error("tenferro: concatenate: axis " + std::to_string(a) + " out of range for rank " +
                            std::to_string(rank));
    }
    if (a < 0) a += rank;
  }
  const std::vector<EagerTensor>& joined = axis.is_none() ? flat : parts;
  return nogil([&]() -> Result<EagerTensor> {
    for (const EagerTensor& p : joined) {
      if (p.dtype() != joined[0].dtype()) {  // no implicit promotion: convert with astype
        return usage_error(ErrorCode::kDTypeMismatch, "concatenate",
                           "tensors of dtypes " + std::string(dtype_name(joined[0].dtype())) + " and " +
                               std::string(dtype_name(p.dtype())) + " (convert with astype)");
      }
    }
    return ctx_of(joined[0]).concatenate(joined, a);
  });
}

EagerTensor stack(const std::vector<EagerTensor>& parts, int64_t axis) {
  if (parts.empty()) throw py::value_error("tenferro: stack: need at least one tensor");
  const int64_t rank = parts[0].rank();
  if (axis < -(rank + 1) || axis > rank) {
    throw py::value_error("tenferro: stack: axis " + std::to_string(axis) + " out of range for rank " +
                          std::to_string(rank + 1));
  }
  if (axis < 0) axis += rank + 1;
  for (const EagerTensor& p : parts) {
    if (!(p.shape() == parts[0].shape())) {
      throw py::value_error("tenferro: stack: all tensors must have the same shape, got " +
                            format_dims(parts[0].shape()) + " and " + format_dims(p.shape()));
    }
    if (p.dtype() != parts[0].dtype()) {  // no implicit promotion, as concatenate
      unwrap(
          Result<EagerTensor>(usage_error(ErrorCode::kDTypeMismatch, "stack",
                                          "tensors of dtypes " + std::string(dtype_name(parts[0].dtype())) + " and " +
                                              std::string(dtype_name(p.dtype())) + " (convert with astype)")));
    }
  }
  // Each part with a unit axis at `axis` (a view: inserting an extent-1 axis moves no
  // element in either order), then joined along it.
  std::vector<EagerTensor> lifted;
  Shape shape;
  for (int64_t d = 0; d <= rank; ++d) {
    if (d == axis) shape.push_back(1);
    if (d < rank) shape.push_back(parts[0].shape()[static_cast<size_t>(d)]);
  }
  for (const EagerTensor& p : parts) lifted.push_back(nogil([&] { return ctx_of(p).reshape(p, shape); }));
  return nogil([&] { return as_op(ctx_of(lifted[0]).concatenate(lifted, axis), "stack"); });
}

}  // namespace tenferro::python
