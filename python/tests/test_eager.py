"""tenferro.Runtime / EagerTensor: operators, reductions, views and indexing against numpy;
zero-copy; typed errors."""

import warnings

import numpy as np
import pytest

import tenferro


@pytest.fixture(scope="module")
def rt():
    return tenferro.Runtime()


def test_operators_and_reductions_match_numpy(rt):
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64, np.complex128):
        a = rng.standard_normal((4, 5)).astype(dtype)
        b = rng.standard_normal((4, 5)).astype(dtype)
        x, y = rt.tensor(a), rt.tensor(b)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for got, want in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / (y * y + 1), a / (b * b + 1)),
                          (-x, -a), (x * 2 + 1, a * 2 + 1), (3 - x, 3 - a), (2 / (x * x + 1), 2 / (a * a + 1)),
                          (x @ y.T, a @ b.T), (x.exp(), np.exp(a)), (x.sum(), a.sum()),
                          (x.sum(axis=1), a.sum(axis=1)), (x.mean(axis=0, keepdims=True), a.mean(axis=0, keepdims=True)),
                          (x.prod(axis=-1), a.prod(axis=-1)), (x.T, a.T), (x.reshape(5, 4), a.reshape(5, 4)), (x.reshape(20), a.reshape(20)),
                          (x[1], a[1]), (x[:, 1:4:2], a[:, 1:4:2]), (x[2, 3], a[2, 3])]:
            np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
            assert got.dtype == np.asarray(want).dtype
        if dtype != np.complex128:
            np.testing.assert_array_equal((x > y).numpy(), a > b)
            np.testing.assert_allclose(x.max().item(), a.max())
            np.testing.assert_allclose(x.min(axis=0).numpy(), a.min(axis=0), rtol=tol)


def test_unary_functions_and_their_numpy_ufuncs(rt):
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        a = (rng.standard_normal((3, 4)) + (1j * rng.standard_normal((3, 4)) if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
        a[0, 0] = 0
        x = rt.tensor(a)
        tol = 1e-5 if dtype in (np.float32, np.complex64) else 1e-12
        pos = np.abs(a) + 0.5  # inside the real domain of log1p and rsqrt
        p = rt.tensor(pos.astype(dtype))
        sign = np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a)))  # z / |z| (numpy 2's sign)
        for got, want in [(x.expm1(), np.expm1(a)), (np.expm1(x), np.expm1(a)), (p.log1p(), np.log1p(pos.astype(dtype))),
                          (np.log1p(p), np.log1p(pos.astype(dtype))), (p.rsqrt(), 1 / np.sqrt(pos.astype(dtype))),
                          (x.sign(), sign)]:
            assert isinstance(got, tenferro.EagerTensor)
            np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)
            assert got.dtype == dtype
        if np.dtype(dtype).kind == "c":
            # numpy 1.x's sign of a complex number is the sign of its real part: computed by numpy.
            np.testing.assert_array_equal(np.asarray(np.sign(x)), np.sign(a))
        else:
            assert isinstance(np.sign(x), tenferro.EagerTensor)
            np.testing.assert_array_equal(np.sign(x).numpy(), np.sign(a))
    # Gradients against the derivatives.
    b = np.array([0.3, 1.0, 2.5])
    y = rt.tensor(b).requires_grad_()
    (y.expm1().sum() + y.log1p().sum() + y.rsqrt().sum() + y.sign().sum()).backward()
    np.testing.assert_allclose(y.grad.numpy(), np.exp(b) + 1 / (1 + b) - 0.5 * b ** -1.5, rtol=1e-12)


def test_views_share_memory_and_inputs_are_not_copied(rt):
    a = np.arange(12.0).reshape(3, 4)
    x = rt.tensor(a)
    assert np.shares_memory(x.numpy(), a)
    assert np.shares_memory(x.T.numpy(), a)
    assert np.shares_memory(x[1:, ::2].numpy(), a)
    assert np.shares_memory(x.reshape(4, 3).numpy(), a)  # numpy's row-major reshape, a view here
    np.testing.assert_array_equal(x.reshape(2, 6).numpy(), a.reshape(2, 6))
    e = tenferro.einsum("ij,kj->ik", x, x)
    assert isinstance(e, tenferro.EagerTensor)
    np.testing.assert_allclose(e.numpy(), a @ a.T)
    np.testing.assert_array_equal(tenferro.where(x > 5, x, x * 0).numpy(), np.where(a > 5, a, 0))


def test_errors_are_typed(rt):
    x = rt.tensor(np.ones((2, 3)))
    with pytest.raises(tenferro.ShapeError):
        x + rt.tensor(np.ones((4, 3)))
    with pytest.raises(tenferro.DTypeError):
        x + rt.tensor(np.ones((2, 3), dtype=np.float32))  # no implicit promotion
    other = tenferro.Runtime(threads=1)
    with pytest.raises(tenferro.InvalidArgumentError) as e:  # a ValueError
        x + other.tensor(np.ones((2, 3)))
    assert e.value.code == "runtime_mismatch" and isinstance(e.value, ValueError)
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(tenferro.DTypeError, match="1j with a tensor of dtype f64: a complex value"):
        x + 1j  # numpy would promote x
    np.testing.assert_array_equal((x + (2 + 0j)).numpy(), np.full((2, 3), 3.0))
    with pytest.raises(TypeError):
        rt.tensor(np.ones(3, dtype=np.float16))
    np.testing.assert_allclose((x.astype("float32") * 2).numpy(), np.full((2, 3), 2, dtype=np.float32))
    # Methods composed of other operations name themselves in their errors.
    z = rt.tensor(np.ones((2, 3), dtype=complex))
    for call, op, error in [(lambda: x.transpose((0, 0)), "transpose", tenferro.InvalidArgumentError),
                            (lambda: z.clip(0, 1), "clip", tenferro.DTypeError),
                            (lambda: z.clip(None, 1), "clip", tenferro.DTypeError)]:
        with pytest.raises(error, match=f"^{op}: ") as e:
            call()
        assert e.value.op == op
    with pytest.raises(ValueError, match="trace: axis1 and axis2 cannot be the same"):
        x.trace(axis1=1, axis2=-1)
    with pytest.raises(tenferro.DTypeError, match="^stack: tensors of dtypes f64 and i64") as e:
        tenferro.stack([x, np.ones((2, 3), dtype=np.int64)])
    assert e.value.op == "stack"


def test_dlpack_export_shares_memory(rt):
    """numpy.from_dlpack reads tenferro tensors without copying (DLPack CPU export)."""
    for dtype in (np.int32, np.int64, np.float32, np.float64, np.complex64, np.complex128):
        a = (np.arange(12).reshape(3, 4) * 3).astype(dtype)
        for src in (rt.tensor(a), rt.tensor(a).T, tenferro.from_numpy(a[::-1, ::2])):
            got = np.from_dlpack(src)
            want = np.asarray(src)
            np.testing.assert_array_equal(got, want)
            assert np.shares_memory(got, a)
    x = rt.tensor(np.ones((2, 2)))
    assert x.__dlpack_device__() == (1, 0)
    cap = x.__dlpack__()  # never consumed: freed with the capsule
    del cap


def test_integer_arguments_too_large_or_negative_name_themselves():
    rt = tenferro.Runtime()
    x = rt.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError, match="out of bounds"):
        x[2**70]
    with pytest.raises(ValueError, match="does not fit in int64"):
        x.sum(2**70)
    with pytest.raises(tenferro.InvalidArgumentError, match="axis -5"):
        x.sum(-5)  # named as given, not after normalization
    assert np.asarray(x.sum(-1)).tolist() == [3.0, 12.0]
    with pytest.raises(TypeError, match="must be an integer"):
        x.reshape(2.5, 2)
    with pytest.raises(ValueError, match="int64"):
        x.reshape(2**62, 4)
    # Shapes are named as the caller wrote them (row-major), not as the column-major core
    # saw them.
    with pytest.raises(tenferro.ShapeError, match=r"tensor of shape \(2, 3\) \(6 elements\) into shape \(4, -1\)"):
        x.reshape(4, -1)
    with pytest.raises(tenferro.ShapeError, match=r"into shape \(7,\)"):
        x.reshape(7)


def test_runtime_tensor_takes_array_likes():
    rt = tenferro.Runtime()
    assert np.asarray(rt.tensor([1.0, 2.0]) * 2.0).tolist() == [2.0, 4.0]
    assert rt.tensor(3).dtype == np.asarray(3).dtype
    with pytest.raises(TypeError, match="unsupported dtype"):
        rt.tensor(["a", "b"])


def test_thread_counts_are_checked_integers():
    for bad in (0, -1, 10**12):
        with pytest.raises(ValueError, match="threads"):
            tenferro.Engine(threads=bad)
        with pytest.raises(ValueError, match="threads"):
            tenferro.Runtime(threads=bad)
    with pytest.raises(TypeError, match="threads must be an integer"):
        tenferro.Engine(threads=1.5)
    assert tenferro.Engine(threads=1).threads == 1


def test_numpy_integers_index_and_name_axes():
    rt = tenferro.Runtime()
    a = np.arange(6.0).reshape(2, 3)
    x = rt.tensor(a)
    assert np.asarray(x[np.int64(1)]).tolist() == a[1].tolist()
    assert np.asarray(x[np.int32(1), 1:]).tolist() == a[1, 1:].tolist()
    assert np.asarray(x.sum(np.int64(1))).tolist() == a.sum(1).tolist()
    assert np.asarray(x.reshape(np.int64(3), 2)).shape == (3, 2)
    assert np.asarray(x.transpose(np.int64(1), 0)).tolist() == a.T.tolist()
    with pytest.raises(IndexError, match="bool"):
        x[True]  # numpy would add an axis: not silently read as 1


def test_complex_power_follows_numpy_special_cases(rt):
    # z ** 0 is 1 for every z (NaN, infinities and 0 included), integer exponents are
    # repeated products (exact where those are), as numpy's power.
    with np.errstate(all="ignore"):
        z = np.array([0, np.nan + 1j * np.nan, np.inf, -np.inf + 1j, 1 + 1j * np.inf, 3 - 4j, 1 + 1j, 0.5 - 2j])
        for w in (0, 2, 3, -2, 10):
            got = (rt.tensor(z) ** rt.tensor(np.full(z.shape, w, dtype=complex))).numpy()
            want = np.power(z, complex(w))
            finite = np.isfinite(want)
            np.testing.assert_allclose(got[finite], want[finite], rtol=1e-14, atol=0)
        np.testing.assert_array_equal((rt.tensor(z) ** rt.tensor(np.zeros(z.shape, dtype=complex))).numpy(), 1 + 0j)
        assert (rt.tensor(np.array([1 + 1j])) ** rt.tensor(np.array([2 + 0j]))).numpy()[0] == 2j


def test_basic_indexing_follows_numpy(rt):
    # numpy's basic indexing: integers, slices with any step (negative: a flipped view),
    # one Ellipsis, None (new axes); results are views of the array's memory.
    a = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    x = rt.tensor(a)
    keys = [np.s_[..., 0], np.s_[0, ..., None], np.s_[None, 1, ..., ::-1], np.s_[::-1], np.s_[1, ::-2, None, 3, ...],
            np.s_[..., None], np.s_[None], np.s_[...], (), np.s_[-1, -1, -1, -1], np.s_[3:-7:-2, -1::-3],
            np.s_[..., 4:0:-1, ::2], np.s_[0, None, None, 1], np.s_[5:2:-1, 0]]
    for k in keys:
        got = x[k].numpy()
        np.testing.assert_array_equal(got, a[k], err_msg=str(k))
        if got.size:
            assert np.shares_memory(got, a), k
    for bad in ((..., ...), (0, 0, 0, 0, 0), (None, 0, 0, 0, 0, 0), 2.5, np.array([0.0, 1.0])):
        with pytest.raises(IndexError):
            x[bad]
    # Differentiable: the gradient of sum(x[::-2, ..., None]) is one where it reads.
    y = rt.tensor(a.copy()).requires_grad_()
    y[::-2, ..., None].sum().backward()
    want = np.zeros_like(a)
    want[::-2] = 1
    np.testing.assert_array_equal(y.grad.numpy(), want)


def test_reductions_over_no_axes_and_empty_axes_follow_numpy(rt):
    a = np.arange(6.0).reshape(2, 3)
    x = rt.tensor(a)
    for op in ("sum", "prod", "max", "min", "mean"):
        np.testing.assert_array_equal(getattr(x, op)(axis=()).numpy(), getattr(np, op)(a, axis=()))
        np.testing.assert_array_equal(getattr(x, op)(axis=(0, -1)).numpy(), getattr(np, op)(a, axis=(0, -1)))
    e = rt.tensor(np.zeros((0, 3)))
    for op in ("max", "min"):
        with pytest.raises(ValueError):
            getattr(e, op)()
        with pytest.raises(ValueError):
            getattr(e, op)(axis=0)
        np.testing.assert_array_equal(getattr(e, op)(axis=1).numpy(), np.zeros(0))  # no empty axis reduced
    np.testing.assert_array_equal(e.sum(axis=0).numpy(), np.zeros(3))  # sums have an identity
    # axis=() is a reduction all the same: the dtype rules of the reduction over any axis,
    # the moments of one-element samples (ddof 1: NaN, as numpy).
    for op in ("max", "min", "sum"):
        np.testing.assert_array_equal(getattr(e, op)(axis=()).numpy(), np.zeros((0, 3)))
    for ddof in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for op in ("var", "std"):
                np.testing.assert_array_equal(getattr(x, op)(axis=(), ddof=ddof).numpy(), getattr(np, op)(a, axis=(), ddof=ddof))
    z = rt.tensor(a + 1j)
    for op in ("max", "min"):  # complex values are unordered (numpy's lexicographic order is not offered)
        for axis in ((), None, 0):
            with pytest.raises(tenferro.DTypeError, match=f"^{op}: not defined for dtype c128") as info:
                getattr(z, op)(axis=axis)
            assert info.value.op == op


def test_reductions_of_bools_and_integers_take_numpys_accumulator_dtypes(rt):
    # Note [numpy reduction dtypes]: sums and products of bool and int32 in int64, means and
    # moments of bools and integers in float64, on every axis form, and under jit.
    rng = np.random.default_rng(17)
    arrays = [rng.random((3, 4)) < 0.5, rng.integers(-3, 4, (3, 4)).astype(np.int32),
              rng.integers(-3, 4, (3, 4)).astype(np.int64), rng.standard_normal((3, 4)).astype(np.float32)]
    for a in arrays:
        x = rt.tensor(a)
        for op in ("sum", "prod", "mean", "var", "std"):
            for axis in ((), None, 0, (0, 1)):
                got, want = getattr(x, op)(axis=axis).numpy(), getattr(a, op)(axis=axis)
                assert got.dtype == want.dtype, (a.dtype, op, axis, got.dtype)
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{a.dtype} {op} {axis}")
        for fn in (np.cumsum, np.cumprod):
            got, want = fn(x, axis=1), fn(a, axis=1)
            assert isinstance(got, tenferro.EagerTensor) and got.dtype == want.dtype
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    b = arrays[0]
    counts = tenferro.jit(lambda t: ((t > 0.5).sum(axis=0), (t > 0.5).mean(), np.cumsum(t > 0.5, axis=1)))(b * 1.0)
    np.testing.assert_array_equal(counts[0], b.sum(axis=0))
    assert counts[0].dtype == np.int64 and counts[2].dtype == np.int64
    np.testing.assert_allclose(counts[1], b.mean())


def test_equality_is_elementwise_and_integer_true_division_is_refused(rt):
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])
    x, y = rt.tensor(a), rt.tensor(b)
    np.testing.assert_array_equal((x == y).numpy(), a == b)
    np.testing.assert_array_equal((x != y).numpy(), a != b)
    np.testing.assert_array_equal((x == 2.0).numpy(), a == 2.0)
    assert (x == None) is False and (x != None) is True  # noqa: E711 (Python's identity test)
    i = rt.tensor(np.array([1, 2, 3]))
    with pytest.raises(tenferro.DTypeError):
        i / i  # numpy gives floats; the core's integer division truncates: convert first
    np.testing.assert_allclose((i.astype(np.float64) / 2).numpy(), np.array([1, 2, 3]) / 2)


def test_floor_division_and_modulo_follow_numpy(rt):
    # Note [Floor division]: numpy's floor_divide and mod (signs of zeros, infinities, NaN,
    # zero divisors, MIN // -1 included), composed from the core's truncating ops.
    rng = np.random.default_rng(3)
    special_a = [0.0, -0.0, 5, -5, 1e300, -1e-300, np.inf, -np.inf, np.nan, 7.5, -7.5, 3, 1e17, 4e15, 6, -6]
    special_b = [3, 3, 0.0, -0.0, 7, 3, 2, 2, 2, np.inf, -np.inf, -3, 3, 0.1, 3, -3]
    for dtype in (np.float64, np.float32, np.int64, np.int32):
        if np.issubdtype(dtype, np.floating):
            with np.errstate(over="ignore"):
                a = np.concatenate([rng.normal(0, 10, 300), special_a]).astype(dtype)
                b = np.concatenate([rng.normal(0, 3, 300), special_b]).astype(dtype)
        else:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
            b = rng.integers(-5, 6, 300).astype(dtype)
            a[:5], b[:5] = [0, 1, info.max, info.min, 7], [3, 0, 2, -1, 0]
        with np.errstate(all="ignore"):
            want_q, want_r = np.floor_divide(a, b), np.mod(a, b)
        x, y = rt.tensor(a), rt.tensor(b)
        q, r = divmod(x, y)
        for got, want in [(x // y, want_q), (x % y, want_r), (q, want_q), (r, want_r)]:
            got = np.asarray(got)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            if np.issubdtype(dtype, np.floating):  # zeros carry numpy's signs
                np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))
    t = rt.tensor(np.array([7.0, -7.0]))
    np.testing.assert_array_equal((7 // rt.tensor(np.array([2.0, -2.0]))).numpy(), [3.0, -4.0])
    np.testing.assert_array_equal((t % 3).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal((7 % rt.tensor(np.array([2, -2]))).numpy(), [1, -1])
    np.testing.assert_allclose((2 ** rt.tensor(np.array([3.0, 0.5]))).numpy(), [8.0, np.sqrt(2)])
    with pytest.raises(tenferro.DTypeError):
        rt.tensor(np.array([1 + 1j])) % 2  # numpy refuses complex mod too
    # Errors name the operation called, not one of the ops it is composed of.
    ints, floats, flags = rt.tensor(np.array([7, -7])), rt.tensor(np.array([2.0, 3.0])), rt.tensor(np.array([True]))
    for call, op, words in [(lambda: ints // floats, "floor_divide", "i64 and f64 differ"),
                            (lambda: floats % ints, "remainder", "f64 and i64 differ"),
                            (lambda: divmod(ints, floats), "divmod", "i64 and f64 differ"),
                            (lambda: flags // flags, "floor_divide", "dtype bool"),
                            (lambda: flags % flags, "remainder", "dtype bool")]:
        with pytest.raises(tenferro.DTypeError) as info:
            call()
        assert op + ":" in str(info.value) and words in str(info.value), str(info.value)
    # Gradients as numpy/torch define them: d(a % b)/da = 1, d(a % b)/db = -floor(a / b),
    # zero through the quotient; checked against central differences.
    a0, b0 = np.array([5.3, -5.3, 7.9, -2.2]), np.array([2.1, 2.1, -3.2, -0.7])
    ga, gb = tenferro.grad(lambda u, v: ((u % v) * (u % v)).sum() + (u // v).sum())(rt.tensor(a0), rt.tensor(b0))
    f = lambda u, v: ((np.mod(u, v)) ** 2).sum() + np.floor_divide(u, v).sum()
    h = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        np.testing.assert_allclose(ga.numpy()[k], (f(a0 + e, b0) - f(a0 - e, b0)) / (2 * h), rtol=1e-6)
        np.testing.assert_allclose(gb.numpy()[k], (f(a0, b0 + e) - f(a0, b0 - e)) / (2 * h), rtol=1e-6)


def test_any_and_all_follow_numpy(rt):
    # Nonzero (NaN included) is true; any over no elements is False, all is True.
    import itertools
    rng = np.random.default_rng(5)
    for shape in [(3, 4), (0, 3), (2, 0, 3), (5,), (), (2, 3, 4)]:
        for dtype in (bool, np.float64, np.int32, np.complex128):
            if dtype is bool:
                a = rng.random(shape) < 0.3
            else:
                a = (rng.integers(0, 2, shape) * (rng.random(shape) < 0.5)).astype(dtype)
            if dtype is np.float64 and a.size:
                a.flat[0] = np.nan
            x = rt.tensor(a)
            axes = [None, ()] + [c for r in range(1, len(shape) + 1) for c in itertools.combinations(range(len(shape)), r)]
            for axis in axes + ([-1] if shape else []):
                for keepdims in (False, True):
                    for name in ("any", "all"):
                        got = np.asarray(getattr(x, name)(axis=axis, keepdims=keepdims))
                        want = getattr(np, name)(a, axis=axis, keepdims=keepdims)
                        assert got.dtype == np.bool_ and got.shape == np.shape(want)
                        np.testing.assert_array_equal(got, want)
    with pytest.raises(tenferro.InvalidArgumentError, match="any: axis 2 out of range"):
        rt.tensor(np.ones((2, 3))).any(axis=2)
    with pytest.raises(tenferro.InvalidArgumentError, match="all: axis -1 repeated"):
        rt.tensor(np.ones((2, 3))).all(axis=(1, -1))


def test_logical_operators_of_bool_tensors_follow_numpy(rt):
    # & | ^ ~ of bool tensors (broadcast; with numpy bool arrays, lists and Python bools on
    # either side) are eager tensors; other dtypes are a DTypeError (no integer bitwise ops).
    rng = np.random.default_rng(8)
    a, b = rng.random((3, 1, 4)) < 0.5, rng.random((2, 4)) < 0.5
    x, y = rt.tensor(a), rt.tensor(b)
    cases = [(x & y, a & b), (x | y, a | b), (x ^ y, a ^ b), (~x, ~a), (x & True, a & True), (False | x, False | a),
             (a & y, a & b), (b ^ x, b ^ a), (x | [True, False, False, True], a | [True, False, False, True]),
             (np.invert(y), ~b), (np.bitwise_xor(x, y), a ^ b), (~(x & ~y), ~(a & ~b))]
    for k, (got, want) in enumerate(cases):
        assert isinstance(got, tenferro.EagerTensor), k
        assert got.dtype == np.bool_ and got.shape == want.shape, k
        np.testing.assert_array_equal(got.numpy(), want, err_msg=str(k))
    ints = rt.tensor(np.arange(3))
    for bad in (lambda: ints & x[0, 0, :3], lambda: x & 1, lambda: ~ints, lambda: rt.tensor(np.ones(2)) | True):
        with pytest.raises(tenferro.DTypeError, match="takes bool tensors"):
            bad()


def test_ravel_squeeze_and_clip_follow_numpy(rt):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 1, 3, 1))
    a[0, 0, 0, 0] = np.nan
    x = rt.tensor(a)
    cases = [(x.ravel(), a.ravel()), (x.transpose(2, 0, 1, 3).ravel(), a.transpose(2, 0, 1, 3).ravel()),
             (x[:, :, ::-1].ravel(), a[:, :, ::-1].ravel()), (x.squeeze(), a.squeeze()),
             (x.squeeze(axis=1), a.squeeze(axis=1)), (x.squeeze(axis=(1, -1)), a.squeeze(axis=(1, -1))),
             (x.clip(-0.5, 0.5), a.clip(-0.5, 0.5)), (x.clip(min=0), a.clip(min=0)), (x.clip(max=0), a.clip(max=0)),
             (x.clip(0.5, -0.5), a.clip(0.5, -0.5)), (x.clip(rt.tensor(np.full((3, 1), -0.2)), 0.3),
                                                       a.clip(np.full((3, 1), -0.2), 0.3))]
    for got, want in cases:
        assert np.asarray(got).shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)  # NaN stays NaN, as numpy's clip
    assert np.shares_memory(np.asarray(x.ravel()), a)  # a view where the layout allows, as numpy
    np.testing.assert_array_equal(rt.tensor(np.array([1, 5, -3])).clip(0, 2).numpy(), [1, 2, 0])
    with pytest.raises(ValueError, match="extent 2, not 1"):
        x.squeeze(axis=0)
    with pytest.raises(ValueError, match="out of range"):
        x.squeeze(axis=7)
    with pytest.raises(ValueError, match="one of min or max"):
        x.clip()
    # Gradients: through the views as through reshape, clip's where the value is inside.
    b = np.array([[-1.0, 0.2], [0.7, 0.1]])
    (g,) = tenferro.grad(lambda t: (t.clip(-0.5, 0.5).ravel() * rt.tensor(np.arange(4.0))).sum())(rt.tensor(b))
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0], [0.0, 3.0]])


def test_diagonal_trace_var_std_and_copies_follow_numpy(rt):
    rng = np.random.default_rng(7)
    for dtype in (np.float64, np.float32, np.complex128):
        a = rng.standard_normal((3, 4, 5)).astype(dtype)
        if dtype is np.complex128:
            a = a + 1j * rng.standard_normal((3, 4, 5))
        x = rt.tensor(a)
        tol = 1e-5 if dtype is np.float32 else 1e-12
        for offset in (-(1 << 63), -(1 << 62), -4, -1, 0, 1, 2, 7, 1 << 62, (1 << 63) - 1):
            for axis1, axis2 in [(0, 1), (1, 0), (0, 2), (2, 0), (-1, 1)]:
                # numpy takes C-int offsets; past the extents every offset gives the same.
                k = max(min(offset, (1 << 31) - 1), -(1 << 31) + 1)
                np.testing.assert_allclose(x.diagonal(offset, axis1, axis2).numpy(), a.diagonal(k, axis1, axis2))
                np.testing.assert_allclose(x.trace(offset, axis1, axis2).numpy(), a.trace(k, axis1, axis2),
                                           rtol=tol, atol=tol)
        for axis in (None, (), 0, -1, (0, 2), (0, 1, 2)):
            for ddof in (0, 1, 3):
                for keepdims in (False, True):
                    for name in ("var", "std"):
                        with np.errstate(all="ignore"), warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)  # ddof past the samples
                            want = getattr(a, name)(axis=axis, ddof=ddof, keepdims=keepdims)
                        got = getattr(x, name)(axis=axis, ddof=ddof, keepdims=keepdims).numpy()
                        assert got.dtype == want.dtype and got.shape == want.shape  # real for complex
                        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        for axis1, axis2 in [(0, 1), (2, 0), (-1, -2), (1, 1)]:
            np.testing.assert_array_equal(x.swapaxes(axis1, axis2).numpy(), a.swapaxes(axis1, axis2))
        for perm in [(0, 2, 1), (-1, 0, -2), (2, -2, -3)]:  # negative axes count from the end, as numpy's
            np.testing.assert_array_equal(x.transpose(perm).numpy(), a.transpose(perm))
            np.testing.assert_array_equal(x.transpose(*perm).numpy(), a.transpose(*perm))
        np.testing.assert_array_equal(x[:, ::-1].flatten().numpy(), a[:, ::-1].flatten())
        assert x.tolist() == a.tolist()
    # copy and flatten own their memory; ravel is a view where the layout allows.
    b = np.arange(6.0).reshape(2, 3)
    y = rt.tensor(b)
    c, f, r = y.copy(), y.flatten(), y.ravel()
    b[0, 0] = 100.0
    assert c.numpy()[0, 0] == 0.0 and f.numpy()[0] == 0.0 and r.numpy()[0] == 100.0
    with pytest.raises(ValueError, match="cannot be the same"):
        y.diagonal(0, 1, -1)
    with pytest.raises(ValueError, match="out of range"):
        y.swapaxes(0, 3)
    assert rt.tensor(np.arange(3)).var().numpy() == np.var(np.arange(3))  # integers in float64, as numpy
    # Gradients through the compositions, against central differences.
    a0 = rng.standard_normal((3, 4))
    (g,) = tenferro.grad(lambda t: t.var(axis=0, ddof=1).sum() + t.std() + t.trace(1))(rt.tensor(a0))
    f0 = lambda v: v.var(axis=0, ddof=1).sum() + v.std() + v.trace(1)
    fd = np.zeros_like(a0)
    for idx in np.ndindex(a0.shape):
        e = np.zeros_like(a0)
        e[idx] = 1e-6
        fd[idx] = (f0(a0 + e) - f0(a0 - e)) / 2e-6
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_concatenate_stack_tril_triu_follow_numpy(rt):
    rng = np.random.default_rng(4)
    a, b, c = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 1, 4))
    xs = [rt.tensor(v) for v in (a, b, c)]
    for axis in (1, -2):
        np.testing.assert_array_equal(tenferro.concatenate(xs, axis=axis).numpy(), np.concatenate([a, b, c], axis=axis))
    np.testing.assert_array_equal(tenferro.concatenate(xs, axis=None).numpy(), np.concatenate([a, b, c], axis=None))
    same = [rng.standard_normal((3, 4)) for _ in range(3)]
    for axis in (0, 1, 2, -1, -3):
        np.testing.assert_array_equal(tenferro.stack([rt.tensor(v) for v in same], axis=axis).numpy(),
                                      np.stack(same, axis=axis))
    m = rng.standard_normal((2, 4, 5))
    for k in (-5, -1, 0, 1, 3, 9):
        np.testing.assert_array_equal(tenferro.tril(rt.tensor(m), k).numpy(), np.tril(m, k))
        np.testing.assert_array_equal(tenferro.triu(rt.tensor(m), k).numpy(), np.triu(m, k))
        np.testing.assert_array_equal(tenferro.tril(rt.tensor(m[0].T), k).numpy(), np.tril(m[0].T, k))
    with pytest.raises(ValueError, match="at least one"):
        tenferro.concatenate([], 0)
    with pytest.raises(ValueError, match="out of range"):
        tenferro.concatenate(xs, axis=3)
    with pytest.raises(ValueError, match="same shape"):
        tenferro.stack(xs)
    with pytest.raises(tenferro.DTypeError):
        tenferro.concatenate([xs[0], rt.tensor(np.ones((2, 3, 4), dtype=np.float32))], axis=1)
    with pytest.raises(tenferro.ShapeError):
        tenferro.concatenate([xs[0], xs[1]], axis=0)
    # Gradients flow back to each part.
    u = rt.tensor(same[0])
    w = np.arange(24.0).reshape(3, 2, 4)
    (g,) = tenferro.grad(lambda t: (tenferro.stack([t, t * 2], axis=1) * rt.tensor(w)).sum())(u)
    np.testing.assert_allclose(g.numpy(), w[:, 0, :] + 2 * w[:, 1, :])
    (g,) = tenferro.grad(lambda t: (tenferro.triu(t, 1) * t).sum())(u)
    np.testing.assert_allclose(g.numpy(), 2 * np.triu(same[0], 1))


def test_format_follows_numpy(rt):
    x = rt.tensor(np.array(3.14159))
    assert f"{x:.2f}" == "3.14" and f"{x:.1e}" == "3.1e+00"
    assert f"{rt.tensor(np.array([1.0, 2.0]))}" == f"{np.array([1.0, 2.0])}"
    with pytest.raises(TypeError):
        f"{rt.tensor(np.array([1.0, 2.0])):.2f}"  # numpy refuses number formats of arrays too


def test_numpy_ufuncs_dispatch_to_tenferro_and_keep_gradients(rt):
    # np.exp(x), numpy scalars and arrays next to eager tensors: tenferro operations (the
    # result records for AD); other ufuncs compute in numpy unless that would drop a gradient.
    a = np.array([1.0, 2.0])
    x = rt.tensor(a).requires_grad_()
    for got, want in [(np.ones(2) + x, a + 1), (np.float64(2.0) * x, 2 * a), (np.exp(x), np.exp(a)),
                      (np.ones(2) < x, np.ones(2) < a), (np.eye(2) @ x, a), (3 ** x, 3 ** a),
                      (np.array([5.0, 7.0]) % x, np.array([5.0, 7.0]) % a), (np.sqrt(x), np.sqrt(a)),
                      (np.negative(x), -a), (np.absolute(x), a), (np.array([3.0, 1.0]) - x, np.array([3.0, 1.0]) - a)]:
        assert isinstance(got, tenferro.EagerTensor)
        np.testing.assert_allclose(got.detach().numpy(), want)
    q, r = np.divmod(np.array([5.0, 7.0]), x)
    np.testing.assert_array_equal(q.detach().numpy(), [5.0, 3.0])
    loss = (np.float64(0.5) * (x * x)).sum()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), a)
    with pytest.raises(TypeError, match="drop the gradient"):
        np.cbrt(x)
    with pytest.raises(TypeError, match="drop the gradient"):
        np.add.outer(x, x)
    y = rt.tensor(a)
    assert isinstance(np.cbrt(y), np.ndarray)  # no gradient to lose: numpy computes
    with pytest.raises(tenferro.DTypeError):
        np.ones(2, dtype=np.float32) + y  # no implicit promotion, as the operators


def test_numpy_functions_dispatch_to_tenferro(rt):
    # np.sum(x), np.transpose(x), np.linalg.det(x), ... run tenferro operations on eager
    # tensors (results are eager tensors that record for AD); other numpy functions compute
    # in numpy unless an operand requires grad.
    a = np.array([[1.0, 2.0], [3.0, 4.5]])
    for x in (rt.tensor(a), rt.tensor(a).requires_grad_()):
        cases = [(np.sum(x), np.sum(a)), (np.sum(x, axis=0, keepdims=True), np.sum(a, axis=0, keepdims=True)),
                 (np.mean(x, 1), np.mean(a, 1)), (np.max(x), np.max(a)), (np.amin(x, axis=1), np.amin(a, axis=1)),
                 (np.std(x, ddof=1), np.std(a, ddof=1)), (np.var(x, axis=0), np.var(a, axis=0)),
                 (np.any(x > 4), np.any(a > 4)), (np.transpose(x), a.T), (np.reshape(x, (4,)), a.reshape(4)),
                 (np.ravel(x), a.ravel()), (np.trace(x), np.trace(a)), (np.clip(x, 1.5, 3), np.clip(a, 1.5, 3)),
                 (np.diagonal(x), np.diagonal(a)), (np.squeeze(x[None]), a), (np.swapaxes(x, 0, 1), a.T),
                 (np.concatenate([x, x], axis=1), np.concatenate([a, a], axis=1)), (np.stack([x, x]), np.stack([a, a])),
                 (np.tril(x), np.tril(a)), (np.triu(x, 1), np.triu(a, 1)), (np.where(x > 2, x, x * 0), np.where(a > 2, a, 0)),
                 (np.einsum("ij,jk->ik", x, x), a @ a), (np.linalg.det(x), np.linalg.det(a)),
                 (np.linalg.norm(x), np.linalg.norm(a)), (np.linalg.inv(x), np.linalg.inv(a)),
                 (np.linalg.svd(x, compute_uv=False), np.linalg.svd(a, compute_uv=False)), (np.real(x), a),
                 (np.take(x, [1, 0], axis=1), np.take(a, [1, 0], axis=1))]
        for got, want in cases:
            assert isinstance(got, tenferro.EagerTensor)
            np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12)
        assert np.shape(x) == (2, 2) and np.ndim(x) == 2 and np.size(x) == 4
    x = rt.tensor(a).requires_grad_()
    np.sum(np.transpose(x) * np.float64(2.0)).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 2.0))
    with pytest.raises(TypeError, match="drop the gradient"):
        np.histogram(x)
    with pytest.raises(TypeError, match="drop the gradient"):
        np.sum(x, dtype=np.float32)  # a conversion tenferro does not make implicitly
    y = rt.tensor(a)
    assert not isinstance(np.histogram(y)[0], tenferro.EagerTensor)  # no gradient to lose: numpy computes
    np.testing.assert_allclose(np.histogram(y)[1], np.histogram(a)[1])


def test_numpy_products_and_axis_moves_dispatch_to_tenferro(rt):
    # np.dot, tensordot, inner, outer, vdot, kron (einsum) and moveaxis, expand_dims (views)
    # on eager tensors match numpy and record for AD; operands of another dtype compute
    # in numpy.
    rng = np.random.default_rng(21)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4, 6))
    m, v = rng.standard_normal((4, 4)), rng.standard_normal(4)
    c = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    A, B, M, V, C = (rt.tensor(t) for t in (a, b, m, v, c))
    cases = [(np.dot(V, V), np.dot(v, v)), (np.dot(M, v), m @ v), (np.dot(V, M), v @ m), (np.dot(A, B), np.dot(a, b)),
             (np.dot(A, v), np.dot(a, v)), (np.tensordot(A, M, axes=1), np.tensordot(a, m, axes=1)),
             (np.tensordot(A, B, axes=([2], [1])), np.tensordot(a, b, axes=([2], [1]))),
             (np.tensordot(V, V, axes=0), np.tensordot(v, v, axes=0)),
             (np.tensordot(A, A, axes=([1, 2], [1, 2])), np.tensordot(a, a, axes=([1, 2], [1, 2]))),
             (np.inner(A, M), np.inner(a, m)), (np.outer(A, v), np.outer(a, v)), (np.vdot(C, C), np.vdot(c, c)),
             (np.kron(M[:2, :3], M[:3, :2]), np.kron(m[:2, :3], m[:3, :2])), (np.kron(V, M), np.kron(v, m)),
             (np.moveaxis(A, 0, -1), np.moveaxis(a, 0, -1)), (np.moveaxis(A, [0, 1], [-1, -2]), np.moveaxis(a, [0, 1], [-1, -2])),
             (np.expand_dims(A, (0, -1)), np.expand_dims(a, (0, -1)))]
    for got, want in cases:
        assert isinstance(got, tenferro.EagerTensor)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    assert isinstance(np.dot(M, v.astype(np.float32)), np.ndarray)  # another dtype: numpy computes
    # Gradients against central differences.
    f = lambda t: np.sum(np.dot(t, v)) + np.tensordot(t, t, axes=2) + np.sum(np.kron(t, t) * 0.5) + np.sum(np.moveaxis(t, 0, 1) * m)
    x = rt.tensor(m).requires_grad_()
    f(x).backward()
    d, h = rng.standard_normal(m.shape), 1e-6
    fd = (f(m + h * d) - f(m - h * d)) / (2 * h)
    np.testing.assert_allclose(np.sum(x.grad.numpy() * d), fd, rtol=1e-7)


def test_einsum_of_eager_tensors_and_arrays_stays_eager(rt):
    # Arrays next to eager tensors are constants on their runtime; the result records for
    # AD (it was a numpy array, silently without the gradient).
    a = np.array([[1.0, 2.0], [3.0, 4.5]])
    x = rt.tensor(a).requires_grad_()
    for r in (tenferro.einsum("ij,jk->ik", x, a), np.einsum("ij,jk->ik", a, x), tenferro.einsum(x, [0, 1], a, [1, 2], [0, 2])):
        assert isinstance(r, tenferro.EagerTensor)
        np.testing.assert_allclose(r.detach().numpy(), a @ a)
    tenferro.einsum("ij,jk->", x, a).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 2)) @ a.T)
    with pytest.raises(tenferro.DTypeError):
        tenferro.einsum("ij,jk->ik", x, np.eye(2, dtype=np.float32))


def test_einsum_of_c_ordered_eager_tensors_matches_numpy(rt):
    # C-ordered eager tensors of a problem past the size threshold run a row-major plan
    # (Note [Row-major operands]); eagerly, through jit (a prepared einsum node holds
    # plans of both orders) and for the gradient the values are numpy's.
    rng = np.random.default_rng(31)
    a = rng.standard_normal((24, 20, 18))
    b = rng.standard_normal((18, 30))
    c = rng.standard_normal((30, 7))
    subs = "ijk,kl,lm->mji"
    want = np.einsum(subs, a, b, c)
    xs = [rt.tensor(v) for v in (a, b, c)]
    np.testing.assert_allclose(tenferro.einsum(subs, *xs).numpy(), want, rtol=1e-12, atol=1e-12)
    f = tenferro.jit(lambda p, q, r: tenferro.einsum(subs, p, q, r))
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f(*xs)), want, rtol=1e-12, atol=1e-12)
    fortran = [rt.tensor(np.asfortranarray(v)) for v in (a, b, c)]
    np.testing.assert_allclose(np.asarray(f(*fortran)), want, rtol=1e-12, atol=1e-12)
    x = rt.tensor(a).requires_grad_()
    tenferro.einsum(subs, x, xs[1], xs[2]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.einsum("mji,kl,lm->ijk", np.ones(want.shape), b, c), rtol=1e-12)


def test_copy_module_copies(rt):
    import copy
    a = np.arange(3.0)
    x = rt.tensor(a)
    for c in (copy.copy(x), copy.deepcopy(x), copy.deepcopy([x])[0]):
        assert isinstance(c, tenferro.EagerTensor) and not c.requires_grad
        np.testing.assert_array_equal(c.numpy(), a)
        assert not np.shares_memory(c.numpy(), a)
    p = rt.tensor(np.ones(2)).requires_grad_()
    q = copy.deepcopy(p)  # a new leaf: its gradient is its own
    (q * 3).sum().backward()
    np.testing.assert_array_equal(q.grad.numpy(), [3.0, 3.0])
    assert p.grad is None


def test_pickle_keeps_values_dtype_shape_and_requires_grad(rt):
    import pickle
    rng = np.random.default_rng(23)
    for a in (rng.standard_normal((3, 4)).T, (rng.standard_normal(5) + 1j).astype(np.complex64),
              rng.integers(-5, 5, (2, 0, 3)).astype(np.int32), np.array(True)):
        y = pickle.loads(pickle.dumps(rt.tensor(a)))
        assert isinstance(y, tenferro.EagerTensor) and y.dtype == a.dtype and y.shape == a.shape
        np.testing.assert_array_equal(y.numpy(), a)
        assert not y.requires_grad
    leaf = pickle.loads(pickle.dumps(rt.tensor(np.ones(2)).requires_grad_()))
    assert leaf.requires_grad
    (leaf * 2).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 2.0])
    nested = pickle.loads(pickle.dumps({"x": [rt.tensor(np.arange(3))]}))
    np.testing.assert_array_equal(nested["x"][0].numpy(), np.arange(3))
    with pytest.raises(TypeError, match="tenferro.trace: pickle"):
        tenferro.trace(lambda t: pickle.loads(pickle.dumps(t)), np.ones(2))


def test_unsupported_operands_raise_python_type_errors(rt):
    # Operators return NotImplemented for what they cannot take (Python's TypeError);
    # lists of numbers are values in the tensor's dtype, as scalars are.
    x = rt.tensor(np.arange(6.0).reshape(2, 3))
    for bad in ("a", None, object()):
        for op in (lambda: x + bad, lambda: bad * x, lambda: x @ bad, lambda: x // bad, lambda: x ** bad):
            # ("a" * x: str's repetition asks for an index, as it does of a numpy array)
            with pytest.raises(TypeError, match="unsupported operand|can't multiply|converted to an index"):
                op()
    np.testing.assert_array_equal((x + [0, 5, 1]).numpy(), np.arange(6.0).reshape(2, 3) + [0, 5, 1])
    np.testing.assert_array_equal((x * (1, 2, 3)).numpy(), np.arange(6.0).reshape(2, 3) * (1, 2, 3))
    np.testing.assert_array_equal((np.True_ * x).numpy(), np.arange(6.0).reshape(2, 3))  # numpy bools are numbers
    big = rt.tensor(np.array([1, 2], dtype=np.int64)) + (2**60 + 1)  # exact, past 2^53
    np.testing.assert_array_equal(big.numpy(), np.array([1, 2]) + (2**60 + 1))
    with pytest.raises(TypeError, match="cotangent must be an EagerTensor"):
        x.requires_grad_().sum().backward("a")
    with pytest.raises(TypeError, match="expected an EagerTensor, a numpy array or a number"):
        x.clip("a", 1)


def test_more_ndarray_methods_follow_numpy(rt):
    import operator
    rng = np.random.default_rng(13)
    a = rng.standard_normal((3, 4))
    x = rt.tensor(a)
    np.testing.assert_allclose(x.cumsum(axis=1).numpy(), a.cumsum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(x.cumprod().numpy(), a.cumprod(), rtol=1e-13)
    np.testing.assert_array_equal(x.argsort(axis=0), a.argsort(axis=0))
    for got, want in zip((x > 0).nonzero(), (a > 0).nonzero()):
        np.testing.assert_array_equal(got, want)
    d = x.dot(x.T)
    assert isinstance(d, tenferro.EagerTensor)
    np.testing.assert_allclose(d.numpy(), a.dot(a.T), rtol=1e-13)
    np.testing.assert_array_equal((+x).numpy(), a)
    z = rt.tensor(a + 1j * a)
    np.testing.assert_array_equal(z.conjugate().numpy(), a - 1j * a)
    assert complex(z[1, 2]) == complex(a[1, 2], a[1, 2])
    assert ["a", "b", "c"][rt.tensor(np.array(-1, dtype=np.int32))] == "c"
    assert operator.index(rt.tensor(np.array(7))) == 7
    for not_index in (rt.tensor(np.array([1])), rt.tensor(np.array(1.0))):
        with pytest.raises(TypeError, match="converted to an index"):
            operator.index(not_index)
    with pytest.raises(tenferro.DTypeError, match="unary \\+ of a bool"):
        +rt.tensor(np.array([True]))
    with pytest.raises(TypeError, match="one-element"):
        complex(z)
    # gradients flow through the method forms as through the functions
    (g,) = tenferro.grad(lambda t: t.cumsum(axis=0).sum() + t.dot(t.T).sum())(x)
    want = np.arange(3, 0, -1)[:, None] * np.ones((1, 4)) + 2 * np.ones((3, 3)) @ a
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


def test_numbers_must_be_exact_values_of_an_integer_or_bool_tensor(rt):
    # Note [Python operands]: no silent wrap-around, truncation or promotion: a number an
    # integer or bool tensor cannot hold exactly is a typed error naming it.
    i32, i64 = rt.tensor(np.array([1, 2, 3], dtype=np.int32)), rt.tensor(np.array([1, 2, 3]))
    flags = rt.tensor(np.array([True, False, True]))
    for call, error, text in [
            (lambda: i32 + 2**40, tenferro.InvalidArgumentError, "1099511627776 with a tensor of dtype i32: out of"),
            (lambda: i32 * [1, 2**31, 1], tenferro.InvalidArgumentError, "out of the dtype's range"),
            (lambda: i32 - np.int64(2**35), tenferro.InvalidArgumentError, "out of the dtype's range"),
            (lambda: i64 + 2**70, tenferro.InvalidArgumentError, "out of the dtype's range"),
            (lambda: i64 * 2.5, tenferro.DTypeError, "2.5 with a tensor of dtype i64: not an integer"),
            (lambda: i64 > 1.5, tenferro.DTypeError, "not an integer"),
            (lambda: i64 + [0.5, 1, 2], tenferro.DTypeError, "not an integer"),
            (lambda: i64 + float("nan"), tenferro.DTypeError, "not an integer"),
            (lambda: flags == 2, tenferro.InvalidArgumentError, "not 0 or 1"),
            (lambda: i64 + [1j, 0, 0], tenferro.DTypeError, "a complex value")]:
        with pytest.raises(error, match=text):
            call()
    # Exact values convert, past 2^53 too; floating tensors round numbers as numpy does.
    np.testing.assert_array_equal((i64 + 2**62).numpy(), np.array([1, 2, 3]) + 2**62)
    np.testing.assert_array_equal((i32 + (2**31 - 4)).numpy(), np.array([1, 2, 3], dtype=np.int32) + (2**31 - 4))
    np.testing.assert_array_equal((i64 * 3.0).numpy(), [3, 6, 9])
    np.testing.assert_array_equal((flags == 1).numpy(), [True, False, True])
    f32 = rt.tensor(np.ones(2, dtype=np.float32))
    assert (f32 + 1e-10).dtype == np.float32 and (f32 * 2**70).numpy()[0] == np.float32(2.0**70)
    # tenferro.where takes a number branch by the same rule (0.5 became 0, 2**40 wrapped).
    with pytest.raises(tenferro.DTypeError, match="0.5 with a tensor of dtype i64: not an integer"):
        tenferro.where(i64 > 1, i64, 0.5)
    with pytest.raises(tenferro.InvalidArgumentError, match="out of the dtype's range"):
        tenferro.where(i32 > 1, 2**40, i32)
    np.testing.assert_array_equal(tenferro.where(i64 > 1, 7, i64).numpy(), [1, 7, 7])
    np.testing.assert_array_equal(tenferro.where(np.arange(3) > 0, np.arange(3.0), 0.5).numpy(), [0.5, 1.0, 2.0])
    with pytest.raises(tenferro.InvalidArgumentError, match="full_like: 1099511627776 is out of the range of dtype int32"):
        np.full_like(i32, 2**40)
    np.testing.assert_array_equal(np.full_like(i32, 2**40, dtype=np.int64).numpy(), [2**40] * 3)


def test_fmod_is_the_core_remainder_of_floating_tensors(rt):
    # numpy's fmod (C's: the dividend's sign) of floating tensors is the core rem: eager,
    # reflected, traced, differentiable; integer tensors compute in numpy (zero divisors).
    a = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, np.inf, 1.0, 3.0])
    b = np.array([2.0, 2.0, -2.0, -2.0, 1.0, 1.0, 1.0, np.inf, 0.0])
    with np.errstate(invalid="ignore"):
        want = np.fmod(a, b)
        for got in (np.fmod(rt.tensor(a), rt.tensor(b)), np.fmod(a, rt.tensor(b)),
                    tenferro.jit(lambda x, y: np.fmod(x, y))(a, b)):
            got = np.asarray(got)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(np.fmod(rt.tensor(a), 2.0).numpy(), np.fmod(a, 2.0))
    gx, gy = tenferro.grad(lambda x, y: np.fmod(x, y).sum())(np.array([5.5, -5.5]), np.array([2.0, 2.0]))
    np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(gy.numpy(), [-2.0, 2.0])  # -trunc(x / y)
    np.testing.assert_array_equal(np.fmod(rt.tensor(np.array([7, -7, 3])), 2), [1, -1, 1])


def test_inverse_functions_follow_numpy_trace_and_differentiate(rt):
    # arctan2 is the core atan2; arctan/arcsin/arccos/arctanh/arcsinh/arccosh, hypot and
    # angle are composed (Note [Inverse functions]): within a few units in the last place
    # of numpy's over wide ranges (8: numpy's own SIMD functions may be 4 away from the
    # correctly rounded value on some CPUs), numpy's NaNs, infinities and signed zeros, traced, and
    # their gradients the analytic derivatives (also far out, where a branch switches).
    rng = np.random.default_rng(41)
    special = np.array([0.0, -0.0, 1e-300, -1e-8, 0.5, -0.999999, 1.0, -1.0, 1.0000001, -2.0, 3e8, -1e300,
                        np.inf, -np.inf, np.nan])
    unary = (np.arctan, np.arcsin, np.arccos, np.arctanh, np.arcsinh, np.arccosh)
    for dtype in (np.float64, np.float32):
        eps = np.finfo(dtype).eps
        with np.errstate(all="ignore"):
            a = np.concatenate([special, *(rng.standard_normal(3000) * s for s in (1e-6, 0.6, 3, 1e7, 1e30))])
            a = a.astype(dtype)
            b = rng.permutation(a)
            x, y = rt.tensor(a), rt.tensor(b)
            z = (a + 1j * b).astype(np.result_type(dtype, np.complex64))
            cases = [(f.__name__, f(x), f(a)) for f in unary]
            cases += [("arctan2", np.arctan2(x, y), np.arctan2(a, b)), ("arctan2 reflected", np.arctan2(a, y),
                                                                         np.arctan2(a, b)),
                      ("hypot", np.hypot(x, y), np.hypot(a, b)), ("angle", np.angle(rt.tensor(z)), np.angle(z)),
                      ("angle of reals", np.angle(x), np.angle(a)), ("angle deg", np.angle(rt.tensor(z), deg=True),
                                                                     np.angle(z, deg=True))]
            for name, got, want in cases:
                assert isinstance(got, tenferro.EagerTensor), name
                got = got.numpy()
                assert got.dtype == want.dtype, name
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
                ok = ~np.isnan(want)
                np.testing.assert_allclose(got[ok], want[ok], rtol=8 * eps, atol=0, err_msg=name)
                zero = ok & (want == 0)
                np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=name)
    # Traced: the same values as eager (bitwise).
    a = np.array([-3.0, -0.4, 0.0, 0.7, 1.0, 2.5, 1e12])
    b = np.array([2.0, -1.0, -0.0, 0.3, -5.0, 0.0, 1.0])
    with np.errstate(all="ignore"):
        for f in (*unary, lambda t: np.arctan2(t, b), lambda t: np.hypot(b, t), np.angle):
            np.testing.assert_array_equal(np.asarray(tenferro.jit(f)(a)), f(rt.tensor(a)).numpy())
    # Gradients against the analytic derivatives, inside the domains and far out.
    derivs = {np.arctan: lambda v: 1 / (1 + v * v), np.arcsin: lambda v: 1 / np.sqrt(1 - v * v),
              np.arccos: lambda v: -1 / np.sqrt(1 - v * v), np.arctanh: lambda v: 1 / (1 - v * v),
              np.arcsinh: lambda v: 1 / np.sqrt(1 + v * v), np.arccosh: lambda v: 1 / np.sqrt(v * v - 1)}
    inside = np.array([-0.9, -0.3, 0.0, 0.2, 0.95])
    outside = np.array([1.5, 7.0, 1e3, 1e9, 1e40])
    for f, d in derivs.items():
        for v in (outside,) if f is np.arccosh else (inside, -outside, outside) if f in (np.arctan, np.arcsinh) \
                else (inside,):
            (g,) = tenferro.grad(lambda t: f(t).sum())(v)
            np.testing.assert_allclose(g.numpy(), d(v), rtol=1e-12, err_msg=f.__name__)
            np.testing.assert_allclose(np.asarray(tenferro.jit(tenferro.grad(lambda t: f(t).sum()))(v)[0]), d(v),
                                       rtol=1e-12)
    gy, gx = tenferro.grad(lambda u, w: np.arctan2(u, w).sum())(a[:4], b[:4] + 0.5)
    r2 = a[:4] ** 2 + (b[:4] + 0.5) ** 2
    np.testing.assert_allclose(gy.numpy(), (b[:4] + 0.5) / r2, rtol=1e-13)
    np.testing.assert_allclose(gx.numpy(), -a[:4] / r2, rtol=1e-13)
    (gh,) = tenferro.grad(lambda u: np.hypot(u, 4.0).sum())(np.array([3.0, -1e200]))
    np.testing.assert_allclose(gh.numpy(), [0.6, -1.0], rtol=1e-13)
    zc = np.array([1 + 2j, -3 - 0.5j])
    (ga,) = tenferro.grad(lambda t: np.angle(t).sum())(zc)  # d angle = Im(dz / z): the conjugate-gradient convention
    h = 1e-6
    fd = np.array([(np.angle(zc[k] + h) - np.angle(zc[k] - h)) / (2 * h) + 1j * (np.angle(zc[k] + 1j * h)
                   - np.angle(zc[k] - 1j * h)) / (2 * h) for k in range(2)])
    np.testing.assert_allclose(ga.numpy(), fd, rtol=1e-8)
    # Integers compute in numpy (float64 results), complex arguments too.
    assert isinstance(np.arctan(rt.tensor(np.array([1, 2]))), np.ndarray)
    np.testing.assert_allclose(np.arcsin(rt.tensor(np.array([2 + 0j]))), np.arcsin(np.array([2 + 0j])))
    with pytest.raises(tenferro.DTypeError, match="atan2"):
        np.arctan2(rt.tensor(np.array([1.0], np.float32)), rt.tensor(np.array([1.0])))


def test_logaddexp_fmax_heaviside_float_power_follow_numpy_trace_and_differentiate(rt):
    # Composed binary ufuncs of real floating tensors (Note [logaddexp]): every pair of a
    # grid of special values (zeros, huge, tiny results, infinities, NaN) and random pairs,
    # with a number operand too; traced bitwise as eager; gradients the softmax weights
    # (1/2 each at a tie), fmax/fmin routing around NaN, heaviside none.
    rng = np.random.default_rng(43)
    grid = np.array([0.0, -0.0, 1.0, -1.0, 40.0, -40.0, 700.0, -745.0, 1e300, -1e300, np.inf, -np.inf, np.nan])
    funcs = (np.logaddexp, np.logaddexp2, np.fmax, np.fmin, np.heaviside, np.float_power)
    for dtype in (np.float64, np.float32):
        with np.errstate(all="ignore"):
            a = np.concatenate([np.repeat(grid, grid.size), rng.standard_normal(2000) * 30]).astype(dtype)
            b = np.concatenate([np.tile(grid, grid.size), rng.standard_normal(2000) * 30]).astype(dtype)
            for f in funcs:
                for got, want in ((f(rt.tensor(a), rt.tensor(b)), f(a, b)), (f(rt.tensor(a), 0.5), f(a, dtype(0.5))),
                                  (f(a, rt.tensor(b)), f(a, b))):
                    assert isinstance(got, tenferro.EagerTensor), f.__name__
                    got = got.numpy()
                    assert got.dtype == want.dtype, f.__name__
                    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(want.dtype).eps, atol=0,
                                               equal_nan=True, err_msg=f.__name__)
    x = np.array([0.3, 2.0, -1.0, 5.0, -800.0])
    y = np.array([0.3, -1.0, 4.0, 5.0 + 1e-9, 3.0])
    with np.errstate(all="ignore"):
        for f in funcs:
            np.testing.assert_array_equal(np.asarray(tenferro.jit(f)(x, y)), f(rt.tensor(x), rt.tensor(y)).numpy())
    for f, base in ((np.logaddexp, np.e), (np.logaddexp2, 2.0)):
        gx, gy = tenferro.grad(lambda u, v: f(u, v).sum())(x, y)
        with np.errstate(over="ignore"):
            w = 1 / (1 + np.power(base, y - x))  # d f / dx; 1 - w for y
        np.testing.assert_allclose(gx.numpy(), w, rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(gy.numpy(), 1 - w, rtol=1e-14, atol=1e-300)
        assert gx.numpy()[0] == gy.numpy()[0] == 0.5  # a tie
    nan_y = np.array([np.nan, 3.0, -2.0, 5.0, np.nan])
    for f, x_wins in ((np.fmax, [1, 0, 1, 1, 1]), (np.fmin, [1, 1, 0, 1, 1])):
        gx, gy = tenferro.grad(lambda u, v: f(u, v).sum())(x, nan_y)
        np.testing.assert_array_equal(gx.numpy(), x_wins)
        np.testing.assert_array_equal(gy.numpy(), 1 - np.array(x_wins))
    (gh,) = tenferro.grad(lambda u: np.heaviside(u, 0.5).sum())(x)
    np.testing.assert_array_equal(gh.numpy(), np.zeros(5))
    (gp,) = tenferro.grad(lambda u: np.float_power(u, 3.0).sum())(x[:4].astype(np.float32))
    assert gp.dtype == np.float32
    np.testing.assert_allclose(gp.numpy(), 3 * x[:4].astype(np.float32) ** 2, rtol=1e-6)


_COMPOSED_CASES = [  # (name, call on numpy's namespace and an array or eager tensor, traceable)
    ("atleast_2d", lambda x: np.atleast_2d(x[0]), True), ("atleast_3d", lambda x: np.atleast_3d(x), True),
    ("rot90", lambda x: np.rot90(x), True), ("rot90 k=3", lambda x: np.rot90(x, 3), True),
    ("rot90 k=-2 axes", lambda x: np.rot90(x, -2, axes=(1, 0)), True),
    ("append", lambda x: np.append(x, x), True), ("append axis", lambda x: np.append(x, x[:1], axis=0), True),
    ("delete", lambda x: np.delete(x, [0, 2], axis=1), True), ("delete flat", lambda x: np.delete(x, slice(1, 7, 2)), True),
    ("broadcast_arrays", lambda x: np.broadcast_arrays(x, x[0])[1], True),
    ("meshgrid", lambda x: np.meshgrid(x[0], x[1, :3])[0], True),
    ("meshgrid ij", lambda x: np.meshgrid(x[0], x[1, :3], indexing="ij")[1], True),
    ("meshgrid 3-D", lambda x: np.meshgrid(x[0], x[1, :3], x[2, :2])[2], True),
    ("block 2-D", lambda x: np.block([[x, x[:, :1]], [x[:1], x[:1, :1]]]), True),
    ("block 1-D", lambda x: np.block([x[0], x[1]]), True),
    ("ptp", lambda x: np.ptp(x, axis=1), True), ("nansum", lambda x: np.nansum(x, axis=0), True),
    ("nanmean", lambda x: np.nanmean(x, axis=1), True), ("nanmax", lambda x: np.nanmax(x, axis=1), True),
    ("nanmin", lambda x: np.nanmin(x), True), ("nanprod", lambda x: np.nanprod(x, axis=1, keepdims=True), True),
    ("median", lambda x: np.median(x), True), ("median axis keepdims", lambda x: np.median(x, axis=1, keepdims=True), True),
    ("median axis 0", lambda x: np.median(x, axis=0), True),
    ("quantile", lambda x: np.quantile(x, [0.1, 0.5, 0.93], axis=1), True),
    ("percentile axes", lambda x: np.percentile(x, 37, axis=(0, 1)), True),
    ("cov", lambda x: np.cov(x), True), ("cov rowvar=False with y", lambda x: np.cov(x, x[:, :2], rowvar=False), True),
    ("cov 1-D bias", lambda x: np.cov(x[0], bias=True), True), ("corrcoef", lambda x: np.corrcoef(x), True),
    ("trapz", lambda x: np.trapz(x, axis=0), True), ("trapz x", lambda x: np.trapz(x, np.array([0.0, 0.5, 1.5, 3.0])), True),
    ("sinc", lambda x: np.sinc(x), True), ("select", lambda x: np.select([x > 0.5, x < -0.5], [x, x * 2], 7.0), True),
    ("cross 3x3", lambda x: np.cross(x[:, :3], x[:, 1:]), True), ("cross 2x2", lambda x: np.cross(x[:, :2], x[:, 2:]), True),
    ("cross 2x3", lambda x: np.cross(x[:, :2], x[:, 1:]), True),
    ("cross axis", lambda x: np.cross(x[:, :3].T, x[:, 1:].T, axis=0), True),
    ("cross axisc", lambda x: np.cross(x[:, :3], x[:, 1:], axisc=0), True),
    ("polyval", lambda x: np.polyval(x[0], x[1]), True), ("polyval list", lambda x: np.polyval([1.0, -2.0, 0.5], x), True),
    ("convolve", lambda x: np.convolve(x[0], x[1, :3]), True),
    ("convolve same (swapped)", lambda x: np.convolve(x[0, :2], x[1], "same"), True),
    ("convolve valid", lambda x: np.convolve(x[0], x[1, :3], "valid"), True),
    ("convolve same odd", lambda x: np.convolve(x.reshape(-1)[:7], x[1, :4], "same"), True),
    ("gradient axis", lambda x: np.gradient(x, axis=1), True),
    ("gradient edge_order=2", lambda x: np.gradient(x, 0.5, edge_order=2)[0], True),
    ("gradient spacings", lambda x: np.gradient(x, 0.5, 2.0)[1], True),
    ("interp fp", lambda x: np.interp(np.array([-1.0, 0.0, 0.3, 1.0, 2.5, 3.0, 9.0]), np.array([0.0, 1.0, 2.0, 3.0]), x[0]),
     True),  # intervals of constants: traceable
    ("interp x", lambda x: np.interp(x, np.array([-3.0, -1.0, 0.0, 0.5, 3.0]), np.array([1.0, 2.0, -1.0, 0.0, 4.0]),
                                     left=-9.0), False),
    # partition: the elements at kth are defined (the others' order is not)
    ("partition kth", lambda x: np.partition(x, [1, -1], axis=1)[:, [1, -1]], True),
    ("partition flat kth", lambda x: np.partition(x, 5, axis=None)[5], True),
    ("copy", lambda x: np.copy(x), True), ("real_if_close", lambda x: np.real_if_close(x.astype(np.complex128)), False),
]


def test_composed_numpy_functions_follow_numpy_trace_and_differentiate(rt):
    # numpy functions composed from tenferro operations (_numpy_composed.py): values, shapes
    # and dtypes as numpy's (also with NaN, as numpy propagates or skips it), gradients
    # against central differences, and the same values under jit where nothing reads the
    # values on the host.
    rng = np.random.default_rng(47)
    a = rng.standard_normal((3, 4))
    with_nan = a.copy()
    with_nan[1, 2] = np.nan
    with_nan[2, :] = np.nan
    for name, f, traceable in _COMPOSED_CASES:
        for values in (a, with_nan):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # numpy's all-NaN slice warnings
                want = np.asarray(f(values))
                got = f(rt.tensor(values).requires_grad_())
            assert isinstance(got, tenferro.EagerTensor), name
            got = got.detach().numpy()
            assert got.shape == want.shape and got.dtype == want.dtype, (name, got.shape, want.shape, got.dtype)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, equal_nan=True, err_msg=name)
        weights = rng.standard_normal(np.shape(f(a)))
        loss = lambda t: (f(t) * weights).sum()
        (g,) = tenferro.grad(loss)(a)
        h, fd = 1e-6, np.zeros_like(a)
        for k in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[k] = h
            fd[k] = (np.sum(np.asarray(f(a + e)) * weights) - np.sum(np.asarray(f(a - e)) * weights)) / (2 * h)
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-6, err_msg=name)
        if traceable:
            np.testing.assert_array_equal(np.asarray(tenferro.jit(f)(a)), f(rt.tensor(a)).numpy(), err_msg=name)
        else:
            with pytest.raises(TypeError, match="tenferro.trace: numpy"):
                tenferro.jit(f)(a)
    # argpartition: any order with the kth elements in place (tenferro's is the sorted one).
    for kth, axis in ((2, 1), ([0, 2], 0), (-1, None)):
        order = np.argpartition(rt.tensor(a), kth, axis=axis)
        picked = np.take_along_axis(a, order, axis) if axis is not None else a.reshape(-1)[order]
        np.testing.assert_array_equal(picked, np.sort(a, axis=axis))
    with pytest.raises(ValueError, match="out of bounds"):
        np.partition(rt.tensor(a), 4)
    assert np.partition(rt.tensor(np.zeros((3, 0))), 0).shape == (3, 0)  # numpy checks no kth there
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        np.quantile(rt.tensor(a), 1.5)
    assert np.real_if_close(rt.tensor(a + 1j)).dtype == np.complex128
    # unique: numpy's first occurrences (a host read: eager only), the values taken there,
    # so the gradient reaches each first occurrence; index / inverse / counts as numpy's.
    u = np.array([[2.0, 1.0, np.nan], [2.0, 5.0, np.nan]])
    for kwargs in ({}, dict(return_index=True, return_inverse=True, return_counts=True), dict(equal_nan=False)):
        got, want = np.unique(rt.tensor(u), **kwargs), np.unique(u, **kwargs)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert isinstance(got[0], tenferro.EagerTensor) and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
            assert np.asarray(g).dtype == w.dtype
    (gu,) = tenferro.grad(lambda t: (np.unique(t) * np.arange(1.0, 5.0)).sum())(np.array([2.0, 1.0, 2.0, 5.0, 0.5]))
    np.testing.assert_array_equal(gu.numpy(), [3.0, 2.0, 0.0, 4.0, 1.0])
    with pytest.raises(TypeError, match="tenferro.trace: numpy.unique"):
        tenferro.trace(lambda t: np.unique(t), u)
    with pytest.raises(TypeError, match="drop the gradient"):
        np.nanargmax(rt.tensor(a).requires_grad_()) + np.histogram(rt.tensor(a).requires_grad_())


def test_ufunc_reduce_and_accumulate_follow_numpy_trace_and_differentiate(rt):
    # add / multiply / maximum / minimum / logical_or / logical_and / logaddexp .reduce
    # (numpy's default axis 0, None, tuples, keepdims) and add / multiply .accumulate.
    rng = np.random.default_rng(53)
    a = rng.standard_normal((3, 4, 2)) * 20
    calls = [lambda m: np.add.reduce(m), lambda m: np.add.reduce(m, axis=(0, 2), keepdims=True),
             lambda m: np.multiply.reduce(m * 0.1, axis=None), lambda m: np.maximum.reduce(m, axis=1),
             lambda m: np.minimum.reduce(m, axis=-1, keepdims=True), lambda m: np.logaddexp.reduce(m, axis=1),
             lambda m: np.logaddexp.reduce(m, axis=None), lambda m: np.logaddexp.reduce(m, axis=(0, 1), keepdims=True),
             lambda m: np.add.accumulate(m), lambda m: np.multiply.accumulate(m * 0.1, axis=2),
             lambda m: np.logical_or.reduce(m > 10, axis=0), lambda m: np.logical_and.reduce(m > -30, axis=None)]
    for k, f in enumerate(calls):
        want = np.asarray(f(a))
        for got in (f(rt.tensor(a)), tenferro.jit(f)(a)):
            got = np.asarray(got)
            assert got.shape == want.shape and got.dtype == want.dtype, k
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=str(k))
    # logaddexp.reduce: the softmax weights as gradient; infinities and NaN as numpy's.
    (g,) = tenferro.grad(lambda t: np.logaddexp.reduce(t, axis=1).sum())(a)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(g.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    special = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [np.inf, np.inf]])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.logaddexp.reduce(rt.tensor(special), axis=1).numpy(),
                                      np.logaddexp.reduce(special, axis=1))
    for e in (np.zeros((0,)), np.zeros((3, 0))):  # empty reductions: logaddexp's identity, -inf
        got, want = np.logaddexp.reduce(rt.tensor(e), axis=-1), np.logaddexp.reduce(e, axis=-1)
        assert got.shape == want.shape and np.all(got.numpy() == want)
    with pytest.raises(TypeError, match="drop the gradient"):
        np.add.reduce(rt.tensor(a).requires_grad_(), where=a > 0)  # where= computes in numpy


def test_composed_numpy_functions_keep_numpys_result_dtypes(rt):
    # float32 quantiles and covariances are float64 (numpy's), median keeps float32, int32
    # convolutions stay int32, complex correlations are complex; where numpy promotes what
    # tenferro would not (select of bools with an integer default) or fails (quantiles and
    # gradients of bools), numpy's own computation runs and answers.
    rng = np.random.default_rng(59)
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    i32 = rng.integers(-5, 5, (2, 4)).astype(np.int32)
    c = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)))
    b = rng.random((3, 4)) < 0.5
    with np.errstate(all="ignore"):
        for a, f in [(f32, lambda m: np.quantile(m, 0.3, axis=0)), (f32, lambda m: np.percentile(m, 50)),
                     (f32, lambda m: np.median(m, axis=1)), (f32, np.cov), (f32, np.corrcoef), (c, np.corrcoef),
                     (c, np.cov), (i32, lambda m: np.convolve(m[0], m[1])), (i32, lambda m: np.median(m)),
                     (b, lambda m: np.select([m], [m], 1)), (b, lambda m: np.convolve(m[0], m[1])), (c, np.ptp)]:
            want = np.asarray(f(a))
            got = np.asarray(f(rt.tensor(a)))
            assert got.dtype == want.dtype and got.shape == want.shape, (a.dtype, got.dtype, want.dtype)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    for f in (lambda m: np.quantile(m, 0.5), lambda m: np.gradient(m, axis=0)):
        with pytest.raises(TypeError):  # numpy's: no subtraction of bools
            f(rt.tensor(b))


def test_average_follows_numpy_and_differentiates(rt):
    rng = np.random.default_rng(29)
    a, w, full = rng.standard_normal((3, 4)), rng.random(4), rng.random((3, 4))
    calls = [lambda t: np.average(t), lambda t: np.average(t, axis=0), lambda t: np.average(t, axis=1, weights=w),
             lambda t: np.average(t, axis=-1, weights=w, keepdims=True), lambda t: np.average(t, weights=full),
             lambda t: np.average(t, axis=(0, 1), weights=full)]
    for k, f in enumerate(calls):
        want = f(a)
        for got in (f(rt.tensor(a)), tenferro.jit(f)(a)):
            got = np.asarray(got)
            assert got.shape == np.shape(want), k
            np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=str(k))
    for kwargs in (dict(axis=1, weights=w), dict(axis=0)):
        got, want = np.average(rt.tensor(a), returned=True, **kwargs), np.average(a, returned=True, **kwargs)
        for g, v in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), v, rtol=1e-13)
    ints = np.arange(6).reshape(2, 3)
    got = np.average(rt.tensor(ints), axis=1)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.numpy(), np.average(ints, axis=1))
    f32 = np.average(rt.tensor(a.astype(np.float32)), axis=1, weights=w)  # float64 weights: float64, as numpy
    assert f32.dtype == np.average(a.astype(np.float32), axis=1, weights=w).dtype == np.float64
    (g,) = tenferro.grad(lambda t: np.average(t, axis=1, weights=w).sum())(a)
    np.testing.assert_allclose(g.numpy(), np.broadcast_to(w / w.sum(), (3, 4)), rtol=1e-13)
    with pytest.raises(TypeError, match="1-D weights"):
        np.average(rt.tensor(a), weights=w)


def test_nan_to_num_follows_numpy_traces_and_differentiates(rt):
    real = np.array([1.0, np.nan, np.inf, -np.inf, -0.0])
    cplx = np.array([np.nan + 1j, complex(np.inf, np.nan), 2 - 3j])
    for f in (lambda t: np.nan_to_num(t), lambda t: np.nan_to_num(t, nan=-1.0, posinf=9.0, neginf=-9.0),
              lambda t: np.nan_to_num(t, posinf=5.0)):
        for x in (real, real.astype(np.float32), cplx, cplx.astype(np.complex64), np.arange(3)):
            want = f(x)
            for got in (f(rt.tensor(x)), tenferro.jit(f)(x)):
                got = np.asarray(got)
                assert got.dtype == want.dtype, x.dtype
                np.testing.assert_array_equal(got, want)
    (g,) = tenferro.grad(lambda t: np.nan_to_num(t * 2.0).sum())(np.array([1.0, -3.0]))
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def test_take_follows_numpy(rt):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = rt.tensor(a)
    for indices in ([0], [1, -1, 0], np.array([[1, 0], [1, 1]]), 1, np.array([], dtype=np.int64)):
        for axis in (None, 0, 1, -1):
            want = np.take(a, indices, axis=axis)
            got = x.take(indices, axis=axis).numpy()
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x.take(rt.tensor(np.array([1, 0])), axis=1).numpy(), np.take(a, [1, 0], axis=1))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x.take([3], axis=1)  # numpy's mode 'raise' (the program's gather would clamp)
    with pytest.raises(TypeError, match="must be integers"):
        x.take([0.5])
    np.testing.assert_array_equal(x[[0, 1]].numpy(), a[[0, 1]])  # advanced indexing: take (test_indexing.py)
    (g,) = tenferro.grad(lambda t: t.take([2, 0, 2], axis=1).sum())(rt.tensor(a))
    want = np.zeros_like(a)
    want[:, 2] += 2
    want[:, 0] += 1
    np.testing.assert_array_equal(g.numpy(), want)


def test_iteration_and_membership_follow_numpy(rt):
    with pytest.raises(TypeError, match="0-d"):
        list(rt.tensor(np.array(3.0)))
    y = rt.tensor(np.arange(3.0))
    assert [float(v) for v in y] == [0.0, 1.0, 2.0]
    z = rt.tensor(np.arange(4.0).reshape(2, 2))
    assert [r.numpy().tolist() for r in z] == [[0.0, 1.0], [2.0, 3.0]]
    assert (2.0 in z) and (5.0 not in z) and (1.0 in y)


def test_maximum_and_minimum_follow_numpy(rt):
    a = np.array([1.0, -2.0, np.nan, 3.0])
    x = rt.tensor(a)
    for got, want in [(np.maximum(x, 0.0), np.maximum(a, 0.0)), (np.maximum(0.0, x), np.maximum(0.0, a)),
                      (np.minimum(x, np.array([0.0, 0.0, 0.0, 5.0])), np.minimum(a, [0.0, 0.0, 0.0, 5.0])),
                      (tenferro.maximum(x, x * 2), np.maximum(a, a * 2)), (tenferro.minimum(1.0, x), np.minimum(1.0, a))]:
        assert isinstance(got, tenferro.EagerTensor)
        np.testing.assert_array_equal(got.numpy(), want)  # NaN propagates, as numpy's
    b = rt.tensor(np.array([1.0, -2.0, 3.0])).requires_grad_()
    np.sum(np.maximum(b, 0.0) * 2.0).backward()
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 0.0, 2.0])
    # Two numbers: the first on the shared default runtime, as numpy's maximum of two.
    m = tenferro.maximum(1.0, 2.0)
    assert isinstance(m, tenferro.EagerTensor) and m.numpy() == 2.0


def test_composed_ufuncs_match_numpy_with_gradients(rt):
    """ufuncs without a core op of their own (square, reciprocal, log10, log2, exp2, tan,
    sinh, cosh, fabs, deg2rad, rad2deg) run as tenferro operations: values as numpy's,
    eager results, and derivatives as the calculus gives them."""
    rng = np.random.default_rng(31)
    base = rng.uniform(0.2, 1.3, (3, 4))
    derivative = {
        np.square: lambda a: 2 * a, np.reciprocal: lambda a: -1 / a ** 2, np.log10: lambda a: 1 / (a * np.log(10)),
        np.log2: lambda a: 1 / (a * np.log(2)), np.exp2: lambda a: np.log(2) * np.exp2(a),
        np.tan: lambda a: 1 / np.cos(a) ** 2, np.sinh: np.cosh, np.cosh: np.sinh,
        np.fabs: np.sign, np.deg2rad: lambda a: np.full_like(a, np.pi / 180),
        np.rad2deg: lambda a: np.full_like(a, 180 / np.pi), np.positive: np.ones_like,
    }
    for ufunc, d in derivative.items():
        for dtype in (np.float64, np.float32, np.complex128):
            if dtype == np.complex128 and ufunc in (np.fabs, np.deg2rad, np.rad2deg):
                continue
            a = (base * np.where(np.arange(4) % 2, -1, 1) if ufunc in (np.square, np.fabs, np.sinh, np.tan) else base)
            if dtype == np.complex128:
                a = a + 0.3j * rng.standard_normal(a.shape)
            a = a.astype(dtype)
            got = ufunc(rt.tensor(a))
            assert isinstance(got, tenferro.EagerTensor), ufunc
            tol = 1e-5 if dtype == np.float32 else 1e-13
            np.testing.assert_allclose(got.numpy(), ufunc(a), rtol=tol, atol=tol, err_msg=ufunc.__name__)
            assert got.dtype == ufunc(a).dtype
        a = base * np.where(np.arange(4) % 2, -1, 1) if ufunc in (np.square, np.fabs, np.sinh, np.tan) else base
        (g,) = tenferro.grad(lambda t: ufunc(t).sum())(a)
        np.testing.assert_allclose(g.numpy(), d(a), rtol=1e-12, err_msg=ufunc.__name__)
    # sinh keeps tiny arguments accurate (no cancellation).
    np.testing.assert_allclose(np.sinh(rt.tensor(np.array([1e-12, -3e-9]))).numpy(), [1e-12, -3e-9], rtol=1e-15)
    # Integer reciprocal is numpy's own (integer) computation.
    ints = np.array([1, 2, -1])
    np.testing.assert_array_equal(np.reciprocal(rt.tensor(ints)), np.reciprocal(ints))


def test_numpy_style_functions_take_plain_arrays():
    # With no eager tensor among their operands, the numpy-style functions put numpy
    # arrays (and numbers) on the shared default runtime, as flip and sort do: the result
    # is an eager tensor with numpy's values.
    a = np.arange(12.0).reshape(3, 4) - 5.0
    b = np.linspace(-2.0, 3.0, 12).reshape(3, 4)
    cases = [(tenferro.where(a > b, a, b), np.where(a > b, a, b)),
             (tenferro.where(a > 0, a, 0.5), np.where(a > 0, a, 0.5)),
             (tenferro.concatenate([a, b], axis=1), np.concatenate([a, b], axis=1)),
             (tenferro.concatenate([a, b], axis=None), np.concatenate([a, b], axis=None)),
             (tenferro.stack([a, b], axis=2), np.stack([a, b], axis=2)),
             (tenferro.maximum(a, b), np.maximum(a, b)), (tenferro.minimum(a, 1.5), np.minimum(a, 1.5)),
             (tenferro.minimum(2.0, a), np.minimum(2.0, a)),
             (tenferro.tril(a), np.tril(a)), (tenferro.tril(a, -1), np.tril(a, -1)), (tenferro.triu(a, 2), np.triu(a, 2)),
             (tenferro.tril(a, np.int64(1)), np.tril(a, 1)), (tenferro.triu(a, 1 << 62), np.triu(a, 1 << 62)),
             (tenferro.tril(a, -(1 << 63)), np.zeros_like(a))]
    for got, want in cases:
        assert isinstance(got, tenferro.EagerTensor)
        np.testing.assert_array_equal(got.numpy(), want)
    # Diagonal offsets that are not 64-bit integers are typed errors naming the function.
    with pytest.raises(ValueError, match="tenferro.tril: k = 18446744073709551616"):
        tenferro.tril(a, 1 << 64)
    with pytest.raises(TypeError, match="tenferro.triu: k must be an integer"):
        tenferro.triu(a, 1.5)
    with pytest.raises(TypeError, match="tenferro.tril: k must be an integer"):
        tenferro.tril(a, True)
    with pytest.raises(TypeError, match="tenferro.stack: expected eager tensors or numpy arrays"):
        tenferro.stack([a, object()])
    with pytest.raises(TypeError, match="unsupported dtype <U1"):
        tenferro.concatenate([a, np.array(["b"])])
