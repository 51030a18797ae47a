"""The benchmark report: the cross-check of every result against the peers', the
comparison with SPEC's targets and the markdown table ``run.py`` prints and writes."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import harness

import numpy as np


from table import GROUP_OF, FRAMEWORKS, LABELS, PEERS, fmt


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



