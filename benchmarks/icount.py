"""Instructions per operation, counted by valgrind's callgrind: a noise-free measure.

Wall-clock and even thread-CPU times on a shared machine swing by 1.5x from one minute to
the next (other tenants share the cores, their caches and the memory bandwidth); the
number of instructions a call executes does not.  This counts them for rune's hot paths,
so that a change to the core can be judged before and after in one run each:

    python benchmarks/icount.py                 # W1, W3, the heat stencil
    python benchmarks/icount.py W1 --src /tmp/old/src    # another revision's src/

Each case runs twice under callgrind, with few and with more calls, and reports the
difference divided by the extra calls (the import and the warm-up cancel).  Needs
``valgrind`` on the PATH (skipped with a note otherwise); a run takes about 20-40 s.
Instructions are not time (a cache miss costs more than an add), so a kernel-bound
workload is still judged by ``run.py``'s times; for the Python overhead per operation they
track time closely.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Each case: (what it prints, the code run `n` times, its setup, (few, more) calls, divisor)
CASES = {
    "W1": ("instructions per operation of W1's grad (200-op chain)",
           "g(x)",
           "import workloads as w\nd = w.data()\nx = d['W1']['x']\ng = rune.grad(w.chain)\n",
           (10, 60), 200),
    "W3": ("instructions per call of W3's vmap(grad) (batch 128)",
           "pe(p, x, y)",
           "import workloads as w\nD = w.data()['W3']\np, x, y = D['p'], D['x'], D['y']\n"
           "pe = rune.vmap(rune.grad(w.example_loss), in_axes=(None, 0, 0))\n",
           (5, 25), 1),
    "heat": ("instructions per call of the in-place heat stencil's grad",
             "g(u0)",
             "import numpy as np\nfrom programs import heat_inplace\n"
             "u0 = np.sin(np.linspace(0, 3, 4096)) + 0.1\ng = rune.grad(heat_inplace)\n",
             (2, 6), 1),
}


def _script(src, setup, body, n):
    return (f"import sys\nsys.path.insert(0, {src!r})\nsys.path.insert(0, {HERE!r})\n"
            f"import rune\n{setup}for _ in range({n}):\n    {body}\n")


def _count(src, setup, body, n):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_script(src, setup, body, n))
        path = f.name
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
           path]
    if shutil.which("setarch"):     # the same addresses every run: dict probes repeat
        cmd = ["setarch", os.uname().machine, "-R"] + cmd
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    finally:
        os.unlink(path)
    m = re.search(r"Collected : (\d+)", res.stderr)
    if m is None:
        raise RuntimeError(f"callgrind printed no count:\n{res.stderr[-2000:]}")
    return int(m.group(1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", metavar="CASE",
                    help=f"what to count, of {', '.join(CASES)} (default: all)")
    ap.add_argument("--src", default=os.path.join(os.path.dirname(HERE), "src"),
                    help="the src/ directory whose rune is counted (default: this tree's)")
    args = ap.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}: choose from {', '.join(CASES)}")
    if shutil.which("valgrind") is None:
        print("valgrind is not on the PATH: nothing counted")
        return 0
    print(f"rune from {args.src}")
    for name in args.cases or list(CASES):
        what, body, setup, (few, more), per = CASES[name]
        a = _count(args.src, setup, body, few)
        b = _count(args.src, setup, body, more)
        print(f"{name}: {(b - a) / (more - few) / per:,.0f} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
