"""Run random programs (tests/programs.py) against rune for as long as asked, and print every
disagreement shrunk to a minimal program.

    PYTHONPATH=src python tests/fuzz.py --seconds 600        # or: make fuzz FUZZ_SECONDS=600

Each round runs hypothesis from a fresh seed (generation only: its shrinker is slow on
these programs); a failing program is shrunk by deleting statements one at a time (and
returning an earlier value, and dropping unused inputs) while the same check fails with the
same kind of error.  Disagreements are printed as Python source with their inputs and vmap
axes, one per kind (check and exception type); the exit status is 1 if any was found.
"""

import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hypothesis import HealthCheck, Phase, given, seed, settings, strategies as st  # noqa: E402

import program_checks as checks  # noqa: E402
import programs  # noqa: E402


def run(seconds, examples_per_round=50, max_ops=30, out=sys.stdout):
    found = {}
    deadline = time.time() + seconds
    rounds = 0
    n_programs = [0]
    while time.time() < deadline:
        rounds += 1
        failure = []

        @seed(int(time.time() * 1000) % 2**32 + rounds)
        @settings(max_examples=examples_per_round, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck), print_blob=False,
                  phases=[Phase.generate],
                  report_multiple_bugs=False)
        @given(programs.programs(max_ops=max_ops), st.data())
        def one(p, data):
            n_programs[0] += 1
            try:
                checks.check_program(p, data)
            except checks.Disagreement as e:
                failure[:] = [p, e]
                raise

        try:
            one()
        except checks.Disagreement:
            p, e = failure
            sig = checks.signature(e)
            if sig in found:
                continue
            small, axes = checks.minimize(p, sig, e.in_axes)
            err = e
            if small is not None:      # (None: the shrunk program no longer runs in NumPy)
                try:
                    checks.check_program(small, in_axes=axes)
                except checks.Disagreement as e2:
                    err = e2
            found[sig] = str(err)
            print(f"\n=== disagreement {len(found)}: {sig[0]} ({sig[1]})\n{err}", file=out,
                  flush=True)
        except Exception:
            traceback.print_exc()
    print(f"\n{n_programs[0]} programs in {rounds} rounds, {len(found)} kinds of disagreement"
          f"; {len(checks.KNOWN_REFUSALS)} met the documented vmap reshape-layout refusal "
          f"(a clear error, counted apart: --all reports them)", file=out)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("FUZZ_SECONDS", 60)))
    ap.add_argument("--max-ops", type=int, default=30)
    ap.add_argument("--all", action="store_true",
                    help="also generate the known limits (programs.KNOWN)")
    args = ap.parse_args()
    if args.all:
        programs.KNOWN.update(dict.fromkeys(programs.KNOWN, True))
    found = run(args.seconds, max_ops=args.max_ops)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
