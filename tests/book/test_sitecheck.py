"""The checker of the built site (``python tests/sitecheck.py``) on a constructed HTML folder:
one line per finding (page, rule, what), exit status 1 on any, 0 on a clean site, 2 without one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sitecheck

SRC = str(Path(__file__).resolve().parents[2] / "src")
CLEAN = """<html><body><section><h1>Temperature</h1><p>The rank falls as tau falls (tau = 0.001 to 1000),
see <a href="../_static/x.css">the style</a> and /usr/bin in prose.</p>
<div class="cell docutils container"><div class="cell_output docutils container">
<div class="output stream highlight-myst-ansi notranslate"><pre>effective rank 3.2</pre></div></div></div>
<img src="../_images/fig.png"/></section></body></html>"""


def _page(body: str) -> str:
    return f"<html><body><section>{body}</section></body></html>"


def _output(kind: str, text: str) -> str:
    return (
        '<div class="cell docutils container"><div class="cell_output docutils container">'
        f'<div class="output {kind} highlight-myst-ansi notranslate"><div class="highlight"><pre>{text}</pre></div>'
        "</div></div></div>"
    )


@pytest.fixture
def site(tmp_path) -> Path:
    """``<book>/_build/html`` with a clean index and chapter, and one page per fault."""
    book = tmp_path / "book"
    html = book / "_build" / "html"
    (html / "chapters").mkdir(parents=True)
    (html / "_static").mkdir()
    (html / "index.html").write_text(CLEAN)
    (html / "chapters" / "clean.html").write_text(CLEAN)
    (html / "_static" / "ignored.html").write_text(_page(_output("stderr", "not a page")))
    path = f"{book}/src/attnrank/plots/causal.py"
    (html / "chapters" / "causal.html").write_text(
        _page(
            _output("stderr", f"{path}:61: UserWarning: The figure layout has changed to tight\n  fig.tight_layout()")
        )
    )
    (html / "chapters" / "error.html").write_text(
        _page(
            '<div class="cell_output docutils container"><div class="output traceback highlight-ipythontb">'
            "<pre>Traceback (most recent call last):\n  ValueError: bad</pre></div></div>"
        )
    )
    (html / "chapters" / "warned.html").write_text(
        _page(
            _output("stream", "FutureWarning: the default will change")
            + '<div class="system-message"><p class="system-message-title">System Message: WARNING/2</p>'
            "<p>Unknown target name.</p></div>"
        )
    )
    (html / "chapters" / "paths.html").write_text(
        _page(f'<p>stored in {book}/data/runs/gpt2-0123</p><a href="file://{book}/chapters/x.ipynb">x</a>')
    )
    return html


def test_each_rule_finds_its_fault_and_nothing_else(site):
    book = site.parent.parent
    findings = sitecheck.check(site, sitecheck.PRINTED_RULES, roots=sitecheck.machine_paths(site))
    assert findings == [
        f"chapters/causal.html: stderr: stderr output: {book}/src/attnrank/plots/causal.py:61: UserWarning: The figure "
        "layout has changed to tight fig.tight_layout()",
        "chapters/causal.html: warning: warning: UserWarning: The figure layout has changed to tight fig.tight_layout()",
        f"chapters/causal.html: machine-path: machine path in the text: {book}/src/attnrank/plots/causal.py:61:",
        "chapters/error.html: traceback: traceback: Traceback (most recent call last): ValueError: bad",
        f"chapters/paths.html: machine-path: machine path in the text: {book}/data/runs/gpt2-0123",
        f"chapters/paths.html: machine-path: machine path in the link: {book}/chapters/x.ipynb",
        "chapters/warned.html: warning: warning: FutureWarning: the default will change",
        "chapters/warned.html: warning: build message: System Message: WARNING/2 Unknown target name.",
    ]
    assert [r.name for r in sitecheck.PRINTED_RULES] == ["stderr", "traceback", "warning", "machine-path"]
    assert sitecheck.RULES == sitecheck.PRINTED_RULES + sitecheck.BOOK_RULES and len(sitecheck.BOOK_RULES) == 16


def test_the_command_exits_1_with_one_line_per_finding_0_when_clean_2_without_a_site(site, tmp_path):
    def run(folder):
        return subprocess.run(
            [sys.executable, sitecheck.__file__, str(folder), "--rules", "printed"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": SRC, "HOME": str(tmp_path / "home")},
        )

    bad = run(site)
    assert bad.returncode == 1, bad.stderr
    lines = bad.stdout.splitlines()
    assert len(lines) == 8 and all(line.startswith("chapters/") for line in lines)
    assert "sitecheck: 6 pages, 8 finding(s)" in bad.stderr
    for name in ("causal", "error", "warned", "paths"):
        (site / "chapters" / f"{name}.html").unlink()
    clean = run(site)
    assert (clean.returncode, clean.stdout) == (0, ""), clean.stderr
    missing = run(tmp_path / "nowhere")
    assert missing.returncode == 2 and "site_dir:" in missing.stderr and "not a built site" in missing.stderr


def test_rules_are_a_list_of_small_named_functions(site):
    """Another rule is one function: it runs after the others, on every page."""
    added = sitecheck.Rule("title", "a page without a heading", lambda page: [] if page.soup.h1 else ["no <h1>"])
    findings = sitecheck.check(site, rules=[added], roots=())
    assert findings == [f"chapters/{n}.html: title: no <h1>" for n in ("causal", "error", "paths", "warned")]
