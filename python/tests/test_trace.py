"""tenferro.trace: a Python function recorded into a Program, run on new inputs against
numpy, differentiated as a program, and refusing host reads of traced values."""

import numpy as np
import pytest

import tenferro


def test_traced_program_matches_numpy_on_new_inputs():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 2))  # a constant of the program

    def f(x, y):
        h = (x @ y).tanh()
        relu = tenferro.where(h > 0.0, h, h * 0.1)  # a bool mask computed from the inputs
        with tenferro.no_grad():
            s = relu.sum(axis=1, keepdims=True)  # still recorded while tracing
        return relu * (s + 1.0) @ w, tenferro.einsum("ij,ij->", x, x)

    def reference(x, y):
        h = np.tanh(x @ y)
        relu = np.where(h > 0, h, 0.1 * h)
        return relu * (relu.sum(axis=1, keepdims=True) + 1.0) @ w, np.einsum("ij,ij->", x, x)

    prog = tenferro.trace(f, np.zeros((3, 5)), np.zeros((5, 4)))
    assert prog.num_inputs == 2 and prog.num_outputs == 2
    assert "dot_general" in prog.text() or "einsum" in prog.text()
    for _ in range(3):
        x, y = rng.standard_normal((3, 5)), rng.standard_normal((5, 4))
        got = prog(x, y)
        want = reference(x, y)
        assert isinstance(got, tuple) and len(got) == 2
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


def test_single_output_and_gradient_program():
    rng = np.random.default_rng(4)
    prog = tenferro.trace(lambda x: (x * x.sin()).sum(), np.zeros(6))
    x = rng.standard_normal(6)
    np.testing.assert_allclose(prog(x), np.sum(x * np.sin(x)), rtol=1e-12)
    value, g = prog.grad()(x)
    np.testing.assert_allclose(value, np.sum(x * np.sin(x)), rtol=1e-12)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-12)


def test_integer_inputs_and_bool_intermediates_are_traced():
    prog = tenferro.trace(lambda x, k: (x * k.astype(np.float64)).sum(), np.zeros(4), np.zeros(4, dtype=np.int64))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    k = np.array([3, -1, 0, 2], dtype=np.int64)
    np.testing.assert_allclose(prog(x, k), np.sum(x * k), rtol=1e-12)


def test_reading_a_traced_value_inside_the_function_raises():
    def reads(x):
        return x * float(np.asarray(x).sum())

    with pytest.raises(TypeError, match="trace"):
        tenferro.trace(reads, np.ones(3))
    with pytest.raises(TypeError, match="trace"):
        tenferro.trace(lambda x: x.detach() * 2.0, np.ones(3))
    with pytest.raises(TypeError):
        tenferro.trace(lambda x: 3.0, np.ones(3))  # not a tensor result
    with pytest.raises(TypeError, match="must return eager tensors"):
        tenferro.trace(lambda x: None, np.ones(3))
    with pytest.raises(TypeError, match="must return eager tensors.*got str"):
        tenferro.jit(lambda x: "text")(np.ones(3))
    with pytest.raises(TypeError, match="must return eager tensors.*got float"):
        tenferro.trace(lambda x: {"a": x, "b": 1.0}, np.ones(3))
    # Tracing ended: reads work again, and an eager tensor's own values stay readable.
    rt = tenferro.Runtime()
    t = rt.tensor(np.arange(3.0))
    assert np.asarray(t * 2.0).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(tenferro.ShapeError):
        tenferro.trace(lambda x: x, np.ones(3))(np.ones(4))  # wrong input shape at run time


def test_jit_traces_once_per_signature():
    calls = []

    @tenferro.jit
    def f(x, y):
        calls.append(1)
        return (x * y).sum(axis=0) + 1.0

    rng = np.random.default_rng(9)
    for _ in range(3):
        a, b = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
        np.testing.assert_allclose(f(a, b), (a * b).sum(axis=0) + 1.0, rtol=1e-12)
    assert len(calls) == 1 and len(f.programs) == 1  # traced once
    c = rng.standard_normal((4, 5))
    np.testing.assert_allclose(f(c, c), (c * c).sum(axis=0) + 1.0, rtol=1e-12)
    assert len(calls) == 2 and len(f.programs) == 2  # a new shape: a new trace
    assert f.__name__ == "f"

    @tenferro.jit(max_programs=1)
    def g(x):
        return x.exp()

    g(np.zeros(2))
    g(np.zeros(3))
    assert len(g.programs) == 1
    np.testing.assert_allclose(g(np.zeros(3)), np.ones(3))


def test_truth_and_number_conversions_follow_numpy():
    rt = tenferro.Runtime()
    one, many = rt.tensor(np.array([2.5])), rt.tensor(np.array([1.0, 0.0]))
    assert bool(one) and float(one) == 2.5 and int(one) == 2
    assert not bool(rt.tensor(np.array([0.0])))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(many)
    with pytest.raises(TypeError):
        float(many)
    # Inside a trace, branching on a traced value is a host read: refused.
    def branches(x):
        return x * 2.0 if (x.sum() > 0.0) else x

    with pytest.raises(TypeError, match="trace"):
        tenferro.trace(branches, np.ones(3))


def test_jit_checks_its_cache_bound():
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="max_programs"):
            tenferro.jit(lambda x: x * 2.0, max_programs=bad)
    f = tenferro.jit(lambda x: x * 2.0, max_programs=1)
    assert np.asarray(f(np.ones(2))).tolist() == [2.0, 2.0]
    assert np.asarray(f(np.ones(3))).tolist() == [2.0, 2.0, 2.0]
    assert len(f.programs) == 1  # the older signature was dropped


def test_results_keep_the_functions_structure():
    """Programs return what the traced function returned: one array, or tuples, lists,
    namedtuples and dicts of them, nested."""
    import collections
    Pair = collections.namedtuple("Pair", "first second")
    x = np.arange(4.0)

    def f(t):
        return {"sum": t.sum(), "parts": [t * 2.0, (t + 1.0, Pair(t.exp(), -t))]}

    out = tenferro.trace(f, x)(x)
    assert set(out) == {"sum", "parts"} and isinstance(out["parts"], list)
    np.testing.assert_allclose(out["sum"], x.sum())
    np.testing.assert_allclose(out["parts"][0], x * 2)
    assert isinstance(out["parts"][1], tuple) and isinstance(out["parts"][1][1], Pair)
    np.testing.assert_allclose(out["parts"][1][1].first, np.exp(x))
    np.testing.assert_allclose(out["parts"][1][1].second, -x)
    single = tenferro.trace(lambda t: t * 3.0, x)(x)
    assert isinstance(single, np.ndarray)
    np.testing.assert_allclose(single, 3 * x)


def test_jit_static_python_ints_keywords_and_recorded_inputs():
    calls = []

    @tenferro.jit
    def f(x, axis, scale=1.0, *, shift=None, keep=False):
        calls.append(axis)
        r = x.sum(axis=axis, keepdims=keep) * scale
        return r if shift is None else r + shift

    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(a, 0), a.sum(axis=0))
    np.testing.assert_allclose(f(a, 1, 2.0), a.sum(axis=1) * 2)  # an int is static: a new program
    np.testing.assert_allclose(f(a, 1, 3.0), a.sum(axis=1) * 3)  # a float is an input: reused
    assert calls == [0, 1] and len(f.programs) == 2
    np.testing.assert_allclose(f(a, 1, 3.0, shift=np.ones(2)), a.sum(axis=1) * 3 + 1)
    np.testing.assert_allclose(f(a, 1, keep=True), a.sum(axis=1, keepdims=True))
    assert len(calls) == 4  # keywords and static flags are part of the signature
    np.testing.assert_allclose(f(a, 1, 5.0, shift=np.zeros(2)), a.sum(axis=1) * 5)
    assert len(calls) == 4
    # Inside grad (its inputs require grad), the function runs on them and records.
    g = tenferro.jit(lambda x: (x * x).sum())
    (gx,) = tenferro.grad(g)(a)
    np.testing.assert_allclose(gx.numpy(), 2 * a)
    rt = tenferro.Runtime()
    t = rt.tensor(a).requires_grad_()
    loss = g(t)
    assert isinstance(loss, tenferro.EagerTensor)
    loss.backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * a)


def test_value_and_grad_matches_the_function_and_its_gradient():
    a = np.array([[1.0, -2.0], [0.5, 3.0]])

    def f(x, y):
        return (x * x * y).sum()

    b = np.array([[2.0, 1.0], [-1.0, 0.5]])
    value, (gx, gy) = tenferro.value_and_grad(f)(a, b)
    assert not value.requires_grad
    np.testing.assert_allclose(value.item(), (a * a * b).sum())
    np.testing.assert_allclose(gx.numpy(), 2 * a * b)
    np.testing.assert_allclose(gy.numpy(), a * a)
    # Nested: the value records as well, so its gradient is f's (second call inside).
    (gg,) = tenferro.grad(lambda x: tenferro.value_and_grad(lambda u: (u * u * u).sum())(x)[0])(a)
    np.testing.assert_allclose(gg.numpy(), 3 * a * a)
    (h,) = tenferro.grad(lambda x: tenferro.value_and_grad(lambda u: (u * u * u).sum())(x)[1][0].sum())(a)
    np.testing.assert_allclose(h.numpy(), 6 * a)


def test_traced_einsum_keeps_the_path_it_was_given():
    """Note [Recorded einsum paths]: an einsum traced with an explicit path (or TreeSA's,
    as the tree it found) compiles into the program with that path; algorithms stay
    names the program plans with."""
    rng = np.random.default_rng(12)
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))

    def f(path):
        return lambda x, y, z: tenferro.einsum("ij,jk,kl->il", x, y, z, optimize=path)

    p = tenferro.trace(f([(0, 1), (0, 1)]), a, b, c)
    assert '"ij,jk,kl->il;explicit:0-1,2-3"' in p.text()
    np.testing.assert_allclose(p(a, b, c), a @ b @ c, rtol=1e-12)
    p = tenferro.trace(f("treesa"), a, b, c)
    assert "ij,jk,kl->il;explicit:" in p.text()
    np.testing.assert_allclose(p(a, b, c), a @ b @ c, rtol=1e-12)
    p = tenferro.trace(f("optimal"), a, b, c)
    assert '"ij,jk,kl->il;optimal"' in p.text()
    # The gradient program of a traced explicit path runs too.
    value, gx, gy, gz = tenferro.trace(lambda x, y, z: f([(1, 2), (0, 1)])(x, y, z).sum(), a, b, c).grad()(a, b, c)
    np.testing.assert_allclose(gx, np.ones((3, 2)) @ (b @ c).T, rtol=1e-12)
    # Its forward-mode program keeps the path (same operands' structure).
    jp = tenferro.trace(f([(1, 2), (0, 1)]), a, b, c).jvp()
    assert "explicit:1-2,0-3" in jp.text()
    da = rng.random((3, 4))
    np.testing.assert_allclose(jp(a, b, c, da, np.zeros_like(b), np.zeros_like(c))[-1], da @ b @ c, rtol=1e-12)


def test_programs_are_made_by_trace_only():
    # The constructor is not a text parser: anything but a traced program is a TypeError
    # at once (before, a string made a Program that failed only when called).
    with pytest.raises(TypeError, match="programs come from tenferro.trace or tenferro.jit"):
        tenferro.Program("program { }")
    p = tenferro.trace(lambda x: x * 2.0, np.ones(3))
    assert isinstance(p, tenferro.Program)
    np.testing.assert_array_equal(p(np.arange(3.0)), 2.0 * np.arange(3.0))


def test_traced_copies_sort_and_argsort():
    # flatten / copy of a traced value record a copy (they recursed without end before),
    # and the gradient program through them runs.
    x = np.random.default_rng(5).standard_normal((3, 4))
    f = tenferro.jit(lambda t: (t.T.flatten() * 2.0, t.copy()))
    flat, copied = f(x)
    np.testing.assert_array_equal(flat, 2.0 * x.T.flatten())
    np.testing.assert_array_equal(copied, x)
    (g,) = tenferro.jit(tenferro.grad(lambda t: (t.T.flatten() ** 2).sum()))(x)
    np.testing.assert_allclose(g, 2.0 * x, rtol=1e-15)
    # sort and argsort (stable: ties keep their order, NaN last) and what is built on them
    # (np.median) record as program operations; the gradient program through sort runs.
    xt = x.copy()
    xt[0, 1] = xt[0, 3]
    xt[2, 2] = np.nan
    cases = [(lambda t: tenferro.sort(t, axis=1), np.sort(xt, axis=1)), (lambda t: t.argsort(), np.argsort(xt, kind="stable")),
             (lambda t: np.argsort(t, axis=0), np.argsort(xt, axis=0, kind="stable")),
             (lambda t: np.sort(t, axis=None), np.sort(xt, axis=None)), (lambda t: np.median(t, axis=1), np.median(xt, axis=1))]
    for f, want in cases:
        got = np.asarray(tenferro.jit(f)(xt))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    w = np.random.default_rng(6).standard_normal((3, 4))
    loss = lambda t: (tenferro.sort(t, axis=1) * w).sum()
    (g,) = tenferro.jit(tenferro.grad(loss))(x)
    np.testing.assert_array_equal(g, np.take_along_axis(w, np.argsort(np.argsort(x, axis=1), axis=1), axis=1))
    # numpy functions without a derivative compute in numpy on the values: inside a trace
    # that is a TypeError naming what was called.
    for f, what in [(lambda t: np.isclose(t, t), "numpy.isclose"), (lambda t: np.nonzero(t), "numpy.nonzero")]:
        with pytest.raises(TypeError, match=f"tenferro.trace: {what}.* computes in numpy"):
            tenferro.trace(f, x)
    t = tenferro.Runtime().tensor(x)
    np.testing.assert_array_equal(tenferro.sort(t, axis=1).numpy(), np.sort(x, axis=1))
    np.testing.assert_array_equal(t.argmax(axis=0), x.argmax(axis=0))


def test_traced_any_all_and_parts_of_real_values_match_numpy():
    # any / all are max / min reductions of bools in a program; conj / real / imag of
    # integers and bools are the value, the value and zeros (as numpy).
    rng = np.random.default_rng(9)
    x = rng.integers(-2, 3, (3, 4)).astype(np.int32)
    b = rng.random((3, 4)) < 0.5
    empty = np.zeros((0, 3), dtype=bool)

    def f(i, p, e):
        return (i.any(axis=0), i.all(axis=1), p.any(), p.all(axis=0), p.max(axis=1), p.min(), e.any(axis=0),
                e.all(axis=0), i.real, i.imag, i.conj(), p.real, p.imag, p.conj())

    got = tenferro.jit(f)(x, b, empty)
    want = (x.any(axis=0), x.all(axis=1), b.any(), b.all(axis=0), b.max(axis=1), b.min(), empty.any(axis=0),
            empty.all(axis=0), x.real, x.imag, x.conj(), b.real, b.imag, b.conj())
    rt = tenferro.Runtime()
    eager = f(rt.tensor(x), rt.tensor(b), rt.tensor(empty))
    for k, (g, w, e) in enumerate(zip(got, want, eager)):
        assert g.dtype == w.dtype and g.shape == w.shape, k
        np.testing.assert_array_equal(g, w, err_msg=str(k))
        np.testing.assert_array_equal(e.numpy(), w, err_msg=str(k))
    # Products of bools (ORs of ANDs), plain and batched.
    p, q = rng.random((2, 3, 4)) < 0.4, rng.random((2, 4, 5)) < 0.4
    products = tenferro.jit(lambda u, v: (u @ v, u[1] @ v[0]))(p, q)
    np.testing.assert_array_equal(products[0], p @ q)
    np.testing.assert_array_equal(products[1], p[1] @ q[0])


def test_traced_predicates_and_logical_operators_match_numpy():
    # numpy's isnan / isinf / isfinite / logical_* compute in numpy on eager values; inside
    # a trace they record as tenferro operations, and & | ^ ~ of bools record too.
    x = np.array([[0.5, -np.inf, np.nan, 2.0], [np.inf, -0.0, 0.9, -3.0]])
    k = np.array([[0, 3, -1, 0], [2, 0, 0, 5]], dtype=np.int64)

    def f(t, i):
        return (np.isnan(t), np.isinf(t), np.isfinite(t), np.isnan(i), np.isinf(i), np.isfinite(i),
                np.logical_and(t > 0, t < 1), np.logical_or(t > 1, i), np.logical_xor(i, t < 0), np.logical_not(i),
                (t > 0) & ~(t > 1) | np.isnan(t), (i > 0) ^ (t > 0))

    got = tenferro.jit(f)(x, k)
    with np.errstate(invalid="ignore"):
        want = f(x, k)
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.bool_ and g.shape == w.shape, n
        np.testing.assert_array_equal(g, w, err_msg=str(n))


def test_traced_argmax_and_argmin_match_numpy():
    # Inside a trace argmax / argmin record as tensor operations (the first extreme, or the
    # first NaN, along the axis), for every axis form, keepdims, and real dtypes.
    rng = np.random.default_rng(19)
    nan = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, 1.0], [0.0, 0.0, -1.0, -1.0]])
    for a in (rng.standard_normal((3, 4, 5)), rng.integers(0, 3, (3, 4, 5)).astype(np.int32),
              rng.random((3, 4, 5)) < 0.5, nan):
        for axis in (None, 0, -1):
            for keepdims in (False, True):
                for name in ("argmax", "argmin"):
                    got = tenferro.jit(lambda t, ax, kd: getattr(t, name)(axis=ax, keepdims=kd))(a, axis, keepdims)
                    want = getattr(np, name)(a, axis=axis, keepdims=keepdims)
                    assert got.dtype == want.dtype and got.shape == want.shape, (a.dtype, axis, keepdims, name)
                    np.testing.assert_array_equal(got, want, err_msg=f"{a.dtype} {axis} {keepdims} {name}")
    np.testing.assert_array_equal(tenferro.jit(lambda t: (np.argmax(t, axis=1), np.argmin(t)))(nan)[0],
                                  np.argmax(nan, axis=1))  # numpy's function forms too
    with pytest.raises(TypeError, match="argmax of a complex tensor"):
        tenferro.trace(lambda t: t.argmax(), np.ones(3, dtype=complex))
    with pytest.raises(ValueError, match="argmin of an empty sequence"):
        tenferro.trace(lambda t: t.argmin(axis=0), np.ones((0, 2)))


def test_traced_rounding_matches_numpy_bit_for_bit():
    # floor / ceil / trunc / rint / round record inside a trace (floor through floor_divide
    # by 1; round half to even; signed zeros, infinities, NaN and integers past 2^52 as
    # numpy's), f32 and f64, with numpy's decimals; their gradient is zero.
    x = np.array([-2.5, -1.5, -0.5, -0.4, -0.0, 0.0, 0.4, 0.5, 1.5, 2.5, 2.4999, 3.7, -3.7, 2.0**52 + 1,
                  -(2.0**52 + 1), 1e300, np.inf, -np.inf, np.nan, 0.125, 0.375, -0.125])
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)  # 1e300 becomes inf
    for a in (x, x32):
        for name in ("floor", "ceil", "trunc", "rint", "round", "around"):
            f = getattr(np, name)
            got, want = tenferro.jit(lambda t: f(t))(a), f(a)
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=name)
        for decimals in (1, 2, -1):
            np.testing.assert_array_equal(tenferro.jit(lambda t, d: np.round(t, d))(a, decimals), np.round(a, decimals))
        np.testing.assert_array_equal(tenferro.jit(lambda t: np.round(t, decimals=2))(a), np.round(a, 2))
    (g,) = tenferro.grad(lambda t: tenferro.jit(lambda u: (np.floor(u) * u + np.rint(u)).sum())(t))(np.array([1.5, -2.5]))
    np.testing.assert_array_equal(g.numpy(), [1.0, -3.0])
    with pytest.raises(TypeError, match="rounding of a int64 tensor is not recorded"):
        tenferro.trace(lambda t: np.floor(t), np.arange(3))
