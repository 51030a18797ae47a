"""scipy.signal's convolutions, unchanged, under every transformation: values against
SciPy's own (every mode, 1-d and N-d, real and complex, ``axes=``), finite differences,
JVP against VJP and second order (``check_grads``), ``vmap`` against a loop."""

import numpy as np
import pytest

import rune

signal = pytest.importorskip("scipy.signal")
from scipy.signal import fftconvolve  # noqa: E402  (the user's idiom)
from helpers import check_vmap  # noqa: E402

FUNCS = ["convolve", "correlate", "fftconvolve", "oaconvolve"]
MODES = ["full", "same", "valid"]


def rand(shape, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


SHAPES = {   # name -> (in1 shape, in2 shape, extra keywords (fftconvolve/oaconvolve only))
    "1d": ((7,), (3,), {}),
    "1d_kernel_longer": ((3,), (6,), {}),
    "2d": ((5, 6), (2, 3), {}),
    "3d": ((3, 4, 2), (2, 2, 2), {}),
    "axes_last": ((4, 6), (1, 3), {"axes": -1}),
    "axes_broadcast": ((4, 6), (4, 3), {"axes": [1]}),
    "axes_first_3d": ((5, 3, 2), (2, 3, 1), {"axes": 0}),
}


def _case(fn, shape):
    s1, s2, kw = SHAPES[shape]
    if kw and fn in ("convolve", "correlate"):
        pytest.skip("axes= is fftconvolve's and oaconvolve's")
    return s1, s2, kw


def _values_match(f, args):
    want = f(*args)
    got = rune.jvp(f, tuple(args), tuple(np.zeros_like(a) for a in args))[0]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("fn", FUNCS)
def test_values_and_gradients(fn, shape, mode):
    s1, s2, kw = _case(fn, shape)

    def f(a, b):
        return getattr(signal, fn)(a, b, mode=mode, **kw)
    a, b = rand(s1), rand(s2, seed=1)
    _values_match(f, [a, b])
    rune.check_grads(f, a, b, order=2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", FUNCS)
def test_complex(fn, mode):
    def f(a, b):
        return getattr(signal, fn)(a, b, mode=mode)
    a, b = rand((4, 5), True), rand((2, 3), True, seed=1)
    _values_match(f, [a, b])
    _values_match(f, [a.real, b])
    rune.check_grads(f, a, b, order=1)


@pytest.mark.parametrize("fn", FUNCS)
@pytest.mark.parametrize("mode", MODES)
def test_vmap_against_loop(fn, mode):
    def f(a, b):
        return getattr(signal, fn)(a, b, mode=mode)
    a, b = rand((3, 6, 5)), rand((3, 2, 3), seed=1)
    check_vmap(f, a, b)
    check_vmap(f, a, b[0], in_axes=(0, None))
    check_vmap(f, np.moveaxis(a, 0, 2), b, in_axes=(2, 0))
    check_vmap(rune.grad(lambda a, b: np.sum(f(a, b) ** 2)), a, b)


def test_integers_keep_scipys_dtype():
    x = np.array([1, 2, 3])
    got = rune.vmap(lambda k: signal.convolve(x, k))(np.array([[1, 1], [2, 0]]))
    np.testing.assert_array_equal(got, [signal.convolve(x, [1, 1]), signal.convolve(x, [2, 0])])
    assert got.dtype == signal.convolve(x, np.array([1, 1])).dtype


def test_name_imported_from_scipy_signal_works():
    k = np.array([0.25, 0.5, 0.25])

    def smooth_loss(x):
        return np.sum(fftconvolve(x, k, mode="same") ** 2)
    rune.check_grads(smooth_loss, rand((8,)))


def test_scalars_multiply():
    f = lambda a, b: signal.correlate(a, b)   # noqa: E731
    assert rune.grad(f)(2.0, 3.0) == 3.0


@pytest.mark.parametrize("call, match", [
    (lambda a: signal.convolve(a, a[0]), "scipy.signal.convolve.*same dimensionality"),
    (lambda a: signal.correlate(a, a, mode="circular"), "scipy.signal.correlate"),
    (lambda a: signal.convolve(a, a, method="slow"), "scipy.signal.convolve"),
    (lambda a: signal.fftconvolve(a[:2, :3], a[:3, :2], mode="valid"),
     "scipy.signal.fftconvolve"),
    (lambda a: signal.oaconvolve(a, a[:2, :2], axes=0), "scipy.signal.oaconvolve"),
])
def test_bad_inputs_name_scipys_function(call, match):
    with pytest.raises(ValueError, match=match):
        rune.grad(lambda a: np.sum(call(a)))(rand((3, 3)))
