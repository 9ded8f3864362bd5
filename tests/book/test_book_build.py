"""The book's Sphinx extension on a two-page fixture book: no page shows a stale or missing value.

Each test builds a tiny book (one notebook that glues a value computed by the library from
the environment, one Markdown page that pastes it) with ``jupyter-book build``, against a
copy of the library in a temporary folder, so that the library can be edited.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

SRC = Path(__file__).resolve().parents[2] / "src" / "attnrank"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

ROOT = Path(__file__).resolve().parents[2]


def fixture_config(execute: str) -> str:
    """The book's own ``_config.yml`` (extensions, Sphinx settings, execution), for a fixture book."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    keep = {k: config[k] for k in ("title", "only_build_toc_files", "execute", "parse", "sphinx") if k in config}
    keep["execute"] = {**keep.get("execute", {}), "execute_notebooks": execute, "timeout": 120}
    keep["sphinx"]["config"] = {k: v for k, v in keep["sphinx"].get("config", {}).items() if not k.startswith("bibtex")}
    return yaml.safe_dump(keep)


TOC = """\
format: jb-book
root: intro
chapters:
  - file: nb
"""

INTRO = """\
# Intro

Pasted: {glue:text}`nb.ipynb::value:s`.

$$
\\tau = \\frac{T}{\\sqrt{d}}
$$
"""


def _notebook(code: str, markdown: str) -> str:
    cells = [
        {
            "cell_type": "code",
            "metadata": {"tags": ["parameters"]},
            "source": 'profile = "auto"',
            "outputs": [],
            "execution_count": None,
        },
        {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "metadata": {}, "source": markdown},
    ]
    return json.dumps(
        {
            "cells": [{"id": f"c{i}", **c} for i, c in enumerate(cells)],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


NB_CODE = (
    "import os\n"
    "from attnrank import book; from attnrank.words import glossary\n"
    "from attnrank.core.profiles import resolve_profile\n"
    "book.glue('value', f\"{resolve_profile('auto')} {glossary.fmt(1 / 3)}\")"
)
NB_MD = "# Notebook\n\nShown: {glue:text}`value:s`."


def make_book(tmp_path: Path, execute: str = "cache", notebook: str | None = None, intro: str = INTRO) -> dict:
    """A fixture book in ``tmp_path/book`` and a copy of the library in ``tmp_path/lib``; returns the environment."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "_config.yml").write_text(fixture_config(execute))
    (book / "_toc.yml").write_text(TOC)
    (book / "intro.md").write_text(intro)
    (book / "nb.ipynb").write_text(notebook or _notebook(NB_CODE, NB_MD))
    shutil.copytree(SRC, tmp_path / "lib" / "attnrank", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNRANK_")}
    env.update(
        PYTHONPATH=str(tmp_path / "lib"),
        ATTNRANK_DATA=str(tmp_path / "data"),
        ATTNRANK_PROFILE="ci",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    return env


def build(tmp_path: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(JUPYTER_BOOK), "build", str(tmp_path / "book")], env=env, capture_output=True, text=True, timeout=600
    )


def shown(tmp_path: Path) -> tuple[str, str]:
    """The value as pasted on the Markdown page and as shown on the notebook page."""
    html = tmp_path / "book" / "_build" / "html"
    intro = re.search(r"Pasted: (.*?)\.</p>", (html / "intro.html").read_text())
    nb = re.search(r"Shown: (.*?)\.</p>", (html / "nb.html").read_text())
    text = lambda m: re.sub(r"<[^>]+>", "", m.group(1)) if m else None
    return text(intro), text(nb)


def executed(result: subprocess.CompletedProcess) -> bool:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return "Executing notebook" in result.stdout + result.stderr


def test_a_library_change_re_executes_and_refreshes_every_page(tmp_path):
    """Editing the library (a formatting default) re-executes the chapter and refreshes the page
    that pastes its value; reverting serves the earlier outputs; an unchanged rebuild executes
    nothing; editing the chapter refreshes the page that pastes its value.

    Guarantee (docs/guarantees.md): "The book never shows outputs made under other inputs."
    """
    env = make_book(tmp_path)
    assert executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")

    assert not executed(build(tmp_path, env))  # nothing changed
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")

    book_py = tmp_path / "lib" / "attnrank" / "words" / "glossary.py"
    original = book_py.read_text()
    assert "def fmt(x, digits: int = 2," in original
    book_py.write_text(original.replace("def fmt(x, digits: int = 2,", "def fmt(x, digits: int = 3,"))
    assert executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.333", "ci 0.333")

    book_py.write_text(original)
    assert not executed(build(tmp_path, env))  # served from the cache of the original library
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")

    nb = tmp_path / "book" / "nb.ipynb"
    nb.write_text(nb.read_text().replace("1 / 3", "2 / 3"))
    assert executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.67", "ci 0.67")


def test_a_profile_switch_re_executes_and_switching_back_serves_that_profiles_outputs(tmp_path):
    """``ATTNRANK_PROFILE`` is in the execution cache key: a switch re-executes and refreshes every
    page, and switching back serves the first profile's outputs, never the other's.

    Guarantee (docs/guarantees.md): "The book never shows outputs made under other inputs."
    """
    env = make_book(tmp_path)
    assert executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")
    assert executed(build(tmp_path, {**env, "ATTNRANK_PROFILE": "quick"}))
    assert shown(tmp_path) == ("quick 0.33", "quick 0.33")
    assert not executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")


def test_a_pasted_value_no_cell_provides_fails_the_build_and_shows(tmp_path):
    """A glued key that no cell provides fails a plain ``jupyter-book build`` (no -W), again on an
    unchanged rebuild, and the page shows a marker instead of a blank.

    Guarantee (docs/guarantees.md): "No blank numbers."
    """
    env = make_book(tmp_path, execute="off")  # the notebook is not executed: it provides no glue
    for _ in range(2):
        result = build(tmp_path, env)
        assert result.returncode != 0
        out = result.stdout + result.stderr
        assert "2 pasted value(s) are provided by no cell" in out
        assert "'value' is not provided by any cell of 'nb'" in out
    html = (tmp_path / "book" / "_build" / "html" / "intro.html").read_text()
    assert "[missing value: nb::value]" in html
    log = (tmp_path / "data" / "build_log.csv").read_text().splitlines()
    assert [row.rsplit(",", 1)[1] for row in log[1:]] == ["error", "error"]  # one row per failed build


def test_formulas_are_rendered_by_a_local_mathjax(tmp_path):
    """The built pages load MathJax from the site itself (no CDN), and the file is there.

    Guarantee (docs/guarantees.md): "Formulas offline."
    """
    env = make_book(
        tmp_path,
        execute="off",
        intro=INTRO.replace("Pasted: {glue:text}`nb.ipynb::value:s`.", ""),
        notebook=_notebook("x = 1", "# Notebook"),
    )
    result = build(tmp_path, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    html = tmp_path / "book" / "_build" / "html"
    scripts = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', (html / "intro.html").read_text(), flags=re.I)
    assert scripts, "no MathJax script on a page with a formula"
    for src in scripts:
        assert "://" not in src and not src.startswith("//"), src
        assert (html / src.split("?")[0]).is_file(), src
    # only what a page loads is copied: the combined component, its fonts, the TeX extensions it autoloads
    mathjax = html / "_static" / "mathjax"
    assert (mathjax / "tex-chtml.js").is_file() and (mathjax / "output" / "chtml" / "fonts" / "tex.js").is_file()
    assert not (mathjax / "tex-svg-full.js").exists() and not (mathjax / "sre").exists()
    assert not list((html / "_static").rglob("*.map"))  # no source maps ship
    assert sum(f.stat().st_size for f in mathjax.rglob("*") if f.is_file()) < 5e6


def test_profile_table_settings_and_build_log_come_from_code_and_files(tmp_path):
    """``{attnrank-profiles}`` and ``{attnrank-setting}`` render attnrank.core.profiles (the quick
    profile's steps, not a typed number); ``{attnrank-build-log}`` shows the previous builds and is
    refreshed by the next build without executing any notebook.

    Guarantee (docs/guarantees.md): "No blank numbers." (settings quoted in the prose are rendered from code)
    """
    from attnrank.core.profiles import PROFILES, resolve_config

    intro = (
        "# Intro\n\nQuick trains {attnrank-setting}`quick.max_steps` steps and masks "
        "{attnrank-setting}`quick.mlm_probability:.0%` of the tokens.\n\n"
        "```{attnrank-profiles}\nThe profiles.\n```\n\n```{attnrank-build-log}\nThe builds.\n```\n"
    )
    env = make_book(tmp_path, execute="off", intro=intro, notebook=_notebook("x = 1", "# Notebook"))
    result = build(tmp_path, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    page = lambda: re.sub(r"<[^>]+>", " ", (tmp_path / "book" / "_build" / "html" / "intro.html").read_text())
    quick = resolve_config("modernbert", "quick")
    text = " ".join(page().split())
    assert "Table 1 The profiles." in text  # numbered, with its caption
    assert f"Quick trains {quick.max_steps} steps and masks {quick.mlm_probability:.0%} of the tokens" in text
    for p in PROFILES:
        c = resolve_config("gpt2", p)
        assert f"width {c.hidden_size}, {c.num_layers} layers, {c.num_heads} heads, {c.max_len} tokens" in text
        # each architecture's own steps (BERT trains fewer at quick)
        assert f"BERT {resolve_config('modernbert', p).max_steps} steps of {c.batch_size} sequences" in text or (
            f" {c.max_steps} steps of {c.batch_size} sequences" in text
            and resolve_config("modernbert", p).max_steps == c.max_steps
        )
    # a fresh build's page shows its own time, written when the build ended (its row is in the log next time)
    assert re.search(
        r"This build took [\d.]+ minutes: no run to train \(all stored\) and [\d.]+ minutes executing the chapters "
        r"\(the ci profile\)",
        text,
    ), text
    assert "written here when it ends" not in text

    result = build(tmp_path, env)
    assert result.returncode == 0
    text = " ".join(page().split())
    assert "This build took" in text
    header = (
        r"started build time \[s\] profile runs trained up-front training \[s\] chapters \[s\] training time \[s\] "
        r"probes \[s\] validation \[s\] run CPU \[s\] probe CPU \[s\] status"
    )
    assert re.search(header + r" \S+ [\d.]+ ci 0 [\d.]+ [\d.]+ 0.0 0.0 0.0 0.0 0.0 ok", text), text


TOC_TWO = TOC + "  - file: nb2\n"


def test_stale_chapters_execute_up_front_in_parallel_and_are_then_read_from_the_cache(tmp_path):
    """After the up-front sweep the stale notebooks are executed together by jupyter-cache's
    parallel executor, and myst-nb reads each of them from the cache (it executes none); a
    rebuild executes nothing; a notebook that fails up front is executed again while read,
    so the build fails with its own error.

    Guarantee (docs/guarantees.md): "A cold build executes the chapters in parallel after training."
    """
    env = make_book(tmp_path)
    book = tmp_path / "book"
    (book / "_toc.yml").write_text(TOC_TWO)
    (book / "nb2.ipynb").write_text(
        _notebook(
            "from IPython.display import Markdown\nfrom attnrank import book\nbook.glue('other', 'two')\n"
            "book.glue('caption', Markdown('at $\\\\tau = 1$'))",
            "# Two\n\nOther: {glue:text}`other:s`. Pasted Markdown, {glue:md}`caption`.",
        )
    )
    result = build(tmp_path, env)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert re.search(r"Executing notebooks up front \(2, \d+ processes\): (nb, nb2|nb2, nb)", log), log[-3000:]
    assert log.count("Using cached notebook") == 2 and "Executing notebook:" not in log, log[-6000:]
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")
    two = (book / "_build" / "html" / "nb2.html").read_text()
    assert "Other: two." in re.sub(r"<[^>]+>", "", two)
    assert re.search(r'class="math[^"]*">\\\(\\tau = 1\\\)</span>', two), two  # pasted maths is maths, not $...$
    again = build(tmp_path, env)
    assert again.returncode == 0 and "up front" not in again.stdout + again.stderr

    (book / "nb2.ipynb").write_text(_notebook("raise RuntimeError('broken chapter')", "# Two"))
    failed = build(tmp_path, env)
    log = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert "Notebooks that failed up front, executed again while read: nb2" in log
    assert "broken chapter" in log


def test_a_damaged_execution_cache_is_set_aside_in_one_line_and_the_build_executes_again(tmp_path):
    """docs/guarantees.md: a damaged execution cache (its database truncated, filled with random bytes or
    emptied, or a cached notebook truncated) costs one line and a re-execution, never a failed build; the run
    store is not touched."""
    env = make_book(tmp_path)
    assert executed(build(tmp_path, env))
    expected = shown(tmp_path)
    caches = tmp_path / "book" / "_build" / ".jupyter_cache"

    def damage(how: str) -> None:
        (db,) = [p for p in caches.glob("*/global.db") if not p.parent.name.endswith(".damaged")]
        if how == "truncated":
            with db.open("r+b") as f:
                f.truncate(4096)
        elif how == "random bytes":
            db.write_bytes(os.urandom(db.stat().st_size))
        elif how == "empty":
            db.write_bytes(b"")
        else:
            (nb,) = db.parent.glob("executed/*/base.ipynb")
            nb.write_text(nb.read_text()[:200])

    for how in ("truncated", "random bytes", "empty", "a cached notebook truncated"):
        damage(how)
        result = build(tmp_path, env)
        out = result.stdout + result.stderr
        assert result.returncode == 0, (how, out[-3000:])
        lines = [line for line in out.splitlines() if "execution cache could not be read" in line]
        assert len(lines) <= 1 and "Traceback" not in out, (how, out[-3000:])
        assert shown(tmp_path) == expected, how
        assert executed(result) or how == "empty", how  # an emptied database is a new, empty cache


def test_the_findings_box_counts_the_verdicts_every_page_published(tmp_path):
    """docs/guarantees.md: `{attnrank-findings}` on the intro counts the verdicts the chapters published in this
    build, names those still open, and follows a chapter whose verdict changes."""
    code = (
        "import os\n"
        "from attnrank import book\n"
        "from attnrank.sections.section import Section, Verdict\n"
        "s = os.environ.get('ATTNRANK_FIXTURE_STATUS', 'supported')\n"
        "v = [Verdict('loss', s, 'f', 'e', '6 runs', 'r', 's'), Verdict('temp', 'inconclusive at this scale', 'f', 'e',"
        " '6 runs', 'r', 's'), Verdict('seq_len', 'supported', 'f', 'e', '3 runs', 'r', 's')]\n"
        "book.publish(Section('nb', {'value': 'x'}, [], [], v))"
    )
    intro = "# Intro\n\n```{attnrank-findings}\n```\n\nPasted: {glue:text}`nb.ipynb::value:s`.\n"
    env = make_book(tmp_path, intro=intro, notebook=_notebook(code, "# Notebook\n\nShown: {glue:text}`value:s`."))
    page = lambda: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (tmp_path / "book/_build/html/intro.html").read_text()))
    assert executed(build(tmp_path, env))
    assert "Of the 2 claims tested: 1 supported, 0 not supported, 1 inconclusive at this scale" in page()
    assert (
        "Open: (iii) a higher temperature raises the rank." in page()
        and "Supported: (ii) higher rank, lower loss." in page()
    )
    assert "The finding that matters most is on (iii) a higher temperature raises the rank: f" in page()
    assert executed(build(tmp_path, {**env, "ATTNRANK_FIXTURE_STATUS": "not supported"}))
    assert "Of the 2 claims tested: 0 supported, 1 not supported, 1 inconclusive at this scale" in page()


def test_a_glued_table_is_numbered_with_its_caption_and_can_be_referenced(tmp_path):
    """`{attnrank-table}` pastes a table a chapter glued, numbered as Sphinx numbers tables, with its caption
    above it; `{numref}` to its label gives the same number."""
    code = (
        "import pandas as pd\n"
        "from attnrank import book\n"
        "from attnrank.sections.section import Section, Table\n"
        "book.publish(Section('nb', {'value': 'x'}, [], [Table('nb_runs', pd.DataFrame({'model': ['GPT-2'], 'runs': [4]}))]))"
    )
    markdown = (
        "# Notebook\n\nShown: {glue:text}`value:s`. See {numref}`tab-nb_runs`.\n\n"
        "```{attnrank-table} nb_runs\nThe runs of each model.\n```\n"
    )
    env = make_book(tmp_path, notebook=_notebook(code, markdown))
    assert executed(build(tmp_path, env))
    page = (tmp_path / "book/_build/html/nb.html").read_text()
    table = re.search(r'<div class="numbered-table" id="tab-nb-runs">(.*?)</div>\s*</div>', page, re.S)
    assert table, page[-3000:]
    assert re.search(
        r'<span class="caption-number">Table 1\.?\s*</span>.*The runs of each model\.', table.group(1), re.S
    )
    assert "<td>GPT-2</td>" in table.group(1).replace(" ", "") or "GPT-2" in table.group(1)
    assert re.search(r'href="#tab-nb-runs"[^>]*>.*?Table 1', page, re.S)


def test_a_full_build_folder_is_one_line_before_and_during_the_build(tmp_path):
    """docs/guarantees.md (a full disk): a build folder with too little free space is refused in one line before
    anything is trained or written; a disk that fills during the build ends it with one line and no traceback."""
    out = tmp_path / "out"
    out.mkdir()
    if (
        not shutil.which("mount")
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(out)]).returncode
    ):
        import pytest

        pytest.skip("cannot mount a tmpfs here")
    try:
        env = make_book(tmp_path)
        command = [str(JUPYTER_BOOK), "build", str(tmp_path / "book"), "--path-output", str(out)]
        before = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert before.returncode == 2 and "Traceback" not in before.stderr + before.stdout
        assert before.stderr.strip().splitlines()[-1].startswith("attnrank: error: build folder: ")
        assert "MB free and a build writes about" in before.stderr and not list(out.rglob("*.html"))
        build_py = tmp_path / "lib" / "attnrank" / "cli" / "build.py"
        assert "BUILD_SPACE_MB = 100" in build_py.read_text()
        build_py.write_text(build_py.read_text().replace("BUILD_SPACE_MB = 100", "BUILD_SPACE_MB = 0"))
        during = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert during.returncode == 1 and "Traceback" not in during.stderr + during.stdout
        last = during.stderr.strip().splitlines()[-1]
        assert last.startswith("attnrank: error: build folder: the disk filled while writing '" + str(out)), last
        assert "(No space left on device)" in last
    finally:
        subprocess.run(["umount", str(out)])
