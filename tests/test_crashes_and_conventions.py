"""Issue-11 cases in the engine: valid code that crashed, kinks and precision.

Each case ends in a right result or a clear error, and the next call works normally.
"""

import warnings

import numpy as np
import pytest

import rune
from rune import core


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# --------------------------------------------------------------------------
# Valid code, nested: a cotangent with several contributions, some traced
# --------------------------------------------------------------------------

def _many_contributions(x):
    return np.sum(x) + np.sum(x * x) + np.sum(x) + np.sum(x)


@pytest.mark.parametrize("mode", ["vmap(grad)", "hvp", "jvp(grad)", "jacrev(grad)",
                                  "hessian", "grad(grad-sum)"])
def test_cotangent_with_plain_and_traced_contributions(mode):
    x = np.array([1.0, -2.0])
    v = np.array([0.5, 3.0])
    f = _many_contributions
    if mode == "vmap(grad)":
        got = rune.vmap(rune.grad(f))(np.stack([x, v]))
        want = np.stack([3 + 2 * x, 3 + 2 * v])
    elif mode == "hvp":
        (g,), (got,) = rune.hvp(f, (x,), (v,))
        np.testing.assert_allclose(g, 3 + 2 * x)
        want = 2 * v
    elif mode == "jvp(grad)":
        _, got = rune.jvp(rune.grad(f), (x,), (v,))
        want = 2 * v
    elif mode == "jacrev(grad)":
        got = rune.jacrev(rune.grad(f))(x)
        want = 2 * np.eye(2)
    elif mode == "hessian":
        got = rune.hessian(f)(x)
        want = 2 * np.eye(2)
    else:
        got = rune.grad(lambda x: np.sum(rune.grad(f)(x) ** 2))(x)
        want = 4 * (3 + 2 * x)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert core.active_traces() == ()


# --------------------------------------------------------------------------
# Crashes on valid inputs
# --------------------------------------------------------------------------

def test_division_by_a_python_zero_gives_inf_like_numpy():
    g = rune.grad(lambda x: np.sum(x / 0.0))(np.ones(2))
    np.testing.assert_array_equal(g, [np.inf, np.inf])
    _, t = rune.jvp(lambda x: x / 0.0, (np.ones(2),), (np.ones(2),))
    np.testing.assert_array_equal(t, [np.inf, np.inf])


@pytest.mark.parametrize("f", [np.mean, np.sum, lambda x: np.sum(x ** 2)],
                         ids=["mean", "sum", "sum_sq"])
def test_gradient_of_an_empty_array_is_empty(f):
    g = rune.grad(f)(np.zeros(0))
    assert g.shape == (0,) and g.dtype == np.float64


def test_per_example_fallback_over_an_empty_batch():
    def branchy(x):
        return x * 2.0 if np.sum(x) > 0 else -x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        out = rune.vmap(branchy)(np.zeros((0, 3)))
        outs = rune.vmap(lambda x: (branchy(x), np.sum(x)), out_axes=(1, 0))(np.zeros((0, 3)))
    assert out.shape == (0, 3)
    assert outs[0].shape == (3, 0) and outs[1].shape == (0,)


def test_a_bare_except_around_a_batched_branch_cannot_hide_the_fallback():
    def f(x):
        try:
            return x * 2 if x > 0 else -x * 2
        except:  # noqa: E722  (what the user wrote)
            return x * 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        np.testing.assert_array_equal(rune.vmap(f)(np.array([1.0, -2.0])), [2.0, 4.0])
    with pytest.raises(rune.BatchedControlFlowError):
        rune.vmap(f, strict=True)(np.array([1.0, -2.0]))


@pytest.mark.parametrize("convert", [float, bool, lambda v: v.item(), np.asarray],
                         ids=["float", "bool", "item", "asarray"])
def test_a_value_leaked_from_vmap_raises_an_ordinary_exception(convert):
    box = []
    rune.vmap(lambda x: box.append(x) or x)(np.ones(2))
    with pytest.raises(Exception, match="already returned|escaped|traced array"):
        convert(box[0])
    np.testing.assert_array_equal(rune.vmap(lambda x: x * 2)(np.ones(2)), [2.0, 2.0])


# --------------------------------------------------------------------------
# Kinks chosen so that smooth functions written through them are exact
# --------------------------------------------------------------------------

def test_abs_squared_has_its_true_second_derivative_at_zero():
    assert rune.hessian(lambda x: np.abs(x) ** 2)(0.0) == 2.0
    assert rune.grad(np.abs)(0.0) == 1.0          # JAX's convention: 1 at 0
    assert rune.grad(np.abs)(-2.0) == -1.0


def test_hypot_squared_at_the_origin():
    g = rune.grad(lambda v: np.hypot(v[0], v[1]) ** 2)(np.zeros(2))
    np.testing.assert_array_equal(g, [0.0, 0.0])
    assert np.all(np.isfinite(rune.grad(lambda v: np.hypot(v[0], v[1]))(np.zeros(2))))


def test_relu_difference_is_the_identity_at_the_tie():
    # maximum splits a tie evenly: relu(x) - relu(-x) == x has derivative 1 at 0
    assert rune.grad(lambda x: np.maximum(x, 0.0) - np.maximum(-x, 0.0))(0.0) == 1.0
    assert rune.grad(lambda x: np.clip(x, -1.0, 1.0) + np.clip(x, 1.0, 2.0))(1.0) == 1.0


# --------------------------------------------------------------------------
# Precision: rules divide rather than multiply by an overflowing reciprocal
# --------------------------------------------------------------------------

@pytest.mark.parametrize("f,x,want", [
    (lambda x: np.exp(np.log(x)), 1e-310, 1.0),
    (lambda x: np.log(x) * x, 1e-310, np.log(1e-310) + 1.0),
    (lambda x: np.sqrt(x) ** 2, 1e-310, 1.0),
    (lambda x: x * np.log2(x), 1e-310, np.log2(1e-310) + 1 / np.log(2)),
    (lambda x: np.exp(np.log10(x) * np.log(10.0)), 1e-310, 1.0),
], ids=["exp_log", "xlogx", "sqrt_sq", "xlog2x", "exp_log10"])
def test_subnormal_inputs_keep_finite_derivatives(f, x, want):
    g = rune.grad(f)(x)
    assert np.isfinite(g)
    np.testing.assert_allclose(g, want, rtol=1e-6)


# --------------------------------------------------------------------------
# Object dtype: never a silent zero
# --------------------------------------------------------------------------

def test_astype_object_is_refused_with_the_reason():
    with pytest.raises(TypeError, match="object"):
        rune.grad(lambda x: np.sum(x.astype(object).astype(float)))(np.ones(2))


def test_tolist_round_trip_keeps_the_derivative():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    g = rune.grad(lambda x: np.sum(np.array(x.tolist()) ** 2))(x)
    np.testing.assert_allclose(g, 2 * x)
    total = rune.grad(lambda x: sum(v * v for v in x.tolist()))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(total, [2.0, 6.0])
    # integers have no derivative: plain Python numbers
    assert rune.grad(lambda x: np.sum(x) + len(np.arange(3).tolist()))(1.0) == 1.0


def test_pinv_second_derivatives_agree_with_inv_on_an_ill_conditioned_matrix():
    """For an invertible matrix pinv is inv: their Hessian-vector products agree to what the
    conditioning allows (the second derivative of A^-1 amplifies rounding by cond(A)^2)."""
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    V, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    A = U @ np.diag([1.0, 0.5, 0.1, 1 / 7e4]) @ V.T
    E = rng.standard_normal((4, 4))
    f_pinv = lambda A: np.sum(np.linalg.pinv(A) ** 2)   # noqa: E731
    f_inv = lambda A: np.sum(np.linalg.inv(A) ** 2)     # noqa: E731
    h_pinv = rune.hvp(f_pinv, (A,), (E,))[1][0]
    h_inv = rune.hvp(f_inv, (A,), (E,))[1][0]
    bound = 10 * np.linalg.cond(A) ** 2 * np.finfo(float).eps
    assert np.max(np.abs(h_pinv - h_inv)) <= bound * np.max(np.abs(h_inv))
    g_pinv, g_inv = rune.grad(f_pinv)(A), rune.grad(f_inv)(A)
    assert np.max(np.abs(g_pinv - g_inv)) <= bound * np.max(np.abs(g_inv))


def test_checkpoints_nested_past_the_recursion_limit_give_a_clear_error():
    def f(x, depth):
        g = np.sin
        for _ in range(depth):
            g = (lambda h: rune.checkpoint(lambda y: h(y) * 1.0))(g)
        return np.sum(g(x))
    x = np.ones(3)
    with pytest.raises(ValueError, match="recursion limit") as info:
        rune.grad(f)(x, 200)
    assert isinstance(info.value, RecursionError)
    assert core.active_traces() == ()
    np.testing.assert_allclose(rune.grad(f)(x, 10), np.cos(x))    # the next call works


def test_a_deep_caller_stack_is_not_reported_as_a_cyclic_tree():
    def recurse(n):
        return recurse(n + 1) if n < 10_000 else rune.tree.flatten((1.0, 2.0))
    with pytest.raises(RecursionError) as info:
        recurse(0)
    assert "contains itself" not in str(info.value)
