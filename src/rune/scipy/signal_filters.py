"""``scipy.signal``'s filters on traced values: ``lfilter`` (``b``, ``a``, ``x`` and ``zi``
all differentiable), ``sosfilt``, ``filtfilt`` and ``sosfiltfilt`` (SciPy's own code, run
on rune's ``lfilter``/``sosfilt``), ``savgol_filter`` in every mode, and ``convolve2d`` /
``correlate2d`` with every boundary.

``lfilter`` is the primitive :data:`rune.primitives.scipy_signal.lfilter_p`: SciPy computes
every value, and the derivatives are filters too (w.r.t. ``x``: the same filter; its
transpose: the filter run backwards over the reversed cotangent; w.r.t. ``b_k``: the
filter ``[1], a`` of ``x`` delayed by ``k``; w.r.t. ``a_k``: minus that of ``y``).
``savgol_filter`` is linear in ``x``: SciPy's coefficients on the plain numbers, applied by
:func:`rune.scipy.ndimage.convolve1d`, and for ``mode='interp'`` the edge polynomial fits as
two small matrices.  Registered like :mod:`rune.scipy.signal` (imported at its end; this
module calls rune's convolution through ``scipy.signal.convolve``, which a transformation
routes there, so that the two modules do not import each other): rune's version runs only
when an argument is traced.

>>> import numpy as np, scipy.signal, rune
>>> x = np.linspace(0.0, 1.0, 4)
>>> g = rune.grad(lambda a1: np.sum(scipy.signal.lfilter([1.0], [1.0, a1], x)))(-0.5)
>>> bool(np.isclose(g, -np.sum(scipy.signal.lfilter([1.0], [1.0, -0.5],
...     np.r_[0.0, scipy.signal.lfilter([1.0], [1.0, -0.5], x)[:-1]]))))
True
"""

from __future__ import annotations

import numpy as np
import scipy.signal as _sig

from ..core import Tracer
from ..dispatch import wrap_while_active
from ..primitives.scipy_signal import lfilter_p
from . import ndimage as _rndi
from .linalg import traced_or_original

SCIPY_MODULE = "scipy.signal"   # the names of docs/supported.md
__all__ = ["lfilter", "lfilter_zi", "sosfilt", "sosfilt_zi", "savgol_filter", "convolve2d",
           "correlate2d"]
SUPPORTED = [(f"scipy.signal.{n}", "") for n in __all__] + [
    ("scipy.signal.filtfilt", "SciPy's own code, on rune's lfilter and lfilter_zi"),
    ("scipy.signal.sosfiltfilt", "SciPy's own code, on rune's sosfilt and sosfilt_zi")]


def _arr(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _coefficients(name, what, v):
    v = _arr(v)
    if v.ndim == 0:
        v = np.reshape(v, (1,))
    if v.ndim != 1 or v.shape[0] == 0:
        raise ValueError(f"scipy.signal.{name}: {what} must be a non-empty 1-D sequence "
                         f"(got shape {tuple(v.shape)})")
    if v.dtype.kind not in "fc":
        v = v * 1.0
    return v


def _padded(v, k):
    if v.shape[0] == k:
        return v
    return np.concatenate([v, np.zeros(k - v.shape[0], v.dtype)])


def lfilter(b, a, x, axis=-1, zi=None):
    """``scipy.signal.lfilter``: ``a[0] y[n] = sum_k b[k] x[n-k] - sum_{k>0} a[k] y[n-k]``
    along ``axis``, from the state ``zi``; returns ``(y, zf)`` when ``zi`` is given.

    >>> import numpy as np, rune
    >>> rune.grad(lambda x: lfilter([1.0], [1.0, -0.5], x)[-1])(np.ones(3))
    array([0.25, 0.5 , 1.  ])
    """
    b, a = _coefficients("lfilter", "b", b), _coefficients("lfilter", "a", a)
    x = _arr(x)
    if x.ndim == 0:
        raise ValueError("scipy.signal.lfilter: x must be at least 1-D")
    if x.dtype.kind not in "fc":
        x = x * 1.0
    nd = x.ndim
    if not -nd <= axis < nd:
        raise ValueError(f"scipy.signal.lfilter: axis {axis} is out of bounds for x of "
                         f"dimension {nd}")
    k = max(a.shape[0], b.shape[0])
    b, a = _padded(b, k), _padded(a, k)
    xl = np.moveaxis(x, axis, -1)
    state_shape = tuple(xl.shape[:-1]) + (k - 1,)
    if zi is None:
        z = np.zeros(state_shape, np.result_type(b.dtype, a.dtype, x.dtype))
    else:
        z = _arr(zi)
        want = tuple(x.shape[:axis % nd]) + (k - 1,) + tuple(x.shape[axis % nd + 1:])
        if z.ndim != nd or any(s not in (w, 1) for s, w in zip(z.shape, want)) \
                or z.shape[axis] != k - 1:
            raise ValueError(f"scipy.signal.lfilter: unexpected shape for zi: expected "
                             f"{want}, found {tuple(z.shape)}")
        z = np.broadcast_to(np.moveaxis(z, axis, -1), state_shape)
    if k == 1:
        out = xl * (b[0] / a[0])
    else:
        out = lfilter_p(b, a, xl, z)
    n = xl.shape[-1]
    y = np.moveaxis(out[..., :n], -1, axis)
    if zi is None:
        return y
    return y, np.moveaxis(out[..., n:], -1, axis)


def sosfilt(sos, x, axis=-1, zi=None):
    """``scipy.signal.sosfilt``: the cascade of second-order ``lfilter`` sections.

    >>> import numpy as np, rune
    >>> sos = np.array([[1.0, 0.0, 0.0, 1.0, -0.5, 0.0]])
    >>> rune.grad(lambda x: sosfilt(sos, x)[-1])(np.ones(3))
    array([0.25, 0.5 , 1.  ])
    """
    sos = _arr(sos)
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError(f"scipy.signal.sosfilt: sos array must be shape (n_sections, 6) "
                         f"(got {tuple(sos.shape)})")
    x = _arr(x)
    nd = x.ndim
    if zi is not None:
        zi = _arr(zi)
        want = (sos.shape[0],) + tuple(x.shape[:axis % nd]) + (2,) \
            + tuple(x.shape[axis % nd + 1:])
        if tuple(zi.shape) != want:
            raise ValueError(f"scipy.signal.sosfilt: invalid zi shape. With axis={axis}, an "
                             f"input with shape {tuple(x.shape)}, and an sos array with "
                             f"{sos.shape[0]} sections, zi must have shape {want}, got "
                             f"{tuple(zi.shape)}.")
    finals = []
    for s in range(sos.shape[0]):
        if zi is None:
            x = lfilter(sos[s, :3], sos[s, 3:], x, axis=axis)
        else:
            x, zf = lfilter(sos[s, :3], sos[s, 3:], x, axis=axis, zi=zi[s])
            finals.append(zf)
    return x if zi is None else (x, np.stack(finals))


def lfilter_zi(b, a):
    """``scipy.signal.lfilter_zi``: the state of the filter's steady step response, the
    solution of ``(I - A^T) zi = b[1:] - a[1:] b[0]`` (``A``: the companion matrix).

    >>> import numpy as np, rune
    >>> np.round(rune.grad(lambda a1: lfilter_zi([1.0], [1.0, a1])[0])(-0.5), 6)
    np.float64(-4.0)
    """
    b, a = _coefficients("lfilter_zi", "b", b), _coefficients("lfilter_zi", "a", a)
    k = max(a.shape[0], b.shape[0])
    a0 = a[0]
    b, a = _padded(b, k) / a0, _padded(a, k) / a0
    if k == 1:
        return np.zeros(0, np.result_type(a.dtype, b.dtype))
    first = np.zeros(k - 1)
    first[0] = 1.0
    m = np.eye(k - 1) - np.eye(k - 1, k=1) + a[1:, None] * first[None, :]
    return np.linalg.solve(m, b[1:] - a[1:] * b[0])


def sosfilt_zi(sos):
    """``scipy.signal.sosfilt_zi``: the steady step-response state of each section, scaled
    by the gains of the sections before it.

    >>> import numpy as np, rune
    >>> sos = np.array([[1.0, 0.0, 0.0, 1.0, -0.5, 0.0]])
    >>> rune.grad(lambda s: np.sum(sosfilt_zi(s)))(sos)[0, 4]
    np.float64(-4.0)
    """
    sos = _arr(sos)
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError("scipy.signal.sosfilt_zi: sos must be shape (n_sections, 6)")
    rows, scale = [], 1.0
    for s in range(sos.shape[0]):
        b, a = sos[s, :3], sos[s, 3:]
        rows.append(scale * lfilter_zi(b, a))
        scale = scale * np.sum(b) / np.sum(a)
    return np.stack(rows)


# --------------------------------------------------------------------------
# Savitzky-Golay
# --------------------------------------------------------------------------

def _edge_matrices(window_length, polyorder, deriv, delta):
    """The ``mode='interp'`` edge rows as matrices on the first and the last
    ``window_length`` samples (SciPy's own fit, applied to the unit vectors)."""
    eye = np.eye(window_length)
    rows = _sig.savgol_filter(eye, window_length, polyorder, deriv=deriv, delta=delta,
                              axis=0, mode="interp")
    half = window_length // 2
    return rows[:half], rows[window_length - half:]


def savgol_filter(x, window_length, polyorder, deriv=0, delta=1.0, axis=-1, mode="interp",
                  cval=0.0):
    """``scipy.signal.savgol_filter``: a linear filter of ``x`` (SciPy's coefficients).

    >>> import numpy as np, rune
    >>> rune.grad(lambda x: savgol_filter(x, 3, 1, mode="nearest")[0])(np.ones(4))
    array([0.66666667, 0.33333333, 0.        , 0.        ])
    """
    if mode not in ("mirror", "constant", "nearest", "interp", "wrap"):
        raise ValueError("scipy.signal.savgol_filter: mode must be 'mirror', 'constant', "
                         f"'nearest' 'wrap' or 'interp' (got {mode!r}).")
    x = _arr(x)
    if x.dtype not in (np.float64, np.float32):
        x = x.astype(np.float64)
    coeffs = _sig.savgol_coeffs(window_length, polyorder, deriv=deriv, delta=delta)
    if isinstance(cval, Tracer):
        raise NotImplementedError("scipy.signal.savgol_filter: a traced cval is not "
                                  "supported; pass a plain number")
    if mode != "interp":
        return _rndi.convolve1d(x, coeffs, axis=axis, mode=mode, cval=cval)
    n = x.shape[axis]
    if window_length > n:
        raise ValueError("If mode is 'interp', window_length must be less than or equal "
                         "to the size of x.")
    y = np.moveaxis(_rndi.convolve1d(x, coeffs, axis=axis, mode="constant"), axis, -1)
    xl = np.moveaxis(x, axis, -1)
    left, right = _edge_matrices(window_length, polyorder, deriv, delta)
    half = window_length // 2
    pieces = [xl[..., :window_length] @ left.T.astype(x.dtype),
              y[..., half:n - half] if n - half > half else y[..., :0],
              xl[..., n - window_length:] @ right.T.astype(x.dtype)]
    return np.moveaxis(np.concatenate(pieces, axis=-1), -1, axis)


# --------------------------------------------------------------------------
# convolve2d / correlate2d
# --------------------------------------------------------------------------

_PAD = {"fill": "constant", "pad": "constant", "wrap": "wrap", "circular": "wrap",
        "symm": "symmetric", "symmetric": "symmetric"}


def _centered(x, shape):
    idx = tuple(slice((n - m) // 2, (n - m) // 2 + m) for n, m in zip(x.shape, shape))
    return x[idx]


def _swap_needed(name, s1, s2):
    """SciPy's 'valid' rule: one input at least as large as the other in every dimension;
    True when that is ``in2``."""
    ok1 = all(a >= b for a, b in zip(s1, s2))
    if not (ok1 or all(b >= a for a, b in zip(s1, s2))):
        raise ValueError(f"scipy.signal.{name}: for 'valid' mode, one must be at least as "
                         f"large as the other in every dimension")
    return not ok1


def _two_d(name, in1, in2, mode, boundary, fillvalue):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"scipy.signal.{name}: acceptable mode flags are 'valid', 'same', "
                         f"or 'full' (got {mode!r})")
    if boundary not in _PAD:
        raise ValueError(f"scipy.signal.{name}: acceptable boundary flags are 'fill', "
                         f"'circular' (or 'wrap'), and 'symmetric' (or 'symm') "
                         f"(got {boundary!r})")
    a, b = _arr(in1), _arr(in2)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"scipy.signal.{name} inputs must both be 2-D arrays")
    if isinstance(fillvalue, Tracer):
        raise NotImplementedError(f"scipy.signal.{name}: a traced fillvalue is not "
                                  f"supported; pass a plain number")
    if np.size(fillvalue) != 1:
        raise ValueError(f"scipy.signal.{name}: fillvalue must be scalar or an array "
                         f"with one element")
    return a, b, np.asarray(fillvalue).reshape(())


def _conv2d(name, a, b, mode, boundary, fillvalue):
    plain = _PAD[boundary] == "constant" and fillvalue == 0
    if mode == "valid" or plain:
        if mode == "valid":
            _swap_needed(name, tuple(a.shape), tuple(b.shape))
        return _sig.convolve(a, b, mode=mode)     # rune's, as an argument is traced
    pad = [(m - 1, m - 1) for m in b.shape]
    kw = {"constant_values": fillvalue.astype(a.dtype)} if _PAD[boundary] == "constant" \
        else {}
    full = _sig.convolve(np.pad(a, pad, mode=_PAD[boundary], **kw), b, mode="valid")
    return full if mode == "full" else _centered(full, tuple(a.shape))


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.convolve2d`` (every mode and boundary).

    >>> import numpy as np, rune
    >>> k = np.array([[1.0, 1.0]])
    >>> rune.grad(lambda x: np.sum(convolve2d(x, k, "same", "wrap")))(np.ones((1, 2)))
    array([[2., 2.]])
    """
    a, b, fill = _two_d("convolve2d", in1, in2, mode, boundary, fillvalue)
    return _conv2d("convolve2d", a, b, mode, boundary, fill)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.correlate2d``: ``convolve2d`` with ``in2`` reversed and conjugated.

    >>> import numpy as np, rune
    >>> k = np.array([[1.0, 2.0]])
    >>> rune.grad(lambda x: np.sum(correlate2d(x, k, "valid")))(np.ones((1, 2)))
    array([[1., 2.]])
    """
    a, b, fill = _two_d("correlate2d", in1, in2, mode, boundary, fillvalue)
    swapped = mode == "valid" and _swap_needed("correlate2d", tuple(a.shape), tuple(b.shape))
    if swapped:        # SciPy: correlate2d(small, big) is correlate2d(big, small) reversed
        out = correlate2d(b, a, mode, boundary, fillvalue)
        out = np.flip(out, axis=(0, 1))
        return np.conj(out) if out.dtype.kind == "c" else out
    rev = np.flip(b, axis=(0, 1))
    rev = np.conj(rev) if rev.dtype.kind == "c" else rev
    if mode != "same":
        return _conv2d("correlate2d", a, rev, mode, boundary, fill)
    full = _conv2d("correlate2d", a, rev, "full", boundary, fill)
    start = [(f - n + 1) // 2 for f, n in zip(full.shape, a.shape)]   # SciPy rounds up
    return full[start[0]:start[0] + a.shape[0], start[1]:start[1] + a.shape[1]]


_MODULES = {"lfilter": ("scipy.signal", "scipy.signal._signaltools"),
            "lfilter_zi": ("scipy.signal", "scipy.signal._signaltools"),
            "sosfilt_zi": ("scipy.signal", "scipy.signal._signaltools"),
            "sosfilt": ("scipy.signal", "scipy.signal._signaltools"),
            "convolve2d": ("scipy.signal", "scipy.signal._signaltools"),
            "correlate2d": ("scipy.signal", "scipy.signal._signaltools"),
            "savgol_filter": ("scipy.signal", "scipy.signal._savitzky_golay")}

for _name, _mods in _MODULES.items():
    for _mod in _mods:
        wrap_while_active(_mod, _name, traced_or_original(globals()[_name]))
