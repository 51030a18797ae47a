"""The backward pass of reverse mode: walk a tape (:mod:`rune.tape`) in reverse.

Each node's per-argument ``vjp`` rules are called and the cotangents accumulated; a value
that never reached the output keeps a symbolic zero (``None``) and costs nothing.
Un-broadcasting and dtype casts of cotangents happen once, here, not in every rule.
Structural zeros travel beside the cotangents (:mod:`rune.structural`).
"""

from __future__ import annotations

import numpy as np

from .api_util import cast_like
from .primitives.reductions import sum_p
from .primitives.shape import reshape_p
from .residuals import ELEMENTWISE, MASKS, Dropped, none_set  # noqa: F401
from .structural import _scatter, _structural
from .tape import ReverseTracer

_ndarray = np.ndarray
__all__ = ["backward", "accumulate", "unbroadcast", "seed_outputs"]


def unbroadcast(c, shape):
    """Sum ``c`` down to ``shape`` (the inverse of NumPy broadcasting)."""
    cshape = c.shape
    if cshape == shape:
        return c
    extra = len(cshape) - len(shape)
    if extra < 0:      # a cotangent of lower rank: it broadcasts up to the primal's shape
        return np.broadcast_to(np.reshape(c, (1,) * -extra + tuple(cshape)), shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, d in enumerate(shape) if d == 1 and cshape[extra + i] != 1)
    if type(c) is _ndarray:     # plain: the primitives' kernels themselves
        c = np.add.reduce(c, axes) if axes else c
        return c if c.shape == shape else c.reshape(shape)
    # the primitives themselves: NumPy's dispatch, the axis checks and the views'
    # bookkeeping of np.sum and np.reshape are for the user's calls
    if axes:
        c = sum_p(c, axis=axes, keepdims=False)
    if c.shape != shape:
        c = reshape_p(c, shape=tuple(shape))
    return c


def _fit(c, ref):
    """Make the cotangent ``c`` match the shape and dtype of the primal ``ref``."""
    if c.shape != ref.shape:
        c = unbroadcast(c, ref.shape)
    if c.dtype != ref.dtype:
        c = cast_like(c, ref.dtype)
    return c




def backward(tape, seeds):
    """Walk ``tape`` backwards from ``seeds`` ({node: ct}); return the cotangent map.

    Structural zeros (SPEC 1.6) travel beside the cotangents: ``zeros[node]`` is a boolean
    mask, True where the node's cotangent is zero *because* ``np.where``, a mask or an index
    selected another element (the branch not taken), and absent when it has none.  A
    primitive declared ``masks`` creates them (its VJP applied to the indicator of the
    non-structural elements is zero exactly there); an ``elementwise`` one passes them on,
    and its contribution is zero there whatever its local derivative (``0 * inf``).  Every
    other primitive drops them: a zero it passes on is an ordinary number.  The masks are
    concrete values of the same transformations as the cotangents (batched under vmap),
    never process-wide state, and ``np.where(mask, 0, c)`` is exact at every order.
    """
    cts = dict(seeds)
    zeros = {}
    owned = set()   # nodes whose accumulated cotangent is an array allocated right here:
    #                 only those are added into in place (no other reference to them exists)
    for node in reversed(tape):
        rules = node.vjp
        if rules is None:
            continue
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if callable(rules):    # a whole-node rule (checkpoint, custom_vjp, custom_jvp) reads
            rules(ct, node, cts)   # and updates its parents' accumulated cotangents itself
            for _, pnode, _ in node.parents:
                owned.discard(pnode)
                zeros.pop(pnode, None)
            continue
        out = node.out
        if type(ct) is list:   # several results: instantiate the zeros
            ct = tuple((np.zeros(o.shape, o.dtype) if type(o) is Dropped else np.zeros_like(o))
                       if c is None else c for c, o in zip(ct, out))
        if node.zeros == MASKS or zeros and node in zeros:    # structural zeros cross here
            _with_zeros(node, ct, cts, zeros, owned)
            continue
        args = node.args        # the common case, written out: an ordinary cotangent
        params = node.params
        for i, pnode, pos in node.parents:
            rule = rules[i]
            if rule is None:
                continue
            if params:
                c = rule(ct, out, *args, **params)
            elif len(args) == 1:          # (no argument tuple or dict to build)
                c = rule(ct, out, args[0])
            elif len(args) == 2:
                c = rule(ct, out, args[0], args[1])
            else:
                c = rule(ct, out, *args)
            if c is None:
                continue
            if pos is not None:
                accumulate(cts, pnode, pos, _fit(c, pnode.out[pos]))
                continue
            d = c.dtype
            if c.shape != pnode.shape or (d is not pnode.dtype and d != pnode.dtype):
                c = _fit(c, pnode)
            prev = cts.get(pnode)           # _add(cts, zeros, owned, pnode, c, None), written
            if prev is None:                # out
                cts[pnode] = c
                continue
            if zeros:
                zeros.pop(pnode, None)      # an ordinary cotangent: no zero is structural now
            if pnode in owned and type(c) is _ndarray:
                np.add(prev, c, out=prev)
            else:
                prev = cts[pnode] = prev + c
                if type(prev) is _ndarray:
                    owned.add(pnode)
                else:           # traced by an outer transformation: never written in place
                    owned.discard(pnode)
    return cts


def _with_zeros(node, ct, cts, zeros, owned):
    """One node's cotangents when structural zeros reach it or it makes them (a ``masks``
    primitive): each rule run with the mask (rune.structural), the masks passed on."""
    rules, out, args, params = node.vjp, node.out, node.args, node.params
    mask = zeros.pop(node, None) if zeros else None
    kind = node.zeros if (mask is not None or node.zeros == MASKS) else 0
    for i, pnode, pos in node.parents:
        rule = rules[i]
        if rule is None:
            continue
        if kind:
            if kind == MASKS and pos is None and type(ct) is _ndarray:
                where = getattr(rule, "scatter_index", None)
                if where is not None and _scatter(cts, zeros, owned, pnode, ct, mask,
                                                  where(ct, out, *args, **params)):
                    continue
            c, m = _structural(kind, rule, ct, mask, out, args, params)
        else:
            c, m = rule(ct, out, *args, **params), None
        if c is None:
            continue
        if pos is not None:
            accumulate(cts, pnode, pos, _fit(c, pnode.out[pos]))
            continue
        if m is not None:
            m = _fit_mask(m, c, pnode.shape)
        d = c.dtype
        if c.shape != pnode.shape or (d is not pnode.dtype and d != pnode.dtype):
            c = _fit(c, pnode)
        _add(cts, zeros, owned, pnode, c, m)


def _add(cts, zeros, owned, pnode, c, m):
    """Accumulate the cotangent ``c`` (structural-zero mask ``m`` or None) of ``pnode``."""
    prev = cts.get(pnode)
    if prev is None:
        cts[pnode] = c
        if m is not None:
            zeros[pnode] = m
        return
    if zeros and pnode in zeros:
        if m is None:
            del zeros[pnode]
        else:
            both = zeros[pnode] & m
            if none_set(both):       # no element structural in both: none left
                del zeros[pnode]
            else:
                zeros[pnode] = both
    if pnode in owned and type(c) is np.ndarray:
        np.add(prev, c, out=prev)
    else:
        prev = cts[pnode] = prev + c
        if type(prev) is np.ndarray:
            owned.add(pnode)
        else:           # traced by an outer transformation: never written in place
            owned.discard(pnode)


def _fit_mask(m, c, shape):
    """The mask ``m`` of the cotangent ``c``, brought to the primal's ``shape``: an element
    that broadcasting summed from several is structural only if all of them were."""
    cshape = c.shape
    if m.shape != cshape:
        m = np.broadcast_to(m, cshape)
    if cshape != shape:
        m = np.logical_not(unbroadcast(np.logical_not(m), shape))
        if none_set(m):         # the sum kept none: no mask (every stored mask has some set)
            return None
    return m


def accumulate(cts, node, pos, c):
    """Add the cotangent ``c`` of ``node``'s output ``pos`` (None: its only one) into ``cts``."""
    if pos is None:
        prev = cts.get(node)
        cts[node] = c if prev is None else prev + c
    else:
        slot = cts.get(node)
        if slot is None:
            slot = cts[node] = [None] * len(node.out)
        slot[pos] = c if slot[pos] is None else slot[pos] + c


def seed_outputs(seeds, t, outs, ct_full):
    """Seed each output's cotangent on its node of the tape of ``t``; return how many."""
    n = 0
    for o, c in zip(outs, ct_full):
        if c is not None and isinstance(o, ReverseTracer) and o._trace is t \
                and o._node is not None:
            accumulate(seeds, o._node, o._pos, c)
            n += 1
    return n
