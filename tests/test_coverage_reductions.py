"""Acceptance sweep of SPEC section 3 (NumPy coverage), reductions and contractions: every listed operation
through ``helpers.check_op`` (jvp against central differences, vjp/grad against the jvp,
vmap against a Python loop, float32, and second order through nesting)."""

import numpy as np
import pytest

import rune
from helpers import check_op


R = np.random.default_rng(42)
N34 = R.normal(size=(3, 4))
M44 = R.normal(size=(4, 4)) + 4 * np.eye(4)     # well conditioned


# reductions

REDUCE = {
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
    "amax": np.amax, "amin": np.amin, "var": np.var, "std": np.std,
    "var_ddof": lambda x, **k: np.var(x, ddof=1, **k),
    "std_ddof": lambda x, **k: np.std(x, ddof=1, **k),
    "logaddexp.reduce": lambda x, axis=None, keepdims=False: np.logaddexp.reduce(
        x, axis=axis if axis is not None else 0, keepdims=keepdims) if axis is not None
    else np.logaddexp.reduce(x.ravel()),
    "add.reduce": lambda x, axis=None, keepdims=False: np.add.reduce(x, axis=axis,
                                                                      keepdims=keepdims),
    "method_sum": lambda x, **k: x.sum(**k), "method_mean": lambda x, **k: x.mean(**k),
    "method_max": lambda x, **k: x.max(**k), "method_prod": lambda x, **k: x.prod(**k),
    "method_std": lambda x, **k: x.std(**k),
}


X3 = R.permutation(24).reshape(2, 3, 4) / 24.0 + 0.3    # distinct values: no ties


@pytest.mark.parametrize("name", list(REDUCE))
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_axis_keepdims(name, axis, keepdims):
    if name == "logaddexp.reduce" and isinstance(axis, tuple):
        pytest.skip("ufunc.reduce over several axes is not a section 3 promise")
    f = REDUCE[name]
    if name == "logaddexp.reduce" and axis is None:
        fn = lambda x: f(x)
    else:
        fn = lambda x: f(x, axis=axis, keepdims=keepdims)
    want_shape = np.shape(fn(X3))
    check_op(fn, X3, nested=(axis in (None, 1)), batch_last=(axis is None))
    assert np.shape(rune.vmap(fn)(np.stack([X3, X3]))) == (2,) + want_shape


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "method_cumsum", "add.accumulate"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumulative(name, axis):
    f = {"cumsum": lambda x: np.cumsum(x, axis=axis), "cumprod": lambda x: np.cumprod(x, axis=axis),
         "method_cumsum": lambda x: x.cumsum(axis=axis),
         "add.accumulate": lambda x: np.add.accumulate(x, axis=axis if axis is not None else 0)}[name]
    check_op(f, X3, nested=axis in (None, 1))


@pytest.mark.parametrize("ord_", [None, 1, 2, np.inf, -np.inf, 3, 0.5])
def test_vector_norm(ord_):
    x = np.array([0.3, -1.2, 0.7, 2.1])
    check_op(lambda x: np.linalg.norm(x, ord=ord_), x)
    check_op(lambda x: np.linalg.norm(x, ord=ord_, axis=1, keepdims=True), N34, nested=False)


@pytest.mark.parametrize("ord_", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm(ord_):
    check_op(lambda A: np.linalg.norm(A, ord=ord_), N34, rtol=1e-4,
             nested=ord_ in (None, "fro", "nuc", 2))
    if ord_ in ("fro", 2, None):
        check_op(lambda A: np.linalg.norm(A, ord=ord_, axis=(1, 2)),
                 np.stack([N34, N34 * 0.5]), nested=False, batch_last=False)


def test_max_min_ties_split_evenly():
    x = np.array([1.0, 3.0, 3.0])
    np.testing.assert_allclose(rune.grad(np.max)(x), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(rune.grad(np.amax)(x), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(rune.grad(lambda x: x.max())(x), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(rune.grad(np.min)(np.array([2.0, 2.0, 2.0, 5.0])),
                               [1 / 3, 1 / 3, 1 / 3, 0.0])
    A = np.array([[1.0, 1.0], [0.0, 2.0]])
    np.testing.assert_allclose(rune.grad(lambda A: np.sum(np.max(A, axis=1)))(A),
                               [[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(rune.grad(lambda A: np.sum(np.amin(A, axis=0, keepdims=True)))(A),
                               [[0.0, 1.0], [1.0, 0.0]])
    # np.maximum / np.minimum at ties
    gx, gy = rune.grad(lambda x, y: np.sum(np.maximum(x, y)), argnums=(0, 1))(
        np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0]))
    np.testing.assert_allclose(gx, [0.5, 0.0, 1.0])
    np.testing.assert_allclose(gy, [0.5, 1.0, 0.0])
    gx, gy = rune.grad(lambda x, y: np.sum(np.minimum(x, y)), argnums=(0, 1))(
        np.array([1.0, 2.0]), np.array([1.0, 5.0]))
    np.testing.assert_allclose(gx, [0.5, 1.0])
    np.testing.assert_allclose(gy, [0.5, 0.0])
    # forward mode is the transpose of the same linear map
    _, t = rune.jvp(np.max, (x,), (np.array([1.0, 2.0, 4.0]),))
    assert t == pytest.approx(3.0)
    # per-example under vmap
    np.testing.assert_allclose(rune.vmap(rune.grad(np.max))(np.array([[1.0, 1.0], [0.0, 2.0]])),
                               [[0.5, 0.5], [0.0, 1.0]])


def test_reduction_dtypes_float32():
    x = X3.astype(np.float32)
    for f in (np.sum, np.mean, np.prod, np.max, np.var, np.std, np.linalg.norm,
              lambda x: np.cumsum(x)[-1], lambda x: np.logaddexp.reduce(x.ravel())):
        assert rune.grad(f)(x).dtype == np.float32
        assert np.asarray(rune.jvp(f, (x,), (np.ones_like(x),))[1]).dtype == np.float32
        assert rune.vmap(f)(x).dtype == np.float32


# contractions

A23, B34, v3, w3 = R.normal(size=(2, 3)), R.normal(size=(3, 4)), R.normal(size=3), R.normal(size=3)


CONTRACT = {
    "matmul_op": (lambda a, b: a @ b, (A23, B34)),
    "matmul": (np.matmul, (A23, B34)),
    "matmul_mv": (lambda a, v: a @ v, (A23, v3)),
    "matmul_vm": (lambda v, b: v @ b, (v3, B34)),
    "matmul_vv": (lambda v, w: v @ w, (v3, w3)),
    "matmul_batched": (lambda a, b: a @ b, (R.normal(size=(2, 2, 3)), B34)),
    "rmatmul_const": (lambda a: np.ones((4, 2)) @ a, (A23,)),
    "dot": (np.dot, (A23, B34)), "dot_mv": (np.dot, (A23, v3)), "dot_vv": (np.dot, (v3, w3)),
    "dot_scalar": (lambda a, s: np.dot(a, s), (A23, np.array(1.5))),
    "method_dot": (lambda a, b: a.dot(b), (A23, B34)),
    "vdot": (np.vdot, (A23, R.normal(size=(2, 3)))),
    "inner": (np.inner, (A23, R.normal(size=(4, 3)))), "inner_vv": (np.inner, (v3, w3)),
    "outer": (np.outer, (v3, R.normal(size=4))), "outer_2d": (np.outer, (A23, v3)),
    "tensordot_1": (lambda a, b: np.tensordot(a, b, axes=1), (A23, B34)),
    "tensordot_0": (lambda a, b: np.tensordot(a, b, axes=0), (v3, w3)),
    "tensordot_2": (lambda a, b: np.tensordot(a, b, axes=2), (A23, R.normal(size=(2, 3)))),
    "tensordot_pairs": (lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])),
                        (A23, R.normal(size=(3, 4, 2)))),
    "einsum_mm": (lambda a, b: np.einsum("ij,jk->ik", a, b), (A23, B34)),
    "einsum_implicit": (lambda a, b: np.einsum("ij,jk", a, b), (A23, B34)),
    "einsum_trace": (lambda m: np.einsum("ii->", m), (M44,)),
    "einsum_diag": (lambda m: np.einsum("ii->i", m), (M44,)),
    "einsum_T": (lambda a: np.einsum("ij->ji", a), (A23,)),
    "einsum_batch": (lambda a, b: np.einsum("bij,bjk->bik", a, b),
                     (R.normal(size=(2, 2, 3)), R.normal(size=(2, 3, 4)))),
    "einsum_ell": (lambda a, v: np.einsum("...ij,...j->...i", a, v),
                   (R.normal(size=(2, 2, 3)), R.normal(size=(2, 3)))),
    "einsum_dot": (lambda v, w: np.einsum("i,i->", v, w), (v3, w3)),
    "einsum_3": (lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c), (A23, B34, R.normal(size=4))),
    "einsum_sq": (lambda a: np.einsum("ij,ij->i", a, a), (A23,)),
}


@pytest.mark.parametrize("name", list(CONTRACT))
def test_contractions(name):
    f, args = CONTRACT[name]
    check_op(f, *args)


def test_matmul_float32_and_jacobian():
    a, b = A23.astype(np.float32), B34.astype(np.float32)
    ga, gb = rune.grad(lambda a, b: np.sum(a @ b), argnums=(0, 1))(a, b)
    assert ga.dtype == gb.dtype == np.float32
    J = rune.jacrev(lambda a: a @ B34)(A23)
    assert J.shape == (2, 4, 2, 3)
    np.testing.assert_allclose(J, np.einsum("ik,jl->ijkl", np.eye(2), B34.T))
