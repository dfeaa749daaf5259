"""Program.stablehlo(): traced functions (and their gradient programs) lowered to
StableHLO and evaluated by the numpy StableHLO evaluator of tests/xla (written from the
StableHLO specification), against running the program."""

import os
import sys

import numpy as np
import pytest

import tenferro
import tenferro.fft as tfft
import tenferro.linalg as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "xla"))
import stablehlo_numpy  # noqa: E402


def check(prog, args, rtol=1e-12):
    text = prog.stablehlo()
    assert text.startswith("module @tenferro {") and "func.func public @main(" in text
    got = stablehlo_numpy.evaluate(stablehlo_numpy.parse(text), args)
    want = prog(*args)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
    return text


def test_mlp_with_captured_weights_and_its_gradient():
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((5, 8)), rng.standard_normal((8, 3))  # constants of the program

    def f(x):
        h = (x @ w1).tanh()
        h = tenferro.where(h > 0.0, h, h * 0.01)
        return ((h @ w2) ** 2).sum()

    prog = tenferro.trace(f, np.zeros((4, 5)))
    x = rng.standard_normal((4, 5))
    text = check(prog, [x])
    assert "dense<" in text  # w1, w2 inlined
    check(prog.grad(), [x])
    # Captured tensors as trailing arguments instead.
    args_text = prog.stablehlo(inline_bindings=False)
    m = stablehlo_numpy.parse(args_text)
    types = [t for _, t in m["args"]]
    assert types[0] == "tensor<4x5xf64>" and "tensor<5x8xf64>" in types and "tensor<8x3xf64>" in types


def test_views_einsum_reductions_and_indexing():
    rng = np.random.default_rng(1)

    def f(a, b):
        t = tenferro.einsum("ijk,kl->jil", a, b)
        u = t.reshape(3, 10)[:, 1:8:3]
        v = tenferro.concatenate([u, u.T.reshape(3, 3) * 2.0], axis=1)
        return v.max(axis=0), tenferro.cumsum(tenferro.flip(v, axis=1), axis=1), tenferro.tril(v[:, :3], k=-1)

    prog = tenferro.trace(f, np.zeros((2, 3, 4)), np.zeros((4, 5)))
    check(prog, [rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))])


def test_complex_and_fft():
    rng = np.random.default_rng(2)

    def f(x):
        s = tfft.rfft(x, axis=0, norm="ortho")
        z = s * s.conj()
        return tfft.irfft(z, n=6, axis=0), abs(tfft.fftn(z, axes=(0, 1)))

    prog = tenferro.trace(f, np.zeros((6, 3)))
    check(prog, [rng.standard_normal((6, 3))])
    g = tenferro.trace(lambda x: (abs(tfft.rfft(x, norm="forward")) ** 2).sum(), np.zeros(8))
    check(g.grad(), [rng.standard_normal(8)])


def test_single_precision_and_integers():
    rng = np.random.default_rng(3)
    prog = tenferro.trace(lambda x, k: (x * k.astype(np.float32)).exp().sum(axis=1), np.zeros((3, 4), np.float32),
                          np.zeros((3, 4), np.int32))
    check(prog, [rng.standard_normal((3, 4)).astype(np.float32), rng.integers(-3, 4, (3, 4)).astype(np.int32)],
          rtol=1e-5)


def test_linalg_without_a_stablehlo_form_is_unsupported():
    prog = tenferro.trace(lambda a: tl.svd(a)[1], np.eye(3))
    with pytest.raises(tenferro.UnsupportedError, match="linalg"):
        prog.stablehlo()


def test_jit_lower_gives_the_program_of_a_signature():
    calls = []

    @tenferro.jit
    def f(x, k):
        calls.append(k)
        return (x * x).sum(axis=k)

    x = np.arange(6.0).reshape(2, 3)
    prog = f.lower(x, 1)
    assert len(calls) == 1 and len(f.programs) == 1
    np.testing.assert_allclose(f(x, 1), (x * x).sum(axis=1))
    assert len(calls) == 1  # the lowered program is the one the call runs
    got = stablehlo_numpy.evaluate(stablehlo_numpy.parse(prog.stablehlo()), [x])
    np.testing.assert_allclose(got[0], (x * x).sum(axis=1), rtol=1e-15)
    assert "tensor<2x3xf64>" in prog.stablehlo() and "tensor<2xf64>" in prog.stablehlo()


def test_sorts_quantiles_and_inverse_functions_and_their_gradients():
    # argsort lowers to a stable sort with a NaN-last comparator (the gather of sort and
    # of its gradient as usual); atan2 and the compositions on it as StableHLO's atan2.
    rng = np.random.default_rng(5)

    def f(x, y):
        s = np.sort(x, axis=1)
        return (s * y).sum() + np.median(x, axis=0).sum() + np.arctan2(x, y).sum() + np.arcsin(y * 0.3).sum() \
            + np.logaddexp(x, y).sum()

    prog = tenferro.trace(f, np.zeros((3, 5)), np.zeros((3, 5)))
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    x[1, 2] = x[1, 4]  # a tie
    text = check(prog, [x, y])
    assert '"stablehlo.sort"' in text and '"stablehlo.atan2"' in text
    check(prog.grad(), [x, y])
    order = tenferro.trace(lambda t: t.argsort(axis=0), np.zeros((4, 3)))
    check(order, [np.array([[2.0, np.nan, 1], [1, 1, 1], [np.nan, 0, 1], [-0.0, 0.0, 1]])])
