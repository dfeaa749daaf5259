"""tenferro.fft against numpy.fft: every function on arrays (dtypes, strides, n / s / axes,
norms) and on eager tensors (values, numpy dispatch, gradients against central
differences, jit), and the errors numpy raises."""

import numpy as np
import pytest

import tenferro
import tenferro.fft as tfft

NORMS = [None, "backward", "ortho", "forward"]


@pytest.fixture(scope="module")
def rt():
    return tenferro.Runtime()


def _inputs(rng):
    """Arrays as stored and as strided views: transposed, every other row reversed."""
    a = rng.standard_normal((6, 10))
    z = a + 1j * rng.standard_normal((6, 10))
    wide = rng.standard_normal((12, 10)) + 1j * rng.standard_normal((12, 10))
    return {"real": a, "complex": z, "transposed": z.T, "strided": wide[::-2, ::-1]}


def _close(got, want, tol=1e-12):
    got = np.asarray(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * (1 + np.abs(want).max()))


@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional_transforms_match_numpy(norm):
    rng = np.random.default_rng(1)
    for name, x in _inputs(rng).items():
        for n in (None, 4, 10, 13):
            for axis in (-1, 0):
                for f in ("fft", "ifft", "hfft"):
                    _close(getattr(tfft, f)(x, n, axis, norm), getattr(np.fft, f)(x, n, axis, norm))
                if name == "real":
                    _close(tfft.rfft(x, n, axis, norm), np.fft.rfft(x, n, axis, norm))
                    _close(tfft.ihfft(x, n, axis, norm), np.fft.ihfft(x, n, axis, norm))
                else:
                    _close(tfft.irfft(x, n, axis, norm), np.fft.irfft(x, n, axis, norm))


@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_transforms_match_numpy(norm):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5, 6))
    z = x + 1j * rng.standard_normal((4, 5, 6))
    for s, axes in ((None, None), ((3, 8), None), (None, (0, 2)), ((5, 4), (2, 0)), (None, (1,)), ((7,), (-1,))):
        for f in ("fftn", "ifftn"):
            _close(getattr(tfft, f)(z, s, axes, norm), getattr(np.fft, f)(z, s, axes, norm))
        _close(tfft.rfftn(x, s, axes, norm), np.fft.rfftn(x, s, axes, norm))
        _close(tfft.irfftn(z, s, axes, norm), np.fft.irfftn(z, s, axes, norm))
    for f in ("fft2", "ifft2", "irfft2"):
        _close(getattr(tfft, f)(z, norm=norm), getattr(np.fft, f)(z, norm=norm))
    _close(tfft.rfft2(x, (3, 4), norm=norm), np.fft.rfft2(x, (3, 4), norm=norm))
    # A repeated axis applies its transform again, as numpy does.
    _close(tfft.fftn(z, axes=(1, 1), norm=norm), np.fft.fftn(z, axes=(1, 1), norm=norm))


def test_dtypes_and_conversions():
    rng = np.random.default_rng(3)
    x32 = rng.standard_normal((3, 16)).astype(np.float32)
    y = tfft.rfft(x32)
    assert y.dtype == np.complex64  # single precision stays single (numpy 2's rule)
    _close(y, np.fft.rfft(x32.astype(np.float64)), tol=2e-6)
    assert tfft.fft(x32).dtype == np.complex64
    assert tfft.irfft(y).dtype == np.float32
    ints = np.arange(12).reshape(3, 4)
    _close(tfft.fft(ints), np.fft.fft(ints))
    _close(tfft.rfft(ints > 5), np.fft.rfft(ints > 5))
    big_endian = np.arange(8, dtype=">f8")
    _close(tfft.rfft(big_endian), np.fft.rfft(big_endian))
    _close(tfft.fft([1.0, 2.0, 3.0]), np.fft.fft([1.0, 2.0, 3.0]))
    _close(tfft.fft(x32.astype(np.float64), threads=2), np.fft.fft(x32.astype(np.float64)))


def test_frequencies_and_shifts_match_numpy():
    for n in (1, 4, 5, 10):
        for d in (1.0, 0.25):
            _close(tfft.fftfreq(n, d), np.fft.fftfreq(n, d))
            _close(tfft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    x = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, (1,), (0, 1)):
        _close(tfft.fftshift(x, axes), np.fft.fftshift(x, axes))
        _close(tfft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    for axes in (-1, (-2, 1)):  # negative axes, numpy arrays and eager tensors alike
        _close(tfft.fftshift(x, axes), np.fft.fftshift(x, axes))
        _close(np.asarray(tfft.ifftshift(tenferro.Runtime().tensor(x), axes)), np.fft.ifftshift(x, axes))
    for shift in (tfft.fftshift, tfft.ifftshift):  # named errors, not Python's IndexError of a tuple
        with pytest.raises(np.AxisError, match=f"{shift.__name__}: axis 2 is out of bounds for rank 2"):
            shift(x, 2)
        with pytest.raises(np.AxisError, match="axis -3"):
            shift(tenferro.Runtime().tensor(x), (0, -3))
        with pytest.raises(TypeError, match="axes must be integers"):
            shift(x, (0.5,))


def test_errors_follow_numpy():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match="Invalid norm"):
        tfft.fft(x, norm="unitary")
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        tfft.fft(x, 0)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        tfft.irfft(np.ones(1))  # default n = 0
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        tfft.irfft(np.ones(1, complex))  # the same through the arrays' direct path
    with pytest.raises(np.AxisError):
        tfft.fft(x, axis=2)
    with pytest.raises(ValueError, match="different lengths"):
        tfft.fftn(x, (2, 2), (0,))
    with pytest.raises(TypeError):
        tfft.rfft(x + 1j)
    with pytest.raises(TypeError):
        tfft.fft(np.array(["a", "b"]))


def test_eager_values_match_numpy_and_dispatch(rt):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 9))
    z = x + 1j * rng.standard_normal((4, 9))
    X, Z = rt.tensor(x), rt.tensor(z)
    for norm in NORMS:
        for f, a, A in (("fft", z, Z), ("ifft", z, Z), ("rfft", x, X), ("irfft", z, Z), ("hfft", z, Z),
                        ("ihfft", x, X)):
            got = getattr(tfft, f)(A, 7, 0, norm)
            assert isinstance(got, tenferro.EagerTensor)
            _close(got, getattr(np.fft, f)(a, 7, 0, norm))
            # numpy's own functions dispatch to tenferro on eager tensors.
            via_numpy = getattr(np.fft, f)(A, 7, 0, norm)
            assert isinstance(via_numpy, tenferro.EagerTensor)
            _close(via_numpy, getattr(np.fft, f)(a, 7, 0, norm))
        _close(np.fft.rfftn(X, (6, 8), norm=norm), np.fft.rfftn(x, (6, 8), norm=norm))
        _close(np.fft.irfftn(Z, norm=norm), np.fft.irfftn(z, norm=norm))
        _close(np.fft.fft2(X, norm=norm), np.fft.fft2(x, norm=norm))
    _close(np.fft.fftshift(X), np.fft.fftshift(x))
    _close(np.fft.ifftshift(X, axes=1), np.fft.ifftshift(x, axes=1))
    _close(tfft.fft(rt.tensor(x.astype(np.float32))), np.fft.fft(x), tol=2e-6)
    # Integer tensors are refused, and the error names the function called (not the
    # n-dimensional transform it runs on).
    for f in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn"):
        with pytest.raises(tenferro.DTypeError, match=f"^{f}: needs a floating or complex tensor"):
            getattr(tfft, f)(rt.tensor(np.arange(4)))
    with pytest.raises(tenferro.DTypeError, match="^rfft: needs a real tensor"):
        tfft.rfft(Z)
    with pytest.raises(TypeError):
        tfft.fft(X, threads=2)


def _central_difference(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_eager_gradients_match_central_differences(rt, norm):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 8))
    w = rng.standard_normal((3, 5))

    def loss(fft, a):
        y = fft.rfft(a, norm=norm)
        p = (abs(y) ** 2 * w).sum()
        back = fft.irfft(y * y, 7, norm=norm)  # nonlinear in the spectrum, cropped
        c = fft.ifft(fft.fft(a, 10, 0, norm) * 1j, axis=1, norm=norm)
        return p + (back ** 2).sum() + (c.real ** 3).sum() + abs(fft.fftshift(fft.hfft(a[:, :5], 6, norm=norm))).sum()

    t = rt.tensor(x)
    t.requires_grad_()
    loss(tfft, t).backward()
    want = _central_difference(lambda a: float(loss(np.fft, a)), x)
    np.testing.assert_allclose(np.asarray(t.grad), want, rtol=1e-6, atol=1e-6)

    # A complex input: the gradient is dL/dRe + i dL/dIm.
    z = x + 1j * rng.standard_normal((3, 8))
    Z = rt.tensor(z)
    Z.requires_grad_()
    (abs(tfft.fftn(Z, axes=(0, 1), norm=norm)) ** 3).sum().backward()

    def f(re, im):
        return float((abs(np.fft.fftn(re + 1j * im, axes=(0, 1), norm=norm)) ** 3).sum())

    g_re = _central_difference(lambda a: f(a, z.imag), z.real)
    g_im = _central_difference(lambda a: f(z.real, a), z.imag)
    np.testing.assert_allclose(np.asarray(Z.grad), g_re + 1j * g_im, rtol=1e-6, atol=1e-6)


def test_jit_traces_the_transforms():
    calls = []

    @tenferro.jit
    def power(x):
        calls.append(1)
        return abs(np.fft.rfft(x, norm="ortho")) ** 2

    rng = np.random.default_rng(6)
    for _ in range(2):
        a = rng.standard_normal((3, 16))
        np.testing.assert_allclose(np.asarray(power(a)), np.abs(np.fft.rfft(a, norm="ortho")) ** 2, rtol=1e-12)
    assert len(calls) == 1
    # Parseval: sum |fft(x)|^2 = n sum x^2, so the gradient is 2 n x.
    x = rng.standard_normal(6)
    (g,) = tenferro.grad(lambda v: (abs(tfft.fft(v)) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g), 12 * x, rtol=1e-12)
