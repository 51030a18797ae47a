"""rune's benchmark suite: the workloads of SPEC section 5, side by side with the peers.

    python benchmarks/run.py                   # everything; `make bench` runs this
    python benchmarks/run.py --only W1,W4      # some workloads
    python benchmarks/run.py --only FFT        # issue 12's FFT convolution
    python benchmarks/run.py --budget 0.1      # quicker, noisier
    python benchmarks/run.py --threads 1       # one thread everywhere: steadier when busy

Each workload is written once in plain NumPy (``workloads.py``) and in each
peer's idiom: HIPS autograd, JAX op-by-op and under ``jax.jit`` (compile time
excluded from the figure and reported apart), PyTorch eager (``torch.autograd``
for reverse mode, ``torch.func`` for vmap, hvp and hessian).  A peer that is
not installed is skipped with a note.  A rune failure is recorded in its cell
and described under "Failures"; the run goes on.  Each framework runs in a
process of its own (this file with ``--worker``), so that no runtime's threads
(OpenMP's, XLA's pool, OpenBLAS's spinning workers) waits on another's.  On a
busy machine, two-thread runtimes stall on descheduled threads (torch.func's vmap
was seen 100x slower than alone): check the load average in the header, and
prefer ``--threads 1`` there.

The result is one markdown table (median per call, minimum in brackets, rune's
ratio to each peer, SPEC's target and whether rune meets it), printed and
written to ``benchmarks/results/<date>-<host>.md`` with the machine's
description.  Every result is also cross-checked against the peers' so that a
fast wrong answer does not pass unnoticed.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import pickle
import re
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import harness
from harness import measure, peak_memory

import numpy as np

import workloads as w

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


# --------------------------------------------------------------------------
# The peers
# --------------------------------------------------------------------------

def load_peers(only, notes):
    peers = {}
    versions = {}
    if "autograd" in only:
        try:
            import autograd
            import autograd.numpy as anp
            peers["autograd"] = autograd
            peers["anp"] = anp
            versions["HIPS autograd"] = importlib.metadata.version("autograd")
        except ImportError as e:
            notes.append(f"HIPS autograd is not installed ({e}): its columns are skipped "
                         "(`pip install autograd`).")
    if "jax" in only or "jax-jit" in only:
        try:
            import jax
            jax.config.update("jax_enable_x64", True)    # W1, W3-W5 are float64
            import jax.numpy as jnp
            peers["jax"] = jax
            peers["jnp"] = jnp
            for cls, names in ((w.MLP, ["w1", "b1", "w2", "b2", "w3", "b3"]),
                               (w.SmallMLP, ["w1", "b1", "w2", "b2"])):
                jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])
            versions["JAX"] = (f"jax {jax.__version__}, jaxlib "
                               f"{importlib.metadata.version('jaxlib')}, devices "
                               f"{[d.platform for d in jax.devices()]}, x64 enabled")
        except ImportError as e:
            notes.append(f"JAX is not installed ({e}): its columns are skipped "
                         "(`pip install jax jaxlib`).")
    if "torch" in only:
        try:
            import torch
            import torch.func  # noqa: F401
            import torch.utils.checkpoint  # noqa: F401
            peers["torch"] = torch
            versions["PyTorch"] = (f"torch {torch.__version__}, "
                                   f"{torch.get_num_threads()} intra-op threads")
        except ImportError as e:
            notes.append(f"PyTorch is not installed ({e}): its column is skipped "
                         "(`pip install torch==2.13.0`).")
    return peers, versions


# --------------------------------------------------------------------------
# The workloads
# --------------------------------------------------------------------------

def bench_w1(b, d):
    rune = b.rune
    P = b.peers
    x = d["W1"]["x"]
    per_op = 1e6 / w.W1_OPS
    fwd = b.row("W1", f"forward of a {w.W1_OPS}-op elementwise chain, 16 float64",
                "µs/op", per_op)
    grad = b.row("W1", "grad of the chain", "µs/op", per_op, fwd=fwd,
                 target="≤ 4.5 µs/op", limit=4.5, rtol=1e-9)

    # rune's column on forward rows is plain NumPy, with rune imported.
    b.cell(fwd, "rune")(lambda: lambda: w.chain(x))
    b.cell(grad, "rune")(lambda: (lambda g: lambda: g(x))(rune.grad(w.chain)))

    if "autograd" in P:
        ag, anp = P["autograd"], P["anp"]
        b.cell(fwd, "autograd")(lambda: lambda: w.chain(x, anp))
        b.cell(grad, "autograd")(lambda: (lambda g: lambda: g(x))(
            ag.grad(lambda x: w.chain(x, anp))))
    if "jax" in P:
        jax, jnp = P["jax"], P["jnp"]
        xj = jnp.asarray(x)
        f = lambda x: w.chain(x, jnp)        # noqa: E731
        gj = jax.grad(f)
        b.cell(fwd, "jax")(lambda: lambda: jax.block_until_ready(f(xj)))
        b.cell(grad, "jax")(lambda: lambda: jax.block_until_ready(gj(xj)))
        b.cell(fwd, "jax-jit")(lambda: b.jit(fwd, f, xj))
        b.cell(grad, "jax-jit")(lambda: b.jit(grad, gj, xj))
    if "torch" in P:
        torch = P["torch"]
        xt = torch.tensor(x)

        def t_fwd():
            with torch.no_grad():
                return w.torch_chain(xt)

        def t_grad():
            xg = xt.detach().requires_grad_(True)
            return torch.autograd.grad(w.torch_chain(xg), xg)[0]
        b.cell(fwd, "torch")(lambda: t_fwd)
        b.cell(grad, "torch")(lambda: t_grad)


def bench_w2(b, d):
    rune = b.rune
    P = b.peers
    D = d["W2"]
    p, x, y = D["p"], D["x"], D["y"]
    fwd = b.row("W2", "MLP 784-512-512-10, batch 256, float32: forward", rtol=1e-4)
    vg = b.row("W2", "value_and_grad", fwd=fwd, rtol=1e-3, target="≤ torch, ≤ 2.6× forward",
               limit=2.6, limit_kind="fwd", not_above="torch")

    b.cell(fwd, "rune")(lambda: lambda: w.mlp_loss(p, x, y))
    b.cell(vg, "rune")(lambda: (lambda g: lambda: g(p, x, y))(rune.value_and_grad(w.mlp_loss)))

    if "autograd" in P:
        ag, anp = P["autograd"], P["anp"]
        pt = w.as_tuple(p)
        f = lambda pt: w.mlp_loss_fields(*pt, x, y, anp)     # noqa: E731
        b.cell(fwd, "autograd")(lambda: lambda: f(pt))
        b.cell(vg, "autograd")(lambda: (lambda g: lambda: g(pt))(ag.value_and_grad(f)))
    if "jax" in P:
        jax, jnp = P["jax"], P["jnp"]
        pj = jax.tree_util.tree_map(jnp.asarray, p)
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        f = lambda p, x, y: w.mlp_loss(p, x, y, jnp)      # noqa: E731
        g = jax.value_and_grad(f)
        b.cell(fwd, "jax")(lambda: lambda: jax.block_until_ready(f(pj, xj, yj)))
        b.cell(vg, "jax")(lambda: lambda: jax.block_until_ready(g(pj, xj, yj)))
        b.cell(fwd, "jax-jit")(lambda: b.jit(fwd, f, pj, xj, yj))
        b.cell(vg, "jax-jit")(lambda: b.jit(vg, g, pj, xj, yj))
    if "torch" in P:
        torch = P["torch"]
        pt = {k: torch.tensor(v, requires_grad=True) for k, v in w.as_dict(p).items()}
        xt, yt = torch.tensor(x), torch.tensor(y)

        def t_fwd():
            with torch.no_grad():
                return w.torch_mlp_loss(pt, xt, yt)

        def t_vg():
            loss = w.torch_mlp_loss(pt, xt, yt)
            return loss, torch.autograd.grad(loss, list(pt.values()))
        b.cell(fwd, "torch")(lambda: t_fwd)
        b.cell(vg, "torch")(lambda: t_vg)


def bench_w3(b, d):
    rune = b.rune
    P = b.peers
    D = d["W3"]
    p, x, y = D["p"], D["x"], D["y"]
    xs, ys = list(x), list(y)
    fwd = b.row("W3", "MLP 64-32-10, batch 128: forward (mean loss)")
    vm = b.row("W3", "per-example grads: vmap(grad)", fwd=fwd,
               target="≤ 1.0 ms, ≤ 0.8× torch.func", limit=1.0, peer_factor=("torch", 0.8))
    loop = b.row("W3", "per-example grads: Python loop of grad", fwd=fwd)
    batched = b.row("W3", "one grad of the mean loss", fwd=fwd)

    b.cell(fwd, "rune")(lambda: lambda: w.batch_loss(p, x, y))
    b.cell(vm, "rune")(lambda: (lambda g: lambda: g(p, x, y))(
        rune.vmap(rune.grad(w.example_loss), in_axes=(None, 0, 0))))
    b.cell(loop, "rune")(lambda: (lambda g: lambda: [g(p, a, c) for a, c in zip(xs, ys)])(
        rune.grad(w.example_loss)))
    b.cell(batched, "rune")(lambda: (lambda g: lambda: g(p, x, y))(rune.grad(w.batch_loss)))

    if "autograd" in P:
        ag, anp = P["autograd"], P["anp"]
        pt = w.as_tuple(p)
        ex = lambda pt, a, c: w.small_losses_fields(*pt, a, c, anp)            # noqa: E731
        bl = lambda pt, a, c: anp.mean(w.small_losses_fields(*pt, a, c, anp))  # noqa: E731
        b.cell(fwd, "autograd")(lambda: lambda: bl(pt, x, y))
        vm.cells["autograd"] = "no vmap"
        b.cell(loop, "autograd")(lambda: (lambda g: lambda: [g(pt, a, c) for a, c in zip(xs, ys)])(
            ag.grad(ex)))
        b.cell(batched, "autograd")(lambda: (lambda g: lambda: g(pt, x, y))(ag.grad(bl)))
    if "jax" in P:
        jax, jnp = P["jax"], P["jnp"]
        pj = jax.tree_util.tree_map(jnp.asarray, p)
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        xsj, ysj = list(xj), list(yj)
        ex = lambda p, a, c: w.example_loss(p, a, c, jnp)   # noqa: E731
        bl = lambda p, a, c: w.batch_loss(p, a, c, jnp)     # noqa: E731
        pe = jax.vmap(jax.grad(ex), in_axes=(None, 0, 0))
        ge, gb = jax.grad(ex), jax.grad(bl)
        sync = jax.block_until_ready
        b.cell(fwd, "jax")(lambda: lambda: sync(bl(pj, xj, yj)))
        b.cell(vm, "jax")(lambda: lambda: sync(pe(pj, xj, yj)))
        b.cell(loop, "jax")(lambda: lambda: sync([ge(pj, a, c) for a, c in zip(xsj, ysj)]))
        b.cell(batched, "jax")(lambda: lambda: sync(gb(pj, xj, yj)))
        b.cell(fwd, "jax-jit")(lambda: b.jit(fwd, bl, pj, xj, yj))
        b.cell(vm, "jax-jit")(lambda: b.jit(vm, pe, pj, xj, yj))

        def jit_loop():
            compiled = b.compile(loop, ge, pj, xsj[0], ysj[0])   # one example's shapes
            return lambda: sync([compiled(pj, a, c) for a, c in zip(xsj, ysj)])
        b.cell(loop, "jax-jit")(jit_loop)
        b.cell(batched, "jax-jit")(lambda: b.jit(batched, gb, pj, xj, yj))
    if "torch" in P:
        torch = P["torch"]
        from torch.func import grad as tgrad, vmap as tvmap
        pt = {k: torch.tensor(v, requires_grad=True) for k, v in w.as_dict(p).items()}
        pf = {k: v.detach() for k, v in pt.items()}
        xt, yt = torch.tensor(x), torch.tensor(y)
        xst, yst = list(xt), list(yt)
        params = list(pt.values())
        pe = tvmap(tgrad(w.torch_small_losses), in_dims=(None, 0, 0))

        def t_fwd():
            with torch.no_grad():
                return torch.mean(w.torch_small_losses(pt, xt, yt))

        def t_loop():
            return [torch.autograd.grad(w.torch_small_losses(pt, a, c), params)
                    for a, c in zip(xst, yst)]

        def t_batched():
            return torch.autograd.grad(torch.mean(w.torch_small_losses(pt, xt, yt)), params)
        b.cell(fwd, "torch")(lambda: t_fwd)
        b.cell(vm, "torch")(lambda: lambda: pe(pf, xt, yt))
        b.cell(loop, "torch")(lambda: t_loop)
        b.cell(batched, "torch")(lambda: t_batched)


def bench_w4(b, d):
    rune = b.rune
    P = b.peers
    D = d["W4"]
    A, x, v = D["A"], D["x"], D["v"]
    fwd = b.row("W4", "sum(tanh(A @ x)**2), A 500x500 float64: forward")
    hvp = b.row("W4", "hvp (forward-over-reverse)", fwd=fwd, target="≤ 0.4 ms", limit=0.4)
    grad = b.row("W4", "grad", fwd=fwd)
    f = lambda x: w.tanh_quadratic(x, A)   # noqa: E731

    b.cell(fwd, "rune")(lambda: lambda: f(x))
    # rune.hvp and jvp-of-grad give (grad, hvp) from one pass; the cross-check takes the hvp
    b.cell(hvp, "rune")(lambda: lambda: rune.hvp(f, (x,), (v,))[1])
    b.cell(grad, "rune")(lambda: (lambda g: lambda: g(x))(rune.grad(f)))

    if "autograd" in P:
        ag, anp = P["autograd"], P["anp"]
        fa = lambda x: w.tanh_quadratic(x, A, anp)   # noqa: E731
        b.cell(fwd, "autograd")(lambda: lambda: fa(x))
        # autograd's own hvp (reverse-over-reverse: it has no forward mode over grad)
        b.cell(hvp, "autograd")(lambda: (lambda h: lambda: h(x, v))(
            ag.hessian_vector_product(fa)))
        b.cell(grad, "autograd")(lambda: (lambda g: lambda: g(x))(ag.grad(fa)))
    if "jax" in P:
        jax, jnp = P["jax"], P["jnp"]
        Aj, xj, vj = jnp.asarray(A), jnp.asarray(x), jnp.asarray(v)
        fj = lambda x: w.tanh_quadratic(x, Aj, jnp)   # noqa: E731
        gj = jax.grad(fj)
        hj = lambda x, v: jax.jvp(gj, (x,), (v,))   # noqa: E731
        sync = jax.block_until_ready
        b.cell(fwd, "jax")(lambda: lambda: sync(fj(xj)))
        b.cell(hvp, "jax")(lambda: lambda: sync(hj(xj, vj))[1])
        b.cell(grad, "jax")(lambda: lambda: sync(gj(xj)))
        b.cell(fwd, "jax-jit")(lambda: b.jit(fwd, fj, xj))
        b.cell(hvp, "jax-jit")(lambda: (lambda c: lambda: c()[1])(b.jit(hvp, hj, xj, vj)))
        b.cell(grad, "jax-jit")(lambda: b.jit(grad, gj, xj))
    if "torch" in P:
        torch = P["torch"]
        from torch.func import grad as tgrad, jvp as tjvp
        At, xt, vt = torch.tensor(A), torch.tensor(x), torch.tensor(v)
        ft = lambda x: w.torch_tanh_quadratic(x, At)   # noqa: E731
        gt = tgrad(ft)

        def t_fwd():
            with torch.no_grad():
                return ft(xt)

        def t_grad():
            xg = xt.detach().requires_grad_(True)
            return torch.autograd.grad(ft(xg), xg)[0]
        b.cell(fwd, "torch")(lambda: t_fwd)
        b.cell(hvp, "torch")(lambda: lambda: tjvp(gt, (xt,), (vt,))[1])
        b.cell(grad, "torch")(lambda: t_grad)
        # torch's other documented route, double backward, for the notes
        try:
            t = measure(lambda: torch.autograd.functional.hvp(ft, xt, vt), budget=b.args.budget)
            b.notes.append(f"W4: torch.autograd.functional.hvp (reverse-over-reverse) takes "
                           f"{fmt(t.median * 1e3)} ms (min {fmt(t.min * 1e3)}); the table's "
                           f"torch column uses torch.func.jvp(torch.func.grad(f)).")
        except Exception as e:        # noqa: BLE001
            b.notes.append(f"W4: torch.autograd.functional.hvp failed: {e!r}")
    b.ratio_row("W4", "hvp ÷ grad", hvp, grad)


def bench_w5(b, d):
    rune = b.rune
    P = b.peers
    D = d["W5"]
    X, y, wv = D["X"], D["y"], D["w"]
    fwd = b.row("W5", f"logistic loss, {w.W5_DIM} dims, {w.W5_SAMPLES} samples: forward")
    hes = b.row("W5", "hessian", fwd=fwd, target="≤ 3 ms", limit=3.0)
    f = lambda wv: w.logistic_loss(wv, X, y)   # noqa: E731

    b.cell(fwd, "rune")(lambda: lambda: f(wv))
    b.cell(hes, "rune")(lambda: (lambda h: lambda: h(wv))(rune.hessian(f)))
    if "autograd" in P:
        ag, anp = P["autograd"], P["anp"]
        fa = lambda wv: w.logistic_loss(wv, X, y, anp)   # noqa: E731
        b.cell(fwd, "autograd")(lambda: lambda: fa(wv))
        b.cell(hes, "autograd")(lambda: (lambda h: lambda: h(wv))(ag.hessian(fa)))
    if "jax" in P:
        jax, jnp = P["jax"], P["jnp"]
        Xj, yj, wj = jnp.asarray(X), jnp.asarray(y), jnp.asarray(wv)
        fj = lambda wv: w.logistic_loss(wv, Xj, yj, jnp)   # noqa: E731
        hj = jax.hessian(fj)
        b.cell(fwd, "jax")(lambda: lambda: jax.block_until_ready(fj(wj)))
        b.cell(hes, "jax")(lambda: lambda: jax.block_until_ready(hj(wj)))
        b.cell(fwd, "jax-jit")(lambda: b.jit(fwd, fj, wj))
        b.cell(hes, "jax-jit")(lambda: b.jit(hes, hj, wj))
    if "torch" in P:
        torch = P["torch"]
        from torch.func import hessian as thessian
        Xt, yt, wt = torch.tensor(X), torch.tensor(y), torch.tensor(wv)
        ft = lambda wv: w.torch_logistic_loss(wv, Xt, yt)   # noqa: E731
        ht = thessian(ft)

        def t_fwd():
            with torch.no_grad():
                return ft(wt)
        b.cell(fwd, "torch")(lambda: t_fwd)
        b.cell(hes, "torch")(lambda: lambda: ht(wt))
        try:
            t = measure(lambda: torch.autograd.functional.hessian(ft, wt), budget=b.args.budget)
            b.notes.append(f"W5: torch.autograd.functional.hessian takes {fmt(t.median * 1e3)} ms "
                           f"(min {fmt(t.min * 1e3)}); the table's torch column uses "
                           f"torch.func.hessian (jacfwd of jacrev, as rune and JAX).")
        except Exception as e:        # noqa: BLE001
            b.notes.append(f"W5: torch.autograd.functional.hessian failed: {e!r}")


def bench_w6(b, d):
    rune = b.rune
    P = b.peers
    D = d["W6"]
    W, x = D["W"], D["x"]
    n_seg = w.W6_DEPTH // w.W6_SEGMENT
    fwd = b.row("W6", f"{w.W6_DEPTH}-layer tanh(W @ x), W 256x256, x 256x64, float32: forward",
                rtol=1e-4)
    grad = b.row("W6", "grad (w.r.t. W and x)", fwd=fwd, target="≤ 2.5× forward", rtol=1e-3,
                limit=2.5, limit_kind="fwd")
    hand = b.row("W6", "grad written by hand in NumPy (the kernel floor; rune column)",
                 fwd=fwd, rtol=1e-3)
    ckpt = b.row("W6", f"grad, checkpoint every {w.W6_SEGMENT} layers", fwd=fwd, rtol=1e-3)
    mem = b.row("W6", "peak memory of grad (tracemalloc)", "MB", 1e-6, target="≤ 15 MB")
    mem_ck = b.row("W6", "peak memory of grad with checkpoint", "MB", 1e-6,
                   target="≤ 3.0 MB")
    has_ckpt = rune is not None and hasattr(rune, "checkpoint")
    both = (0, 1)

    b.cell(fwd, "rune")(lambda: lambda: w.deep_loss(W, x))
    b.cell(grad, "rune")(lambda: (lambda g: lambda: g(W, x))(rune.grad(w.deep_loss, both)))
    b.cell(hand, "rune")(lambda: lambda: w.deep_loss_grad_by_hand(W, x))
    b.memory(mem, "rune", lambda: rune.grad(w.deep_loss, both)(W, x))
    if has_ckpt:
        fc = lambda W, x: w.deep_loss_checkpointed(W, x, rune.checkpoint)   # noqa: E731
        b.cell(ckpt, "rune")(lambda: (lambda g: lambda: g(W, x))(rune.grad(fc, both)))
        b.memory(mem_ck, "rune", lambda: rune.grad(fc, both)(W, x))
    elif rune is not None:
        ckpt.cells["rune"] = mem_ck.cells["rune"] = "no rune.checkpoint"
        b.notes.append("W6: `rune.checkpoint` does not exist yet in this revision, so rune's "
                       "checkpoint rows are skipped.")

    if "autograd" in P:
        ag, anp = P["autograd"], P["anp"]
        fa = lambda W, x: w.deep_loss(W, x, anp)   # noqa: E731
        b.cell(fwd, "autograd")(lambda: lambda: fa(W, x))
        b.cell(grad, "autograd")(lambda: (lambda g: lambda: g(W, x))(ag.grad(fa, both)))
        b.memory(mem, "autograd", lambda: ag.grad(fa, both)(W, x))
        ckpt.cells["autograd"] = mem_ck.cells["autograd"] = "no checkpoint"
    if "jax" in P:
        jax, jnp = P["jax"], P["jnp"]
        Wj, xj = jnp.asarray(W), jnp.asarray(x)
        fj = lambda W, x: w.deep_loss(W, x, jnp)   # noqa: E731
        fcj = lambda W, x: w.deep_loss_checkpointed(W, x, jax.checkpoint, jnp)   # noqa: E731
        gj, gcj = jax.grad(fj, both), jax.grad(fcj, both)
        sync = jax.block_until_ready
        b.cell(fwd, "jax")(lambda: lambda: sync(fj(Wj, xj)))
        b.cell(grad, "jax")(lambda: lambda: sync(gj(Wj, xj)))
        b.cell(ckpt, "jax")(lambda: lambda: sync(gcj(Wj, xj)))
        b.cell(fwd, "jax-jit")(lambda: b.jit(fwd, fj, Wj, xj))
        b.cell(grad, "jax-jit")(lambda: b.jit(grad, gj, Wj, xj))
        b.cell(ckpt, "jax-jit")(lambda: b.jit(ckpt, gcj, Wj, xj))
        for r in (mem, mem_ck):
            r.cells["jax"] = r.cells["jax-jit"] = "not seen by tracemalloc"
    if "torch" in P:
        torch = P["torch"]
        from torch.utils.checkpoint import checkpoint as tckpt
        Wt, xt = torch.tensor(W), torch.tensor(x)

        def t_fwd():
            with torch.no_grad():
                return torch.sum(w.torch_deep_block(Wt, xt, w.W6_DEPTH))

        def t_grad(checkpointed):
            Wg, xg = Wt.detach().requires_grad_(True), xt.detach().requires_grad_(True)
            h = xg
            if checkpointed:
                seg = lambda W, h: w.torch_deep_block(W, h, w.W6_SEGMENT)   # noqa: E731
                for _ in range(n_seg):
                    h = tckpt(seg, Wg, h, use_reentrant=False)
            else:
                h = w.torch_deep_block(Wg, h, w.W6_DEPTH)
            return torch.autograd.grad(torch.sum(h), (Wg, xg))
        b.cell(fwd, "torch")(lambda: t_fwd)
        b.cell(grad, "torch")(lambda: lambda: t_grad(False))
        b.cell(ckpt, "torch")(lambda: lambda: t_grad(True))
        for r in (mem, mem_ck):
            r.cells["torch"] = "not seen by tracemalloc"

    b.ratio_row("W6", "grad ÷ forward", grad, fwd, target="≤ 2.5", limit=2.5)
    b.ratio_row("W6", "hand-written NumPy grad ÷ forward (the floor)", hand, fwd)
    b.ratio_row("W6", "rune's grad ÷ the hand-written one", grad, hand)
    b.ratio_row("W6", "checkpoint time ÷ grad time", ckpt, grad, target="≤ 1.6", limit=1.6)
    # Issue 14 retired SPEC's 6x ratio (it rewarded a worse baseline) for the absolute
    # memory targets above (benchmarks/memory_floor.py checks them).
    b.ratio_row("W6", "memory cut by checkpoint (no ckpt ÷ ckpt)", mem, mem_ck)


def bench_fft(b, d):
    """Issue 12: an FFT convolution of two 1e5-point signals, grad against the forward."""
    rune = b.rune
    D = w.fft_data()
    x, h = D["x"], D["h"]
    fwd = b.row("FFT", f"FFT convolution of 2 x {w.FFT_N:,} points (rfft/irfft of "
                       f"{w.FFT_PAD:,}), sum of squares: forward")
    grad = b.row("FFT", "grad (w.r.t. both signals)", fwd=fwd)
    b.cell(fwd, "rune")(lambda: lambda: w.fft_convolution_loss(x, h))
    b.cell(grad, "rune")(lambda: (lambda g: lambda: g(x, h))(
        rune.grad(w.fft_convolution_loss, argnums=(0, 1))))
    b.ratio_row("FFT", "grad ÷ forward", grad, fwd)


def bench_scatter(b, d):
    """np.add.at scatter of 1e6 values (issue 12): rune's grad against its own forward."""
    rune = b.rune
    D = w.scatter_data()
    v, idx = D["v"], D["idx"]
    fwd = b.row("SCATTER", f"np.add.at of {w.SCATTER_N:.0e} values into {w.SCATTER_BINS} "
                           f"slots, sum of squares: forward")
    grad = b.row("SCATTER", "grad (w.r.t. the values)", fwd=fwd)
    b.cell(fwd, "rune")(lambda: lambda: w.scatter_loss(v, idx))
    b.cell(grad, "rune")(lambda: (lambda g: lambda: g(v, idx))(rune.grad(w.scatter_loss)))
    b.ratio_row("SCATTER", "grad ÷ forward", grad, fwd)


BENCHES = {"W1": bench_w1, "W2": bench_w2, "W3": bench_w3, "W4": bench_w4,
           "W5": bench_w5, "W6": bench_w6, "FFT": bench_fft, "SCATTER": bench_scatter}


# --------------------------------------------------------------------------
# Cross-checks and the report
# --------------------------------------------------------------------------

def cross_check(b):
    """Compare every framework's result with rune's on each row (relative to the largest)."""
    for r in b.rows:
        ref = r.results.get("rune")
        if ref is None:
            continue
        parts = []
        for fw in PEERS:
            other = r.results.get(fw)
            if other is None:
                continue
            if len(other) != len(ref) or any(a.shape != c.shape for a, c in zip(ref, other)):
                parts.append(f"{LABELS[fw]}: structure differs")
                continue
            scale = max((float(np.max(np.abs(a))) for a in other if a.size), default=1.0) or 1.0
            err = max((float(np.max(np.abs(a - c))) for a, c in zip(ref, other) if a.size),
                      default=0.0) / scale
            ok = err <= r.rtol
            parts.append(f"{LABELS[fw]} {err:.1e}" + ("" if ok else " **MISMATCH**"))
            if not ok:
                b.failures.append(f"**{r.workload} {r.measure}**: rune's result differs from "
                                  f"{LABELS[fw]}'s by {err:.2e} (relative to the largest "
                                  f"value; tolerance {r.rtol:g}).")
        if parts:
            b.checks.append(f"- {r.workload} {r.measure}: " + ", ".join(parts))


# SPEC section 5's peer figures (median, 2-core machine): (forward row, timed row, unit scale)
SPEC_PEERS = {
    "W1": ("grad of the chain", {"numpy": 0.9, "autograd": 17, "jax": 358, "torch": 10.7}),
    "W2": ("value_and_grad", {"numpy": 3.5, "autograd": 22.7, "jax": 17.0, "torch": 8.3}),
    "W3": ("per-example grads: vmap(grad)",
           {"numpy": 0.09, "autograd": 96, "jax": 10.6, "torch": 1.12}),
    "W4": ("hvp (forward-over-reverse)",
           {"numpy": 0.05, "autograd": 0.62, "jax": 4.25, "torch": 1.53}),
    "W5": ("hessian", {"numpy": 0.02, "autograd": 20.6, "jax": 15.4, "torch": 4.55}),
    "W6": ("grad (w.r.t. W and x)",
           {"numpy": 25.5, "autograd": 136, "jax": 259, "torch": 57}),
}


def spec_comparison(b):
    """SPEC's peer figures beside this run's, to tell how this machine compares."""
    by_name = {(r.workload, r.measure): r for r in b.rows}
    lines = ["| Workload | Row | NumPy fwd: SPEC → here | autograd | JAX op-by-op | torch |",
             "|---|---|---|---|---|---|"]
    for key, (measure_name, spec) in SPEC_PEERS.items():
        r = by_name.get((key, measure_name))
        if r is None:
            continue
        cells = []
        for fw in ("numpy", "autograd", "jax", "torch"):
            if fw == "numpy":
                here = r.fwd.median("rune") if r.fwd else None
            elif key == "W3" and fw == "autograd":        # SPEC's autograd figure is the loop
                loop = by_name.get((key, "per-example grads: Python loop of grad"))
                here = loop.median(fw) if loop else None
            else:
                here = r.median(fw)
            cells.append(f"{spec[fw]:g} → {fmt(here)} ({here / spec[fw]:.2f}×)"
                         if here is not None else f"{spec[fw]:g} → n/a")
        lines.append(f"| {key} | {measure_name} ({r.unit}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cell_text(r, fw):
    c = r.cells.get(fw)
    if c is None:
        return ""
    if isinstance(c, str):
        return f"*{c}*"
    med, mn = r.median(fw), r.minimum(fw)
    return fmt(med) if mn is None else f"{fmt(med)} ({fmt(mn)})"


def table(b):
    head = (["Workload", "Measure", "Unit"] + [LABELS[f] for f in FRAMEWORKS]
            + [f"rune ÷ {LABELS[f]}" for f in PEERS]
            + ["rune ÷ NumPy fwd", "Target (SPEC §5, issue 14)", "Met"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in b.rows:
        for fw in PEERS:
            note = b.status.get(GROUP_OF[fw])
            if fw not in r.cells and note and r.unit != "×":
                r.cells[fw] = note
        cells = [r.workload, r.measure, r.unit] + [cell_text(r, f) for f in FRAMEWORKS]
        rune_v = r.median("rune")
        for fw in PEERS:
            pv = r.median(fw)
            cells.append(f"{rune_v / pv:.2f}" if r.unit != "×" and rune_v is not None
                         and pv else "")
        fv = r.fwd.median("rune") if r.fwd is not None else None
        cells.append(f"{rune_v / fv:.2f}" if rune_v is not None and fv else "")
        cells.append(r.target)
        cells.append({True: "yes", False: "**no**", None: "" if not r.target else "—"}[r.met()])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(b, versions, started, elapsed):
    out = [f"# rune benchmarks, {started:%Y-%m-%d %H:%M} ({socket.gethostname()})", ""]
    out += harness.machine_lines(versions)
    out += [f"- Load average (1, 5, 15 min) at the start: {b.load_before}",
            "- Threads: " + (f"held to {b.args.threads} (BLAS, OpenMP, XLA) by --threads"
                              if b.args.threads else "each runtime's default"),
            f"- Command: `{' '.join([Path(sys.executable).name] + sys.argv)}`; whole run "
            f"{elapsed:.0f} s; {b.args.rounds} rounds, budget per figure and round "
            f"{b.args.budget} s; each framework measured in a process of its own", ""]
    out += ["Each time is the median per call over all samples of all rounds (at least 7 per "
            "round, each round after a warm-up call), the minimum in brackets. Ratios are of "
            "medians: below 1 rune is faster. "
            "The rune column of a *forward* row is the plain NumPy function, run with rune "
            "imported. JAX jit figures exclude compilation (listed below). The W1 rows are "
            "divided by the chain's 200 operations.", ""]
    out += [table(b), ""]
    out += ["## SPEC section 5's peer figures beside this machine's", "",
            "Below 1× this machine (or this revision of a peer) is faster than the one SPEC's "
            "figures came from; rune's absolute targets are easier here by about that factor. "
            "W3's autograd figure is its loop.", "", spec_comparison(b), ""]
    if b.compile_times:
        out += ["## JAX jit compile times (trace + lower + compile, excluded above)", ""]
        out += [f"- {name}: {fmt(t * 1e3)} ms" for name, t in b.compile_times] + [""]
    if b.checks:
        out += ["## Cross-checks (max abs difference from rune's result, relative to the "
                "largest value)", ""] + b.checks + [""]
    out += ["## Notes", ""]
    out += [f"- {n}" for n in b.notes]
    out += ["- The softmax cross-entropy is written out (max, exp, sum, log) in every "
            "framework, not as a fused kernel, so each framework runs the same operations.",
            "- Memory is tracemalloc's peak above the level at the call: it sees NumPy's "
            "buffers (rune, autograd) but not PyTorch's or XLA's.",
            "- W3's loop rows pre-split the batch into examples outside the timed region; "
            "its JAX jit loop calls one compiled per-example grad 128 times.",
            ""]
    out += ["## Failures", ""] + (b.failures or ["None."]) + [""]
    return "\n".join(out)


GROUPS = {"rune": ("rune",), "autograd": ("autograd",), "jax": ("jax", "jax-jit"),
          "torch": ("torch",)}
GROUP_OF = {fw: g for g, fws in GROUPS.items() for fw in fws}


def worker_env(threads):
    """The workers' environment: as it is, or with every runtime held to ``threads`` threads."""
    env = dict(os.environ)
    if threads:
        n = str(threads)
        env.update(OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n, MKL_NUM_THREADS=n)
        flags = env.get("XLA_FLAGS", "")
        if threads == 1:
            flags += " --xla_cpu_multi_thread_eigen=false"
        env["XLA_FLAGS"] = (flags + f" intra_op_parallelism_threads={n}").strip()
    return env


def worker(args):
    """Measure one framework group's cells in this process and pickle them for the parent."""
    t0 = time.perf_counter()
    group = args.worker
    notes = []
    peers, versions = load_peers({group}, notes) if group != "rune" else ({}, {})
    b = Bench(args, peers, GROUPS[group])
    b.notes += notes
    installed = group == "rune" or group in peers
    if installed:
        d = w.data()
        for key in args.only.split(","):
            key = key.strip().upper()
            print(f"[{time.perf_counter() - t0:6.1f}s] {group:8s} {key} ...", file=sys.stderr,
                  flush=True)
            try:
                BENCHES[key](b, d)
            except Exception as e:        # noqa: BLE001 - a bug here must not lose the rest
                b.failures.append(f"**{key}, {group}** (the benchmark itself): `{e!r}`\n\n"
                                  f"```\n{traceback.format_exc(limit=-6).strip()}\n```")
    state = {"rows": b.rows, "notes": b.notes, "failures": b.failures,
             "compile_times": b.compile_times, "versions": versions, "installed": installed}
    with open(args.worker_out, "wb") as fh:
        pickle.dump(state, fh)
    return 0


class _Unpickler(pickle.Unpickler):
    """Workers run this file as __main__; the parent may have imported it as a module."""

    def find_class(self, module, name):
        if module == "__main__":
            module = __name__
        return super().find_class(module, name)


def run_workers(args):
    """One process per framework group, so that no runtime's threads (OpenMP, XLA's pool,
    OpenBLAS's spinning workers) wait on another's; ``args.rounds`` rounds, whose samples are
    pooled, so that a burst of load elsewhere on the machine falls on every framework alike."""
    selected = {GROUP_OF[f] for f in args.frameworks.split(",") if f in GROUP_OF}
    merged = Bench(args, {}, ())
    versions = {}
    by_key = {}
    groups = [g for g in GROUPS if g == "rune" or g in selected]
    for g in GROUPS:
        if g not in groups:
            merged.status[g] = "not run"
    for rnd in range(args.rounds):
        for group in groups[rnd % len(groups):] + groups[:rnd % len(groups)]:
            if merged.status.get(group):
                continue                      # not installed or crashed: once is enough
            print(f"round {rnd + 1}/{args.rounds}: {group}", file=sys.stderr, flush=True)
            state = run_worker(args, group, merged)
            if state is None:
                continue
            if not state["installed"]:
                merged.status[group] = "not installed"
            if rnd == 0:
                versions.update(state["versions"])
                merged.notes += state["notes"]
                merged.compile_times += state["compile_times"]
            merged.failures += [f for f in state["failures"] if f not in merged.failures]
            for r in state["rows"]:
                if r.key not in by_key:
                    by_key[r.key] = r
                    merged.rows.append(r)
                    continue
                base = by_key[r.key]
                for fw, c in r.cells.items():
                    old = base.cells.get(fw)
                    if isinstance(old, harness.Timing) and isinstance(c, harness.Timing):
                        base.cells[fw] = old.pooled(c)
                    elif old is None or isinstance(c, str):   # a later failure is shown
                        base.cells[fw] = c
                for fw, res in r.results.items():
                    base.results.setdefault(fw, res)
    for r in merged.rows:
        if r.ratio_of:
            fill_ratio(r, by_key[r.ratio_of[0]], by_key[r.ratio_of[1]])
    return merged, versions


def run_worker(args, group, merged):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "state.pickle"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", group,
               "--worker-out", str(out), "--only", args.only, "--budget", str(args.budget)]
        rc = subprocess.run(cmd, env=worker_env(args.threads)).returncode
        if rc != 0 or not out.exists():
            merged.status[group] = "worker crashed"
            merged.failures.append(f"**{group}**: the worker process exited with code {rc}; "
                                   f"rerun `{' '.join(cmd[1:4])} --worker-out /tmp/x` to see "
                                   "why.")
            return None
        with open(out, "rb") as fh:
            return _Unpickler(fh).load()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="W1,W2,W3,W4,W5,W6,FFT,SCATTER",
                    help="comma-separated workloads (default: all)")
    ap.add_argument("--frameworks", default=",".join(PEERS),
                    help="comma-separated peers to compare (default: %(default)s)")
    ap.add_argument("--budget", type=float, default=0.5,
                    help="seconds of samples per figure and round beyond the minimum 7 "
                         "(default 0.5)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds over all frameworks, samples pooled (default 3)")
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/"
                                                "<date>-<host>[-<N>thread].md); '-' prints only")
    ap.add_argument("--threads", type=int, default=0,
                    help="hold NumPy's BLAS, torch and XLA to this many threads (default: "
                         "each runtime's own choice); 1 is steadier on a busy machine")
    ap.add_argument("--worker", choices=list(GROUPS), help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    started = datetime.datetime.now()
    t0 = time.perf_counter()
    load_before = harness.load_average()
    b, versions = run_workers(args)
    b.load_before = load_before
    cross_check(b)
    text = report(b, versions, started, time.perf_counter() - t0)
    print(text)
    if args.out != "-":
        host = re.sub(r"[^A-Za-z0-9_.-]+", "-", socket.gethostname()) or "host"
        path = Path(args.out) if args.out else (
            Path(__file__).resolve().parent / "results"
            / f"{started:%Y-%m-%d}-{host}{f'-{args.threads}thread' if args.threads else ''}.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        print(f"\nwritten to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
