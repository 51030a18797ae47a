"""The package layout: two layers of rules, no import cycles (docs/design.md).

Every module of ``src/rune`` is parsed (not imported) and its imports of rune modules
are collected, wherever they appear (inside functions too: a local import is still a
dependency).  Then:

* the layer rule: ``rune.primitives`` imports only the core, the dispatch tables and
  itself; ``rune.numpy`` adds the primitives; ``rune.scipy`` adds ``rune.numpy``; the
  dispatch tables import only the core and the interception layer (which imports only
  the core), and the core nothing of rune;
* no cycles between rune modules (a package's ``__init__`` importing its own
  submodules is not a cycle by itself, and is checked like any other edge);
* the rule and surface modules stay under 600 lines.
"""

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "rune"

# package prefix -> the rune modules (prefixes) it may import
LAYERS = {
    "rune.core": (),
    "rune.intercept": ("rune.core",),
    "rune.dispatch": ("rune.core", "rune.intercept"),
    "rune.primitives": ("rune.core", "rune.dispatch", "rune.primitives"),
    "rune.layouts": ("rune.core",),
    "rune.concrete": ("rune.core",),     # decisions on numbers, recordable by rune.jit
    "rune.views": ("rune.core", "rune.dispatch", "rune.layouts"),
    "rune.numpy": ("rune.core", "rune.dispatch", "rune.primitives", "rune.numpy",
                   "rune.views", "rune.concrete"),      # the view machinery (views.mark_view)
    "rune.scipy": ("rune.core", "rune.dispatch", "rune.primitives", "rune.numpy", "rune.scipy",
                   "rune.concrete"),
}
# scipy.integrate's solvers are function-level primitives (rune.calls) whose rules run
# rune's transformations (the adjoint and sensitivity systems call vjp/jvp of the user's
# function): those modules may also import the transformation layer
LAYERS.update({f"rune.scipy.integrate{s}": LAYERS["rune.scipy"] + (
    "rune.calls", "rune.checkpoint", "rune.reverse", "rune.forward", "rune.jacobians",
    "rune.backward", "rune.tree") for s in ("", "_ode", "_quad", "_solvers")})


def _module_name(path):
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_package(name):
    return MODULES[name].name == "__init__.py"


def _within(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def rune_imports(name):
    """The rune modules that module ``name`` imports."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if _is_package(name) else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if _within(a.name, "rune"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if not _within(mod, "rune"):
                continue
            for a in node.names:     # ``from . import shape``: the submodule itself
                sub = f"{mod}.{a.name}"
                found.add(sub if sub in MODULES else mod)
    found.discard(name)
    return found


GRAPH = {name: rune_imports(name) for name in MODULES}


def test_the_graph_sees_the_layers():
    assert "rune.primitives.elementwise" in GRAPH["rune.primitives"]
    assert "rune.primitives.elementwise" in GRAPH["rune.numpy.ufuncs"]
    assert "rune.core" in GRAPH["rune.dispatch"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_layer_rule(name):
    layer = next((p for p in sorted(LAYERS, key=len, reverse=True) if _within(name, p)), None)
    if layer is None:
        return     # the transformations and the protocol layer sit above every layer
    allowed = LAYERS[layer]
    bad = sorted(m for m in GRAPH[name] if not any(_within(m, a) for a in allowed))
    assert bad == [], f"{name} (layer {layer}) imports {bad}; it may import only {allowed}"


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(n for n in MODULES
                                        if any(_within(n, p) for p in ("rune.primitives",
                                                                       "rune.numpy",
                                                                       "rune.scipy"))))
def test_rule_modules_stay_small(name):
    n = len(MODULES[name].read_text().splitlines())
    assert n <= 600, f"{name} has {n} lines: split the family (docs/CONTRIBUTING-RULES.md)"


# --------------------------------------------------------------------------
# Every module of the project stays readable in one sitting; benchmarks/ has no cycle
# --------------------------------------------------------------------------

ROOT = SRC.parent
PROJECT_FILES = sorted(p for d in ("src", "tests", "benchmarks", "examples", "docs")
                       for p in (ROOT / d).rglob("*.py"))


@pytest.mark.parametrize("path", PROJECT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_stays_under_650_lines(path):
    n = len(path.read_text().splitlines())
    assert n <= 650, f"{path.relative_to(ROOT)} has {n} lines: split it by job (issue 23)"


def _flat_imports(path, names):
    """The modules of ``names`` (a flat directory of scripts) that ``path`` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module in names:
            found.add(node.module)
    found.discard(path.stem)
    return found


def test_no_import_cycles_in_benchmarks():
    files = {p.stem: p for p in (ROOT / "benchmarks").glob("*.py")}
    graph = {name: _flat_imports(p, files) for name, p in files.items()}
    assert "workloads" in graph["run"] or "workloads" in graph["adapters"]
    assert _cycles(graph) == []
