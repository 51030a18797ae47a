"""NumPy's whole public API is classified (issue 12), and what the table calls covered is.

``docs/gen_supported.py`` sorts every public function of ``np``, ``np.linalg`` and
``np.fft`` into covered / covered without derivative / constant / not differentiable by
nature / missing.  Here: the classification is complete and current, the functions it
covers through NumPy's own Python code have the right derivatives, and "missing" is an
explicit list that shrinks as coverage grows.
"""

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import rune

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("gen_supported", ROOT / "docs" / "gen_supported.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

X = np.array([0.3, 1.2, -0.7, 2.1])

# One call of each function that NumPy implements in Python on top of covered functions.
PROBES = {
    "np.append": lambda x: np.append(x, x[:2]),
    "np.apply_over_axes": lambda x: np.apply_over_axes(np.sum, x.reshape(2, 2), [0]),
    "np.gradient": lambda x: np.gradient(x),
    "np.i0": lambda x: np.i0(x),
    "np.poly": lambda x: np.poly(x),
    "np.polyadd": lambda x: np.polyadd(x, x[:2]),
    "np.polyder": lambda x: np.polyder(x),
    "np.polyint": lambda x: np.polyint(x),
    "np.polysub": lambda x: np.polysub(x, x[:2]),
    "np.real_if_close": lambda x: np.real_if_close(x),
    "np.resize": lambda x: np.resize(x, 6),
    "np.rollaxis": lambda x: np.rollaxis(x.reshape(2, 2), 1),
    "np.sort_complex": lambda x: np.sort_complex(x),
    "np.trim_zeros": lambda x: np.trim_zeros(x),
    "np.unstack": lambda x: np.stack(np.unstack(x.reshape(2, 2))),
    "np.unwrap": lambda x: np.unwrap(x),
    "np.asarray_chkfinite": lambda x: np.asarray_chkfinite(x),
    "np.piecewise": lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]),
    "np.linalg.cross": lambda x: np.linalg.cross(x[:3], x[1:]),
    "np.linalg.diagonal": lambda x: np.linalg.diagonal(x.reshape(2, 2)),
    "np.linalg.matrix_transpose": lambda x: np.linalg.matrix_transpose(x.reshape(2, 2)),
    "np.linalg.trace": lambda x: np.linalg.trace(x.reshape(2, 2)),
    "np.linalg.tensorinv": lambda x: np.linalg.tensorinv(x.reshape(2, 2) + 2 * np.eye(2), ind=1),
    "np.fft.fftshift": lambda x: np.fft.fftshift(x),
    "np.fft.ifftshift": lambda x: np.fft.ifftshift(x),
    "np.histogram2d": lambda x: np.histogram2d(np.array([0.1, 0.5, 0.9, 0.3]),
                                               np.array([0.2, 0.6, 0.7, 0.1]), bins=2,
                                               weights=x)[0] ** 2,
    "np.histogramdd": lambda x: np.histogramdd(np.array([[0.1, 0.2], [0.5, 0.6], [0.9, 0.7],
                                                         [0.3, 0.1]]), bins=2, weights=x)[0] ** 2,
    "np.asarray": lambda x: np.asarray(x) * 2,
    "np.asanyarray": lambda x: np.asanyarray(x) * 2,
    "np.array": lambda x: np.array(x) * 2,
    "np.ascontiguousarray": lambda x: np.ascontiguousarray(x) * 2,
    "np.asfortranarray": lambda x: np.asfortranarray(x) * 2,
    "np.histogram_bin_edges": lambda x: np.histogram_bin_edges(x, bins=3) * np.sum(x),
    "np.unique_all": lambda x: np.unique_all(x).values * np.unique_all(x).counts,
    "np.unique_counts": lambda x: np.unique_counts(x).values * 2,
    "np.unique_inverse": lambda x: np.unique_inverse(x).values[np.unique_inverse(x)
                                                               .inverse_indices],
    "np.intersect1d": lambda x: np.intersect1d(x, x[1:3]),
    "np.union1d": lambda x: np.union1d(x, x[:2] + 5.0),
    "np.setdiff1d": lambda x: np.setdiff1d(x, x[:2]),
    "np.setxor1d": lambda x: np.setxor1d(x, x[:2] + 5.0),
}

# Functions with no rule and no working Python implementation yet.  Shrink it as rules land;
# a function numerical code reaches for does not belong here for long.
KNOWN_MISSING: set = set()
# The table is generated with the newest NumPy; these exist only in older versions.
REMOVED_SINCE = {"np.in1d", "np.trapz"}


def _exists(name):
    obj = np
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj is not None


def test_the_probes_are_the_table_s_python_implementations():
    assert set(PROBES) == gen.PYTHON_IMPL


@pytest.mark.parametrize("name", sorted(PROBES))
def test_numpy_python_implementation_has_right_derivatives(name):
    if not _exists(name):
        pytest.skip(f"{name} is not in NumPy {np.__version__}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        rune.check_grads(PROBES[name], X, order=2)


def test_every_public_function_is_classified_and_missing_is_explicit():
    table = gen.classify()
    assert len(table) == len(gen.public_api())
    missing = {n for n, c in table.items() if c == "missing"} - REMOVED_SINCE
    # names that do not exist in this NumPy version are not required
    assert missing <= KNOWN_MISSING, f"newly missing: {sorted(missing - KNOWN_MISSING)}"
    covered_now = KNOWN_MISSING & {n for n, c in table.items() if c != "missing"}
    assert not covered_now, f"covered now, remove from KNOWN_MISSING: {sorted(covered_now)}"


def test_supported_md_has_the_current_classification():
    text = (ROOT / "docs" / "supported.md").read_text()
    for name, cat in gen.classify().items():
        if name in REMOVED_SINCE:
            continue
        assert f"| `{name}` | {cat} |" in text, f"run python docs/gen_supported.py ({name})"


def test_polymul_and_extract():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0])
    np.testing.assert_allclose(rune.vmap(np.polymul)(np.stack([a, a]), np.stack([b, b]))[0],
                               np.polymul(a, b))
    rune.check_grads(np.polymul, a, b, order=2)
    rune.check_grads(lambda x: np.extract(x > 0.5, x), X, order=2)


def test_polydiv_and_roots():
    u, v = np.array([1.0, -3.0, 2.0, 5.0]), np.array([2.0, 1.0])
    for k in (0, 1):
        got = rune.jvp(lambda u: np.polydiv(u, v)[k], (u,), (np.ones(4),))[0]
        np.testing.assert_allclose(got, np.polydiv(u, v)[k])
        rune.check_grads(lambda u, v: np.polydiv(u, v)[k], u, v, order=2)
    p = np.array([0.0, 1.0, -6.0, 11.0, -6.0, 0.0])      # leading and trailing zeros
    np.testing.assert_allclose(np.sort(np.real(rune.jvp(np.roots, (p,), (p,))[0])),
                               np.sort(np.real(np.roots(p))), atol=1e-12)
    # d r / d p_k = -r^(n-k) / p'(r) at the simple root r = 3 of (x-1)(x-2)(x-3)
    J = rune.jacfwd(lambda p: np.real(np.roots(p)))(p[1:-1])
    np.testing.assert_allclose(J[0], -np.array([27.0, 9.0, 3.0, 1.0]) / 2.0)
    rune.check_grads(lambda p: np.sort(np.real(np.roots(p))), p[1:-1], order=2)
    got = rune.vmap(lambda p: np.sort(np.real(np.roots(p))))(np.stack([p[1:-1], 2 * p[1:-1]]))
    np.testing.assert_allclose(got, [[1.0, 2.0, 3.0]] * 2)
