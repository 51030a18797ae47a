"""scipy.special under every transformation: each function against finite differences
of SciPy's own values (rune.check_grads, second order), the JVP/VJP identity, vmap
against a loop; the Python-level functions in every form; names in error messages."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rune

sc = pytest.importorskip("scipy.special")
from scipy.special import logsumexp, softmax   # noqa: E402  (held by this module)

# name -> (function of the traced arguments, domains (low, high) per argument)
UNARY = {
    "gammaln": (0.5, 3.0), "digamma": (0.5, 3.0), "psi": (0.5, 3.0), "gamma": (0.5, 3.0),
    "loggamma": (0.5, 3.0), "rgamma": (0.5, 3.0), "erf": (-2.0, 2.0), "erfc": (-2.0, 2.0),
    "erfinv": (-0.8, 0.8), "erfcinv": (0.2, 1.8), "ndtr": (-2.0, 2.0), "ndtri": (0.1, 0.9),
    "log_ndtr": (-3.0, 3.0), "expit": (-3.0, 3.0), "logit": (0.1, 0.9),
    "log_expit": (-3.0, 3.0), "entr": (0.2, 2.0), "i0": (-2.0, 2.0), "i1": (-2.0, 2.0),
    "i0e": (0.2, 2.0), "i1e": (0.2, 2.0),
    "j0": (-5.0, 5.0), "j1": (-5.0, 5.0), "y0": (0.3, 5.0), "y1": (0.3, 5.0),
    "k0": (0.3, 3.0), "k1": (0.3, 3.0), "k0e": (0.3, 3.0), "k1e": (0.3, 3.0),
}
BINARY = {
    "beta": ((0.5, 3.0), (0.5, 3.0)), "betaln": ((0.5, 3.0), (0.5, 3.0)),
    "xlogy": ((-1.0, 2.0), (0.5, 3.0)), "xlog1py": ((-1.0, 2.0), (-0.5, 2.0)),
    "rel_entr": ((0.2, 2.0), (0.2, 2.0)), "kl_div": ((0.2, 2.0), (0.2, 2.0)),
    "zeta": ((1.5, 4.0), (0.5, 3.0)),
}


def sample(rng, domain, shape):
    lo, hi = domain
    return rng.uniform(lo, hi, shape)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_check_grads(name, rng):
    f = getattr(sc, name)
    x = sample(rng, UNARY[name], (4,))
    rune.check_grads(f, x, order=2)
    np.testing.assert_allclose(rune.jit(f)(x) if hasattr(rune, "jit") else f(x), f(x))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_check_grads_with_broadcasting(name, rng):
    f = getattr(sc, name)     # the original function object: zeta reaches a private ufunc
    dx, dy = BINARY[name]
    rune.check_grads(f, sample(rng, dx, (3,)), sample(rng, dy, (2, 1)), order=2)


@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_vmap_against_a_loop(name, rng):
    f = getattr(sc, name)
    if name in UNARY:
        args = (sample(rng, UNARY[name], (3, 2)),)
    else:
        args = tuple(sample(rng, d, (3, 2)) for d in BINARY[name])
    got = rune.vmap(f, in_axes=1)(*args)
    want = np.stack([f(*(a[:, i] for a in args)) for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    g = rune.vmap(rune.grad(lambda *a: np.sum(f(*a))))(*args)
    want = np.stack([rune.grad(lambda *a: np.sum(f(*a)))(*(a[i] for a in args))
                     for i in range(3)])
    np.testing.assert_allclose(g, want, rtol=1e-13)


def test_values_and_first_derivatives_by_hand():
    x = np.array([0.5, 1.0, 2.5])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.gammaln(x)))(x), sc.psi(x))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.expit(x)))(x),
                               sc.expit(x) * sc.expit(-x))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.erf(x)))(x),
                               2 / np.sqrt(np.pi) * np.exp(-x ** 2))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.i0(x)))(x), sc.i1(x))
    # xlogy(0, y) is 0 for every y: no derivative in y there, none is NaN
    g = rune.grad(lambda y: np.sum(sc.xlogy(np.array([0.0, 1.0]), y)))(np.array([0.0, 2.0]))
    np.testing.assert_allclose(g, [0.0, 0.5])


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_every_order(n, rng):
    x = rng.uniform(0.5, 3.0, 3)
    rune.check_grads(lambda x: sc.polygamma(n, x), x, order=2)
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.polygamma(n, x)))(x),
                               sc.polygamma(n + 1, x), rtol=1e-12)


def test_riemann_zeta_and_its_derivative_in_x():
    # zeta'(2) = -0.93754825431584375...
    assert abs(rune.grad(lambda s: sc.zeta(s))(2.0) - (-0.9375482543158437)) < 1e-12
    rune.check_grads(lambda s: sc.zeta(s), np.array([1.5, 2.0, 3.5]), order=2)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_multigammaln(d, rng):
    a = rng.uniform(2.5, 4.0, 3)
    np.testing.assert_allclose(rune.vmap(lambda a: sc.multigammaln(a, d))(a),
                               sc.multigammaln(a, d), rtol=1e-13)
    rune.check_grads(lambda a: sc.multigammaln(a, d), a, order=2)
    with pytest.raises(ValueError, match="multigammaln"):
        rune.grad(lambda a: sc.multigammaln(a, 4))(0.5)


LSE_FORMS = [
    dict(), dict(axis=0), dict(axis=1), dict(axis=(0, 1)), dict(axis=-1, keepdims=True),
    dict(b="pos"), dict(axis=1, b="pos"), dict(axis=0, b="row"),
]


@pytest.mark.parametrize("kw", LSE_FORMS, ids=str)
def test_logsumexp_forms(kw, rng):
    a = rng.standard_normal((3, 4))
    kw = dict(kw)
    if kw.get("b") == "pos":
        kw["b"] = rng.uniform(0.5, 2.0, (3, 4))
    elif kw.get("b") == "row":
        kw["b"] = rng.uniform(0.5, 2.0, (4,))
    np.testing.assert_allclose(rune.vmap(lambda a: sc.logsumexp(a, **kw))(a[None])[0],
                               sc.logsumexp(a, **kw), rtol=1e-13)
    rune.check_grads(lambda a: sc.logsumexp(a, **kw), a, order=2)
    if "b" in kw:
        rune.check_grads(lambda b: sc.logsumexp(a, **{**kw, "b": b}), kw["b"], order=2)


def test_logsumexp_return_sign_and_zero_weights(rng):
    a = rng.standard_normal(4)
    b = np.array([1.0, -3.0, 0.5, 0.0])
    out, sign = rune.vmap(lambda a: sc.logsumexp(a, b=b, return_sign=True))(a[None])
    want_out, want_sign = sc.logsumexp(a, b=b, return_sign=True)
    np.testing.assert_allclose(out[0], want_out, rtol=1e-13)
    assert sign[0] == want_sign
    rune.check_grads(lambda a: sc.logsumexp(a, b=b, return_sign=True)[0], a, order=2)
    # -inf entries and a very large one, as in SciPy
    big = np.array([1000.0, -np.inf, 999.0])
    np.testing.assert_allclose(rune.grad(lambda a: sc.logsumexp(a))(big),
                               [1 / (1 + np.exp(-1)), 0.0, 1 / (1 + np.e)])


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_softmax_and_log_softmax(axis, rng):
    x = rng.standard_normal((3, 4))
    for name in ("softmax", "log_softmax"):
        def f(x):
            return getattr(sc, name)(x, axis=axis)
        np.testing.assert_allclose(rune.vmap(f)(x[None])[0], f(x), rtol=1e-13)
        rune.check_grads(f, x, order=2)


def test_python_functions_imported_by_name_into_a_module():
    g = rune.grad(lambda x: logsumexp(x) + softmax(x)[0])(np.zeros(2))
    np.testing.assert_allclose(g, [0.75, 0.25])


def test_errors_name_scipy_special():
    with pytest.raises(NotImplementedError,
                       match=r"scipy\.special\.struve has no derivative with respect to v"):
        rune.grad(lambda v: sc.struve(v, 1.0))(1.0)
    out = np.empty(())      # made outside the function (one made inside takes the write)
    with pytest.raises(NotImplementedError, match=r"scipy\.special\.gammaln"):
        rune.grad(lambda x: sc.gammaln(x, out=out))(1.0)


def test_import_rune_does_not_import_scipy_and_rules_load_on_first_use():
    code = textwrap.dedent("""
        import sys, numpy as np, rune
        assert "scipy" not in sys.modules, "import rune imported scipy"
        from scipy.special import gammaln, logsumexp
        assert "rune.scipy.special" not in sys.modules
        print(rune.grad(gammaln)(3.0), rune.grad(lambda x: logsumexp(x))(np.zeros(2)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0].startswith("0.92278433509846")


def test_a_script_importing_after_its_first_transformation():
    code = textwrap.dedent("""
        import numpy as np, rune
        print(rune.grad(lambda x: x * 2)(1.0))          # the interception scans modules
        from scipy.special import logsumexp             # imported into __main__ later
        print(rune.grad(lambda x: logsumexp(x))(np.zeros(2)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[0.5 0.5]" in out.stdout


def test_docstring_examples_run():
    import doctest
    import rune.scipy.special
    import rune.scipy.stats
    from rune import intercept
    for module in (rune.scipy.special, rune.scipy.stats, intercept):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_the_branch_not_taken_gives_no_nan():
    x = np.array([0.0, 2.0])
    g = rune.grad(lambda x: np.sum(np.where(x > 0, sc.gammaln(np.where(x > 0, x, 1.0)), 0.0)
                                   + np.where(x > 0, sc.gammaln(x), 0.0)))(x)
    np.testing.assert_allclose(g, [0.0, 2 * sc.psi(2.0)])
    h = rune.hessian(lambda x: np.sum(np.where(x > 0, sc.entr(x), 0.0)))(x)
    np.testing.assert_allclose(h, [[0.0, 0.0], [0.0, -0.5]])
