"""Cotangents keep the primal's precision: the local derivatives of ``maximum``/``minimum``
(``fmax``/``fmin``), of the ``max``/``min`` reductions and of ``where`` are built in the
operands' floating dtype, so a float32 program's backward pass runs in float32 from start
to end (the engine casts a widened cotangent back, but only after paying for float64
arithmetic); the weights themselves (1, 1/2 at a tie, 0, NaN rules of ``fmax``) are the
same on plain arrays and on traced values (higher orders, ``vmap``).  Also: Cholesky's
derivatives by triangular solves agree with the LU fallback used without SciPy."""

import numpy as np
import pytest

import rune
import rune.reverse
from rune.primitives import linalg as rl

F32 = np.float32
RNG = np.random.default_rng(7)


def relu_net(x):
    h = np.maximum(x @ x.T, 0.0)
    s = np.minimum(h, 2.0) + np.fmax(x, -0.5).sum() + np.fmin(x, 0.5).sum()
    s = s - np.max(s, axis=-1, keepdims=True) + np.min(s, axis=0)
    return np.sum(np.where(x > 0, x, 0.1 * x)) + np.mean(np.exp(s)) + np.max(x)


@pytest.fixture
def widened(monkeypatch):
    """The cotangents the engine had to cast back to a narrower dtype during a backward."""
    seen = []
    cast = rune.api_util.cast_like

    def spy(c, dtype):
        if c.dtype != dtype:
            seen.append((c.dtype, dtype, c.shape))
        return cast(c, dtype)
    monkeypatch.setattr(rune.backward, "cast_like", spy)
    return seen


def test_float32_backward_is_float32_throughout(widened):
    x = RNG.standard_normal((6, 5)).astype(F32)
    g = rune.grad(relu_net)(x)
    assert g.dtype == F32
    assert widened == [], f"float32 cotangents widened: {widened}"
    x64 = x.astype(np.float64)
    g64 = rune.grad(relu_net)(x64)
    # float32 against float64: the same program, float32's rounding times a handful of ops
    np.testing.assert_allclose(g, g64, rtol=1e-4, atol=1e-4 * np.abs(g64).max())


def test_float64_rules_still_check():
    x = RNG.standard_normal((4, 3)) + 0.05   # ties and kinks away from the perturbation
    x = np.where(np.abs(x) < 0.1, 0.3, x)
    rune.check_grads(relu_net, x)
    rune.check_grads(lambda a, b: np.sum(np.maximum(a, b) * np.fmin(b, a) ** 2),
                     x, x[::-1] + 0.25)


@pytest.mark.parametrize("dtype", [np.float16, F32, np.float64])
@pytest.mark.parametrize("op, wins", [(np.maximum, np.greater), (np.minimum, np.less),
                                      (np.fmax, np.greater), (np.fmin, np.less)])
def test_tie_weights_in_dtype_on_plain_and_traced_values(op, wins, dtype):
    x = np.array([1.0, 2.0, 3.0, np.nan, 5.0, -1.0], dtype)
    y = np.array([1.0, 1.0, 4.0, 0.0, np.nan, -1.0], dtype)
    gx, gy = rune.grad(lambda a, b: np.sum(op(a, b)), argnums=(0, 1))(x, y)
    assert gx.dtype == dtype and gy.dtype == dtype
    nan_wins = op in (np.fmax, np.fmin)
    with np.errstate(invalid="ignore"):
        ex = np.where(wins(x, y) | (nan_wins & np.isnan(y)), 1.0, np.where(x == y, 0.5, 0.0))
        ey = np.where(wins(y, x) | (nan_wins & np.isnan(x)), 1.0, np.where(x == y, 0.5, 0.0))
    np.testing.assert_array_equal(gx, ex.astype(dtype))
    np.testing.assert_array_equal(gy, ey.astype(dtype))
    # traced weights (vmap of grad) equal the plain ones, example by example
    bx = rune.vmap(rune.grad(lambda a, b: op(a, b)), in_axes=(0, 0))(x, y)
    np.testing.assert_array_equal(bx, gx)
    # second order: maximum is piecewise linear, its Hessian is zero (traced rule)
    h = rune.hessian(lambda a: np.sum(op(a, y) * 1.0))(np.array([1.5, 2.5, 3.5, 0.5, 4.0,
                                                                 -2.0], dtype))
    assert h.dtype == dtype and not np.any(h)


def test_scalar_operands_broadcast_and_keep_dtype():
    x = np.array([[-1.0, 0.0, 2.0]], F32)
    g = rune.grad(lambda x: np.sum(np.maximum(x, 0.0) + np.minimum(0, x)))(x)
    assert g.dtype == F32
    np.testing.assert_array_equal(g, np.array([[1.0, 1.0, 1.0]], F32))   # 1/2 + 1/2 at 0
    assert type(rune.grad(lambda s: np.maximum(s, 1.0))(F32(1.0))) is F32
    gi = rune.grad(lambda x: np.sum(np.maximum(x, np.arange(3))))(np.array([0.0, 0.5, 3.0]))
    np.testing.assert_array_equal(gi, [0.5, 0.0, 1.0])


@pytest.mark.parametrize("dtype", [F32, np.float64])
def test_max_reduction_weights_in_dtype(dtype, widened):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], dtype)
    g = rune.grad(lambda x: np.sum(np.max(x, axis=1) * np.array([1.0, 2.0], dtype)))(x)
    assert g.dtype == dtype and widened == []
    np.testing.assert_array_equal(g, np.array([[0, 0.5, 0.5], [1, 0, 1]], dtype))


def test_cholesky_triangular_solves_match_the_lu_fallback(monkeypatch):
    a = RNG.standard_normal((2, 4, 4))
    spd = lambda x: x @ np.swapaxes(x, -1, -2) + 4 * np.eye(4)
    w = RNG.standard_normal((2, 4, 4))
    f = lambda x: np.sum(np.linalg.cholesky(spd(x)) * w)
    fu = lambda x: np.sum(np.linalg.cholesky(spd(x), upper=True) ** 2 * w)
    rl._triangular_solver()
    assert rl._TRISOLVE, "the solver is chosen on first use"
    with_tri = rune.grad(f)(a), rune.grad(fu)(a), rune.jvp(f, (a,), (w,))[1]
    rune.check_grads(f, a)
    monkeypatch.setattr(rl, "_TRISOLVE", [lambda a, b, lower: rl.solve_p(a, b)])
    with_lu = rune.grad(f)(a), rune.grad(fu)(a), rune.jvp(f, (a,), (w,))[1]
    rune.check_grads(fu, a)
    for p, q in zip(with_tri, with_lu):     # condition of spd(a) ~ 10: a few ulps apart
        np.testing.assert_allclose(p, q, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("xs, ys", [((3,), (2, 3, 4)), ((2, 4, 3), (3,)), ((3,), (3, 4))])
def test_vector_matrix_products_outer_product_gradients(xs, ys):
    """matmul's VJP with a vector operand is an outer product (one einsum): checked
    against finite differences, per-example gradients against a loop, in float32 too."""
    x, y = RNG.standard_normal(xs), RNG.standard_normal(ys)
    f = lambda x, y: np.sum(np.tanh(x @ y))
    rune.check_grads(f, x, y)
    X = RNG.standard_normal((5,) + xs)
    per_example = rune.vmap(rune.grad(f, argnums=(0, 1)), in_axes=(0, None))(X, y)
    for k in range(5):
        for got, want in zip(per_example, rune.grad(f, argnums=(0, 1))(X[k], y)):
            np.testing.assert_allclose(got[k], want, rtol=1e-12, atol=1e-12)
    g32 = rune.grad(f, argnums=(0, 1))(x.astype(F32), y.astype(F32))
    assert all(g.dtype == F32 for g in g32)
