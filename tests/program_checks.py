"""The checks every random program (``programs.py``) must pass, and the shrinking of a
failing one to its fewest statements.

``check_program`` asserts, for the program ``f`` at its inputs:

0. the values ``jvp`` and ``vjp`` compute are NumPy's;
1. ``rune.check_grads(f, *inputs, order=2)``: forward and reverse mode against central finite
   differences, the JVP/VJP identity, and the same again one order up, with an absolute
   tolerance derived from the rounding error of the program's own values (``tolerances``);
2. ``vmap(f)`` against a Python loop over a batch, with the batch axis of each input drawn
   (first, last, or not mapped);
3. ``vmap(grad(<f, w>))`` against a loop (per-example gradients);
4. the inputs are unchanged afterwards.

``tests/test_random_programs.py`` runs a bounded, seeded number; ``tests/fuzz.py`` (``make
fuzz``) runs for as long as asked and prints each disagreement shrunk to a minimal program.
"""

import re
import warnings

import numpy as np
from hypothesis import strategies as st

import rune
from rune.views import _Ambiguous
from helpers import check_vmap
from programs import BOUND, EPS, KNOWN, Program

# --------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------

def tolerances(p):
    """``(rtol, atol)`` for ``check_grads`` on program ``p``.

    Central differences with step ``EPS`` on a program whose values are at most ``M`` in
    magnitude carry a rounding error of about ``n * u * M / EPS`` (``u`` the float64 unit
    roundoff, ``n`` the number of statements each adding one rounding), and a truncation
    error ``EPS**2 * f''' / 6`` negligible at these magnitudes (``BOUND`` bounds the values,
    the safe domains bound the derivatives).  The tolerance is ten times that, and never
    below check_grads' own defaults."""
    values = [np.asarray(p.env[k]) for k in p.names()]
    m = max([float(np.max(np.abs(v), initial=0.0)) for v in values] + [1.0])
    n = len(p.lines) + 1
    atol = max(1e-7, 10 * n * np.finfo(float).eps * m / EPS)
    return 1e-5, atol


class Disagreement(AssertionError):
    """A program on which rune disagrees with finite differences, itself or a loop."""


def check_program(p, data=None, in_axes=None):
    """Run every check on program ``p``; raise ``Disagreement`` with its source on failure.
    ``in_axes`` are vmap's axes, one per input (0, -1 or None); without them, ``data`` (a
    hypothesis draw) chooses them, and without either every input is mapped on axis 0."""
    f = p.function()
    inputs = [x.copy() for x in p.inputs]
    before = [x.copy() for x in inputs]
    rtol, atol = tolerances(p)
    if in_axes is None:
        in_axes = tuple(0 if data is None else data.draw(st.sampled_from(
            [0, -1, None] if i else [0, -1]), label=f"in_axes[{i}]") for i in range(len(inputs)))
    try:
        step = "values under jvp and vjp against NumPy"
        want = f(*inputs)
        for got in (rune.jvp(f, tuple(inputs), tuple(np.ones_like(x) for x in inputs))[0],
                    rune.vjp(f, *inputs)[0]):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        step = "check_grads (order 2)"
        rune.check_grads(f, *inputs, order=2, rtol=rtol, atol=atol)
        step = "jacfwd against jacrev"
        with np.errstate(all="ignore"):
            jf = rune.jacfwd(f, argnums=tuple(range(len(inputs))))(*inputs)
            jr = rune.jacrev(f, argnums=tuple(range(len(inputs))))(*inputs)
        for a, b in zip(jf, jr):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * BOUND)
        step = "vmap against a loop"
        rng = np.random.default_rng(1)
        batch = [np.stack([x + 0.01 * k * rng.standard_normal(x.shape) for k in range(3)])
                 for x in inputs]
        args = [inputs[i] if ax is None else np.moveaxis(b, 0, ax)
                for i, (b, ax) in enumerate(zip(batch, in_axes))]
        w = rng.standard_normal(np.shape(f(*inputs)))
        g = rune.grad(lambda *xs: np.sum(f(*xs) * w), argnums=tuple(range(len(inputs))))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", rune.PerformanceWarning)
            try:
                check_vmap(f, *args, in_axes=in_axes, rtol=1e-9, atol=1e-9 * BOUND)
                step = "vmap(grad) against a loop"
                check_vmap(g, *args, in_axes=in_axes, rtol=1e-8, atol=1e-8 * BOUND)
            except NotImplementedError as e:        # the documented refusal, not a value
                if KNOWN["vmap_reshape_layout"] or not isinstance(e, _Ambiguous):
                    raise       # (_Ambiguous: a view or a copy in NumPy, rune cannot tell)
                KNOWN_REFUSALS.append(step)
        step = "jit(grad) and jit(f) replayed against eager"
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", rune.PerformanceWarning)
            eager_f = lambda *xs: rune.vjp(f, *xs)[0]   # noqa: E731  (rune's kernels)
            for fun, eager, types in ((g, g, True), (f, eager_f, False)):
                jitted = rune.jit(fun)
                jitted(*inputs)                     # recorded
                for k in (1, 2):                    # replayed on other values
                    xs = [x + 0.05 * k for x in inputs]
                    try:
                        want = eager(*xs)
                    except Exception as e:      # (outside f's domain: a singular matrix)
                        try:
                            jitted(*xs)
                        except type(e):
                            continue
                        raise AssertionError(f"eager raised {e!r}, the replay did not")
                    _bitwise(jitted(*xs), want, types)
        step = "inputs unchanged"
        for x, b in zip(inputs, before):
            np.testing.assert_array_equal(x, b)
        step = "a pullback after its inputs and results were written into (issue 24)"
        out, pull = rune.vjp(f, *inputs)
        ct = np.ones_like(out)
        first = [g.copy() for g in pull(ct)]
        for x in inputs:            # the caller reuses its buffers, and writes into
            x += 1.0                # what it got back (an optimizer step)
        for g in pull(ct):
            g -= 1.0
        for g, g0 in zip(pull(ct), first):
            np.testing.assert_array_equal(g, g0)
        for x, b in zip(inputs, before):
            x[...] = b
    except Exception as e:
        err = Disagreement(f"{step}: {type(e).__name__}: {_first_lines(str(e))}\n\n"
                           f"{p.source}\ninputs = {_inputs_source(p.inputs)}\n"
                           f"in_axes = {in_axes!r}  # for vmap")
        err.in_axes = in_axes
        raise err from e


KNOWN_REFUSALS: list = []     # documented refusals met (KNOWN["vmap_reshape_layout"])


def _bitwise(a, b, types=True):
    """The same tree of the same shapes, dtypes and numbers (and types: ``f`` under ``vjp``
    gives 0-d arrays where plain NumPy, and so ``jit(f)``, gives NumPy scalars)."""
    la, ta = rune.tree.flatten(a)
    lb, tb = rune.tree.flatten(b)
    assert ta == tb, f"tree {ta} != {tb}"
    for x, y in zip(la, lb):
        assert not types or type(x) is type(y), f"{type(x).__name__} != {type(y).__name__}"
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, f"{x!r} != {y!r}"
        # the same kernels on the same values: equal but for BLAS's last bit, which
        # depends on where the operands lie in memory (and the sign of a zero: eager
        # rune's backward pass adds some cotangents into a zero buffer in place)
        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-300)


def _first_lines(s, n=8):
    lines = s.strip().splitlines()
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def _inputs_source(inputs):
    return "[" + ", ".join(f"np.array({x.tolist()!r})" for x in inputs) + "]"


# --------------------------------------------------------------------------
# shrinking
# --------------------------------------------------------------------------

def signature(err):
    """What kind of disagreement: the failing check and the exception's type."""
    head = str(err).split("\n", 1)[0]
    step, _, rest = head.partition(": ")
    return step, rest.split(":", 1)[0]


def fails_the_same(p, sig, in_axes):
    try:
        check_program(p, in_axes=in_axes)
    except Disagreement as e:
        return signature(e) == sig
    except Exception:                # the reduced source is not a valid program
        return False
    return False


def minimize(p, sig, in_axes=None):
    """Delete statements (and move the result earlier) while the program fails as ``sig``;
    return the smaller program and its vmap axes."""
    in_axes = tuple(in_axes or (0,) * len(p.inputs))
    lines, result = list(p.lines), p.result
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(lines))):
            trial = lines[:i] + lines[i + 1:]
            for res in _results(trial, result):
                q = Program.from_source(p.inputs, trial, res, p.functions)
                if q is not None and fails_the_same(q, sig, in_axes):
                    lines, result, changed = trial, res, True
                    break
    inputs = list(p.inputs)
    for i in reversed(range(len(inputs))):     # drop the inputs no statement uses
        used = re.compile(rf"\bx{i}\b")
        if len(inputs) > 1 and not any(used.search(ln) for ln in lines + [result]):
            rename = {f"x{j}": f"x{j - 1}" for j in range(i + 1, len(inputs))}
            sub = (lambda t: re.sub(r"\bx\d+\b", lambda m: rename.get(m.group(0), m.group(0)), t))
            q = Program.from_source(inputs[:i] + inputs[i + 1:], [sub(ln) for ln in lines],
                                    sub(result), p.functions)
            axes = in_axes[:i] + in_axes[i + 1:]
            if q is not None and fails_the_same(q, sig, axes):
                inputs, lines, result, in_axes = q.inputs, q.lines, q.result, axes
    return Program.from_source(inputs, lines, result, p.functions), in_axes


def _results(lines, result):
    names = [ln.split(" ", 1)[0] for ln in lines]
    return [result] + [n for n in reversed(names) if n.isidentifier() and n != result]
