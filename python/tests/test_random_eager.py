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
    choices = ["exp", "mul", "clip", "floordiv", "where"]
    if r >= 1:
        choices += ["sum", "slice", "take", "flip", "var", "max", "ravel", "cat", "stack", "einsum"]
    if r >= 2:
        choices += ["T", "transpose", "diagonal", "swapaxes", "trace", "tril", "matmul"]
    op = rnd.choice(choices)
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


def test_random_compositions_match_numpy(rt):
    rng = np.random.default_rng(11)
    for trial in range(400):
        a = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(2, 4))))
        f = _composition(trial, 4)
        with _quiet():
            try:
                want = np.asarray(f(a.copy()))
            except Exception:
                want = None
        try:
            got = f(rt.tensor(a)).numpy()
        except Exception:
            got = None
        assert (want is None) == (got is None), trial
        if want is not None:
            assert got.shape == want.shape, trial
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=str(trial))


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
