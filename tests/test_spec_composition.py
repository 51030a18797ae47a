"""SPEC 1.4: every transformation nests with every other, in any order and to any depth,
without confusing perturbations."""

import math

import numpy as np
import pytest

import rune
from helpers import fd_grad, MLP, mlp_loss, make_mlp


def test_perturbation_confusion_classic():
    # d/dx [x * d/dy (x + y)] = 1
    f = lambda x: x * rune.grad(lambda y: x + y)(1.0)
    assert rune.grad(f)(2.0) == pytest.approx(1.0)
    # the same with jvp inside and outside
    g = lambda x: x * rune.jvp(lambda y: x + y, (1.0,), (1.0,))[1]
    assert rune.jvp(g, (2.0,), (1.0,))[1] == pytest.approx(1.0)
    assert rune.grad(g)(2.0) == pytest.approx(1.0)
    # d/dx [x * d/dy (x * y)] at y = 3 is 2x
    h = lambda x: x * rune.grad(lambda y: x * y)(3.0)
    assert rune.grad(h)(2.5) == pytest.approx(5.0)
    # and under vmap
    out = rune.vmap(rune.grad(h))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(out, [2.0, 4.0])


def f_scalar(x):
    return np.sum(np.sin(x) * np.exp(0.3 * x) + x ** 3)


def f_hess(x):
    return np.diag(-np.sin(x) * np.exp(0.3 * x) + 0.6 * np.cos(x) * np.exp(0.3 * x)
                   + 0.09 * np.sin(x) * np.exp(0.3 * x) + 6 * x)


def test_every_nesting_of_second_derivatives_agrees():
    x = np.array([0.3, -0.7, 1.1])
    H = f_hess(x)
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(rune.hessian(f_scalar)(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jacfwd(rune.jacrev(f_scalar))(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jacrev(rune.jacfwd(f_scalar))(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jacrev(rune.jacrev(f_scalar))(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jacfwd(rune.jacfwd(f_scalar))(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jvp(rune.grad(f_scalar), (x,), (v,))[1], H @ v, rtol=1e-10)
    np.testing.assert_allclose(rune.grad(lambda x: rune.grad(f_scalar)(x) @ v)(x), H @ v,
                               rtol=1e-10)
    np.testing.assert_allclose(
        rune.grad(lambda x: rune.jvp(f_scalar, (x,), (v,))[1])(x), H @ v, rtol=1e-10)
    np.testing.assert_allclose(rune.hvp(f_scalar, (x,), (v,))[1][0], H @ v, rtol=1e-10)
    np.testing.assert_allclose(rune.vmap(lambda vv: rune.hvp(f_scalar, (x,), (vv,))[1][0])(
        np.eye(3)), H, rtol=1e-10)


def test_third_derivative_and_deep_nesting():
    f = lambda x: np.sin(x) * x
    d3 = rune.grad(rune.grad(rune.grad(f)))(0.7)
    x = 0.7
    want = -3 * math.sin(x) - x * math.cos(x)
    assert d3 == pytest.approx(want, rel=1e-10)
    d3f = rune.jvp(lambda x: rune.jvp(rune.grad(f), (x,), (1.0,))[1], (0.7,), (1.0,))[1]
    assert d3f == pytest.approx(want, rel=1e-10)
    d4 = rune.grad(rune.grad(rune.grad(rune.grad(f))))(0.7)
    assert d4 == pytest.approx(-4 * math.cos(x) + x * math.sin(x), rel=1e-9)


def test_per_example_gradients_vmap_of_grad():
    rng = np.random.default_rng(2)
    p = make_mlp(rng)
    X, Y = rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    per_ex = rune.vmap(rune.grad(mlp_loss), in_axes=(None, 0, 0))(p, X, Y)
    assert type(per_ex) is MLP and per_ex.layers[0].w.shape == (6, 3, 4)
    for i in range(6):
        gi = rune.grad(mlp_loss)(p, X[i], Y[i])
        np.testing.assert_allclose(per_ex.layers[0].w[i], gi.layers[0].w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(per_ex.layers[1].b[i], gi.layers[1].b, rtol=1e-10, atol=1e-12)
    # mean of per-example gradients = gradient of the mean loss
    full = rune.grad(lambda p: np.mean(rune.vmap(mlp_loss, in_axes=(None, 0, 0))(p, X, Y)))(p)
    np.testing.assert_allclose(full.layers[0].w, per_ex.layers[0].w.mean(axis=0), rtol=1e-10)


def test_vmap_of_vmap_and_grad_of_vmap():
    A = np.random.default_rng(3).normal(size=(2, 3, 4))
    out = rune.vmap(rune.vmap(lambda r: np.sum(r ** 2)))(A)
    np.testing.assert_allclose(out, np.sum(A ** 2, axis=-1))
    out = rune.vmap(rune.vmap(lambda r: r * 2, in_axes=1, out_axes=1), in_axes=2, out_axes=0)(A)
    np.testing.assert_allclose(out, np.moveaxis(A * 2, 2, 0))
    g = rune.grad(lambda A: np.sum(rune.vmap(lambda m: np.linalg.det(m[:, :3] @ m[:, :3].T + np.eye(3)))(A)))(A)
    assert g.shape == A.shape
    np.testing.assert_allclose(
        g, fd_grad(lambda A: sum(np.linalg.det(m[:, :3] @ m[:, :3].T + np.eye(3)) for m in A), A),
        rtol=1e-5, atol=1e-6)


def test_jvp_of_vmap_and_vmap_of_jvp():
    X = np.random.default_rng(4).normal(size=(5, 3))
    T_ = np.ones_like(X)
    f = lambda x: np.tanh(x) * np.sum(x)
    y1, t1 = rune.jvp(rune.vmap(f), (X,), (T_,))
    y2, t2 = rune.vmap(lambda x, t: rune.jvp(f, (x,), (t,)))(X, T_)
    np.testing.assert_allclose(y1, y2)
    np.testing.assert_allclose(t1, t2)
    eps = 1e-6
    np.testing.assert_allclose(t1, (rune.vmap(f)(X + eps * T_) - rune.vmap(f)(X - eps * T_))
                               / (2 * eps), rtol=1e-6, atol=1e-8)


def test_python_float_primals_give_scalars_from_jvp_and_hvp():
    for f in (lambda x: x, lambda x: x ** 2, lambda x: x + 1.0, lambda x: np.sin(x),
              lambda x: np.where(x > 0, x, 0.0)):
        out, t = rune.jvp(f, (3.0,), (1.0,))
        assert isinstance(out, float) and isinstance(t, float), (type(out), type(t))
    grads, hvps = rune.hvp(lambda x: x ** 3, (3.0,), (1.0,))
    assert type(grads[0]) is float and grads[0] == 27.0
    assert isinstance(hvps[0], float) and hvps[0] == 18.0


def test_hvp_is_matrix_free():
    import tracemalloc
    n = 3000
    x = np.linspace(-1, 1, n)
    v = np.ones(n)
    f = lambda x: np.sum(np.tanh(x) ** 2)
    rune.hvp(f, (x,), (v,))            # warm up
    tracemalloc.start()
    try:
        (g,), (hv,) = rune.hvp(f, (x,), (v,))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * n * 8 / 20, peak            # H would take 72 MB
    t = np.tanh(x)
    np.testing.assert_allclose(hv, (2 * (1 - t ** 2) ** 2 - 4 * t ** 2 * (1 - t ** 2)) * v,
                               rtol=1e-10, atol=1e-12)


def test_vmap_batched_indices_gather_and_scatter():
    X = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    idx = np.array([2, 0])
    np.testing.assert_allclose(rune.vmap(lambda x, i: x[i])(X, idx), [2.0, 7.0])
    np.testing.assert_allclose(rune.vmap(lambda x: x[np.argmax(x)])(X), [5.0, 7.0])

    def zero_at(x, i):
        y = x.copy()
        y[i] = 0.0
        return y
    np.testing.assert_allclose(rune.vmap(zero_at)(X, idx), [[1.0, 5.0, 0.0], [0.0, 0.0, 3.0]])
    np.testing.assert_allclose(rune.vmap(rune.grad(lambda x, i: x[i] ** 2))(X, idx),
                               [[0.0, 0.0, 4.0], [14.0, 0.0, 0.0]])
    W = np.arange(6.0).reshape(3, 2)
    per_ex = rune.vmap(rune.grad(lambda W, i: np.sum(W[i] ** 2)), in_axes=(None, 0))(W, idx)
    assert per_ex.shape == (2, 3, 2)
    np.testing.assert_allclose(per_ex[0][2], 2 * W[2])
    np.testing.assert_allclose(per_ex[1][0], 2 * W[0])


def test_vmap_keyword_arguments_are_mapped_like_jax():
    out = rune.vmap(lambda x, y=None: x * y)(np.ones((2, 3)), y=np.array([[1.0], [2.0]]))
    np.testing.assert_allclose(out, [[1.0] * 3, [2.0] * 3])
