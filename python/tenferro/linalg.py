"""tenferro.linalg: decompositions and solvers on numpy arrays, with numpy.linalg's names
and return conventions, computed by tenferro's CPU engine (batched over leading axes,
any strides, inputs never modified).

Differences from numpy.linalg: integer and bool inputs become float64 as in numpy;
`eig`/`eigvals` always return complex arrays; `cholesky(a, upper=True)` gives the upper
factor; `svd(..., gauge_fix=True)` fixes the singular vectors' phases (each column of U
has its largest-magnitude entry real and positive); `truncated_svd` keeps a rank and/or
a relative discarded weight. Every call takes `engine=` or `threads=` like
tenferro.einsum.

Every function also takes `tenferro.EagerTensor` inputs (of one runtime; numpy arrays
next to them become constants there, as for the operators and einsum): it then runs
on their runtime and returns eager tensors that record for reverse-mode AD, so
``loss.backward()`` and ``tenferro.grad`` differentiate through svd, qr, eigh, eig,
cholesky, solve, inv, det, slogdet, pinv, lstsq (but its integer rank), the norms,
cond, truncated_svd, matrix_power, multi_dot, tensorinv, tensorsolve and expm; matrix_rank
returns an int64 eager tensor (docs/design/0009-ad.md lists the derivative conventions
and what is unsupported: full_matrices=True SVD vectors, the complete QR of a tall
matrix).
"""

import functools as _functools

import numpy as _np

from . import _tenferro
from ._einsum import _engine
from ._errors import Error as _Error
from ._errors import LinAlgError
from ._errors import UnsupportedError as _UnsupportedError

_L = _tenferro.linalg
_E = _tenferro.eager_linalg
_Eager = _tenferro.EagerTensor


def _names_itself(fn):
    # Errors of the decompositions a function computes with (svd's "A holds a NaN") name
    # the function the user called.
    name = fn.__name__

    @_functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _Error as e:
            if e.op == name or e.op not in ("svd", "matrix_norm", "vector_norm"):
                raise
            message = str(e)
            if message.startswith(e.op + ": "):
                message = message[len(e.op) + 2:]
            raise type(e)(f"{name}: {message}", e.code, e.stage, name) from None

    return run


def _on_eager(engine, threads, *xs):
    """The call's operands as eager tensors when any of them is one (then no engine= or
    threads=): arrays among them become constants on that tensor's runtime (integer
    arrays as float64), as for the operators and einsum. None otherwise."""
    first = next((x for x in xs if isinstance(x, _Eager)), None)
    if first is None:
        return None
    if engine is not None or threads is not None:
        raise TypeError("tenferro.linalg: eager tensors run on their runtime (no engine= or threads=)")
    return [x if isinstance(x, _Eager) else first.runtime.tensor(_arr(x, "linalg", matrix=False)) for x in xs]

__all__ = ["LinAlgError", "svd", "qr", "eigh", "eigvalsh", "eig", "eigvals", "cholesky", "solve", "inv", "det", "slogdet",
           "pinv", "lstsq", "norm", "matrix_norm", "vector_norm", "truncated_svd", "matrix_rank", "cond",
           "matrix_power", "multi_dot", "tensorinv", "tensorsolve", "expm"]


def _arr(a, name, matrix=True):
    a = _np.asarray(a)
    if a.dtype.kind in "biu":
        a = a.astype(_np.float64)  # numpy.linalg's conversion of integer input
    if matrix and a.ndim < 2:
        raise LinAlgError(f"{name}: {a.ndim}-dimensional array given; array must be at least two-dimensional",
                          "invalid_shape", "usage", name)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not a.flags.aligned:
        a = _np.require(a, requirements="A")
    return a


def _common(a, b):
    t = _np.result_type(a, b)
    return a.astype(t, copy=False), b.astype(t, copy=False)


def _scalar(r):
    return r[()] if r.ndim == 0 else r


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, *, gauge_fix=False, engine=None, threads=None):
    """(U, S, Vh) with a = U @ diag(S) @ Vh (S descending), or S alone when compute_uv is
    False (no vectors are computed then). `hermitian` is accepted for numpy compatibility
    and ignored (the general SVD is used)."""
    if _on_eager(engine, threads, a):
        return _E.svd(a, bool(full_matrices), bool(compute_uv), bool(gauge_fix))
    a = _arr(a, "svd")
    return _L.svd(_engine(engine, threads), a, bool(full_matrices), bool(compute_uv), bool(gauge_fix))


def qr(a, mode="reduced", *, engine=None, threads=None):
    """(Q, R) for mode 'reduced' or 'complete'; R alone for mode 'r'."""
    if _on_eager(engine, threads, a):
        return _E.qr(a, mode)
    return _L.qr(_engine(engine, threads), _arr(a, "qr"), mode)


def eigh(a, UPLO="L", *, engine=None, threads=None):
    """(w, v): ascending real eigenvalues and eigenvectors (columns) of Hermitian a."""
    if _on_eager(engine, threads, a):
        return _E.eigh(a, UPLO, True)
    return _L.eigh(_engine(engine, threads), _arr(a, "eigh"), UPLO, True)


def eigvalsh(a, UPLO="L", *, engine=None, threads=None):
    if _on_eager(engine, threads, a):
        return _E.eigh(a, UPLO, False)
    return _L.eigh(_engine(engine, threads), _arr(a, "eigvalsh"), UPLO, False)


def eig(a, *, engine=None, threads=None):
    """(w, v), complex, with a @ v = v * w (unit-norm columns, LAPACK's order)."""
    if _on_eager(engine, threads, a):
        return _E.eig(a, True)
    return _L.eig(_engine(engine, threads), _arr(a, "eig"), True)


def eigvals(a, *, engine=None, threads=None):
    if _on_eager(engine, threads, a):
        return _E.eig(a, False)
    return _L.eig(_engine(engine, threads), _arr(a, "eigvals"), False)


def cholesky(a, upper=False, *, engine=None, threads=None):
    """L with a = L @ L^H (or U with a = U^H @ U when upper=True). LinAlgError when a is
    not positive definite."""
    if _on_eager(engine, threads, a):
        return _E.cholesky(a, "U" if upper else "L")
    return _L.cholesky(_engine(engine, threads), _arr(a, "cholesky"), "U" if upper else "L")


def solve(a, b, *, engine=None, threads=None):
    """x with a @ x = b; b is [.., n, k] or a vector [n]. LinAlgError for singular a."""
    eager = _on_eager(engine, threads, a, b)
    if eager:
        return _E.solve(*eager)
    a, b = _common(_arr(a, "solve"), _arr(b, "solve", matrix=False))
    return _L.solve(_engine(engine, threads), a, b)


def inv(a, *, engine=None, threads=None):
    if _on_eager(engine, threads, a):
        return _E.inv(a)
    return _L.inv(_engine(engine, threads), _arr(a, "inv"))


def det(a, *, engine=None, threads=None):
    if _on_eager(engine, threads, a):
        return _E.det(a)
    return _scalar(_L.det(_engine(engine, threads), _arr(a, "det")))


def slogdet(a, *, engine=None, threads=None):
    """(sign, logabsdet) with det = sign * exp(logabsdet)."""
    if _on_eager(engine, threads, a):
        return _E.slogdet(a)
    s, l = _L.slogdet(_engine(engine, threads), _arr(a, "slogdet"))
    return _scalar(s), _scalar(l)


def pinv(a, rcond=None, hermitian=False, *, rtol=None, engine=None, threads=None):
    """Moore-Penrose pseudo-inverse: singular values at most rcond (or rtol) times the
    largest are dropped (default: max(m, n) * machine epsilon)."""
    cut = rtol if rtol is not None else rcond
    if _on_eager(engine, threads, a):
        return _E.pinv(a, None if cut is None else float(cut))
    return _L.pinv(_engine(engine, threads), _arr(a, "pinv"), None if cut is None else float(cut))


def lstsq(a, b, rcond=None, *, engine=None, threads=None):
    """(x, residuals, rank, s) as numpy.linalg.lstsq (minimum-norm solution)."""
    eager = _on_eager(engine, threads, a, b)
    if eager:
        return _E.lstsq(*eager, None if rcond is None else float(rcond))
    a, b = _common(_arr(a, "lstsq"), _arr(b, "lstsq", matrix=False))
    x, res, rank, s = _L.lstsq(_engine(engine, threads), a, b, None if rcond is None else float(rcond))
    return x, res, _scalar(rank), s


_MATRIX_ORDS = {"fro": "fro", "nuc": "nuc", 2: "2", 1: "1", _np.inf: "inf", -2: "-2", -1: "-1", -_np.inf: "-inf"}


@_names_itself
def matrix_norm(x, ord="fro", keepdims=False, *, engine=None, threads=None):
    """Norm of each matrix over the last two axes, numpy's ords: 'fro', 'nuc', 2, 1, inf,
    -2 (smallest singular value), -1, -inf (smallest column / row sum of |x|)."""
    if ord not in _MATRIX_ORDS:
        raise _UnsupportedError(f"matrix_norm: ord {ord!r} is not 'fro', 'nuc', 2, 1, inf, -2, -1 or -inf",
                               "unsupported", "usage", "matrix_norm")
    if _on_eager(engine, threads, x):
        if keepdims:
            raise _UnsupportedError("matrix_norm: keepdims on eager tensors (reshape the result)",
                                   "unsupported", "usage", "matrix_norm")
        return _E.matrix_norm(x, _MATRIX_ORDS[ord])
    x = _arr(x, "matrix_norm")
    r = _L.matrix_norm(_engine(engine, threads), x, _MATRIX_ORDS[ord])
    if keepdims:
        r = r[..., None, None]
    return _scalar(r)


def vector_norm(x, ord=2, axis=None, keepdims=False, *, engine=None, threads=None):
    """p-norm over `axis` (None: all axes): any p > 0, inf, -inf, 0."""
    if _on_eager(engine, threads, x):
        axes = [] if axis is None else [axis] if _np.isscalar(axis) else list(axis)
        return _E.vector_norm(x, float(ord), [a + x.ndim if a < 0 else a for a in axes], bool(keepdims))
    x = _arr(x, "vector_norm", matrix=False)
    axes = [] if axis is None else [axis] if _np.isscalar(axis) else list(axis)
    axes = [a + x.ndim if a < 0 else a for a in axes]
    return _scalar(_L.vector_norm(_engine(engine, threads), x, float(ord), axes, bool(keepdims)))


@_names_itself
def norm(x, ord=None, axis=None, keepdims=False, *, engine=None, threads=None):
    """numpy.linalg.norm: vector norms over one axis (or all axes when ord is None),
    matrix norms over two axes ('fro', 'nuc', 2, 1, inf)."""
    if not isinstance(x, _Eager):
        x = _arr(x, "norm", matrix=False)
    kw = {"engine": engine, "threads": threads}
    if axis is None:
        if ord is None:
            return vector_norm(x, 2, None, keepdims, **kw)
        if x.ndim == 1:
            return vector_norm(x, ord, None, keepdims, **kw)
        if x.ndim == 2:
            return matrix_norm(x, ord, keepdims, **kw)
        raise ValueError("norm: improper number of dimensions to norm")
    if _np.isscalar(axis) or len(axis) == 1:
        return vector_norm(x, 2 if ord is None else ord, axis, keepdims, **kw)
    if len(axis) != 2:
        raise ValueError(f"norm: axis must be an int or a pair of ints, got {tuple(axis)!r}")
    r0, r1 = (a + x.ndim if a < 0 else a for a in axis)
    if isinstance(x, _Eager):
        if (r0, r1) != (x.ndim - 2, x.ndim - 1) or keepdims:
            raise _UnsupportedError("norm: eager matrix norms run over the last two axes, without keepdims",
                                   "unsupported", "usage", "norm")
        return matrix_norm(x, "fro" if ord is None else ord, False, **kw)
    moved = _np.moveaxis(x, (r0, r1), (-2, -1))
    r = matrix_norm(moved, "fro" if ord is None else ord, False, **kw)
    if keepdims:
        r = _np.expand_dims(_np.asarray(r), (min(r0, r1), max(r0, r1)))
    return r


def truncated_svd(a, max_rank=None, rel_cutoff=0.0, method="auto", seed=0, gauge_fix=False, *, engine=None,
                  threads=None):
    """(U, S, Vh, discarded_weight): the leading singular triplets, keeping at most
    max_rank and dropping the longest tail whose squared weight is at most rel_cutoff of
    the total; discarded_weight = sum of the dropped S**2. method: 'auto', 'exact' or
    'randomized' (seeded, deterministic)."""
    if _on_eager(engine, threads, a):
        u, s, vh, dw, _rank = _E.truncated_svd(a, None if max_rank is None else int(max_rank), float(rel_cutoff),
                                               method, int(seed), bool(gauge_fix))
        return u, s, vh, dw
    u, s, vh, dw, _rank = _L.truncated_svd(_engine(engine, threads), _arr(a, "truncated_svd"),
                                           None if max_rank is None else int(max_rank), float(rel_cutoff), method,
                                           int(seed), bool(gauge_fix))
    return u, s, vh, _scalar(dw)


def _eager_matrix_rank(A, tol, rtol):
    """matrix_rank of an eager tensor: the count of singular values above the tolerance,
    computed with eager operations (int64, A's batch shape)."""
    rt = A.runtime
    if A.ndim < 2:
        return (A != 0).any().astype(_np.int64)
    if min(A.shape[-2:]) == 0:
        return rt.tensor(_np.zeros(A.shape[:-2], dtype=_np.int64))
    s = svd(A, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * _np.finfo(_np.dtype(s.dtype)).eps
        tol = s.max(axis=-1, keepdims=True) * rt.tensor(_np.asarray(rtol, dtype=_np.dtype(s.dtype))[..., None])
    else:
        tol = rt.tensor(_np.asarray(tol, dtype=_np.dtype(s.dtype))[..., None])
    return (s > tol).astype(_np.int64).sum(axis=-1)


def _cond_not_empty(shape):
    # numpy: the condition number of an empty matrix is undefined (a LinAlgError, not an
    # index error from the ratio of no singular values).
    if len(shape) >= 2 and (shape[-1] == 0 or shape[-2] == 0):
        raise LinAlgError("cond: cond is not defined on empty arrays", "invalid_shape", "usage", "cond")


def _eager_cond(x, p):
    """cond of an eager tensor with eager operations (records for AD); singular items are
    infinite, as in numpy."""
    rt = x.runtime
    if x.ndim < 2:
        raise LinAlgError(f"cond: {x.ndim}-dimensional array given; array must be at least two-dimensional",
                          "invalid_shape", "usage", "cond")
    _cond_not_empty(x.shape)
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        from . import where
        return where(r != r, rt.tensor(_np.asarray(_np.inf, dtype=_np.dtype(r.dtype))), r)
    if x.shape[-1] != x.shape[-2]:
        raise LinAlgError("cond: last 2 dimensions of the array must be square", "invalid_shape", "usage", "cond")
    try:
        return matrix_norm(x, ord=p) * matrix_norm(inv(x), ord=p)
    except LinAlgError:
        pass
    # Some item is singular: item by item, infinite where inv fails.
    from . import stack
    n = x.shape[-1]
    items = x.reshape((-1, n, n))
    out = []
    for i in range(items.shape[0]):
        try:
            out.append(matrix_norm(items[i], ord=p) * matrix_norm(inv(items[i]), ord=p))
        except LinAlgError:
            real = _np.finfo(_np.dtype(x.dtype)).dtype
            out.append(rt.tensor(_np.asarray(_np.inf, dtype=real)))
    return stack(out).reshape(x.shape[:-2])


def tensorinv(a, ind=2, *, engine=None, threads=None):
    """numpy.linalg.tensorinv: the inverse of `a` read as a square matrix whose rows are
    its first `ind` axes (shape a.shape[ind:] + a.shape[:ind]), through inv. Eager
    tensors: records for AD."""
    eager = isinstance(a, _Eager)
    if not eager:
        a = _np.asarray(a)
    if ind <= 0:
        raise ValueError("tensorinv: invalid ind argument (must be positive)")
    out_shape = tuple(a.shape[ind:]) + tuple(a.shape[:ind])
    rows = int(_np.prod(a.shape[:ind], dtype=_np.int64))
    cols = int(_np.prod(a.shape[ind:], dtype=_np.int64))
    if rows != cols:
        raise LinAlgError(f"tensorinv: the first {ind} axes of shape {tuple(a.shape)} hold {rows} elements and the "
                          f"rest {cols}; they must be equal", "invalid_shape", "usage", "tensorinv")
    return inv(a.reshape((rows, rows)), engine=engine, threads=threads).reshape(out_shape)


def tensorsolve(a, b, axes=None, *, engine=None, threads=None):
    """numpy.linalg.tensorsolve: x with tensordot(a, x, x.ndim) = b, x of shape
    a.shape[b.ndim:] (after moving `axes` of a to the end), through solve. Eager tensors
    (a or b): records for AD."""
    eager = _on_eager(engine, threads, a, b)
    if eager:
        a, b = eager
    else:
        a, b = _common(_arr(a, "tensorsolve", matrix=False), _arr(b, "tensorsolve", matrix=False))
    an = a.ndim
    if axes is not None:
        order = [k for k in range(an) if k not in [ax % an for ax in axes]] + [ax % an for ax in axes]
        a = a.transpose(tuple(order))
    x_shape = tuple(a.shape[b.ndim:])
    n = int(_np.prod(x_shape, dtype=_np.int64))
    m = int(_np.prod(a.shape[:b.ndim], dtype=_np.int64))
    if tuple(a.shape[:b.ndim]) != tuple(b.shape) or m != n:
        raise LinAlgError(f"tensorsolve: a of shape {tuple(a.shape)} does not map x of shape {x_shape} onto b of "
                          f"shape {tuple(b.shape)} as a square system", "invalid_shape", "usage", "tensorsolve")
    kw = {} if eager else dict(engine=engine, threads=threads)
    return solve(a.reshape((m, n)), b.reshape((m,)), **kw).reshape(x_shape)


@_names_itself
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None, engine=None, threads=None):
    """numpy.linalg.matrix_rank: the number of singular values above `tol` (default
    S.max() * max(M, N) * eps, or S.max() * rtol); arrays of rank < 2 have rank 0 or 1.
    `hermitian` is accepted and ignored (the general SVD is used). Eager tensors: an int64
    eager tensor (of the batch shape) on A's runtime."""
    if isinstance(A, _Eager):
        return _eager_matrix_rank(A, tol, rtol)
    A = _np.asarray(A)
    if A.ndim < 2:
        return int(not _np.all(A == 0))
    s = svd(A, compute_uv=False, engine=engine, threads=threads)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * _np.finfo(s.dtype).eps
        tol = s.max(axis=-1, keepdims=True, initial=0) * _np.asarray(rtol)[..., None]
    else:
        tol = _np.asarray(tol)[..., None]
    return _np.count_nonzero(s > tol, axis=-1)


@_names_itself
def cond(x, p=None, *, engine=None, threads=None):
    """numpy.linalg.cond: the condition number in norm `p` (None, 2, -2: ratios of
    singular values; 'fro', 'nuc', 1, -1, inf, -inf: norm(x) * norm(inv(x)), square x
    only); infinite for singular matrices (numpy's rule; a zero matrix included). Eager
    tensors: an eager tensor that records for AD."""
    if isinstance(x, _Eager):
        if engine is not None or threads is not None:
            raise TypeError("tenferro.linalg: eager tensors run on their runtime (no engine= or threads=)")
        return _eager_cond(x, p)
    x = _arr(x, "cond")
    _cond_not_empty(x.shape)
    kw = dict(engine=engine, threads=threads)
    with _np.errstate(divide="ignore", invalid="ignore"):
        if p is None or p == 2 or p == -2:
            s = svd(x, compute_uv=False, **kw)
            r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
            # 0 / 0 (a zero matrix) is infinite, as in numpy (svd rejects NaN input, so a
            # NaN here is never the input's).
            # The infinity in r's own dtype: a Python float would make a 0-d float32 r
            # float64 (numpy 1.x's value-based casting), where numpy keeps float32.
            r = _np.where(_np.isnan(r), _np.asarray(_np.inf, dtype=r.dtype), r)
        else:
            if x.shape[-1] != x.shape[-2]:
                raise LinAlgError("cond: last 2 dimensions of the array must be square", "invalid_shape", "usage", "cond")
            batch = x.reshape((-1,) + x.shape[-2:])
            r = _np.empty(batch.shape[0], dtype=_np.finfo(x.dtype).dtype if x.dtype.kind == "c" else x.dtype)
            for i, item in enumerate(batch):
                try:
                    r[i] = matrix_norm(item, ord=p, **kw) * matrix_norm(inv(item, **kw), ord=p, **kw)
                except LinAlgError:
                    r[i] = _np.inf  # singular
            r = r.reshape(x.shape[:-2])
    return _scalar(_np.asarray(r))


def matrix_power(a, n, *, engine=None, threads=None):
    """numpy.linalg.matrix_power: a to the integer power n (n < 0: of inv(a)) by repeated
    squaring on tenferro's einsum; integer matrices stay integer for n >= 0. Eager
    tensors: the products record for AD."""
    import operator
    from ._einsum import einsum
    eager = _on_eager(engine, threads, a)
    if not eager:
        a = _np.asarray(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("matrix_power: exponent must be an integer") from e
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError("matrix_power: last 2 dimensions of the array must be square", "invalid_shape", "usage",
                          "matrix_power")
    kw = {} if eager else dict(engine=engine, threads=threads)
    if n == 0:
        identity = _np.broadcast_to(_np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
        return a.runtime.tensor(identity) if eager else identity
    if n < 0:
        a = inv(a, **kw)
        n = -n
    result, base = None, a
    while True:
        if n & 1:
            result = base.copy() if result is None else einsum("...ij,...jk->...ik", result, base, **kw)
        n >>= 1
        if n == 0:
            return result
        base = einsum("...ij,...jk->...ik", base, base, **kw)


def multi_dot(arrays, *, out=None, engine=None, threads=None):
    """numpy.linalg.multi_dot: the product of a chain of matrices (the first may be a
    vector, taken as a row, and the last a vector, taken as a column), in the order
    tenferro's contraction-path search finds cheapest. Eager tensors: one einsum that
    records for AD."""
    from ._einsum import einsum
    arrays = list(arrays)
    eager = _on_eager(engine, threads, *arrays)
    if eager:
        arrays = eager
    if eager and out is not None:
        raise TypeError("multi_dot: eager tensors are immutable (no out=)")
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    if not eager:
        arrays = [_np.asarray(x) for x in arrays]
    for i, x in enumerate(arrays):
        ok = x.ndim == 2 or (x.ndim == 1 and i in (0, len(arrays) - 1))
        if not ok:
            raise LinAlgError(f"multi_dot: array {i} has {x.ndim} dimensions; matrices (vectors at the ends) only",
                              "invalid_shape", "usage", "multi_dot")
    labels = [chr(ord("a") + i) for i in range(len(arrays) + 1)]
    terms = []
    for i, x in enumerate(arrays):
        if x.ndim == 1:
            terms.append(labels[1] if i == 0 else labels[i])
        else:
            terms.append(labels[i] + labels[i + 1])
    first = labels[0] if arrays[0].ndim == 2 else ""
    last = labels[len(arrays)] if arrays[-1].ndim == 2 else ""
    spec = ",".join(terms) + "->" + first + last
    optimize = "optimal" if len(arrays) <= 8 else "greedy"
    if eager:
        return einsum(spec, *arrays, optimize=optimize)
    r = einsum(spec, *arrays, optimize=optimize, engine=engine, threads=threads)
    if out is not None:
        out[...] = r
        return out
    return r


_expm_runtimes = {}


def expm(a, *, threads=None):
    """The matrix exponential of the square matrices in the last two axes (scipy.linalg's
    expm, batched): scaling and squaring with a Padé approximant whose backward error is
    within the dtype's unit roundoff (docs/design/0007-linalg.md). Eager tensors run on
    their runtime and record for AD (not inside tenferro.trace: the degree and scaling
    depend on each call's values); numpy arrays (integers as float64) run on a runtime
    with `threads` threads (default: every CPU the process may use) and give an array."""
    if isinstance(a, _Eager):
        if threads is not None:
            raise TypeError("tenferro.linalg: eager tensors run on their runtime (no engine= or threads=)")
        return _E.expm(a)
    a = _arr(a, "expm")
    if a.dtype == _np.float16:
        a = a.astype(_np.float32)
    rt = _expm_runtimes.get(threads)
    if rt is None:
        rt = _expm_runtimes.setdefault(threads, _tenferro.Runtime(threads))
    return _E.expm(rt.tensor(a)).numpy()
