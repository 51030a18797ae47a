"""The program :mod:`rune.jit` generates from a recording: Python source, one line a kernel.

A recording (:class:`rune.jit.JitTrace`'s ``code``) is a list of entries, each
``("op", primitive, argument refs, parameters, result slots, result meta, snapshots)`` or
``("guard", slot, value)``; a ref is ``("s", slot)`` (a value of the program) or
``("c", constant)``.  :class:`Program` keeps what the outputs and guards need
(:func:`_live`), folds negations (:mod:`rune.jit_fold`), fuses elementwise runs when
numexpr is there (:mod:`rune.jit_fuse`), and writes one Python function of kernel calls,
each value freed after its last read.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from . import tree as tree_util
from .jit_fold import fold_negations
from .jit_fuse import QUIET, Fused, errstate, fuse, quiet_now
from .kept import _checksum

__all__ = ["Program"]

_ndarray = np.ndarray


class _Miss(Exception):
    """A guard of the program failed on replay: record again."""


class Program:
    """A recorded call: ``run(leaves)`` replays it (raises :class:`_Miss` on a failed
    guard); ``listing`` is its source."""

    __slots__ = ("run", "listing", "n_ops")

    def __init__(self, trace, in_slots, in_meta, out_refs, out_kinds, out_tree):
        if trace.unreplayable:
            raise _Unreplayable(trace.unreplayable)
        env: dict[str, Any] = {"_Miss": _Miss, "_same": _same, "_unflatten": tree_util.unflatten,
                               "_tree": out_tree, "_copy": _copy_const, "_array0": _array0,
                               "_scalar": _scalar}
        lines = [f"def replay({', '.join(f'v{s}' for s in in_slots) or '*_'}):"]
        names: dict[int, str] = {}

        def const(c, hint="c"):
            key = id(c)
            name = names.get(key)
            if name is None:
                name = f"{hint}{len(names)}" if hint == "c" or hint in env else hint
                names[key] = name
                env[name] = c
            return name

        def ref(r):
            return f"v{r[1]}" if r[0] == "s" else const(r[1])

        plain = fold_negations(_live(trace.code, out_refs), out_refs)
        fused = fuse(plain, out_refs, in_meta)
        keep = {r[1] for r in out_refs if r[0] == "s"} | set(in_slots)  # (the caller's)
        result = ", ".join(_out_expr(r, kind) if r[0] == "s" else f"_copy({const(r[1])})"
                           for r, kind in zip(out_refs, out_kinds))
        if out_tree.node_cls is None:       # one array out (a gradient): no tree to build
            ret = f"return {result}"
        else:
            ret = f"return _unflatten(_tree, ({result}{',' * (len(out_refs) == 1)}))"
        if fused is plain:
            n_ops = _body(lines, plain, out_refs, keep, const, ref, "    ")
            lines.append(f"    {ret}")
        else:   # a numexpr call must not run in two threads at once: a second thread
            params = lines[0][len("def replay"):]   # runs the unfused program meanwhile,
            # as does a call under np.errstate(...="raise") (a fused run reports nothing)
            lines[0] = f"def _plain{params}"
            _body(lines, plain, out_refs, keep, const, ref, "    ")
            lines += [f"    {ret}", f"def replay{params}",
                      f"    if _errstate() is not _quiet[0] and not _quiet_now() or not "
                      f"_lock.acquire(False): return _plain{params[:-1]}",
                      "    try:"]
            n_ops = _body(lines, fused, out_refs, keep, const, ref, "        ")
            lines += [f"        {ret}", "    finally:", "        _lock.release()"]
            env.update(_lock=threading.Lock(), _errstate=errstate, _quiet=QUIET,
                       _quiet_now=quiet_now)
        source = "\n".join(lines) + "\n"
        exec(compile(source, "<rune.jit program>", "exec"), env)
        self.run = env["replay"]
        self.listing = source
        self.n_ops = n_ops


def _body(lines, code, out_refs, keep, const, ref, indent):
    """Append the lines that run ``code``'s entries (one a kernel call, its guards, the
    values it frees) to ``lines``; return the number of kernel calls."""
    last = _last_uses(code, out_refs)
    final = max((k for k, e in enumerate(code) if e[0] == "op"), default=0)
    n_ops = 0
    for k, entry in enumerate(code):
        if entry[0] == "guard":
            _, slot, value = entry
            lines.append(f"{indent}if not _same(v{slot}, {const(value)}): raise _Miss")
            if last.get(slot) == k and slot not in keep:
                lines.append(f"{indent}del v{slot}")
            continue
        _, prim, refs, params, slots, meta, snaps = entry
        refs = _as_used(refs, snaps)
        n_ops += 1
        fn = const(prim.impl, "".join(ch if ch.isalnum() else "_" for ch in prim.name))
        call_args = [ref(r) for r in refs]
        if params:
            call_args.append(f"**{const(params)}")
        target = ", ".join(f"v{s}" for s in slots) + ("," if prim.multiple_results else "")
        lines.append(f"{indent}{target} = {fn}({', '.join(call_args)})" +
                     (f"  # {prim.text}" if type(prim) is Fused else ""))
        if (prim.nondiff or prim.multiple_results) and type(prim.impl) is not np.ufunc:
            for s, (shape, dtype) in zip(slots, meta):  # a shape from the data
                lines.append(f"{indent}if getattr(v{s}, 'shape', ()) != {shape!r}: raise _Miss")
        # values freed once nothing reads them, as eager code frees them: NumPy's cache of
        # small buffers then serves the next kernel's result
        dead = sorted(({r[1] for r in refs if r[0] == "s" and last.get(r[1]) == k} |
                       {s for s in slots if s not in last}) - keep)
        if dead and k < final:
            lines.append(f"{indent}del {', '.join(f'v{s}' for s in dead)}")
    return n_ops


def _last_uses(code, out_refs):
    """For each slot ``code`` reads, the index of the entry that reads it last (outputs
    are read after every entry: absent)."""
    last = {}
    for k, e in enumerate(code):
        if e[0] == "guard":
            last[e[1]] = k
        else:
            for r in e[2]:
                if r[0] == "s":
                    last[r[1]] = k
    for r in out_refs:
        if r[0] == "s":
            last.pop(r[1], None)
    return last


def _as_used(refs, snaps):
    """The constants an operation read: the array itself when it still holds what it held
    then (an array ``f`` closes over: read anew on every replay, as eager code reads it),
    else the value it had (a buffer ``f`` made, used, then wrote into)."""
    if not snaps:
        return refs
    refs = list(refs)
    for i, snap in snaps.items():
        v = refs[i][1]
        if type(snap) is tuple:             # a tape's copy (or a large array it reads
            origin, kept = snap             # by reference) of the array ``origin``
            if type(kept) is _ndarray:
                if _same(origin, kept):     # unchanged by the call: read anew on replay
                    refs[i] = ("c", origin)
                continue
            snap = kept
        if type(snap) is _ndarray:
            if not _same(v, snap):
                snap.flags.writeable = False
                refs[i] = ("c", snap)
        elif _checksum(v) != snap:
            raise _Unreplayable(
                f"an array of {v.nbytes >> 20} MiB that the function reads was written into "
                f"after it was read, during the call")
    return refs


class _Unreplayable(Exception):
    """What was recorded cannot be replayed: the function runs eagerly."""


def _live(code, out_refs):
    """``code`` without the operations whose results nothing reads (a gradient's forward
    value that ``grad`` drops): what the outputs and the guards need, in order."""
    need = {r[1] for r in out_refs if r[0] == "s"}
    kept = []
    for entry in reversed(code):
        if entry[0] == "guard":
            need.add(entry[1])
        elif any(s in need for s in entry[4]):
            need.update(r[1] for r in entry[2] if r[0] == "s")
        else:
            continue
        kept.append(entry)
    kept.reverse()
    return kept


def _out_kind(v):
    """How an output's type is restored on replay: a kernel may give a NumPy scalar where
    the recorded call's Python code made a 0-d array of it (or the reverse)."""
    if type(v) is _ndarray and v.ndim == 0:
        return "array0"
    if isinstance(v, np.generic):
        return "scalar"
    return None


def _out_expr(ref, kind):
    if kind == "array0":
        return f"_array0(v{ref[1]})"
    if kind == "scalar":
        return f"_scalar(v{ref[1]})"
    return f"v{ref[1]}"


def _array0(v):
    return v if type(v) is _ndarray else np.asarray(v)


def _scalar(v):
    return v[()] if type(v) is _ndarray else v


def _copy_const(c):
    """A constant output, fresh on every call (as eager code makes it anew)."""
    return c.copy() if isinstance(c, (_ndarray, np.generic)) else c


def _same(v, recorded):
    """Whether a guarded value is bit for bit what it was when recorded."""
    v = np.asarray(v)
    return v.shape == recorded.shape and v.dtype == recorded.dtype and \
        v.tobytes() == recorded.tobytes()
