"""W1 alone, quickly: rune's per-operation overhead on a 200-op elementwise chain.

    python benchmarks/overhead.py            # a few seconds
    python benchmarks/overhead.py --ops 1000 --budget 1

Prints µs per operation for the plain NumPy forward, rune.grad, rune.vjp's
forward pass alone (recording) and the pullback alone (replay), and rune.jvp
and rune.vmap of the chain, each the median of at least 7 samples (minimum in
brackets).  SPEC section 5's target: grad at most 5 µs per operation.
"""

from __future__ import annotations

import argparse
import functools
import sys

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)
from harness import measure

import numpy as np

import workloads


def chain_of(n_ops):
    return functools.partial(workloads.chain, n_ops=n_ops)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=200, help="operations in the chain (multiple of 4)")
    ap.add_argument("--n", type=int, default=16, help="vector length")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per figure")
    args = ap.parse_args(argv)

    import rune
    n_ops = args.ops - args.ops % 4
    chain = chain_of(n_ops)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, args.n)
    t = np.ones_like(x)
    out, pullback = rune.vjp(chain, x)
    cases = {
        "NumPy forward": lambda: chain(x),
        "rune.grad": lambda: rune.grad(chain)(x),
        "rune.vjp forward only": lambda: rune.vjp(chain, x),
        "pullback only": lambda: pullback(1.0),
        "rune.jvp": lambda: rune.jvp(chain, (x,), (t,)),
        "rune.vmap (batch 8)": None,
    }
    xb = np.stack([x] * 8)
    cases["rune.vmap (batch 8)"] = lambda: rune.vmap(chain)(xb)
    per_op = 1e6 / n_ops
    print(f"W1 overhead: {n_ops} elementwise ops on {args.n} float64; µs per op, median (min)")
    for name, fn in cases.items():
        try:
            r = measure(fn, budget=args.budget)
            print(f"  {name:24s} {r.median * per_op:8.3f} ({r.min * per_op:.3f})")
        except Exception as e:                      # noqa: BLE001
            print(f"  {name:24s} FAIL {type(e).__name__}: {e}")
    print("SPEC target: rune.grad at most 5 µs per op")
    return 0


if __name__ == "__main__":
    sys.exit(main())
