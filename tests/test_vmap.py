"""vmap: axes, trees, errors, control-flow fallback."""

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import rune
from rune import core
from helpers import check_vmap


@dataclass
class Rec:
    a: np.ndarray
    b: np.ndarray


def test_per_example_view():
    seen = []

    def f(x):
        seen.append((x.shape, x.ndim, len(x)))
        return x.sum()
    rune.vmap(f)(np.ones((5, 3, 2)))
    assert seen == [((3, 2), 2, 3)]


def test_in_axes_out_axes_variants():
    x = np.arange(24.0).reshape(2, 3, 4)
    check_vmap(lambda v: v * 2, x, in_axes=(1,), out_axes=0)
    check_vmap(lambda v: v * 2, x, in_axes=(-1,), out_axes=-1)
    check_vmap(lambda v, w: v @ w, x, np.ones(4), in_axes=(0, None))
    got = rune.vmap(lambda v: v.sum(0), in_axes=2, out_axes=0)(x)
    np.testing.assert_allclose(got, x.sum(0).T)


def test_tree_prefix_in_axes():
    r = Rec(np.ones((3, 2)), np.arange(4.0))
    out = rune.vmap(lambda r: r.a * r.b[:2], in_axes=(Rec(0, None),))(r)
    np.testing.assert_allclose(out, np.ones((3, 2)) * np.arange(2.0))
    out = rune.vmap(lambda d: d["x"] + d["y"], in_axes=({"x": 1, "y": None},))(
        {"x": np.ones((2, 5)), "y": np.arange(2.0)})
    assert out.shape == (5, 2)


def test_out_axes_tree_and_unbatched_outputs():
    f = lambda x: (x * 2, 7.0)
    a, b = rune.vmap(f, out_axes=(1, 0))(np.ones((4, 3)))
    assert a.shape == (3, 4) and b.shape == (4,) and np.all(b == 7.0)
    c = rune.vmap(lambda x: np.ones(2), axis_size=3, in_axes=None)(np.ones(5))
    assert c.shape == (3, 2)
    d = rune.vmap(lambda x, y: y, in_axes=(0, None), out_axes=None)(np.ones(3), np.ones(2))
    assert d.shape == (2,)


def test_vmap_errors_name_arguments():
    with pytest.raises(ValueError, match=r"args\[0\] has size 3.*args\[1\] has size 4"):
        rune.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"args\[1\].*rank 1"):
        rune.vmap(lambda a, b: a + b, in_axes=(0, 2))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="axis_size"):
        rune.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match="prefix"):
        rune.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": np.ones(3)})
    with pytest.raises(ValueError, match="depends on the mapped"):
        rune.vmap(lambda a: a, out_axes=None)(np.ones(3))


def test_control_flow_fallback_warns_once_and_strict_raises():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return -x
    x = np.array([[1.0, 2.0], [-3.0, -4.0], [5.0, -1.0]])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("default")   # the user's filters rule; Python's default: once
        out = rune.vmap(f)(x)
        rune.vmap(f)(x)
    assert sum("np.where" in str(m.message) for m in w) == 1
    assert all(issubclass(m.category, rune.PerformanceWarning) for m in w)
    np.testing.assert_allclose(out, [[2, 4], [3, 4], [10, -2]])
    with pytest.raises(rune.BatchedControlFlowError, match="np.where"):
        rune.vmap(f, strict=True)(x)
    assert issubclass(rune.BatchedControlFlowError, ValueError)


@pytest.mark.filterwarnings("ignore::rune.PerformanceWarning")
def test_control_flow_fallback_with_grad_inside_and_outside():
    def f(x):
        return x ** 2 if x > 0 else -x * 3
    xs = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(rune.vmap(rune.grad(f))(xs), [2.0, -3.0, 6.0])
    g = rune.grad(lambda xs: np.sum(rune.vmap(f)(xs)))(xs)
    np.testing.assert_allclose(g, [2.0, -3.0, 6.0])
    # float() and int() of a batched value, and while loops
    def h(x):
        n = int(np.floor(x))
        y = x
        while n > 0:
            y = y * x
            n -= 1
        return y + float(x) * 0
    np.testing.assert_allclose(rune.vmap(h)(np.array([0.5, 1.5, 2.5])),
                               [0.5, 1.5 ** 2, 2.5 ** 3])


@pytest.mark.filterwarnings("ignore::rune.PerformanceWarning")
def test_fallback_hands_each_example_over_as_an_array():
    # a 0-d example is a 0-d array, as in the vectorized run and as NumPy would give it:
    # np.ravel of it is a view, so the write reaches v1 (a NumPy scalar's ravel is a new
    # array, and vmap silently returned x unchanged: found by the random-program tester)
    def f(x, flag):
        v1 = x.copy()
        if np.sum(flag) > 0.0:          # Python control flow: the per-example fallback
            pass
        v5 = np.ravel(v1)
        v5 += np.sin(x)
        return v1
    xs, flags = np.array([0.5, 0.7, 0.9]), np.array([1.0, -1.0, 2.0])
    want = [f(np.array(a), np.array(b)) for a, b in zip(xs, flags)]
    # (1e-13: np.sin of a batch may take NumPy's SIMD loop, of one example the scalar one)
    np.testing.assert_allclose(rune.vmap(f)(xs, flags), want, rtol=1e-13)
    np.testing.assert_allclose(want, xs + np.sin(xs), rtol=1e-13)
    seen = []
    rune.vmap(lambda x, flag: seen.append(type(x)) or (x if flag > 0 else -x))(xs, flags)
    assert seen[-3:] == [np.ndarray] * 3     # (the first try was the batched run)


@pytest.mark.filterwarnings("ignore::rune.PerformanceWarning")
def test_write_scalar_into_plain_array_under_vmap_falls_back():
    def f(x):
        out = np.zeros(2)
        out[0] = x[0] * 2
        out[1] = x[1]
        return out
    np.testing.assert_allclose(rune.vmap(f)(np.ones((3, 2))), [[2, 1]] * 3)


def test_primitive_without_batching_rule_loops_with_warning():
    p = core.Primitive("twice_nobatch", lambda x: x * 2, jvp=(lambda t, o, x: 2 * t,),
                       vjp=(lambda c, o, x: 2 * c,))
    with pytest.warns(rune.PerformanceWarning, match="twice_nobatch"):
        out = rune.vmap(lambda x: p(x))(np.arange(3.0))
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])


def test_vmap_of_vmap_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    out = rune.vmap(rune.vmap(lambda v: v * v.sum(), in_axes=1), in_axes=0)(x)
    want = np.stack([np.stack([x[i, :, j] * x[i, :, j].sum() for j in range(4)])
                     for i in range(2)])
    np.testing.assert_allclose(out, want)


def test_matmul_batching_is_one_call_all_cases():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 3, 4))
    v = rng.standard_normal((5, 4))
    W = rng.standard_normal((4, 2))
    check_vmap(lambda a, w: a @ w, A, W, in_axes=(0, None))
    check_vmap(lambda a, x: a @ x, A, v, in_axes=(0, 0))
    check_vmap(lambda x, w: x @ w, v, W, in_axes=(0, None))
    check_vmap(lambda w, x: w.T @ x, W, v, in_axes=(None, 0))
    check_vmap(lambda x, y: x @ y, v, v, in_axes=(0, 0))
    check_vmap(lambda x, a: x @ a.T, v, A, in_axes=(0, 0))
    check_vmap(lambda a, b: a @ b, np.moveaxis(A, 0, 2), np.swapaxes(A, 1, 2), in_axes=(2, 0))


def test_performance_warnings_obey_the_users_filters():
    """No private once-per-process registry: under an "error" filter every call raises,
    under "ignore" none warns, under "always" every call warns."""
    def branchy_for_filters(x):
        return x if x.sum() > 0 else -x
    x = np.array([[1.0], [-2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        for _ in range(2):
            with pytest.raises(rune.PerformanceWarning):
                rune.vmap(branchy_for_filters)(x)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            rune.vmap(branchy_for_filters)(x)
    assert sum(issubclass(m.category, rune.PerformanceWarning) for m in w) == 3
