"""``scipy.spatial.transform.Rotation`` (and ``Slerp``) on traced values.

SciPy's ``Rotation`` keeps its quaternions in an array and hands every computation to a
*backend* module: for NumPy arrays the compiled one (``_rotation_cy``, which takes typed
memory views and so cannot take traced values), for other array libraries SciPy's own
array-API backend (``_rotation_xp``, written in ``xp.*`` calls).  While a transformation is
active, each function of the compiled backend is registered
(:func:`rune.dispatch.wrap_while_active`) to call the array-API backend's function of the
same name when one of its arguments is traced, and itself otherwise.  With ``xp`` SciPy's
NumPy namespace, the array-API functions' operations on traced values are NumPy
operations, which rune differentiates and batches.  Every method and constructor of
``Rotation`` that reaches the backend therefore works on traced values, with SciPy's own
formulas and checks: ``from_quat``, ``from_matrix``, ``from_rotvec``, ``from_euler``,
``from_mrp``, ``from_davenport``, ``as_quat``, ``as_matrix``, ``as_rotvec``, ``as_euler``,
``as_mrp``, ``as_davenport``, ``apply``, ``*``, ``**``, ``inv``, ``magnitude``, ``mean``,
``reduce``, ``approx_equal``, ``align_vectors``, indexing, ``concatenate`` and
``Slerp``; a plain ``Rotation`` made outside combines with a traced one.  ``RigidTransform``
is routed the same way (its compiled backend to ``_rigid_transform_xp``); its ``** n``
then follows the array-API backend, whose rotation part is ``Rotation ** n`` exactly
(SciPy's compiled one differs from that by up to about ``1e-8``).

The array-API code writes results into arrays it makes (``xpx.at(x)[i].set(y)``); with ``x``
plain and ``y`` traced the write goes to a traced copy of ``x`` (the result is returned, as
``at`` documents).  Two of the array-API functions are replaced by versions with the same
values and a derivative that is right in every direction:

* ``from_matrix`` (``assume_valid=False``) projects a matrix that is not orthogonal to the
  nearest rotation (the orthogonal polar factor ``U @ Vt``) and leaves one that is (to
  ``1e-12``) as it is.  Its derivative is the polar factor's everywhere, also at an exactly
  orthogonal matrix, where the plain formula's derivative would be wrong in the directions
  that leave the rotations (finite differences of SciPy's function see the projection).
  With ``assume_valid=True`` SciPy uses the formula alone, and so does rune.
* ``from_rotvec`` near the zero vector (angle ``<= 1e-3``, where SciPy uses series) takes
  the series in the squared angle, so that second derivatives at the identity are right
  (with the angle as a norm they would miss the ``cos`` term's curvature).

Where the rotation has no derivative, rune gives the array-API formulas' one-sided
values, finite: ``magnitude`` at the identity (a cone: gradient 0), ``as_rotvec`` and
``as_mrp`` at angle pi (the vector flips), and ``as_euler``/``as_davenport`` at gimbal lock
(the first and third angles are not defined separately; SciPy sets the third to 0).

``Rotation.identity``, ``Rotation.random`` and ``Rotation.create_group`` take no traced
values.  ``RotationSpline`` on traced values raises ``NotImplementedError`` naming it.

>>> import numpy as np, rune
>>> from scipy.spatial.transform import Rotation
>>> f = lambda w: Rotation.from_rotvec(w).apply(np.array([1.0, 0.0, 0.0]))
>>> np.round(rune.jacfwd(f)(np.zeros(3)), 6) + 0.0
array([[ 0.,  0.,  0.],
       [ 0.,  0.,  1.],
       [ 0., -1.,  0.]])
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import scipy.spatial.transform._rotation_cy as _cy
import scipy.spatial.transform._rotation_xp as _xp
import scipy.spatial.transform._rigid_transform_xp as _rigid_xp

from ..concrete import decide
from ..core import Primitive, Tracer, stop_leaf
from ..dispatch import _iter_tracers, wrap_while_active

SCIPY_MODULE = "scipy.spatial.transform"   # the names of docs/supported.md
__all__ = ["from_matrix", "from_rotvec", "reduce", "polar", "normalize_quaternion"]

_R = "scipy.spatial.transform.Rotation"
SUPPORTED = [(f"{_R}.{n}", note) for n, note in [
    ("from_quat", ""), ("from_matrix", "the projection's (polar factor's) derivative"),
    ("from_rotvec", ""), ("from_euler", ""), ("from_mrp", ""), ("from_davenport", ""),
    ("as_quat", ""), ("as_matrix", ""), ("as_rotvec", ""),
    ("as_euler", "gimbal lock: finite one-sided values"), ("as_davenport", "likewise"),
    ("as_mrp", ""), ("apply", ""), ("__mul__", ""), ("__pow__", ""), ("inv", ""),
    ("magnitude", "at the identity: gradient 0"), ("__getitem__", ""),
    ("__setitem__", ""), ("concatenate", ""),
    ("mean", "per-example under vmap with batched weights"),
    ("reduce", "the choice: no derivative; per-example under vmap"),
    ("approx_equal", "no derivative"), ("align_vectors", "")]] + [
    ("`scipy.spatial.transform.Slerp`", "per-example under vmap for batched times"),
    ("`scipy.spatial.transform.RotationSpline`", "refused on traced values "
     "(NotImplementedError)")] + [
    (f"scipy.spatial.transform.RigidTransform.{n}", note) for n, note in [
        ("from_matrix", "the rotation part: as Rotation.from_matrix"),
        ("from_components", ""), ("from_rotation", ""), ("from_translation", ""),
        ("from_exp_coords", ""), ("from_dual_quat", ""), ("as_matrix", ""),
        ("as_components", ""), ("as_exp_coords", ""), ("as_dual_quat", ""),
        ("apply", ""), ("__mul__", ""), ("inv", ""),
        ("__pow__", "the array-API backend's values (see the module)"), ("mean", ""),
        ("__getitem__", ""), ("__setitem__", "")]]
_CY = "scipy.spatial.transform._rotation_cy"
_XP = "scipy.spatial.transform._rotation_xp"

# The compiled backend's functions that take arrays, and the array-API function each goes
# to (same name; the parameters the compiled one names differently are renamed).
ROUTED = ("from_quat", "from_matrix", "_from_matrix_orthogonal", "from_rotvec",
          "from_euler", "from_mrp", "from_davenport", "as_quat", "as_matrix", "as_rotvec",
          "as_euler", "as_davenport", "as_mrp", "inv", "magnitude", "compose_quat", "apply",
          "pow", "mean", "reduce", "approx_equal", "setitem", "align_vectors")
RENAMED = {"apply": {"vectors": "points"}}
# RigidTransform likewise (its compiled backend's functions that take arrays)
RIGID = ("from_matrix", "from_rotation", "from_translation", "from_exp_coords",
         "from_dual_quat", "as_exp_coords", "as_dual_quat", "compose_transforms", "apply",
         "inv", "pow", "mean", "setitem", "normalize_dual_quaternion")


def _has_tracer(args, kwargs):
    for _ in _iter_tracers((args, kwargs)):
        return True
    return False


# --------------------------------------------------------------------------
# from_matrix: the orthogonal polar factor, differentiated as the projection it is
# --------------------------------------------------------------------------

def _T(a):
    return np.swapaxes(a, -1, -2)


def _is_orthogonal(m):
    """SciPy's test (``_rotation_xp.from_matrix``): ``m @ m.T`` close to the identity."""
    gram = m @ _T(m)
    close = np.abs(gram - np.eye(3)) <= 1e-12 + 1e-5 * np.eye(3)
    return np.all(close, axis=(-2, -1))


def _polar_impl(m):
    u, _, vt = np.linalg.svd(m)
    return np.where(_is_orthogonal(m)[..., None, None], m, u @ vt)


def _polar_rule(t, q, m):
    """``Q [w]x`` with ``(tr(H) I - H) w = vee(Q.T t - t.T Q)``, ``H = Q.T M``: the polar
    factor's tangent for a tangent ``t`` of ``M``, and (the map is self-adjoint under
    ``sum(G * dQ)``) its cotangent for a cotangent ``t`` of ``Q``."""
    h = _T(q) @ m
    a = _T(q) @ t
    a = a - _T(a)
    rhs = np.stack([a[..., 2, 1], a[..., 0, 2], a[..., 1, 0]], axis=-1)
    lhs = np.trace(h, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - h
    w = np.linalg.solve(lhs, rhs[..., None])[..., 0]
    zero = np.zeros_like(w[..., 0])
    hat = np.stack([np.stack([zero, -w[..., 2], w[..., 1]], axis=-1),
                    np.stack([w[..., 2], zero, -w[..., 0]], axis=-1),
                    np.stack([-w[..., 1], w[..., 0], zero], axis=-1)], axis=-2)
    return q @ hat


polar_p = Primitive(
    "rotation_polar", _polar_impl,
    jvp=(lambda t, out, m: _polar_rule(t, out, m),),
    vjp=(lambda ct, out, m: _polar_rule(ct, out, m),),
    batch=lambda args, bdims: (polar_p(np.moveaxis(args[0], bdims[0], 0)), 0),
    residuals=("args", "out"))


def polar(m):
    """The rotation nearest to each 3x3 matrix ``m`` (``det > 0``): ``m`` itself where it is
    orthogonal to ``1e-12`` (as SciPy's ``from_matrix`` leaves it), else ``U @ Vt`` of its
    SVD.  The derivative is the polar factor's (:func:`_polar_rule`), exact also at an
    orthogonal ``m``, where the derivative of ``m`` itself would keep the directions that
    leave the rotations; its rules are NumPy code, so every order follows.

    >>> import numpy as np, rune
    >>> m = np.diag([1.0, 2.0, 3.0])
    >>> polar(m)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    >>> np.round(rune.jvp(polar, (m,), (np.triu(np.ones((3, 3))),))[1], 4) + 0.0
    array([[ 0.    ,  0.3333,  0.25  ],
           [-0.3333,  0.    ,  0.2   ],
           [-0.25  , -0.2   ,  0.    ]])
    """
    return polar_p(m)


def _first_nonpositive(d):
    bad = np.nonzero(np.ravel(d) <= 0)[0]
    return int(bad[0]) if bad.size else -1


def from_matrix(matrix, assume_valid=False):
    """SciPy's ``_rotation_xp.from_matrix`` (the quaternions of rotation matrices), with
    the projection onto the rotations differentiated as such (:func:`polar`).

    >>> import numpy as np, rune
    >>> from scipy.spatial.transform import Rotation
    >>> f = lambda m: Rotation.from_matrix(m).as_quat()[2]
    >>> np.round(rune.grad(f)(np.eye(3)), 6) + 0.0      # only the skew part counts
    array([[ 0.  , -0.25,  0.  ],
           [ 0.25,  0.  ,  0.  ],
           [ 0.  ,  0.  ,  0.  ]])
    """
    if not assume_valid:
        ind = decide(_first_nonpositive, np.linalg.det(matrix))
        if ind >= 0:
            raise ValueError("Non-positive determinant (left-handed or null coordinate "
                             f"frame) in rotation matrix {ind}.")
        matrix = polar(matrix)
    return _xp._from_matrix_orthogonal(matrix)


# --------------------------------------------------------------------------
# from_rotvec: the small-angle series in the squared angle
# --------------------------------------------------------------------------

def from_rotvec(rotvec, degrees=False):
    """SciPy's ``_rotation_xp.from_rotvec`` (the quaternions of rotation vectors), with
    the small-angle branch written in the squared angle, so that its derivatives of every
    order are right at the zero vector.

    >>> import numpy as np, rune
    >>> from scipy.spatial.transform import Rotation
    >>> rune.hessian(lambda w: Rotation.from_rotvec(w).as_quat()[3])(np.zeros(3))
    array([[-0.25,  0.  ,  0.  ],
           [ 0.  , -0.25,  0.  ],
           [ 0.  ,  0.  , -0.25]])
    """
    if rotvec.shape[-1] != 3:
        raise ValueError(f"Expected `rot_vec` to have shape (..., 3), got {rotvec.shape}")
    if degrees:
        rotvec = rotvec * (np.pi / 180.0)
    n2 = np.sum(rotvec * rotvec, axis=-1, keepdims=True)
    pos = n2 > 0
    angle = np.where(pos, np.sqrt(np.where(pos, n2, 1.0)), 0.0)
    small = angle <= 1e-3
    small_scale = 0.5 - n2 / 48 + n2 * n2 / 3840
    small_w = 1.0 - n2 / 8 + n2 * n2 / 384
    div = np.where(small, 1.0, angle)
    scale = np.where(small, small_scale, np.sin(angle / 2) / div)
    w = np.where(small, small_w, np.cos(angle / 2))
    return np.concatenate([rotvec * scale, w], axis=-1)


# --------------------------------------------------------------------------
# SciPy's checks, decided on every example of a vmap batch at once
# --------------------------------------------------------------------------
# (SciPy's array-API code checks with Python ``if``s, which would make vmap run the whole
# function once per example: these two sit on every path, so they decide for the batch.)

def _any_zero(norm):
    return bool(np.any(norm == 0))


def normalize_quaternion(quat):
    """SciPy's ``_rotation_xp._normalize_quaternion``: ``quat / |quat|``, a zero norm
    refused (in any example of a batch).

    >>> import numpy as np, rune
    >>> rune.vmap(normalize_quaternion)(np.array([[0.0, 0.0, 0.0, 2.0], [3.0, 0, 0, 4]]))
    array([[0. , 0. , 0. , 1. ],
           [0.6, 0. , 0. , 0.8]])
    """
    norm = _xp.xp_vector_norm(quat, axis=-1, keepdims=True)
    if decide(_any_zero, norm):
        raise ValueError("Found zero norm quaternions in `quat`.")
    return quat / norm


def _any_gimbal_lock(a, b, c, d):
    second = 2 * np.arctan2(np.hypot(c, d), np.hypot(a, b))
    return bool(np.any((np.abs(second) <= 1e-7) | (np.abs(second - np.pi) <= 1e-7)))


def _get_angles_checked(orig):
    """SciPy's ``_rotation_xp._get_angles`` (Euler and Davenport angles), its gimbal-lock
    warning decided for the whole batch."""
    @functools.wraps(orig)
    def get_angles(extrinsic, symmetric, sign, lamb, a, b, c, d, suppress_warnings):
        if not _has_tracer((a, b, c, d), {}):
            return orig(extrinsic, symmetric, sign, lamb, a, b, c, d, suppress_warnings)
        if not suppress_warnings and decide(_any_gimbal_lock, a, b, c, d):
            warnings.warn("Gimbal lock detected. Setting third angle to zero since it is "
                          "not possible to uniquely determine all angles.", stacklevel=4)
        return orig(extrinsic, symmetric, sign, lamb, a, b, c, d, True)
    return get_angles


# --------------------------------------------------------------------------
# reduce: the choice made by SciPy's compiled function on the numbers
# --------------------------------------------------------------------------

def _numbers(x):
    """The numbers of ``x`` for a choice without derivative; batched by ``vmap``, they
    are read one example at a time (vmap then runs the function once per example)."""
    if x is None:
        return None
    x = stop_leaf(x)
    if isinstance(x, Tracer):       # batched: Python needs one example's numbers, which
        float(np.ravel(x)[0])       # makes vmap run the function once per example
    return np.asarray(x, dtype=float)


def reduce(quat, left=None, right=None):
    """SciPy's ``_rotation_cy.reduce``: ``left[i] * p * right[j]`` with the ``i, j`` of
    the smallest angle for each ``p``.  The choice is SciPy's own (its compiled function
    on the numbers, so ties are broken alike; under ``vmap`` one example at a time) and
    has no derivative; the composition is differentiated.  (SciPy's array-API version
    composes with ``(1, 1, 1, 1)`` in place of a missing side.)

    >>> import numpy as np, rune
    >>> from scipy.spatial.transform import Rotation
    >>> g = Rotation.create_group("O")
    >>> f = lambda w: Rotation.from_rotvec(w).reduce(g).magnitude()
    >>> float(np.round(f(np.array([0.0, 0.0, 1.5])), 6))
    0.070796
    >>> np.round(rune.grad(f)(np.array([0.0, 0.0, 1.5])), 6) + 0.0
    array([ 0.,  0., -1.])
    """
    scipy_reduce = getattr(_cy.reduce, "__wrapped__", _cy.reduce)     # SciPy's own
    _, left_best, right_best = scipy_reduce(_numbers(quat), _numbers(left), _numbers(right))
    if left_best is None and right_best is None:
        return quat, None, None
    reduced = quat
    if right is not None:
        reduced = _xp.compose_quat(reduced, np.atleast_2d(right)[right_best])
    if left is not None:
        reduced = _xp.compose_quat(np.atleast_2d(left)[left_best], reduced)
    return reduced, left_best, right_best


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

def _routed(name, backend=_xp, renamed=None):
    """A ``make_wrapper``: the array-API backend's ``name`` when an argument is traced."""
    target = getattr(backend, name)
    renamed = RENAMED.get(name, {}) if renamed is None else renamed

    def make_wrapper(orig):
        sig = inspect.signature(orig)

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if not _has_tracer(args, kwargs):
                return orig(*args, **kwargs)
            bound = sig.bind(*args, **kwargs).arguments
            return target(**{renamed.get(k, k): v for k, v in bound.items()})
        return wrapper
    return make_wrapper


def _traced_or_original(impl):
    def make_wrapper(orig):
        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if _has_tracer(args, kwargs):
                return impl(*args, **kwargs)
            return orig(*args, **kwargs)
        return wrapper
    return make_wrapper


def _lift_target(make_orig):
    """``xpx.at(x)[i].set(y)`` (SciPy's array-API writes) with ``x`` plain and ``y`` traced:
    ``x`` becomes a traced copy first, so the write keeps ``y``'s derivative (the result is
    returned, as ``at`` documents; the plain ``x`` is left untouched)."""
    @functools.wraps(make_orig)
    def op(self, at_op, in_place_op, out_of_place_op, y, copy=None, xp=None):
        x = self._x
        if _has_tracer((y,), {}) and not _has_tracer((x,), {}):
            x = np.asarray(x)
            lifted = np.zeros_like(y, shape=x.shape, dtype=x.dtype) + x
            self = type(self)(lifted, self._idx)
            copy = False
        return make_orig(self, at_op, in_place_op, out_of_place_op, y, copy=copy, xp=xp)
    return op


def _no_spline(orig):
    @functools.wraps(orig)
    def init(self, times, rotations):
        if _has_tracer((times, getattr(rotations, "_quat", None)), {}):
            raise NotImplementedError(
                "scipy.spatial.transform.RotationSpline is not supported on traced values "
                "by rune (use Slerp, or Rotation's methods)")
        return orig(self, times, rotations)
    return init


for _name in ROUTED:
    wrap_while_active(_CY, _name, _routed(_name))
for _name in RIGID:
    wrap_while_active("scipy.spatial.transform._rigid_transform_cy", _name,
                      _routed(_name, _rigid_xp, {}))
wrap_while_active(_XP, "from_matrix", _traced_or_original(from_matrix))
wrap_while_active(_XP, "from_rotvec", _traced_or_original(from_rotvec))
wrap_while_active(_XP, "reduce", _traced_or_original(reduce))
wrap_while_active(_XP, "_normalize_quaternion", _traced_or_original(normalize_quaternion))
wrap_while_active(_XP, "_get_angles", _get_angles_checked)
wrap_while_active("scipy._lib.array_api_extra._lib._at", "at._op", _lift_target)
wrap_while_active("scipy.spatial.transform._rotation_spline", "RotationSpline.__init__",
                  _no_spline)
