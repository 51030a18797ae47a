"""The benchmark table's data: one :class:`Row` per measured figure, the :class:`Bench`
that collects them, the frameworks and their labels (shared by ``adapters.py``,
``report.py`` and ``run.py``)."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

import harness
from harness import measure, peak_memory

import numpy as np


FRAMEWORKS = ("rune", "autograd", "jax", "jax-jit", "torch")
LABELS = {"rune": "rune", "autograd": "autograd", "jax": "JAX op-by-op",
          "jax-jit": "JAX jit", "torch": "torch"}
PEERS = FRAMEWORKS[1:]


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

@dataclass
class Row:
    workload: str
    measure: str
    unit: str                    # "µs/op", "ms", "MB" or "×" (a ratio of other rows)
    scale: float = 1e3           # seconds (or bytes) -> unit
    cells: dict = field(default_factory=dict)   # framework -> Timing, float or note str
    results: dict = field(default_factory=dict)  # framework -> flattened leaves (cross-check)
    fwd: "Row | None" = None     # the workload's forward row, for rune ÷ forward
    target: str = ""
    limit: "float | None" = None  # SPEC's target as data (rows cross processes, no lambdas):
    limit_kind: str = "abs"       # "abs": rune ≤ limit; "fwd": rune ≤ limit × forward;
                                  # "min": rune ≥ limit
    not_above: "str | None" = None   # and rune ≤ this peer's median
    peer_factor: "tuple | None" = None  # (peer, f): and rune ≤ f × that peer's median
    rtol: float = 1e-6           # cross-check tolerance (relative to the largest value)
    ratio_of: "tuple | None" = None   # (numerator row key, denominator row key)

    @property
    def key(self):
        return (self.workload, self.measure)

    def met(self):
        v = self.median("rune")
        if v is None or self.limit is None:
            return None
        if self.limit_kind == "min":
            ok = v >= self.limit
        elif self.limit_kind == "fwd":
            f = self.fwd.median("rune") if self.fwd is not None else None
            if not f:
                return None
            ok = v <= self.limit * f
        else:
            ok = v <= self.limit
        p = self.median(self.not_above) if self.not_above else None
        if self.peer_factor is not None:
            q = self.median(self.peer_factor[0])
            if q is None:
                return None
            ok = ok and v <= self.peer_factor[1] * q
        return ok and (p is None or v <= p)

    def median(self, fw):
        c = self.cells.get(fw)
        if isinstance(c, harness.Timing):
            return c.median * self.scale
        if isinstance(c, (int, float)):
            return float(c) * self.scale
        return None

    def minimum(self, fw):
        c = self.cells.get(fw)
        return c.min * self.scale if isinstance(c, harness.Timing) else None


def fmt(v):
    if v is None:
        return ""
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


class Bench:
    """The rows of one process; ``active`` are the frameworks this process measures."""

    def __init__(self, args, peers, active):
        self.args = args
        self.peers = peers
        self.active = set(active)
        self.status = {}             # framework group -> note for its empty cells (parent)
        self.rows: list[Row] = []
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.compile_times: list[tuple[str, float]] = []
        self.checks: list[str] = []

    def row(self, workload, measure_name, unit="ms", scale=1e3, **kw):
        r = Row(workload, measure_name, unit, scale, **kw)
        self.rows.append(r)
        return r

    @property
    def rune(self):
        """The rune module, imported only in the process that measures rune."""
        if "rune" not in self.active:
            return None
        import rune
        return rune

    def have(self, fw):
        base = "jax" if fw == "jax-jit" else fw
        return fw in self.active and (fw == "rune" or base in self.peers)

    def cell(self, row, fw, *, time_it=True):
        """Decorator: build the thunk, time it, record the result or the failure."""
        def deco(build):
            if not self.have(fw):
                return build
            try:
                thunk = build()
                if isinstance(thunk, str):               # a reason for not measuring
                    row.cells[fw] = thunk
                    return build
                t = measure(thunk, budget=self.args.budget)
                row.cells[fw] = t
                row.results[fw] = leaves(t.result)
                t.result = None           # the leaves cross the process boundary, not tensors
            except Exception as e:                       # noqa: BLE001 - recorded, run goes on
                row.cells[fw] = f"FAIL ({type(e).__name__})"
                tb = traceback.format_exc(limit=-6)
                self.failures.append(f"**{row.workload} {row.measure}, {LABELS[fw]}**: "
                                     f"`{type(e).__name__}: {str(e)[:300]}`\n\n"
                                     f"```\n{tb.strip()}\n```")
            return build
        return deco

    def memory(self, row, fw, fn):
        if not self.have(fw):
            return
        try:
            row.cells[fw] = float(peak_memory(fn))
        except Exception as e:                           # noqa: BLE001
            row.cells[fw] = f"FAIL ({type(e).__name__})"
            self.failures.append(f"**{row.workload} {row.measure}, {LABELS[fw]}**: "
                                 f"`{type(e).__name__}: {e}`\n\n```\n"
                                 f"{traceback.format_exc(limit=-6).strip()}\n```")

    def ratio_row(self, workload, name, num, den, **kw):
        """A row of per-framework ratios num / den (medians), recomputed after merging."""
        r = self.row(workload, name, "×", 1.0, ratio_of=(num.key, den.key), **kw)
        fill_ratio(r, num, den)
        return r

    def compile(self, row, f, *args):
        """``f`` compiled by jax.jit for ``args``; the compile time is recorded apart."""
        jax = self.peers["jax"]
        t0 = time.perf_counter()
        compiled = jax.jit(f).lower(*args).compile()
        self.compile_times.append((f"{row.workload} {row.measure}", time.perf_counter() - t0))
        return compiled

    def jit(self, row, f, *args):
        """A call of ``f`` compiled by jax.jit (compile timed apart), synchronised."""
        jax = self.peers["jax"]
        compiled = self.compile(row, f, *args)
        return lambda: jax.block_until_ready(compiled(*args))


def fill_ratio(r, num, den):
    for fw in FRAMEWORKS:
        a, b = num.median(fw), den.median(fw)
        if a is not None and b:
            r.cells[fw] = a / b


def leaves(x):
    """Flatten a result of any framework into a list of float64 NumPy arrays."""
    from dataclasses import fields, is_dataclass
    out = []

    def walk(v):
        if is_dataclass(v) and not isinstance(v, type):
            for f in fields(v):
                walk(getattr(v, f.name))
        elif isinstance(v, dict):
            for k in v:
                walk(v[k])
        elif isinstance(v, (tuple, list)):
            for e in v:
                walk(e)
        elif v is None:
            pass
        else:
            if hasattr(v, "detach"):                    # torch
                v = v.detach().cpu().numpy()
            out.append(np.asarray(v, dtype=np.float64))
    walk(x)
    return out


# The frameworks measured in one worker process each (run.py --worker)
GROUPS = {"rune": ("rune",), "autograd": ("autograd",), "jax": ("jax", "jax-jit"),
          "torch": ("torch",)}
GROUP_OF = {fw: g for g, fws in GROUPS.items() for fw in fws}
