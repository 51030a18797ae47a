"""SPEC 2: the public API's conventions (argnums, has_aux, pullbacks, in_axes/out_axes,
Jacobian and Hessian layouts, hvp's tuples)."""

from typing import NamedTuple

import numpy as np
import pytest

import rune
from helpers import Params, Dense


def test_grad_argnums_and_has_aux():
    f = lambda x, y, z: np.sum(x * y) + z
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    g = rune.grad(f, argnums=(0, 1))(x, y, 1.0)
    assert type(g) is tuple and len(g) == 2
    np.testing.assert_allclose(g[0], y)
    np.testing.assert_allclose(g[1], x)
    g1 = rune.grad(f, argnums=1)(x, y, 1.0)
    np.testing.assert_allclose(g1, x)
    g2 = rune.grad(f, argnums=(2,))(x, y, 1.0)
    assert type(g2) is tuple and len(g2) == 1 and g2[0] == 1.0
    gn = rune.grad(f, argnums=-1)(x, y, 1.0)
    assert gn == 1.0
    ga, aux = rune.grad(lambda x: (np.sum(x ** 2), {"norm": np.linalg.norm(x), "tag": "t"}),
                        has_aux=True)(x)
    np.testing.assert_allclose(ga, 2 * x)
    assert aux["tag"] == "t" and type(aux["norm"]) in (np.float64, np.ndarray, float)
    assert not isinstance(aux["norm"], rune.core.Tracer)
    assert float(aux["norm"]) == pytest.approx(np.linalg.norm(x))


def test_value_and_grad_conventions():
    x = np.array([1.0, -2.0])
    v, g = rune.value_and_grad(lambda x: np.sum(x ** 2))(x)
    assert float(v) == 5.0 and not isinstance(v, rune.core.Tracer)
    np.testing.assert_allclose(g, 2 * x)
    (v, aux), g = rune.value_and_grad(lambda x: (np.sum(x ** 2), x * 3), has_aux=True)(x)
    assert float(v) == 5.0
    np.testing.assert_allclose(aux, 3 * x)
    np.testing.assert_allclose(g, 2 * x)
    v, (g0, g1) = rune.value_and_grad(lambda a, b: a * b, argnums=(0, 1))(2.0, 3.0)
    assert float(v) == 6.0 and g0 == 3.0 and g1 == 2.0


def test_grad_kwargs_are_passed_not_differentiated():
    g = rune.grad(lambda x, scale=1.0: np.sum(x) * scale)(np.ones(2), scale=3.0)
    np.testing.assert_allclose(g, [3.0, 3.0])


def test_vjp_reusable_pullback_tuple_per_primal_and_aux():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = lambda x, y: {"p": A @ x * y, "q": (np.sum(x),)}
    x, y = np.array([1.0, -1.0]), 2.0
    out, pb = rune.vjp(f, x, y)
    np.testing.assert_allclose(out["p"], A @ x * y)
    for _ in range(3):            # reusable
        for ct in ({"p": np.array([1.0, 0.0]), "q": (0.0,)},
                   {"p": np.zeros(2), "q": (np.float64(1.0),)}):
            res = pb(ct)
            assert type(res) is tuple and len(res) == 2
            np.testing.assert_allclose(res[0], y * A.T @ ct["p"] + ct["q"][0])
            assert res[1] == pytest.approx(ct["p"] @ (A @ x))
            assert type(res[1]) is float
    out, pb, aux = rune.vjp(lambda x: (np.sin(x), {"cos": np.cos(x)}), x, has_aux=True)
    np.testing.assert_allclose(aux["cos"], np.cos(x))
    np.testing.assert_allclose(pb(np.ones(2))[0], np.cos(x))


def test_jvp_conventions_and_has_aux():
    x = np.array([0.1, 0.2])
    out, t = rune.jvp(lambda x, y: np.sin(x) * y, (x, 2.0), (np.ones(2), 0.5))
    np.testing.assert_allclose(out, np.sin(x) * 2.0)
    np.testing.assert_allclose(t, np.cos(x) * 2.0 + np.sin(x) * 0.5)
    out, t, aux = rune.jvp(lambda x: (x ** 2, {"a": x}), (x,), (np.ones(2),), has_aux=True)
    np.testing.assert_allclose(t, 2 * x)
    np.testing.assert_allclose(aux["a"], x)
    assert not isinstance(aux["a"], rune.core.Tracer)
    # trees of primals and tangents
    p = Dense(np.ones((2, 2)), np.zeros(2))
    out, t = rune.jvp(lambda p: p.w @ x + p.b, (p,), (Dense(np.eye(2), np.ones(2)),))
    np.testing.assert_allclose(t, x + 1)


def test_jvp_tangent_mismatches_are_value_errors_naming_the_path():
    with pytest.raises(ValueError, match=r"\(2,\)"):
        rune.jvp(lambda x: x, (np.ones(3),), (np.ones(2),))
    with pytest.raises(ValueError, match="b"):
        rune.jvp(lambda p: p["a"], ({"a": np.ones(3), "b": np.ones(2)},),
                 ({"a": np.ones(3), "b": np.ones(3)},))


def test_vmap_in_axes_out_axes_axis_size():
    X = np.arange(24.0).reshape(2, 3, 4)
    f = lambda x, y: x * y
    np.testing.assert_allclose(rune.vmap(f, in_axes=(1, None))(X, 2.0), np.moveaxis(X * 2, 1, 0))
    np.testing.assert_allclose(rune.vmap(np.sum, in_axes=-1)(X), X.sum(axis=(0, 1)))
    out = rune.vmap(lambda x: x * 2, in_axes=1, out_axes=-1)(X)
    np.testing.assert_allclose(out, np.moveaxis(X * 2, 1, -1))
    out = rune.vmap(lambda x: (x, np.ones(2)), out_axes=(0, None))(np.arange(3.0))
    np.testing.assert_allclose(out[0], np.arange(3.0))
    np.testing.assert_allclose(out[1], np.ones(2))
    out = rune.vmap(lambda: np.arange(2.0), axis_size=3)()
    np.testing.assert_allclose(out, np.tile(np.arange(2.0), (3, 1)))
    out = rune.vmap(lambda a: a + 1, in_axes=None, axis_size=2)(np.ones(3))
    assert out.shape == (2, 3)
    # in_axes as a tree prefix (dict / dataclass)
    d = {"w": np.ones((3, 2)), "b": np.arange(3.0)}
    out = rune.vmap(lambda d, x: d["w"] @ x + d["b"], in_axes=({"w": None, "b": None}, 0))(
        d, np.ones((5, 2)))
    assert out.shape == (5, 3)
    out = rune.vmap(lambda d: d["w"].sum() + d["b"], in_axes=({"w": 1, "b": 0},))(
        {"w": np.ones((4, 3)), "b": np.arange(3.0)})
    np.testing.assert_allclose(out, 4 + np.arange(3.0))
    p = Params(np.ones((4, 3)), np.ones(1))
    out = rune.vmap(lambda p: np.sum(p.w) * p.b, in_axes=(Params(0, None),))(p)
    assert out.shape == (4, 1)
    # vmap over the records of a list (prefix = list)
    out = rune.vmap(lambda a, b: a - b, in_axes=[0, 1])(np.ones((2, 3)), np.zeros((3, 2)))
    assert out.shape == (2, 3)


def test_jacobian_layout_and_tree_structure():
    class In(NamedTuple):
        a: np.ndarray
        b: float

    def f(p):
        return {"v": p.a * p.b, "m": np.outer(p.a, p.a), "s": np.sum(p.a)}

    p = In(np.array([1.0, 2.0, 3.0]), 2.0)
    for jac in (rune.jacfwd, rune.jacrev):
        J = jac(f)(p)
        assert type(J) is dict and set(J) == {"v", "m", "s"}
        for k in J:
            assert type(J[k]) is In, (jac, k)
        assert J["v"].a.shape == (3, 3) and np.shape(J["v"].b) == (3,)
        assert J["m"].a.shape == (3, 3, 3) and np.shape(J["m"].b) == (3, 3)
        assert J["s"].a.shape == (3,) and np.shape(J["s"].b) == ()
        np.testing.assert_allclose(J["v"].a, 2.0 * np.eye(3))
        np.testing.assert_allclose(J["v"].b, p.a)
        np.testing.assert_allclose(J["s"].a, np.ones(3))
        Jm = np.zeros((3, 3, 3))
        for i in range(3):
            for j in range(3):
                Jm[i, j, i] += p.a[j]
                Jm[i, j, j] += p.a[i]
        np.testing.assert_allclose(J["m"].a, Jm)


def test_jacobian_argnums_tuple_and_dtypes():
    f = lambda x, y: np.concatenate([x * y, x])
    x, y = np.ones(2, np.float32), np.float32(3.0)
    for jac in (rune.jacfwd, rune.jacrev):
        Jx, Jy = jac(f, argnums=(0, 1))(x, y)
        assert Jx.shape == (4, 2) and Jx.dtype == np.float32
        assert np.shape(Jy) == (4,) and Jy.dtype == np.float32
        np.testing.assert_allclose(Jx, np.vstack([3 * np.eye(2), np.eye(2)]))
        np.testing.assert_allclose(Jy, [1, 1, 0, 0])
    J = rune.jacrev(lambda x: x.astype(np.float32) * 2)(np.ones(3))
    assert J.shape == (3, 3) and J.dtype == np.float64       # the input's dtype, as JAX


def test_jacobian_of_matrix_function_layout():
    A = np.random.default_rng(5).normal(size=(2, 3))
    f = lambda X: X @ X.T           # (2,3) -> (2,2)
    for jac in (rune.jacfwd, rune.jacrev):
        J = jac(f)(A)
        assert J.shape == (2, 2, 2, 3)
        eps = 1e-6
        for i in np.ndindex(A.shape):
            E = np.zeros_like(A)
            E[i] = eps
            np.testing.assert_allclose(J[(...,) + i], (f(A + E) - f(A - E)) / (2 * eps),
                                       rtol=1e-6, atol=1e-8)


def test_hessian_layout_and_trees():
    f = lambda x: np.sum(x ** 3)
    X = np.arange(1.0, 7.0).reshape(2, 3)
    H = rune.hessian(f)(X)
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H.reshape(6, 6), np.diag(6 * X.ravel()))
    H = rune.hessian(lambda d: np.sum(d["a"] ** 2) * d["b"])({"a": np.array([1.0, 2.0]), "b": 3.0})
    np.testing.assert_allclose(H["a"]["a"], 6 * np.eye(2))
    np.testing.assert_allclose(H["a"]["b"], [2.0, 4.0])
    np.testing.assert_allclose(H["b"]["a"], [2.0, 4.0])
    assert np.shape(H["b"]["b"]) == () and H["b"]["b"] == 0
    Hxy = rune.hessian(lambda x, y: np.sum(x * y) ** 2, argnums=(0, 1))(np.ones(2), np.ones(2))
    assert type(Hxy) is tuple and type(Hxy[0]) is tuple
    np.testing.assert_allclose(Hxy[0][1], 2 * (np.ones((2, 2)) + 2 * np.eye(2)))


def test_hvp_returns_tuples_of_trees():
    f = lambda x, p: np.sum(x ** 2 * p["w"]) + p["c"] * np.sum(x)
    x, p = np.array([1.0, 2.0]), {"w": np.array([3.0, 4.0]), "c": 0.5}
    grads, hvps = rune.hvp(f, (x, p), (np.array([1.0, 0.0]), {"w": np.zeros(2), "c": 1.0}))
    assert type(grads) is tuple and type(hvps) is tuple and len(grads) == len(hvps) == 2
    np.testing.assert_allclose(grads[0], 2 * x * p["w"] + 0.5)
    np.testing.assert_allclose(grads[1]["w"], x ** 2)
    # H v: d/dx of grad_x along x-direction e0 and c-direction 1
    np.testing.assert_allclose(hvps[0], [2 * 3.0 + 1.0, 1.0])
    np.testing.assert_allclose(hvps[1]["w"], [2.0, 0.0])
    assert hvps[1]["c"] == pytest.approx(1.0)     # d(sum x)/dx . v_x


def test_vmap_out_axes_negative_none_and_errors():
    X = np.ones((3, 2))
    np.testing.assert_allclose(rune.vmap(np.sum, out_axes=-1)(X), [2.0, 2.0, 2.0])
    assert rune.vmap(lambda x: (np.sum(x), x), out_axes=(-1, -1))(X)[1].shape == (2, 3)
    out = rune.vmap(lambda x: {"a": x, "b": None}, out_axes={"a": -1, "b": None})(X)
    assert out["a"].shape == (2, 3) and out["b"] is None
    with pytest.raises(ValueError, match="out"):
        rune.vmap(lambda x: x, out_axes=2)(X)
    with pytest.raises(ValueError):
        rune.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(X)
    with pytest.raises(ValueError, match="None"):
        rune.vmap(lambda x: x * 2, out_axes=None)(X)
