"""``scipy.ndimage``'s linear filters and spline interpolation on traced images (and
traced coordinates, shifts and affine maps), under every transformation.

* **Filters** (``correlate1d``, ``convolve1d``, ``correlate``, ``convolve``,
  ``gaussian_filter1d``, ``gaussian_filter``, ``uniform_filter1d``, ``uniform_filter``,
  every boundary mode, ``origin``, ``axes``, per-axis modes and orders): linear in the
  image, so each one-axis or N-d correlation is one primitive computed by SciPy's own
  function, whose transpose is exact (:mod:`rune.scipy._ndimage_ops`: the full
  convolution folded back through the mode's extension; not the same filter in the same
  mode).  ``cval`` enters as a constant, differentiable too.  Gaussian and uniform
  weights are SciPy's (read from its filter of an impulse).
* **Spline interpolation** (``map_coordinates``, ``shift``, ``zoom``,
  ``affine_transform``, orders 0-5, every mode): SciPy's prefilter (``spline_filter``,
  linear: exact transpose from its matrix) then the interpolation written with NumPy
  calls (:mod:`rune.scipy._ndimage_interp`), differentiable in the image, the coordinates
  (order >= 1; the derivative of order 0 and 1 is piecewise), ``shift``, the affine
  ``matrix``/``offset`` and ``cval``.  ``zoom``'s factors set the output shape: they are
  constants.  ``spline_filter``/``spline_filter1d`` themselves too.

``output=`` may be a dtype; an array to write into raises ``NotImplementedError`` (a
traced result cannot be written into a plain array): use the return value.  Traced
filter weights or ``sigma`` raise ``NotImplementedError``.

>>> import numpy as np, scipy.ndimage as ndi, rune
>>> x = np.arange(5.0)
>>> g = rune.grad(lambda x: ndi.correlate1d(x, [1.0, 2.0], mode="nearest")[0])(x)
>>> g
array([3., 0., 0., 0., 0.])
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.ndimage as _ndi

from ..core import Tracer, stop_leaf
from ..dispatch import wrap_while_active
from ..primitives.linear_op import apply_linear
from ._ndimage_interp import INTERP_MODES, sample
from ._ndimage_ops import FILTER_MODES, Correlation, SplineFilter
from .linalg import traced_or_original

__all__ = ["correlate1d", "convolve1d", "correlate", "convolve", "gaussian_filter1d",
           "gaussian_filter", "uniform_filter1d", "uniform_filter", "spline_filter1d",
           "spline_filter", "map_coordinates", "shift", "zoom", "affine_transform"]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def _image(name, x):
    x = x if isinstance(x, Tracer) else np.asarray(x)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"scipy.ndimage.{name}: unsupported input dtype {x.dtype}")
    return x


def _constant(name, what, value):
    if isinstance(value, Tracer) or (isinstance(value, (list, tuple)) and any(
            isinstance(v, Tracer) for v in value)):
        raise NotImplementedError(
            f"scipy.ndimage.{name}: derivatives with respect to {what} are not supported "
            f"by rune; pass rune.stop_gradient({what}) if no derivative is wanted")
    return value


def _output(name, result, output, default_dtype):
    if output is None:
        dtype = default_dtype
    elif isinstance(output, np.ndarray) or isinstance(output, Tracer):
        raise NotImplementedError(
            f"scipy.ndimage.{name}(output=<array>) with traced values: a traced result "
            f"cannot be written into a plain array; use the returned value")
    else:
        dtype = np.dtype(output)
    return result if result.dtype == dtype else result.astype(dtype)


def _axis(axis, ndim):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim) if hasattr(np, "exceptions") else \
            ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _axes(axes, ndim):
    if axes is None:
        return tuple(range(ndim))
    axes = (int(axes),) if np.isscalar(axes) else tuple(int(a) for a in axes)
    for a in axes:
        if a < -ndim or a > ndim - 1:
            raise ValueError(f"specified axis: {a} is out of range")
    axes = tuple(a % ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("axes must be unique")
    return axes


def _seq(value, rank):
    if not isinstance(value, str) and np.iterable(value):
        value = list(value)
        if len(value) != rank:
            raise RuntimeError("sequence argument must have length equal to input rank")
        return value
    return [value] * rank


def _filter(name, x, weights, origins, modes, cval, call):
    """``call(a, cval)`` (SciPy's filter, linear in ``a`` for ``cval = 0``) on a traced
    ``x``: the linear primitive plus ``cval`` times SciPy's filter of zeros."""
    op = Correlation(f"scipy.ndimage.{name}", x.shape, weights, origins, modes,
                     lambda a: call(a, 0.0))
    out = apply_linear(op, x)
    modes = [modes] if isinstance(modes, str) else modes
    if any(FILTER_MODES.get(m) == "constant" for m in modes) and (
            isinstance(cval, Tracer) or cval != 0):
        out = out + cval * call(np.zeros(x.shape, np.float64 if x.dtype.kind in "biu"
                                         else x.dtype), 1.0)
    return out


def _mode(mode):
    if mode not in FILTER_MODES:
        raise RuntimeError("boundary mode not supported")
    return mode


# --------------------------------------------------------------------------
# Correlations
# --------------------------------------------------------------------------

def _correlate1d(name, x, weights, axis, output, mode, cval, origin, convolution):
    x = _image(name, x)
    w = np.array(_constant(name, "weights", weights))      # (a copy)
    if w.ndim != 1 or w.shape[0] < 1:
        raise RuntimeError("no filter weights given")
    axis = _axis(axis, x.ndim)
    _mode(mode)
    w_eff, o_eff = (w[::-1], -origin - (0 if len(w) & 1 else 1)) if convolution else \
        (w, origin)
    if w.dtype.kind == "c" and not convolution:
        w_eff = np.conj(w)
    full = np.reshape(w_eff, tuple(len(w) if k == axis else 1 for k in range(x.ndim)))
    origins = [o_eff if k == axis else 0 for k in range(x.ndim)]
    fn = _ndi.convolve1d if convolution else _ndi.correlate1d
    out = _filter(name, x, full, origins, mode, cval,
                  lambda a, cv: fn(a, w, axis, mode=mode, cval=cv, origin=origin))
    return _output(name, out, output, out.dtype)


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """``scipy.ndimage.correlate1d`` on a traced ``input``."""
    return _correlate1d("correlate1d", input, weights, axis, output, mode, cval, origin,
                        False)


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """``scipy.ndimage.convolve1d`` on a traced ``input``."""
    return _correlate1d("convolve1d", input, weights, axis, output, mode, cval, origin,
                        True)


def _correlate(name, x, weights, output, mode, cval, origin, axes, convolution):
    x = _image(name, x)
    w = np.array(_constant(name, "weights", weights))      # (a copy)
    axes = _axes(axes, x.ndim)
    if not isinstance(mode, str):
        raise RuntimeError("A sequence of modes is not supported")
    _mode(mode)
    if w.ndim != len(axes):
        raise RuntimeError(f"weights.ndim ({w.ndim}) must match len(axes) ({len(axes)})")
    origins = [0] * x.ndim
    for o, ax in zip(_seq(origin, len(axes)), axes):
        origins[ax] = int(o)
    full = np.expand_dims(w, tuple(k for k in range(x.ndim) if k not in axes)) \
        if len(axes) < x.ndim else w
    if len(axes) == x.ndim and axes != tuple(range(x.ndim)):
        full = np.transpose(w, np.argsort(axes))
    if convolution:
        full = full[(slice(None, None, -1),) * full.ndim]
        origins = [-o - (0 if full.shape[k] & 1 else 1) for k, o in enumerate(origins)]
    elif full.dtype.kind == "c":
        full = np.conj(full)
    fn = _ndi.convolve if convolution else _ndi.correlate
    out = _filter(name, x, full, origins, mode, cval,
                  lambda a, cv: fn(a, w, mode=mode, cval=cv, origin=origin, axes=axes))
    return _output(name, out, output, out.dtype)


def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *,
              axes=None):
    """``scipy.ndimage.correlate`` on a traced ``input``."""
    return _correlate("correlate", input, weights, output, mode, cval, origin, axes, False)


def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """``scipy.ndimage.convolve`` on a traced ``input``."""
    return _correlate("convolve", input, weights, output, mode, cval, origin, axes, True)


# --------------------------------------------------------------------------
# Gaussian and uniform filters
# --------------------------------------------------------------------------

def _gaussian_weights(sigma, order, truncate, radius):
    """SciPy's correlation weights of ``gaussian_filter1d`` (its filter of an impulse)."""
    sd = float(sigma)
    lw = int(truncate * sd + 0.5) if radius is None else radius
    if not isinstance(lw, numbers.Integral) or lw < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    impulse = np.zeros(2 * lw + 1)
    impulse[lw] = 1.0
    return _ndi.gaussian_filter1d(impulse, sd, order=order, mode="constant",
                                  truncate=truncate, radius=radius)[::-1].copy()


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect",
                      cval=0.0, truncate=4.0, *, radius=None):
    """``scipy.ndimage.gaussian_filter1d`` on a traced ``input``."""
    _constant("gaussian_filter1d", "sigma", sigma)
    w = _gaussian_weights(sigma, order, truncate, radius)
    out = _correlate1d("gaussian_filter1d", input, w, axis, None, mode, cval, 0, False)
    return _output("gaussian_filter1d", out, output, out.dtype)


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0,
                    truncate=4.0, *, radius=None, axes=None):
    """``scipy.ndimage.gaussian_filter``: ``gaussian_filter1d`` along each axis."""
    x = _image("gaussian_filter", input)
    axes = _axes(axes, x.ndim)
    n = len(axes)
    _constant("gaussian_filter", "sigma", sigma)
    todo = [(ax, s, o, m, r) for ax, s, o, m, r in zip(
        axes, _seq(sigma, n), _seq(order, n), _seq(mode, n), _seq(radius, n)) if s > 1e-15]
    dtype = x.dtype
    for ax, s, o, m, r in todo:
        x = gaussian_filter1d(x, s, ax, o, None, m, cval, truncate, radius=r)
        x = x if x.dtype == dtype else x.astype(dtype)
    return _output("gaussian_filter", x if todo else x + 0, output, dtype)


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0,
                     origin=0):
    """``scipy.ndimage.uniform_filter1d`` on a traced ``input`` (SciPy's running sum;
    its transpose is that of the correlation with ``ones(size) / size``)."""
    x = _image("uniform_filter1d", input)
    axis = _axis(axis, x.ndim)
    size = int(size)
    if size < 1:
        raise RuntimeError("incorrect filter size")
    if (size // 2 + origin < 0) or (size // 2 + origin >= size):
        raise ValueError("invalid origin")
    _mode(mode)
    full = np.reshape(np.full(size, 1.0 / size),
                      tuple(size if k == axis else 1 for k in range(x.ndim)))
    origins = [origin if k == axis else 0 for k in range(x.ndim)]
    out = _filter("uniform_filter1d", x, full, origins, mode, cval,
                  lambda a, cv: _ndi.uniform_filter1d(a, size, axis, mode=mode, cval=cv,
                                                      origin=origin))
    return _output("uniform_filter1d", out, output, out.dtype)


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None):
    """``scipy.ndimage.uniform_filter``: ``uniform_filter1d`` along each axis."""
    x = _image("uniform_filter", input)
    axes = _axes(axes, x.ndim)
    n = len(axes)
    todo = [(ax, s, o, m) for ax, s, o, m in zip(axes, _seq(size, n), _seq(origin, n),
                                                  _seq(mode, n)) if s > 1]
    dtype = x.dtype
    for ax, s, o, m in todo:
        x = uniform_filter1d(x, int(s), ax, None, m, cval, o)
        x = x if x.dtype == dtype else x.astype(dtype)
    return _output("uniform_filter", x if todo else x + 0, output, dtype)


# --------------------------------------------------------------------------
# Spline prefilter and interpolation
# --------------------------------------------------------------------------

def _spline_filter(x, order, mode, axes):
    for ax in axes:
        x = apply_linear(SplineFilter(x.shape, order, ax, mode), x)
    return x


def spline_filter1d(input, order=3, axis=-1, output=np.float64, mode="mirror"):
    """``scipy.ndimage.spline_filter1d`` on a traced ``input``."""
    if order < 0 or order > 5:
        raise RuntimeError("spline order not supported")
    x = _image("spline_filter1d", input)
    axis = _axis(axis, x.ndim)
    out = x + 0 if order in (0, 1) else _spline_filter(x, order, mode, [axis])
    return _output("spline_filter1d", out, output, np.float64)


def spline_filter(input, order=3, output=np.float64, mode="mirror"):
    """``scipy.ndimage.spline_filter``: ``spline_filter1d`` along every axis."""
    if order < 2 or order > 5:
        raise RuntimeError("spline order not supported")
    x = _image("spline_filter", input)
    out = x + 0 if x.ndim == 0 else _spline_filter(x, order, mode, range(x.ndim))
    return _output("spline_filter", out, output, np.float64)


def _coefficients(x, order, mode, cval, prefilter):
    """SciPy's coefficients for interpolation: ``(coefficients, npad)``."""
    if not (prefilter and order > 1):
        return (x if x.dtype.kind in "fc" else x.astype(np.float64)), 0
    npad = 0
    if mode == "nearest":
        x, npad = np.pad(x, 12, mode="edge"), 12
    elif mode == "grid-constant":         # (np.pad does not take a traced value)
        border = np.pad(np.zeros(tuple(x.shape)), 12, mode="constant", constant_values=1.0)
        x, npad = np.pad(x, 12, mode="constant") + cval * border, 12
    return _spline_filter(x.astype(np.float64), order, mode, range(x.ndim)), npad


def _interp_mode(mode):
    if mode not in INTERP_MODES:
        raise RuntimeError("boundary mode not supported")
    return INTERP_MODES[mode]


def _check_order(order):
    if order < 0 or order > 5:
        raise RuntimeError("spline order not supported")


def _cast(out, dtype):
    if dtype.kind in "iu":      # SciPy rounds to the nearest integer, halves away from 0
        return np.trunc(np.where(out > 0, out + 0.5, out - 0.5)).astype(dtype)
    return out if out.dtype == dtype else out.astype(dtype)


def _interpolate(name, x, coords, out_shape, order, mode, cval, prefilter, output):
    coeffs, npad = _coefficients(x, order, mode, cval, prefilter)
    coords = [np.reshape(c, (-1,)) for c in coords]
    coords = [c if c.dtype == np.float64 else c.astype(np.float64) for c in coords]
    out = np.reshape(sample(coeffs, coords, order, _interp_mode(mode), cval, npad),
                     tuple(out_shape))
    if output is None:
        return _cast(out, x.dtype)
    return _output(name, _cast(out, np.dtype(output)) if not isinstance(
        output, np.ndarray) else out, output, np.dtype(output))


def map_coordinates(input, coordinates, output=None, order=3, mode="constant", cval=0.0,
                    prefilter=True):
    """``scipy.ndimage.map_coordinates`` with a traced image and/or coordinates."""
    _check_order(order)
    x = _image("map_coordinates", input)
    c = coordinates if isinstance(coordinates, Tracer) else np.asarray(coordinates)
    if c.dtype.kind == "c":
        raise TypeError("Complex type not supported")
    if x.ndim < 1 or c.ndim < 2:
        raise RuntimeError("input and output rank must be > 0")
    if c.shape[0] != x.ndim:
        raise RuntimeError("invalid shape for coordinate array")
    return _interpolate("map_coordinates", x, [c[h] for h in range(x.ndim)], c.shape[1:],
                        order, mode, cval, prefilter, output)


def _grid(shape):
    return [np.reshape(g, (-1,)).astype(np.float64) for g in np.indices(shape)]


def shift(input, shift, output=None, order=3, mode="constant", cval=0.0, prefilter=True):
    """``scipy.ndimage.shift`` with a traced image and/or shift."""
    _check_order(order)
    x = _image("shift", input)
    if x.ndim < 1:
        raise RuntimeError("input and output rank must be > 0")
    shifts = _seq(shift, x.ndim)
    coords = [g + (-s) for g, s in zip(_grid(x.shape), shifts)]
    return _interpolate("shift", x, coords, x.shape, order, mode, cval, prefilter, output)


def zoom(input, zoom, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *,
         grid_mode=False):
    """``scipy.ndimage.zoom`` on a traced image (the zoom factors are constants: they set
    the output shape)."""
    _check_order(order)
    x = _image("zoom", input)
    if x.ndim < 1:
        raise RuntimeError("input and output rank must be > 0")
    factors = [float(np.asarray(stop_leaf(z))) for z in _seq(zoom, x.ndim)]
    out_shape = tuple(int(round(n * z)) for n, z in zip(x.shape, factors))
    if all(z == 1 for z in factors) and prefilter:
        return _output("zoom", x + 0, output, x.dtype)
    if grid_mode and mode in ("constant", "wrap"):
        warnings.warn(f"It is recommended to use mode = grid-{mode} instead of {mode} "
                      f"when grid_mode is True.", stacklevel=2)
    div, nom = np.array(out_shape), np.array(x.shape)
    if not grid_mode:
        div, nom = div - 1, nom - 1
    ratio = np.divide(nom, div, out=np.ones(x.ndim), where=div != 0)
    axes = []
    for k, (n, z) in enumerate(zip(out_shape, ratio)):
        kk = np.arange(n, dtype=np.float64)
        axes.append((kk + 0.5) * z - 0.5 if grid_mode else kk * z)
    coords = [np.reshape(g, (-1,)) for g in np.meshgrid(*axes, indexing="ij")]
    return _interpolate("zoom", x, coords, out_shape, order, mode, cval, prefilter, output)


def affine_transform(input, matrix, offset=0.0, output_shape=None, output=None, order=3,
                     mode="constant", cval=0.0, prefilter=True):
    """``scipy.ndimage.affine_transform`` with a traced image, matrix and/or offset."""
    _check_order(order)
    x = _image("affine_transform", input)
    if output_shape is None:
        output_shape = output.shape if isinstance(output, np.ndarray) else x.shape
    output_shape = tuple(output_shape)
    if x.ndim < 1 or len(output_shape) < 1:
        raise RuntimeError("input and output rank must be > 0")
    m = matrix if isinstance(matrix, Tracer) else np.asarray(matrix, dtype=np.float64)
    if m.dtype != np.float64:
        m = m.astype(np.float64)
    if m.ndim not in (1, 2) or m.shape[0] < 1:
        raise RuntimeError("no proper affine matrix provided")
    nd = x.ndim
    if m.ndim == 2 and m.shape[1] == nd + 1 and m.shape[0] in (nd, nd + 1):
        if m.shape[0] == nd + 1:
            expected = [0] * nd + [1]
            if not np.all(stop_leaf(m[nd]) == expected):
                raise ValueError(f"Expected homogeneous transformation matrix with shape "
                                 f"{m.shape} for image shape {x.shape}, but bottom row was "
                                 f"not equal to {expected}")
        offset, m = m[:nd, nd], m[:nd, :nd]
    if m.shape[0] != nd:
        raise RuntimeError("affine matrix has wrong number of rows")
    if m.ndim == 2 and m.shape[1] != len(output_shape):
        raise RuntimeError("affine matrix has wrong number of columns")
    if isinstance(offset, Tracer) and offset.ndim == 1:
        offsets = [offset[h] for h in range(nd)]
    else:
        offsets = _seq(offset, nd)
    grid = _grid(output_shape)
    if m.ndim == 1:
        coords = [(grid[h] + offsets[h] / m[h]) * m[h] for h in range(nd)]
    else:
        coords = []
        for h in range(nd):
            c = offsets[h] + 0.0 * grid[0]
            for col in range(len(output_shape)):
                c = c + grid[col] * m[h, col]
            coords.append(c)
    return _interpolate("affine_transform", x, coords, output_shape, order, mode, cval,
                        prefilter, output)


for _name in __all__:
    wrap_while_active("scipy.ndimage", _name, traced_or_original(globals()[_name]))
