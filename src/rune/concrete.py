"""Python decisions on the numbers behind traced values, in a form ``rune.jit`` records.

A few of rune's own rules look at the numbers to choose how to compute (``np.linalg.solve``
of an exactly triangular matrix, SciPy's ``check_finite``, ``np.linspace``'s denormal
steps) or compute something with no derivative from them (a solve's LU factors).  Eagerly
that is a plain look.  Under ``rune.jit``'s recording it must become part of the program,
or the replay would reuse the numbers of the recorded call: :func:`decide` records the
decision as an operation and guards its (small) result, and :func:`lowest` gives the value
at the recording level, so that a primitive applied to it is recorded.
"""

from __future__ import annotations

from .core import Primitive, Tracer, _peek, _stack

__all__ = ["decide", "lowest", "numbers", "recording"]


def _apply(*vals, fn):
    return fn(*vals)


def _batch(args, bdims, fn):
    """A decision on every example of a batch at once (what ``_peek`` gives eagerly)."""
    return decide_p(*args, fn=fn), None


decide_p = Primitive("decide", _apply, nondiff=True, batch=_batch)


def recording():
    """Whether ``rune.jit`` is recording in this context (its level is the lowest)."""
    stack = _stack.get()
    return bool(stack) and stack[0].records


def lowest(x):
    """``x`` at the recording level of ``rune.jit`` when it records, else the plain numbers
    behind ``x`` (every example of a vmap batch included)."""
    while isinstance(x, Tracer) and not x._trace.records:
        x = x._val
    return x


def decide(fn, *xs):
    """``fn(*numbers behind xs)``: a decision of rune's on concrete values (a bool, an int,
    a float).  Under ``rune.jit``'s recording, ``fn`` is an operation of the program and
    its result a guard (``fn`` must be a module-level function: it is compared by identity).
    """
    if not recording():
        return fn(*[_peek(x, False)[0] for x in xs])
    r = decide_p(*[lowest(x) for x in xs], fn=fn)
    return r._concrete() if isinstance(r, Tracer) else r


def numbers(x, why):
    """The numbers behind ``x`` (every example of a vmap batch), for code rune cannot
    record: SciPy's solvers run on them.  Under ``rune.jit``'s recording the call then
    cannot be replayed (``why`` says what ran), and runs eagerly for these arguments."""
    stack = _stack.get()
    if stack and stack[0].records and isinstance(x, Tracer):
        stack[0].unreplayable = stack[0].unreplayable or why
    return _peek(x, False)[0]

