"""tenferro: tensor-network and scientific computing on a fast C++ core.

    import numpy as np, tenferro
    a, b = np.random.rand(30, 40), np.random.rand(40, 50)
    c = tenferro.einsum("ij,jk->ik", a, b)          # numpy.einsum's semantics
    path, info = tenferro.contract_path("ij,jk,kl->il", a, b, b.T)

numpy arrays go in and come out without copies (``from_numpy``, ``Tensor.numpy()``);
errors are ``tenferro.Error`` subclasses of the matching built-in exceptions.
``tenferro.linalg`` and ``tenferro.fft`` have numpy.linalg's and numpy.fft's functions; ``tenferro.Runtime()`` makes eager
tensors (``rt.tensor(array)``, no copy) with operators, reductions and views, and
reverse-mode AD: ``x.requires_grad_()``, ``loss.backward()``, ``x.grad``,
``tenferro.grad(f)``, ``tenferro.vjp``/``jvp``, ``with tenferro.no_grad():``; and
``tenferro.trace(f, *examples)`` records a function into a compiled ``Program``.
"""

import json as _json

import numpy as _np

from . import _tenferro
from . import _indexing, fft, linalg
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
    program transforms (docs/design/0009-ad.md). Inputs the output does not depend on get
    zeros (also a constant output, or one computed under ``no_grad`` inside f); an outer
    ``no_grad`` block does not apply to f (as ``torch.func.grad``). Inputs may also be numpy
    arrays or numbers (as ``jax.grad``): they become eager tensors on the runtime of the
    eager inputs, else on the shared default runtime, and f receives those."""
    def g(*xs):
        ts, _ = _tensors(list(xs), "grad")
        return tuple(_tenferro.eager_grad(f, ts))
    return g


def value_and_grad(f):
    """``tenferro.value_and_grad(f)(x, y)`` returns ``(f(x, y), (df/dx, df/dy))`` (as
    ``jax.value_and_grad``) with f evaluated once: the value is the one the gradient was
    taken at, detached. Where an input is itself recorded (inside another transform, a
    tensor that requires grad, a trace), f is also called on the inputs directly so the
    value records too (two evaluations). Arguments and errors as :func:`grad`."""
    def g(*xs):
        ts, _ = _tensors(list(xs), "value_and_grad")
        if any(t.requires_grad for t in ts):
            return f(*ts), tuple(_tenferro.eager_grad(f, ts))
        seen = []

        def keep(*args):
            y = f(*args)
            seen.append(y)
            return y

        grads = tuple(_tenferro.eager_grad(keep, ts))
        return seen[-1].detach(), grads
    return g


def _tensors(xs, what, like=()):
    """The differentiation inputs as eager tensors: an EagerTensor or numpy array (a single
    input), or a sequence of them. Arrays (and numbers) become tensors on the runtime of
    the eager tensors among them (or among `like`), else on the shared default runtime,
    as trace's examples do."""
    single = isinstance(xs, (EagerTensor, _np.ndarray, _np.generic, int, float, complex))
    xs = [xs] if single else list(xs)
    if all(isinstance(x, EagerTensor) for x in xs):
        return xs, single
    rt = next((x.runtime for x in list(xs) + list(like) if isinstance(x, EagerTensor)), None)
    if rt is None:
        rt = _shared_runtime()
    out = []
    for x in xs:
        if isinstance(x, EagerTensor):
            out.append(x)
            continue
        try:
            a = _np.asarray(x)
        except Exception:
            a = None
        if a is None or a.dtype == object:
            raise TypeError(f"tenferro.{what}: expected eager tensors or numpy arrays, got {type(x).__name__}")
        out.append(rt.tensor(a))
    return out, single


def vjp(f, xs, cotangent):
    """``(f(*xs), grads)`` with ``grads[i] = <cotangent, d f / d xs[i]>`` (the adjoint of
    f's Jacobian applied to `cotangent`, of f's output dtype and shape), as
    ``torch.autograd.functional.vjp``. `xs`: an EagerTensor or a sequence of them (a single
    tensor or array gives a single gradient; arrays become eager tensors as for grad);
    entries of integer or bool dtype get None. Complex:
    the adjoint under Re<u, v> (docs/design/0009-ad.md). Accumulates nothing. Zeros for
    inputs f does not depend on; an outer ``no_grad`` block does not apply to f."""
    ts, single = _tensors(xs, "vjp", like=[cotangent])
    (ct,), _ = _tensors([cotangent], "vjp", like=ts)
    y, grads = _tenferro.eager_vjp(f, ts, ct)
    return y, (grads[0] if single else grads)


def jvp(f, xs, tangents):
    """``(f(*xs), J v)``: the forward-mode derivative of f along `tangents` (one per x, of
    its dtype and shape), as ``torch.autograd.functional.jvp``. Zeros when f depends on
    none of `xs`; an outer ``no_grad`` block does not apply to f."""
    ts, single = _tensors(xs, "jvp", like=[tangents] if isinstance(tangents, EagerTensor) else
                          list(tangents) if isinstance(tangents, (list, tuple)) else [])
    vs, _ = _tensors(tangents, "jvp", like=ts)
    return tuple(_tenferro.eager_jvp(f, ts, vs))


def jacobian(f):
    """The Jacobian function of `f`, a function of one eager tensor returning one eager
    tensor: ``tenferro.jacobian(f)(x)`` is d f(x) / d x, an eager tensor of shape
    ``f(x).shape + x.shape`` (as ``jax.jacobian``; x may be a numpy array, as for grad).
    Built column by column as jvp along each unit vector of x (one forward pass per
    element of x); the result records for AD. Real x (for complex x the derivative is not
    one complex matrix unless f is holomorphic)."""
    return lambda x: _jacobian(f, x, "jacobian")


def hessian(f):
    """The Hessian function of `f`, a function of one real eager tensor returning a real
    scalar eager tensor: ``tenferro.hessian(f)(x)`` is d²f / dx dx, an eager tensor of
    shape ``x.shape + x.shape`` (as ``jax.hessian``; x may be a numpy array, as for
    grad): the Jacobian of the gradient, jvp of grad along each unit vector (the nested
    transforms of docs/design/0009-ad.md); the result records for AD."""
    return lambda x: _jacobian(lambda u: grad(f)(u)[0], x, "hessian")


def _jacobian(f, x, what):
    (t,), _ = _tensors([x], what)
    if _np.dtype(t.dtype).kind != "f":
        raise TypeError(f"tenferro.{what}: needs a real floating input, got {t.dtype}")
    shape = tuple(t.shape)
    n = int(_np.prod(shape, dtype=_np.int64))
    if n == 0:
        y = f(t)
        return t.runtime.tensor(_np.zeros(tuple(y.shape) + shape, dtype=y.dtype))
    y, cols = None, []
    for k in range(n):
        e = _np.zeros(n, dtype=t.dtype)
        e[k] = 1
        y, dy = jvp(f, t, t.runtime.tensor(e.reshape(shape)))
        cols.append(dy.reshape(-1))
    return stack(cols, axis=1).reshape(tuple(y.shape) + shape)


_default_runtime = None


def _shared_runtime():
    """The runtime of arrays given where eager tensors are expected and no eager tensor
    names one (trace's examples, grad's inputs): one shared Runtime, made on first use."""
    global _default_runtime
    if _default_runtime is None:
        _default_runtime = Runtime()
    return _default_runtime


class Program:
    """A program traced from a Python function by :func:`trace`: call it with numpy arrays
    (or eager tensors) of the traced inputs' dtypes and shapes to get numpy arrays (a
    tuple when the function returned several values). ``text()`` prints its IR;
    ``grad(output=0)`` is the program of (outputs..., d output / d input for every float
    or complex input), ``vjp()`` / ``jvp()`` the reverse- and forward-mode programs
    (docs/design/0009-ad.md: extra inputs are the cotangents / tangents)."""

    def __init__(self, compiled, tree=None):
        if not isinstance(compiled, _tenferro.Program):
            raise TypeError("tenferro.Program: programs come from tenferro.trace or tenferro.jit "
                            f"(and their grad, vjp and jvp), not from a {type(compiled).__name__}")
        self._p = compiled
        self._tree = tree  # the traced function's output structure; None: a flat tuple

    def __call__(self, *args):
        outs = self._p.run(list(args))
        if self._tree is None:
            return tuple(outs)
        return _unflatten(self._tree, iter(outs))

    @property
    def num_inputs(self):
        return self._p.num_inputs

    @property
    def num_outputs(self):
        return self._p.num_outputs

    def text(self):
        return self._p.text()

    def stablehlo(self, inline_bindings=True):
        """The program as a StableHLO module (MLIR text, generic op form; docs/design/
        0012-stablehlo.md), like ``jax.jit(f).lower(*args).as_text()``: one function
        ``@main`` taking the traced inputs and returning the outputs. Tensors the function
        captured are constants of the module (``inline_bindings=False``: trailing
        arguments instead). Ops without a StableHLO form (most of linalg) raise
        UnsupportedError naming the op."""
        return self._p.stablehlo(inline_bindings)

    def grad(self, output=0):
        return Program(self._p.grad(output))

    def vjp(self):
        return Program(self._p.vjp())

    def jvp(self):
        return Program(self._p.jvp())

    def __repr__(self):
        return f"tenferro.Program({self.num_inputs} inputs, {self.num_outputs} outputs)"


def trace(f, *examples, runtime=None):
    """Traces ``f`` on example inputs into a :class:`Program` (compiled once, run many
    times). ``examples``: numpy arrays (or eager tensors) giving each input's dtype and
    shape; ``f`` receives eager tensors and returns one or a tuple of eager tensors,
    computed with tenferro operations (operators, reductions, views, einsum, linalg).
    Every value computed from an input is recorded, bool and integer ones included; other
    tensors the function uses (closures, numpy arrays, scalars) are constants of the
    program. Reading a traced value back inside ``f`` (``numpy()``, ``item()``,
    ``np.asarray``, ``detach()``) raises TypeError: it would freeze it as a constant.
    ``runtime``: the tenferro.Runtime to record and run on (default: the examples'
    runtime, else a shared default one)."""
    rt = runtime
    if rt is None:
        rt = next((e.runtime for e in examples if isinstance(e, EagerTensor)), None)
    if rt is None:
        rt = _shared_runtime()
    xs = [e if isinstance(e, EagerTensor) else rt.tensor(_np.asarray(e)) for e in examples]
    leaves = [_tenferro.trace_input(x) for x in xs]
    _tenferro._trace_enter()
    try:
        out = f(*leaves)
    finally:
        _tenferro._trace_exit()
    outs, tree = _flatten(out)
    return Program(_tenferro.program_of(outs, leaves, rt), tree)


def _flatten(out):
    """The eager tensors of a result (a tensor, or tuples, lists, namedtuples and dicts of
    them, nested) in order, and its structure for _unflatten."""
    leaves = []

    def walk(o):
        if isinstance(o, EagerTensor):
            leaves.append(o)
            return None
        if isinstance(o, dict):
            return (dict, [(k, walk(v)) for k, v in o.items()])
        if isinstance(o, (tuple, list)):
            return (type(o), [walk(v) for v in o])
        raise TypeError("tenferro.trace: the function must return eager tensors (one, or tuples, lists and "
                        f"dicts of them), got {type(o).__name__}")

    if isinstance(out, EagerTensor):
        return [out], ("leaf",)
    tree = walk(out)
    return leaves, tree


def _unflatten(tree, values):
    if tree is None or tree == ("leaf",):
        return next(values)
    kind, items = tree
    if kind is dict:
        return {k: _unflatten(t, values) for k, t in items}
    parts = [_unflatten(t, values) for t in items]
    return kind(*parts) if hasattr(kind, "_fields") else kind(parts)  # namedtuples take fields


class jit:
    """``@tenferro.jit`` — a function of arrays that is traced (:func:`trace`) on its first
    call for each signature of its arguments and runs the compiled program afterwards.
    Arrays, array-likes, eager tensors and Python floats are program inputs (their dtype
    and shape are the signature); Python ints, bools, strings and None are static: part
    of the signature and passed to the function as they are (axes, sizes, flags), so a
    new value traces a new program. Keyword arguments follow the same rules. Results as
    :func:`Program` returns them (numpy arrays in the function's structure: a tensor, or
    tuples, lists and dicts of them). ``f.programs`` maps each signature to its Program;
    at most ``max_programs`` are kept (oldest dropped). Called with an eager tensor that
    requires grad (inside ``tenferro.grad``, ``vjp``, a ``backward()`` computation, or an
    outer ``trace``), the function runs on those tensors directly so that its operations
    record (no program; results are eager tensors). The function must compute its results
    from its arguments with tenferro operations (the same rules as :func:`trace`)."""

    def __init__(self, f=None, *, runtime=None, max_programs=64):
        if not isinstance(max_programs, int) or max_programs < 1:
            raise ValueError(f"tenferro.jit: max_programs must be an int >= 1, got {max_programs!r}")
        self._f = f
        self._runtime = runtime
        self._max = max_programs
        self.programs = {}
        if f is not None:
            import functools
            functools.update_wrapper(self, f)

    @staticmethod
    def _static(v):
        return v is None or isinstance(v, (bool, str)) or type(v) is int

    def __call__(self, *args, **kwargs):
        if self._f is None:  # @tenferro.jit(runtime=...) form
            return jit(args[0], runtime=self._runtime, max_programs=self._max)
        names = sorted(kwargs)
        values = list(args) + [kwargs[k] for k in names]
        if any(isinstance(v, EagerTensor) and v.requires_grad for v in values):
            return self._f(*args, **kwargs)  # recorded on the tape (see the class doc)
        prog, inputs = self._program(args, kwargs)
        return prog(*inputs)

    def lower(self, *args, **kwargs):
        """The :class:`Program` this function runs for these arguments (traced now if it
        was not yet), as JAX's ``jit(f).lower(...)``: ``f.lower(x).stablehlo()`` is its
        StableHLO module, ``.text()`` its IR."""
        return self._program(args, kwargs)[0]

    def _program(self, args, kwargs):
        names = sorted(kwargs)
        values = list(args) + [kwargs[k] for k in names]
        inputs, key = [], []
        for v in values:
            if self._static(v):
                key.append(("static", type(v).__name__, v))
            else:
                a = v if isinstance(v, EagerTensor) else _np.asarray(v)
                inputs.append(a)
                key.append((str(a.dtype), tuple(a.shape)))
        key = (tuple(key), tuple(names), len(args))
        prog = self.programs.get(key)
        if prog is None:
            def on_leaves(*leaves):
                it = iter(leaves)
                full = [v if self._static(v) else next(it) for v in values]
                return self._f(*full[:len(args)], **dict(zip(names, full[len(args):])))
            prog = trace(on_leaves, *inputs, runtime=self._runtime)
            if len(self.programs) >= self._max:
                self.programs.pop(next(iter(self.programs)))
            self.programs[key] = prog
        return prog, inputs


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


def _constants(xs, what):
    # Eager tensors as they are; numpy arrays among them become constants on the eager
    # tensors' runtime (as for the operators and einsum), or on the shared default runtime
    # when none is eager (as flip, sort and the other numpy-style functions take them).
    if not xs:  # an empty sequence is the operation's own error
        return []
    return _tensors(list(xs), what)[0]


def where(pred, on_true, on_false):
    """Elementwise selection of eager tensors (one runtime, one dtype for the branches;
    numpy arrays among them become constants on that runtime, or on the shared default
    runtime when none is eager; a number as a branch takes the other branch's dtype, as
    the operators take numbers: exactly, Note [Python operands])."""
    branches = [on_true, on_false]
    number = [_np.ndim(b) == 0 and not isinstance(b, (EagerTensor, _np.ndarray)) for b in branches]
    if number[0] != number[1]:
        k = 0 if number[0] else 1  # the number branch; the other one gives its dtype
        pred, other = _constants((pred, branches[1 - k]), "where")
        branches[1 - k] = other
        branches[k] = _tenferro.eager_operand(other, branches[k])
        return _tenferro.eager_where(pred, *branches)
    return _tenferro.eager_where(*_constants((pred, *branches), "where"))


def concatenate(tensors, axis=0):
    """numpy's concatenate of eager tensors (one runtime, one dtype; numpy arrays among
    them become constants, on the shared default runtime when none is eager): along
    `axis`, or of the flattened tensors when `axis` is None."""
    return _tenferro.eager_concatenate(_constants(list(tensors), "concatenate"), axis)


def stack(tensors, axis=0):
    """numpy's stack of eager tensors of one shape (numpy arrays among them become
    constants, on the shared default runtime when none is eager): joined along a new
    axis `axis`."""
    return _tenferro.eager_stack(_constants(list(tensors), "stack"), axis)


def _elementwise_pair(name, run, x, y):
    # A symmetric binary function: the eager tensor first, the other operand as the
    # operators take it; with neither eager, the first on the shared default runtime.
    if not isinstance(x, EagerTensor) and isinstance(y, EagerTensor):
        x, y = y, x
    elif not isinstance(x, EagerTensor):
        x = _tensors(x, name)[0][0]
    return run(x, y)


def maximum(x, y):
    """numpy's maximum of eager tensors (NaN propagates); either may be a number or an
    array of the tensor's dtype (with neither eager, the first goes on the shared default
    runtime)."""
    return _elementwise_pair("maximum", _tenferro.eager_maximum, x, y)


def minimum(x, y):
    """numpy's minimum of eager tensors (NaN propagates); either may be a number or an
    array of the tensor's dtype (with neither eager, the first goes on the shared default
    runtime)."""
    return _elementwise_pair("minimum", _tenferro.eager_minimum, x, y)


def flip(x, axis=None):
    """numpy's flip of an eager tensor: reversed along `axis` (None: every axis); a view."""
    x = _tensors(x, "flip")[0][0]
    return _indexing.flip(x, axis)


def roll(x, shift, axis=None):
    """numpy's roll of an eager tensor: shifted by `shift` along `axis` (None: of the
    flattened tensor), wrapping around."""
    x = _tensors(x, "roll")[0][0]
    return _indexing.roll(x, shift, axis)


def pad(x, pad_width, constant_values=0):
    """numpy's pad of an eager tensor in mode 'constant': `pad_width` an int, a (before,
    after) pair or one pair per axis; `constant_values` one number."""
    x = _tensors(x, "pad")[0][0]
    r = _indexing.pad(x, pad_width, "constant", constant_values)
    if r is None:
        raise ValueError("tenferro.pad: constant_values must be one number")
    return r


def broadcast_to(x, shape):
    """numpy's broadcast_to of an eager tensor (a view, stride 0 on repeated axes)."""
    x = _tensors(x, "broadcast_to")[0][0]
    return _indexing.broadcast_to(x, shape)


def tile(x, reps):
    """numpy's tile of an eager tensor."""
    x = _tensors(x, "tile")[0][0]
    return _indexing.tile(x, reps)


def repeat(x, repeats, axis=None):
    """numpy's repeat of an eager tensor."""
    x = _tensors(x, "repeat")[0][0]
    return _indexing.repeat(x, repeats, axis)


def take_along_axis(x, indices, axis):
    """numpy's take_along_axis of an eager tensor (a gather: differentiable)."""
    x = _tensors(x, "take_along_axis")[0][0]
    return _indexing.take_along_axis(x, indices, axis)


def sort(x, axis=-1):
    """numpy's sort of an eager tensor (the order read on the host, the values gathered:
    gradients flow to where each value came from)."""
    x = _tensors(x, "sort")[0][0]
    return _indexing.sort(x, axis)


def cumsum(x, axis=None):
    """numpy's cumsum of an eager tensor (None: of the flattened tensor), differentiable."""
    x = _tensors(x, "cumsum")[0][0]
    return _indexing.cumsum(x, axis)


def cumprod(x, axis=None):
    """numpy's cumprod of an eager tensor (None: of the flattened tensor), differentiable."""
    x = _tensors(x, "cumprod")[0][0]
    return _indexing.cumprod(x, axis)


def _offset(k, what):
    # A diagonal offset: an integer that fits in int64 (any such offset is valid: past the
    # matrix it keeps or clears everything).
    if isinstance(k, bool) or not isinstance(k, (int, _np.integer)):
        raise TypeError(f"tenferro.{what}: k must be an integer, got {type(k).__name__}")
    k = int(k)
    if not -(1 << 63) <= k < (1 << 63):
        raise ValueError(f"tenferro.{what}: k = {k} does not fit in a 64-bit integer")
    return k


def tril(x, k=0):
    """numpy's tril: the lower triangle of the last two axes (diagonal offset k)."""
    x = _tensors(x, "tril")[0][0]
    return _tenferro.eager_tril(x, _offset(k, "tril"))


def triu(x, k=0):
    """numpy's triu: the upper triangle of the last two axes (diagonal offset k)."""
    x = _tensors(x, "triu")[0][0]
    return _tenferro.eager_triu(x, _offset(k, "triu"))


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


def _eager_copy(self, memo=None):
    # copy.copy / copy.deepcopy: a tensor over new memory (numpy's copy), a new leaf that
    # requires grad where the original does (torch's deepcopy of a parameter).
    c = self.detach().copy()
    return c.requires_grad_() if self.requires_grad else c


EagerTensor.__copy__ = _eager_copy
EagerTensor.__deepcopy__ = _eager_copy


def _eager_iter(self):
    # numpy's iteration: over the first axis; a 0-d tensor is not iterable.
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


def _eager_contains(self, value):
    # numpy's `value in a`: (a == value).any().
    return bool((self == value).any())


EagerTensor.__iter__ = _eager_iter
EagerTensor.__contains__ = _eager_contains


def _unpickle_eager(values, requires_grad):
    # A pickled eager tensor comes back on the shared default runtime (runtimes belong to
    # one process): its values, dtype, shape and whether it requires grad.
    t = _shared_runtime().tensor(values)
    return t.requires_grad_() if requires_grad else t


def _eager_reduce(self):
    # pickle / copy protocols: a copy of the values (no storage, runtime or tape is shared;
    # inside tenferro.trace a TypeError, as every host read).
    values = _indexing.host_values(self, "pickle").copy()
    return _unpickle_eager, (values, bool(self.requires_grad))


EagerTensor.__reduce__ = _eager_reduce

# numpy's ufunc and function protocols on eager tensors (np.exp(x), np.sum(x), array + x),
# advanced indexing and x.at[key] updates.
from . import _numpy_protocols  # noqa: E402,F401  (installs them on EagerTensor)
_indexing.install()


def info(threads=None):
    """The CPU capabilities the engine plans with (ISA, BLIS/OpenBLAS kernels, caches)."""
    return _json.loads(default_engine(threads).caps_json())


__all__ = ["linalg", "fft", "Runtime", "EagerTensor", "where", "flip", "roll", "pad", "broadcast_to", "tile", "repeat", "take_along_axis", "sort", "cumsum", "cumprod", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "trace", "jit", "Program", "no_grad", "is_grad_enabled", "einsum", "contract_path", "PathInfo", "Engine", "default_engine", "from_numpy", "Tensor", "info",
           "Error", "InvalidArgumentError", "ShapeError", "DTypeError", "UnsupportedError", "ReadOnlyError",
           "LinAlgError", "AllocationError", "InternalError"]
