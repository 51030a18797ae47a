"""Forward mode: ``jvp``.

A :class:`ForwardTracer` carries a primal and its tangent through one
forward pass; no tape is kept.  A tangent of ``None`` is a symbolic zero.
Each primitive's per-argument ``jvp`` rules give the output tangent; the
engine broadcasts it to the output's shape and casts it to its dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np

from . import tree as tree_util
from .api_util import (
    as_array,
    cast_like,
    check_aux_pair,
    check_leaves,
    is_diff_leaf,
    is_floating_value,
    shape_of,
    unalias,
    zero_like,
)
from .calls import bind_call, leaked
from .core import (Trace, Tracer, TracerConversionError, bind, new_trace, rank, stop_leaf,
                   tracer_class_pair)
from .primitives.backends import ones_shaped_like
from .residuals import indicator_dtype, none_set

_ndarray = np.ndarray
__all__ = ["jvp"]


class ForwardTracer(Tracer):
    __slots__ = ("_tan", "_zeros")
    _extra = {"_tan": None, "_zeros": None}

    def _constant(self):
        return self._tan is None

    def __new__(cls, val, tan, trace, zeros=None):
        self = object.__new__(_ForwardArrayTracer if (
            val.ndim if type(val) is _ndarray else rank(val)) else ForwardTracer)
        self._val = val
        self._tan = tan
        self._trace = trace
        self._zeros = zeros     # True where the tangent is a structural zero (None: nowhere)
        return self


_ForwardArrayTracer = tracer_class_pair(ForwardTracer)


def _fit_tangent(t, out):
    if t.shape != out.shape:
        t = np.broadcast_to(t, out.shape)
    if t.dtype != out.dtype:
        t = cast_like(t, out.dtype)
    return t


def _live(t, m):
    """The indicator of the elements of the tangent ``t`` that are not structural zeros."""
    ones = ones_shaped_like(t, indicator_dtype(t))     # (lazy for Dask)
    return ones if m is None else np.where(m, 0, ones)


class ForwardTrace(Trace):
    __slots__ = ("leaks",)
    kind = "jvp"

    def __init__(self):
        Trace.__init__(self)
        self.leaks = None       # where values being differentiated left through .item()

    def note_leak(self, x, where):
        if x._tan is not None:
            self.leaks = (self.leaks or []) + [where]

    def lift(self, x):
        return ForwardTracer(x, None, self)

    def unwrap(self, args):
        """``(primals, tangents)`` of the arguments (a tangent of None is a zero)."""
        return self.unwrap_masked(args)[:2]

    def unwrap_masked(self, args):
        """``(primals, tangents, masked)``; ``masked``: some tangent has structural zeros."""
        primals = []
        tangents = []
        masked = False
        for a in args:
            if isinstance(a, ForwardTracer) and a._trace is self:
                primals.append(a._val)
                tangents.append(a._tan)
                if a._zeros is not None:
                    masked = True
            else:
                primals.append(a)
                tangents.append(None)
        return primals, tangents, masked

    def process(self, prim, args, params):
        primals, tangents, masked = self.unwrap_masked(args)
        out = prim.impl(*primals, **params) if self.bottom else bind(prim, *primals, **params)
        if prim.nondiff:    # (as in rune.tape: a floating result a constant)
            return self.lift(out) if is_floating_value(out) else out
        rules = prim.jvp
        if prim.masks or (masked and (prim.elementwise or prim.layout)):
            return self._process_structural(prim, args, primals, tangents, out, params)
        if prim.multiple_results or callable(rules):
            t_out = self._tangent(prim, primals, tangents, out, params)
            return t_out if prim.multiple_results else ForwardTracer(out, t_out, self)
        if rules is None:
            return ForwardTracer(out, self._tangent(prim, primals, tangents, out, params), self)
        t_out = None        # the common case, inlined: a sum of per-argument rules
        i = 0
        for t in tangents:
            if t is not None:
                rule = rules[i]
                if rule is not None:
                    c = rule(t, out, *primals, **params)
                    if c is not None:
                        t_out = c if t_out is None else t_out + c
            i += 1
        if t_out is not None and (t_out.shape != out.shape or t_out.dtype != out.dtype):
            t_out = _fit_tangent(t_out, out)
        return ForwardTracer(out, t_out, self)

    def _process_structural(self, prim, args, primals, tangents, out, params):
        """SPEC 1.6 in forward mode (see ``rune.backward.backward``): a tangent that is zero
        because ``np.where`` or an index selected another element stays zero through an
        infinite local derivative, and ``masks`` primitives create such zeros."""
        masks = [a._zeros if isinstance(a, ForwardTracer) and a._trace is self else None
                 for a in args]
        if not prim.elementwise or prim.masks:   # reach: the rules on the live indicators
            reach = None
            sout, sprims = stop_leaf(out), [stop_leaf(p) for p in primals]
            live = [None if t is None else _live(t, m) for t, m in zip(tangents, masks)]
            if callable(prim.jvp):      # a joint rule (concatenate): all tangents at once
                if any(v is not None for v in live):
                    reach = prim.jvp(live, sout, *sprims, **params)
            else:
                for i, v in enumerate(live):
                    if v is None or prim.jvp[i] is None:
                        continue
                    r = prim.jvp[i](v, sout, *sprims, **params)
                    if r is not None:
                        reach = r if reach is None else (
                            tuple(a + b for a, b in zip(reach, r)) if prim.multiple_results
                            else reach + r)
            if prim.multiple_results:   # (np.split: one mask per result)
                return self._several_structural(prim, primals, tangents, out, params, reach)
            zeros = None if reach is None else reach == 0
            if none_set(zeros):      # nothing structural here
                zeros = None
        else:              # elementwise: structural where every live tangent is
            zeros = None
            for t, m in zip(tangents, masks):
                if t is None:
                    continue
                if m is None:
                    zeros = None
                    break
                zeros = m if zeros is None else zeros & m
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t_out = self._tangent(prim, primals, tangents, out, params)
        if zeros is None or t_out is None:
            return ForwardTracer(out, t_out, self)
        return ForwardTracer(out, np.where(zeros, 0, t_out), self, zeros)

    def _several_structural(self, prim, primals, tangents, out, params, reach):
        """The results of a primitive of several results, each with its own mask."""
        outs = self._tangent(prim, primals, tangents, out, params)
        if reach is None:
            return outs
        done = []
        for o, r in zip(outs, reach):
            z = r == 0
            if o._tan is None or none_set(z):
                done.append(o)
            else:
                done.append(ForwardTracer(o._val, np.where(z, 0, o._tan), self, z))
        return tuple(done)

    def _tangent(self, prim, primals, tangents, out, params):
        """The output's tangent (for several results: the output tracers)."""
        rules = prim.jvp
        t_out = None
        if callable(rules):     # a joint rule: rule(tangents, out, *primals, **params)
            if any(t is not None for t in tangents):
                t_out = rules(tangents, out, *primals, **params)
            tangents = ()
        for i, t in enumerate(tangents):
            if t is None:
                continue
            if rules is None:
                raise NotImplementedError(
                    f"{prim.name!r} has no forward-mode rule, so it cannot be used under jvp")
            rule = rules[i]
            if rule is None:
                continue
            c = rule(t, out, *primals, **params)
            if c is None:
                continue
            if t_out is None:
                t_out = c
            elif prim.multiple_results:
                t_out = tuple(a if b is None else b if a is None else a + b
                              for a, b in zip(t_out, c))
            else:
                t_out = t_out + c
        if prim.multiple_results:
            if t_out is None:
                t_out = (None,) * len(out)
            return tuple(ForwardTracer(o, None if t is None else _fit_tangent(t, o), self)
                         for o, t in zip(out, t_out))
        if t_out is not None:
            t_out = _fit_tangent(t_out, out)
        return t_out

    def process_call(self, call, args):
        """A call-like construct (see :mod:`rune.calls`): handed down when no argument has
        a tangent, else ``call.forward`` gives the outputs and their tangents."""
        primals, tangents = self.unwrap(args)
        if all(t is None for t in tangents):
            return bind_call(call, primals)
        outs, t_outs = call.forward(self, primals, tangents)
        if leaked(outs, self.level) is not None or leaked(
                [t for t in t_outs if t is not None], self.level) is not None:
            return call.leaked_outputs(self, args)
        wrapped = []
        for o, t in zip(outs, t_outs):
            if not is_diff_leaf(o):
                wrapped.append(o)
                continue
            o = as_array(o)
            if t is not None:
                t = _fit_tangent(t if hasattr(t, "dtype") else np.asarray(t), o)
            wrapped.append(ForwardTracer(o, t, self))
        return tuple(wrapped)


def _check_tangent(p, t, path):
    pshape, tshape = shape_of(p), shape_of(t)
    if pshape != tshape:
        raise ValueError(f"the tangent for {path} has shape {tshape} but the primal "
                         f"has shape {pshape}")
    pd = getattr(p, "dtype", None)
    td = getattr(t, "dtype", None)
    if pd is not None and td is not None and pd != td and not (
            pd.kind in "fc" and td.kind in "fc" and np.can_cast(td, pd, "same_kind")):
        raise ValueError(f"the tangent for {path} has dtype {td} but the primal has "
                         f"dtype {pd}")


@overload
def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: Literal[False] = False) -> tuple[Any, Any]: ...
@overload
def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: Literal[True]) -> tuple[Any, Any, Any]: ...
@overload
def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool) -> tuple[Any, ...]: ...
def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """Evaluate ``f(*primals)`` and its directional derivative along ``tangents``, in one
    forward pass (forward mode).

    ``primals`` and ``tangents`` are tuples of trees of the same structure, shapes and
    dtypes (a tangent of a float32 leaf may be float32 or float64).

    Args:
        f: the function, called as ``f(*primals)``; its arguments and result are trees.
        primals: a tuple (or list) with one tree per positional argument of ``f``.
        tangents: a tuple like ``primals``: the direction.
        has_aux: ``f`` returns ``(out, aux)``; ``aux`` is returned as it is, without
            derivative.

    Returns:
        ``(out, tangent_out)``, or ``(out, tangent_out, aux)`` with ``has_aux``;
        ``tangent_out`` has ``out``'s structure.

    Examples:
        >>> import numpy as np, rune
        >>> rune.jvp(np.sin, (np.array([0.0, 1.0]),), (np.array([1.0, 1.0]),))
        (array([0.        , 0.84147098]), array([1.        , 0.54030231]))

    See also:
        [`vjp`][rune.vjp] (reverse mode), [`linearize`][rune.linearize] (the same
        point, many tangents), [`jacfwd`][rune.jacfwd], [`hvp`][rune.hvp].
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ValueError("jvp takes primals and tangents as tuples (one entry per argument), "
                         f"got {type(primals).__name__} and {type(tangents).__name__}")
    primals, tangents = tuple(primals), tuple(tangents)
    leaves, in_tree = tree_util.flatten(primals)
    t_leaves, t_tree = tree_util.flatten(tangents)
    check_leaves(leaves, in_tree, "primals", "jvp")
    tree_util.check_same(in_tree, t_tree, "primals", "the tangents and the primals")
    paths = tree_util.leaf_paths(in_tree, "primals")
    with new_trace(ForwardTrace) as trace:
        inputs = []
        for x, t, path in zip(leaves, t_leaves, paths):
            if is_diff_leaf(x):
                _check_tangent(x, t, path)
                t = as_array(t)
                if not isinstance(t, Tracer) and np.ndim(t) == 0 and not isinstance(t, np.ndarray):
                    t = np.asarray(t)
                inputs.append(ForwardTracer(as_array(x), t, trace))
            else:
                inputs.append(x)
        result = f(*tree_util.unflatten(in_tree, inputs))
        if has_aux:
            result, aux = check_aux_pair(result)
            aux = tree_util.map(lambda a: _unwrap(a, trace)[0], aux)
            aux_leaves, aux_tree = tree_util.flatten(aux)
            aux = tree_util.unflatten(aux_tree, unalias(aux_leaves, leaves + t_leaves))
        out_leaves, out_tree = tree_util.flatten(result)
        check_leaves(out_leaves, out_tree, "out", "jvp")
        pairs = [_unwrap(o, trace) for o in out_leaves]
        if trace.leaks and all(t is None for _, t in pairs):
            raise TracerConversionError(
                f"the result does not depend on the inputs as far as rune can see, but a "
                f"value computed from them left the computation through .item() at "
                f"{trace.leaks[0]} (as library code that rune has no rule for does), "
                f"so its derivative would silently be zero. Use a function rune has a rule "
                f"for there, or pass rune.stop_gradient(...) of the value to say that a zero "
                f"derivative is what you want")
    outs = unalias([o for o, _ in pairs], leaves)
    touts = []
    for o, t in pairs:
        if t is None:
            t = zero_like(o) if not isinstance(o, (int, bool)) else 0.0
        elif type(o) is float and not isinstance(t, Tracer):
            t = float(t)
        touts.append(t)
    if all(type(x) in (float, complex) for x in leaves if is_diff_leaf(x)) and \
            any(is_diff_leaf(x) for x in leaves):
        # Python numbers in, Python numbers out (a 0-d result of a scalar computation)
        outs = [_python_scalar(o) for o in outs]
        touts = [_python_scalar(t) for t in touts]
    out = tree_util.unflatten(out_tree, outs)
    t_out = tree_util.unflatten(out_tree, unalias(touts, t_leaves + leaves))
    if has_aux:
        return out, t_out, aux
    return out, t_out


def _python_scalar(x):
    if isinstance(x, (np.ndarray, np.generic)) and x.shape == () and x.dtype.kind in "fc":
        return complex(x) if x.dtype.kind == "c" else float(x)
    return x


def _unwrap(x, trace):
    if isinstance(x, ForwardTracer) and x._trace is trace:
        return x._val, x._tan
    return x, None
