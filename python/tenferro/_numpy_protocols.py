"""numpy's ufunc and function protocols on tenferro.EagerTensor (docs/design/0008-python.md,
"numpy functions on eager tensors").

A ufunc or numpy function with a tenferro operation runs it: the result is an eager tensor
on the operands' runtime and records for AD (numpy scalars and arrays are operands as the
operators take them: scalars in the tensor's dtype, arrays of the same dtype). Anything
else (another function, a ufunc method such as reduce, `out=`, a `dtype=` conversion)
computes in numpy on the values, as before, unless an operand requires grad: that would
silently drop the gradient, so it raises TypeError instead.
"""

import functools

import numpy as np

from . import _tenferro
from . import _indexing
from . import _numpy_composed
from . import fft as _fft
from . import linalg as _linalg

EagerTensor = _tenferro.EagerTensor

_UFUNC_BINARY = {
    np.add: ("__add__", "__radd__"), np.subtract: ("__sub__", "__rsub__"),
    np.multiply: ("__mul__", "__rmul__"), np.true_divide: ("__truediv__", "__rtruediv__"),
    np.power: ("__pow__", "__rpow__"), np.floor_divide: ("__floordiv__", "__rfloordiv__"),
    np.remainder: ("__mod__", "__rmod__"), np.divmod: ("__divmod__", "__rdivmod__"),
    np.matmul: ("__matmul__", "__rmatmul__"), np.equal: ("__eq__", "__eq__"),
    np.not_equal: ("__ne__", "__ne__"), np.less: ("__lt__", "__gt__"), np.less_equal: ("__le__", "__ge__"),
    np.greater: ("__gt__", "__lt__"), np.greater_equal: ("__ge__", "__le__"),
}
_UFUNC_BOOL = {
    np.bitwise_and: ("__and__", "__rand__"), np.bitwise_or: ("__or__", "__ror__"),
    np.bitwise_xor: ("__xor__", "__rxor__"), np.invert: ("__invert__", None),
}
_UFUNC_UNARY = {
    np.negative: "__neg__", np.absolute: "__abs__", np.exp: "exp", np.log: "log", np.sin: "sin",
    np.cos: "cos", np.tanh: "tanh", np.sqrt: "sqrt", np.conjugate: "conj", np.expm1: "expm1",
    np.log1p: "log1p",
}
# numpy's sign of a complex number is the sign of its real part (numpy 1.x), tenferro's
# (as numpy 2.x and StableHLO) z / |z|: numpy.sign runs tenferro's only for real dtypes.
_UFUNC_UNARY_REAL = {np.sign: "sign"}


# ufuncs without a core op of their own, composed from tenferro operations (so they record
# for AD); None where numpy's semantics differ for the dtype (integer reciprocal, fabs of
# complex), which then computes in numpy.
_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))


def _inexact(x):
    return np.issubdtype(x.dtype, np.inexact)


def _real_inexact(x):
    return np.issubdtype(x.dtype, np.floating)


# Note [Inverse functions]: numpy's inverse trigonometric and hyperbolic functions of real
# floating tensors, from core operations so they record, trace and differentiate:
# - arctan x = atan2(x, 1), arcsin x = atan2(x, c), arccos x = atan2(c, x) with
#   c = sqrt((1 - x)(1 + x)) (exact factors near |x| = 1, where 1 - x*x would cancel);
#   |x| > 1 makes c NaN, as numpy's NaN; signed zeros and infinities come out of atan2.
# - arctanh x = sign(x) log1p(2a / (1 - a)) / 2, a = |x| (accurate near 0 and near 1,
#   where 1 - a is exact; +-inf at +-1; the same formula at -x would lose digits near -1).
# - arcsinh x = sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|, and
#   arccosh x = log1p(t + sqrt(t (t + 2))), t = x - 1: accurate near 0 (near 1), but a^2
#   overflows for large arguments, where log(a) + log(2) is exact to rounding instead
#   (above _BIG); arccosh is NaN below 1 (the formula would give -inf far below). Each
#   branch gets an argument that is safe for it (the other branches' elements replaced by
#   1), so a branch not taken passes a zero gradient, never NaN.
_BIG = 2.0 ** 28


def _atan2(y, x):
    return _tenferro.eager_arctan2(y, x, False) if isinstance(y, EagerTensor) else _tenferro.eager_arctan2(x, y, True)


_eager_pair = _numpy_composed.eager_pair


def _logaddexp(x, y, ln_base=1.0):
    # Note [logaddexp]: m + log1p((exp(x - m) - 1) + exp(y - m)) with m = max(x, y), the
    # - 1 on the larger side, whose difference is exactly 0 (logaddexp2: powers of 2 by the
    # core pow, which is exact there, and the logarithm over log 2): accurate where the
    # smaller term is tiny, and the derivative in m is exactly zero (1 - (1 + e) / (1 + e)), so the gradients are the
    # softmax weights, 1/2 each at a tie, whichever side max passes its gradient to.
    # Where m is infinite the result is m, and every branch sees finite stand-ins (no NaN
    # gradient from a branch not taken).
    from . import maximum
    x, y = _eager_pair(x, y)
    m = maximum(x, y)
    inf = abs(m) == float("inf")
    xs, ys, ms = _where(inf, 0.0, x), _where(inf, 0.0, y), _where(inf, 0.0, m)
    dx, dy = xs - ms, ys - ms  # the larger one exactly 0
    power = (lambda d: d.exp()) if ln_base == 1.0 else (lambda d: 2.0 ** d)  # the core pow: exact powers of 2
    t = _where(dx >= dy, ((power(dx) - 1) + power(dy)).log1p(), (power(dx) + (power(dy) - 1)).log1p())
    r = ms + (t if ln_base == 1.0 else t * (1 / ln_base))
    return _where(inf, m, r)


def _nan_ignoring(pick):
    # numpy's fmax / fmin: the other operand where one is NaN.
    def run(x, y):
        x, y = _eager_pair(x, y)
        return _where(y != y, x, _where(x != x, y, pick(x, y)))
    return run


def _heaviside(x, h0):
    # 0 below zero, 1 above, h0 at zero, NaN at NaN (no derivative: zero gradients).
    x, h0 = _eager_pair(x, h0)
    return _where(x != x, x, _where(x < 0, 0.0, _where(x > 0, 1.0, h0)))


def _hypot(x, y):
    def as_complex(v):
        if isinstance(v, EagerTensor):
            return v.astype(np.result_type(v.dtype, np.complex64))
        return np.asarray(v).astype(np.result_type(np.asarray(v).dtype, np.complex64))
    return abs(as_complex(x) + as_complex(y) * 1j)


def _cosine_of_arcsin(x):
    return ((1 - x) * (1 + x)).sqrt()


def _odd(x, r):
    # An odd function's value from r = f(|x|): numpy's signed zeros (f(+-0) = +-0).
    return _where(x == 0, x, _where(x < 0, -r, r))


def _atanh(x):
    a = abs(x)
    return _odd(x, (2 * a / (1 - a)).log1p() * 0.5)


def _asinh(x):
    a = abs(x)
    big = a > _BIG
    small = _where(big, 1.0, a)
    r = _where(big, _where(big, a, 1.0).log() + _LN2, (small + small * small / (1 + (1 + small * small).sqrt())).log1p())
    return _odd(x, r)


def _acosh(x):
    big = x > _BIG
    near = (x >= 1) & ~big  # false for NaN
    t = _where(near, x, 1.0) - 1
    r = _where(near, (t + (t * (t + 2)).sqrt()).log1p(), float("nan"))
    return _where(big, _where(big, x, 1.0).log() + _LN2, r)


_UFUNC_COMPOSED = {
    np.square: lambda x: x * x,
    np.positive: lambda x: x + 0 if x.dtype != np.bool_ else None,
    np.reciprocal: lambda x: 1 / x if _inexact(x) else None,
    np.log10: lambda x: x.log() * (1 / _LN10) if _inexact(x) else None,
    np.log2: lambda x: x.log() * (1 / _LN2) if _inexact(x) else None,
    np.exp2: lambda x: (x * _LN2).exp() if _inexact(x) else None,
    np.tan: lambda x: x.sin() / x.cos() if _inexact(x) else None,
    # sinh through expm1 keeps small arguments accurate ((e^x - e^-x) / 2 would cancel).
    np.sinh: lambda x: (x.expm1() - (-x).expm1()) * 0.5 if _inexact(x) else None,
    np.cosh: lambda x: (x.exp() + (-x).exp()) * 0.5 if _inexact(x) else None,
    # Inverse functions of real floating tensors through the core atan2 and log1p (numpy
    # computes complex ones): Note [Inverse functions].
    np.arctan: lambda x: _atan2(x, 1.0) if _real_inexact(x) else None,
    np.arcsin: lambda x: _atan2(x, _cosine_of_arcsin(x)) if _real_inexact(x) else None,
    np.arccos: lambda x: _atan2(_cosine_of_arcsin(x), x) if _real_inexact(x) else None,
    np.arctanh: lambda x: _atanh(x) if _real_inexact(x) else None,
    np.arcsinh: lambda x: _asinh(x) if _real_inexact(x) else None,
    np.arccosh: lambda x: _acosh(x) if _real_inexact(x) else None,
    np.fabs: lambda x: abs(x) if _real_inexact(x) else None,
    np.deg2rad: lambda x: x * float(np.pi / 180) if _real_inexact(x) else None,
    np.radians: lambda x: x * float(np.pi / 180) if _real_inexact(x) else None,
    np.rad2deg: lambda x: x * float(180 / np.pi) if _real_inexact(x) else None,
    np.degrees: lambda x: x * float(180 / np.pi) if _real_inexact(x) else None,
}


def _maximum(x, y):
    from . import maximum
    return maximum(x, y)


def _minimum(x, y):
    from . import minimum
    return minimum(x, y)


# Binary ufuncs of real floating operands composed from tenferro operations: arctan2 is the
# core atan2, hypot the modulus of x + iy (overflow-safe), logaddexp Note [logaddexp].
_UFUNC_REAL_PAIRS = {
    np.arctan2: lambda y, x: _atan2(y, x),
    np.hypot: lambda x, y: _hypot(x, y),
    np.logaddexp: lambda x, y: _logaddexp(x, y),
    np.logaddexp2: lambda x, y: _logaddexp(x, y, _LN2),
    np.fmax: _nan_ignoring(_maximum),
    np.fmin: _nan_ignoring(_minimum),
    np.heaviside: lambda x, h0: _heaviside(x, h0),
    np.float_power: lambda x, y: (lambda a, b: a.astype(np.float64) ** b.astype(np.float64))(*_eager_pair(x, y)),
}


def _requires_grad(obj):
    if isinstance(obj, EagerTensor):
        return obj.requires_grad
    if isinstance(obj, (list, tuple)):
        return any(_requires_grad(o) for o in obj)
    return False


def _host(obj, what):
    if isinstance(obj, EagerTensor):
        return _indexing.host_values(obj, what)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_host(o, what) for o in obj)
    return obj


# Functions and ufuncs whose results carry no derivative (booleans, indices, integers,
# piecewise-constant values: their derivative is zero wherever it exists), so computing
# them in numpy on the values drops nothing: they run there even on tensors that
# require grad.
# (Looked up by name: aliases such as round_ are gone from numpy 2.)
_NO_DERIVATIVE = {
    f for f in (getattr(np, name, None) for name in (
        "isnan", "isinf", "isfinite", "signbit", "logical_not", "logical_and", "logical_or", "logical_xor", "floor",
        "ceil", "trunc", "rint", "isclose", "allclose", "array_equal", "array_equiv", "argmax", "argmin", "argsort",
        "nonzero", "flatnonzero", "argwhere", "count_nonzero", "searchsorted", "iscomplexobj", "isrealobj",
        "iscomplex", "isreal", "result_type", "around", "round", "round_", "nanargmax", "nanargmin"))
    if f is not None
}


def _dtype(x):
    # An operand's dtype without reading its values (np.result_type of an eager tensor is
    # a host read, refused inside a trace).
    return x.dtype if isinstance(x, (EagerTensor, np.ndarray, np.generic)) else np.result_type(x)


def _truth(x):
    return x if x.dtype == np.bool_ else x != 0


def _floor(x):
    # floor through numpy's floor_divide by 1 (its quotient passes no gradient: Note [Floor
    # division]); infinities are their own floor (inf // 1 is NaN).
    return _where(abs(x) == float("inf"), x, x // 1.0)


def _rint(x):
    # Round half to even: floor, plus one where the fraction (exact) is above one half, or
    # one half with an odd floor; a zero result keeps x's sign (x * 0), as numpy's.
    f = _floor(x)
    d = x - f
    up = (d > 0.5) | ((d == 0.5) & (f % 2.0 == 1.0))
    r = _where(up, f + 1.0, f)
    return _where(r == 0, x * 0.0, r)


def _round(x, decimals=0):
    if decimals == 0:
        return _rint(x)
    scale = 10.0 ** decimals  # numpy's: scale, round half to even, scale back
    return _rint(x * scale) / scale


def _real_floating_only(f):
    # The rounding functions of _IN_TRACE: real floating tensors (numpy's integer forms
    # return floats or the integers themselves; those stay host reads).
    def run(x, *args):
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError(f"tenferro.trace: numpy rounding of a {x.dtype} tensor is not recorded; convert "
                            "with astype or call it outside the traced function")
        return f(x, *args)
    return run


# Predicates numpy computes on the values, recorded as tenferro operations inside
# tenferro.trace / jit (where the values cannot be read); outside a trace numpy computes
# them (their results carry no derivative).
_IN_TRACE = {
    np.isnan: lambda x: x != x,
    np.isinf: lambda x: abs(x) == float("inf") if _inexact(x) else x != x,
    np.isfinite: lambda x: abs(x) < float("inf") if _inexact(x) else x == x,
    np.logical_not: lambda x: ~_truth(x),
    np.logical_and: lambda a, b: _truth(a) & _truth(b),
    np.logical_or: lambda a, b: _truth(a) | _truth(b),
    np.logical_xor: lambda a, b: _truth(a) ^ _truth(b),
    np.floor: _real_floating_only(_floor),
    np.ceil: _real_floating_only(lambda x: -_floor(-x)),
    np.trunc: _real_floating_only(lambda x: _where(x < 0, -_floor(-x), _floor(x))),
    np.rint: _real_floating_only(_rint),
    np.round: _real_floating_only(_round),
    np.around: _real_floating_only(_round),
}


def _in_numpy(what, call, args, kwargs):
    """`call` on the values (numpy's own computation), refused where it would drop a
    gradient; inside a trace only the predicates of _IN_TRACE, as tenferro operations."""
    try:
        host_args = _host(args, f"numpy.{what}")
        host_kwargs = {k: _host(v, f"numpy.{what}") for k, v in kwargs.items()}
    except TypeError:  # a traced value
        ufunc = getattr(call, "__self__", None)  # np.isnan.__call__ -> np.isnan
        composed = _IN_TRACE.get(call) or (_IN_TRACE.get(ufunc) if isinstance(ufunc, np.ufunc) else None)
        if composed is not None and set(kwargs) <= ({"decimals"} if call in (np.round, np.around) else set()):
            return composed(*args, *kwargs.values())
        raise
    if not (call in _NO_DERIVATIVE or getattr(call, "__self__", None) in _NO_DERIVATIVE) and (
            _requires_grad(args) or _requires_grad(tuple(kwargs.values()))):
        raise TypeError(f"tenferro: numpy.{what} on an eager tensor that requires grad would compute in numpy "
                        "and drop the gradient; use tenferro operations (or .detach() first)")
    return call(*host_args, **host_kwargs)


def _logsumexp(x, axis, keepdims):
    # numpy's logaddexp.reduce: m + log(sum(exp(x - m))) with m the maximum (its
    # derivative cancels exactly: the gradient is the softmax weights); an infinite m is
    # the result, the shift then 0 so that no inf - inf appears.
    reduced = x.sum(axis=axis, keepdims=keepdims)
    if reduced.size == 0 or x.size == 0:  # nothing to take a maximum of: logaddexp's identity
        return reduced + float("-inf")
    m = x.max(axis=axis, keepdims=True)
    shift = _where(abs(m) == float("inf"), 0.0, m)
    r = shift + (x - shift).exp().sum(axis=axis, keepdims=True).log()
    return r if keepdims else r.reshape(tuple(x.max(axis=axis).shape))


# ufunc.reduce / accumulate on an eager tensor: the tensor method with numpy's semantics.
_UFUNC_REDUCE = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min", np.logical_or: "any",
                 np.logical_and: "all", np.logaddexp: None}
_UFUNC_ACCUMULATE = {np.add: _indexing.cumsum, np.multiply: _indexing.cumprod}


def _ufunc_method(ufunc, method, inputs, kwargs):
    # numpy's reduce (axis 0 by default; None: every axis) and accumulate of one eager
    # tensor; None for anything else (other arguments, dtype=, out=, initial=, where=).
    if len(inputs) != 1 or not isinstance(inputs[0], EagerTensor) or inputs[0].ndim == 0:
        return None
    x = inputs[0]
    if method == "reduce" and ufunc in _UFUNC_REDUCE and set(kwargs) <= {"axis", "keepdims"}:
        axis, keepdims = kwargs.get("axis", 0), bool(kwargs.get("keepdims", False))
        if ufunc is np.logaddexp:
            return _logsumexp(x, axis, keepdims) if np.issubdtype(x.dtype, np.floating) else None
        return getattr(x, _UFUNC_REDUCE[ufunc])(axis=axis, keepdims=keepdims)
    if method == "accumulate" and ufunc in _UFUNC_ACCUMULATE and set(kwargs) <= {"axis"}:
        return _UFUNC_ACCUMULATE[ufunc](x, kwargs.get("axis", 0))
    return None


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method in ("reduce", "accumulate"):
        r = _ufunc_method(ufunc, method, inputs, kwargs)
        if r is not None:
            return r
    if method == "__call__" and not kwargs and ufunc in (np.maximum, np.minimum) and len(inputs) == 2:
        from . import maximum, minimum
        return (maximum if ufunc is np.maximum else minimum)(*inputs)
    if method == "__call__" and not kwargs:
        if ufunc is np.fmod and len(inputs) == 2 and all(np.issubdtype(_dtype(x), np.floating) for x in inputs):
            # C's fmod of floating tensors: the core rem (differentiable; integers, whose
            # zero divisors numpy maps to 0, compute in numpy)
            a, b = inputs
            return _tenferro.eager_fmod(a, b, False) if isinstance(a, EagerTensor) else _tenferro.eager_fmod(b, a, True)
        if ufunc in _UFUNC_REAL_PAIRS and len(inputs) == 2 and all(
                np.issubdtype(_dtype(x), np.floating) for x in inputs):
            return _UFUNC_REAL_PAIRS[ufunc](*inputs)  # integers compute in numpy, in float64
        if ufunc in _UFUNC_BOOL and all(_dtype(x) == np.bool_ for x in inputs):
            # numpy's & | ^ ~ of bools (a numpy array on the left of an eager tensor lands here)
            forward, reflected = _UFUNC_BOOL[ufunc]
            if len(inputs) == 1:
                return getattr(inputs[0], forward)()
            a, b = inputs
            return getattr(a, forward)(b) if isinstance(a, EagerTensor) else getattr(b, reflected)(a)
        if ufunc in _UFUNC_UNARY and len(inputs) == 1:
            return getattr(inputs[0], _UFUNC_UNARY[ufunc])()
        if ufunc in _UFUNC_UNARY_REAL and len(inputs) == 1 and not np.issubdtype(inputs[0].dtype, np.complexfloating):
            return getattr(inputs[0], _UFUNC_UNARY_REAL[ufunc])()
        if ufunc in _UFUNC_COMPOSED and len(inputs) == 1:
            r = _UFUNC_COMPOSED[ufunc](inputs[0])
            if r is not None:
                return r
        if ufunc in _UFUNC_BINARY and len(inputs) == 2:
            a, b = inputs
            forward, reflected = _UFUNC_BINARY[ufunc]
            return getattr(a, forward)(b) if isinstance(a, EagerTensor) else getattr(b, reflected)(a)
    what = ufunc.__name__ + ("" if method == "__call__" else "." + method)
    return _in_numpy(what, getattr(ufunc, method), inputs, kwargs)


# numpy functions with a tenferro operation: each takes numpy's arguments and returns None
# when the call uses one it does not handle (then numpy computes, _in_numpy).
def _reduction(name):
    def run(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
        if dtype is not None or out is not None or rest or not isinstance(a, EagerTensor):
            return None
        return getattr(a, name)(axis=axis, keepdims=keepdims)
    return run


def _moments(name):
    def run(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **rest):
        if dtype is not None or out is not None or rest or not isinstance(a, EagerTensor):
            return None
        return getattr(a, name)(axis=axis, ddof=ddof, keepdims=keepdims)
    return run


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    # numpy's average of an eager tensor: the mean, or sum(a * w) / sum(w) with 1-D weights
    # laid along `axis` (numpy's rule); floating results, differentiable in a and w.
    if not isinstance(a, EagerTensor):
        return None
    a = a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)
    if weights is None:
        avg = a.mean(axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        count = a.size if axis is None else int(np.prod([a.shape[k] for k in np.atleast_1d(axis)]))
        return avg, _indexing.broadcast_to(a.runtime.tensor(np.array(count, dtype=a.dtype)), avg.shape) * 1
    if not isinstance(weights, EagerTensor):  # numpy's result dtype: that of a and the weights
        weights = np.asarray(weights)
        common = np.result_type(a.dtype, weights.dtype)
        a = a if a.dtype == common else a.astype(common)
        weights = a.runtime.tensor(np.ascontiguousarray(weights, dtype=common))
    w = weights
    if tuple(w.shape) != tuple(a.shape):
        if axis is None or np.ndim(axis) != 0 or w.ndim != 1 or w.shape[0] != a.shape[axis]:
            raise TypeError("tenferro: average: weights differing from a in shape need an integer axis and "
                            "1-D weights of that axis's length (numpy's rule)")
        k = axis % a.ndim
        w = w.reshape(tuple(w.shape[0] if d == k else 1 for d in range(a.ndim)))
        w = _indexing.broadcast_to(w, tuple(a.shape))
    total = w.sum(axis=axis, keepdims=keepdims)
    avg = (a * w).sum(axis=axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    # numpy's nan_to_num of an eager tensor: NaN -> nan, +-inf -> posinf / neginf (the
    # dtype's largest finite values by default), per part of a complex tensor; others
    # unchanged (integers and bools as they are). Differentiable: 1 where finite.
    if not isinstance(x, EagerTensor):
        return None
    if not np.issubdtype(x.dtype, np.inexact):
        return x.copy()
    if np.issubdtype(x.dtype, np.complexfloating):
        re = _nan_to_num(x.real, nan=nan, posinf=posinf, neginf=neginf)
        im = _nan_to_num(x.imag, nan=nan, posinf=posinf, neginf=neginf)
        return re.astype(x.dtype) + im.astype(x.dtype) * 1j
    big = float(np.finfo(x.dtype).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    y = _where(x == float("inf"), hi, x)
    y = _where(x == float("-inf"), lo, y)
    return _where(x != x, nan, y)


def _method(name):
    def run(a, *args, **kwargs):
        return getattr(a, name)(*args, **kwargs) if isinstance(a, EagerTensor) else None
    return run


def _transpose(a, axes=None):
    if not isinstance(a, EagerTensor):
        return None
    return a.transpose() if axes is None else a.transpose(axes)


def _reshape(a, newshape, order="C"):
    return a.reshape(newshape) if isinstance(a, EagerTensor) and order == "C" else None


def _ravel(a, order="C"):
    return a.ravel() if isinstance(a, EagerTensor) and order == "C" else None


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if dtype is not None or out is not None or not isinstance(a, EagerTensor):
        return None
    return a.trace(offset, axis1, axis2)


def _clip(a, a_min, a_max, out=None, **rest):
    if out is not None or rest or not isinstance(a, EagerTensor):
        return None
    return a.clip(a_min, a_max)


def _all_eager(xs):
    return all(isinstance(x, EagerTensor) for x in xs)


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    from . import concatenate
    arrays = list(arrays)
    if out is not None or dtype is not None or not _all_eager(arrays):
        return None
    return concatenate(arrays, axis)


def _stack(arrays, axis=0, out=None, **rest):
    from . import stack
    arrays = list(arrays)
    if out is not None or rest or not _all_eager(arrays):
        return None
    return stack(arrays, axis)


def _triangle(name):
    def run(m, k=0):
        from . import tril, triu
        return (tril if name == "tril" else triu)(m, k) if isinstance(m, EagerTensor) else None
    return run


def _where(condition, *xy):
    from . import where
    if len(xy) != 2 or not any(isinstance(v, EagerTensor) for v in (condition,) + xy):
        return None
    return where(condition, *xy)


def _like(fill):
    # zeros_like / ones_like / empty_like / full_like: a new eager tensor on a's runtime
    # (the values of a are not read: no derivative to drop).
    def run(a, *args, dtype=None, order="K", subok=True, shape=None):
        if not isinstance(a, EagerTensor) or order not in ("K", "A", "C", "F"):
            return None
        if fill == "full":
            if len(args) != 1:
                return None
            value = args[0]
        elif args:
            return None
        else:
            value = 1 if fill == "ones" else 0
        dtype = a.dtype if dtype is None else np.dtype(dtype)
        shape = tuple(a.shape) if shape is None else ((shape,) if np.ndim(shape) == 0 else tuple(shape))
        return a.runtime.tensor(np.full(shape, _indexing.in_range(value, dtype, "full_like"), dtype=dtype))
    return run


def _eager_only(run):
    def call(a, *args, **kwargs):
        return run(a, *args, **kwargs) if isinstance(a, EagerTensor) else None
    return call


def _scan(name):
    # cumsum / cumprod of eager tensors (bool and int32 in int64, as numpy's).
    def run(a, axis=None, dtype=None, out=None):
        if not isinstance(a, EagerTensor) or dtype is not None or out is not None:
            return None
        return getattr(_indexing, name)(a, axis)
    return run


def _flip_axis(axis):
    return lambda m: _indexing.flip(m, axis) if isinstance(m, EagerTensor) else None


def _einsum(*operands, out=None, **kwargs):
    from . import einsum
    return None if out is not None else einsum(*operands, **kwargs)


# Products and axis moves as einsum and views (so they record for AD). Operands are eager
# tensors or arrays of one dtype with at least one dimension; anything else computes in
# numpy (None).
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _product_operands(a, b):
    if isinstance(a, EagerTensor):
        if not isinstance(b, EagerTensor):
            b = np.asarray(b)
    elif isinstance(b, EagerTensor):
        a = np.asarray(a)
    else:
        return None
    na, nb = a.ndim, b.ndim
    if na == 0 or nb == 0 or na + nb > len(_LETTERS) or a.dtype != b.dtype:
        return None
    return a, b


@functools.lru_cache(maxsize=256)
def _contraction_subscripts(na, nb, a_axes, b_axes):
    la = _LETTERS[:na]
    lb = list(_LETTERS[na:na + nb])
    for i, j in zip(a_axes, b_axes):
        lb[j] = la[i]
    out = [la[i] for i in range(na) if i not in a_axes] + [lb[j] for j in range(nb) if j not in b_axes]
    return f"{la},{''.join(lb)}->{''.join(out)}"


def _contract(a, b, a_axes, b_axes):
    """einsum of a and b summing a's a_axes against b's b_axes; free axes of a, then of b."""
    return _einsum_call(_contraction_subscripts(a.ndim, b.ndim, tuple(a_axes), tuple(b_axes)), a, b)


def _einsum_call(subscripts, *operands):
    from . import einsum
    return einsum(subscripts, *operands)


def _dot(a, b, out=None):
    xs = _product_operands(a, b)
    if out is not None or xs is None:
        return None
    a, b = xs
    if a.ndim <= 2 and b.ndim <= 2:
        return a @ b  # numpy's dot is matmul for vectors and matrices
    return _contract(a, b, [a.ndim - 1], [max(b.ndim - 2, 0)])


def _tensordot(a, b, axes=2):
    xs = _product_operands(a, b)
    if xs is None:
        return None
    a, b = xs
    try:
        n = int(axes)
        a_axes, b_axes = list(range(a.ndim - n, a.ndim)), list(range(n))
    except TypeError:
        a_axes, b_axes = ([axes[0]] if np.isscalar(axes[0]) else list(axes[0]),
                          [axes[1]] if np.isscalar(axes[1]) else list(axes[1]))
    a_axes = [k % a.ndim for k in a_axes]
    b_axes = [k % b.ndim for k in b_axes]
    if len(a_axes) != len(b_axes) or len(set(a_axes)) != len(a_axes) or len(set(b_axes)) != len(b_axes):
        return None  # numpy reports the error
    if any(a.shape[i] != b.shape[j] for i, j in zip(a_axes, b_axes)):
        return None
    return _contract(a, b, a_axes, b_axes)


def _inner(a, b):
    xs = _product_operands(a, b)
    if xs is None:
        return None
    a, b = xs
    return _contract(a, b, [a.ndim - 1], [b.ndim - 1])


def _outer(a, b, out=None):
    xs = _product_operands(a, b)
    if out is not None or xs is None:
        return None
    return _einsum_call("i,j->ij", xs[0].reshape(-1), xs[1].reshape(-1))


def _vdot(a, b):
    xs = _product_operands(a, b)
    if xs is None:
        return None
    a, b = (x.reshape(-1) for x in xs)
    if np.issubdtype(np.dtype(a.dtype), np.complexfloating):
        a = a.conj() if isinstance(a, EagerTensor) else np.conj(a)
    return _einsum_call("i,i->", a, b)


def _kron(a, b):
    xs = _product_operands(a, b)
    if xs is None:
        return None
    a, b = xs
    n = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (n - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (n - b.ndim) + tuple(b.shape))
    la, lb = _LETTERS[:n], _LETTERS[n:2 * n]
    pairs = "".join(x + y for x, y in zip(la, lb))
    r = _einsum_call(f"{la},{lb}->{pairs}", a, b)
    return r.reshape(tuple(a.shape[k] * b.shape[k] for k in range(n)))


def _moveaxis(a, source, destination):
    if not isinstance(a, EagerTensor):
        return None
    src = [source] if np.isscalar(source) else list(source)
    dst = [destination] if np.isscalar(destination) else list(destination)
    src = [k % a.ndim if -a.ndim <= k < a.ndim else None for k in src]
    dst = [k % a.ndim if -a.ndim <= k < a.ndim else None for k in dst]
    if None in src or None in dst or len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        return None  # numpy reports the error
    order = [k for k in range(a.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(tuple(order))


def _expand_dims(a, axis):
    if not isinstance(a, EagerTensor):
        return None
    axes = [axis] if np.isscalar(axis) else list(axis)
    n = a.ndim + len(axes)
    axes = [k % n if -n <= k < n else None for k in axes]
    if None in axes or len(set(axes)) != len(axes):
        return None
    shape, it = [], iter(a.shape)
    for k in range(n):
        shape.append(1 if k in axes else next(it))
    return a.reshape(tuple(shape))


def _angle(z, deg=False):
    # numpy's angle: atan2(imag, real), of real floating tensors too (0 or pi).
    if not isinstance(z, EagerTensor) or not np.issubdtype(z.dtype, np.inexact):
        return None
    r = _atan2(z.imag, z.real)
    return r * float(180 / np.pi) if deg else r


_FUNCTIONS = {
    np.angle: _angle,
    np.sum: _reduction("sum"), np.prod: _reduction("prod"), np.mean: _reduction("mean"),
    np.amax: _reduction("max"), np.amin: _reduction("min"), np.max: _reduction("max"), np.min: _reduction("min"),
    np.any: _reduction("any"), np.all: _reduction("all"),
    np.var: _moments("var"), np.std: _moments("std"), np.average: _average, np.nan_to_num: _nan_to_num,
    np.argmax: lambda a, axis=None, out=None, *, keepdims=False: (
        a.argmax(axis, keepdims) if isinstance(a, EagerTensor) and out is None else None),
    np.argmin: lambda a, axis=None, out=None, *, keepdims=False: (
        a.argmin(axis, keepdims) if isinstance(a, EagerTensor) and out is None else None),
    np.transpose: _transpose, np.reshape: _reshape, np.ravel: _ravel, np.trace: _trace, np.clip: _clip,
    np.squeeze: _method("squeeze"), np.swapaxes: _method("swapaxes"), np.diagonal: _method("diagonal"),
    np.take: lambda a, indices, axis=None, out=None, mode="raise": (
        a.take(indices, axis) if isinstance(a, EagerTensor) and out is None and mode == "raise" else None),
    np.real: lambda a: a.real if isinstance(a, EagerTensor) else None,
    np.imag: lambda a: a.imag if isinstance(a, EagerTensor) else None,
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
    np.concatenate: _concatenate, np.stack: _stack, np.tril: _triangle("tril"), np.triu: _triangle("triu"),
    np.where: _where, np.einsum: _einsum,
    np.dot: _dot, np.tensordot: _tensordot, np.inner: _inner, np.outer: _outer, np.vdot: _vdot, np.kron: _kron,
    np.moveaxis: _moveaxis, np.expand_dims: _expand_dims,
    np.flip: _eager_only(_indexing.flip), np.fliplr: _flip_axis(1), np.flipud: _flip_axis(0),
    np.roll: _eager_only(_indexing.roll), np.pad: _eager_only(_indexing.pad),
    np.broadcast_to: lambda array, shape, subok=False: (
        _indexing.broadcast_to(array, shape) if isinstance(array, EagerTensor) else None),
    np.tile: lambda A, reps: _indexing.tile(A, reps) if isinstance(A, EagerTensor) else None,
    np.repeat: _eager_only(_indexing.repeat),
    np.zeros_like: _like("zeros"), np.ones_like: _like("ones"), np.empty_like: _like("zeros"),
    np.full_like: _like("full"),
    np.take_along_axis: lambda arr, indices, axis: (
        _indexing.take_along_axis(arr, indices, axis) if isinstance(arr, EagerTensor) else None),
    np.argsort: lambda a, axis=-1, kind=None, order=None: (
        a.argsort(axis, kind) if isinstance(a, EagerTensor) and order is None else None),
    np.sort: lambda a, axis=-1, kind=None, order=None: (
        _indexing.sort(a, axis) if isinstance(a, EagerTensor) and order is None else None),
    np.cumsum: _scan("cumsum"), np.cumprod: _scan("cumprod"),
    np.diag: lambda v, k=0: _indexing.diag(v, k) if isinstance(v, EagerTensor) else None,
    np.diff: lambda a, n=1, axis=-1, **rest: (
        _indexing.diff(a, n, axis) if isinstance(a, EagerTensor) and not rest else None),
    np.split: lambda ary, indices_or_sections, axis=0: (
        _indexing.array_split(ary, indices_or_sections, axis, equal=True) if isinstance(ary, EagerTensor) else None),
    np.array_split: lambda ary, indices_or_sections, axis=0: (
        _indexing.array_split(ary, indices_or_sections, axis) if isinstance(ary, EagerTensor) else None),
}
_FUNCTIONS.update(_numpy_composed.FUNCTIONS)
for _name in ("vstack", "hstack", "dstack", "column_stack"):
    _FUNCTIONS[getattr(np, _name)] = (
        lambda kind: lambda tup, **rest: (
            _indexing.stack_along(kind, tup) if not rest and any(isinstance(t, EagerTensor) for t in tup) else None))(
        _name)
for _name in ("svd", "qr", "eigh", "eigvalsh", "eig", "eigvals", "cholesky", "solve", "inv", "det", "slogdet",
              "pinv", "lstsq", "norm", "matrix_power", "multi_dot", "matrix_rank", "cond",
              "tensorinv", "tensorsolve"):
    _FUNCTIONS[getattr(np.linalg, _name)] = getattr(_linalg, _name)
for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
              "rfftn", "irfftn", "fftshift", "ifftshift"):
    _FUNCTIONS[getattr(np.fft, _name)] = getattr(_fft, _name)


def _array_function(self, func, types, args, kwargs):
    run = _FUNCTIONS.get(func)
    if run is not None:
        result = run(*args, **kwargs)
        if result is not None:
            return result
    return _in_numpy(func.__name__, func, args, kwargs)


EagerTensor.__array_ufunc__ = _array_ufunc
EagerTensor.__array_function__ = _array_function
