"""Reverse-mode AD on eager tensors: backward, accumulated gradients and tenferro.grad
against analytic gradients and central differences."""

import numpy as np
import pytest

import tenferro


@pytest.fixture(scope="module")
def rt():
    return tenferro.Runtime()


def test_backward_of_a_matmul_loss_matches_the_analytic_gradient(rt):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    x, y = rt.tensor(a).requires_grad_(), rt.tensor(b).requires_grad_()
    assert x.requires_grad and not rt.tensor(a).requires_grad
    loss = ((x @ y).tanh() * 2.0).sum()
    loss.backward()
    t = np.tanh(a @ b)
    g = 2 * (1 - t * t)  # d loss / d (a @ b)
    np.testing.assert_allclose(np.asarray(x.grad), g @ b.T, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(y.grad), a.T @ g, rtol=1e-12, atol=1e-13)
    loss.backward()  # gradients accumulate
    np.testing.assert_allclose(np.asarray(x.grad), 2 * (g @ b.T), rtol=1e-12, atol=1e-13)
    x.zero_grad()
    assert x.grad is None
    assert not x.detach().requires_grad


def test_grad_function_matches_central_differences(rt):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 3))

    def f(x):
        return (x @ x @ x).sum() + (x * x).sum().sin()

    (g,) = tenferro.grad(f)(rt.tensor(a))
    v = rng.standard_normal((3, 3))
    h = 1e-6
    fp = np.asarray(f(rt.tensor(a + h * v))).item()
    fm = np.asarray(f(rt.tensor(a - h * v))).item()
    assert abs(np.sum(np.asarray(g) * v) - (fp - fm) / (2 * h)) < 1e-6


def test_backward_errors_are_typed(rt):
    x = rt.tensor(np.ones((2, 2)))
    with pytest.raises(tenferro.InvalidArgumentError):
        x.sum().backward()  # nothing requires grad
    y = rt.tensor(np.ones((2, 2))).requires_grad_()
    with pytest.raises(tenferro.ShapeError):
        (y * y).backward()  # not a scalar, no cotangent
    with pytest.raises(tenferro.DTypeError):
        (y.astype(np.complex128) * 1j).sum().backward()  # a complex scalar: no implicit real seed
    with pytest.raises(tenferro.DTypeError):
        rt.tensor(np.ones(2, dtype=np.int64)).requires_grad_()


def test_no_grad_scope_records_nothing_and_nests(rt):
    x = rt.tensor(np.array([1.0, 2.0, 3.0])).requires_grad_()
    assert tenferro.is_grad_enabled()
    with tenferro.no_grad():
        assert not tenferro.is_grad_enabled()
        y = (x * x).sum()
        with tenferro.no_grad():
            z = x.exp()
        assert not tenferro.is_grad_enabled()  # the inner block left the outer one on
        assert not y.requires_grad and not z.requires_grad
    assert tenferro.is_grad_enabled()
    assert (x * x).sum().requires_grad
    np.testing.assert_allclose(np.asarray(y), 14.0)
    with pytest.raises(tenferro.InvalidArgumentError):
        y.backward()  # nothing was recorded

    @tenferro.no_grad()
    def step(t):
        return t * 2.0

    assert not step(x).requires_grad
    assert tenferro.is_grad_enabled()
    # The scope is per thread: another thread records while this one is inside.
    import threading
    seen = []
    with tenferro.no_grad():
        th = threading.Thread(target=lambda: seen.append((x * x).requires_grad))
        th.start()
        th.join()
    assert seen == [True]
    # An exception inside the block still leaves it.
    with pytest.raises(ValueError):
        with tenferro.no_grad():
            raise ValueError("inside")
    assert tenferro.is_grad_enabled()


def test_vjp_and_jvp_match_the_analytic_derivatives(rt):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    ct, da, db = rng.standard_normal((3, 2)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))

    def f(x, y):
        return (x @ y).sin()

    y, (ga, gb) = tenferro.vjp(f, (rt.tensor(a), rt.tensor(b)), rt.tensor(ct))
    np.testing.assert_allclose(np.asarray(y), np.sin(a @ b), rtol=1e-12, atol=1e-13)
    g = ct * np.cos(a @ b)
    np.testing.assert_allclose(np.asarray(ga), g @ b.T, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(gb), a.T @ g, rtol=1e-12, atol=1e-13)
    y2, dy = tenferro.jvp(f, (rt.tensor(a), rt.tensor(b)), (rt.tensor(da), rt.tensor(db)))
    np.testing.assert_allclose(np.asarray(y2), np.sin(a @ b), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(dy), np.cos(a @ b) * (da @ b + a @ db), rtol=1e-12, atol=1e-13)
    # A single tensor gives a single gradient; <vjp(u), v> = <u, jvp(v)>.
    _, gs = tenferro.vjp(lambda x: x.exp(), rt.tensor(a), rt.tensor(da))
    _, js = tenferro.jvp(lambda x: x.exp(), rt.tensor(a), rt.tensor(ct @ np.ones((2, 4))))
    np.testing.assert_allclose(np.sum(np.asarray(gs) * (ct @ np.ones((2, 4)))), np.sum(da * np.asarray(js)), rtol=1e-12)
    # numpy arrays become eager tensors on the cotangent's runtime.
    _, (ga2, gb2) = tenferro.vjp(f, [a, b], rt.tensor(ct))
    np.testing.assert_allclose(ga2.numpy(), g @ b.T, rtol=1e-12, atol=1e-13)
    with pytest.raises(TypeError):
        tenferro.vjp(f, [a, "b"], rt.tensor(ct))  # not an array of a supported dtype
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.vjp(f, (rt.tensor(a), rt.tensor(b)), rt.tensor(np.ones((2, 2))))  # wrong cotangent shape


def test_grad_and_where_name_what_they_take(rt):
    # What is neither an eager tensor nor an array: a TypeError naming the function.
    with pytest.raises(TypeError, match="tenferro.grad: expected eager tensors or numpy arrays"):
        tenferro.grad(lambda x: (x * x).sum())(object())
    with pytest.raises(TypeError, match="tenferro.where: expected eager tensors or numpy arrays"):
        tenferro.where(np.ones(3) > 0, np.ones(3), [object()])
    x = rt.tensor(np.arange(3.0))
    (g,) = tenferro.grad(lambda v: (v * v).sum())(x)
    assert np.allclose(np.asarray(g), 2 * np.arange(3.0))
    # numpy arrays next to eager tensors are constants on their runtime, as for the
    # operators: where, concatenate and stack take them too.
    z = np.zeros(3)
    np.testing.assert_array_equal(tenferro.where(x > 0.5, x, z).numpy(), np.where(np.arange(3.0) > 0.5, np.arange(3.0), z))
    np.testing.assert_array_equal(tenferro.concatenate([z, x]).numpy(), np.concatenate([z, np.arange(3.0)]))
    np.testing.assert_array_equal(tenferro.stack([x, z], axis=1).numpy(), np.stack([np.arange(3.0), z], axis=1))
    (g,) = tenferro.grad(lambda v: tenferro.where(v > 0.5, v * v, z).sum())(x)
    np.testing.assert_allclose(np.asarray(g), [0.0, 2.0, 4.0])


def test_functional_transforms_of_constant_outputs_and_inside_no_grad(rt):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 3, 3))
    x = rt.tensor(a)
    # matrix_power(x, 0) is the identity whatever x is: a zero gradient, not an error.
    for p, want in [(0, np.zeros_like(a)), (1, np.ones_like(a))]:
        (g,) = tenferro.grad(lambda t: tenferro.linalg.matrix_power(t, p).sum())(x)
        np.testing.assert_allclose(np.asarray(g), want, atol=1e-12)
    # A value computed under no_grad inside f passes no derivative (a stop-gradient).
    def stopped(t):
        with tenferro.no_grad():
            s = (t * t).sum()
        return s + t.sum()

    (g,) = tenferro.grad(stopped)(x)
    np.testing.assert_allclose(np.asarray(g), np.ones_like(a), rtol=1e-12)
    y, (gv,) = tenferro.vjp(lambda t: rt.tensor(np.ones(2)) * 2.0, [x], rt.tensor(np.ones(2)))
    np.testing.assert_allclose(np.asarray(y), [2.0, 2.0])
    np.testing.assert_allclose(np.asarray(gv), np.zeros_like(a))
    _, dy = tenferro.jvp(lambda t: rt.tensor(np.ones(2)) * 2.0, [x], [rt.tensor(a)])
    np.testing.assert_allclose(np.asarray(dy), np.zeros(2))
    # Outputs are still checked: a non-scalar needs a cotangent.
    with pytest.raises(tenferro.ShapeError):
        tenferro.grad(lambda t: rt.tensor(np.ones(2)))(x)
    # The transforms differentiate f inside an outer no_grad block (as torch.func.grad),
    # and leave the block on afterwards, also when f raises.
    with tenferro.no_grad():
        (g,) = tenferro.grad(lambda t: (t * t).sum())(x)
        np.testing.assert_allclose(np.asarray(g), 2 * a, rtol=1e-12)
        assert not tenferro.is_grad_enabled()
        with pytest.raises(ValueError, match="inside f"):
            tenferro.grad(lambda t: (_ for _ in ()).throw(ValueError("inside f")))(x)
        assert not tenferro.is_grad_enabled()
        assert not (x * x).sum().requires_grad
    assert tenferro.is_grad_enabled()


def test_grad_vjp_jvp_take_numpy_arrays(rt):
    # Arrays (and numbers) as inputs, as jax.grad takes them: eager tensors on the runtime
    # of the eager inputs, else on the shared default runtime; f receives eager tensors.
    a = np.array([[1.0, 2.0], [3.0, 4.5]])
    (g,) = tenferro.grad(lambda x: (x * x).sum())(a)
    assert isinstance(g, tenferro.EagerTensor)
    np.testing.assert_allclose(g.numpy(), 2 * a)
    x = rt.tensor(a)
    gx, gy = tenferro.grad(lambda u, v: (u * v).sum())(x, np.ones((2, 2)))
    assert gy.runtime is rt  # the array became a tensor on x's runtime
    np.testing.assert_allclose(gx.numpy(), np.ones((2, 2)))
    np.testing.assert_allclose(gy.numpy(), a)
    np.testing.assert_allclose(tenferro.grad(lambda s: s * s)(3.0)[0].numpy(), 6.0)
    y, g = tenferro.vjp(lambda u: u * 2.0, a, np.ones((2, 2)))
    np.testing.assert_allclose(y.numpy(), 2 * a)
    np.testing.assert_allclose(g.numpy(), np.full((2, 2), 2.0))
    y, t = tenferro.jvp(lambda u: u * u, a, np.ones((2, 2)))
    np.testing.assert_allclose(t.numpy(), 2 * a)
    with pytest.raises(TypeError):
        tenferro.grad(lambda u: u.sum())(object())


def test_nested_functional_transforms_give_higher_derivatives(rt):
    # grad of grad is the second derivative (it was a silent zero); mixed partials through
    # a closure; a Hessian-vector product as jvp of grad; a traced gradient runs on new
    # inputs; against the analytic values.
    cube = lambda x: (x ** 3).sum()
    a = np.array([1.0, 2.0, -0.5])
    x = rt.tensor(a)
    (h,) = tenferro.grad(lambda t: tenferro.grad(cube)(t)[0].sum())(x)
    np.testing.assert_allclose(h.numpy(), 6 * a, rtol=1e-12)
    w = rt.tensor(np.array([0.5, 2.0, 1.5]))
    (m,) = tenferro.grad(lambda v: tenferro.grad(lambda t: (t * t * v).sum())(x)[0].sum())(w)
    np.testing.assert_allclose(m.numpy(), 2 * a, rtol=1e-12)
    _, hv = tenferro.jvp(lambda t: tenferro.grad(cube)(t)[0], x, rt.tensor(np.array([1.0, 0.0, 0.0])))
    np.testing.assert_allclose(hv.numpy(), [6 * a[0], 0.0, 0.0], rtol=1e-12)
    p = tenferro.trace(lambda t: tenferro.grad(cube)(t)[0], a)
    np.testing.assert_allclose(p(np.array([3.0, 1.0, 2.0])), [27.0, 3.0, 12.0], rtol=1e-12)
    # A Hessian of a determinant, row by row, against central differences of its gradient.
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    hess = np.array([tenferro.grad(lambda t: tenferro.grad(tenferro.linalg.det)(t)[0][i, j])(rt.tensor(A))[0].numpy()
                     for i in range(2) for j in range(2)]).reshape(4, 4)
    eps = 1e-6
    for k in range(4):
        d = np.zeros(4)
        d[k] = eps
        gp = tenferro.grad(tenferro.linalg.det)(rt.tensor(A + d.reshape(2, 2)))[0].numpy()
        gm = tenferro.grad(tenferro.linalg.det)(rt.tensor(A - d.reshape(2, 2)))[0].numpy()
        np.testing.assert_allclose(hess[:, k], ((gp - gm) / (2 * eps)).ravel(), atol=1e-8)


def test_hessian_matches_analytic_and_central_differences(rt):
    a = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(tenferro.hessian(lambda x: (x ** 3).sum())(rt.tensor(a)).numpy(), np.diag(6 * a),
                               atol=1e-12)
    m = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, -1.0, 1.0]])
    q = tenferro.hessian(lambda x: tenferro.einsum("i,ij,j->", x, rt.tensor(m), x))(rt.tensor(a))
    np.testing.assert_allclose(q.numpy(), m + m.T, atol=1e-12)
    # A matrix input: shape x.shape + x.shape, against central differences of the gradient.
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    f = lambda x: tenferro.linalg.det(x) + (x.exp() * x).sum()
    H = tenferro.hessian(f)(A).numpy()
    assert H.shape == (2, 2, 2, 2)
    eps = 1e-6
    for idx in np.ndindex(2, 2):
        d = np.zeros((2, 2))
        d[idx] = eps
        gp = tenferro.grad(f)(A + d)[0].numpy()
        gm = tenferro.grad(f)(A - d)[0].numpy()
        np.testing.assert_allclose(H[(slice(None), slice(None)) + idx], (gp - gm) / (2 * eps), atol=1e-7)
    with pytest.raises(TypeError):
        tenferro.hessian(lambda x: (x * x.conj()).real.sum())(np.array([1j, 2.0]))


def test_jacobian_matches_the_analytic_derivative(rt):
    rng = np.random.default_rng(23)
    a, m = rng.standard_normal(3), rng.standard_normal((2, 3))
    j = tenferro.jacobian(lambda x: tenferro.einsum("ij,j->i", rt.tensor(m), x).sin())(rt.tensor(a))
    assert isinstance(j, tenferro.EagerTensor) and j.shape == (2, 3)
    np.testing.assert_allclose(j.numpy(), np.cos(m @ a)[:, None] * m, rtol=1e-12)
    # Matrix in, matrix out: shape f(x).shape + x.shape; a scalar output gives the gradient.
    b = rng.standard_normal((2, 2))
    j2 = tenferro.jacobian(lambda x: x * x)(b).numpy()
    assert j2.shape == (2, 2, 2, 2)
    want = np.zeros((2, 2, 2, 2))
    for i, k in np.ndindex(2, 2):
        want[i, k, i, k] = 2 * b[i, k]
    np.testing.assert_allclose(j2, want, atol=1e-12)
    np.testing.assert_allclose(tenferro.jacobian(lambda x: (x ** 2).sum())(a).numpy(), 2 * a, rtol=1e-12)
    # The Jacobian of a gradient is the Hessian.
    np.testing.assert_allclose(tenferro.jacobian(lambda x: tenferro.grad(lambda u: (u ** 3).sum())(x)[0])(a).numpy(),
                               tenferro.hessian(lambda u: (u ** 3).sum())(a).numpy(), atol=1e-12)
