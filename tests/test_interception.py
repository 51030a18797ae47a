"""The interception (rune.intercept, docs/interception.md) attacked as issue 22 attacked it:
other threads pickling and comparing dtypes while one transforms, forks and process pools
racing transformations, asynchronous exceptions and signals at random points, modules
imported and removed during transformations, lazy modules, SciPy first imported inside
a transformed function.  Outside transformations everything is NumPy's and SciPy's own.
"""

import _thread
import ctypes
import gc
import inspect
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import rune
from rune import core, intercept
from helpers import assert_numpy_as_without_rune
from numpy._core import _multiarray_umath as _mu

ORIGINALS = {"asarray": _mu.asarray, "array": _mu.array, "asanyarray": _mu.asanyarray}


def _run(code, timeout=120):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=timeout,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


class InsideGrad:
    """Runs rune.grad in a thread and holds it inside the transformation until released."""

    def __init__(self):
        self.inside, self.release = threading.Event(), threading.Event()
        self.result = None

    def f(self, x):
        self.inside.set()
        assert self.release.wait(10)
        return np.sum(np.asarray(x) ** 2)

    def __enter__(self):
        self.thread = threading.Thread(
            target=lambda: setattr(self, "result", rune.grad(self.f)(np.array([1.0, 2.0]))))
        self.thread.start()
        assert self.inside.wait(10)
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.thread.join(10)
        np.testing.assert_allclose(self.result, [2.0, 4.0])


def _plain_world():
    """What a thread with no transformation computes: values, types, pickles, dtype tests."""
    from scipy import stats, special, linalg
    a = np.arange(6.0).reshape(2, 3)
    frozen = stats.norm(1.0, 2.0)
    out = {
        "asarray": np.asarray(a) is a, "array": type(np.array([1, 2])),
        "f64": type(np.float64(1.0)) is np.float64, "in": a.dtype in (np.float64,),
        "dtype_type": a.dtype.type is np.float64, "sum": np.sum([1.0, 2.0]),
        "logsumexp": special.logsumexp([1.0, 2.0]), "det": linalg.det(np.eye(2) * 2),
        "logpdf": frozen.logpdf(0.5), "mean_list": np.mean([1.0, 3.0]),
    }
    for i, obj in enumerate((a, np.float64(2.5), a.dtype, a.dtype.type, np.asarray,
                             np.float32, special.logsumexp, frozen, linalg.det)):
        back = pickle.loads(pickle.dumps(obj))
        out[f"pickle {i}"] = type(back) is type(obj) and (back is obj or i in (0, 1, 7))
    return out


EXPECTED = {"asarray": True, "array": np.ndarray, "f64": True, "in": True,
            "dtype_type": True}


def test_threads_pickle_and_compare_dtypes_while_others_transform():
    pytest.importorskip("scipy")
    reference = _plain_world()
    assert all(reference[k] == v for k, v in EXPECTED.items())
    stop, errors, results = threading.Event(), [], []

    def transformer(seed):
        x = np.random.default_rng(seed).normal(size=3)
        while not stop.is_set():
            try:
                from scipy.special import logsumexp
                g = rune.grad(lambda x: logsumexp(np.asarray(x)) + np.sum(np.sin(x)))(x)
                np.testing.assert_allclose(g, np.exp(x - np.log(np.sum(np.exp(x))))
                                           + np.cos(x))
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

    def plain():
        for _ in range(40):
            results.append(_plain_world())

    ts = [threading.Thread(target=transformer, args=(s,)) for s in range(2)]
    ps = [threading.Thread(target=plain) for _ in range(2)]
    for t in ts + ps:
        t.start()
    for t in ps:
        t.join(60)
    stop.set()
    for t in ts:
        t.join(60)
    assert not errors, errors[:3]
    assert len(results) == 80
    for r in results:
        assert r.keys() == reference.keys()
        for k, v in reference.items():
            assert np.array_equal(r[k], v) if isinstance(v, np.ndarray) else r[k] == v, k


def test_wrappers_carry_the_originals_names_and_signatures():
    rune.grad(lambda x: x * 2)(1.0)
    for name, orig in ORIGINALS.items():
        f = getattr(np, name)
        assert f.__wrapped__ is orig and f.__name__ == name and f.__module__ == "numpy"
        assert pickle.loads(pickle.dumps(f)) is f
        try:
            want = str(inspect.signature(orig))
        except ValueError:          # NumPy 2.0's builtins have none
            continue
        assert str(inspect.signature(f)) == want


def test_scipy_functions_keep_identity_signature_and_source():
    """Every SciPy function rune forwards is SciPy's object, with SciPy's signature, source
    and pickle, and computes SciPy's own result outside transformations."""
    pytest.importorskip("scipy.linalg")
    import scipy.special  # noqa: F401
    import scipy.stats  # noqa: F401
    rune.grad(lambda x: x * 2)(1.0)
    swapped = [f for f in gc.get_objects() if type(f).__name__ == "function"
               and getattr(f, "_rune_original", None) is not None
               and f.__module__.split(".")[0] in ("scipy", "numpy")]
    assert len(swapped) > 20
    for f in swapped:
        orig = f._rune_original
        # (as text: a NaN default, interp1d's fill_value, is not equal to itself)
        assert str(inspect.signature(f)) == str(inspect.signature(orig)), f.__qualname__
        try:
            source = inspect.getsource(orig)
        except OSError:        # a function made by exec (the docs' worked example): none
            with pytest.raises(OSError):
                inspect.getsource(f)
        else:
            assert inspect.getsource(f) == source, f.__qualname__
        assert f.__code__.co_filename == orig.__code__.co_filename
        if "." not in f.__qualname__ and "<" not in f.__qualname__ and getattr(
                sys.modules[f.__module__], f.__name__, None) is f:  # (np.sinc's implementation
            assert pickle.loads(pickle.dumps(f)) is f               # is not found by name)
    from scipy.linalg import det
    from scipy.stats import norm
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    assert det(A) == det._rune_original(A)
    assert norm.logpdf(0.3, 1.0, 2.0) == norm.logpdf.__func__._rune_original(norm, 0.3, 1.0, 2.0)


def test_scipy_functions_are_reached_however_they_are_held():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    from scipy.stats import norm
    det, logpdf = scipy_linalg.det, norm.logpdf
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    np.testing.assert_allclose(rune.grad(det)(A), np.linalg.det(A) * np.linalg.inv(A).T,
                               rtol=1e-12)
    np.testing.assert_allclose(rune.grad(logpdf)(0.3), -0.3, rtol=1e-12)
    x = np.array([0.1, -0.4])
    held = (lambda f: lambda v: np.sum(f(v, 1.0, 2.0)))(logpdf)   # captured earlier
    np.testing.assert_allclose(rune.grad(held)(x), -(x - 1.0) / 4.0, rtol=1e-12)
    rune.check_grads(det, A, order=2)
    As = np.stack([A, A.T + np.eye(2)])
    np.testing.assert_allclose(rune.vmap(rune.grad(det))(As),
                               [rune.grad(det)(a) for a in As], rtol=1e-12)
    assert np.isclose(det(A), np.linalg.det(A)) and type(det(A)) is type(det._rune_original(A))


def test_other_threads_get_scipys_results_while_one_transforms():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    det = scipy_linalg.det
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    with InsideGrad():
        out = {}
        t = threading.Thread(target=lambda: out.update(d=det(A), e=det(A.tolist()),
                                                       v=np.vectorize(lambda a: a * 2.0)(
                                                           np.arange(3.0))))
        t.start()
        t.join(10)
        assert isinstance(out["d"], float) and np.isclose(out["d"], 5.5)
        assert np.isclose(out["e"], 5.5)
        np.testing.assert_array_equal(out["v"], [0.0, 2.0, 4.0])
    assert_numpy_as_without_rune()


def test_installation_is_once_and_the_entry_hook_is_gone():
    rune.grad(lambda x: x * 2)(1.0)
    assert core._entry_hook is None
    sites = intercept.installed_sites()
    wrapper = np.asarray
    for _ in range(3):
        rune.grad(lambda x: np.sum(np.asarray(x)))(np.ones(2))
    assert np.asarray is wrapper and intercept.installed_sites() == sites


# --------------------------------------------------------------------------
# Processes: forks and pools racing transformations; fresh processes
# --------------------------------------------------------------------------

def _child_world(_):
    x = np.array([1.0, 2.0])
    g = rune.grad(lambda z: np.sum(np.asarray(z) ** 2))(x)
    return (type(np.float64(1)) is np.float64, np.asarray(x) is x, g.tolist(),
            np.float64(3.0) * 2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_pools_racing_transformations():
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    stop, errors = threading.Event(), []

    def churn():
        while not stop.is_set():
            try:
                rune.grad(lambda v: np.sum(np.asarray(v) * np.tanh(v)))(np.ones(3))
            except Exception as e:  # pragma: no cover
                errors.append(e)

    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(4):
            with ctx.Pool(2) as pool:
                for r in pool.map(_child_world, range(8)):
                    assert r == (True, True, [2.0, 4.0], 6.0)
    finally:
        stop.set()
        t.join(30)
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_inside_a_transformation_keeps_it_working_in_the_child():
    def f(x):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                np.sum(np.asarray(x) ** 3)           # still traced in the child
                g = rune.grad(lambda z: np.sum(np.asarray(z) ** 2))(np.array([3.0]))
                os.write(w, b"1" if g[0] == 6.0 else b"0")
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        assert got == b"1"
        return np.sum(np.asarray(x) ** 3)

    np.testing.assert_allclose(rune.grad(f)(np.array([2.0])), [12.0])


def test_scipy_first_imported_inside_a_transformed_function_works_the_first_time():
    out = _run("""
        import sys, numpy as np, rune
        assert "scipy" not in sys.modules
        def f(x):
            from scipy.special import logsumexp
            from scipy.stats import norm
            import scipy.linalg
            return logsumexp(x) + np.sum(norm.logpdf(x, 0.5, 2.0)) + scipy.linalg.det(
                np.diag(x))
        x = np.array([0.3, 1.2])
        g = rune.grad(f)(x)
        want = np.exp(x) / np.sum(np.exp(x)) - (x - 0.5) / 4 + np.prod(x) / x
        assert np.allclose(g, want), (g, want)
        import inspect, scipy.special as sp
        assert "def logsumexp" in inspect.getsource(sp.logsumexp)
        assert sp.logsumexp.__module__.startswith("scipy")
        print("ok")
    """)
    assert "ok" in out


def test_lazy_modules_are_not_executed():
    """A module loaded with importlib.util.LazyLoader stays unexecuted through
    transformations (installing runs no module code)."""
    out = _run("""
        import importlib.util, sys, types, tempfile, os, numpy as np, rune
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "rune_lazy_probe.py"), "w") as fh:
            fh.write("import builtins\\nbuiltins.RUNE_LAZY_RAN = True\\n"
                     "raise ImportError('executed')\\n")
        sys.path.insert(0, d)
        spec = importlib.util.find_spec("rune_lazy_probe")
        spec.loader = importlib.util.LazyLoader(spec.loader)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["rune_lazy_probe"] = mod
        spec.loader.exec_module(mod)
        for _ in range(3):
            assert rune.grad(lambda x: x * x)(3.0) == 6.0
        import builtins
        assert not hasattr(builtins, "RUNE_LAZY_RAN")
        print("ok")
    """)
    assert "ok" in out


def test_modules_imported_and_removed_during_transformations(tmp_path, monkeypatch):
    (tmp_path / "rune_mid_import_mod.py").write_text(textwrap.dedent("""
        import numpy as np
        from numpy import asarray
        narray = np.array

        def norm2(x):
            return np.sum(asarray(x) ** 2) + np.sum(narray(x))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    for _ in range(5):
        sys.modules.pop("rune_mid_import_mod", None)

        def f(x):
            import rune_mid_import_mod as m
            return m.norm2(x)

        np.testing.assert_allclose(rune.grad(f)(np.array([1.0, 2.0])), [3.0, 5.0])
        import rune_mid_import_mod as m
        a = np.ones(2)
        assert m.asarray(a) is a and type(m.narray([1.0])) is np.ndarray
        assert m.norm2([1.0, 2.0]) == 8.0
        np.testing.assert_allclose(rune.grad(m.norm2)(np.array([3.0])), [7.0])
    sys.modules.pop("rune_mid_import_mod", None)


# --------------------------------------------------------------------------
# Asynchronous exceptions and signals at random points
# --------------------------------------------------------------------------

@pytest.fixture
def sigint_raises():
    """Python's KeyboardInterrupt handler for SIGINT (a background job starts with it
    ignored, and _thread.interrupt_main then does nothing)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _work(x):
    for _ in range(30):
        x = rune.grad(lambda y: np.sum(np.asarray(y) * np.tanh(y)))(x)
    return np.sum(x)


def test_asynchronous_keyboard_interrupt_leaves_nothing_behind(sigint_raises):
    x0 = np.linspace(0.1, 1.0, 5)
    start = time.perf_counter()
    want = rune.vmap(rune.grad(_work))(x0[None])
    dur = time.perf_counter() - start
    interrupted = 0
    for i in range(60):
        fired = threading.Event()
        timer = threading.Timer(dur * (i + 0.5) / 60,
                                lambda: (_thread.interrupt_main(), fired.set()))
        try:
            timer.start()
            rune.vmap(rune.grad(_work))(x0[None])
            assert fired.wait(10)
            for _ in range(1000):     # a late interrupt lands here, outside rune
                time.sleep(0.001)
        except KeyboardInterrupt:
            interrupted += 1
        timer.join()
        assert_numpy_as_without_rune()
        np.testing.assert_array_equal(rune.vmap(rune.grad(_work))(x0[None]), want)
    assert interrupted > 30


class _Injected(Exception):
    pass


def test_asynchronous_exceptions_in_threads_leave_nothing_behind():
    """PyThreadState_SetAsyncExc lands an exception at a random bytecode of a thread
    that is transforming; the thread's next transformation and everyone else's work."""
    x0 = np.linspace(0.1, 1.0, 5)
    want = rune.grad(_work)(x0)
    hits, wrong = [], []

    def victim(done):
        # (compared by bytes: np.array_equal's own `except Exception` would swallow an
        # exception landing inside it and report a difference: the test's fault, not rune's)
        while not done.is_set():
            try:
                if rune.grad(_work)(x0).tobytes() != want.tobytes():
                    wrong.append(1)
            except _Injected:
                hits.append(1)
        if rune.grad(_work)(x0).tobytes() != want.tobytes():
            wrong.append(1)
        assert_numpy_as_without_rune()

    for i in range(20):
        done = threading.Event()
        t = threading.Thread(target=victim, args=(done,))
        t.start()
        time.sleep(0.002 * (i % 7 + 1))
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident),
                                                   ctypes.py_object(_Injected))
        time.sleep(0.005)
        done.set()
        t.join(30)
    assert hits and not wrong
    assert_numpy_as_without_rune()


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_transformations_inside_signal_handlers():
    x0 = np.linspace(0.1, 1.0, 5)
    want = rune.grad(_work)(x0)
    small = rune.hessian(lambda y: np.sum(np.asarray(y) ** 3))
    seen = []

    def handler(signum, frame):      # lands anywhere in the main thread's transformations
        seen.append(np.array_equal(small(x0), np.diag(6 * x0)))

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
        deadline = time.perf_counter() + 1.0
        while time.perf_counter() < deadline:
            assert np.array_equal(rune.grad(_work)(x0), want)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert seen and all(seen), seen.count(False)
    assert_numpy_as_without_rune()


def test_interrupted_first_installation_completes_in_a_fresh_process():
    """A KeyboardInterrupt landing in the very first installation (the first grad after
    import scipy.linalg) leaves SciPy support working for the rest of the process."""
    out = _run("""
        import _thread, signal, threading, time, numpy as np, scipy.linalg, rune
        signal.signal(signal.SIGINT, signal.default_int_handler)
        A = np.array([[2.0, 1.0], [0.5, 3.0]])
        for delay in (0.0, 0.0005, 0.001, 0.002, 0.004):
            try:
                threading.Timer(delay, _thread.interrupt_main).start()
                rune.grad(scipy.linalg.det)(A)
                time.sleep(0.05)
            except KeyboardInterrupt:
                pass
        assert np.allclose(rune.grad(scipy.linalg.det)(A), np.linalg.det(A) * np.linalg.inv(A).T)
        print("ok")
    """)
    assert "ok" in out


def test_an_entry_registered_by_a_hook_for_an_earlier_module_is_installed():
    """A SciPy surface's import hook may register functions of a module that sorts before
    the one being handled; the first transformation's pass must still install them (found
    when scipy.signal's filters registered scipy.signal._savitzky_golay)."""
    code = textwrap.dedent("""
        import sys, types, numpy as np, rune
        from rune import intercept
        a = types.ModuleType("zz_rune_probe_a"); sys.modules[a.__name__] = a
        b = types.ModuleType("aa_rune_probe_b"); sys.modules[b.__name__] = b
        exec("def f(x):\\n    return 'plain'", b.__dict__)
        def hook():     # runs while module zz... is handled: registers for aa... (sorted first)
            intercept.register("aa_rune_probe_b", "f", lambda orig: (lambda x: 'rune'))
        intercept.after_import("zz_rune_probe_a", hook)
        print(rune.grad(lambda x: x * (1.0 if b.f(x) == 'rune' else 2.0))(1.0))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1.0"
