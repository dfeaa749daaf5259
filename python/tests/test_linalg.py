"""tenferro.linalg against numpy.linalg: reconstructions and numpy's own results, batched
and strided inputs, every floating dtype, numpy's return conventions and errors."""

import numpy as np
import pytest

import tenferro
from tenferro import linalg as L

FLOATS = [np.float32, np.float64, np.complex64, np.complex128]


def tol(dtype):
    return 2e-4 if dtype in (np.float32, np.complex64) else 1e-10


def rand(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def hermitian_pd(rng, n, dtype, batch=()):
    a = rand(rng, batch + (n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def close(x, y, dtype, what=""):
    np.testing.assert_allclose(x, y, rtol=tol(dtype), atol=tol(dtype) * 10, err_msg=what)


def test_public_names_are_the_documented_ones():
    # Every name without a leading underscore is a documented function: the module's
    # imports (numpy, the extension) stay private.
    public = sorted(n for n in dir(L) if not n.startswith("_"))
    assert public == sorted(L.__all__)
    assert all(callable(getattr(L, n)) for n in L.__all__)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 6, 4)])
def test_svd_qr_reconstruct_and_match_numpy(dtype, shape):
    rng = np.random.default_rng(1)
    a = rand(rng, shape, dtype)
    view = np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)  # F-ordered matrices, same values
    for x in (a, view):
        u, s, vh = L.svd(x, full_matrices=False)
        close((u * s[..., None, :]) @ vh, x, dtype, "svd thin")
        close(s, np.linalg.svd(x, compute_uv=False), dtype, "singular values")
        uf, sf, vhf = L.svd(x)
        assert uf.shape == np.linalg.svd(x)[0].shape and vhf.shape == np.linalg.svd(x)[2].shape
        close(np.conj(np.swapaxes(uf, -1, -2)) @ uf, np.broadcast_to(np.eye(uf.shape[-1]), uf.shape), dtype, "U unitary")
        close(L.svd(x, compute_uv=False), s, dtype)
        q, r = L.qr(x)
        close(q @ r, x, dtype, "qr")
        assert np.allclose(np.tril(r, -1), 0)
        assert L.qr(x, mode="r").shape == np.linalg.qr(x, mode="r").shape
        qc, rc = L.qr(x, mode="complete")
        close(qc @ rc, x, dtype, "qr complete")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(96, 80), (80, 96), (300, 70), (70, 300), (2, 72, 72)])
def test_large_svd_and_eigh_match_numpy(dtype, shape):
    # Items from 64 up take the staged route (the reflectors applied on the engine's
    # GEMM; a QR first for 300 x 70, the SVD of A^H for 70 x 300): numpy's LAPACK gives
    # the values.
    rng = np.random.default_rng(7)
    a = rand(rng, shape, dtype)
    scale = max(shape[-2:])
    for full in (False, True):
        u, s, vh = L.svd(a, full_matrices=full)
        k = min(shape[-2:])
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=tol(dtype) * scale,
                                   atol=tol(dtype) * scale)
        us = u[..., :, :k] * s[..., None, :]
        np.testing.assert_allclose(us @ vh[..., :k, :], a, atol=tol(dtype) * scale)
        eye_u = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
        np.testing.assert_allclose(np.conj(np.swapaxes(u, -1, -2)) @ u, eye_u, atol=tol(dtype) * scale)
    n = shape[-1]
    h = hermitian_pd(rng, n, dtype, shape[:-2])
    for uplo in ("L", "U"):
        w, v = L.eigh(h, UPLO=uplo)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(h), rtol=tol(dtype) * scale * 10)
        np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=tol(dtype) * scale * 10)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eigh_eig_cholesky(dtype):
    rng = np.random.default_rng(2)
    h = hermitian_pd(rng, 6, dtype, (3,))
    w, v = L.eigh(h)
    close(h @ v, v * w[..., None, :], dtype, "eigh")
    close(w, np.linalg.eigvalsh(h), dtype, "eigenvalues")
    close(L.eigvalsh(h, UPLO="U"), w, dtype)
    lo = L.cholesky(h)
    close(lo @ np.conj(np.swapaxes(lo, -1, -2)), h, dtype, "cholesky")
    close(lo, np.linalg.cholesky(h), dtype)
    up = L.cholesky(h, upper=True)
    close(np.conj(np.swapaxes(up, -1, -2)) @ up, h, dtype, "cholesky upper")
    g = rand(rng, (2, 5, 5), dtype)
    ew, ev = L.eig(g)
    assert np.iscomplexobj(ew) and np.iscomplexobj(ev)
    close(g @ ev, ev * ew[..., None, :], dtype, "eig")
    close(np.sort_complex(L.eigvals(g)[0]), np.sort_complex(np.linalg.eigvals(g)[0]), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_solvers_determinants_and_norms(dtype):
    rng = np.random.default_rng(3)
    a = rand(rng, (4, 5, 5), dtype) + 5 * np.eye(5, dtype=dtype)
    b = rand(rng, (4, 5, 2), dtype)
    close(L.solve(a, b), np.linalg.solve(a, b), dtype, "solve")
    vec = rand(rng, (5,), dtype)
    close(L.solve(a[0], vec), np.linalg.solve(a[0], vec), dtype, "solve vector")
    close(L.inv(a), np.linalg.inv(a), dtype, "inv")
    close(L.det(a), np.linalg.det(a), dtype, "det")
    sign, logdet = L.slogdet(a)
    nsign, nlog = np.linalg.slogdet(a)
    close(sign, nsign, dtype)
    close(logdet, nlog, dtype)
    m = rand(rng, (6, 4), dtype)
    close(L.pinv(m), np.linalg.pinv(m), dtype, "pinv")
    rhs = rand(rng, (6, 2), dtype)
    x, res, rank, s = L.lstsq(m, rhs)
    nx, nres, nrank, ns = np.linalg.lstsq(m, rhs, rcond=None)
    close(x, nx, dtype, "lstsq")
    close(res, nres, dtype)
    assert rank == nrank
    close(s, ns, dtype)
    for ord_ in (None, "fro", "nuc", 2, 1, np.inf):
        close(L.norm(m, ord_), np.linalg.norm(m, ord_), dtype, f"norm {ord_}")
    for ord_ in (None, 1, 2, 3, np.inf, -np.inf, 0):
        close(L.norm(m, ord_, axis=1), np.linalg.norm(m, ord_, axis=1), dtype, f"vector norm {ord_}")
    close(L.norm(a, axis=(1, 2)), np.linalg.norm(a, axis=(1, 2)), dtype)
    close(L.norm(a, axis=(0, 2), keepdims=True), np.linalg.norm(a, axis=(0, 2), keepdims=True), dtype)


def test_truncated_svd_discards_what_it_reports():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((60, 8)) @ rng.standard_normal((8, 50)) + 1e-3 * rng.standard_normal((60, 50))
    u, s, vh, dw = L.truncated_svd(a, max_rank=8, method="exact")
    assert u.shape == (60, 8) and s.shape == (8,) and vh.shape == (8, 50)
    full = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s, full[:8], rtol=1e-10)
    np.testing.assert_allclose(dw, np.sum(full[8:] ** 2), rtol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(a - (u * s) @ vh) ** 2, dw, rtol=1e-8)


@pytest.mark.parametrize("n", [3, 64])
def test_non_finite_inputs_are_value_errors_not_lapack_reports(n):
    # LAPACK's SVD, eig and least-squares drivers report NaN input as an illegal argument
    # through xerbla, which numpy (loaded here) turns into a Python error raised from
    # inside the call; tenferro rejects such input before LAPACK sees it.
    a = np.eye(n) + 0.1
    a[1, 2] = np.nan
    for call in (L.svd, L.pinv, L.eig, L.eigvals, lambda x: L.lstsq(x, np.ones(n)),
                 lambda x: L.lstsq(np.eye(n), np.where(np.isnan(x), np.inf, x))):
        with pytest.raises(tenferro.InvalidArgumentError, match="NaN or an infinity"):
            call(a)
    # eigh reads one triangle (numpy's UPLO): (1, 2) is in the upper one.
    for call in (lambda x: L.eigh(x, UPLO="U"), lambda x: L.eigvalsh(x, UPLO="U")):
        with pytest.raises(tenferro.InvalidArgumentError, match="NaN or an infinity"):
            call(a)
    np.testing.assert_allclose(L.eigvalsh(a), np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    # Functions computing through an SVD name themselves, numpy arrays and eager tensors alike.
    rt = tenferro.Runtime()
    for x in (a, rt.tensor(a)):
        for name, call in (("matrix_norm", lambda y: L.matrix_norm(y, 2)), ("norm", lambda y: L.norm(y, "nuc")),
                           ("matrix_rank", L.matrix_rank), ("cond", L.cond)):
            with pytest.raises(tenferro.InvalidArgumentError, match=f"^{name}: A holds a NaN or an infinity") as e:
                call(x)
            assert e.value.op == name


@pytest.mark.parametrize("n", [4, 16, 100])
@pytest.mark.parametrize("e", [1021, -1060])
def test_extreme_magnitudes_match_the_scaled_answer(n, e):
    # Entries near the overflow threshold or subnormal: the answers of the unscaled
    # matrix times the power of two (exact scaling), as numpy's LAPACK drivers give.
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    h = a + a.T
    tol = 1e-12 if e > 0 else 1e-3
    for got, want in ((L.svd(np.ldexp(a, e))[1], np.linalg.svd(a)[1]),
                      (L.eigvalsh(np.ldexp(h, e)), np.linalg.eigvalsh(h)),
                      (L.eigh(np.ldexp(h, e))[0], np.linalg.eigvalsh(h)),
                      (np.abs(L.qr(np.ldexp(a, e))[1]), np.abs(np.linalg.qr(a)[1]))):
        with np.errstate(over="ignore"):
            want = np.ldexp(want, e)  # inf past the largest double, as LAPACK's are
        fin = np.isfinite(want)
        assert np.all(np.isinf(np.asarray(got)[~fin]))
        scale = np.max(np.abs(want[fin]))
        np.testing.assert_allclose(np.asarray(got)[fin], want[fin], rtol=0,
                                   atol=tol * scale + 2 * n * np.finfo(float).smallest_subnormal)
    sign, logabs = L.slogdet(np.ldexp(a, e))
    want_sign, want_logabs = np.linalg.slogdet(a)
    assert sign == want_sign
    np.testing.assert_allclose(logabs, want_logabs + n * e * np.log(2), rtol=1e-12 if e > 0 else 1e-6)
    assert not np.isnan(L.pinv(np.ldexp(a, e))).any()
    s = L.truncated_svd(np.ldexp(a, e), max_rank=3)[1]
    with np.errstate(over="ignore"):
        want = np.ldexp(L.truncated_svd(a, max_rank=3)[1], e)
    np.testing.assert_allclose(s, want, rtol=1e-12 if e > 0 else 1e-3)


def test_integer_input_and_errors():
    i = np.array([[2, 1], [1, 3]], dtype=np.int64)
    np.testing.assert_allclose(L.inv(i), np.linalg.inv(i))
    assert L.det(i).dtype == np.float64
    with pytest.raises(tenferro.LinAlgError):
        L.inv(np.zeros((3, 3)))
    with pytest.raises(tenferro.LinAlgError):
        L.cholesky(-np.eye(3))
    with pytest.raises(tenferro.LinAlgError):
        L.svd(np.ones(3))  # one-dimensional
    with pytest.raises(ValueError):
        L.qr(np.ones((3, 3)), mode="economic")
    with pytest.raises(TypeError):
        L.inv(np.eye(2, dtype=np.float16))
    with pytest.raises(tenferro.ShapeError):
        L.solve(np.eye(3), np.ones(4))
    ro = np.eye(3)
    ro.setflags(write=False)
    np.testing.assert_allclose(L.inv(ro), np.eye(3))  # read-only input is only read


def test_norm_axis_and_engine_arguments_are_checked():
    a = np.eye(3)
    with pytest.raises(ValueError, match="pair of ints"):
        L.norm(a, axis=(0, 1, 2))
    with pytest.raises(tenferro.InvalidArgumentError, match="engine= or threads=, not both"):
        L.svd(a, threads=1, engine=tenferro.default_engine())
    np.testing.assert_allclose(L.norm(a, axis=(0, 1)), np.linalg.norm(a, axis=(0, 1)))


def test_matrix_norms_take_every_numpy_ord():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 5))
    for ord in ("fro", "nuc", 2, 1, np.inf, -2, -1, -np.inf):
        np.testing.assert_allclose(L.matrix_norm(a, ord=ord), np.linalg.norm(a, ord=ord, axis=(-2, -1)),
                                   rtol=1e-12, err_msg=str(ord))
        np.testing.assert_allclose(L.norm(a[0], ord=ord), np.linalg.norm(a[0], ord=ord), rtol=1e-12, err_msg=str(ord))
    m = np.array([[np.nan, 1.0], [1.0, 1.0]])
    for ord in ("fro", 1, np.inf, -1, -np.inf):
        assert np.isnan(L.matrix_norm(m, ord=ord)), ord
    for ord in (2, 1, 3, 0.5, -1, -2, np.inf, -np.inf):
        np.testing.assert_allclose(L.vector_norm(np.array([3.0, -4.0, 0.5]), ord=ord),
                                   np.linalg.norm(np.array([3.0, -4.0, 0.5]), ord=ord), rtol=1e-12, err_msg=str(ord))
        assert np.isnan(L.vector_norm(np.array([1.0, np.nan]), ord=ord)), ord


def test_matrix_rank_cond_matrix_power_multi_dot_match_numpy():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((5, 5))
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    stack = rng.standard_normal((3, 4, 4))
    for x in (a, low, stack, np.zeros((3, 3)), np.eye(4)):
        np.testing.assert_array_equal(L.matrix_rank(x), np.linalg.matrix_rank(x))
    assert L.matrix_rank(np.zeros(3)) == 0 and L.matrix_rank(np.ones(3)) == 1
    assert L.matrix_rank(low, tol=1e-300) == np.linalg.matrix_rank(low, tol=1e-300)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(L.cond(a, p), np.linalg.cond(a, p), rtol=1e-10, err_msg=str(p))
        np.testing.assert_allclose(L.cond(stack, p), np.linalg.cond(stack, p), rtol=1e-10, err_msg=str(p))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert L.cond(singular, 1) == np.inf
    for p in (None, 2, -2):  # 0 / 0 singular values: infinite, as in numpy
        assert L.cond(np.zeros((2, 2)), p) == np.linalg.cond(np.zeros((2, 2)), p) == np.inf
    with pytest.raises(tenferro.LinAlgError):
        L.cond(low, 1)  # norm ords other than 2 need square matrices
    # Empty matrices: undefined, as in numpy (an empty batch of matrices is not).
    for empty in (np.zeros((0, 0)), np.zeros((3, 0)), np.zeros((2, 0, 0))):
        for p in (None, 2, "fro", 1):
            with pytest.raises(tenferro.LinAlgError, match="not defined on empty arrays"):
                L.cond(empty, p)
            with pytest.raises(np.linalg.LinAlgError):
                np.linalg.cond(empty, p)
        with pytest.raises(tenferro.LinAlgError, match="not defined on empty arrays"):
            L.cond(tenferro.Runtime().tensor(empty))
    assert L.cond(np.zeros((0, 2, 2))).shape == np.linalg.cond(np.zeros((0, 2, 2))).shape == (0,)
    # The result's dtype is the real dtype of the input's precision (numpy's, but for its
    # complex dtype from norm ords of complex input, whose values are real all the same).
    for dt in (np.float32, np.complex64, np.float64, np.complex128):
        for m in (a, a[None]):
            for p in (None, 2, -2, 1, "fro"):
                got, want = L.cond(m.astype(dt), p), np.linalg.cond(m.astype(dt), p)
                assert np.asarray(got).dtype == np.finfo(dt).dtype, (dt, m.shape, p)
                np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=str((dt, p)))
    for n in (0, 1, 2, 3, 7, -1, -3):
        np.testing.assert_allclose(L.matrix_power(a, n), np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-9,
                                   err_msg=str(n))
        np.testing.assert_allclose(L.matrix_power(stack, n), np.linalg.matrix_power(stack, n), rtol=1e-9, atol=1e-9)
    ints = np.array([[1, 1], [1, 0]])
    np.testing.assert_array_equal(L.matrix_power(ints, 10), np.linalg.matrix_power(ints, 10))  # Fibonacci, exact
    assert L.matrix_power(ints, 10).dtype == ints.dtype
    with pytest.raises(TypeError):
        L.matrix_power(a, 1.5)
    chain = [rng.standard_normal(s) for s in ((10, 30), (30, 5), (5, 60), (60, 8))]
    np.testing.assert_allclose(L.multi_dot(chain), np.linalg.multi_dot(chain), rtol=1e-10)
    v, w = rng.standard_normal(10), rng.standard_normal(8)
    for arrays in ([v] + chain[:1] + chain[1:], chain + [w], [v] + chain + [w], [v, v]):
        np.testing.assert_allclose(L.multi_dot(arrays), np.linalg.multi_dot(arrays), rtol=1e-10)
    with pytest.raises(ValueError):
        L.multi_dot([a])
    with pytest.raises(tenferro.LinAlgError):
        L.multi_dot([a, stack])


def test_tensorinv_and_tensorsolve_match_numpy():
    rng = np.random.default_rng(17)
    a = rng.standard_normal((6, 4, 2, 3, 4))
    np.testing.assert_allclose(L.tensorinv(a, ind=2), np.linalg.tensorinv(a, ind=2), rtol=1e-9, atol=1e-10)
    b = rng.standard_normal((24, 2, 3, 4))
    np.testing.assert_allclose(L.tensorinv(b, ind=1), np.linalg.tensorinv(b, ind=1), rtol=1e-9, atol=1e-10)
    big, rhs = rng.standard_normal((2, 3, 4, 6, 4)), rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(L.tensorsolve(big, rhs), np.linalg.tensorsolve(big, rhs), rtol=1e-9, atol=1e-10)
    moved, rhs2 = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(L.tensorsolve(moved, rhs2, axes=(0,)), np.linalg.tensorsolve(moved, rhs2, axes=(0,)),
                               rtol=1e-9, atol=1e-10)
    with pytest.raises(tenferro.LinAlgError):
        L.tensorinv(np.ones((2, 3)), ind=1)
    with pytest.raises(tenferro.LinAlgError):
        L.tensorsolve(rng.standard_normal((2, 3, 5)), rhs2)
    # Eager tensors: np.linalg dispatches, the results record for AD.
    rt = tenferro.Runtime()
    got = np.linalg.tensorsolve(rt.tensor(big), rt.tensor(rhs))
    assert isinstance(got, tenferro.EagerTensor)
    np.testing.assert_allclose(got.numpy(), np.linalg.tensorsolve(big, rhs), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.linalg.tensorinv(rt.tensor(a), ind=2).numpy(), np.linalg.tensorinv(a, ind=2),
                               rtol=1e-9, atol=1e-10)
    d, h = rng.standard_normal(moved.shape), 1e-6
    (g,) = tenferro.grad(lambda t: (L.tensorsolve(t, rhs2, axes=(0,)) ** 2).sum())(rt.tensor(moved))
    f = lambda m: (np.linalg.tensorsolve(m, rhs2, axes=(0,)) ** 2).sum()
    np.testing.assert_allclose(np.sum(g.numpy() * d), (f(moved + h * d) - f(moved - h * d)) / (2 * h), rtol=1e-6)


def test_matrix_rank_and_cond_take_eager_tensors():
    rt = tenferro.Runtime()
    rng = np.random.default_rng(13)
    a = rng.standard_normal((5, 5))
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    stack = rng.standard_normal((3, 4, 4))
    for x in (a, low, stack, np.zeros((3, 3)), np.eye(4), np.zeros(3), np.ones(3)):
        r = L.matrix_rank(rt.tensor(x))
        assert isinstance(r, tenferro.EagerTensor) and r.dtype == np.int64
        np.testing.assert_array_equal(r.numpy(), np.linalg.matrix_rank(x))
    np.testing.assert_array_equal(np.linalg.matrix_rank(rt.tensor(low), tol=1e-300).numpy(),
                                  np.linalg.matrix_rank(low, tol=1e-300))
    np.testing.assert_array_equal(L.matrix_rank(rt.tensor(np.zeros((2, 0, 3)))).numpy(), [0, 0])
    singular = np.stack([a[:2, :2], np.array([[1.0, 2.0], [2.0, 4.0]])])
    for x in (a, stack, singular, np.zeros((2, 2))):
        for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
            got = L.cond(rt.tensor(x), p)
            assert isinstance(got, tenferro.EagerTensor)
            np.testing.assert_allclose(got.numpy(), L.cond(x, p), rtol=1e-10, err_msg=f"{x.shape} {p}")
            if x is singular:  # numpy's own result for the singular item is rounding-dependent
                continue
            try:
                want = np.linalg.cond(x, p)
            except np.linalg.LinAlgError:  # numpy's SVD of inv(zeros), all infinite
                want = np.inf
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, err_msg=f"{x.shape} {p}")
    assert np.isinf(L.cond(rt.tensor(singular), 1).numpy()[1])
    with pytest.raises(tenferro.LinAlgError):
        L.cond(rt.tensor(low), 1)
    # cond records for AD: directional derivative against central differences.
    d, h = rng.standard_normal(a.shape), 1e-6
    for p in (None, "fro", 1):
        (g,) = tenferro.grad(lambda t: L.cond(t, p))(rt.tensor(a))
        fd = (np.linalg.cond(a + h * d, p) - np.linalg.cond(a - h * d, p)) / (2 * h)
        np.testing.assert_allclose(np.sum(g.numpy() * d), fd, rtol=1e-6, err_msg=str(p))


def test_matrix_power_and_multi_dot_take_eager_tensors():
    rt = tenferro.Runtime()
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 3))
    x = rt.tensor(a)
    for n in (0, 1, 2, 5, -1, -3):
        got = L.matrix_power(x, n)
        assert isinstance(got, tenferro.EagerTensor)
        np.testing.assert_allclose(got.numpy(), np.linalg.matrix_power(a, n), rtol=1e-10, atol=1e-12)
    b, c, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(3)
    np.testing.assert_allclose(L.multi_dot([x, rt.tensor(b), rt.tensor(c)]).numpy(), a @ b @ c, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.multi_dot([rt.tensor(v), x, rt.tensor(b)]).numpy(), v @ a @ b, rtol=1e-12)
    xg = rt.tensor(a).requires_grad_()
    np.sum(np.linalg.matrix_power(xg, 3)).backward()
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = 1e-6
        fd[i] = (np.linalg.matrix_power(a + e, 3).sum() - np.linalg.matrix_power(a - e, 3).sum()) / 2e-6
    np.testing.assert_allclose(xg.grad.numpy(), fd, rtol=1e-6)
    # numpy arrays next to eager tensors are constants on their runtime (as for the
    # operators and einsum), gradients flowing to the eager operands only.
    np.testing.assert_allclose(L.multi_dot([x, b]).numpy(), a @ b, rtol=1e-12)
    (g,) = tenferro.grad(lambda t: L.solve(t, b).sum())(x)
    np.testing.assert_allclose(np.asarray(g), -np.linalg.inv(a).T @ np.ones_like(b) @ np.linalg.solve(a, b).T,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(L.solve(x, b.astype(np.int64)).numpy(), np.linalg.solve(a, b.astype(np.int64)), rtol=1e-12)
    x_l, _, _, _ = L.lstsq(x, b)
    np.testing.assert_allclose(x_l.numpy(), np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-9)
