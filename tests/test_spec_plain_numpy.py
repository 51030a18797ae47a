"""SPEC 1 and 1.1: the spec's own example, plain NumPy code (operators, methods,
attributes) inside every transformation, plain ndarrays out; 1.6: no NaN from the branch
not taken."""

import numpy as np
import pytest

import rune
from helpers import fd_grad, Params


def test_spec_example_params_gradient():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([[0.], [1.], [2.], [3.]], dtype=np.float32)

    def loss(p: Params):
        return np.mean(np.square(x @ p.w + p.b - y))

    p = Params(w=np.zeros((3, 1), np.float32), b=np.zeros(1, np.float32))
    g = rune.grad(loss)(p)
    assert type(g) is Params
    assert type(g.w) is np.ndarray and type(g.b) is np.ndarray
    assert g.w.dtype == np.float32 and g.b.dtype == np.float32
    assert g.w.shape == (3, 1) and g.b.shape == (1,)
    # closed form: d/dw mean((xw+b-y)^2) = 2/n x^T (xw+b-y)
    r = (x @ p.w + p.b - y).astype(np.float64)
    np.testing.assert_allclose(g.w, 2 / 4 * x.T.astype(np.float64) @ r, rtol=1e-6)
    np.testing.assert_allclose(g.b, 2 / 4 * r.sum(axis=0), rtol=1e-6)
    # p untouched
    assert np.all(p.w == 0) and np.all(p.b == 0)


def test_methods_attributes_and_indexing_inside_grad():
    idx = np.array([2, 0])
    seen = {}

    def f(x):
        seen["shape"], seen["ndim"], seen["dtype"] = x.shape, x.ndim, x.dtype
        assert len(x) == 3
        a = x.T @ x                   # (4, 4)
        b = x.sum(axis=0)             # (4,)
        c = x[1:, idx]                # (2, 2)
        return a.trace() + b.dot(b) + (c ** 2).mean() + x.max() - x.min() + x.std()

    x = np.random.default_rng(0).normal(size=(3, 4))
    g = rune.grad(f)(x)
    assert seen == {"shape": (3, 4), "ndim": 2, "dtype": np.dtype("float64")}
    assert type(g) is np.ndarray and g.shape == x.shape
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "hessian",
                                  "hvp", "value_and_grad"])
def test_results_are_plain_ndarrays(name):
    x = np.array([0.5, -1.0, 2.0])
    f = lambda x: np.sum(np.sin(x) * x)
    if name == "grad":
        outs = [rune.grad(f)(x)]
    elif name == "value_and_grad":
        outs = list(rune.value_and_grad(lambda x: np.sin(x) @ x)(x))
    elif name == "vjp":
        y, pb = rune.vjp(np.sin, x)
        outs = [y, pb(np.ones(3))[0]]
    elif name == "jvp":
        outs = list(rune.jvp(np.sin, (x,), (np.ones(3),)))
    elif name == "vmap":
        outs = [rune.vmap(np.sin)(x), rune.vmap(rune.grad(lambda v: np.sin(v) * v))(x)]
    elif name == "jacfwd":
        outs = [rune.jacfwd(np.sin)(x)]
    elif name == "jacrev":
        outs = [rune.jacrev(np.sin)(x)]
    elif name == "hessian":
        outs = [rune.hessian(f)(x)]
    else:
        gs, hs = rune.hvp(f, (x,), (np.ones(3),))
        outs = [gs[0], hs[0]]
    for o in outs:
        assert isinstance(o, (np.ndarray, np.generic, float)), type(o)
        assert not isinstance(o, rune.core.Tracer)


@pytest.mark.parametrize("expr", [
    lambda x: np.where(x > 0, np.sqrt(x), 0.0),
    lambda x: np.where(x > 0, np.log(x), 0.0),
    lambda x: np.where(x > 0, x * np.log(x), 0.0),
    lambda x: np.where(x != 0, np.sin(x) / x, 1.0),
    lambda x: np.where(x > 0, x ** 0.5, 0.0),
    lambda x: np.where(x > 0, np.arcsin(1 - x), 0.0),
])
def test_where_nan_trap(expr):
    x = np.array([0.0, 0.25, 1.0])
    with np.errstate(all="ignore"):
        g = rune.grad(lambda x: np.sum(expr(x)))(x)
        assert g[0] == 0.0 and np.all(np.isfinite(g)), g
        _, t = rune.jvp(expr, (x,), (np.ones(3),))
        assert t[0] == 0.0 and np.all(np.isfinite(t)), t
        gs = rune.vmap(rune.grad(expr))(x)
        assert gs[0] == 0.0 and np.all(np.isfinite(gs)), gs
        j = rune.jacrev(expr)(x)
        assert np.all(np.isfinite(j)) and j[0, 0] == 0.0
        assert rune.grad(expr)(0.0) == 0.0
        np.testing.assert_allclose(g[1:], fd_grad(lambda x: np.sum(expr(x)), x[1:]), rtol=1e-5)


def test_where_sqrt_spec_example_scalar_and_hessian():
    f = lambda x: np.where(x > 0, np.sqrt(x), 0.0)
    with np.errstate(all="ignore"):
        assert rune.grad(f)(0.0) == 0.0
        h = rune.hessian(lambda x: np.sum(f(x)))(np.array([0.0, 4.0]))
    assert np.all(np.isfinite(h)), h
    np.testing.assert_allclose(h, np.diag([0.0, -0.25 * 4.0 ** -1.5]))


def test_python_idioms_iteration_unpacking_builtins():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(rune.grad(lambda x: sum(xi ** 2 for xi in x))(x), 2 * x)
    np.testing.assert_allclose(rune.grad(lambda x: (lambda a, b, c: a * b * c)(*x))(x),
                               [6.0, 3.0, 2.0])
    np.testing.assert_allclose(rune.grad(lambda x: max(x) * len(x))(x), [0.0, 0.0, 3.0])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(abs(x - 2.5)))(x), [-1.0, -1.0, 1.0])
    np.testing.assert_allclose(rune.grad(lambda x: x[0] ** x[1])(x), [2.0, 0.0, 0.0])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(divmod(x, 0.7)[1]))(x), 1.0)
    np.testing.assert_allclose(rune.vmap(lambda x: sum(xi ** 2 for xi in x))(np.stack([x, 2 * x])),
                               [14.0, 56.0])
    rows = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(rune.grad(lambda m: sum(np.sum(r ** 2) for r in m))(rows), 2 * rows)


def test_transformations_call_the_function_once():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(np.sin(x))

    x = np.ones(3)
    for tr in (lambda: rune.jvp(f, (x,), (x,)), lambda: rune.grad(f)(x),
               lambda: rune.value_and_grad(f)(x), lambda: rune.vjp(f, x),
               lambda: rune.vmap(f)(np.ones((4, 3))), lambda: rune.hvp(f, (x,), (x,)),
               lambda: rune.jacrev(f)(x)):
        calls.clear()
        tr()
        assert len(calls) == 1


def test_partition_methods_on_traced_values():
    x = np.array([3.0, 1.0, 2.0, 5.0])

    def f(x):
        y = x.copy()
        y.partition(2)
        return np.sum(y[:2]) + np.sum(x[x.argpartition(2)[:2]])
    np.testing.assert_allclose(rune.grad(f)(x), [0.0, 2.0, 2.0, 0.0])
