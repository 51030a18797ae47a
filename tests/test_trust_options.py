"""Options that must refuse or run once (issue 24): jacfwd(has_aux=True) runs f once;
linear_transpose refuses a function it can show is not linear."""

import numpy as np
import pytest

import rune


def test_jacfwd_has_aux_runs_f_once_and_returns_that_runs_aux():
    calls = []

    def f(x):
        calls.append(1)
        r = np.random.default_rng(len(calls)).normal()     # a different draw each run
        return np.sin(x) * r, r

    x = np.array([0.0, 1.0])
    J, aux = rune.jacfwd(f, has_aux=True)(x)
    assert len(calls) == 1
    np.testing.assert_allclose(J, np.diag(np.cos(x)) * aux)
    H, a = rune.hessian(lambda x: (np.sum(x ** 3), "aux"), has_aux=True)(np.ones(2))
    assert a == "aux"
    np.testing.assert_allclose(H, 6 * np.eye(2))


def test_linear_transpose_of_a_linear_function():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(rune.linear_transpose(lambda v: A @ v, np.zeros(2))(
        np.array([1.0, 0.0]))[0], A[0])
    assert rune.linear_transpose(lambda v: 2.0 * v, 1.0)(1.0) == (2.0,)


@pytest.mark.parametrize("f, why", [(lambda v: v ** 2, "derivative"),
                                    (lambda v: v * 2.0 + 1.0, "f\\(0\\) is not 0"),
                                    (lambda v: np.sin(v), "derivative")])
def test_linear_transpose_refuses_what_is_not_linear(f, why):
    with pytest.raises(ValueError, match=why):
        rune.linear_transpose(f, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="not linear"):
        rune.linear_transpose(f, np.zeros(2))
