"""Random compositions of eager operations against numpy: values, shapes and whether an
error is raised agree; gradients agree with central differences."""

import random

import numpy as np
import pytest

import tenferro


@pytest.fixture(scope="module")
def rt():
    return tenferro.Runtime()


def _step(x, rnd):
    # One random operation with numpy's semantics, written so that the same code runs on
    # numpy arrays and on eager tensors (module functions dispatch through numpy's
    # protocols to tenferro for eager tensors).
    r = x.ndim
    choices = ["exp", "mul", "clip", "floordiv", "where", "arctan", "logaddexp"]
    if r >= 1:
        choices += ["sum", "slice", "take", "flip", "var", "max", "ravel", "flatten", "cat", "stack", "einsum", "sort",
                    "median"]
    if r >= 2:
        choices += ["T", "transpose", "diagonal", "swapaxes", "trace", "tril", "matmul", "rot90"]
    op = rnd.choice(choices)
    if op == "arctan":
        return np.arctan(x * 2.0)
    if op == "logaddexp":
        return np.logaddexp(x, x * 0.5 - 1.0)
    if op == "sort":
        return np.sort(x, axis=rnd.randrange(-r, r))
    if op == "median":
        return np.median(x, axis=rnd.randrange(r), keepdims=rnd.random() < 0.5)
    if op == "rot90":
        a1, a2 = rnd.sample(range(r), 2)
        return np.rot90(x, rnd.randint(-1, 2), axes=(a1, a2))
    if op == "T":
        return x.T
    if op == "transpose":
        p = list(range(r))
        rnd.shuffle(p)
        return x.transpose([q - r if rnd.random() < 0.5 else q for q in p])
    if op == "diagonal":
        a1, a2 = rnd.sample(range(r), 2)
        return x.diagonal(rnd.randint(-2, 2), a1, a2)
    if op == "swapaxes":
        return x.swapaxes(rnd.randrange(r), rnd.randrange(r))
    if op == "trace":
        a1, a2 = rnd.sample(range(r), 2)
        return x.trace(rnd.randint(-1, 1), a1, a2)
    if op == "tril":
        return np.tril(x, rnd.randint(-1, 1))
    if op == "matmul":
        return x @ x.swapaxes(-1, -2)
    if op == "sum":
        axes = tuple(sorted(rnd.sample(range(r), rnd.randint(1, r))))
        return x.sum(axis=axes, keepdims=rnd.random() < 0.5)
    if op == "slice":
        return x[tuple(slice(rnd.choice([None, 0, 1]), None, rnd.choice([1, 2, -1, -2])) for _ in range(r))]
    if op == "take":
        axis = rnd.randrange(r)
        n = x.shape[axis]
        return x if n == 0 else x.take([rnd.randrange(-n, n) for _ in range(rnd.randint(1, 3))], axis=axis)
    if op == "flip":
        return x[..., ::-1]
    if op == "var":
        return x.var(axis=rnd.randrange(r))
    if op == "max":
        return x.max(axis=rnd.randrange(r))
    if op == "ravel":
        return x.ravel()
    if op == "flatten":
        return x.flatten()
    if op == "cat":
        return np.concatenate([x, x * 2.0], axis=rnd.randrange(r))
    if op == "stack":
        return np.stack([x, x + 1.0], axis=rnd.randint(0, r))
    if op == "einsum":
        letters = "abcd"[:r]
        return np.einsum(letters + "->" + letters[::-1][: max(1, r - 1)], x)
    if op == "exp":
        return np.exp(x * 0.1)
    if op == "mul":
        return x * x + 1.0
    if op == "clip":
        return x.clip(-0.5, 0.5)
    if op == "floordiv":
        return x // 0.7
    return np.where(x > 0, x, x * 0.5)


def _composition(seed, steps):
    def f(x):
        rnd = random.Random(seed)
        for _ in range(rnd.randint(1, steps)):
            if x.ndim == 0:
                break
            x = _step(x, rnd)
        return x * 1.0
    return f


def _agreeing_compositions(seed, first, trials, run):
    # Random compositions run by `run(f, a)` (a numpy array back) against numpy: whether an
    # error is raised, shapes and values agree; yields (trial, f, a, numpy's result) for
    # the compositions numpy computes.
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        a = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(2, 4))))
        f = _composition(first + trial, 4)
        with _quiet():
            try:
                want = np.asarray(f(a.copy()))
            except Exception:
                want = None
        try:
            got = run(f, a)
        except Exception:
            got = None
        assert (want is None) == (got is None), trial
        if want is not None:
            assert got.shape == want.shape, trial
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=str(trial))
            yield trial, f, a, want


def test_random_compositions_match_numpy(rt):
    for _ in _agreeing_compositions(11, 0, 400, lambda f, a: f(rt.tensor(a)).numpy()):
        pass


def test_random_compositions_traced_match_numpy():
    # The same compositions through tenferro.jit (traced once, run as a compiled program),
    # and the gradient program of their weighted sum against the eager tape's gradient.
    rng = np.random.default_rng(22)
    compared = 0
    for trial, f, a, want in _agreeing_compositions(21, 5000, 300, lambda f, a: tenferro.jit(f)(a)):
        if trial % 3 == 0 and np.all(np.isfinite(want)):
            w = rng.standard_normal(want.shape)
            loss = lambda x: (f(x) * w).sum()
            (traced,) = tenferro.jit(tenferro.grad(loss))(a)
            (eager,) = tenferro.grad(loss)(a)
            np.testing.assert_allclose(traced, eager.numpy(), rtol=1e-10, atol=1e-12, err_msg=str(trial))
        compared += 1
    assert compared > 200


def test_random_compositions_differentiate_as_central_differences(rt):
    rng = np.random.default_rng(12)
    for trial in range(150):
        a = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(2, 4))))
        f = _composition(1000 + trial, 3)
        with _quiet():
            try:
                out = np.asarray(f(a.copy()))
            except Exception:
                continue
            w = rng.standard_normal(out.shape)
            loss = lambda b: float(np.sum(np.asarray(f(b)) * w))
            if not np.isfinite(loss(a)):
                continue  # e.g. the variance of an empty axis: nothing to compare
            (g,) = tenferro.grad(lambda x: (f(x) * rt.tensor(np.asarray(w, dtype=float))).sum())(rt.tensor(a))
            fd = np.zeros_like(a)
            for idx in np.ndindex(a.shape):
                e = np.zeros_like(a)
                e[idx] = 1e-6
                fd[idx] = (loss(a + e) - loss(a - e)) / 2e-6
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-4, atol=1e-5, err_msg=str(trial))


def _complex_step(x, rnd):
    # Operations on complex (and, after real/abs, real) tensors, linear algebra included.
    r = x.ndim
    complex_dtype = np.iscomplexobj(np.zeros(1, dtype=x.dtype))
    ops = ["mul", "conj", "abs2", "exp", "sum", "matmul", "slice", "einsum", "sub", "real", "imag", "pow", "take",
           "cat"]
    if r >= 2 and x.shape[-1] == x.shape[-2]:
        ops += ["det", "inv", "svdvals", "norm", "eigvalsh", "solve", "qr", "cholesky"]
    op = rnd.choice(ops)
    n = x.shape[-1]
    eye = (np.eye(n) * 4.0).astype(x.dtype) if r >= 2 else None
    if op == "mul":
        return x * (0.5 - 0.3j) if complex_dtype else x * 0.7
    if op == "conj":
        return x.conj()
    if op == "abs2":
        return (x * x.conj()).real
    if op == "exp":
        return np.exp(x * 0.2)
    if op == "sum":
        return x.sum(axis=rnd.randrange(r))
    if op == "matmul":
        return x @ x.swapaxes(-1, -2) if r >= 2 else x * x
    if op == "slice":
        return x[..., ::-1]
    if op == "einsum":
        return np.einsum("...i,...i->...", x, x.conj())
    if op == "sub":
        return 2.0 - x
    if op == "real":
        return x.real
    if op == "imag":
        return x.imag
    if op == "pow":
        return x ** 2
    if op == "take":
        return x.take([0, -1], axis=-1) if n else x
    if op == "cat":
        return np.concatenate([x, 2.0 * x], axis=-1)
    if op == "det":
        return np.linalg.det(x + eye)
    if op == "inv":
        return np.linalg.inv(x + eye)
    if op == "svdvals":
        return np.linalg.svd(x + eye, compute_uv=False)
    if op == "norm":
        return np.linalg.norm(x, axis=(-2, -1))
    if op == "eigvalsh":
        return np.linalg.eigvalsh(x + x.conj().swapaxes(-1, -2))
    if op == "solve":
        return np.linalg.solve(x + eye, x)
    if op == "qr":
        return abs(np.linalg.qr(x + eye)[1])
    return np.linalg.cholesky(x @ x.conj().swapaxes(-1, -2) + eye)


def test_random_complex_compositions_differentiate_as_central_differences(rt):
    # Complex inputs: the gradient is dL/dRe + i dL/dIm (docs/design/0009-ad.md).
    rng = np.random.default_rng(3)
    checked = 0
    for trial in range(100):
        shape = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(2, 4)))
        if rng.random() < 0.6:
            shape = shape[:-1] + (shape[-2],)
        z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

        def f(x, seed=trial):
            rnd = random.Random(seed)
            for _ in range(rnd.randint(1, 3)):
                if x.ndim == 0:
                    break
                x = _complex_step(x, rnd)
            return x

        with _quiet():
            try:
                out = np.asarray(f(z.copy()))
            except Exception:
                continue
            w = rng.standard_normal(out.shape) + (1j * rng.standard_normal(out.shape) if np.iscomplexobj(out) else 0)
            loss = lambda b: float(np.real(np.sum(np.asarray(f(b)) * np.conj(w))))
            if not np.isfinite(loss(z)):
                continue
            wt = rt.tensor(np.asarray(w, dtype=out.dtype))
            if np.iscomplexobj(out):
                (g,) = tenferro.grad(lambda x: (f(x) * wt.conj()).sum().real)(rt.tensor(z))
            else:
                (g,) = tenferro.grad(lambda x: (f(x) * wt).sum())(rt.tensor(z))
            fd = np.zeros_like(z)
            for idx in np.ndindex(z.shape):
                e = np.zeros_like(z)
                e[idx] = 1e-6
                fd[idx] = (loss(z + e) - loss(z - e)) / 2e-6 + 1j * (loss(z + 1j * e) - loss(z - 1j * e)) / 2e-6
        checked += 1
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-4, atol=1e-5, err_msg=str(trial))
    assert checked > 50


class _quiet:
    """numpy's RuntimeWarnings (empty reductions) silenced."""

    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)
        self._e = np.errstate(all="ignore")
        self._e.__enter__()

    def __exit__(self, *exc):
        self._e.__exit__(*exc)
        return self._w.__exit__(*exc)
