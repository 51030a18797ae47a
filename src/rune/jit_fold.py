"""Negations folded out of a recorded :mod:`rune.jit` program, exactly.

Derivative rules negate a lot (``cos``'s is ``-sin``, ``exp(-a)``'s chain rule, a
difference's second operand), and each negation is one more NumPy kernel call on replay,
about as costly as any other at the sizes where ``jit`` matters.  IEEE arithmetic lets a
negation move without changing a bit of any result: ``p + (-x)`` *is* ``p - x``,
``p - (-x)`` is ``p + x``, and ``p * (-x) == -(p * x)`` (likewise ``/``), since negation is
exact and rounding is symmetric.  So a ``negative`` whose one use is an ``add`` or a
``subtract`` that can take it is dropped and that operation flipped; one whose one use is a
product or quotient whose own one use can take the sign is dropped the same way, the sign
carried through the product.  Only floating and complex values (whose negation is exact)
are folded; a value read twice, by a guard or as an output keeps its ``negative``.

>>> import numpy as np, rune
>>> g = rune.jit(rune.grad(lambda x: np.sum(np.exp(-x) + np.cos(x))))
>>> print(g.listing(np.array([1.0, 2.0])), end="")   # doctest: +ELLIPSIS
def replay(v0):
    ...
    v... = subtract(...)
    ...
>>> np.array_equal(g(np.array([0.5, -2.0])), rune.grad(
...     lambda x: np.sum(np.exp(-x) + np.cos(x)))(np.array([0.5, -2.0])))
True
"""

from __future__ import annotations

import numpy as np

from .dispatch import UFUNCS

__all__ = ["fold_negations", "readers"]

# flipped operation for a negated operand at position 0 or 1 (None: it cannot take it):
# add(-x, p) = p - x, add(p, -x) = p - x, subtract(p, -x) = p + x
_TAKES = {"add": ((np.subtract, True), (np.subtract, False)),
          "subtract": (None, (np.add, False))}


def _exact(entry):
    """Whether ``entry``'s one result is floating or complex (its negation exact)."""
    meta = entry[5]
    return len(meta) == 1 and getattr(meta[0][1], "kind", "") in "fc"


def _binary(entry, names):
    return entry[0] == "op" and entry[1].name in names and not entry[3] and len(entry[2]) == 2


def _only_use(uses, slot):
    """The index of the one operation that reads ``slot`` (None: read otherwise, or twice)."""
    u = uses.get(slot, ())
    return u[0] if len(u) == 1 and u[0] is not None else None


def _take_sign(entry, slot, x):
    """``entry`` (an add or a subtract) reading ``x`` where it read ``slot`` (= ``-x``), the
    operation flipped; None when it cannot take the sign there."""
    refs = entry[2]
    if not _binary(entry, ("add", "subtract")) or refs.count(("s", slot)) != 1:
        return None
    j = refs.index(("s", slot))
    how = _TAKES[entry[1].name][j]
    if how is None:
        return None
    ufunc, swap = how
    other = refs[1 - j]
    snaps = entry[6]
    if swap and snaps:          # the other operand moves from position 1 to 0
        snaps = {0: snaps[1]} if 1 in snaps else {}
    return ("op", UFUNCS[ufunc], [other, ("s", x)], entry[3], entry[4], entry[5], snaps)


def readers(code, out_refs) -> dict:
    """For each slot, the indices of the entries of ``code`` that read it, in order (None:
    a guard, or an output, reads it)."""
    uses: dict = {}
    for k, e in enumerate(code):
        if e[0] == "guard":
            uses.setdefault(e[1], []).append(None)
            continue
        for r in e[2]:
            if r[0] == "s":
                uses.setdefault(r[1], []).append(k)
    for r in out_refs:
        if r[0] == "s":
            uses.setdefault(r[1], []).append(None)
    return uses


def fold_negations(code, out_refs):
    """``code`` (a recorded program's live entries, in order) with the foldable negations
    dropped and their uses flipped (see the module's text)."""
    uses = readers(code, out_refs)
    code = list(code)
    dropped = set()
    for k, e in enumerate(code):
        if not (e[0] == "op" and e[1].name == "negative" and not e[3] and len(e[2]) == 1
                and e[2][0][0] == "s" and _exact(e)):
            continue
        n, x = e[4][0], e[2][0][1]
        c = _only_use(uses, n)
        if c is None:
            continue
        flipped = _take_sign(code[c], n, x)
        if flipped is not None:             # p + (-x): p - x
            code[c] = flipped
            dropped.add(k)
            continue
        ce = code[c]
        if not (_binary(ce, ("multiply", "divide")) and _exact(ce)
                and ce[2].count(("s", n)) == 1):
            continue
        m = ce[4][0]                        # m = p * (-x): carry the sign to m's use
        d = _only_use(uses, m)
        flipped = None if d is None else _take_sign(code[d], m, m)
        if flipped is None:
            continue
        code[c] = ("op", ce[1], [("s", x) if r == ("s", n) else r for r in ce[2]],
                   ce[3], ce[4], ce[5], ce[6])
        code[d] = flipped
        dropped.add(k)
    return [e for k, e in enumerate(code) if k not in dropped]
