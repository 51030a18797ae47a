"""np.fft: values against NumPy, derivatives (finite differences, JVP/VJP identity,
second order), vmap against a loop with the batch axis anywhere, nesting, errors."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap

NORMS = [None, "ortho", "forward"]

# (shape, keyword arguments) of the one-axis transforms: even and odd lengths, other
# axes, cropping and zero-padding with n=
CASES_1D = [
    ((6,), {}),
    ((5,), {}),
    ((3, 4), {"axis": 0}),
    ((2, 5, 3), {"axis": 1, "n": 4}),
    ((7,), {"n": 10}),
    ((4, 6), {"n": 3}),
    ((4, 5), {"axis": -1, "n": 8}),
]
FUNCS_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "rfftn"}

# (shape, keyword arguments) of the n-d transforms
CASES_ND = [
    ((4, 5), {}),
    ((3, 4, 5), {"axes": (0, 2)}),
    ((3, 4, 6), {"s": (5, 4), "axes": (2, 0)}),
    ((3, 4, 5), {"s": (-1, 6), "axes": (0, 1)}),
    ((2, 3, 4), {"axes": (1,)}),
    ((2, 3, 5), {"s": (4, 3, 7), "axes": (0, 1, 2)}),
]
FUNCS_ND = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"]


def _input(name, shape, seed=0, complex_ok=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if complex_ok and name not in REAL_ONLY:
        x = x + 1j * rng.standard_normal(shape)
    return x


def _fn(name, kwargs, norm):
    f = getattr(np.fft, name)
    return lambda x: f(x, norm=norm, **kwargs)


def _fits_nd(name, shape, kwargs):
    """The 2-d functions need two axes (their default axes are (-2, -1))."""
    if name.endswith("2"):
        return len(kwargs.get("axes", (-2, -1))) == 2 and len(shape) >= 2
    return True


def _values_match(f, x):
    want = f(x)
    got, tangent = rune.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert got.dtype == want.dtype and got.shape == want.shape
    # a linear function: its JVP is itself applied to the tangent
    np.testing.assert_allclose(tangent, f(np.ones_like(x)), rtol=1e-12, atol=1e-12)


def _batch(x, size=3, seed=5):
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((size,) + x.shape)
    if x.dtype.kind == "c":
        noise = noise + 1j * rng.standard_normal((size,) + x.shape)
    return x[None] + noise


def _check_all_positions(f, x):
    """vmap(f) against a loop with the batch axis first, last and in the middle, and
    vmap(vmap(f)) against a double loop."""
    b = _batch(x)
    for ax in sorted({0, b.ndim - 1, b.ndim // 2}):
        check_vmap(f, np.moveaxis(b, 0, ax), in_axes=ax, rtol=1e-10, atol=1e-12)
    bb = np.stack([b, 0.5 * b[::-1]])
    got = rune.vmap(rune.vmap(f))(bb)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], f(bb[i, j]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,kwargs", CASES_1D, ids=[str(c) for c in CASES_1D])
@pytest.mark.parametrize("name", FUNCS_1D)
def test_one_axis(name, shape, kwargs, norm):
    f = _fn(name, kwargs, norm)
    x = _input(name, shape)
    _values_match(f, x)
    rune.check_grads(f, x, order=2)
    if name not in REAL_ONLY:       # real input to the complex transforms too
        xr = _input(name, shape, seed=1, complex_ok=False)
        _values_match(f, xr)
        rune.check_grads(f, xr, order=2)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,kwargs", CASES_ND, ids=[str(c) for c in CASES_ND])
@pytest.mark.parametrize("name", FUNCS_ND)
def test_several_axes(name, shape, kwargs, norm):
    if not _fits_nd(name, shape, kwargs):
        pytest.skip("a 2-d transform takes two axes")
    f = _fn(name, kwargs, norm)
    x = _input(name, shape)
    _values_match(f, x)
    rune.check_grads(f, x, order=2)


@pytest.mark.parametrize("shape,kwargs", CASES_1D, ids=[str(c) for c in CASES_1D])
@pytest.mark.parametrize("name", FUNCS_1D)
def test_one_axis_vmap(name, shape, kwargs):
    _check_all_positions(_fn(name, kwargs, "ortho"), _input(name, shape))


@pytest.mark.parametrize("shape,kwargs", CASES_ND, ids=[str(c) for c in CASES_ND])
@pytest.mark.parametrize("name", FUNCS_ND)
def test_several_axes_vmap(name, shape, kwargs):
    if not _fits_nd(name, shape, kwargs):
        pytest.skip("a 2-d transform takes two axes")
    _check_all_positions(_fn(name, kwargs, None), _input(name, shape))


def test_repeated_axes_as_numpy():
    x = _input("fftn", (3, 4))
    for name in ("fftn", "ifftn", "rfftn"):
        xi = x.real if name == "rfftn" else x
        f = _fn(name, {"axes": (1, 0, 1), "s": (4, 3, 6)}, "ortho")
        _values_match(f, xi)
        rune.check_grads(f, xi, order=2)


def test_default_s_without_axes_warns_as_numpy():
    x = _input("fftn", (3, 4))
    with pytest.warns(DeprecationWarning):
        want = np.fft.fftn(x, s=(2, 5))
    with pytest.warns(DeprecationWarning):
        got = rune.jvp(lambda x: np.fft.fftn(x, s=(2, 5)), (x,), (x,))[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_grad_of_real_loss_of_complex_spectrum():
    # grad of a real function of complex z is df/dx - i df/dy (docs/complex.md)
    z = _input("fft", (5,))
    f = lambda z: np.sum(np.abs(np.fft.fft(z, norm="ortho")) ** 2)   # noqa: E731
    np.testing.assert_allclose(rune.grad(f)(z), 2 * np.conj(z), rtol=1e-12)  # Parseval


def test_rfft_gradient_counts_mirrored_frequencies():
    # sum |rfft(x)|^2 misses the mirrored half: its gradient is not 2 n x (Parseval)
    # but the Hermitian-weighted version; finite differences decide
    for n in (6, 7):
        x = np.random.default_rng(n).standard_normal(n)
        f = lambda x: np.sum(np.abs(np.fft.rfft(x)) ** 2)   # noqa: E731
        rune.check_grads(f, x, order=2)
        w = np.ones(n // 2 + 1)
        w[1:(n + 1) // 2] = 2
        full = lambda x: np.sum(w * np.abs(np.fft.rfft(x)) ** 2)   # noqa: E731
        np.testing.assert_allclose(rune.grad(full)(x), 2 * n * x, rtol=1e-12, atol=1e-12)


def test_fft_convolution_matches_direct():
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal(40), rng.standard_normal(9)

    def fftconv(a, v):
        n = len(a) + len(v) - 1
        return np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(v, n), n)

    np.testing.assert_allclose(fftconv(a, v), np.convolve(a, v), atol=1e-12)
    loss = lambda a, v: np.sum(np.sin(fftconv(a, v)))   # noqa: E731
    rune.check_grads(loss, a, v, order=2)
    ga, gv = rune.grad(loss, argnums=(0, 1))(a, v)
    c = np.cos(np.convolve(a, v))
    np.testing.assert_allclose(ga, np.correlate(c, v, "valid"), atol=1e-12)
    np.testing.assert_allclose(gv, np.correlate(c, a, "valid"), atol=1e-12)


def test_nesting_orders():
    x = _input("rfft", (6,))
    f = lambda x: np.sum(np.abs(np.fft.rfft(np.sin(x), norm="ortho")) ** 2)   # noqa: E731
    h = rune.hessian(f)(x)
    np.testing.assert_allclose(rune.jacfwd(rune.jacrev(f))(x), h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jacrev(rune.jacfwd(f))(x), h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, h.T, atol=1e-12)
    xs = _batch(x)
    check_vmap(rune.grad(f), xs)
    check_vmap(lambda x: rune.hessian(f)(x), xs)


def test_inputs_not_mutated_and_float32():
    x = _input("fft", (8,))
    x.flags.writeable = False
    rune.grad(lambda x: np.sum(np.abs(np.fft.ifft(np.fft.fft(x) * 2)) ** 2))(x)
    x32 = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    g = rune.grad(lambda x: np.sum(np.abs(np.fft.rfft(x)) ** 2))(x32)
    assert g.dtype == np.float32
    out = rune.jvp(lambda x: np.fft.rfft(x), (x32,), (x32,))[0]
    assert out.dtype == np.fft.rfft(x32).dtype


_OUT6 = np.zeros(6, complex)     # an array made inside the function would take the write


@pytest.mark.parametrize("call,err,match", [
    (lambda x: np.fft.fft(x, norm="sideways"), ValueError, "np.fft.fft: invalid norm"),
    (lambda x: np.fft.rfft(x, n=0), ValueError, r"np.fft.rfft: invalid number of FFT data"),
    (lambda x: np.fft.irfft(x, axis=3), np.exceptions.AxisError, "np.fft.irfft: axis 3"),
    (lambda x: np.fft.rfft(x * 1j), TypeError, "np.fft.rfft takes real input"),
    (lambda x: np.fft.ihfft(x * 1j), TypeError, "np.fft.ihfft takes real input"),
    (lambda x: np.fft.fftn(x, s=(3, 3), axes=(0,)), ValueError, "np.fft.fftn: shape and axes"),
    (lambda x: np.fft.fft2(x, norm="x"), ValueError, "np.fft.fft2: invalid norm"),
    (lambda x: np.fft.fft(x, out=_OUT6), NotImplementedError,     # (made outside)
     r"np.fft.fft\(..., out=...\)"),
])
def test_errors_name_numpy_functions(call, err, match):
    x = np.arange(6.0)
    with pytest.raises(err, match=match):
        rune.grad(lambda x: np.sum(np.real(call(x))))(x)
    with pytest.raises(err, match=match):
        rune.vmap(call)(x[None])


def test_fftshift_and_friends_compose():
    x = _input("fft", (6,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = lambda x: np.fft.fftshift(np.fft.fft(x)) * np.fft.fftfreq(6)   # noqa: E731
        _values_match(f, x)
        rune.check_grads(f, x, order=2)
        g = lambda x: np.fft.ifftshift(x)   # noqa: E731
        _values_match(g, x)
