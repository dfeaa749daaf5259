"""tenferro.linalg on eager tensors: numpy's values and return conventions, and
gradients through the decompositions against central differences."""

import numpy as np
import pytest

import tenferro
import tenferro.linalg as tl


@pytest.fixture(scope="module")
def rt():
    return tenferro.Runtime()


def test_values_match_numpy(rt):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((5, 3))
    sq = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    spd = sq @ sq.T
    b = rng.standard_normal((3, 2))
    A, SQ, SPD, B = (rt.tensor(x) for x in (a, sq, spd, b))
    u, s, vh = tl.svd(A, full_matrices=False)
    assert all(isinstance(t, tenferro.EagerTensor) for t in (u, s, vh))
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vh), a, atol=1e-12)
    q, r = tl.qr(A)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    w, v = tl.eigh(SPD)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(spd), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.eigvalsh(SPD)), np.linalg.eigvalsh(spd), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.cholesky(SPD)), np.linalg.cholesky(spd), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.solve(SQ, B)), np.linalg.solve(sq, b), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(tl.inv(SQ)), np.linalg.inv(sq), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(tl.det(SQ)), np.linalg.det(sq), rtol=1e-12)
    sign, logdet = tl.slogdet(SQ)
    np.testing.assert_allclose(np.asarray(sign) * np.exp(np.asarray(logdet)), np.linalg.det(sq), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.pinv(A)), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.norm(A)), np.linalg.norm(a), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.norm(A, "nuc")), np.linalg.norm(a, "nuc"), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tl.vector_norm(A, 3, axis=0)), np.linalg.norm(a, 3, axis=0), rtol=1e-12)
    u2, s2, vh2, dw = tl.truncated_svd(A, max_rank=2)
    full = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(np.asarray(s2), full[:2], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(dw), np.sum(full[2:] ** 2), rtol=1e-10)
    # An eager tensor and an array: the array is a constant on the tensor's runtime.
    np.testing.assert_allclose(tl.solve(SQ, b).numpy(), np.asarray(tl.solve(SQ, rt.tensor(b))), rtol=1e-12)
    with pytest.raises(TypeError):
        tl.inv(SQ, threads=1)


def _fd_check(f, x, rng, h=1e-6):
    (g,) = tenferro.grad(f)(x)
    d = rng.standard_normal(x.shape)
    xv = np.asarray(x)
    rt = x.runtime
    fp = np.asarray(f(rt.tensor(xv + h * d))).item()
    fm = np.asarray(f(rt.tensor(xv - h * d))).item()
    np.testing.assert_allclose(np.sum(np.asarray(g) * d), (fp - fm) / (2 * h), rtol=1e-6, atol=1e-8)


def test_gradients_through_decompositions(rt):
    rng = np.random.default_rng(12)
    a = rt.tensor(rng.standard_normal((4, 3)))
    sq = rt.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3))
    _fd_check(lambda x: tl.svd(x, compute_uv=False).sum(), a, rng)
    _fd_check(lambda x: (lambda usv: ((usv[0] @ usv[2]) ** 2).sum())(tl.svd(x, full_matrices=False)), a, rng)
    _fd_check(lambda x: (tl.qr(x)[1] ** 2).sum(), a, rng)
    _fd_check(lambda x: tl.eigvalsh(x @ x.T).sum() + (tl.eigh(x @ x.T)[1] ** 2).sum(), sq, rng)
    _fd_check(lambda x: tl.cholesky(x @ x.T).sum(), sq, rng)
    _fd_check(lambda x: tl.det(x) + tl.inv(x).sum() + tl.slogdet(x)[1], sq, rng)
    _fd_check(lambda x: tl.norm(x) + tl.norm(x, "nuc") + tl.vector_norm(x, 3, axis=1).sum(), a, rng)
    _fd_check(lambda x: (lambda t: t[1].sum() + t[3])(tl.truncated_svd(x, max_rank=2)), a, rng)
    # solve with a vector right-hand side and with batches that broadcast (numpy's rules):
    # gradients in A and in b.
    v = rt.tensor(rng.standard_normal(3))
    bb = rt.tensor(rng.standard_normal((2, 3, 2)))
    _fd_check(lambda x: (tl.solve(x, v) ** 2).sum() + (tl.solve(x, bb) ** 2).sum(), sq, rng)
    _fd_check(lambda y: (tl.solve(sq, y) ** 2).sum(), v, rng)
    _fd_check(lambda y: (tl.solve(sq, y) ** 2).sum(), bb, rng)
    # lstsq: solution, residuals and singular values (tall: residuals; wide: minimum norm).
    rhs = rt.tensor(rng.standard_normal((4, 2)))
    _fd_check(lambda x: (lambda r: (r[0] ** 2).sum() + r[1].sum() + r[3].sum())(tl.lstsq(x, rhs)), a, rng)
    _fd_check(lambda y: (lambda r: (r[0] ** 2).sum() + r[1].sum())(tl.lstsq(a, y)), rhs, rng)
    # eig's vectors: v * v is free of LAPACK's sign choice but not of its norm and phase.
    w4 = rt.tensor(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)))
    _fd_check(lambda x: (tl.eig(x)[1] ** 2 * w4).real.sum() + (tl.eig(x)[0] * w4[0]).imag.sum(), sq, rng)
    v3 = rt.tensor(rng.standard_normal(3))
    _fd_check(lambda x: (tl.lstsq(x.T, v3)[0] ** 2).sum(), a, rng)


def test_no_grad_and_trace(rt):
    x = rt.tensor(np.array([[2.0, 1.0], [1.0, 3.0]])).requires_grad_()
    with tenferro.no_grad():
        assert not tl.det(x).requires_grad and not tl.svd(x, compute_uv=False).requires_grad
    assert tl.det(x).requires_grad
    prog = tenferro.trace(lambda m: tl.eigvalsh(m @ m.T), np.eye(2))
    m = np.array([[1.0, 2.0], [0.5, -1.0]])
    np.testing.assert_allclose(prog(m), np.linalg.eigvalsh(m @ m.T), rtol=1e-12)


def _expm_oracle(a):
    # exp(A) = V e^W V^-1 by numpy's eigendecomposition (distinct eigenvalues).
    w, v = np.linalg.eig(a)
    return (v * np.exp(w)) @ np.linalg.inv(v)


def test_expm_matches_the_eigendecomposition_and_differentiates(rt):
    rng = np.random.default_rng(21)
    for dtype, scale, tol in ((np.float64, 0.1, 1e-13), (np.float64, 6.0, 1e-11), (np.complex128, 3.0, 1e-11),
                              (np.float32, 2.0, 1e-4)):
        a = scale * rng.standard_normal((2, 5, 5))
        if np.dtype(dtype).kind == "c":
            a = a + 1j * scale * rng.standard_normal((2, 5, 5))
        a = a.astype(dtype)
        want = np.stack([_expm_oracle(m.astype(np.complex128)) for m in a])
        if np.dtype(dtype).kind != "c":
            want = want.real
        for got in (tl.expm(a), tl.expm(rt.tensor(a)).numpy()):  # numpy arrays, eager tensors
            assert got.dtype == dtype and got.shape == a.shape
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    # exp(H) of a Hermitian matrix by eigh; exp(0) = I; integers become float64.
    h = rng.standard_normal((4, 4))
    h = h + h.T
    w, v = np.linalg.eigh(h)
    np.testing.assert_allclose(tl.expm(h), (v * np.exp(w)) @ v.T, rtol=1e-12)
    np.testing.assert_array_equal(tl.expm(np.zeros((3, 3), dtype=np.int64)), np.eye(3))
    # Gradients (real and complex inputs, small and large norms) against central differences.
    for dtype, scale in ((np.float64, 0.2), (np.float64, 7.0), (np.complex128, 2.0)):
        x = scale * rng.standard_normal((3, 3))
        if np.dtype(dtype).kind == "c":
            x = x + 1j * scale * rng.standard_normal((3, 3))
        x = x.astype(dtype)
        wgt = rt.tensor(rng.standard_normal((3, 3)).astype(dtype))

        def f(t):
            return (tl.expm(t) * wgt).real.sum()

        (g,) = tenferro.grad(f)(rt.tensor(x))
        d = rng.standard_normal(x.shape) + (1j * rng.standard_normal(x.shape) if np.iscomplexobj(x) else 0)
        h = 1e-6
        fd = (f(rt.tensor(x + h * d)).item() - f(rt.tensor(x - h * d)).item()) / (2 * h)
        # Re <g, d>: a real loss's gradient in a complex input is dL/dRe + i dL/dIm.
        np.testing.assert_allclose(np.sum(np.conj(g.numpy()) * d).real, fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(tenferro.ShapeError):
        tl.expm(np.zeros((2, 3)))
    # Traced (jit): the kernel's expm as an op, differentiable through its Fréchet derivative.
    gen = np.array([[0.0, -1.0], [1.0, 0.0]])
    f = tenferro.jit(lambda m: tl.expm(m))
    for t in (0.3, 7.0):  # one program, other degrees and scalings per run
        rot = np.asarray(f(t * gen))
        np.testing.assert_allclose(rot, [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], atol=1e-13)
    rng3 = np.random.default_rng(3)
    weights, d = rng3.standard_normal((2, 2)), rng3.standard_normal((2, 2))
    a0 = 0.4 * gen + 0.3 * rng3.standard_normal((2, 2))
    # The gradient program of the trace differentiates the expm op (its Fréchet rule).
    prog = tenferro.trace(lambda m: (tl.expm(m) * weights).sum(), a0)
    assert '"expm"' in prog.text()
    g = prog.grad()(a0)[1]

    def loss(m):
        return float((_expm_oracle(m.astype(np.complex128)).real * weights).sum())

    h = 1e-6
    num = (loss(a0 + h * d) - loss(a0 - h * d)) / (2 * h)
    np.testing.assert_allclose(np.sum(np.asarray(g) * d), num, rtol=1e-6)
