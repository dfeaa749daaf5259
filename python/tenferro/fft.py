"""tenferro.fft: discrete Fourier transforms with numpy.fft's names, arguments and
definitions, computed by FFTW on tenferro's CPU engine (batched over the other axes,
any strides, inputs never modified).

On numpy arrays the results are numpy arrays; every call takes `engine=` or `threads=`
like tenferro.einsum. On `tenferro.EagerTensor` inputs the results are eager tensors on
their runtime that record for reverse-mode AD (the transforms' adjoints), trace into
`tenferro.jit` programs, and ``numpy.fft.fft(t)`` dispatches here.

Differences from numpy 1.x: single precision stays single (float32 -> complex64,
complex64 -> complex64, as numpy 2 and torch.fft do; numpy 1.x computes and returns
double precision); integer and bool arrays become float64 as in numpy (eager integer
tensors are a DTypeError: convert with astype).
"""

import numpy as _np

from . import _tenferro
from ._einsum import _engine

_F = _tenferro.fft
_EF = _tenferro.eager_fft
_Eager = _tenferro.EagerTensor

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _array(a, real=False):
    a = _np.asarray(a)
    if a.dtype.kind in "biu":
        a = a.astype(_np.float64)  # numpy.fft's conversion of integer input
    elif a.dtype.kind not in "fc":
        raise TypeError(f"tenferro.fft: unsupported dtype {a.dtype}")
    if a.dtype == _np.float16:
        a = a.astype(_np.float32)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if real and a.dtype.kind == "c":
        raise TypeError("tenferro.fft: this transform needs a real input (use fft for complex input)")
    if not real and a.dtype.kind == "f":
        a = a.astype(_np.complex64 if a.dtype == _np.float32 else _np.complex128)
    if not a.flags.aligned:
        a = _np.require(a, requirements="A")
    return a


def _axis(axis, ndim):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise _np.AxisError(axis, ndim)
    return axis % ndim


def _points(n):
    n = int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _resized(a, axes, lengths):
    """`a` cropped or zero-padded to lengths[i] along axes[i] (numpy.fft's n / s)."""
    index = [slice(None)] * a.ndim
    pad = [(0, 0)] * a.ndim
    for ax, n in zip(axes, lengths):
        have = a.shape[ax]
        if n < have:
            index[ax] = slice(0, n)
        elif n > have:
            pad[ax] = (0, n - have)
    a = a[tuple(index)]
    if any(p != (0, 0) for p in pad):
        a = _np.pad(a, pad)
    return a


def _cook(a, s, axes, invreal):
    """numpy's (s, axes) defaults for the n-dimensional transforms."""
    shape = a.shape
    if s is None:
        axes = list(range(len(shape))) if axes is None else [int(x) for x in axes]
        s = [shape[x] for x in axes]
        if invreal and axes:
            s[-1] = (shape[axes[-1]] - 1) * 2
    else:
        s = [int(x) for x in s]
        axes = list(range(-len(s), 0)) if axes is None else [int(x) for x in axes]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return s, axes


def _transform(a, family, s, axes, norm, engine, threads, name=""):
    """One n-dimensional transform of numpy's family ('fft', 'ifft', 'rfft', 'irfft')
    with explicit lengths `s` and axes; `name` (the function called) names its errors."""
    norm = _norm(norm)
    ndim = len(_shape_of(a))
    axes = [_axis(x, ndim) for x in axes]
    s = [_points(n) for n in s]
    if len(set(axes)) != len(axes):
        # numpy applies a repeated axis's transform again: one axis at a time, in its order.
        if family in ("fft", "ifft"):
            for ax, n in reversed(list(zip(axes, s))):
                a = _transform(a, family, [n], [ax], norm, engine, threads, name)
            return a
        raise ValueError(f"tenferro.fft: {family}n with a repeated axis")
    if isinstance(a, _Eager):
        if engine is not None or threads is not None:
            raise TypeError("tenferro.fft: eager tensors run on their runtime (no engine= or threads=)")
        return _EF.fftn(a, family, s, axes, norm, name)
    a = _array(a, real=family == "rfft")
    eng = _engine(engine, threads)
    if family == "irfft":
        n = s[-1]
        lengths = s[:-1] + [n // 2 + 1]
        a = _resized(a, axes, lengths)
        return _F.transform(eng, a, "c2r", axes, norm, n)
    a = _resized(a, axes, s)
    kind = {"fft": "c2c", "ifft": "c2c_inverse", "rfft": "r2c"}[family]
    return _F.transform(eng, a, kind, axes, norm, -1)


def _shape_of(a):
    return a.shape if isinstance(a, _Eager) else _np.shape(a)


class _Shaped:
    """Shape holder for _cook on eager tensors and array-likes alike."""

    def __init__(self, a):
        self.shape = tuple(_shape_of(a))


_FAST_KIND = {"fft": ("c2c", "FD"), "ifft": ("c2c_inverse", "FD"), "rfft": ("r2c", "fd"), "irfft": ("c2r", "FD")}


def _one(a, n, axis, family, norm, engine, threads, name=None):
    name = name or family
    if type(a) is _Eager and engine is None and threads is None:
        # The eager fast path: fft_eager checks n, axis and norm as numpy does.
        return _EF.fftn(a, family, [] if n is None else [int(n)], [int(axis)], "backward" if norm is None else norm,
                        name)
    if (n is None and type(a) is _np.ndarray and family in _FAST_KIND and a.dtype.char in _FAST_KIND[family][1]
            and a.dtype.isnative and a.flags.aligned):
        # Arrays that need no conversion or resizing go straight to the kernel (irfft's
        # default length 2 (m - 1) reads exactly its m bins).
        ax = _axis(axis, a.ndim)
        length = _points(2 * (a.shape[ax] - 1)) if family == "irfft" else -1
        return _F.transform(_engine(engine, threads), a, _FAST_KIND[family][0], [ax], _norm(norm), length)
    ndim = len(_shape_of(a))
    ax = _axis(axis, ndim)
    if n is None:
        m = _shape_of(a)[ax]
        n = 2 * (m - 1) if family == "irfft" else m
    return _transform(a, family, [n], [ax], norm, engine, threads, name)


def fft(a, n=None, axis=-1, norm=None, *, engine=None, threads=None):
    """The one-dimensional discrete Fourier transform along `axis`, the input cropped or
    zero-padded to n points (numpy.fft.fft)."""
    return _one(a, n, axis, "fft", norm, engine, threads)


def ifft(a, n=None, axis=-1, norm=None, *, engine=None, threads=None):
    """The one-dimensional inverse transform (numpy.fft.ifft)."""
    return _one(a, n, axis, "ifft", norm, engine, threads)


def rfft(a, n=None, axis=-1, norm=None, *, engine=None, threads=None):
    """The transform of a real input: bins 0 .. n/2 (numpy.fft.rfft)."""
    return _one(a, n, axis, "rfft", norm, engine, threads)


def irfft(a, n=None, axis=-1, norm=None, *, engine=None, threads=None):
    """The inverse of rfft: n real points (default 2 (m - 1)) from m bins (numpy.fft.irfft)."""
    return _one(a, n, axis, "irfft", norm, engine, threads)


def hfft(a, n=None, axis=-1, norm=None, *, engine=None, threads=None):
    """The transform of a signal with Hermitian symmetry given by its first half: a real
    spectrum of n points (numpy.fft.hfft = irfft(conj(a)) with the norm swapped)."""
    norm = _norm(norm)
    a = _np.conj(a) if isinstance(a, _Eager) else _np.conj(_array(a))
    return _one(a, n, axis, "irfft", _SWAP[norm], engine, threads, "hfft")


def ihfft(a, n=None, axis=-1, norm=None, *, engine=None, threads=None):
    """The inverse of hfft (numpy.fft.ihfft = conj(rfft(a)) with the norm swapped)."""
    norm = _norm(norm)
    return _np.conj(_one(a, n, axis, "rfft", _SWAP[norm], engine, threads, "ihfft"))


def _nd(family):
    def run(a, s=None, axes=None, norm=None, *, engine=None, threads=None):
        if not isinstance(a, _Eager):
            a = _np.asarray(a)
        s, axes = _cook(_Shaped(a), s, axes, family == "irfft")
        if not axes:
            return a if isinstance(a, _Eager) else _array(a, real=family == "rfft").copy()
        return _transform(a, family, s, axes, norm, engine, threads, family + "n")

    run.__name__ = family + "n"
    run.__doc__ = f"numpy.fft.{family}n: the transform over `axes` (default all, or the last len(s)) with lengths `s`."
    return run


fftn = _nd("fft")
ifftn = _nd("ifft")
rfftn = _nd("rfft")
irfftn = _nd("irfft")


def _two(run, name):
    def call(a, s=None, axes=(-2, -1), norm=None, *, engine=None, threads=None):
        return run(a, s, axes, norm, engine=engine, threads=threads)

    call.__name__ = name
    call.__doc__ = f"numpy.fft.{name}: {run.__name__} over the last two axes by default."
    return call


fft2 = _two(fftn, "fft2")
ifft2 = _two(ifftn, "ifft2")
rfft2 = _two(rfftn, "rfft2")
irfft2 = _two(irfftn, "irfft2")


def fftfreq(n, d=1.0):
    """Sample frequencies of an n-point transform with spacing d: [0, 1, ..., -1] / (d n)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"fftfreq: n must be >= 1, got {n}")
    k = _np.arange(n)
    k[(n - 1) // 2 + 1:] -= n
    return k * (1.0 / (n * d))


def rfftfreq(n, d=1.0):
    """Sample frequencies of rfft's n/2 + 1 bins: [0, 1, ..., n/2] / (d n)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"rfftfreq: n must be >= 1, got {n}")
    return _np.arange(n // 2 + 1) * (1.0 / (n * d))


def _shift(x, axes, inverse):
    shape = _shape_of(x)
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, _np.integer)):
        axes = (axes,)
    name = "ifftshift" if inverse else "fftshift"
    for ax in axes:
        if isinstance(ax, bool) or not isinstance(ax, (int, _np.integer)):
            raise TypeError(f"tenferro.fft.{name}: axes must be integers, got {type(ax).__name__}")
        if not -len(shape) <= ax < len(shape):
            raise _np.AxisError(f"tenferro.fft.{name}: axis {ax} is out of bounds for rank {len(shape)}")
    shifts = [-(shape[ax] // 2) if inverse else shape[ax] // 2 for ax in axes]
    if isinstance(x, _Eager):
        from ._indexing import roll
        return roll(x, shifts, tuple(axes))
    return _np.roll(_np.asarray(x), shifts, tuple(axes))


def fftshift(x, axes=None):
    """The zero-frequency bin moved to the centre of each axis in `axes` (default all)."""
    return _shift(x, axes, False)


def ifftshift(x, axes=None):
    """The inverse of fftshift."""
    return _shift(x, axes, True)
