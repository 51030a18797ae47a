"""A random program (``programs.py`` draws them): its source, its concrete values while it
is built, the safe domains its operations keep to, and the known limits it may skip."""

import re
import warnings

import numpy as np

import rune

GAP = 0.05          # distance kept from kinks and ties (max, sort, abs, maximum, clip, where)
DOMAIN = 0.2        # distance kept from singular points (log, sqrt, 1/x, power)
BOUND = 50.0        # largest magnitude of any intermediate value
MAX_SIZE = 24       # largest number of elements of any value
EPS = 1e-6          # check_grads' central-difference step in float64 (its default)

# Known limits, switched off so that the bounded run in the suite passes; each has a
# strict xfail test with its minimal program in test_random_programs.py, and `make fuzz`
# can switch it back on (tests/fuzz.py --all) to see whether it still fails.
KNOWN = {
    # a traced value written into a plain buffer made inside the function (np.zeros(shape)
    # then buf[...] = x, or out=buf): supported since issue 25's buffers (rune.buffers)
    "write_into_plain_buffer": True,
    # ... but a plain result of NumPy arithmetic on such arrays (c ** 3) is NumPy's own new
    # array, not a buffer: a traced write into it is refused (docs/sharp-bits.md: write into
    # np.array(result) instead)
    "write_into_plain_result": False,
    # x[..., None], x[()] and x[...] = v on a 0-d traced value: 0-d tracers are not
    # subscriptable (core.ArrayMixin gives sequence behaviour to rank >= 1 only).
    "index_0d": False,
    # a write of a batched value into the result of rune.checkpoint(g)(a), or a value
    # computed from it, under vmap when a is not batched: rune.checkpoint returns a plain
    # array there (TracerConversionError, OutRefusedError); without checkpoint it works.
    "write_checkpoint_output": False,
    # a write into a view (expand_dims, reshape, [None], ...) of a 0-d value NumPy holds as
    # a scalar (np.sum(x), x0 * 1.0 on 0-d x0): NumPy's "view" is a fresh array, rune's
    # reaches the scalar (silently wrong value).
    "view_of_scalar_write": False,
    # under vmap, a write into an array with a live reshape of it whose layout rune cannot
    # know (C or F order per example): refused with a clear NotImplementedError
    # (docs/shape-and-indexing.md), not a wrong value; the checker counts it apart
    "vmap_reshape_layout": False,
}


class Program:
    """Source lines of ``f`` and, alongside, the concrete values its statements produced."""

    def __init__(self, inputs, functions=None):
        self.inputs = [np.array(x) for x in inputs]
        self.args = [f"x{i}" for i in range(len(inputs))]
        self.functions = dict(functions or {})     # names besides np the source may call
        self.env = {"np": np, "rune": rune, **self.functions}
        self.env.update({a: np.array(x) for a, x in zip(self.args, inputs)})
        self.lines = []
        self.result = self.args[-1]
        self.n = 0
        self.no_write = set()            # names a write into would meet a known limit
        self.plain = set()               # names computed from no input (plain arrays)

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
        ns = {"np": np, "rune": rune, **self.functions}
        exec(compile(self.source, "<random program>", "exec"), ns)
        return ns["f"]

    def names(self):
        """Every float array the program holds now (inputs first)."""
        return [k for k in self.env
                if k not in ("np", "rune") and k not in self.functions
                and not k.startswith("__")]

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
            if any(np.may_share_memory(v, self.env[a]) for a in self.args):
                continue
            if k in self.no_write:
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
        used = set(re.findall(r"\b[vx]\d+\b", expr))
        if used & self.no_write:
            self.no_write.add(name)
        if set(re.findall(r"\b[vxc]\d+\b", expr)) <= self.plain:     # from no input
            self.plain.add(name)
            if not KNOWN["write_into_plain_result"]:
                self.no_write.add(name)
        if not KNOWN["write_checkpoint_output"] and expr.startswith("rune.checkpoint"):
            self.no_write.add(name)
        if not KNOWN["view_of_scalar_write"] and isinstance(val, np.ndarray) and any(
                isinstance(self.env[u], np.generic) for u in used):
            self.no_write.add(name)
        self.env[name] = val
        self.lines.append(f"{name} = {expr}")
        self.result = name
        return name

    def try_statement(self, lines, result):
        """Run statements that write into existing values (all or nothing); keep them if every
        value stays finite and bounded."""
        saved = {k: (v.copy() if isinstance(v, np.ndarray) and v.flags.writeable else v)
                 for k, v in self.env.items()}   # (a read-only view stays that view)
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
