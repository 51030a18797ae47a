"""Property tests: hypothesis draws shapes, axes and broadcasting patterns (fixed seed,
bounded examples, see conftest.py), and every draw is checked against finite differences
and a Python loop over the batch."""

import numpy as np
from hypothesis import assume, given, strategies as st

import rune
from helpers import check_vmap

shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


def _data(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


@st.composite
def shape_and_axis(draw):
    shape = draw(shapes)
    nd = len(shape)
    axis = draw(st.one_of(
        st.none(),
        st.integers(-nd, nd - 1),
        st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple)))
    keepdims = draw(st.booleans())
    return shape, axis, keepdims


@given(shape_and_axis(), st.sampled_from(["sum", "mean", "prod", "max", "min", "var", "std"]))
def test_reductions_any_axis(case, name):
    shape, axis, keepdims = case
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    # std over a single element is 0 with an undefined (NaN) derivative, as in JAX
    assume(name != "std" or int(np.prod([shape[a] for a in axes])) > 1)
    fn = getattr(np, name)
    x = _data(shape)
    f = lambda x: fn(x, axis=axis, keepdims=keepdims) * 1.5   # noqa: E731
    np.testing.assert_allclose(rune.vjp(f, x)[0], f(x))
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, x * 0.5, x + 1.0]))


@st.composite
def broadcastable_pair(draw):
    out = draw(shapes)
    def shrink(s):
        k = draw(st.integers(0, len(s)))
        return tuple(1 if draw(st.booleans()) else d for d in s[k:])
    return shrink(out), shrink(out)


@given(broadcastable_pair(), st.sampled_from(["add", "subtract", "multiply", "divide",
                                               "maximum", "hypot", "arctan2", "power"]))
def test_binary_broadcasting(shapes_pair, name):
    a_shape, b_shape = shapes_pair
    fn = getattr(np, name)
    a, b = _data(a_shape, 1), _data(b_shape, 2) + 0.01   # no ties for maximum
    f = lambda a, b: fn(a, b)   # noqa: E731
    rune.check_grads(f, a, b, order=2)
    check_vmap(f, np.stack([a, a * 2]), b, in_axes=(0, None))
    check_vmap(f, a, np.stack([b, b * 2]), in_axes=(None, 0))


@given(shapes, st.data())
def test_transpose_reshape_any_permutation(shape, data):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = _data(shape)
    f = lambda x: np.reshape(np.transpose(x, perm), (-1,)) * np.arange(x.size)   # noqa: E731
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, -x]), in_axes=0)
    axis = data.draw(st.integers(0, len(shape)))
    check_vmap(f, np.moveaxis(np.stack([x, -x]), 0, axis), in_axes=axis)


@given(shapes, st.data())
def test_indexing_any_slice(shape, data):
    x = _data(shape)
    idx = tuple(data.draw(st.one_of(
        st.integers(-d, d - 1),
        st.builds(slice, st.none() | st.integers(0, d), st.none() | st.integers(0, d),
                  st.sampled_from([None, 1, 2, -1]))))
        for d in shape)
    f = lambda x: x[idx] * 2.0   # noqa: E731
    np.testing.assert_allclose(rune.vjp(f, x)[0], f(x))
    rune.check_grads(f, x, order=1)
    check_vmap(f, np.stack([x, x + 1]))
