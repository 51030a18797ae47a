"""Valid code that crashed on f05ccaa (issue 24), and an index NumPy refuses."""

import numpy as np
import pytest

import rune


def test_a_0d_index_beside_a_maximum():
    f = lambda x: x[()] + np.maximum(x, 0.0)        # noqa: E731
    assert rune.grad(f)(np.array(-1.0)) == 1.0
    assert rune.grad(f)(np.array(1.0)) == 2.0
    rune.check_grads(f, np.array(-1.0), order=2)


def test_results_without_derivative_act_as_arrays():
    x = np.array([1.4, 2.6])
    np.testing.assert_allclose(rune.grad(lambda x: np.rint(x).dot(x))(x), np.rint(x))

    def f(x):
        y = np.floor(x)
        y[0] = x[0]             # a traced value written into floor's result
        return np.sum(y * x)

    np.testing.assert_allclose(rune.grad(f)(x), [2 * x[0], np.floor(x[1])])
    np.testing.assert_allclose(rune.jvp(f, (x,), (np.ones(2),))[1], 2 * x[0] + np.floor(x[1]))
    np.testing.assert_allclose(rune.grad(lambda x: x[int(np.floor(x[0]))])(x), [0.0, 1.0])
    assert rune.grad(lambda x: np.sum(np.sign(x) * x))(x).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("idx", [np.array([True]), np.array([[True, False]]),
                                 (slice(None), np.array([True, False]))])
def test_a_boolean_index_that_does_not_match_raises_numpys_indexerror(idx):
    x = np.ones((2, 3))
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[idx]
    with pytest.raises(IndexError, match="boolean index did not match"):
        rune.grad(lambda x: np.sum(x[idx]))(x)


def test_a_write_through_a_0d_view_reaches_its_base():
    """x[...] of a 0-d array is a view in NumPy (found by the random-program tester: jvp and
    grad gave the derivative of the unwritten value)."""
    def h(x0):
        v2 = x0.copy()
        v7 = v2[...]
        v7 *= np.cosh(v2)
        return v2

    def g(x0):
        v2 = x0.copy()
        v7 = np.expand_dims(v2, 0)[...]
        v7 *= np.cosh(v2)
        return v2

    x = np.array(0.42)
    for f in (h, g):
        assert f(x) == x * np.cosh(x)
        np.testing.assert_allclose(rune.vjp(f, x)[0], f(x))
        np.testing.assert_allclose(rune.grad(f)(x), np.cosh(x) + x * np.sinh(x))
        rune.check_grads(f, x, order=2)      # (perturbed 0-d arrays stay arrays)
