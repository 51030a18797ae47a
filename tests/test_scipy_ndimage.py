"""scipy.ndimage under every transformation: filters and spline interpolation against
SciPy's own values; the transpose of every linear operator against SciPy's operator
matrix (its columns, SciPy's filter of the basis images) to machine precision, for every
boundary mode; derivatives in the coordinates, shifts and affine maps against finite
differences (at points away from the knots and edges, where the function is smooth);
vmap against a loop; refusals."""

import numpy as np
import pytest

import rune

ndi = pytest.importorskip("scipy.ndimage")
from helpers import check_vmap  # noqa: E402

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-wrap", "grid-constant",
         "grid-mirror"]
RNG = np.random.default_rng(0)
IMG = RNG.standard_normal((5, 6))
W2 = RNG.standard_normal((3, 2))


def scipy_matrix(f, shape):
    """The matrix of the linear part of ``f`` (SciPy's own function) on images of
    ``shape``: column ``j`` is ``f(e_j) - f(0)``."""
    n = int(np.prod(shape))
    zero = np.asarray(f(np.zeros(shape)))
    cols = [np.ravel(np.asarray(f(np.eye(n)[j].reshape(shape))) - zero) for j in range(n)]
    return np.stack(cols, axis=1)


def check_linear(f, x):
    """``f`` (a SciPy call) under rune: SciPy's value, and jacrev/jacfwd equal to SciPy's
    operator matrix; the dot-product identity ``<A u, w> = <u, A^T w>``."""
    want = f(x)
    got = rune.jvp(f, (x,), (np.zeros_like(x),))[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    A = scipy_matrix(f, x.shape)
    n_out = A.shape[0]
    jr = np.reshape(rune.jacrev(f)(x), (n_out, -1))
    jf = np.reshape(rune.jacfwd(f)(x), (n_out, -1))
    scale = np.abs(A).max()
    np.testing.assert_allclose(jr, A, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(jf, A, rtol=0, atol=1e-13 * scale)
    u, w = RNG.standard_normal(x.shape), RNG.standard_normal(np.shape(want))
    _, pull = rune.vjp(f, x)
    lhs = np.sum((f(u) - f(np.zeros_like(u))) * w)
    rhs = np.sum(u * pull(w)[0])
    assert abs(lhs - rhs) <= 1e-13 * (abs(lhs) + np.sum(np.abs(u)) * np.sum(np.abs(w)))


FILTERS = {
    "correlate1d": lambda m: lambda x: ndi.correlate1d(x, [1.0, -2.0, 0.5, 3.0], axis=0,
                                                       mode=m, cval=1.5, origin=1),
    "convolve1d": lambda m: lambda x: ndi.convolve1d(x, [1.0, -2.0, 0.5, 3.0], axis=-1,
                                                     mode=m, cval=1.5),
    "correlate": lambda m: lambda x: ndi.correlate(x, W2, mode=m, cval=0.5, origin=(1, 0)),
    "convolve": lambda m: lambda x: ndi.convolve(x, W2, mode=m, origin=(-1, -1)),
    "correlate_axes": lambda m: lambda x: ndi.correlate(x, [1.0, 2.0, -1.0], mode=m,
                                                        axes=1),
    "gaussian_filter1d": lambda m: lambda x: ndi.gaussian_filter1d(x, 1.3, order=1, mode=m),
    "gaussian_filter": lambda m: lambda x: ndi.gaussian_filter(x, (1.0, 0.7), mode=m,
                                                               cval=0.3),
    "uniform_filter1d": lambda m: lambda x: ndi.uniform_filter1d(x, 4, axis=1, mode=m,
                                                                 origin=-1),
    "uniform_filter": lambda m: lambda x: ndi.uniform_filter(x, (3, 2), mode=m, cval=2.0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filter_values_and_exact_transpose(name, mode):
    check_linear(FILTERS[name](mode), IMG)


@pytest.mark.parametrize("mode", ["reflect", "mirror", "wrap", "nearest", "constant"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_kernels_longer_than_the_line_every_origin(mode, n):
    w = RNG.standard_normal(9)
    for origin in range(-4, 5):
        check_linear(lambda x: ndi.correlate1d(x, w, mode=mode, origin=origin),
                     RNG.standard_normal(n))
    w2 = RNG.standard_normal((4, 5))
    check_linear(lambda x: ndi.convolve(x, w2, mode=mode), RNG.standard_normal((n, 2)))


def test_per_axis_modes_orders_and_float32():
    check_linear(lambda x: ndi.gaussian_filter(x, [0.8, 1.2], order=[1, 0],
                                               mode=["wrap", "mirror"]), IMG)
    check_linear(lambda x: ndi.uniform_filter(x, [1, 3], mode=["constant", "reflect"]), IMG)
    x32 = IMG.astype(np.float32)
    got = rune.jvp(lambda x: ndi.gaussian_filter(x, 1.0), (x32,), (np.ones_like(x32),))
    assert got[0].dtype == np.float32
    np.testing.assert_allclose(got[0], ndi.gaussian_filter(x32, 1.0), rtol=1e-6)


def test_second_order_and_traced_cval():
    f = lambda x, c: np.sum(ndi.correlate1d(x, [1.0, 2.0, -1.0], mode="constant",
                                            cval=c) ** 3)
    rune.check_grads(f, IMG[0], 0.7, order=2)
    g = lambda x: np.sum(np.sin(ndi.gaussian_filter(x, 1.0, mode="mirror")))
    rune.check_grads(g, IMG, order=2)


@pytest.mark.parametrize("name", ["correlate", "gaussian_filter", "uniform_filter1d"])
def test_filters_vmap(name):
    f = FILTERS[name]("wrap")
    imgs = RNG.standard_normal((3, 5, 6))
    check_vmap(f, imgs)
    check_vmap(f, np.moveaxis(imgs, 0, 2), in_axes=2)
    got = rune.vmap(rune.vmap(f))(RNG.standard_normal((2, 3, 5, 6)))
    assert got.shape == (2, 3, 5, 6)


# --------------------------------------------------------------------------
# Interpolation
# --------------------------------------------------------------------------

def smooth_points(shape, count, seed=1):
    """Coordinates inside the array, away from integers and half-integers (the knots
    of every order) and from the edges: finite differences see a smooth function."""
    rng = np.random.default_rng(seed)
    pts = []
    for n in shape:
        base = rng.integers(1, n - 2, count).astype(float)
        frac = rng.choice([0.15, 0.3, 0.65, 0.85], count) + rng.uniform(-0.04, 0.04, count)
        pts.append(base + frac)
    return np.stack(pts)


ANY_POINTS = np.stack([RNG.uniform(-3, 8, 12), RNG.uniform(-3, 9, 12)])
ANY_POINTS[:, :3] = [[0.0, 4.0, 2.0], [5.0, 0.0, -1.0]]       # edges and integers


@pytest.mark.parametrize("order", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("mode", MODES)
def test_map_coordinates_image(mode, order):
    check_linear(lambda x: ndi.map_coordinates(x, ANY_POINTS, order=order, mode=mode,
                                               cval=0.7), IMG)


@pytest.mark.parametrize("order", [1, 2, 3, 5])
@pytest.mark.parametrize("mode", MODES)
def test_map_coordinates_coordinates(mode, order):
    pts = smooth_points(IMG.shape, 6)
    f = lambda c: ndi.map_coordinates(IMG, c, order=order, mode=mode, cval=0.7)
    np.testing.assert_allclose(rune.jvp(f, (pts,), (pts,))[0], f(pts), rtol=1e-12)
    rune.check_grads(f, pts, order=2 if order >= 3 else 1)
    rune.check_grads(lambda x, c: ndi.map_coordinates(x, c, order=order, mode=mode),
                     IMG, pts, order=1)


def test_map_coordinates_values_out_of_range_and_nan():
    pts = np.array([[-10.5, 20.25, 2.0, np.nan], [3.0, -7.75, 31.0, 1.0]])
    for mode in MODES:
        for order in (0, 1, 3):
            f = lambda x: ndi.map_coordinates(x, pts[:, :3], order=order, mode=mode)
            check_linear(f, IMG)
        f = lambda x: ndi.map_coordinates(x, pts, order=1, mode=mode, cval=2.0)
        got = rune.jvp(f, (IMG,), (IMG,))[0]
        if mode not in ("nearest", "grid-constant"):     # SciPy: cval at a NaN point
            np.testing.assert_allclose(got, f(IMG), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:It is recommended to use mode")
@pytest.mark.parametrize("mode", MODES)
def test_shift_zoom_affine_values_and_transpose(mode):
    check_linear(lambda x: ndi.shift(x, (0.3, -1.7), mode=mode, cval=0.2), IMG)
    check_linear(lambda x: ndi.zoom(x, (1.5, 0.7), order=2, mode=mode), IMG)
    check_linear(lambda x: ndi.zoom(x, 2.0, order=1, mode=mode, grid_mode=True), IMG[:3])
    m = np.array([[0.9, 0.2], [-0.1, 1.1]])
    check_linear(lambda x: ndi.affine_transform(x, m, (0.3, -0.4), mode=mode), IMG)
    check_linear(lambda x: ndi.affine_transform(x, [0.9, 1.1], 0.5, output_shape=(4, 7),
                                                mode=mode, order=1), IMG)
    h = np.array([[0.9, 0.2, 0.3], [-0.1, 1.1, -0.4], [0.0, 0.0, 1.0]])
    check_linear(lambda x: ndi.affine_transform(x, h, order=3, mode=mode), IMG)


def test_shift_and_affine_parameters():
    x = np.cos(np.add.outer(np.arange(8.0), np.arange(9.0)) / 3)
    rune.check_grads(lambda s: ndi.shift(x, s, mode="nearest"), np.array([0.3, -0.2]),
                     order=2)
    m = np.array([[0.93, 0.12], [-0.11, 1.07]])
    f = lambda m, o: ndi.affine_transform(x, m, o, output_shape=(3, 3), mode="mirror")
    rune.check_grads(f, m, np.array([2.27, 1.61]), order=2)
    g = lambda m, o: ndi.affine_transform(x, m, o, output_shape=(3, 3), order=1)
    rune.check_grads(g, np.array([1.13, 0.91]), np.array([2.27, 1.61]), order=1)


def test_interpolation_vmap_and_hessian():
    imgs = RNG.standard_normal((3, 5, 6))
    coords = np.stack([smooth_points(IMG.shape, 4, seed=s) for s in range(3)])
    check_vmap(lambda x: ndi.map_coordinates(x, coords[0], mode="reflect"), imgs)
    check_vmap(lambda c: ndi.map_coordinates(IMG, c, mode="grid-wrap"), coords)
    check_vmap(lambda x, c: ndi.map_coordinates(x, c, order=2, mode="grid-constant",
                                                cval=1.0), imgs, coords)
    check_vmap(lambda s: ndi.shift(IMG, s, order=1), RNG.standard_normal((3, 2)))
    f = lambda c: np.sum(ndi.map_coordinates(IMG, c, mode="mirror") ** 2)
    h = rune.hessian(f)(coords[0])
    np.testing.assert_allclose(h.reshape(8, 8), h.reshape(8, 8).T, atol=1e-10)
    rune.check_grads(f, coords[0], order=3)


def test_spline_filters():
    check_linear(lambda x: ndi.spline_filter(x, 3, mode="mirror"), IMG)
    check_linear(lambda x: ndi.spline_filter(x, 5, mode="grid-wrap"), IMG)
    for mode in MODES:
        check_linear(lambda x: ndi.spline_filter1d(x, 4, axis=0, mode=mode), IMG)
    check_linear(lambda x: ndi.spline_filter1d(x, 1), IMG)


# --------------------------------------------------------------------------
# Refusals and invisibility
# --------------------------------------------------------------------------

def test_refusals_name_the_call():
    with pytest.raises(NotImplementedError, match="gaussian_filter.*output"):
        rune.grad(lambda x: np.sum(ndi.gaussian_filter(x, 1.0, output=np.empty_like(x))))(IMG)
    with pytest.raises(NotImplementedError, match="correlate1d.*weights"):
        rune.grad(lambda w: np.sum(ndi.correlate1d(IMG, w)))(np.ones(3))
    with pytest.raises(NotImplementedError, match="sigma"):
        rune.grad(lambda s: np.sum(ndi.gaussian_filter(IMG, s)))(1.0)
    with pytest.raises(RuntimeError, match="boundary mode"):
        rune.grad(lambda x: np.sum(ndi.correlate1d(x, [1.0, 2.0], mode="bogus")))(IMG)
    with pytest.raises(RuntimeError, match="spline order"):
        rune.grad(lambda x: np.sum(ndi.map_coordinates(x, ANY_POINTS, order=6)))(IMG)
    with pytest.raises(RuntimeError, match="invalid shape for coordinate"):
        rune.grad(lambda x: np.sum(ndi.map_coordinates(x, ANY_POINTS[:1])))(IMG)
    with pytest.raises(ValueError, match="invalid origin"):
        rune.grad(lambda x: np.sum(ndi.uniform_filter1d(x, 3, origin=2)))(IMG)


def test_later_writes_into_the_weights_change_nothing():
    w = np.array([1.0, -2.0, 0.5])
    _, pull = rune.vjp(lambda x: ndi.correlate1d(x, w, mode="wrap"), IMG)
    want = pull(IMG)[0]
    w[:] = 0.0
    np.testing.assert_array_equal(pull(IMG)[0], want)
    assert np.abs(want).max() > 0.1


def test_dtype_output_and_untraced_calls():
    f = lambda x: ndi.gaussian_filter(x, 1.0, output=np.float32)
    assert rune.jvp(f, (IMG,), (IMG,))[0].dtype == np.float32
    seen = []

    def g(x):
        plain = ndi.gaussian_filter(IMG, 1.0)      # nothing traced: SciPy's own result
        seen.append(type(plain))
        return np.sum(x * plain)
    np.testing.assert_allclose(rune.grad(g)(IMG), ndi.gaussian_filter(IMG, 1.0))
    assert seen == [np.ndarray]
    out = np.empty_like(IMG)
    assert ndi.gaussian_filter(IMG, 1.0, output=out) is out     # outside: SciPy's own


def test_docstring_examples_run():
    import doctest
    import rune.scipy.ndimage
    import rune.scipy._ndimage_ops
    import rune.scipy._ndimage_interp
    for module in (rune.scipy.ndimage, rune.scipy._ndimage_ops, rune.scipy._ndimage_interp):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
