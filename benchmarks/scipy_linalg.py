"""What rune's scipy.linalg/scipy.signal interception costs, and a few calls under it.

    python benchmarks/scipy_linalg.py        # ten seconds or so

* the patch cycle at each outermost transformation's start and end (install + uninstall
  of every patched place), with SciPy's linalg, signal and stats loaded;
* the scan that finds those places (after ``sys.modules`` or ``__main__`` grew);
* SciPy's own ``cho_solve`` outside transformations (rune adds nothing there: nothing is
  patched while no transformation is active);
* ``grad`` of a Gaussian-process NLML with ``cho_factor``/``cho_solve`` (n = 100) and of
  a ``convolve`` loss, against the plain SciPy forward pass.

Each figure: median of at least 7 samples (minimum in brackets).
"""

from __future__ import annotations

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)
from harness import measure

import numpy as np
import scipy.linalg
import scipy.signal
import scipy.stats  # noqa: F401  (a realistic set of loaded modules)

import rune
from rune import numpy_api


def _show(label, t, unit=1e6, suffix="us"):
    print(f"  {label:<58} {t.median * unit:9.1f} {suffix} [{t.min * unit:.1f}]")


def main():
    rune.grad(lambda x: np.sum(x))(np.ones(2))      # imports rune.scipy.*, scans once
    print(f"{len(numpy_api._sites)} patched places")

    def cycle():
        numpy_api._install_coercion()
        numpy_api._uninstall_coercion()
    _show("install + uninstall (per outermost transformation)", measure(cycle))

    def scan():
        numpy_api._sites_seen[0] = 0
        numpy_api._coercion_sites()
    _show("scan for the places (when sys.modules/__main__ grew)", measure(scan), 1e3, "ms")

    rng = np.random.default_rng(0)
    n = 100
    x = np.sort(rng.uniform(-3, 3, n))
    y = np.sin(x)
    d2 = (x[:, None] - x[None, :]) ** 2

    def nlml(theta):
        k = np.exp(theta[0]) * np.exp(-0.5 * d2 / np.exp(2 * theta[1])) + 0.1 * np.eye(n)
        c = scipy.linalg.cho_factor(k, lower=True)
        return 0.5 * y @ scipy.linalg.cho_solve(c, y) + np.sum(np.log(np.diag(c[0])))

    theta = np.array([0.1, 0.2])
    c = scipy.linalg.cho_factor(np.eye(n) * 2.0)
    _show("scipy.linalg.cho_solve outside transformations (n = 100)",
          measure(lambda: scipy.linalg.cho_solve(c, y)))
    _show("GP NLML, plain SciPy forward (n = 100)", measure(lambda: nlml(theta)))
    _show("rune.grad of the GP NLML (n = 100)", measure(lambda: rune.grad(nlml)(theta)))

    sig = rng.standard_normal(2000)
    ker = rng.standard_normal(31)

    def conv_loss(k):
        return np.sum(scipy.signal.convolve(sig, k, mode="same") ** 2)
    _show("convolve loss, plain SciPy forward (2000 x 31)", measure(lambda: conv_loss(ker)))
    _show("rune.grad of the convolve loss", measure(lambda: rune.grad(conv_loss)(ker)))


if __name__ == "__main__":
    main()
