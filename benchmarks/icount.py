"""Instructions per operation, counted by valgrind's callgrind: a noise-free measure.

Wall-clock and even thread-CPU times on a shared machine swing by 1.5x from one minute to
the next (other tenants share the cores, their caches and the memory bandwidth); the
number of instructions a call executes does not.  This counts them for rune's hot paths,
so that a change to the core can be judged before and after in one run each:

    python benchmarks/icount.py                 # every case
    python benchmarks/icount.py tiny chain mlp8 --autograd   # the same calls in autograd
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
    "tiny": ("instructions per call of grad(lambda x: np.sum(np.sin(x))) on 3 elements",
             "g(x)",
             "import numpy as np\nx = np.ones(3)\ng = rune.grad(lambda x: np.sum(np.sin(x)))\n",
             (200, 1200), 1),
    "chain": ("instructions per operation of grad of issue 27's 200-op chain (16 elements)",
              "g(x)",
              "import numpy as np\nimport workloads as w\nx = np.linspace(0.1, 0.9, 16)\n"
              "g = rune.grad(w.chain27)\n",
              (10, 60), 200),
    "chain-floor": ("instructions per operation of the same chain's gradient through the "
                    "smallest Python tape (tape_floor.py: the floor of an eager design)",
                    "tf.grad(tf.chain, x)",
                    "import numpy as np\nimport tape_floor as tf\nx = np.linspace(0.1, 0.9, 16)\n",
                    (10, 60), 200),
    "mlp8": ("instructions per call of value_and_grad of a 64-32-10 MLP on a batch of 8",
             "g(P)",
             "import workloads as w\nP = w.mlp8_params()\ng = rune.value_and_grad(w.mlp8_loss)\n",
             (20, 120), 1),
    "tiny-jit": ("instructions per call of jit(grad(lambda x: np.sum(np.sin(x)))) on 3 elements "
                 "(replayed)", "g(x)",
                 "import numpy as np\nx = np.ones(3)\n"
                 "g = rune.jit(rune.grad(lambda x: np.sum(np.sin(x))))\ng(x)\n",
                 (200, 1200), 1),
    "chain-jit": ("instructions per operation of jit(grad) of issue 27's 200-op chain (replayed)",
                  "g(x)",
                  "import numpy as np\nimport workloads as w\nx = np.linspace(0.1, 0.9, 16)\n"
                  "g = rune.jit(rune.grad(w.chain27))\ng(x)\n",
                  (10, 60), 200),
    "mlp8-jit": ("instructions per call of jit(value_and_grad) of the 64-32-10 MLP (replayed)",
                 "g(P)",
                 "import workloads as w\nP = w.mlp8_params()\n"
                 "g = rune.jit(rune.value_and_grad(w.mlp8_loss))\ng(P)\n",
                 (20, 120), 1),
    "outside": ("instructions of plain NumPy/SciPy calls (asarray, sum, mean of a list, "
                "logsumexp, norm.logpdf) outside transformations, before any transformation ran",
                "plain()", "import plain_calls\nplain = plain_calls.calls\n", (50, 250), 1),
    "outside-installed": ("the same calls once a transformation has run (its replacements "
                          "installed)",
                          "plain()", "import plain_calls\nplain = plain_calls.calls\n"
                          "rune.grad(lambda v: v * 2)(1.0)\n", (50, 250), 1),
    "heat": ("instructions per call of the in-place heat stencil's grad",
             "g(u0)",
             "import numpy as np\nfrom user_programs import heat_inplace\n"
             "u0 = np.sin(np.linspace(0, 3, 4096)) + 0.1\ng = rune.grad(heat_inplace)\n",
             (2, 6), 1),
}


# The same calls written for HIPS autograd (--autograd): rune's figures are judged as ratios
AUTOGRAD = {
    "tiny": "import autograd.numpy as np\nfrom autograd import grad\nx = np.ones(3)\n"
            "g = grad(lambda x: np.sum(np.sin(x)))\n",
    "chain": "import autograd.numpy as anp\nfrom autograd import grad\nimport workloads as w\n"
             "x = anp.linspace(0.1, 0.9, 16)\ng = grad(w.with_numpy(w.chain27, anp))\n",
    "mlp8": "import autograd.numpy as anp\nfrom autograd import value_and_grad\n"
            "import workloads as w\nP = w.mlp8_params()\n"
            "g = value_and_grad(w.with_numpy(w.mlp8_loss, anp))\n",
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
    ap.add_argument("--autograd", action="store_true",
                    help="count the same calls written for HIPS autograd (tiny, chain, mlp8)")
    ap.add_argument("--numpy", action="store_true",
                    help="count the chain's plain NumPy forward (per operation)")
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
        if args.autograd:
            if name not in AUTOGRAD:
                continue
            setup, what = AUTOGRAD[name], "(autograd) " + what
        elif args.numpy:
            if name != "chain":
                continue
            setup = "import numpy as np\nimport workloads as w\nx = np.linspace(0.1, 0.9, 16)\n"
            body, what = "w.chain27(x)", "(NumPy forward) " + what
        a = _count(args.src, setup, body, few)
        b = _count(args.src, setup, body, more)
        print(f"{name}: {(b - a) / (more - few) / per:,.0f} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
