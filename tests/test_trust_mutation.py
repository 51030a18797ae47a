"""SPEC 4 at NumPy's boundary (issue 24): what a transformation records never changes after
the fact, and what it returns never aliases anything.  Each case gave a wrong number with
no error on f05ccaa."""

import numpy as np
import pytest

import rune
from rune.kept import COPY_BELOW


def test_pullback_after_the_caller_wrote_into_its_input():
    x = np.array([0.0, 1.0])
    out, pull = rune.vjp(np.sin, x)
    x[:] = 2.0
    np.testing.assert_allclose(pull(np.ones(2))[0], np.cos([0.0, 1.0]))


def test_a_work_buffer_reused_with_out_in_a_loop():
    """np.power(t, k, out=basis) refills one buffer that x * basis used before."""
    t = np.linspace(0.1, 1.0, 4)

    def f(x):
        basis = np.empty(4)
        acc = 0.0
        for k in range(1, 4):
            np.power(t, k, out=basis)
            acc = acc + np.sum(x * basis * x)
        return acc

    x = np.linspace(0.5, 1.5, 4)
    want = 2 * x * sum(t ** k for k in range(1, 4))
    np.testing.assert_allclose(rune.grad(f)(x), want, rtol=1e-12)
    rune.check_grads(f, x, order=2)
    np.testing.assert_allclose(rune.jacrev(f)(x), want, rtol=1e-12)


def test_a_constant_updated_in_place_after_use():
    W = np.array([[1.0, 2.0], [3.0, 4.0]])

    def f(x):
        y = W @ x
        W[...] += 1.0           # the constant changes after W @ x used it
        return np.sum(y * y)

    x = np.array([0.5, -1.0])
    W0 = W.copy()
    g = rune.grad(f)(x)
    np.testing.assert_allclose(g, 2 * W0.T @ (W0 @ x), rtol=1e-12)


def test_a_constant_changed_between_vjp_and_its_pullback():
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    W0 = W.copy()
    out, pull = rune.vjp(lambda x: W @ x, np.array([1.0, 1.0]))
    W += 10.0
    np.testing.assert_allclose(pull(np.array([1.0, 0.0]))[0], W0[0])


def test_a_large_constant_written_after_use_is_a_named_error():
    n = int(np.sqrt(COPY_BELOW / 8)) + 8
    W = np.ones((n, n))

    def f(x):
        y = W @ x
        W[0, 0] = 5.0
        return np.sum(y)

    with pytest.raises(ValueError, match=r"np.matmul used was written into afterwards"):
        rune.grad(f)(np.ones(n))
    out, pull = rune.vjp(lambda x: W @ x, np.ones(n))
    W[1, 1] = 7.0
    with pytest.raises(ValueError, match=rf"shape \({n}, {n}\)"):
        pull(np.ones(n))
    W.flags.writeable = False          # a promise: kept as it is, no copy, no checksum
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(W @ x))(np.ones(n)), W.sum(0))


def test_linearize_is_the_derivative_at_the_point_it_was_given():
    x = np.array([0.0, 1.0])
    _, f_jvp = rune.linearize(np.sin, x)
    x[:] = 3.0
    np.testing.assert_allclose(f_jvp(np.ones(2)), np.cos([0.0, 1.0]))


def test_gradient_leaves_never_alias_each_other():
    x, y, w = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([0.5, 2.0])
    gx, gy = rune.grad(lambda x, y: np.sum((x + y) * w), argnums=(0, 1))(x, y)
    assert not np.shares_memory(gx, gy)
    gx -= 1.0                   # an optimizer step on one leaf
    np.testing.assert_allclose(gy, w)


def test_stop_gradient_hands_out_a_copy_of_what_was_recorded():
    x = np.array([1.0, 2.0])

    def f(x):
        y = x * 3.0
        s = rune.stop_gradient(y)
        s[0] = 100.0            # writing into the plain result
        return np.sum(y * y) + np.sum(s)

    np.testing.assert_allclose(rune.grad(f)(x), 18 * x)
    assert rune.stop_gradient(x) is x           # outside a transformation: x itself


@pytest.mark.parametrize("name, copies", [("ascontiguousarray", lambda y: y.T),
                                          ("asfortranarray", lambda y: y)])
def test_ascontiguousarray_copies_exactly_when_numpy_does(name, copies):
    Y = np.arange(6.0).reshape(2, 3)

    def f(y):       # (np.<name> looked up when called, as user code does)
        z = getattr(np, name)(copies(y))
        z[0, 0] = 100.0             # NumPy copied: y is unchanged
        return np.sum(y * y)

    np.testing.assert_allclose(rune.grad(f)(Y), 2 * Y)
    z = getattr(np, name)(copies(Y))
    assert not np.shares_memory(z, Y)       # (what NumPy does)


def test_ascontiguousarray_of_a_contiguous_view_writes_through_as_in_numpy():
    def f(y):
        z = np.ascontiguousarray(y[1])
        z[0] = 0.0
        return np.sum(y * y)

    Y = np.arange(1.0, 7.0).reshape(2, 3)
    want = 2 * Y
    want[1, 0] = 0.0
    np.testing.assert_allclose(rune.grad(f)(Y), want)


def test_a_lower_levels_view_kept_by_the_tape_does_not_follow_later_writes():
    """Under vmap(grad), a view of a vmap-level array used by a grad operation is kept by
    the tape as it was; a later write into its base (which refreshes the view in place)
    must not change the derivative (found by the buffers' tests)."""
    def f(theta, c):
        s = np.zeros_like(c) + c
        v = s[0:1]
        y = v * theta
        s[0] = 100.0
        return np.sum(y)

    c = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = rune.vmap(rune.grad(f), in_axes=(None, 0))(2.0, c)
    np.testing.assert_array_equal(got, [1.0, 3.0])
