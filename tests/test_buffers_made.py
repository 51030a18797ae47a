"""Buffers (arrays the user's code makes inside a transformation) and the arrays NumPy's
methods and creation functions make from them: views that follow the buffer's later
traced writes, and new buffers of the user's."""

import numpy as np
import pytest

import rune


_SQUEEZED = {
    "np.squeeze(c, axis=0)": lambda c: np.squeeze(c, axis=0),
    "np.squeeze(c)": np.squeeze,
    "c.squeeze()": lambda c: c.squeeze(),
}


@pytest.mark.parametrize("shape", [(1, 3), (1,), (3, 1, 1)])
@pytest.mark.parametrize("name", sorted(_SQUEEZED))
def test_squeezed_views_of_a_buffer_follow_its_traced_writes(name, shape):
    # ndarray.squeeze hands its view to the buffer's __array_wrap__, which made it a plain
    # array: the random-program tester's np.squeeze(c1, axis=0) read NaN under jvp/vjp
    if "axis=0" in name and shape[0] != 1:
        pytest.skip("no unit axis 0")
    view = _SQUEEZED[name]

    def f(x):
        c = np.zeros(shape)
        v = view(c)
        c[...] = np.reshape(x * np.arange(1.0, c.size + 1.0), shape)
        return v * 2.0

    x = np.array(0.7)
    want = f(x)
    assert np.all(want != 0.0)
    np.testing.assert_allclose(rune.vjp(f, x)[0], want, rtol=1e-15)
    np.testing.assert_allclose(rune.jvp(f, (x,), (np.ones(()),))[0], want, rtol=1e-15)
    rune.check_grads(f, x, order=2)
    assert type(np.squeeze(np.zeros(shape))) is np.ndarray      # outside: NumPy's own


@pytest.mark.parametrize("like", ["ones_like", "zeros_like", "empty_like", "full_like"])
def test_like_of_a_written_buffer_is_a_new_buffer(like):
    # np.ones_like(buf) of a buffer holding traced values was a traced constant of unknown
    # layout, so a reshape of it and a later write into it were refused (random programs)
    make = {"full_like": lambda c: np.full_like(c, 2.5)}.get(like, getattr(np, like))

    def f(x):
        c = np.linspace(0.5, 1.5, 12).reshape((4, 3))
        c[...] = x * 1.5
        v = make(c)
        v[...] = 1.0 if like == "empty_like" else v
        r = v.reshape((1, 6, 2))
        v[...] += np.sin(np.sum(c * 2.0, axis=0)).sum()
        return r * 1.0

    x = np.arange(12.0).reshape(4, 3) / 10
    want = f(x)
    np.testing.assert_allclose(rune.vjp(f, x)[0], want, rtol=1e-14)
    np.testing.assert_allclose(rune.jvp(f, (x,), (np.ones_like(x),))[0], want, rtol=1e-14)
    rune.check_grads(f, x, order=2)
    xs = np.stack([x, x * 2.0])
    np.testing.assert_allclose(rune.vmap(f)(xs), np.stack([f(x), f(x * 2.0)]), rtol=1e-13)


def test_full_like_of_a_buffer_with_a_traced_fill_value_is_traced():
    def f(x):
        c = np.zeros(3)
        c[...] = x
        return np.full_like(c, x[0]) * c

    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(f(x)))(x),
                               rune.grad(lambda x: np.sum(x[0] * x))(x), rtol=1e-15)


def test_like_of_a_written_buffer_by_keyword():
    # np.ones_like(a=buf): NumPy's dispatch passes the buffer as a keyword (no args)
    def f(x):
        c = np.zeros(3)
        c[...] = x * 2.0
        return np.sum(np.ones_like(a=c) * c)

    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(rune.grad(f)(x), [2.0, 2.0, 2.0], rtol=1e-15)
