"""Every pair of transformations nests, in both orders; Jacobians and Hessians agree."""

from dataclasses import dataclass

import numpy as np
import pytest

import rune


def f(x):
    return np.sum(np.tanh(x) * x ** 2 + np.sin(x[:1]) * x)


def g_vec(x):
    return np.tanh(x) * np.sum(x ** 2)


X = np.array([0.3, -0.7, 1.1])
XS = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4], [1.0, 0.0, 0.25]])


def grad_f(x):
    return rune.grad(f)(x)


def test_vmap_of_grad_equals_loop():
    got = rune.vmap(rune.grad(f))(XS)
    want = np.stack([rune.grad(f)(x) for x in XS])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_grad_of_vmap():
    got = rune.grad(lambda xs: np.sum(rune.vmap(f)(xs)))(XS)
    want = np.stack([rune.grad(f)(x) for x in XS])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_jvp_of_grad_is_hvp():
    v = np.array([1.0, 2.0, -1.0])
    _, hv = rune.jvp(rune.grad(f), (X,), (v,))
    H = rune.hessian(f)(X)
    np.testing.assert_allclose(hv, H @ v, rtol=1e-10)
    g, hv2 = rune.hvp(f, (X,), (v,))
    np.testing.assert_allclose(hv2[0], H @ v, rtol=1e-10)
    np.testing.assert_allclose(g[0], rune.grad(f)(X), rtol=1e-12)


def test_grad_of_jvp():
    v = np.array([1.0, 2.0, -1.0])
    got = rune.grad(lambda x: rune.jvp(f, (x,), (v,))[1])(X)
    np.testing.assert_allclose(got, rune.hessian(f)(X) @ v, rtol=1e-10)


def test_vmap_of_jvp_and_jvp_of_vmap():
    T = np.eye(3)
    got = rune.vmap(lambda t: rune.jvp(g_vec, (X,), (t,))[1])(T)
    J = rune.jacfwd(g_vec)(X)
    np.testing.assert_allclose(got, J.T, rtol=1e-10)
    _, t = rune.jvp(rune.vmap(g_vec), (XS,), (np.ones_like(XS),))
    want = np.stack([rune.jvp(g_vec, (x,), (np.ones(3),))[1] for x in XS])
    np.testing.assert_allclose(t, want, rtol=1e-12)


def test_jacfwd_jacrev_all_agree():
    J1 = rune.jacfwd(g_vec)(X)
    J2 = rune.jacrev(g_vec)(X)
    np.testing.assert_allclose(J1, J2, rtol=1e-10)
    H = [rune.hessian(f)(X), rune.jacfwd(rune.jacrev(f))(X), rune.jacrev(rune.jacfwd(f))(X),
         rune.jacrev(rune.jacrev(f))(X), rune.jacfwd(rune.jacfwd(f))(X),
         rune.jacfwd(rune.grad(f))(X), rune.vmap(lambda v: rune.hvp(f, (X,), (v,))[1][0])(np.eye(3))]
    for h in H[1:]:
        np.testing.assert_allclose(h, H[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H[0], H[0].T, rtol=1e-10)


def test_three_deep_mixes():
    h3 = lambda x: np.sum(np.sin(x) ** 3)
    third = rune.grad(lambda x: rune.jvp(rune.grad(h3), (x,), (np.ones(1),))[1][0])(np.array([0.4]))
    # d^3/dx^3 sin(x)^3
    x = 0.4
    exact = (6 * np.cos(x) ** 3 - 21 * np.sin(x) ** 2 * np.cos(x))
    np.testing.assert_allclose(third, [exact], rtol=1e-9)
    per_ex_hess = rune.vmap(rune.hessian(f))(XS)
    for i, x in enumerate(XS):
        np.testing.assert_allclose(per_ex_hess[i], rune.hessian(f)(x), rtol=1e-10)
    vv = rune.vmap(rune.vmap(rune.grad(lambda x: np.sum(x ** 3))))(np.stack([XS, 2 * XS]))
    np.testing.assert_allclose(vv, 3 * np.stack([XS, 2 * XS]) ** 2)


def test_check_grads_second_order_nested():
    rune.check_grads(f, X, order=2)
    rune.check_grads(g_vec, X, order=2)


def test_check_grads_reports_leaf_path():
    @dataclass
    class Layer:
        w: np.ndarray

    from rune.core import Primitive
    wrong = Primitive("wrong", np.sin, jvp=(lambda t, o, x: t * np.cos(x),),
                      vjp=(lambda c, o, x: 2 * c * np.cos(x),))
    wrong.batch = lambda a, b: (wrong(a[0]), b[0])

    def h(params):
        return np.sum(params["layers"][1].w * 2) + np.sum(wrong(params["layers"][0].w))
    params = {"layers": [Layer(np.ones(2)), Layer(np.ones(2))]}
    with pytest.raises(AssertionError, match=r"params\['layers'\]\[0\]\.w"):
        rune.check_grads(h, params, order=1)


def test_per_example_mlp_gradients():
    rng = np.random.default_rng(0)
    W1, W2 = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    xs, ys = rng.standard_normal((6, 4)), rng.integers(0, 3, 6)

    def loss(params, x, y):
        h = np.tanh(x @ params[0])
        logits = h @ params[1]
        logp = logits - np.log(np.sum(np.exp(logits)))
        return -logp[y]

    per = rune.vmap(rune.grad(loss), in_axes=(None, 0, 0))((W1, W2), xs, ys)
    for i in range(6):
        gi = rune.grad(loss)((W1, W2), xs[i], ys[i])
        np.testing.assert_allclose(per[0][i], gi[0], rtol=1e-10)
        np.testing.assert_allclose(per[1][i], gi[1], rtol=1e-10)


def test_jacobians_of_python_floats_are_python_floats():
    H = rune.hessian(lambda a, b: a * b ** 2, argnums=(0, 1))(1.0, 2.0)
    assert H == ((0.0, 4.0), (4.0, 2.0))
    assert all(type(v) is float for row in H for v in row)
    assert type(rune.jacrev(lambda x: x ** 2)(3.0)) is float
    assert type(rune.jacfwd(lambda x: x ** 2)(3.0)) is float
    assert isinstance(rune.jacrev(lambda x: x ** 2)(np.array(3.0)), np.ndarray)
