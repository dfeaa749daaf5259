"""tenferro: tensor-network and scientific computing on a fast C++ core.

    import numpy as np, tenferro
    a, b = np.random.rand(30, 40), np.random.rand(40, 50)
    c = tenferro.einsum("ij,jk->ik", a, b)          # numpy.einsum's semantics
    path, info = tenferro.contract_path("ij,jk,kl->il", a, b, b.T)

numpy arrays go in and come out without copies (``from_numpy``, ``Tensor.numpy()``);
errors are ``tenferro.Error`` subclasses of the matching built-in exceptions.
``tenferro.linalg`` has numpy.linalg's functions; ``tenferro.Runtime()`` makes eager
tensors (``rt.tensor(array)``, no copy) with operators, reductions and views, and
reverse-mode AD: ``x.requires_grad_()``, ``loss.backward()``, ``x.grad``,
``tenferro.grad(f)``, ``tenferro.vjp``/``jvp``, ``with tenferro.no_grad():``.
"""

import json as _json

import numpy as _np

from . import _tenferro
from . import linalg
from ._einsum import Engine, PathInfo, contract_path, default_engine, einsum
from ._errors import (AllocationError, DTypeError, Error, InternalError, InvalidArgumentError, LinAlgError,
                      ReadOnlyError, ShapeError, UnsupportedError)

Tensor = _tenferro.Tensor
Runtime = _tenferro.Runtime
EagerTensor = _tenferro.EagerTensor


def grad(f):
    """The gradient function of `f`, a function of eager tensors returning a real scalar
    eager tensor: ``tenferro.grad(f)(x, y)`` returns ``(df/dx, df/dy)`` (eager tensors;
    complex inputs get dL/dRe + i dL/dIm). Recorded eagerly, differentiated by the
    program transforms (docs/design/0009-ad.md)."""
    def g(*xs):
        return tuple(_tenferro.eager_grad(f, list(xs)))
    return g


def _tensors(xs, what):
    if isinstance(xs, EagerTensor):
        return [xs], True
    xs = list(xs)
    if not all(isinstance(x, EagerTensor) for x in xs):
        raise TypeError(f"tenferro.{what}: expected an EagerTensor or a sequence of them")
    return xs, False


def vjp(f, xs, cotangent):
    """``(f(*xs), grads)`` with ``grads[i] = <cotangent, d f / d xs[i]>`` (the adjoint of
    f's Jacobian applied to `cotangent`, of f's output dtype and shape), as
    ``torch.autograd.functional.vjp``. `xs`: an EagerTensor or a sequence of them (a single
    tensor gives a single gradient); entries of integer or bool dtype get None. Complex:
    the adjoint under Re<u, v> (docs/design/0009-ad.md). Accumulates nothing."""
    ts, single = _tensors(xs, "vjp")
    y, grads = _tenferro.eager_vjp(f, ts, cotangent)
    return y, (grads[0] if single else grads)


def jvp(f, xs, tangents):
    """``(f(*xs), J v)``: the forward-mode derivative of f along `tangents` (one per x, of
    its dtype and shape), as ``torch.autograd.functional.jvp``."""
    ts, single = _tensors(xs, "jvp")
    vs, _ = _tensors(tangents, "jvp")
    return tuple(_tenferro.eager_jvp(f, ts, vs))


class no_grad:
    """``with tenferro.no_grad(): ...`` — eager operations of this thread inside the block
    record nothing for AD (results do not require grad), as ``torch.no_grad``. Also a
    decorator: ``@tenferro.no_grad()``. Nests; other threads are unaffected."""

    def __enter__(self):
        _tenferro._no_grad_enter()
        return self

    def __exit__(self, *exc):
        _tenferro._no_grad_exit()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return wrapped


is_grad_enabled = _tenferro.is_grad_enabled


def where(pred, on_true, on_false):
    """Elementwise selection of eager tensors (one runtime, one dtype for the branches)."""
    return _tenferro.eager_where(pred, on_true, on_false)
__version__ = "0.1.0"


def from_numpy(array):
    """A tenferro Tensor over `array`'s memory (no copy; the array stays alive as long as
    the tensor). Read-only arrays give read-only tensors. TypeError for unsupported
    dtypes."""
    if not isinstance(array, _np.ndarray):
        raise TypeError("tenferro.from_numpy: expected a numpy.ndarray, got " + type(array).__name__)
    return _tenferro.from_numpy(array)


def _tensor_array(self, dtype=None, copy=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype, copy=False)


Tensor.__array__ = _tensor_array


def info(threads=None):
    """The CPU capabilities the engine plans with (ISA, BLIS/OpenBLAS kernels, caches)."""
    return _json.loads(default_engine(threads).caps_json())


__all__ = ["linalg", "Runtime", "EagerTensor", "where", "grad", "vjp", "jvp", "no_grad", "is_grad_enabled", "einsum", "contract_path", "PathInfo", "Engine", "default_engine", "from_numpy", "Tensor", "info",
           "Error", "InvalidArgumentError", "ShapeError", "DTypeError", "UnsupportedError", "ReadOnlyError",
           "LinAlgError", "AllocationError", "InternalError"]
