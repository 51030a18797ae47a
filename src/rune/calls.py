"""Call-like constructs: function-level primitives (``checkpoint``, ``custom_vjp``,
``custom_jvp``) and the one way they meet a transformation.

A :class:`Call` is one application of a function to a flat list of leaves.
:func:`bind_call` hands it, like :func:`rune.core.bind` hands a primitive, to
the highest transformation among the leaves, through that trace's
``process_call(call, args)`` method (JAX's ``process_call``):

* ``ReverseTrace.process_call`` records one tape node for the whole call, its
  VJP given by ``call.reverse(trace, vals, groups) -> (outs, pull)``;
* ``ForwardTrace.process_call`` hands a call without tangents down, and
  otherwise wraps ``call.forward(trace, primals, tangents) -> (outs, t_outs)``;
* ``BatchTrace.process_call`` hands down ``call.batched(bdims, trace)``: the
  same kind of call with every function vectorized.

Each trace does the generic part (unwrapping, handing down, wrapping, closure
checks); each kind of call says only what is particular to it.  With no
transformation active, ``call.impl`` runs the function on private copies of
the arrays, so user code never writes into the caller's arrays.
"""

from __future__ import annotations

import numpy as np

from . import views
from .api_util import private_copies
from .core import Tracer, top_trace

__all__ = ["Call", "bind_call", "leaked", "closure_error", "guarded", "no_writes"]


class Call:
    """One application of a function-level primitive to a flat list of leaves.

    ``fun(*leaves) -> tuple of output leaves`` is the function itself.
    Subclasses define what the traces ask for (each on values one level down):

    * ``reverse(trace, vals, groups) -> (outs, pull)``: the outputs and
      ``pull(ct_full, prevs) -> new totals`` (see ``rune.tape.NodeRule``), or None
      to run the function inline;
    * ``forward(trace, primals, tangents) -> (outs, tangent outs)``;
    * ``batched(bdims, trace) -> Call``: the call with every function vectorized;
    * ``leaked_outputs(trace, args)``: what to do when the outputs carry a value
      of ``trace`` that did not come through the arguments (the function closes
      over one): an error, or running the function inline.
    """

    kind = "function"

    def __init__(self, fun, name):
        self.fun = fun
        self.name = name

    def impl(self, args):
        with no_writes(self):
            return tuple(self.fun(*guarded(args, self)))

    def leaked_outputs(self, trace, args):
        raise closure_error(self, trace)

    def forward(self, trace, primals, tangents):
        raise NotImplementedError(
            f"the {self.kind} call {self.name} cannot be used under a {trace.kind} "
            f"(no rule for this transformation)")


def _write_message(call, path=None):
    which = f"its argument {path}" if path else "one of its arguments"
    return (f"the {call.kind} function {call.name} wrote into {which} (x[i] = v, "
            f"x += v, out=x): inside {call.kind}, that write cannot reach the caller's array "
            f"as it would without {call.kind}, so rune refuses it rather than give a "
            f"different value. Write into a copy (x = x.copy()) and return it instead")


def guarded(values, call, paths=None):
    """``values`` for the user's code run inside ``call`` (SPEC 4: a call construct keeps
    NumPy's semantics for writes into its arguments, or raises): plain arrays as read-only
    views and traced values re-wrapped to refuse writes, naming the call; never the
    caller's own objects."""
    out = []
    for k, v in enumerate(values):
        if type(v) is np.ndarray:
            v = v.view()
            v.flags.writeable = False
        elif isinstance(v, Tracer):
            v = private_copies([v])[0]
            views.refuse_writes(v, NotImplementedError,
                                _write_message(call, paths[k] if paths else None))
        out.append(v)
    return out


_NUMPY_READ_ONLY = ("assignment destination is read-only", "output array is read-only")


class no_writes:
    """Around user code run on :func:`guarded` values: NumPy's read-only error (a write
    into a plain argument) becomes the same clear error as a traced one's."""

    __slots__ = ("call",)

    def __init__(self, call):
        self.call = call

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if kind is not None and issubclass(kind, ValueError) and any(
                m in str(e) for m in _NUMPY_READ_ONLY):     # (NumPy's own messages only)
            raise NotImplementedError(_write_message(self.call)) from e
        return False


def bind_call(call, args):
    """Hand ``call`` to the highest transformation among ``args`` (like ``core.bind``)."""
    trace = top_trace(args, call.name)
    if trace is None:
        return call.impl(args)
    process = getattr(trace, "process_call", None)
    if process is None:
        raise NotImplementedError(f"the {call.kind} call {call.name} cannot be used under "
                                  f"a {trace.kind} (it has no process_call)")
    return process(call, args)


def leaked(values, level):
    """The first value traced at ``level`` or above (the function closed over one), or None."""
    for v in values:
        if isinstance(v, Tracer) and v._trace.level >= level:
            return v
    return None


def closure_error(call, trace):
    return ValueError(
        f"the {call.kind} function {call.name} closes over a value traced by an enclosing "
        f"{trace.kind}; its rule would not see that value's derivative. Pass the value as "
        f"an argument (use nondiff_argnums for values that are not differentiated)")
