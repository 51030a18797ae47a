"""Contraction primitives: ``matmul`` and ``einsum``.

``matmul`` is bilinear, so its JVP is ``t @ y + x @ t`` and its VJP
multiplies the cotangent by the other operand transposed; 1-D operands get
their missing axis back first.  Broadcast batch dimensions are summed away
by the engine.  ``einsum``'s VJP for operand ``i`` is another ``einsum`` of the
cotangent with the other operands.  ``dot``, ``inner``, ``tensordot`` and the
rest are compositions in :mod:`rune.numpy.contractions`.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive
from ..dispatch import register_ufunc
from ._util import ndim, shape, to_front, per_argument
from .shape import reshape_p

# --------------------------------------------------------------------------
# matmul
# --------------------------------------------------------------------------


def _mT(a):
    """``a`` with its last two axes swapped: the method of a plain array (NumPy's function
    passes its Python-level dispatch first), NumPy's function (rune's rule) otherwise."""
    return a.swapaxes(-1, -2) if type(a) is np.ndarray else np.swapaxes(a, -1, -2)


def _matmul_vjp_x(ct, out, x, y):
    if ndim(y) == 1:
        if ndim(x) == 1:
            return ct * y
        if ndim(x) == 2:        # an outer product: one einsum (one kernel under vmap too)
            return einsum_p(ct, y, spec="i,j->ij")
        return np.expand_dims(ct, -1) * y
    if ndim(x) == 1:        # (the primitives: NumPy's dispatch is for the user's calls)
        s = shape(ct)
        return reshape_p(matmul_p(y, reshape_p(ct, shape=s + (1,))), shape=shape(y)[:-2]
                         + shape(y)[-2:-1])
    return np.matmul(ct, _mT(y))


def _matmul_vjp_y(ct, out, x, y):
    if ndim(x) == 1:
        if ndim(y) == 1:
            return ct * x
        if ndim(y) == 2:        # an outer product: one einsum (one kernel under vmap too)
            return einsum_p(x, ct, spec="i,j->ij")
        return np.expand_dims(x, -1) * np.expand_dims(ct, -2)
    if ndim(y) == 1:
        return np.squeeze(np.matmul(np.expand_dims(ct, -2), x), -2)
    return np.matmul(_mT(x), ct)


def _matmul_batch(args, bdims):
    (x, y), (bx, by) = args, bdims
    nx = ndim(x) - (bx is not None)
    ny = ndim(y) - (by is not None)
    # Fast paths: one 2-D GEMM for a batch of vectors against a fixed matrix.
    if by is None and nx == 1 and ny == 2:
        return matmul_p(to_front(x, bx), y), 0
    if bx is None and nx == 2 and ny == 1:
        return matmul_p(to_front(y, by), np.swapaxes(x, -1, -2)), 0
    if bx is not None:
        x = to_front(x, bx)
    if nx == 1:
        x = np.expand_dims(x, -2)
    if by is not None:
        y = to_front(y, by)
    if ny == 1:
        y = np.expand_dims(y, -1)
    qx, qy = max(nx, 2), max(ny, 2)
    r = max(qx, qy)
    if bx is not None and qx < r:
        s = shape(x)
        x = np.reshape(x, s[:1] + (1,) * (r - qx) + s[1:])
    if by is not None and qy < r:
        s = shape(y)
        y = np.reshape(y, s[:1] + (1,) * (r - qy) + s[1:])
    out = matmul_p(x, y)
    if ny == 1:
        out = np.squeeze(out, -1)
    if nx == 1:
        out = np.squeeze(out, -1 if ny == 1 else -2)
    return out, 0


def _matmul_impl(x, y):
    """``np.matmul``, but a stack of matrices against one matrix is a single GEMM.

    NumPy multiplies a stack ``(..., n, k) @ (k, m)`` one matrix at a time (a
    matrix-vector product each when ``n == 1``, which is what vmap of a
    vector-matrix product produces); folding the stack into the rows is one
    BLAS call.
    """
    xn, yn = x.ndim, y.ndim
    if yn == 2 and xn > 2:
        s = x.shape
        return np.matmul(x.reshape(-1, s[-1]), y).reshape(s[:-1] + (y.shape[1],))
    if xn == 2 and yn > 2:
        s = y.shape
        yt = np.swapaxes(y, -1, -2)
        out = np.matmul(yt.reshape(-1, s[-2]), x.T).reshape(s[:-2] + (s[-1], x.shape[0]))
        return np.swapaxes(out, -1, -2)
    return np.matmul(x, y)


matmul_p = Primitive(
    "matmul", _matmul_impl,
    jvp=(lambda t, out, x, y: matmul_p(t, y), lambda t, out, x, y: matmul_p(x, t)),
    vjp=(_matmul_vjp_x, _matmul_vjp_y),
    batch=_matmul_batch,
    residuals={0: (1, "shapes"), 1: (0, "shapes")})   # W @ x with W fixed keeps only W
register_ufunc(np.matmul, matmul_p)


# --------------------------------------------------------------------------
# einsum
# --------------------------------------------------------------------------
#
# The spec is normalized first (by rune.numpy.contractions.normalize_einsum): ellipses
# become explicit letters, a letter repeated within one operand (a diagonal) becomes a
# fresh letter tied to the original by a constant identity operand.  After that every
# letter of an operand is distinct, and the VJP for operand i is einsum(ct, others -> s_i)
# (letters summed only inside operand i are broadcast back).

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_impl(*operands, spec):
    return np.einsum(spec, *operands, optimize=len(operands) > 2)


def _split(spec):
    ins, out = spec.split("->")
    return ins.split(","), out


def _einsum_jvp_rule(i):
    def rule(t, out, *ops, spec):
        ops = list(ops)
        ops[i] = t
        return einsum_p(*ops, spec=spec)
    return rule


def _einsum_vjp_rule(i):
    def rule(ct, out, *ops, spec):
        ins, o = _split(spec)
        target = ins[i]
        others = [s for k, s in enumerate(ins) if k != i]
        seen = set(o).union(*others) if others else set(o)
        avail = "".join(c for c in target if c in seen)
        r = einsum_p(ct, *[op for k, op in enumerate(ops) if k != i],
                     spec=",".join([o] + others) + "->" + avail)
        if avail != target:
            s = list(shape(r))
            for pos, c in enumerate(target):
                if c not in seen:
                    s.insert(pos, 1)
            r = np.broadcast_to(np.reshape(r, tuple(s)), shape(ops[i]))
        return r
    return rule


def _einsum_batch(args, bdims, spec):
    ins, o = _split(spec)
    used = set(spec)
    b = next(c for c in _LETTERS if c not in used)
    new_ins = []
    ops = []
    for s, x, bd in zip(ins, args, bdims):
        if bd is None:
            new_ins.append(s)
            ops.append(x)
        else:
            new_ins.append(b + s)
            ops.append(to_front(x, bd))
    return einsum_p(*ops, spec=",".join(new_ins) + "->" + b + o), 0


einsum_p = Primitive("einsum", _einsum_impl, jvp=per_argument(_einsum_jvp_rule),
                     vjp=per_argument(_einsum_vjp_rule), batch=_einsum_batch,
                     residuals=("args",))
