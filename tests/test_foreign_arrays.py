"""Foreign arrays that NumPy's protocols would give a wrong derivative for are refused at
the boundary of every transformation, with what to pass instead (SPEC 3, issue 11)."""

import numpy as np
import pytest

import rune

MASKED = np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 1, 0, 0])

CASES = [
    ("masked", MASKED, "filled"),
    ("matrix", np.matrix([[1.0, 2.0]]), "np.asarray"),
    ("object", np.array([1.0, 2.0], dtype=object), "float"),
]

MODES = {
    "grad": lambda x: rune.grad(lambda v: np.sum(v * v))(x),
    "value_and_grad": lambda x: rune.value_and_grad(lambda v: np.sum(v))(x),
    "vjp": lambda x: rune.vjp(np.sin, x),
    "jvp": lambda x: rune.jvp(np.sin, (x,), (x,)),
    "vmap": lambda x: rune.vmap(np.sin)(x),
    "vmap-unmapped": lambda x: rune.vmap(lambda a, b: a * b, in_axes=(0, None))(np.ones(2), x),
    "jacfwd": lambda x: rune.jacfwd(np.sin)(x),
    "jacrev": lambda x: rune.jacrev(np.sin)(x),
    "hessian": lambda x: rune.hessian(lambda v: np.sum(v ** 3))(x),
    "record": lambda x: rune.grad(lambda p: np.sum(p["w"]))({"w": x}),
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name,x,hint", CASES, ids=[c[0] for c in CASES])
def test_foreign_arrays_are_refused_with_what_to_pass(name, x, hint, mode):
    with pytest.raises(TypeError, match=hint):
        MODES[mode](x)
    # the next call works normally
    np.testing.assert_allclose(rune.grad(lambda v: np.sum(v * v))(np.ones(2)), [2.0, 2.0])


def test_the_masked_gradient_the_user_meant():
    # what the message suggests gives the finite-difference answer [2, 0, 6, 8]
    def loss(data, mask):
        return np.sum(np.where(mask, 0.0, data ** 2))
    g = rune.grad(loss)(MASKED.data, np.ma.getmaskarray(MASKED))
    np.testing.assert_allclose(g, [2.0, 0.0, 6.0, 8.0])


def test_pandas_and_xarray_are_named():
    pd = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match="to_numpy"):
        rune.grad(lambda s: np.sum(s * s))(pd.Series([1.0, 2.0]))


def test_xarray_is_named():
    xr = pytest.importorskip("xarray")
    with pytest.raises(TypeError, match="values"):
        rune.grad(lambda a: np.sum(a * a))(xr.DataArray([1.0, 2.0], dims=["x"]))


@pytest.mark.parametrize("module,name,hint", [("pandas.core.series", "Series", "to_numpy"),
                                              ("xarray.core.dataarray", "DataArray", "values"),
                                              ("array_api_strict._array_object", "Array",
                                               "np.asarray")])
def test_labelled_and_other_arrays_are_named_without_their_library(module, name, hint):
    """The refusal keys on the class's module, so it holds whether or not the library is
    installed here (a stand-in class with that module)."""
    ns = {"__module__": module}
    if module.startswith("array_api"):
        ns["__array_namespace__"] = lambda self, api_version=None: None
    fake = type(name, (), ns)()
    with pytest.raises(TypeError, match=hint):
        rune.grad(lambda v: v)(fake)
    with pytest.raises(TypeError, match=hint):
        rune.vmap(lambda v: v)(fake)
