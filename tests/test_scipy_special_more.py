"""The scipy.special sweep: every ufunc SciPy exports (and the private ones its Python
functions call) is classified argument by argument in rune.primitives.special.STATUS as
having a rule, being a constant (SciPy truncates it to an integer), or refused with a
reason; and every class is checked here by behaviour: rules against finite differences of
SciPy's own values (rune.check_grads, second order unless the derivative uses a refused
one), values against SciPy's, vmap against a loop; constants give 0 and SciPy's values are
indeed flat there; refusals raise NotImplementedError naming the function and argument."""

import numpy as np
import pytest

import rune

sc = pytest.importorskip("scipy.special")
import rune.scipy.special  # noqa: E402,F401  (loads the rules)
from rune.primitives.special import STATUS  # noqa: E402

# SciPy's own warnings when the sweep passes a non-integer where it truncates
pytestmark = [pytest.mark.filterwarnings("ignore:floating point number truncated"),
              pytest.mark.filterwarnings("ignore:non-integer arg n is deprecated")]

C = "complex"
I3 = [0, 1, 4]                 # integer degrees
SHAPE = [1.5, 2.0, 3.0]
P = (0.2, 0.8)                 # probabilities
V = [0.5, 1.0, 2.3]            # Bessel orders
# name -> per argument: (lo, hi) a uniform draw of 3 values, (C, lo, hi) a complex one,
# a list (3 given values) or a number
DOMAINS = {
    "cbrt": [(0.3, 2.0)], "exp2": [(-1, 1)], "exp10": [(-1, 1)], "expm1": [(-1, 1)],
    "log1p": [(-0.5, 1)], "cosm1": [(-2, 2)], "sindg": [(-80, 80)], "cosdg": [(-80, 80)],
    "tandg": [(-60, 60)], "cotdg": [(20, 80)], "radian": [(-5, 5)] * 3,
    "exprel": [[-2.0, 1e-3, 0.0]], "powm1": [(0.3, 2), (-1.5, 1.5)], "round": [(-3, 3)],
    "boxcox": [(0.3, 3), [-0.7, 0.0, 1e-4]], "boxcox1p": [(-0.5, 2), [-0.7, 0.0, 0.4]],
    "inv_boxcox": [(0.1, 1.5), [-0.5, 0.0, 0.8]], "inv_boxcox1p": [(0.1, 1.5), [-0.5, 0.0, 0.8]],
    "huber": [[1.0, 1.5, 0.7], [0.3, -2.5, 1.2]], "pseudo_huber": [(0.5, 2), (-3, 3)],
    "erf": [(-2, 2)], "erfc": [(-2, 2)], "erfinv": [(-0.8, 0.8)], "erfcinv": [(0.2, 1.8)],
    "erfcx": [(-1, 3)], "erfi": [(-1.5, 1.5)], "dawsn": [(-3, 3)], "wofz": [(C, -1.5, 1.5)],
    "ndtr": [(-3, 3)], "ndtri": [P], "log_ndtr": [(-3, 3)], "ndtri_exp": [(-3, -0.2)],
    "fresnel": [(-2, 2)], "modfresnelp": [(0.2, 2)], "modfresnelm": [(0.2, 2)],
    "voigt_profile": [(-2, 2), (0.3, 1.5), (0.2, 1.5)],
    "exp1": [(0.2, 3)], "expi": [(0.2, 3)], "expn": [I3, (0.3, 3)], "sici": [(0.2, 3)],
    "shichi": [(0.2, 2)], "spence": [[0.3, 1.0, 2.5]], "owens_t": [(-2, 2), (-2, 2)],
    "gamma": [(0.5, 3)], "gammaln": [(0.5, 3)], "loggamma": [(0.5, 3)], "rgamma": [(0.5, 3)],
    "psi": [(0.5, 3)], "gammasgn": [(-2.5, 3)], "beta": [(0.5, 3)] * 2, "betaln": [(0.5, 3)] * 2,
    "poch": [(0.5, 3), (-0.4, 2)], "binom": [(2.5, 6), (0.3, 2)],
    "expit": [(-3, 3)], "logit": [(0.1, 0.9)], "log_expit": [(-3, 3)], "entr": [(0.2, 2)],
    "xlogy": [(-1, 2), (0.5, 3)], "xlog1py": [(-1, 2), (-0.5, 2)],
    "rel_entr": [(0.2, 2)] * 2, "kl_div": [(0.2, 2)] * 2,
    "gammainc": [SHAPE, (0.3, 3)], "gammaincc": [SHAPE, (0.3, 3)],
    "gammaincinv": [SHAPE, P], "gammainccinv": [SHAPE, P],
    "gdtr": [(0.5, 2), SHAPE, (0.3, 3)], "gdtrc": [(0.5, 2), SHAPE, (0.3, 3)],
    "gdtrix": [(0.5, 2), SHAPE, P], "gdtria": [P, SHAPE, (0.5, 3)], "gdtrib": [1.0, 0.5, 2.0],
    "chdtr": [SHAPE, (0.5, 4)], "chdtrc": [SHAPE, (0.5, 4)], "chdtri": [SHAPE, P],
    "chdtriv": [0.5, 2.0], "pdtr": [[0, 2, 5], (0.5, 4)], "pdtrc": [[0, 2, 5], (0.5, 4)],
    "pdtri": [[0, 2, 5], P], "pdtrik": [0.5, 2.0], "stdtr": [[2.5, 4, 10], (-2, 2)],
    "stdtrit": [[2.5, 4, 10], P], "stdtridf": [0.3, 1.0],
    "betainc": [SHAPE, [2, 2.5, 4], (0.1, 0.9)], "betaincc": [SHAPE, [2, 2.5, 4], (0.1, 0.9)],
    "betaincinv": [SHAPE, [2, 2.5, 4], P], "betainccinv": [SHAPE, [2, 2.5, 4], P],
    "btdtria": [0.5, 2.0, 0.4], "btdtrib": [2.0, 0.5, 0.4],
    "bdtr": [[1, 2, 4], [6, 7, 8], P], "bdtrc": [[1, 2, 4], [6, 7, 8], P],
    "bdtri": [[1, 2, 4], [6, 7, 8], P], "bdtrik": [0.5, 8.0, 0.3], "bdtrin": [2.0, 0.5, 0.3],
    "nbdtr": [[1, 2, 4], [2, 3, 5], P], "nbdtrc": [[1, 2, 4], [2, 3, 5], P],
    "nbdtri": [[1, 2, 4], [2, 3, 5], P], "nbdtrik": [0.5, 3.0, 0.4], "nbdtrin": [2.0, 0.5, 0.4],
    "fdtr": [[2, 3, 5], [4, 6, 9], (0.3, 3)], "fdtrc": [[2, 3, 5], [4, 6, 9], (0.3, 3)],
    "fdtri": [[2, 3, 5], [4, 6, 9], P], "fdtridfd": [3.0, 0.5, 1.2],
    "nrdtrimn": [P, (0.5, 2), (-1, 1)], "nrdtrisd": [(-1, 0), (0.6, 0.9), (1, 2)],
    "_ncx2_pdf": [1.5, 3.0, 1.2], "_nct_pdf": [0.5, 4.0, 0.3], "_ncf_pdf": [1.2, 3.0, 5.0, 0.7],
    "chndtr": [(0.5, 4), SHAPE, (0.3, 2)], "chndtrix": [P, SHAPE, (0.3, 2)],
    "chndtrinc": [[4.0, 5.0, 6.0], [1.5, 3.0, 4.0], (0.2, 0.35)], "chndtridf": [2.0, 0.5, 1.0],
    "nctdtr": [[2.5, 4, 10], [0.3, 0.5, -0.2], (-1.5, 1.5)],
    "nctdtrit": [[2.5, 4, 10], [0.3, 0.5, -0.2], P], "nctdtridf": [0.5, 0.3, 1.0],
    "nctdtrinc": [4.0, 0.5, 1.0], "ncfdtr": [[3, 4, 5], [5, 6, 8], [0.5, 0.7, 1.0], (0.5, 3)],
    "ncfdtri": [[3, 4, 5], [5, 6, 8], [0.5, 0.7, 1.0], P], "ncfdtridfd": [3.0, 0.5, 0.7, 1.2],
    "ncfdtridfn": [0.5, 5.0, 0.7, 1.2], "ncfdtrinc": [3.0, 5.0, 0.3, 1.2],
    "_kolmogp": [(0.5, 1.5)], "_smirnovp": [[3, 5, 7], (0.2, 0.6)],
    "kolmogorov": [(0.5, 1.5)], "kolmogi": [P], "smirnov": [[3, 5, 7], (0.2, 0.6)],
    "smirnovi": [[3, 5, 7], P], "tklmbda": [(-1.5, 1.5), [-0.3, 0.5, 0.2]],
    "_lambertw": [(C, -0.3, 1.5), 0, 1e-8], "wrightomega": [(-2, 2)],
    "j0": [(-5, 5)], "j1": [(-5, 5)], "y0": [(0.3, 5)], "y1": [(0.3, 5)], "k0": [(0.3, 3)],
    "k1": [(0.3, 3)], "k0e": [(0.3, 3)], "k1e": [(0.3, 3)], "i0": [(-2, 2)], "i1": [(-2, 2)],
    "i0e": [(0.2, 2)], "i1e": [(0.2, 2)], "yn": [[0, 1, 2], (0.3, 4)], "kn": [[0, 1, 2], (0.3, 3)],
    **{n: [V, (0.3, 4)] for n in ("jv", "yv", "iv", "ive", "kv", "kve", "jve", "yve", "struve",
                                  "modstruve")},
    **{n: [V, (C, 0.3, 3)] for n in ("hankel1", "hankel2", "hankel1e", "hankel2e")},
    "airy": [(-2, 2)], "airye": [(0.2, 2)], "itairy": [(0.2, 2)],
    **{n: [(0.3, 3)] for n in ("itj0y0", "iti0k0", "it2j0y0", "it2i0k0", "itstruve0",
                               "it2struve0", "itmodstruve0", "ber", "bei", "ker", "kei",
                               "berp", "beip", "kerp", "keip", "kelvin")},
    **{f"_spherical_{k}{d}": [[0, 1, 3], (0.3, 3)] for k in ("jn", "yn", "in", "kn")
       for d in ("", "_d")},
    "besselpoly": [(0.3, 2), [0.0, 1.5, 2.0], [0.0, 1.0, 2.0]],
    "wright_bessel": [[0.5, 1.0, 1.5], [0.5, 1.0, 2.0], (0.3, 2)],
    "log_wright_bessel": [[0.5, 1.0, 1.5], [0.5, 1.0, 2.0], (0.3, 2)],
    **{f"eval_{n}": [I3, (-0.9, 0.9)] for n in ("legendre", "chebyt", "chebyu")},
    **{f"eval_{n}": [I3, (0.05, 0.95)] for n in ("sh_legendre", "sh_chebyt", "sh_chebyu")},
    "eval_chebyc": [I3, (-1.8, 1.8)], "eval_chebys": [I3, (-1.8, 1.8)],
    "eval_gegenbauer": [I3, [0.7, 1.5, 2.0], (-0.9, 0.9)],
    "eval_jacobi": [I3, [0.7, 1.5, 0.2], [1.2, 0.5, 2.0], (-0.9, 0.9)],
    "eval_sh_jacobi": [I3, [2.7, 3.0, 2.0], [1.2, 1.5, 1.0], (0.05, 0.95)],
    "eval_laguerre": [I3, (0.1, 3)], "eval_genlaguerre": [I3, [0.7, 1.5, 0.2], (0.1, 3)],
    "eval_hermite": [I3, (-2, 2)], "eval_hermitenorm": [I3, (-2, 2)],
    "lpmv": [[0, 1, 2], [3.0, 2.5, 2.0], (-0.9, 0.9)],
    "hyp0f1": [[1.5, 2.5, 0.7], (-2, 2)], "hyp1f1": [[0.5, 1.2, -0.3], [1.5, 2.5, 0.7], (-2, 2)],
    "hyp2f1": [[0.5, 1.0, -0.3], [1.5, 0.7, 1.2], [2.5, 3.0, 1.7], (-0.8, 0.8)],
    "hyperu": [[0.5, 1.2, 2.0], [1.5, 0.5, 2.5], (0.5, 3)],
    "ellipk": [[-0.5, 0.0, 0.6]], "ellipe": [[-0.5, 0.0, 0.6]], "ellipkm1": [(0.1, 1.5)],
    "ellipkinc": [[-0.7, 1.2, 4.0], [-0.5, 0.0, 0.6]],
    "ellipeinc": [[-0.7, 1.2, 4.0], [-0.5, 0.0, 0.6]], "ellipj": [(-3, 3), [0.0, 0.3, 0.9]],
    "elliprf": [(0.5, 2)] * 3, "elliprc": [(0.5, 2)] * 2, "elliprd": [1.0, 2.0, 1.5],
    "elliprg": [1.0, 2.0, 1.5], "elliprj": [1.0, 2.0, 1.5, 0.8], "agm": [[0.5, 2.0, -1.0], [0.7, 2.0, -2.5]],
    "pbdv": [[1.3, 0.4, -0.6], (-1, 2)], "pbvv": [[1.3, 0.4, -0.6], (0.3, 2)],
    "pbwa": [[1.3, 0.4, -0.6], (-2, 2)], "mathieu_a": [[1, 2, 3], 1.5], "mathieu_b": [[1, 2, 3], 1.5],
    "mathieu_cem": [[0, 1, 2], [1.5, 0.5, 2.0], (5, 80)],
    "mathieu_sem": [[1, 2, 3], [1.5, 0.5, 2.0], (5, 80)],
    **{f"mathieu_mod{k}": [[1, 2, 3], [1.5, 0.5, 2.0], (0.3, 1.2)]
       for k in ("cem1", "cem2", "sem1", "sem2")},
    **{f"{p}_{k}": [1.0, 2.0, 1.5, 0.3] for p in ("pro", "obl") for k in ("ang1", "rad1", "rad2")},
    **{f"{p}_{k}_cv": [1.0, 2.0, 1.5, 2.0, 0.3] for p in ("pro", "obl")
       for k in ("ang1", "rad1", "rad2")},
    "pro_cv": [1.0, 2.0, 1.5], "obl_cv": [1.0, 2.0, 1.5], "zetac": [[-2.5, 0.4, 2.5]],
    "_zeta": [(1.5, 4), (0.5, 3)], "_riemann_zeta": [[-2.5, 0.4, 2.5]],
}
# the derivative uses one that is refused (a density SciPy gives without its derivative,
# Carlson's R_D): first order only
ORDER1 = {"kolmogorov", "kolmogi", "smirnov", "smirnovi", "chndtr", "chndtrix", "chndtrinc",
          "nctdtr", "nctdtrit", "ncfdtr", "ncfdtri", "ellipkinc", "ellipeinc", "elliprf",
          "elliprc"}


BY_NAME = {u.__name__: u for u in STATUS}


def ufunc(name):
    return BY_NAME[name]


def public():
    return sorted(n for n in dir(sc) if isinstance(getattr(sc, n), np.ufunc))


def draw(name, rng):
    out = []
    for spec in DOMAINS[name]:
        if isinstance(spec, tuple) and spec[0] == C:
            out.append(rng.uniform(spec[1], spec[2], 3) + 1j * rng.uniform(0.1, 0.6, 3))
        elif isinstance(spec, tuple):
            out.append(rng.uniform(*spec, 3))
        elif isinstance(spec, list):
            out.append(np.array(spec))
        else:
            out.append(spec)
    return out


def realify(out):
    """Complex outputs as (real, imag), so that real inputs give real-valued trees."""
    out = out if isinstance(out, tuple) else (out,)
    return tuple(p for o in out for p in ((np.real(o), np.imag(o)) if np.iscomplexobj(o)
                                          else (o,)))


def by_status(kind):
    out = []
    for u, st in STATUS.items():
        for i, (arg, s) in enumerate(st):
            if (s == kind) if kind in ("rule", "constant") else s not in ("rule", "constant"):
                out.append((u.__name__, i, arg))
    return sorted(out)


def test_every_ufunc_is_classified_argument_by_argument():
    missing = [n for n in public() if getattr(sc, n) not in STATUS]
    assert not missing, f"scipy.special ufuncs without a classification: {missing}"
    for u, st in STATUS.items():
        assert len(st) == u.nin, u.__name__
        for arg, s in st:
            assert arg and s and isinstance(s, str), (u.__name__, arg)
    assert set(DOMAINS) == {u.__name__ for u in STATUS}, \
        set(DOMAINS) ^ {u.__name__ for u in STATUS}
    counts = {k: len(by_status(k)) for k in ("rule", "constant", "refused")}
    assert counts["rule"] >= 240, counts


def _rule_args(name):
    return [i for i, (_, s) in enumerate(STATUS[ufunc(name)]) if s == "rule"]


RULES = sorted({n for n, _, _ in by_status("rule")})


@pytest.mark.parametrize("name", RULES)
def test_rules_against_finite_differences_and_scipy(name, rng):
    f = ufunc(name)
    args = draw(name, rng)
    idx = _rule_args(name)
    complex_in = any(np.iscomplexobj(args[i]) for i in idx)

    def g(*diff):
        a = list(args)
        for i, d in zip(idx, diff):
            a[i] = d
        out = f(*a)
        return out if complex_in else realify(out)

    diff = [args[i] for i in idx]
    with np.errstate(all="ignore"):
        want = g(*diff)
        got, _ = rune.jvp(g, tuple(diff), tuple(diff))
        for w, o in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            np.testing.assert_allclose(o, w, rtol=1e-13, atol=0, equal_nan=False)
        rune.check_grads(g, *diff, order=1 if name in ORDER1 else 2)
        # vmap over every array argument against SciPy on the whole arrays (a loop)
        def h(*a):
            out = f(*a)
            return out if complex_in else realify(out)
        axes = tuple(0 if np.ndim(a) else None for a in args)
        mapped = rune.vmap(h, in_axes=axes)(*args)
        for w, o in zip(want if isinstance(want, tuple) else (want,),
                        mapped if isinstance(mapped, tuple) else (mapped,)):
            np.testing.assert_allclose(o, w, rtol=1e-13)


CONSTANTS = by_status("constant")


@pytest.mark.parametrize("name,i,arg", CONSTANTS)
def test_constants_have_zero_derivative_where_scipy_is_flat(name, i, arg, rng):
    f = ufunc(name)
    args = draw(name, rng)
    base = np.asarray(args[i], dtype=float) + 0.3 * (np.asarray(args[i]) >= 0) \
        - 0.3 * (np.asarray(args[i]) < 0)
    if arg == "tol":         # lambertw's tolerance: a small one, not a truncated integer
        base = np.float64(2e-8)
    if f.nin == 1:          # integer-valued functions: round, gammasgn
        x = np.array([0.3, 1.7, -2.2])
        assert np.all(rune.grad(lambda x: np.sum(f(x)))(x) == 0)
        return
    a = list(args)
    a[i] = base
    try:
        with np.errstate(all="ignore"):
            value = f(*a)
    except TypeError:                # an integer-only loop: nothing to differentiate
        pytest.skip(f"{name} takes an integer {arg} only")
    a_trunc = list(args)
    a_trunc[i] = args[i] if arg == "tol" else np.trunc(base)
    with np.errstate(all="ignore"):
        flat = f(*a_trunc)
    for v, t in zip(realify(value), realify(flat)):     # SciPy truncates it (or gives NaN)
        if arg == "tol":      # lambertw's tolerance: the value moves within it only
            np.testing.assert_allclose(v, t, rtol=1e-7)
        else:
            assert np.all((v == t) | np.isnan(v)), (name, arg)

    def g(n):
        b = list(a)
        b[i] = n
        return sum(np.sum(np.nan_to_num(o)) for o in realify(f(*b)))

    with np.errstate(all="ignore"):
        assert np.all(rune.grad(g)(base) == 0), (name, arg)


REFUSED = by_status("refused")


@pytest.mark.parametrize("name,i,arg", REFUSED)
def test_refusals_name_the_function_and_the_argument(name, i, arg, rng):
    f = ufunc(name)
    args = draw(name, rng)
    a0 = np.asarray(args[i], dtype=float) if not np.iscomplexobj(args[i]) else args[i]

    def g(x):
        a = list(args)
        a[i] = x
        return sum(np.sum(o) for o in realify(f(*a)))

    pattern = rf"scipy\.special\.\S+ has no derivative with respect to {arg} in rune \("
    with np.errstate(all="ignore"):
        with pytest.raises(NotImplementedError, match=pattern):
            rune.grad(g)(a0)
        with pytest.raises(NotImplementedError, match=pattern):
            rune.jvp(g, (a0,), (np.ones_like(a0),))


def test_yn_truncates_a_non_integer_order_as_scipy_does():
    x = np.array([0.4, 1.3, 2.7])
    for n in (1.7, -1.7, 0.5, 2.2):
        np.testing.assert_array_equal(rune.vmap(lambda x: sc.yn(n, x))(x), sc.yn(n, x))
        want = rune.grad(lambda x: np.sum(sc.yn(np.trunc(n), x)))(x)
        np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.yn(n, x)))(x), want,
                                   rtol=1e-14)
        assert rune.grad(lambda n: np.sum(sc.yn(n, x)))(n) == 0
        rune.check_grads(lambda x: sc.yn(n, x), x, order=2)
    # n in (0, 1): the order is 0, whose derivative is -y1 (n - 1 untruncated would be -0.5)
    np.testing.assert_allclose(rune.grad(lambda x: sc.yn(0.5, x))(1.3), -sc.y1(1.3),
                               rtol=1e-14)


def test_closed_forms_at_their_removable_points():
    # exprel'(0) = 1/2, boxcox's lmbda-derivative at 0 is log(x)^2 / 2, spence'(1) = -1,
    # sin(x)/x at 0, dK/dm at 0 = pi/8, pseudo_huber's delta-derivative at 0 is |r|
    assert rune.grad(sc.exprel)(0.0) == 0.5
    np.testing.assert_allclose(rune.grad(lambda l: sc.boxcox(2.0, l))(0.0),
                               np.log(2.0) ** 2 / 2, rtol=1e-15)
    np.testing.assert_allclose(rune.grad(sc.spence)(1.0), -1.0, rtol=1e-15)
    np.testing.assert_allclose(rune.grad(lambda x: sc.sici(x)[0])(0.0), 1.0, rtol=1e-15)
    np.testing.assert_allclose(rune.grad(sc.ellipk)(0.0), np.pi / 8, rtol=1e-15)
    np.testing.assert_allclose(rune.grad(sc.ellipe)(0.0), -np.pi / 8, rtol=1e-15)
    np.testing.assert_allclose(rune.grad(lambda d: sc.pseudo_huber(d, -1.5))(0.0), 1.5)
    # the second derivative through the series: exprel''(0) = 1/3
    np.testing.assert_allclose(rune.grad(rune.grad(sc.exprel))(0.0), 1 / 3, rtol=1e-14)


def test_incomplete_elliptic_integrals_in_m_by_hand():
    # Legendre's form (DLMF 19.4): dF/dm = (E - (1-m) F) / (2m (1-m)) - sin 2phi /
    # (4 (1-m) Delta); dE/dm = (E - F) / (2m), against rune's Carlson form
    phi, m = 0.9, 0.4
    f, e = sc.ellipkinc(phi, m), sc.ellipeinc(phi, m)
    delta = np.sqrt(1 - m * np.sin(phi) ** 2)
    want_f = (e - (1 - m) * f) / (2 * m * (1 - m)) - np.sin(2 * phi) / (4 * (1 - m) * delta)
    np.testing.assert_allclose(rune.grad(lambda m: sc.ellipkinc(phi, m))(m), want_f,
                               rtol=1e-13)
    np.testing.assert_allclose(rune.grad(lambda m: sc.ellipeinc(phi, m))(m),
                               (e - f) / (2 * m), rtol=1e-13)
    rune.check_grads(lambda p: sc.ellipkinc(p, m), np.array([0.3, 2.0, -4.0]), order=2)
    with pytest.raises(NotImplementedError, match=r"elliprd has no derivative"):
        rune.hessian(lambda m: sc.ellipkinc(phi, m))(m)


def test_tukey_lambda_follows_the_mathematical_function_near_zero():
    # SciPy evaluates the logistic for |lmbda| < ~1e-4, so its finite differences there are
    # 0; rune gives the derivative of the Tukey-lambda distribution function itself,
    # continuous with the one SciPy's values show further out
    g0 = rune.grad(lambda l: sc.tklmbda(0.9, l))(0.0)
    h = 1e-3
    fd = (sc.tklmbda(0.9, h) - sc.tklmbda(0.9, -h)) / (2 * h)
    np.testing.assert_allclose(g0, fd, rtol=1e-5)


def test_python_level_functions_reach_the_rules():
    x = np.array([-1.3, 0.4, 2.0])
    for kind in ("jn", "yn", "in", "kn"):
        f = getattr(sc, f"spherical_{kind}")
        for d in (False, True):
            np.testing.assert_allclose(rune.vmap(lambda x: f(2, x, derivative=d))(x),
                                       f(2, x, derivative=d), rtol=1e-13)
        np.testing.assert_allclose(rune.vmap(rune.grad(lambda x: f(2, x)))(x),
                                   f(2, x, derivative=True), rtol=1e-12)
    with pytest.raises(TypeError, match="integer"):
        rune.grad(lambda n: sc.spherical_jn(n, 1.0))(1.0)
    np.testing.assert_allclose(rune.grad(lambda z: sc.lambertw(z).real)(1.0),
                               sc.lambertw(1.0).real / (1.0 * (1 + sc.lambertw(1.0).real)),
                               rtol=1e-14)
    np.testing.assert_allclose(rune.grad(lambda x: sc.softplus(x))(0.3), sc.expit(0.3),
                               rtol=1e-15)
    rune.check_grads(lambda s: sc.zeta(s), np.array([-3.5, -0.5, 0.5, 2.0]), order=2)


def test_docstring_examples_run():
    import doctest
    from rune.primitives import special_more, special_bessel, special_poly
    import rune.scipy.special as rss
    for module in (rss, special_more, special_bessel, special_poly):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def _generator():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "docs" / "gen_supported.py"
    spec = importlib.util.spec_from_file_location("gen_supported_scipy", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen, path.with_name("supported.md").read_text()


def test_supported_md_lists_scipy_and_is_current():
    gen, text = _generator()
    lines = gen.scipy_sections()
    missing = [line for line in lines if line.startswith("|") and line not in text]
    assert not missing, f"run python docs/gen_supported.py: {missing[:3]}"
    for name in ("gammaln", "struve", "pro_ang1", "ellipkinc", "logsumexp"):
        assert f"| `scipy.special.{name}" in text, name
    assert "| `scipy.stats.weibull_min` |" in text and "| `scipy.stats.skew` |" in text
    assert "| `scipy.linalg.solve` |" in text and "| `scipy.signal.convolve` |" in text
    assert "`gompertz`" in text            # the unsupported ones, with what happens
    # every ufunc with a status has its row, refusals with their reasons
    for u, st in STATUS.items():
        assert f"`{rune.scipy.special._public_name(u)}`" in text, u.__name__


def test_generator_lists_a_module_by_its_all():
    import types
    gen, _ = _generator()
    plain = types.SimpleNamespace(__all__=["minimize", "REPLACEMENTS", "_private"])
    assert gen.scipy_rows(plain, "optimize") == [("scipy.optimize.minimize", "")]
    named = types.SimpleNamespace(__all__=["spsolve"], SCIPY_MODULE="scipy.sparse.linalg")
    assert gen.scipy_rows(named, "sparse_linalg") == [("scipy.sparse.linalg.spsolve", "")]
    table = types.SimpleNamespace(SUPPORTED=[("scipy.integrate.quad", "in the bounds")])
    assert gen.scipy_rows(table, "integrate") == [("scipy.integrate.quad", "in the bounds")]


def test_scaled_functions_refuse_a_complex_argument():
    z = np.array([0.5 + 0.3j])
    for f in (sc.ive, sc.kve, sc.jve, sc.yve):
        with pytest.raises(NotImplementedError, match="complex argument"):
            rune.jvp(lambda z: f(1.0, z), (z,), (np.ones_like(z),))
    # the holomorphic ones take it: J_v'(z) by the recurrence
    rune.check_grads(lambda z: sc.jv(1.5, z), z, order=2)
