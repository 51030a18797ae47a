"""One primitive for every linear operator that is computed by other code and whose
transpose is known: SciPy's sparse products and solves, spline constructions, image
filters.

``linear_op_p(x, op=op, transpose=False)`` is ``op.apply(x)`` (``op.apply_T(x)`` when
``transpose``).  ``op`` is any object with

* ``apply(x)``: ``x`` of shape ``op.in_shape + rest`` to ``op.out_shape + rest`` (the
  operator acts on the leading axes; the trailing ones are independent columns);
* ``apply_T(ct)``: the transpose, ``op.out_shape + rest`` to ``op.in_shape + rest``
  (no conjugation: JAX's convention);
* ``name``: what error messages call it.

Both run on concrete arrays.  Being linear, the JVP is the operator applied to the
tangent and the VJP its transpose applied to the cotangent: the same primitive with
``transpose`` flipped, so every order and every composition of transformations needs
nothing more.  Batching moves the batch axis last (a column).  An affine operator (a
constant boundary value) is its linear part here plus a constant added by the caller.

>>> import numpy as np, rune
>>> class Twice:
...     name, in_shape, out_shape = "twice", (2,), (3,)
...     M = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
...     def apply(self, x): return np.tensordot(self.M, x, 1)
...     def apply_T(self, ct): return np.tensordot(self.M.T, ct, 1)
>>> op = Twice()
>>> rune.grad(lambda x: np.sum(linear_op_p(x, op=op, transpose=False)))(np.ones(2))
array([3., 4.])
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive

__all__ = ["linear_op_p", "apply_linear"]


def _impl(x, op, transpose):
    x = np.asarray(x)
    return op.apply_T(x) if transpose else op.apply(x)


def _batch(args, bdims, op, transpose):
    x = np.moveaxis(args[0], bdims[0], -1)
    out = linear_op_p(x, op=op, transpose=transpose)
    return out, out.ndim - 1


linear_op_p = Primitive(
    "linear_operator", _impl,
    jvp=(lambda t, out, x, op, transpose: linear_op_p(t, op=op, transpose=transpose),),
    vjp=(lambda ct, out, x, op, transpose: linear_op_p(ct, op=op, transpose=not transpose),),
    batch=_batch, residuals=("shapes",))


def apply_linear(op, x, transpose=False):
    """``op`` applied to ``x`` (traced or plain) through :data:`linear_op_p`."""
    return linear_op_p(x, op=op, transpose=transpose)
