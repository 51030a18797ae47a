"""The familiar options (issue 28, part 7): JAX's check_grads(f, args, order),
holomorphic=, linearize(has_aux=), autograd's jacobian and elementwise_grad, and a
dir(rune) without the implementation's submodules."""

import doctest

import numpy as np
import pytest

import rune
from helpers import fd_grad

RNG = np.random.default_rng(7)


# ---------------------------------------------------------------- dir(rune)

def test_dir_lists_the_public_names_only():
    names = dir(rune)
    public = [n for n in names if not n.startswith("__")]
    assert sorted(public) == sorted({*rune.__all__, "typing"})
    for internal in ("core", "batching", "tape", "api_util", "numpy_api", "dispatch"):
        assert internal not in names
    assert "__version__" in names and "__all__" in names


def test_submodules_stay_importable():
    import importlib
    tree = importlib.import_module("rune.tree")
    core = importlib.import_module("rune.core")
    assert rune.tree is tree and rune.core is core
    ns = {}
    exec("from rune import *", ns)
    assert {n for n in ns if not n.startswith("__")} == set(rune.__all__)


# ---------------------------------------------------------------- check_grads, JAX's form

@rune.custom_vjp
def _sin_first_order_only(x):
    return np.sin(x)


_sin_first_order_only.defvjp(
    lambda x: (np.sin(x), x),
    # right at first order; its own derivative is zero (stop_gradient), wrong at second
    lambda x, g: (g * np.cos(rune.stop_gradient(x)),))


def test_jax_form_reads_the_order_positionally():
    x = np.array([0.3, 1.1])            # (a custom_vjp has no forward mode: modes="rev")
    rune.check_grads(_sin_first_order_only, (x,), 1, modes="rev")
    with pytest.raises(AssertionError, match="order 2"):
        rune.check_grads(_sin_first_order_only, (x,), 2, modes="rev")
    with pytest.raises(AssertionError, match="order 2"):
        rune.check_grads(_sin_first_order_only, [x], 2, modes=["rev"])


def test_jax_form_passes_the_tuple_as_the_arguments():
    x, y = np.array([0.3, 1.1]), np.array([2.0, -1.0])
    rune.check_grads(lambda a, b: np.sin(a) * b, (x, y), 2)
    rune.check_grads(np.sin, (x,), 1)                       # (np.sin's `out` is optional)
    rune.check_grads(lambda a, b: np.sin(a) * b, (x, y), order=1)   # only JAX's reading fits


def test_jax_form_still_checks_each_argument():
    @rune.custom_vjp
    def mul(a, b):
        return a * b
    mul.defvjp(lambda a, b: (a * b, (a, b)), lambda r, g: (g * r[1], g * r[1]))  # b's is wrong
    with pytest.raises(AssertionError, match=r"\bb\b"):
        rune.check_grads(mul, (np.array([0.5]), np.array([2.0])), 1, modes="rev")


def test_runes_own_form_is_unchanged():
    x, y = np.array([0.3, 1.1]), np.array([2.0, -1.0])
    rune.check_grads(lambda a, b: np.sin(a) * b, x, y, order=1)
    rune.check_grads(lambda a, b: np.sin(a) * b, x, y)
    with pytest.raises(AssertionError):
        rune.check_grads(_sin_first_order_only, x, modes="rev")     # the default order is 2
    # a tuple and an int where only rune's reading fits f: f(pair, n)
    rune.check_grads(lambda p, n: np.sin(p[0]) * p[1] * n, (x, y, y), 3)
    # a tuple argument, rune's form
    rune.check_grads(lambda p: np.sin(p[0]) * p[1], (x, y))


def test_an_ambiguous_call_that_fails_says_how_it_was_read():
    x, y = np.array([0.3]), np.array([2.0])
    with pytest.raises(IndexError) as info:      # read as f(x, y); f wanted (pair, n)
        rune.check_grads(lambda p, n: np.sin(p[0]) * p[1] * n, (x, y), 3)
    assert "JAX's check_grads(f, args, order)" in "".join(info.value.__notes__)
    rune.check_grads(lambda p, n: np.sin(p[0]) * p[1] * n, (x, y), 3, order=1)
    with pytest.raises(AttributeError) as info:   # read as f((x,)); f wanted x
        rune.check_grads(lambda a: a.T @ a, (x,), order=1)
    assert "give the order positionally" in "".join(info.value.__notes__)


def test_order_must_still_be_valid():
    with pytest.raises(ValueError, match="order"):
        rune.check_grads(np.sin, np.array([1.0]), order=0)


# ---------------------------------------------------------------- holomorphic=

Z = np.array([0.3 + 0.4j, -1.2 + 0.7j])


def _complex_fd(f, z, eps=1e-6):
    """f'(z) of a holomorphic elementwise f by central differences along the real axis."""
    return (f(z + eps) - f(z - eps)) / (2 * eps)


def test_grad_holomorphic_is_the_complex_derivative():
    f = lambda z: np.sin(z) * z ** 2            # noqa: E731
    for z in Z:
        g = rune.grad(f, holomorphic=True)(complex(z))
        fd = _complex_fd(f, z)
        assert isinstance(g, complex)
        assert abs(g - fd) <= 1e-8 * (1 + abs(fd))
        assert abs(g - (np.cos(z) * z ** 2 + 2 * z * np.sin(z))) <= 1e-12 * (1 + abs(g))
        # along the imaginary axis too: f(z + i h) - f(z - i h) = 2 i h f'(z)
        fd_im = (f(z + 1e-6j) - f(z - 1e-6j)) / 2e-6j
        assert abs(g - fd_im) <= 1e-8 * (1 + abs(fd_im))
    v, g = rune.value_and_grad(f, holomorphic=True)(Z[0])
    assert v == f(Z[0]) and g == rune.grad(f, holomorphic=True)(Z[0])


def test_jacobians_holomorphic_agree_with_the_derivative():
    f = lambda z: np.exp(z) * z                 # noqa: E731
    d = np.exp(Z) * (Z + 1)
    jf = rune.jacfwd(f, holomorphic=True)(Z)
    jr = rune.jacrev(f, holomorphic=True)(Z)
    assert jf.dtype == jr.dtype == np.complex128
    np.testing.assert_allclose(jf, np.diag(d), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jr, jf, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.diag(jf), _complex_fd(f, Z), rtol=1e-7)
    h = rune.hessian(lambda z: np.sum(z ** 3), holomorphic=True)(Z)
    np.testing.assert_allclose(h, np.diag(6 * Z), rtol=1e-13)
    # a complex matrix map: J = A
    A = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
    np.testing.assert_allclose(rune.jacrev(lambda z: A @ z, holomorphic=True)(Z), A)
    np.testing.assert_allclose(rune.jacfwd(lambda z: A @ z, holomorphic=True)(Z), A)


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev", "hessian"])
def test_holomorphic_refuses_real_inputs_naming_them(transform):
    f = (lambda x, z: np.sum(z * x)) if transform in ("grad", "hessian") else \
        (lambda x, z: z * x)
    fn = getattr(rune, transform)(f, argnums=(0, 1), holomorphic=True)
    with pytest.raises(TypeError, match=r"holomorphic=True needs complex inputs, but x has "
                                        r"dtype float64"):
        fn(np.array([1.0, 2.0]), Z)


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev"])
def test_holomorphic_refuses_real_outputs(transform):
    f = (lambda z: np.sum(np.abs(z) ** 2)) if transform == "grad" else (lambda z: np.abs(z))
    with pytest.raises(TypeError, match="holomorphic=True needs a complex output"):
        getattr(rune, transform)(f, holomorphic=True)(Z)


def test_without_holomorphic_complex_results_are_as_before():
    # documented in docs/complex.md: the complex output's real part is differentiated,
    # which for a holomorphic f is f'(z) (JAX refuses this call without holomorphic=True)
    assert rune.grad(lambda z: z ** 2)(1 + 1j) == 2 + 2j
    assert rune.grad(lambda z: abs(z) ** 2)(3 + 4j) == 6 - 8j
    with pytest.raises(TypeError):
        rune.grad(lambda z: z ** 2, holomorphic=True)(2.0)    # a Python float is real


def test_jacobians_without_holomorphic_agree_or_refuse():
    # forward mode pushes real tangents and reverse mode differentiates the real part:
    # each mode refuses what it would get only partly, so that jacfwd and jacrev never
    # silently disagree (jacfwd of complex z gave df/dx alone, jacrev of a complex output
    # the Jacobian of its real part)
    f = lambda z: np.abs(z) ** 2 + np.real(z) * 3     # noqa: E731  complex -> real
    with pytest.raises(TypeError, match=r"jacfwd needs real inputs .* but z has dtype "
                                        r"complex128"):
        rune.jacfwd(f)(Z)
    with pytest.raises(TypeError, match=r"hessian needs real inputs .* but z has dtype"):
        rune.hessian(lambda z: np.sum(np.abs(z) ** 2))(Z)
    with pytest.raises(TypeError, match=r"jacfwd needs real inputs .* but p\['b'\] has"):
        rune.jacfwd(lambda x, p: x * p["b"], argnums=(0, 1))(1.0, {"b": Z})
    # jacrev of a real output: df/dx - i df/dy, checked against differences of both parts
    jr = rune.jacrev(f)(Z)
    eps = 1e-6
    for j in range(Z.size):
        e = np.zeros(Z.size)
        e[j] = eps
        dx = (f(Z + e) - f(Z - e)) / (2 * eps)
        dy = (f(Z + 1j * e) - f(Z - 1j * e)) / (2 * eps)
        np.testing.assert_allclose(jr[:, j], dx - 1j * dy, rtol=1e-7, atol=1e-7)
    h = lambda x: x * (1 + 2j) + np.sin(x)            # noqa: E731  real -> complex
    x = np.array([0.3, -1.2])
    jf = rune.jacfwd(h)(x)
    np.testing.assert_allclose(jf, np.diag(1 + 2j + np.cos(x)), rtol=1e-14)
    with pytest.raises(TypeError, match=r"jacrev needs real outputs .* but out has dtype "
                                        r"complex128.*rune.jacfwd"):
        rune.jacrev(h)(x)
    # real in, real out through complex intermediates: both modes, and they agree
    k = lambda x: np.abs(np.exp(1j * x) * (x + 2)) ** 2   # noqa: E731
    np.testing.assert_allclose(rune.jacfwd(k)(x), rune.jacrev(k)(x), rtol=1e-13)


def test_holomorphic_is_keyword_only():
    with pytest.raises(TypeError):
        rune.grad(lambda z: z, 0, False, False, True)  # type: ignore[call-arg]


# ---------------------------------------------------------------- linearize(has_aux=)

def test_linearize_has_aux():
    def f(x, y):
        return np.sin(x) * y, {"norm": np.sum(x ** 2)}
    x, y = np.array([0.3, 1.2]), np.array([2.0, 3.0])
    out, f_jvp, aux = rune.linearize(f, x, y, has_aux=True)
    np.testing.assert_array_equal(out, np.sin(x) * y)
    assert aux == {"norm": np.sum(x ** 2)} and type(aux["norm"]) is not rune.core.Tracer
    tx, ty = RNG.standard_normal(2), RNG.standard_normal(2)
    expect = rune.jvp(lambda a, b: f(a, b)[0], (x, y), (tx, ty))[1]
    x[0] = 100.0                                   # the map is the derivative at the old x
    np.testing.assert_allclose(f_jvp(tx, ty), expect, rtol=1e-14)
    fd = (np.sin(0.3 + 1e-6 * tx[0]) * (2 + 1e-6 * ty[0])
          - np.sin(0.3 - 1e-6 * tx[0]) * (2 - 1e-6 * ty[0])) / 2e-6
    assert abs(f_jvp(tx, ty)[0] - fd) < 1e-8
    out2, f_jvp2 = rune.linearize(lambda a: f(a, y)[0], np.array([0.3, 1.2]))
    np.testing.assert_allclose(f_jvp2(tx), expect - np.sin([0.3, 1.2]) * ty, rtol=1e-14)


def test_linearize_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match="pair"):
        rune.linearize(np.sin, np.array([1.0]), has_aux=True)


# ---------------------------------------------------------------- jacobian, elementwise_grad

def test_jacobian_is_jacrev():
    assert rune.jacobian is rune.jacrev
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(rune.jacobian(np.tanh)(x), np.diag(1 - np.tanh(x) ** 2))


def test_elementwise_grad_of_an_elementwise_function():
    f = lambda x: np.tanh(x) * x ** 2           # noqa: E731
    x = RNG.standard_normal((2, 3))
    g = rune.elementwise_grad(f)(x)
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(g, fd_grad(lambda v: np.sum(f(v)), x), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g.ravel(), np.diag(rune.jacrev(f)(x).reshape(6, 6)),
                               rtol=1e-14)
    assert rune.elementwise_grad(lambda t: t ** 3)(2.0) == 12.0


def test_elementwise_grad_sums_the_rows_of_the_jacobian():
    A = RNG.standard_normal((4, 3))
    f = lambda x, y: {"a": np.sin(A @ x) * y, "b": x[0] * y}    # noqa: E731
    x, y = RNG.standard_normal(3), RNG.standard_normal(4)
    gx, gy = rune.elementwise_grad(f, argnums=(0, 1))(x, y)
    J = rune.jacrev(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, J["a"][0].sum(0) + J["b"][0].sum(0), rtol=1e-13)
    np.testing.assert_allclose(gy, J["a"][1].sum(0) + J["b"][1].sum(0), rtol=1e-13)
    total = lambda v: sum(np.sum(o) for o in rune.tree.leaves(f(v, y)))   # noqa: E731
    np.testing.assert_allclose(gx, fd_grad(total, x), rtol=1e-7, atol=1e-9)


def test_elementwise_grad_refuses_integer_outputs_and_inputs():
    with pytest.raises(TypeError, match="floating outputs, but out has dtype"):
        rune.elementwise_grad(lambda x: (x > 0).astype(int))(np.array([1.0]))
    with pytest.raises(TypeError, match="elementwise_grad"):
        rune.elementwise_grad(lambda x: x * 1.0)(np.array([1, 2]))


def test_new_functions_examples_run():
    import rune.jacobians
    import rune.reverse
    import rune.testing
    for mod in (rune.reverse, rune.jacobians, rune.testing):
        res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0 and res.attempted > 0, mod.__name__
