"""Structural zeros in the backward pass (SPEC 1.6).

A cotangent that is zero *because* ``np.where``, a mask or an index selected another
element is a structural zero: a boolean mask travels beside it (``rune.backward``), and an
elementwise rule's product with it is exactly zero whatever the local derivative
(``0 * inf``).  How each primitive treats them is declared on it (``masks``, ``layout``,
``elementwise``, and the rule hooks ``zero_mask``, ``structural``, ``scatter_index``);
``docs/CONTRIBUTING-RULES.md`` says what each promises.
"""

from __future__ import annotations

import numpy as np

from .core import Tracer, stop_leaf
from .primitives.backends import ones_shaped_like
from .residuals import ELEMENTWISE, indicator_dtype, none_set

_ndarray = np.ndarray
__all__ = ["zero_at"]


def _structural(kind, rule, ct, mask, out, args, params):
    """One argument's cotangent and its structural-zero mask (None: it has none)."""
    if kind == ELEMENTWISE:          # mask is not None here
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            c = rule(ct, out, *args, **params)
        if c is None:
            return None, None
        return zero_at(mask, c), mask
    # A rule may know its structural zeros directly (rule.zero_mask: getitem's, setitem's on
    # basic indices; NotImplemented when it cannot tell); it then only moves the cotangent,
    # so its values there are exact zeros already.
    hook = getattr(rule, "zero_mask", None)
    if hook is not None:
        m = hook(ct, mask, out, *args, **params)
        if m is not NotImplemented:
            return rule(ct, out, *args, **params), (None if m is None or none_set(m) else m)
    # A rule may compute its cotangent and structural zeros at once (rule.structural: max,
    # min, maximum, minimum), when its values there need not be exact zeros.
    hook = getattr(rule, "structural", None)
    if hook is not None:
        c, m = hook(ct, mask, out, *args, **params)
        if none_set(m):
            return c, None
        return zero_at(m, c), m
    # MASKS, LAYOUT: where the rule sends nothing of the non-structural elements, the result is
    # structural.  The rule runs on the indicator with its residuals' derivatives stopped
    # (batches are kept), so no outer transformation records it.
    ones = ones_shaped_like(ct, indicator_dtype(ct))   # (lazy, chunked like a Dask cotangent)
    n = ones if mask is None else np.where(mask, 0, ones)
    reach = rule(n, stop_leaf(out), *[stop_leaf(a) for a in args], **params)
    if reach is None:
        return None, None
    m = reach == 0
    if none_set(m):                 # nothing structural here: an ordinary cotangent
        return rule(ct, out, *args, **params), None
    with np.errstate(invalid="ignore"):
        c = rule(ct, out, *args, **params)
    return np.where(m, 0, c), m


def _scatter(cts, zeros, owned, pnode, ct, mask, idx):
    """Add the contribution "``ct`` at the basic index ``idx``, zeros elsewhere" (a rule's
    ``scatter_index``: ``x[1:-1]``'s) to ``pnode``'s cotangent without making it whole:
    ``total[idx] += ct`` into an array of this pass's own.  The elements outside ``idx``
    are structural zeros of this contribution, so the total keeps structural only what
    was structural before and is outside ``idx`` (or inside, and structural in ``ct``'s
    ``mask`` too).  False: not this case (the rule runs as usual)."""
    if idx is None or ct.dtype != pnode.dtype or type(pnode.shape) is not tuple:
        return False
    prev = cts.get(pnode)
    if prev is None:
        total = np.zeros(pnode.shape, ct.dtype)
        total[idx] = ct
        m = np.ones(pnode.shape, bool)
        m[idx] = False if mask is None else mask
        if not none_set(m):
            zeros[pnode] = m
        cts[pnode] = total
        owned.add(pnode)
        return True
    if type(prev) is not _ndarray:
        return False
    if pnode not in owned:
        prev = cts[pnode] = prev.copy()
        owned.add(pnode)
    prev[idx] += ct
    old = zeros.get(pnode)
    if old is not None:       # structural before; now no longer inside idx (but where ct's is)
        m = np.array(old, dtype=bool)         # (an array even when 0-d: writable)
        m[idx] = False if mask is None else m[idx] & mask
        if none_set(m):
            del zeros[pnode]
        else:
            zeros[pnode] = m
    return True


def zero_at(m, c):
    """``np.where(m, 0, c)``: the cotangent ``c`` made exactly zero at its structural zeros.

    Where ``m`` is set, ``c`` is its rule's product (linear in the incoming cotangent) with
    a structural zero of the incoming cotangent (exactly 0 there) or with a zero weight
    (``maximum``'s loser): it is +-0 there, unless a factor was infinite or NaN (the ``0 *
    inf`` this exists for).  So when ``c`` is finite everywhere, which one sum tells,
    ``c + 0.0`` (-0 becomes +0, nothing else changes) is the same in two passes without
    branches; NumPy's where branches on every element (13x slower on an irregular mask, a
    ReLU's).  A traced or non-real ``c`` takes np.where."""
    v = c
    if type(c) is not _ndarray and isinstance(c, Tracer) and c._trace.kind == "vmap":
        v = c._val      # batched plain values (vmap differentiates nothing: c + 0.0 is as
        #                 good as np.where there; under a grad or jvp it is not, as their
        #                 derivatives through the structural zeros differ)
    if type(v) is _ndarray and v.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(v.sum())     # (an overflowing sum: np.where, still exact)
        if finite:
            return c + 0.0
    return np.where(m, 0, c)
