"""Random programs: a generator of plain-NumPy functions of 1 to 30 operations, and the checks
every one of them must pass under rune.

A program is Python source (so a disagreement prints as a program a user could have
written), built one statement at a time from choices drawn through hypothesis.  While it is
built, every statement also runs on concrete float64 inputs; those values decide which
operations may come next:

* shapes: an operation is drawn only where its operands fit (broadcasting, axes, indices);
* safe domains: ``log``/``sqrt``/division only on values at least 0.2 away from the singular
  point, ``max``/``sort``/``abs``/``maximum``/``clip``/``where`` only where the values are at least
  ``GAP`` away from a tie or a kink, and no value beyond ``BOUND`` in magnitude, so that
  finite differences are meaningful and any disagreement is real;
* writes (``v[idx] = w``, ``v[idx] += w``, ``v += w``, ``v *= w``, buffers from ``np.zeros_like``)
  only into intermediates NumPy lets you write (not inputs, not broadcast views), including
  views of other intermediates, whose writes reach their base as in NumPy.

``check_program`` then asserts, for the program ``f`` at its inputs:

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

import itertools
import re
import warnings

import numpy as np
from hypothesis import strategies as st

import rune
from helpers import check_vmap

GAP = 0.05          # distance kept from kinks and ties (max, sort, abs, maximum, clip, where)
DOMAIN = 0.2        # distance kept from singular points (log, sqrt, 1/x, power)
BOUND = 50.0        # largest magnitude of any intermediate value
MAX_SIZE = 24       # largest number of elements of any value
EPS = 1e-6          # check_grads' central-difference step in float64 (its default)

# Known limits, switched off so that the bounded run in the suite passes; each has a
# strict xfail test with its minimal program in test_random_programs.py, and `make fuzz`
# can switch it back on (tests/fuzz.py --all) to see whether it still fails.
KNOWN = {
    # x[..., None], x[()] and x[...] = v on a 0-d traced value: 0-d tracers are not
    # subscriptable (core.ArrayMixin gives sequence behaviour to rank >= 1 only).
    "index_0d": False,
    # a write into an array that another live value views (expand_dims, reshape, squeeze,
    # ... of it): only basic indexing and .T are tracked as views on main today (the views
    # branch tracks the rest).
    "aliased_writes": False,
}


class Program:
    """Source lines of ``f`` and, alongside, the concrete values its statements produced."""

    def __init__(self, inputs, functions=None):
        self.inputs = [np.array(x) for x in inputs]
        self.args = [f"x{i}" for i in range(len(inputs))]
        self.functions = dict(functions or {})     # names besides np the source may call
        self.env = {"np": np, **self.functions}
        self.env.update({a: np.array(x) for a, x in zip(self.args, inputs)})
        self.lines = []
        self.result = self.args[-1]
        self.n = 0

    @classmethod
    def from_source(cls, inputs, lines, result, functions=None):
        """The program of statements ``lines`` returning ``result``, or None if NumPy cannot
        run it (a statement deleted by shrinking defined a name a later one uses)."""
        p = cls(inputs, functions)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for line in lines:
                    exec(line, p.env)
        except Exception:
            return None
        if result not in p.env:
            return None
        p.lines, p.result = list(lines), result
        p.n = len(lines)
        return p

    @property
    def source(self):
        body = "".join(f"    {line}\n" for line in self.lines)
        return f"def f({', '.join(self.args)}):\n{body}    return {self.result}\n"

    def function(self):
        ns = {"np": np, **self.functions}
        exec(compile(self.source, "<random program>", "exec"), ns)
        return ns["f"]

    def names(self):
        """Every float array the program holds now (inputs first)."""
        return [k for k in self.env
                if k != "np" and k not in self.functions and not k.startswith("__")]

    def writable(self):
        """Intermediates NumPy lets a statement write into: not an input, not a view of one,
        not read-only (broadcast views, NumPy scalars)."""
        out = []
        for k in self.names():
            v = self.env[k]
            if k in self.args or not isinstance(v, np.ndarray) or not v.flags.writeable:
                continue
            if v.ndim == 0 and not KNOWN["index_0d"]:
                continue
            others = self.args if KNOWN["aliased_writes"] else \
                [n for n in self.names() if n != k]
            if any(np.may_share_memory(v, self.env[a]) for a in others):
                continue
            out.append(k)
        return out

    def try_assign(self, expr):
        """Add ``vN = expr`` if its value is finite, bounded and small; return the name or None."""
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                val = eval(expr, dict(self.env))
            except (FloatingPointError, ValueError, IndexError, TypeError, RuntimeWarning):
                return None
        if not _ok(val):
            return None
        self.n += 1
        name = f"v{self.n}"
        self.env[name] = val
        self.lines.append(f"{name} = {expr}")
        self.result = name
        return name

    def try_statement(self, lines, result):
        """Run statements that write into existing values (all or nothing); keep them if every
        value stays finite and bounded."""
        saved = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.env.items()}
        try:
            with np.errstate(all="raise"), warnings.catch_warnings():
                warnings.simplefilter("error")
                for line in lines:
                    exec(line, self.env)
            ok = all(_ok(self.env[k]) for k in self.names())
        except (FloatingPointError, ValueError, IndexError, TypeError, RuntimeWarning):
            ok = False
        if not ok:
            # restore in place, so views of the written arrays stay views
            for k, v in saved.items():
                if isinstance(v, np.ndarray) and isinstance(self.env.get(k), np.ndarray) \
                        and self.env[k].flags.writeable:
                    self.env[k][...] = v
                else:
                    self.env[k] = v
            for k in list(self.env):
                if k not in saved:
                    del self.env[k]
            return False
        self.lines.extend(lines)
        self.result = result
        return True


def _ok(val):
    if not isinstance(val, (np.ndarray, np.floating)) or np.asarray(val).dtype != np.float64:
        return False
    val = np.asarray(val)
    return 0 < val.size <= MAX_SIZE and bool(np.all(np.isfinite(val))) and \
        float(np.max(np.abs(val), initial=0.0)) <= BOUND


def _min_abs(v):
    return float(np.min(np.abs(v), initial=np.inf))


def _gap(v, axis):
    """Smallest distance between the top two (and the bottom two) values over ``axis``:
    how far ``max``/``min`` over it are from a tie."""
    v = np.asarray(v)
    if v.ndim == 0:
        return np.inf
    axes = tuple(range(v.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = tuple(a % v.ndim for a in axes)
    rest = [a for a in range(v.ndim) if a not in axes]
    n_red = int(np.prod([v.shape[a] for a in axes]))
    m = np.transpose(v, rest + list(axes)).reshape(-1, n_red)
    if m.shape[-1] < 2:
        return np.inf
    s = np.sort(m, axis=-1)
    return float(min(np.min(s[:, -1] - s[:, -2]), np.min(s[:, 1] - s[:, 0])))


def _sort_gap(v, axis):
    s = np.sort(np.asarray(v), axis=axis)
    d = np.diff(s, axis=axis)
    return float(np.min(d, initial=np.inf))


def _bshape(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


# --------------------------------------------------------------------------
# operations: each draws its operands and parameters and adds one statement (or fails)
# --------------------------------------------------------------------------

UNARY = {   # template, guard on the operand
    "sin": ("np.sin({a})", None),
    "cos": ("np.cos({a})", None),
    "tanh": ("np.tanh({a})", None),
    "arctan": ("np.arctan({a})", None),
    "square": ("np.square({a})", None),
    "cube": ("{a} ** 3", None),
    "neg": ("-{a}", None),
    "half": ("0.5 * {a}", None),
    "exp": ("np.exp({a})", lambda v: np.max(np.abs(v)) < 3),
    "expm1": ("np.expm1({a})", lambda v: np.max(np.abs(v)) < 3),
    "sinh": ("np.sinh({a})", lambda v: np.max(np.abs(v)) < 3),
    "cosh": ("np.cosh({a})", lambda v: np.max(np.abs(v)) < 3),
    "log": ("np.log({a})", lambda v: np.min(v) > DOMAIN),
    "log1p": ("np.log1p({a})", lambda v: np.min(v) > -1 + DOMAIN),
    "sqrt": ("np.sqrt({a})", lambda v: np.min(v) > DOMAIN),
    "reciprocal": ("1.0 / {a}", lambda v: _min_abs(v) > DOMAIN),
    "abs": ("np.abs({a})", lambda v: _min_abs(v) > GAP),
    "arcsin": ("np.arcsin({a})", lambda v: np.max(np.abs(v)) < 1 - DOMAIN),
    "clip": ("np.clip({a}, -0.5, 0.5)", lambda v: min(_min_abs(v - 0.5), _min_abs(v + 0.5)) > GAP),
    "pow_frac": ("{a} ** 1.5", lambda v: np.min(v) > DOMAIN),
    "sum_method": ("{a}.sum()", None),
    "copy": ("{a}.copy()", None),
}

BINARY = {
    "add": ("{a} + {b}", None),
    "sub": ("{a} - {b}", None),
    "mul": ("{a} * {b}", None),
    "div": ("{a} / {b}", lambda a, b: _min_abs(b) > DOMAIN),
    "maximum": ("np.maximum({a}, {b})", lambda a, b: _min_abs(a - b) > GAP),
    "minimum": ("np.minimum({a}, {b})", lambda a, b: _min_abs(a - b) > GAP),
    "power": ("np.power({a}, {b})", lambda a, b: np.min(a) > DOMAIN and np.max(np.abs(b)) < 2),
    "hypot": ("np.hypot({a}, {b})", lambda a, b: np.min(np.hypot(a, b)) > DOMAIN),
    "arctan2": ("np.arctan2({a}, {b})", lambda a, b: np.min(np.hypot(a, b)) > DOMAIN),
    "where": ("np.where({a} > 0, {a}, {b})", lambda a, b: _min_abs(a) > GAP),
    "logaddexp": ("np.logaddexp({a}, {b})", None),
}


def _pick(draw, p, names=None):
    names = p.names() if names is None else names
    return draw(st.sampled_from(names)) if names else None


def _shape(p, name):
    return np.shape(p.env[name])


def _axis(draw, nd, multi=True, none=True):
    """An axis argument for a value of ``nd`` dimensions, written as source."""
    options = []
    if none:
        options.append(None)
    if nd:
        options += list(range(-nd, nd))
        if multi and nd > 1:
            options += [t for r in range(2, nd + 1) for t in itertools.combinations(range(nd), r)]
    if not options:
        return "none"
    return draw(st.sampled_from(options))


def op_unary(draw, p):
    a = _pick(draw, p)
    name = draw(st.sampled_from(sorted(UNARY)))
    tmpl, guard = UNARY[name]
    if guard is not None and np.size(p.env[a]) and not guard(p.env[a]):
        return False
    return p.try_assign(tmpl.format(a=a)) is not None


def op_binary(draw, p):
    a = _pick(draw, p)
    sa = _shape(p, a)
    partners = [k for k in p.names() if _bshape(sa, _shape(p, k)) is not None]
    b = _pick(draw, p, partners)
    name = draw(st.sampled_from(sorted(BINARY)))
    if draw(st.booleans()):
        a, b = b, a
    tmpl, guard = BINARY[name]
    if guard is not None:
        va, vb = np.broadcast_arrays(p.env[a], p.env[b])
        if va.size and not guard(va, vb):
            return False
    return p.try_assign(tmpl.format(a=a, b=b)) is not None


REDUCTIONS = ["sum", "mean", "prod", "max", "min", "var", "std", "logaddexp.reduce", "norm",
              "cumsum", "cumprod", "method_sum", "method_max"]


def op_reduce(draw, p):
    a = _pick(draw, p)
    v = p.env[a]
    nd = np.ndim(v)
    name = draw(st.sampled_from(REDUCTIONS))
    single = name in ("logaddexp.reduce", "cumsum", "cumprod")
    axis = _axis(draw, nd, multi=not single, none=name != "logaddexp.reduce")
    if axis == "none":
        return False
    keep = draw(st.booleans())
    kd = f", keepdims={keep}" if name not in ("cumsum", "cumprod") else ""
    ax = f"axis={axis!r}"
    if name in ("max", "min", "method_max") and _gap(v, axis) < GAP:
        return False
    if name in ("var", "std"):
        red = np.var(v, axis=axis) if np.size(v) else 0
        n_red = np.size(v) // max(np.size(red), 1)
        if n_red < 2 or np.min(red) < 0.01:
            return False
    if name == "prod" and np.max(np.abs(v), initial=0) > 3:
        return False
    if name == "norm":
        if axis is not None and not isinstance(axis, int):
            return False
        if float(np.min(np.linalg.norm(v, axis=axis), initial=np.inf)) < DOMAIN:
            return False
        return p.try_assign(f"np.linalg.norm({a}, {ax}{kd})") is not None
    if name.startswith("method_"):
        return p.try_assign(f"{a}.{name[7:]}({ax}{kd})") is not None
    return p.try_assign(f"np.{name}({a}, {ax}{kd})") is not None


def _factor(draw, n):
    """A random shape with ``n`` elements and at most 3 dimensions."""
    dims = []
    while n > 1 and len(dims) < 2:
        divs = [d for d in range(1, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divs))
        dims.append(d)
        n //= d
    dims.append(n)
    return tuple(dims)


def op_shape(draw, p):
    a = _pick(draw, p)
    v = p.env[a]
    nd, sh = np.ndim(v), np.shape(v)
    kind = draw(st.sampled_from(["reshape", "transpose", "T", "swapaxes", "expand_dims",
                                 "squeeze", "broadcast_to", "flip", "roll", "ravel", "moveaxis",
                                 "repeat", "tile", "pad", "sort", "diagonal", "triu",
                                 "concatenate", "stack", "newaxis"]))
    if kind == "reshape":
        return p.try_assign(f"{a}.reshape({_factor(draw, int(np.size(v)))})") is not None
    if kind == "ravel":
        return p.try_assign(f"np.ravel({a})") is not None
    if kind == "T":
        return p.try_assign(f"{a}.T") is not None
    if kind == "newaxis":
        if not nd and not KNOWN["index_0d"]:
            return False
        return p.try_assign(f"{a}[..., None]") is not None
    if kind == "transpose" and nd:
        perm = tuple(draw(st.permutations(range(nd))))
        return p.try_assign(f"np.transpose({a}, {perm})") is not None
    if kind == "expand_dims":
        return p.try_assign(f"np.expand_dims({a}, {draw(st.integers(-nd - 1, nd))})") is not None
    if kind == "broadcast_to":
        target = (draw(st.integers(1, 3)),) + tuple(
            draw(st.integers(1, 3)) if d == 1 else d for d in sh)
        return p.try_assign(f"np.broadcast_to({a}, {target})") is not None
    if kind == "tile":
        return p.try_assign(f"np.tile({a}, {draw(st.integers(1, 2))})") is not None
    if kind == "stack":
        same = [k for k in p.names() if _shape(p, k) == sh]
        b = _pick(draw, p, same)
        return p.try_assign(f"np.stack([{a}, {b}], axis={draw(st.integers(-nd - 1, nd))})") \
            is not None
    if not nd:
        return False
    ax = draw(st.integers(-nd, nd - 1))
    if kind == "swapaxes":
        return p.try_assign(f"np.swapaxes({a}, {ax}, {draw(st.integers(0, nd - 1))})") is not None
    if kind == "moveaxis":
        return p.try_assign(f"np.moveaxis({a}, {ax}, {draw(st.integers(0, nd - 1))})") is not None
    if kind == "squeeze":
        ones = [i for i, d in enumerate(sh) if d == 1]
        arg = f", axis={draw(st.sampled_from(ones))}" if ones and draw(st.booleans()) else ""
        return p.try_assign(f"np.squeeze({a}{arg})") is not None
    if kind == "flip":
        return p.try_assign(f"np.flip({a}, axis={ax})") is not None
    if kind == "roll":
        return p.try_assign(f"np.roll({a}, {draw(st.integers(-3, 3))}, axis={ax})") is not None
    if kind == "repeat":
        return p.try_assign(f"np.repeat({a}, 2, axis={ax})") is not None
    if kind == "pad":
        width = [(draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in range(nd)]
        return p.try_assign(f"np.pad({a}, {width})") is not None
    if kind == "sort":
        if _sort_gap(v, ax) < GAP:
            return False
        return p.try_assign(f"np.sort({a}, axis={ax})") is not None
    if kind in ("diagonal", "triu") and nd >= 2:
        fn = "np.diagonal" if kind == "diagonal" else "np.triu"
        return p.try_assign(f"{fn}({a}, {draw(st.integers(-1, 1))})") is not None
    if kind == "concatenate":
        fits = [k for k in p.names() if np.ndim(p.env[k]) == nd
                and all(d == e for i, (d, e) in enumerate(zip(_shape(p, k), sh)) if i != ax % nd)]
        b = _pick(draw, p, fits)
        return p.try_assign(f"np.concatenate([{a}, {b}], axis={ax})") is not None
    return False


def _index(draw, shape, allow_advanced=True):
    """An index expression (source) for a value of ``shape``."""
    parts = []
    nd = len(shape)
    k = draw(st.integers(0, nd))
    for d in shape[:k]:
        kind = draw(st.sampled_from(["slice", "int", "all"] + (["array", "mask"]
                                                                if allow_advanced else [])))
        if kind == "int":
            parts.append(str(draw(st.integers(-d, d - 1))))
        elif kind == "slice":
            start = draw(st.sampled_from([None] + list(range(-d, d))))
            stop = draw(st.sampled_from([None] + list(range(-d, d + 1))))
            step = draw(st.sampled_from([None, 1, 2, -1]))
            parts.append(":".join("" if s is None else str(s) for s in (start, stop))
                         + ("" if step is None else f":{step}"))
        elif kind == "array":
            idx = draw(st.lists(st.integers(-d, d - 1), min_size=1, max_size=4))
            parts.append(f"np.array({idx})")
            allow_advanced = False        # one advanced index: NumPy's simple placement rule
        elif kind == "mask":
            mask = draw(st.lists(st.booleans(), min_size=d, max_size=d))
            parts.append(f"np.array({mask})")
            allow_advanced = False
        else:
            parts.append(":")
    if draw(st.booleans()) and k < nd:
        parts.append("...")
    if not parts:
        return "..."
    return ", ".join(parts)


def op_index(draw, p):
    a = _pick(draw, p)
    sh = _shape(p, a)
    if not sh:
        if not KNOWN["index_0d"]:
            return False
        return p.try_assign(f"{a}[{draw(st.sampled_from(['()', '...', 'None']))}]") is not None
    idx = _index(draw, sh)
    if draw(st.booleans()):
        d = sh[0]
        ind = draw(st.lists(st.integers(0, d - 1), min_size=1, max_size=4))
        return p.try_assign(f"np.take({a}, {ind}, axis=0)") is not None
    return p.try_assign(f"{a}[{idx}]") is not None


def _source_for(draw, p, shape):
    """A value (source) that broadcasts to ``shape``: an existing array if one fits, else a
    reduction of one to a scalar."""
    fits = [k for k in p.names() if _bshape(_shape(p, k), shape) == tuple(shape)]
    if fits and draw(st.booleans()):
        return _pick(draw, p, fits)
    b = _pick(draw, p)
    return f"np.sin({b}).sum()"


def op_write(draw, p):
    targets = p.writable()
    kind = draw(st.sampled_from(["setitem", "setitem_add", "iadd", "imul", "buffer"]))
    if kind == "buffer" or not targets:
        a = _pick(draw, p)
        sh = _shape(p, a)
        if not sh and not KNOWN["index_0d"]:
            return False
        p.n += 1
        buf = f"v{p.n}"
        idx = _index(draw, sh)
        region = np.shape(np.zeros(sh)[eval(f"np.s_[{idx}]", {"np": np})])
        src = _source_for(draw, p, region)
        make = draw(st.sampled_from(["np.zeros_like({a})", "np.ones_like({a})", "{a}.copy()",
                                     "np.empty_like({a})"]))
        if "empty" in make and idx != "...":
            make = "np.zeros_like({a})"
        lines = [f"{buf} = {make.format(a=a)}", f"{buf}[{idx}] = {src}"]
        if not p.try_statement(lines, buf):
            p.n -= 1
            return False
        return True
    t = _pick(draw, p, targets)
    sh = _shape(p, t)
    if kind in ("iadd", "imul"):
        src = _source_for(draw, p, sh)
        opr = "+=" if kind == "iadd" else "*="
        return p.try_statement([f"{t} {opr} {src}"], t)
    idx = _index(draw, sh)
    region = np.shape(p.env[t][eval(f"np.s_[{idx}]", {"np": np})])
    src = _source_for(draw, p, region)
    opr = "=" if kind == "setitem" else "+="
    return p.try_statement([f"{t}[{idx}] {opr} {src}"], t)


def op_contract(draw, p):
    a = _pick(draw, p)
    sa = _shape(p, a)
    if not sa:
        return False
    fits = [k for k in p.names() if _shape(p, k) and _shape(p, k)[0] == sa[-1]
            and len(_shape(p, k)) <= 2]
    b = _pick(draw, p, fits)
    if b is None:
        return False
    kind = draw(st.sampled_from(["matmul", "dot", "tensordot", "einsum"]))
    if kind == "matmul":
        return p.try_assign(f"{a} @ {b}") is not None
    if kind == "dot":
        return p.try_assign(f"np.dot({a}, {b})") is not None
    if kind == "tensordot":
        return p.try_assign(f"np.tensordot({a}, {b}, axes=1)") is not None
    letters = "ijk"[:len(sa)]
    sb = "z" + "l" * (len(_shape(p, b)) - 1)
    spec = f"{letters},{letters[-1]}{sb[1:]}->{letters[:-1]}{sb[1:]}"
    return p.try_assign(f"np.einsum({spec!r}, {a}, {b})") is not None


OPS = [op_unary, op_unary, op_binary, op_binary, op_reduce, op_shape, op_shape, op_index,
       op_write, op_write, op_contract]


@st.composite
def input_shapes(draw):
    """1 to 3 input shapes that broadcast together (the first is the full shape)."""
    full = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    if int(np.prod(full)) > MAX_SIZE:
        full = full[:1]
    shapes = [full]
    for _ in range(draw(st.integers(0, 2))):
        k = draw(st.integers(0, len(full)))
        shapes.append(tuple(1 if draw(st.booleans()) else d for d in full[k:]))
    return shapes


@st.composite
def programs(draw, max_ops=30):
    """A ``Program`` of 1 to ``max_ops`` operations over random inputs."""
    shapes = draw(input_shapes())
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    p = Program(inputs)
    n_ops = draw(st.integers(1, max_ops))
    tries = 0
    while len(p.lines) < n_ops and tries < 4 * n_ops:
        tries += 1
        op = draw(st.sampled_from(OPS))
        op(draw, p)
    return p


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


def check_program(p, data=None):
    """Run every check on program ``p``; raise ``Disagreement`` with its source on failure.
    ``data`` (a hypothesis draw) chooses the vmap axes; without it, axis 0 for every input."""
    f = p.function()
    inputs = [x.copy() for x in p.inputs]
    before = [x.copy() for x in inputs]
    rtol, atol = tolerances(p)
    try:
        step = "check_grads (order 2)"
        rune.check_grads(f, *inputs, order=2, rtol=rtol, atol=atol)
        step = "vmap against a loop"
        rng = np.random.default_rng(1)
        batch = [np.stack([x + 0.01 * k * rng.standard_normal(x.shape) for k in range(3)])
                 for x in inputs]
        axes = []
        for i, b in enumerate(batch):
            choice = 0 if data is None else data.draw(st.sampled_from(
                [0, -1, None] if i else [0, -1]), label=f"in_axes[{i}]")
            axes.append(choice)
        args = [inputs[i] if ax is None else np.moveaxis(b, 0, ax)
                for i, (b, ax) in enumerate(zip(batch, axes))]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", rune.PerformanceWarning)
            check_vmap(f, *args, in_axes=tuple(axes), rtol=1e-9, atol=1e-9 * BOUND)
            step = "vmap(grad) against a loop"
            w = rng.standard_normal(np.shape(f(*inputs)))
            g = rune.grad(lambda *xs: np.sum(f(*xs) * w), argnums=tuple(range(len(inputs))))
            check_vmap(g, *args, in_axes=tuple(axes), rtol=1e-8, atol=1e-8 * BOUND)
        step = "inputs unchanged"
        for x, b in zip(inputs, before):
            np.testing.assert_array_equal(x, b)
    except Exception as e:
        raise Disagreement(f"{step}: {type(e).__name__}: {_first_lines(str(e))}\n\n"
                           f"{p.source}\ninputs = {_inputs_source(p.inputs)}") from e


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


def fails_the_same(p, sig):
    try:
        check_program(p)
    except Disagreement as e:
        return signature(e) == sig
    except Exception:                # the reduced source is not a valid program
        return False
    return False


def minimize(p, sig):
    """Delete statements (and move the result earlier) while the program fails as ``sig``."""
    lines, result = list(p.lines), p.result
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(lines))):
            trial = lines[:i] + lines[i + 1:]
            for res in _results(trial, result):
                q = Program.from_source(p.inputs, trial, res, p.functions)
                if q is not None and fails_the_same(q, sig):
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
            if q is not None and fails_the_same(q, sig):
                inputs, lines, result = q.inputs, q.lines, q.result
    return Program.from_source(inputs, lines, result, p.functions)


def _results(lines, result):
    names = [ln.split(" ", 1)[0] for ln in lines]
    return [result] + [n for n in reversed(names) if n.isidentifier() and n != result]
