"""A loss on a record seen as a function of one float64 vector: what full-batch solvers
(:func:`rune.optim.lbfgs`, :func:`rune.optim.minimize`) work on.

The record's floating leaves are raveled with :func:`rune.tree.ravel`; its other leaves
(integers, booleans: sizes, flags) are held fixed and come back unchanged.  The solvers
work in float64; each evaluation casts the vector back to every leaf's own dtype, so a
float32 record is evaluated in float32.  The derivatives are rune's: the value and the
gradient from one ``value_and_grad`` call, Hessian-vector products forward-over-reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import tree as tree_util
from ..tree_prefix import broadcast_prefix
from ..forward import jvp
from ..jacobians import hessian
from ..reverse import grad, value_and_grad
from .transforms import _check_params, _is_float


class FlatProblem:
    """``fun(params, *args)`` as a function of the vector of ``params``' floating leaves."""

    def __init__(self, fun: Callable[..., Any], params: Any, args: tuple, who: str) -> None:
        if not callable(fun):
            raise TypeError(f"rune.optim.{who} takes the loss function first, got a "
                            f"{type(fun).__name__}")
        if not isinstance(args, tuple):
            raise TypeError(f"rune.optim.{who}: args must be a tuple of extra arguments "
                            f"for the loss, got a {type(args).__name__}")
        _check_params(params, who)
        self.fun, self.args, self.who = fun, args, who
        self.leaves, self.treedef = tree_util.flatten(params)
        self.index = [i for i, x in enumerate(self.leaves) if _is_float(x)]
        if not self.index:
            raise ValueError(f"rune.optim.{who}: the parameters have no floating leaf to "
                             f"optimize")
        flat, self._unravel = tree_util.ravel([self.leaves[i] for i in self.index])
        self.x0 = np.array(flat, dtype=np.float64)
        self.nfev = 0

    def record(self, x: Any) -> Any:
        """The parameters with the vector ``x`` (traced or not) in their floating leaves."""
        new = list(self.leaves)
        for i, leaf in zip(self.index, self._unravel(x)):
            new[i] = leaf
        return tree_util.unflatten(self.treedef, new)

    def loss(self, x: Any) -> Any:
        return self.fun(self.record(x), *self.args)

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        f, g = value_and_grad(self.loss)(np.asarray(x, np.float64))
        f_arr = np.asarray(f)
        if f_arr.shape != () or f_arr.dtype.kind not in "fiub":
            raise TypeError(f"rune.optim.{self.who}: the loss must return a real scalar, "
                            f"got {f_arr.dtype} of shape {f_arr.shape}")
        return float(f_arr), np.asarray(g, np.float64)

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        x, p = np.asarray(x, np.float64), np.asarray(p, np.float64)
        return np.asarray(jvp(grad(self.loss), (x,), (p,))[1], np.float64)

    def hess(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(hessian(self.loss)(np.asarray(x, np.float64)), np.float64)

    def bound_vectors(self, lower: Any, upper: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(lb, ub)`` vectors for bounds given as trees shaped like the parameters (or
        prefixes: a number for a subtree); ``None`` is no bound."""
        params = tree_util.unflatten(self.treedef, self.leaves)
        out = []
        for side, bound, default in (("lower", lower, -np.inf), ("upper", upper, np.inf)):
            flags = broadcast_prefix(
                bound, params, _is_bound_leaf, f"bounds[{0 if side == 'lower' else 1}]",
                f"the {side} bound", "parameter")
            parts = []
            for i in self.index:
                b = flags[i]
                b = default if b is None else b
                shape = np.shape(self.leaves[i])
                try:
                    parts.append(np.broadcast_to(np.asarray(b, np.float64), shape).ravel())
                except ValueError:
                    path = tree_util.leaf_paths(self.treedef, "params")[i]
                    raise ValueError(f"rune.optim.{self.who}: the {side} bound for {path} "
                                     f"has shape {np.shape(b)}, which does not broadcast to "
                                     f"the leaf's shape {shape}") from None
            out.append(np.concatenate(parts))
        return out[0], out[1]


def _is_bound_leaf(b):
    return b is None or isinstance(b, (int, float, np.ndarray, np.generic))
