"""Advanced indexing, x.at[key] updates and the shape functions (flip, roll, pad,
broadcast_to, tile, repeat) on eager tensors against numpy, with their gradients."""

import numpy as np
import pytest

import tenferro


@pytest.fixture(scope="module")
def rt():
    return tenferro.Runtime()


def _grad_of_weighted_sum(f, a, w):
    """The gradient of sum(w * f(x)) at a, by tenferro."""
    (g,) = tenferro.grad(lambda t: (f(t) * w).sum())(a)
    return g.numpy()


# Keys for a (4, 5, 6) array: integer arrays, lists, masks, mixed with slices, None,
# Ellipsis and integers, adjacent and separated (numpy moves the broadcast axes first).
KEYS = [
    [0, 2, 2],
    [[0, 3], [1, 1]],
    (slice(None), [4, 0, -1]),
    (Ellipsis, [5, -6]),
    ([0, 1], [2, 3]),
    ([[0], [3]], [1, 2, 4]),
    ([1, 2], slice(1, 4), [0, 5]),
    (0, slice(None), [1, 2]),
    (slice(None), 0, [1, 2]),
    ([1, 3], None, 2),
    (None, [1, 3], slice(None, None, -2), [0, 0]),
    (slice(1, 3), [[2], [0]], [[5, 4, 3]]),
    (np.array([True, False, True, True]),),
    (slice(None), np.array([False, True, False, True, True])),
    (np.ones((4, 5), dtype=bool),),
    (np.array([[True, False, True, False, False]] * 4), [1, 2, 3, 4, 5, 0, 0, 0]),
    ([],),
    (slice(None), np.zeros(0, dtype=np.int64), 1),
    (np.int64(2), [1, 1]),
    ([-4, 3], Ellipsis, [-1]),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_advanced_indexing_matches_numpy_with_gradients(rt, k):
    key = KEYS[k]
    rng = np.random.default_rng(k)
    for dtype in (np.float64, np.complex128, np.float32, np.int64):
        a = (rng.standard_normal((4, 5, 6)) * 10).astype(dtype)
        x = rt.tensor(a)
        got = x[key]
        want = a[key]
        assert isinstance(got, tenferro.EagerTensor)
        assert got.shape == want.shape and got.dtype == want.dtype, (key, got.shape, want.shape)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=str(key))
    # The gradient of sum(w * x[key]) is w added at every position read (numpy's add.at).
    a = rng.standard_normal((4, 5, 6))
    w = rng.standard_normal(a[key].shape)
    want = np.zeros_like(a)
    np.add.at(want, key, w)
    np.testing.assert_allclose(_grad_of_weighted_sum(lambda t: t[key], a, w), want, rtol=1e-12, atol=1e-12)


def test_index_arrays_may_be_eager_tensors_and_masks_may_come_from_comparisons(rt):
    a = np.arange(24.0).reshape(4, 6) - 11
    x = rt.tensor(a)
    np.testing.assert_array_equal(x[x > 0.5].numpy(), a[a > 0.5])
    np.testing.assert_array_equal(x[rt.tensor(np.array([3, 0]))].numpy(), a[[3, 0]])
    np.testing.assert_array_equal(x[:, rt.tensor(np.array([True, False] * 3))].numpy(), a[:, [True, False] * 3])
    # numpy's typical masked update, functionally: negative entries set to zero.
    np.testing.assert_array_equal(x.at[x < 0].set(0.0).numpy(), np.where(a < 0, 0, a))


def test_advanced_indexing_errors_are_numpys(rt):
    x = rt.tensor(np.zeros((4, 5)))
    for key, match in [([4], "index 4 is out of bounds for axis 0 with size 4"),
                       ((slice(None), [-6]), "index -6 is out of bounds for axis 1 with size 5"),
                       (([0, 1], [0, 1, 2]), "shape mismatch"),
                       ([0.5], "integer"),
                       (np.array([True, False]), "boolean index of shape"),
                       (([0], [0], [0]), "too many indices"),
                       ((True,), "boolean scalar"),
                       ((np.True_, [0]), "boolean scalar"),
                       ((Ellipsis, [0], Ellipsis), "single ellipsis")]:
        with pytest.raises(IndexError, match=match):
            x[key]
    with pytest.raises(TypeError, match="immutable.*at\\[key\\].set"):
        x[0, 0] = 1.0


def test_index_arrays_computed_in_a_trace_are_refused(rt):
    a = np.arange(6.0)

    def f(t):
        return t[t > 2.0].sum()

    with pytest.raises(TypeError, match="trace"):
        tenferro.trace(f, rt.tensor(a))
    # Constant index arrays are part of the program.
    p = tenferro.trace(lambda t: t[[5, 0, 5]] * 2, rt.tensor(a))
    np.testing.assert_array_equal(np.asarray(p(rt.tensor(a + 1))), (a + 1)[[5, 0, 5]] * 2)


UPDATE_KEYS = [(1, 2), (slice(None), [0, 2, 0]), ([0, 0, 3], [1, 1, 4]), (Ellipsis, slice(None, None, 2)),
               (np.array([True, False, False, True]),), ([],), (slice(1, 3), None),
               np.random.default_rng(0).random((4, 5)) < 0.4]


@pytest.mark.parametrize("k", range(len(UPDATE_KEYS)))
def test_at_set_and_add_match_numpy_assignment_and_add_at(rt, k):
    key = UPDATE_KEYS[k]
    rng = np.random.default_rng(10 + k)
    for dtype in (np.float64, np.complex128, np.int32):
        a = (rng.standard_normal((4, 5)) * 10).astype(dtype)
        v = (rng.standard_normal(a[key].shape) * 10).astype(dtype)
        x = rt.tensor(a)
        want = a.copy()
        want[key] = v
        got = x.at[key].set(v)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=str(key))
        assert got.dtype == dtype
        want = a.copy()
        np.add.at(want, key, v)
        np.testing.assert_array_equal(x.at[key].add(v).numpy(), want, err_msg=str(key))
        np.testing.assert_array_equal(x.numpy(), a)  # x itself is unchanged
        np.testing.assert_array_equal(x.at[key].get().numpy(), a[key])
        # A number broadcasts.
        want = a.copy()
        want[key] = 7
        np.testing.assert_array_equal(x.at[key].set(7).numpy(), want)
    # Gradients: of sum(w * x.at[key].set(v)) in x (w where not overwritten) and in v (w
    # at the positions v lands on, the last of repeated ones); of add, w and w[key].
    a = rng.standard_normal((4, 5))
    v = rng.standard_normal(a[key].shape)
    w = rng.standard_normal(a.shape)
    gx, gv = tenferro.grad(lambda t, u: (t.at[key].set(u) * w).sum())(a, v)
    positions = np.arange(a.size).reshape(a.shape)[key]
    written = np.zeros(a.size, bool)
    written[positions.reshape(-1)] = True
    np.testing.assert_allclose(gx.numpy(), np.where(written.reshape(a.shape), 0, w), atol=1e-12)
    flat_pos = positions.reshape(-1)
    want_gv = np.zeros(flat_pos.size)
    for i, p in enumerate(flat_pos):
        if i == max(j for j in range(flat_pos.size) if flat_pos[j] == p):
            want_gv[i] = w.reshape(-1)[p]
    np.testing.assert_allclose(gv.numpy(), want_gv.reshape(v.shape), atol=1e-12)
    gx, gv = tenferro.grad(lambda t, u: (t.at[key].add(u) * w).sum())(a, v)
    np.testing.assert_allclose(gx.numpy(), w, atol=1e-12)
    np.testing.assert_allclose(gv.numpy(), w[key], atol=1e-12)


def test_at_with_a_whole_mask_and_one_value_is_elementwise_and_traces(rt):
    # x.at[mask].set(v) / .add(v) with a bool mask of x's shape and one value: where(mask,
    # v, x) and x + where(mask, v, 0), with no positions to read, so a mask computed from a
    # traced value works inside tenferro.trace / jit.
    rng = np.random.default_rng(31)
    a = rng.standard_normal((3, 4))

    def f(t, v):
        return t.at[t > 0.5].set(v).at[t < -0.5].add(v * 2.0)

    want = np.where(a > 0.5, 0.25, a)
    want = np.where(a < -0.5, want + 0.5, want)
    np.testing.assert_allclose(f(rt.tensor(a), rt.tensor(np.array(0.25))).numpy(), want, rtol=1e-15)
    np.testing.assert_allclose(tenferro.jit(f)(a, np.array(0.25)), want, rtol=1e-15)
    w = rng.standard_normal(a.shape)
    gx, gv = tenferro.grad(lambda t, v: (f(t, v) * w).sum())(a, np.array(0.25))
    np.testing.assert_allclose(gx.numpy(), np.where(a > 0.5, 0.0, w), atol=1e-15)
    np.testing.assert_allclose(gv.numpy(), w[a > 0.5].sum() + 2 * w[a < -0.5].sum(), rtol=1e-12)
    ints = rt.tensor(np.arange(6, dtype=np.int64))
    np.testing.assert_array_equal(ints.at[ints.numpy() % 2 == 0].set(-1).numpy(), [-1, 1, -1, 3, -1, 5])


def test_at_refuses_complex_values_for_real_tensors(rt):
    x = rt.tensor(np.zeros(3))
    with pytest.raises(TypeError, match="complex"):
        x.at[0].set(1j)
    # Integers out of an integer dtype's range are refused (they wrapped around before);
    # fractions truncate, as numpy's assignment.
    i = rt.tensor(np.arange(4, dtype=np.int32))
    for key, value in ((0, 2**40), (slice(0, 2), [1, 2**31]), (1, np.int64(-2**33))):
        with pytest.raises(tenferro.InvalidArgumentError, match="out of the range of dtype int32") as e:
            i.at[key].set(value)
        assert e.value.code == "overflow"
    np.testing.assert_array_equal(i.at[0].set(2.7).numpy(), [2, 1, 2, 3])
    np.testing.assert_array_equal(i.at[1].set(2**31 - 1).numpy(), [0, 2**31 - 1, 2, 3])


def _shape_cases():
    return [
        (lambda m, a: m.flip(a), None), (lambda m, a: m.flip(a, 1), None), (lambda m, a: m.flip(a, (0, 2)), None),
        (lambda m, a: m.fliplr(a), None), (lambda m, a: m.flipud(a), None),
        (lambda m, a: m.roll(a, 2), None), (lambda m, a: m.roll(a, -1, axis=1), None),
        (lambda m, a: m.roll(a, (1, 7), axis=(0, 2)), None), (lambda m, a: m.roll(a, (1, 2), axis=(1, 1)), None),
        (lambda m, a: m.pad(a, 1), None), (lambda m, a: m.pad(a, ((0, 1), (2, 0), (1, 1)), constant_values=3), None),
        (lambda m, a: m.pad(a, (1, 2)), None),
        (lambda m, a: m.broadcast_to(a[:1, :, :1], (2, 3, 5, 4)), None),
        (lambda m, a: m.tile(a, 2), None), (lambda m, a: m.tile(a, (2, 1, 1, 3)), None),
        (lambda m, a: m.tile(a[0], (3, 1, 2)), None),
        (lambda m, a: m.repeat(a, 2), None), (lambda m, a: m.repeat(a, 3, axis=1), None),
        (lambda m, a: m.repeat(a, [1, 0, 2], axis=0), None),
    ]


class _NumpyOnValues:
    """numpy's functions called directly (the oracle)."""

    def __getattr__(self, name):
        return getattr(np, name)


class _Tenferro:
    """The same calls through tenferro's own functions."""

    def __getattr__(self, name):
        return {"fliplr": lambda a: tenferro.flip(a, 1), "flipud": lambda a: tenferro.flip(a, 0)}.get(
            name, getattr(tenferro, name, None))


@pytest.mark.parametrize("k", range(len(_shape_cases())))
def test_shape_functions_match_numpy_with_gradients(rt, k):
    f, _ = _shape_cases()[k]
    rng = np.random.default_rng(20 + k)
    a = rng.standard_normal((3, 5, 4))
    want = f(np, a)
    for module in (np, _Tenferro()):  # numpy's dispatch on eager tensors, tenferro's functions
        got = f(module, rt.tensor(a))
        assert isinstance(got, tenferro.EagerTensor)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    # The gradient of sum(w * f(x)) is the transpose of f applied to w: by central
    # differences (f is linear: exact up to rounding).
    w = rng.standard_normal(want.shape)
    g = _grad_of_weighted_sum(lambda t: f(np, t), a, w)
    want_g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = 1.0
        want_g[i] = (f(np, a + e) * w).sum() - (f(np, a) * w).sum()
    np.testing.assert_allclose(g, want_g, rtol=1e-9, atol=1e-9)


def test_shape_function_errors(rt):
    x = rt.tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        tenferro.flip(x, 2)
    with pytest.raises(ValueError, match="negative"):
        tenferro.pad(x, -1)
    with pytest.raises(ValueError, match="pad_width"):
        tenferro.pad(x, [(1, 1)] * 3)
    with pytest.raises(ValueError):
        tenferro.broadcast_to(x, (3, 3))
    with pytest.raises(ValueError, match="negative"):
        tenferro.tile(x, -1)
    with pytest.raises(ValueError, match="repeat"):
        tenferro.repeat(x, [1, 2], axis=1)
    with pytest.raises(ValueError, match="same length"):
        tenferro.roll(x, (1, 2, 3), axis=(0, 1))
    # Modes other than 'constant' compute in numpy on the values, refused with grad.
    np.testing.assert_array_equal(np.pad(x, 1, mode="edge"), np.zeros((4, 5)))
    with pytest.raises(TypeError, match="drop the gradient"):
        np.pad(x.detach().requires_grad_(), 1, mode="edge")


def test_where_takes_numbers_in_the_branch_dtype(rt):
    a = np.array([[-1.0, 2.0], [3.0, -4.0]])
    x = rt.tensor(a).requires_grad_()
    for got in (np.where(x > 0, x, 0), tenferro.where(x > 0, x, 0)):
        np.testing.assert_array_equal(got.numpy(), np.where(a > 0, a, 0))
    got = tenferro.where(a > 0, 1, rt.tensor(a.astype(np.float32)))
    assert got.dtype == np.float32
    (g,) = tenferro.grad(lambda t: np.where(t > 0, t, 0.5).sum())(a)
    np.testing.assert_array_equal(g.numpy(), (a > 0).astype(float))
    with pytest.raises(TypeError, match="complex"):
        tenferro.where(x > 0, x, 1j)


def test_value_free_numpy_functions_run_on_tensors_that_require_grad(rt):
    a = np.array([[1.0, np.nan], [np.inf, -2.5]])
    x = rt.tensor(a).requires_grad_()
    np.testing.assert_array_equal(np.isnan(x), np.isnan(a))
    np.testing.assert_array_equal(np.isfinite(x), np.isfinite(a))
    np.testing.assert_array_equal(np.floor(x), np.floor(a))
    assert np.allclose(x, a, equal_nan=True)
    assert x.argmin() == np.argmin(a) and (x.argmax(axis=1) == np.argmax(a, axis=1)).all()
    for fn, want in ((np.zeros_like, np.zeros_like(a)), (np.ones_like, np.ones_like(a))):
        got = fn(x)
        assert isinstance(got, tenferro.EagerTensor) and not got.requires_grad
        np.testing.assert_array_equal(got.numpy(), want)
    got = np.full_like(x, 2.5, dtype=np.float32)
    assert got.dtype == np.float32 and got.shape == (2, 2) and (got.numpy() == 2.5).all()
    # Functions with a derivative still refuse to drop it.
    with pytest.raises(TypeError, match="drop the gradient"):
        np.histogram(x)


def test_array_attributes(rt):
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = rt.tensor(a)
    assert x.itemsize == 4 and x.nbytes == a.nbytes
    np.testing.assert_array_equal(x.mT.numpy(), np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(x.repeat(2, axis=0).numpy(), a.repeat(2, axis=0))


def test_sort_take_along_axis_and_scans_match_numpy_with_gradients(rt):
    rng = np.random.default_rng(40)
    a = rng.standard_normal((4, 6, 5))
    a[1, 2, :] = a[1, 3, :]  # ties: the stable order sends each gradient to its own element
    for axis in (0, 1, -1, None):
        for f, ref in ((np.sort, np.sort), (np.cumsum, np.cumsum), (np.cumprod, np.cumprod)):
            got = f(rt.tensor(a), axis=axis)
            assert isinstance(got, tenferro.EagerTensor)
            np.testing.assert_allclose(got.numpy(), ref(a, axis=axis), rtol=1e-12, atol=1e-12)
        order = np.argsort(a, axis=0 if axis is None else axis)
        if axis is not None:
            got = np.take_along_axis(rt.tensor(a), order, axis)
            np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, order, axis))
    for dtype in (np.float32, np.complex128, np.int64):
        b = (rng.standard_normal((3, 7)) * 5).astype(dtype)
        for f in (np.cumsum, np.cumprod):
            got = f(rt.tensor(b), axis=1)
            assert got.dtype == dtype
            np.testing.assert_allclose(got.numpy(), f(b, axis=1), rtol=1e-5 if dtype == np.float32 else 1e-12)
    # int32 and bool widen in numpy: computed there on the values.
    assert np.cumsum(rt.tensor(np.ones(3, dtype=np.int32))).dtype == np.cumsum(np.ones(3, dtype=np.int32)).dtype
    # Gradients: sort sends w back through the permutation; cumsum's gradient is the
    # reversed cumulative sum of w; cumprod's against central differences (with a zero).
    w = rng.standard_normal((4, 6, 5))
    (g,) = tenferro.grad(lambda t: (np.sort(t, axis=1) * w).sum())(a)
    want = np.zeros_like(a)
    np.put_along_axis(want, np.argsort(a, axis=1, kind="stable"), w, axis=1)
    np.testing.assert_allclose(g.numpy(), want, atol=1e-12)
    (g,) = tenferro.grad(lambda t: (np.cumsum(t, axis=2) * w).sum())(a)
    np.testing.assert_allclose(g.numpy(), np.flip(np.cumsum(np.flip(w, 2), axis=2), 2), rtol=1e-12, atol=1e-12)
    c = rng.standard_normal(6)
    c[2] = 0.0
    wc = rng.standard_normal(6)
    (g,) = tenferro.grad(lambda t: (tenferro.cumprod(t) * wc).sum())(c)
    fd = np.zeros(6)
    for i in range(6):
        e = np.zeros(6)
        e[i] = 1e-6
        fd[i] = ((np.cumprod(c + e) * wc).sum() - (np.cumprod(c - e) * wc).sum()) / 2e-6
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="rank"):
        tenferro.take_along_axis(rt.tensor(a), np.zeros((2, 2), dtype=np.int64), 0)
    with pytest.raises(IndexError, match="out of bounds"):
        tenferro.take_along_axis(rt.tensor(a), np.full((1, 1, 1), 9), 0)


def test_diag_diff_split_and_stacks_match_numpy_with_gradients(rt):
    rng = np.random.default_rng(50)
    a = rng.standard_normal((4, 6))
    v = rng.standard_normal(5)
    cases = [
        (lambda m, t: m.diag(t, 0), v), (lambda m, t: m.diag(t, 2), v), (lambda m, t: m.diag(t, -1), v),
        (lambda m, t: m.diag(t, 1), a), (lambda m, t: m.diag(t, -2), a),
        (lambda m, t: m.diff(t), a), (lambda m, t: m.diff(t, 2, axis=0), a), (lambda m, t: m.diff(t, 0), a),
        (lambda m, t: m.vstack([t, t * 2.0]), a), (lambda m, t: m.hstack([t, t]), a),
        (lambda m, t: m.hstack([t, t]), v), (lambda m, t: m.dstack([t, t]), a),
        (lambda m, t: m.column_stack([t, t]), v), (lambda m, t: m.vstack([t, t]), v),
        (lambda m, t: m.concatenate(m.split(t, 3, axis=1)[::-1], axis=1), a),
        (lambda m, t: m.concatenate(m.array_split(t, [1, 4, 9], axis=1)[::-1], axis=1), a),
        (lambda m, t: m.concatenate(m.array_split(t, 4, axis=1)[::-1], axis=1), a),
    ]
    for k, (f, x) in enumerate(cases):
        want = f(np, x)
        got = f(np, rt.tensor(x))
        assert isinstance(got, tenferro.EagerTensor), k
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-13, err_msg=str(k))
        # Linear in x: the gradient of sum(w * f(x)) against central differences.
        w = rng.standard_normal(want.shape)
        (g,) = tenferro.grad(lambda t: (f(np, t) * w).sum())(x)
        fd = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[i] = 1.0
            fd[i] = (f(np, x + e) * w).sum() - (f(np, x) * w).sum()
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-9, atol=1e-9, err_msg=str(k))
    with pytest.raises(ValueError, match="equal division"):
        np.split(rt.tensor(a), 4, axis=1)
    with pytest.raises(ValueError, match="1-d or 2-d"):
        np.diag(rt.tensor(np.zeros((2, 2, 2))))


def test_sizes_past_int64_are_errors_before_any_allocation():
    # repeat and pad lengths are user input: a result past int64 is a typed error (numpy
    # 1.24's own repeat crashes on such counts), never wrapped arithmetic.
    a = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match="repeat: the result would have 55340232221128654848 elements"):
        tenferro.repeat(a, 1 << 62)
    with pytest.raises(ValueError, match="repeat: the result would have 9223372036854775808 elements along axis 1"):
        tenferro.repeat(a, [0, 0, 1 << 62, 1 << 62], axis=1)
    with pytest.raises(tenferro.Error, match="padding 4611686018427387904"):
        tenferro.pad(a, 1 << 62)
    np.testing.assert_array_equal(tenferro.repeat(a, [2, 0, 1], axis=0).numpy(), np.repeat(a, [2, 0, 1], axis=0))


def test_sort_of_complex_values_follows_numpys_order(rt):
    # Lexicographic by real then imaginary part, NaN classes [R + Rj, R + nanj, nan + Rj,
    # nan + nanj] (numpy's), stable; eager, traced and differentiable.
    nan = np.nan
    z = np.array([[nan + 1j, 1 + nan * 1j, 1 + 2j, 1 - 1j, complex(nan, nan), 5j, 1 + 2j],
                  [2 + 0j, -1 + 3j, complex(nan, -2), 2 - 0j, 0j, complex(3, nan), -1 + 3j]])
    for axis in (0, 1, -1, None):
        want = np.sort(z, axis=axis, kind="stable")
        np.testing.assert_array_equal(np.sort(rt.tensor(z), axis=axis).numpy(), want)
        np.testing.assert_array_equal(np.asarray(tenferro.jit(lambda t: np.sort(t, axis=axis))(z)), want)
        np.testing.assert_array_equal(rt.tensor(z).argsort(axis=axis), np.argsort(z, axis=axis, kind="stable"))
    finite = np.array([3 + 1j, 1 - 2j, 1 + 4j, -2 + 0j])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    (g,) = tenferro.grad(lambda t: (np.sort(t).real * w).sum())(finite)
    order = np.argsort(finite, kind="stable")
    want = np.zeros(4, complex)
    want[order] = w  # d Re(sum w * sorted) / d z: w at each element's sorted position
    np.testing.assert_array_equal(g.numpy(), want)
