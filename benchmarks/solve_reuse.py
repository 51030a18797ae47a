"""Solves that factor once (issue 14): the GP program's gradient (two triangular solves
through a Cholesky factor) and the gradient of a solve with a general 300 x 300 matrix,
thread CPU time, this tree's rune against another copy of rune's ``src`` in alternation
(each round reloads both, so drifts of the machine hit both alike), and PyTorch eager's
GP gradient (``programs_peers.py``, one thread) in the same rounds when it is installed.

    git archive main src | tar -x -C /tmp/mainsrc2
    cd /work/wt-gpsolve && OPENBLAS_NUM_THREADS=1 \\
        /work/venv-bench/bin/python benchmarks/solve_reuse.py /tmp/mainsrc2/src [rounds]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # before NumPy loads its BLAS
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent


def load(src):
    """rune (and the benchmark programs) from ``src``, fresh."""
    for k in list(sys.modules):
        if k == "rune" or k.startswith("rune.") or k in ("programs", "harness"):
            del sys.modules[k]
    sys.path[:0] = [str(src), str(HERE)]
    try:
        import rune
        import user_programs as programs
    finally:
        del sys.path[:2]
    assert Path(rune.__file__).is_relative_to(src), rune.__file__
    return rune, programs


def workloads(rune, programs):
    gp = programs.setup()[0]
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 300)) + 30 * np.eye(300)
    b = rng.standard_normal(300)
    general = rune.grad(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), argnums=(0, 1))
    return {"gp grad": lambda: rune.grad(programs.gp_nlml)(*gp),
            "solve 300x300 grad (a, b)": lambda: general(a, b)}


def main():
    other = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    srcs = {"this tree": HERE.parent / "src"}
    if other is not None:
        srcs["other"] = other
    times = {}
    peers = {}
    try:
        import torch
        torch.set_num_threads(1)
        rune, programs = load(srcs["this tree"])
        sys.path.insert(0, str(HERE))
        import programs_peers
        peers["torch"] = {"gp grad": programs_peers.torch_programs(*programs.setup())["gp"][1]}
    except ImportError:
        pass
    for _ in range(rounds):
        for name, src in list(srcs.items()) + list(peers.items()):
            fs = workloads(*load(src)) if isinstance(src, Path) else src
            for w, f in fs.items():
                f()                                     # warm
                for _ in range(3):
                    t = time.thread_time()
                    f()
                    times.setdefault((w, name), []).append(time.thread_time() - t)
    print(f"thread CPU, ms: min / median of {3 * rounds} samples")
    for (w, name), ts in times.items():
        print(f"  {w:28s} {name:10s} {1e3 * min(ts):7.2f} / {1e3 * statistics.median(ts):7.2f}")


if __name__ == "__main__":
    main()
