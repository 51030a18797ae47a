"""SPEC 1.6 and 3: no process-wide state. Threads never see each other's transformations,
and NumPy outside transformations (and before and after importing rune) is untouched."""

import threading

import numpy as np

import rune
from helpers import pristine_asarray


def test_threads_do_not_see_each_others_transformations():
    barrier = threading.Barrier(2, timeout=10)
    results, errors = {}, []

    def worker(name, scale):
        try:
            def f(x):
                barrier.wait()     # both threads are inside their grad now
                depth = len(rune.core.active_traces())
                y = np.sum(np.sin(x) * scale)
                barrier.wait()
                return y, depth
            x = np.linspace(0, 1, 4) * scale
            g, depth = rune.grad(f, has_aux=True)(x)
            results[name] = (g, depth, x)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(n, s)) for n, s in (("a", 1.0), ("b", 2.0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert not errors, errors
    for name, s in (("a", 1.0), ("b", 2.0)):
        g, depth, x = results[name]
        assert depth == 1
        np.testing.assert_allclose(g, np.cos(x) * s)
    assert rune.core.active_traces() == ()
    assert np.asarray is pristine_asarray()[0]


def test_threads_concurrent_nested_transformations_stress():
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(30):
                x = rng.normal(size=3)
                g = rune.grad(lambda x: np.sum(np.sin(x) * x))(x)
                np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x))
                h = rune.jvp(rune.grad(lambda x: np.sum(x ** 3)), (x,), (np.ones(3),))[1]
                np.testing.assert_allclose(h, 6 * x)
                v = rune.vmap(rune.grad(lambda r: np.sum(np.asarray(r) ** 2)))(np.stack([x, x]))
                np.testing.assert_allclose(v, 2 * np.stack([x, x]))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    assert np.asarray is pristine_asarray()[0]


def test_outside_transformations_numpy_is_untouched():
    asarray, array, asanyarray = pristine_asarray()
    assert np.asarray is asarray and np.array is array and np.asanyarray is asanyarray
    import numpy._core.numeric as numeric
    assert numeric.asarray is asarray
    rune.grad(lambda x: np.sum(np.asarray(x) ** 2))(np.ones(2))
    rune.vmap(lambda x: np.array(x, dtype=float))(np.ones(2))
    assert np.asarray is asarray and np.array is array and np.asanyarray is asanyarray
    assert numeric.asarray is asarray
    # ndarray's own operators are not patched
    assert "rune" not in repr(type(np.ones(2)).__add__)
    a = np.ones(3)
    assert type(a + a) is np.ndarray and type(np.sin(a)) is np.ndarray


def test_import_rune_in_fresh_process_leaves_numpy_original():
    import subprocess
    import sys
    code = ("import numpy as np; from numpy._core import _multiarray_umath as mu; "
            "import rune; assert np.asarray is mu.asarray and np.array is mu.array; "
            "assert np.sum.__module__ == 'numpy'; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


# The coercion patch must be installed/removed atomically: one thread's transformation
# exiting while another's enters.  The removal is slowed down through
# rune.core._coercion_hooks[1] to make the interleaving deterministic.
def test_threads_exit_racing_entry_keeps_library_coercion_working():
    core = rune.core
    original_uninstall = core._coercion_hooks[1]
    a_exiting, b_entered, a_done = threading.Event(), threading.Event(), threading.Event()
    state = {"armed": True}
    errors = []

    def slow_uninstall():
        if state.pop("armed", False):
            a_exiting.set()
            b_entered.wait(1.0)        # another thread enters a transformation meanwhile
            original_uninstall()
            a_done.set()
        else:
            original_uninstall()

    def lib(x):
        b_entered.set()
        a_done.wait(1.0)
        return np.sum(np.asarray(x) ** 2)   # library code coercing its input

    def thread_b():
        a_exiting.wait(1.0)
        try:
            np.testing.assert_allclose(rune.grad(lib)(np.array([1.0, 2.0])), [2.0, 4.0])
        except Exception as e:
            errors.append(e)

    core._coercion_hooks[1] = slow_uninstall
    try:
        tb = threading.Thread(target=thread_b)
        tb.start()
        rune.grad(lambda x: np.sum(x ** 2))(np.ones(2))      # thread A
        tb.join(10)
        leaked = np.asarray is not pristine_asarray()[0]
    finally:
        core._coercion_hooks[1] = original_uninstall
        _force_unpatch_numpy()
    assert not errors, errors                 # B ran unpatched, or
    assert not leaked, "the np.asarray patch stayed installed after both threads finished"


def _force_unpatch_numpy():
    """Restore NumPy's coercion functions wherever rune's wrappers were left behind."""
    from rune import intercept
    intercept.uninstall()


def test_numpy_namespace_identical_before_import_and_after_transformations():
    import subprocess
    import sys
    code = r'''
import sys, numpy as np
import numpy.linalg, numpy.fft, numpy.polynomial
def snapshot():
    snap = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "numpy" or name.startswith("numpy.")):
            continue
        for k, v in list(getattr(mod, "__dict__", {}).items()):
            snap[(name, k)] = id(v)
    return snap
before = snapshot()
nd = {k: id(v) for k, v in vars(np.ndarray).items()}
import rune
rune.grad(lambda x: np.sum(np.asarray(x) ** 2))(np.ones(2))
rune.vmap(lambda x: np.polynomial.polynomial.polyval(x, [1.0, 2.0]))(np.ones(2))
try:
    rune.grad(lambda x: float(x))(1.0)
except TypeError:
    pass
after = snapshot()
changed = [k for k in before if k in after and before[k] != after[k] and not k[1].startswith("__")]
assert not changed, changed[:10]
assert all(nd.get(k) == id(v) for k, v in vars(np.ndarray).items())
print("ok")
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
