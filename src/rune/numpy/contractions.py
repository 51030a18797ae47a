"""The contraction surface: ``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``,
``vecdot``/``matvec``/``vecmat``, the ``np.linalg`` aliases, and ``np.einsum`` (its
subscripts normalized, then the ``einsum`` primitive), all built on the ``matmul`` and
``einsum`` primitives of :mod:`rune.primitives.contractions`.
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import implements, register_ufunc, OutRefusedError
from ..primitives._util import ndim, shape, normalize_axis
from ..primitives.contractions import matmul_p, einsum_p, _LETTERS
from .shape import reshape, transpose
from ._util import refuse_out


# --------------------------------------------------------------------------
# dot, vdot, inner, outer, tensordot (matmul)
# --------------------------------------------------------------------------

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
# einsum: subscripts normalized for the einsum primitive
# --------------------------------------------------------------------------

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
