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

The checks every program must pass are in ``program_checks.py``.
"""

import itertools

import numpy as np
from hypothesis import strategies as st


from program_model import (  # noqa: F401  (re-exported for fuzz.py and the checks)
    BOUND, DOMAIN, EPS, GAP, KNOWN, MAX_SIZE, Program, _bshape, _gap, _min_abs, _ok, _sort_gap)


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
        a = _pick(draw, p, [k for k in p.names() if k not in p.no_write])
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


def op_plain_buffer(draw, p):
    """A plain array made inside the function, used, then written into (issue 24: what the
    tape keeps never changes); with ``write_into_plain_buffer``, a traced value written into
    a plain buffer (issue 25)."""
    a = _pick(draw, p)
    sh = _shape(p, a)
    p.n += 1
    c, v = f"c{p.n}", f"v{p.n}"
    value = draw(st.sampled_from(["0.7", "-1.3"]))
    make = draw(st.sampled_from([f"np.full({sh!r}, {value})",
                                 f"np.linspace(0.5, 1.5, {int(np.prod(sh))}).reshape({sh!r})"]))
    kind = draw(st.sampled_from(["reuse", "out", "setitem"] if KNOWN["write_into_plain_buffer"]
                                else ["reuse"]))
    if kind == "reuse":         # used, then overwritten: the recorded use must not change
        lines = [f"{c} = {make}", f"{v} = {a} * {c}", f"{c}[...] = 2.5"]
    elif kind == "out":         # a ufunc writing a traced result into the plain buffer
        lines = [f"{c} = {make}", f"np.multiply({a}, {c}, out={c})", f"{v} = {c} + 0.0"]
    else:                       # a traced value written into part of the plain buffer
        lines = [f"{c} = {make}", f"{c}[...] = {a} * 1.5", f"{v} = {c} * 2.0"]
    if not p.try_statement(lines, v):
        p.n -= 1
        return False
    p.plain.add(c)
    if not KNOWN["write_into_plain_buffer"]:
        p.no_write.add(c)       # (later writes of traced values into it: issue 25)
    if a in p.plain:    # only plain values in: c stays NumPy's, and so is v (its result)
        p.plain.add(v)
        if not KNOWN["write_into_plain_result"]:
            p.no_write.add(v)
    return True


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


LINALG = {   # template on a square matrix {a} (and a vector or matrix {b}), guard
    "inv": ("np.linalg.inv({a})", None),
    "det": ("np.linalg.det({a})", None),
    "slogdet": ("np.linalg.slogdet({a})[1]", None),
    "solve": ("np.linalg.solve({a}, {b})", None),
    "eigvalsh": ("np.linalg.eigh({a} + {a}.T)[0]",
                 lambda m: _sort_gap(np.linalg.eigvalsh(m + m.T), 0) > 0.1),
    "svdvals": ("np.linalg.svd({a}, compute_uv=False)",
                lambda m: _sort_gap(np.linalg.svd(m, compute_uv=False), 0) > 0.1
                and np.min(np.linalg.svd(m, compute_uv=False)) > 0.1),
    "cholesky": ("np.linalg.cholesky({a} @ {a}.T + np.eye({n}))", None),
    "trace": ("np.trace({a})", None),
    "outer": ("np.outer({a}, {b})", None),
}


def op_linalg(draw, p):
    """A linear-algebra function of a well-conditioned square matrix (condition number below
    30, so derivatives and their finite differences stay accurate)."""
    square = [k for k in p.names()
              if np.ndim(p.env[k]) == 2 and _shape(p, k)[0] == _shape(p, k)[1]]
    a = _pick(draw, p, square)
    if a is None:
        return False
    m = p.env[a]
    n = m.shape[0]
    if np.linalg.cond(m) > 30:
        return False
    name = draw(st.sampled_from(sorted(LINALG)))
    tmpl, guard = LINALG[name]
    if guard is not None and not guard(m):
        return False
    rhs = [k for k in p.names() if np.ndim(p.env[k]) in (1, 2) and _shape(p, k)[0] == n]
    b = _pick(draw, p, rhs) if name in ("solve", "outer") else None
    if name in ("solve", "outer") and b is None:
        return False
    return p.try_assign(tmpl.format(a=a, b=b, n=n)) is not None


def op_branch(draw, p):
    """Python control flow on a traced value (a branch on a batched value under vmap runs
    once per example); the condition is at least 0.5 away from its threshold."""
    c = _pick(draw, p)
    s = float(np.sum(p.env[c]))
    thr = draw(st.sampled_from([0.0, 1.0, -1.0]))
    if abs(s - thr) < 0.5:
        return False
    a = _pick(draw, p)
    b_ = [k for k in p.names() if _bshape(_shape(p, a), _shape(p, k)) is not None]
    b = _pick(draw, p, b_)
    name = p.try_assign(f"{a} * {b} if np.sum({c}) > {thr} else np.sin({a}) - {b}")
    if name is not None and {a, b} <= p.plain:  # the condition only selects: a plain result
        p.plain.add(name)
        if not KNOWN["write_into_plain_result"]:
            p.no_write.add(name)
    return name is not None


def op_checkpoint(draw, p):
    """A block under rune.checkpoint (recomputed in the backward pass)."""
    a = _pick(draw, p)
    body = draw(st.sampled_from(["np.sin(t) * t", "np.tanh(t).sum() * t", "np.cumsum(t) + t[...]",
                                 "t * t[::-1]"]))
    if np.ndim(p.env[a]) == 0 and ("[" in body or "cumsum" in body):
        return False
    return p.try_assign(f"rune.checkpoint(lambda t: {body})({a})") is not None


def op_method(draw, p):
    """NumPy methods on arrays (x.mean(0), x.clip(...), x.dot(y), x.swapaxes(...), ...)."""
    a = _pick(draw, p)
    v = p.env[a]
    nd = np.ndim(v)
    if a in p.plain:    # a plain array's method with a traced argument (c.dot(x)) is NumPy's
        return False    # C code, which no protocol reaches (docs/sharp-bits.md)
    kind = draw(st.sampled_from(["mean", "prod", "cumsum", "clip", "dot", "reshape", "swapaxes",
                                 "squeeze", "std", "min", "flatten", "ptp", "keywords"]))
    if kind == "keywords":      # NumPy's keywords on the method forms (issue 24)
        call = draw(st.sampled_from([f"{a}.reshape(-1, order='F')", f"{a}.flatten('F')",
                                     f"{a}.ravel(order='F')",
                                     f"{a}.sum(axis=0, keepdims=True)" if nd else f"{a}.sum()",
                                     f"{a}.astype(np.float64, casting='same_kind')",
                                     f"{a}.copy(order='F')"]))
        return p.try_assign(call) is not None
    if kind in ("mean", "cumsum", "flatten", "reshape", "squeeze"):
        arg = {"mean": f"axis={_axis(draw, nd, multi=False)}" if nd else "",
               "cumsum": "", "flatten": "", "reshape": "-1", "squeeze": ""}[kind]
        return p.try_assign(f"{a}.{kind}({arg})") is not None
    if kind == "prod" and np.max(np.abs(v), initial=0) < 3:
        return p.try_assign(f"{a}.prod()") is not None
    if kind == "clip":
        if min(_min_abs(v - 0.3), _min_abs(v + 0.7)) < GAP:
            return False
        return p.try_assign(f"{a}.clip(-0.7, 0.3)") is not None
    if kind in ("std", "min", "ptp") and np.size(v) > 1:
        if kind == "std" and np.std(v) < 0.1:
            return False
        if kind in ("min", "ptp") and _gap(v, None) < GAP:
            return False
        call = f"np.ptp({a})" if kind == "ptp" else f"{a}.{kind}()"
        return p.try_assign(call) is not None
    if kind == "swapaxes" and nd >= 2:
        return p.try_assign(f"{a}.swapaxes(0, -1)") is not None
    if kind == "dot" and nd:
        fits = [k for k in p.names() if np.ndim(p.env[k]) == 1 and _shape(p, k)[0] == v.shape[-1]]
        b = _pick(draw, p, fits)
        return b is not None and p.try_assign(f"{a}.dot({b})") is not None
    return False


OPS = [op_unary, op_binary, op_reduce, op_shape, op_index, op_write, op_contract, op_method,
       op_unary, op_binary, op_shape, op_write, op_linalg, op_branch, op_checkpoint,
       op_plain_buffer]


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
