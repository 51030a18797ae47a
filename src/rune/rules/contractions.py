"""Contractions: ``matmul`` and ``einsum`` are primitives; ``dot``, ``vdot``,
``inner``, ``outer``, ``tensordot``, ``kron``-free friends are compositions.

``matmul`` is bilinear, so its JVP is ``t @ y + x @ t`` and its VJP
multiplies the cotangent by the other operand transposed; 1-D operands get
their missing axis back first.  Broadcast batch dimensions are summed away
by the engine.  ``einsum``'s VJP for operand ``i`` is another ``einsum`` of the
cotangent with the other operands.
"""

from __future__ import annotations


import numpy as np

from ..core import Primitive, Tracer
from ..dispatch import implements, register_ufunc, OutRefusedError
from .elementwise import ndim, shape, refuse_out
from .shape import to_front, reshape, transpose, normalize_axis

# --------------------------------------------------------------------------
# matmul
# --------------------------------------------------------------------------


def _matmul_vjp_x(ct, out, x, y):
    if ndim(y) == 1:
        if ndim(x) == 1:
            return ct * y
        return np.expand_dims(ct, -1) * y
    if ndim(x) == 1:
        return np.squeeze(np.matmul(y, np.expand_dims(ct, -1)), -1)
    return np.matmul(ct, np.swapaxes(y, -1, -2))


def _matmul_vjp_y(ct, out, x, y):
    if ndim(x) == 1:
        if ndim(y) == 1:
            return ct * x
        return np.expand_dims(x, -1) * np.expand_dims(ct, -2)
    if ndim(y) == 1:
        return np.squeeze(np.matmul(np.expand_dims(ct, -2), x), -2)
    return np.matmul(np.swapaxes(x, -1, -2), ct)


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
    elif nx == 1:
        x = np.expand_dims(x, -2)
    if by is not None:
        y = to_front(y, by)
        if ny == 1:
            y = np.expand_dims(y, -1)
    elif ny == 1:
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
    batch=_matmul_batch)
register_ufunc(np.matmul, matmul_p)


def _check_matmul(x, y):
    if ndim(x) == 0 or ndim(y) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")


@implements(np.dot)
def dot(a, b, out=None):
    if out is not None:
        raise OutRefusedError("np.dot(..., out=...) is not supported on traced values")
    na, nb = ndim(a), ndim(b)
    if na == 0 or nb == 0:
        return np.multiply(a, b)
    if nb <= 2:
        return matmul_p(a, b)
    return tensordot(a, b, axes=([na - 1], [nb - 2]))


@implements(np.vdot)
def vdot(a, b):
    return np.sum(np.conj(np.ravel(a)) * np.ravel(b))


@implements(np.inner)
def inner(a, b):
    if ndim(a) == 0 or ndim(b) == 0:
        return np.multiply(a, b)
    return tensordot(a, b, axes=([ndim(a) - 1], [ndim(b) - 1]))


@implements(np.outer)
def outer(a, b, out=None):
    refuse_out("outer", out)
    return np.reshape(np.ravel(a), (-1, 1)) * np.reshape(np.ravel(b), (1, -1))


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    na, nb = ndim(a), ndim(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(na - axes, na))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [normalize_axis(i, na) for i in ax_a]
    ax_b = [normalize_axis(i, nb) for i in ax_b]
    if len(ax_a) != len(ax_b) or any(shape(a)[i] != shape(b)[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(na) if i not in ax_a]
    free_b = [j for j in range(nb) if j not in ax_b]
    sa, sb = shape(a), shape(b)
    fa = [sa[i] for i in free_a]
    fb = [sb[j] for j in free_b]
    c = int(np.prod([sa[i] for i in ax_a], dtype=np.int64))
    a2 = reshape(transpose(a, tuple(free_a + ax_a)), (int(np.prod(fa, dtype=np.int64)), c))
    b2 = reshape(transpose(b, tuple(ax_b + free_b)), (c, int(np.prod(fb, dtype=np.int64))))
    return reshape(matmul_p(a2, b2), tuple(fa + fb))


if hasattr(np, "vecdot"):
    def _vecdot(x1, x2, axis=-1):
        x1 = np.moveaxis(x1, axis, -1)
        x2 = np.moveaxis(x2, axis, -1)
        return np.sum(np.conj(x1) * x2, axis=-1)

    register_ufunc(np.vecdot, _vecdot)
    implements(np.linalg.vecdot)(lambda x1, x2, /, *, axis=-1: _vecdot(x1, x2, axis))

if hasattr(np, "matvec"):
    register_ufunc(np.matvec, lambda a, v: np.squeeze(np.matmul(a, np.expand_dims(v, -1)), -1))
    register_ufunc(np.vecmat, lambda v, a: np.squeeze(
        np.matmul(np.expand_dims(np.conj(v), -2), a), -2))


if hasattr(np.linalg, "matmul"):
    implements(np.linalg.matmul)(lambda x1, x2, /: matmul_p(x1, x2))

if hasattr(np.linalg, "outer"):
    implements(np.linalg.outer)(lambda x1, x2, /: outer(x1, x2))

if hasattr(np.linalg, "tensordot"):
    implements(np.linalg.tensordot)(lambda x1, x2, /, *, axes=2: tensordot(x1, x2, axes))


# --------------------------------------------------------------------------
# einsum
# --------------------------------------------------------------------------
#
# The spec is normalized first: ellipses become explicit letters, a letter
# repeated within one operand (a diagonal) becomes a fresh letter tied to the
# original by a constant identity operand.  After that every letter of an
# operand is distinct, and the VJP for operand i is einsum(ct, others -> s_i)
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


class _PerOperand(tuple):
    def __new__(cls, make):
        self = super().__new__(cls)
        self.make = make
        return self

    def __getitem__(self, i):
        return self.make(i)


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


einsum_p = Primitive("einsum", _einsum_impl, jvp=_PerOperand(_einsum_jvp_rule),
                     vjp=_PerOperand(_einsum_vjp_rule), batch=_einsum_batch)


def normalize_einsum(spec, operands):
    """Explicit letters for ellipses, fresh letters + identity operands for diagonals."""
    spec = spec.replace(" ", "")
    if "->" in spec:
        ins_s, out = spec.split("->")
        implicit = False
    else:
        ins_s, out = spec, None
        implicit = True
    ins = ins_s.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(operands)} operands")
    used = set(c for c in spec if c.isalpha())
    fresh = (c for c in _LETTERS if c not in used)
    ell_n = 0
    for s, op in zip(ins, operands):
        if "..." in s:
            ell_n = max(ell_n, ndim(op) - (len(s) - 3))
    ell = "".join(next(fresh) for _ in range(ell_n))
    new_ins = []
    for s, op in zip(ins, operands):
        if "..." in s:
            k = ndim(op) - (len(s) - 3)
            s = s.replace("...", ell[ell_n - k:] if k else "")
        if len(s) != ndim(op):
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of rank "
                             f"{ndim(op)}")
        new_ins.append(s)
    if implicit:
        counts = {}
        for s in new_ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    ops = list(operands)
    extra_ins, extra_ops = [], []
    for k, s in enumerate(new_ins):
        if len(set(s)) == len(s):
            continue
        letters = []
        for pos, c in enumerate(s):
            if c in letters:
                f = next(fresh)
                n = shape(ops[k])[pos]
                extra_ins.append(c + f)
                extra_ops.append(np.eye(n, dtype=np.result_type(ops[k].dtype
                                                               if hasattr(ops[k], "dtype")
                                                               else float)))
                letters.append(f)
            else:
                letters.append(c)
        new_ins[k] = "".join(letters)
    return ",".join(new_ins + extra_ins) + "->" + out, ops + extra_ops


def subscripts_from_sublists(operands):
    """``(op, sublist, op, sublist, ..., [out])`` as ``(subscripts, op, op, ...)``: label
    ``k`` is the letter NumPy gives it (A-Z, then a-z), so the implicit output order agrees."""
    def letters(sub):
        out = []
        for k in sub:
            if k is Ellipsis:
                out.append("...")
            elif isinstance(k, (int, np.integer)) and 0 <= k < 52:
                out.append(chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26))
            else:
                raise ValueError(f"np.einsum: subscript {k!r} in a sublist is not an "
                                 f"integer in [0, 52) or Ellipsis")
        return "".join(out)
    ops, subs = operands[0::2], operands[1::2]
    spec = ",".join(letters(s) for s in subs[:len(ops)])
    if len(operands) % 2:
        ops = ops[:-1]
        spec = ",".join(letters(s) for s in subs) + "->" + letters(operands[-1])
    return (spec,) + tuple(ops)


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    if out is not None:
        raise OutRefusedError("np.einsum(..., out=...) is not supported on traced values")
    if not isinstance(operands[0], str):
        operands = subscripts_from_sublists(operands)
    spec, ops = normalize_einsum(operands[0], operands[1:])
    ops = [o if isinstance(o, Tracer) else np.asarray(o) for o in ops]
    return einsum_p(*ops, spec=spec)
