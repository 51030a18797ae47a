"""Timing, memory and machine description shared by the benchmark scripts.

Every figure is the median of at least ``min_repeats`` samples taken after a
warm-up call, reported with the minimum (``run.py`` pools the samples of
several rounds).  A sample runs the workload
``number`` times back to back (``number`` is chosen, as ``timeit`` does, so that
one sample lasts at least ``min_sample`` seconds) and divides; the garbage
collector stays on, as it is for users, and is emptied before each figure.
"""

from __future__ import annotations

import gc
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
if str(SRC) not in sys.path:          # measure the working tree's rune
    sys.path.insert(0, str(SRC))


@dataclass
class Timing:
    median: float    # seconds per call
    min: float
    repeats: int
    number: int
    result: object = None
    samples: tuple = ()  # seconds per call, one per sample

    def pooled(self, other):
        """The figure over both sets of samples (the same workload measured in two rounds)."""
        s = tuple(self.samples) + tuple(other.samples)
        return Timing(statistics.median(s), min(s), self.repeats + other.repeats,
                      self.number, None, s)


def measure(fn, *, min_repeats=7, max_repeats=50, budget=0.4, min_sample=0.002, warmup=1):
    """Time ``fn()``: warm-up, then at least ``min_repeats`` samples (more while
    they fit in ``budget`` seconds, at most ``max_repeats``)."""
    for _ in range(warmup):
        fn()
    gc.collect()
    t0 = time.perf_counter()
    result = fn()
    single = max(time.perf_counter() - t0, 1e-9)
    number = 1 if single >= min_sample else min(10_000, int(min_sample / single) + 1)
    repeats = max(min_repeats, min(max_repeats, int(budget / (single * number))))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return Timing(statistics.median(samples), min(samples), repeats, number, result,
                  tuple(samples))


def peak_memory(fn):
    """Peak bytes allocated (and seen by tracemalloc) above the level at the call."""
    fn()                                   # warm caches outside the measurement
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------

def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def memory_total():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def blas_info():
    """The BLAS that NumPy runs, from threadpoolctl if present, else numpy.show_config."""
    import numpy as np
    try:
        from threadpoolctl import threadpool_info
        libs = [i for i in threadpool_info()
                if i.get("user_api") == "blas" and "numpy" in i.get("filepath", "")]
        libs = libs or [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if libs:
            i = libs[0]
            return (f"{i.get('internal_api')} {i.get('version')}, kernel "
                    f"{i.get('architecture')}, {i.get('num_threads')} threads "
                    f"({i.get('threading_layer')}) [threadpoolctl]")
    except ImportError:
        pass
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')} [numpy.show_config]"
    except Exception:                      # noqa: BLE001 - older NumPy has no mode=
        return "unknown"


def git_revision():
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (src/ modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_average():
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def machine_lines(versions):
    """Markdown bullet lines naming the machine and the software."""
    import numpy as np
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                      "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS", "XLA_FLAGS") if k in os.environ}
    lines = [
        f"- Host: `{socket.gethostname()}`, {platform.system()} {platform.release()} "
        f"{platform.machine()}",
        f"- CPU: {cpu_model()}, {usable_cores()} usable cores "
        f"(os.cpu_count() = {os.cpu_count()}), memory {memory_total()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"NumPy {np.__version__}",
        f"- NumPy's BLAS: {blas_info()}",
        "- BLAS environment: " + (", ".join(f"`{k}={v}`" for k, v in env.items())
                                  or "none of OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, "
                                     "OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, "
                                     "MKL_NUM_THREADS set"),
        f"- rune: git {git_revision()}",
        f"- Load average (1, 5, 15 min) at the end: {load_average()} (other processes on "
        f"the machine's cores make medians noisier; the minimum is the steadier figure)",
    ]
    lines += [f"- {name}: {v}" for name, v in versions.items()]
    return lines
