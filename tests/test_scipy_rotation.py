"""scipy.spatial.transform.Rotation (and Slerp) under every transformation: each method's
value against SciPy's compiled backend, derivatives against finite differences and JVP
against VJP (``check_grads``, second order), jacfwd against jacrev, vmap against a loop,
the singular points (angle 0, angle pi, gimbal lock), a fitting program, SciPy's own
behaviour outside transformations, and the refusals."""

import pickle
import warnings

import numpy as np
import pytest

import rune
from rune.testing import check_grads

transform = pytest.importorskip("scipy.spatial.transform")
from scipy.spatial.transform import Rotation, Slerp, RotationSpline  # noqa: E402
import scipy.spatial.transform._rotation_cy as rotation_cy  # noqa: E402
from helpers import check_vmap  # noqa: E402

R = Rotation
EPS = np.finfo(float).eps
TOL = 64 * EPS          # the compiled and the array-API formulas: a few roundings apart
RNG = np.random.default_rng(7)
W0 = RNG.standard_normal(3)
W4 = RNG.standard_normal((4, 3))
Q0 = RNG.standard_normal(4)
P = RNG.standard_normal((5, 3))
M0 = R.from_rotvec(W0).as_matrix()
M_NEAR = M0 + 0.1 * RNG.standard_normal((3, 3))          # not orthogonal: projected
GROUP = R.create_group("O")
PLAIN = R.from_rotvec(RNG.standard_normal(3))           # made outside every transformation


def c(x):
    """A writeable copy: SciPy's compiled from_rotvec and from_mrp refuse read-only arrays
    (check_grads passes its inputs read-only)."""
    return np.array(x)


def writeable(f):
    return lambda x: f(c(x))


# name -> (function, point); each returns arrays of the traced inputs
CASES = {
    "from_rotvec": (lambda w: R.from_rotvec(c(w)).as_quat(), W0),
    "from_rotvec_deg": (lambda w: R.from_rotvec(c(w), degrees=True).as_matrix(), 30 * W0),
    "from_rotvec_many": (lambda w: R.from_rotvec(c(w)).as_matrix(), W4),
    "from_quat": (lambda q: R.from_quat(q).as_quat(), Q0),
    "from_quat_scalar_first": (lambda q: R.from_quat(q, scalar_first=True).as_quat(
        canonical=True, scalar_first=True), Q0),
    "init": (lambda q: R(q).as_matrix(), Q0),
    "from_matrix": (lambda m: R.from_matrix(m).as_quat(), M0),
    "from_matrix_projected": (lambda m: R.from_matrix(m).as_quat(), M_NEAR),
    "from_matrix_many": (lambda m: R.from_matrix(m).as_quat(), np.stack([M0, M_NEAR])),
    "from_matrix_assume_valid": (lambda m: R.from_matrix(m, assume_valid=True).as_quat(), M0),
    "from_euler": (lambda a: R.from_euler("xyz", a).as_quat(), W0),
    "from_euler_deg_one_axis": (lambda a: R.from_euler("Z", a, degrees=True).as_quat(),
                                40 * W0[:1]),
    "from_mrp": (lambda p: R.from_mrp(p).as_quat(), 0.3 * W0),
    "from_davenport": (lambda a: R.from_davenport(np.eye(3), "e", a).as_quat(), W0),
    "as_rotvec": (lambda q: R.from_quat(q).as_rotvec(), Q0),
    "as_rotvec_deg": (lambda w: R.from_rotvec(c(w)).as_rotvec(degrees=True), W0),
    "as_euler": (lambda w: R.from_rotvec(c(w)).as_euler("zyx"), W0),
    "as_euler_symmetric": (lambda w: R.from_rotvec(c(w)).as_euler("ZXZ"), W0),
    "as_davenport": (lambda w: R.from_rotvec(c(w)).as_davenport(np.eye(3), "i"), W0),
    "as_mrp": (lambda q: R.from_quat(q).as_mrp(), Q0),
    "apply": (lambda w: R.from_rotvec(c(w)).apply(P), W0),
    "apply_inverse": (lambda w: R.from_rotvec(c(w)).apply(P, inverse=True), W0),
    "apply_plain_rotation": (lambda p: PLAIN.apply(p), P),
    "apply_many": (lambda w: R.from_rotvec(c(w)).apply(P[:4]), W4),
    "mul_plain_traced": (lambda w: (PLAIN * R.from_rotvec(c(w))).as_quat(), W0),
    "mul_traced_plain": (lambda w: (R.from_rotvec(c(w)) * PLAIN).as_matrix(), W0),
    "inv": (lambda w: R.from_rotvec(c(w)).inv().as_quat(), W0),
    "pow": (lambda w: (R.from_rotvec(c(w)) ** 0.3).as_rotvec(), W0),
    "pow_traced_exponent": (lambda n: (PLAIN ** n).as_quat(), np.array(0.7)),
    "magnitude": (lambda w: R.from_rotvec(c(w)).magnitude(), W4),
    "getitem": (lambda w: R.from_rotvec(c(w))[1:3].as_quat(), W4),
    "getitem_array": (lambda w: R.from_rotvec(c(w))[np.array([3, 0])].as_rotvec(), W4),
    "iter": (lambda w: np.stack([r.as_matrix() for r in R.from_rotvec(c(w))]), W4),
    "concatenate": (lambda w: R.concatenate([R.from_rotvec(c(w)), PLAIN]).as_quat(), W0),
    "mean_weights": (lambda wt: R.from_rotvec(0.4 * W4).mean(weights=wt).as_quat(),
                     np.array([1.0, 2.0, 0.5, 1.5])),
    "mean_rotations": (lambda w: R.from_rotvec(c(w)).mean().as_rotvec(), 0.4 * W4),
    "reduce": (lambda w: R.from_rotvec(c(w)).reduce(GROUP).as_quat(), W0),
    # (two-sided: candidates tie exactly, SciPy's choice among them follows the rounding,
    # so only what they share is a smooth function: the magnitude)
    "reduce_both": (lambda w: R.from_rotvec(c(w)).reduce(GROUP, R.create_group("D3"))
                    .magnitude(), W4),
    "align_vectors": (lambda a: R.align_vectors(a, P)[0].as_quat(), P + 0.2),
    "align_vectors_rssd": (lambda b: R.align_vectors(P + 0.2, b)[1], P),
    "align_vectors_weights": (lambda wt: R.align_vectors(P + 0.2, P, weights=wt)[0]
                              .as_quat(), np.arange(1.0, 6.0)),
    "align_vectors_inf_weight": (lambda a: R.align_vectors(
        a, P, weights=[np.inf, 1, 1, 1, 1])[0].as_quat(), P + 0.2),
    "align_vectors_sensitivity": (lambda a: R.align_vectors(
        a, P, return_sensitivity=True)[2], P + 0.2),
    "slerp": (lambda w: Slerp([0.0, 1.0, 2.0], R.from_rotvec(c(w)))([0.3, 1.6]).as_quat(),
              W4[:3]),
    "slerp_times": (lambda t: Slerp([0.0, 1.0, 2.0], R.from_rotvec(W4[:3]))(t).as_quat(),
                    np.array([0.3, 1.6])),
}
FIRST_ORDER = {"align_vectors_sensitivity", "align_vectors_inf_weight", "reduce_both",
               "mean_rotations", "slerp", "as_davenport"}     # (cost)


def traced_value(f, x):
    return rune.jvp(f, (x,), (np.ones_like(x),))[0]


@pytest.mark.parametrize("name", CASES)
def test_value_equals_scipy(name):
    f, x = CASES[name]
    want = f(x)
    got = traced_value(f, x)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL * scale)


@pytest.mark.parametrize("name", CASES)
def test_derivatives(name):
    f, x = CASES[name]
    check_grads(writeable(f), x, order=1 if name in FIRST_ORDER else 2)


@pytest.mark.parametrize("name", ["from_rotvec_many", "from_matrix_projected", "as_euler",
                                  "apply", "mean_weights", "align_vectors", "reduce_both"])
def test_jacfwd_equals_jacrev(name):
    f, x = CASES[name]
    np.testing.assert_allclose(rune.jacfwd(f)(x), rune.jacrev(f)(x), rtol=1e-12, atol=1e-13)


PER_EXAMPLE = {"mean_weights", "reduce", "slerp_times"}


@pytest.mark.parametrize("name", ["from_rotvec", "from_quat", "from_matrix_projected",
                                  "from_euler", "as_euler", "apply", "mul_plain_traced",
                                  "magnitude", "mean_weights", "align_vectors", "reduce",
                                  "slerp_times"])
def test_vmap_equals_loop(name):
    f, x = CASES[name]
    batch = np.stack([x, x + 0.05 * RNG.standard_normal(x.shape), 1.1 * x])
    with warnings.catch_warnings():
        # SciPy's checks on the batch are decided at once: vectorized, except where SciPy
        # needs one example's numbers (reduce's choice, mean's and Slerp's checks)
        warnings.simplefilter("ignore" if name in PER_EXAMPLE else "error",
                              rune.PerformanceWarning)
        check_vmap(f, batch, rtol=1e-12, atol=1e-13)
        check_vmap(lambda x: rune.grad(lambda y: np.sum(np.sin(f(y))))(x), batch,
                   rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------
# RigidTransform (the same routing to SciPy's array-API backend)
# --------------------------------------------------------------------------

from scipy.spatial.transform import RigidTransform as T  # noqa: E402

E6 = RNG.standard_normal(6)
TOP = T.from_exp_coords(E6).as_matrix()[:3]
PLAIN_T = T.from_exp_coords(RNG.standard_normal(6))


def rigid(top):
    return T.from_matrix(np.concatenate([top, [[0.0, 0.0, 0.0, 1.0]]]))


RIGID_CASES = {
    "from_matrix": (lambda top: rigid(top).as_exp_coords(), TOP),
    "from_matrix_projected": (lambda top: rigid(top).as_matrix(),
                              TOP + 0.1 * RNG.standard_normal((3, 4))),
    "from_components": (lambda t: T.from_components(t, R.from_rotvec(W0)).as_matrix(), W0),
    "from_exp_coords": (lambda e: T.from_exp_coords(e).as_matrix(), E6),
    "from_exp_coords_zero": (lambda e: T.from_exp_coords(e).as_matrix(), np.zeros(6)),
    "as_exp_coords": (lambda e: T.from_exp_coords(e).as_exp_coords(), E6),
    "dual_quat": (lambda e: T.from_dual_quat(T.from_exp_coords(e).as_dual_quat())
                  .as_matrix(), E6),
    "apply": (lambda e: T.from_exp_coords(e).apply(P, inverse=True), E6),
    "apply_plain": (lambda p: PLAIN_T.apply(p), P),
    "mul_inv": (lambda e: (PLAIN_T * T.from_exp_coords(e).inv()).as_matrix(), E6),
    "components": (lambda e: np.concatenate([T.from_exp_coords(e).translation,
                                             T.from_exp_coords(e).rotation.as_quat()]), E6),
    "mean": (lambda e: T.from_exp_coords(e).mean().as_matrix(), 0.3 * W4.repeat(2, 1)),
}


@pytest.mark.parametrize("name", RIGID_CASES)
def test_rigid_transform(name):
    f, x = RIGID_CASES[name]
    want = f(x)
    np.testing.assert_allclose(traced_value(f, x), want, rtol=0,
                               atol=TOL * max(1.0, float(np.max(np.abs(want)))))
    check_grads(writeable(f), x, order=1 if name == "mean" else 2)
    if name in ("from_exp_coords", "apply", "mul_inv"):
        check_vmap(f, np.stack([x, 0.5 * x]), rtol=1e-12, atol=1e-13)


def test_rigid_transform_pow_follows_rotation_pow():
    """SciPy's array-API ``pow`` (rune's route): its rotation part is ``Rotation ** n``
    exactly; SciPy's compiled one differs from that by up to about 1e-8."""
    f = lambda e: (T.from_exp_coords(e) ** 0.4).as_matrix()      # noqa: E731
    got = traced_value(f, E6)
    want_rot = (R.from_matrix(T.from_exp_coords(E6).as_matrix()[:3, :3]) ** 0.4).as_matrix()
    np.testing.assert_allclose(got[:3, :3], want_rot, rtol=0, atol=TOL)
    np.testing.assert_allclose(got, f(E6), rtol=0, atol=1e-7)
    check_grads(writeable(f), E6, order=1)


# --------------------------------------------------------------------------
# Singular points
# --------------------------------------------------------------------------

AXIS = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-5, 0.999e-3, 1.001e-3, 3.0])
def test_rotvec_near_zero(angle):
    """SciPy switches to series below angle 1e-3: both sides, and exactly 0 (the identity),
    to second order (there the squared angle, not the norm, carries the curvature)."""
    check_grads(lambda w: R.from_rotvec(c(w)).as_matrix(), angle * AXIS, order=2, eps=1e-7)
    q = np.concatenate([np.sin(angle / 2) * AXIS, [np.cos(angle / 2)]])
    check_grads(lambda q: R.from_quat(q).as_rotvec(), q, order=2, eps=1e-7)


def test_hessian_at_identity_is_the_cosines_curvature():
    h = rune.hessian(lambda w: R.from_rotvec(c(w)).as_quat()[3])(np.zeros(3))
    np.testing.assert_allclose(h, -0.25 * np.eye(3), rtol=0, atol=1e-15)


def test_from_matrix_at_an_orthogonal_matrix_differentiates_the_projection():
    """Finite differences of SciPy's from_matrix leave the rotations and see the projection;
    the symmetric part of R.T dM does not move the quaternion."""
    sym = np.array([[1.0, 0.3, 0.0], [0.3, -2.0, 0.5], [0.0, 0.5, 0.7]])
    t = rune.jvp(lambda m: R.from_matrix(m).as_quat(), (M0,), (M0 @ sym,))[1]
    np.testing.assert_allclose(t, 0.0, atol=1e-14)
    check_grads(lambda m: R.from_matrix(m).as_quat(), np.eye(3), order=2)


def test_singular_points_are_finite():
    """No derivative exists there; rune gives the formulas' one-sided, finite values."""
    assert np.all(rune.grad(lambda w: R.from_rotvec(c(w)).magnitude())(np.zeros(3)) == 0)
    at_pi = np.array([0.0, 0.0, 1.0, 0.0])
    for jac in (rune.jacfwd, rune.jacrev):
        assert np.all(np.isfinite(jac(lambda q: R.from_quat(q).as_rotvec())(at_pi)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)            # SciPy: gimbal lock
        warnings.simplefilter("ignore", RuntimeWarning)   # atan2's rule at (0, 0), unused
        for seq, a in (("xyz", [0.3, np.pi / 2, 0.2]), ("zxz", [0.3, 0.0, 0.2])):
            f = lambda a: R.from_euler(seq, a).as_euler(seq)   # noqa: E731
            jf, jr = rune.jacfwd(f)(np.array(a)), rune.jacrev(f)(np.array(a))
            assert np.all(np.isfinite(jf)) and np.all(np.isfinite(jr))
            np.testing.assert_allclose(jf, jr, atol=1e-12)
        zxz = rune.jacfwd(lambda a: R.from_euler("zxz", a).as_euler("zxz"))(
            np.array([0.3, 0.0, 0.2]))
        np.testing.assert_allclose(zxz[0], [1.0, 0.0, 1.0])    # the merged first angle


def test_gimbal_lock_warning_as_scipys():
    def f(a):
        return R.from_euler("xyz", a).as_euler("xyz")
    with pytest.warns(UserWarning, match="Gimbal lock"):
        rune.jacfwd(f)(np.array([0.3, np.pi / 2, 0.2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rune.vmap(f)(np.stack([W0, 0.5 * W0]))
        rune.jacrev(lambda a: R.from_euler("xyz", a).as_euler(
            "xyz", suppress_warnings=True))(np.array([0.3, np.pi / 2, 0.2]))


# --------------------------------------------------------------------------
# A program: fit a rotation vector to point correspondences
# --------------------------------------------------------------------------

def test_fit_rotation_vector():
    truth = np.array([0.4, -0.9, 0.3])
    target = R.from_rotvec(truth).apply(P)

    def loss(w):
        return np.sum((R.from_rotvec(w).apply(P) - target) ** 2)

    for w in (np.zeros(3), np.array([0.1, 0.2, -0.3])):
        check_grads(writeable(loss), w, order=2, eps=1e-6)
    w, losses = np.zeros(3), []
    for _ in range(30):
        losses.append(float(loss(w)))
        w = w - 0.05 * rune.grad(loss)(w)
    assert losses[-1] < 1e-3 * losses[0] and all(np.diff(losses) < 0)
    # the Hessian at the identity (Newton's first step) against differences of the gradient
    step = 1e-5
    grad = rune.grad(writeable(loss))
    fd = np.stack([(grad(step * e) - grad(-step * e)) / (2 * step) for e in np.eye(3)])
    h = rune.hessian(loss)(np.zeros(3))
    scale = np.max(np.abs(h))
    np.testing.assert_allclose(h, fd, rtol=0, atol=scale * (step ** 2 + EPS / step) * 10)
    np.testing.assert_allclose(h, h.T, rtol=0, atol=1e-12 * scale)


# --------------------------------------------------------------------------
# Outside transformations: SciPy's own Rotation
# --------------------------------------------------------------------------

def _scipy_behaviour():
    r = R.from_rotvec(W4)
    assert r._backend is rotation_cy
    np.testing.assert_array_equal(r.as_quat(), np.asarray(rotation_cy.from_rotvec(W4)))
    back = pickle.loads(pickle.dumps(r))
    np.testing.assert_array_equal(back.as_matrix(), r.as_matrix())
    assert type(R.from_quat(Q0).magnitude()) is np.float64


def test_outside_transformations_rotation_is_scipys():
    _scipy_behaviour()
    rune.grad(lambda w: np.sum(R.from_rotvec(c(w)).as_quat()))(W0)
    _scipy_behaviour()
    made_inside = []
    rune.grad(lambda w: made_inside.append(R.from_rotvec(W0)) or np.sum(w))(W0)
    assert made_inside[0]._backend is rotation_cy
    np.testing.assert_array_equal(made_inside[0].as_quat(), R.from_rotvec(W0).as_quat())
    assert rotation_cy.from_rotvec.__wrapped__ is not None     # a guarded pass-through


def test_plain_rotation_keeps_its_value_after_a_traced_write():
    r = R.from_rotvec(W4)
    before = r.as_quat().copy()

    def f(w):
        s = R.from_rotvec(W4)
        s[1] = R.from_rotvec(c(w))
        return s.as_quat()
    check_grads(f, W0, order=1)
    np.testing.assert_array_equal(r.as_quat(), before)


# --------------------------------------------------------------------------
# Refusals and SciPy's own errors
# --------------------------------------------------------------------------

def test_rotation_spline_is_refused_by_name():
    times = np.array([0.0, 1.0, 2.0])
    with pytest.raises(NotImplementedError, match="RotationSpline"):
        rune.grad(lambda w: np.sum(RotationSpline(times, R.from_rotvec(w))(0.5).as_quat()))(
            W4[:3])
    spline = RotationSpline(times, R.from_rotvec(W4[:3]))       # plain: SciPy's own
    assert rune.grad(lambda x: x * np.sum(spline(0.5).as_quat()))(2.0) == np.sum(
        spline(0.5).as_quat())


def test_scipys_errors_on_traced_values():
    with pytest.raises(ValueError, match="Non-positive determinant"):
        rune.grad(lambda m: np.sum(R.from_matrix(m).as_quat()))(-np.eye(3))
    with pytest.raises(ValueError, match="zero norm"):
        rune.grad(lambda q: np.sum(R.from_quat(q).as_quat()))(np.zeros(4))
    with pytest.raises(ValueError, match="shape"):
        rune.grad(lambda w: np.sum(R.from_rotvec(w).as_quat()))(np.zeros(4))
    with pytest.raises(ValueError, match="non-negative|negative"):
        rune.grad(lambda wt: np.sum(R.align_vectors(P, P, weights=wt)[1]))(-np.ones(5))


def test_array_api_helpers_see_numpy():
    """SciPy's array-API code asks a traced value for its device (``"cpu"``, as NumPy's)
    and calls np.vecdot(..., axis=)."""
    def f(a):
        assert a.device == "cpu"
        return np.vecdot(a, a[::-1], axis=0)
    check_grads(f, RNG.standard_normal((3, 2)), order=2)


def test_doctests():
    import doctest
    import rune.scipy.rotation
    result = doctest.testmod(rune.scipy.rotation)
    assert result.failed == 0 and result.attempted > 0


def test_nested_vmap_of_grad_and_jit_of_grad():
    # the pairs over a fitting loss: vmap(grad) against a loop of grad, jit(grad) replayed
    # bit for bit against eager grad (the same kernels), and grad against finite differences
    P = np.random.default_rng(3).standard_normal((5, 3))

    def loss(w):
        return np.sum((R.from_rotvec(w).apply(P) - P[::-1]) ** 2)

    ws = np.array([[0.1, -0.2, 0.3], [0.4, 0.0, -0.5], [1e-4, 2e-4, 0.0]])
    g = rune.grad(loss)
    check_vmap(g, ws, rtol=1e-12, atol=1e-12)
    jg = rune.jit(g)
    jg(ws[0])
    for w in ws:
        assert np.array_equal(jg(w), g(w))
    check_grads(writeable(loss), ws[0], order=1)   # (SciPy refuses read-only rotvecs)
