"""Pointers from the code and the docs to a page or a section resolve, and none leaves the repository.

A pointer is ``docs/page.md``, ``docs/page.md, "Section"``, ``README, "Section"`` (or ``README's
"Section"``) in a docstring, a comment or a page, and every relative Markdown link in ``docs/`` and
the README (``[text](page.md#anchor)``). A section is found by its heading's first words. Design
notes live in ``docs/architecture.md``: a pointer to a design document elsewhere fails.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import prefect_agentenv

PACKAGE = Path(prefect_agentenv.__file__).parent
ROOT = PACKAGE.parent
TESTS = ROOT / "tests"

POINTER = re.compile(r"""(?P<page>docs/[\w./-]+\.md|README(?:\.md)?(?=['’]s|,))(?:['’]s|,)?\s*"""
                     r"""(?:"(?P<section>[^"]{2,80})"|'(?P<section2>[^']{2,80})')?""")
OUTSIDE = re.compile(r"\bDESIGN(?:\.md)?\s*§|\bDESIGN\.md\b|/work/shared")
LINK = re.compile(r"\]\((?!https?:|mailto:|#)(?P<target>[^)\s]+)\)")


def _sources() -> list[Path]:
    code = [p for p in PACKAGE.rglob("*.py")]
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    return [*sorted(code), *pages]


def _elsewhere() -> list[Path]:
    """The other text a newcomer reads: benchmarks, examples, the changelog."""
    found = [ROOT / "CHANGELOG.md"]
    for folder in ("benchmarks", "examples"):
        found += [p for p in sorted((ROOT / folder).rglob("*")) if p.suffix in (".py", ".md", ".yaml", ".toml")]
    return found


def _flat(path: Path) -> str:
    """The file's text on one line, comment marks between lines dropped, so a pointer may wrap."""
    return " ".join(re.sub(r"\n\s*#\s?", "\n", path.read_text()).split())


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[`*_]", "", text).split()).lower()


@functools.cache
def headings(page: Path) -> list[str]:
    """The page's headings as written (a fenced block's comment lines are not headings)."""
    found, fenced = [], False
    for line in page.read_text().splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            found.append(line.lstrip("#").strip())
    return found


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _page_of(name: str) -> Path:
    return ROOT / ("README.md" if name.startswith("README") else name)


def test_pointers_name_pages_and_sections_that_exist() -> None:
    broken = []
    for path in _sources():
        for match in POINTER.finditer(_flat(path)):
            page = _page_of(match["page"])
            where = f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
            if not page.is_file():
                broken.append(f"{where} (no such page)")
                continue
            section = match["section"] or match["section2"]
            if section and not any(_plain(h).startswith(_plain(section)) for h in headings(page)):
                broken.append(f"{where} (no such section)")
    assert not broken, "\n".join(broken)


def test_markdown_links_resolve() -> None:
    broken = []
    for page in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        for match in LINK.finditer(page.read_text()):
            file, _, anchor = match["target"].partition("#")
            target = (page.parent / file).resolve() if file else page
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {match['target']} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in {slug(h) for h in headings(target)}:
                broken.append(f"{page.relative_to(ROOT)}: {match['target']} (no such heading)")
    assert not broken, "\n".join(broken)


def test_nothing_points_outside_the_repository() -> None:
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}"
             for path in [*_sources(), *sorted(TESTS.rglob("*.py")), *_elsewhere()] if path != Path(__file__)
             for m in OUTSIDE.finditer(_flat(path))]
    assert not found, "point to docs/architecture.md instead:\n" + "\n".join(found)
