"""Write docs/supported.md from rune's dispatch tables: python docs/gen_supported.py"""

import pathlib

import numpy as np

import rune
from rune import core
from rune.dispatch import FUNCTIONS, UFUNCS, REDUCE, ACCUMULATE
from rune.numpy_api import _func_name

HEADER = """# NumPy functions rune supports

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


def main():
    ufunc_rows = []
    for uf, handler in sorted(UFUNCS.items(), key=lambda kv: kv[0].__name__):
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
    out = pathlib.Path(__file__).with_name("supported.md")
    out.write_text("\n".join(lines))
    print(f"wrote {out} ({len(ufunc_rows)} ufunc entries, {len(funcs)} functions)")


if __name__ == "__main__":
    main()
