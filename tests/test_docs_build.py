"""`make docs` fails on a broken reference, and the API reference it builds reads like
JAX's (issue 28, part 4): one entry per public object with its signature, a parameter
table, a rendered example and related entries, and no raw Sphinx markup.

The strict build is checked on a minimal mkdocs project with a planted broken link
(seconds); the API page is checked on a build of the real site (about ten seconds).
Skipped where mkdocs (the docs extra) is not installed.
"""

import html
import inspect
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mkdocs", reason="mkdocs is not installed (the docs extra)")
pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings-python is not "
                                                          "installed (the docs extra)")

import rune  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _make_docs_flags():
    """The options `make docs` gives `mkdocs build`, read from the Makefile."""
    text = (ROOT / "Makefile").read_text()
    recipe = text[text.index("\ndocs:"):].split("\n\n")[0]
    line = next(ln for ln in recipe.splitlines() if "mkdocs build" in ln)
    flags = shlex.split(line.split("mkdocs build", 1)[1])
    out, skip = [], False
    for f in flags:                       # the site directory is the test's own
        if skip:
            skip = False
        elif f in ("--site-dir", "-d"):
            skip = True
        else:
            out.append(f)
    return out


def _build(config, site, cwd):
    cmd = [sys.executable, "-m", "mkdocs", "build", *_make_docs_flags(),
           "--config-file", str(config), "--site-dir", str(site)]
    env = {"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    import os
    env.update({k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "SYSTEMROOT")})
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def _mini_project(tmp_path, docstring_link, page_link="[the module](#mod)"):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(f"# Index\n\nSee {page_link}.\n\n::: mod\n")
    (tmp_path / "mod.py").write_text(textwrap.dedent(f'''
        """A module."""


        def f(x: float) -> float:
            """Twice ``x``; see {docstring_link}.

            Args:
                x: a number.

            Returns:
                ``2 * x``.
            """
            return 2 * x


        def g() -> None:
            """Nothing."""
        '''))
    config = tmp_path / "mkdocs.yml"
    config.write_text(textwrap.dedent("""
        site_name: mini
        docs_dir: docs
        plugins:
          - mkdocstrings:
              handlers:
                python:
                  paths: [.]
                  options:
                    docstring_style: google
        """))
    return config


def test_make_docs_is_strict():
    flags = _make_docs_flags()
    assert "--strict" in flags or "-s" in flags
    # --quiet hides warnings from the counter that --strict reads: the two together
    # build a site with broken links
    assert not {"--quiet", "-q"} & set(flags)


def test_the_minimal_project_builds(tmp_path):
    res = _build(_mini_project(tmp_path, "[`g`][mod.g]"), tmp_path / "site", tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    page = (tmp_path / "site" / "index.html").read_text()
    assert 'href="#mod.g"' in page


def test_a_broken_cross_reference_fails_the_build(tmp_path):
    res = _build(_mini_project(tmp_path, "[`h`][mod.h]"), tmp_path / "site", tmp_path)
    assert res.returncode != 0
    assert "mod.h" in res.stdout + res.stderr


def test_a_broken_page_link_fails_the_build(tmp_path):
    res = _build(_mini_project(tmp_path, "[`g`][mod.g]", "[a page](missing.md)"),
                 tmp_path / "site", tmp_path)
    assert res.returncode != 0
    assert "missing.md" in res.stdout + res.stderr


# ------------------------------------------------------------------ the real API page

@pytest.fixture(scope="module")
def api_page(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    res = _build(ROOT / "mkdocs.yml", site, ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    return (site / "api" / "index.html").read_text()


def _public():
    """(identifier, object) of every public object of rune, rune.tree and rune.optim."""
    for name in rune.__all__:
        obj = getattr(rune, name)
        if name in ("tree", "optim"):
            yield f"rune.{name}", obj
            for sub in obj.__all__:
                yield f"rune.{name}.{sub}", getattr(obj, sub)
        else:
            yield f"rune.{name}", obj
    yield "rune.typing", rune.typing


PUBLIC = list(_public())


def _entries(page):
    """identifier -> the HTML of its entry (up to the next entry's heading)."""
    heads = list(re.finditer(r'<h(\d) id="(rune[\w.]*)" class="doc doc-heading"', page))
    out = {}
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(page)
        out[m.group(2)] = page[m.start():end]
        shown = _text(page[page.index(">", m.end()) + 1:page.index("</h", m.end())]).split()
        if shown and shown[0] != m.group(2):        # a heading option: rune.jit for
            out.setdefault(shown[0], out[m.group(2)])   # rune.jit.jit
    return out


def _text(fragment):
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _is_function(obj):
    return inspect.isfunction(obj) and not isinstance(obj, type)


def test_every_public_object_has_an_entry(api_page):
    entries = _entries(api_page)
    anchors = set(re.findall(r'id="(rune[\w.]*)"', api_page))
    missing = [name for name, _ in PUBLIC if name not in entries and name not in anchors]
    assert missing == []


def test_no_raw_sphinx_markup_or_quoted_examples(api_page):
    text = _text(api_page)
    roles = re.findall(r":(?:func|class|mod|meth|data|attr|exc):`?[\w.~]*", text)
    assert roles == []
    # a >>> example outside a code block renders as nested quotes
    assert "<blockquote>" not in api_page
    prose = re.sub(r"<pre.*?</pre>|<code.*?</code>", "", api_page, flags=re.S)
    assert "&gt;&gt;&gt;" not in prose


def test_checkpoint_and_jit_document_the_functions(api_page):
    entries = _entries(api_page)
    for name in ("checkpoint", "jit"):
        entry = entries[f"rune.{name}.{name}"]
        assert f'id="rune.{name}"' in api_page
        assert _text(entry).lstrip().startswith(f"rune.{name}")
        assert f"{name}(" in _text(entry)          # the signature, not a module's members
        assert "Parameters:" in _text(entry)


@pytest.mark.parametrize("name,obj", [(n, o) for n, o in PUBLIC if _is_function(o)],
                         ids=[n for n, o in PUBLIC if _is_function(o)])
def test_function_entry_reads_like_jax(api_page, name, obj):
    entries = _entries(api_page)
    entry = entries[name]
    if name.rsplit(".", 1)[1] != obj.__name__:      # another name (rune.jacobian): it links
        target = f"rune.{obj.__name__}"              # to the entry checked under its own
        assert f'href="#{target}"' in entry, f"{name}: no link to {target}"
        return
    text = _text(entry)
    assert re.search(rf"\b{re.escape(obj.__name__)}\(", text), f"{name}: no signature"
    params = [p for p in inspect.signature(obj).parameters if p != "self"]
    if params:
        assert "Parameters:" in text, f"{name}: no parameter table"
        for p in params:
            assert re.search(rf"\b{p}\b", text), f"{name}: parameter {p} not documented"
    if inspect.signature(obj).return_annotation not in (None, "None"):
        assert "Returns:" in text or name == "rune.check_grads", \
            f"{name}: what it returns is not documented"
    code = re.findall(r"<pre.*?</pre>", entry, re.S)
    assert any("&gt;&gt;&gt;" in c for c in code), f"{name}: no rendered example"
    assert re.search(r'class="(admonition )?see-also"', entry), f"{name}: no 'See also'"
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#rune', entry) or \
        'href="../' in entry, f"{name}: 'See also' links nothing"
