"""W6's ``grad`` against the same backward written by hand in NumPy (the kernel floor),
and W2's ``value_and_grad``: minima of alternated runs in one process.

    OPENBLAS_NUM_THREADS=1 python benchmarks/w6_floor.py             # this tree's rune
    OPENBLAS_NUM_THREADS=1 python benchmarks/w6_floor.py --src /tmp/old/src

Issue 27's target is W6 ``grad`` within 1.05x of the hand-written backward; issue 24's,
W2 and W6 within 5% of an older revision (run this for each, alternately, on a quiet
machine: wall-clock minima still move by a percent or two).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _best_alternated(fs, n):
    best = [float("inf")] * len(fs)
    for f in fs:
        f()                                 # (warm)
    for _ in range(n):
        for k, f in enumerate(fs):
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(HERE), "src"))
    ap.add_argument("-n", type=int, default=40, help="alternated runs (default 40)")
    args = ap.parse_args(argv)
    sys.path.insert(0, args.src)
    sys.path.insert(0, HERE)
    import numpy as np
    import rune
    import workloads as w
    d = w.data()
    W, x = d["W6"]["W"], d["W6"]["x"]
    g6 = rune.grad(w.deep_loss, argnums=(0, 1))
    for a, b in zip(g6(W, x), w.deep_loss_grad_by_hand(W, x)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)    # the same gradient
    D2 = d["W2"]
    g2 = rune.value_and_grad(w.mlp_loss)
    t6, th, t2 = _best_alternated([lambda: g6(W, x), lambda: w.deep_loss_grad_by_hand(W, x),
                                   lambda: g2(D2["p"], D2["x"], D2["y"])], args.n)
    print(f"rune from {args.src}")
    print(f"W6 grad {t6:.4f} s, by hand {th:.4f} s: {t6 / th:.3f}x (target <= 1.05x)")
    print(f"W2 value_and_grad {t2:.4f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
