"""What the tape keeps of the user's own arrays never changes after the fact (SPEC 4).

NumPy arrays are mutable, and user code reuses buffers: a constant updated in place
after ``W @ x`` used it, a work buffer refilled with ``out=`` in a loop, the caller
writing into its own input before calling a pullback.  The tape keeps plain arrays (the
function's inputs, and constants an operation's VJP reads) through :class:`Kept`:

* an array of at most :data:`COPY_BELOW` bytes is copied once, and the copy is kept; a
  later use of the same array compares it with that copy (``np.array_equal``) and copies
  again only when it changed, so a buffer reused across a loop gives each use its own
  values (the derivative is right, and a constant used many times is copied once);
* a larger array is kept by reference with a checksum (CRC-32 of its bytes), checked
  when it is used again and when the pullback runs: a change raises ``ValueError`` naming
  the operation and the array's shape instead of giving a wrong derivative (copying it
  would double the memory of a model whose weights are constants: the 50-layer MLP of
  ``benchmarks/memory_floor.py`` keeps 200 MB of them);
* an array nobody can write (read-only, owning its memory) is kept as it is.

Intermediate values are rune's own arrays, never handed out, so they need none of this.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["Kept", "COPY_BELOW"]

COPY_BELOW = 1 << 20     # bytes: smaller arrays are copied, larger ones checksummed
_ndarray = np.ndarray


def _checksum(v):
    return zlib.crc32(np.ascontiguousarray(v))


def _same(a, b):
    try:
        return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    except TypeError:       # (object arrays)
        return False


class Kept:
    """The plain arrays one tape keeps: ``id -> (array, private copy or None, checksum,
    what used it)``."""

    __slots__ = ("entries",)

    def __init__(self):
        self.entries = {}

    def keep(self, v, what):
        """What the tape keeps of the plain array ``v``, which ``what`` reads."""
        if v.base is None and not v.flags.writeable:
            return v
        entry = self.entries.get(id(v))
        if entry is not None and entry[0] is not v:
            entry = None            # another array at a reused address
        if v.nbytes <= COPY_BELOW:
            if entry is not None and entry[1] is not None and _same(entry[1], v):
                return entry[1]
            c = v.copy()
            c.flags.writeable = False
            self.entries[id(v)] = (v, c, None, what)
            return c
        if entry is None:
            self.entries[id(v)] = (v, None, _checksum(v), what)
        else:
            self._check(entry)
        return v

    def check(self):
        """Raise if an array kept by reference was written into since it was used."""
        for entry in self.entries.values():
            if entry[1] is None:
                self._check(entry)

    @staticmethod
    def _check(entry):
        v, _, crc, what = entry
        if _checksum(v) != crc:
            raise ValueError(
                f"an array of shape {v.shape} and dtype {v.dtype} that {what} used was "
                f"written into afterwards, so the derivative would use values it did not "
                f"see; rune keeps arrays over {COPY_BELOW >> 20} MiB by reference: write "
                f"into a copy (or a new array) instead, or make the array read-only "
                f"(a.flags.writeable = False) to promise it does not change")


class ReadAnew(Kept):
    """Under ``rune.jit``'s recording: the tape keeps a copy as usual (the backward pass of
    this call reads the value at use), and the recording level learns which array it is a
    copy of, so that its program reads that array anew on every replay when the call left
    it unchanged (``rune.jit._as_used``)."""

    __slots__ = ("origins",)

    def __init__(self, origins):
        Kept.__init__(self)
        self.origins = origins      # id(copy) -> (array, copy or checksum)

    def keep(self, v, what):
        c = Kept.keep(self, v, what)
        if c is not v:
            self.origins[id(c)] = (v, c)
        elif v.flags.writeable:
            self.origins.setdefault(id(v), (v, _checksum(v)))
        return c
