"""``rune.tree``'s utilities beyond flatten/unflatten/map, as JAX's ``jax.tree`` has them:
:func:`map_with_path`, :func:`leaves_with_path`, :func:`reduce`, :func:`transpose`.
Reach them as ``rune.tree.map_with_path`` and so on."""

from __future__ import annotations

import functools

from .tree import flatten, leaf_paths, leaves, unflatten, _matching_leaves

__all__ = ["map_with_path", "leaves_with_path", "reduce", "transpose"]


def map_with_path(f, tree, *rest, is_leaf=None):
    """``f(path, leaf, *others)`` for every leaf; ``path`` is a string like ``"tree['w'][0]"``
    (rune's paths are the ones its error messages use).

    >>> import rune
    >>> rune.tree.map_with_path(lambda p, x: p, {"w": 1.0})
    {'w': "tree['w']"}
    """
    lv, td = flatten(tree, is_leaf)
    others = _matching_leaves(td, rest, is_leaf, "rune.tree.map_with_path")
    paths = leaf_paths(td, "tree")
    return unflatten(td, [f(p, *xs) for p, *xs in zip(paths, lv, *others)])


def leaves_with_path(tree, is_leaf=None):
    """``[(path, leaf), ...]``, as :func:`map_with_path` names them.

    >>> import rune
    >>> rune.tree.leaves_with_path((1.0, {"b": 2.0}))
    [('tree[0]', 1.0), ("tree[1]['b']", 2.0)]
    """
    lv, td = flatten(tree, is_leaf)
    return list(zip(leaf_paths(td, "tree"), lv))


_NO_INITIAL = object()


def reduce(f, tree, initializer=_NO_INITIAL, is_leaf=None):
    """``functools.reduce(f, leaves(tree)[, initializer])``.

    >>> import rune
    >>> rune.tree.reduce(lambda a, b: a + b, {"x": 1, "y": (2, 3)})
    6
    """
    lv = leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        return functools.reduce(f, lv)
    return functools.reduce(f, lv, initializer)


def transpose(outer_treedef, inner_treedef, tree):
    """Turn a tree of ``outer_treedef`` whose leaves are trees of ``inner_treedef`` into a
    tree of ``inner_treedef`` whose leaves are trees of ``outer_treedef`` (JAX's
    ``tree_transpose``).

    >>> import rune
    >>> outer, inner = rune.tree.structure([0, 0]), rune.tree.structure((0, 0))
    >>> rune.tree.transpose(outer, inner, [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    flat = leaves(tree)
    n_out, n_in = outer_treedef.num_leaves, inner_treedef.num_leaves
    if len(flat) != n_out * n_in:
        raise ValueError(f"rune.tree.transpose: the tree has {len(flat)} leaves, but "
                         f"{n_out} outer x {n_in} inner = {n_out * n_in} were expected")
    rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    cols = [unflatten(outer_treedef, [row[j] for row in rows]) for j in range(n_in)]
    return unflatten(inner_treedef, cols)
