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
import os
import pickle
import re
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import harness


import workloads as w

from table import GROUPS, GROUP_OF, PEERS, Bench, fill_ratio
from adapters import BENCHES, load_peers
from report import cross_check, report


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
