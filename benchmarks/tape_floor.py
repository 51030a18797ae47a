"""The floor of a Python-level eager tape: issue 27's chain through the least a tape can do.

Issue 27 asks eager ``grad`` of its 200-operation chain for at most 5x NumPy's forward
instructions per operation (5,909 x 5 = 29,545).  This file is the smallest reverse-mode
tape that computes that gradient, exactly: a tracer with ``__slots__`` and the operators
the chain uses, one tuple a node, the backward pass one ``if`` chain of rules.  It has
none of what rune must do (nested transformations, structural zeros, views and writes,
dtype and shape checks, the user's records, errors that name the operation), so its count
is a floor for any eager design written in Python over NumPy's kernels:

    python benchmarks/icount.py chain-floor      # instructions per operation

25,859 per operation here, 4.4x NumPy's forward (5,905; rune eager: 45,475), of which about
11k are NumPy's own kernel calls (3.3 a chain operation, forward and backward).  So 5x
NumPy's forward leaves about 3.7k per operation for everything rune does beyond this toy:
the target needs the tape's per-operation work in compiled code, or fewer kernel calls
(``rune.jit`` reaches 1.16x by replaying and fusing them).
"""

from __future__ import annotations

import numpy as np

_sin, _cos, _mul, _add, _sub, _neg, _exp, _tanh, _sqrt, _abs, _ge, _where = (
    np.sin, np.cos, np.multiply, np.add, np.subtract, np.negative, np.exp, np.tanh, np.sqrt,
    np.absolute, np.greater_equal, np.where)

_tape: list = []


class T:
    """A traced value: its array and its node's index on the tape."""

    __slots__ = ("v", "i")
    __array_ufunc__ = None

    def __init__(self, v, i):
        self.v, self.i = v, i

    def __mul__(self, b):
        if type(b) is T:
            return _rec(_mul(self.v, b.v), ((self.i, b.v), (b.i, self.v)), "mul")
        return _rec(_mul(self.v, b), ((self.i, b),), "mul")

    __rmul__ = __mul__

    def __add__(self, b):
        if type(b) is T:
            return _rec(_add(self.v, b.v), ((self.i, None), (b.i, None)), "add")
        return _rec(_add(self.v, b), ((self.i, None),), "add")

    __radd__ = __add__

    def __sub__(self, b):
        if type(b) is T:
            return _rec(_sub(self.v, b.v), ((self.i, None), (b.i, -1.0)), "sub")
        return _rec(_sub(self.v, b), ((self.i, None),), "add")

    def __neg__(self):
        return _rec(_neg(self.v), ((self.i, None),), "neg")


def _rec(v, parents, kind):
    _tape.append((kind, parents))
    return T(v, len(_tape) - 1)


def _unary(fn, kind, keep_out=False):
    def op(x):
        v = fn(x.v)
        return _rec(v, ((x.i, v if keep_out else x.v),), kind)
    return op


sin, cos, absolute = _unary(_sin, "sin"), _unary(_cos, "cos"), _unary(_abs, "abs")
exp, tanh, sqrt = _unary(_exp, "mul", True), _unary(_tanh, "tanh", True), \
    _unary(_sqrt, "sqrt", True)


def _rule(kind, ct, r):
    if kind == "mul":
        return _mul(ct, r)
    if kind == "add":
        return ct
    if kind == "sub":
        return ct if r is None else _neg(ct)
    if kind == "neg":
        return _neg(ct)
    if kind == "sin":
        return _mul(ct, _cos(r))
    if kind == "cos":
        return _neg(_mul(ct, _sin(r)))
    if kind == "tanh":
        return _mul(ct, _sub(1.0, _mul(r, r)))
    if kind == "sqrt":
        return _mul(ct, _mul(0.5, 1.0 / r))
    if kind == "abs":
        return _where(_ge(r, 0), ct, _neg(ct))
    return np.full_like(r, ct)          # "sum"


def grad(f, x):
    """The gradient of the scalar ``f(x)``: record, then walk the tape backwards."""
    global _tape
    _tape = [("input", ())]
    out = f(T(x, 0))
    cts = {out.i: np.ones(())}
    for i in range(len(_tape) - 1, 0, -1):
        ct = cts.pop(i, None)
        if ct is None:
            continue
        kind, parents = _tape[i]
        for p, r in parents:
            c = _rule(kind, ct, r)
            prev = cts.get(p)
            cts[p] = c if prev is None else prev + c
    return cts[0]


def chain(x):
    """Issue 27's chain (``workloads.chain27``) on the toy's tracer."""
    for _ in range(20):
        a = sin(x) * cos(x)
        b = exp(-a) + tanh(x)
        x = b * 0.5 + sqrt(absolute(a) + 1.0) - x * 0.25
    return _rec(np.sum(x.v), ((x.i, x.v),), "sum")


if __name__ == "__main__":
    import rune
    import workloads
    x = np.linspace(0.1, 0.9, 16)
    want = rune.grad(workloads.chain27)(x)
    got = grad(chain, x)
    assert np.allclose(got, want, rtol=1e-12), np.max(np.abs(got - want))
    print("the toy tape's gradient equals rune's")
