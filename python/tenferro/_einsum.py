"""einsum and contract_path with numpy's conventions, on tenferro's CPU engine."""

import threading

import numpy as np

from . import _tenferro
from ._errors import DTypeError, InvalidArgumentError

_SUPPORTED = tuple(np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64,
                                         np.complex64, np.complex128))

# Engines by thread count, created on first use and never reconfigured (no global
# setter: a call chooses its engine with `engine=` or `threads=`).
_engines = {}
_engines_lock = threading.Lock()


_default = None  # default_engine(None), once created
_einsum_fast = _tenferro.einsum_fast


def default_engine(threads=None):
    """The shared engine with `threads` workers (None: every CPU this process may use)."""
    global _default
    key = threads
    with _engines_lock:
        eng = _engines.get(key)
        if eng is None:
            eng = _tenferro.Engine(threads)
            _engines[key] = eng
        if key is None:
            _default = eng
        return eng


def Engine(threads=None, plan_capacity=256):
    """A private CPU engine with `threads` workers and its own bounded einsum plan cache."""
    return _tenferro.Engine(threads, plan_capacity)


def _letters(sublist, where):
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
            continue
        try:
            i = int(s)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"einsum: {where} entry {s!r} is not an integer label or Ellipsis",
                                       "invalid_argument", "usage", "einsum") from None
        if i != s or not 0 <= i < 52:
            raise InvalidArgumentError(f"einsum: {where} label {s!r} is outside [0, 52)",
                                       "invalid_argument", "usage", "einsum")
        out.append(chr(ord("a") + i) if i < 26 else chr(ord("A") + i - 26))
    return "".join(out)


def _parse_args(args):
    """(subscripts, operands) from numpy's two call forms."""
    if not args:
        raise TypeError("einsum() needs subscripts and operands")
    if isinstance(args[0], str):
        return args[0], list(args[1:])
    # Interleaved: op0, sub0, op1, sub1, ..., [out_sub]
    rest = list(args)
    out_sub = rest.pop() if len(rest) % 2 == 1 else None
    ops, terms = rest[0::2], rest[1::2]
    subscripts = ",".join(_letters(t, f"operand {k} sublist") for k, t in enumerate(terms))
    if out_sub is not None:
        subscripts += "->" + _letters(out_sub, "output sublist")
    return subscripts, ops


def _as_operands(ops):
    """numpy arrays of one supported dtype that tenferro can address without copying."""
    arrays = []
    for k, x in enumerate(ops):
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        if a.dtype == object or a.dtype.fields is not None or a.dtype.kind in "SUV":
            raise TypeError(f"tenferro.einsum: operand {k} has unsupported dtype {a.dtype} "
                            "(supported: bool, int32, int64, float32, float64, complex64, complex128)")
        arrays.append(a)
    if not arrays:
        raise InvalidArgumentError("einsum: no operands", "invalid_argument", "usage", "einsum")
    common = np.result_type(*arrays)
    if common not in _SUPPORTED:
        raise TypeError(f"tenferro.einsum: unsupported dtype {common} "
                        "(supported: bool, int32, int64, float32, float64, complex64, complex128)")
    out = []
    for a in arrays:
        if a.dtype != common:
            a = a.astype(common)  # numpy's promotion; a copy of this operand only
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        if not a.flags.aligned:
            a = np.require(a, requirements="A")
        out.append(a)
    return out


def _policy(optimize):
    if optimize is True or optimize is None:
        return "greedy"
    if optimize is False:
        return "left-to-right"
    if isinstance(optimize, str):
        return optimize
    path = list(optimize)
    if path and isinstance(path[0], str) and path[0] == "einsum_path":  # numpy.einsum_path's form
        path = path[1:]
    # Positions stay as given (ints, numpy integers): the binding checks each one, so a
    # float or a string is a TypeError there, never truncated here.
    return [tuple(step) for step in path]


def _engine(engine, threads):
    if engine is not None:
        if threads is not None:
            raise InvalidArgumentError("tenferro: give engine= or threads=, not both",
                                       "invalid_argument", "usage", "engine")
        return engine
    return default_engine(threads)


def _einsum_general(*operands, optimize="greedy", out=None, threads=None, engine=None, dtype=None, casting="safe",
                    order="K"):
    """numpy.einsum on tenferro's CPU engine.

    Call forms: ``einsum("ij,jk->ik", a, b)`` and ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    numpy's semantics: implicit output (labels seen once, sorted), ``...`` broadcasting,
    repeated labels (diagonals and sums); unlike numpy, an explicit output without ``...``
    sums the broadcast dimensions instead of raising. ``optimize``: ``"greedy"`` (default;
    also ``True`` and ``None``),
    ``"optimal"``, ``"treesa"``, ``"left-to-right"`` (also ``False``), or a path (pairs of
    operand positions, opt_einsum's form, or numpy.einsum_path's ``["einsum_path", ...]``).
    ``out``: an array of the result's shape and dtype to write into. ``threads``: run on
    the shared engine with that many workers; ``engine``: run on a given
    ``tenferro.Engine``. Plans are cached per engine (same subscripts, shapes, dtype and
    optimize reuse the plan). The GIL is released while the plan is searched and run.

    Operands are numpy arrays (or array-likes) of bool, int32, int64, float32, float64,
    complex64 or complex128, read in place whatever their strides; operands of different
    dtypes are first converted to numpy's common type (a copy of the converted ones).
    The result is a new array over tenferro's buffer (no copy) or ``out``. With
    ``tenferro.EagerTensor`` operands (all of one ``tenferro.Runtime``; arrays among them
    become constants there, of the same dtype) the einsum runs on their runtime and
    returns an EagerTensor that records for AD. ``dtype`` / ``casting``: numpy's: the
    operands are converted to ``dtype`` first where ``casting`` allows (default 'safe').
    ``order``: the result's memory order, 'K' and 'A' (tenferro's, the default), 'C' or 'F'.
    """
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"tenferro.einsum: order must be 'K', 'A', 'C' or 'F', got {order!r}")
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"tenferro.einsum: casting must be 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', got {casting!r}")
    if dtype is not None or order in ("C", "F"):
        r = _einsum_general(*_cast_operands(operands, dtype, casting), optimize=optimize, out=out, threads=threads,
                            engine=engine)
        if out is not None or isinstance(r, _tenferro.EagerTensor) or not isinstance(r, np.ndarray):
            return r
        return np.ascontiguousarray(r) if order == "C" else np.asfortranarray(r) if order == "F" else r
    if out is None and threads is None:
        # Note [Python fast path] (einsum_call.h): string form, ndarrays of one dtype.
        r = _einsum_fast(engine if engine is not None else (_default or default_engine()), operands, optimize)
        if r is not NotImplemented:
            return r
    subscripts, ops = _parse_args(operands)
    eager = [o for o in ops if isinstance(o, _tenferro.EagerTensor)]
    if eager:
        # Arrays next to eager tensors are constants on their runtime (as the operators
        # take them; same dtype required): computing all in numpy would drop gradients.
        ops = [o if isinstance(o, _tenferro.EagerTensor) else eager[0].runtime.tensor(np.asarray(o)) for o in ops]
        if out is not None or engine is not None or threads is not None:
            raise InvalidArgumentError("einsum: eager tensors run on their runtime (no out=, engine= or threads=)",
                                       "invalid_argument", "usage", "einsum")
        # On the tensors' runtime, an EagerTensor, with the path `optimize` asks for.
        return _tenferro.eager_einsum(subscripts, ops, _policy(optimize))
    arrays = _as_operands(ops)
    eng = _engine(engine, threads)
    policy = _policy(optimize)
    if out is None:
        return _tenferro.einsum(eng, subscripts, arrays, policy, None)
    if not isinstance(out, np.ndarray):
        raise TypeError("tenferro.einsum: out must be a numpy.ndarray")
    if out.dtype != arrays[0].dtype:
        raise DTypeError(f"einsum: out has dtype {out.dtype}, the result is {arrays[0].dtype}",
                         "dtype_mismatch", "usage", "einsum")
    if not out.flags.writeable:
        raise ValueError("tenferro.einsum: out is read-only")
    if any(np.may_share_memory(out, a) for a in arrays):
        np.copyto(out, _tenferro.einsum(eng, subscripts, arrays, policy, None))  # overlap: via a fresh result
        return out
    return _tenferro.einsum(eng, subscripts, arrays, policy, out)


def _cast_operands(operands, dtype, casting):
    """The call's operands with every array converted to `dtype` (numpy's casting rule)."""
    if dtype is None:
        return operands
    dt = np.dtype(dtype)
    out = []
    for o in operands:
        if isinstance(o, (str, list, tuple)) or o is Ellipsis:
            out.append(o)  # subscripts, or the interleaved form's label lists
            continue
        if isinstance(o, _tenferro.EagerTensor):
            raise InvalidArgumentError("einsum: dtype= on eager tensors (convert them with astype)",
                                       "invalid_argument", "usage", "einsum")
        a = np.asarray(o)
        if not np.can_cast(a.dtype, dt, casting):
            raise TypeError(f"tenferro.einsum: cannot cast operand data from {a.dtype} to {dt} "
                            f"according to the rule {casting!r}")
        out.append(a.astype(dt, copy=False))
    return out


# The entry point is a C function that serves repeated small calls itself and hands every
# other call, unchanged, to _einsum_general (Note [Python call cache], einsum_call.cc).
einsum = _tenferro.make_einsum(_einsum_general, default_engine,
                               "(*operands, optimize='greedy', out=None, threads=None, engine=None, dtype=None, "
                               "casting='safe', order='K')",
                               _einsum_general.__doc__)


class PathInfo:
    """What contract_path found: the pair list and its cost (opt_einsum's convention:
    flops count multiply-adds times the number of terms)."""

    def __init__(self, subscripts, path, cost):
        self.subscripts = subscripts
        self.path = path
        self.opt_cost = cost["flops"]
        self.log10_flops = cost["log10_flops"]
        self.largest_intermediate = cost["largest_intermediate"]
        self.read_write = cost["read_write"]
        self.search_seconds = cost["search_seconds"]
        self.output_shape = cost["output_shape"]

    def __str__(self):
        return (f"  Subscripts: {self.subscripts}\n"
                f"  Contraction path: {self.path}\n"
                f"  Optimized FLOP count: {self.opt_cost:.4e} (log10 {self.log10_flops:.3f})\n"
                f"  Largest intermediate: {self.largest_intermediate:.4e} elements\n"
                f"  Read/write: {self.read_write:.4e} elements\n"
                f"  Output shape: {self.output_shape}\n"
                f"  Path search: {self.search_seconds:.3g} s")

    __repr__ = __str__


def contract_path(*operands, optimize="greedy", threads=None, engine=None, shapes=False):
    """The contraction path einsum would use, as ``(path, PathInfo)`` (opt_einsum's form:
    a list of position pairs). With ``shapes=True`` the operands are shapes (tuples)."""
    subscripts, ops = _parse_args(operands)
    if shapes:
        arrays = [np.lib.stride_tricks.as_strided(np.zeros(1), shape=tuple(s), strides=(0,) * len(s)) for s in ops]
    else:
        arrays = _as_operands(ops)
    eng = _engine(engine, threads)
    path, cost = _tenferro.contract_path(eng, subscripts, arrays, _policy(optimize))
    return path, PathInfo(subscripts, path, cost)
