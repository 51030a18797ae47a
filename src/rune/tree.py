"""Trees: nested containers of arrays, flattened to leaves and rebuilt.

Tuples, lists, dicts (key order kept), ``None`` (an empty node),
NamedTuples and dataclasses are trees out of the box; any other class joins
with [`register`][rune.tree.register] or the two methods ``__rune_flatten__(self) ->
(children, aux)`` and the classmethod ``__rune_unflatten__(cls, aux,
children)``.  Everything else is a leaf.  Dataclass fields with
``field(metadata={"static": True})`` are part of the structure, not leaves.
Records are rebuilt without running ``__init__``/``__post_init__``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

from .tree_ravel import ravel_leaves as _ravel_leaves
from .typing import IsLeaf, PyTree

__all__ = ["flatten", "unflatten", "leaves", "structure", "map", "register",
           "TreeDef", "flatten_with_paths", "leaf_paths", "map_with_path", "leaves_with_path",
           "reduce", "transpose", "ravel"]


class _NodeType:
    __slots__ = ("flatten", "unflatten", "keys")

    def __init__(self, flatten, unflatten, keys):
        self.flatten = flatten      # obj -> (children, aux)
        self.unflatten = unflatten  # (aux, children) -> obj
        self.keys = keys            # (obj_or_None, aux, n) -> path suffixes


_registry: dict[type, Any] = {}
_LEAF = None
_AS_LEAF = object()     # the aux of a node that stands for its one child (rune.buffers)


def register(cls: type, flatten: Callable[[Any], tuple[Iterable[Any], Any]],
             unflatten: Callable[[Any, list[Any]], Any]) -> None:
    """Make ``cls`` a tree node (JAX's ``register_pytree_node``).

    Args:
        cls: the class.
        flatten: ``flatten(obj) -> (children, aux)``; ``aux`` must be hashable: it is
            part of the structure.
        unflatten: ``unflatten(aux, children) -> obj``.

    Examples:
        >>> import rune
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> rune.tree.register(Pair, lambda p: ((p.a, p.b), None),
        ...                    lambda aux, ch: Pair(*ch))
        >>> rune.tree.leaves(Pair(1.0, 2.0))
        [1.0, 2.0]

    See also:
        [`flatten`][rune.tree.flatten]; dataclasses and NamedTuples need no registering.
    """
    if not isinstance(cls, type):
        raise TypeError(f"rune.tree.register takes a class first, got {type(cls).__name__}")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError(f"rune.tree.register needs flatten and unflatten to be callable "
                        f"(flatten(obj) -> (children, aux), unflatten(aux, children) -> obj), "
                        f"got {type(flatten).__name__} and {type(unflatten).__name__}")
    _registry[cls] = _NodeType(flatten, unflatten, _index_keys)


def _index_keys(aux, n):
    return [f"[{i}]" for i in range(n)]


def _dict_keys(aux, n):
    return [f"[{k!r}]" for k in aux]


def _attr_keys(aux, n):
    return [f".{name}" for name in aux[0]]


def _nt_keys(aux, n):
    return [f".{name}" for name in aux]


register(tuple, lambda t: (t, None), lambda aux, ch: tuple(ch))
register(list, lambda t: (t, None), lambda aux, ch: list(ch))
_registry[dict] = _NodeType(lambda d: (list(d.values()), tuple(d.keys())),
                            lambda aux, ch: dict(zip(aux, ch)), _dict_keys)
_registry[type(None)] = _NodeType(lambda n: ((), None), lambda aux, ch: None, _index_keys)
# OrderedDict and defaultdict are nodes too, rebuilt as their own class (as in JAX)
_registry[collections.OrderedDict] = _NodeType(
    lambda d: (list(d.values()), tuple(d.keys())),
    lambda aux, ch: collections.OrderedDict(zip(aux, ch)), _dict_keys)
_registry[collections.defaultdict] = _NodeType(
    lambda d: (list(d.values()), (d.default_factory, tuple(d.keys()))),
    lambda aux, ch: collections.defaultdict(aux[0], zip(aux[1], ch)),
    lambda aux, n: _dict_keys(aux[1], n))


def _dataclass_node(cls):
    fields = [f for f in dataclasses.fields(cls)]
    dyn = tuple(f.name for f in fields if not f.metadata.get("static", False))
    static = tuple(f.name for f in fields if f.metadata.get("static", False))

    def flatten(obj):
        return ([getattr(obj, n) for n in dyn],
                (dyn, tuple((n, getattr(obj, n)) for n in static)))

    def unflatten(aux, children):
        obj = object.__new__(cls)
        setter = object.__setattr__
        for n, v in zip(aux[0], children):
            setter(obj, n, v)
        for n, v in aux[1]:
            setter(obj, n, v)
        return obj

    return _NodeType(flatten, unflatten, _attr_keys)


def _namedtuple_node(cls):
    return _NodeType(lambda t: (t, cls._fields),
                     lambda aux, ch: tuple.__new__(cls, ch), _nt_keys)


def _method_node(cls):
    return _NodeType(lambda obj: obj.__rune_flatten__(),
                     lambda aux, ch: cls.__rune_unflatten__(aux, ch), _index_keys)


def _node_type(cls):
    node = _registry.get(cls, 0)
    if node != 0:
        return node
    if hasattr(cls, "__rune_flatten__") and hasattr(cls, "__rune_unflatten__"):
        node = _method_node(cls)
    elif dataclasses.is_dataclass(cls) and isinstance(cls, type):
        node = _dataclass_node(cls)
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        node = _namedtuple_node(cls)
    else:
        node = _LEAF
    _registry[cls] = node
    return node


class TreeDef:
    """The structure of a tree: node types, their ``aux`` data and the leaves' places.

    Equal structures compare equal and hash alike; ``num_leaves`` is the number of leaves.

    Examples:
        >>> import rune
        >>> td = rune.tree.structure({"a": 1.0, "b": (2.0, 3.0)})
        >>> td.num_leaves, td == rune.tree.structure({"a": 0, "b": (0, 0)})
        (3, True)
    """

    __slots__ = ("node_cls", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_cls: type | None, aux: Any, children: tuple[TreeDef, ...]) -> None:
        self.node_cls = node_cls      # None for a leaf
        self.aux = aux
        self.children = children
        self.num_leaves: int = 1 if node_cls is None else sum([c.num_leaves for c in children])
        self._hash: int | None = None

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeDef):
            return NotImplemented
        return (self.node_cls is other.node_cls and self.num_leaves == other.num_leaves
                and _aux_eq(self.aux, other.aux) and self.children == other.children)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.node_cls, _hashable(self.aux), self.children))
        return self._hash

    def __repr__(self) -> str:
        if self.node_cls is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        return f"{self.node_cls.__name__}({inner})"


def _aux_eq(a, b):
    try:
        return bool(a == b)
    except Exception:   # arrays as static values: compare by identity
        return a is b


def _hashable(aux):
    try:
        return hash(aux)
    except TypeError:
        return id(aux)


_LEAF_DEF = TreeDef(None, None, ())
_TUPLE = _registry[tuple]
_LEAF_TUPLES = [TreeDef(tuple, None, (_LEAF_DEF,) * n) for n in range(8)]   # (x, y, ...)


def flatten(tree: PyTree, is_leaf: IsLeaf = None) -> tuple[list[Any], TreeDef]:
    """The leaves of ``tree`` in order, and what rebuilds the tree.

    Args:
        tree: a tree (tuples, lists, dicts, ``None``, NamedTuples, dataclasses,
            registered classes) of leaves.
        is_leaf: ``is_leaf(node) -> bool`` stops the flattening at the nodes it accepts
            (as JAX's ``is_leaf``).

    Returns:
        ``(leaves, treedef)``.

    Examples:
        >>> import rune
        >>> rune.tree.flatten({"a": 1.0, "b": (2.0, None)})
        ([1.0, 2.0], dict(*, tuple(*, NoneType())))
        >>> rune.tree.flatten(((1, 2), 3), is_leaf=lambda t: t == (1, 2))[0]
        [(1, 2), 3]

    See also:
        [`unflatten`][rune.tree.unflatten], [`leaves`][rune.tree.leaves],
        [`flatten_with_paths`][rune.tree.flatten_with_paths].
    """
    if is_leaf is None:     # at every transformation's boundary: an array, a tuple of them
        node, get = _registry.get(type(tree), 0), _registry.get
        if node is _LEAF or node is _TUPLE and len(tree) < 8 and all(
                get(type(c), 0) is _LEAF for c in tree):
            return ([tree], _LEAF_DEF) if node is _LEAF else (list(tree), _LEAF_TUPLES[len(tree)])
    leaves: list[Any] = []
    try:
        return leaves, _flatten(tree, leaves, is_leaf)
    except RecursionError:
        if _shallow(tree):      # the stack was deep already (the caller's recursion)
            raise
        raise _cyclic(tree) from None


def _shallow(tree, limit=200):
    """Whether ``tree`` is a finite tree less than ``limit`` levels deep (iteratively)."""
    stack = [(tree, 0, ())]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit or id(node) in path:
            return False
        kind = _node_type(type(node))
        if kind is not _LEAF:
            children = kind.flatten(node)[0]
            stack.extend((c, depth + 1, path + (id(node),)) for c in children)
    return True


def _cyclic(tree):
    return ValueError(f"cannot flatten a {type(tree).__name__} that contains itself (or is "
                      f"nested thousands of levels deep): a tree must be finite")


def _flatten(tree, leaves, is_leaf=None):
    node = _node_type(type(tree))
    if node is _LEAF or (is_leaf is not None and is_leaf(tree)):
        leaves.append(tree)
        return _LEAF_DEF
    children, aux = node.flatten(tree)
    if aux is _AS_LEAF:     # a buffer made inside a transformation: its value, a leaf
        return leaves.append(children[0]) or _LEAF_DEF
    defs, get = [], _registry.get
    for c in children:      # (a leaf child, an array: appended here, no call)
        if is_leaf is None and get(type(c), 0) is _LEAF:
            defs.append(leaves.append(c) or _LEAF_DEF)
        else:
            defs.append(_flatten(c, leaves, is_leaf))
    return TreeDef(type(tree), aux, tuple(defs))


def unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> PyTree:
    """Rebuild a tree of ``treedef``'s structure from ``leaves``.

    Args:
        treedef: the structure, from [`flatten`][rune.tree.flatten] or
            [`structure`][rune.tree.structure].
        leaves: one leaf per leaf of ``treedef``, in order.

    Returns:
        The tree (records are rebuilt without running their ``__init__``).

    Examples:
        >>> import rune
        >>> leaves, treedef = rune.tree.flatten({"a": 1.0, "b": (2.0, None)})
        >>> rune.tree.unflatten(treedef, [10.0, 20.0])
        {'a': 10.0, 'b': (20.0, None)}

    See also:
        [`flatten`][rune.tree.flatten], [`map`][rune.tree.map].
    """
    if type(leaves) is list and (n := len(leaves)) < 8:  # (the common cases first, as in
        if treedef is _LEAF_DEF and n == 1 or treedef is _LEAF_TUPLES[n] and \
                _registry[tuple] is _TUPLE:                                     # flatten)
            return leaves[0] if treedef is _LEAF_DEF else tuple(leaves)
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"unflatten takes a TreeDef (from rune.tree.flatten or "
                        f"rune.tree.structure) as its first argument, got a "
                        f"{type(treedef).__name__}")
    it = iter(leaves)
    out = _unflatten(treedef, it)
    rest = sum(1 for _ in it)
    if rest:
        raise ValueError(f"unflatten got {treedef.num_leaves + rest} leaves for a "
                         f"structure with {treedef.num_leaves}")
    return out


def _unflatten(treedef, it):
    if treedef.node_cls is None:
        try:
            return next(it)
        except StopIteration:
            raise ValueError("unflatten got too few leaves for the structure") from None
    children = []
    for c in treedef.children:      # (a leaf child: taken here, no call)
        c = next(it, _LEAF_DEF) if c is _LEAF_DEF else _unflatten(c, it)
        if c is _LEAF_DEF:
            raise ValueError("unflatten got too few leaves for the structure")
        children.append(c)
    return _registry[treedef.node_cls].unflatten(treedef.aux, children)


def leaves(tree: PyTree, is_leaf: IsLeaf = None) -> list[Any]:
    """The leaves of ``tree``, in order.

    Args:
        tree: a tree.
        is_leaf: as in [`flatten`][rune.tree.flatten].

    Returns:
        A list of the leaves.

    Examples:
        >>> import rune
        >>> rune.tree.leaves({"a": 1.0, "b": (2.0, None)})
        [1.0, 2.0]

    See also:
        [`flatten`][rune.tree.flatten], [`leaves_with_path`][rune.tree.leaves_with_path].
    """
    return flatten(tree, is_leaf)[0]


def structure(tree: PyTree, is_leaf: IsLeaf = None) -> TreeDef:
    """The structure of ``tree``, without its leaves.

    Args:
        tree: a tree.
        is_leaf: as in [`flatten`][rune.tree.flatten].

    Returns:
        Its [`TreeDef`][rune.tree.TreeDef].

    Examples:
        >>> import rune
        >>> rune.tree.structure([1.0, (2.0, 3.0)])
        list(*, tuple(*, *))

    See also:
        [`flatten`][rune.tree.flatten], [`transpose`][rune.tree.transpose].
    """
    return flatten(tree, is_leaf)[1]


def leaf_paths(treedef: TreeDef, root: str = "") -> list[str]:
    """The path of each leaf of ``treedef``, as rune's error messages name them.

    Args:
        treedef: a structure.
        root: the name the paths start with.

    Returns:
        One string per leaf, like ``params.layers[2].w``.

    Examples:
        >>> import rune
        >>> rune.tree.leaf_paths(rune.tree.structure({"w": [0.0, 0.0]}), "params")
        ["params['w'][0]", "params['w'][1]"]

    See also:
        [`flatten_with_paths`][rune.tree.flatten_with_paths],
        [`map_with_path`][rune.tree.map_with_path].
    """
    out: list[Any] = []
    _paths(treedef, root, out)
    return out


def _paths(td, prefix, out):
    if td.node_cls is None:
        out.append(prefix or "<root>")
        return
    keys = _registry[td.node_cls].keys(td.aux, len(td.children))
    for k, c in zip(keys, td.children):
        _paths(c, prefix + k, out)


def flatten_with_paths(tree: PyTree, root: str = "") -> list[tuple[str, Any]]:
    """Every leaf of ``tree`` with its path.

    Args:
        tree: a tree.
        root: the name the paths start with.

    Returns:
        ``[(path, leaf), ...]``.

    Examples:
        >>> import rune
        >>> rune.tree.flatten_with_paths({"w": 1.0, "b": (2.0,)}, "p")
        [("p['w']", 1.0), ("p['b'][0]", 2.0)]

    See also:
        [`leaf_paths`][rune.tree.leaf_paths],
        [`leaves_with_path`][rune.tree.leaves_with_path] (JAX's name, root ``tree``).
    """
    lv, td = flatten(tree)
    return list(zip(leaf_paths(td, root), lv))


def _mismatch(a, b, path):
    """A message naming the first place where the structures ``a`` and ``b`` differ."""
    where = path or "<root>"
    if a.node_cls is None or b.node_cls is None:
        kind = "a leaf" if a.node_cls is None else f"a {a.node_cls.__name__}"
        other = "a leaf" if b.node_cls is None else f"a {b.node_cls.__name__}"
        return f"at {where}: {kind} in one tree but {other} in the other"
    if a.node_cls is not b.node_cls:
        return (f"at {where}: a {a.node_cls.__name__} in one tree but a "
                f"{b.node_cls.__name__} in the other")
    if not _aux_eq(a.aux, b.aux) or len(a.children) != len(b.children):
        return (f"at {where}: {a.node_cls.__name__} nodes differ "
                f"({_describe(a)} vs {_describe(b)})")
    keys = _registry[a.node_cls].keys(a.aux, len(a.children))
    for k, ca, cb in zip(keys, a.children, b.children):
        if ca != cb:
            return _mismatch(ca, cb, path + k)
    return f"at {where}: structures differ"


def _describe(td):
    if td.node_cls is dict:
        return f"keys {list(td.aux)}"
    return f"{len(td.children)} children, aux {td.aux!r}"


def check_same(a, b, root="", what="trees"):
    """Raise ``ValueError`` naming the first differing path if ``a != b`` (treedefs)."""
    if a != b:
        raise ValueError(f"{what} have different structures: {_mismatch(a, b, root)}")


def map(f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """Apply ``f`` to the leaves of ``tree`` (and the matching leaves of ``rest``).

    Args:
        f: called as ``f(leaf, *matching_leaves)``.
        tree: a tree; the result has its structure.
        *rest: trees of the same structure (or with ``tree``'s structure as a prefix).
        is_leaf: as in [`flatten`][rune.tree.flatten].

    Returns:
        A tree of ``tree``'s structure with ``f``'s results as leaves.

    Examples:
        >>> import rune
        >>> rune.tree.map(lambda a, b: a + b, {"x": 1, "y": (2,)}, {"x": 10, "y": (20,)})
        {'x': 11, 'y': (22,)}

    See also:
        [`map_with_path`][rune.tree.map_with_path], [`reduce`][rune.tree.reduce].
    """
    lv, td = flatten(tree, is_leaf)
    others = _matching_leaves(td, rest, is_leaf, "rune.tree.map")
    return unflatten(td, [f(*xs) for xs in zip(lv, *others)])


def _matching_leaves(td, rest, is_leaf, what):
    others = []
    for r in rest:
        rl, rd = flatten(r, is_leaf)
        check_same(td, rd, "tree", f"the trees given to {what}")
        others.append(rl)
    return others


# --------------------------------------------------------------------------
# JAX's tree utilities beyond flatten/unflatten/map
# --------------------------------------------------------------------------

def map_with_path(f: Callable[..., Any], tree: PyTree, *rest: PyTree,
                  is_leaf: IsLeaf = None) -> PyTree:
    """[`map`][rune.tree.map] with each leaf's path: ``f(path, leaf, *others)``.

    Args:
        f: called as ``f(path, leaf, *matching_leaves)``; ``path`` is a string like
            ``"tree['w'][0]"`` (the paths rune's error messages use).
        tree: a tree; the result has its structure.
        *rest: trees of the same structure.
        is_leaf: as in [`flatten`][rune.tree.flatten].

    Returns:
        A tree of ``tree``'s structure with ``f``'s results as leaves.

    Examples:
        >>> import rune
        >>> rune.tree.map_with_path(lambda p, x: p, {"w": 1.0})
        {'w': "tree['w']"}

    See also:
        [`leaves_with_path`][rune.tree.leaves_with_path], [`leaf_paths`][rune.tree.leaf_paths].
    """
    lv, td = flatten(tree, is_leaf)
    others = _matching_leaves(td, rest, is_leaf, "rune.tree.map_with_path")
    paths = leaf_paths(td, "tree")
    return unflatten(td, [f(p, *xs) for p, *xs in zip(paths, lv, *others)])


def leaves_with_path(tree: PyTree, is_leaf: IsLeaf = None) -> list[tuple[str, Any]]:
    """Every leaf with its path, as [`map_with_path`][rune.tree.map_with_path] names them.

    Args:
        tree: a tree.
        is_leaf: as in [`flatten`][rune.tree.flatten].

    Returns:
        ``[(path, leaf), ...]``.

    Examples:
        >>> import rune
        >>> rune.tree.leaves_with_path((1.0, {"b": 2.0}))
        [('tree[0]', 1.0), ("tree[1]['b']", 2.0)]

    See also:
        [`flatten_with_paths`][rune.tree.flatten_with_paths], [`leaves`][rune.tree.leaves].
    """
    lv, td = flatten(tree, is_leaf)
    return list(zip(leaf_paths(td, "tree"), lv))


_NO_INITIAL = object()


def reduce(f: Callable[[Any, Any], Any], tree: PyTree, initializer: Any = _NO_INITIAL,
           is_leaf: IsLeaf = None) -> Any:
    """``functools.reduce(f, leaves(tree)[, initializer])``.

    Args:
        f: a function of two values.
        tree: a tree.
        initializer: the first value (none: the first leaf).
        is_leaf: as in [`flatten`][rune.tree.flatten].

    Returns:
        The reduction of the leaves.

    Examples:
        >>> import rune
        >>> rune.tree.reduce(lambda a, b: a + b, {"x": 1, "y": (2, 3)})
        6

    See also:
        [`leaves`][rune.tree.leaves], [`map`][rune.tree.map].
    """
    lv = leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        return functools.reduce(f, lv)
    return functools.reduce(f, lv, initializer)


def transpose(outer_treedef: TreeDef, inner_treedef: TreeDef, tree: PyTree) -> PyTree:
    """Turn a tree of ``outer_treedef`` whose leaves are trees of ``inner_treedef`` into a
    tree of ``inner_treedef`` whose leaves are trees of ``outer_treedef`` (JAX's
    ``tree_transpose``).

    Args:
        outer_treedef: the structure of the outer tree.
        inner_treedef: the structure of each of its leaves.
        tree: the tree to transpose.

    Returns:
        The transposed tree.

    Examples:
        >>> import rune
        >>> outer, inner = rune.tree.structure([0, 0]), rune.tree.structure((0, 0))
        >>> rune.tree.transpose(outer, inner, [(1, 2), (3, 4)])
        ([1, 3], [2, 4])

    See also:
        [`structure`][rune.tree.structure].
    """
    flat = leaves(tree)
    n_out, n_in = outer_treedef.num_leaves, inner_treedef.num_leaves
    if len(flat) != n_out * n_in:
        raise ValueError(f"rune.tree.transpose: the tree has {len(flat)} leaves, but "
                         f"{n_out} outer x {n_in} inner = {n_out * n_in} were expected")
    rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    cols = [unflatten(outer_treedef, [row[j] for row in rows]) for j in range(n_in)]
    return unflatten(inner_treedef, cols)


def ravel(tree: PyTree) -> tuple[Any, Callable[[Any], PyTree]]:
    """``tree``'s leaves in one 1-d array, and the function that gives the tree back (JAX's
    ``ravel_pytree``).

    The leaves go in tree order, in their common dtype; ``unravel(v)`` gives each leaf its
    own shape, dtype and kind back.  Both directions are traced by the transformations.

    Args:
        tree: a tree of arrays and numbers.

    Returns:
        ``(flat, unravel)``.

    Examples:
        >>> import numpy as np, rune
        >>> flat, unravel = rune.tree.ravel({"a": np.ones(2), "b": 3.0})
        >>> flat, unravel(flat + 1)
        (array([1., 1., 3.]), {'a': array([2., 2.]), 'b': 4.0})

    See also:
        [`rune.optim.minimize`][rune.optim.minimize] and [`lbfgs`][rune.optim.lbfgs],
        which ravel records for you.
    """
    lv, td = flatten(tree)
    flat, unravel_leaves = _ravel_leaves(lv, lambda: leaf_paths(td, "tree"))
    return flat, lambda v: unflatten(td, unravel_leaves(v))
