"""Write docs/supported.md from rune's dispatch tables: python docs/gen_supported.py

The SciPy part lists every module of ``rune.scipy`` (found by name, so a new one appears
without an edit here), each through the first of: a ``supported()`` function or a
``SUPPORTED`` list of ``(name, notes)`` rows, else its ``__all__`` (names under
``SCIPY_MODULE``, by default ``scipy.<module>``).
"""

import pathlib

import numpy as np

import rune  # noqa: F401  (registers every rule)
from rune import core
from rune.dispatch import FUNCTIONS, UFUNCS, REDUCE, ACCUMULATE
from rune.numpy_api import _func_name

HEADER = """# NumPy and SciPy functions rune supports

Generated from the dispatch tables (`rune.dispatch`) by `docs/gen_supported.py`; a test checks
that every registered function is listed here.

Every function below works under **every** transformation — `grad`/`vjp`
(reverse), `jvp` (forward), `vmap` (batching) — and under any nesting of
them, because each is a primitive with all three rules or a composition of
such primitives.  Exceptions are marked:

* *no derivative*: the function has zero derivative (comparisons, rounding,
  `argmax`, ...); under `grad`/`jvp` it returns a plain array, under `vmap`
  it is batched.
* *per-example under vmap*: the result's shape depends on the data
  (`np.nonzero`, boolean-mask indexing, `np.argwhere`), so `vmap` runs the
  function once per example (with a one-time `rune.PerformanceWarning`).

A NumPy function that is **not** listed still works when NumPy implements it
in Python on top of listed functions (rune runs that implementation on the
traced values: `np.polyval`, `numpy.polynomial`'s evaluators, much of SciPy
that calls `np.asarray` first); one that reaches C code raises
`NotImplementedError` naming it.  `out=` is refused everywhere with
`NotImplementedError`; ufuncs' `where=` likewise (use `np.where`).

"""

NO_DERIVATIVE = {"np.argmax", "np.argmin", "np.argsort", "np.argpartition", "np.lexsort",
                 "np.searchsorted", "np.count_nonzero", "np.all", "np.any", "np.nonzero",
                 "np.flatnonzero", "np.argwhere", "np.shape", "np.ndim", "np.size",
                 "np.result_type", "np.can_cast", "np.min_scalar_type", "np.iscomplexobj",
                 "np.isrealobj", "np.isposinf", "np.isneginf", "np.fix", "np.round",
                 "np.around"}
PER_EXAMPLE = {"np.nonzero", "np.flatnonzero", "np.argwhere", "np.compress", "np.extract",
               "np.place", "np.putmask", "np.delete", "np.insert"}


# NumPy's whole public API, classified (issue 12).  Functions rune has no handler for fall
# in one of these sets or are "missing"; tests/test_numpy_coverage.py checks every name of
# PYTHON_IMPL against finite differences and keeps the classification complete.
PYTHON_IMPL = {  # NumPy's own Python code runs on traced values, derivatives checked
    "np.append", "np.apply_over_axes", "np.gradient", "np.i0", "np.poly", "np.polyadd",
    "np.polyder", "np.polyint", "np.polysub", "np.real_if_close", "np.resize",
    "np.rollaxis", "np.sort_complex", "np.trim_zeros", "np.unstack", "np.unwrap",
    "np.asarray_chkfinite", "np.piecewise", "np.linalg.cross", "np.linalg.diagonal",
    "np.linalg.matrix_transpose", "np.linalg.trace", "np.linalg.tensorinv", "np.fft.fftshift",
    "np.fft.ifftshift", "np.asarray", "np.asanyarray", "np.array", "np.ascontiguousarray",
    "np.asfortranarray", "np.histogram2d", "np.histogramdd", "np.histogram_bin_edges",
    "np.unique_all", "np.unique_counts",
    "np.unique_inverse", "np.intersect1d", "np.union1d", "np.setdiff1d", "np.setxor1d",
}
INTEGER_RESULT = {  # boolean or integer results: no derivative, by definition
    "np.allclose", "np.array_equal", "np.array_equiv", "np.isclose", "np.iscomplex",
    "np.isreal", "np.isin", "np.digitize", "np.nanargmax", "np.nanargmin",
    "np.ravel_multi_index", "np.unravel_index", "np.packbits", "np.unpackbits",
    "np.diag_indices", "np.diag_indices_from", "np.tril_indices", "np.tril_indices_from",
    "np.triu_indices", "np.triu_indices_from", "np.mask_indices", "np.indices", "np.ix_",
}
CONSTANT = {  # made from shapes and Python numbers: constants, nothing to differentiate
    "np.arange", "np.empty", "np.eye", "np.identity", "np.ones", "np.zeros", "np.tri",
    "np.full", "np.fromfunction", "np.fromiter", "np.bartlett", "np.blackman", "np.hamming",
    "np.hanning", "np.kaiser", "np.fft.fftfreq", "np.fft.rfftfreq",
}
BY_NATURE = {  # input/output, text, dates, configuration, types: no derivative by nature
    "np.array2string", "np.array_repr", "np.array_str", "np.base_repr", "np.binary_repr",
    "np.busday_count", "np.busday_offset", "np.datetime_as_string", "np.datetime_data",
    "np.format_float_positional", "np.format_float_scientific", "np.frombuffer", "np.fromfile",
    "np.fromregex", "np.fromstring", "np.genfromtxt", "np.get_include", "np.get_printoptions",
    "np.getbufsize", "np.geterr", "np.geterrcall", "np.info", "np.is_busday", "np.load",
    "np.loadtxt", "np.printoptions", "np.save", "np.savetxt", "np.savez", "np.savez_compressed",
    "np.set_printoptions", "np.setbufsize", "np.seterr", "np.seterrcall", "np.show_config",
    "np.show_runtime", "np.test", "np.typename", "np.isdtype", "np.issubdtype",
    "np.promote_types", "np.common_type", "np.mintypecode", "np.may_share_memory",
    "np.shares_memory", "np.isfortran", "np.iterable", "np.isscalar", "np.from_dlpack",
    "np.nested_iters", "np.einsum_path", "np.broadcast_shapes", "np.frompyfunc", "np.require",
    "np.asmatrix", "np.bmat", "np.linalg.test", "np.fft.test",
}


# names other libraries set on NumPy's module: numexpr (imported by pandas, and by rune.jit's
# fusion) sets np.expm1x = np.expm1
FOREIGN = {"expm1x"}


def public_api():
    """``(name, object)`` for every public function of ``np``, ``np.linalg`` and ``np.fft``."""
    import types
    out = []
    for mod, prefix in ((np, "np."), (np.linalg, "np.linalg."), (np.fft, "np.fft.")):
        for n in sorted(dir(mod)):
            f = getattr(mod, n)
            if hasattr(f, "_rune_impl"):    # rune's pass-through (rune.intercept): NumPy's own
                f = f.__wrapped__
            if n.startswith("_") or isinstance(f, (type, types.ModuleType)) or \
                    n in FOREIGN:
                continue
            if isinstance(f, np.ufunc) or callable(f):
                out.append((prefix + n, f))
    return out


def classify():
    """``{name: category}`` over NumPy's public API."""
    table = {}
    for name, f in public_api():
        handler = UFUNCS.get(f) if isinstance(f, np.ufunc) else FUNCTIONS.get(f)
        if handler is not None:
            nondiff = (isinstance(handler, core.Primitive) and handler.nondiff) or \
                name in NO_DERIVATIVE
            table[name] = "covered, no derivative" if nondiff else "covered"
        elif name in PYTHON_IMPL:
            table[name] = "covered (NumPy's Python code)"
        elif name in INTEGER_RESULT:
            table[name] = "covered, no derivative"
        elif name in CONSTANT:
            table[name] = "constant"
        elif name in BY_NATURE:
            table[name] = "not differentiable by nature"
        else:
            table[name] = "missing"
    return table


SCIPY_HEADER = """## SciPy

rune's SciPy surface, one table per module of `rune.scipy` (each loaded once the user's
code imports the SciPy module).  *derivative in x*: the arguments with a rule; *integer*:
SciPy truncates the argument, so it has no derivative; *refused*: asking for that
derivative raises `NotImplementedError` naming the function and the argument, with the
reason shown here (values still work under every transformation, `vmap` included).
"""


def scipy_rows(module, short):
    """``(name, notes)`` rows of one ``rune.scipy`` module (see the module docstring)."""
    if callable(getattr(module, "supported", None)):
        return list(module.supported())
    if getattr(module, "SUPPORTED", None) is not None:
        return list(module.SUPPORTED)
    prefix = getattr(module, "SCIPY_MODULE", f"scipy.{short}")
    return [(f"{prefix}.{n}", "") for n in getattr(module, "__all__", ())
            if not n.startswith("_") and not n.isupper() and n != "supported"]


def scipy_sections():
    """The SciPy part of supported.md, as lines (empty without SciPy)."""
    import importlib
    import pkgutil
    try:
        import scipy  # noqa: F401
    except ImportError:
        return []
    import rune.scipy
    lines = [SCIPY_HEADER]
    for info in sorted(pkgutil.iter_modules(rune.scipy.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"rune.scipy.{info.name}")
        rows = scipy_rows(module, info.name)
        if not rows:
            continue
        lines += [f"### `rune.scipy.{info.name}`\n", "| function | notes |", "|---|---|"]
        lines += [f"| {f'`{n}`' if n.startswith('scipy.') else n} | {note} |"
                  for n, note in rows]
        lines.append("")
    return lines


def main():
    ufunc_rows = []
    for uf, handler in sorted(UFUNCS.items(), key=lambda kv: kv[0].__name__):
        if getattr(np, uf.__name__, None) is not uf:    # scipy.special's: in their section
            continue
        note = ""
        if isinstance(handler, core.Primitive) and handler.nondiff:
            note = "no derivative"
        ufunc_rows.append((f"np.{uf.__name__}", note))
    for uf in REDUCE:
        ufunc_rows.append((f"np.{uf.__name__}.reduce", ""))
    for uf in ACCUMULATE:
        ufunc_rows.append((f"np.{uf.__name__}.accumulate", ""))
    funcs = sorted({_func_name(f) for f in FUNCTIONS if not isinstance(f, str)})
    lines = [HEADER, "## Ufuncs (with broadcasting and NumPy's type promotion)\n",
             "| function | notes |", "|---|---|"]
    lines += [f"| `{n}` | {note} |" for n, note in ufunc_rows]
    lines += ["", "## Functions, methods and operators\n", "| function | notes |", "|---|---|"]
    for n in funcs:
        notes = (["no derivative"] if n in NO_DERIVATIVE else []) + (
            ["per-example under vmap"] if n in PER_EXAMPLE else [])
        note = "; ".join(notes)
        lines.append(f"| `{n}` | {note} |")
    lines += ["", "Operators (`+ - * / // % ** @`, comparisons, unary `- + abs ~`), in-place "
              "operators on traced arrays (`x += v`), indexing (`x[i]`, `x[:, 1:3]`, "
              "`x[idx_array]`, `x[mask]`, `x[..., None]`) and writes (`x[idx] = v`), and the "
              "methods `sum mean prod max min var std cumsum cumprod argmax argmin argsort "
              "all any clip round dot ravel flatten squeeze swapaxes diagonal trace repeat "
              "take reshape transpose astype copy sort fill item tolist conj` and the "
              "attributes `shape ndim size dtype T mT real imag` work on traced values.", ""]
    table = classify()
    counts = {}
    for cat in table.values():
        counts[cat] = counts.get(cat, 0) + 1
    lines += ["## NumPy's whole public API, classified\n",
              "Every public function of `np`, `np.linalg` and `np.fft` (NumPy "
              f"{np.__version__}): " + ", ".join(f"{n} {c}" for c, n in sorted(counts.items()))
              + ".  *covered (NumPy's Python code)*: rune has no rule of its own, and NumPy's "
              "implementation runs on traced values (its derivatives are checked by the test "
              "suite); *constant*: made from shapes and numbers only.\n",
              "| function | status |", "|---|---|"]
    lines += [f"| `{n}` | {c} |" for n, c in sorted(table.items())]
    lines.append("")
    lines += scipy_sections()
    out = pathlib.Path(__file__).with_name("supported.md")
    out.write_text("\n".join(lines))
    print(f"wrote {out} ({len(ufunc_rows)} ufunc entries, {len(funcs)} functions)")


if __name__ == "__main__":
    main()
