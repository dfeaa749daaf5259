"""numpy's advanced indexing, functional updates (`x.at[key].set(v)`), the shape
functions flip, roll, pad, broadcast_to, tile, repeat, diag, split and the stacks,
take_along_axis and sort, and diff, cumsum and cumprod on tenferro.EagerTensor (docs/design/0008-python.md,
"Indexing and updates").

Everything here is composed from operations that record for AD: the C++ basic indexing
(slices, integers, None, Ellipsis), transpose and reshape, take (the program's gather),
scatter_add, where, pad, flip, broadcast_to and concatenate. Index arrays are read on
the host (as numpy reads them); inside tenferro.trace an index computed from a traced
value is refused (it would freeze into the program as a constant).
"""

import math

import numpy as np

from . import _tenferro

EagerTensor = _tenferro.EagerTensor


def _host_array(item):
    """An index array on the host: int64, or bool for masks."""
    if isinstance(item, EagerTensor):
        item = item.numpy()
    a = np.asarray(item)
    if a.dtype == np.bool_:
        return a
    if a.size == 0 and a.dtype.kind == "f":  # [] is an empty integer index, as numpy reads it
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise IndexError("tenferro: arrays used as indices must be of integer (or boolean) type, got " + str(a.dtype))
    return a.astype(np.int64, copy=False)


def _is_array_item(item):
    return isinstance(item, (list, np.ndarray, EagerTensor, bool, np.bool_))


def _integer(item):
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def advanced_index(x, key):
    """x[key] where key holds integer or boolean arrays (numpy's advanced indexing).

    Boolean arrays select where they are true (their shape must match the axes they
    cover); integer arrays (negative values count from the end) broadcast together to
    one shape B, which replaces the axes they index when they are adjacent in the key
    and otherwise comes first; integers among arrays count as 0-d arrays, as in numpy.
    The slices, None and Ellipsis are applied first (a view), then one take (gather) of
    the indexed axes merged into one. Errors: IndexError as numpy's (out of bounds,
    shape mismatch, too many indices, non-integer arrays, boolean scalars).
    """
    items = list(key) if isinstance(key, tuple) else [key]
    parts = []  # (kind, value): "basic" items unchanged, "int" arrays, "bool" masks
    consumed = 0
    for item in items:
        if _is_array_item(item):
            a = _host_array(item)
            if a.dtype == np.bool_:
                if a.ndim == 0:
                    raise IndexError("tenferro: boolean scalar indices are not supported (use None for a new axis)")
                parts.append(("bool", a))
                consumed += a.ndim
            else:
                parts.append(("int", a))
                consumed += 1
        else:
            parts.append(("basic", item))
            if item is not None and item is not Ellipsis:
                consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"tenferro: too many indices for a tensor of rank {x.ndim}: {consumed} were indexed")
    if sum(1 for kind, item in parts if kind == "basic" and item is Ellipsis) > 1:
        raise IndexError("tenferro: an index can only have a single ellipsis ('...')")
    basic = []    # the key applied first: arrays become full slices
    indexed = []  # (position in the basic result, axis of x, index array, known in bounds)
    d = 0  # axis of x
    q = 0  # axis of the basic result
    for kind, item in parts:
        if kind == "basic":
            if item is Ellipsis:
                e = x.ndim - consumed
                basic.extend([slice(None)] * e)
                d += e
                q += e
            elif item is None:
                basic.append(None)
                q += 1
            elif _integer(item):  # among arrays an integer is a 0-d array (numpy's rule)
                basic.append(slice(None))
                indexed.append((q, d, np.asarray(item, dtype=np.int64), False))
                d += 1
                q += 1
            else:
                basic.append(item)  # a slice, or whatever basic indexing will reject
                d += 1
                q += 1
        elif kind == "int":
            basic.append(slice(None))
            indexed.append((q, d, item, False))
            d += 1
            q += 1
        else:
            extents = tuple(x.shape[d:d + item.ndim])
            if item.shape != extents:
                raise IndexError(f"tenferro: boolean index of shape {item.shape} does not match the indexed axes "
                                 f"{tuple(range(d, d + item.ndim))} of extents {extents}")
            for nz in item.nonzero():
                basic.append(slice(None))
                indexed.append((q, d, nz.astype(np.int64), True))  # in bounds
                d += 1
                q += 1
    r = x[tuple(basic)]
    if len(indexed) == 1 and indexed[0][0] == indexed[0][1]:
        # One array on an axis that keeps its number: take's bounds check names it as
        # numpy does, and no broadcasting is needed.
        p, _, a, _ = indexed[0]
        return r.take(a, p)
    shape = r.shape
    positions = [p for p, _, _, _ in indexed]
    extents = tuple(shape[p] for p in positions)
    arrays = []
    for (p, axis, a, checked), n in zip(indexed, extents):
        if not checked and a.size:
            lo, hi = int(a.min()), int(a.max())
            if lo < -n or hi >= n:
                raise IndexError(f"tenferro: index {lo if lo < -n else hi} is out of bounds for axis {axis} "
                                 f"with size {n}")
        arrays.append(a)
    try:
        if 0 in extents:  # then every array is empty (checked above)
            linear = np.zeros(np.broadcast_shapes(*(a.shape for a in arrays)), dtype=np.int64)
        else:  # negative indices wrap once (in bounds, checked above)
            linear = np.ravel_multi_index(tuple(arrays), extents, mode="wrap")
    except ValueError:
        shapes = " ".join(str(a.shape) for a in arrays)
        raise IndexError("tenferro: shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + shapes) from None
    size = math.prod(extents)
    first = positions[0]
    if positions == list(range(first, first + len(positions))):
        # Adjacent in the key: the indexed axes merge in place (row-major, as
        # ravel_multi_index counts) and the result's axes B take their place.
        merged = r.reshape(shape[:first] + (size,) + shape[positions[-1] + 1:])
        return merged.take(linear, first)
    rest = [k for k in range(len(shape)) if k not in positions]
    moved = r.transpose(tuple(positions + rest))
    merged = moved.reshape((size,) + tuple(shape[k] for k in rest))
    return merged.take(linear, 0)  # B first, as numpy puts it


def _host_key(key):
    items = key if isinstance(key, tuple) else (key,)
    return tuple(item.numpy() if isinstance(item, EagerTensor) else item for item in items)


def in_range(value, dtype, op):
    """`value` as a numpy array, refused (InvalidArgumentError, code overflow) where it holds
    integers outside the integer `dtype`'s range: numpy 1.x would wrap them around, numpy 2
    refuses them too. Fractions are left to the caller's rule."""
    a = np.asarray(value)
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer) and a.dtype.kind in "iu" and a.size and (
            a.min() < np.iinfo(dtype).min or a.max() > np.iinfo(dtype).max):
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"tenferro: {op}: {value!r} is out of the range of dtype {dtype} "
                                   "(convert the tensor with astype)", code="overflow", stage="usage", op=op)
    return a


def _value(x, value):
    """`value` as an eager tensor of x's dtype on x's runtime (numbers and arrays as the
    operators take them)."""
    if isinstance(value, EagerTensor):
        return value
    a = in_range(value, x.dtype, "at[...]")
    if a.dtype != x.dtype:
        if np.iscomplexobj(a) and not np.issubdtype(x.dtype, np.complexfloating) and np.any(np.imag(a) != 0):
            raise TypeError(f"tenferro: a complex value cannot update a {x.dtype} tensor (convert with astype)")
        a = a.real.astype(x.dtype) if np.iscomplexobj(a) and not np.issubdtype(x.dtype, np.complexfloating) \
            else a.astype(x.dtype)
    return x.runtime.tensor(np.array(a, order="C"))  # a 0-d array stays 0-d


class _Update:
    """x.at[key]: the functional updates of the elements numpy's x[key] selects."""

    __slots__ = ("_x", "_key")

    def __init__(self, x, key):
        self._x = x
        self._key = key

    def _positions(self):
        # Row-major positions of the selected elements, shaped as x[key] (numpy's own
        # indexing of an arange: every rule of numpy's, errors included).
        x = self._x
        return np.arange(x.size, dtype=np.int64).reshape(x.shape)[_host_key(self._key)]

    def _values(self, value, shape):
        v = _value(self._x, value)
        if tuple(v.shape) != tuple(shape):
            v = _tenferro.eager_broadcast_to(v, list(shape))
        return v.reshape(-1)

    def _whole_mask(self, value):
        # A bool mask of x's shape with one value for every selected element: the update is
        # elementwise (where), with no positions to read, so it also traces.
        key, x = self._key, self._x
        if not (isinstance(key, (EagerTensor, np.ndarray)) and key.dtype == np.bool_
                and tuple(key.shape) == tuple(x.shape) and np.ndim(value) == 0):
            return None
        mask = key if isinstance(key, EagerTensor) else x.runtime.tensor(np.ascontiguousarray(key))
        return mask, _value(x, value)

    def get(self):
        """x[key]."""
        return self._x[self._key]

    def add(self, value):
        """A new tensor: x with `value` (broadcast to x[key]'s shape) added at key;
        repeated positions add up (numpy's np.add.at)."""
        x = self._x
        whole = self._whole_mask(value)
        if whole is not None:
            mask, v = whole
            return x + _tenferro.eager_where(mask, v, x.runtime.zeros([], x.dtype))
        pos = self._positions()
        flat = x.reshape(-1)
        updated = _tenferro.eager_scatter_add(flat, np.ascontiguousarray(pos.reshape(-1)),
                                              self._values(value, pos.shape), 0)
        return updated.reshape(x.shape)

    def set(self, value):
        """A new tensor: x with x[key] replaced by `value` (broadcast to x[key]'s shape);
        at a repeated position the last value wins, as in numpy's assignment."""
        x = self._x
        whole = self._whole_mask(value)
        if whole is not None:
            mask, v = whole
            return _tenferro.eager_where(mask, v, x)
        selected = self._positions()
        values = self._values(value, selected.shape)
        pos = selected.reshape(-1)
        if pos.size == 0:
            return x  # nothing selected: x itself (tensors are immutable)
        last = pos.size - 1 - np.unique(pos[::-1], return_index=True)[1]  # last occurrence of each
        chosen = pos[last]
        if chosen.size != pos.size:
            values = values.take(last, 0)
        mask = np.zeros(x.size, dtype=np.bool_)
        mask[chosen] = True
        flat = x.reshape(-1)
        placed = _tenferro.eager_scatter_add(x.runtime.zeros([x.size], x.dtype), np.ascontiguousarray(chosen),
                                             values, 0)
        return _tenferro.eager_where(x.runtime.tensor(mask), placed, flat).reshape(x.shape)


class _At:
    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, key):
        return _Update(self._x, key)


def _at(self):
    """Functional updates, as JAX's: x.at[key].set(v), .add(v), .get() return new
    tensors (x is unchanged) and record for AD. numpy's indexing rules for key."""
    return _At(self)


def _setitem(self, key, value):
    raise TypeError("tenferro: eager tensors are immutable (views share their storage and AD records their "
                    "values); x = x.at[key].set(value) returns the updated tensor")


# ---- shape functions (numpy's signatures) ----

def _axes(x, axis, what):
    if axis is None:
        return list(range(x.ndim))
    axes = [axis] if _integer(axis) else list(axis)
    out = []
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"tenferro: {what}: axis {a} is out of range for rank {x.ndim}")
        out.append(a % x.ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"tenferro: {what}: repeated axis in {axes}")
    return out


def flip(x, axis=None):
    """numpy's flip: x reversed along `axis` (None: every axis); a view."""
    return _tenferro.eager_flip(x, _axes(x, axis, "flip"))


def roll(x, shift, axis=None):
    """numpy's roll: elements shifted by `shift` along `axis` (None: of the flattened
    tensor, then the shape restored), wrapping around."""
    if axis is None:
        return roll(x.reshape(-1), shift, 0).reshape(x.shape)
    shifts = [shift] if _integer(shift) else list(shift)
    axes = [axis] if _integer(axis) else list(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("tenferro: roll: shift and axis must have the same length")
    total = {}
    for a, s in zip(_axes_list(x, axes, "roll"), shifts):
        total[a] = total.get(a, 0) + int(s)
    from . import concatenate
    for a, s in total.items():
        n = x.shape[a]
        s = s % n if n else 0
        if s:
            head = [slice(None)] * a + [slice(n - s, None)]
            tail = [slice(None)] * a + [slice(0, n - s)]
            x = concatenate([x[tuple(head)], x[tuple(tail)]], a)
    return x


def _axes_list(x, axes, what):
    # Like _axes, but repeats allowed (roll adds their shifts).
    out = []
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"tenferro: {what}: axis {a} is out of range for rank {x.ndim}")
        out.append(a % x.ndim)
    return out


def broadcast_to(x, shape):
    """numpy's broadcast_to: a view of x with extent-1 and missing leading axes repeated
    (stride 0). ValueError where x's shape does not broadcast to `shape`."""
    shape = [int(shape)] if _integer(shape) else [int(s) for s in shape]
    return _tenferro.eager_broadcast_to(x, shape)


def _pad_widths(x, pad_width):
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu":
        raise TypeError("tenferro: pad: pad_width must be integers")
    try:
        w = np.broadcast_to(w, (x.ndim, 2))
    except ValueError:
        raise ValueError(f"tenferro: pad: pad_width of shape {np.shape(pad_width)} does not fit rank {x.ndim}") from None
    if (w < 0).any():
        raise ValueError("tenferro: pad: pad_width cannot be negative")
    return [int(v) for v in w[:, 0]], [int(v) for v in w[:, 1]]


def pad(x, pad_width, mode="constant", constant_values=0):
    """numpy's pad in mode 'constant' with one constant value: `pad_width` as numpy
    takes it (an int, a (before, after) pair, or one pair per axis). Other modes and
    per-axis constants: None (numpy's own pad then runs on the values, refused where x
    requires grad)."""
    if mode != "constant" or np.ndim(constant_values) != 0:
        return None
    low, high = _pad_widths(x, pad_width)
    return _tenferro.eager_pad(x, constant_values, low, high)


def tile(x, reps):
    """numpy's tile: x repeated reps[k] times along axis k (reps and x's shape aligned
    at the end, either padded with ones at the front)."""
    reps = [int(reps)] if _integer(reps) else [int(r) for r in reps]
    if any(r < 0 for r in reps):
        raise ValueError("tenferro: tile: negative repetitions")
    d = max(x.ndim, len(reps))
    shape = (1,) * (d - x.ndim) + tuple(x.shape)
    reps = [1] * (d - len(reps)) + reps
    interleaved = []
    for s in shape:
        interleaved += [1, s]
    target = []
    for r, s in zip(reps, shape):
        target += [r, s]
    spread = _tenferro.eager_broadcast_to(x.reshape(tuple(interleaved)), target)
    return spread.reshape(tuple(r * s for r, s in zip(reps, shape)))


def repeat(x, repeats, axis=None):
    """numpy's repeat: each element repeated `repeats` times (an int, or one count per
    element) along `axis` (None: of the flattened tensor)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    a = _axes(x, axis, "repeat")[0]
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise TypeError("tenferro: repeat: repeats must be an integer or a 1-d sequence of integers")
    if (counts < 0).any():
        raise ValueError("tenferro: repeat: negative repetitions")
    # The result's length in Python integers (numpy's own count wraps past int64, and
    # numpy 1.24 then crashes): past int64 it is an error before any allocation.
    n = x.shape[a]
    total = int(counts) * n if counts.ndim == 0 else int(counts.astype(object).sum())
    if total >= 1 << 63:
        raise ValueError(f"tenferro: repeat: the result would have {total} elements along axis {a}, "
                         "more than int64 holds")
    try:
        idx = np.repeat(np.arange(x.shape[a], dtype=np.int64), counts)
    except (ValueError, MemoryError) as e:
        raise ValueError(f"tenferro: repeat: {e}") from None
    return x.take(idx, a)


def _axis(x, axis, what):
    return _axes(x, axis, what)[0]


def take_along_axis(x, indices, axis):
    """numpy's take_along_axis: x's elements at `indices` (integers of x's rank,
    broadcasting against x except along `axis`) along `axis`; None flattens x first.
    Composed as advanced indexing (one gather), so it differentiates."""
    idx = _host_array(indices)
    if idx.dtype == np.bool_:
        raise IndexError("tenferro: take_along_axis: indices must be integers")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("tenferro: take_along_axis: with axis None the indices must be 1-d")
        return x.reshape(-1)[idx]
    a = _axis(x, axis, "take_along_axis")
    if idx.ndim != x.ndim:
        raise ValueError(f"tenferro: take_along_axis: indices of rank {idx.ndim} for a tensor of rank {x.ndim}")
    key = []
    for k in range(x.ndim):
        if k == a:
            key.append(idx)
        else:
            shape = [1] * x.ndim
            shape[k] = x.shape[k]
            key.append(np.arange(x.shape[k], dtype=np.int64).reshape(shape))
    return advanced_index(x, tuple(key))


def host_values(x, what):
    """x's values as a numpy array, for `what` that computes in numpy; inside tenferro.trace
    (or jit) a TypeError naming `what`: a program cannot read its own values."""
    try:
        return x.numpy()
    except TypeError:
        raise TypeError(
            f"tenferro.trace: {what} computes in numpy from the values, which a traced function cannot "
            "read (no program op does it); call it outside the traced function") from None


def _traced(x):
    # Whether x is a value of the function tenferro.trace is recording (its values cannot
    # be read).
    try:
        x.numpy()
    except TypeError:
        return True
    return False


def _traced_arg(x, axis, keepdims, what):
    # numpy's argmax / argmin as program operations: the first position along `axis` where
    # x equals its max (min), or, where the slice holds a NaN, the first NaN (x != x): the
    # minimum over those positions of an index ramp, the axis extent elsewhere.
    if np.issubdtype(x.dtype, np.complexfloating):
        raise TypeError(f"tenferro.trace: {what} of a complex tensor (numpy's lexicographic order) is not "
                        "recorded; call it outside the traced function")
    if axis is None:
        if keepdims:
            return _traced_arg(x.reshape(-1), 0, False, what).reshape((1,) * x.ndim)
        x, axis = x.reshape(-1), 0
    a = _axis(x, axis, what)
    n = x.shape[a]
    if n == 0:
        raise ValueError(f"tenferro: attempt to get {what} of an empty sequence")
    extreme = x.max(axis=a, keepdims=True) if what == "argmax" else x.min(axis=a, keepdims=True)
    hit = (x == extreme) | (x != x)
    ramp = np.arange(n, dtype=np.int64).reshape([n if k == a else 1 for k in range(x.ndim)])
    from . import where
    return where(hit, ramp, n).min(axis=a, keepdims=keepdims)


def sort(x, axis=-1):
    """numpy's sort (a new tensor; axis None sorts the flattened tensor): the core argsort's
    stable order (NaN last; complex values lexicographically, numpy's NaN classes), the
    values gathered from it, so it traces and the gradient flows to the elements where
    they came from."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    return _tenferro.eager_sort(x, _axis(x, axis, "sort"))


def _scan(x, axis, combine, identity, what):
    # Inclusive scan along `axis` in log2(n) steps (Hillis-Steele): y <- combine(y, y
    # shifted by s, padded with the identity), s = 1, 2, 4, ...
    if axis is None:
        x, axis = x.reshape(-1), 0
    a = _axis(x, axis, what)
    n = x.shape[a]
    y = x
    s = 1
    while s < n:
        low = [0] * x.ndim
        high = [0] * x.ndim
        low[a] = s
        high[a] = -s
        shifted = _tenferro.eager_pad(y, identity, low, high)
        y = combine(y, shifted)
        s *= 2
    return y


def _int64_accumulator(x):
    # numpy sums and multiplies bools and int32 in int64 (Note [numpy reduction dtypes]).
    return x.astype(np.int64) if x.dtype in (np.bool_, np.int32) else x


def cumsum(x, axis=None):
    """numpy's cumsum along `axis` (None: of the flattened tensor), as log2(n) shifted
    additions (differentiable; sums associate pairwise, not left to right)."""
    return _scan(_int64_accumulator(x), axis, lambda u, v: u + v, 0, "cumsum")


def cumprod(x, axis=None):
    """numpy's cumprod along `axis` (None: of the flattened tensor), as log2(n) shifted
    products (differentiable, zeros included)."""
    return _scan(_int64_accumulator(x), axis, lambda u, v: u * v, 1, "cumprod")


def diag(v, k=0):
    """numpy's diag: the k-th diagonal of a matrix (a view), or a square matrix with the
    vector on its k-th diagonal (zeros elsewhere; a scatter, so it differentiates)."""
    if v.ndim == 2:
        return v.diagonal(k)
    if v.ndim != 1:
        raise ValueError("tenferro: diag: input must be 1-d or 2-d")
    n = v.shape[0]
    m = n + abs(int(k))
    rows = np.arange(n, dtype=np.int64) + max(-int(k), 0)
    cols = np.arange(n, dtype=np.int64) + max(int(k), 0)
    return v.runtime.zeros([m, m], v.dtype).at[rows, cols].set(v)


def diff(a, n=1, axis=-1):
    """numpy's diff: the n-th forward difference along `axis` (differences of slices)."""
    if n < 0:
        raise ValueError(f"tenferro: diff: order must be non-negative, got {n}")
    ax = _axis(a, axis, "diff")
    head = [slice(None)] * a.ndim
    tail = [slice(None)] * a.ndim
    head[ax] = slice(1, None)
    tail[ax] = slice(None, -1)
    for _ in range(n):
        a = a[tuple(head)] - a[tuple(tail)]
    return a


def array_split(a, sections, axis=0, equal=False):
    """numpy's array_split (and split with equal=True): a list of views of `a` along
    `axis`, at the given indices or into `sections` parts (the first ones one longer)."""
    ax = _axis(a, axis, "split")
    n = a.shape[ax]
    if _integer(sections):
        if sections <= 0:
            raise ValueError("tenferro: split: number sections must be larger than 0")
        if equal and n % sections:
            raise ValueError("tenferro: split: array split does not result in an equal division")
        q, r = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:
        bounds = [0] + [min(max(int(i) + (n if int(i) < 0 else 0), 0), n) for i in sections] + [n]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = [slice(None)] * a.ndim
        key[ax] = slice(lo, max(lo, hi))
        parts.append(a[tuple(key)])
    return parts


def _atleast(a, rank):
    if a.ndim >= rank:
        return a
    if rank == 2:
        return a.reshape((1,) * (2 - a.ndim) + tuple(a.shape))
    shape = {0: (1, 1, 1), 1: (1,) + tuple(a.shape) + (1,), 2: tuple(a.shape) + (1,)}[a.ndim]
    return a.reshape(shape)


def stack_along(kind, tup):
    """numpy's vstack / hstack / dstack / column_stack of eager tensors (numpy arrays
    among them become constants): concatenations after numpy's reshapes."""
    from . import _constants, concatenate
    parts = _constants(list(tup), kind)
    if kind == "vstack":
        return concatenate([_atleast(p, 2) for p in parts], 0)
    if kind == "dstack":
        return concatenate([_atleast(p, 3) for p in parts], 2)
    if kind == "column_stack":
        return concatenate([p.reshape((-1, 1)) if p.ndim < 2 else p for p in parts], 1)
    return concatenate(parts, 0 if all(p.ndim == 1 for p in parts) else 1)  # hstack


def _bool_operand(x, op):
    # A bool eager tensor, numpy bool array or Python bool; anything else: numpy would do
    # integer bitwise arithmetic, which tenferro has no op for.
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.bool_:
        from ._errors import DTypeError
        what = np.dtype(dtype).name if dtype is not None else type(x).__name__
        raise DTypeError(f"tenferro: {op} takes bool tensors (logical and / or / xor / not), got {what}: "
                         "tenferro has no integer bitwise operations", code="dtype_mismatch", stage="usage", op=op)
    return x


def _logical(op, combine):
    # numpy's &, |, ^ of bool tensors, composed from where and compare (so they record and
    # trace); operands broadcast as numpy's.
    def forward(self, other):
        return combine(_bool_operand(self, op), _bool_operand(other, op))

    def reflected(self, other):
        return combine(_bool_operand(other, op), _bool_operand(self, op))

    return forward, reflected


def _and(a, b):
    from . import where
    return where(a, b, False) if isinstance(a, EagerTensor) else where(b, a, False)


def _or(a, b):
    from . import where
    return where(a, True, b) if isinstance(a, EagerTensor) else where(b, True, a)


def install():
    EagerTensor.__and__, EagerTensor.__rand__ = _logical("&", _and)
    EagerTensor.__or__, EagerTensor.__ror__ = _logical("|", _or)
    EagerTensor.__xor__, EagerTensor.__rxor__ = _logical("^", lambda a, b: a != b)
    EagerTensor.__invert__ = lambda self: _bool_operand(self, "~") == False  # noqa: E712
    EagerTensor.at = property(_at)
    EagerTensor.__setitem__ = _setitem
    EagerTensor.mT = property(lambda self: self.swapaxes(-1, -2), doc="The last two axes swapped (a view).")
    EagerTensor.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per element.")
    EagerTensor.nbytes = property(lambda self: self.size * self.dtype.itemsize, doc="Bytes of the elements.")
    EagerTensor.repeat = repeat

    def argmax(self, axis=None, keepdims=False):
        """numpy's argmax of the values (a host read, a numpy array; inside tenferro.trace
        recorded as tensor operations, _traced_arg)."""
        if _traced(self):
            return _traced_arg(self, axis, keepdims, "argmax")
        return np.argmax(self.numpy(), axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        """numpy's argmin of the values (a host read, a numpy array; inside tenferro.trace
        recorded as tensor operations, _traced_arg)."""
        if _traced(self):
            return _traced_arg(self, axis, keepdims, "argmin")
        return np.argmin(self.numpy(), axis=axis, keepdims=keepdims)

    EagerTensor.argmax = argmax
    EagerTensor.argmin = argmin

    # More of numpy's ndarray methods: the same operations as their functions.
    def argsort(self, axis=-1, kind=None):
        """numpy's argsort, always stable (whatever `kind`: ties keep their order, NaN
        last, complex values lexicographically): int64 positions, a numpy array as numpy's
        (an eager tensor inside tenferro.trace, where it records); no derivative."""
        x, a = (self.reshape(-1), 0) if axis is None else (self, _axis(self, axis, "argsort"))
        order = _tenferro.eager_argsort(x, a)
        return order if _traced(self) else order.numpy()

    def nonzero(self):
        """numpy's nonzero of the values (a host read: index arrays)."""
        return np.nonzero(host_values(self, "nonzero"))

    def positive(self):
        if self.dtype == np.bool_:  # as numpy
            from ._errors import DTypeError
            raise DTypeError("tenferro: unary + of a bool tensor (convert with astype)", code="dtype_mismatch",
                             stage="usage", op="positive")
        return self + 0

    def to_complex(self):
        if self.size != 1:
            raise TypeError("tenferro: only one-element tensors convert to complex")
        return complex(host_values(self, "complex()").item())

    def to_index(self):
        # numpy's rule: only an integer tensor of rank 0 is an index.
        if self.ndim != 0 or not np.issubdtype(self.dtype, np.integer):
            raise TypeError("tenferro: only integer tensors of rank 0 can be converted to an index")
        return int(host_values(self, "operator.index()").item())

    EagerTensor.argsort = argsort
    EagerTensor.nonzero = nonzero
    EagerTensor.__pos__ = positive
    EagerTensor.__complex__ = to_complex
    EagerTensor.__index__ = to_index
    EagerTensor.conjugate = lambda self: self.conj()
    EagerTensor.cumsum = lambda self, axis=None: cumsum(self, axis)
    EagerTensor.cumprod = lambda self, axis=None: cumprod(self, axis)
    EagerTensor.dot = lambda self, other: np.dot(self, other)
