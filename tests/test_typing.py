"""The public surface is annotated and has no private parameters (issue 15, items 3 and 6).

mypy --strict checks the annotations themselves (`make typecheck`); this checks that
every public function and method has them, so none silently reads as ``Any``.
"""

import inspect

import pytest

import rune
import rune.typing


def _public_callables():
    for name in rune.__all__:
        obj = getattr(rune, name)
        if name in ("tree", "optim"):       # the namespaces: their own public names
            for sub in obj.__all__:
                yield f"rune.{name}.{sub}", getattr(obj, sub)
        elif inspect.isclass(obj) and issubclass(obj, BaseException):
            continue          # exceptions and warnings take Python's own signatures
        else:
            yield f"rune.{name}", obj


def _functions(name, obj):
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_") and attr not in ("__init__", "__call__"):
                continue
            if inspect.isfunction(member):
                yield f"{name}.{attr}", member
        for base in obj.__mro__[1:]:
            if base.__module__.startswith("rune") and "__init__" in vars(base):
                yield f"{name}.__init__ ({base.__name__})", vars(base)["__init__"]
    else:
        yield name, obj


CASES = [c for name, obj in _public_callables() for c in _functions(name, obj)]


@pytest.mark.parametrize("name,fun", CASES, ids=[c[0] for c in CASES])
def test_public_function_is_annotated(name, fun):
    sig = inspect.signature(fun)
    missing = [p.name for p in sig.parameters.values()
               if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")]
    assert missing == [], f"{name}: parameters without annotations: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"


@pytest.mark.parametrize("name,fun", CASES, ids=[c[0] for c in CASES])
def test_public_signature_has_no_private_parameter(name, fun):
    private = [p for p in inspect.signature(fun).parameters if p.startswith("_")]
    assert private == [], f"{name} exposes private parameters {private}"


@pytest.mark.parametrize("name,fun", CASES, ids=[c[0] for c in CASES])
def test_public_function_has_a_docstring(name, fun):
    if name.endswith(("__init__", "__call__")) or "__init__ (" in name:
        return      # documented by the class
    assert (fun.__doc__ or "").strip(), f"{name} has no docstring"


def test_grad_keeps_the_parameters_at_run_time():
    def f(x: float, *, scale: float = 2.0) -> float:
        return scale * x ** 2

    assert rune.grad(f)(3.0, scale=1.0) == 6.0
    assert rune.grad(f).__wrapped__ is f


def test_typing_aliases_are_importable():
    assert rune.typing.PyTree is not None
    assert set(rune.typing.__all__) >= {"PyTree", "ArgNums", "AxisSpec"}


def test_typed_usage_example_runs(capsys):
    import pathlib
    import runpy
    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "typed_usage.py"
    runpy.run_path(str(path), run_name="__main__")
    assert "loss 0.4436" in capsys.readouterr().out
