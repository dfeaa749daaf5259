"""numpy's ufunc and function protocols on tenferro.EagerTensor (docs/design/0008-python.md,
"numpy functions on eager tensors").

A ufunc or numpy function with a tenferro operation runs it: the result is an eager tensor
on the operands' runtime and records for AD (numpy scalars and arrays are operands as the
operators take them: scalars in the tensor's dtype, arrays of the same dtype). Anything
else (another function, a ufunc method such as reduce, `out=`, a `dtype=` conversion)
computes in numpy on the values, as before, unless an operand requires grad: that would
silently drop the gradient, so it raises TypeError instead.
"""

import numpy as np

from . import _tenferro
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
_UFUNC_UNARY = {
    np.negative: "__neg__", np.absolute: "__abs__", np.exp: "exp", np.log: "log", np.sin: "sin",
    np.cos: "cos", np.tanh: "tanh", np.sqrt: "sqrt", np.conjugate: "conj", np.expm1: "expm1",
    np.log1p: "log1p",
}
# numpy's sign of a complex number is the sign of its real part (numpy 1.x), tenferro's
# (as numpy 2.x and StableHLO) z / |z|: numpy.sign runs tenferro's only for real dtypes.
_UFUNC_UNARY_REAL = {np.sign: "sign"}


def _requires_grad(obj):
    if isinstance(obj, EagerTensor):
        return obj.requires_grad
    if isinstance(obj, (list, tuple)):
        return any(_requires_grad(o) for o in obj)
    return False


def _host(obj):
    if isinstance(obj, EagerTensor):
        return obj.numpy()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_host(o) for o in obj)
    return obj


def _in_numpy(what, call, args, kwargs):
    """`call` on the values (numpy's own computation), refused where it would drop a gradient."""
    if _requires_grad(args) or _requires_grad(tuple(kwargs.values())):
        raise TypeError(f"tenferro: numpy.{what} on an eager tensor that requires grad would compute in numpy "
                        "and drop the gradient; use tenferro operations (or .detach() first)")
    return call(*_host(args), **{k: _host(v) for k, v in kwargs.items()})


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and not kwargs and ufunc in (np.maximum, np.minimum) and len(inputs) == 2:
        from . import maximum, minimum
        return (maximum if ufunc is np.maximum else minimum)(*inputs)
    if method == "__call__" and not kwargs:
        if ufunc in _UFUNC_UNARY and len(inputs) == 1:
            return getattr(inputs[0], _UFUNC_UNARY[ufunc])()
        if ufunc in _UFUNC_UNARY_REAL and len(inputs) == 1 and not np.issubdtype(inputs[0].dtype, np.complexfloating):
            return getattr(inputs[0], _UFUNC_UNARY_REAL[ufunc])()
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
    if len(xy) != 2 or not _all_eager((condition,) + xy):
        return None
    return where(condition, *xy)


def _einsum(*operands, out=None, **kwargs):
    from . import einsum
    return None if out is not None else einsum(*operands, **kwargs)


_FUNCTIONS = {
    np.sum: _reduction("sum"), np.prod: _reduction("prod"), np.mean: _reduction("mean"),
    np.amax: _reduction("max"), np.amin: _reduction("min"), np.max: _reduction("max"), np.min: _reduction("min"),
    np.any: _reduction("any"), np.all: _reduction("all"),
    np.var: _moments("var"), np.std: _moments("std"),
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
}
for _name in ("svd", "qr", "eigh", "eigvalsh", "eig", "eigvals", "cholesky", "solve", "inv", "det", "slogdet",
              "pinv", "lstsq", "norm", "matrix_power", "multi_dot", "matrix_rank", "cond",
              "tensorinv", "tensorsolve"):
    _FUNCTIONS[getattr(np.linalg, _name)] = getattr(_linalg, _name)


def _array_function(self, func, types, args, kwargs):
    run = _FUNCTIONS.get(func)
    if run is not None:
        result = run(*args, **kwargs)
        if result is not None:
            return result
    return _in_numpy(func.__name__, func, args, kwargs)


EagerTensor.__array_ufunc__ = _array_ufunc
EagerTensor.__array_function__ = _array_function
