"""Lists of traced values as arguments: ``np.fft.fft([a, b, c])``, ``np.convolve([a, b], v)``.

NumPy's dispatch does not look inside lists, so a list holding traced values
(and no traced array beside it) never reaches rune's handler.  While a
transformation is active, the functions registered here are wrapped: such a
list is stacked into one traced array and rune's handler is called.
"""

from __future__ import annotations

import functools

from ..dispatch import FUNCTIONS
from .. import dispatch


def _traced_list(x):
    return type(x) in (list, tuple) and dispatch.contains_tracer(x)


def accept_traced_lists(*np_funcs, new=False):
    """Wrap ``np_funcs`` (already in ``FUNCTIONS``) while tracing, as described above;
    ``new``: they make new arrays (``np.linspace``), buffers when the user's code calls
    them (rune.buffers)."""
    for np_func in np_funcs:
        def make(orig, np_func=np_func):
            @functools.wraps(orig)
            def wrapper(*args, **kwargs):
                if any(map(_traced_list, args)) or any(map(_traced_list, kwargs.values())):
                    args = [dispatch.asarray_traced(a) if _traced_list(a) else a
                            for a in args]
                    kwargs = {k: dispatch.asarray_traced(v) if _traced_list(v) else v
                              for k, v in kwargs.items()}
                    return FUNCTIONS[np_func](*args, **kwargs)
                if new:
                    return dispatch.new_array(orig(*args, **kwargs), 3)
                return orig(*args, **kwargs)
            return wrapper
        dispatch.wrap_while_active(np_func.__module__, np_func.__name__, make, only_there=True)
