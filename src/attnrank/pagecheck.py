"""Checks of the built site: every page reads as a book.

``python -m attnrank.pagecheck _build/html`` reads every HTML page of a built book and applies each
rule of :data:`RULES` to it; it prints one line per finding (``page: rule: what``) and exits with
status 1 when there is any, 0 otherwise (2 for a folder that is not a built site). CI runs it after
``jupyter-book build``, beside :mod:`attnrank.sitecheck`'s checks of what the build printed.

A rule is a small named function from a :class:`Page` to its findings (short texts), registered in
:data:`RULES` by :func:`rule`. The rules:

* ``visible-code``: a code cell whose input the page shows (set-up, parameter checks and the one
  call of a chapter are removed or folded: ``remove-cell``, ``remove-input``, ``hide-input``);
* ``raw-repr``: the Python representation of a value instead of the value (a quoted string, an
  ``<IPython.core.display...>`` object);
* ``index-column``: a table with an index column (an empty first header cell or row headers);
* ``code-header``: a table header written as a Python name (``final_val_loss``);
* ``printed-timing``: a run time printed in the argument ("computed in 82.4 s"); the
  reproducibility chapter is where timings belong;
* ``alt-text``: an image without alt text, or whose alt text is its file's name;
* ``unnumbered-figure``: a figure of a chapter without a numbered caption;
* ``shrunk-figure``: an image wider than the text column, so the browser shrinks it and its type;
* ``inline-data``: data inlined as a ``data:`` link instead of a file with its own address;
* ``missing-data``: a link to a figure's data file that the site does not hold.
"""

from __future__ import annotations

import re
import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bs4 import BeautifulSoup

__all__ = ["Page", "Rule", "RULES", "rule", "pages", "check", "main", "COLUMN_PX", "TIMING_PAGES"]

#: The text column's width in CSS pixels at a 1280-pixel window (:data:`attnrank.book.COLUMN_PX`).
COLUMN_PX = 688
#: Pages where run times are the subject (the build's times and the runs' training times).
TIMING_PAGES = ("chapters/reproducibility.html",)


@dataclass
class Page:
    """One HTML page of the site: ``name`` relative to the site's folder, its ``html`` and the site's folder."""

    name: str
    html: str
    site: Path | None = None
    _soup: object = field(default=None, repr=False)

    @property
    def soup(self) -> BeautifulSoup:
        if self._soup is None:
            self._soup = BeautifulSoup(self.html, "html.parser")
        return self._soup

    @property
    def article(self):
        """The page's article (the book's text, without the theme's navigation)."""
        return self.soup.find("article") or self.soup

    @property
    def is_chapter(self) -> bool:
        return self.name.startswith("chapters/")


@dataclass(frozen=True)
class Rule:
    """A named check: ``check(page)`` yields one short text per finding."""

    name: str
    description: str
    check: Callable[[Page], Iterable[str]]


#: The rules, in the order they run.
RULES: list[Rule] = []


def rule(name: str, description: str):
    """Register the decorated ``check(page) -> Iterable[str]`` as the rule ``name``."""

    def register(fn):
        RULES.append(Rule(name, description, fn))
        return fn

    return register


def _classes(tag) -> list[str]:
    return tag.get("class") or []


def _text(tag, limit: int = 60) -> str:
    return " ".join(tag.get_text(" ", strip=True).split())[:limit]


@rule("visible-code", "a code cell whose input is shown")
def _visible_code(page: Page):
    for cell in page.article.find_all("div", class_="cell_input"):
        if cell.find_parent("details") is None:
            yield f"code cell shown: {_text(cell)!r}"


_REPR = re.compile(r"""^\s*(?:'[^'\n]*'|"[^"\n]*"|<[A-Za-z_.]+ object(?: at 0x[0-9a-f]+)?>)\s*$""")


@rule("raw-repr", "a value shown as its Python representation")
def _raw_repr(page: Page):
    for out in page.article.find_all("div", class_="cell_output"):
        for pre in out.find_all("pre"):
            text = pre.get_text()
            if _REPR.match(text) or "<IPython.core.display." in text:
                yield f"representation shown: {text.strip()[:60]!r}"


@rule("index-column", "a table with an index column")
def _index_column(page: Page):
    for table in page.article.find_all("table"):
        head = table.find("thead")
        first = head.find(["th", "td"]) if head else None
        if first is not None and not first.get_text(strip=True) and len(head.find_all(["th", "td"])) > 1:
            yield f"index column in a table with headers {_text(head)!r}"
        elif table.find("tbody") and table.find("tbody").find("th"):
            yield f"row headers (an index) in a table starting {_text(table)!r}"


_CODE_NAME = re.compile(r"^[a-z]+(?:_[a-z0-9]+)+$")


@rule("code-header", "a table header written as a Python name")
def _code_header(page: Page):
    for th in page.article.find_all("th"):
        text = th.get_text(strip=True)
        if _CODE_NAME.match(text):
            yield f"header {text!r}"


_TIMING = re.compile(
    r"\b(?:computed|ran|run|trained|took|probed|executed|in)\b[^.\n]{0,60}?\b\d+(?:\.\d+)?\s?(?:s|seconds|sec)\b",
    re.IGNORECASE,
)


@rule("printed-timing", "a run time printed outside the reproducibility chapter")
def _printed_timing(page: Page):
    if page.name in TIMING_PAGES:
        return
    for m in _TIMING.finditer(page.article.get_text(" ")):
        yield f"timing {m.group(0)[:60]!r}"


@rule("alt-text", "an image without alt text, or with its file name as alt text")
def _alt_text(page: Page):
    for img in page.article.find_all("img"):
        alt, src = (img.get("alt") or "").strip(), img.get("src", "")
        name = src.rsplit("/", 1)[-1]
        if not alt or alt == src or alt.endswith((".png", ".svg", ".jpg")) or name in alt:
            yield f"image {name!r} has alt text {alt!r}"


@rule("unnumbered-figure", "a figure of a chapter without a numbered caption")
def _unnumbered(page: Page):
    if not page.is_chapter:
        return
    for img in page.article.find_all("img"):
        fig = img.find_parent("figure")
        if fig is None or fig.find(class_="caption-number") is None:
            yield f"image {img.get('src', '').rsplit('/', 1)[-1]!r} is not a numbered figure"


def _png_width(path: Path) -> int | None:
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">I", head[16:20])[0]


@rule("shrunk-figure", "an image wider than the text column (the browser shrinks it and its type)")
def _shrunk(page: Page):
    if page.site is None:
        return
    for img in page.article.find_all("img"):
        src = img.get("src", "")
        if src.startswith(("http", "data:")) or not src.endswith(".png"):
            continue
        shown = img.get("width")
        style = re.search(r"(?:^|;)\s*width:\s*([0-9.]+)px", img.get("style", ""))
        if shown is None and style:
            shown = style.group(1)
        if shown is None:
            natural = _png_width((page.site / page.name).parent / src)
            shown = natural if natural is not None else 0
        if int(float(str(shown).rstrip("px"))) > COLUMN_PX:
            yield f"image {src.rsplit('/', 1)[-1]!r} is {shown} px wide, more than the {COLUMN_PX} px column"


@rule("inline-data", "data inlined as a data: link")
def _inline_data(page: Page):
    for a in page.soup.find_all("a", href=True):
        if a["href"].startswith("data:"):
            yield f"inline data link {_text(a)!r}"


@rule("missing-data", "a link to a figure's data file the site does not hold")
def _missing_data(page: Page):
    if page.site is None:
        return
    for a in page.article.find_all("a", class_="figure-data"):
        target = ((page.site / page.name).parent / a["href"]).resolve()
        if not target.is_file():
            yield f"data link {a['href']!r} points to no file"


def pages(site: Path | str) -> list[Page]:
    """Every HTML page of the built ``site`` (``_build/html``), sorted by name; not the search page,
    the genindex or the theme's templates."""
    site = Path(site)
    out = []
    for path in sorted(site.rglob("*.html")):
        name = path.relative_to(site).as_posix()
        if name.startswith(("_static/", "_sources/")) or name in ("search.html", "genindex.html"):
            continue
        out.append(Page(name, path.read_text(errors="replace"), site))
    return out


def check(site: Path | str, rules: Iterable[Rule] = RULES) -> list[str]:
    """``page: rule: finding`` for every finding of ``rules`` on every page of ``site``."""
    rules = list(rules)
    return [f"{p.name}: {r.name}: {f}" for p in pages(site) for r in rules for f in r.check(p)]


def main(argv=None) -> int:
    """``python -m attnrank.pagecheck SITE``: print the findings; exit 1 if any, 2 for no built site."""
    argv = sys.argv[1:] if argv is None else argv
    site = Path(argv[0] if argv else "_build/html")
    if not (site / "index.html").exists() and not list(site.rglob("*.html")):
        print(f"attnrank.pagecheck: {site} is not a built site", file=sys.stderr)
        return 2
    findings = check(site)
    for line in findings:
        print(line)
    print(f"{len(pages(site))} pages, {len(RULES)} rules, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
