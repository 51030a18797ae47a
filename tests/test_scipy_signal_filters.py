"""scipy.signal's filters under every transformation: lfilter (b, a, x, zi traced),
lfilter_zi, filtfilt, sosfilt(_zi), sosfiltfilt, savgol_filter in every mode,
convolve2d/correlate2d in every mode and boundary.  Values against SciPy's own,
derivatives against finite differences and JVP against VJP (``check_grads``, second order
where cheap), ``vmap`` against a loop."""

import numpy as np
import pytest

import rune

signal = pytest.importorskip("scipy.signal")
from scipy.signal import lfilter  # noqa: E402  (the user's idiom)
from helpers import check_vmap  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal(12)
B, A = signal.butter(3, 0.3)
SOS = signal.butter(4, 0.3, output="sos")


def values(f, *args):
    """``f``'s value computed under ``jvp`` (every argument traced)."""
    return rune.jvp(f, args, args)[0]


FILTERS = {   # name -> (b, a, zi length)
    "fir": (np.array([1.0, 0.5, -0.25]), np.array([1.0]), 2),
    "iir": (np.array([1.0, 0.5]), np.array([1.0, -0.2]), 1),
    "a0_not_1": (np.array([0.5, 0.3, 0.2]), np.array([2.0, -0.3]), 2),
    "longer_a": (np.array([0.7]), np.array([1.0, -0.4, 0.1, 0.05]), 3),
    "butter": (B, A, 3),
}


@pytest.mark.parametrize("name", FILTERS)
def test_lfilter_values_and_derivatives(name):
    b, a, m = FILTERS[name]
    zi = RNG.standard_normal(m)
    y = values(lambda b, a, x: lfilter(b, a, x), b, a, X)
    np.testing.assert_allclose(y, signal.lfilter(b, a, X), rtol=1e-13, atol=1e-14)
    y, zf = values(lambda b, a, x, zi: lfilter(b, a, x, zi=zi), b, a, X, zi)
    want = signal.lfilter(b, a, X, zi=zi)
    np.testing.assert_allclose(y, want[0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(zf, want[1], rtol=1e-13, atol=1e-14)
    rune.check_grads(lambda b, a, x: lfilter(b, a, x), b, a, X, order=2)
    rune.check_grads(lambda b, a, x, zi: lfilter(b, a, x, zi=zi), b, a, X, zi, order=2)


def test_lfilter_short_signal_and_axes():
    b, a = np.array([0.5, 0.3, 0.2]), np.array([2.0, -0.3, 0.1])
    rune.check_grads(lambda a, x, zi: lfilter(b, a, x, zi=zi), a, X[:1], np.array([.3, -.2]))
    x2 = RNG.standard_normal((3, 7))
    for axis in (0, 1, -1):
        zi = RNG.standard_normal((2, 7) if axis == 0 else (3, 2))
        got = values(lambda a, x, zi: lfilter(b, a, x, axis=axis, zi=zi), a, x2, zi)
        want = signal.lfilter(b, a, x2, axis=axis, zi=zi)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
        rune.check_grads(lambda b, a, x, zi: lfilter(b, a, x, axis=axis, zi=zi), b, a,
                         x2, zi, order=1)
    # zi broadcast along a size-1 axis, as SciPy allows
    zi = RNG.standard_normal((1, 2))
    got = values(lambda x, zi: lfilter(b, a, x, zi=zi), x2, zi)
    np.testing.assert_allclose(got[0], signal.lfilter(b, a, x2, zi=zi)[0], rtol=1e-13)


def test_lfilter_gain_only_and_integer_input():
    got = values(lambda b, x: lfilter(b, [4.0], x), np.array([2.0]), X)
    np.testing.assert_allclose(got, signal.lfilter([2.0], [4.0], X), rtol=1e-15)
    g = rune.grad(lambda a1: np.sum(lfilter([1.0], [1.0, a1], np.arange(4))))(0.5)
    eps = 1e-6
    fd = (np.sum(signal.lfilter([1.0], [1.0, 0.5 + eps], np.arange(4)))
          - np.sum(signal.lfilter([1.0], [1.0, 0.5 - eps], np.arange(4)))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-7)


def test_lfilter_known_derivative_formulas():
    # dy/db_k = lfilter([1], a, x delayed by k); dy/da_k = -lfilter([1], a, y delayed by k)
    b, a = np.array([1.0, 0.5]), np.array([1.0, -0.2])
    y = signal.lfilter(b, a, X)
    jb = rune.jacfwd(lambda b: lfilter(b, a, X))(b)
    ja = rune.jacrev(lambda a: lfilter(b, a, X))(a)
    for k in range(2):
        shifted_x = np.r_[np.zeros(k), X[:len(X) - k]]
        shifted_y = np.r_[np.zeros(k), y[:len(y) - k]]
        np.testing.assert_allclose(jb[:, k], signal.lfilter([1.0], a, shifted_x), rtol=1e-12)
        np.testing.assert_allclose(ja[:, k], -signal.lfilter([1.0], a, shifted_y),
                                   rtol=1e-12, atol=1e-14)


def test_lfilter_vmap():
    b, a = np.array([1.0, 0.5]), np.array([1.0, -0.2])
    xs = RNG.standard_normal((4, 9))
    check_vmap(lambda x: lfilter(b, a, x), xs)
    check_vmap(lambda a, x: lfilter(b, a, x), np.array([[1.0, -0.2], [1.0, 0.3]]), xs[:2])
    check_vmap(lambda x, zi: lfilter(b, a, x, zi=zi), xs, RNG.standard_normal((4, 1)))
    check_vmap(lambda zi: lfilter(b, a, X, zi=zi)[0], RNG.standard_normal((3, 1)))
    check_vmap(rune.grad(lambda a: np.sum(lfilter(b, a, X) ** 2)),
               np.array([[1.0, -0.2], [1.0, 0.3], [2.0, 0.1]]))


def test_lfilter_bad_inputs():
    with pytest.raises(ValueError, match="zi"):
        rune.grad(lambda x: np.sum(lfilter([1.0, 2.0], [1.0], x, zi=np.zeros(3))[0]))(X)
    with pytest.raises(ValueError, match="1-D"):
        rune.grad(lambda x: np.sum(lfilter(np.ones((2, 2)), [1.0], x)))(X)
    with pytest.raises(ValueError, match="axis"):
        rune.grad(lambda x: np.sum(lfilter([1.0], [1.0], x, axis=2)))(X)


def test_filtfilt_and_zi():
    x = RNG.standard_normal(16)
    for f in (lambda b, a, x: signal.filtfilt(b, a, x),
              lambda b, a, x: signal.filtfilt(b, a, x, padtype="even", padlen=4),
              lambda b, a, x: signal.filtfilt(b, a, x, padtype=None)):
        np.testing.assert_allclose(values(f, B, A, x), f(B, A, x), rtol=1e-12, atol=1e-13)
        rune.check_grads(f, B, A, x, order=1)
    rune.check_grads(signal.lfilter_zi, B, A, order=2)
    np.testing.assert_allclose(values(signal.lfilter_zi, B, A), signal.lfilter_zi(B, A),
                               rtol=1e-13)
    check_vmap(lambda x: signal.filtfilt(B, A, x), RNG.standard_normal((3, 16)))


def _sos(num, den):
    """An sos array from its numerators and its denominators' last two coefficients
    (SciPy requires sos[:, 3] == 1, so finite differences must leave it alone)."""
    return np.concatenate([num, np.ones((num.shape[0], 1)), den], axis=1)


def test_sosfilt_family():
    zi = RNG.standard_normal((2, 2))
    num, den = SOS[:2, :3], SOS[:2, 4:]
    for f in (lambda n, d, x: signal.sosfilt(_sos(n, d), x),
              lambda n, d, x: signal.sosfilt(_sos(n, d), x, zi=zi)[0],
              lambda n, d, x: signal.sosfiltfilt(_sos(n, d), x, padlen=5)):
        np.testing.assert_allclose(values(f, num, den, X), f(num, den, X), rtol=1e-12,
                                   atol=1e-13)
        rune.check_grads(f, num, den, X, order=1)
    got = values(lambda x, z: signal.sosfilt(SOS[:2], x, zi=z), X, zi)
    want = signal.sosfilt(SOS[:2], X, zi=zi)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(values(signal.sosfilt_zi, SOS), signal.sosfilt_zi(SOS),
                               rtol=1e-12)
    rune.check_grads(lambda n, d: signal.sosfilt_zi(_sos(n, d)), num, den, order=1)
    check_vmap(lambda x: signal.sosfilt(SOS, x), RNG.standard_normal((3, 12)))
    with pytest.raises(ValueError, match="zi"):
        rune.grad(lambda x: np.sum(signal.sosfilt(SOS, x, zi=np.zeros((1, 2)))[0]))(X)


@pytest.mark.parametrize("mode", ["mirror", "constant", "nearest", "wrap", "interp"])
@pytest.mark.parametrize("window,order,deriv", [(5, 2, 0), (7, 3, 1), (4, 2, 0), (9, 4, 2)])
def test_savgol_filter(mode, window, order, deriv):
    def f(x):
        return signal.savgol_filter(x, window, order, deriv=deriv, delta=0.5, mode=mode)
    np.testing.assert_allclose(values(f, X), f(X), rtol=1e-12, atol=1e-12)
    rune.check_grads(f, X, order=1)
    x2 = RNG.standard_normal((12, 3))
    g = values(lambda x: signal.savgol_filter(x, window, order, axis=0, mode=mode), x2)
    np.testing.assert_allclose(g, signal.savgol_filter(x2, window, order, axis=0, mode=mode),
                               rtol=1e-12, atol=1e-12)
    check_vmap(f, RNG.standard_normal((3, 12)))


def test_savgol_bad_inputs():
    with pytest.raises(ValueError, match="mode"):
        rune.grad(lambda x: np.sum(signal.savgol_filter(x, 5, 2, mode="reflect")))(X)
    with pytest.raises(ValueError, match="window_length"):
        rune.grad(lambda x: np.sum(signal.savgol_filter(x[:3], 5, 2)))(X)


@pytest.mark.parametrize("fn", ["convolve2d", "correlate2d"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("boundary,fill", [("fill", 0), ("fill", 1.5), ("wrap", 0),
                                           ("symm", 0)])
def test_2d(fn, mode, boundary, fill):
    f = getattr(signal, fn)
    p, q = RNG.standard_normal((5, 6)), RNG.standard_normal((2, 3))
    pairs = [(p, q), (q, p)] if mode == "valid" else [(p, q)]
    for u, v in pairs:
        def g(u, v):
            return f(u, v, mode, boundary, fill)
        np.testing.assert_allclose(values(g, u, v), g(u, v), rtol=1e-12, atol=1e-12)
        rune.check_grads(g, u, v, order=2)
    check_vmap(lambda u: f(u, q, mode, boundary, fill), RNG.standard_normal((2, 5, 6)))


def test_2d_bad_inputs():
    p = np.ones((3, 3))
    with pytest.raises(ValueError, match="boundary"):
        rune.grad(lambda u: np.sum(signal.convolve2d(u, p, boundary="bad")))(p)
    with pytest.raises(ValueError, match="2-D"):
        rune.grad(lambda u: np.sum(signal.convolve2d(u, np.ones(3))))(p)


def test_invisible_outside_transformations():
    assert signal.lfilter is lfilter
    assert signal.lfilter.__module__.startswith("scipy")
    np.testing.assert_array_equal(lfilter(B, A, X), signal.lfilter(B, A, X))


def test_docstring_examples_run():
    import doctest
    import rune.primitives.linear_op  # noqa: F401
    import rune.scipy.signal_filters
    result = doctest.testmod(rune.scipy.signal_filters)
    assert result.failed == 0 and result.attempted > 0


def test_lfilter_jacfwd_jacrev_and_jit():
    b, a = np.array([1.0, 0.5]), np.array([1.0, -0.2])
    def h(a):
        return lfilter(b, a, X)
    np.testing.assert_allclose(rune.jacfwd(rune.jacrev(h))(a), rune.jacrev(rune.jacfwd(h))(a),
                               rtol=1e-12, atol=1e-13)
    def f(a, x):
        return np.sum(lfilter(b, a, x) ** 2)
    g = rune.jit(rune.grad(f))
    for scale in (1.0, 1.1):      # the second call replays the recorded program
        np.testing.assert_allclose(g(a * scale, X), rune.grad(f)(a * scale, X), rtol=1e-13)
