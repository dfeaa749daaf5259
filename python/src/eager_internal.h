#pragma once
// Private to the eager binding (eager.cc: the Runtime and EagerTensor classes;
// eager_numpy.cc: numpy semantics composed from the core ops; eager_linalg.cc:
// tenferro.linalg on eager tensors): the per-thread AD state and the helpers they share.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <utility>
#include <vector>

#include "convert.h"
#include "tenferro/eager/eager.h"

namespace tenferro::python {

namespace eg = tenferro::eager;
using eg::EagerTensor;

// Note [Python no_grad]: `with tenferro.no_grad():` turns AD recording off for the eager
// calls the current Python thread makes inside the block (as torch.no_grad does). The
// C++ core keeps no such state (an op records when its Context has grad enabled;
// Context::no_grad() is the C++ scope); the binding keeps a per-thread depth and derives
// each call's Context from it, so other threads and runtimes are unaffected.
extern thread_local int tls_no_grad_depth;
// Note [Python trace]: while tenferro.trace runs the user's function (per thread), a
// value computed from the trace inputs must not be read back to the host: it would
// enter the program as a constant of this one trace. Such reads raise.
extern thread_local int tls_trace_depth;

/// Raises TypeError when `x` is a traced value read back to the host inside a trace.
void refuse_traced_read(const EagerTensor& x, const char* what);

/// The context of a call on `t` (its runtime's default placement policy; no_grad per
/// Note [Python no_grad]).
eg::Context ctx_of(const EagerTensor& t);

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

/// Axes argument: None (all), an int, or a sequence; negative axes count from the end
/// (the eager ops normalize them and name the axis as given in errors).
Shape axes_of(const py::object& axis);

/// An operand of a binary operation: a tensor, a numpy array (a constant, no copy; its
/// dtype must match), a list/tuple of numbers or a Python/numpy number (values in the
/// tensor's dtype: they never change the result dtype); nullopt for anything else (the
/// operators then return NotImplemented). operand() raises TypeError instead.
std::optional<EagerTensor> try_operand(const EagerTensor& like, const py::object& o);
EagerTensor operand(const EagerTensor& like, const py::object& o);

/// x // y, x % y, divmod(x, y) and their reflections (Note [Floor division] in
/// eager_numpy.cc).
enum class FloorPart { kQuotient, kRemainder, kBoth };
py::object floor_op(const EagerTensor& x, const py::object& y, FloorPart part, bool reflected);

/// numpy's basic indexing (eager_numpy.cc): integers, slices of any step, one Ellipsis,
/// None; a view where the slice allows. Array indices raise IndexError.
EagerTensor basic_index(const EagerTensor& x, const py::object& key);

/// numpy's any / all over `axis` (eager_numpy.cc).
EagerTensor any_or_all(const EagerTensor& x, const py::object& axis, bool keepdims, bool is_any);

/// numpy's ravel: row-major order, a view where the layout allows (eager_numpy.cc).
EagerTensor ravel(const EagerTensor& x);

/// numpy's squeeze (eager_numpy.cc).
EagerTensor squeeze(const EagerTensor& x, const py::object& axis);

/// numpy's diagonal(offset, axis1, axis2) (a view; the diagonal is the last axis) and
/// trace (its sum) (eager_numpy.cc); errors name `op`.
EagerTensor diagonal(const EagerTensor& x, int64_t offset, int64_t axis1, int64_t axis2, const char* op = "diagonal");
EagerTensor trace(const EagerTensor& x, int64_t offset, int64_t axis1, int64_t axis2);

/// numpy's accumulator dtype of a reduction (Note [numpy reduction dtypes]): kInt sums
/// bools and int32 as int64, kFloat takes every non-inexact dtype as float64.
enum class NumpyAccumulator { kInt, kFloat };
Result<EagerTensor> numpy_reduction_operand(const eg::Context& c, const EagerTensor& x, NumpyAccumulator acc);

/// numpy's var / std over `axis` with `ddof` (eager_numpy.cc): bools and integers in
/// float64, complex tensors give a real result.
EagerTensor variance(const EagerTensor& x, const py::object& axis, int64_t ddof, bool keepdims, bool root);

/// `r`, its error (if any) naming `op`: the Python method whose composed operations
/// failed (transpose of permute, clip of clamp), as the user called it.
inline Result<EagerTensor> as_op(Result<EagerTensor> r, const char* op) {
  if (r || r.error().op() == op) return r;
  return Error(r.error().stage(), r.error().code(), op, r.error().message());
}

/// numpy's take (mode 'raise'): `indices` (integers: an array-like or an integer eager
/// tensor, read on the host) along `axis`, or of the flattened tensor when None; the
/// program's gather after a bounds check (IndexError) (eager_numpy.cc).
EagerTensor take(const EagerTensor& x, const py::object& indices, const py::object& axis);

/// numpy's concatenate (axis None: of the flattened tensors) and stack (a new axis of
/// extent len(parts)) (eager_numpy.cc). Errors: ValueError for no parts or an axis out of
/// range; the core's for differing shapes or dtypes.
EagerTensor concatenate(const std::vector<EagerTensor>& parts, const py::object& axis);
EagerTensor stack(const std::vector<EagerTensor>& parts, int64_t axis);

/// Binds tenferro.linalg's eager entry points into `m` (eager_linalg.cc).
void bind_eager_linalg(py::module_ m);
void bind_eager_fft(py::module_ m);

}  // namespace tenferro::python
