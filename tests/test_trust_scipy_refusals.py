"""Inputs SciPy refuses are refused under a transformation too, with SciPy's exception type
(issue 24: f05ccaa silently used axis 0, returned a number off the simplex, and solved a
matrix that is not positive definite with assume_a='pos')."""

import numpy as np
import pytest

import rune

sp = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")
sl = pytest.importorskip("scipy.linalg")

CASES = {
    "logsumexp axis": (lambda x: sp.logsumexp(x, axis=5), np.exceptions.AxisError),
    "softmax axis": (lambda x: np.sum(sp.softmax(x, axis=3)), np.exceptions.AxisError),
    "log_softmax axis": (lambda x: np.sum(sp.log_softmax(x, axis=-4)), np.exceptions.AxisError),
    "dirichlet off the simplex": (lambda x: st.dirichlet.logpdf(x * 0.2, [1.0, 2.0, 3.0]),
                                  ValueError),
    "dirichlet negative": (lambda x: st.dirichlet.logpdf(x - 1.5, [1.0, 2.0, 3.0]), ValueError),
    "solve pos of a negative definite": (
        lambda x: np.sum(sl.solve(-np.eye(3) * x, np.ones(3), assume_a="pos")),
        np.linalg.LinAlgError),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_scipy_refuses(name):
    f, exc = CASES[name]
    x = np.ones(3)
    with pytest.raises(exc):
        f(x)                            # SciPy's own refusal
    with pytest.raises(exc):
        rune.grad(f)(x)
    with pytest.raises(exc):
        rune.jvp(f, (x,), (x,))


def test_the_valid_inputs_still_differentiate():
    x = np.array([0.2, 0.3, 0.5])
    alpha = np.array([1.5, 2.0, 3.0])       # (on the simplex: finite differences leave it)
    np.testing.assert_allclose(rune.grad(lambda x: st.dirichlet.logpdf(x, alpha))(x),
                               (alpha - 1) / x, rtol=1e-12)
    np.testing.assert_allclose(
        rune.grad(lambda d: np.sum(sl.solve(np.diag(d), np.ones(3), assume_a="pos")))(x),
        -1 / x ** 2)
