"""JAX's and torch.func's options where users reach for them (issue 15, item 4)."""

import numpy as np
import pytest

import rune

RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------
# rune.tree: is_leaf, paths, reduce, transpose
# --------------------------------------------------------------------------

def test_tree_is_leaf_stops_flattening():
    tree = {"a": (1.0, 2.0), "b": [(3.0, 4.0), 5.0]}
    pair = lambda t: isinstance(t, tuple) and len(t) == 2   # noqa: E731
    assert rune.tree.leaves(tree, is_leaf=pair) == [(1.0, 2.0), (3.0, 4.0), 5.0]
    swapped = rune.tree.map(lambda t: t[::-1] if pair(t) else t, tree, is_leaf=pair)
    assert swapped == {"a": (2.0, 1.0), "b": [(4.0, 3.0), 5.0]}
    leaves, td = rune.tree.flatten(tree, is_leaf=pair)
    assert rune.tree.unflatten(td, leaves) == tree


def test_tree_paths_reduce_transpose():
    tree = {"w": [1.0, 2.0], "b": 3.0}
    assert rune.tree.leaves_with_path(tree) == [("tree['w'][0]", 1.0), ("tree['w'][1]", 2.0),
                                                ("tree['b']", 3.0)]
    named = rune.tree.map_with_path(lambda p, x, y: (p, x + y), tree, tree)
    assert named["b"] == ("tree['b']", 6.0)
    assert rune.tree.reduce(lambda a, b: a + b, tree) == 6.0
    assert rune.tree.reduce(lambda a, b: a * b, tree, 1.0) == 6.0
    outer, inner = rune.tree.structure([0, 0, 0]), rune.tree.structure({"x": 0, "y": 0})
    rows = [{"x": i, "y": -i} for i in range(3)]
    assert rune.tree.transpose(outer, inner, rows) == {"x": [0, 1, 2], "y": [0, -1, -2]}
    with pytest.raises(ValueError, match="leaves"):
        rune.tree.transpose(outer, inner, rows[:2])


# --------------------------------------------------------------------------
# chunk_size: the same results, a bounded number of examples at a time
# --------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 100])
def test_vmap_chunk_size_matches_unchunked(chunk):
    xs = RNG.standard_normal((7, 3))
    W = RNG.standard_normal((3, 2))
    f = lambda x, W: ({"y": np.tanh(x @ W)}, np.sum(x))   # noqa: E731
    want = rune.vmap(f, in_axes=(0, None), out_axes=({"y": 1}, 0))(xs, W)
    got = rune.vmap(f, in_axes=(0, None), out_axes=({"y": 1}, 0), chunk_size=chunk)(xs, W)
    rune.tree.map(np.testing.assert_allclose, got, want)
    g = rune.vmap(rune.grad(lambda x, W: np.sum(np.tanh(x @ W))), in_axes=(0, None),
                  chunk_size=chunk)(xs, W)
    np.testing.assert_allclose(g, rune.vmap(rune.grad(lambda x, W: np.sum(np.tanh(x @ W))),
                                            in_axes=(0, None))(xs, W))


@pytest.mark.parametrize("jac", [rune.jacfwd, rune.jacrev])
def test_jacobian_chunk_size(jac):
    x = RNG.standard_normal(5)
    f = lambda x: np.outer(np.sin(x), x[:2])   # noqa: E731
    np.testing.assert_allclose(jac(f, chunk_size=2)(x), jac(f)(x))


def test_chunk_size_must_be_positive():
    with pytest.raises(ValueError, match="chunk_size"):
        rune.vmap(np.sin, chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size"):
        rune.vmap(np.sin, chunk_size=1.5)


# --------------------------------------------------------------------------
# hessian(has_aux), linearize, linear_transpose, custom_jvp.defjvps
# --------------------------------------------------------------------------

def test_hessian_has_aux():
    x = RNG.standard_normal(3)
    H, aux = rune.hessian(lambda x: (np.sum(x ** 3), {"norm": np.sum(x * x)}), has_aux=True)(x)
    np.testing.assert_allclose(H, np.diag(6 * x))
    np.testing.assert_allclose(aux["norm"], np.sum(x * x))


def test_linearize_and_linear_transpose():
    x = RNG.standard_normal(3)
    out, f_jvp = rune.linearize(lambda x: np.sin(x) * x, x)
    np.testing.assert_allclose(out, np.sin(x) * x)
    t = RNG.standard_normal(3)
    np.testing.assert_allclose(f_jvp(t), (np.cos(x) * x + np.sin(x)) * t)
    with pytest.raises(ValueError, match="tangent"):
        f_jvp(t, t)
    A = RNG.standard_normal((2, 3))
    (ct,) = rune.linear_transpose(lambda v: A @ v, np.zeros(3))(np.array([1.0, -2.0]))
    np.testing.assert_allclose(ct, A.T @ np.array([1.0, -2.0]))


def test_custom_jvp_defjvps():
    f = rune.custom_jvp(lambda x, y: np.sin(x) * y)
    f.defjvps(lambda tx, out, x, y: np.cos(x) * y * tx, lambda ty, out, x, y: np.sin(x) * ty)
    x, y = np.array([0.3, 1.1]), np.array([2.0, -1.0])
    gx, gy = rune.grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.cos(x) * y)
    np.testing.assert_allclose(gy, np.sin(x))
    _, t = rune.jvp(f, (x, y), (np.ones(2), np.zeros(2)))
    np.testing.assert_allclose(t, np.cos(x) * y)
    rune.check_grads(f, x, y, order=2)


def test_checkpoint_static_argnums():
    calls = []

    def block(x, n, act):
        calls.append(n)
        for _ in range(n):
            x = act(x)
        return x

    ck = rune.checkpoint(block, static_argnums=(1, 2))
    x = RNG.standard_normal(4)
    g = rune.grad(lambda x: np.sum(ck(x, 3, np.tanh)))(x)
    want = rune.grad(lambda x: np.sum(block(x, 3, np.tanh)))(x)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    assert calls.count(3) >= 3          # the block ran again in the backward pass
    assert rune.checkpoint(block, static_argnums=1)(x, 2, np.sin).shape == (4,)
    with pytest.raises(ValueError, match="static_argnums"):
        rune.grad(lambda x: np.sum(ck(x)))(x)
