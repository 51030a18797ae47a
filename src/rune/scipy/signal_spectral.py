"""``scipy.signal``'s spectral functions on traced values: ``stft``, ``istft``,
``spectrogram`` (every mode), ``welch`` and ``csd`` (``average='mean'`` or ``'median'``);
SciPy's own ``periodogram`` and ``coherence`` then run on these.

Each is a composition of NumPy operations rune differentiates, written after SciPy's
legacy ``_spectral_helper``: the boundary extension and end padding by concatenation, the
overlapping segments by one gather (``x[..., starts + arange(nperseg)]``), detrending
(``'constant'``: minus the mean; ``'linear'``: minus the least-squares line, a fixed
projection; a callable: called on the traced segments), the window product, ``np.fft.rfft``
or ``np.fft.fft`` along the last axis and SciPy's scaling.  ``istft`` is ``np.fft.irfft``
(or ``ifft``) of the columns, the window product, and the overlap-add written as
``ceil(nperseg / step)`` shifted sums of blocks, divided by the overlap-added squared
window.  The frequency and time grids, shapes, dtypes, warnings and errors are SciPy's;
the window may be traced too (then ``istft`` gives no NOLA warning), the sampling
frequency ``fs`` may not.  Registered like :mod:`rune.scipy.signal_filters` (imported at
the end of :mod:`rune.scipy.signal`): rune's version runs only when an argument is traced.

>>> import numpy as np, scipy.signal, rune
>>> x = np.arange(8.0)
>>> e = lambda x: np.sum(np.abs(scipy.signal.stft(x, nperseg=4)[2]) ** 2)
>>> np.round(rune.grad(e)(x), 6)
array([0.   , 1.125, 3.   , 3.   , 6.   , 5.   , 9.   , 5.875])
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.fft as _sp_fft
from scipy.signal import get_window

from ..core import Tracer
from ..dispatch import wrap_while_active
from .linalg import traced_or_original

SCIPY_MODULE = "scipy.signal"   # the names of docs/supported.md
__all__ = ["stft", "istft", "spectrogram", "csd", "welch"]
SUPPORTED = [(f"scipy.signal.{n}", "") for n in __all__] + [
    ("scipy.signal.periodogram", "SciPy's own code, on rune's welch"),
    ("scipy.signal.coherence", "SciPy's own code, on rune's welch and csd")]

_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _arr(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _plain_fs(name, fs):
    if isinstance(fs, Tracer):
        raise NotImplementedError(f"scipy.signal.{name}: a traced sampling frequency fs is "
                                  f"not supported by rune; pass fs as a plain number")
    return fs


def _warn(message):
    """``warnings.warn`` at the user's line: the first frame outside rune and SciPy's
    signal package (rune's version is reached through SciPy's forwarding function)."""
    import os
    import sys
    skip = (os.path.dirname(os.path.dirname(__file__)),
            os.path.dirname(sys.modules["scipy.signal"].__file__))
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _is_complex(v):
    return v.dtype.kind == "c"


def _triage(name, window, nperseg, input_length):
    """SciPy's ``_triage_segments``: the window as an array, and ``nperseg``."""
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        if nperseg > input_length:
            _warn(f"nperseg = {nperseg:d} is greater than input length  = "
                  f"{input_length:d}, using nperseg = {input_length:d}")
            nperseg = input_length
        return get_window(window, nperseg), nperseg
    win = _arr(window)
    if win.ndim != 1:
        raise ValueError(f"scipy.signal.{name}: window must be 1-D")
    if input_length < win.shape[-1]:
        raise ValueError(f"scipy.signal.{name}: window is longer than input signal")
    if nperseg is None:
        nperseg = win.shape[0]
    elif nperseg != win.shape[0]:
        raise ValueError(f"scipy.signal.{name}: value specified for nperseg is different "
                         f"from length of window")
    return win, nperseg


def _extend(name, kind, x, n):
    """SciPy's ``even_ext``/``odd_ext``/``const_ext``/``zero_ext`` along the last axis."""
    if n < 1:
        return x
    if kind == "zeros":
        z = np.zeros(tuple(x.shape[:-1]) + (n,), x.dtype)
        return np.concatenate([z, x, z], axis=-1)
    if kind == "constant":
        shape = tuple(x.shape[:-1]) + (n,)
        left, right = np.broadcast_to(x[..., :1], shape), np.broadcast_to(x[..., -1:], shape)
        return np.concatenate([left, x, right], axis=-1)
    if n > x.shape[-1] - 1:
        raise ValueError(f"scipy.signal.{name}: the extension length n ({n}) is too big. It "
                         f"must not exceed x.shape[axis]-1, which is {x.shape[-1] - 1}.")
    left, right = x[..., n:0:-1], x[..., -2:-(n + 2):-1]
    if kind == "odd":
        left, right = 2 * x[..., :1] - left, 2 * x[..., -1:] - right
    return np.concatenate([left, x, right], axis=-1)


def _detrender(name, detrend, axis, each):
    if not callable(detrend) and not detrend:      # False, None: SciPy's "if not detrend"
        return lambda d: d
    if callable(detrend):
        if each:     # csd/welch (ShortTimeFFT): called on one segment at a time
            return lambda d: np.stack([detrend(d[..., i, :]) for i in range(d.shape[-2])],
                                      axis=-2)
        if axis == -1:
            return detrend
        return lambda d: np.moveaxis(detrend(np.moveaxis(d, -1, axis)), axis, -1)
    if detrend in ("constant", "c"):
        return lambda d: d - np.mean(d, axis=-1, keepdims=True)
    if detrend in ("linear", "l"):
        def linear(d):
            n = d.shape[-1]
            a = np.stack([np.arange(1.0, n + 1) / n, np.ones(n)], axis=1)
            proj = a @ np.linalg.pinv(a)       # onto the lines: symmetric, plain
            return d - d @ proj
        return linear
    raise ValueError(f"scipy.signal.{name}: Trend type must be 'linear' or 'constant' "
                     f"(got detrend={detrend!r})")


def _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, sides):
    """SciPy's ``_fft_helper``: (..., segments, frequencies)."""
    if nperseg == 1 and noverlap == 0:
        seg = x[..., None]
    else:
        step = nperseg - noverlap
        nseg = (x.shape[-1] - nperseg) // step + 1
        seg = x[..., np.arange(nseg)[:, None] * step + np.arange(nperseg)]
    seg = win * detrend_func(seg)
    if sides == "twosided":
        if _is_complex(seg):
            return np.fft.fft(seg, n=nfft)
        out = np.fft.fft(seg, n=nfft)       # SciPy's FFT of real data: the real bins' zero
        real_bins = np.zeros(nfft, bool)    # imaginary parts are -0.0 (angle -pi, not pi)
        real_bins[0] = True
        real_bins[nfft // 2] = nfft % 2 == 0
        return np.where(real_bins, np.conjugate(out), out)
    return np.fft.rfft(np.real(seg), n=nfft)


def _helper(name, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
            scaling, axis, mode, boundary=None, padded=False, welch=False):
    """SciPy's legacy ``_spectral_helper``: ``(freqs, time, result)``, the result's
    frequency axis at ``axis`` and its segment axis last.  ``welch``: as ``csd`` does it
    (no warning for complex data, a callable ``detrend`` sees one segment at a time)."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"scipy.signal.{name}: Unknown boundary option '{boundary}', must "
                         f"be one of: {list(_BOUNDARIES)}")
    fs = _plain_fs(name, fs)
    same = y is x
    axis = int(axis)
    x = _arr(x)
    for v in (x, y):
        nd = np.ndim(v)
        if not -nd <= axis < nd:
            raise ValueError(f"scipy.signal.{name}: axis {axis} is out of bounds for an "
                             f"input of dimension {nd}")
    if same:
        y = x
        outdtype = np.result_type(x.dtype, np.complex64)
    else:
        y = _arr(y)
        outdtype = np.result_type(x.dtype, y.dtype, np.complex64)
        xo, yo = list(x.shape), list(y.shape)
        xo.pop(axis)
        yo.pop(axis)
        try:
            outer = np.broadcast_shapes(tuple(xo), tuple(yo))
        except ValueError as e:
            raise ValueError(f"scipy.signal.{name}: x and y cannot be broadcast "
                             f"together.") from e
    if x.size == 0 or y.size == 0:
        if same:
            return np.empty(x.shape), np.empty(x.shape), np.empty(x.shape)
        out = np.moveaxis(np.empty(outer + (min(x.shape[axis], y.shape[axis]),)), -1, axis)
        return out, out, out
    x = np.moveaxis(x, axis, -1)
    if not same:
        y = np.moveaxis(y, axis, -1)
        if x.shape[-1] != y.shape[-1]:        # zero-pad the shorter
            n = max(x.shape[-1], y.shape[-1])
            x, y = (np.concatenate([v, np.zeros(tuple(v.shape[:-1]) + (n - v.shape[-1],))],
                                   axis=-1) if v.shape[-1] < n else v for v in (x, y))
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError(f"scipy.signal.{name}: nperseg must be a positive integer")
    win, nperseg = _triage(name, window, nperseg, x.shape[-1])
    if nfft is None:
        nfft = nperseg
    elif nfft < nperseg:
        raise ValueError(f"scipy.signal.{name}: nfft must be greater than or equal to "
                         f"nperseg.")
    nfft = int(nfft)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError(f"scipy.signal.{name}: noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    if boundary is not None:
        x = _extend(name, boundary, x, nperseg // 2)
        y = x if same else _extend(name, boundary, y, nperseg // 2)
    if padded:        # to a whole number of segments, after the extension
        nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
        if nadd:
            x = np.concatenate([x, np.zeros(tuple(x.shape[:-1]) + (nadd,))], axis=-1)
            y = x if same else np.concatenate(
                [y, np.zeros(tuple(y.shape[:-1]) + (nadd,))], axis=-1)
    detrend_func = _detrender(name, detrend, axis, welch)
    if np.result_type(win.dtype, np.complex64) != outdtype:
        win = win.astype(outdtype)
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"scipy.signal.{name}: Unknown scaling: {scaling!r}")
    if mode == "stft":
        scale = np.sqrt(scale)
    sides = "twosided"
    if return_onesided:
        if _is_complex(x) or _is_complex(y):
            if not welch:
                _warn("Input data is complex, switching to return_onesided=False")
        else:
            sides = "onesided"
    freqs = _sp_fft.fftfreq(nfft, 1 / fs) if sides == "twosided" \
        else _sp_fft.rfftfreq(nfft, 1 / fs)
    result = _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, sides)
    if not same:
        result = np.conjugate(result) * _segments_fft(y, win, detrend_func, nperseg,
                                                      noverlap, nfft, sides)
    elif mode == "psd":
        result = np.conjugate(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":    # the unpaired bins are not doubled
        double = np.full(result.shape[-1], 2.0)
        double[0] = 1.0
        if nfft % 2 == 0:
            double[-1] = 1.0
        result = result * double
    time = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap) \
        / float(fs)
    if boundary is not None:
        time -= (nperseg / 2) / fs
    result = result.astype(outdtype)
    if same and mode != "stft":
        result = np.real(result)
    return freqs, time, np.moveaxis(result, -1, axis - 1 if axis < 0 else axis)


def stft(x, fs=1.0, window="hann_periodic", nperseg=256, noverlap=None, nfft=None,
         detrend=False, return_onesided=True, boundary="zeros", padded=True, axis=-1,
         scaling="spectrum"):
    """``scipy.signal.stft``: ``(f, t, Zxx)``, the short-time Fourier transform.

    >>> import numpy as np, rune
    >>> w = rune.grad(lambda x: np.sum(stft(x, nperseg=4)[2].real))(np.ones(6))
    >>> np.round(w, 6)
    array([0.5, 0. , 0.5, 0. , 0.5, 0. ])
    """
    if scaling == "psd":
        scaling = "density"
    elif scaling != "spectrum":
        raise ValueError(f"scipy.signal.stft: Parameter {scaling=} not in "
                         f"['spectrum', 'psd']!")
    return _helper("stft", x, x, fs, window, nperseg, noverlap, nfft, detrend,
                   return_onesided, scaling, axis, "stft", boundary, padded)


def spectrogram(x, fs=1.0, window=("tukey_periodic", .25), nperseg=None, noverlap=None,
                nfft=None, detrend="constant", return_onesided=True, scaling="density",
                axis=-1, mode="psd"):
    """``scipy.signal.spectrogram`` in every mode (``'psd'``, ``'complex'``,
    ``'magnitude'``, ``'angle'``, ``'phase'``).

    >>> import numpy as np, rune
    >>> x = np.cos(np.arange(16.0))
    >>> g = rune.grad(lambda x: np.sum(spectrogram(x, nperseg=8)[2]))(x)
    >>> bool(np.allclose(g, rune.jacfwd(lambda x: np.sum(spectrogram(x, nperseg=8)[2]))(x)))
    True
    """
    modes = ["psd", "complex", "magnitude", "angle", "phase"]
    if mode not in modes:
        raise ValueError(f"scipy.signal.spectrogram: unknown value for mode {mode}, must be "
                         f"one of {modes}")
    x = _arr(x)
    if not -x.ndim <= int(axis) < x.ndim:
        raise ValueError(f"scipy.signal.spectrogram: axis {axis} is out of bounds for x of "
                         f"dimension {x.ndim}")
    window, nperseg = _triage("spectrogram", window, nperseg, x.shape[axis])
    if noverlap is None:
        noverlap = nperseg // 8
    helper_mode = "psd" if mode == "psd" else "stft"
    freqs, time, sxx = _helper("spectrogram", x, x, fs, window, nperseg, noverlap, nfft,
                               detrend, return_onesided, scaling, axis, helper_mode)
    if mode == "magnitude":
        sxx = np.abs(sxx)
    elif mode in ("angle", "phase"):
        sxx = np.angle(sxx)
        if mode == "phase":
            sxx = np.unwrap(sxx, axis=axis - 1 if axis < 0 else axis)
    return freqs, time, sxx


def _median_bias(n):
    ii_2 = 2 * np.arange(1.0, (n - 1) // 2 + 1)
    return 1 + np.sum(1.0 / (ii_2 + 1) - 1.0 / ii_2)


def csd(x, y, fs=1.0, window="hann_periodic", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
    """``scipy.signal.csd``: ``(f, Pxy)``, Welch's average of ``conj(X) * Y``.

    >>> import numpy as np, rune
    >>> x, y = np.cos(np.arange(8.0)), np.sin(np.arange(8.0))
    >>> g = rune.grad(lambda y: np.sum(csd(x, y, nperseg=4)[1].real))(y)
    >>> bool(np.allclose(g, rune.jacfwd(lambda y: np.sum(csd(x, y, nperseg=4)[1].real))(y)))
    True
    """
    if scaling not in ("spectrum", "density"):
        raise ValueError(f"scipy.signal.csd: Parameter {scaling=} not in "
                         f"['spectrum', 'density']!")
    if average not in ("mean", "median"):
        raise ValueError(f"scipy.signal.csd: Parameter {average=} must be 'median' or "
                         f"'mean'!")
    same = y is x
    x = _arr(x)
    y = x if same else _arr(y)
    if x.size == 0 or y.size == 0:
        freqs, _, out = _helper("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                return_onesided, scaling, axis, "psd")
        return freqs, out
    if isinstance(window, (str, tuple)) and nperseg is not None and int(nperseg) < 1:
        raise ValueError(f"scipy.signal.csd: Parameter {nperseg=} is not a positive "
                         f"integer!")
    freqs, _, pxy = _helper("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling, axis, "psd", welch=True)
    if pxy.shape[-1] > 1:
        if average == "median":
            bias = _median_bias(pxy.shape[-1])
            if _is_complex(pxy):
                pxy = np.median(np.real(pxy), axis=-1) + np.median(np.imag(pxy),
                                                                   axis=-1) * 1j
            else:
                pxy = np.median(pxy, axis=-1)
            pxy = pxy / bias
        else:
            pxy = np.mean(pxy, axis=-1)
    else:
        pxy = np.reshape(pxy, tuple(pxy.shape[:-1]))
    return freqs, pxy


def welch(x, fs=1.0, window="hann_periodic", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """``scipy.signal.welch``: ``(f, Pxx)``, the real part of ``csd(x, x)``.

    >>> import numpy as np, rune
    >>> x = np.cos(np.arange(8.0))
    >>> g = rune.grad(lambda x: np.sum(welch(x, nperseg=4)[1]))(x)
    >>> bool(np.allclose(g, rune.jacfwd(lambda x: np.sum(welch(x, nperseg=4)[1]))(x)))
    True
    """
    freqs, pxx = csd(x, x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, np.real(pxx)


def _overlap_add(frames, nstep):
    """Frames ``(..., nseg, nperseg)`` placed ``nstep`` apart and summed: ``(...,
    nperseg + (nseg - 1) * nstep)``.  Each frame is cut into ``k = ceil(nperseg / nstep)``
    blocks of ``nstep``; block ``j`` of frame ``i`` lands on output block ``i + j``, so the
    sum is ``k`` shifted copies, added in SciPy's order (earliest frame first)."""
    lead, (nseg, nper) = tuple(frames.shape[:-2]), tuple(frames.shape[-2:])
    k = -(-nper // nstep)
    if k * nstep > nper:
        frames = np.concatenate([frames, np.zeros(lead + (nseg, k * nstep - nper),
                                                  frames.dtype)], axis=-1)
    blocks = np.reshape(frames, lead + (nseg, k, nstep))
    total = None
    for j in range(k - 1, -1, -1):
        parts = [np.zeros(lead + (j, nstep), frames.dtype)] if j else []
        parts.append(blocks[..., j, :])
        if k - 1 - j:
            parts.append(np.zeros(lead + (k - 1 - j, nstep), frames.dtype))
        shifted = np.concatenate(parts, axis=-2) if len(parts) > 1 else parts[0]
        total = shifted if total is None else total + shifted
    return np.reshape(total, lead + ((nseg + k - 1) * nstep,))[..., :nper + (nseg - 1) * nstep]


def istft(Zxx, fs=1.0, window="hann_periodic", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2,
          scaling="spectrum"):
    """``scipy.signal.istft``: ``(t, x)``, the inverse of :func:`stft` by overlap-add.

    >>> import numpy as np, rune
    >>> x = np.cos(np.arange(16.0))
    >>> rt = lambda x: istft(stft(x, nperseg=8)[2], nperseg=8)[1]
    >>> bool(np.allclose(rt(x), x)), bool(np.allclose(rune.jacfwd(rt)(x), np.eye(16)))
    (True, True)
    """
    fs = _plain_fs("istft", fs)
    Zxx = _arr(Zxx) + 0j
    freq_axis, time_axis = int(freq_axis), int(time_axis)
    if Zxx.ndim < 2:
        raise ValueError("scipy.signal.istft: Input stft must be at least 2d!")
    if freq_axis == time_axis:
        raise ValueError("scipy.signal.istft: Must specify differing time and frequency "
                         "axes!")
    nseg = Zxx.shape[time_axis]
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    if nperseg is None:
        nperseg = n_default
    else:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("scipy.signal.istft: nperseg must be a positive integer")
    if nfft is None:
        nfft = nperseg if input_onesided and nperseg == n_default + 1 else n_default
    elif nfft < nperseg:
        raise ValueError("scipy.signal.istft: nfft must be greater than or equal to "
                         "nperseg.")
    else:
        nfft = int(nfft)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("scipy.signal.istft: noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    nd = Zxx.ndim
    if time_axis != nd - 1 or freq_axis != nd - 2:
        freq_axis, time_axis = freq_axis % nd, time_axis % nd
        outer = [a for a in range(nd) if a not in (freq_axis, time_axis)]
        Zxx = np.transpose(Zxx, outer + [freq_axis, time_axis])
    if isinstance(window, (str, tuple)):
        win = get_window(window, nperseg)
    else:
        win = _arr(window)
        if win.ndim != 1:
            raise ValueError("scipy.signal.istft: window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"scipy.signal.istft: window must have length of {nperseg}")
    ifunc = np.fft.irfft if input_onesided else np.fft.ifft
    xsubs = ifunc(Zxx, axis=-2, n=nfft)[..., :nperseg, :]
    single = Zxx.dtype == np.complex64             # SciPy's FFT keeps single precision
    xdtype = np.dtype((np.float32 if single else np.float64) if input_onesided
                      else (np.complex64 if single else np.complex128))
    xsubs = xsubs.astype(xdtype)
    if np.result_type(win.dtype, xdtype) != xdtype:
        win = win.astype(xdtype)
    if scaling == "spectrum":
        xsubs = xsubs * win.sum()
    elif scaling == "psd":
        sq = np.sum(win ** 2) if isinstance(win, Tracer) else sum(win ** 2)
        xsubs = xsubs * np.sqrt(fs * sq)
    else:
        raise ValueError(f"scipy.signal.istft: Parameter {scaling=} not in "
                         f"['spectrum', 'psd']!")
    x = _overlap_add(np.swapaxes(xsubs, -1, -2) * win, nstep)
    norm = _overlap_add(np.broadcast_to(win ** 2, (nseg, nperseg)), nstep)
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    if not isinstance(norm, Tracer) and np.sum(norm > 1e-10) != len(norm):
        _warn("NOLA condition failed, STFT may not be invertible."
              + (" Possibly due to missing boundary" if not boundary else ""))
    x = x / np.where(norm > 1e-10, norm, 1.0)
    if input_onesided:
        x = np.real(x)
    if x.ndim > 1 and time_axis != nd - 1:
        x = np.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = np.arange(x.shape[0]) / float(fs)
    return time, x


for _name in __all__:
    for _mod in ("scipy.signal", "scipy.signal._spectral_py"):
        wrap_while_active(_mod, _name, traced_or_original(globals()[_name]))
