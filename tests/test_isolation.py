"""SPEC 1.6 and 3: no process-wide state. Threads never see each other's transformations,
and NumPy outside transformations (and before and after importing rune) is untouched."""

import threading

import numpy as np

import rune
from helpers import pristine_asarray, assert_numpy_as_without_rune


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
    assert_numpy_as_without_rune()


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
    assert_numpy_as_without_rune()


def test_outside_transformations_numpy_behaves_as_numpy():
    asarray, array, asanyarray = pristine_asarray()
    rune.grad(lambda x: np.sum(np.asarray(x) ** 2))(np.ones(2))
    rune.vmap(lambda x: np.array(x, dtype=float))(np.ones(2))
    assert_numpy_as_without_rune()
    import numpy._core.numeric as numeric
    for f, orig in ((np.asarray, asarray), (numeric.asarray, asarray), (np.array, array),
                    (np.asanyarray, asanyarray)):
        assert f.__wrapped__ is orig and f.__name__ == orig.__name__
        for v in ([1, 2], 3.0, np.ones((2, 2), np.float32), np.ma.masked_array([1.0, 2.0])):
            a, b = f(v), orig(v)
            assert type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)
            assert (a is v) == (b is v)
    # ndarray's own operators are not patched
    assert "rune" not in repr(type(np.ones(2)).__add__)
    a = np.ones(3)
    assert type(a + a) is np.ndarray and type(np.sin(a)) is np.ndarray


def test_import_rune_in_fresh_process_leaves_numpy_original():
    """Importing rune replaces nothing: the first transformation installs."""
    import subprocess
    import sys
    code = ("import numpy as np; from numpy._core import _multiarray_umath as mu; "
            "import rune; assert np.asarray is mu.asarray and np.array is mu.array; "
            "assert np.sum.__module__ == 'numpy'; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_every_replacement_in_numpy_is_a_pass_through_of_the_original():
    """Snapshot NumPy's namespaces before ``import rune``; after transformations (one of
    them failing), every name that changed holds a wrapper of the very object it held
    (``__wrapped__``), with its names; nothing else changed, ndarray included."""
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
            snap[(name, k)] = v
    return snap
before = snapshot()
nd = dict(vars(np.ndarray))
import rune
rune.grad(lambda x: np.sum(np.asarray(x) ** 2))(np.ones(2))
rune.vmap(lambda x: np.polynomial.polynomial.polyval(x, [1.0, 2.0]))(np.ones(2))
try:
    rune.grad(lambda x: float(x))(1.0)
except TypeError:
    pass
after = snapshot()
changed = [k for k in before if k in after and before[k] is not after[k]
           and not k[1].startswith("__")]
assert changed, "nothing installed"
for k in changed:
    new, old = after[k], before[k]
    assert getattr(new, "__wrapped__", None) is old, k
    assert new.__name__ == old.__name__ and new.__module__ == old.__module__, k
    assert new.__doc__ == old.__doc__, k
assert dict(vars(np.ndarray)) == nd
assert np.float64 is before[("numpy", "float64")]
print("ok", len(changed))
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
