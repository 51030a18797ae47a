"""The interception of np.asarray & co. and SciPy's functions is contained
(rune.intercept, docs/interception.md): other threads, forked children, modules
imported mid-transformation and interrupted transformations see NumPy as it is."""

import _thread
import gc
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
from rune import core, intercept, numpy_api
from numpy._core import _multiarray_umath as _mu

ORIGINALS = {"asarray": _mu.asarray, "array": _mu.array, "asanyarray": _mu.asanyarray}


def assert_pristine():
    for name, orig in ORIGINALS.items():
        assert getattr(np, name) is orig, name
    assert core.active_traces() == ()
    assert not core._holders and core._active_count == 0
    assert not intercept._installed and intercept.installed_sites() == []
    assert not [key for d, key, _, wrapper in intercept._module_sites if d.get(key) is wrapper]


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


def test_other_threads_call_numpy_directly_while_one_transforms(monkeypatch):
    scanned = []
    real = numpy_api._contains_tracer
    monkeypatch.setattr(numpy_api, "_contains_tracer",
                        lambda obj, depth=0: scanned.append(1) or real(obj, depth))
    with InsideGrad():
        assert np.asarray is not ORIGINALS["asarray"]      # installed, process-wide
        out = {}
        worker = threading.Thread(target=lambda: out.update(
            a=np.array([1.0] * 1000), b=np.asarray([[1, 2]]), c=np.asanyarray(3.0)))
        worker.start()
        worker.join(10)
        assert type(out["a"]) is np.ndarray and out["a"].shape == (1000,)
        assert out["b"].dtype == np.int_ and out["c"].ndim == 0
        assert scanned == [], "a thread with no transformation looked inside its list"
    assert_pristine()


def test_pickle_of_numpy_functions_works_while_another_thread_transforms():
    with InsideGrad():
        out = {}

        def worker():
            for f in (np.asarray, np.array, np.asanyarray, np.mean):
                out[f.__name__] = pickle.loads(pickle.dumps(f))

        t = threading.Thread(target=worker)
        t.start()
        t.join(10)
        assert set(out) == {"asarray", "array", "asanyarray", "mean"}
        np.testing.assert_array_equal(out["asarray"]([1, 2]), [1, 2])
    assert_pristine()


def test_wrappers_look_like_the_originals():
    seen = {}

    def f(x):
        seen.update(name=np.asarray.__name__, module=np.asarray.__module__,
                    wrapped=np.asarray.__wrapped__)
        return x * 2

    rune.grad(f)(1.0)
    assert seen == {"name": "asarray", "module": "numpy", "wrapped": ORIGINALS["asarray"]}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_sees_the_originals():
    with InsideGrad():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:      # the child: no transformation of its own
            ok = (np.asarray is ORIGINALS["asarray"] and np.array is ORIGINALS["array"]
                  and not core._holders)
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
    assert got == b"1"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_inside_a_transformation_keeps_it_working_in_the_child():
    def f(x):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                np.sum(np.asarray(x) ** 3)           # still traced in the child
                g = rune.grad(lambda z: np.sum(np.asarray(z) ** 2))(np.array([3.0]))
                ok = g[0] == 6.0
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        assert got == b"1"
        return np.sum(np.asarray(x) ** 3)

    np.testing.assert_allclose(rune.grad(f)(np.array([2.0])), [12.0])


def test_module_imported_during_a_transformation_keeps_the_originals(tmp_path, monkeypatch):
    (tmp_path / "rune_mid_import_mod.py").write_text(textwrap.dedent("""
        import numpy as np
        from numpy import asarray
        narray = np.array

        def norm2(x):
            return np.sum(np.asarray(x) ** 2)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("rune_mid_import_mod", None)

    def f(x):
        import rune_mid_import_mod as m
        return m.norm2(x)

    np.testing.assert_allclose(rune.grad(f)(np.array([1.0, 2.0])), [2.0, 4.0])
    import rune_mid_import_mod as m
    assert m.asarray is ORIGINALS["asarray"] and m.narray is ORIGINALS["array"]
    np.testing.assert_allclose(rune.grad(m.norm2)(np.array([3.0])), [6.0])
    assert m.asarray is ORIGINALS["asarray"]
    sys.modules.pop("rune_mid_import_mod", None)


def test_numpy_modules_first_imported_during_a_transformation_in_a_fresh_process():
    code = textwrap.dedent("""
        import sys, numpy as np, rune
        from numpy._core import _multiarray_umath as mu
        fresh = [m for m in ("numpy.fft", "numpy.ma") if m not in sys.modules]
        def f(x):
            import numpy.fft, numpy.ma
            return x * 2
        rune.grad(f)(1.0)
        import numpy.fft._pocketfft as p, numpy.ma.core as mc
        assert p.asarray is mu.asarray, p.asarray
        assert mc.narray is mu.array, mc.narray
        print("ok", fresh)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok"), out.stdout


@pytest.fixture
def sigint_raises():
    """Python's KeyboardInterrupt handler for SIGINT, which a non-interactive shell's
    background job (make test runs the two suites side by side) starts with ignored, and
    _thread.interrupt_main then does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_asynchronous_keyboard_interrupt_leaves_nothing_behind(sigint_raises):
    def f(x):
        for _ in range(30):
            x = rune.grad(lambda y: np.sum(np.asarray(y) * np.tanh(y)))(x)
        return np.sum(x)

    x0 = np.linspace(0.1, 1.0, 5)
    start = time.perf_counter()
    rune.vmap(rune.grad(f))(x0[None])
    dur = time.perf_counter() - start
    interrupted = 0
    for i in range(60):
        fired = threading.Event()
        timer = threading.Timer(dur * (i + 0.5) / 60,
                                lambda: (_thread.interrupt_main(), fired.set()))
        try:
            timer.start()
            rune.vmap(rune.grad(f))(x0[None])
            assert fired.wait(10)
            for _ in range(1000):     # a late interrupt lands here, outside rune
                time.sleep(0.001)
        except KeyboardInterrupt:
            interrupted += 1
        timer.join()
        gc.collect()
        assert_pristine()
    assert interrupted > 30


def test_missing_private_helpers_are_skipped():
    intercept.wrap_while_active("numpy._core.fromnumeric", "_no_such_helper_in_numpy",
                                lambda orig: orig)
    intercept.wrap_while_active("numpy._no_such_module", "asarray", lambda orig: orig)
    try:
        assert rune.grad(lambda x: np.mean(np.asarray([x, x])))(2.0) == 1.0
    finally:
        intercept.unregister("numpy._core.fromnumeric", "_no_such_helper_in_numpy")
        intercept.unregister("numpy._no_such_module", "asarray")


def test_a_replacement_made_during_a_transformation_is_left_alone():
    sentinel = lambda *a, **k: "replaced"     # noqa: E731
    saved = np.asanyarray

    def f(x):
        np.asanyarray = sentinel             # someone else patches NumPy meanwhile
        return x * 2

    try:
        rune.grad(f)(1.0)
        assert np.asanyarray is sentinel     # restored by identity: not ours, left alone
    finally:
        np.asanyarray = saved
    assert np.asanyarray is ORIGINALS["asanyarray"]


def test_vectorize_and_scalar_types_are_contained_and_restored():
    """np.vectorize's call and np.float64 & co. are replaced while a transformation is
    active; another thread still gets NumPy's own behaviour, and all is restored after."""
    vectorize_call = np.vectorize.__dict__["_vectorize_call"]
    float64 = np.float64
    with InsideGrad():
        assert ("vectorize", "_vectorize_call") in intercept.installed_sites()
        assert np.vectorize.__dict__["_vectorize_call"] is not vectorize_call
        assert np.float64 is not float64 and np.float64 == float64
        out = {}

        def worker():
            out["v"] = np.vectorize(lambda a: a * 2.0)(np.arange(3.0))
            out["f"] = np.float64(2)
        t = threading.Thread(target=worker)
        t.start()
        t.join(10)
        np.testing.assert_array_equal(out["v"], [0.0, 2.0, 4.0])
        assert type(out["f"]) is float64
    assert np.vectorize.__dict__["_vectorize_call"] is vectorize_call
    assert np.float64 is float64
    assert_pristine()


def test_scipy_functions_are_reached_however_they_are_held():
    """A SciPy function object handed to a transformation, saved under another name, or
    held in a closure before it started reaches rune (its code is swapped while a
    transformation is active) and is SciPy's own again afterwards."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    from scipy.stats import norm
    det, logpdf = scipy_linalg.det, norm.logpdf
    det_code, logpdf_code = det.__code__, norm.logpdf.__func__.__code__
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    np.testing.assert_allclose(rune.grad(det)(A), np.linalg.det(A) * np.linalg.inv(A).T,
                               rtol=1e-12)
    np.testing.assert_allclose(rune.grad(logpdf)(0.3), -0.3, rtol=1e-12)
    x = np.array([0.1, -0.4])
    held = (lambda f: lambda v: np.sum(f(v, 1.0, 2.0)))(logpdf)   # captured earlier
    np.testing.assert_allclose(rune.grad(held)(x), -(x - 1.0) / 4.0, rtol=1e-12)
    rune.check_grads(det, A, order=2)
    As = np.stack([A, A.T + np.eye(2)])         # nested: vmap of grad of the held function
    np.testing.assert_allclose(rune.vmap(rune.grad(det))(As),
                               [rune.grad(det)(a) for a in As], rtol=1e-12)
    assert det.__code__ is det_code and norm.logpdf.__func__.__code__ is logpdf_code
    assert np.isclose(det(A), np.linalg.det(A))
    assert_pristine()


def test_scipy_function_in_another_thread_while_one_transforms_is_scipys_own():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    det = scipy_linalg.det
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    with InsideGrad():
        assert any(name == "det" for _, name in intercept.installed_sites())
        out = {}
        t = threading.Thread(target=lambda: out.update(d=det(A), e=det(A.tolist())))
        t.start()
        t.join(10)
        assert isinstance(out["d"], float) and np.isclose(out["d"], 5.5)
        assert np.isclose(out["e"], 5.5)
    assert_pristine()
