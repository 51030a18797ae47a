"""scipy.signal's spectral functions under every transformation: stft and istft (every
boundary, padded, one- and two-sided, complex input, axis, scaling, detrend, window names
and arrays, traced windows), spectrogram in every mode, welch and csd (mean and median),
and SciPy's own periodogram and coherence running on them.  Values (shapes, dtypes, grids)
against SciPy's own, derivatives against finite differences and JVP against VJP
(``check_grads``), ``vmap`` against a loop, ``jacfwd`` against ``jacrev``, the
``istft(stft(x))`` round trip and a small fit of a sinusoid to a target spectrogram."""

import warnings

import numpy as np
import pytest

import rune

signal = pytest.importorskip("scipy.signal")
from scipy.signal import stft, istft  # noqa: E402  (the user's idiom)
from helpers import check_vmap  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal(40)
X2 = RNG.standard_normal((3, 40))
XC = X + 1j * RNG.standard_normal(40)
EPS = np.finfo(float).eps
F32 = float(np.finfo(np.float32).eps)


def values(f, *args):
    """``f``'s value computed under ``jvp`` (every argument traced)."""
    return rune.jvp(f, args, args)[0]


def same(got, want, ulps=100, eps=EPS):
    """Equal shapes, dtypes and values to ``ulps`` roundings of the largest entry."""
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=ulps * eps, atol=ulps * eps * scale)


STFT_OPTIONS = [
    {}, {"nperseg": 16}, {"nperseg": 15, "noverlap": 5}, {"nperseg": 16, "nfft": 20},
    {"nperseg": 16, "boundary": "even"}, {"nperseg": 16, "boundary": "odd"},
    {"nperseg": 16, "boundary": "constant"}, {"nperseg": 16, "boundary": None},
    {"nperseg": 16, "boundary": None, "padded": False}, {"nperseg": 16, "padded": False},
    {"nperseg": 16, "return_onesided": False}, {"nperseg": 16, "scaling": "psd", "fs": 3.0},
    {"nperseg": 16, "detrend": "constant"}, {"nperseg": 16, "detrend": "linear"},
    {"window": np.arange(1.0, 11.0), "nperseg": 10}, {"window": "hamming", "nperseg": 8},
    {"window": ("tukey", 0.3), "nperseg": 12, "noverlap": 9}, {"nperseg": 1, "noverlap": 0},
]


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # nperseg > len(x): SciPy warns too
        return f(*args, **kwargs)


@pytest.mark.parametrize("kw", STFT_OPTIONS, ids=str)
def test_stft_values_match_scipy(kw):
    same(_quiet(values, lambda x: stft(x, **kw), X), _quiet(signal.stft, X, **kw))
    same(_quiet(values, lambda x: stft(x, axis=0, **kw), X2.T),
         _quiet(signal.stft, X2.T, axis=0, **kw))
    same(_quiet(values, lambda x: stft(x, **kw), XC), _quiet(signal.stft, XC, **kw))


@pytest.mark.parametrize("mode", ["psd", "complex", "magnitude", "angle", "phase"])
@pytest.mark.parametrize("kw", [{}, {"nperseg": 16, "return_onesided": False},
                                {"nperseg": 10, "noverlap": 4, "scaling": "spectrum"},
                                {"window": np.hanning(12), "detrend": False}], ids=str)
def test_spectrogram_values_match_scipy(mode, kw):
    same(_quiet(values, lambda x: signal.spectrogram(x, axis=0, mode=mode, **kw), X2.T),
         _quiet(signal.spectrogram, X2.T, axis=0, mode=mode, **kw))


@pytest.mark.parametrize("average", ["mean", "median"])
@pytest.mark.parametrize("kw", [{}, {"nperseg": 16}, {"nperseg": 15, "noverlap": 3, "nfft": 18},
                                {"nperseg": 16, "return_onesided": False, "fs": 2.0},
                                {"nperseg": 16, "scaling": "spectrum", "detrend": "linear"},
                                {"window": np.hanning(8), "detrend": False}], ids=str)
def test_welch_csd_values_match_scipy(average, kw):
    kw = dict(kw, average=average)
    same(_quiet(values, lambda x: signal.welch(x, **kw), X2),
         _quiet(signal.welch, X2, **kw))
    y = X2[:, :33]                          # shorter: zero-padded, as SciPy does
    same(_quiet(values, lambda x, y: signal.csd(x, y, **kw), X2, y),
         _quiet(signal.csd, X2, y, **kw))
    same(_quiet(values, lambda x: signal.csd(XC, x, **kw), X),
         _quiet(signal.csd, XC, X, **kw))


def test_callable_detrend_as_scipy_calls_it():
    def first(d):                 # not translation-invariant along any other axis
        return d - d[..., :1]
    same(values(lambda x: signal.welch(x, nperseg=10, detrend=first, axis=0), X2.T),
         signal.welch(X2.T, nperseg=10, detrend=first, axis=0))    # one segment at a time
    same(values(lambda x: stft(x, nperseg=10, detrend=first, axis=0), X2.T),
         stft(X2.T, nperseg=10, detrend=first, axis=0))            # all, data axis moved back
    rune.check_grads(lambda x: signal.welch(x, nperseg=10, detrend=first, axis=0)[1], X2.T,
                     order=1)


def test_csd_where_scipy_1_17_raises():
    # a complex y with a real x: two-sided, the conjugate of csd(y, x)
    f, p = values(lambda x: signal.csd(x, XC, nperseg=8), X)
    f_want, p_want = signal.csd(XC, X, nperseg=8)
    same((f, p), (f_want, np.conj(p_want)))
    # other axes broadcast, the shorter signal zero-padded: row by row
    y = X2[1:2, :33]
    f, p = values(lambda x, y: signal.csd(x, y, nperseg=8), X2, y)
    same(p, np.stack([signal.csd(row, y[0], nperseg=8)[1] for row in X2]))


def test_periodogram_and_coherence_are_scipys_code_on_rune_welch_csd():
    for kw in [{}, {"window": "hann", "nfft": 50, "scaling": "spectrum"}, {"nfft": 30}]:
        same(values(lambda x: signal.periodogram(x, **kw), X2),
             signal.periodogram(X2, **kw))
    same(values(lambda x, y: signal.coherence(x, y, nperseg=8), X, X2[0]),
         signal.coherence(X, X2[0], nperseg=8))
    rune.check_grads(lambda x: signal.periodogram(x, window="hann")[1], X, order=1)
    rune.check_grads(lambda x, y: signal.coherence(x, y, nperseg=8)[1], X, X2[0], order=1)


ISTFT_OPTIONS = [{}, {"nperseg": 16}, {"nperseg": 15, "noverlap": 5},
                 {"nperseg": 16, "nfft": 20}, {"nperseg": 16, "scaling": "psd", "fs": 3.0},
                 {"window": np.hanning(10) + 0.1, "nperseg": 10},
                 {"window": ("tukey", 0.3), "nperseg": 12, "noverlap": 9}]


@pytest.mark.parametrize("kw", ISTFT_OPTIONS, ids=str)
def test_istft_values_and_round_trip(kw):
    zxx = _quiet(signal.stft, X, **kw)[2]
    same(_quiet(values, lambda z: istft(z, **kw), zxx), _quiet(signal.istft, zxx, **kw))
    z3 = np.moveaxis(_quiet(signal.stft, X2, **kw)[2], -1, 0)   # (time, batch, freq)
    same(_quiet(values, lambda z: istft(z, time_axis=0, freq_axis=-1, **kw), z3),
         _quiet(signal.istft, z3, time_axis=0, freq_axis=-1, **kw))
    zc = _quiet(signal.stft, XC, **kw)[2]
    same(_quiet(values, lambda z: istft(z, input_onesided=False, **kw), zc),
         _quiet(signal.istft, zc, input_onesided=False, **kw))
    # the round trip: x back to ~1e-12 wherever SciPy's is, and its Jacobian the identity
    def round_trip(x):
        return istft(stft(x, **kw)[2], **kw)[1][:40]
    want = _quiet(signal.istft, zxx, **kw)[1][:40]
    if np.allclose(want, X, atol=1e-12):
        np.testing.assert_allclose(_quiet(values, round_trip, X), X, atol=1e-12)
        np.testing.assert_allclose(_quiet(rune.jacrev(round_trip), X), np.eye(40), atol=1e-12)


@pytest.mark.parametrize("boundary", ["zeros", "even", "odd", "constant", None])
def test_stft_derivatives(boundary):
    w = RNG.standard_normal((9, 5))
    def power(x):
        return np.sum(np.abs(stft(x, nperseg=16, boundary=boundary)[2]) ** 2)
    def linear(x):
        return np.sum(stft(x, nperseg=16, noverlap=10, boundary=boundary)[2].real[:, :5] * w)
    rune.check_grads(power, X, order=2)
    rune.check_grads(linear, X, order=1)
    rune.check_grads(lambda x: stft(x, nperseg=16, boundary=boundary, return_onesided=False,
                                    detrend="linear")[2], X, order=1)


def test_complex_input_window_and_options_derivatives():
    rune.check_grads(lambda x: stft(x, nperseg=16, axis=0, scaling="psd")[2], X2.T, order=1)
    rune.check_grads(lambda x: _quiet(stft, x, nperseg=12)[2], XC, order=1)
    rune.check_grads(lambda w: stft(X, window=w, nperseg=10)[2], np.hanning(10) + 0.1,
                     order=2)
    rune.check_grads(lambda w: istft(stft(X, nperseg=10)[2], window=w)[1],
                     np.hanning(10) + 0.1, order=1)
    for mode in ["psd", "magnitude", "angle", "phase", "complex"]:
        rune.check_grads(lambda x: signal.spectrogram(x, nperseg=10, mode=mode)[2], X,
                         order=1)
    y = X2[1] + RNG.standard_normal(40)    # not x's row: csd(x, x)'s imaginary parts are
    for average in ["mean", "median"]:     # all zero, a tie the median is not smooth at
        rune.check_grads(lambda x, y: signal.csd(x, y, nperseg=10, average=average)[1],
                         X2, y, order=1)


def test_istft_derivatives():
    zxx = signal.stft(X, nperseg=16)[2]
    rune.check_grads(lambda z: istft(z, nperseg=16)[1], zxx, order=2)
    zc = signal.stft(XC, nperseg=10, return_onesided=False)[2]
    rune.check_grads(lambda z: istft(z, nperseg=10, input_onesided=False,
                                     scaling="psd", fs=2.0)[1], zc, order=1)
    with pytest.warns(UserWarning, match="NOLA"):     # the Hann window's zero, unextended
        rune.check_grads(lambda z: istft(z, boundary=False)[1], zxx, order=1)


def test_vmap_against_a_loop():
    batch = RNG.standard_normal((4, 40))
    check_vmap(lambda x: stft(x, nperseg=16)[2], batch)
    check_vmap(lambda x: stft(x, nperseg=16, axis=0)[2], batch.T[:, None, :], in_axes=2)
    check_vmap(lambda x: signal.welch(x, nperseg=10, average="median")[1], batch)
    check_vmap(lambda x: signal.spectrogram(x, nperseg=10, mode="magnitude")[2], batch)
    zs = signal.stft(batch, nperseg=16)[2]
    check_vmap(lambda z: istft(z, nperseg=16)[1], zs)
    check_vmap(lambda w: stft(X, window=w, nperseg=8)[2],
               np.hanning(8) + RNG.uniform(0.1, 0.2, (3, 8)))
    g = rune.vmap(rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=16)[2]) ** 2)))(batch)
    loop = [rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=16)[2]) ** 2))(b) for b in batch]
    np.testing.assert_allclose(g, np.stack(loop), rtol=1e-12, atol=1e-14)


def test_jacfwd_equals_jacrev():
    for f in [lambda x: np.abs(stft(x, nperseg=16)[2]),
              lambda x: signal.welch(x, nperseg=16)[1],
              lambda x: istft(stft(x, nperseg=10)[2] * np.arange(6.0)[:, None])[1]]:
        np.testing.assert_allclose(rune.jacfwd(f)(X), rune.jacrev(f)(X), rtol=1e-10,
                                   atol=1e-13)


def test_jit_matches():
    f = rune.jit(rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=16)[2]) ** 2)))
    want = rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=16)[2]) ** 2))(X)
    np.testing.assert_allclose(f(X), want, rtol=1e-13)
    np.testing.assert_allclose(f(X + 1.0), rune.grad(
        lambda x: np.sum(np.abs(stft(x, nperseg=16)[2]) ** 2))(X + 1.0), rtol=1e-13)


def test_float32_dtypes():
    x = X.astype(np.float32)
    same(values(lambda x: stft(x, nperseg=16)[2], x), signal.stft(x, nperseg=16)[2], eps=F32)
    z = signal.stft(x, nperseg=16)[2]
    same(values(lambda z: istft(z, nperseg=16), z), signal.istft(z, nperseg=16), eps=F32)
    same(values(lambda x: signal.welch(x, nperseg=16), x), signal.welch(x, nperseg=16), eps=F32)


def test_fit_a_sinusoid_to_a_target_spectrogram():
    t = np.arange(128.0)
    def spec(p):
        return signal.spectrogram(p[0] * np.sin(2 * np.pi * p[1] * t), nperseg=32)[2]
    target = spec(np.array([1.0, 0.1]))
    def loss(p):
        return np.sum((spec(p) - target) ** 2)
    p = np.array([0.8, 0.103])
    g = rune.grad(loss)(p)
    h = 1e-6
    fd = np.array([(loss(p + h * e) - loss(p - h * e)) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    losses = [loss(p)]
    scale = np.array([1.0, 1e-3])            # the frequency is far stiffer than the amplitude
    for _ in range(5):
        p = p - 0.5 * scale * rune.grad(loss)(p) / np.linalg.norm(rune.grad(loss)(p))
        losses.append(loss(p))
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.5 * losses[0]


def test_errors_and_warnings():
    with pytest.raises(NotImplementedError, match="scipy.signal.stft: a traced sampling"):
        rune.grad(lambda fs: np.sum(np.abs(stft(X, fs=fs, nperseg=8)[2])))(2.0)
    with pytest.raises(ValueError, match="scipy.signal.stft: Unknown boundary"):
        rune.grad(lambda x: np.sum(np.abs(stft(x, boundary="wrap")[2])))(X)
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=8, noverlap=8)[2])))(X)
    with pytest.raises(ValueError, match="scipy.signal.stft: Parameter scaling"):
        rune.grad(lambda x: np.sum(np.abs(stft(x, scaling="density")[2])))(X)
    with pytest.raises(ValueError, match="scipy.signal.istft: Input stft must be at least 2d"):
        rune.grad(lambda z: np.sum(istft(z)[1]))(X)
    with pytest.raises(ValueError, match="scipy.signal.csd: axis 2 is out of bounds"):
        rune.grad(lambda x: np.sum(signal.csd(x, X2, nperseg=8, axis=2)[1].real))(X2)
    with pytest.raises(ValueError, match="Trend type"):
        rune.grad(lambda x: np.sum(signal.welch(x, nperseg=8, detrend="cubic")[1]))(X)
    with pytest.warns(UserWarning, match="Input data is complex"):
        rune.grad(lambda x: np.sum(np.abs(stft(x * (1 + 1j), nperseg=8)[2])))(X)
    with pytest.warns(UserWarning, match="NOLA condition failed"):
        rune.grad(lambda z: np.sum(istft(z, window=np.r_[0.0, np.ones(7)], noverlap=0,
                                         boundary=False)[1]))(np.ones((5, 3)))
    for f in (signal.spectrogram, signal.welch, stft):
        with pytest.warns(UserWarning, match="nperseg = 256 is greater than input") as rec:
            rune.grad(lambda x: np.sum(np.abs(f(x)[-1])))(X)
        assert rec[0].filename == __file__          # at the user's line, as SciPy's


def test_inputs_not_mutated():
    x, z = X.copy(), signal.stft(X, nperseg=16)[2]
    zc = z.copy()
    rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=16, boundary="odd")[2]) ** 2))(x)
    rune.grad(lambda z: np.sum(istft(z, nperseg=16)[1]))(z)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(z, zc)


def test_invisible_outside_transformations():
    rune.grad(lambda x: np.sum(np.abs(stft(x, nperseg=8)[2])))(X)     # rune's ran first
    assert signal.stft is stft and stft.__module__.startswith("scipy")
    f, t, z = stft(X, nperseg=8)
    import scipy.signal._spectral_py as sp
    want = sp._spectral_helper(X, X, 1.0, "hann_periodic", 8, None, None, False, True,
                               "spectrum", -1, "stft", "zeros", True)
    for got, w in zip((f, t, z), want):
        assert type(got) is np.ndarray and got.dtype == w.dtype
        np.testing.assert_array_equal(got, w)
    tt, xx = istft(z, nperseg=8)
    assert type(xx) is np.ndarray and type(tt) is np.ndarray
    assert signal.welch(X, nperseg=8)[1].dtype == np.float64


def test_docstring_examples_run():
    import doctest
    import rune.scipy.signal_spectral
    result = doctest.testmod(rune.scipy.signal_spectral)
    assert result.failed == 0 and result.attempted > 0
