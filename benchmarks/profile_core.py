"""cProfile of rune on W1 (a 200-op elementwise chain) and W3 (per-example gradients).

    python benchmarks/profile_core.py                 # both, top 25 by tottime
    python benchmarks/profile_core.py W3 --top 40 --sort cumulative
    python benchmarks/profile_core.py W1 --dump /tmp/w1.prof   # for snakeviz & co.

Each workload is warmed up, then run ``--calls`` times under the profiler; the
table lists the functions where the time itself is spent (``tottime``), which
is where the per-operation overhead lives.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)

import workloads as w


def w1_case(d):
    import rune
    x = d["W1"]["x"]
    g = rune.grad(w.chain)
    return "W1 rune.grad of the 200-op chain", lambda: g(x), 200


def w3_case(d):
    import rune
    D = d["W3"]
    p, x, y = D["p"], D["x"], D["y"]
    pe = rune.vmap(rune.grad(w.example_loss), in_axes=(None, 0, 0))
    return "W3 rune.vmap(rune.grad(loss), in_axes=(None, 0, 0)), batch 128", \
        lambda: pe(p, x, y), 50


CASES = {"W1": w1_case, "W3": w3_case}


def profile(name, fn, calls, top, sort, dump=None):
    for _ in range(3):
        fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    if dump:
        prof.dump_stats(dump)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    print(f"=== {name}: {calls} calls, sorted by {sort} ===")
    print(f"(total {stats.total_tt * 1e3 / calls:.3f} ms per call under the profiler)")
    stats.sort_stats(sort).print_stats(top)
    text = buf.getvalue()
    # drop pstats' preamble up to the column header
    print(text[text.find("   ncalls"):] if "   ncalls" in text else text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workloads", nargs="*", help="W1 and/or W3 (default both)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--sort", default="tottime", help="a pstats sort key (default tottime)")
    ap.add_argument("--calls", type=int, default=None, help="calls under the profiler")
    ap.add_argument("--dump", default=None, help="also write the stats to this file "
                                                 "(with several workloads, a suffix per one)")
    args = ap.parse_args(argv)
    d = w.data()
    keys = [k.upper() for k in args.workloads] or list(CASES)
    for key in keys:
        if key not in CASES:
            ap.error(f"unknown workload {key!r}: choose from {', '.join(CASES)}")
    for key in keys:
        name, fn, calls = CASES[key](d)
        dump = (args.dump if len(keys) == 1 else f"{args.dump}.{key}") if args.dump else None
        profile(name, fn, args.calls or calls, args.top, args.sort, dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
