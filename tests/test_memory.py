"""Memory held (issue 11): a tape is freed by reference counting as soon as ``grad``
returns, with call-like constructs (custom rules, checkpoint) on it: no reference cycle
waits for the cyclic garbage collector."""

import functools
import gc
import weakref

import numpy as np
import pytest

import rune


def _custom_vjp():
    @rune.custom_vjp
    def f(x):
        return x * 2.0
    f.defvjp(lambda x: (x * 2.0, x), lambda x, g: (g * 2.0,))
    return f


def _custom_jvp():
    @rune.custom_jvp
    def f(x):
        return np.sin(x)
    f.defjvp(lambda p, t: (np.sin(p[0]), np.cos(p[0]) * t[0]))
    return f


def _custom_vjp_nondiff():
    @functools.partial(rune.custom_vjp, nondiff_argnums=(1,))
    def f(x, k):
        return x * k
    f.defvjp(lambda x, k: (x * k, None), lambda k, r, g: (g * k,))
    return lambda x: f(x, 3.0)


BLOCKS = {
    "custom_vjp": _custom_vjp,
    "custom_jvp": _custom_jvp,
    "custom_vjp-nondiff": _custom_vjp_nondiff,
    "checkpoint": lambda: rune.checkpoint(lambda x: np.tanh(x) * 2.0),
    "plain": lambda: np.tanh,
}


@pytest.fixture
def no_cyclic_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("name", list(BLOCKS))
def test_tape_freed_when_grad_returns(name, no_cyclic_gc):
    block = BLOCKS[name]()
    held = []

    def loss(x):
        y = block(x) * 1.5           # an intermediate that only the tape keeps
        held.append(weakref.ref(y._val))
        return np.sum(np.tanh(y))

    rune.grad(loss)(np.ones(1000))
    assert held[0]() is None, f"{name}: the tape outlived grad (a reference cycle)"


@pytest.mark.parametrize("how", ["closure", "partial"])
def test_tape_freed_with_checkpoint_closing_over_a_traced_value(how, no_cyclic_gc):
    held = []
    w = np.ones(3)

    def loss(x):
        if how == "closure":
            block = rune.checkpoint(lambda h: np.tanh(h * x))
        else:
            block = rune.checkpoint(functools.partial(lambda s, h: np.tanh(h * s), x))
        y = block(w) * 1.5
        held.append(weakref.ref(y._val))
        return np.sum(y)

    g = rune.grad(loss)(np.full(3, 0.5))
    np.testing.assert_allclose(g, 1.5 / np.cosh(0.5) ** 2)
    assert held[0]() is None
