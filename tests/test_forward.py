"""Forward mode: jvp."""

from dataclasses import dataclass

import numpy as np
import pytest

import rune


@dataclass
class P:
    w: np.ndarray
    b: float


def test_jvp_basic_and_trees():
    p = P(np.array([1.0, 2.0]), 3.0)
    t = P(np.array([1.0, 0.0]), 1.0)
    out, tout = rune.jvp(lambda p: np.sum(p.w ** 2) * p.b, (p,), (t,))
    assert out == 15.0
    assert tout == pytest.approx(2 * 1 * 3 + 5 * 1)


def test_jvp_python_float_and_has_aux():
    out, t, aux = rune.jvp(lambda x: (x * x, "aux"), (3.0,), (1.0,), has_aux=True)
    assert out == 9.0 and t == 6.0 and aux == "aux"
    assert isinstance(t, float)


def test_jvp_tangent_mismatch_errors():
    with pytest.raises(ValueError, match=r"primals\[0\]\['a'\].*shape"):
        rune.jvp(lambda d: d["a"], ({"a": np.ones(2)},), ({"a": np.ones(3)},))
    with pytest.raises(ValueError, match="structure"):
        rune.jvp(lambda d: d["a"], ({"a": np.ones(2)},), ({"b": np.ones(2)},))
    with pytest.raises(ValueError, match="dtype"):
        rune.jvp(lambda x: x, (np.ones(2),), (np.ones(2, int),))


def test_jvp_constant_output_has_zero_tangent():
    out, t = rune.jvp(lambda x: np.ones(3), (np.ones(2),), (np.ones(2),))
    np.testing.assert_array_equal(t, np.zeros(3))


def test_forward_perturbation_confusion():
    # d/dx [x * (d/dy (x + y))] = 1
    def inner(x):
        return rune.jvp(lambda y: x + y, (1.0,), (1.0,))[1]
    _, t = rune.jvp(lambda x: x * inner(x), (1.0,), (1.0,))
    assert t == 1.0
    # mixed: grad outside, jvp inside, and vice versa
    assert rune.grad(lambda x: x * inner(x))(1.0) == 1.0
    _, t = rune.jvp(lambda x: x * rune.grad(lambda y: x + y)(1.0), (1.0,), (1.0,))
    assert t == 1.0


def test_control_flow_under_jvp_grad_hessian():
    def f(x):
        if np.sum(x) > 0:
            y = x ** 3
        else:
            y = -x
        n = 0
        while n < 2:
            y = y * 1.5
            n += 1
        return np.sum(y)

    x = np.array([1.0, 2.0])
    _, t = rune.jvp(f, (x,), (np.array([1.0, 0.0]),))
    assert t == pytest.approx(2.25 * 3)
    np.testing.assert_allclose(rune.grad(f)(x), 2.25 * 3 * x ** 2)
    np.testing.assert_allclose(rune.hessian(f)(x), np.diag(2.25 * 6 * x))
    np.testing.assert_allclose(rune.grad(f)(-x), -2.25 * np.ones(2))


def test_jvp_of_setitem_and_buffers():
    def f(x):
        b = np.zeros_like(x)
        b[1:] = x[:-1] * x[1:]
        return b
    x = np.array([1.0, 2.0, 3.0])
    _, t = rune.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(t, [0.0, 3.0, 5.0])
