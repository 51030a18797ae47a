"""Elementwise runs of a recorded :mod:`rune.jit` program fused into one numexpr call.

At the sizes where ``jit`` matters most (tens of elements), a NumPy kernel call costs about
3,500 instructions whatever it computes: argument parsing, dtype resolution, the loop's
selection, the result's allocation.  A backward pass is mostly products and sums of
values the forward pass kept, so it is mostly that fixed cost.  numexpr (an optional,
well-kept library: ``pip install "rune-autodiff[jit]"``) evaluates a whole expression in
one call, for about 6,000 instructions plus 600 an operation.

Only what numexpr computes *exactly as NumPy does* is fused, so a fused program's results
equal eager rune's bit for bit: IEEE's correctly rounded ``+ - * /`` and ``sqrt``,
negation, ``abs``, comparisons and ``where``, on float64 arrays of one shape (the
operations of a run, each rounded to float64 in turn: no reassociation, no reciprocal for
a division, ``optimization='none'``).  Each kind is checked once per process against
NumPy on special and random values before it is fused (:func:`exact_ops`).
Transcendental functions (numexpr's ``sin`` is libm's, NumPy's its own) stay NumPy calls.

A run is grown backwards from a value read outside it: an operation joins the run that
reads its result when nothing else does, so a fused call has one result, and each value
inside it is computed once (numexpr merges repeated subexpressions).  Runs of fewer than
:data:`MIN_RUN` operations stay NumPy calls.  What a fused program does not do is report
floating-point warnings (NumPy's ``errstate``): an invalid value in a fused run is NaN,
silently, as in a replayed program that warned once when recorded; under
``np.errstate(...="raise")`` (or ``"call"``, ``"log"``) the unfused program runs instead, and
raises as eager code does.

``RUNE_JIT_FUSE=0`` in the environment turns fusion off.

>>> import numpy as np, rune
>>> f = rune.jit(lambda x: np.sum(np.sqrt(x * x + 1.0) / (x - 3.0) * 0.5))
>>> x = np.linspace(0.0, 1.0, 8)
>>> bool(f(x) == f(x))               # (recorded, then replayed: fused if numexpr is there)
True
"""

from __future__ import annotations

import os

import numpy as np

from .jit_fold import readers

__all__ = ["fuse", "exact_ops", "MIN_RUN", "errstate", "quiet_now", "QUIET"]

MIN_RUN = 3          # operations a fused call must replace to be cheaper than NumPy's
_MAX_OPS = 400       # a run's expression, repeated subexpressions counted each time
_REPEAT = 8          # operations a value read twice in a run may have to be repeated in its
#                      text (numexpr computes it once): a bigger one is a run of its own
_MAX_INPUTS = 30     # numexpr's arrays per call (NumPy's iterator takes 64 operands)

# each fusable primitive: its numexpr form, and the NumPy ufunc it must match
_FORMS = {
    "add": ("({} + {})", np.add), "subtract": ("({} - {})", np.subtract),
    "multiply": ("({} * {})", np.multiply), "divide": ("({} / {})", np.divide),
    "negative": ("(-{})", np.negative), "absolute": ("abs({})", np.absolute),
    "sqrt": ("sqrt({})", np.sqrt), "greater_equal": ("({} >= {})", np.greater_equal),
    "greater": ("({} > {})", np.greater), "less_equal": ("({} <= {})", np.less_equal),
    "less": ("({} < {})", np.less), "where": ("where({}, {}, {})", np.where),
}
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(bool)
_checked: dict | None = None


def _numexpr():
    if os.environ.get("RUNE_JIT_FUSE", "1") == "0":
        return None
    had = hasattr(np, "expm1x")
    try:
        import numexpr
    except ImportError:
        return None
    if not had and getattr(np, "expm1x", None) is np.expm1:  # numexpr's import sets it
        del np.expm1x                                        # (unused): NumPy stays as it was
    return None if getattr(numexpr, "use_vml", False) else numexpr   # (VML: not IEEE's)


def _same_bits(a, b):
    """Equal as float64 bit patterns, a NaN's sign and payload aside (IEEE leaves them)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == _F64:
        nan = np.isnan(a)
        return bool(np.array_equal(nan, np.isnan(b)) and
                    a[~nan].tobytes() == b[~nan].tobytes())
    return a.tobytes() == b.tobytes()


def exact_ops():
    """The operations numexpr computes bit for bit as NumPy does here (checked once, on
    signed zeros, infinities, NaN, subnormals, huge, tiny and random values)."""
    global _checked
    if _checked is not None:
        return _checked
    ne = _numexpr()
    ok: dict = {}
    if ne is not None:
        rng = np.random.default_rng(7)
        special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324,
                            2.2250738585072014e-308, 1.7976931348623157e308, 1e-300,
                            -3.5, 0.1, 1e16, -1e-16])
        a = np.concatenate([np.repeat(special, special.size),
                            rng.standard_normal(512) * 10.0 ** rng.integers(-30, 30, 512)])
        b = np.concatenate([np.tile(special, special.size),
                            rng.standard_normal(512) * 10.0 ** rng.integers(-30, 30, 512)])
        c = a > b
        sig = [("a", np.float64), ("b", np.float64), ("c", bool)]
        for name, (form, ufunc) in _FORMS.items():
            n = form.count("{}")
            args = (("c", "a", "b") if name == "where" else ("a", "b")[:n])
            vals = {"a": a, "b": b, "c": c}
            try:
                prog = ne.NumExpr(form.format(*args), signature=[s for s in sig if s[0] in args],
                                  optimization="none")
                with np.errstate(all="ignore"):
                    want = ufunc(*(vals[k] for k in args))
                    got = prog(*(vals[k] for k in prog.input_names))
            except Exception:       # (a numexpr without this operation)
                continue
            if _same_bits(got, want):
                ok[name] = form
    _checked = ok
    return ok


try:                    # NumPy's floating-point error state: one object a state (a C call)
    errstate = np._core._ufunc_config._extobj_contextvar.get
except AttributeError:  # (another NumPy: np.geterr() on every call)
    errstate = object
QUIET = [None]          # the last state seen to only warn or ignore


def quiet_now():
    """Whether NumPy's error state only warns or ignores (then a fused run, which reports
    nothing, gives what the kernels would: else the unfused program runs, and raises)."""
    if any(mode not in ("ignore", "warn", "print") for mode in np.geterr().values()):
        return False
    QUIET[0] = errstate()
    return True


class Fused:
    """A fused run, in the place of a primitive in a program's entry: ``impl`` is the
    compiled numexpr call, ``text`` its expression (shown in the listing)."""

    __slots__ = ("impl", "text", "n_ops")
    name = "fused"
    nondiff = False
    multiple_results = False

    def __init__(self, impl, text, n_ops):
        self.impl, self.text, self.n_ops = impl, text, n_ops


def _literal(c):
    """A constant numexpr can take as a literal (a finite float64 scalar), or None."""
    if type(c) is float or type(c) is np.float64 or (
            type(c) is np.ndarray and c.ndim == 0 and c.dtype == _F64):
        v = float(c)
        if np.isfinite(v):
            return f"({v!r})"
    return None


def fuse(code: list, out_refs, in_meta: dict) -> list:
    """``code`` (a program's entries, in order) with its fusable runs replaced by one
    entry each (see the module's text); ``code`` itself when numexpr is not there."""
    forms = exact_ops() if _numexpr() is not None else {}
    if not forms:
        return code
    meta = dict(in_meta)                    # slot -> (shape, dtype)
    for e in code:
        if e[0] == "op":
            meta.update(zip(e[4], e[5]))
    uses = readers(code, out_refs)

    def fusable(e):
        if e[0] != "op" or e[1].name not in forms or e[3] or e[6] or len(e[4]) != 1:
            return False
        shape, dtype = e[5][0]
        if not shape or dtype not in (_F64, _BOOL) or (dtype == _BOOL) != (
                e[1].name in ("greater_equal", "greater", "less_equal", "less")):
            return False
        for i, r in enumerate(e[2]):
            want = _BOOL if e[1].name == "where" and i == 0 else _F64
            if r[0] == "s":
                if meta.get(r[1]) != (shape, want):
                    return False
            elif want is _BOOL or _literal(r[1]) is None:
                return False
        return True

    ops = [k for k, e in enumerate(code) if fusable(e)]
    producer = {code[k][4][0]: k for k in ops}
    cuts: set = set()           # values read twice inside a run and too big to repeat
    while True:
        run_of: dict[int, int] = {}         # entry index -> the index of its run's root
        for k in reversed(ops):
            reading = uses.get(code[k][4][0], [])
            roots = {run_of.get(u, -1) if u is not None else -1 for u in reading}
            run_of[k] = roots.pop() if len(roots) == 1 and -1 not in roots and reading \
                and k not in cuts else k
        size: dict[int, int] = {}           # operations in a value's text, repeats counted
        changed = False
        for k in ops:                       # (in order: a cut shrinks what reads it)
            inner = [producer[r[1]] for r in code[k][2] if r[0] == "s" and r[1] in producer
                     and run_of[producer[r[1]]] == run_of[k] != producer[r[1]]]
            for j in set(inner):
                if size[j] > _REPEAT and (inner.count(j) > 1 or sum(
                        run_of.get(u) == run_of[k] for u in uses[code[j][4][0]]) > 1):
                    cuts.add(j)
                    changed = True
            size[k] = 1 + sum(size[j] for j in inner if j not in cuts)
        if not changed:
            break
    members: dict[int, list] = {}
    for k, root in run_of.items():
        members.setdefault(root, []).append(k)
    replaced: dict[int, tuple] = {}
    for root, ks in members.items():
        if len(ks) >= MIN_RUN:
            made = _compile(code, root, set(ks), forms)
            if made is not None:
                replaced[root] = made
    if not replaced:
        return code
    drop = {k for root in replaced for k in members[root]}
    return [replaced[k] if k in replaced else e for k, e in enumerate(code)
            if k not in drop or k in replaced]


def _compile(code, root, ks, forms):
    """The entry of the fused run ``ks`` (entry indices, rooted at ``root``), or None."""
    ne = _numexpr()
    by_slot = {code[k][4][0]: k for k in ks}
    inputs: dict = {}                       # slot ref -> (numexpr name, ref, kind)
    count = [0]

    def text(k):
        e = code[k]
        count[0] += 1
        if count[0] > _MAX_OPS:
            raise OverflowError
        parts = []
        for i, r in enumerate(e[2]):
            if r[0] == "s" and r[1] in by_slot:
                parts.append(text(by_slot[r[1]]))
                continue
            lit = None if r[0] == "s" else _literal(r[1])
            if lit is not None:
                parts.append(lit)
                continue
            if r not in inputs:
                kind = bool if e[1].name == "where" and i == 0 else np.float64
                inputs[r] = (f"a{len(inputs)}", r, kind)
            parts.append(inputs[r][0])
        return forms[e[1].name].format(*parts)

    try:
        expr = text(root)
    except OverflowError:
        return None
    if len(inputs) > _MAX_INPUTS:
        return None
    names = list(inputs.values())
    try:
        prog = ne.NumExpr(expr, signature=[(n, kind) for n, _, kind in names],
                          optimization="none")
    except Exception:       # (an expression numexpr cannot compile: the run stays NumPy's)
        return None
    order = {n: r for n, r, _ in names}
    refs = [order[n] for n in prog.input_names]
    e = code[root]
    return ("op", Fused(prog, expr, len(ks)), refs, {}, e[4], e[5], {})
