"""``scipy.signal``'s convolutions on traced values: ``convolve``, ``correlate``,
``fftconvolve`` and ``oaconvolve`` in every mode, N-d, with ``axes=`` where SciPy has it.

All four are the full convolution primitive :data:`rune.primitives.scipy_signal.conv_p`
followed by SciPy's slicing for the mode (``'same'``: centred on ``in1``'s shape;
``'valid'``: the part computed without zero padding), and correlation is convolution with
the second operand reversed and conjugated, as in SciPy.  Their derivatives are
correlations and convolutions.  Registered like :mod:`rune.scipy.linalg`: while a
transformation is active, SciPy's modules (and the user's, after ``from scipy.signal
import convolve``) see these in place of SciPy's functions when an argument is traced.

>>> import numpy as np, scipy.signal, rune
>>> k = np.array([1.0, 2.0, 1.0])
>>> rune.grad(lambda x: np.sum(scipy.signal.convolve(x, k, mode="same") ** 2))(np.ones(3))
array([20., 28., 20.])
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Tracer
from ..dispatch import wrap_while_active
from ..primitives.scipy_signal import conv_p
from .linalg import traced_or_original

__all__ = ["convolve", "correlate", "fftconvolve", "oaconvolve"]


def _operands(name, in1, in2):
    a = in1 if isinstance(in1, Tracer) else np.asarray(in1)
    b = in2 if isinstance(in2, Tracer) else np.asarray(in2)
    if a.ndim != b.ndim:
        raise ValueError(f"scipy.signal.{name}: in1 and in2 should have the same "
                         f"dimensionality (got shapes {tuple(a.shape)} and {tuple(b.shape)})")
    return a, b


def _centered(x, shape):
    idx = tuple(slice((n - m) // 2, (n - m) // 2 + m) for n, m in zip(x.shape, shape))
    return x[idx]


def _swap_needed(name, mode, s1, s2, axes):
    if mode != "valid":
        return False
    ok1 = all(s1[i] >= s2[i] for i in axes)
    ok2 = all(s2[i] >= s1[i] for i in axes)
    if not (ok1 or ok2):
        raise ValueError(f"scipy.signal.{name}: for 'valid' mode, one must be at least as "
                         f"large as the other in every dimension")
    return not ok1


def _check_mode(name, mode, method=None):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"scipy.signal.{name}: acceptable mode flags are 'valid', 'same', "
                         f"or 'full' (got {mode!r})")
    if method is not None and method not in ("auto", "direct", "fft"):
        raise ValueError(f"scipy.signal.{name}: acceptable method flags are 'auto', "
                         f"'direct', or 'fft' (got {method!r})")


def _convolve(name, a, b, mode, axes):
    """SciPy's ``fftconvolve`` semantics: full convolution along ``axes``, the others
    broadcast, then the mode's slice (``'same'`` centred on ``a``'s shape)."""
    s1 = tuple(a.shape)
    if _swap_needed(name, mode, s1, tuple(b.shape), axes):
        a, b = b, a
    full = conv_p(a, b, axes=tuple(axes))
    if mode == "full":
        return full
    if mode == "same":
        return _centered(full, s1)
    shape = [full.shape[k] if k not in axes else a.shape[k] - b.shape[k] + 1
             for k in range(full.ndim)]
    return _centered(full, shape)


def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``: the N-d convolution of ``in1`` and ``in2``."""
    _check_mode("convolve", mode, method)
    a, b = _operands("convolve", in1, in2)
    if a.ndim == 0:
        return a * b
    return _convolve("convolve", a, b, mode, list(range(a.ndim)))


def _reverse_and_conj(x):
    x = np.flip(x, axis=tuple(range(x.ndim)))
    return np.conj(x) if x.dtype.kind == "c" else x


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate``: ``convolve(in1, in2 reversed and conjugated)``."""
    _check_mode("correlate", mode, method)
    a, b = _operands("correlate", in1, in2)
    if a.ndim == 0:
        return a * (np.conj(b) if b.dtype.kind == "c" else b)
    return _convolve("correlate", a, _reverse_and_conj(b), mode, list(range(a.ndim)))


def _freq_axes(name, a, b, axes):
    """SciPy's axes for ``fftconvolve``/``oaconvolve``: normalized, without those where
    either operand has length 1 (there the product broadcasts), the others checked."""
    nd = a.ndim
    if axes is None:
        axes = list(range(nd))
    else:
        axes = [axes] if np.ndim(axes) == 0 else list(axes)
        if not axes:
            raise ValueError(f"scipy.signal.{name}: when provided, axes cannot be empty")
        try:
            axes = [operator.index(ax) for ax in axes]
        except TypeError:
            raise ValueError(f"scipy.signal.{name}: axes must be integers") from None
        if any(ax < -nd or ax >= nd for ax in axes):
            raise ValueError(f"scipy.signal.{name}: axes exceeds dimensionality of input")
        axes = [ax % nd for ax in axes]
        if len(set(axes)) != len(axes):
            raise ValueError(f"scipy.signal.{name}: all axes must be unique")
    s1, s2 = tuple(a.shape), tuple(b.shape)
    axes = sorted(ax for ax in axes if s1[ax] != 1 and s2[ax] != 1)
    if not all(s1[k] == s2[k] or 1 in (s1[k], s2[k]) for k in range(nd) if k not in axes):
        raise ValueError(f"scipy.signal.{name}: incompatible shapes for in1 and in2: {s1} "
                         f"and {s2}")
    return axes


def _fft_family(name, in1, in2, mode, axes):
    a, b = _operands(name, in1, in2)
    if a.ndim == 0:
        return a * b
    _check_mode(name, mode)
    if a.size == 0 or b.size == 0:
        return np.zeros((0,) * a.ndim, np.result_type(a.dtype, b.dtype))
    axes = _freq_axes(name, a, b, axes)
    if not axes:
        return a * b
    return _convolve(name, a, b, mode, axes)


def fftconvolve(in1, in2, mode="full", axes=None):
    """``scipy.signal.fftconvolve`` (computed by the same convolution primitive)."""
    return _fft_family("fftconvolve", in1, in2, mode, axes)


def oaconvolve(in1, in2, mode="full", axes=None):
    """``scipy.signal.oaconvolve`` (computed by the same convolution primitive)."""
    return _fft_family("oaconvolve", in1, in2, mode, axes)


for _name in __all__:
    wrap_while_active("scipy.signal", _name, traced_or_original(globals()[_name]))

# lfilter, savgol_filter & co. register here too: while this module's after-import hook runs,
# so that their entries for SciPy's private modules are installed with it
from . import signal_filters  # noqa: E402,F401
from . import signal_spectral  # noqa: E402,F401
