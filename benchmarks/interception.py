"""What rune's interception of NumPy/SciPy (rune.intercept) costs, per call.

    python benchmarks/interception.py            # about half a minute

Four situations for the same plain calls (np.asarray of an array, np.array of a
1000-element list, np.mean of a list, scipy.special.logsumexp, scipy.stats.norm.logpdf):

* ``before``: no transformation has run in this process yet: NumPy and SciPy are the very
  same objects as without rune, so this is NumPy's and SciPy's own speed;
* ``installed``: after the first transformation the guarded pass-throughs stay installed
  (rune.intercept installs once and never removes); this thread has no transformation
  and goes straight to the original;
* ``other thread``: another thread is inside a transformation meanwhile (the same code
  path as ``installed``: nothing is process-wide per call);
* ``inside``: the same plain call made inside a transformation (rune.grad of a function
  whose derivative does not involve it), where the wrapper runs rune's version.

Each figure is the median (minimum in brackets) of at least 7 samples.
"""

from __future__ import annotations

import threading

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)
from harness import measure

import numpy as np


def main():
    import rune
    import scipy.special as sc
    import scipy.stats as st

    arr = np.ones(16)
    lst = [1.0] * 1000
    x = np.linspace(-1, 1, 16)
    calls = {
        "np.asarray(ndarray)": lambda: np.asarray(arr),
        "np.array(list of 1000)": lambda: np.array(lst),
        "np.mean(list of 1000)": lambda: np.mean(lst),
        "scipy.special.logsumexp(16)": lambda: sc.logsumexp(x),
        "scipy.stats.norm.logpdf(16)": lambda: st.norm.logpdf(x, 0.1, 2.0),
    }
    rows = {name: {} for name in calls}

    def run(label):
        for name, call in calls.items():
            rows[name][label] = measure(call, budget=0.3)

    run("before")
    rune.grad(lambda v: v * 2)(1.0)         # the first transformation installs
    run("installed")
    trivial = {"grad(x * 2), idle": measure(lambda: rune.grad(lambda v: v * 2)(1.0))}

    inside, release = threading.Event(), threading.Event()

    def holder(v):
        inside.set()
        release.wait(120)
        return v * 2

    t = threading.Thread(target=lambda: rune.grad(holder)(1.0))
    t.start()
    inside.wait(10)
    try:
        run("other thread")
        trivial["grad(x * 2), other thread transforming"] = measure(
            lambda: rune.grad(lambda v: v * 2)(1.0))
    finally:
        release.set()
        t.join()

    for name, call in calls.items():
        def under_grad(call=call):
            return rune.grad(lambda v: (call(), v * 2)[1])(1.0)
        base = trivial["grad(x * 2), idle"].median
        tm = measure(under_grad, budget=0.3)
        rows[name]["inside"] = tm
        rows[name]["inside_net"] = tm.median - base

    print(f"{'call':30s} {'before':>15s} {'installed':>15s} {'other thread':>15s} "
          f"{'overhead':>9s} {'inside (net)':>12s}")
    for name, r in rows.items():
        before, inst, other = r["before"], r["installed"], r["other thread"]
        print(f"{name:30s} {before.median * 1e6:8.2f} ({before.min * 1e6:5.2f}) "
              f"{inst.median * 1e6:8.2f} ({inst.min * 1e6:5.2f}) "
              f"{other.median * 1e6:8.2f} ({other.min * 1e6:5.2f}) "
              f"{(inst.min - before.min) * 1e6:+8.2f}  {r['inside_net'] * 1e6:9.2f} µs")
    for name, tm in trivial.items():
        print(f"{name:48s} {tm.median * 1e6:9.2f} ({tm.min * 1e6:5.2f}) µs")


if __name__ == "__main__":
    main()
