"""rune.check_grads (SPEC 2): passes on right derivatives, names the worst leaf path on
wrong ones, at first and second order, with per-element default tolerances."""

from dataclasses import dataclass

import numpy as np
import pytest

import rune
from helpers import mlp_loss, make_mlp


def test_check_grads_passes_on_correct_functions():
    rng = np.random.default_rng(7)
    p = make_mlp(rng)
    X, Y = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    assert rune.check_grads(lambda p: mlp_loss(p, X, Y), p) is None
    rune.check_grads(lambda x, y: np.sin(x) * np.cos(y), np.array([0.3, 0.4]), np.array([1.0, 2.0]),
                     order=2, modes=("fwd", "rev"))
    rune.check_grads(lambda x: np.tanh(x), np.array([0.3, 0.4], np.float32), order=1)


@dataclass
class CGLayer:
    w: np.ndarray


@dataclass
class CGParams:
    layers: list


def make_wrong_sin():
    @rune.custom_jvp
    def wrong_sin(x):
        return np.sin(x)
    wrong_sin.defjvp(lambda p, t: (np.sin(p[0]), t[0] * np.cos(p[0]) * 1.5))
    return wrong_sin


@pytest.mark.parametrize("modes", [("fwd", "rev"), ("rev",), ("fwd",)])
def test_check_grads_names_the_worst_leaf_path(modes):
    ws = make_wrong_sin()
    params = CGParams([CGLayer(np.array([0.1, 0.2])), CGLayer(np.array([0.3])),
                       CGLayer(np.array([0.5, 0.6]))])

    def f(params):
        return (np.sum(params.layers[0].w ** 2) + np.sum(np.exp(params.layers[1].w))
                + np.sum(ws(params.layers[2].w)))

    with pytest.raises(AssertionError) as ei:
        rune.check_grads(f, params, order=1, modes=modes)
    assert "params.layers[2].w" in str(ei.value)


def test_check_grads_second_order_detects_wrong_second_derivative():
    @rune.custom_jvp
    def cube(x):
        return x ** 3

    # right first derivative, but its rule is written so the second derivative is wrong
    cube.defjvp(lambda p, t: (p[0] ** 3, t[0] * rune.stop_gradient(3 * p[0] ** 2)))
    rune.check_grads(cube, np.array([0.5, 0.7]), order=1)
    with pytest.raises(AssertionError):
        rune.check_grads(cube, np.array([0.5, 0.7]), order=2)


def test_check_grads_reports_the_worst_leaf_not_the_first():
    def scaled_sin(scale):
        @rune.custom_jvp
        def s(x):
            return np.sin(x)
        s.defjvp(lambda p, t: (np.sin(p[0]), t[0] * np.cos(p[0]) * scale))
        return s

    slightly, badly = scaled_sin(1.01), scaled_sin(1.5)

    def f(params):
        return np.sum(slightly(params["a"])) + np.sum(badly(params["b"]))

    with pytest.raises(AssertionError) as ei:
        rune.check_grads(f, {"a": np.ones(2), "b": np.ones(2)}, order=1)
    assert "['b']" in str(ei.value), str(ei.value)


def _scaled_rule(scale):
    @rune.custom_jvp
    def f(x):
        return x * np.array([1e6, 1.0])
    f.defjvp(lambda p, t: (p[0] * np.array([1e6, 1.0]), t[0] * scale))
    return f


def test_check_grads_default_tolerances_and_per_element_comparison():
    x = np.array([0.3, 0.4])
    rune.check_grads(_scaled_rule(np.array([1e6, 1.0 + 1e-8])), x, order=1)   # within rtol
    # a 0.1% error in the small element is not hidden by the large one
    with pytest.raises(AssertionError, match="x"):
        rune.check_grads(_scaled_rule(np.array([1e6, 1.001])), x, order=1)
    with pytest.raises(AssertionError):
        rune.check_grads(_scaled_rule(np.array([1e6 * (1 + 1e-4), 1.0])), x, order=1)
    # explicit tolerances are honoured
    rune.check_grads(_scaled_rule(np.array([1e6, 1.001])), x, order=1, rtol=1e-2, atol=1e-2)
