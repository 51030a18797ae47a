"""The docs site's code runs: every ```python block of the getting-started page, the
guides and the sharp bits, each page's blocks in order in one namespace, as a reader
would paste them (issue 15, item 5).  `make docs` builds the site itself."""

import pathlib
import re
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "docs" / "index.md", ROOT / "docs" / "getting-started.md",
                ROOT / "docs" / "sharp-bits.md", *(ROOT / "docs" / "guides").glob("*.md")])
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_code_runs(page):
    blocks = BLOCK.findall(page.read_text())
    assert blocks, f"{page.name} has no python block"
    namespace = {"__name__": f"docs_{page.stem}"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # a page's code prints no warning it hides
        for k, code in enumerate(blocks):
            try:
                exec(compile(code, f"{page.name}[block {k}]", "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{page.name}, block {k}: {e!r}\n{code}") from e


def test_every_example_has_a_page():
    examples = {p.stem for p in (ROOT / "examples").glob("*.py")}
    pages = {p.stem for p in (ROOT / "docs" / "examples").glob("*.md")}
    assert examples == pages
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(f"examples/{name}.md" in nav for name in examples)
