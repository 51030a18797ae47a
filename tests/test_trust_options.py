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


def _custom_jvp_returning(ret):
    @rune.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def rule(primals, tangents):
        (x,), (dx,) = primals, tangents
        return ret(x, dx)

    return f


@pytest.mark.parametrize("ret, match", [
    (lambda x, dx: (np.sin(x)[:1], np.cos(x) * dx), r"primal output of shapes \[\(1,\)\]"),
    (lambda x, dx: (np.sin(x), "oops"), "a tangent of type str"),
    (lambda x, dx: (np.sin(x), (np.cos(x) * dx)[:1]), r"a tangent of shape \(1,\)"),
])
def test_custom_jvp_rule_outputs_are_checked_naming_the_rule(ret, match):
    f = _custom_jvp_returning(ret)
    x = np.ones(2)
    with pytest.raises(ValueError, match="JVP rule of the custom_jvp function f"):
        rune.jvp(f, (x,), (x,))
    with pytest.raises(ValueError, match=match):
        rune.grad(lambda x: np.sum(f(x)))(x)


def test_a_right_custom_jvp_rule_still_works():
    f = _custom_jvp_returning(lambda x, dx: (np.sin(x), np.cos(x) * dx))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(f(x)))(np.ones(2)), np.cos(1.0))
