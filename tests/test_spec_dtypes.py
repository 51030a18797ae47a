"""SPEC 1.7: mixed dtypes in one record, each gradient in its leaf's dtype; Python scalars
in, Python scalars out; integer and boolean leaves are constants."""

from dataclasses import dataclass

import numpy as np
import pytest

import rune


@dataclass
class Mixed:
    h: np.ndarray
    s: np.ndarray
    d: np.ndarray
    c: np.ndarray
    i: np.ndarray
    b: np.ndarray
    pf: float
    pi: int


def mixed_record():
    return Mixed(h=np.array([1.0, 2.0], np.float16), s=np.array([1.0, -1.0], np.float32),
                 d=np.array([0.5, 2.0]), c=np.array([1 + 2j, 3 - 1j]),
                 i=np.array([[1, 2]], np.int32), b=np.array([True, False]), pf=2.0, pi=3)


def mixed_loss(m):
    return (np.sum(m.h.astype(np.float32) ** 2) + np.sum(m.s ** 3) + np.sum(np.log(m.d))
            + np.sum(np.abs(m.c) ** 2) + np.sum(m.i * m.d) + np.sum(m.b * m.d)
            + m.pf ** 2 + m.pi * m.pf)


def test_mixed_dtype_record_gradients_keep_leaf_dtypes():
    m = mixed_record()
    g = rune.grad(mixed_loss)(m)
    assert type(g) is Mixed
    for name in "hsdcib":
        leaf, gl = getattr(m, name), getattr(g, name)
        assert type(gl) is np.ndarray, name
        assert gl.dtype == leaf.dtype and gl.shape == leaf.shape, name
    np.testing.assert_allclose(g.h, [2.0, 4.0])
    np.testing.assert_allclose(g.s, [3.0, 3.0])
    np.testing.assert_allclose(g.d, 1 / m.d + m.i.sum(axis=0) + m.b)
    np.testing.assert_allclose(g.c, 2 * np.conj(m.c))          # JAX convention
    assert np.all(g.i == 0) and np.all(g.b == False)  # noqa: E712
    assert type(g.pf) is float and g.pf == pytest.approx(2 * 2.0 + 3)
    assert type(g.pi) is int and g.pi == 0
    # an optimizer step maps over the tree
    new = rune.tree.map(lambda p, g: p - 0 * g, m, g)
    assert type(new) is Mixed and new.h.dtype == np.float16 and new.i.dtype == np.int32


def test_mixed_dtype_value_and_grad_vjp_and_jacrev():
    m = mixed_record()
    val, g = rune.value_and_grad(mixed_loss)(m)
    assert val == pytest.approx(mixed_loss(m))
    _, pb = rune.vjp(mixed_loss, m)
    (g2,) = pb(np.float64(1.0))
    for name in "hsdcib":
        assert getattr(g2, name).dtype == getattr(m, name).dtype
        np.testing.assert_allclose(getattr(g2, name), getattr(g, name))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_dtypes_preserved_through_all_transformations(dtype):
    x = np.array([0.5, 1.0, 1.5], dtype)
    f = lambda x: np.sum(np.tanh(x) * x)
    assert rune.grad(f)(x).dtype == dtype
    y, t = rune.jvp(lambda x: np.tanh(x) * x, (x,), (np.ones(3, dtype),))
    assert y.dtype == dtype and t.dtype == dtype
    assert rune.vmap(lambda x: np.tanh(x) * x)(x).dtype == dtype
    assert rune.jacrev(lambda x: np.tanh(x))(x).dtype == dtype
    assert rune.jacfwd(lambda x: np.tanh(x))(x).dtype == dtype
    assert rune.hessian(f)(x).dtype == dtype
    assert type(rune.grad(lambda x: x * x)(dtype(2.0))) is dtype
    tol = {np.float16: 1e-2, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(rune.grad(f)(x).astype(np.float64),
                               np.tanh(x64) + x64 * (1 - np.tanh(x64) ** 2), rtol=tol)


def test_python_scalars_in_python_scalars_out():
    g = rune.grad(lambda x: x ** 3)(2.0)
    assert type(g) is float and g == 12.0
    gx, gn = rune.grad(lambda x, n: x ** n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert type(gx) is float and gx == 12.0
    assert type(gn) is int and gn == 0
    gs = rune.grad(lambda t: t[0] * t[1], argnums=0)((2.0, 5.0))
    assert type(gs) is tuple and all(type(v) is float for v in gs) and gs == (5.0, 2.0)
    _, t = rune.jvp(lambda x: x * x, (3.0,), (1.0,))
    assert isinstance(t, float) and t == 6.0
    gc = rune.grad(lambda z: np.abs(z) ** 2)(3 + 4j)
    assert type(gc) is complex and gc == pytest.approx(6 - 8j)


def test_integer_and_bool_leaves_are_constants():
    def f(x, n, mask):
        return np.sum(x * n * mask)
    x, n, mask = np.ones(3), np.arange(3), np.array([True, False, True])
    gx, gn, gm = rune.grad(f, argnums=(0, 1, 2), allow_int=True)(x, n, mask)
    np.testing.assert_allclose(gx, n * mask)
    assert gn.dtype == n.dtype and gn.shape == (3,) and not gn.any()
    assert gm.dtype == np.bool_ and gm.shape == (3,) and not gm.any()


def test_complex_leaves_follow_jax_convention():
    z = np.array([3 + 4j, 1j])
    np.testing.assert_allclose(rune.grad(lambda z: np.sum(np.abs(z) ** 2))(z), 2 * np.conj(z))
    out, t = rune.jvp(lambda z: z * z, (np.array([1 + 1j]),), (np.array([1 + 0j]),))
    np.testing.assert_allclose(t, [2 + 2j])
    np.testing.assert_allclose(rune.vmap(np.abs)(z), [5.0, 1.0])
    rune.check_grads(lambda z: np.sum(np.abs(np.sin(z)) ** 2), np.array([0.3 + 0.2j, 1 - 1j]))
    g = rune.grad(lambda p: np.sum(np.abs(p["z"] * p["r"]) ** 2))({"z": z, "r": np.float32(2.0)})
    assert g["z"].dtype == np.complex128 and type(g["r"]) is np.float32
