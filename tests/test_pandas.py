"""pandas inside a transformed function (issue 25, rune.pandas_compat, rune.pandas_array,
rune.pandas_ops): a Series or DataFrame meeting a traced value runs pandas' own operation
(index alignment, names, NaN for missing labels) on a TracedArray, with the derivatives
of grad, jvp, vjp, vmap, jacfwd/jacrev; the oracle is the same function run by pandas on
plain floats (its values, and central finite differences through rune.check_grads).
What pandas can only do on plain numbers raises one clear PandasTracedError; pandas
outside transformations is untouched."""

import copy
import doctest
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rune
from rune import pandas_compat
from rune.pandas_compat import PandasTracedError

pd = pytest.importorskip("pandas")
from rune import pandas_array, pandas_ops  # noqa: E402  (needs pandas)
from rune.pandas_array import TracedArray, TracedDtype  # noqa: E402

T = np.linspace(0.0, 2.0, 8)
DF = pd.DataFrame({"t": T, "y": np.exp(-T / 1.3) + 0.01 * np.cos(7 * T),
                   "a": np.sin(3 * T), "b": 1.0 + T ** 2})
S = pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"], name="s")
S2 = pd.Series([10.0, -20.0, 30.0, 40.0], index=["c", "a", "d", "b"], name="s")   # shuffled,
SMALL = pd.DataFrame({"u": [1.0, 2.0], "v": [3.0, -4.0]}, index=["p", "q"])      # one more
W = np.array([0.5, -1.5])
TAU = 1.7
ORIGINALS = [(DF, DF.copy(deep=True)), (S, S.copy(deep=True)), (S2, S2.copy(deep=True)),
             (SMALL, SMALL.copy(deep=True))]


def loss(tau):                              # the programs, as written there
    pred = np.exp(-DF["t"] / tau)
    return np.sum((DF["y"] - pred) ** 2)


def loss2(w):
    return np.sum((DF[["a", "b"]] @ w - DF["y"]) ** 2)


def loss3(tau):
    return (tau * DF["t"]).sum()


# (function, point): programs that run pandas' own semantics on traced values
PROGRAMS = {
    "loss: exp(-Series / tau), Series - traced Series": (loss, TAU),
    "loss2: DataFrame @ traced vector": (loss2, W),
    "loss3: (tau * Series).sum()": (loss3, TAU),
    "Series / tau": (lambda tau: np.sum(S / tau), TAU),
    "tau - Series, Series + tau": (lambda tau: np.sum(tau - S) * np.sum(S + tau), TAU),
    "np.multiply both ways": (lambda tau: np.sum(np.multiply(S, tau) * np.multiply(tau, S)),
                              TAU),
    "np.arctan2(Series, tau)": (lambda tau: np.arctan2(S, tau).sum(), TAU),
    "tau ** Series": (lambda tau: (tau ** S).mean(), TAU),
    "aligned by label (shuffled, one label more)": (
        lambda tau: ((S * tau) - S2 / tau).sum(), TAU),
    "aligned, squared, both traced": (lambda tau: np.sum(((S * tau) + S2 * tau ** 2) ** 2),
                                      TAU),
    "aligned: mean, std, var, median": (lambda tau: (lambda d: d.mean() + d.std() + d.var()
                                                     + d.median())((S * tau) - S2), TAU),
    "aligned: min, max, prod, sem": (lambda tau: (lambda d: d.min() * d.max() + d.prod()
                                                  + d.sem())((S * tau) - S2 / 10), TAU),
    "aligned: cumsum, cumprod": (lambda tau: (lambda d: d.cumsum().sum()
                                              + d.cumprod().sum())((S * tau) - S2 / 30), TAU),
    "aligned: fillna, ffill, bfill, dropna": (
        lambda tau: (lambda d: d.fillna(tau).sum() + d.ffill().sum() + d.bfill().sum()
                     + np.sum(d.dropna() ** 2))((S * tau) - S2), TAU),
    "mul with fill_value": (lambda tau: (S * tau).mul(S2.iloc[:2], fill_value=1.0).sum(), TAU),
    "np.mean, np.sum, np.nansum": (
        lambda tau: np.mean(np.sin(S * tau)) + np.nansum((S * tau).reindex(["c", "z"])), TAU),
    "to_numpy, values, np.asarray": (
        lambda tau: np.sum((S * tau).to_numpy() ** 2) + (S / tau).values.sum()
        + np.asarray(S * tau ** 2).sum(), TAU),
    "where with a plain condition, comparisons": (
        lambda tau: (S * tau).where(S > 1.5, -tau).sum() + ((S * tau) > 2).sum() * tau, TAU),
    "iloc, loc, diff, shift": (
        lambda tau: (lambda d: d.iloc[1:].sum() + d.loc[["c", "a"]].sum() + np.sum(d.diff()
                     ** 2) + np.sum(d.shift(1) * S))(S * tau), TAU),
    "concat, apply(np.sin)": (lambda tau: pd.concat([S * tau, S2 * tau]).sum()
                              + (S * tau).apply(np.sin).sum(), TAU),
    "pd.Series(traced, index)": (lambda w: pd.Series(w * w, index=["x", "y"]).sum(), W),
    "w @ DataFrame, w @ DataFrame.T": (lambda w: np.sum(w @ SMALL) + np.sum(w @ SMALL.T), W),
    "DataFrame * tau, DataFrame * w": (
        lambda w: np.sum(np.asarray(SMALL * w[0])) + np.sum((SMALL * w).to_numpy() ** 2), W),
    "np.exp(DataFrame), DataFrame sum and mean": (
        lambda w: (lambda d: d.sum().sum() + d.mean().sum())(np.exp(SMALL * w)), W),
    "DataFrame.dot(traced Series), Series @ w": (
        lambda w: SMALL.dot(pd.Series(w, index=["v", "u"])).sum()
        + np.sum(pd.Series([1.0, 2.0]) @ w), W),
    "column assigned a traced Series": (
        lambda tau: (lambda d: (d.__setitem__("p", np.exp(-DF["t"] / tau)), d)[1])(DF.copy())
        [["p", "y"]].to_numpy().sum() + DF.assign(q=DF["a"] * tau)["q"].sum(), TAU),
    "pd.DataFrame({...}) of traced columns, pd.Series(0-d)": (
        lambda w: pd.DataFrame({"a": w, "b": w * w}, index=["x", "y"]).sum().sum()
        + pd.DataFrame({"c": w[0], "d": [1.0, 2.0]}, index=["x", "y"]).sum().sum()
        + pd.Series(w[1]).sum() + pd.Series(w[0], index=["a", "b"]).sum(), W),
    "df[name] = traced array or scalar": (
        lambda w: (lambda d: (d.__setitem__("p", w * 2), d.__setitem__("q", w[0]),
                              (d["p"] * d["u"] + d["q"]).sum())[2])(SMALL.copy()), W),
    "DataFrame + shuffled DataFrame": (
        lambda tau: ((SMALL * tau) + SMALL[["v", "u"]].iloc[::-1]).sum().sum(), TAU),
}


def _batch(x):
    x = np.asarray(x, float)
    return np.stack([x, x * 0.8 + 0.3, x * 1.1 - 0.2])


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_pandas_own_semantics_with_derivatives(name):
    f, x = PROGRAMS[name]
    plain = f(x)                    # pandas on plain floats: the oracle
    value, _ = rune.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(np.asarray(value), np.asarray(plain), rtol=1e-13)
    rune.check_grads(f, x, order=1, modes=("fwd", "rev"))    # central differences, JVP = VJP
    xs = _batch(x)
    np.testing.assert_allclose(rune.vmap(f)(xs), np.stack([f(v) for v in xs]), rtol=1e-13)


@pytest.mark.parametrize("f, x", [(loss, TAU), (loss2, W), (PROGRAMS[
    "aligned by label (shuffled, one label more)"][0], TAU)])
def test_second_order_and_every_transformation(f, x):
    rune.check_grads(f, x, order=2)
    out, pull = rune.vjp(f, x)
    np.testing.assert_allclose(pull(1.0)[0], rune.grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(rune.jacfwd(f)(x), rune.jacrev(f)(x), rtol=1e-12)
    xs = _batch(x)
    np.testing.assert_allclose(rune.vmap(rune.grad(f))(xs),
                               np.stack([rune.grad(f)(v) for v in xs]), rtol=1e-12)


def test_a_vector_valued_program_jacobians():
    def pred(w):        # a Series out of the function: its numbers, by DataFrame @ w
        return (DF[["a", "b"]] @ w).to_numpy()
    jf, jr = rune.jacfwd(pred)(W), rune.jacrev(pred)(W)
    np.testing.assert_allclose(jf, DF[["a", "b"]].to_numpy(), rtol=1e-14)
    np.testing.assert_allclose(jr, jf, rtol=1e-14)


def test_alignment_is_by_label_not_position():
    def f(tau):
        d = (S * tau) - S2
        assert list(d.index) == ["a", "b", "c", "d"] and d.name == "s"
        assert isinstance(d.dtype, TracedDtype) and d.isna().tolist() == [False] * 3 + [True]
        return d.to_numpy()
    got = rune.jacfwd(f)(TAU)
    np.testing.assert_array_equal(got, [1.0, 2.0, 3.0, 0.0])        # d (tau S_l) / d tau
    np.testing.assert_allclose(rune.jvp(f, (TAU,), (1.0,))[0], (S * TAU - S2).to_numpy())
    positional = S.to_numpy() * TAU - S2.to_numpy()[:3]
    assert not np.allclose(rune.jvp(f, (TAU,), (1.0,))[0][:3], positional)


def test_names_and_indexes_are_pandas_own():
    def check(tau):
        assert (S / tau).name == "s" and (tau * S).name == "s"
        assert (S * tau + S.rename("t")).name is None
        out = SMALL @ np.stack([tau, tau])
        assert list(out.index) == ["p", "q"] and out.name is None
        assert list((SMALL * tau).columns) == ["u", "v"]
        return tau
    rune.grad(check)(TAU)
    rune.vmap(check)(_batch(TAU))


def test_nothing_the_caller_passed_is_mutated_or_aliased():
    def f(tau):
        s = S * tau
        x = s.to_numpy()
        x[0] = 100.0 * tau              # writes into what the user was handed
        v = s.values
        v[1] = 0.0
        a = np.asarray(s)
        a[2] = 0.0
        d = DF.copy()
        d["p"] = s.reindex(["a", "a", "b", "c", "a", "b", "c", "c"]).set_axis(DF.index)
        d.iloc[0, 0] = 5.0
        return s.sum() + x.sum() * 0.0
    assert rune.grad(f)(TAU) == pytest.approx(S.sum())
    rune.vmap(f)(_batch(TAU))
    for name in PROGRAMS:
        rune.grad(PROGRAMS[name][0])(PROGRAMS[name][1])
    for obj, kept in ORIGINALS:
        if isinstance(obj, pd.DataFrame):
            pd.testing.assert_frame_equal(obj, kept)
        else:
            pd.testing.assert_series_equal(obj, kept)


# (function, point, words the error names): pandas' code that needs plain numbers
ERRORS = {
    "rolling": (lambda tau: (S * tau).rolling(2).mean().sum(), "NDFrame.rolling"),
    "groupby": (lambda tau: (S * tau).groupby([0, 0, 1]).sum().sum(), "GroupBy.sum"),
    "sort_values": (lambda tau: (S * tau).sort_values().iloc[0], "sort_values"),
    "kurt": (lambda tau: (S * tau).kurt(), "kurt"),
    "quantile": (lambda tau: (S * tau).quantile(0.5), "quantile"),
    "astype(float)": (lambda tau: (S * tau).astype(float).sum(), "astype"),
    "unique": (lambda tau: np.sum((S * tau).unique()), "unique"),
    "cummax": (lambda tau: (S * tau).cummax().sum(), "cummax"),
    "DataFrame.T": (lambda tau: (SMALL * tau).T.sum().sum(), "DataFrame.T"),
    "sum(axis=1)": (lambda tau: (SMALL * tau).sum(axis=1).sum(), "DataFrame.sum"),
    "np.dot(Series, array)": (lambda tau: np.dot(S * tau, np.ones(3)), "Series.__array__"),
    "describe": (lambda tau: (SMALL * tau).describe().sum().sum(), "describe"),
    "mixed frame's numbers": (lambda tau: np.sum(DF.assign(g="x", p=DF["t"] * tau).values[:, -1]),
                              "non-numeric columns"),
    "df.loc[:, name] = traced array": (
        lambda tau: (lambda d: (d.loc.__setitem__((slice(None), "p"), np.ones(2) * tau),
                                d)[1])(SMALL.copy())["p"].sum(), "pd.Series(x, index=...)"),
    "Index * tau": (lambda tau: np.sum(pd.Index([1.0, 2.0]) * tau), "pandas Index"),
    "x += Series": (lambda w: (lambda x: (x.__iadd__(pd.Series([1.0, 2.0])), x)[1])(w * 1.0)
                    .sum(), "in-place"),
}


@pytest.mark.parametrize("mode", ["grad", "jvp", "vmap"])
@pytest.mark.parametrize("name", list(ERRORS))
def test_what_pandas_needs_plain_numbers_for_is_one_clear_error(name, mode):
    f, words = ERRORS[name]
    x = W if name == "x += Series" else TAU
    run = {"grad": lambda: rune.grad(f)(x),
           "jvp": lambda: rune.jvp(f, (x,), (np.ones_like(x),)),
           "vmap": lambda: rune.vmap(f)(_batch(x))}[mode]
    with pytest.raises(PandasTracedError) as e:
        run()
    msg = str(e.value)
    assert "pandas" in msg and words in msg, msg
    assert "to_numpy()" in msg or "pd.Series(" in msg, msg
    assert isinstance(e.value, rune.TracerConversionError)


def test_vmap_booleans_stay_traced_and_pandas_masks_refuse_them():
    f = ERRORS_VMAP = lambda tau: np.sum(np.where(S > tau, 1.0, 0.0) * tau)   # noqa: E731
    assert rune.grad(f)(TAU) == np.sum(S > TAU) == 2           # plain booleans under grad
    with pytest.raises(PandasTracedError, match="Series.__array__"):
        rune.vmap(ERRORS_VMAP)(_batch(TAU))
    g = lambda tau: np.sum(np.where((S > tau).to_numpy(), 1.0, 0.0) * tau)  # noqa: E731
    np.testing.assert_allclose(rune.vmap(g)(_batch(TAU)), [g(v) for v in _batch(TAU)])


def test_missing_values_must_be_one_pattern_under_vmap():
    def f(tau):
        with np.errstate(invalid="ignore"):
            return np.log(S - tau).sum()    # NaN where S < tau: per example here
    with pytest.raises(PandasTracedError, match="differ between vmap's examples"):
        rune.vmap(f)(np.array([0.5, 2.5]))
    np.testing.assert_allclose(rune.vmap(f)(np.array([0.5, 0.7])), [f(0.5), f(0.7)])
    assert rune.grad(f)(2.5) == pytest.approx(-1 / 0.5)    # the NaN is skipped, as pandas


def test_the_traced_array_interface():
    def f(w):
        a = TracedArray(w * 3.0)
        assert len(a) == 2 and a.dtype == TracedDtype("float64") and a.nbytes == 16
        t = a.take([1, -1, 0], allow_fill=True)
        assert t.isna().tolist() == [False, True, False]
        both = TracedArray._concat_same_type([a, t.copy()])
        assert len(both) == 5 and TracedArray._from_sequence([w[0], 2.0]).dtype.name \
            == "traced[float64]"
        with pytest.raises(IndexError):
            a.take([2])
        return np.nansum(both.to_numpy())
    np.testing.assert_allclose(rune.grad(f)(W), [6.0, 6.0])
    assert TracedDtype.construct_from_string("traced[float32]") == TracedDtype("float32")
    with pytest.raises(TypeError):
        TracedDtype.construct_from_string("float64")
    with pytest.raises(ValueError, match="1-d"):
        TracedArray(np.ones((2, 2)))


@pytest.mark.skipif(not hasattr(rune, "jit"), reason="no rune.jit")
def test_jit_replays_decide_the_missing_values_anew():
    def f(tau):
        with np.errstate(invalid="ignore"):
            return np.log(S - tau).sum()        # which values are NaN depends on tau
    jf, jg = rune.jit(f), rune.jit(rune.grad(f))
    for t in (0.5, 2.5, 0.7, 1.5):
        assert jf(t) == pytest.approx(f(t), rel=1e-14)
        assert jg(t) == pytest.approx(rune.grad(f)(t), rel=1e-14)
    assert rune.jit(rune.grad(loss))(TAU) == pytest.approx(rune.grad(loss)(TAU), rel=1e-14)


def test_printing_a_traced_series_shows_its_values():
    seen = []
    rune.grad(lambda tau: (seen.append(repr(S * tau)), (S * tau).sum())[1])(2.0)
    assert "a    2.0" in seen[0] and "dtype: traced[float64]" in seen[0], seen[0]


def test_pandas_outside_transformations_is_untouched():
    _ = rune.grad(loss)(TAU)          # rune's replacements are installed now
    out = S / 2.0
    assert type(out) is pd.Series and out.dtype == np.float64 and out.tolist() == [0.5, 1, 1.5]
    k = np.ones(2)
    got = SMALL @ k
    assert type(got) is pd.Series and got.dtype == np.float64
    assert got.tolist() == (SMALL.to_numpy() @ k).tolist() and list(got.index) == ["p", "q"]
    assert type(SMALL.dot(np.eye(2))) is pd.DataFrame
    assert SMALL.dot(pd.Series([1.0, 1.0], index=["v", "u"])).tolist() == [4.0, -2.0]
    assert type(np.multiply(S, 2.0)) is pd.Series and (2.0 - S).tolist() == [1.0, 0.0, -1.0]
    assert type(S.values) is np.ndarray and type(SMALL.to_numpy()) is np.ndarray
    assert S.rolling(2).sum().tolist()[1:] == [3.0, 5.0]
    back = pickle.loads(pickle.dumps(S * 2.0))
    pd.testing.assert_series_equal(back, S * 2.0)
    pd.testing.assert_frame_equal(pickle.loads(pickle.dumps(SMALL)), SMALL)
    assert copy.deepcopy(S).equals(S)


def test_pandas_first_imported_inside_the_transformed_function():
    code = textwrap.dedent("""
        import sys
        import numpy as np, rune
        assert "pandas" not in sys.modules
        def f(tau):
            import pandas as pd
            s = pd.Series([1.0, 2.0], index=["a", "b"])
            return np.sum(s * tau) + (tau * s.iloc[::-1] - s).sum()
        print(rune.grad(f)(2.0))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "6.0", res.stderr[-2000:]


def test_importing_rune_does_not_import_pandas():
    code = "import sys, rune; rune.grad(lambda x: x * x)(1.0); print('pandas' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.stdout.strip() == "False", res.stderr[-2000:]


@pytest.mark.parametrize("module", [pandas_compat, pandas_array, pandas_ops])
def test_doctests_of_the_modules(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
