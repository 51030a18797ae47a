"""A bad-input sweep over every public function and argument (issue 11).

Each case is a call with something wrong or unusual in one argument: its type, tree,
shape, axis, dtype, an empty or 0-d array, a read-only input.  Whatever the case, the
result is either right or a clear error: a ``TypeError``/``ValueError``/
``NotImplementedError`` (``TracerConversionError`` is a ``TypeError``) whose message
names what was wrong, never an internal exception (``AttributeError``, ``IndexError``,
``KeyError``, ``RecursionError``, ``ZeroDivisionError``, ...).  Afterwards the inputs
are unchanged, no transformation level is left active, and the next call works.
"""

import dataclasses

import numpy as np
import pytest

import rune
from rune import core

CLEAR = (TypeError, ValueError, NotImplementedError)


def _f(x):
    return np.sum(np.sin(x) * x)


@dataclasses.dataclass
class P:
    w: np.ndarray
    b: np.ndarray


X = np.array([0.5, -1.0, 2.0])


def _ro(x):
    x = np.array(x)
    x.setflags(write=False)
    return x


# (id, thunk, words: at least one of them must appear in the message (case-insensitive))
ERRORS = [
    # transformations given something that is not a function
    ("grad-not-callable", lambda: rune.grad(3.0)(X), ["callable", "function", "float"]),
    ("vmap-not-callable", lambda: rune.vmap("f")(X), ["callable", "function", "str"]),
    ("jvp-not-callable", lambda: rune.jvp(None, (X,), (X,)), ["callable", "function", "none"]),
    # leaves of the wrong type
    ("grad-str-arg", lambda: rune.grad(_f)("abc"), ["str"]),
    ("grad-object-arg", lambda: rune.grad(_f)(object()), ["object"]),
    ("grad-set-arg", lambda: rune.grad(lambda s: 0.0)({1.0, 2.0}), ["set"]),
    ("grad-object-dtype", lambda: rune.grad(_f)(np.array([1.0, 2.0], dtype=object)),
     ["object"]),
    ("vmap-str-arg", lambda: rune.vmap(lambda x: x)("abc"), ["str"]),
    ("jvp-str-tangent", lambda: rune.jvp(_f, (X,), ("abc",)), ["str", "tangent"]),
    # trees that do not match
    ("jvp-tree-mismatch", lambda: rune.jvp(_f, (X,), ((X, X),)), ["tangent", "structure",
                                                                  "tree"]),
    ("jvp-arity", lambda: rune.jvp(_f, (X,), (X, X)), ["tangent", "structure", "tree"]),
    ("jvp-not-tuples", lambda: rune.jvp(_f, X, X), ["tuple"]),
    ("vjp-cotangent-shape", lambda: rune.vjp(np.sin, X)[1](np.ones(2)), ["shape"]),
    ("vjp-cotangent-tree", lambda: rune.vjp(np.sin, X)[1]((np.ones(3), np.ones(3))),
     ["structure", "tree", "cotangent"]),
    ("hvp-tangent-shape", lambda: rune.hvp(_f, (X,), (np.ones(2),)), ["shape"]),
    ("hvp-not-tuples", lambda: rune.hvp(_f, X, X), ["tuple"]),
    ("tree-map-mismatch", lambda: rune.tree.map(np.add, (X, X), [X, X]), ["structure",
                                                                          "tree", "list"]),
    ("tree-map-leaf-count", lambda: rune.tree.map(np.add, (X, X), (X,)), ["structure",
                                                                          "tree", "length"]),
    ("tree-unflatten-str", lambda: rune.tree.unflatten("x", [1]), ["treedef", "str"]),
    ("tree-register-not-callable", lambda: rune.tree.register(type("Q", (), {}), 1, 2),
     ["callable",
                                                                          "flatten"]),
    # outputs grad cannot differentiate
    ("grad-vector-output", lambda: rune.grad(np.sin)(X), ["shape", "scalar"]),
    ("grad-int-output", lambda: rune.grad(lambda x: 3)(X), ["int"]),
    ("grad-str-output", lambda: rune.grad(lambda x: "s")(X), ["str"]),
    ("grad-none-output", lambda: rune.grad(lambda x: None)(X), ["none"]),
    ("has-aux-not-pair", lambda: rune.grad(lambda x: np.sum(x), has_aux=True)(X),
     ["pair", "aux"]),
    # argnums
    ("argnums-float", lambda: rune.grad(_f, argnums=0.0)(X), ["argnums"]),
    ("argnums-str", lambda: rune.grad(_f, argnums="0")(X), ["argnums"]),
    ("argnums-range", lambda: rune.grad(_f, argnums=3)(X), ["argnums"]),
    ("jacrev-argnums-range", lambda: rune.jacrev(_f, argnums=-2)(X), ["argnums"]),
    # vmap axes and sizes
    ("vmap-in-axes-range", lambda: rune.vmap(np.sin, in_axes=2)(X), ["in_axes", "rank"]),
    ("vmap-in-axes-str", lambda: rune.vmap(np.sin, in_axes="0")(X), ["in_axes", "str"]),
    ("vmap-in-axes-tree", lambda: rune.vmap(np.add, in_axes=(0, 0, 0))(X, X), ["in_axes"]),
    ("vmap-sizes", lambda: rune.vmap(np.add)(X, np.ones(4)), ["size"]),
    ("vmap-axis-size-str", lambda: rune.vmap(lambda: 1.0, in_axes=(), axis_size="3")(),
     ["axis_size"]),
    ("vmap-no-mapped", lambda: rune.vmap(np.sin, in_axes=None)(X), ["axis_size", "mapped"]),
    ("vmap-out-axes-range", lambda: rune.vmap(np.sin, out_axes=3)(X), ["out_axes"]),
    ("vmap-0d-mapped", lambda: rune.vmap(np.sin)(np.float64(1.0)), ["rank", "in_axes",
                                                                   "0-d", "scalar"]),
    # check_grads misuse
    ("check-grads-order-0", lambda: rune.check_grads(_f, X, order=0), ["order"]),
    ("check-grads-bad-mode", lambda: rune.check_grads(_f, X, modes=("reverse",)), ["mode"]),
    # custom rules declared wrong
    ("custom-vjp-no-rule", lambda: rune.grad(rune.custom_vjp(lambda x: np.sum(x)))(X),
     ["defvjp", "rule"]),
    ("custom-jvp-no-rule", lambda: rune.jvp(rune.custom_jvp(lambda x: x), (X,), (X,)),
     ["defjvp", "rule"]),
]


@pytest.mark.parametrize("case,thunk,words", ERRORS)
def test_bad_input_is_a_clear_error(case, thunk, words):
    before = X.copy()
    with pytest.raises(CLEAR) as info:
        thunk()
    msg = str(info.value).lower()
    assert msg, f"{case}: an empty message"
    assert any(w.lower() in msg for w in words), f"{case}: {info.value!r} names none of {words}"
    np.testing.assert_array_equal(X, before)
    assert core.active_traces() == ()
    np.testing.assert_allclose(rune.grad(_f)(X), np.cos(X) * X + np.sin(X))


# --------------------------------------------------------------------------
# Unusual but valid inputs: right results, inputs unchanged, outputs writable
# --------------------------------------------------------------------------

RIGHT = [
    ("grad-0d-array", lambda: rune.grad(_f)(np.array(0.5)), lambda: np.cos(0.5) * 0.5
     + np.sin(0.5)),
    ("grad-empty", lambda: rune.grad(_f)(np.zeros(0)), lambda: np.zeros(0)),
    ("grad-empty-2d", lambda: rune.grad(_f)(np.zeros((0, 3))), lambda: np.zeros((0, 3))),
    ("grad-read-only", lambda: rune.grad(_f)(_ro(X)), lambda: np.cos(X) * X + np.sin(X)),
    ("grad-float32", lambda: rune.grad(_f)(X.astype(np.float32)),
     lambda: (np.cos(X) * X + np.sin(X)).astype(np.float32)),
    ("grad-record", lambda: rune.grad(lambda p: np.sum(p.w * p.b))(P(X, _ro(X))),
     lambda: P(X, X)),
    ("grad-record-int-leaf", lambda: rune.grad(lambda p: np.sum(p.w))(P(X, np.arange(3))),
     lambda: P(np.ones(3), np.zeros(3, int))),
    ("jvp-read-only", lambda: rune.jvp(np.sin, (_ro(X),), (_ro(np.ones(3)),))[1],
     lambda: np.cos(X)),
    ("vjp-read-only-cotangent", lambda: rune.vjp(np.sin, _ro(X))[1](_ro(np.ones(3)))[0],
     lambda: np.cos(X)),
    ("vmap-empty-batch", lambda: rune.vmap(np.sin)(np.zeros((0, 3))),
     lambda: np.zeros((0, 3))),
    ("vmap-negative-axis", lambda: rune.vmap(np.sum, in_axes=-1)(np.ones((2, 3))),
     lambda: np.full(3, 2.0)),
    ("vmap-read-only", lambda: rune.vmap(lambda x: x * 2)(_ro(X)), lambda: 2 * X),
    ("jacfwd-0d", lambda: rune.jacfwd(np.sin)(np.array(0.0)), lambda: np.array(1.0)),
    ("jacrev-empty", lambda: rune.jacrev(np.sin)(np.zeros(0)), lambda: np.zeros((0, 0))),
    ("hessian-read-only", lambda: rune.hessian(lambda x: np.sum(x ** 3))(_ro(X)),
     lambda: np.diag(6 * X)),
    ("hvp-read-only", lambda: rune.hvp(lambda x: np.sum(x ** 3), (_ro(X),), (_ro(X),))[1][0],
     lambda: 6 * X * X),
    ("stop-gradient-tree", lambda: rune.stop_gradient({"a": X, "b": [1.0]}),
     lambda: {"a": X, "b": [1.0]}),
    ("checkpoint-read-only", lambda: rune.grad(rune.checkpoint(_f))(_ro(X)),
     lambda: np.cos(X) * X + np.sin(X)),
    ("grad-python-float", lambda: rune.grad(lambda x: x * x)(3.0), lambda: 6.0),
]


@pytest.mark.parametrize("case,thunk,want", RIGHT, ids=[c[0] for c in RIGHT])
def test_unusual_input_gives_the_right_result(case, thunk, want):
    before = X.copy()
    got = thunk()
    expected = want()
    assert rune.tree.structure(got) == rune.tree.structure(expected)
    for leaf, w in zip(rune.tree.leaves(got), rune.tree.leaves(expected)):
        np.testing.assert_allclose(leaf, w, rtol=1e-6, atol=1e-12)
        assert np.shape(leaf) == np.shape(w)
        if isinstance(leaf, np.ndarray) and leaf.size:
            assert leaf.flags.writeable, f"{case}: a read-only result"
            if case != "stop-gradient-tree":    # the identity outside transformations
                assert not np.shares_memory(leaf, X), f"{case}: the result aliases an input"
    np.testing.assert_array_equal(X, before)
    assert core.active_traces() == ()
