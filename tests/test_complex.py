"""Complex numbers end to end, in JAX's convention (docs/complex.md).

The convention: a cotangent pairs with a tangent by ``Re(sum(ct * t))`` (no conjugation),
so a VJP is the plain transpose of the JVP, and for a real-valued ``f`` of complex ``z``,
``grad(f)(z) = df/dx - i df/dy``: ``grad(lambda z: abs(z)**2)(3+4j) == 6-8j``.
Each test compares with finite differences along the real and the imaginary directions.
"""

import warnings

import numpy as np
import pytest

import rune
from rune.dispatch import UFUNCS
from rune.primitives.elementwise import elementwise_primitive
from helpers import check_vmap

Z = np.array([0.3 + 0.4j, -0.5 + 0.2j, 0.7 - 0.6j, -0.2 - 0.3j])   # off every branch cut
W = np.array([1.3 - 0.4j, 0.6 + 0.9j, -1.1 + 0.5j, 0.8 + 0.7j])


def crand(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def fd_grad(f, z, eps=1e-6):
    """``df/dx - i df/dy`` of a real scalar ``f``, by central differences per element."""
    z = np.asarray(z, complex)
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[k] = 1.0
        dx = (f(z + eps * e) - f(z - eps * e)) / (2 * eps)
        dy = (f(z + 1j * eps * e) - f(z - 1j * eps * e)) / (2 * eps)
        g[k] = np.real(dx) - 1j * np.real(dy)
    return g


def fd_jvp(f, z, t, eps=1e-6):
    return (f(z + eps * t) - f(z - eps * t)) / (2 * eps)


# --------------------------------------------------------------------------
# The convention, by hand
# --------------------------------------------------------------------------

def test_grad_of_abs_squared():
    assert rune.grad(lambda z: abs(z) ** 2)(3 + 4j) == 6 - 8j
    assert isinstance(rune.grad(lambda z: abs(z) ** 2)(3 + 4j), complex)
    g = rune.grad(lambda z: np.sum(np.abs(z) ** 2))(Z)
    np.testing.assert_allclose(g, 2 * np.conj(Z))


@pytest.mark.parametrize("f", [
    lambda z: np.sum(np.abs(z) ** 2),
    lambda z: np.sum(np.real(z ** 2) + np.imag(np.exp(z))),
    lambda z: np.sum(np.angle(z)),
    lambda z: np.sum(np.abs(np.sin(z) * np.conj(z))),
    lambda z: np.real(np.vdot(z, z[::-1] * 1j)),
    lambda z: np.linalg.norm(z),
    lambda z: np.sum(np.real(np.sign(z)) * np.imag(z)),
])
def test_grad_real_and_imaginary_directions(f):
    np.testing.assert_allclose(rune.grad(f)(Z), fd_grad(f, Z), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f,holomorphic", [
    (lambda z: z ** 3 - 2j * z, True),
    (lambda z: np.exp(z) / (1 + z * z), True),
    (np.conj, False),
    (lambda z: z * np.conj(z), False),
    (lambda z: np.real(z) + 2j * np.imag(z), False),
    (lambda z: np.abs(z) * z, False),
])
def test_jvp_and_vjp_holomorphic_and_not(f, holomorphic):
    t_re, t_im = np.ones_like(Z), 1j * np.ones_like(Z)
    for t in (t_re, t_im, W):
        _, jt = rune.jvp(f, (Z,), (t,))
        np.testing.assert_allclose(jt, fd_jvp(f, Z, t), rtol=1e-6, atol=1e-8)
    if holomorphic:   # jvp(t) = f'(z) t and vjp(ct) = ct f'(z): no conjugation
        _, d = rune.jvp(f, (Z,), (np.ones_like(Z),))
        _, pullback = rune.vjp(f, Z)
        np.testing.assert_allclose(pullback(W)[0], W * d)
    # <vjp(u), t> == <u, jvp(t)> with the pairing Re(sum(a * b))
    _, pullback = rune.vjp(f, Z)
    u = W[::-1]
    for t in (t_re, t_im, W):
        _, jt = rune.jvp(f, (Z,), (t,))
        np.testing.assert_allclose(np.real(np.sum(pullback(u)[0] * t)), np.real(np.sum(u * jt)))


def test_real_input_complex_output_and_back():
    x = np.array([0.5, -1.2, 2.0])
    f = lambda x: np.sum(np.abs(np.exp(1j * x) * (x + 2j)) ** 2)
    g = rune.grad(f)(x)
    assert g.dtype == np.float64
    rune.check_grads(f, x, order=1)
    rune.check_grads(lambda x: np.exp(1j * x) * x, x)
    rune.check_grads(lambda z: np.real(z) * np.imag(z), Z)


def test_complex_astype_and_mixed_leaves():
    z = Z.astype(np.complex64)
    g = rune.grad(lambda p: np.sum(np.abs(p["z"]) ** 2) + np.sum(p["x"] ** 2))(
        {"z": z, "x": np.ones(2, np.float32)})
    assert g["z"].dtype == np.complex64 and g["x"].dtype == np.float32
    np.testing.assert_allclose(g["z"], 2 * np.conj(z), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        rune.check_grads(lambda z: np.sum(z.astype(np.float64)), Z)   # drops Im, like NumPy
    rune.check_grads(lambda x: x.astype(np.complex128) * 1j, np.array([1.0, 2.0]))


# --------------------------------------------------------------------------
# Every elementwise rule that NumPy defines for complex input
# --------------------------------------------------------------------------

def _complex_ufuncs():
    out = []
    for uf in sorted(UFUNCS, key=lambda u: u.__name__):
        if uf.signature is not None or uf in (np.rint, np.sign):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = uf(*[Z, W][:uf.nin])
        except TypeError:
            continue
        rs = r if isinstance(r, tuple) else (r,)
        if all(getattr(x, "dtype", None) is not None and x.dtype.kind == "c" for x in rs):
            out.append(uf)
    return out


COMPLEX_UFUNCS = _complex_ufuncs()


def test_the_sweep_covers_the_complex_ufuncs():
    names = {u.__name__ for u in COMPLEX_UFUNCS}
    assert {"sin", "arccosh", "log1p", "power", "divide", "sqrt", "tanh"} <= names


@pytest.mark.parametrize("uf", COMPLEX_UFUNCS, ids=lambda u: u.__name__)
def test_complex_ufunc(uf):
    args = [Z, W][:uf.nin]
    f = lambda *a: uf(*a)
    rune.check_grads(f, *args, order=2)
    # against finite differences along the real and the imaginary direction, per argument
    for i in range(uf.nin):
        for t in (np.ones_like(Z), 1j * np.ones_like(Z)):
            tangents = tuple(t if k == i else np.zeros_like(a) for k, a in enumerate(args))
            _, jt = rune.jvp(f, tuple(args), tangents)
            fd = (f(*[a + 1e-6 * d for a, d in zip(args, tangents)])
                  - f(*[a - 1e-6 * d for a, d in zip(args, tangents)])) / 2e-6
            np.testing.assert_allclose(jt, fd, rtol=1e-6, atol=1e-8)
    check_vmap(f, *[np.stack([a, 2 * a]) for a in args])


@pytest.mark.parametrize("f", [np.abs, np.conj, np.real, np.imag, np.angle, np.sign,
                               lambda z: np.abs(z) ** 3, lambda z: np.sign(z) * np.abs(z) ** 2])
def test_non_holomorphic_elementwise(f):
    rune.check_grads(f, Z, order=2)
    check_vmap(f, np.stack([Z, 2 * Z]))


def test_arccosh_left_half_plane():
    # the principal branch's derivative is 1/(sqrt(z-1) sqrt(z+1)); 1/sqrt(z^2-1) has the
    # wrong sign where Re(z) < 0
    z = np.array([-2.0 + 0.3j, -0.5 - 1.5j, 1.5 + 0.2j])
    rune.check_grads(np.arccosh, z)


def test_sign_of_complex_is_differentiable_and_of_real_is_constant():
    g = rune.grad(lambda z: np.sum(np.real(np.sign(z))))(Z)
    np.testing.assert_allclose(g, fd_grad(lambda z: np.sum(np.real(np.sign(z))), Z),
                               rtol=1e-6, atol=1e-8)
    assert np.all(rune.grad(lambda x: np.sum(np.sign(x) * 2.0))(np.array([1.0, -2.0])) == 0)
    np.testing.assert_allclose(rune.grad(lambda z: np.sum(np.abs(np.sign(z))))(
        np.array([0j, 1 + 1j])), [0, 0], atol=1e-15)


# --------------------------------------------------------------------------
# Reductions and contractions
# --------------------------------------------------------------------------

def _reductions():
    fs = [lambda z: np.sum(z, axis=1), lambda z: np.mean(z, axis=0, keepdims=True),
          lambda z: np.var(z, axis=1), lambda z: np.std(z), lambda z: z.sum(),
          lambda z: np.linalg.norm(z, axis=0)]
    from rune.dispatch import FUNCTIONS
    for name in ("prod", "cumsum", "cumprod"):
        fn = getattr(np, name)
        if fn in FUNCTIONS:
            fs.append(lambda z, fn=fn: fn(z, axis=1))
    return fs


@pytest.mark.parametrize("f", _reductions())
def test_complex_reductions(f):
    z = crand((3, 4)) * 0.7
    rune.check_grads(f, z, order=2)
    check_vmap(f, np.stack([z, 2 * z]))


@pytest.mark.parametrize("f,shapes", [
    (np.matmul, [(3, 4), (4, 2)]),
    (np.matmul, [(2, 3, 4), (4,)]),
    (np.dot, [(3,), (3, 2)]),
    (np.vdot, [(2, 3), (2, 3)]),
    (np.inner, [(2, 3), (4, 3)]),
    (np.outer, [(3,), (2,)]),
    (lambda a, b: np.tensordot(a, b, axes=([1], [0])), [(2, 3), (3, 2)]),
    (lambda a, b: np.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)]),
    (lambda a, b: np.einsum("ii,ij->j", a, b), [(3, 3), (3, 2)]),
    (lambda a, b: np.einsum("...i,...i", a, b), [(2, 3), (2, 3)]),
    (np.vecdot, [(2, 3), (2, 3)]),
    *[pytest.param(getattr(np, name, None), shapes, id=name, marks=pytest.mark.skipif(
        not hasattr(np, name), reason=f"np.{name} is new in NumPy 2.2"))
      for name, shapes in [("matvec", [(2, 3), (3,)]), ("vecmat", [(2,), (2, 3)])]],
])
def test_complex_contractions(f, shapes):
    args = [crand(s, seed=k) for k, s in enumerate(shapes)]
    rune.check_grads(f, *args, order=2)
    # mixed: one real, one complex operand
    rune.check_grads(f, np.real(args[0]), args[1], order=1)


# --------------------------------------------------------------------------
# Linear algebra on complex inputs (the decompositions: more in test_linalg.py)
# --------------------------------------------------------------------------

def test_linalg_real_valued_losses_match_finite_differences():
    a = crand((3, 3), seed=1) + 3 * np.eye(3)
    herm = lambda x: x @ np.conj(x.T) + np.eye(3)
    losses = [
        lambda a: np.real(np.linalg.slogdet(a)[1]),
        lambda a: np.abs(np.linalg.det(a)),
        lambda a: np.sum(np.abs(np.linalg.inv(a)) ** 2),
        lambda a: np.sum(np.abs(np.linalg.solve(a, np.arange(3.0))) ** 2),
        lambda x: np.sum(np.linalg.eigvalsh(herm(x)) ** 2),
        lambda x: np.real(np.sum(np.linalg.cholesky(herm(x)))),
        lambda a: np.linalg.norm(a, "nuc"),
        lambda a: np.linalg.norm(a, 2),
        lambda a: np.sum(np.abs(np.linalg.qr(a)[1]) ** 2),
        lambda a: np.sum(np.abs(np.linalg.eigvals(a)) ** 2),
        lambda a: np.sum(np.abs(np.linalg.pinv(a[:, :2])) ** 2),
    ]
    for f in losses:
        np.testing.assert_allclose(rune.grad(f)(a), fd_grad(f, a), rtol=1e-5, atol=1e-7)


def test_slogdet_sign_of_complex_matrix():
    a = crand((3, 3), seed=2) + 2 * np.eye(3)
    rune.check_grads(lambda a: np.linalg.slogdet(a)[0], a)
    rune.check_grads(np.linalg.det, a)


# --------------------------------------------------------------------------
# check_grads itself catches complex-convention mistakes
# --------------------------------------------------------------------------

def _prim(jvp, vjp):
    return elementwise_primitive("cube_test", lambda x: x ** 3, jvp=(jvp,), vjp=(vjp,))


def test_check_grads_catches_a_conjugated_vjp():
    p = _prim(lambda t, out, x: 3 * x * x * t, lambda ct, out, x: np.conj(3 * x * x) * ct)
    rune.check_grads(lambda x: p(x), np.array([0.5, 1.5]))   # real: conj is harmless
    with pytest.raises(AssertionError, match="reverse-mode|vjp and jvp disagree"):
        rune.check_grads(lambda x: p(x), Z)


def test_check_grads_catches_a_wrong_imaginary_direction():
    # the JVP of z**3 written with the real derivative of Re(t) only
    p = _prim(lambda t, out, x: 3 * x * x * np.real(t), lambda ct, out, x: 3 * x * x * ct)
    rune.check_grads(lambda x: p(x), np.array([0.5, 1.5]))
    with pytest.raises(AssertionError, match="forward-mode|vjp and jvp disagree"):
        rune.check_grads(lambda x: p(x), Z)
