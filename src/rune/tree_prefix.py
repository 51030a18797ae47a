"""Tree prefixes: ``vmap``'s ``in_axes``/``out_axes`` and ``rune.optim``'s masks, expanded
to one entry per leaf of the tree they describe, with errors that name the path where the
prefix does not fit.  (Apart from rune.tree, which it builds on.)"""

from __future__ import annotations

from .tree import _LEAF, _node_type, _registry, leaves

__all__ = ["broadcast_prefix"]


def broadcast_prefix(prefix, tree, is_leaf_prefix, root="", what="prefix", of="argument"):
    """Expand ``prefix`` (a tree prefix of ``tree``) to one entry per leaf of ``tree``.

    A prefix leaf (as decided by ``is_leaf_prefix``) applies to the whole
    subtree below it.  A mismatch raises ``ValueError`` naming the path.
    """
    out = []
    _broadcast(prefix, tree, is_leaf_prefix, root, (what, of), out)
    return out


def _broadcast(prefix, tree, is_leaf_prefix, path, what, out):
    if is_leaf_prefix(prefix):
        out.extend([prefix] * len(leaves(tree)))
        return
    pnode = _node_type(type(prefix))
    tnode = _node_type(type(tree))
    if pnode is _LEAF or tnode is _LEAF or type(prefix) is not type(tree) and not (
            isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list))
            and pnode is _registry.get(type(prefix)) and tnode is _registry.get(type(tree))):
        kind = "a leaf (an array)" if tnode is _LEAF else f"a {type(tree).__name__}"
        raise ValueError(f"{what[0]} is not a tree prefix of the {what[1]}s: at "
                         f"{path or '<root>'} it has a {type(prefix).__name__} "
                         f"({prefix!r:.40}) where the {what[1]} has {kind}")
    pch, paux = pnode.flatten(prefix)
    tch, taux = tnode.flatten(tree)
    if len(pch) != len(tch) or (isinstance(tree, dict) and list(prefix) != list(tree)):
        raise ValueError(f"{what[0]} is not a tree prefix of the {what[1]}s: at "
                         f"{path or '<root>'} it has {len(pch)} entries "
                         f"({_node_keys_text(prefix, pnode, paux, pch)}) where the {what[1]} "
                         f"has {len(tch)} ({_node_keys_text(tree, tnode, taux, tch)})")
    keys = tnode.keys(taux, len(tch))
    for k, p, t in zip(keys, pch, tch):
        _broadcast(p, t, is_leaf_prefix, path + k, what, out)


def _node_keys_text(obj, node, aux, ch):
    if isinstance(obj, dict):
        return f"keys {list(obj)}"
    return type(obj).__name__
