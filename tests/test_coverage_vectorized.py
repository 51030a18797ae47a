"""The FFT, product, creation and strided-view rules batch without vmap's per-example
fallback (no PerformanceWarning), also under grad and jvp inside vmap."""

import warnings

import numpy as np
import pytest

import rune

swv = np.lib.stride_tricks.sliding_window_view

FUNCS = {
    "fft": lambda x: np.fft.fft(x, 8),
    "rfft": lambda x: np.fft.rfft(x, norm="ortho"),
    "irfft": lambda x: np.fft.irfft(x),
    "fft2": lambda x: np.fft.fft2(x.reshape(2, 3)),
    "rfftn": lambda x: np.fft.rfftn(x.reshape(2, 3)),
    "irfftn": lambda x: np.fft.irfftn(x.reshape(2, 3)),
    "hfft": lambda x: np.fft.hfft(x),
    "ihfft": lambda x: np.fft.ihfft(x),
    "convolve": lambda x: np.convolve(x, x[:3], "same"),
    "correlate": lambda x: np.correlate(x, x[:2] * 1j),
    "kron": lambda x: np.kron(x, x[:2]),
    "cross": lambda x: np.cross(x[:3], x[3:]),
    "vander": lambda x: np.vander(x, 3),
    "linspace": lambda x: np.linspace(x[0], x[1], 4),
    "geomspace": lambda x: np.geomspace(x[0] ** 2 + 1, 3.0, 4),
    "logspace": lambda x: np.logspace(x[0], x[1], 4),
    "full": lambda x: np.full(3, x[0]),
    "full_like": lambda x: np.full_like(np.zeros(3), x[0]),
    "sliding_window_view": lambda x: swv(x, 3),
    "as_strided": lambda x: np.lib.stride_tricks.as_strided(x, (4, 3), (8, 8)),
    "view": lambda x: x.view() * 2,
    "einsum sublists": lambda x: np.einsum(x, [0], x, [1], [0, 1]),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_vectorized_without_fallback(name):
    f = FUNCS[name]
    X = np.random.default_rng(0).standard_normal((3, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        got = rune.vmap(f)(X)
        g = rune.vmap(rune.grad(lambda x: np.sum(np.abs(f(x)) ** 2)))(X)
        t = rune.vmap(lambda x: rune.jvp(f, (x,), (x,))[1])(X)
    for i in range(3):
        np.testing.assert_allclose(got[i], f(X[i]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[i], rune.grad(lambda x: np.sum(np.abs(f(x)) ** 2))(X[i]),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(t[i], rune.jvp(f, (X[i],), (X[i],))[1], rtol=1e-10,
                                   atol=1e-12)


LIST_CALLS = {
    "fft": (lambda a: np.fft.fft([a, 2 * a, 1.0]).real, 3.0),
    "rfftn": (lambda a: np.fft.rfftn([[a, 1.0], [2 * a, 0.0]]).real, 4.0),
    "convolve": (lambda a: np.convolve([a, 2 * a], [1.0, 2.0]), 9.0),
    "correlate": (lambda a: np.correlate([1.0, 2.0], [a, 2 * a], "full"), 9.0),
    "kron": (lambda a: np.kron([a, 2 * a], [1.0, 2.0]), 9.0),
    "cross": (lambda a: np.cross([a, 2 * a, 0.0], [1.0, 2.0, 3.0]), 3.0),
    "linspace": (lambda a: np.linspace([a, 0.0], [2 * a, 1.0], 3), 4.5),
    "sliding_window_view": (lambda a: swv([a, 2 * a, 3 * a], 2), 8.0),
}


@pytest.mark.parametrize("name", sorted(LIST_CALLS))
def test_lists_of_traced_values(name):
    """NumPy's dispatch does not look inside lists: rune stacks them while tracing."""
    f, want = LIST_CALLS[name]
    assert rune.grad(lambda a: np.sum(f(a)))(1.0) == pytest.approx(want, rel=1e-12)
    rune.check_grads(f, 0.7, order=2)
    got = rune.vmap(f)(np.array([0.5, 2.0]))
    np.testing.assert_allclose(got[1], f(2.0), rtol=1e-12, atol=1e-12)
