"""Checks of the built site: no page shows the reader what the build printed for its author.

``python -m attnrank.sitecheck _build/html`` reads every HTML page of a built book and applies
each rule of :data:`RULES` to it; it prints one line per finding (``page: rule: what``) and
exits with status 1 when there is any, 0 otherwise (2 for a folder that is not a built site).
CI runs it after ``jupyter-book build``.

A rule is a small named function from a :class:`Page` to the findings on it (short texts), in
:data:`RULES` in the order they run; :func:`rule` registers one. The rules:

* ``stderr``: an output block of the standard error stream (a warning, a progress bar, a log
  line printed by a cell);
* ``traceback``: an error's traceback, in an output block or anywhere in the page's text;
* ``warning``: a Python warning (``UserWarning: ...``) in any cell output, or a docutils
  system message (a build warning rendered into the page);
* ``machine-path``: an absolute path of the build machine (the book's folder, the Python
  environment, the home folder, the data folders) in the page's text or in a link.
"""

from __future__ import annotations

import os
import re
import site
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError

__all__ = ["Page", "Rule", "RULES", "rule", "machine_paths", "pages", "check", "main"]


@dataclass
class Page:
    """One HTML page of the site.

    Attributes:
        name: its path relative to the site's folder (``chapters/causal.html``).
        html: the page's source text.
        roots: the build machine's absolute paths that must not appear (:func:`machine_paths`).
    """

    name: str
    html: str
    roots: tuple[str, ...] = ()
    _soup: object = field(default=None, repr=False)

    @property
    def soup(self):
        """The parsed page (``bs4.BeautifulSoup``), parsed once."""
        if self._soup is None:
            from bs4 import BeautifulSoup

            self._soup = BeautifulSoup(self.html, "html.parser")
        return self._soup

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


#: The rules, in the order they run (:func:`rule` appends to it).
RULES: list[Rule] = []


def rule(name: str, description: str):
    """Register the decorated ``check(page) -> findings`` as a rule called ``name``."""

    def register(check):
        RULES.append(Rule(name, description, check))
        return check

    return register


def _excerpt(text: str, width: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


@rule("stderr", "an output block of the standard error stream")
def _stderr(page: Page) -> Iterator[str]:
    for block in page.elements("stderr"):
        yield f"stderr output: {_excerpt(block.get_text(' '))}"


_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")


@rule("traceback", "an error's traceback")
def _traceback(page: Page) -> Iterator[str]:
    blocks = page.elements("traceback")
    for block in blocks:
        yield f"traceback: {_excerpt(block.get_text(' '))}"
    if not blocks and _TRACEBACK.search(page.soup.get_text()):
        yield "traceback: 'Traceback (most recent call last)' in the page"


_WARNING = re.compile(r"\b[A-Z]\w*Warning: \S")


@rule("warning", "a Python warning in a cell output, or a docutils system message")
def _warning(page: Page) -> Iterator[str]:
    for block in page.outputs():
        text = block.get_text(" ")
        for match in _WARNING.finditer(text):
            yield f"warning: {_excerpt(text[match.start() :])}"
    for message in page.elements("system-message"):
        yield f"build message: {_excerpt(message.get_text(' '))}"


@rule("machine-path", "an absolute path of the build machine")
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


def pages(site_dir: Path | str, roots: tuple[str, ...] | None = None) -> Iterator[Page]:
    """Every HTML page of the built site under ``site_dir`` (``_static`` and ``_sources`` left out), sorted."""
    site_dir = Path(site_dir)
    roots = machine_paths(site_dir) if roots is None else roots
    for path in sorted(site_dir.rglob("*.html")):
        rel = path.relative_to(site_dir)
        if rel.parts[0] in ("_static", "_sources"):
            continue
        yield Page(rel.as_posix(), path.read_text(encoding="utf-8", errors="replace"), roots)


def check(site_dir: Path | str, rules: list[Rule] | None = None, roots: tuple[str, ...] | None = None) -> list[str]:
    """The findings of ``rules`` (default :data:`RULES`) on every page: ``"page: rule: what"`` lines.

    Raises:
        ConfigError: naming ``site_dir`` when it is not a folder holding an ``index.html``.
    """
    site_dir = Path(site_dir)
    if not (site_dir / "index.html").is_file():
        raise ConfigError("site_dir", f"{str(site_dir)!r} is not a built site (no index.html); build it first")
    findings = []
    for page in pages(site_dir, roots):
        for r in rules if rules is not None else RULES:
            findings += [f"{page.name}: {r.name}: {what}" for what in r.check(page)]
    return findings


def main(argv: list[str] | None = None) -> int:
    """``python -m attnrank.sitecheck SITE_DIR``: print the findings; exit status 1 when there are any."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m attnrank.sitecheck", description=__doc__.splitlines()[0])
    parser.add_argument("site_dir", nargs="?", default="_build/html", help="the built site (default _build/html)")
    args = parser.parse_args(argv)
    try:
        findings = check(args.site_dir)
    except ConfigError as exc:
        print(f"sitecheck: error: {exc}", file=sys.stderr)
        return 2
    for line in findings:
        print(line)
    n = sum(1 for _ in pages(args.site_dir, ()))
    print(f"sitecheck: {n} pages, {len(findings)} finding(s) ({', '.join(r.name for r in RULES)})", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
