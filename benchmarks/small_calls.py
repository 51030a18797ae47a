"""Issue 27: the speed of small calls, rune eager and under ``rune.jit`` beside NumPy's own
forward, HIPS autograd, PyTorch eager, ``torch.func``, JAX op by op and under ``jax.jit``.

    python benchmarks/small_calls.py                    # `make bench` runs this
    python benchmarks/small_calls.py --icount           # and callgrind's counts (icount.py)
    python benchmarks/small_calls.py --path jax=/tmp/jaxlib --path torch=/tmp/torchlib

The cases (``small_calls_cases.py``): the tiny call ``grad(lambda x: np.sum(np.sin(x)))``,
the grad of issue 27's 200-op chain on 16 elements, W3's per-example gradients, an L-BFGS
fit through ``scipy.optimize.minimize`` (the whole call) and the gradient through 200 RK4
steps of Lorenz-96.  Each framework runs in a process of its own (this file with
``--worker``), with one BLAS, OpenMP, PyTorch and XLA thread; the processes run in turn,
``--rounds`` times, each round starting at the next framework, and within a process the
cells of a case are sampled in turn (interleaved), so that a burst of load elsewhere on a
shared machine falls on every cell alike.  A sample times ``number`` calls back to back
(enough for ``--min-sample`` seconds); each cell's samples of every round are pooled and
reported as minimum and median: the minimum is the figure for the work done (a sample
that met no other tenant), the median what a user sees on this machine.

The worker process runs this file, reusing ``run.worker_env`` (the thread settings),
``adapters.load_peers`` (the peers' import, x64 JAX, W3's dataclass as a JAX tree),
``table.leaves`` and ``harness``'s machine description; not ``harness.measure`` or
``run.run_workers``, which time one figure's samples back to back and fill ``run.py``'s
table rows, where this needs cells sampled in turn and its own table.

Every result is checked against rune eager's before it counts (normwise relative error
below the square root of float64's epsilon; for L-BFGS the same optimum: the loss to 1e-8
relative and the iteration count within 3).  A peer that is not installed is skipped with
a note.  The report is written to ``benchmarks/results/<date>-small-calls.md``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import math
import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import harness
from adapters import load_peers
from run import worker_env
from table import leaves

import numpy as np

import small_calls_cases as cases

HERE = Path(__file__).resolve().parent
GROUPS = ("numpy", "rune", "autograd", "torch", "jax")
COLUMNS = ("numpy", "rune", "rune-jit", "autograd", "torch", "torch.func", "jax", "jax-jit")
LABELS = {"numpy": "NumPy forward", "rune": "rune", "rune-jit": "rune.jit",
          "autograd": "autograd", "torch": "torch eager", "torch.func": "torch.func",
          "jax": "JAX op-by-op", "jax-jit": "JAX jit"}
# case: (title, unit, seconds -> unit)
CASE_INFO = {
    "tiny": ("`grad(lambda x: np.sum(np.sin(x)))` on `np.ones(3)`, per call", "µs", 1e6),
    "chain": ("grad of issue 27's 200-op chain (`workloads.chain27`), 16 elements, per op "
              "(÷200)", "µs/op", 1e6 / 200),
    "w3": ("W3 per-example grads, 64-32-10 MLP, batch 128: vmap(grad) (autograd, torch "
           "eager: a loop of grad)", "ms", 1e3),
    "lbfgs": ("L-BFGS-B fit, tanh least squares, 30 parameters, 200 points: the whole "
              "`scipy.optimize.minimize`", "ms", 1e3),
    "rk4": ("Lorenz-96, 20 states, 200 RK4 steps: grad of the final sum in (x0, F)", "ms", 1e3),
}
GRAD_RTOL = math.sqrt(np.finfo(np.float64).eps)


# --------------------------------------------------------------------------
# The worker: one framework group's cells, sampled in turn
# --------------------------------------------------------------------------

def summary(case, r):
    """What the cross-check compares: the optimum for L-BFGS, the arrays otherwise."""
    if case == "lbfgs":
        return {"x": np.array(r.x), "fun": float(r.fun), "nit": int(r.nit), "nfev": int(r.nfev)}
    return leaves(r)


def sample_in_turn(thunks, repeats, min_sample):
    """{column: [seconds per call, one per sample]}: each thunk timed ``number`` calls at a
    time (``number`` from one timed call, so that a sample lasts ``min_sample``), the
    thunks in turn, ``repeats`` times; the collector emptied before each sample."""
    number = {}
    for col, fn in thunks.items():
        t0 = time.perf_counter()
        fn()
        number[col] = max(1, math.ceil(min_sample / max(time.perf_counter() - t0, 1e-9)))
    out = {col: [] for col in thunks}
    for _ in range(repeats):
        for col, fn in thunks.items():
            n = number[col]
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            out[col].append((time.perf_counter() - t0) / n)
    return out


def worker(args):
    group = args.worker
    state = {"samples": {}, "results": {}, "first": {}, "notes": [], "cell_notes": {},
             "failures": [], "versions": {}, "installed": True}
    if group in ("autograd", "torch", "jax"):
        peers, state["versions"] = load_peers({group}, state["notes"])
        state["installed"] = group in peers
    else:
        peers = {}
    if group == "torch" and state["installed"] and args.threads:
        peers["torch"].set_num_threads(args.threads)
        state["versions"]["PyTorch"] += (f" (set to {peers['torch'].get_num_threads()} "
                                         "intra-op threads)")
    if state["installed"]:
        try:
            built = cases.BUILDERS[group](peers)
        except Exception as e:                 # noqa: BLE001 - reported, not lost
            built = {}
            state["failures"].append(f"{group}: building the cases: {e!r}")
        for case in args.cases.split(","):
            thunks = {}
            for col, fn in built.get(case, {}).items():
                if isinstance(fn, str):
                    state["cell_notes"][case, col] = fn
                    continue
                try:
                    t0 = time.perf_counter()
                    fn()                          # records (rune.jit) or compiles (jax.jit)
                    state["first"][case, col] = time.perf_counter() - t0
                    state["results"][case, col] = summary(case, fn())
                    thunks[col] = fn
                except Exception as e:            # noqa: BLE001
                    state["cell_notes"][case, col] = f"FAIL ({type(e).__name__})"
                    state["failures"].append(f"{case}, {LABELS[col]}: {e!r}\n"
                                             f"{traceback.format_exc(limit=-4)}")
            print(f"  {group}: {case}", file=sys.stderr, flush=True)
            for col, s in sample_in_turn(thunks, args.repeats, args.min_sample).items():
                state["samples"][case, col] = s
    with open(args.worker_out, "wb") as fh:
        pickle.dump(state, fh)
    return 0


# --------------------------------------------------------------------------
# The parent: rounds of worker processes, pooled samples, checks, the report
# --------------------------------------------------------------------------

def run_worker(args, group, paths):
    env = worker_env(args.threads)
    if group in paths:
        env["PYTHONPATH"] = os.pathsep.join([paths[group]] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "state.pickle"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", group,
               "--worker-out", str(out), "--cases", args.cases, "--repeats", str(args.repeats),
               "--min-sample", str(args.min_sample), "--threads", str(args.threads)]
        rc = subprocess.run(cmd, env=env).returncode
        if rc != 0 or not out.exists():
            return {"crashed": rc}
        with open(out, "rb") as fh:
            return pickle.load(fh)


def run_rounds(args):
    paths = dict(p.split("=", 1) for p in args.path)
    merged = {"samples": {}, "results": {}, "first": {}, "notes": [], "cell_notes": {},
              "failures": [], "versions": {}, "skipped": {}}
    for rnd in range(args.rounds):
        k = rnd % len(GROUPS)
        for group in GROUPS[k:] + GROUPS[:k]:
            if group in merged["skipped"]:
                continue
            print(f"round {rnd + 1}/{args.rounds}: {group}", file=sys.stderr, flush=True)
            st = run_worker(args, group, paths)
            if "crashed" in st:
                merged["skipped"][group] = f"worker crashed (exit code {st['crashed']})"
                continue
            if not st["installed"]:
                merged["skipped"][group] = "not installed"
            if rnd == 0 or group not in merged["versions"]:
                merged["notes"] += st["notes"]
                merged["versions"].update(st["versions"])
                merged["first"].update(st["first"])
                merged["cell_notes"].update(st["cell_notes"])
                merged["failures"] += st["failures"]
            for key, s in st["samples"].items():
                merged["samples"].setdefault(key, []).extend(s)
            for key, r in st["results"].items():
                merged["results"].setdefault(key, r)
    merged["timings"] = {key: harness.Timing(statistics.median(s), min(s), len(s), 0)
                         for key, s in merged["samples"].items()}
    return merged


def rel_error(got, ref):
    got, ref = list(got), list(ref)
    if [a.shape for a in got] != [a.shape for a in ref]:
        return math.inf
    return max(float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))
               for a, b in zip(got, ref))


def cross_check(m):
    """{(case, column): text}, and the failures into ``m['bad']``: every result against rune
    eager's (the NumPy forward column computes something else and is not checked)."""
    out, bad = {}, []
    for (case, col), r in m["results"].items():
        ref = m["results"].get((case, "rune"))
        if col in ("numpy", "rune") or ref is None:
            continue
        if case == "lbfgs":
            df = abs(r["fun"] - ref["fun"]) / abs(ref["fun"])
            dx = float(np.linalg.norm(r["x"] - ref["x"]) / np.linalg.norm(ref["x"]))
            ok = df <= 1e-8 and abs(r["nit"] - ref["nit"]) <= 3
            out[case, col] = (f"nit {r['nit']}, nfev {r['nfev']}, loss {r['fun']:.15g} "
                              f"(rel. diff {df:.1e}), x rel. diff {dx:.1e}")
        else:
            err = rel_error(r, ref)
            ok = err <= GRAD_RTOL
            out[case, col] = f"{err:.1e}"
        if not ok:
            bad.append(f"{case}, {LABELS[col]}: {out[case, col]} against rune's")
    m["bad"] = bad
    if ("lbfgs", "rune") in m["results"]:
        r = m["results"]["lbfgs", "rune"]
        out["lbfgs", "rune"] = f"nit {r['nit']}, nfev {r['nfev']}, loss {r['fun']:.15g}"
    return out


def cell(m, case, col):
    t = m["timings"].get((case, col))
    if t is None:
        grp = next((g for g in GROUPS if col.startswith(g)), None)
        return m["cell_notes"].get((case, col)) or m["skipped"].get(grp, "")
    s = CASE_INFO[case][2]
    return f"{fmt(t.min * s)} / {fmt(t.median * s)}"


def fmt(v):
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def ratio(m, num, den, stat):
    a, b = m["timings"].get(num), m["timings"].get(den)
    if a is None or b is None:
        return None
    return getattr(a, stat) / getattr(b, stat)


def targets(m, icount):
    """Issue 27's targets as table rows: (target, by min, by median, met)."""
    rows = []

    def add(name, num, den, limit):
        lo, med = ratio(m, num, den, "min"), ratio(m, num, den, "median")
        if lo is None:
            rows.append((name, "", "", "not measured"))
            return
        rows.append((name, f"{lo:.2f}x", f"{med:.2f}x",
                     "met" if lo <= limit else "**not met**"))
    add("eager chain grad ≤ 5x NumPy forward (per op)", ("chain", "rune"), ("chain", "numpy"), 5)
    add("jit(grad(chain)) ≤ 2x NumPy forward (per op)", ("chain", "rune-jit"),
        ("chain", "numpy"), 2)
    add("W3 jit(vmap(grad)) ≤ 0.5x torch.func", ("w3", "rune-jit"), ("w3", "torch.func"), 0.5)
    if "tiny" in icount and "autograd tiny" in icount:
        for key, name in (("tiny", "tiny call"), ("tiny-jit", "(reported) tiny call, jit")):
            if key in icount:
                r = icount[key] / icount["autograd tiny"]
                rows.append((f"{name} ≤ 0.5x autograd's instructions", f"{r:.2f}x "
                             "(instructions)", "", "met" if r <= 0.5 else "**not met**"))
    for case in ("tiny", "chain", "w3"):
        lo = ratio(m, (case, "rune-jit"), (case, "jax-jit"), "min")
        if lo is not None:
            med = ratio(m, (case, "rune-jit"), (case, "jax-jit"), "median")
            rows.append((f"{case}: rune.jit ÷ JAX jit (reported, no target)", f"{lo:.2f}x",
                         f"{med:.2f}x", ""))
    return rows


ICOUNT_RUNS = (("", "tiny chain mlp8 tiny-jit chain-jit mlp8-jit"),
               ("autograd ", "tiny chain mlp8 --autograd"), ("numpy ", "chain --numpy"))


def run_icount():
    """{name: instructions} from ``icount.py``'s three runs (rune, --autograd, --numpy)."""
    counts, lines = {}, []
    for prefix, argv in ICOUNT_RUNS:
        res = subprocess.run([sys.executable, str(HERE / "icount.py"), *argv.split()],
                             capture_output=True, text=True)
        lines.append(f"$ python benchmarks/icount.py {argv}")
        lines += res.stdout.strip().splitlines() + res.stderr.strip().splitlines()[-3:]
        for ln in res.stdout.splitlines():
            mt = re.match(r"(\S+): ([\d,]+) ", ln)
            if mt:
                counts[prefix + mt.group(1)] = int(mt.group(2).replace(",", ""))
    return counts, lines


def report(m, args, started, seconds, load_before, icount, icount_lines):
    checks = cross_check(m)
    cols = [c for c in COLUMNS if any(k[1] == c for k in m["timings"])
            or any(k[1] == c for k in m["cell_notes"])]
    L = [f"# Small calls (issue 27), {started:%Y-%m-%d %H:%M}", "",
         f"`{' '.join(['python', 'benchmarks/small_calls.py'] + sys.argv[1:])}` "
         f"({seconds:.0f} s). Each cell: **minimum / median** over {args.rounds} rounds of "
         f"{args.repeats} interleaved samples per framework process (a sample: enough "
         f"back-to-back calls for {args.min_sample * 1e3:g} ms); the minimum is the work, "
         "the median what this shared machine gave.", "",
         "| case | unit | " + " | ".join(LABELS[c] for c in cols) + " |",
         "|---|---|" + "---|" * len(cols)]
    for case in args.cases.split(","):
        title, unit, _ = CASE_INFO[case]
        L.append(f"| {title} | {unit} | " + " | ".join(cell(m, case, c) for c in cols) + " |")
    L += ["", "## Issue 27's targets", "", "| target | by min | by median | |", "|---|---|---|---|"]
    L += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in targets(m, icount)]
    L += ["", "## Cross-check against rune eager", "",
          f"Normwise relative difference of each result from rune eager's (must be ≤ "
          f"{GRAD_RTOL:.1e}); L-BFGS: the optimum reached (loss within 1e-8 relative, "
          "iterations within 3).", ""]
    L += [f"- {c} {LABELS[col]}: {checks[c, col]}" for c in args.cases.split(",")
          for col in COLUMNS if (c, col) in checks]
    L += [f"- **DISAGREES**: {b}" for b in m["bad"]] or ["- every result agrees"]
    L += ["", "## First calls (rune.jit records, jax.jit compiles; not in the table)", ""]
    L += ["- " + ", ".join(f"{c} {LABELS[col]} {m['first'][c, col] * 1e3:,.1f} ms"
                           for col in ("rune-jit", "jax-jit", "torch.func", "jax")
                           if (c, col) in m["first"]) for c in args.cases.split(",")]
    if icount_lines:
        L += ["", "## Instructions (callgrind, `benchmarks/icount.py`)", "", "```"]
        L += icount_lines + ["```"]
    L += ["", "## Machine and settings", "",
          f"- Load average (1, 5, 15 min) at the start: {load_before}"]
    L += [ln for ln in harness.machine_lines(m["versions"])   # the parent's environment:
          if not ln.startswith("- BLAS environment")]          # the workers' is below
    env = worker_env(args.threads)
    L += ["- Workers' thread settings: " + (", ".join(
              f"`{k}={env[k]}`" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                          "MKL_NUM_THREADS", "XLA_FLAGS") if k in env)
              or "each runtime's own") + (f"; `torch.set_num_threads({args.threads})`"
                                         if args.threads else ""),
          f"- SciPy {__import__('scipy').__version__}"]
    notes = m["notes"] + [f"{g}: {why}" for g, why in m["skipped"].items()]
    if notes or m["failures"]:
        L += ["", "## Notes and failures", ""] + [f"- {n}" for n in notes]
        L += ["```\n" + f.strip() + "\n```" for f in m["failures"]]
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join(cases.CASES),
                    help="comma-separated cases (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds over the frameworks")
    ap.add_argument("--repeats", type=int, default=7, help="samples per cell and round")
    ap.add_argument("--min-sample", type=float, default=0.02,
                    help="seconds of back-to-back calls per sample (default 0.02)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for BLAS, OpenMP, PyTorch, XLA (default 1; 0: theirs)")
    ap.add_argument("--path", action="append", default=[], metavar="GROUP=DIR",
                    help="put DIR first on the PYTHONPATH of GROUP's worker (a private "
                         "install of torch or jax)")
    ap.add_argument("--icount", action="store_true",
                    help="also count instructions with benchmarks/icount.py (valgrind)")
    ap.add_argument("--out", default=None,
                    help="results file (default benchmarks/results/<date>-small-calls.md); "
                         "'-' prints only")
    ap.add_argument("--worker", choices=GROUPS, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    unknown = set(args.cases.split(",")) - set(cases.CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}: choose from {', '.join(cases.CASES)}")
    if args.worker:
        return worker(args)
    started, t0, load_before = datetime.datetime.now(), time.perf_counter(), \
        harness.load_average()
    m = run_rounds(args)
    icount, icount_lines = run_icount() if args.icount else ({}, [])
    text = report(m, args, started, time.perf_counter() - t0, load_before, icount,
                  icount_lines)
    print(text)
    if args.out != "-":
        path = Path(args.out) if args.out else HERE / "results" / \
            f"{started:%Y-%m-%d}-small-calls.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"written to {path}", file=sys.stderr)
    return 1 if m["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
