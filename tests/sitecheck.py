"""Checks of the built site: every page reads as a book, and none shows what the build printed for its author.

``python tests/sitecheck.py _build/html`` reads every HTML page of a built book and applies each
rule to it; it prints one line per finding (``page: rule: what``) and exits with status 1 when there
is any, 0 otherwise (2 for a folder that is not a built site). CI runs it after ``jupyter-book build``.
``--rules printed`` or ``--rules book`` runs one of the two lists only.

A rule is a small named function from a :class:`Page` to its findings (short texts). The rules come
in two lists, in the order they run.

:data:`PRINTED_RULES`, what the build printed (:func:`printed_rule` registers one):

* ``stderr``: an output block of the standard error stream (a warning, a progress bar, a log
  line printed by a cell);
* ``traceback``: an error's traceback, in an output block or anywhere in the page's text;
* ``warning``: a Python warning (``UserWarning: ...``) in any cell output, or a docutils
  system message (a build warning rendered into the page);
* ``machine-path``: an absolute path of the build machine (the book's folder, the Python
  environment, the home folder, the data folders) in the page's text or in a link.

:data:`BOOK_RULES`, the page reads as a book (:func:`book_rule`; not run on the search page and the
general index):

* ``visible-code``: a code cell whose input the page shows (set-up, parameter checks and the one
  call of a chapter are removed or folded: ``remove-cell``, ``remove-input``, ``hide-input``);
* ``raw-maths``: TeX shown as typed (``$d_h$`` pasted as text, where no formula is rendered);
* ``ascii-maths``: maths typed in ASCII where the book writes a symbol (``tau = 1``, ``+-``, ``sqrt(d_h)``,
  ``d_h``; :data:`attnrank.words.typeset.ASCII_MATHS`, which :func:`attnrank.words.typeset.typeset` turns into symbols);
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

import os
import re
import site
import struct
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from attnrank.core.errors import ConfigError
from attnrank.words.typeset import ASCII_MATHS

__all__ = [
    "Page",
    "Rule",
    "PRINTED_RULES",
    "BOOK_RULES",
    "RULES",
    "RULE_LISTS",
    "printed_rule",
    "book_rule",
    "machine_paths",
    "pages",
    "check",
    "main",
    "COLUMN_PX",
    "TIMING_PAGES",
]

#: The text column's width in CSS pixels at a 1280-pixel window (:data:`attnrank.book.COLUMN_PX`).
COLUMN_PX = 688
#: Pages where run times are the subject (the build's times and the runs' training times).
TIMING_PAGES = ("chapters/reproducibility.html",)
#: Pages of the theme, not of the book: the book rules skip them.
THEME_PAGES = ("search.html", "genindex.html")


@dataclass
class Page:
    """One HTML page of the site.

    Attributes:
        name: its path relative to the site's folder (``chapters/causal.html``).
        html: the page's source text.
        site: the site's folder (the rules that follow a link to a file need it; ``None`` skips them).
        roots: the build machine's absolute paths that must not appear (:func:`machine_paths`).
    """

    name: str
    html: str
    site: Path | None = None
    roots: tuple[str, ...] = ()
    _soup: object = field(default=None, repr=False)

    @property
    def soup(self):
        """The parsed page (``bs4.BeautifulSoup``), parsed once."""
        if self._soup is None:
            from bs4 import BeautifulSoup

            self._soup = BeautifulSoup(self.html, "html.parser")
        return self._soup

    @property
    def article(self):
        """The page's article (the book's text, without the theme's navigation)."""
        return self.soup.find("article") or self.soup

    @property
    def is_chapter(self) -> bool:
        return self.name.startswith("chapters/")

    def elements(self, css_class: str):
        """Elements whose ``class`` attribute holds ``css_class``."""
        return self.soup.find_all(class_=lambda c: c is not None and css_class in c.split())

    def outputs(self):
        """The cell output blocks (myst-nb's ``cell_output`` containers)."""
        return self.elements("cell_output")


@dataclass(frozen=True)
class Rule:
    """A named check: ``check(page)`` yields one short text per finding."""

    name: str
    description: str
    check: Callable[[Page], Iterable[str]]
    #: ``False`` for the book rules: they skip the theme's pages (:data:`THEME_PAGES`).
    theme_pages: bool = True

    def findings(self, page: Page) -> list[str]:
        """``check(page)``, or nothing on a theme page for a rule that skips them."""
        if not self.theme_pages and page.name in THEME_PAGES:
            return []
        return list(self.check(page))


#: What the build printed, in the order the rules run (:func:`printed_rule` appends to it).
PRINTED_RULES: list[Rule] = []
#: The page reads as a book, in the order the rules run (:func:`book_rule` appends to it).
BOOK_RULES: list[Rule] = []


def printed_rule(name: str, description: str):
    """Register the decorated ``check(page) -> findings`` as the printed-output rule ``name``."""

    def register(check):
        PRINTED_RULES.append(Rule(name, description, check))
        return check

    return register


def book_rule(name: str, description: str):
    """Register the decorated ``check(page) -> findings`` as the book rule ``name``."""

    def register(check):
        BOOK_RULES.append(Rule(name, description, check, theme_pages=False))
        return check

    return register


# --------------------------------------------------------------------------- what the build printed


def _excerpt(text: str, width: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


@printed_rule("stderr", "an output block of the standard error stream")
def _stderr(page: Page) -> Iterator[str]:
    for block in page.elements("stderr"):
        yield f"stderr output: {_excerpt(block.get_text(' '))}"


_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")


@printed_rule("traceback", "an error's traceback")
def _traceback(page: Page) -> Iterator[str]:
    blocks = page.elements("traceback")
    for block in blocks:
        yield f"traceback: {_excerpt(block.get_text(' '))}"
    if not blocks and _TRACEBACK.search(page.soup.get_text()):
        yield "traceback: 'Traceback (most recent call last)' in the page"


_WARNING = re.compile(r"\b[A-Z]\w*Warning: \S")


@printed_rule("warning", "a Python warning in a cell output, or a docutils system message")
def _warning(page: Page) -> Iterator[str]:
    for block in page.outputs():
        text = block.get_text(" ")
        for match in _WARNING.finditer(text):
            yield f"warning: {_excerpt(text[match.start() :])}"
    for message in page.elements("system-message"):
        yield f"build message: {_excerpt(message.get_text(' '))}"


@printed_rule("machine-path", "an absolute path of the build machine")
def _machine_path(page: Page) -> Iterator[str]:
    text = page.soup.get_text(" ")
    links = " ".join(
        str(v) for tag in page.soup.find_all(True) for k, v in tag.attrs.items() if k in ("href", "src", "data")
    )
    seen = set()
    for root in page.roots:
        for where, haystack in (("text", text), ("link", links)):
            for match in re.finditer(re.escape(root) + r"(?=[/\\\s\"'<)]|$)", haystack):
                found = re.match(r"[^\s\"'<>)]*", haystack[match.start() :]).group(0)
                if (where, found) not in seen:
                    seen.add((where, found))
                    yield f"machine path in the {where}: {_excerpt(found)}"
    for a in page.soup.find_all("a", class_="figure-data") if page.site is not None else ():
        target = ((page.site / page.name).parent / a["href"]).resolve()
        data = target.read_text(encoding="utf-8", errors="replace") if target.is_file() else ""
        for root in (r for r in page.roots if r in data):
            yield f"machine path in the data file {a['href']}: {_excerpt(root)}"


def machine_paths(site_dir: Path | str | None = None) -> tuple[str, ...]:
    """The absolute paths of this machine that no page may show, longest first.

    The book's folder (the parent of ``_build`` when ``site_dir`` is ``<book>/_build/html``), the
    working directory, the Python environment (``sys.prefix``, ``sys.base_prefix``, the
    site-packages folders), the home folder, and ``ATTNRANK_DATA`` / ``ATTNRANK_RUNS`` when set;
    ``/`` itself and paths of one component (``/usr``, ``/root``... are kept only when they are
    the home folder or the book) are left out so that ordinary prose is not flagged.
    """
    roots: set[str] = set()
    if site_dir is not None:
        site_dir = Path(site_dir).resolve()
        roots.add(str(site_dir))
        if site_dir.parent.name == "_build":
            roots.add(str(site_dir.parent.parent))
    roots |= {os.getcwd(), sys.prefix, sys.base_prefix, str(Path.home())}
    try:
        roots |= set(site.getsitepackages()) | {site.getusersitepackages()}
    except AttributeError:  # pragma: no cover (virtualenv's old site module)
        pass
    for name in ("ATTNRANK_DATA", "ATTNRANK_RUNS"):
        value = os.environ.get(name)
        if value and os.path.isabs(value):
            roots.add(value)
    keep = {str(Path.home()).rstrip("/")}
    out = set()
    for r in (r.rstrip("/") for r in roots):
        if r and (r.count("/") >= 2 or r in keep):
            out.add(r)
    return tuple(sorted(out, key=lambda r: (-len(r), r)))


# --------------------------------------------------------------------------- the page reads as a book


def _classes(tag) -> list[str]:
    return tag.get("class") or []


def _text(tag, limit: int = 60) -> str:
    return " ".join(tag.get_text(" ", strip=True).split())[:limit]


@book_rule("visible-code", "a code cell whose input is shown")
def _visible_code(page: Page):
    for cell in page.article.find_all("div", class_="cell_input"):
        if cell.find_parent("details") is None:
            yield f"code cell shown: {_text(cell)!r}"


_REPR = re.compile(r"""^\s*(?:'[^'\n]*'|"[^"\n]*"|<[A-Za-z_.]+ object(?: at 0x[0-9a-f]+)?>)\s*$""")


@book_rule("raw-repr", "a value shown as its Python representation")
def _raw_repr(page: Page):
    for out in page.article.find_all("div", class_="cell_output"):
        for pre in out.find_all("pre"):
            text = pre.get_text()
            if _REPR.match(text) or "<IPython.core.display." in text:
                yield f"representation shown: {text.strip()[:60]!r}"


#: TeX left in the text: ``$...$`` (dollar maths outside a maths element) or a literal ``\(`` delimiter.
_RAW_MATH = re.compile(r"\$[^$\s][^$\n]{0,80}?(?<!\s)\$(?!\d)|\\\(|\\\)")  # "$3 and $4" is money (Pandoc's rule)


@book_rule("raw-maths", "TeX shown as typed: $...$ or \\( ... \\) outside a rendered formula")
def _raw_maths(page: Page):
    for node in page.article.find_all(string=_RAW_MATH):
        if node.find_parent(["script", "style", "pre", "code"]) or node.find_parent(class_="math"):
            continue
        for m in _RAW_MATH.finditer(str(node)):
            yield f"unrendered maths {m.group(0)!r} in {_text(node.parent)!r}"


#: ASCII maths the page check reports beyond :data:`attnrank.words.typeset.ASCII_MATHS` (which :func:`typeset` can rewrite
#: blindly; these need a writer): a Greek letter spelled as a word (``tau``, ``beta``, ``rho``, ``sigma``), a
#: hyphen-minus as the sign of a number (``x = -35``, ``[-0.5, 0.3]``; not a range such as ``2-5`` nor a name
#: such as ``GPT-2``) and Python's e-notation (``7.9e+05``, ``1.6e-06``; the book writes ``7.9×10⁵``). The
#: Greek words are reported everywhere; the other two in prose and captions (outside tables, whose number
#: formats are the table's own).
SITE_ASCII_MATHS = (re.compile(r"(?<![\\\w-])(?:tau|beta|rho|sigma)(?![\w(-])"),)
PROSE_ASCII_MATHS = (
    re.compile(r"(?:^|(?<=[\s(\[=,;:<>]))-(?=\.?\d)"),
    re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+\-\u2212]?\d{2,}\b"),
)


@book_rule("ascii-maths", "maths typed in ASCII (tau = 1, +-, sqrt(d_h), d_h, -35, 7.9e+05) where a symbol belongs")
def _ascii_maths(page: Page):
    for node in page.article.find_all(string=True):
        if node.find_parent(["script", "style", "pre", "code", "kbd", "samp"]) or node.find_parent(class_="math"):
            continue
        patterns = [p for p, _ in ASCII_MATHS] + list(SITE_ASCII_MATHS)
        if node.find_parent("table") is None:
            patterns += PROSE_ASCII_MATHS
        for pattern in patterns:
            for m in pattern.finditer(str(node)):
                yield f"ASCII maths {m.group(0)!r} in {_text(node.parent)!r}"


@book_rule("index-column", "a table with an index column")
def _index_column(page: Page):
    for table in page.article.find_all("table"):
        head = table.find("thead")
        first = head.find(["th", "td"]) if head else None
        if first is not None and not first.get_text(strip=True) and len(head.find_all(["th", "td"])) > 1:
            yield f"index column in a table with headers {_text(head)!r}"
        elif table.find("tbody") and table.find("tbody").find("th"):
            yield f"row headers (an index) in a table starting {_text(table)!r}"


_CODE_NAME = re.compile(r"^[a-z]+(?:_[a-z0-9]+)+$")


@book_rule("code-header", "a table header written as a Python name")
def _code_header(page: Page):
    for th in page.article.find_all("th"):
        text = th.get_text(strip=True)
        if _CODE_NAME.match(text):
            yield f"header {text!r}"


#: A count of zero written as the digit ("of which 0 diverged", "0 runs"), which the book writes as words
#: ("none diverged"), so that one template cannot print "0 diverged" beside "no run diverged".
_ZERO_COUNT = re.compile(
    r"\bof which 0\b|(?<![\w.,\u2212-])0 (?:runs?|seeds?|settings?|claims?|verdicts?|models?|heads?|diverged|failed)\b"
)


@book_rule("zero-count", "a count of zero written as the digit in prose (write none or no)")
def _zero_count(page: Page):
    for node in page.article.find_all(string=True):
        if node.find_parent(["script", "style", "pre", "code", "table"]) or node.find_parent(class_="math"):
            continue
        for m in _ZERO_COUNT.finditer(str(node)):
            yield f"zero count {m.group(0)!r} in {_text(node.parent)!r}"


#: A machine identifier in prose: a measure's or a config field's name in code (``rank_atol_1e-8``, ``head_dim``), a
#: verdict's key (``verdict temp``), a profile or device as code names it (``ci sizes``, ``on cpu``), a corpus by its
#: setting (``the corpus shakespeare``). Prose names them as a reader knows them (attnrank.words.glossary).
_MACHINE_WORDS = re.compile(
    r"\b(?:rank_(?:atol|rtol)_1e-\d|effective_rank|stable_rank|attention_entropy|head_dim|num_heads|hidden_size"
    r"|max_len|verdict (?:temp|dynamics|loss|headdim|causal|target|measure|protocol|theory)\b|ci sizes|on cpu\b"
    r"|corpus shakespeare|corpus stdlib|trained on (?:shakespeare|stdlib)\b)"
)


@book_rule("machine-identifier", "a name from the code in prose (a measure, a config field, a verdict key)")
def _machine_identifier(page: Page):
    # read block by block, so that a pasted value is read with the words around it ("trained on <span>shakespeare")
    for block in page.article.find_all(["p", "li", "dt", "dd", "h1", "h2", "h3", "h4"]):
        if block.find_parent("table") or block.find(["p", "li"]):
            continue
        text = "".join(
            str(node)
            for node in block.find_all(string=True)
            if not node.find_parent(["script", "style", "pre", "code"]) and not node.find_parent(class_="math")
        )
        for m in _MACHINE_WORDS.finditer(text):
            yield f"machine identifier {m.group(0)!r} in {_text(block)!r}"


#: An interval of no width ("[0.25, 0.25]"): the book writes "0.25 in every resample" (attnrank.words.glossary.fmt_estimate).
_POINT_INTERVAL = re.compile(r"\[([\u2212-]?\d[\d.,×⁰¹²³⁴⁵⁶⁷⁸⁹⁻]*%?), \1\]")


@book_rule("point-interval", "an interval of no width written as an interval ([a, a])")
def _point_interval(page: Page):
    for m in _POINT_INTERVAL.finditer(page.article.get_text(" ")):
        yield f"interval of no width {m.group(0)!r}"


_TIMING = re.compile(
    r"\b(?:computed|ran|run|trained|took|probed|executed|in)\b[^.\n]{0,60}?\b\d+(?:\.\d+)?\s?(?:s|seconds|sec)\b",
    re.IGNORECASE,
)


@book_rule("printed-timing", "a run time printed outside the reproducibility chapter")
def _printed_timing(page: Page):
    if page.name in TIMING_PAGES:
        return
    for m in _TIMING.finditer(page.article.get_text(" ")):
        yield f"timing {m.group(0)[:60]!r}"


@book_rule("alt-text", "an image without alt text, or with its file name as alt text")
def _alt_text(page: Page):
    for img in page.article.find_all("img"):
        alt, src = (img.get("alt") or "").strip(), img.get("src", "")
        name = src.rsplit("/", 1)[-1]
        if not alt or alt == src or alt.endswith((".png", ".svg", ".jpg")) or name in alt:
            yield f"image {name!r} has alt text {alt!r}"


@book_rule("unnumbered-figure", "a figure of a chapter without a numbered caption")
def _unnumbered(page: Page):
    if not page.is_chapter:
        return
    for img in page.article.find_all("img"):
        fig = img.find_parent("figure")
        if fig is None or fig.find(class_="caption-number") is None:
            yield f"image {img.get('src', '').rsplit('/', 1)[-1]!r} is not a numbered figure"


@book_rule("unnumbered-table", "a table without a numbered caption")
def _unnumbered_table(page: Page):
    for table in page.article.find_all("table"):
        numbered = table.find_parent("div", class_="numbered-table") or table.find("caption")
        numbered = numbered or table.find_parent("figure")  # a table inside a figure (the explorer's) is the figure's
        if numbered is None or numbered.find(class_="caption-number") is None:
            yield f"table starting {_text(table)!r} is not numbered"


def _png_width(path: Path) -> int | None:
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">I", head[16:20])[0]


@book_rule("shrunk-figure", "an image wider than the text column (the browser shrinks it and its type)")
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


@book_rule("inline-data", "data inlined as a data: link")
def _inline_data(page: Page):
    for a in page.soup.find_all("a", href=True):
        if a["href"].startswith("data:"):
            yield f"inline data link {_text(a)!r}"


@book_rule("missing-data", "a link to a figure's data file the site does not hold")
def _missing_data(page: Page):
    if page.site is None:
        return
    for a in page.article.find_all("a", class_="figure-data"):
        target = ((page.site / page.name).parent / a["href"]).resolve()
        if not target.is_file():
            yield f"data link {a['href']!r} points to no file"


#: Every rule: the printed-output rules, then the book rules.
RULES: list[Rule] = [*PRINTED_RULES, *BOOK_RULES]
#: The lists ``--rules`` chooses from.
RULE_LISTS = {"all": RULES, "printed": PRINTED_RULES, "book": BOOK_RULES}


# --------------------------------------------------------------------------- the runner


def pages(site_dir: Path | str, roots: tuple[str, ...] | None = None) -> Iterator[Page]:
    """Every HTML page of the built site under ``site_dir`` (``_static`` and ``_sources`` left out), sorted."""
    site_dir = Path(site_dir)
    roots = machine_paths(site_dir) if roots is None else roots
    for path in sorted(site_dir.rglob("*.html")):
        rel = path.relative_to(site_dir)
        if rel.parts[0] in ("_static", "_sources"):
            continue
        yield Page(rel.as_posix(), path.read_text(encoding="utf-8", errors="replace"), site_dir, roots)


def check(site_dir: Path | str, rules: Iterable[Rule] | None = None, roots: tuple[str, ...] | None = None) -> list[str]:
    """The findings of ``rules`` (default :data:`RULES`) on every page: ``"page: rule: what"`` lines.

    Raises:
        ConfigError: naming ``site_dir`` when it is not a folder holding an ``index.html``.
    """
    site_dir = Path(site_dir)
    if not (site_dir / "index.html").is_file():
        raise ConfigError("site_dir", f"{str(site_dir)!r} is not a built site (no index.html); build it first")
    rules = list(RULES if rules is None else rules)
    return [
        f"{page.name}: {r.name}: {what}" for page in pages(site_dir, roots) for r in rules for what in r.findings(page)
    ]


def main(argv: list[str] | None = None) -> int:
    """``python tests/sitecheck.py [SITE_DIR] [--rules all|printed|book]``: print the findings;
    exit status 1 when there are any, 2 for a folder that is not a built site."""
    import argparse

    parser = argparse.ArgumentParser(prog="python tests/sitecheck.py", description=__doc__.splitlines()[0])
    parser.add_argument("site_dir", nargs="?", default="_build/html", help="the built site (default _build/html)")
    parser.add_argument("--rules", choices=tuple(RULE_LISTS), default="all", help="the rules to run (default all)")
    args = parser.parse_args(argv)
    rules = RULE_LISTS[args.rules]
    try:
        findings = check(args.site_dir, rules)
    except ConfigError as exc:
        print(f"sitecheck: error: {exc}", file=sys.stderr)
        return 2
    for line in findings:
        print(line)
    n = sum(1 for _ in pages(args.site_dir, ()))
    print(f"sitecheck: {n} pages, {len(findings)} finding(s) ({', '.join(r.name for r in rules)})", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
