"""tenferro.einsum / contract_path against numpy.einsum, zero-copy interop, errors,
leaks and threads."""

import gc
import string
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import tenferro

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex64, np.complex128]


def random_array(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def with_layout(rng, a, kind):
    """The same values in another memory layout: C, Fortran, strided, negative strides."""
    if a.ndim == 0:
        return np.array(a)  # ascontiguousarray would make it 1-d
    if kind == 0:
        return np.ascontiguousarray(a)
    if kind == 1:
        return np.asfortranarray(a)
    if kind == 2:  # every other element of a larger array
        big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
        view = big[tuple(slice(None, None, 2) for _ in a.shape)]
        view[...] = a
        return view
    # negative strides on every axis
    rev = np.ascontiguousarray(a[tuple(slice(None, None, -1) for _ in a.shape)])
    return rev[tuple(slice(None, None, -1) for _ in a.shape)]


def assert_matches(got, want, dtype, what):
    got = np.asarray(got)
    assert got.shape == want.shape, what
    assert got.dtype == want.dtype, what
    if dtype in (np.float32, np.complex64):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4, err_msg=what)
    elif dtype in (np.float64, np.complex128):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def random_case(rng):
    """(subscripts, shapes) covering implicit/explicit outputs, repeated labels,
    ellipsis with broadcasting and upper-case labels."""
    alphabet = "abcdefgABC"
    extent = {c: int(rng.integers(1, 5)) for c in alphabet}
    n_ops = int(rng.integers(1, 5))
    use_ell = rng.random() < 0.25
    ell_shape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
    terms, shapes, used = [], [], []
    for _ in range(n_ops):
        rank = int(rng.integers(0, 4))
        labels = [alphabet[int(rng.integers(0, len(alphabet)))] for _ in range(rank)]
        shape = [extent[c] for c in labels]
        term = "".join(labels)
        used += labels
        if use_ell and rng.random() < 0.7:
            k = int(rng.integers(0, len(ell_shape) + 1))
            sub = ell_shape[len(ell_shape) - k:]
            sub = [1 if rng.random() < 0.2 else n for n in sub]  # broadcasting of 1
            term = "..." + term
            shape = sub + shape
        terms.append(term)
        shapes.append(tuple(shape))
    subs = ",".join(terms)
    if rng.random() < 0.6:
        pool = sorted(set(used))
        rng.shuffle(pool)
        out = "".join(pool[: int(rng.integers(0, len(pool) + 1))])
        if use_ell and any("..." in t for t in terms) and rng.random() < 0.7:
            out = "..." + out
        subs += "->" + out
    return subs, shapes


def test_random_einsums_match_numpy():
    rng = np.random.default_rng(20261202)
    checked = 0
    for trial in range(1200):
        subs, shapes = random_case(rng)
        dtype = DTYPES[trial % len(DTYPES)]
        ops = [with_layout(rng, random_array(rng, s, dtype), int(rng.integers(0, 4))) for s in shapes]
        try:
            want = np.einsum(subs, *ops, optimize=False)
        except ValueError as e:
            if "no '...' ellipsis" not in str(e):
                with pytest.raises(ValueError):
                    tenferro.einsum(subs, *ops)
                continue
            # tenferro sums broadcast dimensions an explicit output leaves out (numpy
            # rejects that): the reference keeps them, then sums them.
            lhs, out = subs.split("->")
            full = np.einsum(lhs + "->..." + out, *ops, optimize=False)
            want = np.asarray(full).sum(axis=tuple(range(full.ndim - len(out))), dtype=full.dtype)
            if dtype == np.bool_:
                want = np.asarray(full).any(axis=tuple(range(full.ndim - len(out))))
        optimize = ["greedy", "optimal", "left-to-right"][trial % 3]
        got = tenferro.einsum(subs, *ops, optimize=optimize)
        assert_matches(got, np.asarray(want), dtype, f"{subs} {np.dtype(dtype)} {shapes}")
        checked += 1
    assert checked >= 1000


def test_repeated_calls_with_new_arrays_match_numpy():
    # Note [Python call cache]: a repeated call (same subscripts, optimize, dtype, shapes
    # and strides) is served from the engine's call cache, its handles rebound to the new
    # arrays; every repetition must see its own arrays.
    rng = np.random.default_rng(20261203)
    eng = tenferro.Engine(threads=1)
    checked = 0
    for trial in range(300):
        subs, shapes = random_case(rng)
        dtype = DTYPES[trial % len(DTYPES)]
        kinds = [int(rng.integers(0, 4)) for _ in shapes]
        try:
            np.einsum(subs, *[np.zeros(s, dtype) for s in shapes], optimize=False)
        except ValueError:
            continue
        for rep in range(4):
            ops = [with_layout(rng, random_array(rng, s, dtype), k) for s, k in zip(shapes, kinds)]
            if rep == 2:  # read-only arrays in the same geometry
                for o in ops:
                    o.flags.writeable = False
            want = np.asarray(np.einsum(subs, *ops, optimize=False))
            got = tenferro.einsum(subs, *ops, engine=eng if trial % 2 else None)
            assert_matches(got, want, dtype, f"{subs} {np.dtype(dtype)} {shapes} repetition {rep}")
            if want.ndim == 0:
                assert np.isscalar(got) or isinstance(got, np.generic)
            else:
                assert isinstance(got, np.ndarray) and got.flags.writeable
                assert not any(np.shares_memory(got, o) for o in ops)
        if trial % 50 == 0:
            eng.clear_plan_cache()
            assert eng.call_cache_stats()["entries"] == 0
        checked += 1
    assert checked >= 200
    assert eng.call_cache_stats()["served"] > 100  # repetitions of small cases came from the call cache


def test_the_einsum_entry_point_forwards_every_other_form():
    rng = np.random.default_rng(7)
    a, b = rng.random((3, 4)), rng.random((4, 5))
    eng = tenferro.Engine(threads=1)
    import inspect
    assert str(inspect.signature(tenferro.einsum)) == \
        "(*operands, optimize='greedy', out=None, threads=None, engine=None, dtype=None, casting='safe', order='K')"
    assert "numpy.einsum" in tenferro.einsum.__doc__
    for _ in range(3):  # cached, then forms the entry point hands on
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, engine=eng, out=None, threads=None), a @ b)
        out = np.empty((3, 5))
        assert tenferro.einsum("ij,jk->ik", a, b, out=out, engine=eng) is out
        np.testing.assert_allclose(out, a @ b)
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, threads=1), a @ b)
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, optimize=False), a @ b)
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, **{"opt" + "imize": "optimal"}), a @ b)
        np.testing.assert_allclose(tenferro.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a.astype(np.float32), b), a @ b)  # promotion
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a.tolist(), b), a @ b)  # array-likes
    # Errors after a cached call of the same subscripts come from the Python layer.
    with pytest.raises(tenferro.ShapeError):
        tenferro.einsum("ij,jk->ik", a, a, engine=eng)
    with pytest.raises(ValueError):
        tenferro.einsum("ij,jk->ik", a, b, optimize="fastest")
    with pytest.raises(TypeError):
        tenferro.einsum("ij,jk->ik", a, b, bogus=1)
    with pytest.raises(TypeError):
        tenferro.einsum("ij,jk->ik", a, b, engine="not an engine")


def test_row_major_operands_are_planned_as_their_mirror():
    """Large C-ordered operands take the mirrored plan (Note [Row-major operands]): results
    must not change, for explicit/implicit outputs, ellipses, repeated labels and out=."""
    rng = np.random.default_rng(7)
    cases = [
        ("ijk,kl->il", [(20, 30, 16), (16, 25)]),
        ("ijk,kl", [(20, 30, 16), (16, 25)]),  # implicit output
        ("...ij,...jk->...ik", [(5, 40, 30), (5, 30, 20)]),
        ("...ij,jk", [(3, 1, 40, 30), (30, 20)]),  # broadcasting ellipsis, implicit output
        ("iij,jk->ik", [(30, 30, 40), (40, 10)]),  # repeated label
        ("ab,bc,cd,de->ae", [(40, 50), (50, 60), (60, 30), (30, 20)]),
        ("ijkl->lkji", [(8, 9, 10, 11)]),
    ]
    for subs, shapes in cases:
        for dtype in (np.float64, np.complex64, np.int64):
            ops = [random_array(rng, s, dtype) for s in shapes]
            want = np.einsum(subs, *ops, optimize=False)
            got = tenferro.einsum(subs, *ops)
            assert_matches(got, np.asarray(want), dtype, subs)
            out = np.empty_like(np.asarray(want))
            if out.ndim:
                r = tenferro.einsum(subs, *ops, out=out)
                assert r is out
                assert_matches(out, np.asarray(want), dtype, subs + " out=")
        path, info = tenferro.contract_path(subs, *[random_array(rng, s, np.float64) for s in shapes])
        assert info.output_shape == np.einsum(subs, *[np.ones(s) for s in shapes]).shape


@pytest.mark.parametrize("threads", [1, 2])
def test_small_matrices_applied_to_many_points_match_numpy(threads):
    """A small real matrix applied to points stored point by point (Note [Narrow products]:
    the kernel's B is P's rows), transposed and with the matrix on the other side, f64 and
    f32, out= included, against numpy's matmul."""
    rng = np.random.default_rng(11)
    for dtype in (np.float64, np.float32):
        tol = 1e-4 if dtype == np.float32 else 1e-12
        for m, k in ((3, 3), (2, 5), (8, 8), (12, 3)):
            r = rng.standard_normal((m, k)).astype(dtype)
            p = rng.standard_normal((20001, k)).astype(dtype)
            np.testing.assert_allclose(tenferro.einsum("ij,nj->ni", r, p, threads=threads), p @ r.T, rtol=tol, atol=tol)
            np.testing.assert_allclose(tenferro.einsum("nj,ij->ni", p, r, threads=threads), p @ r.T, rtol=tol, atol=tol)
            q = rng.standard_normal((20001, m)).astype(dtype)
            np.testing.assert_allclose(tenferro.einsum("ni,ij->nj", q, r, threads=threads), q @ r, rtol=tol, atol=tol)
            out = np.empty((20001, m), dtype=dtype)
            assert tenferro.einsum("ij,nj->ni", r, p, out=out, threads=threads) is out
            np.testing.assert_allclose(out, p @ r.T, rtol=tol, atol=tol)
            # One row (Note [OpenBLAS matrix-vector calls]): each point against a vector.
            np.testing.assert_allclose(tenferro.einsum("j,nj->n", r[0], p, threads=threads), p @ r[0], rtol=tol, atol=tol)


def test_interleaved_form_and_numpy_paths():
    rng = np.random.default_rng(1)
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2, 6))
    want = np.einsum("ij,jk,klm->im", a, b, c)
    np.testing.assert_allclose(tenferro.einsum(a, [0, 1], b, [1, 2], c, [2, 3, 4], [0, 4]), want)
    np.testing.assert_allclose(tenferro.einsum(a, [0, 1], b, [1, 2]), a @ b)  # implicit output
    x = rng.random((2, 3, 4))
    np.testing.assert_allclose(tenferro.einsum(x, [Ellipsis, 0], [Ellipsis]), x.sum(-1))
    path = np.einsum_path("ij,jk,klm->im", a, b, c, optimize="greedy")[0]
    np.testing.assert_allclose(tenferro.einsum("ij,jk,klm->im", a, b, c, optimize=path), want)
    np.testing.assert_allclose(tenferro.einsum("ij,jk,klm->im", a, b, c, optimize=[(1, 2), (0, 1)]), want)
    np.testing.assert_allclose(tenferro.einsum("ij,jk,klm->im", a, b, c, optimize="treesa"), want)
    np.testing.assert_allclose(tenferro.einsum("ij,jk,klm->im", a, b, c, optimize=False), want)
    s = tenferro.einsum("ij,ij", a, a)
    assert np.isscalar(s) and np.isclose(s, (a * a).sum())
    # Mixed dtypes follow numpy's promotion.
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    r = tenferro.einsum("ij,jk->ik", i, b)
    assert r.dtype == np.float64
    np.testing.assert_allclose(r, i @ b)


def test_out_argument():
    rng = np.random.default_rng(2)
    a, b = rng.random((3, 4)), rng.random((4, 5))
    out = np.empty((5, 3)).T  # a transposed destination
    r = tenferro.einsum("ij,jk->ik", a, b, out=out)
    assert r is out
    np.testing.assert_allclose(out, a @ b)
    sq = rng.random((4, 4))
    want = sq.T.copy()
    r = tenferro.einsum("ij->ji", sq, out=sq)  # out overlaps the operand
    np.testing.assert_allclose(r, want)
    with pytest.raises(tenferro.ShapeError):
        tenferro.einsum("ij,jk->ik", a, b, out=np.empty((3, 4)))
    with pytest.raises(TypeError):
        tenferro.einsum("ij,jk->ik", a, b, out=np.empty((3, 5), dtype=np.float32))


def test_zero_copy_both_ways():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    for view in (a, a.T, a[::-1, ::2], a[1:, 2:5], np.asfortranarray(a)):
        t = tenferro.from_numpy(view)
        back = t.numpy()
        assert np.shares_memory(back, view)
        np.testing.assert_array_equal(back, view)
        assert t.shape == view.shape
    r = tenferro.einsum("ij->ij", a)
    assert not np.shares_memory(r, a)  # a new result ...
    assert np.shares_memory(tenferro.from_numpy(r).numpy(), r)  # ... handed out without a copy
    ro = np.ones((3, 3))
    ro.setflags(write=False)
    t = tenferro.from_numpy(ro)
    assert not t.writable
    assert not t.numpy().flags.writeable
    for dt in DTYPES:
        x = np.ones((2, 3), dtype=dt)
        assert tenferro.from_numpy(x).numpy().dtype == x.dtype
    # The array stays alive through the tensor.
    t = tenferro.from_numpy(np.arange(5.0))
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0))


@pytest.mark.parametrize("bad", [np.zeros(3, dtype=np.float16), np.array(["a", "b"]), np.array([object(), 1]),
                                 np.zeros(3, dtype=[("x", "f8")]), np.zeros(3, dtype=np.uint8)])
def test_unsupported_dtypes_are_type_errors(bad):
    with pytest.raises(TypeError):
        tenferro.einsum("i->i", bad)


def test_an_explicit_output_without_the_ellipsis_sums_its_dimensions():
    # An extension of numpy's notation (numpy refuses these outputs): omitted ellipsis
    # dimensions are summed like omitted labels, numpy arrays and eager tensors alike.
    rng = np.random.default_rng(41)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(tenferro.einsum("...->", a), a.sum(), rtol=1e-13)
    np.testing.assert_allclose(tenferro.einsum("i...->i", a), a.sum(axis=(1, 2)), rtol=1e-13)
    np.testing.assert_allclose(tenferro.einsum("...j,...j->j", a, b), np.einsum("...j,...j->...j", a, b).sum(axis=(0, 1)),
                               rtol=1e-13)
    x = tenferro.Runtime().tensor(a)
    np.testing.assert_allclose(np.asarray(tenferro.einsum("...k->k", x)), a.sum(axis=(0, 1)), rtol=1e-13)


def test_bad_inputs_raise_documented_exceptions():
    a = np.ones((2, 3))
    with pytest.raises(tenferro.InvalidArgumentError):  # operand count
        tenferro.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError):
        tenferro.einsum("ij,jk->ik", a)
    for bad in ("ij->ik", "i..j->i", "ij->i->j", "ijk->i"):  # bad subscripts
        with pytest.raises(ValueError):
            tenferro.einsum(bad, a)
    with pytest.raises(tenferro.ShapeError):  # mismatched extents
        tenferro.einsum("ij,ij->i", a, np.ones((3, 2)))
    with pytest.raises(tenferro.InvalidArgumentError):  # bad path
        tenferro.einsum("ij,jk,kl->il", a, a.T, a, optimize=[(0, 5)])
    with pytest.raises(ValueError):
        tenferro.einsum("ij->i", a, optimize="fastest")
    with pytest.raises(TypeError):
        tenferro.from_numpy([1, 2, 3])
    with pytest.raises(TypeError):
        tenferro.einsum("i->i", object())
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.einsum(a, [0, 99])
    try:
        tenferro.einsum("ij,ij->i", a, np.ones((3, 2)))
    except tenferro.Error as e:
        assert e.code == "shape_mismatch" and e.stage and e.op


def test_contract_path():
    rng = np.random.default_rng(3)
    a, b, c = rng.random((8, 9)), rng.random((9, 10)), rng.random((10, 3))
    path, info = tenferro.contract_path("ij,jk,kl->il", a, b, c)
    assert len(path) == 2 and all(len(p) == 2 for p in path)
    assert info.opt_cost > 0 and info.output_shape == (8, 3)
    np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=path), a @ b @ c)
    p2, _ = tenferro.contract_path("ij,jk,kl->il", (8, 9), (9, 10), (10, 3), shapes=True)
    assert p2 == path
    assert "Contraction path" in str(info)
    # The largest intermediate is opt_einsum's and numpy.einsum_path's: the largest step
    # result, inputs not counted (a 10 x 3 input is larger than the 8 x 3 result here).
    _, info = tenferro.contract_path("ij,jk,kl->il", a, b, c, optimize=[(1, 2), (0, 1)])
    assert info.largest_intermediate == 9 * 3  # jk,kl->jl, then the 8 x 3 result
    _, info = tenferro.contract_path("ij,jk->ik", rng.random((3, 4)), rng.random((4, 5)))
    numpy_text = np.einsum_path("ij,jk->ik", rng.random((3, 4)), rng.random((4, 5)))[1]
    assert info.largest_intermediate == 15 and "Largest intermediate:  1.500e+01" in numpy_text


def test_engines_threads_and_plan_reuse():
    rng = np.random.default_rng(4)
    a, b = rng.random((64, 80)), rng.random((80, 32))
    eng = tenferro.Engine(threads=1)
    r1 = tenferro.einsum("ij,jk->ik", a, b, engine=eng)
    r2 = tenferro.einsum("ij,jk->ik", a, b, threads=2)
    np.testing.assert_allclose(r1, a @ b)
    np.testing.assert_allclose(r2, a @ b)
    before, calls_before = eng.plan_cache_stats(), eng.call_cache_stats()
    for _ in range(5):
        tenferro.einsum("ij,jk->ik", a, b, engine=eng)
    after, calls_after = eng.plan_cache_stats(), eng.call_cache_stats()
    # Every repeat reuses the plan: from the call cache (Note [Python call cache]) or the
    # plan cache; nothing is planned again.
    reused = (after["hits"] - before["hits"]) + (calls_after["served"] - calls_before["served"])
    assert reused == 5 and after["entries"] == before["entries"]
    with pytest.raises(ValueError):
        tenferro.Engine(threads=0)


@pytest.mark.parametrize("shape", [(40, 50, 30), (2, 3, 2)])  # GIL released / inline (call cache)
def test_four_python_threads_at_once(shape):
    rng = np.random.default_rng(5)
    m, k, n = shape
    inputs = [(rng.random((m, k)), rng.random((k, n))) for _ in range(4)]
    errors = []

    def work(k):
        a, b = inputs[k]
        try:
            for _ in range(50):
                np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b), a @ b)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_finalizers_that_call_einsum_during_a_cached_call():
    # A garbage collection inside a cached call (its result allocation) may run
    # finalizers that call einsum on the same engine and clear its caches: they take the
    # Python path, the clear waits for the running call, and every result stays right.
    eng = tenferro.Engine(threads=1)
    seen = []

    class Finalized:
        def __del__(self):
            x = np.full((2, 2), 2.0)
            seen.append(float(tenferro.einsum("ij,jk->ik", x, x, engine=eng)[0, 0]))
            eng.clear_plan_cache()

    a, b = np.arange(4.0).reshape(2, 2), np.ones((2, 2))
    for _ in range(3000):
        f = Finalized()
        f.cycle = f  # collected by the cycle collector, at some later allocation
        del f
        np.testing.assert_array_equal(tenferro.einsum("ij,jk->ik", a, b, engine=eng), a @ b)
    gc.collect()
    assert seen and all(v == 8.0 for v in seen)
    assert eng.call_cache_stats()["served"] > 0


def test_no_leaks_over_many_calls():
    a, b = np.ones((2, 2)), np.ones((2, 2))
    for _ in range(1000):  # warm: plan cache, pools
        tenferro.einsum("ij,jk->ik", a, b)
    refs = (sys.getrefcount(a), sys.getrefcount(b))
    gc.collect()
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    for _ in range(100000):
        tenferro.einsum("ij,jk->ik", a, b)
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (sys.getrefcount(a), sys.getrefcount(b)) == refs
    assert end - start < 64 * 1024, f"Python memory grew by {end - start} bytes over 1e5 calls"


def test_info_reports_capabilities():
    caps = tenferro.info()
    assert caps["detected_isa"] in ("scalar", "avx2", "avx512")
    assert isinstance(caps["blis_tuned"], bool) and caps["openblas_core"]


def test_readme_python_example_runs():
    """The README's Python example, executed as written."""
    import os
    import re
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme) as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})


@pytest.mark.parametrize("threads", [1, 2])
def test_call_cache_serves_large_and_mirrored_plans(threads):
    # Note [Python call cache]: repeated calls above the inline size (run with the GIL
    # released on the engine's threads), on C-ordered (mirrored plan), F-ordered and
    # strided arrays, give numpy's values from the cache; a result above the cache's
    # size limit takes the Python path and is still right.
    rng = np.random.default_rng(40 + threads)
    eng = tenferro.Engine(threads=threads)
    a = rng.standard_normal((96, 130))
    b = rng.standard_normal((130, 70))
    c = rng.standard_normal((70, 5, 3))
    cases = [
        ("ij,jk->ik", (a, b)),
        ("ij,jk->ki", (np.asfortranarray(a), np.asfortranarray(b))),
        ("ij,jk,klm->iml", (a, b, c)),
        ("ij,jk->ik", (a[::2, ::-1], b[::-1, :])),
        ("ij,ij->ij", (a, a[::-1])),
    ]
    for subscripts, ops in cases:
        want = np.einsum(subscripts, *ops)
        served = eng.call_cache_stats()["served"]
        for _ in range(3):
            got = tenferro.einsum(subscripts, *ops, engine=eng)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            assert got.shape == want.shape
        assert eng.call_cache_stats()["served"] >= served + 2, subscripts
    big = rng.standard_normal((800, 3))
    big_b = rng.standard_normal((3, 800))  # 800 x 800 f64 result: 5 MB, above the limit
    want = big @ big_b
    served = eng.call_cache_stats()["served"]
    bound = 1e-13 * (np.abs(big) @ np.abs(big_b))  # rounding of a 3-term sum, whatever its order
    for _ in range(3):
        got = tenferro.einsum("ij,jk->ik", big, big_b, engine=eng)
        assert got.shape == want.shape
        assert np.all(np.abs(got - want) <= bound)
    assert eng.call_cache_stats()["served"] == served


def test_call_cache_keys_explicit_paths():
    # An explicit path is part of the call cache's key (Note [Python call cache]): the
    # same call with another path is another entry, and every form gives numpy's values;
    # a bad path still raises from the Python layer.
    rng = np.random.default_rng(50)
    eng = tenferro.Engine(threads=1)
    a, b, c = rng.standard_normal((40, 30)), rng.standard_normal((30, 50)), rng.standard_normal((50, 20))
    want = np.einsum("ij,jk,kl->il", a, b, c)
    for path in ([(0, 1), (0, 1)], [(1, 2), (0, 1)], ["einsum_path", (0, 2), (0, 1)]):
        served = eng.call_cache_stats()["served"]
        for _ in range(3):
            np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=path, engine=eng), want,
                                       rtol=1e-12, atol=1e-12)
        if path[0] != "einsum_path":
            assert eng.call_cache_stats()["served"] >= served + 2, path
    with pytest.raises(ValueError):
        tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=[(0, 7), (0, 1)], engine=eng)
    with pytest.raises(ValueError):
        tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=[(0, 7), (0, 1)], engine=eng)


def test_path_positions_are_checked_integers():
    a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 2))
    want = a @ b @ c
    for path in ([(np.int64(0), 1), (0, 1)], np.array([[0, 1], [0, 1]]), ["einsum_path", (1, 2), (0, 1)]):
        np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=path), want)
    np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=None), want)
    with pytest.raises(TypeError, match="path position must be an integer"):
        tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=[(0.5, 1), (0, 1)])  # not truncated to 0
    with pytest.raises(ValueError, match="does not fit in int64"):
        tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=[(2**70, 0), (0, 1)])


def test_dtype_casting_and_order_as_numpy():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5))
    for dt in (np.float64, np.complex128):
        r = tenferro.einsum("ij,jk->ik", a, b, dtype=dt)
        w = np.einsum("ij,jk->ik", a, b, dtype=dt)
        assert r.dtype == w.dtype
        np.testing.assert_allclose(r, w, rtol=1e-6)
    with pytest.raises(TypeError):
        tenferro.einsum("ij,jk->ik", a, b, dtype=np.float32)  # float64 -> float32 is not 'safe'
    r = tenferro.einsum("ij,jk->ik", a, b, dtype=np.float32, casting="same_kind")
    assert r.dtype == np.float32
    assert tenferro.einsum("ij,jk->ik", a, b, order="C").flags.c_contiguous
    assert tenferro.einsum("ij,jk->ik", a, b, order="F").flags.f_contiguous
    assert tenferro.einsum(a, [0, 1], b, [1, 2], [0, 2], dtype=np.float64).dtype == np.float64
    for bad in (dict(order="X"), dict(casting="maybe")):
        with pytest.raises(ValueError):
            tenferro.einsum("ij,jk->ik", a, b, **bad)


def test_eager_einsum_honours_optimize():
    """einsum on eager tensors takes the path `optimize` names (it was ignored): an
    explicit path (numpy.einsum_path's form too) or an algorithm; a path that does not fit
    the operands, or an unknown name, is an error rather than silently replaced."""
    rt = tenferro.Runtime()
    rng = np.random.default_rng(8)
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))
    x, y, z = rt.tensor(a), rt.tensor(b), rt.tensor(c)
    for optimize in ([(1, 2), (0, 1)], ["einsum_path", (0, 1), (0, 1)], "optimal", "treesa", "left-to-right", True):
        got = tenferro.einsum("ij,jk,kl->il", x, y, z, optimize=optimize)
        assert isinstance(got, tenferro.EagerTensor)
        np.testing.assert_allclose(got.numpy(), a @ b @ c, rtol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,jk,kl->il", x, y, z, optimize=[(0, 1), (0, 1)]).numpy(), a @ b @ c)
    with pytest.raises(tenferro.InvalidArgumentError, match="path"):
        tenferro.einsum("ij,jk,kl->il", x, y, z, optimize=[(0, 5)])
    with pytest.raises(ValueError, match="optimize='fastest'"):
        tenferro.einsum("ij,jk->ik", x, y, optimize="fastest")
    # Gradients through an einsum with an explicit path.
    (g,) = tenferro.grad(lambda t: tenferro.einsum("ij,jk,kl->il", t, y, z, optimize=[(1, 2), (0, 1)]).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.ones((3, 2)) @ (b @ c).T, rtol=1e-12)
