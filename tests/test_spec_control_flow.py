"""SPEC 1.3: eager evaluation, so Python control flow works under every transformation,
including vmap's per-example fallback for a branch on a batched value."""

import math
import warnings

import numpy as np
import pytest

import rune
from helpers import fd_grad


def branchy(x):
    if np.sum(x) > 0:             # bool() of a traced value
        return np.sum(x ** 2)
    total = 0.0
    while total > -5:             # while on a traced value
        total = total + np.sum(x)
    return total


def recursive_pow(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * recursive_pow(x, n - 1)


@pytest.mark.parametrize("x", [np.array([1.0, 2.0]), np.array([-1.0, -2.0])])
def test_control_flow_under_grad_jvp_hessian(x):
    g = rune.grad(branchy)(x)
    np.testing.assert_allclose(g, fd_grad(branchy, x), atol=1e-6)
    _, t = rune.jvp(branchy, (x,), (np.ones(2),))
    np.testing.assert_allclose(t, np.sum(fd_grad(branchy, x)), atol=1e-6)
    h = rune.hessian(branchy)(x)
    assert h.shape == (2, 2)
    np.testing.assert_allclose(h, 2 * np.eye(2) if x[0] > 0 else np.zeros((2, 2)), atol=1e-12)


def test_recursion_and_early_return():
    x = np.array([0.5, 1.5])
    g = rune.grad(lambda x: np.sum(recursive_pow(x, 4)))(x)
    np.testing.assert_allclose(g, 4 * x ** 3)
    d2 = rune.grad(rune.grad(lambda s: recursive_pow(s, 3)))(2.0)
    assert d2 == pytest.approx(12.0)


def test_vmap_batched_branch_falls_back_with_one_warning():
    def accept_batched_branch_unique_1(x):
        if np.sum(x) > 0:
            return x * 2.0
        return -x

    xs = np.array([[1.0, 2.0], [-3.0, -1.0], [0.5, 0.25]])
    want = np.stack([accept_batched_branch_unique_1(x) for x in xs])
    with warnings.catch_warnings(record=True) as rec:
        # Python's default filter: each message once per place (the user's filters rule)
        warnings.simplefilter("default")
        got = rune.vmap(accept_batched_branch_unique_1)(xs)
        got2 = rune.vmap(accept_batched_branch_unique_1)(xs)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got2, want)
    perf = [w for w in rec if issubclass(w.category, rune.PerformanceWarning)]
    assert len(perf) == 1, [str(w.message) for w in rec]
    assert "np.where" in str(perf[0].message)


def test_vmap_batched_while_loop_newton():
    def newton_sqrt_unique_2(a):
        x = a
        while np.abs(x * x - a) > 1e-12:
            x = 0.5 * (x + a / x)
        return x

    a = np.array([2.0, 9.0, 16.0, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        np.testing.assert_allclose(rune.vmap(newton_sqrt_unique_2)(a), np.sqrt(a))
        np.testing.assert_allclose(rune.vmap(rune.grad(newton_sqrt_unique_2))(a),
                                   0.5 / np.sqrt(a), rtol=1e-8)


def test_vmap_strict_raises_batched_control_flow_error():
    def strict_branch_unique_3(x):
        return x if x > 0 else -x

    with pytest.raises(rune.BatchedControlFlowError, match="np.where") as ei:
        rune.vmap(strict_branch_unique_3, strict=True)(np.array([1.0, -1.0]))
    assert isinstance(ei.value, ValueError)
    # a branch on an unbatched value is fine under strict
    out = rune.vmap(lambda x, c: x * 2 if c > 0 else x, in_axes=(0, None), strict=True)(
        np.array([1.0, 2.0]), 1.0)
    np.testing.assert_allclose(out, [2.0, 4.0])


@pytest.mark.parametrize("conv", ["float", "int", "item", "math", "bool"])
def test_vmap_conversions_of_batched_values_fall_back(conv):
    fn = {"float": lambda x: x * float(x),
          "int": lambda x: x * int(x),
          "item": lambda x: x * x.item(),
          "math": lambda x: math.sin(x) + 0 * x,
          "bool": lambda x: x * 2 if bool(x > 1.5) else x}[conv]
    xs = np.array([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        got = rune.vmap(fn)(xs)
    want = np.array([fn(x) for x in xs])
    np.testing.assert_allclose(got, want)
    with pytest.raises(rune.BatchedControlFlowError):
        rune.vmap(fn, strict=True)(xs)


def test_fallback_warning_is_per_function_not_per_name():
    def make(k):
        def same_name_unique_5(x):
            return x * k if x > 0 else -x
        return same_name_unique_5

    f1 = lambda x: x if x > 0 else -x          # noqa: E731
    f2 = lambda x: 2 * x if x > 0 else -x      # noqa: E731
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        rune.vmap(f1)(np.array([1.0, -1.0]))
        rune.vmap(f2)(np.array([1.0, -1.0]))
        rune.vmap(make(1.0))(np.array([1.0, -1.0]))
        rune.vmap(make(2.0))(np.array([1.0, -1.0]))
    perf = [w for w in rec if issubclass(w.category, rune.PerformanceWarning)]
    assert len(perf) >= 3, [str(w.message) for w in perf]
