"""Acceptance sweep of SPEC section 3 (NumPy coverage), ufuncs: every listed operation
through ``helpers.check_op`` (jvp against central differences, vjp/grad against the jvp,
vmap against a Python loop, float32, and second order through nesting)."""

import numpy as np
import pytest

import rune
from helpers import check_op


R = np.random.default_rng(42)
P23 = R.uniform(0.2, 0.8, size=(2, 3))          # in (0, 1): every domain below
Q23 = R.uniform(0.2, 0.8, size=(2, 3))


# ufuncs

UNARY = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arctanh": np.arctanh, "arccosh": lambda x: np.arccosh(x + 1.5),
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "cbrt": np.cbrt,
    "square": np.square, "reciprocal": np.reciprocal, "negative": np.negative,
    "positive": np.positive, "absolute": lambda x: np.absolute(x - 0.5),
    "abs_op": lambda x: abs(x - 0.5), "fabs": lambda x: np.fabs(x - 0.5),
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "degrees": np.degrees,
    "radians": np.radians, "conjugate": np.conjugate, "neg_op": lambda x: -x,
    "pow_int": lambda x: x ** 3, "pow_float": lambda x: x ** 2.5, "rpow": lambda x: 2.0 ** x,
    "pow_neg": lambda x: np.power(x, -1.5), "float_power": lambda x: np.float_power(x, 1.7),
    "sinc": np.sinc, "chain": lambda x: np.exp(np.sin(x) * np.log1p(x)) / (1 + x ** 2),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ufunc(name):
    check_op(UNARY[name], P23)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "true_divide": np.true_divide, "power": np.power, "float_power": np.float_power,
    "arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2, "maximum": np.maximum, "minimum": np.minimum,
    "fmax": np.fmax, "fmin": np.fmin, "copysign": lambda x, y: np.copysign(x, y - 0.5),
    "remainder": lambda x, y: np.remainder(5 * x, y + 0.35),
    "mod": lambda x, y: np.mod(5 * x, y + 0.35), "fmod": lambda x, y: np.fmod(5 * x, y + 0.35),
    "ops": lambda x, y: (x + y) * (x - y) / (x * y) ** 0.5 - x // 0.3 * y % 0.7,
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ufunc(name):
    x, y = P23, Q23
    if name in ("maximum", "minimum", "fmax", "fmin"):
        y = np.where(np.abs(x - y) < 0.05, y + 0.1, y)     # no ties here (tested below)
    check_op(BINARY[name], x, y)


@pytest.mark.parametrize("name", ["add", "multiply", "divide", "power", "arctan2", "maximum",
                                  "hypot", "logaddexp"])
@pytest.mark.parametrize("yshape", [(3,), (2, 1), (1, 3), ()])
def test_binary_ufunc_broadcasting(name, yshape):
    y = R.uniform(0.85, 0.95, size=yshape) if yshape else np.float64(0.9)
    check_op(BINARY[name], P23, np.asarray(y), nested=(yshape == (2, 1)), batch_last=False)


ZERO_DERIV = {
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
    "round": lambda x: np.round(x, 1), "around": lambda x: np.around(x), "fix": np.fix,
    "sign": lambda x: np.sign(x - 0.5), "heaviside": lambda x: np.heaviside(x - 0.5, 0.5),
    "floor_divide": lambda x: np.floor_divide(x, 0.3), "spacing_like": lambda x: x // 0.25,
}


@pytest.mark.parametrize("name", list(ZERO_DERIV))
def test_rounding_and_sign_have_zero_derivative(name):
    f = ZERO_DERIV[name]
    x = P23 * 3 + 0.01
    g = rune.grad(lambda x: np.sum(f(x) * x))(x)
    np.testing.assert_allclose(g, f(x))                     # only the product rule's x part
    _, t = rune.jvp(f, (x,), (np.ones_like(x),))
    assert np.all(np.asarray(t) == 0)
    np.testing.assert_allclose(rune.vmap(f)(x), f(x))


COMPARE = {
    "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
    "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal,
    "logical_and": lambda x, y: np.logical_and(x > 0.5, y > 0.5),
    "logical_or": lambda x, y: np.logical_or(x > 0.5, y > 0.5),
    "logical_xor": lambda x, y: np.logical_xor(x > 0.5, y > 0.5),
    "logical_not": lambda x, y: np.logical_not(x > y), "isclose": np.isclose,
    "signbit": lambda x, y: np.signbit(x - y), "isfinite": lambda x, y: np.isfinite(x / y),
    "isnan": lambda x, y: np.isnan(x - y), "isinf": lambda x, y: np.isinf(x),
    "ops": lambda x, y: (x > y) & (x < 0.6) | ~(y >= 0.3),
}


@pytest.mark.parametrize("name", list(COMPARE))
def test_comparison_and_logical_ufuncs(name):
    f = COMPARE[name]
    x, y = P23, np.where(np.arange(6).reshape(2, 3) % 2 == 0, P23, Q23)
    seen = []

    def loss(x, y):
        c = f(x, y)
        seen.append(c)
        return np.sum(np.where(c, x * y, x))

    rune.grad(loss, argnums=(0, 1))(x, y)
    rune.jvp(loss, (x, y), (np.ones_like(x), np.ones_like(y)))
    for c in seen:
        assert type(c) is np.ndarray and c.dtype == np.bool_
        np.testing.assert_array_equal(c, f(x, y))
    got = rune.vmap(f)(x, y)
    np.testing.assert_array_equal(got, f(x, y))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(rune.vmap(f, in_axes=(1, None))(x, y[:, 0]),
                                  np.stack([f(x[:, i], y[:, 0]) for i in range(3)]))


def test_power_with_zero_exponent_has_zero_derivative_at_zero():
    # x ** 0 == 1 everywhere (NumPy: 0 ** 0 == 1), so its derivative is 0, not 0 * 0**-1 = NaN
    with np.errstate(all="ignore"):
        for f in (lambda x: x ** 0, lambda x: np.power(x, 0.0), lambda x: np.float_power(x, 0)):
            assert rune.grad(f)(0.0) == 0.0
            assert rune.jvp(f, (0.0,), (1.0,))[1] == 0.0
        g = rune.grad(lambda x: np.sum(x ** np.array([0.0, 1.0, 2.0])))(np.zeros(3))
        np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
        assert rune.hessian(lambda x: x ** 2)(0.0) == 2.0
        np.testing.assert_array_equal(
            rune.vmap(rune.grad(lambda x, y: x ** y))(np.zeros(2), np.array([0.0, 2.0])), [0.0, 0.0])
