"""rune.jit_fuse: elementwise runs of a replayed program fused into numexpr calls give
eager rune's results bit for bit; only operations numexpr computes exactly are fused; a
fused program is safe to replay from many threads at once; fusion can be turned off."""

import sys
import threading

import numpy as np
import pytest

import rune
from rune import jit_fuse

numexpr = pytest.importorskip("numexpr")

# signed zeros, infinities, NaN, subnormals, huge and tiny values
_SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e300, -1e-300, 3.0,
                     5e-324, -7.5, 0.1, 1e-8, -1e8, 2.0])


def _chain(x):
    for _ in range(3):
        a = np.sin(x) * np.cos(x)
        b = np.exp(-a) + np.tanh(x)
        x = b * 0.5 + np.sqrt(np.abs(a) + 1.0) - x * 0.25
    return np.sum(x)


def _bits_equal(got, want):
    """Bit for bit, but for a NaN's sign and payload (IEEE leaves them open)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert got[~nan].tobytes() == want[~nan].tobytes()


FUNCS = {
    "chain gradient": rune.grad(_chain),
    "arithmetic": lambda x: (x * 3.0 - x / 7.0) * (x + 0.1) / (x - 2.0) - np.sqrt(np.abs(x)),
    "where and comparisons": lambda x: np.where(x >= 0.5, x * x - 1.0, -(x / 3.0) + 2.0) *
    np.where(x < -1.0, x + 1.0, x - 1.0),
    "value read in and out of a run": lambda x: (lambda y: (y * 2.0 + 1.0) / y + y)(x * x - x),
    "hessian-vector product": lambda x: rune.hvp(_chain, (x,), (np.ones_like(x),)),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_fused_programs_equal_eager_bit_for_bit(name):
    f = FUNCS[name]
    jf = rune.jit(f)
    with np.errstate(all="ignore"):
        x = _SPECIAL.copy()
        jf(x)                                           # recorded
        assert "fused" in jf.listing(x)
        rng = np.random.default_rng(0)
        for v in (x, x[::-1].copy(), -x, rng.standard_normal(x.size) * 3.0):
            _bits_equal(jf(v), f(v))                    # replayed
            assert np.array_equal(np.signbit(jf(v))[~np.isnan(f(v))],
                                  np.signbit(f(v))[~np.isnan(f(v))])


def test_fusion_pays_a_kernel_call_per_run_not_per_operation():
    g = rune.jit(rune.grad(_chain))
    x = np.linspace(0.1, 0.9, 16)
    g(x)
    fused = rune.jit_fuse.Fused
    progs = g._rune_jit.programs
    prog = next(iter(progs.values()))[-1]
    calls = [line for line in prog.listing.split("def replay")[1].splitlines() if " = " in line]
    plain = [line for line in prog.listing.split("def replay")[0].splitlines() if " = " in line]
    assert len(calls) < 0.6 * len(plain), prog.listing       # (93 kernels: 45 calls here)
    assert fused.name == "fused" and sum("fused" in c for c in calls) >= 6


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("RUNE_JIT_FUSE", "0")
    g = rune.jit(rune.grad(_chain))
    x = np.linspace(0.1, 0.9, 16)
    g(x)
    assert "fused" not in g.listing(x) and "_lock" not in g.listing(x)
    _bits_equal(g(x + 0.5), rune.grad(_chain)(x + 0.5))


def test_float32_and_broadcasting_runs_stay_numpy_calls():
    f = lambda x, y: (x * 3.0 - x / 7.0) * (x + 1.0) - x      # noqa: E731
    x32 = np.linspace(-1, 1, 6, dtype=np.float32)
    j = rune.jit(f)
    assert "fused" not in j.listing(x32, 1.0)
    assert j(x32, 1.0).dtype == np.float32
    _bits_equal(j(x32 + 1, 1.0), f(x32 + 1, 1.0))
    g = lambda x, y: (x * 3.0 - y / 7.0) * (x + y) - y    # noqa: E731  (y: one row)
    x, y = np.ones((3, 4)), np.arange(4.0)
    jg = rune.jit(g)
    assert "fused" not in jg.listing(x, y)
    _bits_equal(jg(x * 2, y), g(x * 2, y))


def test_only_operations_numexpr_computes_exactly_are_fused(monkeypatch):
    monkeypatch.setattr(jit_fuse, "_checked", None)
    wrong = dict(jit_fuse._FORMS)
    wrong["add"] = ("(({} + {}) * 1.0000000001)", np.add)     # a numexpr "add" that is off
    monkeypatch.setattr(jit_fuse, "_FORMS", wrong)
    ops = jit_fuse.exact_ops()
    assert "add" not in ops and "multiply" in ops and "where" in ops
    f = lambda x: (x * 3.0 + 1.0) * (x + 2.0) + x         # noqa: E731
    j = rune.jit(f)
    x = np.linspace(-1.0, 1.0, 5)
    j(x)
    assert "add(" in j.listing(x).split("def replay")[-1]
    _bits_equal(j(x * 3), f(x * 3))
    monkeypatch.setattr(jit_fuse, "_checked", None)


def test_many_threads_replaying_one_fused_program():
    """numexpr's compiled expression is not safe to run in two threads at once (it crashes
    the process): a second thread runs the unfused program meanwhile."""
    g = rune.jit(rune.grad(_chain))
    xs = [np.random.default_rng(k).standard_normal(16) for k in range(6)]
    want = [rune.grad(_chain)(x) for x in xs]
    g(xs[0])
    assert "_lock" in g.listing(xs[0])
    bad = []

    def work(i):
        for t in range(300):
            k = (i + t) % len(xs)
            if g(xs[k]).tobytes() != want[k].tobytes():
                bad.append(k)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not bad


def test_a_value_read_twice_is_computed_once_and_deep_sharing_stays_small():
    def f(x):
        for _ in range(30):          # each value read twice: text doubling every step
            x = x * x + x
        return x
    j = rune.jit(f)
    x = np.linspace(-0.01, 0.01, 8)
    j(x)
    listing = j.listing(x)
    assert max(len(line) for line in listing.splitlines()) < 4000
    _bits_equal(j(x * 0.5), f(x * 0.5))


def test_the_module_examples_run():
    import doctest
    result = doctest.testmod(jit_fuse)
    assert result.attempted >= 3 and result.failed == 0


def test_errstate_raise_runs_the_unfused_program_and_raises_as_eager_does():
    f = lambda x: np.sum((x * 2.0 - 1.0) / (x - 1.0) * x)     # noqa: E731
    j = rune.jit(f)
    x, y = np.array([0.5, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])
    j(x)
    assert "fused" in j.listing(x)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            f(y)
        with pytest.raises(FloatingPointError):
            j(y)                    # replayed: a fused run would have given inf quietly
    with np.errstate(all="ignore"):
        _bits_equal(j(y), f(y))
    _bits_equal(j(x), f(x))


def test_a_run_numexpr_cannot_compile_stays_numpy_calls(monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("too many registers")
    monkeypatch.setattr(numexpr, "NumExpr", refuse)
    f = lambda x: (x * 3.0 - x / 7.0) * (x + 1.0) - x      # noqa: E731
    j = rune.jit(f)
    x = np.linspace(-1.0, 1.0, 5)
    j(x)
    assert "fused" not in j.listing(x)
    _bits_equal(j(x * 2), f(x * 2))
