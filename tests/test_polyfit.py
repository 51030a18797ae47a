"""np.polyfit with traced x, y and w (weights): values against NumPy's own (coefficients,
full=True and cov= outputs), derivatives against finite differences and JVP against VJP
(``check_grads``, second order), ``vmap`` against a loop, NumPy's errors and warning."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap

X = np.linspace(0.0, 1.0, 8)
Y = np.sin(3.0 * X)
W = 1.0 + X
Y2 = np.stack([Y, Y ** 2], axis=1)


def values(f, *args):
    return rune.jvp(f, args, args)[0]


@pytest.mark.parametrize("deg", [0, 1, 3])
@pytest.mark.parametrize("y", [Y, Y2], ids=["1d", "2d"])
def test_coefficients(deg, y):
    def f(x, y, w):
        return np.polyfit(x, y, deg, w=w)
    np.testing.assert_allclose(values(f, X, y, W), f(X, y, W), rtol=1e-12, atol=1e-12)
    rune.check_grads(f, X, y, W, order=2)
    rune.check_grads(lambda y: np.polyfit(X, y, deg), y, order=1)


@pytest.mark.parametrize("y", [Y, Y2], ids=["1d", "2d"])
@pytest.mark.parametrize("kw", [{"full": True}, {"cov": True}, {"cov": "unscaled"}],
                         ids=["full", "cov", "unscaled"])
def test_full_and_cov(kw, y):
    def f(x, y, w):
        return np.polyfit(x, y, 2, w=w, **kw)
    got, want = values(f, X, y, W), f(X, y, W)
    assert len(got) == len(want)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(v, float), rtol=1e-11,
                                   atol=1e-13)
    def numbers(x, y, w):     # the differentiable outputs (not the rank, not rcond)
        out = f(x, y, w)
        return (out[0], out[1], out[3]) if "full" in kw else out
    rune.check_grads(numbers, X, y, W, order=1)


def test_known_derivative_of_the_weighted_mean():
    # deg 0 with weights w is the weighted mean sum(w^2 y) / sum(w^2)
    g = rune.grad(lambda w: np.polyfit(X, Y, 0, w=w)[0])(W)
    s = np.sum(W ** 2)
    want = 2 * W * (Y * s - np.sum(W ** 2 * Y)) / s ** 2
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)


def test_vmap():
    check_vmap(lambda w: np.polyfit(X, Y, 2, w=w), np.stack([W, W ** 2, 1 + 0 * W]))
    check_vmap(lambda y: np.polyfit(X, y, 2, w=W), np.stack([Y, Y ** 2]))
    check_vmap(rune.grad(lambda w: np.sum(np.polyfit(X, Y, 2, w=w))), np.stack([W, W ** 2]))


def test_errors_and_warning():
    with pytest.raises(TypeError, match="weights"):
        rune.grad(lambda w: np.polyfit(X, Y, 1, w=w)[0])(np.ones((8, 1)))
    with pytest.raises(TypeError, match="same length"):
        rune.grad(lambda w: np.polyfit(X, Y, 1, w=w)[0])(np.ones(7))
    with pytest.raises(ValueError, match="deg"):
        rune.grad(lambda y: np.polyfit(X, y, -1)[0])(Y)
    with pytest.raises(ValueError, match="exceed order"):
        rune.grad(lambda y: np.polyfit(X[:3], y, 2, cov=True)[0][0])(Y[:3])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        rune.grad(lambda y: np.polyfit(np.zeros(4) + 1.0, y, 2)[0])(Y[:4])
    assert any(issubclass(r.category, np.exceptions.RankWarning) for r in rec)


def test_inputs_not_mutated():
    x, y, w = X.copy(), Y.copy(), W.copy()
    rune.grad(lambda w: np.polyfit(x, y, 2, w=w)[0])(w)
    np.testing.assert_array_equal(w, W)
    np.testing.assert_array_equal(y, Y)


def test_docstring_example():
    import doctest
    import rune.numpy.numeric as mod
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for t in finder.find(mod.polyfit, "polyfit", globs={}):
        runner.run(t)
    assert runner.failures == 0 and runner.tries > 0
