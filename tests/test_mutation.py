"""Call-like constructs never let user code write into the caller's values (issue 11), and
never hide a write either (issue 24, SPEC 4): a block or rule writing into its arguments
raises a clear error (the write could not reach the caller as it would without the
construct); one writing into its tangents or cotangents changes nothing outside, and a
pullback called twice gives the same result."""

import numpy as np
import pytest

import rune


def _writing_checkpoint():
    def block(x, w):
        w[0] = 99.0
        return x * w
    return rune.checkpoint(block)


def _writing_custom_vjp():
    @rune.custom_vjp
    def block(x, w):
        w[0] = 99.0
        return x * w

    def fwd(x, w):
        w[0] = 99.0
        return x * w, (x, w)

    block.defvjp(fwd, lambda r, g: (g * r[1], g * r[0]))
    return block


def _writing_custom_jvp():
    @rune.custom_jvp
    def block(x, w):
        w[0] = 99.0
        return x * w

    @block.defjvp
    def rule(p, t):
        (x, w), (dx, dw) = p, t
        w[0] = 99.0
        return x * w, dx * w + x * dw

    return block


WRITERS = [_writing_checkpoint, _writing_custom_vjp, _writing_custom_jvp]
IDS = ["checkpoint", "custom_vjp", "custom_jvp"]


@pytest.mark.parametrize("make", WRITERS, ids=IDS)
@pytest.mark.parametrize("in_axes, x", [((0, None), np.ones((2, 3))),
                                        ((None, None), np.ones(3))], ids=["x-mapped", "none"])
def test_block_cannot_write_into_the_callers_array_under_vmap(make, in_axes, x):
    w = np.ones(3)
    with pytest.raises(NotImplementedError, match="wrote into (one of )?its argument"):
        rune.vmap(make(), in_axes=in_axes, axis_size=2)(x, w)
    np.testing.assert_array_equal(w, np.ones(3))


@pytest.mark.parametrize("make", WRITERS, ids=IDS)
def test_block_cannot_write_into_the_callers_array_under_grad_of_vmap(make):
    w = np.ones(3)
    block = make()
    with pytest.raises(NotImplementedError, match="wrote into (one of )?its argument"):
        rune.grad(lambda x: np.sum(rune.vmap(block, in_axes=(0, None))(x, w)))(
            np.ones((2, 3)))
    np.testing.assert_array_equal(w, np.ones(3))


@pytest.mark.parametrize("make", WRITERS, ids=IDS)
def test_block_cannot_write_into_the_callers_array_under_grad(make):
    w = np.ones(3)
    block = make()
    with pytest.raises(NotImplementedError, match=r"(checkpoint|custom_vjp|custom_jvp) "
                                                  r"function block wrote"):
        rune.grad(lambda x: np.sum(block(x, w)))(np.full(3, 2.0))
    np.testing.assert_array_equal(w, np.ones(3))
    assert block(np.ones(3), w)[0] == 99.0 and w[0] == 99.0   # outside: NumPy's own write


@pytest.mark.parametrize("make", WRITERS, ids=IDS)
def test_a_write_inside_a_construct_is_never_a_silently_different_value(make):
    """The program of issue 24: 4.0 plainly, 2.0 once the block was wrapped."""
    def plain(x):
        x *= 2.0
        return x * 1.0

    block = make()

    def f(x, blk):
        y = x * 1.0
        z = blk(y, np.ones(1))
        return np.sum(y + z)

    assert f(np.ones(1), lambda y, w: plain(y)) == 4.0
    runs = [lambda: rune.vjp(lambda x: f(x, block), np.ones(1)),
            lambda: rune.vmap(lambda x: f(x, block))(np.ones((2, 1)))]
    if make is not _writing_custom_vjp:     # (forward mode has no custom_vjp rule)
        runs.append(lambda: rune.jvp(lambda x: f(x, block), (np.ones(1),), (np.ones(1),)))
    for run in runs:
        with pytest.raises(NotImplementedError, match="wrote into (one of )?its argument"):
            run()


def test_custom_jvp_rule_writing_into_its_tangent():
    @rune.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        dx *= np.cos(x)
        return np.sin(x), dx

    x, t = np.array([0.0, 1.0]), np.ones(2)
    _, t_out = rune.jvp(f, (x,), (t,))
    np.testing.assert_array_equal(t, np.ones(2))
    np.testing.assert_allclose(t_out, np.cos(x))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(f(x)))(x), np.cos(x))


def test_custom_jvp_rule_writing_into_its_primal_under_nesting():
    """The primal a rule sees is a traced value of an outer transformation: writing into it
    must not change the value the outer trace holds."""
    @rune.custom_jvp
    def f(x):
        return x * 1.0

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        out = x * 1.0
        x *= 0.0
        return out, dx

    with pytest.raises(NotImplementedError, match="custom_jvp function f wrote"):
        rune.jacfwd(lambda x: rune.jvp(f, (x,), (np.ones(2),))[1] * x)(np.array([2.0, 3.0]))


def _doubling_bwd():
    @rune.custom_vjp
    def cv(x):
        return x * 2.0

    def bwd(res, g):
        g *= 2
        return (g,)

    cv.defvjp(lambda x: (x * 2.0, None), bwd)
    return cv


def test_bwd_writing_into_its_cotangent_does_not_corrupt_other_terms():
    cv = _doubling_bwd()
    g = rune.grad(lambda x: np.sum((x * 3 + cv(x)) ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [50.0, 100.0])


def test_pullback_called_twice_after_bwd_writes_into_its_cotangent():
    cv = _doubling_bwd()
    _, pullback = rune.vjp(cv, np.array([1.0, 1.0]))
    ct = np.ones(2)
    first = pullback(ct)[0]
    second = pullback(ct)[0]
    np.testing.assert_array_equal(first, [2.0, 2.0])
    np.testing.assert_array_equal(second, [2.0, 2.0])
    np.testing.assert_array_equal(ct, np.ones(2))


def test_bwd_writing_into_its_residuals_keeps_the_pullback_reusable():
    @rune.custom_vjp
    def f(x):
        return np.sin(x)

    def bwd(x, g):
        out = g * np.cos(x)
        x *= 0.0
        return (out,)

    f.defvjp(lambda x: (np.sin(x), x), bwd)
    x = np.array([0.3, 0.7])
    _, pullback = rune.vjp(f, x)
    for _ in range(2):
        np.testing.assert_allclose(pullback(np.ones(2))[0], np.cos([0.3, 0.7]))
    np.testing.assert_array_equal(x, [0.3, 0.7])
