"""numpy functions on eager tensors composed from tenferro operations (docs/design/0008-python.md,
"numpy functions on eager tensors"): each follows numpy's definition with tensor operations, so
its result records for AD and, unless it reads values on the host (interp's intervals, real_if_close's
test), traces. Each returns None for an argument it does not handle;
numpy then computes (refused when an operand requires grad, _numpy_protocols._in_numpy).
"""

import numpy as np

from . import _tenferro
from . import _indexing

EagerTensor = _tenferro.EagerTensor

# numpy 2 returns tuples where numpy 1 returned lists (meshgrid, broadcast_arrays, gradient).
_SEQUENCE = tuple if int(np.__version__.split(".")[0]) >= 2 else list


def _eager(v, like):
    # `v` beside the eager tensor `like`: an eager tensor, or a number / sequence / array
    # taken exactly in like's dtype (Note [Python operands]).
    return v if isinstance(v, EagerTensor) else _tenferro.eager_operand(like, v)


def eager_pair(a, b):
    """Both operands as eager tensors (one of them is): the other as the operators take it."""
    return (a, _eager(b, a)) if isinstance(a, EagerTensor) else (_eager(a, b), b)


def _on_runtime(v, like):
    # `v` on like's runtime keeping its own dtype (numpy arrays become constants).
    return v if isinstance(v, EagerTensor) else like.runtime.tensor(np.ascontiguousarray(v))


def _first_eager(values):
    return next((v for v in values if isinstance(v, EagerTensor)), None)


def _floating(a):
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)


def _along(x, axis, sl):
    key = [slice(None)] * x.ndim
    key[axis] = sl
    return x[tuple(key)]


def _axis(x, axis):
    # A valid axis of x, normalized; None when out of range (numpy then reports it).
    return axis % x.ndim if isinstance(axis, (int, np.integer)) and -x.ndim <= axis < x.ndim else None


def _isnan(x):
    return x != x


def _where(c, a, b):
    from . import where
    return where(c, a, b)


# ---- shapes -------------------------------------------------------------------------------------

def atleast(rank):
    def run(*arys):
        if _first_eager(arys) is None:
            return None
        out = []
        for a in arys:
            if not isinstance(a, EagerTensor):
                out.append((np.atleast_1d, np.atleast_2d, np.atleast_3d)[rank - 1](a))
            elif rank == 1:
                out.append(a.reshape((1,)) if a.ndim == 0 else a)
            else:
                out.append(_indexing._atleast(a, rank))
        return out[0] if len(out) == 1 else out
    return run


def rot90(m, k=1, axes=(0, 1)):
    if not isinstance(m, EagerTensor) or len(axes) != 2 or m.ndim < 2:
        return None
    a0, a1 = (_axis(m, a) for a in axes)
    if a0 is None or a1 is None or a0 == a1:
        return None
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return _indexing.flip(_indexing.flip(m, a0), a1)
    order = list(range(m.ndim))
    order[a0], order[a1] = order[a1], order[a0]
    if k == 1:
        return _indexing.flip(m, a1).transpose(order)
    return _indexing.flip(m.transpose(order), a1)


def append(arr, values, axis=None):
    from . import concatenate
    like = _first_eager((arr, values))
    if like is None:
        return None
    if axis is None:
        return concatenate([_on_runtime(arr, like).reshape(-1), _on_runtime(values, like).reshape(-1)], 0)
    return concatenate([_on_runtime(arr, like), _on_runtime(values, like)], axis)


def delete(arr, obj, axis=None):
    # The kept positions are numpy's own (np.delete of the positions: its checks and
    # index forms), the values one take.
    if not isinstance(arr, EagerTensor) or isinstance(obj, EagerTensor):
        return None
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    ax = _axis(arr, axis)
    if ax is None:
        return None
    keep = np.delete(np.arange(arr.shape[ax]), obj)
    return arr.take(keep, ax)


def broadcast_arrays(*args, subok=False):
    like = _first_eager(args)
    if like is None:
        return None
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return _SEQUENCE(_indexing.broadcast_to(a, shape) if isinstance(a, EagerTensor) else np.broadcast_to(a, shape)
                     for a in args)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    like = _first_eager(xi)
    if like is None or indexing not in ("xy", "ij"):
        return None
    n = len(xi)
    ones = (1,) * n
    out = [_on_runtime(x, like).reshape(ones[:i] + (-1,) + ones[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and n > 1:
        out[0] = out[0].reshape((1, -1) + ones[2:])
        out[1] = out[1].reshape((-1, 1) + ones[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    return _SEQUENCE(out)


def block(arrays):
    # numpy's block: nested lists of depth D concatenate along axis -(D - level), every
    # leaf first raised to the result's rank by leading 1s.
    from . import concatenate

    def leaves(x):
        return [leaf for e in x for leaf in leaves(e)] if isinstance(x, list) else [x]

    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else 0

    def consistent(x, level):
        if isinstance(x, list):
            return level < d and all(consistent(e, level + 1) for e in x)
        return level == d

    if not isinstance(arrays, list):
        return None
    flat = leaves(arrays)
    like = _first_eager(flat)
    d = depth(arrays)
    if like is None or not consistent(arrays, 0):
        return None  # numpy reports mismatched depths and empty lists
    rank = max([d] + [np.ndim(leaf) for leaf in flat])

    def build(x, level):
        if isinstance(x, list):
            if not x:
                return None
            parts = [build(e, level + 1) for e in x]
            return None if any(p is None for p in parts) else concatenate(parts, -(d - level))
        t = _on_runtime(x, like)
        return t.reshape((1,) * (rank - t.ndim) + tuple(t.shape))

    return build(arrays, 0)


# ---- reductions ---------------------------------------------------------------------------------

def ptp(a, axis=None, out=None, keepdims=False):
    if not isinstance(a, EagerTensor) or out is not None or np.issubdtype(a.dtype, np.complexfloating):
        return None  # (complex: numpy's lexicographic order)
    return a.max(axis=axis, keepdims=keepdims) - a.min(axis=axis, keepdims=keepdims)


def _nan_fill(a, fill):
    return _where(_isnan(a), fill, a) if np.issubdtype(a.dtype, np.inexact) else a


def nan_reduction(name):
    # nansum / nanprod: NaN counts as the identity; nanmean: over the non-NaN elements
    # (NaN where there are none, as numpy's 0 / 0); nanmax / nanmin: NaN only where every
    # element is NaN.
    def run(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
        if not isinstance(a, EagerTensor) or dtype is not None or out is not None or rest:
            return None
        if name in ("nanmax", "nanmin") and np.issubdtype(a.dtype, np.complexfloating):
            return None
        if name == "nansum":
            return _nan_fill(a, 0.0).sum(axis=axis, keepdims=keepdims)
        if name == "nanprod":
            return _nan_fill(a, 1.0).prod(axis=axis, keepdims=keepdims)
        if name == "nanmean":
            a = _floating(a)
            count = (~_isnan(a)).sum(axis=axis, keepdims=keepdims).astype(a.dtype)
            return _nan_fill(a, 0.0).sum(axis=axis, keepdims=keepdims) / count
        if not np.issubdtype(a.dtype, np.floating):
            return getattr(a, name[3:])(axis=axis, keepdims=keepdims)
        big = float("inf") if name == "nanmin" else -float("inf")
        r = getattr(_nan_fill(a, big), name[3:])(axis=axis, keepdims=keepdims)
        return _where(_isnan(a).all(axis=axis, keepdims=keepdims), float("nan"), r)
    return run


def _quantile_axes(a, axis):
    # a with the reduced axes merged into the last one; the kept shape with keepdims.
    if axis is None:
        return a.reshape(-1), [1] * a.ndim
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = [_axis(a, k) for k in axes]
    if None in axes or len(set(axes)) != len(axes):
        return None, None
    kept = [k for k in range(a.ndim) if k not in axes]
    moved = a.transpose(kept + axes)
    shape = tuple(a.shape[k] for k in kept)
    keep_shape = [1 if k in axes else a.shape[k] for k in range(a.ndim)]
    return moved.reshape(shape + (-1,)), keep_shape


def quantile_of(scale, name, midpoint_mean=False):
    # numpy's quantile / percentile (method 'linear') and median: tenferro.sort's values
    # interpolated with numpy's lerp; NaN anywhere in a slice gives NaN, as numpy's.
    def run(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
            interpolation=None):
        if not isinstance(a, EagerTensor) or isinstance(q, EagerTensor) or out is not None or \
                method != "linear" or interpolation is not None or a.size == 0 or \
                (a.dtype == np.bool_ and not midpoint_mean):  # numpy's lerp of bools raises
            return None
        qs = np.asarray(q, dtype=np.float64) / scale
        if np.any(qs < 0) or np.any(qs > 1) or np.any(np.isnan(qs)):
            raise ValueError(f"tenferro: {name}: {'Percentiles must be in the range [0, 100]' if scale == 100 else 'Quantiles must be in the range [0, 1]'}")
        # numpy interpolates in float64 (median: the mean, in the input's precision)
        x, keep_shape = _quantile_axes(_floating(a) if midpoint_mean else a.astype(np.result_type(a.dtype, np.float64)),
                                       axis)
        if x is None:
            return None
        s = _indexing.sort(x, -1)
        n = x.shape[-1]
        has_nan = _isnan(s[..., n - 1])
        results = []
        for qv in qs.reshape(-1):
            pos = qv * (n - 1)
            lo = int(np.floor(pos))
            hi = min(lo + 1, n - 1)
            t = pos - lo
            below, above = s[..., lo], s[..., hi]
            diff = above - below
            if midpoint_mean and t == 0.5:  # numpy's median: the mean of the middle two
                v = (below + above) * 0.5
            else:  # numpy's lerp
                v = below + diff * t if t < 0.5 else above - diff * (1 - t)
            v = _where(has_nan, float("nan"), v)
            results.append(v.reshape(keep_shape) if keepdims else v)
        if qs.ndim == 0:
            return results[0]
        from . import stack
        return stack(results, 0).reshape(qs.shape + tuple(results[0].shape))
    return run


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile_of(1.0, "median", True)(a, 0.5, axis=axis, out=out, keepdims=keepdims)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    like = _first_eager((m, y))
    if like is None or fweights is not None or aweights is not None or dtype is not None or np.ndim(m) > 2 or \
            (y is not None and np.ndim(y) > 2):
        return None
    from . import concatenate

    common = np.result_type(_dtype_of(m), np.float64) if y is None else np.result_type(_dtype_of(m), _dtype_of(y), np.float64)

    def rows(v):  # numpy's array(v, ndmin=2, dtype=result_type(m, y, float64)), transposed for rowvar=False
        v = _on_runtime(v, like).astype(common)
        v = v.reshape((1, -1)) if v.ndim < 2 else v
        return v.T if not rowvar and v.shape[0] != 1 else v

    x = rows(m)
    if y is not None:
        x = concatenate([x, rows(y)], 0)
    if x.shape[0] == 0:
        return None
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    xc = x - x.mean(axis=1, keepdims=True)
    c = (xc @ xc.conj().T) * (1.0 / (n - ddof)) if n - ddof > 0 else None
    if c is None:
        return None
    return c.reshape(()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c is None:
        return None
    if c.ndim == 0:
        return c / c
    d = _indexing.diag(c, 0).real.sqrt().astype(c.dtype)
    c = c / d.reshape((-1, 1)) / d.reshape((1, -1))
    from . import maximum, minimum

    def clip(v):
        return minimum(maximum(v, -1.0), 1.0)

    if np.issubdtype(c.dtype, np.complexfloating):
        return clip(c.real).astype(c.dtype) + clip(c.imag).astype(c.dtype) * 1j
    return clip(c)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    if not (isinstance(y, EagerTensor) or isinstance(x, EagerTensor)):
        return None
    like = _first_eager((y, x))
    y = _floating(_on_runtime(y, like))
    ax = _axis(y, axis)
    if ax is None:
        return None
    if x is None:
        d = dx
    else:
        x = _floating(_on_runtime(x, like))
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[ax] = x.shape[0] - 1
            d = _indexing.diff(x).reshape(shape)
        else:
            d = _indexing.diff(x, 1, ax)
    return (d * (_along(y, ax, slice(1, None)) + _along(y, ax, slice(None, -1))) * 0.5).sum(axis=ax)


# ---- elementwise ---------------------------------------------------------------------------------

def sinc(x):
    # numpy's sin(pi x) / (pi x), 1 at 0; the quotient sees 1 there (no NaN gradient).
    if not isinstance(x, EagerTensor) or not np.issubdtype(x.dtype, np.floating):
        return None
    at0 = x == 0
    y = _where(at0, 1.0, x) * float(np.pi)
    return _where(at0, 1.0, y.sin() / y)


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist) or not condlist or \
            _first_eager(list(condlist) + list(choicelist) + [default]) is None:
        return None
    if len({np.result_type(*(_dtype_of(v) for v in choicelist), default), _dtype_of(choicelist[0])}) != 1:
        return None  # numpy would promote (tenferro does not): numpy computes
    r = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        r = _where(c, v, r)
    return r


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if not isinstance(a, EagerTensor) and not isinstance(b, EagerTensor):
        return None
    a, b = eager_pair(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    ea, eb = _axis(a, axisa), _axis(b, axisb)
    if ea is None or eb is None or a.shape[ea] not in (2, 3) or b.shape[eb] not in (2, 3):
        return None
    a, b = np.moveaxis(a, ea, -1), np.moveaxis(b, eb, -1)
    pa = [a[..., k] for k in range(a.shape[-1])] + [None] * (3 - a.shape[-1])
    pb = [b[..., k] for k in range(b.shape[-1])] + [None] * (3 - b.shape[-1])

    def term(i, j):  # pa[i] * pb[j] - pa[j] * pb[i], with missing z components zero
        plus = None if pa[i] is None or pb[j] is None else pa[i] * pb[j]
        minus = None if pa[j] is None or pb[i] is None else pa[j] * pb[i]
        return plus - minus if plus is not None and minus is not None else plus if minus is None else -minus

    z = term(0, 1)
    if pa[2] is None and pb[2] is None:
        return z
    from . import stack
    c = stack([term(1, 2), term(2, 0), z], -1)
    ec = axisc % c.ndim if -c.ndim <= axisc < c.ndim else None
    return None if ec is None else np.moveaxis(c, -1, ec)


def polyval(p, x):
    # Horner's rule from numpy's zeros_like(x) start (0 * inf is NaN there too).
    like = _first_eager((p, x))
    if like is None or np.ndim(p) != 1 or np.bool_ in (_dtype_of(p), _dtype_of(x)):
        return None
    coeffs = [p[k] for k in range(p.shape[0])] if isinstance(p, EagerTensor) else list(np.asarray(p))
    x = _on_runtime(x, like)
    if np.issubdtype(_dtype_of(p), np.inexact) and not np.issubdtype(x.dtype, np.inexact):
        x = x.astype(np.result_type(x.dtype, _dtype_of(p)))
    y = x * 0
    for c in coeffs:
        y = y * x + c
    return y


def _dtype_of(v):
    return v.dtype if isinstance(v, (EagerTensor, np.ndarray)) else np.asarray(v).dtype


_MAX_CONVOLVE_TERMS = 1 << 26  # products of convolve's masked form; numpy computes longer ones


def convolve(a, v, mode="full"):
    like = _first_eager((a, v))
    if like is None or mode not in ("full", "same", "valid"):
        return None
    a, v = _on_runtime(a, like), _on_runtime(v, like)
    if a.ndim != 1 or v.ndim != 1 or a.shape[0] == 0 or v.shape[0] == 0 or a.dtype == np.bool_:
        return None
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    if m * (n + m - 1) > _MAX_CONVOLVE_TERMS:
        return None
    # full[k] = sum_j v[j] a[k - j] over the j with k - j in range: a gathered at k - j, the
    # products outside the range masked after multiplying (so a NaN or infinity of either
    # operand reaches only the outputs it overlaps, as numpy's).
    idx = np.arange(n + m - 1).reshape(1, -1) - np.arange(m).reshape(-1, 1)
    valid = (idx >= 0) & (idx < n)
    shifted = a.take(np.clip(idx, 0, n - 1).reshape(-1), 0).reshape(idx.shape)
    full = _where(valid, v.reshape((-1, 1)) * shifted, 0).sum(axis=0)
    if full.dtype != a.dtype:  # (sums of int32 / bool accumulate in int64; numpy keeps the dtype)
        full = full.astype(a.dtype)
    if mode == "same":
        start = (m - 1) // 2
        return full[start:start + n]
    if mode == "valid":
        return full[m - 1:n]
    return full


def gradient(f, *varargs, axis=None, edge_order=1):
    # Uniform spacings only (one number for every axis, or one per axis).
    if not isinstance(f, EagerTensor) or edge_order not in (1, 2) or f.dtype == np.bool_ or \
            any(isinstance(h, EagerTensor) or np.ndim(h) != 0 for h in varargs):
        return None
    axes = list(range(f.ndim)) if axis is None else [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = [_axis(f, k) for k in axes]
    if None in axes or len(varargs) not in (0, 1, len(axes)):
        return None
    hs = [1.0] * len(axes) if not varargs else [float(varargs[0])] * len(axes) if len(varargs) == 1 else \
        [float(h) for h in varargs]
    f = _floating(f)
    from . import concatenate
    out = []
    for ax, h in zip(axes, hs):
        n = f.shape[ax]
        if n < edge_order + 1:
            return None  # numpy reports it
        s = lambda lo, hi: _along(f, ax, slice(lo, hi))
        inner = (s(2, None) - s(None, -2)) * (1 / (2 * h))
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) * (1 / h)
            last = (s(n - 1, n) - s(n - 2, n - 1)) * (1 / h)
        else:
            first = (s(0, 1) * -1.5 + s(1, 2) * 2.0 - s(2, 3) * 0.5) * (1 / h)
            last = (s(n - 3, n - 2) * 0.5 - s(n - 2, n - 1) * 2.0 + s(n - 1, n) * 1.5) * (1 / h)
        out.append(concatenate([first, inner, last], ax))
    return out[0] if len(out) == 1 else _SEQUENCE(out)


def interp(x, xp, fp, left=None, right=None, period=None):
    # numpy's piecewise-linear interpolation: the intervals are found on the host (the
    # values of x and xp), the values interpolated with tensor operations, differentiable
    # in x, xp and fp.
    like = _first_eager((x, xp, fp, left, right))
    if like is None or period is not None or np.ndim(xp) != 1 or np.ndim(fp) != 1 or np.shape(xp) != np.shape(fp) \
            or np.shape(xp)[0] == 0:
        return None
    host = lambda v: _indexing.host_values(v, "numpy.interp") if isinstance(v, EagerTensor) else np.asarray(v)
    xh, xph = host(x), host(xp)
    if np.issubdtype(np.result_type(xh, xph, _dtype_of(fp)), np.complexfloating):
        return None
    fp, xp, x = (_on_runtime(v, like).astype(np.float64) for v in (fp, xp, x))  # numpy's float64
    n = xph.shape[0]
    j = np.clip(np.searchsorted(xph, xh, side="right") - 1, 0, max(n - 2, 0))
    j1 = np.minimum(j + 1, n - 1)
    x0, x1, y0, y1 = xp.take(j.reshape(-1), 0), xp.take(j1.reshape(-1), 0), fp.take(j.reshape(-1), 0), \
        fp.take(j1.reshape(-1), 0)
    shape = np.shape(xh)
    x0, x1, y0, y1 = (t.reshape(shape) for t in (x0, x1, y0, y1))
    same = x1 == x0
    slope = (y1 - y0) / _where(same, 1.0, x1 - x0)
    r = _where(same | (x == x0), y0, y0 + slope * (x - x0))
    r = _where(x == xp[n - 1], fp[n - 1], r)
    r = _where(_isnan(x), float("nan"), r)
    lo = fp[0] if left is None else _eager(left, fp)
    hi = fp[n - 1] if right is None else _eager(right, fp)
    return _where(x < xp[0], lo, _where(x > xp[n - 1], hi, r))


def real_if_close(a, tol=100):
    if not isinstance(a, EagerTensor):
        return None
    if not np.issubdtype(a.dtype, np.complexfloating):
        return a
    eps = np.finfo(a.dtype).eps
    limit = tol * eps if tol > 1 else tol
    imag = _indexing.host_values(a.imag, "numpy.real_if_close")
    return a.real if np.all(np.abs(imag) < limit) else a


def _kth_checked(a, kth, axis):
    # numpy's partition arguments: (a, axis) with None flattening, every kth in range.
    if axis is None:
        a, axis = a.reshape(-1), 0
    ax = _axis(a, axis)
    if ax is None:
        return None, None
    n = a.shape[ax]
    for k in np.atleast_1d(kth) if n > 0 else ():  # (numpy checks nothing on an empty axis)
        if not -n <= int(k) < n:
            raise ValueError(f"tenferro: partition: kth(={int(k)}) out of bounds ({n})")
    return a, ax


def partition(a, kth, axis=-1, kind="introselect", order=None):
    # A sorted line is a partition at every kth (numpy leaves the order around kth
    # unspecified): tenferro.sort, so it traces and differentiates.
    if not isinstance(a, EagerTensor) or order is not None or isinstance(kth, EagerTensor):
        return None
    a, ax = _kth_checked(a, kth, axis)
    return None if a is None else _indexing.sort(a, ax)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    if not isinstance(a, EagerTensor) or order is not None or isinstance(kth, EagerTensor):
        return None
    x, ax = _kth_checked(a, kth, axis)
    return None if x is None else x.argsort(ax)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True):
    # numpy's unique of the flattened tensor: numpy finds the first occurrences on the host
    # (its own rules: sorted, NaN merged), the values are a take of them, so the gradient
    # reaches each first occurrence; index / inverse / counts are numpy's arrays.
    if not isinstance(ar, EagerTensor) or axis is not None:
        return None
    flat = ar.reshape(-1)
    host = _indexing.host_values(flat, "numpy.unique")
    found = np.unique(host, return_index=True, return_inverse=return_inverse, return_counts=return_counts,
                      equal_nan=equal_nan)
    values = flat.take(found[1], 0)
    extra = [found[1]] if return_index else []
    extra += list(found[2:])
    return values if not extra else (values, *extra)


# numpy functions composed here, for _numpy_protocols._FUNCTIONS.
FUNCTIONS = {
    np.atleast_1d: atleast(1), np.atleast_2d: atleast(2), np.atleast_3d: atleast(3), np.rot90: rot90,
    np.append: append, np.delete: delete, np.broadcast_arrays: broadcast_arrays, np.meshgrid: meshgrid,
    np.block: block, np.ptp: ptp, np.nansum: nan_reduction("nansum"), np.nanprod: nan_reduction("nanprod"),
    np.nanmean: nan_reduction("nanmean"), np.nanmax: nan_reduction("nanmax"), np.nanmin: nan_reduction("nanmin"),
    np.quantile: quantile_of(1.0, "quantile"), np.percentile: quantile_of(100.0, "percentile"), np.median: median,
    np.cov: cov, np.corrcoef: corrcoef, np.sinc: sinc, np.select: select, np.cross: cross, np.polyval: polyval,
    np.convolve: convolve, np.gradient: gradient, np.interp: interp, np.real_if_close: real_if_close,
    np.copy: lambda a, order="K", subok=False: a.copy() if isinstance(a, EagerTensor) else None,
    np.partition: partition, np.argpartition: argpartition, np.unique: unique,
}
for _name in ("trapz", "trapezoid"):
    if hasattr(np, _name):
        FUNCTIONS[getattr(np, _name)] = trapezoid
